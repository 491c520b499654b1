package cpu

import (
	"mstream/kernels"
	"mstream/status"
	"mstream/tensor"
)

// TF's v1 control-flow ops. An output a kernel leaves
// unset is dead (the executor's dead tensors, exec/deadness.go): Switch
// forwards its data to the output its predicate picks and leaves the
// other dead; Merge gets nil for its dead inputs and forwards the first
// live one with its index. The executor never calls a kernel whose inputs
// make it dead.
func init() {
	sw := fn(func(ctx *kernels.Context) error {
		pred := ctx.Input(1)
		if len(pred.Shape) != 0 || pred.DType != tensor.Bool {
			return ctx.Errorf(status.InvalidArgument, "The second input must be a scalar, but it has shape %v", pred.Shape)
		}
		if pred.Buf[0] != 0 {
			ctx.SetOutput(1, ctx.Input(0))
		} else {
			ctx.SetOutput(0, ctx.Input(0))
		}
		return nil
	})
	reg("Switch", nil, []string{"pred"}, sw)
	reg("RefSwitch", nil, []string{"pred"}, sw)
	merge := fn(func(ctx *kernels.Context) error {
		for i, t := range ctx.Inputs {
			if t == nil {
				continue
			}
			ctx.SetOutput(0, t)
			idx, err := ctx.Allocate(1, nil)
			if err != nil {
				return err
			}
			idx.I32()[0] = int32(i)
			return nil
		}
		return ctx.Errorf(status.Internal, "Merge ran with every input dead")
	})
	reg("Merge", nil, []string{"value_index"}, merge)
	reg("RefMerge", nil, []string{"value_index"}, merge)
	reg("ControlTrigger", nil, nil, fn(func(*kernels.Context) error { return nil }))
	// The frame ops forward their input; moving the value between frames
	// and iterations is the executor's (exec/frames.go). LoopCond's
	// predicate lives in host memory, as in TF.
	pass := fn(func(ctx *kernels.Context) error {
		ctx.SetOutput(0, ctx.Input(0))
		return nil
	})
	for _, op := range []string{"Enter", "RefEnter", "Exit", "RefExit", "NextIteration", "RefNextIteration"} {
		reg(op, nil, nil, pass)
	}
	reg("LoopCond", nil, []string{"input", "output"}, fn(func(ctx *kernels.Context) error {
		p := ctx.Input(0)
		if len(p.Shape) != 0 {
			return ctx.Errorf(status.InvalidArgument, "LoopCond: the predicate must be a scalar, but it has shape %v", p.Shape)
		}
		ctx.SetOutput(0, p)
		return nil
	}))
}
