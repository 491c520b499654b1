package session

import (
	"os"
	"strings"
	"testing"

	"mstream/graph"
	"mstream/status"
	"mstream/tensor"
)

// TestFunctions runs TF 2.15's tf.function graphs (test/functions: nested
// calls, a polymorphic function, tf.cond, tf.while_loop and
// tf.switch_case in TF2 form, If and While whose bodies call functions, a
// missing function) with their function libraries, inlined and lowered
// at plan time, on the pool executor, host streams, two groups and
// node-level mode, and compares every output, error and static shape with
// TF's.
func TestFunctions(t *testing.T) {
	runTFCases(t, "../test/functions", "cases.json", hostControlFlowEnvs)
}

// TestFunctionRecursion: a function that calls itself is refused with
// INVALID_ARGUMENT naming the function and the call, and the session
// keeps working. (TF 2.15 itself dies of a stack overflow on this graph,
// so there is no TF answer to compare with.)
func TestFunctionRecursion(t *testing.T) {
	text, err := os.ReadFile("../test/functions/recursive.pbtxt")
	if err != nil {
		t.Fatal(err)
	}
	gd, err := graph.ParseTextGraphDef(text)
	if err != nil {
		t.Fatal(err)
	}
	g := graph.New()
	if _, err := g.Import(gd, nil); err != nil {
		t.Fatal(err)
	}
	s := openSession(t, g, nil)
	x := g.Lookup("x").Output(0)
	feeds := []Feed{{x, tensor.FromF32(tensor.Shape{2}, []float32{1, 2})}}
	_, _, err = s.Run(nil, feeds, []graph.Output{g.Lookup("r").Output(0)}, nil)
	if status.CodeOf(err) != status.InvalidArgument || !strings.Contains(err.Error(), "'Loop1' calls itself") || !strings.Contains(err.Error(), "'r/again'") {
		t.Errorf("recursive call: %v", err)
	}
	b := g.NewBuilder("Neg", "neg")
	b.AddInput(x)
	neg, err := b.Finish()
	if err != nil {
		t.Fatal(err)
	}
	got, _, err := s.Run(nil, feeds, []graph.Output{neg.Output(0)}, nil)
	if err != nil || got[0].F32()[1] != -2 {
		t.Errorf("the session after the failed Run: %v %v", got, err)
	}
}
