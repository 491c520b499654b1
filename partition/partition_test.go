package partition

import (
	"fmt"
	"math/rand"
	"strings"
	"testing"
)

// dag builds a DAG from "a->b->c" paths over node names, with the given
// costs (default Light): nodes numbered in order of first appearance, Topo
// Kahn's order (lowest number first).
type dag struct {
	names []string
	index map[string]int
	d     DAG
}

func build(t *testing.T, edges string, costs map[string]float64) *dag {
	t.Helper()
	g := &dag{index: map[string]int{}}
	node := func(name string) int {
		if i, ok := g.index[name]; ok {
			return i
		}
		g.index[name] = len(g.names)
		g.names = append(g.names, name)
		g.d.Preds = append(g.d.Preds, nil)
		c := Light
		if v, ok := costs[name]; ok {
			c = v
		}
		g.d.Cost = append(g.d.Cost, c)
		return len(g.names) - 1
	}
	for _, e := range strings.Fields(edges) {
		parts := strings.Split(e, "->")
		for k := 0; k+1 < len(parts); k++ {
			a, b := node(parts[k]), node(parts[k+1])
			g.d.Preds[b] = append(g.d.Preds[b], a)
		}
	}
	done := make([]bool, len(g.names))
	for len(g.d.Topo) < len(g.names) {
		progress := false
		for i := range g.names {
			ok := !done[i]
			for _, p := range g.d.Preds[i] {
				ok = ok && done[p]
			}
			if ok {
				done[i], progress = true, true
				g.d.Topo = append(g.d.Topo, i)
				break
			}
		}
		if !progress {
			t.Fatalf("%q has a cycle", edges)
		}
	}
	return g
}

// render prints the assignment as "name:group ..." in node order.
func (g *dag) render(a []int) string {
	var b strings.Builder
	for i, name := range g.names {
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "%s:%d", name, a[i])
	}
	return b.String()
}

func heavy(names ...string) map[string]float64 {
	m := map[string]float64{}
	for _, n := range names {
		m[n] = Heavy
	}
	return m
}

func TestAssignTable(t *testing.T) {
	for _, c := range []struct {
		name   string
		edges  string
		costs  map[string]float64
		groups int
		fixed  map[string]int
		want   string
	}{
		{"one group", "a->b->c x->y->c", nil, 1, nil, "a:0 b:0 c:0 x:0 y:0"},
		{"a chain stays on one group", "a->b->c->d->e", heavy("a", "b", "c", "d", "e"), 4, nil, "a:0 b:0 c:0 d:0 e:0"},
		// Two heavy arms of a diamond run side by side; the join goes with
		// the first arm, which it waits on no longer than on the other.
		{"heavy diamond", "s->l->j s->r->j", heavy("l", "r"), 2, nil, "s:0 l:0 j:0 r:1"},
		// Light arms are not worth a wait.
		{"light diamond", "s->l->j s->r->j", nil, 2, nil, "s:0 l:0 j:0 r:0"},
		// Four towers joined at the top: a tower per group; the sources
		// (the towers' inputs) follow their towers.
		{"four towers, four groups", "i0->a0->b0->j i1->a1->b1->j i2->a2->b2->j i3->a3->b3->j",
			heavy("a0", "b0", "a1", "b1", "a2", "b2", "a3", "b3"), 4, nil,
			"i0:0 a0:0 b0:0 j:0 i1:1 a1:1 b1:1 i2:2 a2:2 b2:2 i3:3 a3:3 b3:3"},
		{"four towers, two groups", "i0->a0->b0->j i1->a1->b1->j i2->a2->b2->j i3->a3->b3->j",
			heavy("a0", "b0", "a1", "b1", "a2", "b2", "a3", "b3"), 2, nil,
			"i0:0 a0:0 b0:0 j:0 i1:1 a1:1 b1:1 i2:0 a2:0 b2:0 i3:1 a3:1 b3:1"},
		// Forward towers, a joint head, then each tower's backward pass
		// fans out again from the head: the gradients spread too.
		{"towers forward and backward", "x0->f0->h x1->f1->h h->g0->u0 h->g1->u1",
			heavy("f0", "f1", "h", "g0", "g1", "u0", "u1"), 2, nil,
			"x0:0 f0:0 h:0 x1:1 f1:1 g0:0 u0:0 g1:1 u1:1"},
		// A longer branch is the critical path and keeps the first group;
		// the short one goes beside it.
		{"critical path first", "s->a->b->c->j s->d->j", heavy("a", "b", "c", "d"), 2, nil,
			"s:0 a:0 b:0 c:0 j:0 d:1"},
		// A fixed node keeps its group; the rest is planned around it.
		{"fixed", "i0->a0->j i1->a1->j", heavy("a0", "a1"), 2, map[string]int{"a0": 1},
			"i0:1 a0:1 j:1 i1:0 a1:0"},
	} {
		t.Run(c.name, func(t *testing.T) {
			g := build(t, c.edges, c.costs)
			if c.fixed != nil {
				g.d.Fixed = make([]int, len(g.names))
				for i := range g.d.Fixed {
					g.d.Fixed[i] = -1
				}
				for name, grp := range c.fixed {
					g.d.Fixed[g.index[name]] = grp
				}
			}
			if got := g.render(Assign(g.d, c.groups)); got != c.want {
				t.Errorf("got  %s\nwant %s", got, c.want)
			}
		})
	}
}

// TestAssignRandom checks the invariants on random DAGs: every group in
// range, fixed nodes kept, the same answer twice.
func TestAssignRandom(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	for iter := 0; iter < 200; iter++ {
		n := 1 + rng.Intn(60)
		d := DAG{Preds: make([][]int, n), Cost: make([]float64, n), Fixed: make([]int, n)}
		for i := 0; i < n; i++ {
			d.Topo = append(d.Topo, i)
			d.Cost[i] = []float64{Light, Heavy}[rng.Intn(2)]
			d.Fixed[i] = -1
			for j := 0; j < i; j++ {
				if rng.Intn(8) == 0 {
					d.Preds[i] = append(d.Preds[i], j)
				}
			}
		}
		groups := 1 + rng.Intn(5)
		for i := range d.Fixed {
			if rng.Intn(10) == 0 {
				d.Fixed[i] = rng.Intn(groups)
			}
		}
		a, b := Assign(d, groups), Assign(d, groups)
		for i := range a {
			if a[i] != b[i] {
				t.Fatalf("iteration %d: two runs differ at node %d", iter, i)
			}
			if a[i] < 0 || a[i] >= groups {
				t.Fatalf("iteration %d: node %d on group %d of %d", iter, i, a[i], groups)
			}
			if d.Fixed[i] >= 0 && a[i] != d.Fixed[i] {
				t.Fatalf("iteration %d: fixed node %d moved from %d to %d", iter, i, d.Fixed[i], a[i])
			}
		}
	}
}

func TestCost(t *testing.T) {
	for op, want := range map[string]float64{"MatMul": Heavy, "Conv2DBackpropFilter": Heavy,
		"ResourceSparseApplyAdagrad": Heavy, "Identity": Light, "Const": Light, "Relu": Light} {
		if got := Cost(op); got != want {
			t.Errorf("Cost(%s) = %v, want %v", op, got, want)
		}
	}
}
