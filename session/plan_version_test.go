package session

import (
	"context"
	"errors"
	"testing"

	"mstream/exec"
	"mstream/graph"
	"mstream/tensor"
)

// TestOldVersionPlansEvicted: once the graph grows under a session (TF's C
// API picks up the new nodes at the next Run), the plans keyed to its
// older versions, which no Run looks up again, are dropped and closed
// when the first plan of the newer version is made, not kept until the
// cache of maxCachedPlans starts over; plans of the newest version stay.
func TestOldVersionPlansEvicted(t *testing.T) {
	b := newGB(t)
	x := b.placeholder("x", tensor.PartialShape{})
	y := b.op("Neg", "y", map[string]any{"T": tensor.Float}, x)
	z := b.op("Abs", "z", map[string]any{"T": tensor.Float}, x)
	s, err := New(b.g, &Options{Env: hostEnv(nil)})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	in := tensor.FromF32(tensor.Shape{}, []float32{-2.5})
	run := func(out graph.Output, want float32) *exec.Plan {
		t.Helper()
		got, _, err := s.Run(nil, []Feed{{Output: x, Tensor: in}}, []graph.Output{out}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got[0].F32()[0] != want {
			t.Fatalf("%s = %v, want %v", out.Node.Name, got[0].F32()[0], want)
		}
		p, err := s.planFor([]graph.Output{x}, []graph.Output{out}, nil)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	cached := func(want int) {
		t.Helper()
		if n := s.Stats().CachedPlans; n != want {
			t.Fatalf("%d plans cached, want %d", n, want)
		}
	}
	closed := func(p *exec.Plan) bool {
		_, _, err := s.execute(context.Background(), p, []*tensor.Tensor{in}, exec.Options{}, nil)
		return errors.Is(err, exec.ErrClosed)
	}
	py, pz := run(y, 2.5), run(z, 2.5)
	cached(2) // one version, two signatures
	if closed(py) || closed(pz) {
		t.Fatal("a plan of the graph's version is closed")
	}
	w := b.op("Square", "w", map[string]any{"T": tensor.Float}, x) // the graph grows
	pw := run(w, 6.25)
	cached(1)
	if !closed(py) || !closed(pz) {
		t.Fatal("the plans of the older version are still open")
	}
	if p := run(y, 2.5); p == py {
		t.Fatal("y's old plan served a Run after the graph grew")
	}
	cached(2)
	if closed(pw) {
		t.Fatal("the newest version's plan was closed")
	}
}
