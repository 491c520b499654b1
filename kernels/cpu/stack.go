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

// TF1's stacks (stack.cc): StackV2 makes a stack of one step whose
// DT_RESOURCE handle carries it in Vars (as a TensorArray's does), and
// StackPushV2/StackPopV2/StackCloseV2 use it. v1 while-loop gradients
// (tf.gradients through tf.compat.v1.while_loop, dynamic_rnn's) push
// forward values in the forward loop and pop them in the backward one. A
// pushed tensor is copied into memory of the stack's own (own). Messages
// are TF's. Stacks live in host memory on every device.
func init() {
	kernels.Register(kernels.Def{Op: "StackV2", Device: kernels.CPU, Factory: func(n *graph.Node) (kernels.Kernel, error) {
		var made atomic.Int64
		return kernels.KernelFunc(func(ctx *kernels.Context) error { return stackV2(ctx, &made) }), nil
	}})
	reg := func(op string, f func(ctx *kernels.Context) error) {
		kernels.Register(kernels.Def{Op: op, Device: kernels.CPU, Factory: fn(f)})
	}
	reg("StackPushV2", stackPush)
	reg("StackPopV2", stackPop)
	reg("StackCloseV2", func(ctx *kernels.Context) error {
		s, err := stackInput(ctx)
		if err != nil {
			return err
		}
		s.Mu.Lock()
		defer s.Mu.Unlock()
		s.Closed = true
		s.Elems = nil
		return nil
	})
}

func stackV2(ctx *kernels.Context, made *atomic.Int64) error {
	mt := ctx.Input(0)
	if len(mt.Shape) != 0 {
		return ctx.Errorf(status.InvalidArgument, "Stack size must be a scalar, but had shape: %v", mt.Shape)
	}
	name := attrString(ctx.Node, "stack_name", "")
	if name == "" {
		name = ctx.Node.Name
	}
	s := &tensor.Stack{Name: name + "_" + strconv.FormatInt(made.Add(1)-1, 10), DType: attrType(ctx.Node, "elem_type"), MaxSize: int(mt.I32()[0])}
	h := resource.Handle{Container: "_stacks", Name: s.Name, Kind: "Stack"}.Tensor()
	h.Vars = []any{s}
	s.Handle = h
	ctx.SetOutput(0, h)
	return nil
}

func stackInput(ctx *kernels.Context) (*tensor.Stack, error) {
	t := ctx.Input(0)
	if t.DType == tensor.Resource && len(t.Vars) == 1 {
		if s, ok := t.Vars[0].(*tensor.Stack); ok {
			return s, nil
		}
	}
	return nil, ctx.Errorf(status.NotFound, "Resource does not exist: a stack handle must come from a StackV2 of the same Run")
}

func stackPush(ctx *kernels.Context) error {
	s, err := stackInput(ctx)
	if err != nil {
		return err
	}
	v := ctx.Input(1)
	s.Mu.Lock()
	defer s.Mu.Unlock()
	if s.Closed {
		return ctx.Errorf(status.InvalidArgument, "Stack[%s] has already been closed.", s.Name)
	}
	if v.DType != s.DType {
		return ctx.Errorf(status.InvalidArgument, "Must have type %v but got %v", s.DType, v.DType)
	}
	if s.MaxSize >= 0 && len(s.Elems) >= s.MaxSize {
		return ctx.Errorf(status.InvalidArgument, "Stack[%s] overflowed its max_size (%d)", s.Name, s.MaxSize)
	}
	c, err := own(ctx, v)
	if err != nil {
		return err
	}
	s.Elems = append(s.Elems, c)
	ctx.SetOutput(0, v)
	return nil
}

func stackPop(ctx *kernels.Context) error {
	s, err := stackInput(ctx)
	if err != nil {
		return err
	}
	s.Mu.Lock()
	defer s.Mu.Unlock()
	if s.Closed {
		return ctx.Errorf(status.InvalidArgument, "Stack[%s] has already been closed.", s.Name)
	}
	if dt := attrType(ctx.Node, "elem_type"); dt != s.DType {
		return ctx.Errorf(status.InvalidArgument, "Stack[%s]: Invalid type %v != %v", s.Name, dt, s.DType)
	}
	if len(s.Elems) == 0 {
		return ctx.Errorf(status.InvalidArgument, "Stack[%s] is empty when calling Pop().", s.Name)
	}
	ctx.SetOutput(0, s.Elems[len(s.Elems)-1])
	s.Elems[len(s.Elems)-1] = nil
	s.Elems = s.Elems[:len(s.Elems)-1]
	return nil
}
