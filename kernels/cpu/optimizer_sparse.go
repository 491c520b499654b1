package cpu

import (
	"mstream/graph"
	"mstream/kernels"
	"mstream/resource"
	"mstream/status"
	"mstream/tensor"
)

// The sparse optimizers (ResourceSparseApply*): a gradient for some rows of
// the variable (an embedding's IndexedSlices), applied row by row in the
// order of indices with the dense rule of the same optimizer (optimizer.go)
// on each row. TF's CPU kernels apply rows in parallel when a row has
// several elements, so repeated indices race there; TF's optimizers sum
// repeated indices before they call them, and here the rows apply in order.
// Each op checks what TF's kernel checks, in its order (which differs from
// op to op), with its texts; indices are all checked before any row
// changes, where TF may fail half way through (values are copy-on-write
// here, so a failed step changes nothing).

// sparseStep is one of TF's checks: a kind, and for a scalar its input,
// TF's text and the condition its value must meet on the CPU.
type sparseStep struct {
	kind  string // shapes, rank, indices, scalar, dims, count, inner
	in    int
	msg   string
	value func(n *graph.Node, v float64) bool
}

// sparseOptimizer is one ResourceSparseApply* op.
type sparseOptimizer struct {
	slots       int
	names       []string
	grad, index int
	// scalars are the inputs the rule takes, in the rule's order.
	scalars []int
	steps   []sparseStep
	dense   optimizer // its update functions serve each row
}

func scalar(in int, msg string) sparseStep { return sparseStep{kind: "scalar", in: in, msg: msg} }

func scalarIf(in int, msg string, ok func(n *graph.Node, v float64) bool) sparseStep {
	return sparseStep{kind: "scalar", in: in, msg: msg, value: ok}
}

var (
	stepShapes  = sparseStep{kind: "shapes"}
	stepRank    = sparseStep{kind: "rank"}
	stepIndices = sparseStep{kind: "indices"}
	stepDims    = sparseStep{kind: "dims"}
	stepCount   = sparseStep{kind: "count"}
	stepInner   = sparseStep{kind: "inner"}
)

func nonNegative(_ *graph.Node, v float64) bool { return v >= 0 }

// ftrlSparseSteps are SparseApplyFtrlOp's checks; lrPower and shrinkage
// are the inputs of lr_power and l2_shrinkage (-1 without).
func ftrlSparseSteps(lrPower, shrinkage int) []sparseStep {
	steps := []sparseStep{stepShapes, stepRank, stepIndices,
		scalarIf(5, "lr is not a positive scalar (or zero if multiply_linear_by_lr is set): ", func(n *graph.Node, v float64) bool {
			return v > 0 || (attrBool(n, "multiply_linear_by_lr") && v >= 0)
		}),
		scalarIf(6, "l1 regularization strength is not a non-negative scalar: ", nonNegative),
		scalarIf(7, "l2 regularization strength is not a non-negative scalar: ", nonNegative),
		scalarIf(lrPower, "lr_power is not a non-positive scalar: ", func(_ *graph.Node, v float64) bool { return v <= 0 }),
		stepDims, stepCount, stepInner}
	if shrinkage >= 0 {
		steps = append(steps, scalarIf(shrinkage, "l2 shrinkage regularization strength is not a non-negative scalar: ", nonNegative))
	}
	return steps
}

var sparseOptimizers = map[string]sparseOptimizer{
	"Adagrad": {slots: 2, names: []string{"var", "accum"}, grad: 3, index: 4, scalars: []int{2},
		steps: []sparseStep{stepShapes, stepRank, scalar(2, "lr is not a scalar: "), stepIndices, stepDims, stepCount, stepInner},
		dense: optimizers["Adagrad"]},
	"Momentum": {slots: 2, names: []string{"var", "accum"}, grad: 3, index: 4, scalars: []int{2, 5},
		steps: []sparseStep{stepShapes, stepRank, scalar(2, "lr is not a scalar : "), stepIndices, stepDims, stepCount,
			scalar(5, "momentum is not a scalar: ")},
		dense: optimizers["Momentum"]},
	// RMSProp and CenteredRMSProp check the scalars first, with "lr is
	// not a scalar: " where the dense kernels print "lr is not a scalar : ".
	"RMSProp": {slots: 3, names: []string{"var", "ms", "mom"}, grad: 7, index: 8, scalars: []int{3, 4, 5, 6},
		steps: []sparseStep{scalar(3, "lr is not a scalar: "), scalar(4, "rho is not a scalar: "), scalar(5, "momentum is not a scalar: "),
			scalar(6, "epsilon is not a scalar: "), stepShapes, stepRank, stepIndices, stepDims, stepCount},
		dense: optimizers["RMSProp"]},
	"CenteredRMSProp": {slots: 4, names: []string{"var", "mg", "ms", "mom"}, grad: 8, index: 9, scalars: []int{4, 5, 6, 7},
		steps: []sparseStep{scalar(4, "lr is not a scalar: "), scalar(5, "rho is not a scalar: "), scalar(6, "momentum is not a scalar: "),
			scalar(7, "epsilon is not a scalar: "), stepShapes, stepRank, stepIndices, stepDims, stepCount},
		dense: optimizers["CenteredRMSProp"]},
	"Ftrl": {slots: 3, names: []string{"var", "accum", "linear"}, grad: 3, index: 4, scalars: []int{5, 6, 7, 8},
		steps: ftrlSparseSteps(8, -1), dense: optimizers["Ftrl"]},
	"FtrlV2": {slots: 3, names: []string{"var", "accum", "linear"}, grad: 3, index: 4, scalars: []int{5, 6, 7, 9, 8},
		steps: ftrlSparseSteps(9, 8), dense: optimizers["FtrlV2"]},
}

func init() {
	for name, o := range sparseOptimizers {
		o := o
		reg("ResourceSparseApply"+name, nil, nil, stateful(func(n *graph.Node, b kernels.Binding) (kernels.Kernel, error) {
			return kernels.KernelFunc(func(ctx *kernels.Context) error {
				vs, err := lookupVars(ctx, b.Resources, o.slots)
				if err != nil {
					return err
				}
				_, err = resource.UpdateAll(vs, func(old []*tensor.Tensor) ([]*tensor.Tensor, error) {
					return o.apply(ctx, old)
				})
				return err
			}), nil
		}))
	}
}

// apply checks as TF's kernel does and returns the new slots (nil when
// there is no row to update).
func (o sparseOptimizer) apply(ctx *kernels.Context, old []*tensor.Tensor) ([]*tensor.Tensor, error) {
	dt := attrType(ctx.Node, "T")
	inner, err := o.check(ctx, old)
	if err != nil {
		return nil, err
	}
	v := old[0]
	grad, indices := ctx.Input(o.grad), ctx.Input(o.index)
	n := indices.Shape[0]
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
	nv := make([]*tensor.Tensor, len(old))
	for i, t := range old {
		c, err := ownCopy(ctx, t)
		if err != nil {
			return nil, err
		}
		nv[i] = c
	}
	switch dt {
	case tensor.Float:
		sparseRows(ctx.Node, o.dense.update32, nv, grad.F32(), func(t *tensor.Tensor) []float32 { return t.F32() },
			o.scalarVals32(ctx), n, idx, inner)
	case tensor.Double:
		sparseRows(ctx.Node, o.dense.update64, nv, grad.F64(), func(t *tensor.Tensor) []float64 { return t.F64() },
			o.scalarVals64(ctx), n, idx, inner)
	default:
		return nil, ctx.Errorf(status.Unimplemented, "%s is implemented for float and double, not %v", ctx.Node.Op, dt)
	}
	return nv, nil
}

// SparseOptimizerArgs checks the inputs of a ResourceSparseApply* node
// (op names the rule, "Adagrad") as the CPU kernel does, given its slots'
// values (only dtypes and shapes are read), except the indices' values
// (a device kernel's indices are in device memory), and returns the
// inputs of the rule's scalars in its order, of the gradient and of the
// indices, and the elements per row.
func SparseOptimizerArgs(ctx *kernels.Context, op string, old []*tensor.Tensor) (scalars []int, grad, index int, inner int64, err error) {
	o, ok := sparseOptimizers[op]
	if !ok {
		return nil, 0, 0, 0, ctx.Errorf(status.Unimplemented, "no sparse optimizer rule %s", op)
	}
	if inner, err = o.check(ctx, old); err != nil {
		return nil, 0, 0, 0, err
	}
	return o.scalars, o.grad, o.index, inner, nil
}

// check is TF's checks of the op's inputs but the indices' values, in
// its order; it returns the elements per row.
func (o sparseOptimizer) check(ctx *kernels.Context, old []*tensor.Tensor) (int64, error) {
	dt := attrType(ctx.Node, "T")
	for i, t := range old {
		if t == nil {
			return 0, ctx.Errorf(status.FailedPrecondition, "Attempting to use uninitialized variables: %s", requestedInput(ctx.Node, i))
		}
		if t.DType != dt {
			return 0, ctx.Errorf(status.InvalidArgument, "Trying to read variable with wrong dtype. Expected %v got %v", dt, t.DType)
		}
	}
	v := old[0]
	grad, indices := ctx.Input(o.grad), ctx.Input(o.index)
	inner := int64(1)
	for _, st := range o.steps {
		switch st.kind {
		case "shapes":
			for i := 1; i < o.slots; i++ {
				if !v.Shape.Equal(old[i].Shape) {
					return 0, ctx.Errorf(status.InvalidArgument, "var and %s do not have the same shape%v %v", o.names[i], v.Shape, old[i].Shape)
				}
			}
		case "rank":
			if len(v.Shape) < 1 {
				return 0, ctx.Errorf(status.InvalidArgument, "var must be at least 1 dimensional")
			}
		case "indices":
			if len(indices.Shape) != 1 {
				return 0, ctx.Errorf(status.InvalidArgument, "indices must be one-dimensional")
			}
		case "scalar":
			t := ctx.Input(st.in)
			ok := len(t.Shape) == 0
			if ok && st.value != nil {
				ok = st.value(ctx.Node, scalarF64(t))
			}
			if !ok {
				return 0, ctx.Errorf(status.InvalidArgument, "%s%v", st.msg, t.Shape)
			}
		case "dims":
			for d := 1; d < len(v.Shape); d++ {
				if d >= len(grad.Shape) || v.Shape[d] != grad.Shape[d] {
					return 0, ctx.Errorf(status.InvalidArgument, "var and grad must match in dimension %d", d)
				}
				inner *= grad.Shape[d]
			}
		case "count":
			if len(grad.Shape) == 0 || grad.Shape[0] != indices.Shape[0] {
				return 0, ctx.Errorf(status.InvalidArgument, "grad must be the same size as indices in the first dimension.")
			}
		case "inner":
			if inner <= 0 {
				return 0, ctx.Errorf(status.InvalidArgument, "Inner dimension should be greater than zero.")
			}
		}
	}
	return inner, nil
}

func (o sparseOptimizer) scalarVals32(ctx *kernels.Context) []float32 {
	s := make([]float32, len(o.scalars))
	for i, in := range o.scalars {
		s[i] = ctx.Input(in).F32()[0]
	}
	return s
}

func (o sparseOptimizer) scalarVals64(ctx *kernels.Context) []float64 {
	s := make([]float64, len(o.scalars))
	for i, in := range o.scalars {
		s[i] = ctx.Input(in).F64()[0]
	}
	return s
}

func scalarF64(t *tensor.Tensor) float64 {
	switch t.DType {
	case tensor.Float:
		return float64(t.F32()[0])
	case tensor.Double:
		return t.F64()[0]
	}
	return 0
}

// sparseRows applies rule to row idx(i) of every slot with row i of g, in
// the order of indices.
func sparseRows[T float](n *graph.Node, rule func(*graph.Node, [][]T, []T, []T), slots []*tensor.Tensor, g []T,
	data func(*tensor.Tensor) []T, s []T, count int64, idx func(int64) int64, inner int64) {
	full := make([][]T, len(slots))
	for i, t := range slots {
		full[i] = data(t)
	}
	rows := make([][]T, len(slots))
	for i := int64(0); i < count; i++ {
		r := idx(i)
		for k, f := range full {
			rows[k] = f[r*inner : (r+1)*inner]
		}
		rule(n, rows, s, g[i*inner:(i+1)*inner])
	}
}
