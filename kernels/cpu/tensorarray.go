package cpu

import (
	"strconv"
	"sync/atomic"

	"mstream/graph"
	"mstream/kernels"
	"mstream/resource"
	"mstream/status"
	"mstream/tensor"
)

// TF1's TensorArray (tensor_array.h, tensor_array_ops.cc): what
// tf.compat.v1.nn.dynamic_rnn and v1 while_loops over a TensorArray run.
// TensorArrayV3 makes a mutable array of one step: its handle output is a
// scalar DT_RESOURCE tensor whose Strs hold a ResourceHandleProto
// (container "_tensor_arrays", the array's unique name), as TF's does, and
// whose Vars hold the *tensor.Array itself, so every op that reads the
// handle (through Enter, Switch, Identity, ...) reaches the array without
// a lookup and the array lives exactly as long as the step's tensors that
// refer to it: nothing outlives the Run, as TF's per-step container. The
// flow tensor (a float scalar passed from op to op) is what orders the
// ops; the kernels forward it. An array's mutex guards its elements; a
// written element is copied into memory of the array's own (own), since
// the executor frees a kernel's output after its last reader in the step.
// Messages are TF's, prefixed "TensorArray <name>: ". Arrays live in host
// memory on every device.
func init() {
	reg := func(op string, f func(ctx *kernels.Context) error) {
		kernels.Register(kernels.Def{Op: op, Device: kernels.CPU, Factory: fn(f)})
	}
	kernels.Register(kernels.Def{Op: "TensorArrayV3", Device: kernels.CPU, Factory: func(n *graph.Node) (kernels.Kernel, error) {
		// TF names each array <tensor_array_name or node name><counter>;
		// the counter is the kernel's, so sessions never share one.
		var made atomic.Int64
		return kernels.KernelFunc(func(ctx *kernels.Context) error { return tensorArrayV3(ctx, &made) }), nil
	}})
	reg("TensorArrayWriteV3", tensorArrayWrite)
	reg("TensorArrayReadV3", tensorArrayRead)
	reg("TensorArrayGatherV3", tensorArrayGather)
	reg("TensorArrayScatterV3", tensorArrayScatter)
	reg("TensorArrayConcatV3", tensorArrayConcat)
	reg("TensorArraySplitV3", tensorArraySplit)
	reg("TensorArraySizeV3", tensorArraySize)
	reg("TensorArrayCloseV3", tensorArrayClose)
	reg("TensorArrayGradV3", tensorArrayGrad)
}

// newTensorArray makes an array of size unset elements and its handle.
func newTensorArray(ctx *kernels.Context, name string, dt tensor.DType, size int, elemShape tensor.PartialShape, dynamic, clear, identical, isGrad bool) (*tensor.Array, error) {
	elems, err := kernels.Scratch[tensor.ArrayElem](ctx, int64(size))
	if err != nil {
		return nil, err
	}
	ta := &tensor.Array{Name: name, DType: dt, Dynamic: dynamic, ClearAfterRead: clear, Identical: identical, IsGrad: isGrad,
		ElemShape: elemShape, Elems: elems, MarkedSize: -1}
	ta.Handle = arrayHandle(ta)
	return ta, nil
}

// arrayHandle is the handle tensor of ta: the ResourceHandleProto TF's
// TensorArrayV3 outputs (container "_tensor_arrays"), with ta in Vars.
func arrayHandle(ta *tensor.Array) *tensor.Tensor {
	h := resource.Handle{Container: "_tensor_arrays", Name: ta.Name, Kind: "TensorArray"}.Tensor()
	h.Vars = []any{ta}
	return h
}

func taErrorf(ctx *kernels.Context, ta *tensor.Array, format string, args ...any) error {
	return ctx.Errorf(status.InvalidArgument, "TensorArray %s: "+format, append([]any{ta.Name}, args...)...)
}

// taInput is the array that input i's handle refers to.
func taInput(ctx *kernels.Context, i int) (*tensor.Array, error) {
	t := ctx.Input(i)
	if t.DType == tensor.Resource && len(t.Vars) == 1 {
		if ta, ok := t.Vars[0].(*tensor.Array); ok {
			return ta, nil
		}
	}
	name := "?"
	if h, err := resource.FromTensor(t); err == nil {
		name = h.Container + "/" + h.Name
	}
	return nil, ctx.Errorf(status.NotFound, "Resource %s does not exist: a TensorArray handle must come from a TensorArrayV3 of the same Run", name)
}

// forwardFlow passes the flow input on (TF's kernels do the same).
func forwardFlow(ctx *kernels.Context, out, in int) {
	ctx.SetOutput(out, ctx.Input(in))
}

func scalarIndex(ctx *kernels.Context, i int, what string) (int, error) {
	t := ctx.Input(i)
	if len(t.Shape) != 0 {
		return 0, ctx.Errorf(status.InvalidArgument, "%s must be a scalar, but had shape: %v", what, t.Shape)
	}
	return int(t.I32()[0]), nil
}

func tensorArrayV3(ctx *kernels.Context, made *atomic.Int64) error {
	size, err := scalarIndex(ctx, 0, "TensorArray size")
	if err != nil {
		return err
	}
	if size < 0 {
		return ctx.Errorf(status.InvalidArgument, "Size should be >= 0.")
	}
	n := ctx.Node
	name := attrString(n, "tensor_array_name", "")
	if name == "" {
		name = n.Name
	}
	name += "_" + strconv.FormatInt(made.Add(1)-1, 10)
	shape := tensor.Unknown
	if a := n.Attrs["element_shape"]; a != nil {
		shape = tensor.ShapeFromProto(a.GetShape())
	}
	clearAfter := true
	if a := n.Attrs["clear_after_read"]; a != nil {
		clearAfter = a.GetB()
	}
	ta, err := newTensorArray(ctx, name, attrType(n, "dtype"), size, shape, attrBool(n, "dynamic_size"), clearAfter, attrBool(n, "identical_element_shapes"), false)
	if err != nil {
		return err
	}
	ctx.SetOutput(0, ta.Handle)
	flow, err := ctx.Allocate(1, tensor.Shape{})
	if err != nil {
		return err
	}
	clear(flow.Buf)
	return nil
}

// writeLocked is TF's LockedWriteOrAggregate.
func taWriteLocked(ctx *kernels.Context, ta *tensor.Array, index int, v *tensor.Tensor) error {
	if ta.Closed {
		return taErrorf(ctx, ta, "has already been closed.")
	}
	if index < 0 || !ta.Dynamic && index >= len(ta.Elems) {
		return taErrorf(ctx, ta, "Tried to write to index %d but array is not resizeable and size is: %d", index, len(ta.Elems))
	}
	if index >= len(ta.Elems) {
		grown, err := kernels.Scratch[tensor.ArrayElem](ctx, int64(index)+1)
		if err != nil {
			return err
		}
		copy(grown, ta.Elems)
		ta.Elems = grown
	}
	e := &ta.Elems[index]
	if v.DType != ta.DType {
		return taErrorf(ctx, ta, "Could not write to TensorArray index %d because the value dtype is %v but TensorArray dtype is %v.", index, v.DType, ta.DType)
	}
	if !ta.ElemShape.Compatible(v.Shape) {
		return taErrorf(ctx, ta, "Could not write to TensorArray index %d because the value shape is %v which is incompatible with the TensorArray's inferred element shape: %v (consider setting infer_shape=False).", index, v.Shape, ta.ElemShape)
	} else if ta.Identical && !ta.ElemShape.FullyDefined() {
		ta.ElemShape = tensor.KnownShape(v.Shape)
	}
	if e.Read {
		return taErrorf(ctx, ta, "Could not write to TensorArray index %d because it has already been read.", index)
	}
	if !ta.IsGrad && e.Written {
		return taErrorf(ctx, ta, "Could not write to TensorArray index %d because it has already been written to.", index)
	}
	if e.Written {
		if !v.Shape.Equal(e.Shape) {
			return taErrorf(ctx, ta, "Could not aggregate to TensorArray index %d because the existing shape is %v but the new input shape is %v.", index, e.Shape, v.Shape)
		}
		sum, err := kernels.NewTensor(ctx, v.DType, v.Shape)
		if err != nil {
			return err
		}
		if e.T == nil {
			copy(sum.Buf, v.Buf)
		} else if err := addTensors(ctx, sum, e.T, v); err != nil {
			return err
		}
		e.T = sum
		ta.NoGrads = true
		return nil
	}
	c, err := own(ctx, v)
	if err != nil {
		return err
	}
	*e = tensor.ArrayElem{T: c, Shape: v.Shape.Clone(), Written: true}
	return nil
}

// addTensors sets dst to a + b (a gradient array's aggregated writes).
func addTensors(ctx *kernels.Context, dst, a, b *tensor.Tensor) error {
	switch dst.DType {
	case tensor.Float:
		d, x, y := dst.F32(), a.F32(), b.F32()
		for i := range d {
			d[i] = x[i] + y[i]
		}
	case tensor.Double:
		d, x, y := dst.F64(), a.F64(), b.F64()
		for i := range d {
			d[i] = x[i] + y[i]
		}
	case tensor.Int32:
		d, x, y := dst.I32(), a.I32(), b.I32()
		for i := range d {
			d[i] = x[i] + y[i]
		}
	case tensor.Int64:
		d, x, y := dst.I64(), a.I64(), b.I64()
		for i := range d {
			d[i] = x[i] + y[i]
		}
	default:
		return ctx.Errorf(status.Unimplemented, "TensorArray: aggregating writes of %v is not supported", dst.DType)
	}
	return nil
}

// readLocked is TF's LockedRead: an element not written reads as zeros
// when its shape is known (always in a gradient array, whose reads past
// its end give zeros too).
func taReadLocked(ctx *kernels.Context, ta *tensor.Array, index int) (*tensor.Tensor, error) {
	if ta.Closed {
		return nil, taErrorf(ctx, ta, "has already been closed.")
	}
	if index < 0 || !ta.IsGrad && index >= len(ta.Elems) {
		return nil, ctx.Errorf(status.InvalidArgument, "Tried to read from index %d but array size is: %d", index, len(ta.Elems))
	}
	if index >= len(ta.Elems) || !ta.Elems[index].Written {
		var shape tensor.Shape
		switch {
		case ta.IsGrad && index < len(ta.Elems) && len(ta.Elems[index].Shape) > 0:
			shape = ta.Elems[index].Shape
		case !ta.ElemShape.FullyDefined():
			return nil, taErrorf(ctx, ta, "Could not read from TensorArray index %d.  Furthermore, the element shape is not fully defined: %v.  It is possible you are working with a resizeable TensorArray and stop_gradients is not allowing the gradients to be written.  If you set the full element_shape property on the forward TensorArray, the proper all-zeros tensor will be returned instead of incurring this error.", index, ta.ElemShape)
		default:
			shape = tensor.Shape(ta.ElemShape.Dims)
		}
		if index >= len(ta.Elems) {
			grown, err := kernels.Scratch[tensor.ArrayElem](ctx, int64(index)+1)
			if err != nil {
				return nil, err
			}
			old := copy(grown, ta.Elems)
			for i := old; i < len(grown); i++ {
				grown[i] = tensor.ArrayElem{Shape: shape, Written: true}
			}
			ta.Elems = grown
		} else {
			ta.Elems[index] = tensor.ArrayElem{Shape: shape, Written: true}
		}
	}
	e := &ta.Elems[index]
	if e.Cleared {
		return nil, taErrorf(ctx, ta, "Could not read index %d twice because it was cleared after a previous read (perhaps try setting clear_after_read = false?).", index)
	}
	v := e.T
	if v == nil {
		var err error
		if v, err = kernels.NewTensor(ctx, ta.DType, e.Shape); err != nil {
			return nil, err
		}
		zeroElems(v, 0, v.NumElements())
		e.T = v
	}
	if ta.ClearAfterRead {
		e.T = nil
		e.Cleared = true
	}
	e.Read = true
	return v, nil
}

func tensorArrayWrite(ctx *kernels.Context) error {
	ta, err := taInput(ctx, 0)
	if err != nil {
		return err
	}
	index, err := scalarIndex(ctx, 1, "TensorArray index")
	if err != nil {
		return err
	}
	ta.Mu.Lock()
	defer ta.Mu.Unlock()
	if err := taWriteLocked(ctx, ta, index, ctx.Input(2)); err != nil {
		return err
	}
	forwardFlow(ctx, 0, 3)
	return nil
}

func tensorArrayRead(ctx *kernels.Context) error {
	ta, err := taInput(ctx, 0)
	if err != nil {
		return err
	}
	index, err := scalarIndex(ctx, 1, "TensorArray index")
	if err != nil {
		return err
	}
	if dt := attrType(ctx.Node, "dtype"); dt != ta.DType {
		return ctx.Errorf(status.InvalidArgument, "TensorArray dtype is %v but Op requested dtype %v.", ta.DType, dt)
	}
	ta.Mu.Lock()
	defer ta.Mu.Unlock()
	v, err := taReadLocked(ctx, ta, index)
	if err != nil {
		return err
	}
	ctx.SetOutput(0, v)
	return nil
}

// readAll reads the elements at indices (TF's PackOrGather and Concat
// read each through LockedRead).
func taReadAll(ctx *kernels.Context, ta *tensor.Array, indices []int) ([]*tensor.Tensor, error) {
	vs := make([]*tensor.Tensor, len(indices))
	for k, i := range indices {
		v, err := taReadLocked(ctx, ta, i)
		if err != nil {
			return nil, err
		}
		vs[k] = v
	}
	return vs, nil
}

func tensorArrayGather(ctx *kernels.Context) error {
	ta, err := taInput(ctx, 0)
	if err != nil {
		return err
	}
	if dt := attrType(ctx.Node, "dtype"); dt != ta.DType {
		return ctx.Errorf(status.InvalidArgument, "TensorArray dtype is %v but Op requested dtype %v.", ta.DType, dt)
	}
	it := ctx.Input(1)
	if len(it.Shape) != 1 {
		return ctx.Errorf(status.InvalidArgument, "Expected indices to be a vector, but received shape: %v", it.Shape)
	}
	indices := make([]int, len(it.I32()))
	for k, i := range it.I32() {
		indices[k] = int(i)
	}
	ta.Mu.Lock()
	defer ta.Mu.Unlock()
	if ta.Closed {
		return taErrorf(ctx, ta, "has already been closed.")
	}
	if len(indices) == 0 {
		s := ta.ElemShape
		if a := ctx.Node.Attrs["element_shape"]; a != nil {
			if s, err = mergeShape(ctx, s, tensor.ShapeFromProto(a.GetShape())); err != nil {
				return err
			}
		}
		if !s.FullyDefined() {
			return ctx.Errorf(status.InvalidArgument, "TensorArray has size zero, but element shape %v is not fully defined. Currently only static shapes are supported when packing zero-size TensorArrays.", s)
		}
		_, err := ctx.Allocate(0, append(tensor.Shape{0}, s.Dims...))
		return err
	}
	vs, err := taReadAll(ctx, ta, indices)
	if err != nil {
		return err
	}
	shape := vs[0].Shape
	for k, v := range vs[1:] {
		if !v.Shape.Equal(shape) {
			return ctx.Errorf(status.InvalidArgument, "TensorArray has inconsistent shapes.  Index 0 has shape: %v but index %d has shape: %v", shape, k+1, v.Shape)
		}
	}
	out, err := ctx.Allocate(0, append(tensor.Shape{int64(len(vs))}, shape...))
	if err != nil {
		return err
	}
	per := int(shape.NumElements())
	for k, v := range vs {
		copyElems(out, k*per, v, 0, per)
	}
	return nil
}

// taElemsArgs are the inputs of a write of many elements at once, by
// index: Scatter's indices and value, Split's value and lengths. Both
// check the same things before they take the array, in TF's own words
// and order for each op (both check their input 2 first).
type taElemsArgs struct {
	vec, value       int // the indices' or lengths' input, the value's
	vecMsg, valueMsg string
}

var (
	scatterArgs = taElemsArgs{vec: 1, value: 2,
		vecMsg:   "Expected indices to be a vector, but received shape: %v",
		valueMsg: "Input value for unpack must be at least a vector but received shape: %v"}
	splitArgs = taElemsArgs{vec: 2, value: 1,
		vecMsg:   "Expected lengths to be a vector, received shape: %v",
		valueMsg: "Expected value to be at least a vector, but received shape: %v"}
)

// inputs returns the array, the indices or lengths (a vector) and the
// value (at least a vector), or TF's error.
func (a taElemsArgs) inputs(ctx *kernels.Context) (ta *tensor.Array, vec, value *tensor.Tensor, err error) {
	if ta, err = taInput(ctx, 0); err != nil {
		return nil, nil, nil, err
	}
	vec, value = ctx.Input(a.vec), ctx.Input(a.value)
	for _, in := range []int{2, 1} {
		switch {
		case in == a.vec && len(vec.Shape) != 1:
			return nil, nil, nil, ctx.Errorf(status.InvalidArgument, a.vecMsg, vec.Shape)
		case in == a.value && len(value.Shape) == 0:
			return nil, nil, nil, ctx.Errorf(status.InvalidArgument, a.valueMsg, value.Shape)
		}
	}
	return ta, vec, value, nil
}

func tensorArrayScatter(ctx *kernels.Context) error {
	ta, it, v, err := scatterArgs.inputs(ctx)
	if err != nil {
		return err
	}
	indices := it.I32()
	if int64(len(indices)) != v.Shape[0] {
		return ctx.Errorf(status.InvalidArgument, "Expected len(indices) == values.shape[0], but saw: %d vs. %d", len(indices), v.Shape[0])
	}
	ta.Mu.Lock()
	defer ta.Mu.Unlock()
	if !ta.Dynamic {
		for _, i := range indices {
			if int(i) >= len(ta.Elems) {
				return ctx.Errorf(status.InvalidArgument, "Max scatter index must be < array size (%d vs. %d)", i, len(ta.Elems))
			}
		}
	}
	rows := make([]int, len(indices))
	for k := range rows {
		rows[k] = k
	}
	elems, err := sliceRows(ctx, v, rows)
	if err != nil {
		return err
	}
	for k, i := range indices {
		if err := taWriteLocked(ctx, ta, int(i), elems[k]); err != nil {
			return err
		}
	}
	forwardFlow(ctx, 0, 3)
	return nil
}

func tensorArrayConcat(ctx *kernels.Context) error {
	ta, err := taInput(ctx, 0)
	if err != nil {
		return err
	}
	if dt := attrType(ctx.Node, "dtype"); dt != ta.DType {
		return ctx.Errorf(status.InvalidArgument, "TensorArray dtype is %v but Op requested dtype %v.", ta.DType, dt)
	}
	ta.Mu.Lock()
	defer ta.Mu.Unlock()
	if ta.Closed {
		return taErrorf(ctx, ta, "has already been closed.")
	}
	// TF's PackOrConcatSize: a gradient array concatenates as many
	// elements as its forward array was split into.
	n := len(ta.Elems)
	if ta.IsGrad {
		n = max(ta.MarkedSize, 0)
	}
	indices := make([]int, n)
	for i := range indices {
		indices[i] = i
	}
	vs, err := taReadAll(ctx, ta, indices)
	if err != nil {
		return err
	}
	lengths, err := ctx.Allocate(1, tensor.Shape{int64(len(vs))})
	if err != nil {
		return err
	}
	if len(vs) == 0 {
		s := tensor.Unknown
		if a := ctx.Node.Attrs["element_shape_except0"]; a != nil {
			s = tensor.ShapeFromProto(a.GetShape())
		}
		if !s.FullyDefined() {
			return ctx.Errorf(status.InvalidArgument, "TensorArray has size zero, but element_shape_except0 %v is not fully defined. Currently only static shapes are supported when concatenating zero-size TensorArrays.", s)
		}
		_, err := ctx.Allocate(0, append(tensor.Shape{0}, s.Dims...))
		return err
	}
	var rest tensor.Shape
	total := int64(0)
	for i, v := range vs {
		if len(v.Shape) == 0 {
			return ctx.Errorf(status.InvalidArgument, "Concat saw a scalar shape at index %d but requires at least vectors.  Did you mean to call pack?", i)
		}
		if i == 0 {
			rest = v.Shape[1:]
		} else if !v.Shape[1:].Equal(rest) {
			return ctx.Errorf(status.InvalidArgument, "TensorArray has inconsistent shapes.  Index 0 has (excepting dimension 0) shape: %v but index %d has (excepting dimension 0) shape: %v", rest, i, v.Shape[1:])
		}
		lengths.I64()[i] = v.Shape[0]
		total += v.Shape[0]
	}
	out, err := ctx.Allocate(0, append(tensor.Shape{total}, rest...))
	if err != nil {
		return err
	}
	at := 0
	for _, v := range vs {
		n := int(v.NumElements())
		copyElems(out, at, v, 0, n)
		at += n
	}
	return nil
}

func tensorArraySplit(ctx *kernels.Context) error {
	ta, lt, v, err := splitArgs.inputs(ctx)
	if err != nil {
		return err
	}
	lengths := lt.I64()
	sum := int64(0)
	for _, n := range lengths {
		if n < 0 {
			return ctx.Errorf(status.InvalidArgument, "Invalid value in lengths: %d", n)
		}
		sum += n
	}
	if sum != v.Shape[0] {
		return ctx.Errorf(status.InvalidArgument, "Expected sum of lengths to be equal to values.shape[0], but sum of lengths is %d and value's shape is: %v", sum, v.Shape)
	}
	ta.Mu.Lock()
	defer ta.Mu.Unlock()
	// A dynamic array grows to the pieces; it never shrinks.
	if size := len(ta.Elems); len(lengths) != size && !(ta.Dynamic && size < len(lengths)) {
		return ctx.Errorf(status.InvalidArgument, "TensorArray's size is not equal to the size of lengths (%d vs. %d), and the TensorArray is not marked as dynamically resizeable", len(ta.Elems), len(lengths))
	}
	per := v.Shape[1:].NumElements()
	start := int64(0)
	for i, n := range lengths {
		e, err := kernels.NewTensor(ctx, v.DType, append(tensor.Shape{n}, v.Shape[1:]...))
		if err != nil {
			return err
		}
		copyElems(e, 0, v, int(start*per), int(n*per))
		start += n
		if err := taWriteLocked(ctx, ta, i, e); err != nil {
			return err
		}
	}
	ta.MarkedSize = len(lengths)
	forwardFlow(ctx, 0, 3)
	return nil
}

func tensorArraySize(ctx *kernels.Context) error {
	ta, err := taInput(ctx, 0)
	if err != nil {
		return err
	}
	ta.Mu.Lock()
	defer ta.Mu.Unlock()
	if ta.Closed {
		return taErrorf(ctx, ta, "has already been closed.")
	}
	out, err := ctx.Allocate(0, tensor.Shape{})
	if err != nil {
		return err
	}
	out.I32()[0] = int32(len(ta.Elems))
	return nil
}

func tensorArrayClose(ctx *kernels.Context) error {
	ta, err := taInput(ctx, 0)
	if err != nil {
		return err
	}
	ta.Mu.Lock()
	defer ta.Mu.Unlock()
	ta.Closed = true
	ta.Elems = nil
	return nil
}

// tensorArrayGrad returns the gradient array of the handle's array for
// attr source, made on first use: the forward array's size, element
// shape, dtype, split size and element shapes; writes to one index add
// up; reads of indices not written give zeros.
func tensorArrayGrad(ctx *kernels.Context) error {
	ta, err := taInput(ctx, 0)
	if err != nil {
		return err
	}
	source := attrString(ctx.Node, "source", "")
	ta.Mu.Lock()
	defer ta.Mu.Unlock()
	if ta.Closed {
		return taErrorf(ctx, ta, "has already been closed.")
	}
	if ta.NoGrads {
		return ctx.Errorf(status.InvalidArgument, "Unable to create a gradients TensorArray for %s.  Perhaps you used the multiple_writes_aggregate flag on a previous write?  Gradient calculation is impossible when multiple writes are performed to the same index.", ta.Name)
	}
	// Once gradients are taken, writes may no longer grow the forward
	// array (TF's DisableDynamicSize).
	ta.Dynamic = false
	g := ta.Grads[source]
	if g == nil {
		if g, err = newTensorArray(ctx, ta.Name+"@"+source, ta.DType, len(ta.Elems), ta.ElemShape, false, true, ta.Identical, true); err != nil {
			return err
		}
		g.MarkedSize = ta.MarkedSize
		// TF's CopyShapesFrom: an index the forward array wrote reads as
		// zeros of that element's shape until a gradient is written.
		for i, e := range ta.Elems {
			if e.Written {
				g.Elems[i] = tensor.ArrayElem{Shape: e.Shape, Written: true}
			}
		}
		if ta.Grads == nil {
			ta.Grads = map[string]*tensor.Array{}
		}
		ta.Grads[source] = g
	}
	ctx.SetOutput(0, g.Handle)
	forwardFlow(ctx, 1, 1)
	return nil
}
