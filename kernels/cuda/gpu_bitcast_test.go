package cuda

import (
	"testing"

	"mstream/kernels/kerneltest"
	"mstream/tensor"
)

// TestBitcast compares the GPU's Bitcast (the host kernel over a device
// buffer) with the CPU's for every pair of fixed-size dtypes, in the
// shapes TF's rule allows and one it refuses.
func TestBitcast(t *testing.T) {
	r := newRand(t)
	types := []tensor.DType{tensor.Float, tensor.Double, tensor.Half, tensor.Bfloat16, tensor.Int8, tensor.Int16,
		tensor.Int32, tensor.Int64, tensor.Uint8, tensor.Uint16, tensor.Uint32, tensor.Uint64, tensor.Complex64, tensor.Complex128}
	for _, from := range types {
		for _, to := range types {
			a, b := int64(from.Size()), int64(to.Size())
			s := tensor.Shape{2, 1 + r.Int63n(4)}
			if a < b {
				s = tensor.Shape{2, 3, b / a}
			}
			x := randAny(r, from, s, -100, 100)
			check(t, node("Bitcast", kerneltest.Attrs{"type": kerneltest.AType(to)}, x), []*tensor.Tensor{x}, 0)
			if a < b {
				// The last dim must be the size ratio: an error on both.
				y := randAny(r, from, tensor.Shape{2, b/a + 1}, -100, 100)
				check(t, kerneltest.NodeForUnknown("Bitcast", kerneltest.Attrs{"type": kerneltest.AType(to)}, []*tensor.Tensor{y}, nil), []*tensor.Tensor{y}, 0)
			}
		}
	}
}
