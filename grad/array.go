package grad

import (
	"mstream/graph"
	"mstream/tensor"
)

// Gradients of the array ops, after TF's cc/gradients/array_grad.cc and
// python/ops/array_grad.py.

// shapeLike is Shape(x) with out_type matching the index dtype dt.
func shapeLike(b *Builder, x graph.Output, dt tensor.DType) graph.Output {
	return b.Op("Shape", A{"out_type": graph.AttrType(dt)}, x)
}

func init() {
	register(func(b *Builder, n *graph.Node, dy []graph.Output) []graph.Output {
		out := []graph.Output{b.Op("Reshape", nil, dy[0], b.Op("Shape", nil, in(n, 0)))}
		for range n.Inputs[1:] {
			out = append(out, none)
		}
		return out
	}, "Reshape", "ExpandDims", "Squeeze")
	register(func(b *Builder, n *graph.Node, dy []graph.Output) []graph.Output {
		return []graph.Output{b.Op("Transpose", nil, dy[0], b.Op("InvertPermutation", nil, in(n, 1))), none}
	}, "Transpose")
	register(concatGrad, "ConcatV2")
	register(func(b *Builder, n *graph.Node, dy []graph.Output) []graph.Output {
		// The pieces' gradients joined back along the split axis.
		return []graph.Output{none, b.Op("ConcatV2", nil, dy, in(n, 0))}
	}, "Split")
	register(func(b *Builder, n *graph.Node, dy []graph.Output) []graph.Output {
		return []graph.Output{b.Op("ConcatV2", nil, dy, in(n, 2)), none, none}
	}, "SplitV")
	register(func(b *Builder, n *graph.Node, dy []graph.Output) []graph.Output {
		// Pad dy back to x's shape: before = begin, after = shape(x) -
		// shape(y) - begin.
		x, begin := in(n, 0), in(n, 1)
		it := n.InTypes[1]
		rank := b.Op("Rank", nil, x)
		shape := b.Op("Pack", nil, []graph.Output{rank, b.ScalarI32(1)})
		before := b.Op("Reshape", nil, begin, shape)
		after := b.Op("Reshape", nil, b.Op("Sub", nil, b.Op("Sub", nil, shapeLike(b, x, it), shapeLike(b, n.Output(0), it)), begin), shape)
		pads := b.Op("ConcatV2", nil, []graph.Output{before, after}, b.ScalarI32(1))
		return []graph.Output{b.Op("Pad", nil, dy[0], pads), none, none}
	}, "Slice")
	register(func(b *Builder, n *graph.Node, dy []graph.Output) []graph.Output {
		attrs := copyAttrs(n, "begin_mask", "end_mask", "ellipsis_mask", "new_axis_mask", "shrink_axis_mask")
		it := n.InTypes[1]
		dx := b.Op("StridedSliceGrad", attrs, shapeLike(b, in(n, 0), it), in(n, 1), in(n, 2), in(n, 3), dy[0])
		return []graph.Output{dx, none, none, none}
	}, "StridedSlice")
	register(func(b *Builder, n *graph.Node, dy []graph.Output) []graph.Output {
		// dx = dy[paddings[:, 0] : paddings[:, 0] + shape(x)]
		x, p := in(n, 0), in(n, 1)
		it := n.InTypes[1]
		lo := b.Op("Slice", nil, p, b.Const(zerosOf(it, 2)), b.Const(tensorOf(it, -1, 1)))
		begin := b.Op("Reshape", nil, lo, b.I32(-1))
		out := []graph.Output{b.Op("Slice", nil, dy[0], begin, shapeLike(b, x, it)), none}
		if n.Op == "PadV2" {
			out = append(out, none)
		}
		return out
	}, "Pad", "PadV2", "MirrorPad")
	register(tileGrad, "Tile")
	// The space/batch and space/depth pairs are each other's gradients
	// (TF's array_grad.cc): the same block and paddings or crops, which
	// get no gradient.
	for op, inv := range map[string]string{"SpaceToBatchND": "BatchToSpaceND", "BatchToSpaceND": "SpaceToBatchND"} {
		register(func(b *Builder, n *graph.Node, dy []graph.Output) []graph.Output {
			return []graph.Output{b.Op(inv, nil, dy[0], in(n, 1), in(n, 2)), none, none}
		}, op)
	}
	for op, inv := range map[string]string{"SpaceToBatch": "BatchToSpace", "BatchToSpace": "SpaceToBatch"} {
		register(func(b *Builder, n *graph.Node, dy []graph.Output) []graph.Output {
			return []graph.Output{b.Op(inv, copyAttrs(n, "block_size"), dy[0], in(n, 1)), none}
		}, op)
	}
	for op, inv := range map[string]string{"SpaceToDepth": "DepthToSpace", "DepthToSpace": "SpaceToDepth"} {
		register(func(b *Builder, n *graph.Node, dy []graph.Output) []graph.Output {
			return []graph.Output{b.Op(inv, copyAttrs(n, "block_size", "data_format"), dy[0])}
		}, op)
	}
	register(gatherGrad, "GatherV2")
	register(func(b *Builder, n *graph.Node, dy []graph.Output) []graph.Output {
		u := b.node("Unpack", A{"axis": n.Attrs["axis"], "num": graph.AttrInt(int64(len(n.Inputs)))}, dy[0])
		out := make([]graph.Output, len(n.Inputs))
		for i := range out {
			out[i] = u.Output(i)
		}
		return out
	}, "Pack")
	register(func(b *Builder, n *graph.Node, dy []graph.Output) []graph.Output {
		return []graph.Output{b.Op("Pack", copyAttrs(n, "axis"), dy)}
	}, "Unpack")
}

func tensorOf(dt tensor.DType, v ...int64) *tensor.Tensor {
	if dt == tensor.Int64 {
		return tensor.FromI64(tensor.Shape{int64(len(v))}, v)
	}
	w := make([]int32, len(v))
	for i, x := range v {
		w[i] = int32(x)
	}
	return tensor.FromI32(tensor.Shape{int64(len(v))}, w)
}

func zerosOf(dt tensor.DType, n int) *tensor.Tensor { return tensorOf(dt, make([]int64, n)...) }

// concatGrad slices dy at each input's offset along the axis (ConcatOffset).
func concatGrad(b *Builder, n *graph.Node, dy []graph.Output) []graph.Output {
	k := len(n.Inputs) - 1
	axis := in(n, k)
	var shapes []graph.Output
	for i := 0; i < k; i++ {
		shapes = append(shapes, b.Op("Shape", nil, in(n, i)))
	}
	if n.InTypes[k] != tensor.Int32 {
		axis = b.Op("Cast", A{"DstT": graph.AttrType(tensor.Int32)}, axis)
	}
	// A negative axis counts from the end (python's non_neg_concat_dim).
	rank := b.Op("Rank", nil, in(n, 0))
	axis = b.Op("FloorMod", nil, axis, rank)
	offs := b.node("ConcatOffset", nil, axis, shapes)
	out := make([]graph.Output, 0, k+1)
	for i := 0; i < k; i++ {
		out = append(out, b.Op("Slice", nil, dy[0], offs.Output(i), shapes[i]))
	}
	return append(out, none)
}

// tileGrad sums dy's tiles: reshape to interleaved [multiple, dim] pairs and
// sum the multiples (python's _TileGrad).
func tileGrad(b *Builder, n *graph.Node, dy []graph.Output) []graph.Output {
	x, m := in(n, 0), in(n, 1)
	sx := shapeLike(b, x, n.InTypes[1])
	split := b.Op("Reshape", nil, b.Op("Transpose", nil, b.Op("Pack", nil, []graph.Output{m, sx}), b.I32(1, 0)), b.I32(-1))
	axes := b.Op("Range", nil, b.ScalarI32(0), b.Op("Size", nil, split), b.ScalarI32(2))
	g := b.Op("Sum", nil, b.Op("Reshape", nil, dy[0], split), axes)
	return []graph.Output{b.Op("Reshape", nil, g, sx), none}
}

// gatherGrad is GatherV2's gradient along axis 0 with no batch dims, made
// dense: UnsortedSegmentSum of dy's rows into params' first dim (what TF
// does when its IndexedSlices gradient is converted to a tensor).
func gatherGrad(b *Builder, n *graph.Node, dy []graph.Output) []graph.Output {
	params, idx, axis := in(n, 0), in(n, 1), in(n, 2)
	av, ok := constInts(axis)
	bd := n.Attrs["batch_dims"]
	if !ok || len(av) != 1 || av[0] != 0 || (bd != nil && bd.GetI() != 0) {
		panic(buildError{unimplemented("the gradient of GatherV2 '%s' is built only for a constant axis 0 with batch_dims 0", n.Name)})
	}
	ps := b.Op("Shape", A{"out_type": graph.AttrType(tensor.Int64)}, params)
	size := b.Op("ExpandDims", nil, b.Op("Size", A{"out_type": graph.AttrType(tensor.Int64)}, idx), b.ScalarI32(0))
	inner := b.Op("StridedSlice", A{"end_mask": graph.AttrInt(1)}, ps, b.I32(1), b.I32(0), b.I32(1))
	vshape := b.Op("ConcatV2", nil, []graph.Output{size, inner}, b.ScalarI32(0))
	values := b.Op("Reshape", nil, dy[0], vshape)
	flat := b.Op("Reshape", nil, idx, b.I32(-1))
	first := b.Op("StridedSlice", A{"shrink_axis_mask": graph.AttrInt(1)}, ps, b.I32(0), b.I32(1), b.I32(1))
	return []graph.Output{b.Op("UnsortedSegmentSum", nil, values, flat, first), none, none}
}
