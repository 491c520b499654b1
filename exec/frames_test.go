package exec

import (
	"context"
	"fmt"
	"math/rand"
	"strings"
	"sync"
	"testing"
	"time"

	"mstream/graph"
	"mstream/groups"
	"mstream/kernels"
	"mstream/status"
	"mstream/tensor"
)

// meeting pairs ExecTestMeet kernels: each waits for a second one to be
// running at the same time before it computes.
var meeting struct {
	mu      sync.Mutex
	waiting chan struct{}
}

func init() {
	// ExecTestMeet: ExecTestAdd once another ExecTestMeet kernel is
	// running at the same time; an error, naming the node, when none
	// comes (the nodes ran one at a time).
	kernels.Register(kernels.Def{Op: "ExecTestMeet", Device: kernels.CPU, Factory: func(n *graph.Node) (kernels.Kernel, error) {
		c := float32(n.Attrs["c"].GetF())
		return kernels.KernelFunc(func(ctx *kernels.Context) error {
			meeting.mu.Lock()
			ch := meeting.waiting
			if ch == nil {
				ch = make(chan struct{})
				meeting.waiting = ch
				meeting.mu.Unlock()
				select {
				case <-ch:
				case <-time.After(20 * time.Second):
					meeting.mu.Lock()
					if meeting.waiting == ch {
						meeting.waiting = nil
					}
					meeting.mu.Unlock()
					return fmt.Errorf("node %s: no other ExecTestMeet kernel ran at the same time", ctx.Node.Name)
				}
			} else {
				meeting.waiting = nil
				meeting.mu.Unlock()
				close(ch)
			}
			return addScalars(ctx, c)
		}), nil
	}})
}

// loopPlan is a v1 while loop fed x and n: n iterations of a counter
// (i+1) and of an accumulator independent of it within an iteration that
// adds 1 chain times in a row, counter and acc their ops (ExecTestAdd,
// ExecTestMeet), at most par iterations in flight; it fetches acc
// (x + chain*n), or, unless fetch, has the loop's exit as its target. It
// returns the plan and the plan indices of the counter and the first
// accumulator node.
func loopPlan(t testing.TB, counter, acc string, chain int, par int64, fetch bool) (*Plan, int, int) {
	t.Helper()
	return loopPlanOn(t, Placement{}, counter, acc, chain, par, fetch)
}

// loopPlanOn is loopPlan placed by pl (Placement{GPUs: 1}: as on one GPU,
// the ops with a GPU kernel on the device).
func loopPlanOn(t testing.TB, pl Placement, counter, acc string, chain int, par int64, fetch bool) (*Plan, int, int) {
	t.Helper()
	x, n := node("x", "ExecTestAdd", 0), node("n", "ExecTestAdd", 0)
	var a1 *graph.Node
	w := newWhileLoop(node("zero", "ExecTestAdd", 0), x, n, counter, par, func(v, _ graph.Output) *graph.Node {
		a1 = bodyNode("acc_plus_1", acc, 1, v)
		last := a1
		for k := 1; k < chain; k++ {
			last = node(fmt.Sprint("acc_plus_1_", k), acc, 1, last)
		}
		return last
	})
	xa, i1 := w.exitAcc, w.counter
	fetches, targets := []graph.Output{{Node: xa}}, []*graph.Node(nil)
	if !fetch {
		fetches, targets = nil, []*graph.Node{xa}
	}
	p, err := build(nil, []graph.Output{{Node: x}, {Node: n}}, fetches, targets, pl)
	if err != nil {
		t.Fatal(err)
	}
	ci, ai := -1, -1
	for k := range p.nodes {
		switch p.nodes[k].node {
		case i1:
			ci = k
		case a1:
			ai = k
		}
	}
	return p, ci, ai
}

// TestFramesOnStreamsConcurrent: the counter and the accumulator of one
// iteration of a loop, independent and assigned to two groups' host
// streams, run at the same time: each kernel waits for the other to be
// running (ExecTestMeet), so a driver that ran one node at a time would
// fail. parallel_iterations 1 keeps both of one iteration.
func TestFramesOnStreamsConcurrent(t *testing.T) {
	p, ci, ai := loopPlan(t, "ExecTestMeet", "ExecTestMeet", 1, 1, true)
	set := testSet(t, 2, false, 50*time.Microsecond, false)
	sr := &Runtime{Groups: set.Groups(), Assign: make([]int, p.NumNodes()), Holder: &set.Holder, Intra: kernels.Serial{}}
	sr.Assign[ci], sr.Assign[ai] = 0, 1
	for _, iters := range []int{0, 1, 5} {
		x := float32(rand.Intn(100))
		out, _, err := p.Run(context.Background(), sr, []*tensor.Tensor{tensor.ScalarF32(x), tensor.ScalarF32(float32(iters))}, Options{Trace: iters == 1})
		if err != nil {
			t.Fatalf("%d iterations: %v", iters, err)
		}
		if got, want := out[0].F32()[0], x+float32(iters); got != want {
			t.Errorf("%d iterations: got %v, want %v", iters, got, want)
		}
	}
}

// TestFramesOnStreamsError: a kernel that fails on another group's
// stream while other nodes are in flight fails the step with its error,
// naming the node, after every item has reported; the next step runs.
func TestFramesOnStreamsError(t *testing.T) {
	p, ci, ai := loopPlan(t, "ExecTestAdd", "ExecTestFail", 1, 10, true)
	set := testSet(t, 2, false, 50*time.Microsecond, false)
	sr := &Runtime{Groups: set.Groups(), Assign: make([]int, p.NumNodes()), Holder: &set.Holder, Intra: kernels.Serial{}}
	sr.Assign[ci], sr.Assign[ai] = 0, 1
	for _, iters := range []int{4, 0} {
		out, _, err := p.Run(context.Background(), sr, []*tensor.Tensor{tensor.ScalarF32(2), tensor.ScalarF32(float32(iters))}, Options{})
		switch {
		case iters > 0 && (err == nil || status.CodeOf(err) != status.InvalidArgument || !strings.Contains(err.Error(), "acc_plus_1")):
			t.Errorf("%d iterations: error %v, want INVALID_ARGUMENT naming acc_plus_1", iters, err)
		case iters == 0 && err != nil:
			t.Errorf("0 iterations after a failed step: %v", err)
		case iters == 0 && out[0].F32()[0] != 2:
			t.Errorf("0 iterations: got %v, want 2", out[0].F32()[0])
		}
	}
}

// TestFramesOnStreamsCancelled: a step with frames on streams whose
// context is already cancelled fails with CANCELLED, on one group's
// stream and on two, and the next step runs.
func TestFramesOnStreamsCancelled(t *testing.T) {
	p, ci, ai := loopPlan(t, "ExecTestAdd", "ExecTestAdd", 1, 10, true)
	set := testSet(t, 2, false, 0, false)
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	for _, n := range []int{1, 2} {
		sr := &Runtime{Streams: true, Groups: set.Groups()[:n], Holder: &set.Holder, Intra: kernels.Serial{}}
		if n > 1 {
			sr.Assign = make([]int, p.NumNodes())
			sr.Assign[ci], sr.Assign[ai] = 0, 1
		}
		feeds := []*tensor.Tensor{tensor.ScalarF32(1), tensor.ScalarF32(50)}
		if _, _, err := p.Run(cancelled, sr, feeds, Options{}); status.CodeOf(err) != status.Cancelled {
			t.Errorf("%d groups, cancelled: %v, want CANCELLED", n, err)
		}
		out, _, err := p.Run(context.Background(), sr, feeds, Options{})
		if err != nil || out[0].F32()[0] != 51 {
			t.Errorf("%d groups, the step after: %v, %v", n, out, err)
		}
	}
	set.Holder.Drain()
	for _, g := range set.Groups() {
		if b := g.Alloc.Stats().BytesInUse; b != 0 {
			t.Errorf("group %d: %d bytes still allocated", g.ID, b)
		}
	}
}

// TestFramesOnStreamsTargets: a step that fetches nothing (its loop a
// target) ends only once every node has run, on one group's stream and
// on two: its trace holds every kernel of every iteration.
func TestFramesOnStreamsTargets(t *testing.T) {
	p, ci, ai := loopPlan(t, "ExecTestAdd", "ExecTestAdd", 1, 10, false)
	set := testSet(t, 2, false, 200*time.Microsecond, false)
	for _, n := range []int{1, 2} {
		sr := &Runtime{Streams: true, Groups: set.Groups()[:n], Holder: &set.Holder, Intra: kernels.Serial{}}
		if n > 1 {
			sr.Assign = make([]int, p.NumNodes())
			sr.Assign[ci], sr.Assign[ai] = 0, 1
		}
		const iters = 6
		out, st, err := p.Run(context.Background(), sr, []*tensor.Tensor{tensor.ScalarF32(1), tensor.ScalarF32(iters)}, Options{Trace: true})
		if err != nil || len(out) != 0 {
			t.Fatalf("%d groups: %v, %d outputs", n, err, len(out))
		}
		got := 0
		for _, sl := range st.Slices {
			if sl.Name == "i_plus_1" || sl.Name == "acc_plus_1" {
				got++
			}
		}
		if got != 2*iters {
			t.Errorf("%d groups: %d body kernels in the trace, want %d", n, got, 2*iters)
		}
	}
}

// frameForms are the runtimes a plan with frames runs on in the host
// scheduler: the pool step and a one-group stream step (the frame
// driver's inline form, runFramesInline), and two groups' streams with
// the loop's counter and accumulator on different groups (its launching
// form). ci and ai are loopPlan's counter and accumulator.
func frameForms(set *groups.Set, nodes, ci, ai int) []struct {
	name string
	rt   *Runtime
} {
	g := set.Groups()[0]
	two := &Runtime{Groups: set.Groups()[:2], Assign: make([]int, nodes), Holder: &set.Holder, Intra: kernels.Serial{}}
	two.Assign[ci], two.Assign[ai] = 0, 1
	return []struct {
		name string
		rt   *Runtime
	}{
		{"pool", &Runtime{Groups: []*groups.Group{g}, Inter: g.Launch, Intra: kernels.Serial{}}},
		{"streams", &Runtime{Streams: true, Groups: []*groups.Group{g}, Holder: &set.Holder, Intra: kernels.Serial{}}},
		{"assigned", two},
	}
}

// TestFramesEveryForm runs one loop in every form of the frame driver
// the host scheduler has: values equal x + n for random x and n; a
// kernel failing inside the loop fails the step with its error, naming
// the node; an already cancelled step fails with CANCELLED; the step
// after either runs; and every byte is back in the groups' allocators.
// (Before the pool step's frames and a one-group stream step's became
// one inline loop, only the stream forms had error and cancellation
// tests.)
func TestFramesEveryForm(t *testing.T) {
	ok, ci, ai := loopPlan(t, "ExecTestAdd", "ExecTestAdd", 1, 10, true)
	bad, _, _ := loopPlan(t, "ExecTestAdd", "ExecTestFail", 1, 10, true)
	set := testSet(t, 2, false, 20*time.Microsecond, false)
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	for _, f := range frameForms(set, ok.NumNodes(), ci, ai) {
		run := func(p *Plan, ctx context.Context, x float32, n int) (float32, error) {
			out, _, err := p.Run(ctx, f.rt, []*tensor.Tensor{tensor.ScalarF32(x), tensor.ScalarF32(float32(n))}, Options{})
			if err != nil {
				return 0, err
			}
			return out[0].F32()[0], nil
		}
		for _, n := range []int{0, 1, 2 + rand.Intn(30)} {
			x := float32(rand.Intn(100))
			if got, err := run(ok, context.Background(), x, n); err != nil || got != x+float32(n) {
				t.Errorf("%s, %d iterations: got %v, %v, want %v", f.name, n, got, err, x+float32(n))
			}
		}
		_, err := run(bad, context.Background(), 1, 3)
		if status.CodeOf(err) != status.InvalidArgument || !strings.Contains(err.Error(), "acc_plus_1") {
			t.Errorf("%s: a failing loop body gave %v, want INVALID_ARGUMENT naming acc_plus_1", f.name, err)
		}
		// More than 64 tasks, the driver's cancellation check.
		if _, err := run(ok, cancelled, 1, 50); status.CodeOf(err) != status.Cancelled {
			t.Errorf("%s, cancelled: %v, want CANCELLED", f.name, err)
		}
		if got, err := run(ok, context.Background(), 5, 9); err != nil || got != 14 {
			t.Errorf("%s, the step after: got %v, %v, want 14", f.name, got, err)
		}
		set.Holder.Drain()
		for _, g := range set.Groups() {
			if b := g.Alloc.Stats().BytesInUse; b != 0 {
				t.Errorf("%s: group %d: %d bytes still allocated", f.name, g.ID, b)
			}
		}
	}
}

// BenchmarkFrameStreamStep times one step of a while loop of 100
// iterations (11 nodes each, two of them kernels) on host streams: one
// group (MSTREAM_HOST_STREAMS) and two groups with the loop's counter and
// accumulator on different groups.
func BenchmarkFrameStreamStep(b *testing.B) {
	for _, n := range []int{1, 2} {
		b.Run(fmt.Sprintf("groups=%d", n), func(b *testing.B) {
			p, ci, ai := loopPlan(b, "ExecTestAdd", "ExecTestAdd", 1, 10, true)
			set := testSet(b, n, false, 0, false)
			sr := &Runtime{Streams: true, Groups: set.Groups(), Holder: &set.Holder, Intra: kernels.Serial{}}
			if n > 1 {
				sr.Assign = make([]int, p.NumNodes())
				sr.Assign[ci], sr.Assign[ai] = 0, 1
			}
			feeds := []*tensor.Tensor{tensor.ScalarF32(3), tensor.ScalarF32(100)}
			b.ReportAllocs()
			b.ResetTimer()
			for it := 0; it < b.N; it++ {
				out, _, err := p.Run(context.Background(), sr, feeds, Options{})
				if err != nil {
					b.Fatal(err)
				}
				if got := out[0].F32()[0]; got != 103 {
					b.Fatalf("got %v, want 103", got)
				}
			}
		})
	}
}

// BenchmarkWhile1000 times one pool step (one host group, no streams, as
// a session runs it) of loopPlan's while loop for 1000 iterations: a
// counter and an accumulator add, 11 nodes per iteration, the frame
// driver on the caller's goroutine (driveFrames).
func BenchmarkWhile1000(b *testing.B) {
	const iters = 1000
	p, _, _ := loopPlan(b, "ExecTestAdd", "ExecTestAdd", 1, 10, true)
	g := testSet(b, 1, false, 0, false).Pick(0)
	r := &Runtime{Groups: []*groups.Group{g}, Inter: g.Launch, Intra: kernels.Serial{}}
	feeds := []*tensor.Tensor{tensor.ScalarF32(3), tensor.ScalarF32(iters)}
	b.ReportAllocs()
	b.ResetTimer()
	for it := 0; it < b.N; it++ {
		out, _, err := p.Run(context.Background(), r, feeds, Options{})
		if err != nil {
			b.Fatal(err)
		}
		if got := out[0].F32()[0]; got != 3+iters {
			b.Fatalf("got %v, want %v", got, 3+iters)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/iters/1000, "us/iter")
}
