package cpu

import (
	"mstream/graph"
	"mstream/kernels"
	"mstream/resource"
	"mstream/status"
	"mstream/tensor"
)

// The sparse optimizers: a gradient for some rows of the variable (an
// embedding's IndexedSlices), applied row by row in the order of indices.
// TF's CPU kernel applies rows in parallel when a row has several
// elements, so repeated indices race there; TF's optimizers sum repeated
// indices before they call it, and here the rows apply in order.

func init() {
	reg("ResourceSparseApplyAdagrad", nil, nil, stateful(func(n *graph.Node, b kernels.Binding) (kernels.Kernel, error) {
		update := true
		if a := n.Attrs["update_slots"]; a != nil {
			update = a.GetB()
		}
		return kernels.KernelFunc(func(ctx *kernels.Context) error {
			vs := make([]*resource.Var, 2)
			for i := range vs {
				h, err := handleOf(ctx, i)
				if err != nil {
					return err
				}
				r, err := b.Resources.Lookup(h.Container, h.Name, resource.VarKind)
				if err != nil {
					return ctx.Errorf(status.Internal, "Invalid variable reference.")
				}
				vs[i] = r.(*resource.Var)
			}
			_, err := resource.UpdateAll(vs, func(old []*tensor.Tensor) ([]*tensor.Tensor, error) {
				return sparseAdagrad(ctx, old, update)
			})
			return err
		}), nil
	}))
}

// sparseAdagrad checks as TF's SparseApplyAdagradOp does, in its order,
// and returns the new var and accum.
func sparseAdagrad(ctx *kernels.Context, old []*tensor.Tensor, update bool) ([]*tensor.Tensor, error) {
	dt := attrType(ctx.Node, "T")
	for i, t := range old {
		if t == nil {
			return nil, ctx.Errorf(status.FailedPrecondition, "Attempting to use uninitialized variables: %s", requestedInput(ctx.Node, i))
		}
		if t.DType != dt {
			return nil, ctx.Errorf(status.InvalidArgument, "Trying to read variable with wrong dtype. Expected %v got %v", dt, t.DType)
		}
	}
	v, acc := old[0], old[1]
	if !v.Shape.Equal(acc.Shape) {
		return nil, ctx.Errorf(status.InvalidArgument, "var and accum do not have the same shape%v %v", v.Shape, acc.Shape)
	}
	if len(v.Shape) < 1 {
		return nil, ctx.Errorf(status.InvalidArgument, "var must be at least 1 dimensional")
	}
	lr, grad, indices := ctx.Input(2), ctx.Input(3), ctx.Input(4)
	if len(lr.Shape) != 0 {
		return nil, ctx.Errorf(status.InvalidArgument, "lr is not a scalar: %v", lr.Shape)
	}
	if len(indices.Shape) != 1 {
		return nil, ctx.Errorf(status.InvalidArgument, "indices must be one-dimensional")
	}
	inner := int64(1)
	for d := 1; d < len(v.Shape); d++ {
		if d >= len(grad.Shape) || v.Shape[d] != grad.Shape[d] {
			return nil, ctx.Errorf(status.InvalidArgument, "var and grad must match in dimension %d", d)
		}
		inner *= grad.Shape[d]
	}
	n := indices.Shape[0]
	if len(grad.Shape) == 0 || grad.Shape[0] != n {
		return nil, ctx.Errorf(status.InvalidArgument, "grad must be the same size as indices in the first dimension.")
	}
	if inner <= 0 {
		return nil, ctx.Errorf(status.InvalidArgument, "Inner dimension should be greater than zero.")
	}
	idx := func(i int64) int64 {
		if indices.DType == tensor.Int32 {
			return int64(indices.I32()[i])
		}
		return indices.I64()[i]
	}
	for i := int64(0); i < n; i++ {
		if r := idx(i); r < 0 || r >= v.Shape[0] {
			return nil, ctx.Errorf(status.InvalidArgument, "Index %d at offset %d in indices is out of range", r, i)
		}
	}
	if n == 0 {
		return nil, nil
	}
	nv := make([]*tensor.Tensor, 2)
	for i, t := range old {
		c, err := ownCopy(ctx, t)
		if err != nil {
			return nil, err
		}
		nv[i] = c
	}
	switch dt {
	case tensor.Float:
		sparseAdagradRows(nv[0].F32(), nv[1].F32(), grad.F32(), n, idx, inner, lr.F32()[0], update)
	case tensor.Double:
		sparseAdagradRows(nv[0].F64(), nv[1].F64(), grad.F64(), n, idx, inner, lr.F64()[0], update)
	default:
		return nil, ctx.Errorf(status.Unimplemented, "%s is implemented for float and double, not %v", ctx.Node.Op, dt)
	}
	return nv, nil
}

func sparseAdagradRows[T float](w, acc, g []T, n int64, idx func(int64) int64, inner int64, lr T, update bool) {
	for i := int64(0); i < n; i++ {
		r := idx(i)
		wr, ar, gr := w[r*inner:(r+1)*inner], acc[r*inner:(r+1)*inner], g[i*inner:(i+1)*inner]
		for j, x := range gr {
			if update {
				ar[j] += x * x
			}
			wr[j] -= lr * x * (1 / sqrt(ar[j]))
		}
	}
}
