package exec

import (
	"context"
	"fmt"
	"math/rand"
	"slices"
	"sync"
	"testing"
	"time"

	"mstream/device"
	"mstream/device/host"
	"mstream/graph"
	"mstream/groups"
	"mstream/hostmem"
	"mstream/kernels"
	"mstream/proto/tfpb"
	"mstream/tensor"
)

// The device launcher (runDevice) on the CPU: emuDevice is the host device
// seen as an asynchronous one (its streams have an event pool, which is
// what sends Run to the device launcher), and ExecTestGAdd's GPU
// kernel enqueues its work on the stream it is given, as a CUDA kernel
// does. With the host streams' jitter, a launch that misses a wait reads
// a value before it is written and the sums come out wrong, so one-group
// and multi-group device steps are checked without a GPU.

func init() {
	add := func(n *graph.Node, async bool) (kernels.Kernel, error) {
		c := float32(n.Attrs["c"].GetF())
		return kernels.KernelFunc(func(ctx *kernels.Context) error {
			t, err := ctx.Allocate(0, nil)
			if err != nil {
				return err
			}
			// The work takes its inputs' and output's data at launch, as a
			// CUDA kernel takes its arguments: a step's tensor headers go
			// back with its arena when the step ends, and the sanitizer
			// tests drop waits, so work may run after that.
			ins := make([][]float32, len(ctx.Inputs))
			for j, in := range ctx.Inputs {
				ins[j] = in.F32()
			}
			out := t.F32()
			work := func() {
				sum := c
				for _, in := range ins {
					sum += in[0]
				}
				out[0] = sum
			}
			if !async {
				work()
				return nil
			}
			return device.Enqueue(ctx.Stream, work)
		}), nil
	}
	kernels.Register(kernels.Def{Op: "ExecTestGAdd", Device: kernels.CPU, Factory: func(n *graph.Node) (kernels.Kernel, error) { return add(n, false) }})
	kernels.Register(kernels.Def{Op: "ExecTestGAdd", Device: kernels.GPU, Factory: func(n *graph.Node) (kernels.Kernel, error) { return add(n, true) }})
}

type emuDevice struct{ *host.Device }

func (d emuDevice) NewStream(ctx int) (device.Stream, error) {
	s, err := d.Device.NewStream(ctx)
	if err != nil {
		return nil, err
	}
	return emuStream{s.(*host.Stream)}, nil
}

// emuStream is a host stream with an event pool; its events are host
// events, unwrapped where the host stream records or waits for them.
type emuStream struct{ *host.Stream }

type emuEvent struct{ *host.Event }

func (emuEvent) Release() {}

func (s emuStream) PooledEvent() (device.PooledEvent, error) { return emuEvent{&host.Event{}}, nil }

func unwrap(e device.Event) device.Event {
	if pe, ok := e.(emuEvent); ok {
		return pe.Event
	}
	return e
}

func (s emuStream) Record(e device.Event) error { return s.Stream.Record(unwrap(e)) }

// Delay is the emulated device's sanitizer delay (device.Delayer), as a
// GPU's spin kernel: an item that holds the stream up.
func (s emuStream) Delay(d time.Duration) error {
	return s.Stream.Enqueue(func() { time.Sleep(d) })
}
func (s emuStream) Wait(e device.Event) error { return s.Stream.Wait(unwrap(e)) }

// Pack is the emulated device's device.Packer: the copies as one item in
// the stream's order (the device's addresses are the host's).
func (s emuStream) Pack(blocks []device.PackBlock) error {
	bs := slices.Clone(blocks)
	return s.Stream.Enqueue(func() {
		for _, b := range bs {
			copy(hostmem.DeviceBytes(b.Dst, int(b.Size)), hostmem.DeviceBytes(b.Src, int(b.Size)))
		}
	})
}

func emuSet(t testing.TB, n int, merge bool, jitter time.Duration) *groups.Set {
	return emuGroups(t, emuDevice{emuHost(jitter)}, groups.Config{Counts: []int{n}, Merge: merge})
}

// emuHost is the host device that the emulated devices wrap: 64 MiB,
// its streams jittered by up to jitter.
func emuHost(jitter time.Duration) *host.Device {
	d := host.New()
	d.MemBytes = 64 << 20
	d.Jitter = jitter
	return d
}

// emuGroups is the group set of cfg (its Counts, Merge, StreamAware) on
// the one device dev, with growth allowed and exec's pools; every
// emulated-device test builds its set here.
func emuGroups(t testing.TB, dev device.Device, cfg groups.Config) *groups.Set {
	p := NewPool(2)
	t.Cleanup(p.Close)
	cfg.AllowGrowth = true
	cfg.GlobalPool, cfg.GlobalIntra = p, kernels.Serial{}
	cfg.NewPool = func(n int) groups.Pool { return NewPool(n) }
	cfg.NewIntra = func(n int) kernels.Parallelizer { return NewIntra(n) }
	cfg.Devices = []device.Device{dev}
	set, err := groups.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(set.Close)
	return set
}

// emuPlan is makeRandomPlan's DAG with ExecTestGAdd nodes, placed as on
// one GPU: every node on the device, the feeds copied in.
func emuPlan(t testing.TB, r *rand.Rand, nf, nn int) *randomPlan {
	rp := makeRandomPlan(t, r, nf, nn)
	for _, n := range rp.nodes {
		n.Op = "ExecTestGAdd"
	}
	var fo []graph.Output
	for _, f := range rp.feeds {
		fo = append(fo, graph.Output{Node: f})
	}
	p, err := build(nil, fo, rp.fetches, nil, Placement{GPUs: 1})
	if err != nil {
		t.Fatal(err)
	}
	if !p.OnGPU() {
		t.Fatal("the plan has no device node")
	}
	rp.plan = p
	return rp
}

// TestDeviceStepEmulated runs random device plans through Run on
// the emulated device: one group and several (random node-level
// assignment), merged streams or not, wait reduction on and off, several
// steps at once, under jitter; every value must be right, and every
// buffer must come back.
func TestDeviceStepEmulated(t *testing.T) {
	r := rand.New(rand.NewSource(11))
	rp := emuPlan(t, r, 3, 60)
	for _, tc := range []struct {
		groups        int
		merge, reduce bool
	}{{1, false, true}, {1, true, true}, {3, false, true}, {3, false, false}, {2, true, true}} {
		t.Run(fmt.Sprintf("groups=%d,merge=%v,reduce=%v", tc.groups, tc.merge, tc.reduce), func(t *testing.T) {
			set := emuSet(t, tc.groups, tc.merge, 100*time.Microsecond)
			sr := &Runtime{Streams: true, Groups: set.Groups(), ReduceWaits: tc.reduce, Holder: &set.Holder, Intra: kernels.Serial{}}
			if tc.groups > 1 {
				sr.Assign = make([]int, len(rp.plan.nodes))
				for i := range sr.Assign {
					sr.Assign[i] = r.Intn(tc.groups)
				}
			}
			var wg sync.WaitGroup
			errs := make(chan error, 8)
			for w := 0; w < 3; w++ {
				wg.Add(1)
				go func(seed int64) {
					defer wg.Done()
					rr := rand.New(rand.NewSource(seed))
					for it := 0; it < 10; it++ {
						vals := []float32{float32(rr.Intn(100)), float32(rr.Intn(100)), float32(rr.Intn(100))}
						got, _, err := rp.plan.Run(context.Background(), sr, scalars(vals), Options{Trace: it == 0})
						if err == nil {
							err = check(got, rp.want(vals))
						}
						if err != nil {
							errs <- fmt.Errorf("step %d: %w", it, err)
							return
						}
					}
				}(int64(w))
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Error(err)
			}
			set.Holder.Drain()
			for _, g := range set.Groups() {
				if n := g.Alloc.Stats().BytesInUse; n != 0 {
					t.Errorf("group %d: %d bytes still allocated after the steps", g.ID, n)
				}
			}
		})
	}
}

func init() {
	less := func(async bool) kernels.Factory {
		return func(n *graph.Node) (kernels.Kernel, error) {
			return kernels.KernelFunc(func(ctx *kernels.Context) error {
				t, err := ctx.Allocate(0, nil)
				if err != nil {
					return err
				}
				a, b := ctx.Inputs[0], ctx.Inputs[1]
				if !async {
					// No closure: the host loop's steps count
					// their allocations (TestFramesGroupMemory).
					t.Buf[0] = 0
					if a.F32()[0] < b.F32()[0] {
						t.Buf[0] = 1
					}
					return nil
				}
				out, x, y := t.Buf, a.F32(), b.F32() // at launch, as ExecTestGAdd
				return device.Enqueue(ctx.Stream, func() {
					out[0] = 0
					if x[0] < y[0] {
						out[0] = 1
					}
				})
			}), nil
		}
	}
	kernels.Register(kernels.Def{Op: "ExecTestGLess", Device: kernels.CPU, Factory: less(false)})
	kernels.Register(kernels.Def{Op: "ExecTestGLess", Device: kernels.GPU, Factory: less(true)})
	// ExecTestHostLess has no GPU kernel: a predicate made on the host.
	kernels.Register(kernels.Def{Op: "ExecTestHostLess", Device: kernels.CPU, Factory: less(false)})
}

// flowNode is a control-flow node of a hand-built v1 graph; its inputs are
// outputs (node, index).
func flowNode(name, op string, outs int, ins ...graph.Output) *graph.Node {
	n := node(name, op, 0)
	n.Attrs["T"] = &tfpb.AttrValue{Value: &tfpb.AttrValue_Type{Type: tfpb.DataType(tensor.Float)}}
	n.OutTypes = nil
	n.OutShapes = nil
	for k := 0; k < outs; k++ {
		n.OutTypes = append(n.OutTypes, tensor.Float)
		n.OutShapes = append(n.OutShapes, tensor.KnownShape(nil))
	}
	for _, in := range ins {
		n.Inputs = append(n.Inputs, in)
		n.InTypes = append(n.InTypes, in.Node.OutTypes[in.Index])
	}
	return n
}

// emuLoopPlan builds, as tf.compat.v1.while_loop writes it, the loop
// "i, acc = 0, x; while i < n: i, acc = i+1, acc+i" and, after it, a cond
// on feed p: acc+1 if p else acc+2. It returns the plan fetching the cond's
// result and the loop's counter, placed as on one GPU.
func emuLoopPlan(t testing.TB) *Plan {
	x := node("x", "ExecTestGAdd", 0)
	n := node("n", "ExecTestGAdd", 0)
	p := node("p", "ExecTestGLess", 0)
	p.OutTypes = []tensor.DType{tensor.Bool}
	w := newWhileLoop(node("zero", "ExecTestGAdd", 0), x, n, "ExecTestGAdd", 0, func(acc, i graph.Output) *graph.Node {
		return bodyNode("acc_plus_i", "ExecTestGAdd", 0, acc, i)
	})
	xa, xi := w.exitAcc, w.exitI
	// The cond after the loop.
	cs := flowNode("cond_switch", "Switch", 2, graph.Output{Node: xa}, graph.Output{Node: p})
	t1 := bodyNode("then", "ExecTestGAdd", 1, graph.Output{Node: cs, Index: 1})
	f2 := bodyNode("else", "ExecTestGAdd", 2, graph.Output{Node: cs, Index: 0})
	cm := flowNode("cond_merge", "Merge", 2, graph.Output{Node: f2}, graph.Output{Node: t1})
	cm.OutTypes[1] = tensor.Int32
	feeds := []graph.Output{{Node: x}, {Node: n}, {Node: p}}
	plan, err := build(nil, feeds, []graph.Output{{Node: cm}, {Node: xi}, {Node: cm, Index: 1}}, nil, Placement{GPUs: 1})
	if err != nil {
		t.Fatal(err)
	}
	if !plan.OnGPU() || !plan.Deadness() {
		t.Fatalf("plan on the device %v, with control flow %v", plan.OnGPU(), plan.Deadness())
	}
	return plan
}

// TestDeviceStepFramesEmulated runs a v1 while loop and a cond on the
// emulated device: the loop body's kernels launch asynchronously, the
// loop condition is read back for each Switch, and values are checked
// against the loop's closed form, on one group and on three with the
// nodes spread at random, under jitter, several steps at once.
func TestDeviceStepFramesEmulated(t *testing.T) {
	plan := emuLoopPlan(t)
	r := rand.New(rand.NewSource(3))
	for _, groupsN := range []int{1, 3} {
		t.Run(fmt.Sprint("groups=", groupsN), func(t *testing.T) {
			set := emuSet(t, groupsN, false, 100*time.Microsecond)
			sr := &Runtime{Streams: true, Groups: set.Groups(), ReduceWaits: true, Holder: &set.Holder, Intra: kernels.Serial{}}
			if groupsN > 1 {
				sr.Assign = make([]int, len(plan.nodes))
				for i := range sr.Assign {
					sr.Assign[i] = r.Intn(groupsN)
				}
			}
			var wg sync.WaitGroup
			errs := make(chan error, 8)
			for w := 0; w < 3; w++ {
				wg.Add(1)
				go func(seed int64) {
					defer wg.Done()
					rr := rand.New(rand.NewSource(seed))
					for it := 0; it < 6; it++ {
						x, n, p := float32(rr.Intn(100)), rr.Intn(12), rr.Intn(2)
						// p is fed as the ExecTestGLess output it stands for.
						pred := tensor.New(tensor.Bool, nil)
						pred.Buf[0] = byte(p)
						got, _, err := plan.Run(context.Background(), sr, []*tensor.Tensor{tensor.ScalarF32(x), tensor.ScalarF32(float32(n)), pred}, Options{Trace: it == 0})
						if err != nil {
							errs <- fmt.Errorf("x=%v n=%d p=%d: %w", x, n, p, err)
							return
						}
						acc := x + float32(n*(n-1)/2)
						want := acc + 2
						if p == 1 {
							want = acc + 1
						}
						if g, gi, gx := got[0].F32()[0], got[1].F32()[0], got[2].I32()[0]; g != want || gi != float32(n) || gx != int32(p) {
							errs <- fmt.Errorf("x=%v n=%d p=%d: got %v, counter %v, index %v; want %v, %d, %d", x, n, p, g, gi, gx, want, n, p)
							return
						}
					}
				}(int64(w))
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Error(err)
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

// TestFrameParallelIterations checks that parallel_iterations bounds the
// iterations in flight: a loop whose counter runs ahead of a long chain
// on its accumulator overlaps iterations with 10, and never with 1 (no
// node of iteration k+1 runs before every node of iteration k has);
// results are the same.
func TestFrameParallelIterations(t *testing.T) {
	for _, par := range []int64{1, 10} {
		p := chainLoopPlan(t, par)
		var iters []int
		var r *frameRun[*tensor.Tensor]
		r = newFrameRun(p, []*tensor.Tensor{tensor.ScalarF32(5), tensor.ScalarF32(4)}, func(_ int32, pn *planNode, ins []*tensor.Tensor) ([]*tensor.Tensor, error) {
			if r.cur.f != r.root {
				iters = append(iters, r.cur.iter)
			}
			var k kernelCall
			return k.run(pn, ins, kernels.Serial{})
		})
		if err := r.drive(context.Background()); err != nil {
			t.Fatal(err)
		}
		out, err := r.fetches()
		if err != nil {
			t.Fatal(err)
		}
		if got := out[0].F32()[0]; got != 5+4*6 {
			t.Errorf("parallel_iterations %d: %v, want %v", par, got, 5+4*6)
		}
		overlap := false
		for k := 1; k < len(iters); k++ {
			overlap = overlap || iters[k] < iters[k-1]
		}
		if par == 1 && overlap || par == 10 && !overlap {
			t.Errorf("parallel_iterations %d: iterations in node order %v: overlapped %v", par, iters, overlap)
		}
	}
}

// chainLoopPlan is loopPlan's loop with an accumulator that adds 1 six
// times in a chain (x + 6n), at most par iterations in flight.
func chainLoopPlan(t *testing.T, par int64) *Plan {
	t.Helper()
	p, _, _ := loopPlan(t, "ExecTestAdd", "ExecTestAdd", 6, par, true)
	return p
}

// TestFramesGroupMemory runs a loop on a host group through the frame
// driver's inline form, as the pool step runs it and as a one-group
// stream step's opFrames item does (MSTREAM_HOST_STREAMS): values come
// from the group's allocator and go back as soon as nothing can read
// them (frameRefs), a finished iteration's slots are reused (recycle),
// so a step's allocations and the group memory it holds do not grow
// with its iterations, and every byte is back when the step ends.
func TestFramesGroupMemory(t *testing.T) {
	for _, streams := range []bool{false, true} {
		set := testSet(t, 1, false, 0, false)
		g := set.Pick(0)
		r := &Runtime{Groups: []*groups.Group{g}, Inter: g.Launch, Intra: kernels.Serial{}, Streams: streams, Holder: &set.Holder}
		for _, par := range []int64{1, 10} {
			name := fmt.Sprintf("streams %v, parallel_iterations %d", streams, par)
			p := chainLoopPlan(t, par)
			step := func(iters int) {
				x := float32(rand.Intn(100))
				out, _, err := p.Run(context.Background(), r, []*tensor.Tensor{tensor.ScalarF32(x), tensor.ScalarF32(float32(iters))}, Options{})
				if err != nil {
					t.Fatal(err)
				}
				if got, want := out[0].F32()[0], x+float32(6*iters); got != want {
					t.Fatalf("%s, %d iterations: got %v, want %v", name, iters, got, want)
				}
				set.Holder.Drain()
				if b := g.Alloc.Stats().BytesInUse; b != 0 {
					t.Fatalf("%s: %d bytes still allocated after the step", name, b)
				}
			}
			for _, iters := range []int{0, 1, 7, 40} {
				step(iters)
			}
			peak := g.Alloc.Stats().PeakBytesInUse
			short := testing.AllocsPerRun(5, func() { step(50) })
			long := testing.AllocsPerRun(5, func() { step(800) })
			if p := g.Alloc.Stats().PeakBytesInUse; p > peak {
				t.Errorf("%s: peak in use %d bytes after 800 iterations, %d after 40: values are held longer than read", name, p, peak)
			}
			// The driver's queue is a ring and a recycled iteration's
			// slots keep their inputs' storage: about one allocation per
			// hundred iterations (the value slab's blocks). It was one per
			// five before, and 23 per iteration, 11 nodes each, before
			// values came from the group (on host streams until the
			// stream step ran the pool step's inline loop). Under the
			// race detector the plan's pool drops step states at random,
			// which costs a few allocations per node.
			msg := fmt.Sprintf("%s: %.0f allocations for 50 iterations, %.0f for 800", name, short, long)
			bound := 0.05
			if raceEnabled {
				bound = 0.25
			}
			if (long-short)/750 > bound {
				t.Error(msg)
			}
			t.Log(msg)
		}
	}
}

// TestDeviceStepLauncher: a device step that only enqueues work launches
// from the Run's goroutine when its group lets the caller launch
// (TF_GPU_THREAD_MODE global: the launch pool is the inter-op pool), and
// from the group's own threads with gpu_private; a step with a host
// kernel keeps to the launch pool in either mode.
func TestDeviceStepLauncher(t *testing.T) {
	for _, mode := range []groups.ThreadMode{groups.ThreadGlobal, groups.ThreadGPUPrivate} {
		for _, hostNode := range []bool{false, true} {
			r := rand.New(rand.NewSource(7))
			rp := emuPlan(t, r, 3, 12)
			if hostNode {
				rp.fetches[0].Node.Op = "ExecTestAdd" // no GPU kernel: runs on the host
				var fo []graph.Output
				for _, f := range rp.feeds {
					fo = append(fo, graph.Output{Node: f})
				}
				p, err := build(nil, fo, rp.fetches, nil, Placement{GPUs: 1})
				if err != nil {
					t.Fatal(err)
				}
				rp.plan = p
			}
			var pools []*countPool
			newPool := func(n int) groups.Pool {
				c := &countPool{Pool: NewPool(n)}
				t.Cleanup(c.Close)
				pools = append(pools, c)
				return c
			}
			global := newPool(2)
			cfg := groups.Config{Counts: []int{1}, ThreadMode: mode, ThreadCount: 1, AllowGrowth: true,
				GlobalPool: global, GlobalIntra: kernels.Serial{}, NewPool: newPool,
				NewIntra: func(n int) kernels.Parallelizer { return NewIntra(n) },
				Devices:  []device.Device{emuDevice{emuHost(0)}}}
			gs, err := groups.New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(gs.Close)
			vals := []float32{1, 2, 3}
			const steps = 3
			for i := 0; i < steps; i++ {
				sr := &Runtime{Groups: gs.Groups(), Holder: &gs.Holder}
				got, _, err := rp.plan.Run(context.Background(), sr, scalars(vals), Options{})
				if err != nil {
					t.Fatal(err)
				}
				if err := check(got, rp.want(vals)); err != nil {
					t.Fatal(err)
				}
			}
			var n int32
			for _, p := range pools {
				n += p.n.Load()
			}
			want := int32(steps)
			if mode == groups.ThreadGlobal && !hostNode {
				want = 0
			}
			if n != want {
				t.Errorf("%s, host node %v: %d tasks on the launch pools for %d steps, want %d", mode, hostNode, n, steps, want)
			}
		}
	}
}
