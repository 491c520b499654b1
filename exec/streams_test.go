package exec

import (
	"context"
	"fmt"
	"math/rand"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"mstream/device/host"
	"mstream/graph"
	"mstream/groups"
	"mstream/kernels"
	"mstream/tensor"
)

func testSet(t testing.TB, n int, merge bool, jitter time.Duration, aware bool) *groups.Set {
	d := host.New()
	d.MemBytes = 64 << 20
	d.Jitter = jitter
	p := NewPool(2)
	t.Cleanup(p.Close)
	cfg := groups.Config{Counts: []int{n}, Merge: merge, AllowGrowth: true, StreamAware: aware,
		GlobalPool: p, GlobalIntra: kernels.Serial{},
		NewPool:  func(n int) groups.Pool { return NewPool(n) },
		NewIntra: func(n int) kernels.Parallelizer { return NewIntra(n) }}
	cfg.Devices = append(cfg.Devices, d)
	set, err := groups.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(set.Close)
	return set
}

// randomPlan is a random DAG of ExecTestAdd over nf scalar feeds, with its
// fetches and the expected values of a feed assignment.
type randomPlan struct {
	plan    *Plan
	feeds   []*graph.Node
	nodes   []*graph.Node
	fetches []graph.Output
}

func makeRandomPlan(t testing.TB, r *rand.Rand, nf, nn int) *randomPlan {
	rp := &randomPlan{}
	var all []*graph.Node
	for i := 0; i < nf; i++ {
		f := node(fmt.Sprint("feed", i), "ExecTestAdd", 0)
		rp.feeds = append(rp.feeds, f)
		all = append(all, f)
	}
	for i := 0; i < nn; i++ {
		var ins []*graph.Node
		for k := 0; k < 1+r.Intn(3); k++ {
			ins = append(ins, all[r.Intn(len(all))])
		}
		n := node(fmt.Sprint("n", i), "ExecTestAdd", float32(r.Intn(7)), ins...)
		rp.nodes = append(rp.nodes, n)
		all = append(all, n)
	}
	for k := 0; k < 3; k++ {
		rp.fetches = append(rp.fetches, out(rp.nodes[len(rp.nodes)-1-r.Intn(min(5, nn))]))
	}
	rp.fetches = append(rp.fetches, out(rp.feeds[0]))
	var fo []graph.Output
	for _, f := range rp.feeds {
		fo = append(fo, out(f))
	}
	p, err := Build(nil, fo, rp.fetches, nil)
	if err != nil {
		t.Fatal(err)
	}
	rp.plan = p
	return rp
}

func (rp *randomPlan) want(vals []float32) []float32 {
	v := map[*graph.Node]float32{}
	for i, f := range rp.feeds {
		v[f] = vals[i]
	}
	for _, n := range rp.nodes {
		s := float32(n.Attrs["c"].GetF())
		for _, in := range n.Inputs {
			s += v[in.Node]
		}
		v[n] = s
	}
	var out []float32
	for _, f := range rp.fetches {
		out = append(out, v[f.Node])
	}
	return out
}

func scalars(vals []float32) []*tensor.Tensor {
	var ts []*tensor.Tensor
	for _, x := range vals {
		ts = append(ts, tensor.ScalarF32(x))
	}
	return ts
}

func check(got []*tensor.Tensor, want []float32) error {
	for i, w := range want {
		if g := got[i].F32()[0]; g != w {
			return fmt.Errorf("fetch %d = %v, want %v", i, g, w)
		}
	}
	return nil
}

// TestStreamStepsMatch runs random plans on streams, merged and not, with
// and without wait reduction, several steps at once on one group, and
// checks values, wait counts and that every buffer comes back.
func TestStreamStepsMatch(t *testing.T) {
	r := rand.New(rand.NewSource(7))
	rp := makeRandomPlan(t, r, 3, 60)
	for _, tc := range []struct {
		merge, reduce, aware bool
	}{{false, true, false}, {false, false, false}, {true, true, false}, {false, true, true}} {
		t.Run(fmt.Sprintf("merge=%v,reduce=%v,aware=%v", tc.merge, tc.reduce, tc.aware), func(t *testing.T) {
			set := testSet(t, 1, tc.merge, 100*time.Microsecond, tc.aware)
			g := set.Groups()[0]
			sr := &Runtime{Streams: true, Groups: []*groups.Group{g}, ReduceWaits: tc.reduce, Holder: &set.Holder}
			var wg sync.WaitGroup
			for w := 0; w < 4; w++ {
				wg.Add(1)
				go func(seed int64) {
					defer wg.Done()
					r := rand.New(rand.NewSource(seed))
					for it := 0; it < 10; it++ {
						vals := []float32{float32(r.Intn(100)), float32(r.Intn(100)), float32(r.Intn(100))}
						got, st, err := rp.plan.Run(context.Background(), sr, scalars(vals), Options{Trace: it == 0})
						if err != nil {
							t.Error(err)
							return
						}
						if err := check(got, rp.want(vals)); err != nil {
							t.Error(err)
						}
						if st != nil && len(st.Slices) != len(rp.feeds)+rp.plan.NumNodes()+len(rp.fetches) {
							t.Errorf("trace has %d slices", len(st.Slices))
						}
					}
				}(int64(w))
			}
			wg.Wait()
			gs := g.Stats()
			switch {
			case tc.merge && gs.StreamWaits != 0:
				t.Errorf("merged streams inserted %d waits", gs.StreamWaits)
			case !tc.merge && gs.StreamWaits == 0:
				t.Error("separate streams inserted no waits")
			case !tc.reduce && gs.StreamWaitsSkipped != 0:
				t.Errorf("no reduction, yet %d waits skipped", gs.StreamWaitsSkipped)
			case tc.reduce && !tc.merge && gs.StreamWaitsSkipped == 0:
				t.Error("reduction skipped no wait")
			}
			for _, x := range g.Streams() {
				x.Synchronize()
			}
			set.Holder.Drain()
			if a := g.Alloc.Stats(); a.BytesInUse != 0 || set.Holder.Live() != 0 {
				t.Fatalf("after the steps: %d bytes in use, %d holds", a.BytesInUse, set.Holder.Live())
			}
			if err := g.Alloc.Check(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestReduceWaitCounts: one feed read by a chain on the compute stream;
// without reduction every cross-stream edge waits, with it only the first.
func TestReduceWaitCounts(t *testing.T) {
	f := node("f", "ExecTestAdd", 0)
	a := node("a", "ExecTestAdd", 1, f)
	b := node("b", "ExecTestAdd", 1, a, f)
	c := node("c", "ExecTestAdd", 1, b, f)
	p, err := Build(nil, []graph.Output{out(f)}, []graph.Output{out(c), out(b)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, reduce := range []bool{false, true} {
		set := testSet(t, 1, false, 0, false)
		g := set.Groups()[0]
		got, _, err := p.Run(context.Background(), &Runtime{Streams: true, Groups: []*groups.Group{g}, ReduceWaits: reduce, Holder: &set.Holder},
			scalars([]float32{5}), Options{})
		if err != nil {
			t.Fatal(err)
		}
		if err := check(got, []float32{18, 12}); err != nil {
			t.Fatal(err)
		}
		st := g.Stats()
		// Edges across streams: f->a, f->b, f->c (compute waits on H2D),
		// b->fetch, c->fetch (D2H waits on compute), plus the final
		// event's waits on the compute and H2D streams: 7 in all. With
		// reduction only f->a and c->fetch remain.
		if reduce && (st.StreamWaits != 2 || st.StreamWaitsSkipped != 5) ||
			!reduce && (st.StreamWaits != 7 || st.StreamWaitsSkipped != 0) {
			t.Errorf("reduce=%v: %d waits, %d skipped", reduce, st.StreamWaits, st.StreamWaitsSkipped)
		}
	}
}

// TestStreamLayoutKept: a plan lays out its stream ops once per runtime
// (groups, assignment, wait reduction, string feeds) and reuses the
// layout, wait counts included, in later steps; a runtime that drops
// waits (the sanitizer's) lays them out every step.
func TestStreamLayoutKept(t *testing.T) {
	rp := makeRandomPlan(t, rand.New(rand.NewSource(3)), 3, 30)
	set := testSet(t, 2, false, 0, false)
	gs := set.Groups()
	vals := []float32{1, 2, 3}
	feeds := scalars(vals)
	run := func(sr *Runtime) *streamLayout {
		t.Helper()
		got, _, err := rp.plan.Run(context.Background(), sr, feeds, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if err := check(got, rp.want(vals)); err != nil {
			t.Fatal(err)
		}
		return rp.plan.streamLayout(sr, feeds)
	}
	one := &Runtime{Streams: true, Groups: gs[:1], ReduceWaits: true, Holder: &set.Holder}
	l1 := run(one)
	w1 := gs[0].Stats()
	if run(one) != l1 {
		t.Error("a second step on the same runtime laid its ops out again")
	}
	if w2 := gs[0].Stats(); w2.StreamWaits != 2*w1.StreamWaits || w2.StreamWaitsSkipped != 2*w1.StreamWaitsSkipped {
		t.Errorf("wait counts after 1 and 2 steps: %d/%d, %d/%d", w1.StreamWaits, w1.StreamWaitsSkipped, w2.StreamWaits, w2.StreamWaitsSkipped)
	}
	assign := make([]int, rp.plan.NumNodes())
	for i := range assign {
		assign[i] = i % 2
	}
	other := []*Runtime{
		{Streams: true, Groups: gs[1:], ReduceWaits: true, Holder: &set.Holder},
		{Streams: true, Groups: gs[:1], ReduceWaits: false, Holder: &set.Holder},
		{Groups: gs, Assign: assign, ReduceWaits: true, Holder: &set.Holder},
	}
	seen := map[*streamLayout]bool{l1: true}
	for i, sr := range other {
		l := run(sr)
		if seen[l] {
			t.Errorf("runtime %d shares a layout with an earlier one", i)
		}
		seen[l] = true
	}
	if run(one) != l1 {
		t.Error("the first runtime's layout was not kept")
	}
	drop := &Runtime{Streams: true, Groups: gs[:1], ReduceWaits: true, Holder: &set.Holder,
		DropWait: func(int, int) bool { return false }}
	if run(drop) == run(drop) {
		t.Error("a runtime with DropWait reused a layout")
	}
}

// countPool is a launch pool that counts the tasks submitted to it.
type countPool struct {
	*Pool
	n atomic.Int32
}

func (c *countPool) Submit(f func()) {
	c.n.Add(1)
	c.Pool.Submit(f)
}

// TestStreamStepLaunchPool: a host-streams step starts on its home
// group's launch pool, so TF_GPU_THREAD_MODE picks its threads: with
// gpu_private, the group's own pool and no other group's.
func TestStreamStepLaunchPool(t *testing.T) {
	var pools []*countPool
	cfg := groups.Config{Counts: []int{2}, AllowGrowth: true, ThreadMode: groups.ThreadGPUPrivate, ThreadCount: 1,
		GlobalPool: NewPool(1), GlobalIntra: kernels.Serial{},
		NewPool: func(n int) groups.Pool {
			c := &countPool{Pool: NewPool(n)}
			pools = append(pools, c)
			return c
		},
		NewIntra: func(n int) kernels.Parallelizer { return NewIntra(n) }}
	t.Cleanup(cfg.GlobalPool.Close)
	cfg.Devices = append(cfg.Devices, host.New())
	set, err := groups.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(set.Close)
	rp := makeRandomPlan(t, rand.New(rand.NewSource(5)), 3, 20)
	vals := []float32{4, 5, 6}
	for run := 0; run < 2; run++ {
		sr := &Runtime{Streams: true, Groups: set.Groups()[1:], Holder: &set.Holder}
		got, _, err := rp.plan.Run(context.Background(), sr, scalars(vals), Options{})
		if err != nil {
			t.Fatal(err)
		}
		if err := check(got, rp.want(vals)); err != nil {
			t.Fatal(err)
		}
	}
	if len(pools) != 2 || pools[0].n.Load() != 0 || pools[1].n.Load() != 2 {
		var ns []int32
		for _, p := range pools {
			ns = append(ns, p.n.Load())
		}
		t.Errorf("tasks per group launch pool after 2 steps on group 1: %v, want [0 2]", ns)
	}
}

// BenchmarkStreamStep times one step of a random 200-node plan of scalar
// adds on host streams: one group (MSTREAM_HOST_STREAMS) and two groups
// with a random node assignment, wait reduction on, no jitter. What it
// measures is the executor's cost per stream op (feed copies, kernels,
// fetch copies and the waits between streams).
func BenchmarkStreamStep(b *testing.B) {
	for _, n := range []int{1, 2} {
		b.Run(fmt.Sprintf("groups=%d", n), func(b *testing.B) {
			r := rand.New(rand.NewSource(11))
			rp := makeRandomPlan(b, r, 3, 200)
			set := testSet(b, n, false, 0, false)
			sr := &Runtime{Streams: true, Groups: set.Groups(), ReduceWaits: true, Holder: &set.Holder}
			if n > 1 {
				sr.Assign = make([]int, len(rp.plan.nodes))
				for i := range sr.Assign {
					sr.Assign[i] = r.Intn(n)
				}
			}
			vals := []float32{1, 2, 3}
			b.ReportAllocs()
			b.ResetTimer()
			for it := 0; it < b.N; it++ {
				got, _, err := rp.plan.Run(context.Background(), sr, scalars(vals), Options{})
				if err != nil {
					b.Fatal(err)
				}
				if err := check(got, rp.want(vals)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
