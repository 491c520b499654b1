package cpu

import (
	"math"
	"testing"

	"mstream/tensor"
)

func TestBinaryBroadcast(t *testing.T) {
	r := newRand(t)
	shapes := [][2]tensor.Shape{
		{{}, {}}, {{3}, {}}, {{}, {4}}, {{2, 3}, {2, 3}}, {{2, 3}, {3}}, {{2, 1}, {1, 5}},
		{{4, 1, 3}, {2, 1}}, {{0, 3}, {3}}, {{1}, {7}}, {{3, 1, 5, 1}, {1, 4, 1, 2}}, {{129, 257}, {129, 257}},
		{{1000, 77}, {77}},
	}
	ops := map[string]func(a, b float64) float64{
		"Add": func(a, b float64) float64 { return a + b }, "AddV2": func(a, b float64) float64 { return a + b },
		"Sub": func(a, b float64) float64 { return a - b }, "Mul": func(a, b float64) float64 { return a * b },
		"RealDiv": func(a, b float64) float64 { return a / b }, "Maximum": math.Max, "Minimum": math.Min,
	}
	for op, f := range ops {
		for _, dt := range numericTypes {
			if op == "RealDiv" && !dt.IsFloat() {
				continue
			}
			for _, sh := range shapes {
				a, ra := randTensor(r, dt, sh[0])
				b, rb := randTensor(r, dt, sh[1])
				bc, _ := broadcastShapes(sh[0], sh[1])
				want := make([]float64, bc.out.NumElements())
				i := 0
				forEachRow(bc, func(oo, ao, bo, n, sa, sb int64) {
					for j := int64(0); j < n; j++ {
						want[i] = roundTo(dt, f(ra[ao+j*sa], rb[bo+j*sb]))
						i++
					}
				})
				out := mustRun(t, node(op, nil, []tensor.DType{dt, dt}, dt), a, b)
				check(t, op+bc.out.String(), out[0], bc.out, want, 0)
			}
		}
	}
}

func TestBroadcastError(t *testing.T) {
	n := node("Add", nil, []tensor.DType{tensor.Float, tensor.Float}, tensor.Float)
	_, err := run(t, n, tensor.New(tensor.Float, tensor.Shape{2, 3}), tensor.New(tensor.Float, tensor.Shape{4}))
	wantErr(t, err, n, "Incompatible shapes")
}

func TestMaxMinNaN(t *testing.T) {
	nan := float32(math.NaN())
	a := tensor.FromF32(tensor.Shape{3}, []float32{nan, 1, 2})
	b := tensor.FromF32(tensor.Shape{3}, []float32{1, nan, 3})
	for _, op := range []string{"Maximum", "Minimum"} {
		out := mustRun(t, node(op, nil, []tensor.DType{tensor.Float, tensor.Float}, tensor.Float), a, b)[0].F32()
		if out[0] == out[0] || out[1] == out[1] {
			t.Errorf("%s: %v, want NaN in the first two", op, out)
		}
	}
}

func TestStringAdd(t *testing.T) {
	a := &tensor.Tensor{DType: tensor.String, Shape: tensor.Shape{2}, Strs: [][]byte{[]byte("a\x00"), []byte("b")}}
	b := &tensor.Tensor{DType: tensor.String, Shape: tensor.Shape{}, Strs: [][]byte{[]byte("z")}}
	out := mustRun(t, node("Add", nil, []tensor.DType{tensor.String, tensor.String}, tensor.String), a, b)[0]
	if string(out.Strs[0]) != "a\x00z" || string(out.Strs[1]) != "bz" {
		t.Errorf("got %q", out.Strs)
	}
}
