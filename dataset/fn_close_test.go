package dataset_test

import (
	"math/rand"
	"strings"
	"testing"

	"mstream/dataset"
	"mstream/graph"
	"mstream/proto/tfpb"
	"mstream/session"
	"mstream/tensor"
)

// TestIteratorOutlivesItsPlan: a filter's function plan belongs to the
// FilterDataset kernel of MakeIterator's plan, but the pass it made is the
// session's iterator. When the graph grows, the session drops the plans of
// the older version, MakeIterator's among them; the pass goes on calling
// the function (its iterator holds the function's plan), and that plan
// closes only when the pass does: a second MakeIterator replaces it, and
// the session's Close closes the last.
func TestIteratorOutlivesItsPlan(t *testing.T) {
	dir := casesDir(t)
	r := rand.New(rand.NewSource(7))
	x := tensor.New(tensor.Float, tensor.Shape{13, 3})
	for i := range x.F32() {
		x.F32()[i] = float32(r.NormFloat64())
	}
	y := tensor.New(tensor.Int32, tensor.Shape{13})
	for i := range y.I32() {
		y.I32()[i] = int32(r.Intn(11) - 5)
	}
	// pass runs MakeIterator then IteratorGetNext to the end, calling grow
	// after the first element; an element is its row of x and its y.
	pass := func(s *session.Session, g *graph.Graph, grow func()) [][]float32 {
		t.Helper()
		feeds := []session.Feed{{Output: g.Lookup("x").Output(0), Tensor: x}, {Output: g.Lookup("y").Output(0), Tensor: y}}
		if _, _, err := s.Run(nil, feeds, nil, []*graph.Node{g.Lookup("MakeIterator")}); err != nil {
			t.Fatalf("MakeIterator: %v", err)
		}
		var rows [][]float32
		for {
			next := g.Lookup("IteratorGetNext")
			out, _, err := s.Run(nil, nil, []graph.Output{next.Output(0), next.Output(1)}, nil)
			if err != nil {
				if len(rows) == 0 {
					t.Fatalf("IteratorGetNext: %v", err)
				}
				if want := "End of sequence"; !strings.Contains(err.Error(), want) {
					t.Fatalf("IteratorGetNext after %d elements: %v, want %q", len(rows), err, want)
				}
				return rows
			}
			rows = append(rows, append(append([]float32(nil), out[0].F32()...), float32(out[1].I32()[0])))
			if len(rows) == 1 && grow != nil {
				grow()
			}
		}
	}
	newSession := func() (*session.Session, *graph.Graph) {
		g := loadCase(t, dir, "slices_filter")
		s, err := session.New(g, &session.Options{Env: map[string]string{}})
		if err != nil {
			t.Fatal(err)
		}
		return s, g
	}
	ref, rg := newSession()
	want := pass(ref, rg, nil)
	if len(want) < 2 {
		t.Fatalf("the filter kept %d of 13 rows: too few to test", len(want))
	}
	ref.Close()

	live := dataset.LiveFuncs()
	s, g := newSession()
	defer s.Close()
	got := pass(s, g, func() {
		b := g.NewBuilder("NoOp", "grown")
		if _, err := b.Finish(); err != nil {
			t.Fatal(err)
		}
	})
	if len(got) != len(want) {
		t.Fatalf("%d elements after the graph grew, %d without", len(got), len(want))
	}
	for i := range want {
		for j := range want[i] {
			if got[i][j] != want[i][j] {
				t.Fatalf("element %d: %v after the graph grew, %v without", i, got[i], want[i])
			}
		}
	}
	if n := dataset.LiveFuncs(); n != live+1 {
		t.Fatalf("after the pass: %d function plans open, want %d (the pass's)", n, live+1)
	}
	pass(s, g, nil) // replaces the pass: its function's plan closes
	if n := dataset.LiveFuncs(); n != live+1 {
		t.Fatalf("after a second pass: %d function plans open, want %d", n, live+1)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if n := dataset.LiveFuncs(); n != live {
		t.Fatalf("session closed: %d function plans open, %d before it opened", n, live)
	}
}

// TestFailedBuildClosesFunctions: a plan whose building fails after some
// of its dataset kernels built their functions' plans (a second filter
// names a function the library lacks) closes those plans: nothing else
// would.
func TestFailedBuildClosesFunctions(t *testing.T) {
	g := loadCase(t, casesDir(t), "slices_filter")
	good := g.Lookup("FilterDataset")
	b := g.NewBuilder("FilterDataset", "bad")
	b.AddInput(good.Inputs[0])
	b.AddInputList(nil) // other_arguments
	for k, v := range good.Attrs {
		if k == "predicate" {
			v = &tfpb.AttrValue{Value: &tfpb.AttrValue_Func{Func: &tfpb.NameAttrList{Name: "no_such_function"}}}
		}
		b.SetAttr(k, v)
	}
	bad, err := b.Finish()
	if err != nil {
		t.Fatal(err)
	}
	live := dataset.LiveFuncs()
	s, err := session.New(g, &session.Options{Env: map[string]string{}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	x, y := tensor.New(tensor.Float, tensor.Shape{2, 3}), tensor.New(tensor.Int32, tensor.Shape{2})
	feeds := []session.Feed{{Output: g.Lookup("x").Output(0), Tensor: x}, {Output: g.Lookup("y").Output(0), Tensor: y}}
	_, _, err = s.Run(nil, feeds, nil, []*graph.Node{g.Lookup("MakeIterator"), bad})
	if err == nil || !strings.Contains(err.Error(), "no_such_function") {
		t.Fatalf("Run with a filter of a missing function: %v, want an error naming it", err)
	}
	if n := dataset.LiveFuncs(); n != live {
		t.Fatalf("the plan failed: %d function plans open, %d before", n, live)
	}
}
