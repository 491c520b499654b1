package cuda

import (
	"math"
	"testing"

	"mstream/kernels/kerneltest"
	"mstream/tensor"
)

var reduceCases = []struct {
	s    tensor.Shape
	axes []int64
}{
	{tensor.Shape{6, 7}, []int64{1}}, {tensor.Shape{6, 7}, []int64{0}}, {tensor.Shape{6, 7}, []int64{0, 1}},
	{tensor.Shape{3, 4, 5}, []int64{1}}, {tensor.Shape{3, 4, 5}, []int64{0, 2}}, {tensor.Shape{3, 4, 5}, []int64{}},
	{tensor.Shape{2, 0, 3}, []int64{1}}, {tensor.Shape{2, 0, 3}, []int64{0}}, {tensor.Shape{4, 5000}, []int64{1}},
	{tensor.Shape{700, 3}, []int64{0}}, {tensor.Shape{}, []int64{}}, {tensor.Shape{2, 3, 2, 3, 2}, []int64{0, 2, 4}},
	{tensor.Shape{3, 100, 40}, []int64{-2}}, {tensor.Shape{2, 1, 64}, []int64{1, 2}},
}

// TestReduce2 checks Prod, Max, Min, All, Any and the Sum/Mean dtypes of
// reduce2.go against the CPU, keep_dims on and off.
func TestReduce2(t *testing.T) {
	r := newRand(t)
	for _, red := range []struct {
		op    string
		types []tensor.DType
	}{
		{"Sum", minus(realTypes, numTypes)}, {"Mean", minus(realTypes, numTypes)},
		{"Prod", realTypes}, {"Max", realTypes}, {"Min", realTypes},
		{"All", []tensor.DType{tensor.Bool}}, {"Any", []tensor.DType{tensor.Bool}},
	} {
		for _, dt := range kerneltest.Allowed(red.op, red.types) {
			for _, tc := range reduceCases {
				for _, keep := range []bool{false, true} {
					lo, hi := -3.0, 3.0
					if red.op == "Prod" && dt.IsFloat() {
						lo, hi = 0.9, 1.1 // products of thousands of terms stay finite
					}
					x := randT(r, dt, tc.s, lo, hi, red.op == "Max" || red.op == "Min")
					if red.op == "All" && x.NumElements() > 0 {
						// Mostly true, so All is not always false.
						for i := range x.Bools() {
							x.Bools()[i] = r.Intn(200) != 0
						}
					}
					ax := kerneltest.IntVec(tensor.Int32, tc.axes...)
					tol := 0.0
					if dt == tensor.Float {
						tol = 1e-5 * math.Max(1, math.Sqrt(float64(tc.s.NumElements())))
					}
					check(t, node(red.op, kerneltest.Attrs{"keep_dims": kerneltest.ABool(keep)}, x, ax), []*tensor.Tensor{x, ax}, tol)
				}
			}
		}
	}
}

func TestArgMinMax(t *testing.T) {
	r := newRand(t)
	for _, op := range []string{"ArgMax", "ArgMin"} {
		for _, dt := range kerneltest.Allowed(op, cat(realTypes, []tensor.DType{tensor.Bool})) {
			for _, ot := range kerneltest.Allowed(op, []tensor.DType{tensor.Int32, tensor.Int64, tensor.Int16, tensor.Uint16}, "output_type") {
				for _, tc := range []struct {
					s   tensor.Shape
					dim int64
				}{{tensor.Shape{5, 7}, 1}, {tensor.Shape{5, 7}, 0}, {tensor.Shape{3, 1000}, -1}, {tensor.Shape{2, 300, 5}, 1},
					{tensor.Shape{9}, 0}, {tensor.Shape{0, 4}, 1}, {tensor.Shape{4, 0}, 1}} {
					// Few distinct values, so ties (first index wins) are common.
					x := randT(r, dt, tc.s, -4, 4, true)
					if dt.IsFloat() {
						for i := 0; i < int(x.NumElements()); i++ {
							if v := x.ElementF64(i); !math.IsNaN(v) && !math.IsInf(v, 0) {
								kerneltest.SetF64(x, i, math.Round(v))
							}
						}
					}
					dim := kerneltest.IntScalar(tensor.Int32, tc.dim)
					check(t, node(op, kerneltest.Attrs{"output_type": kerneltest.AType(ot)}, x, dim), []*tensor.Tensor{x, dim}, 0)
				}
			}
		}
	}
}

func TestLogSoftmax(t *testing.T) {
	r := newRand(t)
	for _, dt := range gpuFloats {
		for _, s := range []tensor.Shape{{5, 10}, {3, 1000}, {1, 3000}, {7}, {2, 3, 17}, {4, 1}, {0, 3}} {
			x := randT(r, dt, s, -10, 10, false)
			check(t, node("LogSoftmax", nil, x), []*tensor.Tensor{x}, 0)
			if dt == tensor.Half || dt == tensor.Bfloat16 {
				check(t, node("Softmax", nil, x), []*tensor.Tensor{x}, 0)
			}
		}
	}
}
