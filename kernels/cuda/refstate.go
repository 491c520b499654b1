package cuda

import (
	"strings"

	"mstream/graph"
	"mstream/kernels"
	"mstream/kernels/cpu"
	"mstream/resource"
	"mstream/status"
	"mstream/tensor"
)

// TF1 ref variables (VariableV2) in device memory: the same device values
// as the resource variables' (kernels.VarsOnDevice), found from the graph
// (the VariableV2 behind the ref chain, cpu.RefSource) when the plan binds
// the kernel, and updated by state.cu's programs. A ref edge carries, as
// on the host, the value its producer read when it ran: a copy in the
// step's device memory (a ref may reach a by-value consumer through
// RefSwitch, RefIdentity, ... which the binding does not see), or an
// empty placeholder for an uninitialised variable that no direct
// consumer reads by value (its Assign finds the variable itself). A
// TemporaryVariable's ops, per step and on the host, and a variable
// pinned to the CPU keep their ops there.

func init() {
	regRef := func(op, typeAttr string, types []tensor.DType, bind func(n *graph.Node, v *resource.Var, byValue bool) func(k kctx) error) {
		kernels.Register(kernels.Def{Op: op, Device: kernels.GPU, TypeAttr: typeAttr, Types: types, DeviceState: true,
			Factory: refStateful(bind)})
	}
	for _, op := range []string{"VariableV2", "Variable"} {
		regRef(op, "dtype", fixedTypes, func(n *graph.Node, v *resource.Var, byValue bool) func(k kctx) error {
			return func(k kctx) error {
				return refOutput(k, v, n.Name, byValue)
			}
		})
	}
	regRef("Assign", "T", fixedTypes, func(n *graph.Node, v *resource.Var, byValue bool) func(k kctx) error {
		validate := n.Attrs["validate_shape"].GetB()
		return func(k kctx) error {
			value := k.Input(1)
			err := kernels.AssignOnDevice(k.Context, k, v, value, func(old *tensor.Tensor) error {
				if validate && old != nil && !old.Shape.Equal(value.Shape) {
					return k.Errorf(status.InvalidArgument, "Assign requires shapes of both tensors to match. lhs shape= %v rhs shape= %v", old.Shape, value.Shape)
				}
				return nil
			})
			if err != nil {
				return err
			}
			return refResult(k, v, byValue)
		}
	})
	for op, sub := range map[string]bool{"AssignAdd": false, "AssignSub": true} {
		regRef(op, "T", stateNum, func(n *graph.Node, v *resource.Var, byValue bool) func(k kctx) error {
			return func(k kctx) error {
				delta := k.Input(1)
				err := addSubOnDevice(k, v, delta, sub, func(old *tensor.Tensor) error {
					if old == nil {
						return k.Errorf(status.FailedPrecondition, "Attempting to use uninitialized value %s", v.Name)
					}
					if !old.Shape.Equal(delta.Shape) {
						return k.Errorf(status.InvalidArgument, "Parameters and update must be the same size")
					}
					return nil
				})
				if err != nil {
					return err
				}
				return refResult(k, v, byValue)
			}
		})
	}
	for op, mode := range map[string]string{"ScatterUpdate": "set", "ScatterAdd": "add", "ScatterSub": "sub"} {
		regRef(op, "T", stateNum, func(n *graph.Node, v *resource.Var, byValue bool) func(k kctx) error {
			return func(k kctx) error {
				if !v.Initialized() {
					return k.Errorf(status.FailedPrecondition, "Null ref for params")
				}
				if err := scatterOnDevice(k, v, mode, v.Name); err != nil {
					return err
				}
				return refResult(k, v, byValue)
			}
		})
	}
}

// refStateful is the factory of a ref variable's GPU kernel: bind makes
// it for the variable behind its ref input 0 (the node's own for
// VariableV2) and whether its output is read by value. It refuses a
// TemporaryVariable's ref and a variable pinned to the CPU, so placement
// keeps those on the host.
func refStateful(bind func(n *graph.Node, v *resource.Var, byValue bool) func(k kctx) error) kernels.Factory {
	return func(n *graph.Node) (kernels.Kernel, error) {
		src := n
		if n.Op != "VariableV2" && n.Op != "Variable" {
			var err error
			if src, err = cpu.RefSource(n, 0); err != nil {
				return nil, err
			}
		}
		if src.Op == "TemporaryVariable" {
			return nil, status.Errorf(status.Unimplemented, "temporary variable '%s' lives in host memory", src.Name)
		}
		if strings.Contains(strings.ToUpper(src.Device), "CPU") {
			return nil, status.Errorf(status.Unimplemented, "the variable '%s' is placed on the CPU", src.Name)
		}
		return unboundState{n, func(n *graph.Node, b kernels.Binding) (func(k kctx) error, error) {
			byValue := len(b.ReadByValue) > 0 && b.ReadByValue[0]
			return bind(n, cpu.RefVariable(src, b), byValue), nil
		}}, nil
	}
}

// refResult is an updating ref op's output: the variable's value.
func refResult(k kctx, v *resource.Var, byValue bool) error {
	return refOutput(k, v, v.Name, byValue)
}

// refOutput copies v's value into output 0 on the device, ordered as a
// read. An uninitialised variable outputs an empty placeholder when no
// consumer reads it by value, else fails, naming name.
func refOutput(k kctx, v *resource.Var, name string, byValue bool) error {
	return kernels.VarsOnDevice(k.Context, k, []*resource.Var{v}, false, func(vals []*tensor.Tensor) error {
		if vals[0] == nil {
			if !byValue {
				_, err := k.Allocate(0, tensor.Shape{0})
				return err
			}
			return k.Errorf(status.FailedPrecondition, "Attempting to use uninitialized value %s", name)
		}
		o, err := k.Allocate(0, vals[0].Shape)
		if err != nil {
			return err
		}
		return k.Copy(o, vals[0])
	})
}
