package exec

import (
	"context"
	"fmt"
	"math/rand"
	"slices"
	"testing"
	"time"

	"mstream/groups"
	"mstream/tensor"
)

// TestClocksCovers checks the node-level GPU step's wait reduction (which
// runs without a GPU): after random ticks and waits on a few streams,
// covers(a, pt) must say exactly whether a chain of waits orders stream a
// after point pt, as a brute-force walk over the history finds.
func TestClocksCovers(t *testing.T) {
	type ev struct {
		wait bool
		a, b int // tick on a; or a waits for b
	}
	r := rand.New(rand.NewSource(5))
	for trial := 0; trial < 200; trial++ {
		n := 2 + r.Intn(3)
		c := newClocks(n)
		var hist []ev
		seqAt := func(a, t int) int { // ticks on a among the first t events
			k := 0
			for _, e := range hist[:t] {
				if !e.wait && e.a == a {
					k++
				}
			}
			return k
		}
		// follows says whether stream a, after the first t events, is
		// ordered after pt.
		var follows func(a, t int, pt point) bool
		follows = func(a, t int, pt point) bool {
			if pt.stream == a && seqAt(a, t) >= pt.seq {
				return true
			}
			for i := t - 1; i >= 0; i-- {
				if e := hist[i]; e.wait && e.a == a && follows(e.b, i, pt) {
					return true
				}
			}
			return false
		}
		for step := 0; step < 12; step++ {
			if r.Intn(2) == 0 {
				a := r.Intn(n)
				if pt := c.tick(a); pt.stream != a || pt.seq != seqAt(a, len(hist))+1 {
					t.Fatalf("tick(%d) = %+v", a, pt)
				}
				hist = append(hist, ev{a: a})
			} else {
				a, b := r.Intn(n), r.Intn(n)
				if a == b {
					continue
				}
				c.waited(a, b)
				hist = append(hist, ev{wait: true, a: a, b: b})
			}
			for a := 0; a < n; a++ {
				if !c.covers(a, point{}) {
					t.Fatalf("stream %d does not cover the empty point", a)
				}
				for b := 0; b < n; b++ {
					for s := 1; s <= c.seq[b]; s++ {
						pt := point{b, s}
						if got, want := c.covers(a, pt), follows(a, len(hist), pt); got != want {
							t.Fatalf("trial %d, history %+v: covers(%d, %+v) = %v, want %v", trial, hist, a, pt, got, want)
						}
					}
				}
			}
		}
	}
}

// TestHostDeviceLayoutsAgree: the host streams' layout and the device
// lanes' of the same plan and assignment order each group's nodes alike
// and keep the same waits between nodes of different groups, with wait
// reduction on and off, over random device plans with constants and
// control edges (one walk, layWaits, over one order, laneOrder). Their
// copies differ (feeds and fetches), so those waits are not compared.
func TestHostDeviceLayoutsAgree(t *testing.T) {
	r := rand.New(rand.NewSource(29))
	cross := 0
	for it := 0; it < 40; it++ {
		p := mixedPlan(t, r, 3, 40, deviceNodes)
		n := 1 + it%4
		set := emuSet(t, n, false, 0)
		assign := make([]int, len(p.nodes))
		for i := range assign {
			assign[i] = r.Intn(n)
		}
		for _, reduce := range []bool{true, false} {
			t.Run(fmt.Sprintf("plan=%d/groups=%d/reduce=%v", it, n, reduce), func(t *testing.T) {
				sr := &Runtime{Streams: true, Groups: set.Groups(), Assign: assign, ReduceWaits: reduce, Holder: &set.Holder}
				p.lanes.Store(nil)
				ls := p.laneSched(sr)
				lay := p.layOut(sr, scalars([]float32{1, 2, 3}))
				host := make([][]int32, len(p.nodes)) // per node, the nodes it waits for
				order := make([][]int32, n)
				for q := range lay.ops {
					op := &lay.ops[q]
					if op.kind != opNode {
						continue
					}
					if op.stream >= 0 {
						order[op.group] = append(order[op.group], int32(op.idx))
					}
					for _, w := range op.waiters {
						if c := &lay.ops[w]; c.kind == opNode {
							host[c.idx] = append(host[c.idx], int32(op.idx))
						}
					}
				}
				for k := range order {
					if !slices.Equal(order[k], ls.nodes[k]) {
						t.Errorf("group %d: host streams run %v, the lanes launch %v", k, order[k], ls.nodes[k])
					}
				}
				waits := 0
				for i := range p.nodes {
					dev := slices.DeleteFunc(slices.Clone(ls.waits[i]), func(pr int32) bool { return pr < 0 })
					slices.Sort(dev)
					slices.Sort(host[i])
					if !slices.Equal(dev, host[i]) {
						t.Errorf("node %s waits for %v on the device, %v on host streams", p.nodes[i].node.Name, dev, host[i])
					}
					waits += len(dev)
				}
				cross += waits
			})
		}
	}
	if cross == 0 {
		t.Error("no wait between groups: the test tests nothing")
	}
}

// reachAll returns reach[a][b]: b is ordered after a (or is a) in the
// graph of adj.
func reachAll(adj [][]int) [][]bool {
	reach := make([][]bool, len(adj))
	for a := range reach {
		seen := make([]bool, len(adj))
		stack := []int{a}
		seen[a] = true
		for len(stack) > 0 {
			x := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			for _, y := range adj[x] {
				if !seen[y] {
					seen[y] = true
					stack = append(stack, y)
				}
			}
		}
		reach[a] = seen
	}
	return reach
}

// checkHostLayout checks a host streams' layout: every node op runs
// after each producer op (data or control, through constants, which are
// on no stream) and each feed copy it reads, every fetch after its
// producer, and the step's end (the join ops) after every op on a
// stream. It returns the problems found.
func checkHostLayout(p *Plan, lay *streamLayout) []string {
	var bad []string
	nodeOp := make([]int, len(p.nodes))
	feedOp := make([]int, len(p.feeds))
	for q := range lay.ops {
		switch op := &lay.ops[q]; op.kind {
		case opNode:
			nodeOp[op.idx] = q
		case opFeed:
			feedOp[op.idx] = q
		}
	}
	reach := reachAll(layoutEdges(lay))
	// need adds the stream op that reading or following node i (or, for
	// a constant, what it runs after) waits for.
	var need func(i int, acc map[int]bool)
	need = func(i int, acc map[int]bool) {
		if q := nodeOp[i]; lay.ops[q].stream >= 0 {
			acc[q] = true
			return
		}
		for _, pr := range p.nodes[i].preds {
			need(pr, acc)
		}
	}
	feed := func(k int, acc map[int]bool) {
		if q := feedOp[k]; lay.ops[q].stream >= 0 {
			acc[q] = true
		}
	}
	for q := range lay.ops {
		op := &lay.ops[q]
		if op.stream < 0 {
			continue
		}
		deps := map[int]bool{}
		switch op.kind {
		case opNode:
			for _, pr := range p.nodes[op.idx].preds {
				need(pr, deps)
			}
			for _, r := range p.nodes[op.idx].inputs {
				if r.Node < 0 {
					feed(r.Index, deps)
				}
			}
		case opFetch:
			if f := p.fetches[op.idx]; f.Node < 0 {
				feed(f.Index, deps)
			} else {
				need(f.Node, deps)
			}
		}
		for d := range deps {
			if !reach[d][q] {
				bad = append(bad, fmt.Sprintf("op %d (%v %d) may run before op %d (%v %d), which it reads or follows", q, op.kind, op.idx, d, lay.ops[d].kind, lay.ops[d].idx))
			}
		}
		if !joined(lay, reach, q) {
			bad = append(bad, fmt.Sprintf("op %d (%v %d, stream %d) is followed by no join op: the step may end before it runs", q, op.kind, op.idx, op.stream))
		}
	}
	return bad
}

// layoutEdges is the layout's order as a graph: each op's edges to the
// next op of its stream and to the ops waiting for it.
func layoutEdges(lay *streamLayout) [][]int {
	adj := make([][]int, len(lay.ops))
	for q := range lay.ops {
		if op := &lay.ops[q]; op.next >= 0 {
			adj[q] = append(adj[q], op.next)
		}
		adj[q] = append(adj[q], lay.ops[q].waiters...)
	}
	return adj
}

// assignNames assigns each node of p named in on to its group, the rest
// to group 0.
func assignNames(p *Plan, on map[string]int) []int {
	assign := make([]int, len(p.nodes))
	for i := range p.nodes {
		assign[i] = on[p.nodes[i].node.Name]
	}
	return assign
}

// joined says whether a join op of lay follows op q.
func joined(lay *streamLayout, reach [][]bool, q int) bool {
	for j := range lay.ops {
		if lay.ops[j].join && reach[q][j] {
			return true
		}
	}
	return false
}

// checkLaneSched checks the lanes' schedule under group: the device
// order (each group's nodes in launch order, the feeds' copies first on
// the home group, a wait an edge from the producer's event) orders each
// device node after the device nodes it reads or follows on other
// groups (through host kernels and constants, which launch nothing), a
// host kernel after the device values it reads from other groups, and
// the home group's join after every group's last launch; on the host,
// each node awaits, before its launch, every node of another group it
// reads or follows (through constants), and each awaited node is
// published before its reader in the lanes' order. It returns the
// problems found.
func checkLaneSched(p *Plan, ls *laneSched, group func(int) int) []string {
	var bad []string
	n := len(p.nodes)
	F, J := n, n+1 // the feeds' copies, the join
	adj := make([][]int, n+2)
	pos := make([]int, n) // place in the lanes' order
	for q, i := range p.laneOrder(group) {
		pos[i] = q
	}
	for k, seq := range ls.nodes {
		prev := -1
		if k == 0 {
			prev = F
		}
		for _, i := range seq {
			if prev >= 0 {
				adj[prev] = append(adj[prev], int(i))
			}
			prev = int(i)
		}
		if k == 0 {
			adj[prev] = append(adj[prev], J)
		} else if slices.Contains(ls.join, k) {
			adj[prev] = append(adj[prev], J)
		}
	}
	for i, ws := range ls.waits {
		for _, pr := range ws {
			if pr < 0 {
				adj[F] = append(adj[F], i)
				if !ls.fed {
					bad = append(bad, fmt.Sprintf("%s waits for the feeds' copies, but no event is recorded after them", p.nodes[i].node.Name))
				}
				continue
			}
			adj[pr] = append(adj[pr], i)
			if p.nodes[pr].where != onGPU || !ls.rec[pr] {
				bad = append(bad, fmt.Sprintf("%s waits for %s, which records no event", p.nodes[i].node.Name, p.nodes[pr].node.Name))
			}
			if pos[pr] >= pos[i] {
				bad = append(bad, fmt.Sprintf("%s waits for %s, later in the lanes' order: a hang", p.nodes[i].node.Name, p.nodes[pr].node.Name))
			}
		}
	}
	reach := reachAll(adj)
	// behind adds to acc the nodes i runs after on the device (where
	// launch: those that launch there) or on the host (the others than
	// constants), through the rest.
	var behind func(i int, launch bool, acc map[int]bool)
	behind = func(i int, launch bool, acc map[int]bool) {
		for _, pr := range p.nodes[i].preds {
			if w := p.nodes[pr].where; w == onGPU || !launch && w != onConst {
				acc[pr] = true
			} else {
				behind(pr, launch, acc)
			}
		}
	}
	for k, seq := range ls.nodes {
		for _, i32 := range seq {
			i := int(i32)
			pn := &p.nodes[i]
			if group(i) != k {
				bad = append(bad, fmt.Sprintf("%s on lane %d, assigned %d", pn.node.Name, k, group(i)))
			}
			dev := map[int]bool{}
			if pn.where == onGPU {
				behind(i, true, dev)
				for j, r := range pn.inputs {
					if r.Node < 0 && p.feedDev[r.Index] {
						if wants, _ := pn.wantsDevice(j); wants {
							dev[F] = true
						}
					}
				}
			} else {
				for _, r := range pn.inputs {
					if r.Node >= 0 && p.nodes[r.Node].where == onGPU {
						dev[r.Node] = true
					}
				}
			}
			for d := range dev {
				if d < n && group(d) == k {
					continue // stream order (the lanes' order is topological)
				}
				if !reach[d][i] {
					name := "the feeds' copies"
					if d < n {
						name = p.nodes[d].node.Name
					}
					bad = append(bad, fmt.Sprintf("%s (group %d) is not ordered after %s on the device", pn.node.Name, k, name))
				}
			}
			host := map[int]bool{}
			behind(i, false, host)
			for d := range host {
				if group(d) == k {
					continue // the lane's own order
				}
				if !slices.Contains(pn.preds, d) && !slices.Contains(ls.awaits[i], int32(d)) {
					bad = append(bad, fmt.Sprintf("%s (group %d) does not await %s, which it follows through a constant", pn.node.Name, k, p.nodes[d].node.Name))
					continue
				}
				if !ls.pub[d] {
					bad = append(bad, fmt.Sprintf("%s awaits %s, which is never published: a hang", pn.node.Name, p.nodes[d].node.Name))
				}
				if pos[d] >= pos[i] {
					bad = append(bad, fmt.Sprintf("%s awaits %s, later in the lanes' order: a hang", pn.node.Name, p.nodes[d].node.Name))
				}
			}
		}
		if last := lastLaunch(p, seq); last >= 0 && !reach[last][J] {
			bad = append(bad, fmt.Sprintf("group %d's last launch %s is not joined into the home group", k, p.nodes[last].node.Name))
		}
	}
	return bad
}

// lastLaunch is the last node of seq that launches on the device, or -1.
func lastLaunch(p *Plan, seq []int32) int {
	for q := len(seq) - 1; q >= 0; q-- {
		if p.nodes[seq[q]].where == onGPU {
			return int(seq[q])
		}
	}
	return -1
}

// randomAssign assigns each of p's nodes to one of n groups at random.
func randomAssign(r *rand.Rand, p *Plan, n int) []int {
	assign := make([]int, len(p.nodes))
	for i := range assign {
		assign[i] = r.Intn(n)
	}
	return assign
}

// TestLayoutOrdersEveryRead: random host and device plans with constants
// (hanging off other nodes and constants, fetched too), host kernels and
// control edges, on 1-4 groups, random node-level assignments, wait
// reduction on and off: the host streams' layout orders every read
// after its producer and ends after every stream; the lanes' schedule
// orders every device read after its producer on the device, awaits on
// the host every node of another group a node follows, and publishes
// all it awaits, in order.
func TestLayoutOrdersEveryRead(t *testing.T) {
	r := rand.New(rand.NewSource(31))
	fails := 0
	for it := 0; it < 80 && fails < 5; it++ {
		mix := []planMix{withHostKernels, hostNodes}[it%2]
		p := mixedPlan(t, r, 3, 10+r.Intn(40), mix)
		n := 1 + r.Intn(4)
		var set *groups.Set
		if mix == hostNodes {
			set = testSet(t, n, it%3 == 0, 0, false)
		} else {
			set = emuSet(t, n, false, 0)
		}
		assign := randomAssign(r, p, n)
		for _, reduce := range []bool{true, false} {
			sr := &Runtime{Streams: true, Groups: set.Groups(), Assign: assign, ReduceWaits: reduce, Holder: &set.Holder}
			for _, b := range checkHostLayout(p, p.layOut(sr, scalars([]float32{1, 2, 3}))) {
				fails++
				t.Errorf("plan %d (mix %d, groups=%d, reduce=%v), host streams: %s", it, mix, n, reduce, b)
			}
			if mix != hostNodes {
				p.lanes.Store(nil)
				for _, b := range checkLaneSched(p, p.laneSched(sr), func(i int) int { return assign[i] }) {
					fails++
					t.Errorf("plan %d (groups=%d, reduce=%v), lanes: %s", it, n, reduce, b)
				}
			}
		}
	}
}

// TestLayoutRandomPlansJittered runs random plans with constants
// (fetched too), control edges and host kernels over jittered host
// streams and the emulated device (several groups, random assignment,
// reduction on and off), against the one-group step's values; a hang
// shows as the test timing out.
func TestLayoutRandomPlansJittered(t *testing.T) {
	r := rand.New(rand.NewSource(37))
	for it := 0; it < 6; it++ {
		mix := []planMix{withHostKernels, hostNodes}[it%2]
		p := mixedPlan(t, r, 3, 30, mix)
		n := 2 + r.Intn(3)
		var set *groups.Set
		if mix == hostNodes {
			set = testSet(t, n, false, 200*time.Microsecond, false)
		} else {
			set = emuSet(t, n, false, 200*time.Microsecond)
		}
		assign := randomAssign(r, p, n)
		ref := &Runtime{Streams: true, Groups: set.Groups()[:1], ReduceWaits: true, Holder: &set.Holder}
		for _, reduce := range []bool{true, false} {
			sr := &Runtime{Streams: true, Groups: set.Groups(), Assign: assign, ReduceWaits: reduce, Holder: &set.Holder}
			if mix != hostNodes {
				sr.Jitter = 200 * time.Microsecond
			}
			for k := 0; k < 4; k++ {
				vals := scalars([]float32{float32(r.Intn(50)), float32(r.Intn(50)), float32(r.Intn(50))})
				want, _, err := p.Run(context.Background(), ref, vals, Options{})
				if err != nil {
					t.Fatal(err)
				}
				got, _, err := p.Run(context.Background(), sr, vals, Options{})
				if err != nil {
					t.Fatalf("plan %d (mix %d, groups=%d, reduce=%v): %v", it, mix, n, reduce, err)
				}
				if err := check(got, f32s(want)); err != nil {
					t.Errorf("plan %d (mix %d, groups=%d, reduce=%v) step %d: %v", it, mix, n, reduce, k, err)
				}
			}
		}
	}
}

// f32s is the first element of each of ts.
func f32s(ts []*tensor.Tensor) []float32 {
	vs := make([]float32, len(ts))
	for i, t := range ts {
		vs[i] = t.F32()[0]
	}
	return vs
}
