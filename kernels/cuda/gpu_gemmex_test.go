package cuda

import (
	"testing"

	"mstream/kernels/kerneltest"
	"mstream/tensor"
)

// TestMatMulHalf checks the half and bfloat16 GEMMs (cublasGemmEx, float
// accumulation) against the CPU's, within one rounding of the dtype:
// plain, transposed, empty and batched (strided, broadcast and the
// per-batch path) products.
func TestMatMulHalf(t *testing.T) {
	r := newRand(t)
	for _, dt := range []tensor.DType{tensor.Half, tensor.Bfloat16} {
		for _, tc := range []struct {
			m, k, n int64
			ta, tb  bool
		}{{1, 1, 1, false, false}, {7, 13, 5, true, false}, {64, 512, 256, false, false}, {33, 65, 17, false, true},
			{5, 0, 3, false, false}, {0, 4, 3, true, true}, {17, 40, 9, true, true}} {
			as, bs := tensor.Shape{tc.m, tc.k}, tensor.Shape{tc.k, tc.n}
			if tc.ta {
				as = tensor.Shape{tc.k, tc.m}
			}
			if tc.tb {
				bs = tensor.Shape{tc.n, tc.k}
			}
			a, b := kerneltest.RandRange(r, dt, as, -1, 1), kerneltest.RandRange(r, dt, bs, -1, 1)
			n := node("MatMul", kerneltest.Attrs{"transpose_a": kerneltest.ABool(tc.ta), "transpose_b": kerneltest.ABool(tc.tb)}, a, b)
			check(t, n, []*tensor.Tensor{a, b}, 0)
		}
		for _, op := range []string{"BatchMatMulV2", "BatchMatMulV3"} {
			for _, tc := range []struct {
				x, y     tensor.Shape
				adx, ady bool
			}{
				{tensor.Shape{2, 3, 4}, tensor.Shape{2, 4, 5}, false, false},
				{tensor.Shape{3, 4}, tensor.Shape{2, 4, 5}, false, false},
				{tensor.Shape{2, 1, 3, 4}, tensor.Shape{1, 3, 4, 2}, false, false},
				{tensor.Shape{5, 4, 3}, tensor.Shape{5, 6, 4}, true, true},
				{tensor.Shape{16, 27, 64}, tensor.Shape{16, 27, 64}, false, true},
				{tensor.Shape{2, 0, 4}, tensor.Shape{2, 4, 3}, false, false},
			} {
				x, y := kerneltest.RandRange(r, dt, tc.x, -1, 1), kerneltest.RandRange(r, dt, tc.y, -1, 1)
				a := kerneltest.Attrs{"adj_x": kerneltest.ABool(tc.adx), "adj_y": kerneltest.ABool(tc.ady)}
				if op == "BatchMatMulV3" {
					a["Ta"], a["Tb"], a["Tout"] = kerneltest.AType(dt), kerneltest.AType(dt), kerneltest.AType(dt)
				}
				check(t, node(op, a, x, y), []*tensor.Tensor{x, y}, 0)
			}
		}
	}
}
