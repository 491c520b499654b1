package exec

import (
	"fmt"
	"math/rand"
	"slices"
	"testing"
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
	for it := 0; it < 40; it++ {
		p := mixedPlan(t, r, 3, 40, false)
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
				if n > 1 && waits == 0 {
					t.Error("no wait between groups: the case tests nothing")
				}
			})
		}
	}
}
