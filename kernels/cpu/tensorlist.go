package cpu

import (
	"mstream/graph"
	"mstream/kernels"
	"mstream/status"
	"mstream/tensor"
)

// TF's TensorList ops (list_kernels.h/.cc): a DT_VARIANT scalar holding a
// *tensor.List, the list that TF2's tf.TensorArray lowers to. A list is
// immutable once made, so a kernel that changes one makes a new list
// sharing the element tensors (TF forwards its input when no one else holds
// it; here the copy costs one pointer per element, never the data). A
// tensor put into a list is copied once into memory of the list's own
// (own): the executor frees a kernel's output buffer after its last reader
// in the step, while the list may keep it for longer. An
// element not set yet is nil (TF's DT_INVALID tensor): reading it gives
// zeros of the element shape when that shape is known. Errors are TF's
// messages. Lists live in host memory on every device.
func init() {
	list := func(op string, f func(ctx *kernels.Context) error) {
		kernels.Register(kernels.Def{Op: op, Device: kernels.CPU, Factory: fn(f)})
	}
	list("EmptyTensorList", emptyTensorList)
	list("TensorListReserve", tensorListReserve)
	list("TensorListLength", func(ctx *kernels.Context) error {
		l, err := inputList(ctx, 0)
		if err != nil {
			return err
		}
		out, err := ctx.Allocate(0, tensor.Shape{})
		if err != nil {
			return err
		}
		out.I32()[0] = int32(len(l.Elems))
		return nil
	})
	list("TensorListElementShape", tensorListElementShape)
	list("TensorListPushBack", tensorListPushBack)
	list("TensorListPopBack", tensorListPopBack)
	list("TensorListSetItem", tensorListSetItem)
	list("TensorListGetItem", tensorListGetItem)
	list("TensorListStack", func(ctx *kernels.Context) error { return tensorListGather(ctx, true) })
	list("TensorListGather", func(ctx *kernels.Context) error { return tensorListGather(ctx, false) })
	list("TensorListFromTensor", tensorListFromTensor)
	list("TensorListScatterV2", tensorListScatterV2)
	list("TensorListScatterIntoExistingList", tensorListScatterIntoExisting)
}

// inputList is TF's GetInputList.
func inputList(ctx *kernels.Context, i int) (*tensor.List, error) {
	t := ctx.Input(i)
	if len(t.Shape) != 0 {
		return nil, ctx.Errorf(status.InvalidArgument, "Input list must be a scalar saw: %v", t.Shape)
	}
	l, ok := t.Vars[0].(*tensor.List)
	if !ok {
		return nil, ctx.Errorf(status.InvalidArgument, "Input handle is not a list. Saw: '%v'", t.Vars[0])
	}
	return l, nil
}

// setList makes output i a variant scalar holding l.
func setList(ctx *kernels.Context, i int, l *tensor.List) {
	t := tensor.New(tensor.Variant, tensor.Shape{})
	t.Vars[0] = l
	ctx.SetOutput(i, t)
}

// listDType checks the node's element_dtype against the list's.
func listDType(ctx *kernels.Context, l *tensor.List) error {
	if dt := attrType(ctx.Node, "element_dtype"); dt != l.ElemDType {
		return ctx.Errorf(status.InvalidArgument, "Invalid data types; op elements %v but list elements %v", dt, l.ElemDType)
	}
	return nil
}

// shapeInput is TF's TensorShapeFromTensor: -1 is an unknown rank, a vector
// gives the dims (-1 unknown).
func shapeInput(ctx *kernels.Context, i int) (tensor.PartialShape, error) {
	t := ctx.Input(i)
	if t.DType != tensor.Int32 && t.DType != tensor.Int64 {
		return tensor.PartialShape{}, ctx.Errorf(status.InvalidArgument, "Expected an int32 or int64 shape tensor; found %v", t.DType)
	}
	v, err := t.Int64s()
	if err != nil {
		return tensor.PartialShape{}, ctx.Errorf(status.InvalidArgument, "%v", err)
	}
	switch len(t.Shape) {
	case 0:
		if v[0] == -1 {
			return tensor.Unknown, nil
		}
		return tensor.PartialShape{}, ctx.Errorf(status.InvalidArgument, "The only valid scalar shape tensor is the fully unknown shape specified as -1.")
	case 1:
	default:
		return tensor.PartialShape{}, ctx.Errorf(status.InvalidArgument, "Shape must be at most rank 1 but is rank %d", len(t.Shape))
	}
	for _, d := range v {
		if d < -1 {
			return tensor.PartialShape{}, ctx.Errorf(status.InvalidArgument, "Dimension %d must be >= -1", d)
		}
	}
	return tensor.PartialShape{Known: true, Dims: v}, nil
}

// mergeShape is PartialTensorShape::MergeWith.
func mergeShape(ctx *kernels.Context, a, b tensor.PartialShape) (tensor.PartialShape, error) {
	m, ok := graph.MergeShapes(a, b)
	if !ok {
		if a.Known && b.Known && len(a.Dims) != len(b.Dims) {
			return m, ctx.Errorf(status.InvalidArgument, "Incompatible ranks during merge: %d vs. %d", len(a.Dims), len(b.Dims))
		}
		return m, ctx.Errorf(status.InvalidArgument, "Incompatible shapes during merge: %v vs. %v", a, b)
	}
	return m, nil
}

// elemShapeInput merges the element_shape input i with the list's (TF's
// GetElementShapeFromInput).
func elemShapeInput(ctx *kernels.Context, l *tensor.List, i int) (tensor.PartialShape, error) {
	s, err := shapeInput(ctx, i)
	if err != nil {
		return s, err
	}
	return mergeShape(ctx, s, l.ElemShape)
}

func emptyTensorList(ctx *kernels.Context) error {
	maxT := ctx.Input(1)
	if len(maxT.Shape) != 0 {
		return ctx.Errorf(status.InvalidArgument, "max_num_elements expected to be a scalar but got shape: %v", maxT.Shape)
	}
	s, err := shapeInput(ctx, 0)
	if err != nil {
		return err
	}
	setList(ctx, 0, &tensor.List{ElemShape: s, ElemDType: attrType(ctx.Node, "element_dtype"), MaxElems: int(maxT.I32()[0])})
	return nil
}

func tensorListReserve(ctx *kernels.Context) error {
	s, err := shapeInput(ctx, 0)
	if err != nil {
		return err
	}
	nT := ctx.Input(1)
	if len(nT.Shape) != 0 {
		return ctx.Errorf(status.InvalidArgument, "The num_elements to reserve must be a tensor size 1, but got %v", nT.Shape)
	}
	n := nT.I32()[0]
	if n < 0 {
		return ctx.Errorf(status.InvalidArgument, "The num_elements to reserve must be a non negative number, but got %d", n)
	}
	elems, err := kernels.Scratch[*tensor.Tensor](ctx, int64(n))
	if err != nil {
		return err
	}
	setList(ctx, 0, &tensor.List{Elems: elems, ElemShape: s, ElemDType: attrType(ctx.Node, "element_dtype"), MaxElems: -1})
	return nil
}

func tensorListElementShape(ctx *kernels.Context) error {
	l, err := inputList(ctx, 0)
	if err != nil {
		return err
	}
	dims := []int64{-1}
	shape := tensor.Shape{}
	if l.ElemShape.Known {
		dims = l.ElemShape.Dims
		shape = tensor.Shape{int64(len(dims))}
	}
	out, err := ctx.Allocate(0, shape)
	if err != nil {
		return err
	}
	for i, d := range dims {
		if out.DType == tensor.Int32 {
			out.I32()[i] = int32(d)
		} else {
			out.I64()[i] = d
		}
	}
	return nil
}

// copyList is the list a kernel changes: l's elements, shared, with room
// for extra more.
func copyList(ctx *kernels.Context, l *tensor.List, extra int) (*tensor.List, error) {
	return l.Copy(extra), nil
}

func tensorListPushBack(ctx *kernels.Context) error {
	item := ctx.Input(1)
	dt := attrType(ctx.Node, "element_dtype")
	if dt != item.DType {
		return ctx.Errorf(status.InvalidArgument, "Invalid data types; list elements %v but tried to append %v", dt, item.DType)
	}
	l, err := inputList(ctx, 0)
	if err != nil {
		return err
	}
	if !l.ElemShape.Compatible(item.Shape) {
		return ctx.Errorf(status.InvalidArgument, "Tried to append a tensor with incompatible shape to a list. Op element shape: %v list shape: %v", item.Shape, l.ElemShape)
	}
	if err := listDType(ctx, l); err != nil {
		return err
	}
	if l.MaxElems != -1 && len(l.Elems) >= l.MaxElems {
		return ctx.Errorf(status.InvalidArgument, "Tried to push item into a full list list size: %d max_num_elements: %d", len(l.Elems), l.MaxElems)
	}
	out, err := copyList(ctx, l, 1)
	if err != nil {
		return err
	}
	if item, err = own(ctx, item); err != nil {
		return err
	}
	out.Elems = append(out.Elems, item)
	setList(ctx, 0, out)
	return nil
}

// own copies t into host memory of its own, so that a list may keep it
// past the step's use of t's buffer. Strings and variants hold no buffer
// the executor frees.
func own(ctx *kernels.Context, t *tensor.Tensor) (*tensor.Tensor, error) {
	if t.DType == tensor.String || t.DType == tensor.Variant {
		return t, nil
	}
	c, err := kernels.NewTensor(ctx, t.DType, t.Shape)
	if err != nil {
		return nil, err
	}
	copy(c.Buf, t.Buf)
	return c, nil
}

// zerosOut allocates output i as zeros of a fully defined element shape.
func zerosOut(ctx *kernels.Context, i int, s tensor.PartialShape) error {
	t, err := ctx.Allocate(i, tensor.Shape(s.Dims))
	if err != nil {
		return err
	}
	clear(t.Buf)
	return nil
}

func tensorListPopBack(ctx *kernels.Context) error {
	l, err := inputList(ctx, 0)
	if err != nil {
		return err
	}
	if err := listDType(ctx, l); err != nil {
		return err
	}
	if len(l.Elems) == 0 {
		return ctx.Errorf(status.InvalidArgument, "Trying to pop from an empty list.")
	}
	if t := l.Elems[len(l.Elems)-1]; t != nil {
		ctx.SetOutput(1, t)
	} else {
		s, err := elemShapeInput(ctx, l, 1)
		if err != nil {
			return err
		}
		if !s.FullyDefined() {
			return ctx.Errorf(status.InvalidArgument, "Trying to read an uninitialized tensor but element_shape is not fully defined.%v", s)
		}
		if err := zerosOut(ctx, 1, s); err != nil {
			return err
		}
	}
	out, err := copyList(ctx, l, 0)
	if err != nil {
		return err
	}
	out.Elems = out.Elems[:len(out.Elems)-1]
	setList(ctx, 0, out)
	return nil
}

func tensorListSetItem(ctx *kernels.Context) error {
	l, err := inputList(ctx, 0)
	if err != nil {
		return err
	}
	if err := listDType(ctx, l); err != nil {
		return err
	}
	if len(ctx.Input(1).Shape) != 0 {
		return ctx.Errorf(status.InvalidArgument, "Expected argument 1 to be a scalar. Received%v", ctx.Input(1))
	}
	item := ctx.Input(2)
	if !l.ElemShape.Compatible(item.Shape) {
		return ctx.Errorf(status.InvalidArgument, "Tried to set a tensor with incompatible shape at a list index. Item element shape: %v list shape: %v", item.Shape, l.ElemShape)
	}
	index := int(ctx.Input(1).I32()[0])
	resize := attrBool(ctx.Node, "resize_if_index_out_of_bounds")
	if index < 0 || index >= len(l.Elems) && !resize {
		return ctx.Errorf(status.InvalidArgument, "Trying to modify element %d in a list with %d elements.", index, len(l.Elems))
	}
	out, err := copyList(ctx, l, 0)
	if err != nil {
		return err
	}
	if index >= len(out.Elems) {
		grown, err := kernels.Scratch[*tensor.Tensor](ctx, int64(index)+1)
		if err != nil {
			return err
		}
		copy(grown, out.Elems)
		out.Elems = grown
	}
	if out.Elems[index], err = own(ctx, item); err != nil {
		return err
	}
	setList(ctx, 0, out)
	return nil
}

// knownElemShape is the element shape for reading elements not set: the
// element_shape input merged with the list's and, while not fully defined,
// with the shapes of the set elements among idx (all of them when nil).
func knownElemShape(ctx *kernels.Context, l *tensor.List, shapeIn int, idx []int) (tensor.PartialShape, error) {
	s, err := elemShapeInput(ctx, l, shapeIn)
	if err != nil || s.FullyDefined() {
		return s, err
	}
	merge := func(t *tensor.Tensor) error {
		if t != nil {
			s, err = mergeShape(ctx, s, tensor.KnownShape(t.Shape))
		}
		return err
	}
	if idx == nil {
		for _, t := range l.Elems {
			if err := merge(t); err != nil {
				return s, err
			}
		}
	}
	for _, i := range idx {
		if err := merge(l.Elems[i]); err != nil {
			return s, err
		}
	}
	return s, nil
}

func tensorListGetItem(ctx *kernels.Context) error {
	l, err := inputList(ctx, 0)
	if err != nil {
		return err
	}
	if err := listDType(ctx, l); err != nil {
		return err
	}
	index := int(ctx.Input(1).I32()[0])
	if index < 0 || index >= len(l.Elems) {
		return ctx.Errorf(status.InvalidArgument, "Trying to access element %d in a list with %d elements.", index, len(l.Elems))
	}
	if t := l.Elems[index]; t != nil {
		ctx.SetOutput(0, t)
		return nil
	}
	s, err := knownElemShape(ctx, l, 2, nil)
	if err != nil {
		return err
	}
	if !s.FullyDefined() {
		return ctx.Errorf(status.InvalidArgument, "Trying to read an uninitialized tensor but element_shape is not fully defined: %v and no list element is set.", s)
	}
	return zerosOut(ctx, 0, s)
}

// tensorListGather is TensorListStack (all elements, stack) and
// TensorListGather (the elements at indices): the elements stacked along a
// new first dimension, zeros for those not set.
func tensorListGather(ctx *kernels.Context, stack bool) error {
	l, err := inputList(ctx, 0)
	if err != nil {
		return err
	}
	if err := listDType(ctx, l); err != nil {
		return err
	}
	shapeIn := 2
	var idx []int
	if stack {
		shapeIn = 1
		if n := attrInt(ctx.Node, "num_elements", -1); n != -1 && int64(len(l.Elems)) != n {
			return ctx.Errorf(status.InvalidArgument, "Operation expected a list with %d elements but got a list with %d elements.", n, len(l.Elems))
		}
		idx = make([]int, len(l.Elems))
		for i := range idx {
			idx[i] = i
		}
	} else {
		iv := ctx.Input(1).I32()
		idx = make([]int, len(iv))
		for k, i := range iv {
			idx[k] = int(i)
		}
	}
	s, err := elemShapeInput(ctx, l, shapeIn)
	if err != nil {
		return err
	}
	if !s.FullyDefined() && len(idx) == 0 {
		if stack {
			return ctx.Errorf(status.InvalidArgument, "Tried to stack elements of an empty list with non-fully-defined element_shape: %v", s)
		}
		return ctx.Errorf(status.InvalidArgument, "Tried to gather 0-elements from a list with non-fully-defined shape: %v", s)
	}
	for _, i := range idx {
		if i < 0 || i >= len(l.Elems) {
			return ctx.Errorf(status.InvalidArgument, "Trying to gather element %d in a list with %d elements.", i, len(l.Elems))
		}
	}
	if !l.ElemShape.FullyDefined() {
		if s, err = knownElemShape(ctx, l, shapeIn, idx); err != nil {
			return err
		}
	}
	if !s.FullyDefined() {
		what := "Tried to stack list which only contains uninitialized tensors and has a non-fully-defined element_shape: %v"
		if !stack {
			what = "Tried to gather uninitialized tensors from a list with non-fully-defined element_shape: %v"
		}
		return ctx.Errorf(status.InvalidArgument, what, s)
	}
	out, err := ctx.Allocate(0, append(tensor.Shape{int64(len(idx))}, s.Dims...))
	if err != nil {
		return err
	}
	per := tensor.Shape(s.Dims).NumElements()
	for k, i := range idx {
		t := l.Elems[i]
		if t == nil {
			zeroElems(out, int64(k)*per, per)
			continue
		}
		if !t.Shape.Equal(tensor.Shape(s.Dims)) {
			return ctx.Errorf(status.InvalidArgument, "Element %d of the list has shape %v, not the element shape %v", i, t.Shape, s)
		}
		copyElems(out, k*int(per), t, 0, int(per))
	}
	return nil
}

func zeroElems(dst *tensor.Tensor, do, n int64) {
	switch dst.DType {
	case tensor.String:
		clear(dst.Strs[do : do+n])
	case tensor.Variant:
		clear(dst.Vars[do : do+n])
	default:
		sz := int64(dst.DType.Size())
		clear(dst.Buf[do*sz : (do+n)*sz])
	}
}

// sliceRows cuts t along its first dimension into one new tensor per row
// (TF copies each row too, into an aligned tensor of its own).
func sliceRows(ctx *kernels.Context, t *tensor.Tensor, rows []int) ([]*tensor.Tensor, error) {
	shape := t.Shape[1:].Clone()
	per := shape.NumElements()
	out := make([]*tensor.Tensor, len(rows))
	for k, r := range rows {
		e, err := kernels.NewTensor(ctx, t.DType, shape)
		if err != nil {
			return nil, err
		}
		copyElems(e, 0, t, r*int(per), int(per))
		out[k] = e
	}
	return out, nil
}

// elementShapeArg reads an element_shape input that must be at most rank 1.
func elementShapeArg(ctx *kernels.Context, i int, op string) (tensor.PartialShape, error) {
	if len(ctx.Input(i).Shape) > 1 {
		return tensor.PartialShape{}, ctx.Errorf(status.InvalidArgument, "%s: element_shape must be at most rank 1 but has the shape of %v", op, ctx.Input(i).Shape)
	}
	return shapeInput(ctx, i)
}

// rowsOf checks that t is at least a vector whose rows fit s.
func rowsOf(ctx *kernels.Context, t *tensor.Tensor, s tensor.PartialShape) error {
	if len(t.Shape) == 0 {
		return ctx.Errorf(status.InvalidArgument, "Tensor must be at least a vector, but saw shape: %v", t.Shape)
	}
	if !s.Compatible(t.Shape[1:]) {
		return ctx.Errorf(status.InvalidArgument, "Specified a list with shape %v from a tensor with shape %v", s, t.Shape[1:])
	}
	return nil
}

func tensorListFromTensor(ctx *kernels.Context) error {
	s, err := elementShapeArg(ctx, 1, "TensorListFromTensor")
	if err != nil {
		return err
	}
	t := ctx.Input(0)
	if err := rowsOf(ctx, t, s); err != nil {
		return err
	}
	rows, err := kernels.Scratch[int](ctx, t.Shape[0])
	if err != nil {
		return err
	}
	for i := range rows {
		rows[i] = i
	}
	elems, err := sliceRows(ctx, t, rows)
	if err != nil {
		return err
	}
	setList(ctx, 0, &tensor.List{Elems: elems, ElemShape: s, ElemDType: t.DType, MaxElems: -1})
	return nil
}

func tensorListScatterV2(ctx *kernels.Context) error {
	s, err := elementShapeArg(ctx, 2, "TensorListScatter")
	if err != nil {
		return err
	}
	if len(ctx.Input(3).Shape) != 0 {
		return ctx.Errorf(status.InvalidArgument, "num_elements must be a scalar")
	}
	num := int(ctx.Input(3).I32()[0])
	if num < -1 {
		return ctx.Errorf(status.InvalidArgument, "TensorListScatter expects num_elements >= -1, found: %d", num)
	}
	t := ctx.Input(0)
	if err := rowsOf(ctx, t, s); err != nil {
		return err
	}
	indices := ctx.Input(1).I32()
	if int64(len(indices)) != t.Shape[0] {
		return ctx.Errorf(status.InvalidArgument, "Invalid number of rows in input tensor. Expected: %d Actual: %d", len(indices), t.Shape[0])
	}
	size := num
	for _, i := range indices {
		if i < 0 {
			return ctx.Errorf(status.InvalidArgument, "Indices in TensorListScatter must all be non-negative.")
		}
		if num != -1 && int(i) >= num {
			return ctx.Errorf(status.InvalidArgument, "TensorListScatter: Trying to scatter at index %d in list with size %d", i, num)
		}
		size = max(size, int(i)+1)
	}
	l := &tensor.List{ElemShape: s, ElemDType: t.DType, MaxElems: -1}
	if l.Elems, err = kernels.Scratch[*tensor.Tensor](ctx, int64(max(size, 0))); err != nil {
		return err
	}
	if err := scatter(ctx, l, t, indices); err != nil {
		return err
	}
	setList(ctx, 0, l)
	return nil
}

// scatter sets l's elements at indices to the rows of t.
func scatter(ctx *kernels.Context, l *tensor.List, t *tensor.Tensor, indices []int32) error {
	rows := make([]int, len(indices))
	for k := range rows {
		rows[k] = k
	}
	elems, err := sliceRows(ctx, t, rows)
	if err != nil {
		return err
	}
	for k, i := range indices {
		l.Elems[i] = elems[k]
	}
	return nil
}

// tensorListScatterIntoExisting grows the list to the largest index; the
// elements between are unset (TF 2.15 fills them with empty float tensors,
// which its Stack then concatenates as nothing, shifting later rows).
func tensorListScatterIntoExisting(ctx *kernels.Context) error {
	l, err := inputList(ctx, 0)
	if err != nil {
		return err
	}
	t, idxT := ctx.Input(1), ctx.Input(2)
	if t.DType != l.ElemDType {
		return ctx.Errorf(status.InvalidArgument, "Invalid data types; input tensor type: %v list element_type: %v", t.DType, l.ElemDType)
	}
	if len(t.Shape) == 0 {
		return ctx.Errorf(status.InvalidArgument, "Tensor must be at least a vector, but saw shape: %v", t.Shape)
	}
	if len(idxT.Shape) != 1 {
		return ctx.Errorf(status.InvalidArgument, "Expected indices to be a vector, but received shape: %v", idxT.Shape)
	}
	indices := idxT.I32()
	if int64(len(indices)) != t.Shape[0] {
		return ctx.Errorf(status.InvalidArgument, "Expected len(indices) == tensor.shape[0], but saw: %d vs. %d", len(indices), t.Shape[0])
	}
	size := len(l.Elems)
	for _, i := range indices {
		if i < 0 {
			return ctx.Errorf(status.InvalidArgument, "Indices in TensorListScatter must all be non-negative.")
		}
		size = max(size, int(i)+1)
	}
	out, err := copyList(ctx, l, 0)
	if err != nil {
		return err
	}
	if size > len(out.Elems) {
		grown, err := kernels.Scratch[*tensor.Tensor](ctx, int64(size))
		if err != nil {
			return err
		}
		copy(grown, out.Elems)
		out.Elems = grown
	}
	if err := scatter(ctx, out, t, indices); err != nil {
		return err
	}
	setList(ctx, 0, out)
	return nil
}
