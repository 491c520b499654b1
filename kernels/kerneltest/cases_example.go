package kerneltest

import (
	"math"
	"math/rand"

	"mstream/status"
	"mstream/tensor"
)

// The pattern for a family: fresh random inputs, edge shapes, every dtype,
// a reference that does not share code with any kernel.

func init() {
	Add("Relu", func(r *rand.Rand) []Case {
		var cs []Case
		for _, dt := range append(append([]tensor.DType{}, FloatTypes...), tensor.Int32, tensor.Int64, tensor.Int8, tensor.Uint8) {
			for _, s := range EdgeShapes {
				a := Rand(r, dt, s)
				cs = append(cs, Case{
					Node:   NodeFor("Relu", nil, []*tensor.Tensor{a}, nil),
					Inputs: []*tensor.Tensor{a},
					Want:   []*tensor.Tensor{Map(a, dt, func(v float64) float64 { return math.Max(v, 0) })},
				})
			}
		}
		return cs
	})
	Add("MatMul", func(r *rand.Rand) []Case {
		var cs []Case
		dims := [][3]int64{{1, 1, 1}, {3, 5, 7}, {0, 4, 3}, {4, 0, 3}, {17, 33, 9}, {64, 65, 63}, {5, 33, 70}}
		for _, dt := range []tensor.DType{tensor.Float, tensor.Double, tensor.Half, tensor.Int32} {
			for _, d := range dims {
				for _, ta := range []bool{false, true} {
					for _, tb := range []bool{false, true} {
						m, k, n := d[0], d[1], d[2]
						sa, sb := tensor.Shape{m, k}, tensor.Shape{k, n}
						if ta {
							sa = tensor.Shape{k, m}
						}
						if tb {
							sb = tensor.Shape{n, k}
						}
						a, b := Rand(r, dt, sa), Rand(r, dt, sb)
						expr := "np.matmul(a0.astype(np.float64)" + tr(ta) + ", a1.astype(np.float64)" + tr(tb) + ")"
						tol := 0.0
						if dt == tensor.Float {
							tol = 1e-4
						} else if dt == tensor.Half {
							tol = 1e-2
						}
						cs = append(cs, Case{
							Node:   NodeFor("MatMul", Attrs{"transpose_a": ABool(ta), "transpose_b": ABool(tb)}, []*tensor.Tensor{a, b}, nil),
							Inputs: []*tensor.Tensor{a, b},
							NumPy:  expr,
							Tol:    tol,
						})
					}
				}
			}
		}
		// Inner dimensions that disagree are the caller's error.
		a, b := Rand(r, tensor.Float, tensor.Shape{2, 3}), Rand(r, tensor.Float, tensor.Shape{4, 5})
		cs = append(cs, Case{Node: NodeForUnknown("MatMul", nil, []*tensor.Tensor{a, b}, nil), Inputs: []*tensor.Tensor{a, b}, Err: status.InvalidArgument})
		return cs
	})
}

func tr(t bool) string {
	if t {
		return ".T"
	}
	return ""
}
