package exec

import (
	"context"
	"fmt"
	"math"
	"math/rand"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"mstream/device"
	"mstream/graph"
	"mstream/groups"
	"mstream/kernels"
	"mstream/proto/tfpb"
	"mstream/status"
	"mstream/tensor"
)

// devLoop is loopPlan's while loop on one emulated GPU, its accumulator
// a chain of chain ExecTestGAdds, and an assignment over n groups: the
// counter and the loop condition on the home group, the accumulator's
// k-th add on group 1+k%(n-1) (with one group, all on it).
func devLoop(t testing.TB, n, chain int, counter, acc string, par int64) (*Plan, []int) {
	p, _, _ := loopPlanOn(t, Placement{GPUs: 1}, counter, acc, chain, par, true)
	if !p.OnGPU() || !p.Deadness() {
		t.Fatalf("plan on the device %v, with control flow %v", p.OnGPU(), p.Deadness())
	}
	if n == 1 {
		return p, nil
	}
	assign := make([]int, len(p.nodes))
	for i := range p.nodes {
		name := p.nodes[i].node.Name
		k := -1
		switch {
		case name == "acc_plus_1":
			k = 0
		case strings.HasPrefix(name, "acc_plus_1_"):
			fmt.Sscan(strings.TrimPrefix(name, "acc_plus_1_"), &k)
		}
		if k >= 0 {
			assign[i] = 1 + k%(n-1)
		}
	}
	return p, assign
}

// BenchmarkDeviceFrameStep times one device step of a while loop of 100
// iterations (a counter and an accumulator of three adds, 13 nodes an
// iteration, four of them kernels) on the emulated GPU: one group, and
// two and four with the accumulator's adds on the other groups (each
// iteration's values cross groups: an event and a wait per crossing).
// The spin cases' accumulator kernels each spin ~5 us of host CPU at
// launch (ExecTestGSpin), as cuLaunchKernel does: what lanes launching
// at once gain shows there. It reports the wall and the process's CPU
// time per iteration.
//
//	go test ./exec -run '^$' -bench DeviceFrameStep -benchmem
func BenchmarkDeviceFrameStep(b *testing.B) {
	const iters = 100
	for _, spin := range []bool{false, true} {
		for _, n := range []int{1, 2, 4} {
			name := fmt.Sprintf("groups=%d", n)
			acc, want := "ExecTestGAdd", float32(3+3*iters)
			if spin {
				name, acc, want = "spin/"+name, "ExecTestGSpin", 3 // GSpin adds nothing
			}
			b.Run(name, func(b *testing.B) {
				p, assign := devLoop(b, n, 3, "ExecTestGAdd", acc, 10)
				set := emuSet(b, n, false, 0)
				sr := &Runtime{Streams: true, Groups: set.Groups(), Assign: assign, ReduceWaits: true, Holder: &set.Holder, Intra: kernels.Serial{}}
				feeds := []*tensor.Tensor{tensor.ScalarF32(3), tensor.ScalarF32(iters)}
				run := func() {
					out, _, err := p.Run(context.Background(), sr, feeds, Options{})
					if err != nil {
						b.Fatal(err)
					}
					if got := out[0].F32()[0]; got != want {
						b.Fatalf("got %v, want %v", got, want)
					}
				}
				for i := 0; i < 5; i++ {
					run()
				}
				b.ReportAllocs()
				b.ResetTimer()
				cpu0 := cpuTime()
				for i := 0; i < b.N; i++ {
					run()
				}
				cpu := cpuTime() - cpu0
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/iters/1000, "us/iter")
				b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N)/iters/1000, "cpu-us/iter")
				b.StopTimer()
				set.Holder.Drain()
			})
		}
	}
}

// barrier is what ExecTestGBarrier's launches meet at: a cyclic
// barrier of parties launches, each blocking until the other launches
// of its round have come, or failing after wait.
var barrier struct {
	mu      sync.Mutex
	cond    *sync.Cond
	n, gen  int
	parties int
	wait    time.Duration
}

// failIn and cancelIn count down the launches of ExecTestGFailLater
// and ExecTestGCancelLater: the launch that takes one to zero fails, or
// calls cancelStep.
var (
	failIn, cancelIn atomic.Int32
	cancelStep       atomic.Pointer[context.CancelFunc]
)

func init() {
	barrier.cond = sync.NewCond(&barrier.mu)
	// plusOne enqueues out = in + 1, its data taken at launch.
	plusOne := func(ctx *kernels.Context) error {
		t, err := ctx.Allocate(0, nil)
		if err != nil {
			return err
		}
		in, out := ctx.Inputs[0].F32(), t.F32()
		return device.Enqueue(ctx.Stream, func() { out[0] = in[0] + 1 })
	}
	kernels.Register(kernels.Def{Op: "ExecTestGBarrier", Device: kernels.GPU, Factory: func(n *graph.Node) (kernels.Kernel, error) {
		return kernels.KernelFunc(func(ctx *kernels.Context) error {
			b := &barrier
			b.mu.Lock()
			gen := b.gen
			if b.n++; b.n == b.parties {
				b.n, b.gen = 0, b.gen+1
				b.cond.Broadcast()
			} else {
				deadline := time.Now().Add(b.wait)
				timer := time.AfterFunc(b.wait, func() {
					b.mu.Lock()
					b.cond.Broadcast()
					b.mu.Unlock()
				})
				for b.gen == gen && time.Now().Before(deadline) {
					b.cond.Wait()
				}
				timer.Stop()
			}
			met := b.gen != gen
			b.mu.Unlock()
			if !met {
				return status.Errorf(status.DeadlineExceeded, "node '%s': the other groups' launches did not come within %v", n.Name, b.wait)
			}
			return plusOne(ctx)
		}), nil
	}})
	kernels.Register(kernels.Def{Op: "ExecTestGFailLater", Device: kernels.GPU, Factory: func(n *graph.Node) (kernels.Kernel, error) {
		return kernels.KernelFunc(func(ctx *kernels.Context) error {
			if failIn.Add(-1) == 0 {
				return status.InvalidArg("node '%s': ExecTestGFailLater fails as asked", n.Name)
			}
			return plusOne(ctx)
		}), nil
	}})
	kernels.Register(kernels.Def{Op: "ExecTestGCancelLater", Device: kernels.GPU, Factory: func(n *graph.Node) (kernels.Kernel, error) {
		return kernels.KernelFunc(func(ctx *kernels.Context) error {
			if cancelIn.Add(-1) == 0 {
				(*cancelStep.Load())()
			}
			return plusOne(ctx)
		}), nil
	}})
}

// whileLoop is a v1 while loop as tf.compat.v1.while_loop writes it:
// "i, acc = zero, x; while i < n: i, acc = i+1, body(acc, i)" over the
// nodes zero, x and n (n an is_constant Enter's), i+1 a counter node
// of its own op, at most par iterations in flight (0: the attr left
// to TF's default). body gets the loop's acc and i (their Switches'
// output 1) and returns the node whose output is the next acc. What
// callers build on: the exits of acc and i, the counter node, the
// condition's i < n (ExecTestGLess).
type whileLoop struct {
	exitAcc, exitI, counter, less *graph.Node
}

func newWhileLoop(zero, x, n *graph.Node, counter string, par int64, body func(acc, i graph.Output) *graph.Node) whileLoop {
	return whileLoopIn("", "loop", graph.Output{Node: zero}, graph.Output{Node: x}, graph.Output{Node: n}, counter, par, body)
}

// whileLoopIn is newWhileLoop's loop in frame, its nodes' names
// prefixed, over values zero, x and n (of an enclosing loop's frame,
// for a nested loop).
func whileLoopIn(prefix, frame string, zero, x, n graph.Output, counter string, par int64, body func(acc, i graph.Output) *graph.Node) whileLoop {
	ent := func(name string, in graph.Output, constant bool) *graph.Node {
		e := flowNode(prefix+name, "Enter", 1, in)
		e.Attrs["frame_name"] = &tfpb.AttrValue{Value: &tfpb.AttrValue_S{S: []byte(frame)}}
		e.Attrs["is_constant"] = &tfpb.AttrValue{Value: &tfpb.AttrValue_B{B: constant}}
		if par > 0 {
			e.Attrs["parallel_iterations"] = &tfpb.AttrValue{Value: &tfpb.AttrValue_I{I: par}}
		}
		return e
	}
	ei, ea, en := ent("enter_i", zero, false), ent("enter_acc", x, false), ent("enter_n", n, true)
	mi := flowNode(prefix+"merge_i", "Merge", 2, graph.Output{Node: ei})
	ma := flowNode(prefix+"merge_acc", "Merge", 2, graph.Output{Node: ea})
	mi.OutTypes[1], ma.OutTypes[1] = tensor.Int32, tensor.Int32
	lt := node(prefix+"less", "ExecTestGLess", 0, mi, en)
	lt.OutTypes = []tensor.DType{tensor.Bool}
	lc := flowNode(prefix+"loop_cond", "LoopCond", 1, graph.Output{Node: lt})
	lc.OutTypes = []tensor.DType{tensor.Bool}
	si := flowNode(prefix+"switch_i", "Switch", 2, graph.Output{Node: mi}, graph.Output{Node: lc})
	sa := flowNode(prefix+"switch_acc", "Switch", 2, graph.Output{Node: ma}, graph.Output{Node: lc})
	w := whileLoop{exitI: flowNode(prefix+"exit_i", "Exit", 1, graph.Output{Node: si}), exitAcc: flowNode(prefix+"exit_acc", "Exit", 1, graph.Output{Node: sa}), less: lt}
	w.counter = bodyNode(prefix+"i_plus_1", counter, 1, graph.Output{Node: si, Index: 1})
	next := body(graph.Output{Node: sa, Index: 1}, graph.Output{Node: si, Index: 1})
	ni := flowNode(prefix+"next_i", "NextIteration", 1, graph.Output{Node: w.counter})
	na := flowNode(prefix+"next_acc", "NextIteration", 1, graph.Output{Node: next})
	mi.Inputs, mi.InTypes = append(mi.Inputs, graph.Output{Node: ni}), append(mi.InTypes, tensor.Float)
	ma.Inputs, ma.InTypes = append(ma.Inputs, graph.Output{Node: na}), append(ma.InTypes, tensor.Float)
	return w
}

// bodyLoop is whileLoop's loop of body (which ignores i) over feeds x,
// n and i0 (zero a GPU node reading i0, so that i starts where the feed
// says), ExecTestGAdd the counter, placed as on one GPU; it fetches acc
// and i. assign gives each node the group named by the longest prefix
// of its name in groups (0 when none).
func bodyLoop(t testing.TB, par int64, body func(acc graph.Output) *graph.Node, groups map[string]int) (*Plan, []int) {
	t.Helper()
	x, n, i0 := node("x", "ExecTestGAdd", 0), node("n", "ExecTestGAdd", 0), node("i0", "ExecTestGAdd", 0)
	w := newWhileLoop(node("zero", "ExecTestGAdd", 0, i0), x, n, "ExecTestGAdd", par, func(acc, _ graph.Output) *graph.Node { return body(acc) })
	xa, xi := w.exitAcc, w.exitI
	p, err := build(nil, []graph.Output{{Node: x}, {Node: n}, {Node: i0}}, []graph.Output{{Node: xa}, {Node: xi}}, nil, Placement{GPUs: 1})
	if err != nil {
		t.Fatal(err)
	}
	if !p.OnGPU() || !p.Deadness() {
		t.Fatalf("plan on the device %v, with control flow %v", p.OnGPU(), p.Deadness())
	}
	assign := make([]int, len(p.nodes))
	for i := range p.nodes {
		name := p.nodes[i].node.Name
		best := ""
		for prefix, g := range groups {
			if strings.HasPrefix(name, prefix) && len(prefix) > len(best) {
				best, assign[i] = prefix, g
			}
		}
	}
	return p, assign
}

// bodyNode is a body node of op on ins (a loop's acc or earlier body
// nodes), adding c where its op does.
func bodyNode(name, op string, c float32, ins ...graph.Output) *graph.Node {
	n := node(name, op, c)
	for _, in := range ins {
		n.Inputs = append(n.Inputs, in)
		n.InTypes = append(n.InTypes, tensor.Float)
	}
	return n
}

// TestFramesLanesOverlap proves that a step with frames over several
// groups launches each group's nodes of a loop body on that group's
// lane: in every iteration a node of each group launches only once the
// other groups' have launched too (a barrier per iteration), which one
// launching goroutine could never do (it fails after the barrier's
// timeout, not hang); lanes meet, every iteration of every step.
func TestFramesLanesOverlap(t *testing.T) {
	for _, groups := range []int{2, 4} {
		t.Run(fmt.Sprint("groups=", groups), func(t *testing.T) {
			rules := map[string]int{}
			p, assign := bodyLoop(t, 1, func(acc graph.Output) *graph.Node {
				var meets []graph.Output
				for k := 0; k < groups; k++ {
					name := fmt.Sprint("meet", k)
					rules[name] = k
					meets = append(meets, graph.Output{Node: bodyNode(name, "ExecTestGBarrier", 0, acc)})
				}
				return bodyNode("sum", "ExecTestGAdd", 0, meets...)
			}, rules)
			set := emuSet(t, groups, false, 0)
			sr := &Runtime{Streams: true, Groups: set.Groups(), Assign: assign, ReduceWaits: true, Holder: &set.Holder, Intra: kernels.Serial{}}
			barrier.mu.Lock()
			barrier.n, barrier.parties, barrier.wait = 0, groups, 10*time.Second
			barrier.mu.Unlock()
			for step, iters := range []int{0, 1, 3, 6} {
				x := float32(step + 1)
				got, _, err := p.Run(context.Background(), sr, []*tensor.Tensor{tensor.ScalarF32(x), tensor.ScalarF32(float32(iters)), tensor.ScalarF32(0)}, Options{Trace: step == 2})
				if err != nil {
					t.Fatalf("%d iterations: %v", iters, err)
				}
				want := x
				for k := 0; k < iters; k++ {
					want = float32(groups) * (want + 1)
				}
				if got[0].F32()[0] != want || got[1].F32()[0] != float32(iters) {
					t.Fatalf("%d iterations: acc %v, i %v; want %v, %d", iters, got[0].F32()[0], got[1].F32()[0], want, iters)
				}
			}
			set.Holder.Drain()
			for _, g := range set.Groups() {
				if b := g.Alloc.Stats().BytesInUse; b != 0 {
					t.Errorf("group %d: %d bytes still allocated after the steps", g.ID, b)
				}
			}
		})
	}
}

// failLoop is a loop over three groups whose body fails when failIn
// counts down to zero (acc' = (acc+1) + (acc+1) otherwise), on group 1
// while the other two groups have work in flight.
func failLoop(t testing.TB, op string) (*Plan, []int) {
	return bodyLoop(t, 10, func(acc graph.Output) *graph.Node {
		a := bodyNode("a", "ExecTestGAdd", 1, acc)
		b := bodyNode("b", op, 0, acc)
		slow := bodyNode("slow", "ExecTestGAdd", 0, graph.Output{Node: a})
		return bodyNode("c", "ExecTestGAdd", 0, graph.Output{Node: slow}, graph.Output{Node: b})
	}, map[string]int{"a": 0, "b": 1, "slow": 2, "c": 2, "i_plus_1": 2})
}

// checkBytes fails t when a group of set still holds memory once the
// holder has drained.
func checkBytes(t *testing.T, set *groups.Set) {
	t.Helper()
	set.Holder.Drain()
	for _, g := range set.Groups() {
		if b := g.Alloc.Stats().BytesInUse; b != 0 {
			t.Errorf("group %d: %d bytes still allocated after the steps", g.ID, b)
		}
	}
}

// loopWant is failLoop's acc after iters iterations from x.
func loopWant(x float32, iters int) float32 {
	for k := 0; k < iters; k++ {
		x = 2 * (x + 1)
	}
	return x
}

// TestFramesLanesFailure: a node that fails in the fourth iteration of
// a loop on one group, while the other groups' lanes have work queued,
// fails the step once, naming it (no hang); every buffer comes back, and
// the next steps run right.
func TestFramesLanesFailure(t *testing.T) {
	p, assign := failLoop(t, "ExecTestGFailLater")
	set := emuSet(t, 3, false, 50*time.Microsecond)
	sr := &Runtime{Streams: true, Groups: set.Groups(), Assign: assign, ReduceWaits: true, Holder: &set.Holder, Intra: kernels.Serial{}}
	feeds := []*tensor.Tensor{tensor.ScalarF32(1), tensor.ScalarF32(10), tensor.ScalarF32(0)}
	for step := 0; step < 4; step++ {
		failIn.Store(4)
		done := make(chan error, 1)
		go func() {
			_, _, err := p.Run(context.Background(), sr, feeds, Options{Trace: step == 1})
			done <- err
		}()
		select {
		case err := <-done:
			if status.CodeOf(err) != status.InvalidArgument || !strings.Contains(err.Error(), "node 'b'") || strings.Count(err.Error(), "fails as asked") != 1 {
				t.Fatalf("step %d: got %v, want one INVALID_ARGUMENT from node 'b'", step, err)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("step %d: a failing lane hung the step", step)
		}
	}
	failIn.Store(-1 << 30)
	got, _, err := p.Run(context.Background(), sr, feeds, Options{})
	if err != nil || got[0].F32()[0] != loopWant(1, 10) {
		t.Errorf("the step after the failed ones: %v %v, want %v", got, err, loopWant(1, 10))
	}
	checkBytes(t, set)
}

// TestFramesLanesCancelled: a step of a long loop over three groups
// whose context is cancelled mid-loop (by a kernel of group 1, in the
// fifth iteration) fails with CANCELLED; every buffer comes back, and
// the next step runs right.
func TestFramesLanesCancelled(t *testing.T) {
	p, assign := failLoop(t, "ExecTestGCancelLater")
	set := emuSet(t, 3, false, 0)
	sr := &Runtime{Streams: true, Groups: set.Groups(), Assign: assign, ReduceWaits: true, Holder: &set.Holder, Intra: kernels.Serial{}}
	// 1000 iterations: acc overflows float32 to +Inf, which is fine.
	feeds := []*tensor.Tensor{tensor.ScalarF32(1), tensor.ScalarF32(1000), tensor.ScalarF32(0)}
	for step := 0; step < 3; step++ {
		ctx, cancel := context.WithCancel(context.Background())
		cancelStep.Store(&cancel)
		cancelIn.Store(5)
		_, _, err := p.Run(ctx, sr, feeds, Options{})
		cancel()
		if status.CodeOf(err) != status.Cancelled {
			t.Fatalf("step %d: %v, want CANCELLED", step, err)
		}
	}
	cancelIn.Store(-1 << 30)
	short := []*tensor.Tensor{tensor.ScalarF32(2), tensor.ScalarF32(7), tensor.ScalarF32(0)}
	got, _, err := p.Run(context.Background(), sr, short, Options{})
	if err != nil || got[0].F32()[0] != loopWant(2, 7) || got[1].F32()[0] != 7 {
		t.Errorf("the step after the cancelled ones: %v %v, want %v", got, err, loopWant(2, 7))
	}
	checkBytes(t, set)
}

// TestFramesLanesAssignments runs emuLoopPlan's loop and cond over 2
// and 4 groups' lanes, every node on a random group (control-flow ops
// included, so values and predicates cross groups through them), with
// and without wait reduction, under the streams' jitter: every value
// right against the closed form, every byte back.
func TestFramesLanesAssignments(t *testing.T) {
	plan := emuLoopPlan(t)
	r := rand.New(rand.NewSource(8))
	for _, n := range []int{2, 4} {
		for _, reduce := range []bool{true, false} {
			set := emuSet(t, n, false, 50*time.Microsecond)
			for seed := 0; seed < 4; seed++ {
				sr := &Runtime{Streams: true, Groups: set.Groups(), ReduceWaits: reduce, Holder: &set.Holder, Intra: kernels.Serial{},
					Assign: make([]int, len(plan.nodes))}
				for i := range sr.Assign {
					sr.Assign[i] = r.Intn(n)
				}
				for it := 0; it < 3; it++ {
					x, iters, p := float32(r.Intn(100)), r.Intn(8), r.Intn(2)
					pred := tensor.New(tensor.Bool, nil)
					pred.Buf[0] = byte(p)
					got, _, err := plan.Run(context.Background(), sr, []*tensor.Tensor{tensor.ScalarF32(x), tensor.ScalarF32(float32(iters)), pred}, Options{Trace: it == 1})
					if err != nil {
						t.Fatalf("groups=%d reduce=%v assign %v: %v", n, reduce, sr.Assign, err)
					}
					want := x + float32(iters*(iters-1)/2) + float32(2-p)
					if g, gi, gx := got[0].F32()[0], got[1].F32()[0], got[2].I32()[0]; g != want || gi != float32(iters) || gx != int32(p) {
						t.Fatalf("groups=%d reduce=%v assign %v: x=%v n=%d p=%d: got %v, %v, %v; want %v, %d, %d",
							n, reduce, sr.Assign, x, iters, p, g, gi, gx, want, iters, p)
					}
				}
			}
			checkBytes(t, set)
		}
	}
}

// slotBits is a device "variable" of the ordering tests:
// ExecTestGStore's work writes it on its stream, ExecTestGLoad's reads
// it, so a load follows a store only as far as the streams order them.
var slotBits atomic.Uint32

func init() {
	// ExecTestGStore stores its input plus c and gives it; with attr
	// "empty" it gives an empty tensor instead.
	kernels.Register(kernels.Def{Op: "ExecTestGStore", Device: kernels.GPU, Factory: func(n *graph.Node) (kernels.Kernel, error) {
		c, empty := float32(n.Attrs["c"].GetF()), n.Attrs["empty"] != nil
		return kernels.KernelFunc(func(ctx *kernels.Context) error {
			var shape tensor.Shape
			if empty {
				shape = tensor.Shape{0}
			}
			t, err := ctx.Allocate(0, shape)
			if err != nil {
				return err
			}
			in, out := ctx.Inputs[0].F32(), t.F32()
			return device.Enqueue(ctx.Stream, func() {
				v := in[0] + c
				if !empty {
					out[0] = v
				}
				slotBits.Store(math.Float32bits(v))
			})
		}), nil
	}})
	load := func(n *graph.Node) (kernels.Kernel, error) {
		return kernels.KernelFunc(func(ctx *kernels.Context) error {
			t, err := ctx.Allocate(0, nil)
			if err != nil {
				return err
			}
			out := t.F32()
			return device.Enqueue(ctx.Stream, func() { out[0] = math.Float32frombits(slotBits.Load()) })
		}), nil
	}
	kernels.Register(kernels.Def{Op: "ExecTestGLoad", Device: kernels.GPU, Factory: load})
	// ExecTestGLoadHostIn loads as ExecTestGLoad does, its input (arg
	// "y") in host memory, as TF's HostMemory shape inputs are.
	kernels.Register(kernels.Def{Op: "ExecTestGLoadHostIn", Device: kernels.GPU, HostMemory: []string{"y"}, Factory: load})
}

// loadHostIn is an ExecTestGLoadHostIn node named name reading in.
func loadHostIn(name string, in graph.Output) *graph.Node {
	n := bodyNode(name, "ExecTestGLoadHostIn", 0, in)
	n.InTypes[0] = in.Node.OutTypes[in.Index]
	n.InArgs = map[string][2]int{"y": {0, 1}}
	return n
}

// TestFramesLanesControlThroughFlow proves that a control edge from or
// into a node that launches nothing (a control-flow op, a
// ControlTrigger, a host NoOp) orders device work across groups as one
// stream does: a load on one group, ordered by such a chain after a
// store on another, reads that store, over jittered streams, with wait
// reduction on and off (and on one group, where one stream orders
// them). Each case fetches the stored value and the load's. Before the
// fix the driver kept no record for those nodes and the load waited
// for nothing.
func TestFramesLanesControlThroughFlow(t *testing.T) {
	type graphOf func(x, n *graph.Node) (want *graph.Node, after *graph.Node, targets []*graph.Node)
	pred := func(x, n *graph.Node) *graph.Node {
		p := node("pred", "ExecTestGLess", 0, x, n)
		p.OutTypes = []tensor.DType{tensor.Bool}
		return p
	}
	cases := []struct {
		name  string
		iters bool // n is a loop's count (at least 1), else x < n picks a cond's side
		g     graphOf
	}{
		{"from-exit", true, func(x, n *graph.Node) (*graph.Node, *graph.Node, []*graph.Node) {
			w := newWhileLoop(node("zero", "ExecTestGAdd", 0), x, n, "ExecTestGAdd", 1, func(acc, _ graph.Output) *graph.Node {
				return bodyNode("store", "ExecTestGStore", 3, acc)
			})
			return w.exitAcc, w.exitAcc, nil
		}},
		{"from-merge", false, func(x, n *graph.Node) (*graph.Node, *graph.Node, []*graph.Node) {
			sw := flowNode("switch", "Switch", 2, graph.Output{Node: x}, graph.Output{Node: pred(x, n)})
			m := flowNode("merge", "Merge", 2, graph.Output{Node: bodyNode("store_f", "ExecTestGStore", 5, graph.Output{Node: sw})},
				graph.Output{Node: bodyNode("store_t", "ExecTestGStore", 3, graph.Output{Node: sw, Index: 1})})
			m.OutTypes[1] = tensor.Int32
			return m, m, nil
		}},
		{"from-switch", false, func(x, n *graph.Node) (*graph.Node, *graph.Node, []*graph.Node) {
			s := node("store", "ExecTestGStore", 3, x)
			sw := flowNode("switch", "Switch", 2, graph.Output{Node: s}, graph.Output{Node: pred(x, n)})
			sw.Controls = []*graph.Node{node("pre", "ExecTestGAdd", 0, x)} // and a control edge into it
			return s, sw, nil
		}},
		{"from-trigger", false, func(x, n *graph.Node) (*graph.Node, *graph.Node, []*graph.Node) {
			s := node("store", "ExecTestGStore", 3, x)
			tr := flowNode("trigger", "ControlTrigger", 0)
			tr.Controls = []*graph.Node{s}
			return s, tr, []*graph.Node{flowNode("switch", "Switch", 2, graph.Output{Node: x}, graph.Output{Node: pred(x, n)})}
		}},
		{"from-noop", false, func(x, n *graph.Node) (*graph.Node, *graph.Node, []*graph.Node) {
			s := node("store", "ExecTestGStore", 3, x)
			op := node("store_noop", "NoOp", 0)
			op.OutTypes, op.OutShapes, op.Attrs = nil, nil, map[string]*tfpb.AttrValue{}
			op.Controls = []*graph.Node{s}
			return s, op, []*graph.Node{flowNode("switch", "Switch", 2, graph.Output{Node: x}, graph.Output{Node: pred(x, n)})}
		}},
		{"into-enter", true, func(x, n *graph.Node) (*graph.Node, *graph.Node, []*graph.Node) {
			s := node("store", "ExecTestGStore", 3, x)
			// The loop's body loads (on the loading group): its first
			// iteration reads what s stored before the loop.
			w := newWhileLoop(node("zero", "ExecTestGAdd", 0), x, n, "ExecTestGAdd", 1, func(acc, _ graph.Output) *graph.Node {
				return bodyNode("load", "ExecTestGLoad", 0, acc)
			})
			ea := w.exitAcc.Inputs[0].Node.Inputs[0].Node.Inputs[0].Node // exit <- switch <- merge <- enter
			ea.Controls = []*graph.Node{s}
			return s, w.exitAcc, nil
		}},
	}
	for _, c := range cases {
		for _, groups := range []int{1, 2, 3} {
			for _, reduce := range []bool{true, false} {
				t.Run(fmt.Sprintf("%s/groups=%d/reduce=%v", c.name, groups, reduce), func(t *testing.T) {
					x, n := node("x", "ExecTestGAdd", 0), node("n", "ExecTestGAdd", 0)
					want, after, targets := c.g(x, n)
					fetches := []graph.Output{{Node: want}}
					if c.name != "into-enter" {
						y := node("y_load", "ExecTestGLoad", 0, x)
						y.Controls = []*graph.Node{after}
						fetches = append(fetches, graph.Output{Node: y})
					} else {
						fetches = append(fetches, graph.Output{Node: after})
					}
					p, err := build(nil, []graph.Output{{Node: x}, {Node: n}}, fetches, targets, Placement{GPUs: 1})
					if err != nil {
						t.Fatal(err)
					}
					// The stores (and the NoOp) on group 1, the loads on
					// group 0 of two, 2 of three, the rest on group 0.
					assign := make([]int, len(p.nodes))
					for i := range p.nodes {
						switch nm := p.nodes[i].node.Name; {
						case groups == 1:
						case strings.HasPrefix(nm, "store"):
							assign[i] = 1
						case (nm == "y_load" || nm == "load") && groups == 3:
							assign[i] = 2
						}
					}
					if !p.deadness {
						t.Fatal("the plan has no frames or dead tensors: it would not test the frame driver")
					}
					set := emuSet(t, groups, false, 0)
					sr := &Runtime{Streams: true, Groups: set.Groups(), Assign: assign, ReduceWaits: reduce, Holder: &set.Holder, Jitter: time.Millisecond}
					nmax := 200
					if c.iters {
						nmax = 3
					}
					if bad := storeLoadSteps(t, p, sr, nmax); bad > 0 {
						t.Errorf("%d of %d steps: the load did not follow the store its control edge orders it after", bad, storeLoadRuns)
					}
				})
			}
		}
	}
}

// TestFramesDriverPanicFailsStep proves that a panic in the frame
// driver's bookkeeping while it hands on a launched node's outputs, on
// the goroutine that reports the launch (a lane's, where nothing else
// would catch it), fails the step with INTERNAL instead of killing the
// process: each launch here reports no outputs, which the driver
// indexes.
func TestFramesDriverPanicFailsStep(t *testing.T) {
	p, _ := bodyLoop(t, 1, func(acc graph.Output) *graph.Node { return bodyNode("c", "ExecTestGAdd", 1, acc) }, nil)
	var recs fvals
	feeds := make([]*fval, len(p.feeds))
	for k := range feeds {
		feeds[k] = recs.host(tensor.ScalarF32(1))
	}
	r := newFrameRun(p, feeds, func(i int32, pn *planNode, ins []*fval) ([]*fval, error) {
		return recs.flowOp(pn, ins, nil)
	})
	r.launch = func(i int32, pn *planNode, ins []*fval, done func([]*fval, error)) error {
		go done(nil, nil) // outputs missing: handing them on panics
		return nil
	}
	ended := make(chan error, 1)
	r.start(context.Background(), func(err error) { ended <- err })
	select {
	case err := <-ended:
		if status.CodeOf(err) != status.Internal || !strings.Contains(err.Error(), "panicked") {
			t.Fatalf("got %v, want INTERNAL naming the panic", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("the step never ended")
	}
}

// TestFramesLanesOrderThroughRelayedValues proves that a value the
// driver makes without a launch (a Switch's output, a Merge's
// value_index, a host kernel's or a Const's value) or a forwarded host
// copy carries what the node ran after: a load on one group, ordered
// after a store on another only through such a value, reads that store,
// over jittered streams, with wait reduction on and off.
// host-pred: the store orders (a control edge) a host kernel whose
// value is a Switch's predicate, and the loads read the Switch's
// outputs; the Switch on the store's group (where no lane waits for the
// store unless the relay records it) and on the loads'. fwd-pred: the
// same predicate through a forwarding GPU kernel (ExecTestView, as
// Identity or Reshape: its host copy is its input's), the host kernel
// on the store's group or not. host-copy: the loads read in host memory
// a value whose host copy exists, passed on by a Switch that runs after
// the store. fwd-host-in: the load reads in host memory a forwarding
// kernel's value (its input's host copy) of a host kernel that runs
// after the store, or the forwarding kernel runs after it. relayed-host-copy-pred: a device predicate read back
// by a Switch that runs after the store and passes it on (its host copy
// was read back before the store): a second Switch on it picks the
// loads' side. host-reads-empty: a host kernel reads back the store's
// empty value, and the load runs after it (it reads x+3, the value
// stored). merge-index: the load reads the value_index of a Merge
// of two stores. const-pred: a Bool Const that runs after the store is
// a Switch's predicate. merge-const: each branch of a cond stores and
// runs a Const after its store; the load reads their Merge.
func TestFramesLanesOrderThroughRelayedValues(t *testing.T) {
	pred := func(x, n *graph.Node) *graph.Node {
		p := node("pred", "ExecTestGLess", 0, x, n)
		p.OutTypes = []tensor.DType{tensor.Bool}
		return p
	}
	// fwdHostIn: store -> (control) -> host kernel h -> ExecTestView ->
	// a load reading it in host memory (the control edge into the view
	// instead where ctlView); a Switch (a target) makes the plan one
	// with frames.
	fwdHostIn := func(h string, ctlView bool) func(x, n *graph.Node) (*graph.Node, *graph.Node, []*graph.Node) {
		return func(x, n *graph.Node) (*graph.Node, *graph.Node, []*graph.Node) {
			s := node("store", "ExecTestGStore", 3, x)
			a := node(h, "ExecTestAdd", 0, x)
			v := node("store_view", "ExecTestView", 0, a)
			if ctlView {
				v.Controls = []*graph.Node{s}
			} else {
				a.Controls = []*graph.Node{s}
			}
			return s, loadHostIn("load", graph.Output{Node: v}), []*graph.Node{flowNode("switch", "Switch", 2, graph.Output{Node: x}, graph.Output{Node: pred(x, n)})}
		}
	}
	cases := []struct {
		name string
		// g returns the node whose output 0 is the stored value, the one
		// whose output 0 is the load's, and targets.
		g func(x, n *graph.Node) (stored, loaded *graph.Node, targets []*graph.Node)
	}{
		{"host-pred/switch-on-store", hostPredSwitch("store_pred", "", "store_switch")},
		{"host-pred/switch-on-load", hostPredSwitch("store_pred", "", "load_switch")},
		{"fwd-pred/pred-on-store", hostPredSwitch("store_pred", "store_view", "switch")},
		{"fwd-pred/pred-elsewhere", hostPredSwitch("pred", "store_view", "switch")},
		// A device value read back by a host kernel, then passed on by a
		// Switch that runs after the store: a load reading the Switch's
		// output in host memory (the host copy) still follows the store.
		{"host-copy", func(x, n *graph.Node) (*graph.Node, *graph.Node, []*graph.Node) {
			s := node("store", "ExecTestGStore", 3, x)
			a := node("a", "ExecTestGAdd", 1, x)
			h := node("a_host", "ExecTestAdd", 0, a) // reads a back: a's host copy
			sw := flowNode("switch", "Switch", 2, graph.Output{Node: a}, graph.Output{Node: pred(x, n)})
			sw.Controls = []*graph.Node{s, h}
			return s, loadMerge(sw, loadHostIn), nil
		}},
		{"fwd-host-in/host-on-store", fwdHostIn("store_host", false)},
		{"fwd-host-in/host-elsewhere", fwdHostIn("host", false)},
		{"fwd-host-in/control-into-view", fwdHostIn("host", true)},
		{"relayed-host-copy-pred", func(x, n *graph.Node) (*graph.Node, *graph.Node, []*graph.Node) {
			s := node("store", "ExecTestGStore", 3, x)
			p := pred(x, n)
			sw1 := flowNode("sw1", "Switch", 2, graph.Output{Node: p}, graph.Output{Node: p}) // reads p back
			sw1.OutTypes = []tensor.DType{tensor.Bool, tensor.Bool}
			sw1.Controls = []*graph.Node{s}
			m1 := flowNode("m1", "Merge", 2, graph.Output{Node: sw1}, graph.Output{Node: sw1, Index: 1})
			m1.OutTypes = []tensor.DType{tensor.Bool, tensor.Int32}
			return s, loadMerge(flowNode("sw2", "Switch", 2, graph.Output{Node: x}, graph.Output{Node: m1}), loadOn), nil
		}},
		{"host-reads-empty", func(x, n *graph.Node) (*graph.Node, *graph.Node, []*graph.Node) {
			s := node("store", "ExecTestGStore", 3, x)
			s.Attrs["empty"] = &tfpb.AttrValue{Value: &tfpb.AttrValue_B{B: true}}
			s.OutShapes = []tensor.PartialShape{tensor.KnownShape(tensor.Shape{0})}
			h := node("store_host", "ExecTestAdd", 0, s) // reads s's empty value back
			y := node("load", "ExecTestGLoad", 0, x)
			y.Controls = []*graph.Node{h}
			sw := flowNode("switch", "Switch", 2, graph.Output{Node: x}, graph.Output{Node: pred(x, n)})
			return node("want", "ExecTestGAdd", 3, x), y, []*graph.Node{sw}
		}},
		{"merge-index", func(x, n *graph.Node) (*graph.Node, *graph.Node, []*graph.Node) {
			sw := flowNode("switch", "Switch", 2, graph.Output{Node: x}, graph.Output{Node: pred(x, n)})
			m := flowNode("store_merge", "Merge", 2, graph.Output{Node: bodyNode("store_f", "ExecTestGStore", 5, graph.Output{Node: sw})},
				graph.Output{Node: bodyNode("store_t", "ExecTestGStore", 3, graph.Output{Node: sw, Index: 1})})
			m.OutTypes[1] = tensor.Int32
			y := bodyNode("load", "ExecTestGLoad", 0, graph.Output{Node: m, Index: 1})
			y.InTypes[0] = tensor.Int32
			return m, y, nil
		}},
		{"const-pred", func(x, n *graph.Node) (*graph.Node, *graph.Node, []*graph.Node) {
			s := node("store", "ExecTestGStore", 3, x)
			k := boolConst("kpred", true)
			k.Controls = []*graph.Node{s}
			return s, loadMerge(flowNode("switch", "Switch", 2, graph.Output{Node: x}, graph.Output{Node: k}), loadOn), nil
		}},
		{"merge-const", func(x, n *graph.Node) (*graph.Node, *graph.Node, []*graph.Node) {
			sw := flowNode("switch", "Switch", 2, graph.Output{Node: x}, graph.Output{Node: pred(x, n)})
			sf := bodyNode("store_f", "ExecTestGStore", 5, graph.Output{Node: sw})
			st := bodyNode("store_t", "ExecTestGStore", 3, graph.Output{Node: sw, Index: 1})
			kf, kt := constNode("kf"), constNode("kt")
			kf.Controls, kt.Controls = []*graph.Node{sf}, []*graph.Node{st}
			sm := flowNode("store_merge", "Merge", 2, graph.Output{Node: sf}, graph.Output{Node: st})
			sm.OutTypes[1] = tensor.Int32
			km := flowNode("kmerge", "Merge", 2, graph.Output{Node: kf}, graph.Output{Node: kt})
			km.OutTypes[1] = tensor.Int32
			return sm, bodyNode("load", "ExecTestGLoad", 0, graph.Output{Node: km}), nil
		}},
	}
	for _, c := range cases {
		for _, groups := range []int{2, 3} {
			for _, reduce := range []bool{true, false} {
				t.Run(fmt.Sprintf("%s/groups=%d/reduce=%v", c.name, groups, reduce), func(t *testing.T) {
					x, n := node("x", "ExecTestGAdd", 0), node("n", "ExecTestGAdd", 0)
					stored, loaded, targets := c.g(x, n)
					p, err := build(nil, []graph.Output{{Node: x}, {Node: n}}, []graph.Output{{Node: stored}, {Node: loaded}}, targets, Placement{GPUs: 1})
					if err != nil {
						t.Fatal(err)
					}
					if !p.deadness {
						t.Fatal("the plan has no frames or dead tensors: it would not test the frame driver")
					}
					// The store's nodes on group 1, the load's on group 0
					// of two, 2 of three, the rest on group 0.
					assign := make([]int, len(p.nodes))
					for i := range p.nodes {
						switch nm := p.nodes[i].node.Name; {
						case strings.HasPrefix(nm, "store"):
							assign[i] = 1
						case strings.HasPrefix(nm, "load") && groups == 3:
							assign[i] = 2
						}
					}
					set := emuSet(t, groups, false, 0)
					sr := &Runtime{Streams: true, Groups: set.Groups(), Assign: assign, ReduceWaits: reduce, Holder: &set.Holder, Jitter: time.Millisecond}
					if bad := storeLoadSteps(t, p, sr, 200); bad > 0 {
						t.Errorf("%d of %d steps: the load did not follow the store the relayed value orders it after", bad, storeLoadRuns)
					}
				})
			}
		}
	}
}

// hostPredSwitch is store -> (control) -> host predicate (named pred)
// -> an ExecTestView (named view; none when "") -> Switch (named sw) ->
// a load on each side, merged: the store's value and the merged load's.
func hostPredSwitch(pred, view, sw string) func(x, n *graph.Node) (*graph.Node, *graph.Node, []*graph.Node) {
	return func(x, n *graph.Node) (*graph.Node, *graph.Node, []*graph.Node) {
		s := node("store", "ExecTestGStore", 3, x)
		h := node(pred, "ExecTestHostLess", 0, x, n)
		h.OutTypes = []tensor.DType{tensor.Bool}
		h.Controls = []*graph.Node{s}
		if view != "" {
			h = node(view, "ExecTestView", 0, h)
			h.InTypes = []tensor.DType{tensor.Bool}
			h.OutTypes = []tensor.DType{tensor.Bool}
		}
		return s, loadMerge(flowNode(sw, "Switch", 2, graph.Output{Node: x}, graph.Output{Node: h}), loadOn), nil
	}
}

// loadMerge is a load (of load's op) on each side of Switch w, merged.
func loadMerge(w *graph.Node, load func(name string, in graph.Output) *graph.Node) *graph.Node {
	m := flowNode("load_merge", "Merge", 2, graph.Output{Node: load("load_f", graph.Output{Node: w})}, graph.Output{Node: load("load_t", graph.Output{Node: w, Index: 1})})
	m.OutTypes[1] = tensor.Int32
	return m
}

// loadOn is an ExecTestGLoad node named name reading in.
func loadOn(name string, in graph.Output) *graph.Node {
	return bodyNode(name, "ExecTestGLoad", 0, in)
}

// boolConst is a scalar Bool Const of value v.
func boolConst(name string, v bool) *graph.Node {
	n := node(name, "Const", 0)
	n.OutTypes = []tensor.DType{tensor.Bool}
	n.Attrs = map[string]*tfpb.AttrValue{
		"dtype": {Value: &tfpb.AttrValue_Type{Type: tfpb.DataType(tensor.Bool)}},
		"value": {Value: &tfpb.AttrValue_Tensor{Tensor: &tfpb.TensorProto{Dtype: tfpb.DataType(tensor.Bool), TensorShape: &tfpb.TensorShapeProto{}, BoolVal: []bool{v}}}},
	}
	return n
}

// TestFramesLanesLoopConstControl proves that a loop body's Const with a
// control edge (TF hangs a body's constants off the loop's pivot)
// orders its readers after its control predecessor of the same
// iteration, though the driver computes its value once a step: the body
// stores acc+3, a Const runs after the store, and a load on another
// group reads the Const and gives the next acc, so acc grows by 3 an
// iteration only where every iteration's load follows that iteration's
// store. nested: that body is an inner loop's, in each iteration of an
// outer loop, and the inner loop's counter starts at a Const hung off
// the outer iteration's pivot (4 inner iterations).
func TestFramesLanesLoopConstControl(t *testing.T) {
	// body is the store, the Const and the load on acc, the Const also
	// after pivot where not nil.
	body := func(acc graph.Output, pivot *graph.Node) *graph.Node {
		s := bodyNode("store", "ExecTestGStore", 3, acc)
		k := constNode("store_const")
		k.Controls = []*graph.Node{s}
		if pivot != nil {
			k.Controls = append(k.Controls, pivot)
		}
		return bodyNode("load", "ExecTestGLoad", 0, graph.Output{Node: k})
	}
	nested := func(acc graph.Output) *graph.Node {
		pivot := bodyNode("o_pivot", "ExecTestGAdd", 0, acc)
		zero := constNode("o_zero") // 2
		zero.Controls = []*graph.Node{pivot}
		n := node("o_n", "ExecTestGAdd", 4, zero) // 6
		return whileLoopIn("in_", "inner", graph.Output{Node: zero}, acc, graph.Output{Node: n}, "ExecTestGAdd", 1, func(acc, i graph.Output) *graph.Node {
			return body(acc, bodyNode("in_pivot", "ExecTestGAdd", 0, i))
		}).exitAcc
	}
	for _, inner := range []int{0, 4} {
		for _, groups := range []int{2, 3} {
			for _, reduce := range []bool{true, false} {
				for _, par := range []int64{1, 10} {
					t.Run(fmt.Sprintf("nested=%v/groups=%d/reduce=%v/par=%d", inner > 0, groups, reduce, par), func(t *testing.T) {
						load := 0
						if groups == 3 {
							load = 2
						}
						b := func(acc graph.Output) *graph.Node { return body(acc, nil) }
						if inner > 0 {
							b = nested
						}
						p, assign := bodyLoop(t, par, b, map[string]int{"store": 1, "load": load, "o_pivot": 1, "in_pivot": 1})
						set := emuSet(t, groups, false, 0)
						sr := &Runtime{Streams: true, Groups: set.Groups(), Assign: assign, ReduceWaits: reduce, Holder: &set.Holder, Jitter: time.Millisecond}
						r := rand.New(rand.NewSource(1))
						bad := 0
						for k := 0; k < storeLoadRuns; k++ {
							x, iters := float32(1+r.Intn(100)), 2+r.Intn(4)
							got, _, err := p.Run(context.Background(), sr, []*tensor.Tensor{tensor.ScalarF32(x), tensor.ScalarF32(float32(iters)), tensor.ScalarF32(0)}, Options{})
							if err != nil {
								t.Fatal(err)
							}
							if want := x + 3*float32(iters*max(inner, 1)); got[0].F32()[0] != want {
								if bad++; bad <= 3 {
									t.Logf("step %d: x=%v, %d iterations: acc %v, want %v", k, x, iters, got[0].F32()[0], want)
								}
							}
						}
						if bad > 0 {
							t.Errorf("%d of %d steps: a load did not follow its iteration's store", bad, storeLoadRuns)
						}
					})
				}
			}
		}
	}
}

// TestFramesLanesHostFeedWaitsForNothing: a feed held on the host (read
// only in host memory) has no device copy on the home group to wait
// for, unlike the device feeds before it: a kernel of another group
// reading it waits for nothing. Before the fix every feed after the
// first device feed carried the feeds' copies' record, and the kernel
// waited for them in every step.
func TestFramesLanesHostFeedWaitsForNothing(t *testing.T) {
	x, n, h := node("x", "ExecTestGAdd", 0), node("n", "ExecTestGAdd", 0), node("h", "ExecTestGAdd", 0)
	p := node("pred", "ExecTestGLess", 0, x, n)
	p.OutTypes = []tensor.DType{tensor.Bool}
	sw := flowNode("switch", "Switch", 2, graph.Output{Node: x}, graph.Output{Node: p})
	k := loadHostIn("k", graph.Output{Node: h})
	plan, err := build(nil, []graph.Output{{Node: x}, {Node: n}, {Node: h}}, []graph.Output{{Node: k}}, []*graph.Node{sw}, Placement{GPUs: 1})
	if err != nil {
		t.Fatal(err)
	}
	if !plan.deadness || !plan.feedDev[0] || plan.feedDev[2] {
		t.Fatalf("frames %v, feeds on the device %v: want frames, x on the device, h on the host", plan.deadness, plan.feedDev)
	}
	assign := make([]int, len(plan.nodes))
	for i := range plan.nodes {
		if plan.nodes[i].node.Name == "k" {
			assign[i] = 1
		}
	}
	for _, reduce := range []bool{true, false} {
		set := emuSet(t, 2, false, 0)
		var waits atomic.Int32
		sr := &Runtime{Streams: true, Groups: set.Groups(), Assign: assign, ReduceWaits: reduce, Holder: &set.Holder, Jitter: 100 * time.Microsecond,
			DropWait: func(int, int) bool { waits.Add(1); return false }}
		for step := 0; step < 3; step++ {
			feeds := []*tensor.Tensor{tensor.ScalarF32(1), tensor.ScalarF32(2), tensor.ScalarF32(3)}
			if _, _, err := plan.Run(context.Background(), sr, feeds, Options{}); err != nil {
				t.Fatal(err)
			}
		}
		if w := waits.Load(); w != 0 {
			t.Errorf("reduce=%v: %d waits in 3 steps, want none (k reads only a host feed)", reduce, w)
		}
		checkBytes(t, set)
	}
}

// TestFramesLanesHostCondWaitsForNothing: a loop whose condition is a
// host kernel (ExecTestHostLess) reading the counter back, the body's
// kernel on group 1, the rest on group 0, waits across groups no more
// than one whose condition is a device kernel read back by the
// Switches: the host kernel's value carries what its device inputs
// were read back after, not their launches (complete then). Before the
// fix it carried the counter's launch, and the body's kernel waited for
// it in every iteration (12 waits in 3 steps of 5 iterations, not 0).
func TestFramesLanesHostCondWaitsForNothing(t *testing.T) {
	for _, reduce := range []bool{true, false} {
		var waits [2]int32
		for k, cond := range []string{"ExecTestGLess", "ExecTestHostLess"} {
			x, n, i0 := node("x", "ExecTestGAdd", 0), node("n", "ExecTestGAdd", 0), node("i0", "ExecTestGAdd", 0)
			w := newWhileLoop(node("zero", "ExecTestGAdd", 0, i0), x, n, "ExecTestGAdd", 1, func(acc, _ graph.Output) *graph.Node {
				return bodyNode("body", "ExecTestGAdd", 1, acc)
			})
			w.less.Op = cond
			p, err := build(nil, []graph.Output{{Node: x}, {Node: n}, {Node: i0}}, []graph.Output{{Node: w.exitAcc}}, nil, Placement{GPUs: 1})
			if err != nil {
				t.Fatal(err)
			}
			assign := make([]int, len(p.nodes))
			for i := range p.nodes {
				switch pn := &p.nodes[i]; pn.node.Name {
				case "body":
					assign[i] = 1
				case "less":
					if (pn.where == onGPU) != (k == 0) {
						t.Fatalf("%s placed on the GPU %v", cond, pn.where == onGPU)
					}
				}
			}
			set := emuSet(t, 2, false, 0)
			var c atomic.Int32
			sr := &Runtime{Streams: true, Groups: set.Groups(), Assign: assign, ReduceWaits: reduce, Holder: &set.Holder,
				DropWait: func(int, int) bool { c.Add(1); return false }}
			for step := 0; step < 3; step++ {
				got, _, err := p.Run(context.Background(), sr, []*tensor.Tensor{tensor.ScalarF32(1), tensor.ScalarF32(5), tensor.ScalarF32(0)}, Options{Trace: true})
				if err != nil {
					t.Fatal(err)
				}
				if got[0].F32()[0] != 6 {
					t.Fatalf("%s: acc %v, want 6", cond, got[0].F32()[0])
				}
			}
			waits[k] = c.Load()
			checkBytes(t, set)
		}
		t.Logf("reduce=%v: %d waits in 3 steps of 5 iterations with a device condition, %d with a host one", reduce, waits[0], waits[1])
		if waits[1] > waits[0] {
			t.Errorf("reduce=%v: %d waits in 3 steps of 5 iterations with a host condition, %d with a device one", reduce, waits[1], waits[0])
		}
	}
}
