package cpu

import (
	"mstream/kernels"
	"mstream/status"
	"mstream/tensor"
)

// The TensorList ops that change a list's length or join elements along
// their first dimension: what tf.TensorArray's concat() and split() and
// TF's while_v2 accumulators emit (list_kernels.h/.cc). Same rules as
// tensorlist.go: lists are immutable, a new list shares its elements, an
// element taken from a tensor is copied into memory of its own.
func init() {
	list := func(op string, f func(ctx *kernels.Context) error) {
		kernels.Register(kernels.Def{Op: op, Device: kernels.CPU, Factory: fn(f)})
	}
	list("TensorListConcat", tensorListConcat)
	list("TensorListConcatV2", tensorListConcat)
	list("TensorListSplit", tensorListSplit)
	list("TensorListResize", tensorListResize)
	list("TensorListConcatLists", tensorListConcatLists)
}

// dropFirst is a partial shape without its first dimension (unknown rank
// stays unknown).
func dropFirst(s tensor.PartialShape) tensor.PartialShape {
	if !s.Known {
		return s
	}
	return tensor.PartialShape{Known: true, Dims: append([]int64(nil), s.Dims[1:]...)}
}

// tensorListConcat is TensorListConcat (element_shape an attr, no
// leading_dims) and TensorListConcatV2 (element_shape and leading_dims
// inputs): the elements joined along their first dimension, with the
// first dimension of each as the lengths output. An element not set
// counts as zeros of the known first dimension, else of its leading_dims
// entry.
func tensorListConcat(ctx *kernels.Context) error {
	v2 := ctx.NumInputs() > 1
	rest := tensor.Unknown
	if !v2 {
		if a := ctx.Node.Attrs["element_shape"]; a != nil {
			s := tensor.ShapeFromProto(a.GetShape())
			if s.Known {
				if len(s.Dims) == 0 {
					return ctx.Errorf(status.InvalidArgument, "element_shape must not be empty")
				}
				rest = dropFirst(s)
			}
		}
	}
	l, err := inputList(ctx, 0)
	if err != nil {
		return err
	}
	if err := listDType(ctx, l); err != nil {
		return err
	}
	first := int64(-1)
	if v2 {
		s, err := elemShapeInput(ctx, l, 1)
		if err != nil {
			return err
		}
		if s.Known && len(s.Dims) < 1 {
			return ctx.Errorf(status.InvalidArgument, "Concat requires elements to be at least vectors, found scalars instead.")
		}
		if s.Known {
			first = s.Dims[0]
		}
		rest = dropFirst(s)
	}
	if len(l.Elems) == 0 && !rest.FullyDefined() {
		return ctx.Errorf(status.InvalidArgument, "All except the first dimension must be fully defined when concating an empty tensor list. element_shape: %v", rest)
	}
	if !l.ElemShape.FullyDefined() {
		check := first == -1
		inferred := first
		for i, t := range l.Elems {
			if t == nil {
				continue
			}
			if len(t.Shape) == 0 {
				return ctx.Errorf(status.InvalidArgument, "Concat saw a scalar shape at index %d but requires at least vectors.", i)
			}
			if rest, err = mergeShape(ctx, rest, tensor.KnownShape(t.Shape[1:])); err != nil {
				return err
			}
			if first != -1 && first != t.Shape[0] {
				return ctx.Errorf(status.InvalidArgument, "First entry of element_shape input does not match the first dim of list element at index: %d Expected: %d Actual: %d", i, first, t.Shape[0])
			}
			if check {
				if inferred == -1 {
					inferred = t.Shape[0]
				} else if inferred != t.Shape[0] {
					inferred, check = -1, false
				}
			}
		}
		first = inferred
	}
	if !rest.FullyDefined() {
		return ctx.Errorf(status.InvalidArgument, "Trying to concat list with only uninitialized tensors but element_shape_except_first_dim is not fully defined: %v", rest)
	}
	lengths, err := ctx.Allocate(1, tensor.Shape{int64(len(l.Elems))})
	if err != nil {
		return err
	}
	var leading []int64
	if ctx.NumInputs() > 2 {
		if leading, err = hostInts(ctx, 2, "leading_dims"); err != nil {
			return err
		}
	}
	total := int64(0)
	for i, t := range l.Elems {
		var d int64
		switch {
		case t != nil:
			d = t.Shape[0]
		case i >= len(leading) && first != -1:
			d = first
		case !v2:
			return ctx.Errorf(status.InvalidArgument, "Concating lists with uninitialized tensors is not supported in this version of TensorListConcat. Consider updating your GraphDef to run the newer version.")
		case i >= len(leading):
			return ctx.Errorf(status.InvalidArgument, "List contains uninitialized tensor at index %d but leading_dims has only %d elements.", i, len(leading))
		default:
			d = leading[i]
		}
		total += d
		lengths.I64()[i] = d
	}
	out, err := ctx.Allocate(0, append(tensor.Shape{total}, rest.Dims...))
	if err != nil {
		return err
	}
	per := tensor.Shape(rest.Dims).NumElements()
	at := int64(0)
	for i, t := range l.Elems {
		n := lengths.I64()[i] * per
		if t == nil {
			zeroElems(out, at, n)
		} else {
			if !tensor.Shape(t.Shape[1:]).Equal(tensor.Shape(rest.Dims)) {
				return ctx.Errorf(status.InvalidArgument, "Element %d of the list has shape %v, which does not concat with %v", i, t.Shape, rest)
			}
			copyElems(out, int(at), t, 0, int(n))
		}
		at += n
	}
	return nil
}

// tensorListSplit cuts a tensor along its first dimension into a list of
// pieces of the given lengths.
func tensorListSplit(ctx *kernels.Context) error {
	s, err := shapeInput(ctx, 1)
	if err != nil {
		return err
	}
	if s.Known && len(s.Dims) < 1 {
		return ctx.Errorf(status.InvalidArgument, "TensorListSplit requires element_shape to be at least of rank 1, but saw: %v", s)
	}
	t := ctx.Input(0)
	if len(t.Shape) == 0 {
		return ctx.Errorf(status.InvalidArgument, "Tensor must be at least a vector, but saw shape: %v", t.Shape)
	}
	if !dropFirst(s).Compatible(t.Shape[1:]) {
		return ctx.Errorf(status.InvalidArgument, "tensor shape %v is not compatible with element_shape %v", t.Shape, s)
	}
	lt := ctx.Input(2)
	if len(lt.Shape) != 1 {
		return ctx.Errorf(status.InvalidArgument, "Expected lengths to be a vector, received shape: %v", lt.Shape)
	}
	lengths := lt.I64()
	elems, err := kernels.Scratch[*tensor.Tensor](ctx, int64(len(lengths)))
	if err != nil {
		return err
	}
	per := int64(t.Shape[1:].NumElements())
	start := int64(0)
	for i, n := range lengths {
		if n < 0 {
			return ctx.Errorf(status.InvalidArgument, "Invalid value in lengths: %d", n)
		}
		end := start + n
		if end > t.Shape[0] {
			return ctx.Errorf(status.InvalidArgument, "Attempting to slice [%d, %d] from tensor with length %d", start, end, t.Shape[0])
		}
		e, err := kernels.NewTensor(ctx, t.DType, append(tensor.Shape{n}, t.Shape[1:]...))
		if err != nil {
			return err
		}
		copyElems(e, 0, t, int(start*per), int(n*per))
		elems[i] = e
		start = end
	}
	if start != t.Shape[0] {
		return ctx.Errorf(status.InvalidArgument, "Unused values in tensor. Length of tensor: %d Values used: %d", t.Shape[0], start)
	}
	setList(ctx, 0, &tensor.List{Elems: elems, ElemShape: s, ElemDType: t.DType, MaxElems: -1})
	return nil
}

// tensorListResize cuts the list to size elements or pads it with
// elements not set.
func tensorListResize(ctx *kernels.Context) error {
	l, err := inputList(ctx, 0)
	if err != nil {
		return err
	}
	if len(ctx.Input(1).Shape) != 0 {
		return ctx.Errorf(status.InvalidArgument, "size must be a scalar")
	}
	size := int(ctx.Input(1).I32()[0])
	if size < 0 {
		return ctx.Errorf(status.InvalidArgument, "TensorListSlice expects size to be non-negative. Got: %d", size)
	}
	out, err := copyList(ctx, l, 0)
	if err != nil {
		return err
	}
	if size <= len(out.Elems) {
		out.Elems = out.Elems[:size]
	} else {
		grown, err := kernels.Scratch[*tensor.Tensor](ctx, int64(size))
		if err != nil {
			return err
		}
		copy(grown, out.Elems)
		out.Elems = grown
	}
	setList(ctx, 0, out)
	return nil
}

// tensorListConcatLists appends, element by element, each list of input_b
// to the list of input_a at the same position (two tensors of lists of
// one shape).
func tensorListConcatLists(ctx *kernels.Context) error {
	a, b := ctx.Input(0), ctx.Input(1)
	if !a.Shape.Equal(b.Shape) {
		return ctx.Errorf(status.InvalidArgument, "Incompatible input TensorList tensor shapes: %v vs. %v", a.Shape, b.Shape)
	}
	dt := attrType(ctx.Node, "element_dtype")
	out, err := ctx.Allocate(0, a.Shape)
	if err != nil {
		return err
	}
	for i := range a.Vars {
		la, okA := a.Vars[i].(*tensor.List)
		lb, okB := b.Vars[i].(*tensor.List)
		if !okA {
			return ctx.Errorf(status.InvalidArgument, "input_a is not a TensorList at index %d.  Saw: '%v'", i, a.Vars[i])
		}
		if !okB {
			return ctx.Errorf(status.InvalidArgument, "input_b is not a TensorList at index %d.  Saw: '%v'", i, b.Vars[i])
		}
		if la.ElemDType != dt {
			return ctx.Errorf(status.InvalidArgument, "input_a[%d].dtype != element_dtype.  Saw: %v vs. %v", i, la.ElemDType, dt)
		}
		if lb.ElemDType != dt {
			return ctx.Errorf(status.InvalidArgument, "input_b[%d].dtype != element_dtype.  Saw: %v vs. %v", i, lb.ElemDType, dt)
		}
		if la.ElemShape.String() != lb.ElemShape.String() {
			return ctx.Errorf(status.InvalidArgument, "input_a and input_b TensorList element shapes are not identical at index %d.  Saw %v vs. %v", i, la.ElemShape, lb.ElemShape)
		}
		c, err := copyList(ctx, la, len(lb.Elems))
		if err != nil {
			return err
		}
		c.Elems = append(c.Elems, lb.Elems...)
		out.Vars[i] = c
	}
	return nil
}
