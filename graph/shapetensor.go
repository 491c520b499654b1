package graph

import (
	"math"

	"mstream/hostmem"
	"mstream/tensor"
)

// This file is what TF's shape refiner knows of tensors that hold shapes
// (shape_refiner.cc's ConstantPartialShape and eval_const_tensor.cc): a
// Reshape whose shape input is Shape(x), a Pack of scalars, a Concat of
// such, a StridedSlice of them, or any small stateless subgraph over
// constants, which TF folds by running it. TF_GraphGetTensorShape shows the
// result, and the errors it finds are TF_FinishOperation's.

// ConstFolder runs one node on constant inputs for shape inference, as TF's
// shape refiner runs a constant subgraph; it returns nil when it cannot (no
// kernel, an error, a size beyond limit). Package kernels/cpu registers it:
// graph cannot import kernels.
type ConstFolder func(n *Node, in []*tensor.Tensor, limit hostmem.Limit) []*tensor.Tensor

var constFolder ConstFolder

// RegisterConstFolder sets the folder; it is meant for init functions.
func RegisterConstFolder(f ConstFolder) { constFolder = f }

// foldLimit bounds the memory one folded node may take: shape inference
// folds shape-sized arithmetic, and a hostile graph must not make it
// allocate without bound. Larger results are left unknown.
var foldLimit = hostmem.Limit{Allocator: "shape inference", Bytes: 1 << 24}

// maxFoldNodes bounds the nodes one request may fold.
const maxFoldNodes = 256

// notFoldable are ops TF never folds at graph construction: control flow
// (back edges may be missing), and ops whose output is fed.
var notFoldable = map[string]bool{
	"Enter": true, "RefEnter": true, "Exit": true, "RefExit": true, "Merge": true, "RefMerge": true,
	"Switch": true, "RefSwitch": true, "NextIteration": true, "RefNextIteration": true, "LoopCond": true,
	"ControlTrigger": true, "PlaceholderWithDefault": true,
}

// folder evaluates the constant value of outputs for one shape request,
// remembering what it found.
type folder struct {
	memo  map[Output]*tensor.Tensor
	tried map[*Node]bool
	nodes int
}

func newFolder() *folder {
	return &folder{memo: map[Output]*tensor.Tensor{}, tried: map[*Node]bool{}}
}

// value is EvaluateConstantTensor: o's value when the graph fixes it.
func (f *folder) value(o Output) *tensor.Tensor {
	if t, ok := f.memo[o]; ok {
		return t
	}
	t := constValue(o, 0)
	if t == nil {
		t = sliceOfShape(o)
	}
	if t == nil {
		t = f.fold(o)
	}
	f.memo[o] = t
	return t
}

// fold runs o's node on its inputs' constant values.
func (f *folder) fold(o Output) *tensor.Tensor {
	n := o.Node
	if constFolder == nil || f.tried[n] || len(n.Inputs) == 0 || notFoldable[n.Op] ||
		n.Def == nil || n.Def.IsStateful || f.nodes >= maxFoldNodes {
		return nil
	}
	for _, a := range n.Attrs {
		if a.GetFunc() != nil || len(a.GetList().GetFunc()) > 0 {
			return nil
		}
	}
	f.tried[n] = true
	f.nodes++
	in := make([]*tensor.Tensor, len(n.Inputs))
	for i, x := range n.Inputs {
		if in[i] = f.value(x); in[i] == nil {
			return nil
		}
	}
	outs := constFolder(n, in, foldLimit)
	for i, t := range outs {
		f.memo[Output{n, i}] = t
	}
	if o.Index < len(outs) {
		return outs[o.Index]
	}
	return nil
}

// sliceOfShape is TF's TryInferFromShapes for shape(x)[i]: a StridedSlice
// that shrinks a Shape to one known dimension, or Unpack of a Shape.
func sliceOfShape(o Output) *tensor.Tensor {
	n := o.Node
	if len(n.Inputs) == 0 || n.Inputs[0].Node.Op != "Shape" || len(n.OutTypes) <= o.Index {
		return nil
	}
	dt := n.OutTypes[o.Index]
	if dt != tensor.Int32 && dt != tensor.Int64 {
		return nil
	}
	sh := n.Inputs[0].Node
	if len(sh.Inputs) == 0 {
		return nil
	}
	s := sh.Inputs[0].Node.OutShapes[sh.Inputs[0].Index]
	if !s.Known {
		return nil
	}
	ix := int64(-1 << 62)
	switch n.Op {
	case "Unpack":
		if a := n.Attrs["axis"]; a != nil && a.GetI() == 0 {
			ix = int64(o.Index)
		}
	case "StridedSlice":
		masks := map[string]int64{"begin_mask": 0, "end_mask": 0, "ellipsis_mask": 0, "new_axis_mask": 0, "shrink_axis_mask": 1}
		for k, want := range masks {
			if a := n.Attrs[k]; a == nil || a.GetI() != want {
				return nil
			}
		}
		if b := constValue(n.Inputs[1], 0); b != nil && b.NumElements() == 1 {
			if v, err := b.Int64s(); err == nil {
				ix = v[0]
			}
		}
	}
	r := int64(len(s.Dims))
	if ix < -r || ix >= r {
		return nil
	}
	if ix < 0 {
		ix += r
	}
	d := s.Dims[ix]
	if d < 0 || (dt == tensor.Int32 && d >= math.MaxInt32) {
		return nil
	}
	if dt == tensor.Int32 {
		return tensor.FromI32(nil, []int32{int32(d)})
	}
	return tensor.FromI64(nil, []int64{d})
}

// ShapeTensor is TF's MakeShapeFromShapeTensor: the partial shape that input
// i, a vector of dimensions, describes. Dimensions the graph does not fix
// are -1; a vector of unknown length is an unknown shape.
func (c *ShapeContext) ShapeTensor(i int) (tensor.PartialShape, error) {
	in := c.In[i]
	if in.Known && len(in.Dims) != 1 {
		return tensor.Unknown, errorf("Shape must be rank 1 but is rank %d", len(in.Dims))
	}
	return newFolder().asShape(c.Node.Inputs[i], 0)
}

// shapeFromValues is a shape vector's value as a shape: -1 is unknown.
func shapeFromValues(t *tensor.Tensor) (tensor.PartialShape, error) {
	if len(t.Shape) == 0 {
		if v, err := t.Int64s(); err == nil && len(v) == 1 && v[0] == -1 {
			return tensor.Unknown, nil
		}
		return tensor.Unknown, errorf("Input tensor must be rank 1, or if its rank 0 it must have value -1 (representing an unknown shape).  Saw value: %v", t)
	}
	v, err := t.Int64s()
	if err != nil {
		return tensor.Unknown, errorf("Input tensor must be int32 or int64, but was %v", t.DType)
	}
	for _, d := range v {
		if d < -1 {
			return tensor.Unknown, errorf("Invalid value in tensor used for shape: %d", d)
		}
	}
	return known(append([]int64{}, v...)...), nil
}

// asShape is partialShape, else o's value as a shape, else as many unknown
// dimensions as o, a vector, has (TF's MakeShapeFromTensor).
func (f *folder) asShape(o Output, depth int) (tensor.PartialShape, error) {
	p, err := f.partialShape(o, depth)
	if err != nil || p.Known {
		return p, err
	}
	if t := f.value(o); t != nil {
		return shapeFromValues(t)
	}
	if o.Index < len(o.Node.OutShapes) {
		if s := o.Node.OutShapes[o.Index]; s.Known && len(s.Dims) == 1 && s.Dims[0] >= 0 {
			if s.Dims[0] >= 1<<25 {
				return tensor.Unknown, errorf("Cannot create a tensor with %d dimensions, as these would be more than maximum of %d", s.Dims[0], 1<<25)
			}
			return unknownDims(int(s.Dims[0])), nil
		}
	}
	return tensor.Unknown, nil
}

// partialShape is TF's ConstantPartialShape for the output o that feeds a
// shape input: what the ops that build shapes say of it. It returns an
// unknown shape when it learns nothing (the caller then tries o's value).
func (f *folder) partialShape(o Output, depth int) (tensor.PartialShape, error) {
	n := o.Node
	if depth > 16 || o.Index >= len(n.OutShapes) {
		return tensor.Unknown, nil
	}
	s := n.OutShapes[o.Index]
	if s.Known && len(s.Dims) == 0 {
		t := f.value(o)
		if t == nil {
			return tensor.Unknown, errorf("Received a shape scalar with unknown static value.  A static value of '-1' is required to represent an unknown shape.")
		}
		if v, err := t.Int64s(); err == nil && len(v) == 1 && v[0] == -1 {
			return tensor.Unknown, nil
		}
		return tensor.Unknown, errorf("Received an invalid shape scalar with a static value that is not '-1': %v", t)
	}
	if s.Known && len(s.Dims) != 1 {
		return tensor.Unknown, errorf("Shape must be rank 1 but is rank %d", len(s.Dims))
	}
	if s.Known && s.Dims[0] == 0 {
		return known(), nil // an empty vector describes a scalar
	}
	inShape := func(i int) tensor.PartialShape {
		x := n.Inputs[i]
		if x.Index < len(x.Node.OutShapes) {
			return cloneShape(x.Node.OutShapes[x.Index])
		}
		return tensor.Unknown
	}
	switch n.Op {
	case "Shape":
		return inShape(0), nil
	case "ShapeN":
		if o.Index < len(n.Inputs) {
			return inShape(o.Index), nil
		}
	case "Pack":
		dims := make([]int64, len(n.Inputs))
		for i, x := range n.Inputs {
			dims[i] = -1
			if t := f.value(x); t != nil {
				if v, err := t.Int64s(); err == nil && len(v) == 1 && v[0] >= 0 {
					dims[i] = v[0]
				}
			}
		}
		return known(dims...), nil
	case "Concat", "ConcatV2":
		axis := 0
		if n.Op == "ConcatV2" {
			axis = len(n.Inputs) - 1
		}
		out := known()
		for i, x := range n.Inputs {
			if i == axis {
				continue
			}
			p, err := f.asShape(x, depth+1)
			if err != nil {
				return tensor.Unknown, err
			}
			if !p.Known {
				return tensor.Unknown, nil
			}
			out.Dims = append(out.Dims, p.Dims...)
		}
		return out, nil
	case "StridedSlice":
		return f.stridedSliceShape(n, depth)
	case "Cast":
		if t := f.value(o); t != nil {
			if p, err := shapeFromValues(t); err == nil {
				return p, nil
			}
		}
		pre, err := f.partialShape(n.Inputs[0], depth+1)
		if err != nil || !pre.Known {
			return tensor.Unknown, nil
		}
		if dt := n.OutTypes[0]; dt != tensor.Int32 && dt != tensor.Int64 {
			return unknownDims(len(pre.Dims)), nil
		}
		return pre, nil
	}
	return tensor.Unknown, nil
}

// stridedSliceShape is TF's PartialStridedSliceShape: a slice [b:e:s] of a
// shape vector is that part of the shape.
func (f *folder) stridedSliceShape(n *Node, depth int) (tensor.PartialShape, error) {
	for i := 1; i <= 3; i++ {
		if s := n.Inputs[i].Node.OutShapes[n.Inputs[i].Index]; !s.Known || len(s.Dims) != 1 || s.Dims[0] != 1 {
			return tensor.Unknown, nil
		}
	}
	attr := func(k string) int64 {
		if a := n.Attrs[k]; a != nil {
			return a.GetI()
		}
		return 0
	}
	bm, em := attr("begin_mask"), attr("end_mask")
	if bm > 1 || em > 1 || attr("ellipsis_mask") != 0 || attr("new_axis_mask") != 0 || attr("shrink_axis_mask") != 0 {
		return tensor.Unknown, nil
	}
	scalar := func(i int) (int64, bool) {
		t := f.value(n.Inputs[i])
		if t == nil {
			return 0, false
		}
		v, err := t.Int64s()
		if err != nil || len(v) != 1 {
			return 0, false
		}
		return v[0], true
	}
	begin, end := int64(0), int64(math.MaxInt64)
	var ok bool
	if bm == 0 {
		if begin, ok = scalar(1); !ok {
			return tensor.Unknown, nil
		}
	}
	if em == 0 {
		if end, ok = scalar(2); !ok {
			return tensor.Unknown, nil
		}
	}
	stride, ok := scalar(3)
	if !ok {
		return tensor.Unknown, nil
	}
	in, err := f.asShape(n.Inputs[0], depth+1)
	if err != nil {
		return tensor.Unknown, err
	}
	return subshape(in, begin, end, stride)
}

// subshape is TF's InferenceContext::Subshape with a stride.
func subshape(s tensor.PartialShape, start, end, stride int64) (tensor.PartialShape, error) {
	startIn, endIn := start, end
	rank := int64(len(s.Dims))
	if start == 0 && stride == 1 && ((s.Known && end >= rank) || end == math.MaxInt64) {
		return s, nil
	}
	if !s.Known {
		return tensor.Unknown, nil
	}
	if stride == 0 {
		return tensor.Unknown, nil
	}
	start, end = min(start, rank), min(end, rank)
	if stride < 0 && start == rank {
		start--
	}
	if start < 0 {
		if start += rank; start < 0 {
			return tensor.Unknown, errorf("Subshape start out of bounds: %d, for shape with rank %d", startIn, rank)
		}
	}
	if end < 0 {
		if end += rank; end < 0 {
			return tensor.Unknown, errorf("Subshape end out of bounds: %d, for shape with rank %d", endIn, rank)
		}
	}
	if stride > 0 && start > end {
		return tensor.Unknown, errorf("Subshape must have computed start <= end, but is %d and %d (computed from start %d and end %d over shape with rank %d)", start, end, startIn, endIn, rank)
	}
	if stride < 0 && start < end {
		return tensor.Unknown, errorf("Subshape must have computed start >= end since stride is negative, but is %d and %d (computed from start %d and end %d over shape with rank %d and stride%d)", start, end, startIn, endIn, rank, stride)
	}
	out := known()
	for i := start; (stride > 0 && i < end) || (stride < 0 && i > end); i += stride {
		out.Dims = append(out.Dims, s.Dims[i])
	}
	return out, nil
}
