package exec

import (
	"context"
	"fmt"
	"math/rand"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"mstream/graph"
	"mstream/groups"
	"mstream/kernels"
	"mstream/proto/tfpb"
	"mstream/status"
	"mstream/tensor"
)

// addScalars is ExecTestAdd's computation: its output, a float32 scalar,
// is c plus every element of its float32 inputs (scalars but for an
// empty one).
func addScalars(ctx *kernels.Context, c float32) error {
	sum := c
	for _, in := range ctx.Inputs {
		for _, v := range in.F32() {
			sum += v
		}
	}
	t, err := ctx.Allocate(0, nil)
	if err != nil {
		return err
	}
	t.F32()[0] = sum
	return nil
}

// Test ops, registered under names TF does not use, so the plan can be
// tested without the graph builder or the real kernels.
func init() {
	// ExecTestAdd: sum of its float32 inputs plus the "c" attr.
	addAfter("ExecTestAdd", func(*kernels.Context) {})
	kernels.Register(kernels.Def{Op: "ExecTestFail", Device: kernels.CPU, Factory: func(n *graph.Node) (kernels.Kernel, error) {
		return kernels.KernelFunc(func(ctx *kernels.Context) error {
			return ctx.Errorf(status.InvalidArgument, "planned failure")
		}), nil
	}})
	// ExecTestSpinAdd: ExecTestAdd after spinning twice the expensive
	// threshold, enough to be offered to an idle inter-op worker.
	addAfter("ExecTestSpinAdd", func(*kernels.Context) { spinExpensive() })
	// ExecTestSpinCount: ExecTestSpinAdd, counted in spinCounted.
	addAfter("ExecTestSpinCount", func(*kernels.Context) {
		spinCounted.Add(1)
		spinExpensive()
	})
	// ExecTestIntraSteps: ExecTestAdd that records the host steps its
	// intra-op pool says run on it (Intra.runs) in intraSteps.
	addAfter("ExecTestIntraSteps", func(ctx *kernels.Context) {
		if ip := intraOf(ctx.Pool); ip != nil {
			intraSteps.Store(ip.runs.Load())
		}
	})
	// ExecTestPoolKind: ExecTestAdd that records the loop mode its
	// step's pool says in poolKind: "eager" (the Intra), "split"
	// (splitLoops), "whole" (wholeLoops) or "other".
	addAfter("ExecTestPoolKind", func(ctx *kernels.Context) {
		switch ctx.Pool.(type) {
		case *Intra:
			poolKind.Store("eager")
		case splitLoops:
			poolKind.Store("split")
		case wholeLoops:
			poolKind.Store("whole")
		default:
			poolKind.Store("other")
		}
	})
	kernels.Register(kernels.Def{Op: "ExecTestPanic", Device: kernels.CPU, Factory: func(n *graph.Node) (kernels.Kernel, error) {
		return kernels.KernelFunc(func(ctx *kernels.Context) error { panic("boom") }), nil
	}})
	kernels.Register(kernels.Def{Op: "ExecTestBadAttr", Device: kernels.CPU, Factory: func(n *graph.Node) (kernels.Kernel, error) {
		return nil, fmt.Errorf("attr x is missing")
	}})
}

// intraOf is the Intra behind a step's pool in any loop mode.
func intraOf(p kernels.Parallelizer) *Intra {
	switch v := p.(type) {
	case *Intra:
		return v
	case splitLoops:
		return v.p
	case wholeLoops:
		return v.p
	}
	return nil
}

// addAfter registers op: ExecTestAdd, after before.
func addAfter(op string, before func(*kernels.Context)) {
	kernels.Register(kernels.Def{Op: op, Device: kernels.CPU, Factory: func(n *graph.Node) (kernels.Kernel, error) {
		c := float32(n.Attrs["c"].GetF())
		return kernels.KernelFunc(func(ctx *kernels.Context) error {
			before(ctx)
			return addScalars(ctx, c)
		}), nil
	}})
}

// spinExpensive spins twice the expensive threshold.
func spinExpensive() {
	for t0 := time.Now(); time.Since(t0) < 2*expensiveNs*time.Nanosecond; {
	}
}

var nextID int

func node(name, op string, c float32, ins ...*graph.Node) *graph.Node {
	n := &graph.Node{
		ID: nextID, Name: name, Op: op,
		Attrs:     map[string]*tfpb.AttrValue{"c": {Value: &tfpb.AttrValue_F{F: c}}},
		OutTypes:  []tensor.DType{tensor.Float},
		OutShapes: []tensor.PartialShape{tensor.KnownShape(nil)},
	}
	nextID++
	for _, in := range ins {
		n.Inputs = append(n.Inputs, graph.Output{Node: in})
		n.InTypes = append(n.InTypes, tensor.Float)
	}
	return n
}

func rt(t testing.TB) *Runtime {
	p := NewPool(4)
	t.Cleanup(p.Close)
	return &Runtime{Inter: p, Intra: NewIntra(2)}
}

func run(t *testing.T, p *Plan, feeds ...*tensor.Tensor) []float32 {
	t.Helper()
	out, _, err := p.Run(context.Background(), rt(t), feeds, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var v []float32
	for _, o := range out {
		v = append(v, o.F32()[0])
	}
	return v
}

func out(n *graph.Node) graph.Output { return graph.Output{Node: n} }

func TestChainAndDiamond(t *testing.T) {
	a := node("a", "ExecTestAdd", 1)
	b := node("b", "ExecTestAdd", 2, a)
	c := node("c", "ExecTestAdd", 3, a)
	d := node("d", "ExecTestAdd", 0, b, c, b)
	p, err := Build(nil, nil, []graph.Output{out(d), out(a)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	// a=1, b=3, c=4, d=3+4+3=10
	if got := run(t, p); got[0] != 10 || got[1] != 1 {
		t.Fatalf("got %v, want [10 1]", got)
	}
	if p.NumNodes() != 4 {
		t.Fatalf("plan has %d nodes, want 4", p.NumNodes())
	}
}

func TestFeedsPrune(t *testing.T) {
	a := node("a", "ExecTestFail", 0) // must be pruned: b is fed
	b := node("b", "ExecTestAdd", 0, a)
	c := node("c", "ExecTestAdd", 5, b)
	p, err := Build(nil, []graph.Output{out(b)}, []graph.Output{out(c), out(b)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if p.NumNodes() != 1 {
		t.Fatalf("plan has %d nodes, want 1 (a and b pruned)", p.NumNodes())
	}
	if got := run(t, p, tensor.ScalarF32(7)); got[0] != 12 || got[1] != 7 {
		t.Fatalf("got %v, want [12 7]", got)
	}
}

func TestControlDependencyRuns(t *testing.T) {
	a := node("a", "ExecTestFail", 0)
	b := node("b", "ExecTestAdd", 1)
	b.Controls = []*graph.Node{a}
	p, err := Build(nil, nil, []graph.Output{out(b)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = p.Run(context.Background(), rt(t), nil, Options{})
	if status.CodeOf(err) != status.InvalidArgument || !strings.Contains(err.Error(), "'a'") && !strings.Contains(err.Error(), "[[{{node a}}]]") {
		t.Fatalf("control input did not run or error lost: %v", err)
	}
}

func TestErrorsNameTheNode(t *testing.T) {
	for _, tc := range []struct {
		op   string
		code status.Code
		want string
	}{
		{"ExecTestFail", status.InvalidArgument, "planned failure"},
		{"ExecTestPanic", status.Internal, "panicked: boom"},
	} {
		a := node("bad_"+tc.op, tc.op, 0)
		b := node("after", "ExecTestAdd", 0, a)
		p, err := Build(nil, nil, []graph.Output{out(b)}, nil)
		if err != nil {
			t.Fatal(err)
		}
		_, _, err = p.Run(context.Background(), rt(t), nil, Options{})
		if status.CodeOf(err) != tc.code || !strings.Contains(err.Error(), "bad_"+tc.op) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v (code %v)", tc.op, err, status.CodeOf(err))
		}
	}
}

func TestBuildErrors(t *testing.T) {
	a := node("a", "ExecTestAdd", 0)
	b := node("b", "ExecTestAdd", 0, a)
	a.Inputs = []graph.Output{out(b)}
	a.InTypes = []tensor.DType{tensor.Float}
	if _, err := Build(nil, nil, []graph.Output{out(b)}, nil); status.CodeOf(err) != status.InvalidArgument || !strings.Contains(err.Error(), "cycle") {
		t.Errorf("cycle: %v", err)
	}
	nk := node("nokernel", "NoSuchOpForExecTest", 0)
	if _, err := Build(nil, nil, []graph.Output{out(nk)}, nil); status.CodeOf(err) != status.InvalidArgument || !strings.Contains(err.Error(), "nokernel") || !strings.Contains(err.Error(), "NoSuchOpForExecTest") {
		t.Errorf("no kernel: %v", err)
	}
	ba := node("badattr", "ExecTestBadAttr", 0)
	if _, err := Build(nil, nil, []graph.Output{out(ba)}, nil); err == nil || !strings.Contains(err.Error(), "badattr") || !strings.Contains(err.Error(), "attr x") {
		t.Errorf("factory error: %v", err)
	}
	x := node("x", "ExecTestAdd", 0)
	if _, err := Build(nil, []graph.Output{out(x), out(x)}, []graph.Output{out(x)}, nil); status.CodeOf(err) != status.InvalidArgument {
		t.Errorf("duplicate feed: %v", err)
	}
}

// TestConcurrentSteps runs random DAGs from many goroutines and checks each
// result against a sequential evaluation.
func TestConcurrentSteps(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	var nodes []*graph.Node
	want := map[*graph.Node]float32{}
	for i := 0; i < 200; i++ {
		c := float32(r.Intn(5))
		var ins []*graph.Node
		for k := 0; k < r.Intn(3) && len(nodes) > 0; k++ {
			ins = append(ins, nodes[r.Intn(len(nodes))])
		}
		n := node(fmt.Sprint("n", i), "ExecTestAdd", c, ins...)
		v := c
		for _, in := range ins {
			v += want[in]
		}
		want[n] = v
		nodes = append(nodes, n)
	}
	fetches := []graph.Output{out(nodes[199]), out(nodes[150]), out(nodes[10])}
	p, err := Build(nil, nil, fetches, nil)
	if err != nil {
		t.Fatal(err)
	}
	runtime := rt(t)
	var wg sync.WaitGroup
	for g := 0; g < 16; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for it := 0; it < 20; it++ {
				res, _, err := p.Run(context.Background(), runtime, nil, Options{Trace: it%2 == 0})
				if err != nil {
					t.Error(err)
					return
				}
				for i, f := range fetches {
					if res[i].F32()[0] != want[f.Node] {
						t.Errorf("fetch %s = %v, want %v", f.Node.Name, res[i].F32()[0], want[f.Node])
					}
				}
			}
		}()
	}
	wg.Wait()
}

func benchGraph(b *testing.B, wide bool) {
	const n = 1000
	var nodes []*graph.Node
	root := node("root", "ExecTestAdd", 1)
	nodes = append(nodes, root)
	for i := 1; i < n; i++ {
		in := nodes[len(nodes)-1]
		if wide {
			in = root
		}
		nodes = append(nodes, node(fmt.Sprint("n", i), "ExecTestAdd", 1, in))
	}
	var fetches []graph.Output
	if wide {
		for _, nd := range nodes[1:] {
			fetches = append(fetches, out(nd))
		}
	} else {
		fetches = []graph.Output{out(nodes[n-1])}
	}
	p, err := Build(nil, nil, fetches, nil)
	if err != nil {
		b.Fatal(err)
	}
	runtime := rt(b)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, _, err := p.Run(context.Background(), runtime, nil, Options{}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n/1000, "us/node")
}

func BenchmarkChain1000(b *testing.B) { benchGraph(b, false) }
func BenchmarkWide1000(b *testing.B)  { benchGraph(b, true) }

// TestPoolStepAllocs: a warm plan's step on one host group allocates
// nothing per node: the step's state comes from the plan's pool, kernel
// contexts are reused, scalar ops run on the caller's goroutine without a
// task per node, and a small output reuses a small buffer an earlier node
// gave back, with its tracker record and tensor (memory.go). What is left
// is per step (the fetches' copies, the result slice). (Before the pool
// step kept its state, a node cost 12 allocations; before small buffers
// were kept, 1.5.)
func TestPoolStepAllocs(t *testing.T) {
	const n = 200
	nodes := []*graph.Node{node("root", "ExecTestAdd", 1)}
	for i := 1; i < n; i++ {
		nodes = append(nodes, node(fmt.Sprint("n", i), "ExecTestAdd", 1, nodes[i-1]))
	}
	p, err := Build(nil, nil, []graph.Output{out(nodes[n-1])}, nil)
	if err != nil {
		t.Fatal(err)
	}
	g := testSet(t, 1, false, 0, false).Pick(0)
	r := &Runtime{Groups: []*groups.Group{g}, Inter: g.Launch, Intra: kernels.Serial{}}
	step := func() {
		out, _, err := p.Run(context.Background(), r, nil, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if got := out[0].F32()[0]; got != n {
			t.Fatalf("got %v, want %v", got, n)
		}
	}
	for range measureFirst + 2 {
		step() // the cost estimates settle: every node runs inline
	}
	allocs := testing.AllocsPerRun(20, step)
	// Under the race detector the plan's pool drops step states at
	// random (a new one costs a few allocations per node): only a bound
	// per node holds there.
	if want := 10.0; allocs > want && !raceEnabled || allocs > n {
		t.Errorf("%.0f allocations per step of %d nodes, want at most %v (none per node)", allocs, n, want)
	}
	t.Logf("%.0f allocations per step of %d nodes", allocs, n)
	// The kept small buffers go back when the step ends.
	if st := g.Alloc.Stats(); st.BytesInUse != 0 {
		t.Errorf("%d bytes still in use after the steps", st.BytesInUse)
	}
}

// heldPool is an inter-op pool whose workers never come during a step: it
// says it is idle (or, busy, that it is not) and keeps what is submitted
// until the test runs it.
type heldPool struct {
	mu    sync.Mutex
	tasks []func()
	busy  bool
}

func (h *heldPool) Submit(f func()) {
	h.mu.Lock()
	h.tasks = append(h.tasks, f)
	h.mu.Unlock()
}

func (h *heldPool) Idle() bool { return !h.busy }

func (h *heldPool) take() []func() {
	h.mu.Lock()
	defer h.mu.Unlock()
	t := h.tasks
	h.tasks = nil
	return t
}

// TestOfferTakenBack: a node offered to the inter-op pool stays the
// offering goroutine's until a worker claims it. With workers that never
// come the step still finishes, on the caller, and the tasks that run
// after the step ended (late workers) find nothing to do, even once the
// step's state serves the next step; a pool that says no worker is idle
// is offered nothing. (Before, a step waited for its pool tasks, and on a
// busy machine a node so waited for a worker to wake, however cheap.)
func TestOfferTakenBack(t *testing.T) {
	const width = 8
	root := node("root", "ExecTestAdd", 1)
	var mid []*graph.Node
	for i := range width {
		mid = append(mid, node(fmt.Sprint("mid", i), "ExecTestAdd", float32(i), root))
	}
	sum := node("sum", "ExecTestAdd", 0, mid...)
	want := float32(width + width*(width-1)/2) // root 1 into each, plus each c
	for _, tc := range []struct {
		name   string
		busy   bool
		offers bool
	}{
		{"workers never come", false, true},
		{"no worker idle", true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := Build(nil, nil, []graph.Output{out(sum)}, nil)
			if err != nil {
				t.Fatal(err)
			}
			h := &heldPool{busy: tc.busy}
			r := &Runtime{Inter: h, Intra: kernels.Serial{}}
			var late sync.WaitGroup
			for step := range 4 {
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				got, _, err := p.Run(ctx, r, nil, Options{})
				cancel()
				if err != nil {
					t.Fatalf("step %d: %v", step, err)
				}
				if v := got[0].F32()[0]; v != want {
					t.Fatalf("step %d: got %v, want %v", step, v, want)
				}
				tasks := h.take()
				if step == 0 && (len(tasks) > 0) != tc.offers {
					t.Errorf("step 0 offered %d nodes to the pool, want offers: %v", len(tasks), tc.offers)
				}
				// The late workers run while the next step does, on the
				// step state it may have taken from the plan's pool.
				late.Add(1)
				go func() {
					defer late.Done()
					for _, f := range tasks {
						f()
					}
				}()
			}
			late.Wait()
		})
	}
}

// submitHook is an inter-op pool that keeps what is submitted, as
// heldPool does, and calls onSubmit (when set) after each task is queued,
// while the offering goroutine waits in Submit.
type submitHook struct {
	heldPool
	onSubmit func()
}

func (h *submitHook) Submit(f func()) {
	h.heldPool.Submit(f)
	if h.onSubmit != nil {
		h.onSubmit()
	}
}

// spinCounted counts the ExecTestSpinCount nodes that ran, in every test.
var spinCounted atomic.Int64

// probePlan is a plan of two nodes, op (a kernel that records what its
// step gave it) then ExecTestAdd, with the runtime to run it on and that
// runtime's intra-op pool, closed when the test ends.
func probePlan(t *testing.T, op string) (*Plan, *Runtime, *Intra) {
	t.Helper()
	a := node("a", op, 1)
	b := node("b", "ExecTestAdd", 2, a)
	p, err := Build(nil, nil, []graph.Output{out(b)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	r := rt(t)
	ip := r.Intra.(*Intra)
	t.Cleanup(ip.Close)
	return p, r, ip
}

// intraSteps is what the last ExecTestIntraSteps node saw.
var intraSteps atomic.Int32

// TestRunMarksIntraPool: a host step tells its intra-op pool it runs
// (the workers spin longer then: Intra.spinMore; runHost does it before
// it picks its loop), and says so no longer after it returns, its end
// recorded, a failed step too.
func TestRunMarksIntraPool(t *testing.T) {
	p, r, ip := probePlan(t, "ExecTestIntraSteps")
	before := ip.lastEnd.Load()
	intraSteps.Store(-1)
	if _, _, err := p.Run(context.Background(), r, nil, Options{}); err != nil {
		t.Fatal(err)
	}
	if got := intraSteps.Load(); got != 1 {
		t.Fatalf("during the step the pool counted %d steps, want 1", got)
	}
	if got := ip.runs.Load(); got != 0 {
		t.Fatalf("after the step the pool counts %d steps, want 0", got)
	}
	if ip.lastEnd.Load() <= before {
		t.Fatalf("the step's end was not recorded (lastEnd %d, before %d)", ip.lastEnd.Load(), before)
	}
	f := node("f", "ExecTestFail", 0, node("a", "ExecTestIntraSteps", 1))
	pf, err := Build(nil, nil, []graph.Output{out(f)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := pf.Run(context.Background(), r, nil, Options{}); err == nil {
		t.Fatal("a step with ExecTestFail did not fail")
	}
	if got := ip.runs.Load(); got != 0 {
		t.Fatalf("after a failed step the pool counts %d steps, want 0", got)
	}
}

// TestLateTaskKeepsToItsStep: a pool task of step N that runs late, once
// the step's state serves step N+1 on another group's runtime, must not
// claim step N+1's offer of the same node and run it on step N's pool
// (review22f). Step 0 offers its nodes to pool A, whose workers never
// come; step 1 runs on pool B, and while it offers its first node the
// late tasks of pool A run: none of them may run a node.
func TestLateTaskKeepsToItsStep(t *testing.T) {
	root := node("root", "ExecTestSpinCount", 1)
	var mid []*graph.Node
	for i := range 4 {
		mid = append(mid, node(fmt.Sprint("mid", i), "ExecTestSpinCount", float32(i), root))
	}
	sum := node("sum", "ExecTestAdd", 0, mid...)
	want := float32(4 + 4*3/2)
	p, err := Build(nil, nil, []graph.Output{out(sum)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	a, b := &heldPool{}, &submitHook{}
	runOn := func(step int, pool Submitter) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		got, _, err := p.Run(ctx, &Runtime{Inter: pool, Intra: kernels.Serial{}}, nil, Options{})
		if err != nil {
			t.Fatalf("step %d: %v", step, err)
		}
		if v := got[0].F32()[0]; v != want {
			t.Fatalf("step %d: got %v, want %v", step, v, want)
		}
	}
	runOn(0, a)
	late := a.take()
	if len(late) == 0 {
		t.Fatal("step 0 offered nothing to pool A")
	}
	var stolen int64
	b.onSubmit = func() {
		b.onSubmit = nil
		before := spinCounted.Load()
		done := make(chan struct{})
		go func() {
			defer close(done)
			for _, f := range late {
				f()
			}
		}()
		<-done
		stolen = spinCounted.Load() - before
	}
	runOn(1, b)
	if b.onSubmit != nil {
		t.Fatal("step 1 offered nothing to pool B")
	}
	if stolen != 0 {
		t.Errorf("late tasks of step 0 ran %d nodes of step 1 on step 0's pool", stolen)
	}
	for _, f := range b.take() {
		f()
	}
}

// TestTracedStepFailsWhileWorkersRecord: a traced step that fails ends at
// once while pool workers still run (and record) its other nodes; taking
// the trace must wait for them, not reset the buffer under them (a
// "sync: unlock of unlocked mutex" crash or a race before the fix).
func TestTracedStepFailsWhileWorkersRecord(t *testing.T) {
	root := node("root", "ExecTestAdd", 1)
	var mid []*graph.Node
	for i := range 6 {
		mid = append(mid, node(fmt.Sprint("spin", i), "ExecTestSpinAdd", 2, root))
	}
	mid = append(mid, node("fail", "ExecTestFail", 0, root))
	sum := node("sum", "ExecTestAdd", 0, mid...)
	p, err := Build(nil, nil, []graph.Output{out(sum)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	pool := NewPool(4)
	defer pool.Close()
	r := &Runtime{Inter: pool, Intra: kernels.Serial{}}
	for range 200 {
		if _, _, err := p.Run(context.Background(), r, nil, Options{Trace: true}); err == nil {
			t.Fatal("the step did not fail")
		}
	}
}
