package exec

import (
	"fmt"
	"math"
	"math/rand"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"mstream/graph"
	"mstream/groups"
	"mstream/kernels"
	"mstream/tensor"
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

// planMix is what mixedPlan's nodes run on.
type planMix int

const (
	deviceNodes     planMix = iota // device nodes and constants, placed as on one GPU
	withHostKernels                // and host kernels (ExecTestAdd) among them
	hostNodes                      // host nodes and constants, placed on no GPU
)

// mixedPlan is a random DAG over nf scalar feeds: device nodes
// (ExecTestGAdd) or, for hostNodes, host nodes (ExecTestAdd), with
// constants and, withHostKernels, host kernels among them; about one
// node in three has control edges from earlier nodes (so constants hang
// off others and off constants, as an inlined body's do). It fetches
// three of the last nodes (constants too) and the first feed.
func mixedPlan(t testing.TB, r *rand.Rand, nf, nn int, mix planMix) *Plan {
	var all, nodes []*graph.Node
	var fo, fetch []graph.Output
	add, pl := "ExecTestGAdd", Placement{GPUs: 1}
	if mix == hostNodes {
		add, pl = "ExecTestAdd", Placement{}
	}
	for i := 0; i < nf; i++ {
		f := node(fmt.Sprint("feed", i), add, 0)
		all = append(all, f)
		fo = append(fo, out(f))
	}
	for i := 0; i < nn; i++ {
		var n *graph.Node
		switch k := r.Intn(10); {
		case k <= 1:
			n = constNode(fmt.Sprint("k", i))
		case k <= 3 && mix == withHostKernels:
			n = node(fmt.Sprint("h", i), "ExecTestAdd", 1, all[r.Intn(len(all))])
		default:
			var ins []*graph.Node
			for k := 0; k < 1+r.Intn(3); k++ {
				ins = append(ins, all[r.Intn(len(all))])
			}
			n = node(fmt.Sprint("n", i), add, float32(r.Intn(7)), ins...)
		}
		if len(nodes) > 0 && r.Intn(3) == 0 {
			for c := 0; c < 1+r.Intn(2); c++ {
				n.Controls = append(n.Controls, nodes[r.Intn(len(nodes))])
			}
		}
		nodes = append(nodes, n)
		all = append(all, n)
	}
	for k := 0; k < 3; k++ {
		fetch = append(fetch, out(nodes[len(nodes)-1-r.Intn(min(8, nn))]))
	}
	fetch = append(fetch, fo[0])
	p, err := build(nil, fo, fetch, nil, pl)
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
		p := mixedPlan(t, r, 3, 40, planMix(it%2))
		assign := make([]int, len(p.nodes))
		for i := range assign {
			assign[i] = r.Intn(3)
		}
		checkLaneOrder(t, p, assign, it)
	}
}

// TestLaneOrderSameOnHost: the host streams' order of a plan is the
// lanes' of the same graph placed on a GPU, under the same assignment: a
// constant's edges make no hop there either. Before, laneOrder told a
// constant by its placement (onConst), which host plans never have, and
// counted its edges as hops between groups.
func TestLaneOrderSameOnHost(t *testing.T) {
	differ := 0
	for it := 0; it < 40; it++ {
		seed := int64(100 + it)
		dev := mixedPlan(t, rand.New(rand.NewSource(seed)), 3, 40, deviceNodes)
		host := mixedPlan(t, rand.New(rand.NewSource(seed)), 3, 40, hostNodes)
		r := rand.New(rand.NewSource(seed))
		on := map[string]int{}
		for i := range dev.nodes {
			on[dev.nodes[i].node.Name] = r.Intn(3)
		}
		names := func(p *Plan) []string {
			assign := assignNames(p, on)
			var out []string
			for _, i := range p.laneOrder(func(i int) int { return assign[i] }) {
				out = append(out, p.nodes[i].node.Name)
			}
			return out
		}
		if d, h := names(dev), names(host); !slices.Equal(d, h) {
			if differ++; differ <= 3 {
				t.Errorf("plan %d: the lanes' order %v, the host streams' %v", it, d, h)
			}
		}
	}
}

// hostSlot is the host "variable" of the ordering tests on host
// streams, as slotBits is the device's: ExecTestStore writes it when its
// item runs, ExecTestLoad reads it.
var hostSlot atomic.Uint32

func init() {
	kernels.Register(kernels.Def{Op: "ExecTestStore", Device: kernels.CPU, Factory: func(n *graph.Node) (kernels.Kernel, error) {
		c := float32(n.Attrs["c"].GetF())
		return kernels.KernelFunc(func(ctx *kernels.Context) error {
			if err := addScalars(ctx, c); err != nil {
				return err
			}
			hostSlot.Store(math.Float32bits(ctx.Outputs[0].F32()[0]))
			return nil
		}), nil
	}})
	kernels.Register(kernels.Def{Op: "ExecTestLoad", Device: kernels.CPU, Factory: func(n *graph.Node) (kernels.Kernel, error) {
		return kernels.KernelFunc(func(ctx *kernels.Context) error {
			t, err := ctx.Allocate(0, nil)
			if err != nil {
				return err
			}
			t.F32()[0] = math.Float32frombits(hostSlot.Load())
			return nil
		}), nil
	}})
}

// TestOrderThroughConstantAfterHop: a load on the home group reads a
// constant that has a control edge from a store on another group, which
// follows a node of the home group (a hop: the store is deeper in the
// lanes' order than the load would be without the constant). The load
// must read the stored value, on the device's lanes and on host streams,
// with wait reduction on and off, over jittered streams. Before, the
// lanes put the constant and the load before the store and left the
// wait out, and host streams ignored a constant's control edges.
func TestOrderThroughConstantAfterHop(t *testing.T) {
	for _, dev := range []bool{true, false} {
		for _, n := range []int{2, 3} {
			for _, reduce := range []bool{true, false} {
				t.Run(fmt.Sprintf("device=%v/groups=%d/reduce=%v", dev, n, reduce), func(t *testing.T) {
					add, store, load, pl := "ExecTestAdd", "ExecTestStore", "ExecTestLoad", Placement{}
					if dev {
						add, store, load, pl = "ExecTestGAdd", "ExecTestGStore", "ExecTestGLoad", Placement{GPUs: 1}
					}
					x, nf := node("x", add, 0), node("n", add, 0)
					a := node("a", add, 1, x)
					s := node("store", store, 3, a)
					k := constNode("store_const")
					k.Controls = []*graph.Node{s}
					y := node("y_load", load, 0)
					y.Inputs = []graph.Output{{Node: k}}
					y.InTypes = []tensor.DType{tensor.Float}
					p, err := build(nil, []graph.Output{{Node: x}, {Node: nf}}, []graph.Output{{Node: s}, {Node: y}}, nil, pl)
					if err != nil {
						t.Fatal(err)
					}
					assign := make([]int, len(p.nodes))
					for i := range p.nodes {
						if nm := p.nodes[i].node.Name; strings.HasPrefix(nm, "store") {
							assign[i] = 1
						} else if nm == "y_load" {
							assign[i] = 2 * (n - 2) // the home group of two, group 2 of three
						}
					}
					var set *groups.Set
					if dev {
						set = emuSet(t, n, false, 0)
					} else {
						set = testSet(t, n, false, time.Millisecond, false)
					}
					sr := &Runtime{Streams: true, Groups: set.Groups(), Assign: assign, ReduceWaits: reduce, Holder: &set.Holder}
					if dev {
						sr.Jitter = time.Millisecond
					}
					if bad := storeLoadSteps(t, p, sr, 200); bad > 0 {
						t.Errorf("%d of %d steps: the load did not follow the store the constant orders it after", bad, storeLoadRuns)
					}
				})
			}
		}
	}
}
