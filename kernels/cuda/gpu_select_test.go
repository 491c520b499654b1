package cuda

import (
	"math"
	"testing"

	"mstream/kernels/kerneltest"
	"mstream/tensor"
)

// TestWhere compares Where with the CPU over TF's GPU dtypes, at sizes
// that take one scan chunk, several, and more chunks than scan_sums has
// threads (300k elements: 293 chunks), with sparse and dense truth and
// float specials (NaN counts as true, -0 as false).
func TestWhere(t *testing.T) {
	r := newRand(t)
	types := []tensor.DType{tensor.Int8, tensor.Uint8, tensor.Int64, tensor.Float, tensor.Double,
		tensor.Complex64, tensor.Complex128, tensor.Bool}
	for _, dt := range types {
		for _, s := range []tensor.Shape{{}, {1}, {5}, {3, 0, 2}, {2, 3, 4}, {7, 1, 300}, {300000}, {2, 2, 2, 2, 2, 2, 2, 3}} {
			for _, dense := range []float64{0.02, 0.5, 1} {
				x := randAny(r, dt, s, -2, 2)
				n := int(x.NumElements())
				for i := 0; i < n; i++ {
					if r.Float64() >= dense {
						zeroAt(x, i)
					}
				}
				if dt == tensor.Float && n > 4 {
					x.F32()[0], x.F32()[1] = float32(math.Copysign(0, -1)), float32(math.NaN())
				}
				check(t, node("Where", kerneltest.Attrs{"T": kerneltest.AType(dt)}, x), []*tensor.Tensor{x}, 0)
			}
		}
	}
	// Rank 9 with a dim of length 1: the GPU kernel takes 8 dims longer
	// than 1 (TF's takes rank 8).
	x := kerneltest.RandRange(r, tensor.Float, tensor.Shape{2, 1, 2, 2, 2, 2, 2, 2, 2}, -1, 1)
	zeroAt(x, 3)
	check(t, node("Where", kerneltest.Attrs{"T": kerneltest.AType(tensor.Float)}, x), []*tensor.Tensor{x}, 0)
}

// zeroAt sets element i of x to zero (false for bool).
func zeroAt(x *tensor.Tensor, i int) {
	es := x.DType.Size()
	clear(x.Buf[i*es : (i+1)*es])
}

// TestUnique compares Unique with the CPU (values in order of first
// occurrence, idx into them) over TF's GPU dtypes and both index dtypes:
// few distinct values, many, all distinct, and for floats NaNs (each its
// own value) and -0 next to 0 (one value), at sizes up to 300k elements.
func TestUnique(t *testing.T) {
	r := newRand(t)
	types := []tensor.DType{tensor.Half, tensor.Bfloat16, tensor.Float, tensor.Double, tensor.Int8, tensor.Int16,
		tensor.Int32, tensor.Int64, tensor.Uint8, tensor.Uint16, tensor.Uint32, tensor.Uint64}
	for _, dt := range types {
		for _, it := range []tensor.DType{tensor.Int32, tensor.Int64} {
			for _, n := range []int64{0, 1, 33, 5000, 300000} {
				for _, spread := range []float64{4, 1000, 1e9} {
					lo, hi := -spread, spread // narrow integers wrap
					x := kerneltest.RandRange(r, dt, tensor.Shape{n}, lo, hi)
					if dt.IsFloat() {
						// Whole numbers, so values repeat in every float dtype.
						x = kerneltest.Map(kerneltest.RandRange(r, tensor.Int64, tensor.Shape{n}, lo, hi), dt, func(v float64) float64 { return v })
						if n > 8 {
							kerneltest.SetF64(x, 2, math.NaN())
							kerneltest.SetF64(x, 5, math.NaN())
							kerneltest.SetF64(x, 3, math.Copysign(0, -1))
							kerneltest.SetF64(x, 7, 0)
						}
					}
					check(t, node("Unique", kerneltest.Attrs{"T": kerneltest.AType(dt), "out_idx": kerneltest.AType(it)}, x), []*tensor.Tensor{x}, 0)
				}
			}
		}
	}
}
