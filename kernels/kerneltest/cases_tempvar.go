package kerneltest

import (
	"fmt"
	"math/rand"

	"mstream/graph"
	"mstream/status"
	"mstream/tensor"
)

// TemporaryVariable and DestroyTemporaryVariable: a case and its Before
// calls share one step (the StateRunner's Fresh runner gives them one),
// as the nodes of one Run do. The chain is TF's accumulate_n's:
// TemporaryVariable -> Assign -> AssignAdd -> DestroyTemporaryVariable.
// session's TestVariablesAgainstTF runs the same chain, made by TF, in
// whole Runs against TF.

// tempChain builds that chain for a variable of dt and shape s named
// "acc", its Assign and AssignAdd fed from placeholders, and the Destroy
// with var_name destroyName.
func tempChain(dt tensor.DType, s tensor.Shape, destroyName string) (tmp, assign, add, destroy *graph.Node) {
	g := graph.New()
	must := func(n *graph.Node, err error) *graph.Node {
		if err != nil {
			panic(fmt.Sprintf("kerneltest: %v", err))
		}
		return n
	}
	b := g.NewBuilder("TemporaryVariable", "acc")
	b.SetAttr("dtype", AType(dt))
	b.SetAttr("shape", AShape(s))
	tmp = must(b.Finish())
	ph := func(name string) *graph.Node {
		p := g.NewBuilder("Placeholder", name)
		p.SetAttr("dtype", AType(dt))
		return must(p.Finish())
	}
	x, y := ph("x"), ph("y")
	b = g.NewBuilder("Assign", "assign")
	b.AddInput(tmp.Output(0))
	b.AddInput(x.Output(0))
	assign = must(b.Finish())
	b = g.NewBuilder("AssignAdd", "add")
	b.AddInput(assign.Output(0))
	b.AddInput(y.Output(0))
	add = must(b.Finish())
	b = g.NewBuilder("DestroyTemporaryVariable", "destroy")
	b.AddInput(add.Output(0))
	b.SetAttr("var_name", AStr(destroyName))
	destroy = must(b.Finish())
	return tmp, assign, add, destroy
}

func init() {
	Add("TemporaryVariable", func(r *rand.Rand) []Case {
		var cs []Case
		for _, dt := range varTypes {
			s := tensor.Shape{int64(1 + r.Intn(3)), 2}
			tmp, _, _, _ := tempChain(dt, s, "acc")
			cs = append(cs,
				// TF leaves the value uninitialised: only its type and shape are known.
				Case{Node: tmp, State: true, Check: func(out []*tensor.Tensor) error {
					if out[0].DType != dt || !out[0].Shape.Equal(s) {
						return fmt.Errorf("%v %v, want %v %v", out[0].DType, out[0].Shape, dt, s)
					}
					return nil
				}},
				Case{Node: tmp, State: true, Before: []Call{{tmp, nil}}, Err: status.AlreadyExists, ErrMsg: "acc"})
		}
		return cs
	})
	Add("DestroyTemporaryVariable", func(r *rand.Rand) []Case {
		var cs []Case
		for _, dt := range varTypes {
			s := tensor.Shape{2, int64(1 + r.Intn(3))}
			x, y := randVal(r, dt, s), randVal(r, dt, s)
			tmp, assign, add, destroy := tempChain(dt, s, "acc")
			ref := refIn(dt)
			made := []Call{{tmp, nil}, {assign, []*tensor.Tensor{ref, x}}, {add, []*tensor.Tensor{ref, y}}}
			_, _, _, wrong := tempChain(dt, s, "other")
			cs = append(cs,
				Case{Node: destroy, Inputs: []*tensor.Tensor{ref}, State: true, Before: made,
					Want: []*tensor.Tensor{zip(x, y, func(a, b float64) float64 { return a + b })}},
				// Destroyed: the step no longer has it.
				Case{Node: add, Inputs: []*tensor.Tensor{ref, y}, State: true, Before: append(made, Call{destroy, []*tensor.Tensor{ref}}),
					Err: status.NotFound, ErrMsg: "acc"},
				Case{Node: wrong, Inputs: []*tensor.Tensor{ref}, State: true, Before: made, Err: status.NotFound, ErrMsg: "other"},
			)
		}
		return cs
	})
}
