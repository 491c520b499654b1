package cuda

import (
	"testing"

	"mstream/kernels/kerneltest"
	"mstream/tensor"
)

func TestScan(t *testing.T) {
	r := newRand(t)
	for _, op := range []string{"Cumsum", "Cumprod"} {
		for _, dt := range kerneltest.Allowed(op, realTypes) {
			for _, tc := range []struct {
				s    tensor.Shape
				axis int64
			}{{tensor.Shape{7}, 0}, {tensor.Shape{3, 5, 4}, 1}, {tensor.Shape{3, 5, 4}, -1}, {tensor.Shape{3, 5, 4}, 0}, {tensor.Shape{2, 0, 3}, 1}} {
				for _, ex := range []bool{false, true} {
					for _, rev := range []bool{false, true} {
						lo, hi := -3.0, 3.0
						if op == "Cumprod" && dt.IsFloat() {
							lo, hi = 0.5, 1.5
						}
						x := randT(r, dt, tc.s, lo, hi, false)
						ax := kerneltest.IntScalar(tensor.Int32, tc.axis)
						check(t, node(op, kerneltest.Attrs{"exclusive": kerneltest.ABool(ex), "reverse": kerneltest.ABool(rev)}, x, ax), []*tensor.Tensor{x, ax}, 0)
					}
				}
			}
		}
	}
}

func TestMatrixBandPart(t *testing.T) {
	r := newRand(t)
	for _, dt := range moveTypes {
		x := randAny(r, dt, tensor.Shape{2, 5, 6}, -9, 9)
		for _, b := range [][2]int64{{-1, -1}, {0, 0}, {1, 2}, {-1, 0}, {3, -1}} {
			lo, hi := kerneltest.IntScalar(tensor.Int64, b[0]), kerneltest.IntScalar(tensor.Int64, b[1])
			check(t, node("MatrixBandPart", nil, x, lo, hi), []*tensor.Tensor{x, lo, hi}, 0)
		}
	}
}

func TestResize(t *testing.T) {
	r := newRand(t)
	types := []tensor.DType{tensor.Float, tensor.Double, tensor.Half, tensor.Bfloat16, tensor.Int8, tensor.Uint8,
		tensor.Int16, tensor.Uint16, tensor.Int32, tensor.Int64}
	for _, op := range []string{"ResizeBilinear", "ResizeNearestNeighbor"} {
		for _, dt := range kerneltest.Allowed(op, types) {
			for _, tc := range []struct {
				in     tensor.Shape
				oh, ow int64
			}{{tensor.Shape{2, 4, 5, 3}, 8, 10}, {tensor.Shape{1, 7, 6, 2}, 3, 4}, {tensor.Shape{1, 5, 5, 1}, 5, 5}, {tensor.Shape{1, 3, 4, 2}, 7, 9}} {
				for _, mode := range [][2]bool{{false, false}, {true, false}, {false, true}} {
					x := randT(r, dt, tc.in, -20, 20, false)
					size := i32s(tc.oh, tc.ow)
					a := kerneltest.Attrs{"align_corners": kerneltest.ABool(mode[0]), "half_pixel_centers": kerneltest.ABool(mode[1])}
					check(t, node(op, a, x, size), []*tensor.Tensor{x, size}, 0)
				}
			}
		}
	}
}

func TestTopK(t *testing.T) {
	r := newRand(t)
	for _, dt := range kerneltest.Allowed("TopKV2", realTypes) {
		for _, tc := range []struct {
			s tensor.Shape
			k int64
		}{{tensor.Shape{10}, 3}, {tensor.Shape{4, 100}, 5}, {tensor.Shape{2, 3, 40}, 40}, {tensor.Shape{3, 7}, 0}, {tensor.Shape{1, 1000}, 1}} {
			// Few distinct values, so ties (lower index first) are common.
			x := randT(r, dt, tc.s, -6, 6, false)
			kt := kerneltest.IntScalar(tensor.Int32, tc.k)
			check(t, node("TopKV2", nil, x, kt), []*tensor.Tensor{x, kt}, 0)
		}
	}
}
