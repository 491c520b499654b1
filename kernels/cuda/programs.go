package cuda

import (
	_ "embed"

	cu "mstream/device/cuda"
)

// The CUDA C sources, compiled by NVRTC at first use (see doc.go).
var (
	//go:embed src/common.cuh
	commonSrc string
	//go:embed src/elementwise.cu
	elementwiseSrc string
	//go:embed src/reduce.cu
	reduceSrc string
	//go:embed src/array.cu
	arraySrc string
	//go:embed src/types.cuh
	typesSrc string
	//go:embed src/math.cu
	mathSrc string
	//go:embed src/cwise.cu
	cwiseSrc string
	//go:embed src/reduce2.cu
	reduce2Src string
	//go:embed src/move.cu
	moveSrc string
	//go:embed src/nn.cu
	nnSrc string
	//go:embed src/misc.cu
	miscSrc string
	//go:embed src/random.cu
	randomSrc string
	//go:embed src/intdiv.cu
	intdivSrc string
	//go:embed src/scatter.cu
	scatterSrc string
	//go:embed src/select.cu
	selectSrc string
	//go:embed src/bcast.cuh
	bcastSrc string
	//go:embed src/state.cu
	stateSrc string

	elementwise = &cu.Program{Name: "elementwise.cu", Source: commonSrc + typesSrc + elementwiseSrc}
	reductions  = &cu.Program{Name: "reduce.cu", Source: commonSrc + reduceSrc}
	arrays      = &cu.Program{Name: "array.cu", Source: commonSrc + arraySrc}
	maths       = &cu.Program{Name: "math.cu", Source: commonSrc + typesSrc + mathSrc}
	cwiseP      = &cu.Program{Name: "cwise.cu", Source: commonSrc + typesSrc + bcastSrc + cwiseSrc}
	reductions2 = &cu.Program{Name: "reduce2.cu", Source: commonSrc + typesSrc + reduce2Src}
	moves       = &cu.Program{Name: "move.cu", Source: commonSrc + typesSrc + moveSrc}
	nns         = &cu.Program{Name: "nn.cu", Source: commonSrc + typesSrc + nnSrc}
	miscs       = &cu.Program{Name: "misc.cu", Source: commonSrc + typesSrc + miscSrc}
	randoms     = &cu.Program{Name: "random.cu", Source: commonSrc + typesSrc + randomSrc}
	intdivs     = &cu.Program{Name: "intdiv.cu", Source: commonSrc + typesSrc + bcastSrc + intdivSrc}
	scatters    = &cu.Program{Name: "scatter.cu", Source: commonSrc + typesSrc + scatterSrc}
	selects     = &cu.Program{Name: "select.cu", Source: commonSrc + typesSrc + selectSrc}
	states      = &cu.Program{Name: "state.cu", Source: commonSrc + stateSrc}
)

// Programs lists every program, so a tool or test can compile them all
// ahead of use.
func Programs() []*cu.Program {
	return []*cu.Program{elementwise, reductions, arrays, maths, cwiseP, reductions2, moves, nns, miscs, randoms, intdivs, scatters, selects, states,
		gradnn, sparseXent, depthwiseGrad, gemms}
}
