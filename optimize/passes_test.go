package optimize_test

import (
	"math/rand"
	"testing"

	"mstream/graph"
	"mstream/optimize"
	"mstream/optimize/fusiontest"
	"mstream/proto/tfpb"
	"mstream/tensor"
)

func newGB(t *testing.T) *gb { return &gb{t: t, g: graph.New(), r: rand.New(rand.NewSource(3))} }

func (b *gb) noop(name string, controls ...string) {
	b.t.Helper()
	nb := b.g.NewBuilder("NoOp", name)
	for _, c := range controls {
		nb.AddControlInput(b.g.Lookup(c))
	}
	if _, err := nb.Finish(); err != nil {
		b.t.Fatal(err)
	}
}

func rewriteWith(b *gb, p optimize.Pass, feeds, fetches []string, targets ...string) optimize.Result {
	var ts []*graph.Node
	for _, n := range targets {
		ts = append(ts, b.g.Lookup(n))
	}
	b.g.RLock()
	defer b.g.RUnlock()
	return optimize.Rewrite(outputs(b.t, b.g, feeds...), outputs(b.t, b.g, fetches...), ts, optimize.Options{Devices: []string{"CPU"}, Passes: p})
}

func feedX(b *gb, dims ...int64) map[string]*tensor.Tensor {
	return map[string]*tensor.Tensor{"x": fusiontest.Random(b.r, tensor.Float, dims)}
}

func TestPassesFor(t *testing.T) {
	off := tfpb.RewriterConfig_OFF
	for _, c := range []struct {
		name string
		cfg  *tfpb.ConfigProto
		want optimize.Pass
	}{
		{"default", &tfpb.ConfigProto{}, optimize.All},
		{"nil", nil, optimize.All},
		{"no rewrites", fusiontest.NoRewrites(), 0},
		{"meta off, classic on", &tfpb.ConfigProto{GraphOptions: &tfpb.GraphOptions{
			RewriteOptions: &tfpb.RewriterConfig{DisableMetaOptimizer: true}}}, optimize.Fold | optimize.CSE},
		{"L0 but classic folding asked", &tfpb.ConfigProto{GraphOptions: &tfpb.GraphOptions{
			OptimizerOptions: &tfpb.OptimizerOptions{OptLevel: tfpb.OptimizerOptions_L0, DoConstantFolding: true},
			RewriteOptions:   &tfpb.RewriterConfig{DisableMetaOptimizer: true}}}, optimize.Fold},
		{"each grappler pass off", &tfpb.ConfigProto{GraphOptions: &tfpb.GraphOptions{
			OptimizerOptions: &tfpb.OptimizerOptions{OptLevel: tfpb.OptimizerOptions_L0},
			RewriteOptions: &tfpb.RewriterConfig{ConstantFolding: off, ArithmeticOptimization: off,
				DependencyOptimization: off, Remapping: off, CommonSubgraphElimination: off}}}, 0},
		{"remapping off", &tfpb.ConfigProto{GraphOptions: &tfpb.GraphOptions{
			RewriteOptions: &tfpb.RewriterConfig{Remapping: off}}}, optimize.All &^ optimize.Remap},
	} {
		if got := optimize.PassesFor(c.cfg); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}

// TestFold: the constant part of a graph becomes Consts where the rest
// reads it; what a Run observes (fetches, targets, feeds) stays, and so do
// nodes that are stateful, have control inputs, fail, or are too large.
func TestFold(t *testing.T) {
	b := newGB(t)
	x := b.placeholder("x", 4)
	a := b.op("Mul", "a", nil, b.weights("w1", -1, 1, 4), b.weights("w2", -1, 1, 4))
	a = b.op("Exp", "a/exp", nil, a)
	y := b.op("AddV2", "y", nil, x, a)
	fetched := b.op("Neg", "fetched", nil, b.scalar("s", 2))
	b.op("Mul", "z", nil, y, fetched)
	// Too large to fold: 3M float32 (12 MB) from a Fill.
	dims := b.op("Const", "dims", map[string]*tfpb.AttrValue{"dtype": graph.AttrType(tensor.Int32), "value": graph.AttrTensor(int32s(3000000))})
	big := b.op("Fill", "big", nil, dims, b.scalar("one", 1))
	b.op("Sum", "bigsum", nil, big, b.op("Const", "axis", map[string]*tfpb.AttrValue{"dtype": graph.AttrType(tensor.Int32), "value": graph.AttrTensor(int32s(0))}))
	// A kernel error stays for Run to report.
	i32 := func(name string, v ...int32) graph.Output {
		return b.op("Const", name, map[string]*tfpb.AttrValue{"dtype": graph.AttrType(tensor.Int32), "value": graph.AttrTensor(int32s(v...))})
	}
	// (A bad Reshape no longer serves: shape inference folds its shape and
	// refuses it when the node is added, as TF's does; Gather's shape
	// function does not look at the indices.)
	bad := b.op("GatherV2", "bad", nil, b.weights("w3", -1, 1, 4), i32("seven", 7), i32("zero", 0))
	b.op("AddV2", "usebad", nil, bad, x)

	res := rewriteWith(b, optimize.Fold, []string{"x"}, []string{"z", "fetched", "bigsum"})
	ops := fusedOps(res)
	if n := ops["a/exp"]; n == nil || n.Op != "Const" {
		t.Errorf("a/exp: %v, want a Const", n)
	}
	if ops["a"] != nil || ops["w1"] != nil {
		t.Errorf("the folded node's inputs are still needed")
	}
	if n := ops["fetched"]; n == nil || n.Op != "Neg" {
		t.Errorf("the fetched node must stay a Neg, got %v", n)
	}
	if n := ops["big"]; n == nil || n.Op != "Fill" {
		t.Errorf("a 12 MB value must not be folded, got %v", n)
	}
	if got := res.Counts[optimize.Fold]; got != 1 {
		t.Errorf("%d folds, want 1 (a/exp)", got)
	}
	if res := rewriteWith(b, optimize.Fold, []string{"x"}, []string{"usebad"}); fusedOps(res)["bad"].Op != "GatherV2" {
		t.Errorf("a node whose kernel fails must stay")
	}
	fusiontest.Compare(t, b.g, feedX(b, 4), []string{"z", "fetched", "bigsum"}, 0)
	fusiontest.Compare(t, b.g, feedX(b, 4), []string{"usebad"}, 0)

	// A fed Const is not constant, nor is anything downstream of it.
	res = rewriteWith(b, optimize.Fold, []string{"x", "w1"}, []string{"z"})
	if n := fusedOps(res)["a/exp"]; n.Op != "Exp" {
		t.Errorf("a/exp reads a fed Const: it must not fold, got %v", n.Op)
	}
}

func TestFoldLeavesStatefulAndControlled(t *testing.T) {
	b := newGB(t)
	x := b.placeholder("x", 2)
	shape := b.op("Const", "shape", map[string]*tfpb.AttrValue{"dtype": graph.AttrType(tensor.Int32), "value": graph.AttrTensor(int32s(2))})
	rnd := b.op("RandomUniform", "rnd", map[string]*tfpb.AttrValue{"dtype": graph.AttrType(tensor.Float)}, shape)
	b.op("AddV2", "y", nil, x, rnd)
	nb := b.g.NewBuilder("Neg", "ctl")
	nb.AddInput(b.scalar("c", 3))
	nb.AddControlInput(x.Node)
	if _, err := nb.Finish(); err != nil {
		t.Fatal(err)
	}
	b.op("Mul", "z", nil, x, b.g.Lookup("ctl").Output(0))
	res := rewriteWith(b, optimize.Fold, []string{"x"}, []string{"y", "z"})
	ops := fusedOps(res)
	if ops["rnd"].Op != "RandomUniform" || ops["ctl"].Op != "Neg" {
		t.Errorf("stateful or controlled nodes folded: rnd %s, ctl %s", ops["rnd"].Op, ops["ctl"].Op)
	}
}

// TestArith: chains of adds or multiplies by scalar constants become one
// node; a link a Run observes ends the chain.
func TestArith(t *testing.T) {
	b := newGB(t)
	x := b.placeholder("x", 3)
	y := x
	for i := range 5 {
		c := b.scalar("c"+string(rune('0'+i)), float32(i)+0.5)
		if i%2 == 0 {
			y = b.op("AddV2", "add"+string(rune('0'+i)), nil, y, c)
		} else {
			y = b.op("Add", "add"+string(rune('0'+i)), nil, c, y)
		}
	}
	m := b.op("Mul", "m0", nil, y, b.scalar("k0", 2))
	m = b.op("Mul", "m1", nil, m, b.scalar("k1", -3))
	m = b.op("Mul", "m2", nil, m, b.scalar("k2", 0.25))
	b.op("Neg", "out", nil, m)
	res := rewriteWith(b, optimize.Arith, []string{"x"}, []string{"out", "add2"})
	ops := fusedOps(res)
	if got := res.Counts[optimize.Arith]; got != 3 {
		t.Errorf("%d chains, want 3 (add0..add2, add3..add4, m0..m2)", got)
	}
	if n := ops["m2"]; n == nil || n.Inputs[0].Node.Name != "add4" || n.Inputs[1].Node.Op != "Const" {
		t.Errorf("m2 should read add4 and one Const")
	} else if v, err := tensor.FromProto(n.Inputs[1].Node.Attrs["value"].GetTensor()); err != nil || v.F32()[0] != -1.5 {
		t.Errorf("m2's constant %v (%v), want -1.5", v, err)
	}
	if n := ops["add4"]; n == nil || n.Inputs[0].Node.Name != "add2" {
		t.Errorf("add2 is fetched: the second chain must start from it")
	}
	fusiontest.Compare(t, b.g, feedX(b, 3), []string{"out", "add2"}, 1e-6)
}

// TestDeps: nodes only a NoOp target waits for, which compute a value
// nobody reads, are not run; a stateful one still is.
func TestDeps(t *testing.T) {
	b := newGB(t)
	x := b.placeholder("x", 2)
	var names []string
	for i := range 4 {
		n := "w" + string(rune('0'+i))
		b.op("AddV2", n, nil, x, b.scalar(n+"/c", float32(i)))
		names = append(names, n)
	}
	shape := b.op("Const", "shape", map[string]*tfpb.AttrValue{"dtype": graph.AttrType(tensor.Int32), "value": graph.AttrTensor(int32s(2))})
	b.op("RandomUniform", "rnd", map[string]*tfpb.AttrValue{"dtype": graph.AttrType(tensor.Float)}, shape)
	b.noop("target", append(names, "rnd")...)
	res := rewriteWith(b, optimize.Deps, []string{"x"}, nil, "target")
	tg := res.Targets[0]
	if len(tg.Controls) != 1 || tg.Controls[0].Name != "rnd" {
		t.Errorf("target's control inputs: %v, want [rnd]", tg.Controls)
	}
	// Fetched, a node keeps its place.
	res = rewriteWith(b, optimize.Deps, []string{"x"}, []string{"w1"}, "target")
	if got := len(res.Targets[0].Controls); got != 2 {
		t.Errorf("%d control inputs, want 2 (w1 fetched, rnd)", got)
	}
}

// TestCSE: equal pure nodes are computed once; observed or stateful ones
// are not merged.
func TestCSE(t *testing.T) {
	b := newGB(t)
	x := b.placeholder("x", 3)
	a1 := b.op("Mul", "a1", nil, x, b.scalar("c1", 2))
	a2 := b.op("Mul", "a2", nil, x, b.scalar("c2", 2)) // equal Consts merge first
	e1 := b.op("Exp", "e1", nil, a1)
	e2 := b.op("Exp", "e2", nil, a2)
	b.op("AddV2", "sum", nil, e1, e2)
	res := rewriteWith(b, optimize.CSE, []string{"x"}, []string{"sum"})
	s := fusedOps(res)["sum"]
	if s.Inputs[0] != s.Inputs[1] {
		t.Errorf("sum reads %v and %v, want one node twice", s.Inputs[0].Node.Name, s.Inputs[1].Node.Name)
	}
	if got := res.Counts[optimize.CSE]; got != 3 {
		t.Errorf("%d merges, want 3 (c2, a2, e2)", got)
	}
	res = rewriteWith(b, optimize.CSE, []string{"x"}, []string{"sum", "e2"})
	if s := fusedOps(res)["sum"]; s.Inputs[1].Node.Name != "e2" {
		t.Errorf("fetched e2 must stay itself")
	}
	fusiontest.Compare(t, b.g, feedX(b, 3), []string{"sum", "e2"}, 0)
}

// TestAllPassesOnFieldGraphs: every pass together against none on the
// bench's scalar chain and wide graphs, as TF's default config rewrites
// them: the chain of 1000 adds becomes one node, the wide graph's 1000
// unread adds are not run.
func TestAllPassesOnChainAndWide(t *testing.T) {
	b := newGB(t)
	x := b.placeholder("x")
	y := x
	for i := range 1000 {
		y = b.op("AddV2", "chain/"+itoa(i), nil, y, b.scalar("chain/c"+itoa(i), 1))
	}
	var wide []string
	for i := range 1000 {
		n := "wide/" + itoa(i)
		b.op("AddV2", n, nil, x, b.scalar(n+"/c", float32(i)))
		wide = append(wide, n)
	}
	b.noop("wide/out", wide...)
	res := rewriteWith(b, optimize.All, []string{"x"}, []string{y.Node.Name}, "wide/out")
	if n := len(fusedOps(res)); n != 4 {
		t.Errorf("%d nodes left, want 4 (x, the chain's one add and its Const, the NoOp)", n)
	}
	fusiontest.Compare(t, b.g, map[string]*tensor.Tensor{"x": fusiontest.Random(b.r, tensor.Float, nil)}, []string{y.Node.Name}, 1e-6)
}

func itoa(i int) string {
	s := ""
	for {
		s = string(rune('0'+i%10)) + s
		if i /= 10; i == 0 {
			return s
		}
	}
}
