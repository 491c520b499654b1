package kerneltest

import (
	"math/rand"

	"mstream/tensor"
)

// The control-flow kernels that need no frames. Dead inputs (Merge's) are
// the executor's business and are tested there against TF's graphs
// (session's TestControlFlowV1); here Switch routes its data by the
// predicate and leaves the other output dead, and Merge forwards the
// first of its live inputs with its index.
func init() {
	sw := func(op string) Gen {
		return func(r *rand.Rand) []Case {
			var cs []Case
			for _, dt := range MoveTypes {
				for _, pred := range []bool{false, true} {
					a := Rand(r, dt, EdgeShapes[r.Intn(len(EdgeShapes))])
					p := tensor.FromBool(tensor.Shape{}, []bool{pred})
					c := Case{Node: NodeFor(op, nil, ins(a, p), nil), Inputs: ins(a, p), Want: []*tensor.Tensor{nil, nil}}
					if pred {
						c.Want[1], c.Dead = a, []int{0}
					} else {
						c.Want[0], c.Dead = a, []int{1}
					}
					cs = append(cs, c)
				}
			}
			return cs
		}
	}
	Add("Switch", sw("Switch"))
	Add("RefSwitch", sw("RefSwitch"))
	merge := func(op string) Gen {
		return func(r *rand.Rand) []Case {
			var cs []Case
			for _, dt := range MoveTypes {
				n := 1 + r.Intn(3)
				var in []*tensor.Tensor
				for i := 0; i < n; i++ {
					in = append(in, Rand(r, dt, tensor.Shape{3}))
				}
				idx := tensor.New(tensor.Int32, tensor.Shape{})
				cs = append(cs, Case{Node: NodeFor(op, nil, in, map[int]int{0: n}), Inputs: in, Want: []*tensor.Tensor{in[0], idx}})
			}
			return cs
		}
	}
	Add("Merge", merge("Merge"))
	Add("RefMerge", merge("RefMerge"))
	Add("ControlTrigger", func(r *rand.Rand) []Case {
		return []Case{{Node: NodeFor("ControlTrigger", nil, nil, nil), Want: []*tensor.Tensor{}}}
	})
}

// The frame ops forward their input (moving it between frames and
// iterations is the executor's, tested against TF's while loops in
// session's TestControlFlowV1); LoopCond forwards a scalar predicate (its
// shape function refuses any other shape).
func init() {
	pass := func(op string, attrs Attrs) Gen {
		return func(r *rand.Rand) []Case {
			var cs []Case
			for _, dt := range MoveTypes {
				a := Rand(r, dt, EdgeShapes[r.Intn(len(EdgeShapes))])
				cs = append(cs, Case{Node: NodeFor(op, attrs, ins(a), nil), Inputs: ins(a), Want: []*tensor.Tensor{a}})
			}
			return cs
		}
	}
	enter := Attrs{"frame_name": AStr("while/while_context"), "is_constant": ABool(false), "parallel_iterations": AInt(10)}
	Add("Enter", pass("Enter", enter))
	Add("RefEnter", pass("RefEnter", enter))
	for _, op := range []string{"Exit", "RefExit", "NextIteration", "RefNextIteration"} {
		Add(op, pass(op, nil))
	}
	Add("LoopCond", func(r *rand.Rand) []Case {
		var cs []Case
		for _, b := range []bool{false, true} {
			p := tensor.FromBool(tensor.Shape{}, []bool{b})
			cs = append(cs, Case{Node: NodeFor("LoopCond", nil, ins(p), nil), Inputs: ins(p), Want: []*tensor.Tensor{p}})
		}
		return cs
	})
}
