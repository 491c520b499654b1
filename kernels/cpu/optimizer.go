package cpu

import (
	"fmt"
	"math"

	"mstream/graph"
	"mstream/kernels"
	"mstream/resource"
	"mstream/status"
	"mstream/tensor"
)

// The dense optimizers of TF's training_ops.cc, each in its ref form
// (Apply*: the variable and its accumulators are ref inputs, the output is
// the variable) and its resource form (ResourceApply*: handles, no output).
// One kernel serves both: it locks the variable and its accumulators for
// the whole read-modify-write (resource.UpdateAll), checks what TF checks
// in TF's order with TF's texts, and publishes the new values. Values are
// copy-on-write (resource/doc.go), so the update always holds the locks:
// use_locking=false in TF allows racing writers, which this never needs.

// optimizer is one of TF's dense update rules.
type optimizer struct {
	// slots is the number of variable inputs (var and its accumulators),
	// first in the op's inputs; names name them in shape errors.
	slots int
	names []string
	// scalars are the inputs after the slots that must be scalars, with
	// the text TF's check prints ("lr is not a scalar : " for some ops).
	scalars []scalarIn
	// grad is the input index of the gradient (delta for descent).
	grad     int
	gradName string
	// shown, when set, is for each slot the slot whose shape TF's shape
	// error prints (CenteredRMSProp prints ms's for mg).
	shown []int
	// update applies the rule in place on fresh copies of the slots.
	update32 func(n *graph.Node, slots [][]float32, s []float32, g []float32)
	update64 func(n *graph.Node, slots [][]float64, s []float64, g []float64)
}

type scalarIn struct {
	index int
	msg   string
	// late: TF checks it after the shapes (Momentum's momentum).
	late bool
}

func scalarsFrom(first int, msgs ...string) []scalarIn {
	s := make([]scalarIn, len(msgs))
	for i, m := range msgs {
		s[i] = scalarIn{index: first + i, msg: m}
	}
	return s
}

var optimizers = map[string]optimizer{
	"GradientDescent": {slots: 1, names: []string{"var"}, scalars: scalarsFrom(1, "alpha is not a scalar: "), grad: 2, gradName: "delta",
		update32: gradientDescent[float32], update64: gradientDescent[float64]},
	"Momentum": {slots: 2, names: []string{"var", "accum"}, scalars: []scalarIn{{index: 2, msg: "lr is not a scalar: "}, {index: 4, msg: "momentum is not a scalar: ", late: true}}, grad: 3, gradName: "grad",
		update32: momentum[float32], update64: momentum[float64]},
	"Adam": {slots: 3, names: []string{"var", "m", "v"}, scalars: scalarsFrom(3, "beta1_power is not a scalar: ", "beta2_power is not a scalar: ",
		"lr is not a scalar : ", "beta1 is not a scalar: ", "beta2 is not a scalar: ", "epsilon is not a scalar: "), grad: 9, gradName: "grad",
		update32: adam[float32], update64: adam[float64]},
	"Adagrad": {slots: 2, names: []string{"var", "accum"}, scalars: scalarsFrom(2, "lr is not a scalar: "), grad: 3, gradName: "grad",
		update32: adagrad[float32], update64: adagrad[float64]},
	"RMSProp": {slots: 3, names: []string{"var", "ms", "mom"}, scalars: scalarsFrom(3, "lr is not a scalar : ", "rho is not a scalar: ",
		"momentum is not a scalar: ", "epsilon is not a scalar: "), grad: 7, gradName: "grad",
		update32: rmsProp[float32], update64: rmsProp[float64]},
	"CenteredRMSProp": {slots: 4, names: []string{"var", "mg", "ms", "mom"}, scalars: scalarsFrom(4, "lr is not a scalar : ", "rho is not a scalar: ",
		"momentum is not a scalar: ", "epsilon is not a scalar: "), grad: 8, gradName: "grad", shown: []int{0, 2, 2, 3},
		update32: centeredRMSProp[float32], update64: centeredRMSProp[float64]},
	// Ftrl checks its scalars after the shapes; lr_power's text has no
	// colon. FtrlV2's l2_shrinkage (input 7) is checked last, after
	// lr_power (input 8): the scalars' order is the checks' order.
	"Ftrl": {slots: 3, names: []string{"var", "accum", "linear"}, grad: 3, gradName: "grad",
		scalars: []scalarIn{{4, "lr is not a scalar: ", true}, {5, "l1 regularization strength is not a scalar: ", true},
			{6, "l2 regularization strength is not a scalar: ", true}, {7, "lr_power is not a scalar", true}},
		update32: ftrl[float32], update64: ftrl[float64]},
	"FtrlV2": {slots: 3, names: []string{"var", "accum", "linear"}, grad: 3, gradName: "grad",
		scalars: []scalarIn{{4, "lr is not a scalar: ", true}, {5, "l1 regularization strength is not a scalar: ", true},
			{6, "l2 regularization strength is not a scalar: ", true}, {8, "lr_power is not a scalar", true},
			{7, "l2 shrinkage regularization strength is not a scalar: ", true}},
		update32: ftrlV2[float32], update64: ftrlV2[float64]},
}

type float interface{ ~float32 | ~float64 }

func sqrt[T float](x T) T { return T(math.Sqrt(float64(x))) }

// gradientDescent: var -= alpha * delta.
func gradientDescent[T float](n *graph.Node, v [][]T, s, g []T) {
	alpha := s[0]
	for i, d := range g {
		v[0][i] -= alpha * d
	}
}

// momentum: accum = accum*momentum + grad; var -= lr*accum, or with
// use_nesterov var -= grad*lr + accum*momentum*lr.
func momentum[T float](n *graph.Node, v [][]T, s, g []T) {
	lr, mom := s[0], s[1]
	nesterov := attrBool(n, "use_nesterov")
	w, acc := v[0], v[1]
	for i, gr := range g {
		acc[i] = acc[i]*mom + gr
		if nesterov {
			w[i] -= gr*lr + acc[i]*mom*lr
		} else {
			w[i] -= lr * acc[i]
		}
	}
}

// adam: lr_t = lr*sqrt(1-beta2_power)/(1-beta1_power); m += (g-m)*(1-beta1);
// v += (g*g-v)*(1-beta2); var -= m*lr_t/(sqrt(v)+epsilon), with
// use_nesterov (m*beta1 + (1-beta1)*g) in place of m.
func adam[T float](n *graph.Node, v [][]T, s, g []T) {
	b1p, b2p, lr, b1, b2, eps := s[0], s[1], s[2], s[3], s[4], s[5]
	nesterov := attrBool(n, "use_nesterov")
	lrt := lr * sqrt(1-b2p) / (1 - b1p)
	w, m, vv := v[0], v[1], v[2]
	for i, gr := range g {
		m[i] += (gr - m[i]) * (1 - b1)
		vv[i] += (gr*gr - vv[i]) * (1 - b2)
		if nesterov {
			w[i] -= (m[i]*b1 + (1-b1)*gr) * lrt / (sqrt(vv[i]) + eps)
		} else {
			w[i] -= m[i] * lrt / (sqrt(vv[i]) + eps)
		}
	}
}

// adagrad: accum += g*g (only with update_slots); var -= lr*g/sqrt(accum).
func adagrad[T float](n *graph.Node, v [][]T, s, g []T) {
	lr := s[0]
	update := true
	if a := n.Attrs["update_slots"]; a != nil {
		update = a.GetB()
	}
	w, acc := v[0], v[1]
	for i, gr := range g {
		if update {
			acc[i] += gr * gr
		}
		w[i] -= lr * gr * (1 / sqrt(acc[i]))
	}
}

// rmsProp: ms += (g*g-ms)*(1-rho); mom = mom*momentum + lr*g/sqrt(ms+eps);
// var -= mom.
func rmsProp[T float](n *graph.Node, v [][]T, s, g []T) {
	lr, rho, mom, eps := s[0], s[1], s[2], s[3]
	w, ms, mo := v[0], v[1], v[2]
	for i, gr := range g {
		ms[i] += (gr*gr - ms[i]) * (1 - rho)
		mo[i] = mo[i]*mom + (gr*lr)/sqrt(ms[i]+eps)
		w[i] -= mo[i]
	}
}

// centeredRMSProp: ms += (g*g-ms)*(1-rho); mg += (g-mg)*(1-rho);
// mom = mom*momentum + lr*g/sqrt(ms-mg*mg+eps); var -= mom.
func centeredRMSProp[T float](n *graph.Node, v [][]T, s, g []T) {
	lr, rho, mom, eps := s[0], s[1], s[2], s[3]
	w, mg, ms, mo := v[0], v[1], v[2], v[3]
	for i, gr := range g {
		ms[i] += (gr*gr - ms[i]) * (1 - rho)
		mg[i] += (gr - mg[i]) * (1 - rho)
		mo[i] = mo[i]*mom + (gr*lr)/sqrt((ms[i]-mg[i]*mg[i])+eps)
		w[i] -= mo[i]
	}
}

// ftrl is TF's ApplyFtrl rule (scalars lr, l1, l2, lr_power).
func ftrl[T float](n *graph.Node, v [][]T, s, g []T) {
	ftrlRule(attrBool(n, "multiply_linear_by_lr"), v, s[0], s[1], s[2], s[3], false, 0, g)
}

// ftrlV2 is ApplyFtrlV2 (scalars lr, l1, l2, lr_power, l2_shrinkage): the
// gradient gains 2*l2_shrinkage*var in the linear term.
func ftrlV2[T float](n *graph.Node, v [][]T, s, g []T) {
	ftrlRule(attrBool(n, "multiply_linear_by_lr"), v, s[0], s[1], s[2], s[3], true, s[4], g)
}

// ftrlRule: with a = accum + g*g and p(x) = x^-lr_power (sqrt at -0.5),
// linear += g' - (p(a)-p(accum))/lr*var (byLR: g'*lr - (p(a)-p(accum))*var);
// var = (l1*sign(linear)-linear)/(p(a)/lr+2*l2) where |linear| > l1, else 0
// (byLR: l1*lr in place of l1, p(a)+2*l2*lr below); accum = a. g' is the
// gradient, plus 2*shrinkage*var with shrink.
func ftrlRule[T float](byLR bool, v [][]T, lr, l1, l2, power T, shrink bool, shrinkage T, g []T) {
	p := func(x T) T {
		if power == -0.5 {
			return sqrt(x)
		}
		return T(math.Pow(float64(x), float64(-power)))
	}
	w, acc, lin := v[0], v[1], v[2]
	for i, gr := range g {
		gs := gr
		if shrink {
			gs = gr + 2*shrinkage*w[i]
		}
		na := acc[i] + gr*gr
		var l1e, y T
		if byLR {
			lin[i] += gs*lr - (p(na)-p(acc[i]))*w[i]
			l1e, y = l1*lr, p(na)+2*l2*lr
		} else {
			lin[i] += gs - (p(na)-p(acc[i]))/lr*w[i]
			l1e, y = l1, p(na)/lr+2*l2
		}
		if abs(lin[i]) > l1e {
			w[i] = (l1e*sign(lin[i]) - lin[i]) / y
		} else {
			w[i] = 0
		}
		acc[i] = na
	}
}

func abs[T float](x T) T {
	if x < 0 {
		return -x
	}
	return x
}

func sign[T float](x T) T {
	switch {
	case x > 0:
		return 1
	case x < 0:
		return -1
	}
	return 0
}

func init() {
	for name, o := range optimizers {
		o := o
		reg("Apply"+name, nil, nil, stateful(func(n *graph.Node, b kernels.Binding) (kernels.Kernel, error) {
			vs := make([]*resource.Var, o.slots)
			for i := range vs {
				v, err := refVarAt(n, b, i)
				if err != nil {
					return nil, err
				}
				vs[i] = v
			}
			return kernels.KernelFunc(func(ctx *kernels.Context) error {
				nv, err := o.apply(ctx, vs, true)
				if err != nil {
					return err
				}
				ctx.SetOutput(0, nv)
				return nil
			}), nil
		}))
		reg("ResourceApply"+name, nil, nil, stateful(func(n *graph.Node, b kernels.Binding) (kernels.Kernel, error) {
			return kernels.KernelFunc(func(ctx *kernels.Context) error {
				vs, err := lookupVars(ctx, b.Resources, o.slots)
				if err != nil {
					return err
				}
				_, err = o.apply(ctx, vs, false)
				return err
			}), nil
		}))
	}
}

// lookupVars finds the variables the handles of inputs 0..n-1 name, as a
// resource optimizer's kernel takes them: a handle that names no variable
// fails as TF does, taking the variable's lock (INTERNAL "Invalid variable
// reference."), before it would report the lookup's NOT_FOUND.
func lookupVars(ctx *kernels.Context, rm *resource.Manager, n int) ([]*resource.Var, error) {
	vs := make([]*resource.Var, n)
	for i := range vs {
		h, err := handleOf(ctx, i)
		if err != nil {
			return nil, err
		}
		r, err := rm.Lookup(h.Container, h.Name, resource.VarKind)
		if err != nil {
			return nil, ctx.Errorf(status.Internal, "Invalid variable reference.")
		}
		vs[i] = r.(*resource.Var)
	}
	return vs, nil
}

// requestedInput is TF's requested_input(i): the name of the node's input
// i as its NodeDef writes it.
func requestedInput(n *graph.Node, i int) string {
	in := n.Inputs[i]
	if in.Index == 0 {
		return in.Node.Name
	}
	return fmt.Sprintf("%s:%d", in.Node.Name, in.Index)
}

// checkScalars checks the scalar inputs TF checks before the shapes (late
// false) or after them.
func (o optimizer) checkScalars(ctx *kernels.Context, late bool) error {
	for _, s := range o.scalars {
		if sh := ctx.Input(s.index).Shape; s.late == late && len(sh) != 0 {
			return ctx.Errorf(status.InvalidArgument, "%s%v", s.msg, sh)
		}
	}
	return nil
}

// apply runs the rule on the variables vs (the node's first inputs) with
// all of them locked, and returns the variable's new value. ref says the
// variables are ref variables, which TF reports uninitialised differently.
func (o optimizer) apply(ctx *kernels.Context, vs []*resource.Var, ref bool) (*tensor.Tensor, error) {
	dt := attrType(ctx.Node, "T")
	nv, err := resource.UpdateAll(vs, func(old []*tensor.Tensor) ([]*tensor.Tensor, error) {
		if err := o.check(ctx, old, ref); err != nil {
			return nil, err
		}
		g := ctx.Input(o.grad)
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
			slots := make([][]float32, len(nv))
			for i, t := range nv {
				slots[i] = t.F32()
			}
			sc := make([]float32, len(o.scalars))
			for i, s := range o.scalars {
				sc[i] = ctx.Input(s.index).F32()[0]
			}
			o.update32(ctx.Node, slots, sc, g.F32())
		case tensor.Double:
			slots := make([][]float64, len(nv))
			for i, t := range nv {
				slots[i] = t.F64()
			}
			sc := make([]float64, len(o.scalars))
			for i, s := range o.scalars {
				sc[i] = ctx.Input(s.index).F64()[0]
			}
			o.update64(ctx.Node, slots, sc, g.F64())
		default:
			return nil, ctx.Errorf(status.Unimplemented, "%s is implemented for float and double, not %v", ctx.Node.Op, dt)
		}
		return nv, nil
	})
	if err != nil {
		return nil, err
	}
	return nv[0], nil
}

// check is TF's checks of a dense optimizer's inputs, in TF's order with
// its texts, given the slots' current values (nil: uninitialised; only
// their dtypes and shapes are read). ref says the variables are ref
// variables, which TF reports uninitialised differently.
func (o optimizer) check(ctx *kernels.Context, old []*tensor.Tensor, ref bool) error {
	dt := attrType(ctx.Node, "T")
	for i, t := range old {
		if t == nil && ref {
			return ctx.Errorf(status.FailedPrecondition, "Attempting to use uninitialized value %s", requestedInput(ctx.Node, i))
		}
		if t == nil {
			return ctx.Errorf(status.FailedPrecondition, "Attempting to use uninitialized variables: %s", requestedInput(ctx.Node, i))
		}
		if t.DType != dt {
			return ctx.Errorf(status.InvalidArgument, "Trying to read variable with wrong dtype. Expected %v got %v", dt, t.DType)
		}
	}
	if err := o.checkScalars(ctx, false); err != nil {
		return err
	}
	for i := 1; i < o.slots; i++ {
		if !old[0].Shape.Equal(old[i].Shape) {
			shown := i
			if o.shown != nil {
				shown = o.shown[i]
			}
			return ctx.Errorf(status.InvalidArgument, "var and %s do not have the same shape%v %v", o.names[i], old[0].Shape, old[shown].Shape)
		}
	}
	g := ctx.Input(o.grad)
	if !old[0].Shape.Equal(g.Shape) {
		return ctx.Errorf(status.InvalidArgument, "var and %s do not have the same shape%v %v", o.gradName, old[0].Shape, g.Shape)
	}
	if err := o.checkScalars(ctx, true); err != nil {
		return err
	}
	if g.DType != dt {
		return ctx.Errorf(status.InvalidArgument, "%s has dtype %v, T is %v", o.gradName, g.DType, dt)
	}
	return nil
}

// OptimizerArgs checks the inputs of a dense optimizer node (Apply* or
// ResourceApply*: op names the rule, "Adagrad") as the CPU kernel does,
// given its slots' values (device tensors serve: only dtypes and shapes
// are read), and returns the inputs of the rule's scalars in its order
// and the gradient's input: a device kernel's half of the same op.
func OptimizerArgs(ctx *kernels.Context, op string, old []*tensor.Tensor, ref bool) (scalars []int, grad int, err error) {
	o, ok := optimizers[op]
	if !ok {
		return nil, 0, ctx.Errorf(status.Unimplemented, "no optimizer rule %s", op)
	}
	if err := o.check(ctx, old, ref); err != nil {
		return nil, 0, err
	}
	for _, sc := range o.scalars {
		scalars = append(scalars, sc.index)
	}
	return scalars, o.grad, nil
}
