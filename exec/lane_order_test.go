package exec

import (
	"fmt"
	"math/rand"
	"slices"
	"testing"

	"mstream/graph"
)

// TestLaneOrder: the lanes' order is topological for random plans and
// assignments, and a group launches its nodes that wait for no other
// group before one that does, in the plan's order otherwise: over two
// towers on two groups joined on the first, the first group's node that
// needs only its own tower goes before the join's wait.
func TestLaneOrder(t *testing.T) {
	r := rand.New(rand.NewSource(21))
	for it := 0; it < 20; it++ {
		rp := emuPlan(t, r, 3, 40)
		p := rp.plan
		assign := make([]int, len(p.nodes))
		for i := range assign {
			assign[i] = r.Intn(3)
		}
		checkLaneOrder(t, p, assign, it)
	}

	// b (group 0) needs a (group 1); c (group 0) needs only x: the
	// plan's order has b first, group 0's lane launches c first.
	x, y := node("x", "ExecTestGWide", 0), node("y", "ExecTestGWide", 0)
	a := node("a", "ExecTestGWide", 1, y)
	b := node("b", "ExecTestGWide", 2, x, a)
	c := node("c", "ExecTestGWide", 3, x)
	join := node("join", "ExecTestGWide", 4, b, c)
	p, err := build(nil, []graph.Output{{Node: x}, {Node: y}}, []graph.Output{{Node: join}}, nil, Placement{GPUs: 1})
	if err != nil {
		t.Fatal(err)
	}
	name := func(order []int, g func(int) int) []string {
		var out []string
		for _, i := range order {
			if g(i) == 0 {
				out = append(out, p.nodes[i].node.Name)
			}
		}
		return out
	}
	group := func(i int) int {
		if p.nodes[i].node.Name == "a" {
			return 1
		}
		return 0
	}
	if got := name(p.topo, group); !slices.Equal(got, []string{"b", "c", "join"}) {
		t.Fatalf("the plan's order on group 0 is %v, not b, c, join: the case tests nothing", got)
	}
	if got := name(p.laneOrder(group), group); !slices.Equal(got, []string{"c", "b", "join"}) {
		t.Errorf("group 0's lane launches %v, want c, b, join", got)
	}
}

// checkLaneOrder fails t unless the lanes' order of plan number it
// under assign has every node once, after its predecessors.
func checkLaneOrder(t *testing.T, p *Plan, assign []int, it int) {
	t.Helper()
	order := p.laneOrder(func(i int) int { return assign[i] })
	if len(order) != len(p.topo) {
		t.Fatalf("plan %d: %d nodes in the lanes' order, %d in the plan", it, len(order), len(p.topo))
	}
	pos := make([]int, len(p.nodes))
	for k, i := range order {
		pos[i] = k
	}
	for _, i := range order {
		for _, pr := range p.nodes[i].preds {
			if pos[pr] > pos[i] {
				t.Fatalf("plan %d: node %s goes before its predecessor %s", it, p.nodes[i].node.Name, p.nodes[pr].node.Name)
			}
		}
	}
}

// mixedPlan is a random DAG over nf scalar feeds: device nodes
// (ExecTestGAdd), constants and, with host, host nodes (ExecTestAdd),
// about one in four with a control edge from an earlier node (so
// constants hang off others, as an inlined body's do), placed as on one
// GPU.
func mixedPlan(t testing.TB, r *rand.Rand, nf, nn int, host bool) *Plan {
	var all, nodes []*graph.Node
	var fo, fetch []graph.Output
	for i := 0; i < nf; i++ {
		f := node(fmt.Sprint("feed", i), "ExecTestGAdd", 0)
		all = append(all, f)
		fo = append(fo, out(f))
	}
	for i := 0; i < nn; i++ {
		var n *graph.Node
		switch k := r.Intn(10); {
		case k == 0:
			n = constNode(fmt.Sprint("k", i))
		case k <= 2 && host:
			n = node(fmt.Sprint("h", i), "ExecTestAdd", 1, all[r.Intn(len(all))])
		default:
			var ins []*graph.Node
			for k := 0; k < 1+r.Intn(3); k++ {
				ins = append(ins, all[r.Intn(len(all))])
			}
			n = node(fmt.Sprint("n", i), "ExecTestGAdd", float32(r.Intn(7)), ins...)
		}
		if len(nodes) > 0 && r.Intn(4) == 0 {
			n.Controls = []*graph.Node{nodes[r.Intn(len(nodes))]}
		}
		nodes = append(nodes, n)
		all = append(all, n)
	}
	for k := 0; k < 3; k++ {
		fetch = append(fetch, out(nodes[len(nodes)-1-r.Intn(min(5, nn))]))
	}
	p, err := build(nil, fo, fetch, nil, Placement{GPUs: 1})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestLaneOrderThroughConstants: the lanes' order is topological over a
// constant's control edges too. A constant is on no lane and its edges
// make no hop between groups, but it has the depth of what it runs
// after: before, it had depth 0 and went before its predecessors, and a
// reader of it after a hop (whose lane waits through it for them) went
// before them too, its wait for a point not yet laid out left out.
func TestLaneOrderThroughConstants(t *testing.T) {
	r := rand.New(rand.NewSource(23))
	for it := 0; it < 50; it++ {
		p := mixedPlan(t, r, 3, 40, it%2 == 0)
		assign := make([]int, len(p.nodes))
		for i := range assign {
			assign[i] = r.Intn(3)
		}
		checkLaneOrder(t, p, assign, it)
	}
}
