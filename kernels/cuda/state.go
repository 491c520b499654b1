package cuda

import (
	"strings"

	"mstream/device"
	cu "mstream/device/cuda"
	"mstream/graph"
	"mstream/hostmem"
	"mstream/kernels"
	"mstream/kernels/cpu"
	"mstream/resource"
	"mstream/status"
	"mstream/tensor"
)

// Variables in device memory and the optimizers over them (src/state.cu).
// A GPU kernel of a resource op keeps the variable's value in its GPU's
// memory (kernels.VarsOnDevice, resource.DeviceValue): the first such
// kernel moves it there, later ones use it in place, each ordered after
// the value's other uses by events, never by blocking the host. The
// handle stays in host memory (HostMemory "resource", as in TF), and so
// do the sparse optimizers' scalars, whose values TF's checks read; the
// dense optimizers read theirs on the device. The checks are the CPU
// kernels' own (cpu.OptimizerArgs, cpu.CheckScatter, ...), run on the
// value's dtype and shape; indices stay on the device, so an index out of
// range skips its row (ResourceGather writes zeros, as GatherV2), as in
// TF's GPU kernels, where the CPU kernels fail.

var (
	stateNum  = []tensor.DType{tensor.Float, tensor.Double, tensor.Int32, tensor.Int64}
	stateOpt  = []tensor.DType{tensor.Float, tensor.Double}
	slotNames = []string{"resource", "var", "accum", "m", "v", "ms", "mom", "mg", "linear"}
	// sparseScalars are the sparse optimizers' scalar inputs, which their
	// checks read on the host.
	sparseScalars = []string{"lr", "l1", "l2", "lr_power", "l2_shrinkage", "rho", "momentum", "epsilon"}
)

// optCodes are src/state.cu's rule numbers.
var optCodes = map[string]int32{"GradientDescent": 0, "Momentum": 1, "Adam": 2, "Adagrad": 3, "RMSProp": 4,
	"CenteredRMSProp": 5, "Ftrl": 6, "FtrlV2": 6}

func init() {
	regState := func(op, typeAttr string, types []tensor.DType, host []string, bind func(n *graph.Node, b kernels.Binding) (func(k kctx) error, error)) {
		kernels.Register(kernels.Def{Op: op, Device: kernels.GPU, TypeAttr: typeAttr, Types: types, HostMemory: host,
			DeviceState: true, Factory: stateful(bind)})
	}
	res := []string{"resource"}
	regState("ReadVariableOp", "dtype", fixedTypes, res, readVariable)
	regState("AssignVariableOp", "dtype", fixedTypes, res, assignVariable)
	regState("AssignAddVariableOp", "dtype", stateNum, res, func(n *graph.Node, b kernels.Binding) (func(k kctx) error, error) {
		return assignUpdate(n, b, false)
	})
	regState("AssignSubVariableOp", "dtype", stateNum, res, func(n *graph.Node, b kernels.Binding) (func(k kctx) error, error) {
		return assignUpdate(n, b, true)
	})
	regState("ResourceGather", "dtype", fixedTypes, res, resourceGather)
	for op, mode := range map[string]string{"ResourceScatterUpdate": "set", "ResourceScatterAdd": "add", "ResourceScatterSub": "sub"} {
		regState(op, "dtype", stateNum, res, func(n *graph.Node, b kernels.Binding) (func(k kctx) error, error) {
			return resourceScatter(b, mode), nil
		})
	}
	for name := range optCodes {
		regState("ResourceApply"+name, "T", stateOpt, slotNames, func(n *graph.Node, b kernels.Binding) (func(k kctx) error, error) {
			return denseApply(n, b, name), nil
		})
		if name == "GradientDescent" || name == "Adam" {
			continue // TF has no sparse form of either
		}
		regState("ResourceSparseApply"+name, "T", stateOpt, append(append([]string{}, slotNames...), sparseScalars...),
			func(n *graph.Node, b kernels.Binding) (func(k kctx) error, error) {
				return sparseApply(n, b, name), nil
			})
	}
}

// unboundState is a state kernel before the plan binds it.
type unboundState struct {
	n    *graph.Node
	bind func(n *graph.Node, b kernels.Binding) (func(k kctx) error, error)
}

func (u unboundState) Compute(ctx *kernels.Context) error {
	return ctx.Errorf(status.FailedPrecondition, "stateful kernel run outside a session (no resource manager bound)")
}

func (u unboundState) Bind(b kernels.Binding) (kernels.Kernel, error) {
	f, err := u.bind(u.n, b)
	if err != nil {
		return nil, err
	}
	return kernels.KernelFunc(func(ctx *kernels.Context) error {
		k, err := begin(ctx)
		if err != nil {
			return err
		}
		if dryRun != nil {
			// No device: events and host copies act on the stand-in
			// memory at once.
			sub := *ctx
			sub.Stream = dryStream{}
			k.Context = &sub
			defer func() { ctx.Outputs = sub.Outputs }()
		}
		return f(k)
	}), nil
}

// stateful is the factory of a state kernel, built when the plan binds
// it. A handle made on the CPU by its device annotation (a VarHandleOp
// pinned there, as TF colocates a variable's ops with it) keeps the
// node on the host: the factory refuses, so placement falls back.
func stateful(bind func(n *graph.Node, b kernels.Binding) (func(k kctx) error, error)) kernels.Factory {
	return func(n *graph.Node) (kernels.Kernel, error) {
		for _, in := range n.Inputs {
			if in.Node == nil || in.Node.OutTypes[in.Index] != tensor.Resource {
				continue
			}
			if strings.Contains(strings.ToUpper(in.Node.Device), "CPU") {
				return nil, status.Errorf(status.Unimplemented, "the variable's handle '%s' is placed on the CPU", in.Node.Name)
			}
		}
		return unboundState{n, bind}, nil
	}
}

// CopyIn implements kernels.DeviceCopier on the kernel's stream.
func (k kctx) CopyIn(dst *tensor.Tensor, src []byte) error {
	if len(src) == 0 {
		return nil
	}
	return k.h2d(ptr(dst), src)
}

// Copy implements kernels.DeviceCopier on the kernel's stream.
func (k kctx) Copy(dst, src *tensor.Tensor) error {
	if len(src.Buf) == 0 {
		return nil
	}
	return k.d2d(ptr(dst), ptr(src), uint64(len(src.Buf)))
}

func readVariable(n *graph.Node, b kernels.Binding) (func(k kctx) error, error) {
	dt := tensor.DType(n.Attrs["dtype"].GetType())
	return func(k kctx) error {
		v, err := cpu.ReadableVar(k.Context, b.Resources)
		if err != nil {
			return err
		}
		return kernels.VarsOnDevice(k.Context, k, []*resource.Var{v}, false, func(vals []*tensor.Tensor) error {
			val := vals[0]
			if val == nil {
				return k.Errorf(status.FailedPrecondition, "variable %s was reset while read", v.Name)
			}
			if val.DType != dt {
				return k.Errorf(status.InvalidArgument, "Trying to read variable with wrong dtype. Expected %v got %v", dt, val.DType)
			}
			o, err := k.Allocate(0, val.Shape)
			if err != nil {
				return err
			}
			return k.Copy(o, val)
		})
	}, nil
}

func assignVariable(n *graph.Node, b kernels.Binding) (func(k kctx) error, error) {
	dt := tensor.DType(n.Attrs["dtype"].GetType())
	validate := n.Attrs["validate_shape"].GetB()
	return func(k kctx) error {
		h, err := resource.FromTensor(k.Input(0))
		if err != nil {
			return k.Errorf(status.InvalidArgument, "%v", err)
		}
		value := k.Input(1)
		v := b.Resources.LookupOrCreate(h.Container, h.Name, resource.VarKind, func() resource.Resource {
			return resource.NewVar(dt, h.Name)
		}).(*resource.Var)
		return kernels.AssignOnDevice(k.Context, k, v, value, func(old *tensor.Tensor) error {
			return cpu.CheckAssign(k.Context, v, dt, validate, old, value)
		})
	}, nil
}

func assignUpdate(n *graph.Node, b kernels.Binding, sub bool) (func(k kctx) error, error) {
	dt := tensor.DType(n.Attrs["dtype"].GetType())
	return func(k kctx) error {
		v, err := cpu.LookupVar(k.Context, b.Resources, 0)
		if err != nil {
			return err
		}
		delta := k.Input(1)
		return addSubOnDevice(k, v, delta, sub, func(old *tensor.Tensor) error {
			return cpu.CheckAssignUpdate(k.Context, dt, old, delta)
		})
	}, nil
}

// addSubOnDevice adds delta to (or subtracts it from) v's value in place
// on the device, after check accepts the value.
func addSubOnDevice(k kctx, v *resource.Var, delta *tensor.Tensor, sub bool, check func(old *tensor.Tensor) error) error {
	flag := int32(0)
	if sub {
		flag = 1
	}
	return kernels.VarsOnDevice(k.Context, k, []*resource.Var{v}, true, func(vals []*tensor.Tensor) error {
		if err := check(vals[0]); err != nil {
			return err
		}
		var a cu.Args
		a.Ptr(ptr(vals[0])).Ptr(ptr(delta)).I64(delta.NumElements()).I32(flag)
		return k.launchN(states, "state_addsub_"+suffix(delta.DType), delta.NumElements(), &a)
	})
}

func resourceGather(n *graph.Node, b kernels.Binding) (func(k kctx) error, error) {
	batchDims := int64(0)
	if a := n.Attrs["batch_dims"]; a != nil {
		batchDims = a.GetI()
	}
	axis := tensor.New(tensor.Int64, tensor.Shape{})
	axis.I64()[0] = batchDims // TF's ResourceGather gathers on axis batch_dims
	return func(k kctx) error {
		v, err := cpu.ReadableVar(k.Context, b.Resources)
		if err != nil {
			return err
		}
		return kernels.VarsOnDevice(k.Context, k, []*resource.Var{v}, false, func(vals []*tensor.Tensor) error {
			if vals[0] == nil {
				return k.Errorf(status.FailedPrecondition, "variable %s was reset while read", v.Name)
			}
			sub := *k.Context
			sub.Inputs = []*tensor.Tensor{vals[0], k.Input(1), axis}
			if err := gather(kctx{&sub, k.s}, batchDims); err != nil {
				return err
			}
			k.Outputs[0] = sub.Outputs[0]
			return nil
		})
	}, nil
}

func indexSuffix(k kctx, it *tensor.Tensor) (string, error) {
	switch it.DType {
	case tensor.Int32:
		return "i32", nil
	case tensor.Int64:
		return "i64", nil
	}
	return "", k.Errorf(status.InvalidArgument, "indices must be int32 or int64, not %v", it.DType)
}

func resourceScatter(b kernels.Binding, mode string) func(k kctx) error {
	return func(k kctx) error {
		v, err := cpu.LookupVar(k.Context, b.Resources, 0)
		if err != nil {
			return err
		}
		return scatterOnDevice(k, v, mode, k.Node.Inputs[0].Node.Name)
	}
}

// scatterOnDevice applies inputs 1 (indices) and 2 (updates) to v's
// value in place on the device; name is the variable in the checks'
// messages.
func scatterOnDevice(k kctx, v *resource.Var, mode, name string) error {
	it, upd := k.Input(1), k.Input(2)
	is, err := indexSuffix(k, it)
	if err != nil {
		return err
	}
	return kernels.VarsOnDevice(k.Context, k, []*resource.Var{v}, true, func(vals []*tensor.Tensor) error {
		old := vals[0]
		if err := cpu.CheckScatter(k.Context, old, it, upd, name); err != nil {
			return err
		}
		slice := tensor.Shape(old.Shape[1:]).NumElements()
		n := it.NumElements() * slice
		scalar := int32(0)
		if len(upd.Shape) == 0 {
			scalar = 1
		}
		var a cu.Args
		a.Ptr(ptr(old)).Ptr(ptr(it)).Ptr(ptr(upd)).I64(n).I64(slice).I64(old.Shape[0]).I32(scalar)
		return k.launchN(states, "state_scatter_"+mode+"_"+suffix(old.DType)+"_"+is, n, &a)
	})
}

// optVars are the variables of an optimizer node's first slots inputs;
// a missing one fails as TF's lock of it does.
func optVars(k kctx, b kernels.Binding, slots int) ([]*resource.Var, error) {
	vs := make([]*resource.Var, slots)
	for i := range vs {
		h, err := resource.FromTensor(k.Input(i))
		if err != nil {
			return nil, k.Errorf(status.InvalidArgument, "%v", err)
		}
		r, err := b.Resources.Lookup(h.Container, h.Name, resource.VarKind)
		if err != nil {
			return nil, k.Errorf(status.Internal, "Invalid variable reference.")
		}
		vs[i] = r.(*resource.Var)
	}
	return vs, nil
}

// optFlags are src/state.cu's FLAG_* bits for node n of rule name.
func optFlags(n *graph.Node, name string) int32 {
	on := func(attr string, def bool) bool {
		if a := n.Attrs[attr]; a != nil {
			return a.GetB()
		}
		return def
	}
	var f int32
	if on("use_nesterov", false) {
		f |= 1
	}
	if name == "Adagrad" && !on("update_slots", true) {
		f |= 2
	}
	if on("multiply_linear_by_lr", false) {
		f |= 4
	}
	if name == "FtrlV2" {
		f |= 8
	}
	return f
}

// optSlots is the number of variable inputs of each rule.
var optSlots = map[string]int{"GradientDescent": 1, "Momentum": 2, "Adam": 3, "Adagrad": 2, "RMSProp": 3,
	"CenteredRMSProp": 4, "Ftrl": 3, "FtrlV2": 3}

// slotPtrs packs the slots' addresses, 0 for the ones the rule lacks.
func slotPtrs(a *cu.Args, vals []*tensor.Tensor) {
	for i := 0; i < 4; i++ {
		if i < len(vals) {
			a.Ptr(ptr(vals[i]))
		} else {
			a.Ptr(0)
		}
	}
}

func denseApply(n *graph.Node, b kernels.Binding, name string) func(k kctx) error {
	code, flags := optCodes[name], optFlags(n, name)
	return func(k kctx) error {
		vs, err := optVars(k, b, optSlots[name])
		if err != nil {
			return err
		}
		return kernels.VarsOnDevice(k.Context, k, vs, true, func(vals []*tensor.Tensor) error {
			scalars, grad, err := cpu.OptimizerArgs(k.Context, name, vals, false)
			if err != nil {
				return err
			}
			g := k.Input(grad)
			var a cu.Args
			a.I32(code).I32(flags)
			slotPtrs(&a, vals)
			a.Ptr(ptr(g))
			for i := 0; i < 6; i++ {
				if i < len(scalars) {
					a.Ptr(ptr(k.Input(scalars[i])))
				} else {
					a.Ptr(0)
				}
			}
			a.I64(g.NumElements())
			return k.launchN(states, "opt_dense_"+suffix(g.DType), g.NumElements(), &a)
		})
	}
}

func sparseApply(n *graph.Node, b kernels.Binding, name string) func(k kctx) error {
	code, flags := optCodes[name], optFlags(n, name)
	return func(k kctx) error {
		vs, err := optVars(k, b, optSlots[name])
		if err != nil {
			return err
		}
		return kernels.VarsOnDevice(k.Context, k, vs, true, func(vals []*tensor.Tensor) error {
			scalars, grad, index, inner, err := cpu.SparseOptimizerArgs(k.Context, name, vals)
			if err != nil {
				return err
			}
			g, it := k.Input(grad), k.Input(index)
			is, err := indexSuffix(k, it)
			if err != nil {
				return err
			}
			total := it.NumElements() * inner
			if total == 0 {
				return nil
			}
			var a cu.Args
			a.I32(code).I32(flags)
			slotPtrs(&a, vals)
			nidx := it.NumElements()
			a.Ptr(ptr(g)).Ptr(ptr(it)).I64(nidx).I64(inner).I64(vals[0].Shape[0])
			for i := 0; i < 6; i++ {
				v := 0.0
				if i < len(scalars) {
					s := k.Input(scalars[i])
					if s.DType == tensor.Float {
						v = float64(s.F32()[0])
					} else {
						v = s.F64()[0]
					}
				}
				a.F64(v)
			}
			block := int64(threads)
			for block > 32 && block/2 >= inner {
				block /= 2
			}
			grid := min(nidx, int64(k.sms()*16))
			return k.launch(states, "opt_sparse_"+suffix(g.DType)+"_"+is, int(grid), int(block), 0, &a)
		})
	}
}

// dryStream stands in for a kernel's stream in a dry run or on the
// emulator (dryRun set): memory is the host's there, work happens at
// once, and every event has completed.
type dryStream struct{}

type dryEvent struct{}

func (dryEvent) Query() bool          { return true }
func (dryEvent) Synchronize() error   { return nil }
func (dryEvent) Release()             {}
func (dryStream) ID() device.StreamID { return 0 }
func (dryStream) Record(device.Event) error {
	return nil
}
func (dryStream) Wait(device.Event) error                  { return nil }
func (dryStream) PooledEvent() (device.PooledEvent, error) { return dryEvent{}, nil }
func (dryStream) CopyH2D(dst uint64, src []byte) error {
	copy(hostmem.DeviceBytes(dst, len(src)), src) // host memory in a dry run
	return nil
}
func (dryStream) CopyD2H(dst []byte, src uint64) error {
	copy(dst, hostmem.DeviceBytes(src, len(dst)))
	return nil
}
func (dryStream) CopyD2D(dst, src, size uint64) error {
	copy(hostmem.DeviceBytes(dst, int(size)), hostmem.DeviceBytes(src, int(size)))
	return nil
}
func (dryStream) Synchronize() error { return nil }
func (dryStream) Close() error       { return nil }
