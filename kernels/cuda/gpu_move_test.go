package cuda

import (
	"testing"

	"mstream/kernels/kerneltest"
	"mstream/tensor"
)

// The array-movement kernels of move.go against the CPU, over element
// sizes 1 to 16 bytes.

var moveTypes = []tensor.DType{tensor.Float, tensor.Double, tensor.Uint8, tensor.Half, tensor.Bool, tensor.Int64, tensor.Complex128}

func i32s(v ...int64) *tensor.Tensor { return kerneltest.IntVec(tensor.Int32, v...) }

func TestSliceTilePad(t *testing.T) {
	r := newRand(t)
	for _, dt := range moveTypes {
		x := randAny(r, dt, tensor.Shape{4, 5, 6}, -9, 9)
		for _, bs := range [][2][]int64{{{0, 0, 0}, {4, 5, 6}}, {{1, 2, 3}, {2, -1, 2}}, {{3, 0, 0}, {1, 5, 6}}, {{0, 5, 0}, {4, 0, 6}}, {{1, 1, 1}, {3, 3, 5}}} {
			b, s := i32s(bs[0]...), i32s(bs[1]...)
			check(t, node("Slice", nil, x, b, s), []*tensor.Tensor{x, b, s}, 0)
		}
		for _, m := range [][]int64{{1, 1, 1}, {2, 1, 3}, {1, 0, 2}, {3, 2, 1}} {
			mt := i32s(m...)
			check(t, node("Tile", nil, x, mt), []*tensor.Tensor{x, mt}, 0)
		}
		for _, p := range [][]int64{{0, 0, 0, 0, 0, 0}, {1, 2, 0, 0, 3, 1}, {0, 0, 2, 2, 0, 0}} {
			pt := &tensor.Tensor{DType: tensor.Int32, Shape: tensor.Shape{3, 2}, Buf: i32s(p...).Buf}
			check(t, node("Pad", nil, x, pt), []*tensor.Tensor{x, pt}, 0)
			cv := randAny(r, dt, tensor.Shape{}, 1, 9)
			check(t, node("PadV2", nil, x, pt, cv), []*tensor.Tensor{x, pt, cv}, 0)
			for _, mode := range []string{"REFLECT", "SYMMETRIC"} {
				check(t, node("MirrorPad", kerneltest.Attrs{"mode": kerneltest.AStr(mode)}, x, pt), []*tensor.Tensor{x, pt}, 0)
			}
		}
		// Padding an empty dim: everything is the pad value.
		e := randAny(r, dt, tensor.Shape{2, 0}, -9, 9)
		pt := &tensor.Tensor{DType: tensor.Int32, Shape: tensor.Shape{2, 2}, Buf: i32s(1, 0, 2, 1).Buf}
		check(t, node("Pad", nil, e, pt), []*tensor.Tensor{e, pt}, 0)
	}
}

func TestReverseBroadcast(t *testing.T) {
	r := newRand(t)
	for _, dt := range moveTypes {
		x := randAny(r, dt, tensor.Shape{3, 4, 5}, -9, 9)
		for _, ax := range [][]int64{{}, {0}, {2}, {0, 1}, {-1, 0}, {0, 1, 2}} {
			a := i32s(ax...)
			check(t, node("ReverseV2", nil, x, a), []*tensor.Tensor{x, a}, 0)
		}
		for _, tc := range []struct {
			in  tensor.Shape
			out []int64
		}{{tensor.Shape{3, 1}, []int64{2, 3, 4}}, {tensor.Shape{}, []int64{5, 2}}, {tensor.Shape{1, 4}, []int64{3, 4}}, {tensor.Shape{2, 3}, []int64{2, 3}}} {
			y := randAny(r, dt, tc.in, -9, 9)
			s := i32s(tc.out...)
			check(t, node("BroadcastTo", nil, y, s), []*tensor.Tensor{y, s}, 0)
		}
	}
}

func TestSplitPack(t *testing.T) {
	r := newRand(t)
	for _, dt := range moveTypes {
		x := randAny(r, dt, tensor.Shape{4, 6, 2}, -9, 9)
		for _, ax := range []int64{0, 1, -1} {
			for _, num := range []int64{1, 2} {
				a := kerneltest.IntScalar(tensor.Int32, ax)
				n := node("Split", kerneltest.Attrs{"num_split": kerneltest.AInt(num)}, a, x)
				check(t, n, []*tensor.Tensor{a, x}, 0)
			}
			sz := i32s(1, -1, 1)
			a := kerneltest.IntScalar(tensor.Int32, ax)
			if ax == 0 {
				sz = i32s(1, 3, 0)
			}
			n := node("SplitV", kerneltest.Attrs{"num_split": kerneltest.AInt(3)}, x, sz, a)
			check(t, n, []*tensor.Tensor{x, sz, a}, 0)
		}
		for ax, d := range []int64{4, 6, 2} {
			n := node("Unpack", kerneltest.Attrs{"num": kerneltest.AInt(d), "axis": kerneltest.AInt(int64(ax))}, x)
			check(t, n, []*tensor.Tensor{x}, 0)
		}
		for _, ax := range []int64{0, 1, 3, -1} {
			in := []*tensor.Tensor{randAny(r, dt, tensor.Shape{2, 5, 3}, -9, 9), randAny(r, dt, tensor.Shape{2, 5, 3}, -9, 9), randAny(r, dt, tensor.Shape{2, 5, 3}, -9, 9)}
			n := kerneltest.NodeFor("Pack", kerneltest.Attrs{"axis": kerneltest.AInt(ax)}, in, map[int]int{0: 3})
			check(t, n, in, 0)
		}
		in := []*tensor.Tensor{kerneltest.IntScalar(tensor.Int32, 1), randAny(r, dt, tensor.Shape{2, 3}, -9, 9), randAny(r, dt, tensor.Shape{2, 4}, -9, 9)}
		check(t, kerneltest.NodeFor("Concat", nil, in, map[int]int{1: 2}), in, 0)
	}
}

func TestStridedSlice(t *testing.T) {
	r := newRand(t)
	for _, dt := range moveTypes {
		x := randAny(r, dt, tensor.Shape{5, 6, 7}, -9, 9)
		for _, tc := range []struct {
			b, e, s                         []int64
			begin, end, ellipsis, newAx, sh int64
		}{
			{[]int64{1, 0, 2}, []int64{4, 6, 7}, []int64{1, 2, 3}, 0, 0, 0, 0, 0},
			{[]int64{-1, 0, 0}, []int64{0, 6, 7}, []int64{-1, 1, -2}, 0, 0, 0, 0, 0},
			{[]int64{0, 3}, []int64{0, 4}, []int64{1, 1}, 1, 1, 0, 0, 2},
			{[]int64{0, 1}, []int64{0, 5}, []int64{1, 2}, 0, 0, 1, 0, 0},
			{[]int64{0, 2, 0}, []int64{0, 3, 0}, []int64{1, 1, 1}, 0, 0, 0, 1, 2},
			{[]int64{2}, []int64{3}, []int64{1}, 0, 0, 0, 0, 1},
			{[]int64{-10, -100}, []int64{100, 10}, []int64{3, -2}, 0, 0, 0, 0, 0},
			{[]int64{4, 0, 0}, []int64{2, 6, 7}, []int64{1, 1, 1}, 0, 0, 0, 0, 0}, // empty
		} {
			b, e, s := i32s(tc.b...), i32s(tc.e...), i32s(tc.s...)
			n := node("StridedSlice", kerneltest.Attrs{"begin_mask": kerneltest.AInt(tc.begin), "end_mask": kerneltest.AInt(tc.end),
				"ellipsis_mask": kerneltest.AInt(tc.ellipsis), "new_axis_mask": kerneltest.AInt(tc.newAx), "shrink_axis_mask": kerneltest.AInt(tc.sh)}, x, b, e, s)
			check(t, n, []*tensor.Tensor{x, b, e, s}, 0)
		}
	}
}

func TestOneHotGatherNd(t *testing.T) {
	r := newRand(t)
	for _, dt := range []tensor.DType{tensor.Float, tensor.Int64, tensor.Bool, tensor.Half} {
		for _, it := range []tensor.DType{tensor.Uint8, tensor.Int8, tensor.Int32, tensor.Int64} {
			for _, axis := range []int64{-1, 0, 1} {
				idx := kerneltest.RandRange(r, it, tensor.Shape{3, 4}, -1, 6) // -1 and 5 are off the depth of 5
				depth := kerneltest.IntScalar(tensor.Int32, 5)
				on, off := randAny(r, dt, tensor.Shape{}, 1, 9), randAny(r, dt, tensor.Shape{}, -9, 0)
				n := node("OneHot", kerneltest.Attrs{"axis": kerneltest.AInt(axis)}, idx, depth, on, off)
				check(t, n, []*tensor.Tensor{idx, depth, on, off}, 0)
			}
		}
	}
	for _, dt := range moveTypes {
		p := randAny(r, dt, tensor.Shape{5, 4, 3}, -9, 9)
		for _, it := range []tensor.DType{tensor.Int32, tensor.Int64} {
			for _, tc := range []struct {
				idx   tensor.Shape
				depth int64
			}{{tensor.Shape{6, 1}, 1}, {tensor.Shape{2, 3, 2}, 2}, {tensor.Shape{7, 3}, 3}, {tensor.Shape{0, 2}, 2}} {
				idx := tensor.New(it, tc.idx)
				for i := 0; i < int(idx.NumElements()); i++ {
					kerneltest.SetF64(idx, i, float64(r.Int63n(p.Shape[int64(i)%tc.depth])))
				}
				check(t, node("GatherNd", nil, p, idx), []*tensor.Tensor{p, idx}, 0)
			}
		}
	}
}

// TestGatherNdOutOfRange: zeros for an index off the params, as TF's GPU
// kernel gives (the CPU kernel fails).
func TestGatherNdOutOfRange(t *testing.T) {
	e := env(t)
	p := tensor.FromF32(tensor.Shape{2, 2}, []float32{1, 2, 3, 4})
	idx := tensor.FromI32(tensor.Shape{3, 1}, []int32{1, 2, -1})
	out, err := e.run(node("GatherNd", nil, p, idx), []*tensor.Tensor{p, idx}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []float32{3, 4, 0, 0, 0, 0}
	for i, v := range out[0].F32() {
		if v != want[i] {
			t.Fatalf("got %v, want %v", out[0].F32(), want)
		}
	}
}

// TestSpaceBatchDepth checks the space/batch and space/depth kernels
// against the CPU on maps large enough for several blocks of threads: a
// dilated convolution's padding and crops, a block of 3 with a trivial
// leading dim merged into the batch, and the pixel shuffle both ways.
func TestSpaceBatchDepth(t *testing.T) {
	r := newRand(t)
	pads := func(v ...int64) *tensor.Tensor {
		return &tensor.Tensor{DType: tensor.Int32, Shape: tensor.Shape{int64(len(v) / 2), 2}, Buf: i32s(v...).Buf}
	}
	for _, dt := range []tensor.DType{tensor.Float, tensor.Double, tensor.Uint8, tensor.Half, tensor.Int64} {
		x := randAny(r, dt, tensor.Shape{2, 33, 35, 16}, -9, 9)
		for _, c := range []struct{ block, pads *tensor.Tensor }{
			{i32s(2, 2), pads(2, 3, 2, 1)}, {i32s(1, 3), pads(0, 0, 1, 0)}, {i32s(3, 2, 1), pads(2, 1, 0, 1, 0, 0)},
		} {
			in := []*tensor.Tensor{x, c.block, c.pads}
			check(t, node("SpaceToBatchND", nil, in...), in, 0)
			b := randAny(r, dt, tensor.Shape{12, 12, 18, 16}, -9, 9)
			in = []*tensor.Tensor{b, i32s(2, 3), pads(1, 2, 0, 5)}
			check(t, node("BatchToSpaceND", nil, in...), in, 0)
		}
		bs := kerneltest.Attrs{"block_size": kerneltest.AInt(2)}
		in := []*tensor.Tensor{x, pads(1, 0, 1, 0)}
		check(t, node("SpaceToBatch", bs, in...), in, 0)
	}
	for _, dt := range moveTypes {
		bs := kerneltest.Attrs{"block_size": kerneltest.AInt(2)}
		x := randAny(r, dt, tensor.Shape{2, 34, 36, 12}, -9, 9)
		check(t, node("SpaceToDepth", bs, x), []*tensor.Tensor{x}, 0)
		check(t, node("DepthToSpace", bs, x), []*tensor.Tensor{x}, 0)
	}
}
