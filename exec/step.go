package exec

import (
	"context"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"mstream/device"
	"mstream/groups"
	"mstream/hostmem"
	"mstream/kernels"
	"mstream/status"
	"mstream/tensor"
	"mstream/tensorholder"
	"mstream/trace"
)

// Submitter runs tasks without blocking the submitter: the inter-op Pool.
type Submitter interface {
	Submit(f func())
}

// Runtime is what a step runs on, on any device, with any number of
// groups, in either mode: the groups the session picked and the
// node-to-group assignment. Graph-level mode gives one group (or, for a
// plan placed on several GPUs, one group of each, Assign putting each
// node on its GPU's); node-level mode gives the groups TF_STREAM_FROM_FILE
// names, Assign from the file. Without groups (unit tests) a step runs on
// the inter-op pool and kernels allocate Go memory.
type Runtime struct {
	// Groups[0] is the home group: its H2D stream copies the feeds in and
	// its D2H stream the fetches out, and it runs every node that Assign
	// does not put elsewhere. Groups of one GPU must share a CUDA context.
	Groups []*groups.Group
	// Assign gives, per plan index, the index in Groups of the group whose
	// compute stream runs the node; nil runs all on Groups[0].
	Assign []int
	// Streams runs a step of one host group on its streams
	// (MSTREAM_HOST_STREAMS); several groups, an assignment or a GPU
	// always do. Otherwise one host group's step runs on Inter.
	Streams bool
	// Inter is the inter-op pool of a step that runs on no stream.
	Inter Submitter
	// Intra splits kernels' loops (host kernels; on a GPU, the nodes that
	// fell back to the host).
	Intra kernels.Parallelizer
	// ReduceWaits leaves out a cross-stream wait when the waiting stream
	// has already waited, directly or through others, for a later point
	// of the producer's stream (TF_REDUCE_STREAM_WAIT).
	ReduceWaits bool
	// Holder keeps buffers read on a second stream until it has passed
	// them.
	Holder *tensorholder.Holder
	// DropWait, when set, is asked before each producer-consumer wait (by
	// op: the IDs of the ops' trace slices, in a traced step) and leaves
	// it out when it says so; the final event still follows every stream.
	// The device step asks it for the waits between groups' compute
	// streams (by launch window). Only the sanitizer's meta-tests set it,
	// to prove a missing wait is caught.
	DropWait func(producer, consumer int) bool
	// Graphs, when set, replays eligible one-group device steps as
	// captured CUDA graphs (gpu_graph.go, MSTREAM_CUDA_GRAPH): the
	// session's cache, never a package global.
	Graphs *GraphCache
	// Jitter, when non-zero, is the longest delay the stream sanitizer
	// puts before items of a device step on streams that can delay
	// (device.Delayer: a GPU's spin kernel); host streams jitter by
	// themselves (MSTREAM_STREAM_JITTER sets both).
	Jitter time.Duration
}

// Options change how one step runs.
type Options struct {
	// Trace records a slice per kernel and copy.
	Trace bool
	// Run numbers the step in traces.
	Run int64
}

type step struct {
	plan     *Plan
	rt       *Runtime
	group    *groups.Group // Groups[0]; nil without groups
	feeds    []*tensor.Tensor
	pending  []int32
	outputs  [][]*tensor.Tensor
	left     atomic.Int32
	failed   atomic.Bool
	err      error
	doneOnce sync.Once
	done     chan struct{}
	ctx      context.Context
	active   sync.WaitGroup // runFrom calls started or queued

	mem   *tracker     // nil without a group
	kstep kernels.Step // the step's temporary variables
	trace bool
	tr    traceBuf

	// deadNode marks the nodes that did not run because they are dead
	// (plans with deadness only; deadness.go).
	deadNode []bool
}

// traceBuf collects slices from concurrent workers.
type traceBuf struct {
	mu     sync.Mutex
	slices []trace.Slice
	flows  []trace.Flow
}

func (b *traceBuf) add(s trace.Slice) {
	b.mu.Lock()
	b.slices = append(b.slices, s)
	b.mu.Unlock()
}

func (b *traceBuf) step(run int64, group int) *trace.Step {
	return &trace.Step{Run: run, Group: group, Slices: b.slices, Flows: b.flows}
}

// Run executes one step of the plan and returns the fetched tensors in
// fetch order: the one entry for every device, group count and mode. It
// blocks until every node has run, the first error, or ctx is cancelled.
// The trace step is nil unless opts.Trace.
//
// Groups whose streams are an asynchronous device's (device.EventPool: a
// GPU) run on the device launcher (runDevice, device_step.go); host
// groups with streams run each kernel as an item of its stream
// (runStreams, streams.go); one host group without streams, or none, runs
// on the inter-op pool, kernels on the caller's goroutine and Inter's
// workers (the fast path of the CPU's default). A plan with dead tensors
// or frames goes through the one frame driver (frames.go) on each.
func (p *Plan) Run(ctx context.Context, rt *Runtime, feeds []*tensor.Tensor, opts Options) ([]*tensor.Tensor, *trace.Step, error) {
	if len(feeds) != len(p.feeds) {
		return nil, nil, status.Errorf(status.Internal, "plan expects %d feeds, got %d", len(p.feeds), len(feeds))
	}
	var group *groups.Group
	if len(rt.Groups) > 0 {
		group = rt.Groups[0]
		if _, async := group.Compute.(device.EventPool); async {
			return p.runDevice(ctx, rt, feeds, opts)
		}
		if rt.Streams || len(rt.Groups) > 1 || rt.Assign != nil {
			if p.deadness {
				return p.runStreamFrames(ctx, rt, feeds, opts)
			}
			return p.runStreams(ctx, rt, feeds, opts)
		}
	}
	if p.frames {
		return p.runFrames(ctx, rt, group, feeds, opts)
	}
	s := &step{
		plan:    p,
		rt:      rt,
		group:   group,
		feeds:   feeds,
		pending: make([]int32, len(p.nodes)),
		outputs: make([][]*tensor.Tensor, len(p.nodes)),
		done:    make(chan struct{}),
		ctx:     ctx,
		trace:   opts.Trace,
	}
	if group != nil {
		if _, ok := group.Device.Memory().(device.HostAddressable); !ok {
			return nil, nil, status.Errorf(status.Unimplemented, "device %s: the pool executor needs host-addressable memory", group.Device.Name())
		}
		s.mem = newTracker(nil, nil)
	}
	for i := range p.nodes {
		s.pending[i] = p.nodes[i].npred
	}
	if p.deadness {
		s.deadNode = make([]bool, len(p.nodes))
	}
	s.left.Store(int32(len(p.nodes)))
	if len(p.nodes) > 0 {
		// The caller's goroutine takes the first root; others go to the pool.
		s.active.Add(len(p.roots))
		for _, r := range p.roots[1:] {
			r := r
			rt.Inter.Submit(func() { s.runFrom(r) })
		}
		s.runFrom(p.roots[0])
		select {
		case <-s.done:
		case <-ctx.Done():
			s.fail(status.Errorf(status.Cancelled, "step cancelled: %v", ctx.Err()))
		}
	}
	var st *trace.Step
	if s.trace {
		g := -1
		if group != nil {
			g = int(group.ID)
		}
		st = s.tr.step(opts.Run, g)
	}
	if s.mem != nil {
		// Kernels still running may write buffers: wait for them before
		// anything goes back to the allocator.
		s.active.Wait()
		defer s.mem.drain()
	}
	if s.failed.Load() {
		return nil, nil, s.err
	}
	out := make([]*tensor.Tensor, len(p.fetches))
	for i, f := range p.fetches {
		var t *tensor.Tensor
		if f.Node < 0 {
			t = feeds[f.Index]
		} else {
			t = s.outputs[f.Node][f.Index]
		}
		if t == nil {
			return nil, nil, deadFetch(p, i)
		}
		if s.mem != nil && f.Node >= 0 && t.DType != tensor.String {
			// Device memory goes back to the allocator; the caller gets
			// its own copy. Strings live outside device memory and are
			// never written after they are made, so they are handed over
			// as they are: a deep copy of elements that share one string
			// (Fill, Tile) could be far larger than the tensor.
			c := t.Clone()
			s.mem.unref(t, -1)
			t = c
		}
		out[i] = t
	}
	return out, st, nil
}

func (s *step) fail(err error) {
	s.doneOnce.Do(func() {
		s.err = err
		s.failed.Store(true)
		close(s.done)
	})
}

// runFrom runs node i, then keeps running one newly ready successor on this
// goroutine while handing the others to the pool.
func (s *step) runFrom(i int) {
	defer s.active.Done()
	for i >= 0 {
		if s.failed.Load() {
			return
		}
		if err := s.compute(i); err != nil {
			s.fail(err)
			return
		}
		next := -1
		for _, succ := range s.plan.nodes[i].succ {
			if atomic.AddInt32(&s.pending[succ], -1) == 0 {
				if next < 0 {
					next = succ
				} else {
					succ := succ
					s.active.Add(1)
					s.rt.Inter.Submit(func() { s.runFrom(succ) })
				}
			}
		}
		if s.left.Add(-1) == 0 {
			s.doneOnce.Do(func() { close(s.done) })
		}
		i = next
	}
}

func (s *step) compute(i int) error {
	pn := &s.plan.nodes[i]
	ins := make([]*tensor.Tensor, len(pn.inputs))
	for j, r := range pn.inputs {
		if r.Node < 0 {
			ins[j] = s.feeds[r.Index]
		} else {
			ins[j] = s.outputs[r.Node][r.Index]
		}
	}
	if s.deadNode != nil && isDead(pn, ins, s.deadNode) {
		s.outputs[i] = make([]*tensor.Tensor, len(pn.node.OutTypes))
		s.deadNode[i] = true
		if s.mem != nil {
			s.mem.retire(nil, nil, ins, nil, -1)
		}
		return nil
	}
	var start time.Time
	if s.trace {
		start = time.Now()
	}
	k := kernelCall{step: &s.kstep}
	if g := s.group; g != nil {
		if pn.isConst {
			c, err := constant(g, pn)
			if err != nil {
				return err
			}
			s.outputs[i] = []*tensor.Tensor{c.Value}
			s.record(pn, start, 0, "")
			return nil
		}
		var as device.Stream
		if g.StreamAware {
			as = g.Compute
		}
		k.alloc = newOutAlloc(g, as, s.mem)
	}
	outs, err := k.run(pn, ins, s.rt.Intra)
	if err != nil {
		if k.alloc != nil {
			s.mem.retire(nil, nil, nil, k.alloc.fresh, -1)
		}
		return err
	}
	s.outputs[i] = outs
	var bytes int64
	var allocName string
	if k.alloc != nil {
		s.mem.retire(outs, pn.uses, ins, k.alloc.fresh, -1)
		bytes, allocName = k.alloc.bytes, k.alloc.g.Alloc.Name()
	} else {
		for _, t := range outs {
			if t != nil { // a Switch's dead side
				bytes += t.ByteSize()
			}
		}
	}
	s.record(pn, start, bytes, allocName)
	return nil
}

func (s *step) record(pn *planNode, start time.Time, bytes int64, alloc string) {
	if !s.trace {
		return
	}
	sl := trace.Slice{Name: pn.node.Name, Op: pn.node.Op, Kind: trace.Kernel,
		Device: deviceName(s.group), Group: -1, Stream: -1, Role: "inter_op",
		Start: start, End: time.Now(), Bytes: bytes, Allocator: alloc}
	if g := s.group; g != nil {
		sl.Group = int(g.ID)
	}
	s.tr.mu.Lock()
	sl.ID = len(s.tr.slices)
	s.tr.slices = append(s.tr.slices, sl)
	s.tr.mu.Unlock()
}

func deviceName(g *groups.Group) string {
	if g == nil {
		return "/job:localhost/replica:0/task:0/device:CPU:0"
	}
	return g.Device.Name()
}

// kernelCall runs one kernel with its inputs, checks what it produced,
// and turns a panic into an INTERNAL status naming the node.
type kernelCall struct {
	alloc *outAlloc
	step  *kernels.Step
}

func (k *kernelCall) run(pn *planNode, ins []*tensor.Tensor, pool kernels.Parallelizer) (outs []*tensor.Tensor, err error) {
	n := pn.node
	ctx := &kernels.Context{
		Node:    n,
		Inputs:  ins,
		Outputs: make([]*tensor.Tensor, len(n.OutTypes)),
		Pool:    pool,
		Step:    k.step,
	}
	if k.alloc != nil {
		ctx.Alloc = k.alloc.allocate
		a := k.alloc.g.Alloc
		ctx.Limit = hostmem.Limit{Allocator: a.Name(), Bytes: int64(min(a.Limit(), 1<<62))}
	}
	defer func() {
		if r := recover(); r != nil {
			err = status.Errorf(status.Internal, "node '%s' (op %s) panicked: %v\n%s", n.Name, n.Op, r, debug.Stack())
		}
	}()
	if err := pn.kernel.Compute(ctx); err != nil {
		if status.CodeOf(err) == status.Unknown {
			err = status.Errorf(status.Internal, "node '%s' (op %s): %v", n.Name, n.Op, err)
		}
		return nil, err
	}
	for j, t := range ctx.Outputs {
		if t == nil && pn.flow == flowSwitch {
			continue // the untaken branch: dead
		}
		if t == nil {
			return nil, status.Errorf(status.Internal, "node '%s' (op %s) did not set output %d", n.Name, n.Op, j)
		}
		if t.DType != n.OutTypes[j] {
			return nil, status.Errorf(status.Internal, "node '%s' (op %s) produced %v for output %d, declared %v", n.Name, n.Op, t.DType, j, n.OutTypes[j])
		}
	}
	return ctx.Outputs, nil
}

// outAlloc gives a kernel its output buffers from a group's allocator and
// remembers them for the tracker.
type outAlloc struct {
	g     *groups.Group
	s     device.Stream // the stream the memory is for (stream-aware bfc), or nil
	mem   *tracker
	view  device.HostAddressable
	fresh []*buffer
	bytes int64
}

func newOutAlloc(g *groups.Group, s device.Stream, mem *tracker) *outAlloc {
	return &outAlloc{g: g, s: s, mem: mem, view: g.Device.Memory().(device.HostAddressable)}
}

func (a *outAlloc) allocate(dt tensor.DType, shape tensor.Shape) (*tensor.Tensor, error) {
	size := uint64(shape.NumElements()) * uint64(dt.Size())
	addr, err := a.g.Alloc.Allocate(size, a.s)
	if err != nil {
		return nil, err
	}
	// A zero-size tensor still views one byte of its chunk, so that its
	// buffer has an address the tracker can key on.
	buf := a.view.Bytes(addr, max(size, 1))[:size]
	clear(buf)
	t := &tensor.Tensor{DType: dt, Shape: shape.Clone(), Buf: buf}
	b := &buffer{addr: addr, alloc: a.g.Alloc}
	a.mem.add(t, b)
	a.fresh = append(a.fresh, b)
	a.bytes += int64(size)
	return t, nil
}

// constant returns node pn's value in g's constant store, materialising it
// on first use: the kernel computes the host value, which is copied into
// the group's memory on its H2D stream. The one host wait is this
// first-use upload, as TF's constant kernels copy at construction.
func constant(g *groups.Group, pn *planNode) (*groups.Const, error) {
	return g.Consts.Get(pn.node, func() (*groups.Const, error) {
		var k kernelCall
		outs, err := k.run(pn, nil, kernels.Serial{})
		if err != nil {
			return nil, err
		}
		v := outs[0]
		if v.DType == tensor.String {
			return &groups.Const{Value: v}, nil
		}
		size := uint64(len(v.Buf))
		var s device.Stream
		if g.StreamAware {
			s = g.H2D
		}
		addr, err := g.Alloc.Allocate(size, s)
		if err != nil {
			return nil, status.Errorf(status.CodeOf(err), "node '%s' (op Const): constant %v%v: %v", pn.node.Name, v.DType, v.Shape, err)
		}
		mem := g.Device.Memory().(device.HostAddressable)
		buf := mem.Bytes(addr, max(size, 1))[:size]
		if size > 0 {
			ev, err := g.Device.NewEvent()
			if err != nil {
				return nil, err
			}
			err = g.H2D.CopyH2D(addr, v.Buf)
			if err == nil {
				err = g.H2D.Record(ev)
			}
			if err == nil {
				err = ev.Synchronize()
			}
			if err != nil {
				g.Alloc.Free(addr)
				return nil, status.Wrap(err, "node '%s' (op Const): copy to %s", pn.node.Name, g.Device.Name())
			}
		}
		return &groups.Const{Value: &tensor.Tensor{DType: v.DType, Shape: v.Shape.Clone(), Buf: buf},
			Addr: addr, Bytes: int64(g.Alloc.ChunkSize(addr)), Alloc: g.Alloc}, nil
	})
}
