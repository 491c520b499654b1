package cuda

import (
	"fmt"

	"mstream/graph"
	"mstream/kernels"
)

// Bitcast on the GPU is metadata only, as TF's GPU kernel is (it
// forwards the input's buffer under the new dtype and shape): the host
// kernel, which checks the dtypes and TF's shape rule and never reads
// element data, serves the GPU too, so the checks exist once. The output
// aliases the input's device buffer, as Reshape's does. TF registers it
// on the GPU for every dtype; the CPU kernel refuses the ones TF's shape
// function refuses (bool, strings, and sizes that do not divide).
func init() {
	kernels.Register(kernels.Def{Op: "Bitcast", Device: kernels.GPU, Factory: func(n *graph.Node) (kernels.Kernel, error) {
		def, err := kernels.Lookup(n, kernels.CPU)
		if err != nil {
			return nil, fmt.Errorf("GPU Bitcast reuses the CPU kernel, which is missing: %w", err)
		}
		return def.Factory(n)
	}})
}
