package cuda

import (
	"fmt"
	"math/rand"
	"testing"

	"mstream/kernels/kerneltest"
	"mstream/tensor"
)

var scatterTypes = []tensor.DType{tensor.Float, tensor.Double, tensor.Half, tensor.Bfloat16, tensor.Int8, tensor.Int16,
	tensor.Int64, tensor.Uint8, tensor.Uint16, tensor.Uint32, tensor.Uint64}

// scatterIn draws ScatterNd's inputs: lead x depth indices into shape
// (in range, or out of range with probability bad), and the updates.
func scatterIn(r *rand.Rand, dt, it tensor.DType, shape, lead tensor.Shape, depth int, bad float64) []*tensor.Tensor {
	lim := 50.0
	if bad > 0 {
		lim = 4 // the reference's sums stay within int8, so no wrapping to model
	}
	idx := tensor.New(it, append(lead.Clone(), int64(depth)))
	for i := 0; i < int(idx.NumElements()); i++ {
		d := shape[i%depth]
		v := r.Int63n(d)
		if r.Float64() < bad {
			v = d + r.Int63n(3)
			if r.Intn(2) == 0 {
				v = -1 - r.Int63n(3)
			}
		}
		kerneltest.SetF64(idx, i, float64(v))
	}
	upd := kerneltest.RandRange(r, dt, append(lead.Clone(), shape[depth:]...), -lim, lim)
	return []*tensor.Tensor{idx, upd, kerneltest.IntVec(it, shape...)}
}

// TestScatterNd compares with the CPU on in-range indices, duplicates
// common (few slots, many updates), for every GPU dtype and index dtype.
func TestScatterNd(t *testing.T) {
	r := newRand(t)
	for _, dt := range scatterTypes {
		for _, it := range []tensor.DType{tensor.Int32, tensor.Int64} {
			for _, shape := range []tensor.Shape{{6}, {4, 3}, {2, 3, 5}, {300, 70}} {
				for depth := 1; depth <= len(shape); depth++ {
					for _, lead := range []tensor.Shape{{}, {9}, {2, 3}, {0}, {700}} {
						in := scatterIn(r, dt, it, shape, lead, depth, 0)
						// Floats: atomics add a slot's duplicates in any
						// order, and the rounding error of a sum grows with
						// its terms, so the tolerance scales with the
						// updates per slot (the H100 once missed 2e-5 on
						// 58 float32 updates per slot).
						slots := int64(1)
						for _, d := range shape[:depth] {
							slots *= d
						}
						tol := 0.0
						if per := float64(lead.NumElements()) / float64(slots); per > 1 && dt.IsFloat() {
							tol = tolFor(dt) * per
						}
						check(t, node("ScatterNd", nil, in...), in, tol)
					}
				}
			}
		}
	}
	// The CPU's shape errors.
	in := scatterIn(r, tensor.Float, tensor.Int64, tensor.Shape{4, 2}, tensor.Shape{3}, 1, 0)
	in[1] = kerneltest.RandRange(r, tensor.Float, tensor.Shape{3, 3}, -1, 1)
	check(t, kerneltest.NodeForUnknown("ScatterNd", nil, in, nil), in, 0)
	in = scatterIn(r, tensor.Float, tensor.Int32, tensor.Shape{4}, tensor.Shape{3}, 1, 0)
	in[2] = tensor.New(tensor.Int32, tensor.Shape{0})
	check(t, kerneltest.NodeForUnknown("ScatterNd", nil, in, nil), in, 0)
}

// TestScatterNdOutOfRange: where the CPU kernel fails, the GPU skips an
// out-of-range index's slice, as TF's GPU kernel does; checked against a
// float64 reference built here.
func TestScatterNdOutOfRange(t *testing.T) {
	r := newRand(t)
	for _, dt := range scatterTypes {
		for _, tc := range []struct {
			shape tensor.Shape
			depth int
			lead  tensor.Shape
		}{{tensor.Shape{6}, 1, tensor.Shape{20}}, {tensor.Shape{4, 3}, 1, tensor.Shape{5, 2}}, {tensor.Shape{4, 3, 2}, 2, tensor.Shape{30}}} {
			in := scatterIn(r, dt, tensor.Int64, tc.shape, tc.lead, tc.depth, 0.3)
			n := node("ScatterNd", nil, in...)
			run, err := persistentGPU(t, n)
			if err != nil {
				t.Fatalf("ScatterNd %v: %v", dt, err)
			}
			if run == nil {
				return // dry run: no values
			}
			got, err := run(in)
			if err != nil {
				t.Fatalf("ScatterNd %v: %v", dt, err)
			}
			idx, upd := kerneltest.F64s(in[0]), kerneltest.F64s(in[1])
			ref := make([]float64, tc.shape.NumElements())
			slice := int(tensor.Shape(tc.shape[tc.depth:]).NumElements())
			for s := 0; s < int(tc.lead.NumElements()); s++ {
				off, ok := 0, true
				for j := 0; j < tc.depth; j++ {
					v := int64(idx[s*tc.depth+j])
					ok = ok && v >= 0 && v < tc.shape[j]
					off = off*int(tc.shape[j]) + int(v)
				}
				for j := tc.depth; j < len(tc.shape); j++ {
					off *= int(tc.shape[j])
				}
				for e := 0; ok && e < slice; e++ {
					ref[off+e] += upd[s*slice+e]
				}
			}
			want := tensor.New(dt, tc.shape)
			for i, v := range ref {
				kerneltest.SetF64(want, i, v)
			}
			compare(t, fmt.Sprintf("ScatterNd %v%v out-of-range indices skipped", dt, tc.shape), got, []*tensor.Tensor{want}, 0)
		}
	}
}
