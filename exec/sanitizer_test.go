//go:build !race

package exec

import (
	"context"
	"fmt"
	"math/rand"
	"testing"
	"time"

	"mstream/graph"
	"mstream/groups"
	"mstream/kernels"
	"mstream/tensor"
	"mstream/trace"
)

// TestSanitizerCatchesMissingWaits proves the stream sanitizer works: with
// every producer-consumer wait dropped, jittered host streams make steps
// read values before they exist, and the results go wrong or the step
// reports the missing wait. (Under -race the race detector reports the
// same thing as a race, which is why this test is not built with it.)
func TestSanitizerCatchesMissingWaits(t *testing.T) {
	r := rand.New(rand.NewSource(3))
	rp := makeRandomPlan(t, r, 3, 30)
	set := testSet(t, 1, false, 200*time.Microsecond, false)
	sr := &Runtime{Streams: true, Groups: []*groups.Group{set.Groups()[0]}, ReduceWaits: true, Holder: &set.Holder,
		DropWait: func(int, int) bool { return true }}
	bad := 0
	for it := 0; it < 20 && bad == 0; it++ {
		vals := []float32{float32(1 + r.Intn(100)), float32(1 + r.Intn(100)), float32(1 + r.Intn(100))}
		got, _, err := rp.plan.Run(context.Background(), sr, scalars(vals), Options{})
		if err != nil || check(got, rp.want(vals)) != nil {
			bad++
		}
	}
	if bad == 0 {
		t.Fatal("20 steps without their waits all gave right answers: the sanitizer does not see missing waits")
	}
}

// TestSanitizerCatchesEachMissingWait drops one wait at a time: every
// cross-stream wait a step inserts (feed copy -> kernel, kernel -> kernel
// across groups, kernel -> fetch copy) is left out alone, and the
// jittered host streams must turn its absence into a wrong value or a
// step error within a few steps. A control run with every wait in place
// must get every value right, so what the test sees is the missing wait
// and nothing else.
func TestSanitizerCatchesEachMissingWait(t *testing.T) {
	r := rand.New(rand.NewSource(5))
	rp := makeRandomPlan(t, r, 3, 16)
	set := testSet(t, 3, false, time.Millisecond, false)
	assign := make([]int, len(rp.plan.nodes))
	for i := range assign {
		assign[i] = r.Intn(3)
	}
	sr := &Runtime{Streams: true, Groups: set.Groups(), Assign: assign, ReduceWaits: true, Holder: &set.Holder}
	step := func() ([]float32, []*tensor.Tensor, *trace.Step, error) {
		vals := []float32{float32(1 + r.Intn(100)), float32(1 + r.Intn(100)), float32(1 + r.Intn(100))}
		got, st, err := rp.plan.Run(context.Background(), sr, scalars(vals), Options{Trace: true})
		return rp.want(vals), got, st, err
	}
	// The waits a step inserts are its flows.
	_, _, st, err := step()
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]bool{}
	for _, f := range st.Flows {
		kinds[sliceKind(st, f.From)+"->"+sliceKind(st, f.To)] = true
	}
	if len(st.Flows) < 5 || !kinds["h2d->kernel"] || !kinds["kernel->kernel"] || !kinds["kernel->d2h"] {
		t.Fatalf("the plan has %d waits (%v): too few kinds to test", len(st.Flows), kinds)
	}
	for k := 0; k < 10; k++ {
		want, got, _, err := step()
		if err != nil || check(got, want) != nil {
			t.Fatalf("control step %d with every wait: %v %v", k, err, check(got, want))
		}
	}
	tested := 0
	for _, f := range st.Flows {
		// A wait is needed unless the consumer also waits on a later op
		// of the producer's stream (the executor reduces only against
		// waits already issued, so both can be there): dropping it
		// would change nothing.
		implied := false
		for _, g := range st.Flows {
			if g.To == f.To && g.From > f.From && sliceStream(st, g.From) == sliceStream(st, f.From) {
				implied = true
			}
		}
		if implied {
			continue
		}
		tested++
		sr.DropWait = func(p, c int) bool { return p == f.From && c == f.To }
		caught := false
		for k := 0; k < 100 && !caught; k++ {
			want, got, _, err := step()
			caught = err != nil || check(got, want) != nil
		}
		sr.DropWait = nil
		if !caught {
			t.Errorf("wait of op %d (%s) on op %d (%s) dropped: 100 jittered steps all gave right answers",
				f.To, sliceKind(st, f.To), f.From, sliceKind(st, f.From))
		}
	}
	if tested < 5 {
		t.Errorf("only %d needed waits to drop", tested)
	}
}

func sliceKind(st *trace.Step, id int) string {
	for _, s := range st.Slices {
		if s.ID == id {
			return s.Kind
		}
	}
	return "?"
}

func sliceStream(st *trace.Step, id int) [2]int {
	for _, s := range st.Slices {
		if s.ID == id {
			return [2]int{s.Group, s.Stream}
		}
	}
	return [2]int{-1, -1}
}

// TestDeviceSanitizerCatchesEachMissingWait is the meta-test over the
// device step (the GPU scheduler), on the emulated device with its host
// streams' own jitter off: the only delays are the step's own
// (Runtime.Jitter, device.Delayer, as on a GPU). Every wait between
// groups' compute streams that a traced step inserts is dropped alone
// through DropWait, and within a few steps the delays must turn its
// absence into a wrong value; a control run with every wait must be
// right. Dropping every wait at once must be caught too.
func TestDeviceSanitizerCatchesEachMissingWait(t *testing.T) {
	r := rand.New(rand.NewSource(9))
	rp := emuPlan(t, r, 3, 16)
	set := emuSet(t, 3, false, 0)
	assign := make([]int, len(rp.plan.nodes))
	for i := range assign {
		assign[i] = r.Intn(3)
	}
	sr := &Runtime{Streams: true, Groups: set.Groups(), Assign: assign, ReduceWaits: true, Holder: &set.Holder,
		Jitter: time.Millisecond}
	step := func() ([]float32, []*tensor.Tensor, *trace.Step, error) {
		vals := []float32{float32(1 + r.Intn(100)), float32(1 + r.Intn(100)), float32(1 + r.Intn(100))}
		got, st, err := rp.plan.Run(context.Background(), sr, scalars(vals), Options{Trace: true})
		return rp.want(vals), got, st, err
	}
	_, _, st, err := step()
	if err != nil {
		t.Fatal(err)
	}
	for k := 0; k < 10; k++ {
		want, got, _, err := step()
		if err != nil || check(got, want) != nil {
			t.Fatalf("control step %d with every wait: %v %v", k, err, check(got, want))
		}
	}
	tested := 0
	// A wait's event is recorded right after its producer's launch
	// (device_lanes.go), so it covers what the producer's group launched
	// up to the producer, which includes what that group waited for
	// before; one wait can so imply another through a chain (wait
	// reduction drops only waits implied by earlier ones). ordered says
	// whether group g, up to launch at, follows launch p.
	group := func(id int) int { return sliceStream(st, id)[0] }
	var ordered func(g, at, p, depth int) bool
	ordered = func(g, at, p, depth int) bool {
		if g == group(p) && p <= at {
			return true
		}
		if depth > 8 {
			return false
		}
		for _, w := range st.Flows {
			if group(w.To) == g && w.To <= at && ordered(group(w.From), w.From, p, depth+1) {
				return true
			}
		}
		return false
	}
	for _, f := range st.Flows {
		implied := false
		for _, g := range st.Flows {
			if g != f && g.To == f.To && ordered(group(g.From), g.From, f.From, 0) {
				implied = true
			}
		}
		if implied || f.From == 0 {
			continue // implied, or the feeds' copy (joined before any node)
		}
		tested++
		sr.DropWait = func(p, c int) bool { return p == f.From && c == f.To }
		caught := false
		for k := 0; k < 100 && !caught; k++ {
			want, got, _, err := step()
			caught = err != nil || check(got, want) != nil
		}
		sr.DropWait = nil
		if !caught {
			t.Errorf("wait of launch %d on launch %d dropped: 100 delayed steps all gave right answers", f.To, f.From)
		}
	}
	if tested < 3 {
		t.Errorf("only %d waits between groups to drop", tested)
	}
	t.Logf("%d of %d waits dropped one at a time, each caught", tested, len(st.Flows))
	sr.DropWait = func(int, int) bool { return true }
	bad := 0
	for it := 0; it < 20 && bad == 0; it++ {
		want, got, _, err := step()
		if err != nil || check(got, want) != nil {
			bad++
		}
	}
	if bad == 0 {
		t.Error("20 device steps without their waits all gave right answers")
	}
}

// TestDeviceSanitizerCatchesEachMissingWaitInLoop is the device
// meta-test over a step with frames on three groups' lanes: a while
// loop whose counter, condition and accumulator chain cross groups
// every iteration (kernel to kernel, and a loop condition read back by
// Switches of other groups, each on the group of what it passes on, so
// that no readback's host sync implies a wait of its lane's). Every
// step feeds fresh values and its own number of iterations, so a value
// read before it is written is an earlier step's, wrong. A traced step's
// launch windows are
// numbered by node and iteration, the same in every step; each
// distinct wait (a producer and consumer node pair, in the first
// iteration it appears) is dropped alone through DropWait, and the
// step's own delays (Runtime.Jitter) must turn its absence into a
// wrong value, an error or a runaway loop (the step's deadline); a
// control run with every wait must be right.
func TestDeviceSanitizerCatchesEachMissingWaitInLoop(t *testing.T) {
	dropEachLoopWait(t, func(acc graph.Output) *graph.Node {
		a := bodyNode("a", "ExecTestGAdd", 1, acc)
		b := bodyNode("b", "ExecTestGAdd", 2, graph.Output{Node: a})
		return bodyNode("c", "ExecTestGAdd", 3, graph.Output{Node: b})
	}, map[string]int{"a": 1, "b": 2, "c": 0, "less": 1, "i_plus_1": 2, "switch_acc": 1, "switch_i": 2}, 6, 4, 4)
}

// TestDeviceSanitizerCatchesEachMissingWaitOfLoopConst is the device
// loop meta-test over waits that relayed records add: a loop body's
// Const runs after a store (a control edge) and a load of another group
// reads the Const, so the load's wait for the store comes through the
// Const's record of its iteration (devFrames.constAgain), and the next
// store waits for the load through the loop's Merge and Switch.
func TestDeviceSanitizerCatchesEachMissingWaitOfLoopConst(t *testing.T) {
	dropEachLoopWait(t, func(acc graph.Output) *graph.Node {
		s := bodyNode("store", "ExecTestGStore", 3, acc)
		k := constNode("store_const")
		k.Controls = []*graph.Node{s}
		return bodyNode("load", "ExecTestGLoad", 0, graph.Output{Node: k})
	}, map[string]int{"store": 1, "load": 2, "switch_acc": 1}, 3, 5, 2)
}

// dropEachLoopWait is the device loop meta-test over bodyLoop's loop of
// body on three groups (groups assigns them), whose acc grows by grow
// an iteration: each step feeds fresh values (from seed) and its own
// number of iterations, 0 to 4 (a loop condition's first value is not
// always true, nor its fifth always false). Control steps with every
// wait must be right; then each distinct wait of the longest loop's (a
// producer and consumer node pair, in the first iteration it appears,
// at least min of them) is dropped alone through DropWait, and the
// step's own delays (Runtime.Jitter) must turn its absence into a
// wrong value, an error or a runaway loop (the step's deadline) within
// 100 steps; so must dropping every wait.
func dropEachLoopWait(t *testing.T, body func(acc graph.Output) *graph.Node, groups map[string]int, grow float32, seed int64, min int) {
	t.Helper()
	p, assign := bodyLoop(t, 10, body, groups)
	set := emuSet(t, 3, false, 0)
	sr := &Runtime{Streams: true, Groups: set.Groups(), Assign: assign, ReduceWaits: true, Holder: &set.Holder,
		Jitter: time.Millisecond}
	r := rand.New(rand.NewSource(seed))
	step := func() (*trace.Step, error) {
		x, i0, iters := float32(1+r.Intn(100)), float32(r.Intn(100)), float32(r.Intn(5))
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		got, st, err := p.Run(ctx, sr, []*tensor.Tensor{tensor.ScalarF32(x), tensor.ScalarF32(i0 + iters), tensor.ScalarF32(i0)}, Options{Trace: true})
		if want := x + grow*iters; err == nil && (got[0].F32()[0] != want || got[1].F32()[0] != i0+iters) {
			err = fmt.Errorf("acc %v, i %v; want %v, %v", got[0].F32()[0], got[1].F32()[0], want, i0+iters)
		}
		return st, err
	}
	var st *trace.Step
	for k := 0; k < 10; k++ {
		s, err := step()
		if err != nil {
			t.Fatalf("control step %d with every wait: %v", k, err)
		}
		if st == nil || len(s.Flows) > len(st.Flows) {
			st = s // the waits of the longest loop
		}
	}
	name := map[int]string{}
	for _, sl := range st.Slices {
		name[sl.ID] = sl.Name
	}
	into := map[int]int{}
	for _, f := range st.Flows {
		into[f.To]++
	}
	seen := map[string]bool{}
	tested := 0
	for _, f := range st.Flows {
		pair := name[f.From] + "->" + name[f.To]
		// A consumer with one wait only: with two, one may follow the
		// other's producer and imply it.
		if f.From == 0 || into[f.To] > 1 || seen[pair] {
			continue
		}
		seen[pair] = true
		tested++
		sr.DropWait = func(p, c int) bool { return p == f.From && c == f.To }
		caught := false
		for k := 0; k < 100 && !caught; k++ {
			_, err := step()
			caught = err != nil
		}
		sr.DropWait = nil
		if !caught {
			t.Errorf("wait of %s (launch %d) on %s (launch %d) dropped: 100 delayed steps all gave right answers", name[f.To], f.To, name[f.From], f.From)
		}
	}
	if tested < min {
		t.Errorf("only %d waits between groups to drop (%v)", tested, seen)
	}
	t.Logf("%d distinct waits of %d dropped one at a time, each caught: %v", tested, len(st.Flows), seen)
	sr.DropWait = func(int, int) bool { return true }
	bad := 0
	for it := 0; it < 20 && bad == 0; it++ {
		if _, err := step(); err != nil {
			bad++
		}
	}
	if bad == 0 {
		t.Error("20 device steps of the loop without their waits all gave right answers")
	}
}

// TestSanitizerDropKeepsStepEnd: DropWait leaves a wait out after the
// reduction, whose clocks have learned it; the step's end must still
// follow every stream (a join reduced with those clocks could leave a
// stream's last op out, and the step would return while it may still
// run). Each wait of random plans on 2-3 groups is dropped alone, as
// TestSanitizerCatchesEachMissingWait does, and every op of the layout
// must be followed by a join op.
func TestSanitizerDropKeepsStepEnd(t *testing.T) {
	r := rand.New(rand.NewSource(5))
	cases, broken := 0, 0
	for it := 0; it < 10; it++ {
		rp := makeRandomPlan(t, r, 3, 16)
		n := 2 + it%2
		set := testSet(t, n, false, 0, false)
		sr := &Runtime{Streams: true, Groups: set.Groups(), Assign: randomAssign(r, rp.plan, n), ReduceWaits: true, Holder: &set.Holder}
		feeds := scalars([]float32{1, 2, 3})
		full := rp.plan.layOut(sr, feeds)
		for q := range full.ops {
			for _, w := range full.ops[q].waiters {
				sr.DropWait = func(p, c int) bool { return p == q && c == w }
				lay := rp.plan.layOut(sr, feeds)
				sr.DropWait = nil
				cases++
				reach := reachAll(layoutEdges(lay))
				for q := range lay.ops {
					if lay.ops[q].stream >= 0 && !joined(lay, reach, q) {
						if broken++; broken <= 3 {
							t.Errorf("plan %d, wait of op %d on op %d dropped: op %d (stream %d) is followed by no join op", it, w, q, q, lay.ops[q].stream)
						}
					}
				}
			}
		}
	}
	if broken > 0 {
		t.Errorf("%d ops after the step's end over %d single dropped waits", broken, cases)
	}
}

func init() {
	// ExecTestSlowAdd is ExecTestAdd after 20 ms; it sets slowRan.
	kernels.Register(kernels.Def{Op: "ExecTestSlowAdd", Device: kernels.CPU, Factory: func(n *graph.Node) (kernels.Kernel, error) {
		return kernels.KernelFunc(func(ctx *kernels.Context) error {
			time.Sleep(20 * time.Millisecond)
			err := addScalars(ctx, 0)
			slowRan.Store(true)
			return err
		}), nil
	}})
}

// TestSanitizerDropEndsAfterEveryStream is TestSanitizerDropKeepsStepEnd
// run: a slow node X on group 1 is the last op of its stream and a
// control predecessor of the fetched Y on group 0. With reduction the
// join waits only for the D2H stream, which learned X through Y's wait;
// the sanitizer drops that one wait, and the step must still return
// only after X has run; every buffer and hold comes back.
func TestSanitizerDropEndsAfterEveryStream(t *testing.T) {
	x := node("x", "ExecTestAdd", 0)
	slow := node("X", "ExecTestSlowAdd", 0, x)
	z := node("z", "ExecTestAdd", 0, x)
	y := node("Y", "ExecTestAdd", 1, z)
	y.Controls = []*graph.Node{slow}
	p, err := build(nil, []graph.Output{out(x)}, []graph.Output{out(y)}, nil, Placement{})
	if err != nil {
		t.Fatal(err)
	}
	set := testSet(t, 2, false, 0, false)
	sr := &Runtime{Streams: true, Groups: set.Groups(), Assign: assignNames(p, map[string]int{"X": 1}), ReduceWaits: true, Holder: &set.Holder}
	feeds := scalars([]float32{4})
	lay := p.layOut(sr, feeds)
	xo, yo := -1, -1
	for q := range lay.ops {
		if op := &lay.ops[q]; op.kind == opNode {
			switch p.nodes[op.idx].node.Name {
			case "X":
				xo = q
			case "Y":
				yo = q
			}
		}
	}
	sr.DropWait = func(p, c int) bool { return p == xo && c == yo }
	early := 0
	for k := 0; k < 5; k++ {
		slowRan.Store(false)
		got, _, err := p.Run(context.Background(), sr, feeds, Options{})
		ran := slowRan.Load()
		if err != nil || got[0].F32()[0] != 5 {
			t.Fatalf("step %d: %v %v", k, got, err)
		}
		if !ran {
			early++
			time.Sleep(40 * time.Millisecond) // let X finish before the next step
		}
	}
	if early > 0 {
		t.Errorf("%d of 5 steps returned before X (on group 1, whose wait was dropped) ran: the step's end does not follow every stream", early)
	}
	for _, g := range set.Groups() {
		for _, x := range g.Streams() {
			x.Synchronize()
		}
	}
	set.Holder.Drain()
	for k, g := range set.Groups() {
		if a := g.Alloc.Stats(); a.BytesInUse != 0 {
			t.Errorf("after the steps, group %d: %d bytes in use", k, a.BytesInUse)
		}
	}
	if n := set.Holder.Live(); n != 0 {
		t.Errorf("after the steps: %d holds", n)
	}
}
