package exec

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"mstream/device"
	"mstream/graph"
	"mstream/groups"
	"mstream/hostmem"
	"mstream/kernels"
	"mstream/proto/tfpb"
	"mstream/status"
	"mstream/tensor"
)

// rendezvous is what ExecTestGMeet's launches meet at: each launch of it
// counts itself in and blocks until want launches have, or fails after
// wait. Only TestLanesOverlap's plans use it.
var rendezvous struct {
	mu   sync.Mutex
	cond *sync.Cond
	n    int
	want int
	wait time.Duration
}

// slowRan is set by ExecTestGSlow's enqueued work, and by the host
// kernel ExecTestSlowAdd, when it has run.
var slowRan atomic.Bool

func init() {
	rendezvous.cond = sync.NewCond(&rendezvous.mu)
	kernels.Register(kernels.Def{Op: "ExecTestGMeet", Device: kernels.GPU, Factory: func(n *graph.Node) (kernels.Kernel, error) {
		return kernels.KernelFunc(func(ctx *kernels.Context) error {
			r := &rendezvous
			r.mu.Lock()
			r.n++
			r.cond.Broadcast()
			deadline := time.Now().Add(r.wait)
			timer := time.AfterFunc(r.wait, func() {
				r.mu.Lock()
				r.cond.Broadcast()
				r.mu.Unlock()
			})
			defer timer.Stop()
			for r.n < r.want && time.Now().Before(deadline) {
				r.cond.Wait()
			}
			met := r.n >= r.want
			r.mu.Unlock()
			if !met {
				return status.Errorf(status.DeadlineExceeded, "node '%s': no other group launched within %v", n.Name, r.wait)
			}
			t, err := ctx.Allocate(0, nil)
			if err != nil {
				return err
			}
			in, out := ctx.Inputs[0].F32(), t.F32()
			return device.Enqueue(ctx.Stream, func() { out[0] = in[0] + 1 })
		}), nil
	}})
	kernels.Register(kernels.Def{Op: "ExecTestGSlow", Device: kernels.GPU, Factory: func(n *graph.Node) (kernels.Kernel, error) {
		return kernels.KernelFunc(func(ctx *kernels.Context) error {
			t, err := ctx.Allocate(0, nil)
			if err != nil {
				return err
			}
			out := t.F32()
			return device.Enqueue(ctx.Stream, func() {
				time.Sleep(50 * time.Millisecond)
				out[0] = 1
				slowRan.Store(true)
			})
		}), nil
	}})
	kernels.Register(kernels.Def{Op: "ExecTestGFail", Device: kernels.GPU, Factory: func(n *graph.Node) (kernels.Kernel, error) {
		return kernels.KernelFunc(func(ctx *kernels.Context) error {
			if _, err := ctx.Allocate(0, nil); err != nil {
				return err
			}
			return status.InvalidArg("ExecTestGFail fails as asked")
		}), nil
	}})
}

// TestLanesOverlap proves that a step over several groups launches each
// group's nodes on a goroutine of its own: a node of each of the groups
// launches only once the other groups' have launched too, which one
// launching goroutine could never do (it would fail after the
// rendezvous' timeout, not hang); lanes meet, every step.
func TestLanesOverlap(t *testing.T) {
	for _, groups := range []int{2, 4} {
		t.Run(fmt.Sprint("groups=", groups), func(t *testing.T) {
			x := node("x", "ExecTestGAdd", 0)
			var meets []*graph.Node
			for k := 0; k < groups; k++ {
				meets = append(meets, node(fmt.Sprint("meet", k), "ExecTestGMeet", 0, x))
			}
			sum := node("sum", "ExecTestGAdd", 0, meets...)
			p, err := build(nil, []graph.Output{{Node: x}}, []graph.Output{{Node: sum}}, nil, Placement{GPUs: 1})
			if err != nil {
				t.Fatal(err)
			}
			set := emuSet(t, groups, false, 0)
			sr := &Runtime{Streams: true, Groups: set.Groups(), ReduceWaits: true, Holder: &set.Holder, Intra: kernels.Serial{}}
			sr.Assign = make([]int, len(p.nodes))
			for i := range p.nodes {
				if name := p.nodes[i].node.Name; strings.HasPrefix(name, "meet") {
					fmt.Sscan(strings.TrimPrefix(name, "meet"), &sr.Assign[i])
				}
			}
			rendezvous.mu.Lock()
			rendezvous.wait = 10 * time.Second
			rendezvous.mu.Unlock()
			for step := 0; step < 5; step++ {
				rendezvous.mu.Lock()
				rendezvous.n, rendezvous.want = 0, groups
				rendezvous.mu.Unlock()
				v := float32(step + 3)
				got, _, err := p.Run(context.Background(), sr, []*tensor.Tensor{tensor.ScalarF32(v)}, Options{})
				if err != nil {
					t.Fatalf("step %d: %v", step, err)
				}
				if want := float32(groups) * (v + 1); got[0].F32()[0] != want {
					t.Fatalf("step %d: sum = %v, want %v", step, got[0].F32()[0], want)
				}
			}
			set.Holder.Drain()
			if b := set.Groups()[0].Alloc.Stats().BytesInUse; b != 0 {
				t.Errorf("%d bytes still allocated after the steps", b)
			}
		})
	}
}

// TestLanesFailure: a lane that fails early fails the step once, naming
// its node, while the other lanes are waiting for its values (they stop,
// no hang); every buffer comes back, and the next steps, with the node
// fixed, run right.
func TestLanesFailure(t *testing.T) {
	x := node("x", "ExecTestGAdd", 0)
	a := node("a", "ExecTestGAdd", 1, x)
	for i := 0; i < 20; i++ {
		a = node(fmt.Sprint("a", i), "ExecTestGAdd", 1, a)
	}
	bad := node("bad", "ExecTestGFail", 0, x)
	after := node("after", "ExecTestGAdd", 0, bad, a)
	for i := 0; i < 10; i++ {
		after = node(fmt.Sprint("after", i), "ExecTestGAdd", 1, after)
	}
	p, err := build(nil, []graph.Output{{Node: x}}, []graph.Output{{Node: after}}, nil, Placement{GPUs: 1})
	if err != nil {
		t.Fatal(err)
	}
	for _, groups := range []int{2, 3} {
		set := emuSet(t, groups, false, 50*time.Microsecond)
		sr := &Runtime{Streams: true, Groups: set.Groups(), ReduceWaits: true, Holder: &set.Holder, Intra: kernels.Serial{}}
		sr.Assign = make([]int, len(p.nodes))
		for i := range p.nodes {
			switch name := p.nodes[i].node.Name; {
			case name == "bad":
				sr.Assign[i] = 1
			case strings.HasPrefix(name, "after"):
				sr.Assign[i] = groups - 1
			}
		}
		for step := 0; step < 5; step++ {
			done := make(chan error, 1)
			go func() {
				_, _, err := p.Run(context.Background(), sr, []*tensor.Tensor{tensor.ScalarF32(1)}, Options{})
				done <- err
			}()
			select {
			case err := <-done:
				if err == nil || status.CodeOf(err) != status.InvalidArgument || !strings.Contains(err.Error(), "ExecTestGFail fails as asked") || strings.Count(err.Error(), "fails as asked") != 1 {
					t.Fatalf("groups=%d step %d: got %v, want one INVALID_ARGUMENT from the failing node", groups, step, err)
				}
			case <-time.After(30 * time.Second):
				t.Fatalf("groups=%d step %d: a failing lane hung the step", groups, step)
			}
		}
		// The groups work on: a plan of the same nodes without the
		// failing one.
		good := node("good", "ExecTestGAdd", 0, x, a)
		p2, err := build(nil, []graph.Output{{Node: x}}, []graph.Output{{Node: good}}, nil, Placement{GPUs: 1})
		if err != nil {
			t.Fatal(err)
		}
		sr2 := *sr
		sr2.Assign = make([]int, len(p2.nodes))
		for i := range p2.nodes {
			sr2.Assign[i] = i % groups
		}
		got, _, err := p2.Run(context.Background(), &sr2, []*tensor.Tensor{tensor.ScalarF32(1)}, Options{})
		if err != nil || got[0].F32()[0] != 1+22 {
			t.Errorf("groups=%d: a step after the failed ones: %v %v, want 23", groups, got, err)
		}
		set.Holder.Drain()
		for _, g := range set.Groups() {
			if b := g.Alloc.Stats().BytesInUse; b != 0 {
				t.Errorf("groups=%d: %d bytes still allocated by group %d after failed steps", groups, b, g.Index)
			}
		}
	}
}

// peerStream is an emulated stream that copies from another emulated
// device's memory (device.PeerCopier), in its own order: host memory is
// addressed alike by every host device.
type peerStream struct{ emuStream }

func (s peerStream) CopyPeer(dst, src uint64, _ device.Stream, size uint64) error {
	return device.Enqueue(s, func() {
		copy(hostmem.DeviceBytes(dst, int(size)), hostmem.DeviceBytes(src, int(size)))
	})
}

type peerDevice struct{ emuDevice }

func (d peerDevice) NewStream(ctx int) (device.Stream, error) {
	s, err := d.emuDevice.NewStream(ctx)
	if err != nil {
		return nil, err
	}
	return peerStream{s.(emuStream)}, nil
}

// TestLanesTwoGPUs runs random plans placed over two emulated GPUs (a
// group each, graph-level mode): each GPU's lane copies the values it
// reads from the other's memory after its wait; every value must be
// right under jitter, and every buffer must come back.
func TestLanesTwoGPUs(t *testing.T) {
	r := rand.New(rand.NewSource(5))
	rp := makeRandomPlan(t, r, 3, 40)
	for i, n := range rp.nodes {
		n.Op = "ExecTestGAdd"
		n.Device = fmt.Sprintf("/device:GPU:%d", i%2)
	}
	var fo []graph.Output
	for _, f := range rp.feeds {
		fo = append(fo, graph.Output{Node: f})
	}
	p, err := build(nil, fo, rp.fetches, nil, Placement{GPUs: 2})
	if err != nil {
		t.Fatal(err)
	}
	pool := NewPool(2)
	t.Cleanup(pool.Close)
	set, err := groups.New(groups.Config{Counts: []int{1, 1}, AllowGrowth: true,
		Devices:    []device.Device{peerDevice{emuDevice{emuHost(50 * time.Microsecond)}}, peerDevice{emuDevice{emuHost(50 * time.Microsecond)}}},
		GlobalPool: pool, GlobalIntra: kernels.Serial{},
		NewPool:  func(n int) groups.Pool { return NewPool(n) },
		NewIntra: func(n int) kernels.Parallelizer { return NewIntra(n) }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(set.Close)
	gpus, nodeGPU := p.PlaceOn(0)
	if len(gpus) != 2 {
		t.Fatalf("the plan runs on GPUs %v, want two", gpus)
	}
	sr := &Runtime{Streams: true, Groups: []*groups.Group{set.Groups()[gpus[0]], set.Groups()[gpus[1]]},
		ReduceWaits: true, Holder: &set.Holder, Intra: kernels.Serial{}}
	sr.Assign = make([]int, len(p.nodes))
	for i, g := range nodeGPU {
		sr.Assign[i] = slices.Index(gpus, g)
	}
	for step := 0; step < 20; step++ {
		vals := []float32{float32(r.Intn(100)), float32(r.Intn(100)), float32(r.Intn(100))}
		got, _, err := p.Run(context.Background(), sr, scalars(vals), Options{Trace: step == 0})
		if err == nil {
			err = check(got, rp.want(vals))
		}
		if err != nil {
			t.Fatalf("step %d: %v", step, err)
		}
	}
	set.Holder.Drain()
	for _, g := range set.Groups() {
		if b := g.Alloc.Stats().BytesInUse; b != 0 {
			t.Errorf("%d bytes still allocated by %s after the steps", b, g.Device.Name())
		}
	}
}

// TestLanesFinalEventCoversOtherGroups: a step whose only GPU work is
// on another group than the home one (a target, no feeds, no fetches)
// returns only after that work has run: the final event follows the
// join even when the home lane launched nothing (a reviewer's probe:
// Run returned after 366 us, before the kernel ran).
func TestLanesFinalEventCoversOtherGroups(t *testing.T) {
	slow := node("slow", "ExecTestGSlow", 0)
	p, err := build(nil, nil, nil, []*graph.Node{slow}, Placement{GPUs: 1})
	if err != nil {
		t.Fatal(err)
	}
	set := emuSet(t, 2, false, 0)
	sr := &Runtime{Streams: true, Groups: set.Groups(), ReduceWaits: true, Holder: &set.Holder, Intra: kernels.Serial{}}
	sr.Assign = make([]int, len(p.nodes))
	for i := range p.nodes {
		if p.nodes[i].node.Name == "slow" {
			sr.Assign[i] = 1
		}
	}
	for step := 0; step < 3; step++ {
		slowRan.Store(false)
		if _, _, err := p.Run(context.Background(), sr, nil, Options{}); err != nil {
			t.Fatal(err)
		}
		if !slowRan.Load() {
			t.Fatalf("step %d: Run returned before group 1's kernel ran", step)
		}
	}
}

// TestLanesCrew: a plan's lanes run on goroutines kept between steps,
// one per lane of the steps in flight at once (never one per step), and
// an idle one exits after the crew's idle time. The steps' results are
// the one-group step's.
func TestLanesCrew(t *testing.T) {
	p, tower, _ := towersPlan(t, "ExecTestGWide", 4, 6)
	p.crew.idleFor = 200 * time.Millisecond
	feeds := make([]*tensor.Tensor, 4)
	for k := range feeds {
		feeds[k] = tensor.FromF32(tensor.Shape{1}, []float32{rand.Float32()})
	}
	one := syncSet(t, 1)
	want, _, err := p.Run(context.Background(), &Runtime{Streams: true, Groups: one.Groups(), Holder: &one.Holder, Intra: kernels.Serial{}}, feeds, Options{})
	if err != nil {
		t.Fatal(err)
	}
	set := syncSet(t, 4)
	sr := &Runtime{Streams: true, Groups: set.Groups(), ReduceWaits: true, Holder: &set.Holder, Intra: kernels.Serial{}, Assign: make([]int, len(tower))}
	for i, k := range tower {
		sr.Assign[i] = max(k, 0)
	}
	crew := func() (idle, live int) {
		p.crew.mu.Lock()
		defer p.crew.mu.Unlock()
		return len(p.crew.idle), p.crew.live
	}
	step := func() error {
		got, _, err := p.Run(context.Background(), sr, feeds, Options{})
		if err == nil && got[0].F32()[0] != want[0].F32()[0] {
			err = fmt.Errorf("fetched %v, one group fetches %v", got[0].F32()[0], want[0].F32()[0])
		}
		return err
	}
	for i := 0; i < 20; i++ {
		if err := step(); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
	}
	if _, live := crew(); live != 3 {
		t.Errorf("20 steps one after another over 4 groups: %d lane goroutines, want 3", live)
	}
	const runs = 3
	var wg sync.WaitGroup
	errs := make(chan error, runs)
	for r := 0; r < runs; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 20; i++ {
				if err := step(); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if _, live := crew(); live < 3 || live > 3*runs {
		t.Errorf("%d steps at once over 4 groups: %d lane goroutines, want 3 to %d", runs, live, 3*runs)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		idle, live := crew()
		if idle == 0 && live == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("idle lane goroutines do not exit: %d idle, %d live", idle, live)
		}
	}
	if err := step(); err != nil {
		t.Fatalf("a step after the crew went idle: %v", err)
	}
	set.Holder.Drain()
	if b := set.Groups()[0].Alloc.Stats().BytesInUse; b != 0 {
		t.Errorf("%d bytes still allocated after the steps", b)
	}
}

// gnopChain is a GPU plan of n ExecTestGNop nodes in a chain after a
// fed one, fetching the last.
func gnopChain(t testing.TB, n int) *Plan {
	t.Helper()
	nodes := []*graph.Node{node("x", "ExecTestGNop", 0)}
	for i := 1; i <= n; i++ {
		nodes = append(nodes, node(fmt.Sprint("n", i), "ExecTestGNop", 0, nodes[i-1]))
	}
	p, err := build(nil, []graph.Output{{Node: nodes[0]}}, []graph.Output{{Node: nodes[n]}}, nil, Placement{GPUs: 1})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// crossingChain is a chain of n device nodes after a fed one, node i on
// group i mod groups of a synchronous test set, so every edge crosses
// groups and every buffer is released on another group's stream.
func crossingChain(t *testing.T, n, groups int) (*Plan, *Runtime, *groups.Set) {
	t.Helper()
	p := gnopChain(t, n)
	set := syncSet(t, groups)
	sr := &Runtime{Streams: true, Groups: set.Groups(), ReduceWaits: true, Holder: &set.Holder, Intra: kernels.Serial{}, Assign: make([]int, len(p.nodes))}
	for i := range sr.Assign {
		sr.Assign[i] = i % groups
	}
	return p, sr, set
}

// TestDeviceHoldsGather: a step whose every buffer is read on another
// group's stream hands the holder one hold per holdBatch releases of a
// stream, not one per buffer (each hold records an event per stream its
// buffers touched), and every buffer still comes back by the step's end.
func TestDeviceHoldsGather(t *testing.T) {
	const n, groups = 200, 4
	p, sr, set := crossingChain(t, n, groups)
	feeds := []*tensor.Tensor{tensor.FromF32(tensor.Shape{16, 64}, make([]float32, 16*64))}
	const steps = 5
	before := set.Holder.Freed()
	for i := 0; i < steps; i++ {
		if _, _, err := p.Run(context.Background(), sr, feeds, Options{}); err != nil {
			t.Fatal(err)
		}
	}
	set.Holder.Drain()
	holds := float64(set.Holder.Freed()-before) / steps
	t.Logf("%.1f holds a step", holds)
	// Each of the n buffers but the fetch is released on the stream of
	// its reader, another group's: n/groups releases per stream.
	if want := float64(n) / holdBatch; holds > want+groups || holds < want-groups {
		t.Errorf("%.1f holds a step for %d buffers read across streams, want about %.0f (%d a hold)", holds, n, want, holdBatch)
	}
	for _, g := range set.Groups() {
		if b := g.Alloc.Stats().BytesInUse; b != 0 {
			t.Errorf("group %d: %d bytes still allocated after the steps", g.Index, b)
		}
	}
}

// TestLaneSyncWakesOnlyWaiters: lanes blocked on several nodes; each
// publication takes exactly the waiters of its node off the waiting list
// (and wakes them with its values), leaving the others registered and
// asleep; fail then wakes the rest with errStopped, and the laneSync is
// reusable for the next step.
func TestLaneSyncWakesOnlyWaiters(t *testing.T) {
	var ls laneSync
	const nodes, per = 6, 3
	r := rand.New(rand.NewSource(time.Now().UnixNano()))
	for step := 0; step < 3; step++ {
		ls.reset(nodes + 1)
		type result struct {
			node int
			vs   []gval
			err  error
		}
		out := make(chan result, nodes*per)
		for i := 0; i < nodes*per; i++ {
			go func() {
				vs, _, err := ls.await(i % nodes)
				out <- result{i % nodes, vs, err}
			}()
		}
		waiters := func() map[int]int {
			ls.mu.Lock()
			defer ls.mu.Unlock()
			m := map[int]int{}
			for _, w := range ls.waiting {
				m[w.node]++
			}
			return m
		}
		registered := func() int {
			ls.mu.Lock()
			defer ls.mu.Unlock()
			return len(ls.waiting)
		}
		for deadline := time.Now().Add(10 * time.Second); registered() < nodes*per; time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("waiters never all registered: %v", waiters())
			}
		}
		for k := range waiters() {
			if waiters()[k] != per {
				t.Fatalf("waiters %v, want %d per node", waiters(), per)
			}
		}
		order := r.Perm(nodes)
		published := order[:nodes-2] // the last two stay out: fail wakes them
		for j, n := range published {
			vs := []gval{{host: tensor.ScalarF32(float32(n))}}
			ls.publish(n, vs, nil)
			w := waiters()
			if w[n] != 0 || len(w) != nodes-1-j {
				t.Fatalf("after publishing %d: waiting %v", n, w)
			}
			for range per {
				res := <-out
				if res.node != n || res.err != nil || len(res.vs) != 1 || res.vs[0].host != vs[0].host {
					t.Fatalf("published %d, a waiter returned %+v", n, res)
				}
			}
		}
		ls.fail(errors.New("boom"))
		for range 2 * per {
			if res := <-out; !errors.Is(res.err, errStopped) {
				t.Fatalf("after fail, a waiter for %d returned %+v", res.node, res)
			}
		}
		if _, _, err := ls.await(nodes); !errors.Is(err, errStopped) {
			t.Fatalf("await after fail: %v", err)
		}
		if len(waiters()) != 0 || len(ls.chans) != nodes*per {
			t.Fatalf("after the step: waiting %v, %d free channels", waiters(), len(ls.chans))
		}
	}
}

// TestHeldBatchPeak: a stream's batch of cross-stream releases is held
// once it keeps holdBytes from reuse, not only once it has holdBatch
// buffers. A chain of 64 1-MiB buffers, every edge crossing one of four
// groups, peaked at 5 MiB over the allocators with a hold per buffer
// and at 32 MiB with batches bounded by count alone.
func TestHeldBatchPeak(t *testing.T) {
	const n, groups = 64, 4
	p, sr, set := crossingChain(t, n, groups)
	feeds := []*tensor.Tensor{tensor.FromF32(tensor.Shape{256, 1024}, make([]float32, 256*1024))} // 1 MiB
	for i := 0; i < 3; i++ {
		if _, _, err := p.Run(context.Background(), sr, feeds, Options{}); err != nil {
			t.Fatal(err)
		}
	}
	set.Holder.Drain()
	seen := map[any]bool{}
	var peak uint64
	for _, g := range set.Groups() {
		if !seen[g.Alloc] {
			seen[g.Alloc] = true
			peak += g.Alloc.Stats().PeakBytesInUse
		}
	}
	if peak > 12<<20 {
		t.Errorf("peak bytes in use over the allocators %.1f MiB for a chain of %d 1-MiB buffers, want at most 12 (5 with a hold per buffer)", float64(peak)/(1<<20), n)
	}
}

// TestLanesOrderThroughHostNodes proves that a node that launches
// nothing on the device (a host NoOp, a host kernel) passes on the
// order of what it ran after: a load on one group, ordered after a
// store on another only through such a node (a control edge into the
// load, or the host node's data), reads that store, over jittered
// streams, with wait reduction on and off, on static lanes and, with a
// Switch in the plan, on the frames path. Before the fix a host node
// held the zero point of the vector clocks (static lanes) or kept no
// record for its data's readers (frames), and the load waited for
// nothing.
func TestLanesOrderThroughHostNodes(t *testing.T) {
	cases := []struct {
		name string
		// host returns the host node on the storing group, after s.
		host func(x, s *graph.Node) *graph.Node
		data bool // the load reads the host node's output, else a control edge
	}{
		{"noop", func(x, s *graph.Node) *graph.Node {
			op := node("store_noop", "NoOp", 0)
			op.OutTypes, op.OutShapes, op.Attrs = nil, nil, map[string]*tfpb.AttrValue{}
			op.Controls = []*graph.Node{s}
			return op
		}, false},
		{"host-control", func(x, s *graph.Node) *graph.Node {
			h := node("store_host", "ExecTestAdd", 0, x)
			h.Controls = []*graph.Node{s}
			return h
		}, false},
		{"host-data-in", func(x, s *graph.Node) *graph.Node { return node("store_host", "ExecTestAdd", 0, s) }, false},
		{"host-data-out", func(x, s *graph.Node) *graph.Node {
			h := node("store_host", "ExecTestAdd", 0, x)
			h.Controls = []*graph.Node{s}
			return h
		}, true},
		// A constant with a control edge, as an inlined body's hang off
		// the call's input NoOp: the static lanes skipped constants
		// before they worked out what their readers wait for.
		{"const-control", func(x, s *graph.Node) *graph.Node {
			k := constNode("store_const")
			k.Controls = []*graph.Node{s}
			return k
		}, true},
	}
	for _, c := range cases {
		for _, frames := range []bool{false, true} {
			for _, groups := range []int{2, 3} {
				for _, reduce := range []bool{true, false} {
					t.Run(fmt.Sprintf("%s/frames=%v/groups=%d/reduce=%v", c.name, frames, groups, reduce), func(t *testing.T) {
						x, n := node("x", "ExecTestGAdd", 0), node("n", "ExecTestGAdd", 0)
						s := node("store", "ExecTestGStore", 3, x)
						h := c.host(x, s)
						y := node("y_load", "ExecTestGLoad", 0, x)
						if c.data {
							y.Inputs = []graph.Output{{Node: h}}
						} else {
							y.Controls = []*graph.Node{h}
						}
						var targets []*graph.Node
						if frames {
							p := node("pred", "ExecTestGLess", 0, x, n)
							p.OutTypes = []tensor.DType{tensor.Bool}
							targets = []*graph.Node{flowNode("switch", "Switch", 2, graph.Output{Node: x}, graph.Output{Node: p})}
						}
						p, err := build(nil, []graph.Output{{Node: x}, {Node: n}}, []graph.Output{{Node: s}, {Node: y}}, targets, Placement{GPUs: 1})
						if err != nil {
							t.Fatal(err)
						}
						if p.deadness != frames {
							t.Fatalf("the plan's frames: %v, want %v", p.deadness, frames)
						}
						// The store and the host node on group 1, the load on
						// group 0 of two, 2 of three, the rest on group 0.
						assign := make([]int, len(p.nodes))
						for i := range p.nodes {
							nm := p.nodes[i].node.Name
							switch {
							case strings.HasPrefix(nm, "store"):
								assign[i] = 1
							case nm == "y_load" && groups == 3:
								assign[i] = 2
							}
							if nm == h.Name && p.nodes[i].where == onGPU {
								t.Fatalf("%s runs on the device: it would not test a host node", nm)
							}
						}
						set := emuSet(t, groups, false, 0)
						sr := &Runtime{Streams: true, Groups: set.Groups(), Assign: assign, ReduceWaits: reduce, Holder: &set.Holder, Jitter: time.Millisecond}
						if bad := storeLoadSteps(t, p, sr, 200); bad > 0 {
							t.Errorf("%d of %d steps: the load did not follow the store the host node orders it after", bad, storeLoadRuns)
						}
					})
				}
			}
		}
	}
}

// storeLoadRuns is how many jittered steps storeLoadSteps runs.
const storeLoadRuns = 20

// storeLoadSteps runs p, whose fetches are a store's value and a load
// that must follow it, on random feeds x in [1, 100] and n in [1, nmax],
// and counts the steps whose load did not read the stored value.
func storeLoadSteps(t *testing.T, p *Plan, sr *Runtime, nmax int) (bad int) {
	t.Helper()
	r := rand.New(rand.NewSource(1))
	for k := 0; k < storeLoadRuns; k++ {
		xv, nv := float32(1+r.Intn(100)), float32(1+r.Intn(nmax))
		got, _, err := p.Run(context.Background(), sr, []*tensor.Tensor{tensor.ScalarF32(xv), tensor.ScalarF32(nv)}, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if got[1].F32()[0] != got[0].F32()[0] {
			if bad++; bad <= 3 {
				t.Logf("step %d: stored %v, loaded after it %v", k, got[0].F32()[0], got[1].F32()[0])
			}
		}
	}
	return bad
}

// TestLanesFetchConstantOnOtherGroup: a device plan over two groups
// fetches a constant that no home node reads, assigned to either group.
// A constant is never published (it launches nothing), so the fetch
// must take it from the home lane's own constant store: before, the
// home lane took an empty published value list and the step panicked
// (INTERNAL "device step panicked").
func TestLanesFetchConstantOnOtherGroup(t *testing.T) {
	for _, kOn := range []int{0, 1} {
		t.Run(fmt.Sprintf("const-on-group-%d", kOn), func(t *testing.T) {
			x := node("x", "ExecTestGAdd", 0)
			a := node("a", "ExecTestGAdd", 1, x)
			k := constNode("k")
			p, err := build(nil, []graph.Output{out(x)}, []graph.Output{out(a), out(k)}, nil, Placement{GPUs: 1})
			if err != nil {
				t.Fatal(err)
			}
			set := emuSet(t, 2, false, 0)
			sr := &Runtime{Streams: true, Groups: set.Groups(), Assign: assignNames(p, map[string]int{"a": 1, "k": kOn}), ReduceWaits: true, Holder: &set.Holder}
			got, _, err := p.Run(context.Background(), sr, scalars([]float32{4}), Options{})
			if err != nil {
				t.Fatalf("%.300s", err)
			}
			if err := check(got, []float32{5, 2}); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func init() {
	// ExecTestGLoadHost is a device kernel whose work, on its stream,
	// reads hostSlot (which the host kernel ExecTestSlowStore writes): it
	// follows the store only as far as the step orders the launch after
	// the host kernel.
	kernels.Register(kernels.Def{Op: "ExecTestGLoadHost", Device: kernels.GPU, Factory: func(n *graph.Node) (kernels.Kernel, error) {
		return kernels.KernelFunc(func(ctx *kernels.Context) error {
			t, err := ctx.Allocate(0, nil)
			if err != nil {
				return err
			}
			out := t.F32()
			return device.Enqueue(ctx.Stream, func() { out[0] = math.Float32frombits(hostSlot.Load()) })
		}), nil
	}})
	// ExecTestSlowStore is ExecTestStore after 3 ms: a host kernel that
	// takes a while.
	kernels.Register(kernels.Def{Op: "ExecTestSlowStore", Device: kernels.CPU, Factory: func(n *graph.Node) (kernels.Kernel, error) {
		c := float32(n.Attrs["c"].GetF())
		return kernels.KernelFunc(func(ctx *kernels.Context) error {
			time.Sleep(3 * time.Millisecond)
			if err := addScalars(ctx, c); err != nil {
				return err
			}
			hostSlot.Store(math.Float32bits(ctx.Outputs[0].F32()[0]))
			return nil
		}), nil
	}})
}

// TestLanesOrderAfterHostKernelThroughConstant: a host kernel H (a
// store to a host slot) on group 1, after a device node there; a
// constant K with a control edge from H; a device load on group 0
// reading K, whose work reads the slot: it runs after H (H -> K ->
// load). A lane awaits its inputs and control predecessors of other
// groups, and, through a constant, what the constant runs after: the
// device waits through K stand for H's launches only, not for H itself.
// Before, the load could launch before H had run. The direct edge H ->
// load and a host node in place of K are the controls.
func TestLanesOrderAfterHostKernelThroughConstant(t *testing.T) {
	for _, mid := range []string{"const", "direct", "host-node"} {
		for _, reduce := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/reduce=%v", mid, reduce), func(t *testing.T) {
				x, nf := node("x", "ExecTestGAdd", 0), node("n", "ExecTestGAdd", 0)
				a := node("a", "ExecTestGAdd", 1, x)
				h := node("store_h", "ExecTestSlowStore", 3, a)
				y := node("y_load", "ExecTestGLoadHost", 0)
				switch mid {
				case "const":
					k := constNode("k")
					k.Controls = []*graph.Node{h}
					y.Inputs, y.InTypes = []graph.Output{{Node: k}}, []tensor.DType{tensor.Float}
				case "direct":
					y.Controls = []*graph.Node{h}
				case "host-node":
					m := node("m", "ExecTestAdd", 0)
					m.Controls = []*graph.Node{h}
					y.Inputs, y.InTypes = []graph.Output{{Node: m}}, []tensor.DType{tensor.Float}
				}
				p, err := build(nil, []graph.Output{{Node: x}, {Node: nf}}, []graph.Output{{Node: h}, {Node: y}}, nil, Placement{GPUs: 1})
				if err != nil {
					t.Fatal(err)
				}
				for i := range p.nodes {
					if p.nodes[i].node.Name == "store_h" && p.nodes[i].where == onGPU {
						t.Fatal("the store runs on the device: it would not test a host kernel")
					}
				}
				set := emuSet(t, 2, false, 0)
				sr := &Runtime{Streams: true, Groups: set.Groups(), Assign: assignNames(p, map[string]int{"a": 1, "store_h": 1}), ReduceWaits: reduce, Holder: &set.Holder, Jitter: time.Millisecond}
				if bad := storeLoadSteps(t, p, sr, 200); bad > 0 {
					t.Errorf("%d of %d steps: the device load did not follow the host store ordered before it", bad, storeLoadRuns)
				}
			})
		}
	}
}
