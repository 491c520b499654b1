package exec

import (
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
