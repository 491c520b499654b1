package kerneltest

import (
	"fmt"
	"math"
	"math/rand"

	"mstream/proto/tfpb"
	"mstream/status"
	"mstream/tensor"
)

// The dense optimizers, ref (Apply*) and resource (ResourceApply*) forms:
// set-up calls write the variable and its accumulators, the case applies
// one step and reads each of them back. The reference is TF's update rule
// (training_ops.cc's CPU functors) in float64. Whole TF1 training programs
// with each optimizer are compared with TF itself, step by step, by
// session's TestVariablesAgainstTF.

type optCase struct {
	slots []string
	// args draws the inputs after the slots, in the op's order.
	args func(r *rand.Rand, dt tensor.DType, s tensor.Shape) []*tensor.Tensor
	// attrs are the variants of the op's own attrs.
	attrs []map[string]*tfpb.AttrValue
	// step is the rule on the slots, in place, given the args.
	step func(v [][]float64, a [][]float64, attrs map[string]*tfpb.AttrValue)
	// lr is the index in args of a scalar input, for the not-a-scalar
	// error, with TF's text.
	lr    int
	lrMsg string
	// grad is the index in args of the gradient.
	grad int
	// slotVals, when set, draws the slots (default: the variable in
	// [-2, 2], accumulators in [0.1, 2]).
	slotVals func(r *rand.Rand, dt tensor.DType, s tensor.Shape) []*tensor.Tensor
}

// ftrlStep is TF's Ftrl rule in float64 (a[1..4] = lr, l1, l2, lr_power;
// shrinkage >= 0 adds 2*shrinkage*var to the gradient, V2).
func ftrlStep(v, a [][]float64, at map[string]*tfpb.AttrValue, shrink bool, shrinkage float64) {
	g, lr, l1, l2, power := a[0], a[1][0], a[2][0], a[3][0], a[4][0]
	byLR := attrOn(at, "multiply_linear_by_lr", false)
	p := func(x float64) float64 { return math.Pow(x, -power) }
	for i := range g {
		gs := g[i]
		if shrink {
			gs += 2 * shrinkage * v[0][i]
		}
		na := v[1][i] + g[i]*g[i]
		l1e, y := l1, p(na)/lr+2*l2
		if byLR {
			v[2][i] += gs*lr - (p(na)-p(v[1][i]))*v[0][i]
			l1e, y = l1*lr, p(na)+2*l2*lr
		} else {
			v[2][i] += gs - (p(na)-p(v[1][i]))/lr*v[0][i]
		}
		if math.Abs(v[2][i]) > l1e {
			s := 1.0
			if v[2][i] < 0 {
				s = -1
			}
			v[0][i] = (l1e*s - v[2][i]) / y
		} else {
			v[0][i] = 0
		}
		v[1][i] = na
	}
}

// ftrlArgs draws grad, lr, l1, l2, lr_power (half the time -0.5, TF's
// special case), and for V2 l2_shrinkage.
func ftrlArgs(v2 bool) func(r *rand.Rand, dt tensor.DType, s tensor.Shape) []*tensor.Tensor {
	return func(r *rand.Rand, dt tensor.DType, s tensor.Shape) []*tensor.Tensor {
		power := FromF64(dt, tensor.Shape{}, []float64{-0.5})
		if r.Intn(2) == 0 {
			power = scalarOf(r, dt, -1, -0.1)
		}
		out := []*tensor.Tensor{RandRange(r, dt, s, -2, 2), scalarOf(r, dt, 0.05, 0.5), scalarOf(r, dt, 0, 0.3), scalarOf(r, dt, 0, 0.3)}
		if v2 {
			return append(out, scalarOf(r, dt, 0, 0.2), power)
		}
		return append(out, power)
	}
}

func ftrlSlots(r *rand.Rand, dt tensor.DType, s tensor.Shape) []*tensor.Tensor {
	return []*tensor.Tensor{RandRange(r, dt, s, -2, 2), RandRange(r, dt, s, 0.1, 2), RandRange(r, dt, s, -1, 1)}
}

func scalarOf(r *rand.Rand, dt tensor.DType, lo, hi float64) *tensor.Tensor {
	return RandRange(r, dt, tensor.Shape{}, lo, hi)
}

func attrOn(attrs map[string]*tfpb.AttrValue, name string, def bool) bool {
	if a := attrs[name]; a != nil {
		return a.GetB()
	}
	return def
}

var optCases = map[string]optCase{
	"GradientDescent": {slots: []string{"v"},
		args: func(r *rand.Rand, dt tensor.DType, s tensor.Shape) []*tensor.Tensor {
			return []*tensor.Tensor{scalarOf(r, dt, 0.01, 0.5), RandRange(r, dt, s, -2, 2)}
		},
		step: func(v, a [][]float64, _ map[string]*tfpb.AttrValue) {
			for i, d := range a[1] {
				v[0][i] -= a[0][0] * d
			}
		},
		lr: 0, lrMsg: "alpha is not a scalar: [2]", grad: 1},
	"Momentum": {slots: []string{"v", "v1"},
		args: func(r *rand.Rand, dt tensor.DType, s tensor.Shape) []*tensor.Tensor {
			return []*tensor.Tensor{scalarOf(r, dt, 0.01, 0.5), RandRange(r, dt, s, -2, 2), scalarOf(r, dt, 0.5, 0.99)}
		},
		attrs: []map[string]*tfpb.AttrValue{{"use_nesterov": ABool(false)}, {"use_nesterov": ABool(true), "use_locking": ABool(true)}},
		step: func(v, a [][]float64, at map[string]*tfpb.AttrValue) {
			lr, g, mom := a[0][0], a[1], a[2][0]
			for i := range g {
				v[1][i] = v[1][i]*mom + g[i]
				if attrOn(at, "use_nesterov", false) {
					v[0][i] -= g[i]*lr + v[1][i]*mom*lr
				} else {
					v[0][i] -= lr * v[1][i]
				}
			}
		},
		lr: 0, lrMsg: "lr is not a scalar: [2]", grad: 1},
	"Adam": {slots: []string{"v", "v1", "v2"},
		args: func(r *rand.Rand, dt tensor.DType, s tensor.Shape) []*tensor.Tensor {
			return []*tensor.Tensor{scalarOf(r, dt, 0.1, 0.9), scalarOf(r, dt, 0.1, 0.99), scalarOf(r, dt, 0.01, 0.5),
				scalarOf(r, dt, 0.8, 0.95), scalarOf(r, dt, 0.9, 0.999), scalarOf(r, dt, 1e-3, 1e-2), RandRange(r, dt, s, -2, 2)}
		},
		attrs: []map[string]*tfpb.AttrValue{{"use_nesterov": ABool(false)}, {"use_nesterov": ABool(true), "use_locking": ABool(true)}},
		step: func(v, a [][]float64, at map[string]*tfpb.AttrValue) {
			b1p, b2p, lr, b1, b2, eps, g := a[0][0], a[1][0], a[2][0], a[3][0], a[4][0], a[5][0], a[6]
			lrt := lr * math.Sqrt(1-b2p) / (1 - b1p)
			for i := range g {
				v[1][i] += (g[i] - v[1][i]) * (1 - b1)
				v[2][i] += (g[i]*g[i] - v[2][i]) * (1 - b2)
				m := v[1][i]
				if attrOn(at, "use_nesterov", false) {
					m = m*b1 + (1-b1)*g[i]
				}
				v[0][i] -= m * lrt / (math.Sqrt(v[2][i]) + eps)
			}
		},
		lr: 2, lrMsg: "lr is not a scalar : [2]", grad: 6},
	"Adagrad": {slots: []string{"v", "v1"},
		args: func(r *rand.Rand, dt tensor.DType, s tensor.Shape) []*tensor.Tensor {
			return []*tensor.Tensor{scalarOf(r, dt, 0.01, 0.5), RandRange(r, dt, s, -2, 2)}
		},
		attrs: []map[string]*tfpb.AttrValue{{}, {"update_slots": ABool(false), "use_locking": ABool(true)}},
		step: func(v, a [][]float64, at map[string]*tfpb.AttrValue) {
			lr, g := a[0][0], a[1]
			for i := range g {
				if attrOn(at, "update_slots", true) {
					v[1][i] += g[i] * g[i]
				}
				v[0][i] -= lr * g[i] / math.Sqrt(v[1][i])
			}
		},
		lr: 0, lrMsg: "lr is not a scalar: [2]", grad: 1},
	"RMSProp": {slots: []string{"v", "v1", "v2"},
		args: func(r *rand.Rand, dt tensor.DType, s tensor.Shape) []*tensor.Tensor {
			return []*tensor.Tensor{scalarOf(r, dt, 0.01, 0.5), scalarOf(r, dt, 0.8, 0.99), scalarOf(r, dt, 0, 0.9),
				scalarOf(r, dt, 1e-3, 1e-2), RandRange(r, dt, s, -2, 2)}
		},
		attrs: []map[string]*tfpb.AttrValue{{}, {"use_locking": ABool(true)}},
		step: func(v, a [][]float64, _ map[string]*tfpb.AttrValue) {
			lr, rho, mom, eps, g := a[0][0], a[1][0], a[2][0], a[3][0], a[4]
			for i := range g {
				v[1][i] += (g[i]*g[i] - v[1][i]) * (1 - rho)
				v[2][i] = v[2][i]*mom + lr*g[i]/math.Sqrt(v[1][i]+eps)
				v[0][i] -= v[2][i]
			}
		},
		lr: 0, lrMsg: "lr is not a scalar : [2]", grad: 4},
	"CenteredRMSProp": {slots: []string{"v", "v1", "v2", "v3"},
		args: func(r *rand.Rand, dt tensor.DType, s tensor.Shape) []*tensor.Tensor {
			return []*tensor.Tensor{scalarOf(r, dt, 0.01, 0.5), scalarOf(r, dt, 0.8, 0.99), scalarOf(r, dt, 0, 0.9),
				scalarOf(r, dt, 1e-3, 1e-2), RandRange(r, dt, s, -2, 2)}
		},
		// mg small and ms large, so ms - mg^2 stays positive after the step.
		slotVals: func(r *rand.Rand, dt tensor.DType, s tensor.Shape) []*tensor.Tensor {
			return []*tensor.Tensor{RandRange(r, dt, s, -2, 2), RandRange(r, dt, s, -0.3, 0.3), RandRange(r, dt, s, 1, 2), RandRange(r, dt, s, -1, 1)}
		},
		step: func(v, a [][]float64, _ map[string]*tfpb.AttrValue) {
			lr, rho, mom, eps, g := a[0][0], a[1][0], a[2][0], a[3][0], a[4]
			for i := range g {
				v[2][i] += (g[i]*g[i] - v[2][i]) * (1 - rho)
				v[1][i] += (g[i] - v[1][i]) * (1 - rho)
				v[3][i] = v[3][i]*mom + lr*g[i]/math.Sqrt(v[2][i]-v[1][i]*v[1][i]+eps)
				v[0][i] -= v[3][i]
			}
		},
		lr: 0, lrMsg: "lr is not a scalar : [2]", grad: 4},
	"Ftrl": {slots: []string{"v", "v1", "v2"}, args: ftrlArgs(false), slotVals: ftrlSlots,
		attrs: []map[string]*tfpb.AttrValue{{}, {"multiply_linear_by_lr": ABool(true), "use_locking": ABool(true)}},
		step:  func(v, a [][]float64, at map[string]*tfpb.AttrValue) { ftrlStep(v, a, at, false, 0) },
		lr:    1, lrMsg: "lr is not a scalar: [2]", grad: 0},
	"FtrlV2": {slots: []string{"v", "v1", "v2"}, args: ftrlArgs(true), slotVals: ftrlSlots,
		attrs: []map[string]*tfpb.AttrValue{{}, {"multiply_linear_by_lr": ABool(true), "use_locking": ABool(true)}},
		step: func(v, a [][]float64, at map[string]*tfpb.AttrValue) {
			// args: grad, lr, l1, l2, l2_shrinkage, lr_power
			ftrlStep(v, [][]float64{a[0], a[1], a[2], a[3], a[5]}, at, true, a[4][0])
		},
		lr: 1, lrMsg: "lr is not a scalar: [2]", grad: 0},
}

// optWant is every slot after one step of o from the slot values x.
func optWant(o optCase, x, args []*tensor.Tensor, attrs map[string]*tfpb.AttrValue) []*tensor.Tensor {
	v := make([][]float64, len(x))
	for i, t := range x {
		v[i] = F64s(t)
	}
	a := make([][]float64, len(args))
	for i, t := range args {
		a[i] = F64s(t)
	}
	o.step(v, a, attrs)
	out := make([]*tensor.Tensor, len(x))
	for i := range x {
		out[i] = FromF64(x[i].DType, x[i].Shape, v[i])
	}
	return out
}

func withT(attrs map[string]*tfpb.AttrValue, dt tensor.DType) map[string]*tfpb.AttrValue {
	m := map[string]*tfpb.AttrValue{"T": AType(dt)}
	for k, a := range attrs {
		m[k] = a
	}
	return m
}

func init() {
	for name, o := range optCases {
		if o.attrs == nil {
			o.attrs = []map[string]*tfpb.AttrValue{{}, {"use_locking": ABool(true)}}
		}
		// slotVals draws the variable (first) and its accumulators (positive,
		// as the rules take their square roots).
		slotVals := func(r *rand.Rand, dt tensor.DType, s tensor.Shape) []*tensor.Tensor {
			x := []*tensor.Tensor{RandRange(r, dt, s, -2, 2)}
			for range o.slots[1:] {
				x = append(x, RandRange(r, dt, s, 0.1, 2))
			}
			return x
		}
		if o.slotVals != nil {
			slotVals = o.slotVals
		}
		Add("ResourceApply"+name, func(r *rand.Rand) []Case {
			var cs []Case
			for _, dt := range []tensor.DType{tensor.Float, tensor.Double} {
				for _, at := range o.attrs {
					s := EdgeShapes[r.Intn(len(EdgeShapes))]
					x, args := slotVals(r, dt, s), o.args(r, dt, s)
					var hs, before []*tensor.Tensor
					var setup []Call
					for i, sl := range o.slots {
						h := handleT(sl, dt)
						hs = append(hs, h)
						setup = append(setup, assignCall(h, x[i]))
					}
					ins := append(append(before, hs...), args...)
					apply := NodeFor("ResourceApply"+name, withT(at, dt), ins, nil)
					want := optWant(o, x, args, at)
					for i, h := range hs {
						cs = append(cs, Case{Node: readNode(h, dt), Inputs: []*tensor.Tensor{h}, State: true,
							Before: append(append([]Call(nil), setup...), Call{apply, ins}), Want: []*tensor.Tensor{want[i]}})
					}
					cs = append(cs, Case{Node: apply, Inputs: ins, State: true, Err: status.Internal, ErrMsg: "Invalid variable reference."})
				}
			}
			// TF's checks: a learning rate that is not a scalar, a gradient
			// of another shape than the variable's.
			dt, s := tensor.Float, tensor.Shape{2, 3}
			x, args := slotVals(r, dt, s), o.args(r, dt, s)
			var hs []*tensor.Tensor
			var setup []Call
			for i, sl := range o.slots {
				hs = append(hs, handleT(sl, dt))
				setup = append(setup, assignCall(hs[i], x[i]))
			}
			badLR := append([]*tensor.Tensor(nil), args...)
			badLR[o.lr] = RandRange(r, dt, tensor.Shape{2}, 0.1, 0.5)
			badG := append([]*tensor.Tensor(nil), args...)
			badG[o.grad] = RandRange(r, dt, tensor.Shape{3}, -1, 1)
			for _, c := range []struct {
				args []*tensor.Tensor
				msg  string
			}{{badLR, o.lrMsg}, {badG, fmt.Sprintf("var and %s do not have the same shape[2,3] [3]", map[bool]string{true: "delta", false: "grad"}[name == "GradientDescent"])}} {
				ins := append(append([]*tensor.Tensor(nil), hs...), c.args...)
				n := NodeForUnknown("ResourceApply"+name, withT(nil, dt), ins, nil)
				cs = append(cs, Case{Node: n, Inputs: ins, State: true, Before: setup, Err: status.InvalidArgument, ErrMsg: c.msg})
			}
			return cs
		})
		Add("Apply"+name, func(r *rand.Rand) []Case {
			var cs []Case
			for _, dt := range []tensor.DType{tensor.Float, tensor.Double} {
				for _, at := range o.attrs {
					s := tensor.Shape{2, 3}
					x, args := slotVals(r, dt, s), o.args(r, dt, s)
					var setup []Call
					var ins []*tensor.Tensor
					for i, sl := range o.slots {
						assign := refNodeOf("Assign", dt, s, []string{sl}, nil, x[i])
						setup = append(setup, Call{assign, []*tensor.Tensor{refIn(dt), x[i]}})
						ins = append(ins, refIn(dt))
					}
					ins = append(ins, args...)
					apply := refNodeOf("Apply"+name, dt, s, o.slots, withT(at, dt), args...)
					want := optWant(o, x, args, at)
					cs = append(cs,
						Case{Node: apply, Inputs: ins, State: true, Before: setup, Want: want[:1]},
						Case{Node: apply, Inputs: ins, State: true, Err: status.FailedPrecondition, ErrMsg: "Attempting to use uninitialized value v"})
				}
			}
			return cs
		})
	}
}

// sparseCases are the ResourceSparseApply* ops: the dense op of the same
// optimizer (optCases) applied to the rows the indices name, in order
// (repeats included); their inputs are the dense op's with the indices
// right after the gradient. lrMsg is the sparse kernel's own text for a
// learning rate that is not a scalar.
var sparseCases = map[string]string{
	"Adagrad":         "lr is not a scalar: [2]",
	"Momentum":        "lr is not a scalar : [2]",
	"RMSProp":         "lr is not a scalar: [2]",
	"CenteredRMSProp": "lr is not a scalar: [2]",
	"Ftrl":            "lr is not a positive scalar (or zero if multiply_linear_by_lr is set): [2]",
	"FtrlV2":          "lr is not a positive scalar (or zero if multiply_linear_by_lr is set): [2]",
}

func init() {
	for name, lrMsg := range sparseCases {
		o := optCases[name]
		if o.attrs == nil {
			o.attrs = []map[string]*tfpb.AttrValue{{}, {"use_locking": ABool(true)}}
		}
		if name == "Adagrad" {
			o.attrs = []map[string]*tfpb.AttrValue{{}, {"update_slots": ABool(false), "use_locking": ABool(true)}}
		}
		op := "ResourceSparseApply" + name
		// inputs are the handles, then args with the indices after the gradient.
		inputs := func(hs, args []*tensor.Tensor, ind *tensor.Tensor) []*tensor.Tensor {
			ins := append([]*tensor.Tensor(nil), hs...)
			ins = append(ins, args[:o.grad+1]...)
			ins = append(ins, ind)
			return append(ins, args[o.grad+1:]...)
		}
		slotVals := func(r *rand.Rand, dt tensor.DType, s tensor.Shape) []*tensor.Tensor {
			if o.slotVals != nil {
				return o.slotVals(r, dt, s)
			}
			x := []*tensor.Tensor{RandRange(r, dt, s, -2, 2)}
			for range o.slots[1:] {
				x = append(x, RandRange(r, dt, s, 0.1, 2))
			}
			return x
		}
		Add(op, func(r *rand.Rand) []Case {
			var cs []Case
			for _, dt := range []tensor.DType{tensor.Float, tensor.Double} {
				for _, it := range []tensor.DType{tensor.Int32, tensor.Int64} {
					for _, at := range o.attrs {
						s := tensor.Shape{5, 1 + int64(r.Intn(3))}
						inner := int(s[1])
						n := 1 + r.Intn(4)
						idx := make([]float64, n)
						for i := range idx {
							idx[i] = float64(r.Intn(5)) // repeats apply in order
						}
						ind := FromF64(it, tensor.Shape{int64(n)}, idx)
						x := slotVals(r, dt, s)
						args := o.args(r, dt, tensor.Shape{int64(n), s[1]})
						// The reference: the dense rule on each named row.
						v := make([][]float64, len(x))
						for i, t := range x {
							v[i] = F64s(t)
						}
						a := make([][]float64, len(args))
						for i, t := range args {
							a[i] = F64s(t)
						}
						for i, row := range idx {
							rows := make([][]float64, len(v))
							for k := range v {
								rows[k] = v[k][int(row)*inner : (int(row)+1)*inner]
							}
							ra := append([][]float64(nil), a...)
							ra[o.grad] = a[o.grad][i*inner : (i+1)*inner]
							o.step(rows, ra, at)
						}
						var hs []*tensor.Tensor
						var before []Call
						for i, sl := range o.slots {
							h := handleT(sl, dt)
							hs = append(hs, h)
							before = append(before, assignCall(h, x[i]))
						}
						ins := inputs(hs, args, ind)
						before = append(before, Call{NodeForUnknown(op, withT(at, dt), ins, nil), ins})
						for i, h := range hs {
							cs = append(cs, Case{Node: readNode(h, dt), Inputs: []*tensor.Tensor{h}, State: true, Before: before,
								Want: []*tensor.Tensor{FromF64(dt, s, v[i])}})
						}
					}
				}
			}
			// TF's checks, one fault at a time.
			dt, s := tensor.Float, tensor.Shape{4, 2}
			x := slotVals(r, dt, s)
			var hs []*tensor.Tensor
			var setup []Call
			for i, sl := range o.slots {
				hs = append(hs, handleT(sl, dt))
				setup = append(setup, assignCall(hs[i], x[i]))
			}
			args := o.args(r, dt, tensor.Shape{2, 2})
			badLR := append([]*tensor.Tensor(nil), args...)
			badLR[o.lr] = RandRange(r, dt, tensor.Shape{2}, 0.1, 0.5)
			badG := append([]*tensor.Tensor(nil), args...)
			badG[o.grad] = RandRange(r, dt, tensor.Shape{2, 3}, -1, 1)
			two := tensor.FromI64(tensor.Shape{2}, []int64{1, 2})
			for _, c := range []struct {
				ins   []*tensor.Tensor
				state bool
				code  status.Code
				msg   string
				// hostErr: a GPU kernel, whose indices are in device
				// memory, skips the row instead (TF's GPU kernels).
				hostErr bool
			}{
				{inputs(hs, args, two), false, status.Internal, "Invalid variable reference.", false},
				{inputs(hs, args, tensor.FromI64(tensor.Shape{2}, []int64{1, 4})), true, status.InvalidArgument, "Index 4 at offset 1 in indices is out of range", true},
				{inputs(hs, args, tensor.FromI32(tensor.Shape{2}, []int32{-1, 0})), true, status.InvalidArgument, "Index -1 at offset 0 in indices is out of range", true},
				{inputs(hs, args, tensor.FromI64(tensor.Shape{3}, []int64{1, 2, 3})), true, status.InvalidArgument, "grad must be the same size as indices in the first dimension.", false},
				{inputs(hs, args, tensor.FromI64(tensor.Shape{2, 1}, []int64{1, 2})), true, status.InvalidArgument, "indices must be one-dimensional", false},
				{inputs(hs, badLR, two), true, status.InvalidArgument, lrMsg, false},
				{inputs(hs, badG, two), true, status.InvalidArgument, "var and grad must match in dimension 1", false},
			} {
				n := NodeForUnknown(op, withT(nil, dt), c.ins, nil)
				var before []Call
				if c.state {
					before = setup
				}
				cs = append(cs, Case{Node: n, Inputs: c.ins, State: true, Before: before, Err: c.code, ErrMsg: c.msg, HostErr: c.hostErr})
			}
			return cs
		})
	}
}
