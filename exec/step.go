package exec

import (
	"context"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"mstream/bfc"
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
	// DropWait, when set, is asked before each producer-consumer wait
	// the reduction kept (by op: the IDs of the ops' trace slices, in a
	// traced step) and leaves it out when it says so, the waits it
	// implied missing with it; the final event still follows every stream.
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
	// Deliver, when set, is handed the fetched tensors in place of Run's
	// result (Run then returns none): the step's own, valid during the
	// call only, so Deliver copies what it keeps. A caller that copies
	// them anyway (the C API, into TF_Tensors) so skips the copy a host
	// step otherwise makes of every fetch before its buffers go back to
	// the allocator. Deliver's error is Run's.
	Deliver func(out []*tensor.Tensor) error
}

// deliver hands out to opts.Deliver, if set, for a step path that made
// the caller's copies already (the device launcher, host streams).
func (opts *Options) deliver(out []*tensor.Tensor, st *trace.Step, err error) ([]*tensor.Tensor, *trace.Step, error) {
	if opts.Deliver == nil || err != nil {
		return out, st, err
	}
	return nil, st, opts.Deliver(out)
}

type step struct {
	plan    *Plan
	rt      *Runtime
	group   *groups.Group // Groups[0]; nil without groups
	feeds   []*tensor.Tensor
	pending []int32
	outputs [][]*tensor.Tensor // per node, a window of outFlat
	insOf   [][]*tensor.Tensor // per node, a window of inFlat
	left    atomic.Int32
	failed  atomic.Bool
	err     error
	// finished is set once, by the worker that ran the last node or the
	// first failure, which then puts the one token in signal.
	finished atomic.Bool
	signal   chan struct{}
	// fetchBuf is the fetch list handed to Options.Deliver, reused.
	fetchBuf []*tensor.Tensor
	ctx      context.Context
	active   sync.WaitGroup // nodes offered to the inter-op pool and not taken back
	// offered[i] is the step's generation (gen) while node i waits in
	// the inter-op pool's queue, unclaimed, else 0: the pool's task and
	// the goroutine that offered it race to claim it (offer, reclaim),
	// so a node no worker has started when its offerer runs out of work
	// runs there, without a hand-off. A task claims only an offer of its
	// own step's generation: one that comes late, after the state began
	// another step (maybe on another group's pool), finds nothing.
	offered []atomic.Uint32
	gen     uint32 // this step's generation, never 0; drive moves it on
	// tasks holds the offer tasks no queue holds now, for offer to reuse
	// (a late task puts itself back when it has run).
	tasksMu sync.Mutex
	tasks   []*offerTask
	// idle, when the inter-op pool can say so, says whether one of its
	// workers waits for work: a node is offered only then.
	idle idler

	// Per-node state, laid out once when the step state is made and
	// reused by every step that takes it from the plan's pool: node i's
	// inputs and outputs are windows of inFlat and outFlat. main is the
	// caller's worker.
	inFlat  []*tensor.Tensor
	outFlat []*tensor.Tensor
	main    *worker
	// constVal caches, per Const node, its value in constOf's constant
	// store, which keeps it as long as the group lives: a step reads it
	// without the store's lock.
	constVal []*tensor.Tensor
	constOf  *groups.Group
	// measure says this step times its kernels (costs.go).
	measure bool
	// env is what the step's kernels run with (bind): its pool, its
	// temporary variables, and on a group its allocator and tracker.
	env kenv

	mem   *tracker     // nil without a group
	kstep kernels.Step // the step's temporary variables
	// shard is the cache of its allocator (shardOf's) that the step's
	// buffers come from and go back to, the state's own while it lives:
	// concurrent Runs of a plan each take a state of their own, so
	// their allocations meet on no cache (bfc.Shard).
	shard   bfc.Shard
	shardOf *bfc.Allocator
	trace   bool
	tr      traceBuf

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

// take hands the recorded slices and flows over as a step's trace and
// leaves the buffer empty for the next step.
func (b *traceBuf) take(run int64, group int) *trace.Step {
	b.mu.Lock()
	defer b.mu.Unlock()
	st := &trace.Step{Run: run, Group: group, Slices: b.slices, Flows: b.flows}
	b.slices, b.flows = nil, nil
	return st
}

// Run executes one step of the plan and returns the fetched tensors in
// fetch order: the one entry for every device, group count and mode. It
// blocks until every node has run, the first error, or ctx is cancelled.
// The trace step is nil unless opts.Trace.
//
// Groups whose streams are an asynchronous device's (device.EventPool: a
// GPU) run on the device launcher (runDevice, device_step.go); every host
// step runs on the host scheduler (runHost).
//
// On a plan after Close it fails with ErrClosed, running nothing; a step
// that began before keeps the plan's kernels open until it ends
// (lifetime.go).
func (p *Plan) Run(ctx context.Context, rt *Runtime, feeds []*tensor.Tensor, opts Options) ([]*tensor.Tensor, *trace.Step, error) {
	if len(feeds) != len(p.feeds) {
		return nil, nil, status.Errorf(status.Internal, "plan expects %d feeds, got %d", len(p.feeds), len(feeds))
	}
	if !p.enter() {
		return nil, nil, ErrClosed
	}
	var group *groups.Group
	if len(rt.Groups) > 0 {
		group = rt.Groups[0]
		if _, async := group.Compute.(device.EventPool); async {
			defer p.exit()
			return opts.deliver(p.runDevice(ctx, rt, feeds, opts))
		}
	}
	return p.runHost(ctx, rt, group, feeds, opts)
}

// onStreams says a host step runs on its groups' streams: several
// groups, a node-level assignment or MSTREAM_HOST_STREAMS.
func (rt *Runtime) onStreams() bool {
	return len(rt.Groups) > 0 && (rt.Streams || len(rt.Groups) > 1 || rt.Assign != nil)
}

// newPoolStep lays out the per-node state of a host step; the plan's pool
// keeps it between steps.
func (p *Plan) newPoolStep() *step {
	s := &step{plan: p, signal: make(chan struct{}, 1)}
	n := len(p.nodes)
	var nin, nout int
	for i := range p.nodes {
		nin += len(p.nodes[i].inputs)
		nout += len(p.nodes[i].node.OutTypes)
	}
	s.pending = make([]int32, n)
	s.outputs = make([][]*tensor.Tensor, n)
	s.insOf = make([][]*tensor.Tensor, n)
	s.inFlat = make([]*tensor.Tensor, nin)
	s.outFlat = make([]*tensor.Tensor, nout)
	s.offered = make([]atomic.Uint32, n)
	s.constVal = make([]*tensor.Tensor, n)
	s.main = newWorker()
	s.main.stack = make([]int32, 0, len(p.roots))
	nin, nout = 0, 0
	for i := range p.nodes {
		k := len(p.nodes[i].node.OutTypes)
		s.outputs[i] = s.outFlat[nout : nout+k : nout+k]
		nout += k
		k = len(p.nodes[i].inputs)
		s.insOf[i] = s.inFlat[nin : nin+k : nin+k]
		nin += k
	}
	if p.deadness {
		s.deadNode = make([]bool, n)
	}
	return s
}

// runHost is the host scheduler: one step of the plan on host groups (or
// none). A step on host streams tracks the stream ops it lays out
// (driveStreams, streams.go), a plan with frames or dead tensors through
// the frame driver inside it (one opFrames op whose items are the
// driver's). Otherwise, with the step's state from the plan's pool, a
// plan without frames keeps a pending count per node (drive, the fast
// path; dead tensors in deadNode), and a plan with frames goes through
// the frame driver's inline form on the caller's goroutine (driveFrames,
// frames.go), the same loop a one-group stream step's opFrames item
// runs. The kernel context (kenv, worker.begin), the tracker and tracing
// are the same for all; a pool step's kernels get the intra-op pool in
// the loop mode its plan's gate picks (gate.go). It ends the step Run
// entered (p.exit) once no kernel of it runs, which after a cancellation
// may be after it returns.
func (p *Plan) runHost(ctx context.Context, rt *Runtime, group *groups.Group, feeds []*tensor.Tensor, opts Options) ([]*tensor.Tensor, *trace.Step, error) {
	ip, _ := rt.Intra.(*Intra)
	if ip != nil {
		ip.stepBegins()
		defer ip.stepEnds()
	}
	if group != nil && rt.onStreams() {
		defer p.exit() // driveStreams joins every item, even when cancelled
		return opts.deliver(p.driveStreams(ctx, rt, feeds, opts))
	}
	s := p.steps.get()
	if s == nil {
		s = p.newPoolStep()
	}
	s.rt, s.group, s.feeds, s.ctx, s.trace = rt, group, feeds, ctx, opts.Trace
	s.measure = p.costs.measure()
	if err := s.bind(group); err != nil {
		p.steps.put(s.reset())
		p.exit()
		return nil, nil, err
	}
	if ip != nil && ip.workers > 0 {
		gt := p.gate.ticket(gateKey(feeds))
		s.env.pool = loopsFor(ip, gt.mode)
		ip.modeSteps[gt.mode].Add(1)
		defer gt.done()
	}
	var out []*tensor.Tensor
	var err error
	reuse := true
	if p.frames {
		out, err = s.driveFrames(ctx)
	} else {
		reuse = s.drive(ctx)
	}
	if s.mem != nil || reuse {
		// Kernels still running may write buffers, and a pool task may
		// still be finishing (or, after a failure, yet to start and
		// see it): wait for them before anything goes back to the
		// allocator or the state to the plan's pool. Only a cancelled
		// step without buffers returns at once, leaving its state.
		s.active.Wait()
		p.exit()
		defer func() {
			if s.mem != nil {
				s.mem.drain()
			}
			p.steps.put(s.reset())
		}()
	} else {
		// The plan's kernels stay open for the cancelled step's kernels
		// still running.
		go func() {
			s.active.Wait()
			p.exit()
		}()
	}
	var st *trace.Step
	if s.trace {
		// After the wait above, unless the step was cancelled and
		// left its state: then workers may still record into the
		// buffer, which take locks.
		g := -1
		if group != nil {
			g = int(group.ID)
		}
		st = s.tr.take(opts.Run, g)
	}
	if out == nil && err == nil {
		out, err = s.fetched(opts.Deliver != nil)
	}
	if err != nil {
		return nil, nil, err
	}
	if opts.Deliver != nil {
		// Before the deferred drain gives the buffers back.
		err = opts.Deliver(out)
		clear(out)
		return nil, st, err
	}
	if s.mem != nil {
		for i, f := range p.fetches {
			if t := out[i]; f.Node >= 0 && t.DType != tensor.String {
				// Device memory goes back to the allocator; the caller
				// gets its own copy. Strings live outside device memory
				// and are never written after they are made, so they are
				// handed over as they are: a deep copy of elements that
				// share one string (Fill, Tile) could be far larger than
				// the tensor.
				out[i] = t.Clone()
				s.mem.unref(t, -1)
			}
		}
	}
	return out, st, nil
}

// drive runs a plan without frames: the roots, then each node once its
// pending count (data and control predecessors) reaches zero. Every node
// that costs little (costs.go: a cost measured under TF's threshold, or
// an op that never computes much) runs on the goroutine that made it
// ready, the caller's first, from a stack of ready nodes; a node that
// costs more, made ready beside other work, goes to the inter-op pool. A
// chain, or a graph of scalar ops, so runs on the caller's goroutine
// without a hop, and concurrent Runs each keep to their own goroutine
// until a node is worth a second thread. No allocation per node but the
// kernel's own outputs. It reports whether the step's state may be
// reused (not after a cancellation, when kernels may still run).
func (s *step) drive(ctx context.Context) bool {
	p := s.plan
	for i := range p.nodes {
		s.pending[i] = p.nodes[i].npred
	}
	if s.gen++; s.gen == 0 {
		s.gen = 1
	}
	s.left.Store(int32(len(p.nodes)))
	if len(p.nodes) == 0 {
		return true
	}
	w := s.main
	stack := w.stack[:0]
	expensive := int32(-1)
	for _, r := range p.roots {
		stack, expensive = s.ready(w, stack, int32(r), expensive)
	}
	if expensive >= 0 {
		stack = append(stack, expensive)
	}
	w.stack = stack
	s.runLoop(w)
	// Most steps end on this goroutine, the token already there: a
	// receive that cannot block costs less than the two-way select.
	select {
	case <-s.signal:
		return true
	default:
	}
	select {
	case <-s.signal:
		return true
	case <-ctx.Done():
		s.fail(status.Errorf(status.Cancelled, "step cancelled: %v", ctx.Err()))
		<-s.signal
		// Kernels still running keep the step's state: only a step
		// whose buffers must go back waits for them, and a state a
		// cancelled step left is not reused.
		return false
	}
}

// fetched returns the fetches of a step drive ran, or its error, or TF's
// error for the first fetch that is dead. With scratch the list is the
// step's own (fetchBuf), for Options.Deliver, which keeps none of it.
func (s *step) fetched(scratch bool) ([]*tensor.Tensor, error) {
	if s.failed.Load() {
		return nil, s.err
	}
	p := s.plan
	var out []*tensor.Tensor
	if scratch {
		if cap(s.fetchBuf) < len(p.fetches) {
			s.fetchBuf = make([]*tensor.Tensor, len(p.fetches))
		}
		out = s.fetchBuf[:len(p.fetches)]
	} else {
		out = make([]*tensor.Tensor, len(p.fetches))
	}
	for i, f := range p.fetches {
		var t *tensor.Tensor
		if f.Node < 0 {
			t = s.feeds[f.Index]
		} else {
			t = s.outputs[f.Node][f.Index]
		}
		if t == nil {
			return nil, deadFetch(p, i)
		}
		out[i] = t
	}
	return out, nil
}

// bind readies a step state from the plan's pool for group (nil: none):
// its kernels' environment (the group's allocator as seen from its
// compute stream) and its tracker.
func (s *step) bind(group *groups.Group) error {
	s.env = kenv{pool: s.rt.Intra, kstep: &s.kstep}
	s.idle, _ = s.rt.Inter.(idler)
	if group == nil {
		return nil
	}
	if s.mem == nil {
		s.mem = newTracker(nil, nil)
		s.mem.recycle = true
	}
	var st device.Stream
	if group.StreamAware {
		st = group.Compute
	}
	if err := s.env.onGroup(group, st, s.mem); err != nil {
		return status.Errorf(status.Unimplemented, "device %s: the host scheduler needs host-addressable memory", group.Device.Name())
	}
	if s.shardOf != group.Alloc {
		s.shard, s.shardOf = group.Alloc.NextShard(), group.Alloc
	}
	s.env.shard = s.shard
	if s.constOf != group {
		clear(s.constVal)
		s.constOf = group
	}
	return nil
}

// reset drops what a finished step referenced, so that the pooled state
// keeps no tensor alive, and readies it for the next step.
func (s *step) reset() *step {
	clear(s.inFlat)
	clear(s.outFlat)
	s.main.reset()
	clear(s.deadNode)
	s.rt, s.group, s.feeds, s.ctx, s.env, s.idle = nil, nil, nil, nil, kenv{}, nil
	s.kstep.Reset()
	s.err = nil
	s.failed.Store(false)
	s.finished.Store(false)
	return s
}

func (s *step) fail(err error) {
	if s.finished.CompareAndSwap(false, true) {
		s.err = err
		s.failed.Store(true)
		s.signal <- struct{}{}
	}
}

// ready files node i, just made ready, by cost: a cheap one goes on
// stack, w's ready nodes, to run on this goroutine; an expensive one is
// kept for this goroutine when it would otherwise have nothing to do, and
// offered to the pool when this goroutine has other work. keep is the
// expensive node kept so far (-1: none); the result is the stack and the
// node kept now, which the caller runs last. (TF's executor decides
// inline-or-pool the same way, ScheduleReady.)
func (s *step) ready(w *worker, stack []int32, i, keep int32) ([]int32, int32) {
	if !s.plan.costs.expensive(i) {
		return append(stack, i), keep
	}
	if keep >= 0 && !s.offer(w, keep) {
		stack = append(stack, keep)
	}
	return stack, i
}

// idler is an inter-op pool that can say whether one of its workers
// waits for work (Pool.Idle).
type idler interface {
	Idle() bool
}

// offer hands node i, made ready by w, to the inter-op pool, and reports
// false, for w to run it, when the pool says no worker is idle: another
// Run's step (or other work) keeps them busy, and a queued node would
// only wait for one. An offered node stays w's to take back (reclaim)
// until a worker claims it.
func (s *step) offer(w *worker, i int32) bool {
	if s.idle != nil && !s.idle.Idle() {
		return false
	}
	s.active.Add(1)
	t := s.offerTask()
	t.i, t.gen = i, s.gen
	s.offered[i].Store(s.gen)
	w.offers = append(w.offers, i)
	s.rt.Inter.Submit(t.run)
	return true
}

// offerTask is one offer of a node to the inter-op pool: the node, the
// generation of the step that offered it, and the worker that runs it
// if the task claims it. A task lives in one pool queue at a time, then
// in its step state's free list (step.tasks), so offering allocates
// nothing once a step has made as many as it keeps in flight.
type offerTask struct {
	s   *step
	i   int32
	gen uint32
	w   *worker
	run func() // t.runTask, made once
}

// offerTask returns a task from the free list, or a new one.
func (s *step) offerTask() *offerTask {
	s.tasksMu.Lock()
	if n := len(s.tasks); n > 0 {
		t := s.tasks[n-1]
		s.tasks = s.tasks[:n-1]
		s.tasksMu.Unlock()
		return t
	}
	s.tasksMu.Unlock()
	t := &offerTask{s: s, w: newWorker()}
	t.run = t.runTask
	return t
}

// reclaim takes back onto stack the nodes w offered that no worker has
// claimed yet, and forgets w's offers. A worker that wakes late then finds
// its task claimed; on a busy machine (or where the offered kernel costs
// less than a hand-off) the node so runs on the goroutine that made it
// ready, as if never offered.
func (s *step) reclaim(w *worker, stack []int32) []int32 {
	for _, i := range w.offers {
		if s.offered[i].CompareAndSwap(s.gen, 0) {
			s.active.Done()
			stack = append(stack, i)
		}
	}
	w.offers = w.offers[:0]
	return stack
}

// kenv is what the kernels of one step on one group (or none) run with:
// the intra-op pool, the step's temporary variables and, on a group, its
// allocator as seen from the stream the outputs are for, its memory view
// and limit, and the step's tracker; without a group, outputs are Go
// memory. Every host kernel call makes its context from one
// (worker.begin): the pool step's nodes, the frame driver's, a stream
// step's items, a constant's host value, a device step's host nodes.
type kenv struct {
	pool  kernels.Parallelizer
	kstep *kernels.Step
	g     *groups.Group // nil: Go memory
	st    device.Stream // the stream outputs are allocated for, or nil
	shard bfc.Shard     // the allocator's cache of st that they come from
	mem   *tracker
	view  device.HostAddressable
	limit hostmem.Limit
}

// onGroup puts e's outputs in g's memory, allocated for stream st (nil:
// none) and tracked by mem; it fails when the host cannot address that
// memory.
func (e *kenv) onGroup(g *groups.Group, st device.Stream, mem *tracker) error {
	view, ok := g.Device.Memory().(device.HostAddressable)
	if !ok {
		return status.Errorf(status.Unimplemented, "device %s: memory the host cannot address", g.Device.Name())
	}
	a := g.Alloc
	e.g, e.st, e.mem, e.view = g, st, mem, view
	e.limit = hostmem.Limit{Allocator: a.Name(), Bytes: int64(min(a.Limit(), 1<<62))}
	return nil
}

// worker is what one goroutine running nodes of a step needs: a kernel
// context and an output allocator it reuses node after node, and its
// stack of ready nodes.
type worker struct {
	ctx     kernels.Context
	env     *kenv // what ctx and alloc are set for (begin)
	alloc   outAlloc
	allocFn func(tensor.DType, tensor.Shape) (*tensor.Tensor, error)
	stack   []int32
	offers  []int32 // nodes this goroutine offered to the pool this step
}

func newWorker() *worker {
	w := &worker{}
	w.allocFn = w.alloc.allocate
	return w
}

// reset drops the references the worker's last node left.
func (w *worker) reset() {
	w.ctx, w.env = kernels.Context{}, nil
	clear(w.alloc.fresh)
	w.alloc.fresh = w.alloc.fresh[:0]
	w.offers = w.offers[:0]
	w.alloc.g, w.alloc.s, w.alloc.mem, w.alloc.view = nil, nil, nil, nil
}

// begin readies w's kernel context and output allocator for node pn,
// run in env with inputs ins and outputs outs, and returns the
// allocator (nil without a group). What is env's (intra-op pool, step
// container, allocator, limit) is set at the worker's first node in env
// (reset clears it): a node sets only its own fields.
func (w *worker) begin(env *kenv, pn *planNode, ins, outs []*tensor.Tensor) *outAlloc {
	ctx := &w.ctx
	if w.env != env {
		w.env = env
		*ctx = kernels.Context{Pool: env.pool, Step: env.kstep}
		w.alloc.g, w.alloc.s, w.alloc.mem, w.alloc.view = env.g, env.st, env.mem, env.view
		w.alloc.shard = env.shard
		if env.g != nil {
			ctx.Alloc, ctx.Limit = w.allocFn, env.limit
		}
	}
	ctx.Node, ctx.Inputs, ctx.Outputs = pn.node, ins, outs
	if env.g == nil {
		return nil
	}
	w.alloc.bytes = 0
	return &w.alloc
}

// call runs node pn on ins in env, its outputs into outs, and returns
// them and the allocator (nil without a group), whose fresh buffers the
// caller retires.
func (w *worker) call(env *kenv, pn *planNode, ins, outs []*tensor.Tensor) ([]*tensor.Tensor, *outAlloc, error) {
	a := w.begin(env, pn, ins, outs)
	outs, err := callKernel(pn, &w.ctx)
	return outs, a, err
}

// runTask is the pool's task for node t.i: it runs the node unless the
// goroutine that offered it took it back. The task may run after its
// step has ended (the offer taken back) and the state began another
// step, maybe on another group's inter-op pool: the generation in
// offered[i] then differs from the task's, and the task leaves the new
// step's offer of node i to that step's own task or offerer. Either way
// it goes back to the free list.
func (t *offerTask) runTask() {
	s, i := t.s, t.i
	if s.offered[i].CompareAndSwap(t.gen, 0) {
		w := t.w
		w.stack = append(w.stack, i)
		s.runLoop(w)
		w.reset()
		s.active.Done()
	}
	s.tasksMu.Lock()
	s.tasks = append(s.tasks, t)
	s.tasksMu.Unlock()
}

// runLoop runs the nodes on w's stack and every node they make ready that
// ready keeps for this goroutine, last in first out (depth first, as a
// chain runs), then the nodes it offered that no worker took.
func (s *step) runLoop(w *worker) {
	p := s.plan
	stack := w.stack
	defer func() {
		// After a failure, offers no worker took are withdrawn: the
		// step's end waits for nothing that will not run.
		s.reclaim(w, nil)
		w.stack = stack[:0]
	}()
	for len(stack) > 0 || len(w.offers) > 0 {
		if len(stack) == 0 {
			if stack = s.reclaim(w, stack); len(stack) == 0 {
				return
			}
		}
		i := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if s.failed.Load() {
			return
		}
		if err := s.compute(w, i); err != nil {
			s.fail(err)
			return
		}
		keep := int32(-1)
		for _, succ := range p.nodes[i].succ {
			if atomic.AddInt32(&s.pending[succ], -1) == 0 {
				stack, keep = s.ready(w, stack, int32(succ), keep)
			}
		}
		if keep >= 0 && (len(stack) == 0 || !s.offer(w, keep)) {
			stack = append(stack, keep)
		}
		if s.left.Add(-1) == 0 && s.finished.CompareAndSwap(false, true) {
			s.signal <- struct{}{}
		}
	}
}

func (s *step) compute(w *worker, i int32) error {
	pn := &s.plan.nodes[i]
	ins := s.insOf[i]
	for j, r := range pn.inputs {
		if r.Node < 0 {
			ins[j] = s.feeds[r.Index]
		} else {
			ins[j] = s.outputs[r.Node][r.Index]
		}
	}
	if s.deadNode != nil && isDead(pn, ins, s.deadNode) {
		s.deadNode[i] = true
		if s.mem != nil {
			s.mem.retire(nil, nil, ins, nil, -1)
		}
		return nil
	}
	var start time.Time
	if s.trace || s.measure {
		start = time.Now()
	}
	if g := s.group; g != nil {
		if pn.isConst {
			v := s.constVal[i]
			if v == nil {
				c, err := constant(g, pn)
				if err != nil {
					return err
				}
				v = c.Value
				s.constVal[i] = v
			}
			s.outputs[i][0] = v
			s.record(pn, s.group, nil, start, 0, "")
			return nil
		}
		emptyFresh(&w.alloc.fresh)
	}
	alloc := w.begin(&s.env, pn, ins, s.outputs[i])
	outs, err := callKernel(pn, &w.ctx)
	if err != nil {
		if alloc != nil {
			s.mem.retire(nil, nil, nil, alloc.fresh, -1)
		}
		return err
	}
	if s.measure {
		s.plan.costs.observe(i, time.Since(start))
	}
	var bytes int64
	var allocName string
	if alloc != nil {
		s.mem.retire(outs, pn.uses, ins, alloc.fresh, -1)
		if s.trace {
			bytes, allocName = alloc.bytes, alloc.g.Alloc.Name()
		}
	} else if s.trace {
		for _, t := range outs {
			if t != nil { // a Switch's dead side
				bytes += t.ByteSize()
			}
		}
	}
	s.record(pn, s.group, nil, start, bytes, allocName)
	return nil
}

// record adds node pn's trace slice, when the step is traced: run on
// group g (nil: none), on stream st, or on a worker (nil).
func (s *step) record(pn *planNode, g *groups.Group, st device.Stream, start time.Time, bytes int64, alloc string) {
	if !s.trace {
		return
	}
	sl := trace.Slice{Name: pn.node.Name, Op: pn.node.Op, Kind: trace.Kernel,
		Device: deviceName(g), Group: -1, Stream: -1, Role: "inter_op",
		Start: start, End: time.Now(), Bytes: bytes, Allocator: alloc}
	if g != nil {
		sl.Group = int(g.ID)
	}
	if st != nil {
		sl.Stream, sl.Role = int(st.ID()), role(g, st, "compute")
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

// kernelCall runs one kernel in Go memory, with a context of its own: a
// constant's host value, a device step's host node.
type kernelCall struct {
	step *kernels.Step
}

func (k *kernelCall) run(pn *planNode, ins []*tensor.Tensor, pool kernels.Parallelizer) ([]*tensor.Tensor, error) {
	outs, _, err := newWorker().call(&kenv{pool: pool, kstep: k.step}, pn, ins, make([]*tensor.Tensor, len(pn.node.OutTypes)))
	return outs, err
}

// callKernel runs pn's kernel on a prepared context and checks what it
// produced, turning a panic into an INTERNAL status naming the node.
func callKernel(pn *planNode, ctx *kernels.Context) (outs []*tensor.Tensor, err error) {
	n := pn.node
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
	shard bfc.Shard     // the cache of s it comes from
	mem   *tracker
	view  device.HostAddressable
	fresh []*buffer
	bytes int64
}

func (a *outAlloc) allocate(dt tensor.DType, shape tensor.Shape) (*tensor.Tensor, error) {
	size := uint64(shape.NumElements()) * uint64(dt.Size())
	// A small output of a recycling tracker (the pool step) reuses a
	// small buffer an earlier node of the step gave back, record and
	// tensor included: no allocator call, no Go allocation.
	small := size <= bfc.MinAlloc && a.mem.recycle
	var b *buffer
	if small {
		b = a.mem.takeSmall(a.g.Alloc)
	}
	if b == nil {
		addr, err := a.g.Alloc.AllocateShard(size, a.s, a.shard)
		if err != nil {
			return nil, err
		}
		// A zero-size tensor still views one byte of its chunk, so that
		// its buffer has an address the tracker can key on; a small one
		// views the whole chunk (bfc.MinAlloc bytes at least), which
		// the next small output may reuse.
		n := max(size, 1)
		if small {
			n = bfc.MinAlloc
		}
		b = a.mem.newBuffer(addr, a.g.Alloc, a.view.Bytes(addr, n), small)
	}
	// The buffer is not cleared, as TF's allocator does not clear: every
	// kernel writes each element of its outputs (the CPU conformance
	// suite hands out poisoned buffers to check it), and clearing cost
	// 7-9% of a CNN's CPU.
	// The shape is copied (a kernel may pass its input's), into the
	// record's own dims when it fits there.
	t := b.t.Set(dt, shape, b.chunk[:size])
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
