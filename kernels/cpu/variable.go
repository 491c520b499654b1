package cpu

import (
	"mstream/graph"
	"mstream/kernels"
	"mstream/resource"
	"mstream/status"
	"mstream/tensor"
	"strings"
)

// Variables, resource and ref, over package resource (its doc states the
// consistency model). A value a GPU kernel keeps in device memory
// (kernels/cuda/state.go) is copied out when a host kernel reads it, and
// a host kernel's write brings the value back to host memory.

func init() {
	for _, op := range []string{"VarHandleOp"} {
		reg(op, nil, nil, stateful(varHandleOp))
	}
	reg("ReadVariableOp", nil, nil, stateful(readVariableOp))
	reg("AssignVariableOp", nil, nil, stateful(assignVariableOp))
	reg("AssignAddVariableOp", nil, nil, stateful(func(n *graph.Node, b kernels.Binding) (kernels.Kernel, error) {
		return assignUpdateVariableOp(n, b, false)
	}))
	reg("AssignSubVariableOp", nil, nil, stateful(func(n *graph.Node, b kernels.Binding) (kernels.Kernel, error) {
		return assignUpdateVariableOp(n, b, true)
	}))
	reg("VarIsInitializedOp", nil, nil, stateful(varIsInitializedOp))
	reg("DestroyResourceOp", nil, nil, stateful(destroyResourceOp))
	reg("DisableCopyOnRead", nil, nil, stateful(func(n *graph.Node, b kernels.Binding) (kernels.Kernel, error) {
		// Values are copy-on-write already (resource/doc.go): nothing to
		// switch, but the variable must exist, as in TF.
		return kernels.KernelFunc(func(ctx *kernels.Context) error {
			_, err := lookupVar(ctx, b.Resources, 0)
			return err
		}), nil
	}))
	reg("ResourceGather", nil, nil, stateful(resourceGather))
	reg("ResourceGatherNd", nil, nil, stateful(resourceGatherNd))
	for op, mode := range map[string]scatterMode{"ResourceScatterUpdate": scatterSet, "ResourceScatterAdd": scatterPlus, "ResourceScatterSub": scatterMinus} {
		reg(op, nil, nil, stateful(func(n *graph.Node, b kernels.Binding) (kernels.Kernel, error) {
			return kernels.KernelFunc(func(ctx *kernels.Context) error {
				v, err := lookupVar(ctx, b.Resources, 0)
				if err != nil {
					return err
				}
				_, err = scatterVar(ctx, v, mode, ctx.Input(1), ctx.Input(2), ctx.Node.Inputs[0].Node.Name)
				return err
			}), nil
		}))
	}

	for _, op := range []string{"VariableV2", "Variable"} {
		reg(op, nil, nil, stateful(variableV2))
	}
	reg("Assign", nil, nil, stateful(refAssign))
	reg("AssignAdd", nil, nil, stateful(func(n *graph.Node, b kernels.Binding) (kernels.Kernel, error) { return refAssignUpdate(n, b, false) }))
	reg("AssignSub", nil, nil, stateful(func(n *graph.Node, b kernels.Binding) (kernels.Kernel, error) { return refAssignUpdate(n, b, true) }))
	reg("TemporaryVariable", nil, nil, temporaryVariable)
	reg("DestroyTemporaryVariable", nil, nil, stateful(destroyTemporaryVariable))
	reg("IsVariableInitialized", nil, nil, stateful(func(n *graph.Node, b kernels.Binding) (kernels.Kernel, error) {
		src, err := refSourceAt(n, b, 0)
		if err != nil {
			return nil, err
		}
		return kernels.KernelFunc(func(ctx *kernels.Context) error {
			v, err := src.get(ctx)
			if err != nil {
				return err
			}
			ctx.SetOutput(0, boolScalar(v.Initialized()))
			return nil
		}), nil
	}))
	for op, mode := range map[string]scatterMode{"ScatterUpdate": scatterSet, "ScatterAdd": scatterPlus, "ScatterSub": scatterMinus} {
		reg(op, nil, nil, stateful(func(n *graph.Node, b kernels.Binding) (kernels.Kernel, error) {
			src, err := refSourceAt(n, b, 0)
			if err != nil {
				return nil, err
			}
			return kernels.KernelFunc(func(ctx *kernels.Context) error {
				v, err := src.get(ctx)
				if err != nil {
					return err
				}
				if !v.Initialized() {
					return ctx.Errorf(status.FailedPrecondition, "Null ref for params")
				}
				nv, err := scatterVar(ctx, v, mode, ctx.Input(1), ctx.Input(2), v.Name)
				if err != nil {
					return err
				}
				ctx.SetOutput(0, nv)
				return nil
			}), nil
		}))
	}
}

// unbound is a Stateful kernel before the plan binds it.
type unbound struct {
	n    *graph.Node
	bind func(n *graph.Node, b kernels.Binding) (kernels.Kernel, error)
}

func (u unbound) Compute(ctx *kernels.Context) error {
	return ctx.Errorf(status.FailedPrecondition, "stateful kernel run outside a session (no resource manager bound)")
}

func (u unbound) Bind(b kernels.Binding) (kernels.Kernel, error) { return u.bind(u.n, b) }

// stateful makes the factory of a kernel built at bind time, when the plan
// hands it the session's resources.
func stateful(bind func(n *graph.Node, b kernels.Binding) (kernels.Kernel, error)) kernels.Factory {
	return func(n *graph.Node) (kernels.Kernel, error) { return unbound{n, bind}, nil }
}

func boolScalar(b bool) *tensor.Tensor {
	t := tensor.New(tensor.Bool, tensor.Shape{})
	if b {
		t.Buf[0] = 1
	}
	return t
}

// ownCopy is t copied into memory the variable owns: an input's buffer
// belongs to the step that made it and is reused after it.
func ownCopy(ctx *kernels.Context, t *tensor.Tensor) (*tensor.Tensor, error) {
	c, err := kernels.NewTensor(ctx, t.DType, t.Shape)
	if err != nil {
		return nil, err
	}
	copy(c.Buf, t.Buf)
	copy(c.Strs, t.Strs)
	return c, nil
}

// varHandleOp outputs the handle of (container, shared_name); an anonymous
// one (TF's ANONYMOUS_NAME) makes a new variable per call.
func varHandleOp(n *graph.Node, b kernels.Binding) (kernels.Kernel, error) {
	h := resource.Handle{Container: attrString(n, "container", ""), Name: attrString(n, "shared_name", ""),
		Kind: resource.VarKind, DType: attrType(n, "dtype")}
	if a := n.Attrs["shape"]; a != nil {
		h.Shape = tensor.ShapeFromProto(a.GetShape())
	}
	if h.Name == resource.AnonymousName {
		return kernels.KernelFunc(func(ctx *kernels.Context) error {
			hh := h
			hh.Name = b.Resources.AnonymousName(n.Name)
			if err := b.Resources.Create(hh.Container, hh.Name, resource.NewVar(h.DType, hh.Name)); err != nil {
				return ctx.Errorf(status.CodeOf(err), "%v", err)
			}
			ctx.SetOutput(0, hh.Tensor())
			return nil
		}), nil
	}
	t := h.Tensor()
	return kernels.KernelFunc(func(ctx *kernels.Context) error {
		ctx.SetOutput(0, t)
		return nil
	}), nil
}

// handleOf reads input i as a variable handle.
func handleOf(ctx *kernels.Context, i int) (resource.Handle, error) {
	h, err := resource.FromTensor(ctx.Input(i))
	if err != nil {
		return h, ctx.Errorf(status.InvalidArgument, "%v", err)
	}
	return h, nil
}

// lookupVar finds the variable input i names; NOT_FOUND as TF's
// LookupResource.
func lookupVar(ctx *kernels.Context, rm *resource.Manager, i int) (*resource.Var, error) {
	h, err := handleOf(ctx, i)
	if err != nil {
		return nil, err
	}
	r, err := rm.Lookup(h.Container, h.Name, resource.VarKind)
	if err != nil {
		return nil, ctx.Errorf(status.CodeOf(err), "%v", err)
	}
	return r.(*resource.Var), nil
}

// ReadableVar is the variable input 0 names when it is initialised, or
// TF's FAILED_PRECONDITION naming it (ReadVariableOp's and
// ResourceGather's check, on every device).
func ReadableVar(ctx *kernels.Context, rm *resource.Manager) (*resource.Var, error) {
	h, err := handleOf(ctx, 0)
	if err != nil {
		return nil, err
	}
	r, err := rm.Lookup(h.Container, h.Name, resource.VarKind)
	if err == nil && !r.(*resource.Var).Initialized() {
		err = status.Errorf(status.NotFound, "Resource %s/%s/%s is not initialized.", h.Container, h.Name, resource.VarKind)
	}
	if err != nil {
		return nil, ctx.Errorf(status.FailedPrecondition,
			"Could not find variable %s. This could mean that the variable has been deleted. In TF1, it can also mean the variable is uninitialized. Debug info: container=%s, status error message=%s",
			h.Name, h.Container, err)
	}
	return r.(*resource.Var), nil
}

// LookupVar is the variable input i names; NOT_FOUND as TF's
// LookupResource.
func LookupVar(ctx *kernels.Context, rm *resource.Manager, i int) (*resource.Var, error) {
	return lookupVar(ctx, rm, i)
}

// readVar is the initialised value of the variable input 0 names, or
// TF's FAILED_PRECONDITION naming it.
func readVar(ctx *kernels.Context, rm *resource.Manager) (*tensor.Tensor, error) {
	v, err := ReadableVar(ctx, rm)
	if err != nil {
		return nil, err
	}
	val, err := v.Read()
	if err == nil && val == nil {
		err = status.Errorf(status.FailedPrecondition, "variable %s was reset while read", v.Name)
	}
	if err != nil {
		return nil, ctx.Errorf(status.CodeOf(err), "%v", err)
	}
	return val, nil
}

func readVariableOp(n *graph.Node, b kernels.Binding) (kernels.Kernel, error) {
	dt := attrType(n, "dtype")
	return kernels.KernelFunc(func(ctx *kernels.Context) error {
		val, err := readVar(ctx, b.Resources)
		if err != nil {
			return err
		}
		if val.DType != dt {
			return ctx.Errorf(status.InvalidArgument, "Trying to read variable with wrong dtype. Expected %v got %v", dt, val.DType)
		}
		ctx.SetOutput(0, val)
		return nil
	}), nil
}

func assignVariableOp(n *graph.Node, b kernels.Binding) (kernels.Kernel, error) {
	dt, validate := attrType(n, "dtype"), attrBool(n, "validate_shape")
	return kernels.KernelFunc(func(ctx *kernels.Context) error {
		h, err := handleOf(ctx, 0)
		if err != nil {
			return err
		}
		value := ctx.Input(1)
		v := b.Resources.LookupOrCreate(h.Container, h.Name, resource.VarKind, func() resource.Resource {
			return resource.NewVar(dt, h.Name)
		}).(*resource.Var)
		_, err = v.Update(func(old *tensor.Tensor) (*tensor.Tensor, error) {
			if err := CheckAssign(ctx, v, dt, validate, old, value); err != nil {
				return nil, err
			}
			return ownCopy(ctx, value)
		})
		return err
	}), nil
}

// CheckAssign is AssignVariableOp's check of value against the
// variable's dtype and current value old (nil when uninitialised; only
// its shape is read).
func CheckAssign(ctx *kernels.Context, v *resource.Var, dt tensor.DType, validate bool, old, value *tensor.Tensor) error {
	if v.DType != dt {
		return ctx.Errorf(status.InvalidArgument, "Trying to assign variable with wrong dtype. Expected %v got %v", v.DType, dt)
	}
	if validate && old != nil && !old.Shape.Equal(value.Shape) {
		return ctx.Errorf(status.InvalidArgument, "Trying to assign to variable with tensor with wrong shape. Expected %v got %v", old.Shape, value.Shape)
	}
	return nil
}

// CheckAssignUpdate is AssignAddVariableOp's and AssignSubVariableOp's
// check of delta against the variable's value old (nil when
// uninitialised; only its dtype and shape are read).
func CheckAssignUpdate(ctx *kernels.Context, dt tensor.DType, old, delta *tensor.Tensor) error {
	if old == nil || old.DType != dt {
		got := tensor.Invalid
		if old != nil {
			got = old.DType
		}
		return ctx.Errorf(status.InvalidArgument, "Trying to read variable with wrong dtype. Expected %v got %v", dt, got)
	}
	if !old.Shape.Equal(delta.Shape) {
		return ctx.Errorf(status.InvalidArgument, "Cannot update variable with shape %v using a Tensor with shape %v, shapes must be equal.", old.Shape, delta.Shape)
	}
	return nil
}

func assignUpdateVariableOp(n *graph.Node, b kernels.Binding, sub bool) (kernels.Kernel, error) {
	dt := attrType(n, "dtype")
	return kernels.KernelFunc(func(ctx *kernels.Context) error {
		v, err := lookupVar(ctx, b.Resources, 0)
		if err != nil {
			return err
		}
		_, err = v.Update(func(old *tensor.Tensor) (*tensor.Tensor, error) {
			if err := CheckAssignUpdate(ctx, dt, old, ctx.Input(1)); err != nil {
				return nil, err
			}
			return addSub(ctx, old, ctx.Input(1), sub, "Cannot update variable with shape %v using a Tensor with shape %v, shapes must be equal.")
		})
		return err
	}), nil
}

// addSub is old + delta (old - delta when sub) in a new tensor, the shapes
// equal (mismatch: INVALID_ARGUMENT with the format given the two shapes).
func addSub(ctx *kernels.Context, old, delta *tensor.Tensor, sub bool, mismatch string) (*tensor.Tensor, error) {
	if !old.Shape.Equal(delta.Shape) {
		return nil, ctx.Errorf(status.InvalidArgument, mismatch, old.Shape, delta.Shape)
	}
	nv, err := ownCopy(ctx, old)
	if err != nil {
		return nil, err
	}
	offs := make([]int64, 0, 1)
	if old.NumElements() > 0 {
		offs = append(offs, 0)
	}
	mode := scatterPlus
	if sub {
		mode = scatterMinus
	}
	if err := applyAt(ctx, nv, offs, delta, old.NumElements(), mode, false); err != nil {
		return nil, err
	}
	return nv, nil
}

func varIsInitializedOp(n *graph.Node, b kernels.Binding) (kernels.Kernel, error) {
	return kernels.KernelFunc(func(ctx *kernels.Context) error {
		h, err := handleOf(ctx, 0)
		if err != nil {
			return err
		}
		r, err := b.Resources.Lookup(h.Container, h.Name, resource.VarKind)
		ctx.SetOutput(0, boolScalar(err == nil && r.(*resource.Var).Initialized()))
		return nil
	}), nil
}

func destroyResourceOp(n *graph.Node, b kernels.Binding) (kernels.Kernel, error) {
	ignore := attrBool(n, "ignore_lookup_error")
	return kernels.KernelFunc(func(ctx *kernels.Context) error {
		h, err := handleOf(ctx, 0)
		if err != nil {
			return err
		}
		kind := h.Kind
		if kind == "" {
			kind = resource.VarKind
		}
		if err := b.Resources.Delete(h.Container, h.Name, kind); err != nil && !ignore {
			return ctx.Errorf(status.CodeOf(err), "%v", err)
		}
		return nil
	}), nil
}

// onValue runs f, a kernel over (params, inputs 1..), with the variable's
// value as params.
func onValue(ctx *kernels.Context, val *tensor.Tensor, f func(*kernels.Context) error, extra ...*tensor.Tensor) error {
	sub := *ctx
	sub.Inputs = append([]*tensor.Tensor{val}, ctx.Inputs[1:]...)
	sub.Inputs = append(sub.Inputs, extra...)
	if err := f(&sub); err != nil {
		return err
	}
	ctx.Outputs[0] = sub.Outputs[0]
	return nil
}

func resourceGather(n *graph.Node, b kernels.Binding) (kernels.Kernel, error) {
	batchDims := attrInt(n, "batch_dims", 0)
	axis := tensor.New(tensor.Int64, tensor.Shape{})
	axis.I64()[0] = batchDims // TF's ResourceGather gathers on axis batch_dims
	return kernels.KernelFunc(func(ctx *kernels.Context) error {
		val, err := readVar(ctx, b.Resources)
		if err != nil {
			return err
		}
		return onValue(ctx, val, func(c *kernels.Context) error { return gather(c, batchDims) }, axis)
	}), nil
}

func resourceGatherNd(n *graph.Node, b kernels.Binding) (kernels.Kernel, error) {
	return kernels.KernelFunc(func(ctx *kernels.Context) error {
		val, err := readVar(ctx, b.Resources)
		if err != nil {
			return err
		}
		return onValue(ctx, val, gatherNd)
	}), nil
}

type scatterMode int

const (
	scatterSet scatterMode = iota
	scatterPlus
	scatterMinus
)

// scatterVar updates rows indices of the variable with updates (TF's
// ScatterUpdate/Add/Sub and their resource forms) and returns the value
// it published. name is the variable's, for messages.
func scatterVar(ctx *kernels.Context, v *resource.Var, mode scatterMode, it, upd *tensor.Tensor, name string) (*tensor.Tensor, error) {
	idx, err := hostInts(ctx, 1, "indices")
	if err != nil {
		return nil, err
	}
	return v.Update(func(old *tensor.Tensor) (*tensor.Tensor, error) {
		if err := CheckScatter(ctx, old, it, upd, name); err != nil {
			return nil, err
		}
		scalar := len(upd.Shape) == 0
		rows := old.Shape[0]
		slice := tensor.Shape(old.Shape[1:]).NumElements()
		offs := make([]int64, len(idx))
		for i, r := range idx {
			if r < 0 || r >= rows {
				return nil, ctx.Errorf(status.InvalidArgument, "indices%s = %d is not in [0, %d)", idxPos(it.Shape, i), r, rows)
			}
			offs[i] = r * slice
		}
		nv, err := ownCopy(ctx, old)
		if err != nil {
			return nil, err
		}
		if err := applyAt(ctx, nv, offs, upd, slice, mode, scalar); err != nil {
			return nil, err
		}
		return nv, nil
	})
}

// CheckScatter is the Scatter* and ResourceScatter* checks of indices it
// and updates upd against the variable's value old (nil when
// uninitialised; only its dtype and shape are read) but the indices'
// values; name is the variable's.
func CheckScatter(ctx *kernels.Context, old, it, upd *tensor.Tensor, name string) error {
	if old == nil {
		return ctx.Errorf(status.FailedPrecondition, "Attempting to use uninitialized value %s", name)
	}
	if upd.DType != old.DType {
		return ctx.Errorf(status.InvalidArgument, "Trying to update variable %s of dtype %v with %v", name, old.DType, upd.DType)
	}
	if len(old.Shape) < 1 {
		return ctx.Errorf(status.InvalidArgument, "params must be at least 1-D, got shape %v", old.Shape)
	}
	want := append(append(tensor.Shape{}, it.Shape...), old.Shape[1:]...)
	if len(upd.Shape) != 0 && !upd.Shape.Equal(want) {
		return ctx.Errorf(status.InvalidArgument, "Must have updates.shape = indices.shape + params.shape[1:] or updates.shape = [], got updates.shape %v, indices.shape %v, params.shape %v", upd.Shape, it.Shape, old.Shape)
	}
	return nil
}

// applyAt sets, adds or subtracts slice s of u (u's only element when
// scalar) at offset offs[s] of dst, n elements each.
func applyAt(ctx *kernels.Context, dst *tensor.Tensor, offs []int64, u *tensor.Tensor, n int64, mode scatterMode, scalar bool) error {
	src := func(s int) (int, int) {
		if scalar {
			return 0, 0
		}
		return s * int(n), 1
	}
	if mode == scatterSet {
		for s, off := range offs {
			at, step := src(s)
			for i := int64(0); i < n; i++ {
				copyElems(dst, int(off+i), u, at+int(i)*step, 1)
			}
		}
		return nil
	}
	neg := mode == scatterMinus
	switch dst.DType {
	case tensor.Float:
		applyNum(dst.F32(), u.F32(), offs, n, neg, scalar)
	case tensor.Double:
		applyNum(dst.F64(), u.F64(), offs, n, neg, scalar)
	case tensor.Int32:
		applyNum(dst.I32(), u.I32(), offs, n, neg, scalar)
	case tensor.Int64:
		applyNum(dst.I64(), u.I64(), offs, n, neg, scalar)
	case tensor.Int16:
		applyNum(dst.I16(), u.I16(), offs, n, neg, scalar)
	case tensor.Int8:
		applyNum(dst.I8(), u.I8(), offs, n, neg, scalar)
	case tensor.Uint8:
		applyNum(dst.U8(), u.U8(), offs, n, neg, scalar)
	case tensor.Uint16:
		applyNum(dst.U16(), u.U16(), offs, n, neg, scalar)
	case tensor.Uint32:
		applyNum(dst.U32(), u.U32(), offs, n, neg, scalar)
	case tensor.Uint64:
		applyNum(dst.U64(), u.U64(), offs, n, neg, scalar)
	case tensor.Half, tensor.Bfloat16:
		acc := toF32(dst)
		applyNum(acc, toF32(u), offs, n, neg, scalar)
		storeF32(dst, acc)
	default:
		return ctx.Errorf(status.Unimplemented, "adding to a variable of dtype %v", dst.DType)
	}
	return nil
}

func applyNum[T num](o, u []T, offs []int64, n int64, neg, scalar bool) {
	for s, off := range offs {
		dst := o[off : off+n]
		if scalar {
			for i := range dst {
				if neg {
					dst[i] -= u[0]
				} else {
					dst[i] += u[0]
				}
			}
			continue
		}
		src := u[int64(s)*n : int64(s+1)*n]
		for i, v := range src {
			if neg {
				dst[i] -= v
			} else {
				dst[i] += v
			}
		}
	}
}

// refSource is the variable behind a ref input: a VariableV2's, one for
// the session, found when the plan binds the kernel; or a
// TemporaryVariable's, one per step, found in the step (Context.Step) by
// its var_name when the kernel runs.
type refSource struct {
	v       *resource.Var
	tmpName string // the TemporaryVariable's var_name when v is nil
}

// get is the variable for this call.
func (r refSource) get(ctx *kernels.Context) (*resource.Var, error) {
	if r.v != nil {
		return r.v, nil
	}
	return stepTemp(ctx, r.tmpName)
}

// stepTemp is the temporary variable name of this step.
func stepTemp(ctx *kernels.Context, name string) (*resource.Var, error) {
	if ctx.Step == nil {
		return nil, ctx.Errorf(status.Internal, "No per-step resource manager.")
	}
	v, ok := ctx.Step.Lookup(name)
	if !ok {
		return nil, ctx.Errorf(status.NotFound, "temporary variable %s does not exist in this step (destroyed already?)", name)
	}
	return v.(*resource.Var), nil
}

// refVarAt is refSourceAt for kernels that need a VariableV2's variable
// when they are bound (the Apply* optimizers).
func refVarAt(n *graph.Node, b kernels.Binding, i int) (*resource.Var, error) {
	src, err := refSourceAt(n, b, i)
	if err != nil {
		return nil, err
	}
	if src.v == nil {
		return nil, status.Errorf(status.Unimplemented, "node '%s' (op %s) updates temporary variable %s: only Assign, AssignAdd, AssignSub, Scatter* and IsVariableInitialized take one", n.Name, n.Op, src.tmpName)
	}
	return src.v, nil
}

// refSourceAt finds the ref variable behind input i of n (RefSource).
func refSourceAt(n *graph.Node, b kernels.Binding, i int) (refSource, error) {
	in, err := RefSource(n, i)
	if err != nil {
		return refSource{}, err
	}
	if in.Op == "TemporaryVariable" {
		return refSource{tmpName: tempVarName(in)}, nil
	}
	return refSource{v: RefVariable(in, b)}, nil
}

// RefSource is the node whose variable is behind ref input i of n: the
// VariableV2 (or Variable, or TemporaryVariable) its ref edge comes from,
// through the ops that forward a ref (each forwards its input 0).
func RefSource(n *graph.Node, i int) (*graph.Node, error) {
	src := n
	for hops := 0; ; hops++ {
		if len(src.Inputs) <= i || hops > 1000 {
			break
		}
		in := src.Inputs[i].Node
		i = 0
		switch in.Op {
		case "VariableV2", "Variable", "TemporaryVariable":
			return in, nil
		case "RefIdentity", "Identity", "RefSwitch", "RefEnter", "RefExit", "RefMerge", "RefNextIteration",
			"Assign", "AssignAdd", "AssignSub", "ScatterUpdate", "ScatterAdd", "ScatterSub":
			src = in
			continue
		}
		if _, ok := optimizers[strings.TrimPrefix(in.Op, "Apply")]; ok && strings.HasPrefix(in.Op, "Apply") {
			src = in // the dense optimizers forward their variable
			continue
		}
		return nil, status.Errorf(status.Unimplemented, "the ref input of node '%s' comes from node '%s' (op %s), not from a variable", n.Name, in.Name, in.Op)
	}
	return nil, status.Errorf(status.InvalidArgument, "node '%s' has no ref input %d", n.Name, i)
}

// RefVariable is the variable of a VariableV2 node: (container,
// shared_name), the node's name when shared_name is empty.
func RefVariable(n *graph.Node, b kernels.Binding) *resource.Var {
	name := attrString(n, "shared_name", "")
	if name == "" {
		name = n.Name
	}
	dt := attrType(n, "dtype")
	return b.Resources.LookupOrCreate(attrString(n, "container", ""), name, resource.LegacyVarKind, func() resource.Resource {
		return resource.NewLegacyVar(dt, n.Name)
	}).(*resource.Var)
}

func variableV2(n *graph.Node, b kernels.Binding) (kernels.Kernel, error) {
	v := RefVariable(n, b)
	read := len(b.ReadByValue) > 0 && b.ReadByValue[0]
	empty := tensor.New(attrType(n, "dtype"), tensor.Shape{0})
	return kernels.KernelFunc(func(ctx *kernels.Context) error {
		val := v.Value()
		if val != nil {
			ctx.SetOutput(0, val)
			return nil
		}
		if read {
			return ctx.Errorf(status.FailedPrecondition, "Attempting to use uninitialized value %s", n.Name)
		}
		// Only ref inputs (Assign's) consume it here: they reach the
		// variable itself, the placeholder is never read.
		ctx.SetOutput(0, empty)
		return nil
	}), nil
}

func refAssign(n *graph.Node, b kernels.Binding) (kernels.Kernel, error) {
	src, err := refSourceAt(n, b, 0)
	if err != nil {
		return nil, err
	}
	validate := attrBool(n, "validate_shape")
	return kernels.KernelFunc(func(ctx *kernels.Context) error {
		v, err := src.get(ctx)
		if err != nil {
			return err
		}
		value := ctx.Input(1)
		nv, err := v.Update(func(old *tensor.Tensor) (*tensor.Tensor, error) {
			if validate && old != nil && !old.Shape.Equal(value.Shape) {
				return nil, ctx.Errorf(status.InvalidArgument, "Assign requires shapes of both tensors to match. lhs shape= %v rhs shape= %v", old.Shape, value.Shape)
			}
			return ownCopy(ctx, value)
		})
		if err != nil {
			return err
		}
		ctx.SetOutput(0, nv)
		return nil
	}), nil
}

func refAssignUpdate(n *graph.Node, b kernels.Binding, sub bool) (kernels.Kernel, error) {
	src, err := refSourceAt(n, b, 0)
	if err != nil {
		return nil, err
	}
	return kernels.KernelFunc(func(ctx *kernels.Context) error {
		v, err := src.get(ctx)
		if err != nil {
			return err
		}
		nv, err := v.Update(func(old *tensor.Tensor) (*tensor.Tensor, error) {
			if old == nil {
				return nil, ctx.Errorf(status.FailedPrecondition, "Attempting to use uninitialized value %s", v.Name)
			}
			if !old.Shape.Equal(ctx.Input(1).Shape) {
				return nil, ctx.Errorf(status.InvalidArgument, "Parameters and update must be the same size")
			}
			return addSub(ctx, old, ctx.Input(1), sub, "")
		})
		if err != nil {
			return err
		}
		ctx.SetOutput(0, nv)
		return nil
	}), nil
}

// tempVarName is a TemporaryVariable's var_name, its node's name when
// empty (as TF names it).
func tempVarName(n *graph.Node) string {
	if name := attrString(n, "var_name", ""); name != "" {
		return name
	}
	return n.Name
}

// temporaryVariable makes, in each step it runs, a variable of the shape
// and dtype attrs that lives in the step (TF's step container) under its
// var_name, and outputs its ref. TF leaves the value uninitialised; here
// it is zeros.
func temporaryVariable(n *graph.Node) (kernels.Kernel, error) {
	ps := tensor.ShapeFromProto(n.Attrs["shape"].GetShape())
	if !ps.FullyDefined() {
		return nil, status.InvalidArg("shape %v of TemporaryVariable is not fully defined", ps)
	}
	dt, name := attrType(n, "dtype"), tempVarName(n)
	return kernels.KernelFunc(func(ctx *kernels.Context) error {
		if ctx.Step == nil {
			return ctx.Errorf(status.Internal, "No per-step resource manager.")
		}
		val, err := kernels.NewTensor(ctx, dt, ps.Dims)
		if err != nil {
			return err
		}
		v := resource.NewLegacyVar(dt, name)
		v.Update(func(*tensor.Tensor) (*tensor.Tensor, error) { return val, nil })
		if err := ctx.Step.Create(name, v); err != nil {
			return ctx.Errorf(status.CodeOf(err), "%v", err)
		}
		ctx.SetOutput(0, val)
		return nil
	}), nil
}

// destroyTemporaryVariable outputs the value of the temporary variable
// behind its ref input and removes var_name from the step. Every other
// user of the variable must have run before it (TF's rule, kept by control
// dependencies or the ref chain).
func destroyTemporaryVariable(n *graph.Node, b kernels.Binding) (kernels.Kernel, error) {
	name := attrString(n, "var_name", "")
	if name == "" {
		return nil, status.InvalidArg("Missing var_name attribute")
	}
	src, err := refSourceAt(n, b, 0)
	if err != nil {
		return nil, err
	}
	return kernels.KernelFunc(func(ctx *kernels.Context) error {
		v, err := src.get(ctx)
		if err != nil {
			return err
		}
		val := v.Value()
		if ctx.Step == nil {
			return ctx.Errorf(status.Internal, "No per-step resource manager.")
		}
		if err := ctx.Step.Delete(name); err != nil {
			return ctx.Errorf(status.CodeOf(err), "%v", err)
		}
		ctx.SetOutput(0, val)
		return nil
	}), nil
}
