package graph

import (
	"strings"
	"testing"

	"mstream/status"
	"mstream/tensor"
)

// TestAddWhileLoopAtomic: a loop that fails late (a body output type the
// Merge cannot take, a frame name used twice) leaves the graph as it was,
// where TF leaves part of the loop behind.
func TestAddWhileLoopAtomic(t *testing.T) {
	g := New()
	x := mustPlaceholder(t, g, "x", tensor.Int32, tensor.Unknown)
	loop := func(name string, bodyOut func(body *Graph) TensorID) *WhileLoop {
		cond, body := New(), New()
		mustPlaceholder(t, cond, "cond_input0", tensor.Int32, tensor.Unknown)
		mustPlaceholder(t, body, "body_input0", tensor.Int32, tensor.Unknown)
		b := cond.NewBuilder("Less", "lt")
		b.AddInput(cond.Lookup("cond_input0").Output(0))
		b.AddInput(mustConst(t, cond, "ten", tensor.ScalarI32(10)).Output(0))
		if _, err := b.Finish(); err != nil {
			t.Fatal(err)
		}
		return &WhileLoop{Name: name, Inputs: []Output{x.Output(0)}, Cond: cond, Body: body,
			CondInputs: []TensorID{{"cond_input0", 0}}, CondOutput: TensorID{"lt", 0},
			BodyInputs: []TensorID{{"body_input0", 0}}, BodyOutputs: []TensorID{bodyOut(body)}}
	}
	same := func(body *Graph) TensorID { return TensorID{"body_input0", 0} }
	if _, err := g.AddWhileLoop(loop("w", same)); err != nil {
		t.Fatal(err)
	}
	n := g.NumNodes()
	if _, err := g.AddWhileLoop(loop("w", same)); err == nil {
		t.Fatal("a second loop of frame w was accepted")
	}
	float := func(body *Graph) TensorID {
		mustConst(t, body, "f", tensor.ScalarF32(1))
		return TensorID{"f", 0}
	}
	if _, err := g.AddWhileLoop(loop("v", float)); err == nil {
		t.Fatal("a float body output for an int32 loop variable was accepted")
	}
	if g.NumNodes() != n {
		t.Fatalf("failed loops left %d nodes behind", g.NumNodes()-n)
	}
	if _, err := g.AddWhileLoop(loop("v", same)); err != nil {
		t.Fatalf("the frame name of a failed loop stays free: %v", err)
	}
}

// TestBuildLoop: a loop built in place runs its callbacks on the Merge and
// Switch outputs, and one whose body fails still closes every back edge, so
// that the graph it leaves exports and imports again.
func TestBuildLoop(t *testing.T) {
	g := New()
	x := mustPlaceholder(t, g, "x", tensor.Int32, tensor.Unknown)
	ten := mustConst(t, g, "ten", tensor.ScalarI32(10))
	less := func(m []Output) (Output, error) {
		b := g.NewBuilder("Less", "l/cond/lt")
		b.AddInput(m[0])
		b.AddInput(ten.Output(0))
		n, err := b.Finish()
		if err != nil {
			return Output{}, err
		}
		return n.Output(0), nil
	}
	exits, pred, err := g.BuildLoop(&Loop{Scope: "l", Frame: "l", Inputs: []Output{x.Output(0)}, Cond: less,
		Body: func(in []Output) ([]Output, error) { return in, nil }})
	if err != nil {
		t.Fatal(err)
	}
	if exits[0].Node.Name != "l/Exit" || pred.Node.Name != "l/LoopCond" || g.Lookup("l/NextIteration") == nil {
		t.Fatalf("exits %v, pred %v", exits, pred)
	}
	if m := g.Lookup("l/Merge"); m.Inputs[1].Node != g.Lookup("l/NextIteration") {
		t.Fatalf("Merge reads %v", m.Inputs)
	}
	_, _, err = g.BuildLoop(&Loop{Scope: "bad", Frame: "bad", Inputs: []Output{x.Output(0)},
		Cond: func(m []Output) (Output, error) { return Output{}, status.InvalidArg("no cond") }})
	if err == nil || !strings.Contains(err.Error(), "no cond") {
		t.Fatalf("a failing cond: %v", err)
	}
	if nx := g.Lookup("bad/NextIteration"); nx == nil || nx.Inputs[0].Node != g.Lookup("bad/Merge") {
		t.Fatal("the failed loop's back edge is not closed over its Merge")
	}
	if _, err := New().Import(g.ToGraphDef(), &ImportOptions{}); err != nil {
		t.Fatalf("the graph does not import again: %v", err)
	}
}
