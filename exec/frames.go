package exec

import (
	"context"
	"runtime/debug"
	"sync"
	"time"

	"mstream/device"
	"mstream/graph"
	"mstream/status"
	"mstream/tensor"
	"mstream/trace"
)

// Frames: TF's v1 while loops on the host scheduler and every other step.
//
// A plan with Enter, Exit, NextIteration or LoopCond runs here, in the
// manner of TF's executor (common_runtime/propagator_state.cc): every
// value is tagged with a frame instance and an iteration. Nodes with no
// inputs run in the root frame, iteration 0; a node runs in the frame
// and iteration of its inputs, except that Enter sends its output to
// iteration 0 of the child frame named by its frame_name (one instance
// per parent frame instance and iteration), an is_constant Enter to every
// iteration of that child, NextIteration to the next iteration of its
// frame, and Exit to the parent frame at the iteration that made the
// child. Each (frame, iteration) keeps its own pending counts and input
// slots, so a node runs once per iteration it is reached in.
//
// Deadness is TF's: a node with a dead data input or a dead control
// predecessor is dead; a Merge fires on its first live data input, or
// dead once every data input is dead or a dead Enter reached it (a loop
// on the untaken side of a cond); a dead NextIteration ends the loop
// (nothing goes to the next iteration); a dead Exit goes to the parent
// only when the frame finishes without that Exit ever being live. A
// frame instance finishes when every Enter of its frame has delivered and
// no node of it is queued or running and no child frame of it is alive.
//
// The driver picks one node at a time, in the order nodes become ready
// (first in, first out), so iterations overlap as dependencies and
// parallel_iterations allow: as in TF, a frame has at most that many
// iterations in flight, a NextIteration that would start one more keeps
// its value until the oldest iteration is done (deferred, advance).
// Results equal TF's because a loop's values do not depend on the
// schedule. Kernels
// still split their own work over the intra-op pool. On a group (the pool
// step's frames) outputs come from the group's allocator, as in the pool
// step: a loop's values live for a number of iterations the plan cannot
// know, which the plan's static use counts do not model, so the driver
// counts its references as it hands values on (frameRefs) and a value goes
// back once nothing can read it. A finished iteration's slots are reused by
// a later one (recycle).

// frameEdge is one out-edge of a node: to input slot of dst, or a control
// edge (slot < 0). Back edges are included. What propagate needs of dst
// is kept with the edge: its index in its frame (frameStatic.local), its
// number of data inputs, and whether it is a Merge.
type frameEdge struct {
	dst   int32
	slot  int32
	out   int32
	local int32
	nin   int32
	merge bool
}

// frameStatic is what the frame executor needs of a plan, computed once
// at build.
type frameStatic struct {
	out       [][]frameEdge
	pending   []int32 // per node: node inputs and control inputs (Merge: controls only)
	frameName []string
	isConst   []bool
	enters    map[string]int32 // Enter nodes per frame name
	fedMerge  []bool           // a Merge with a fed data input: live at the start
	// parIters is each frame's parallel_iterations (its Enters' attr;
	// TF's default 10 when unset), the most iterations it has in flight.
	parIters map[string]int
	// local is each node's index among the nodes of its frame, and
	// framePending the start pending counts of a frame's nodes by that
	// index: an iteration holds slots for its frame's nodes only, not
	// the whole plan's (localFrames).
	local        []int32
	framePending map[string][]int32
	maxOuts      int // the most outputs a node has
}

func (p *Plan) buildFrames() error {
	fs := &frameStatic{
		out:       make([][]frameEdge, len(p.nodes)),
		pending:   make([]int32, len(p.nodes)),
		frameName: make([]string, len(p.nodes)),
		isConst:   make([]bool, len(p.nodes)),
		fedMerge:  make([]bool, len(p.nodes)),
		enters:    map[string]int32{},
		parIters:  map[string]int{},
	}
	for i := range p.nodes {
		pn := &p.nodes[i]
		fs.maxOuts = max(fs.maxOuts, len(pn.node.OutTypes))
		for j, r := range pn.inputs {
			if r.Node < 0 {
				if pn.flow == flowMerge {
					fs.fedMerge[i] = true
				}
				continue
			}
			fs.out[r.Node] = append(fs.out[r.Node], frameEdge{dst: int32(i), slot: int32(j), out: int32(r.Index)})
			if pn.flow != flowMerge {
				fs.pending[i]++
			}
		}
		for _, c := range pn.ctrl {
			fs.out[c] = append(fs.out[c], frameEdge{dst: int32(i), slot: -1})
			fs.pending[i]++
		}
		if pn.flow == flowEnter {
			name := pn.node.Attrs["frame_name"].GetS()
			if len(name) == 0 {
				return status.InvalidArg("node '%s' (op %s): attr frame_name is missing or empty", pn.node.Name, pn.node.Op)
			}
			fs.frameName[i] = string(name)
			fs.isConst[i] = pn.node.Attrs["is_constant"].GetB()
			fs.enters[string(name)]++
			par := 10
			if a := pn.node.Attrs["parallel_iterations"]; a != nil {
				if n := a.GetI(); n <= 0 {
					return status.InvalidArg("node '%s' (op %s): parallel_iterations must be positive, got %d", pn.node.Name, pn.node.Op, n)
				} else {
					par = int(n)
				}
			}
			if old, ok := fs.parIters[string(name)]; !ok || par < old {
				fs.parIters[string(name)] = par
			}
		}
	}
	p.fs = fs
	p.localFrames()
	for _, es := range fs.out {
		for k := range es {
			e := &es[k]
			dpn := &p.nodes[e.dst]
			e.local, e.nin, e.merge = fs.local[e.dst], int32(len(dpn.inputs)), dpn.flow == flowMerge
		}
	}
	return nil
}

// localFrames finds each node's frame as TF's executor does when it is
// built (BuildControlFlowInfo): a node is in the frame its inputs come
// from, an Enter's outputs go to the frame it names, whose parent is the
// Enter's own, and an Exit's to the parent of its frame. Where the plan
// does not say one frame per node (inputs from two frames, an Exit
// outside every loop: errors the driver reports when it gets there),
// every frame keeps a slot per plan node, as if there were one frame.
func (p *Plan) localFrames() {
	fs := p.fs
	n := len(p.nodes)
	frameOf := make([]string, n)
	parent := map[string]string{}
	ok := true
	outFrame := func(src int) string {
		switch p.nodes[src].flow {
		case flowEnter:
			return fs.frameName[src]
		case flowExit:
			par, has := parent[frameOf[src]]
			if !has {
				ok = false
			}
			return par
		}
		return frameOf[src]
	}
	for _, i := range p.topoOrder() {
		pn := &p.nodes[i]
		var in string
		have := false
		from := func(src int) {
			f := outFrame(src)
			if have && f != in {
				ok = false
			}
			in, have = f, true
		}
		for _, r := range pn.inputs {
			if r.Node >= 0 && !graph.IsNextIteration(p.nodes[r.Node].node.Op) {
				from(r.Node)
			}
		}
		for _, c := range pn.ctrl {
			from(c)
		}
		frameOf[i] = in
		if pn.flow == flowEnter {
			name := fs.frameName[i]
			if old, seen := parent[name]; seen && old != in || name == in {
				ok = false
			}
			parent[name] = in
		}
	}
	fs.local = make([]int32, n)
	fs.framePending = map[string][]int32{}
	if !ok {
		for i := range p.nodes {
			fs.local[i] = int32(i)
		}
		fs.framePending[""] = fs.pending
		for name := range fs.enters {
			fs.framePending[name] = fs.pending
		}
		return
	}
	for i := range p.nodes {
		f := frameOf[i]
		fs.local[i] = int32(len(fs.framePending[f]))
		fs.framePending[f] = append(fs.framePending[f], fs.pending[i])
	}
}

// nodeSlot is one node's state in one iteration of one frame instance.
type nodeSlot[V comparable] struct {
	ins       []V
	pending   int32
	deadCnt   int32 // Merge: dead data inputs
	dead      bool  // a dead input or dead control predecessor arrived
	live      bool  // Merge: a live data input arrived
	forceDead bool  // Merge: a dead Enter arrived
	fired     bool  // Merge: queued
}

type frameInst[V comparable] struct {
	parent     *frameInst[V]
	parentIter int
	name       string
	pending    []int32 // its nodes' start pending counts (frameStatic.framePending)
	// iters holds iterations base and later (those before were
	// recycled and let go of: compact); started is one past the last.
	iters  []iterState[V]
	base   int
	consts []constIn[V]
	// enters counts the Enter nodes yet to deliver; outstanding the
	// queued nodes of this frame plus its live child frames.
	enters      int32
	outstanding int
	exits       map[int32]bool // Exit node: true once live, false while only dead
	children    map[childKey]*frameInst[V]
	done        bool
	// doneIters is how many iterations, from the first, have no queued
	// node or live child frame left (an iteration is done once it and
	// every earlier one are). maxPar bounds the iterations in flight
	// (parallel_iterations; 0: no bound): a NextIteration that would
	// start one more is deferred, its value kept until the oldest
	// iteration is done.
	doneIters int
	maxPar    int
	deferred  []deferredNext[V]
	// recycled counts the iterations, from the first, whose slots went
	// to spare for later iterations to reuse (recycle).
	recycled int
	spare    [][]nodeSlot[V]
}

// iterState is one iteration of a frame instance: its nodes' slots and
// how many of its nodes are queued and child frames alive (queued).
type iterState[V comparable] struct {
	slots  []nodeSlot[V]
	queued int
}

// started is the number of iterations f has begun.
func (f *frameInst[V]) started() int { return f.base + len(f.iters) }

// at is iteration i of f, begun and not recycled.
func (f *frameInst[V]) at(i int) *iterState[V] { return &f.iters[i-f.base] }

// deferredNext is a NextIteration's value waiting for its iteration to
// start.
type deferredNext[V comparable] struct {
	node int32
	outs []V
}

type childKey struct {
	iter int
	name string
}

type constIn[V comparable] struct {
	node int32
	v    V
}

type frameTask[V comparable] struct {
	f    *frameInst[V]
	iter int
	node int32
}

// frameRun[V] drives a step with frames and dead tensors: it decides which
// node runs next, in which frame and iteration, and whether it is dead;
// exec runs each live node and returns its outputs. The host scheduler's
// exec calls the kernel on the driving goroutine (runFramesInline: the
// pool step's frames and a one-group stream step's); on several groups'
// streams launch starts each node as an item of its stream instead
// (runFrames); on a device, exec launches it with one group, and over
// several launch queues it on its group's lane (device_frames.go).
type frameRun[V comparable] struct {
	p       *Plan
	exec    frameExec[V]
	cur     frameTask[V] // the task exec or launch is running
	feeds   []V
	queue   taskRing[V]
	root    *frameInst[V]
	rootOut [][]V
	consts  [][]V // Const outputs, computed once per step
	slab    valSlab[V]
	none    []V // the outputs of a dead node: zero values, never written
	// refs, when set, counts the driver's references to the values it
	// keeps (frameRefs); nil keeps every value until the step ends.
	refs frameRefs[V]
	// launch, when set, starts each live node but Consts and control-flow
	// ops as an item that completes later (host streams, start): the
	// driver goes on with other ready nodes, and the item's report
	// (finishTask), on whatever goroutine it completes, hands its
	// outputs on and takes the nodes that became ready, under mu, as the
	// stream step's finish makes an op's successors ready. exec then
	// runs the Consts and control-flow ops. Not with refs.
	launch frameLaunch[V]
	// launches, when set with launch, says whether launch starts a node
	// (live, to run, inputs ins) rather than exec running it: by default
	// every such node but Consts and control-flow ops (the device step
	// launches a Switch whose predicate is still on the device, to be
	// read back on its group's lane).
	launches func(pn *planNode, ins []V) bool
	// again, when set, gives a Const's outputs for a run after its first
	// in the step (another iteration or frame) from the cached ones
	// without running its kernel: the device step relays what this run
	// ran after onto copies of them (devFrames.constAgain).
	again    func(i int32, pn *planNode, ins, outs []V) []V
	mu       sync.Mutex
	taken    int // tasks taken from queue, for the cancellation check
	inflight int
	failed   error
	ended    bool
	ctx      context.Context
	end      func(error)
}

// frameLaunch starts live node i (pn) on ins and returns at once; done
// is called once, from any goroutine but this call's, with the node's
// outputs or error, unless the launch fails (its error).
type frameLaunch[V comparable] func(i int32, pn *planNode, ins []V, done func([]V, error)) error

// frameRefs counts the references the driver holds on values: one per
// input slot a value is put in, per loop constant of a frame, per
// deferred NextIteration value, per fetch of a root output and per
// cached Const output. A value in the group's memory so goes back as soon
// as nothing can read it, and a loop's small values reuse the same few
// buffers (the driver's inline form, runFramesInline) instead of a Go
// allocation per output. How many times a loop reads a value is known only as it
// runs, which the plan's static use counts (the pool step's) cannot say.
// The launching form (an assignment over groups' streams) and the
// device step set none: their values live until the step ends.
type frameRefs[V comparable] interface {
	hold(V)
	drop(V)
	// settle frees what the node just run allocated and nothing holds,
	// after the node's outputs were handed on and its inputs dropped.
	settle()
}

func (r *frameRun[V]) hold(v V) {
	var zero V
	if r.refs != nil && v != zero {
		r.refs.hold(v)
	}
}

func (r *frameRun[V]) drop(v V) {
	var zero V
	if r.refs != nil && v != zero {
		r.refs.drop(v)
	}
}

// keepRoot keeps the outputs of node, run in the root frame (or an Exit
// to it), when it is fetched, holding those fetched.
func (r *frameRun[V]) keepRoot(node int32, outs []V) {
	if !r.p.nodes[node].fetched {
		return
	}
	outs = r.keep(outs)
	r.rootOut[node] = outs
	if r.refs == nil {
		return
	}
	for _, f := range r.p.fetches {
		if int32(f.Node) == node {
			r.hold(outs[f.Index])
		}
	}
}

// keep copies outputs the driver keeps past handing them on: exec may
// reuse its outputs slice for the next node (runFramesInline does).
func (r *frameRun[V]) keep(outs []V) []V {
	k := r.slab.take(len(outs))
	copy(k, outs)
	return k
}

// frameExec runs live node i (pn) with inputs ins and returns its outputs
// (a Switch's untaken one the zero V), in a slice the driver reads only
// until the next call (keep). V is the value a step moves
// between nodes, its zero value a dead one: a *tensor.Tensor on the host,
// a *gval (host and device copies) on a device.
type frameExec[V comparable] func(i int32, pn *planNode, ins []V) ([]V, error)

func newFrameRun[V comparable](p *Plan, feeds []V, exec frameExec[V]) *frameRun[V] {
	return &frameRun[V]{p: p, exec: exec, feeds: feeds, root: &frameInst[V]{parentIter: -1, pending: p.fs.framePending[""]},
		rootOut: make([][]V, len(p.nodes)), consts: make([][]V, len(p.nodes)), none: make([]V, p.fs.maxOuts)}
}

// frameRecord adds the trace slice of a node the frame driver ran: from
// start, bytes the size of its outputs, alloc the allocator they came
// from ("" for Go memory).
type frameRecord func(pn *planNode, start time.Time, bytes int64, alloc string)

// runFramesInline is the frame driver's inline form, the one host frame
// loop: the driver decides which node runs next, in which frame and
// iteration, and whether it is dead, and calls each live node's kernel
// on this goroutine through worker w in env, one node at a time, in the
// order nodes become ready (parallel_iterations bounding a frame's
// iterations in flight). When env is a group's (the pool step's),
// outputs come from its allocator and the driver counts its references
// to them (frameRefs), so a value goes back as soon as nothing can read
// it and a loop's small values reuse a few buffers rather than a Go
// allocation each; otherwise they are Go memory. The pool step runs a
// plan with frames this way on the caller's goroutine (driveFrames), a
// one-group stream step as its opFrames item on the compute stream
// (runFrames), both with group memory. rec, when set, records each node's trace slice. It
// returns the driver, whose rootOut holds the fetched outputs (one
// reference each, on a group), and the step's error.
func (p *Plan) runFramesInline(ctx context.Context, feeds []*tensor.Tensor, env *kenv, w *worker, rec frameRecord) (*frameRun[*tensor.Tensor], error) {
	// One outputs slice serves every node: the driver copies what it
	// keeps (frameRun.keep).
	outBuf := make([]*tensor.Tensor, p.fs.maxOuts)
	emptyFresh(&w.alloc.fresh)
	r := newFrameRun(p, feeds, func(_ int32, pn *planNode, ins []*tensor.Tensor) ([]*tensor.Tensor, error) {
		var start time.Time
		if rec != nil {
			start = time.Now()
		}
		outs := outBuf[:len(pn.node.OutTypes)]
		for k := range outs {
			if outs[k] != nil { // not clear: as in letGo
				outs[k] = nil
			}
		}
		outs, alloc, err := w.call(env, pn, ins, outs)
		if err != nil {
			return nil, err
		}
		if rec != nil {
			var bytes int64
			var allocName string
			if alloc != nil {
				bytes, allocName = alloc.bytes, alloc.g.Alloc.Name()
			} else {
				for _, o := range outs {
					if o != nil {
						bytes += o.ByteSize()
					}
				}
			}
			rec(pn, start, bytes, allocName)
		}
		return outs, nil
	})
	if env.g != nil {
		r.refs = &stepRefs{mem: env.mem, fresh: &w.alloc.fresh}
	}
	return r, r.drive(ctx)
}

// driveFrames runs a plan with frames on one host group without streams
// (or none): the frame driver's inline form (runFramesInline) on the
// caller's goroutine and worker, outputs from the group's allocator as
// in drive.
func (s *step) driveFrames(ctx context.Context) ([]*tensor.Tensor, error) {
	var rec frameRecord
	if s.trace {
		rec = func(pn *planNode, start time.Time, bytes int64, alloc string) {
			s.record(pn, s.group, nil, start, bytes, alloc)
		}
	}
	r, err := s.plan.runFramesInline(ctx, s.feeds, &s.env, s.main, rec)
	if err != nil {
		return nil, err
	}
	return r.fetches()
}

// runFrames is the opFrames item of a stream step: the frame driver over
// the plan's nodes, the feeds' device copies its feeds. On the home
// compute stream (one group) it is the driver's inline form
// (runFramesInline, as the pool step's frames), every kernel called in
// the item, a round trip to the stream per node costing more than the
// node. Its values come from the group's memory for that stream, on a
// tracker of the item's own that recycles records and keeps small
// buffers as the pool step's (the stream step's, whose buffers may be
// read on several streams, does neither: on it a loop's every value
// would cost an allocator call and a record); the fetched ones are
// given back once the step has joined. On no stream
// (an assignment over groups) it launches each live node but Consts and
// control-flow ops as an item of its group's compute stream as soon as
// it is ready (frameRun.launch), so independent nodes run at once, and
// hands an item's outputs on once it has reported back (finishTask, on
// the item's stream; the last report finishes op i): a Switch's
// predicate and a loop's condition are read after the item that made
// them, no value crosses streams before it exists, and the jitter's
// delays cannot reorder the step. Those outputs are Go memory (a value
// a loop keeps may be freed from another group's stream than the one
// that allocated it). The fetched nodes' outputs are left for the fetch
// copies; a dead fetch fails the step as TF fails it.
func (s *sstep) runFrames(i int, op *sop) {
	if op.stream >= 0 {
		st := &s.streams[op.stream]
		var rec frameRecord
		if s.trace {
			rec = func(pn *planNode, start time.Time, bytes int64, alloc string) {
				s.frameSlice(st, pn, start, bytes, alloc)
			}
		}
		// The driver's values on a tracker of its own, which recycles
		// records and keeps small buffers as the pool step's does:
		// every one is made, read and freed by this item, on this
		// stream, but the fetched ones, which the fetch copies read
		// and the step's end gives back.
		mem := newTracker(nil, nil)
		mem.recycle = true
		s.frameMem = mem
		var as device.Stream
		if st.group.StreamAware {
			as = st.inline
		}
		env := &kenv{pool: st.group.Intra, kstep: &s.kstep}
		if err := env.onGroup(st.group, as, mem); err != nil {
			s.framesEnded(nil, op, err)
			return
		}
		r, err := s.plan.runFramesInline(s.ctx, s.feedDev, env, s.worker(op.stream), rec)
		s.framesEnded(r, op, err)
		return
	}
	// Go memory, each group's intra-op pool: an environment per compute
	// stream.
	envs := make([]kenv, len(s.streams))
	for _, a := range s.lay.compute {
		envs[a] = kenv{pool: s.streams[a].group.Intra, kstep: &s.kstep}
	}
	// What the driver runs itself, under its lock: Consts, and the
	// control-flow ops, which only pass values on (a round trip to a
	// stream would cost more than they do), traced on their group's
	// stream.
	w := newWorker()
	var slab valSlab[*tensor.Tensor]
	r := newFrameRun(s.plan, s.feedDev, func(n int32, pn *planNode, ins []*tensor.Tensor) ([]*tensor.Tensor, error) {
		a := s.lay.compute[s.sr.Assign[n]]
		return s.frameKernel(a, &envs[a], w, pn, ins, slab.take(len(pn.node.OutTypes)))
	})
	r.launch = func(n int32, pn *planNode, ins []*tensor.Tensor, done func([]*tensor.Tensor, error)) error {
		a := s.lay.compute[s.sr.Assign[n]]
		st := &s.streams[a]
		if err := device.Enqueue(st.dev, func() {
			done(s.frameKernel(a, &envs[a], s.worker(a), pn, ins, make([]*tensor.Tensor, len(pn.node.OutTypes))))
		}); err != nil {
			return status.Wrap(err, "node '%s': stream %d of %s", pn.node.Name, st.dev.ID(), st.group.Device.Name())
		}
		return nil
	}
	// The op is done when the driver ends, on the goroutine of the
	// last report.
	r.start(s.ctx, func(err error) {
		s.framesEnded(r, op, err)
		s.finish(i)
	})
}

// framesEnded leaves the fetched nodes' outputs for the fetch copies once
// the frame driver has ended (err: how), or fails the step, and gives
// back the driver's reference to each feed's device copy.
func (s *sstep) framesEnded(r *frameRun[*tensor.Tensor], op *sop, err error) {
	p := s.plan
	if err != nil {
		s.fail(err)
	} else {
		for k, f := range p.fetches {
			if f.Node < 0 {
				continue
			}
			o := r.rootOut[f.Node]
			if o == nil || o[f.Index] == nil {
				s.fail(deadFetch(p, k))
				break
			}
			s.outputs[f.Node] = o
		}
	}
	for _, t := range s.feedDev {
		if t != nil {
			s.mem.unref(t, op.stream)
		}
	}
}

// frameKernel runs pn on ins for the launching frame driver, in env
// (Go memory, the intra-op pool of step stream a's group) through worker
// w, its outputs into outs, a slice of their own: the driver keeps them.
func (s *sstep) frameKernel(a int, env *kenv, w *worker, pn *planNode, ins, outs []*tensor.Tensor) ([]*tensor.Tensor, error) {
	start := s.now()
	outs, _, err := w.call(env, pn, ins, outs)
	if err != nil {
		return nil, err
	}
	if s.trace {
		var bytes int64
		for _, o := range outs {
			if o != nil {
				bytes += o.ByteSize()
			}
		}
		s.frameSlice(&s.streams[a], pn, start, bytes, "")
	}
	return outs, nil
}

// frameSlice adds the trace slice of a node the frame driver ran on
// stream st, numbered after the ops' (whose IDs are their indices).
func (s *sstep) frameSlice(st *sstream, pn *planNode, start time.Time, bytes int64, alloc string) {
	g := st.group
	s.tr.add(trace.Slice{ID: int(s.traceID.Add(1)) + len(s.ops) - 1, Name: pn.node.Name, Op: pn.node.Op, Kind: trace.Kernel,
		Device: g.Device.Name(), Group: int(g.ID), Stream: int(st.dev.ID()), Role: st.role, Start: start, End: time.Now(),
		Bytes: bytes, Allocator: alloc})
}

// assigned says an assignment puts some node off the home group.
func assigned(assign []int) bool {
	for _, a := range assign {
		if a != 0 {
			return true
		}
	}
	return false
}

// stepRefs is frameRefs over a pool step's tracker, fresh the buffers
// the node just run allocated.
type stepRefs struct {
	mem   *tracker
	fresh *[]*buffer
}

func (h *stepRefs) hold(t *tensor.Tensor) { h.mem.ref(t) }
func (h *stepRefs) drop(t *tensor.Tensor) { h.mem.unref(t, -1) }
func (h *stepRefs) settle()               { h.mem.settle(h.fresh) }

// drive runs the step to its end on this goroutine: the roots first,
// then every node as it becomes ready in its frame and iteration, in that
// order.
func (r *frameRun[V]) drive(ctx context.Context) error {
	r.ctx = ctx
	r.roots()
	r.pump()
	return r.failed
}

// start runs the step with launch: the roots and what they make ready
// now, the rest as launched nodes report (finishTask); end is called
// once, after the last node has reported, with the step's error. After
// an error no more nodes start, and end waits for those in flight.
func (r *frameRun[V]) start(ctx context.Context, end func(error)) {
	r.mu.Lock()
	r.ctx, r.end = ctx, end
	r.roots()
	r.pump()
	r.settleLocked()
}

// roots queues the nodes that wait for nothing, in the root frame.
func (r *frameRun[V]) roots() {
	p := r.p
	r.iter(r.root, 0)
	for i := range p.nodes {
		if p.fs.pending[i] != 0 {
			continue
		}
		if p.nodes[i].flow == flowMerge {
			if !p.fs.fedMerge[i] {
				continue
			}
			sl := &r.root.iters[0].slots[p.fs.local[i]]
			sl.live, sl.fired = true, true
		}
		r.enqueue(r.root, 0, int32(i))
	}
}

// pump takes the queued tasks in order: each runs here, or, with
// launch, is launched when it is a live node to run but a Const, until
// the queue is empty or the step has failed.
func (r *frameRun[V]) pump() {
	for r.failed == nil {
		t, ok := r.queue.pop()
		if !ok {
			return
		}
		if r.taken++; r.taken&63 == 0 {
			if err := r.ctx.Err(); err != nil {
				r.failed = status.Errorf(status.Cancelled, "step cancelled: %v", err)
				return
			}
		}
		if r.launch != nil {
			launched, err := r.startTask(t)
			if err != nil {
				r.failed = err
				return
			}
			if launched {
				continue
			}
		} else if err := r.run(t); err != nil {
			r.failed = err
			return
		}
		r.taskDone(t)
	}
}

// taskRing is the driver's queue of ready tasks, first in, first out: a
// ring that grows to the most tasks ready at once (a few per frame in
// flight), so a long loop moves through the same few slots rather than
// appending a task per node it runs.
type taskRing[V comparable] struct {
	buf  []frameTask[V] // len a power of two
	head int            // index of the first task
	n    int
}

func (q *taskRing[V]) push(t frameTask[V]) {
	if q.n == len(q.buf) {
		buf := make([]frameTask[V], max(16, 2*len(q.buf)))
		k := copy(buf, q.buf[q.head:])
		copy(buf[k:], q.buf[:q.head])
		q.buf, q.head = buf, 0
	}
	q.buf[(q.head+q.n)&(len(q.buf)-1)] = t
	q.n++
}

func (q *taskRing[V]) pop() (frameTask[V], bool) {
	if q.n == 0 {
		return frameTask[V]{}, false
	}
	t := q.buf[q.head]
	q.buf[q.head] = frameTask[V]{}
	q.head = (q.head + 1) & (len(q.buf) - 1)
	q.n--
	return t, true
}

// finishTask is launched task t's report: its outputs are handed on and
// the nodes that became ready are taken.
// It runs on the launcher's goroutine (a lane's, where nothing else
// would catch a panic): a panic of the bookkeeping fails the step.
func (r *frameRun[V]) finishTask(t frameTask[V], outs []V, err error) {
	r.mu.Lock()
	defer r.settleLocked()
	defer func() {
		if x := recover(); x != nil && r.failed == nil {
			n := r.p.nodes[t.node].node
			r.failed = status.Errorf(status.Internal, "node '%s' (op %s): handing on its outputs panicked: %v\n%s", n.Name, n.Op, x, debug.Stack())
		}
	}()
	r.inflight--
	switch {
	case r.failed != nil:
	case err != nil:
		r.failed = err
	default:
		err := r.handOn(t, outs, false, true)
		r.letGo(r.slot(t).ins)
		if err != nil {
			r.failed = err
		} else {
			r.taskDone(t)
			r.pump()
		}
	}
}

// settleLocked ends the step once nothing is in flight and nothing more
// can start, and unlocks mu.
func (r *frameRun[V]) settleLocked() {
	end := !r.ended && r.inflight == 0 && (r.failed != nil || r.queue.n == 0)
	r.ended = r.ended || end
	err := r.failed
	r.mu.Unlock()
	if end {
		r.end(err)
	}
}

// taskDone counts task t run and lets its frame and iterations move on.
func (r *frameRun[V]) taskDone(t frameTask[V]) {
	t.f.outstanding--
	t.f.at(t.iter).queued--
	r.advance(t.f)
	r.maybeDone(t.f)
}

// fetches returns the fetched values of a finished step, or TF's error for
// the first that is dead.
func (r *frameRun[V]) fetches() ([]V, error) {
	var zero V
	p := r.p
	out := make([]V, len(p.fetches))
	for i, f := range p.fetches {
		var t V
		if f.Node < 0 {
			t = r.feeds[f.Index]
		} else if o := r.rootOut[f.Node]; o != nil {
			t = o[f.Index]
		}
		if t == zero {
			return nil, deadFetch(p, i)
		}
		out[i] = t
	}
	return out, nil
}

// iter returns iteration i of f, making the iterations up to it; a new
// iteration receives the frame's loop constants.
func (r *frameRun[V]) iter(f *frameInst[V], i int) []nodeSlot[V] {
	for f.started() <= i {
		f.iters = append(f.iters, iterState[V]{slots: r.newSlots(f)})
		for _, c := range f.consts {
			r.propagate(f, f.started()-1, c.node, []V{c.v}, false, false)
		}
	}
	return f.at(i).slots
}

// newSlots returns the slots of a new iteration of f, reusing a recycled
// iteration's where there is one.
func (r *frameRun[V]) newSlots(f *frameInst[V]) []nodeSlot[V] {
	var slots []nodeSlot[V]
	if n := len(f.spare); n > 0 {
		slots = f.spare[n-1]
		f.spare[n-1] = nil
		f.spare = f.spare[:n-1]
	} else {
		slots = make([]nodeSlot[V], len(f.pending))
	}
	for k := range slots {
		// A reused slot keeps its inputs' storage, cleared (letGo).
		slots[k] = nodeSlot[V]{ins: slots[k].ins, pending: f.pending[k]}
	}
	return slots
}

// recycle lets go of the slots of f's finished iterations, for later
// iterations to reuse. An iteration's inputs come from itself, from the
// iteration before (NextIteration), from its own child frames (counted
// in its queue) or from the frame's Enters; so once every Enter of f has
// delivered, an iteration with nothing queued whose predecessor is
// recycled is never reached again. (doneIters alone does not say so: it
// may count iteration 0 done before a late Enter reaches it.) A long
// loop so keeps about parallel_iterations iterations' slots rather than
// one set per iteration. Values that nodes which never ran were holding
// are dropped.
func (r *frameRun[V]) recycle(f *frameInst[V]) {
	if f == r.root || f.enters != 0 {
		return
	}
	for ; f.recycled < f.doneIters && f.at(f.recycled).queued == 0; f.recycled++ {
		it := f.at(f.recycled)
		for k := range it.slots {
			r.letGo(it.slots[k].ins) // of nodes that never ran
		}
		f.spare = append(f.spare, it.slots)
		it.slots = nil
	}
	// Let go of the recycled iterations' states once they are most of
	// iters, so a long loop keeps about parallel_iterations of them.
	if k := f.recycled - f.base; k >= 32 && 2*k >= len(f.iters) {
		n := copy(f.iters, f.iters[k:])
		clear(f.iters[n:])
		f.iters = f.iters[:n]
		f.base = f.recycled
	}
}

func (r *frameRun[V]) enqueue(f *frameInst[V], iter int, node int32) {
	f.outstanding++
	f.at(iter).queued++
	r.queue.push(frameTask[V]{f, iter, node})
}

// advance counts the iterations of f that are done and, while fewer than
// maxPar are in flight, starts the next one with the deferred
// NextIteration values.
func (r *frameRun[V]) advance(f *frameInst[V]) {
	for f.doneIters < f.started() && f.at(f.doneIters).queued == 0 {
		f.doneIters++
	}
	r.recycle(f)
	if len(f.deferred) == 0 || f.started()-f.doneIters >= f.maxPar {
		return
	}
	d, next := f.deferred, f.started()
	for _, e := range d {
		f.outstanding--
		r.propagate(f, next, e.node, e.outs, false, false)
		for _, v := range e.outs {
			r.drop(v)
		}
	}
	// Nothing defers while the values are handed on (only a running
	// NextIteration does): the slice is kept for the next ones.
	clear(d)
	f.deferred = d[:0]
}

// child returns the instance of frame name that iteration iter of f
// enters, making it on first use.
func (r *frameRun[V]) child(f *frameInst[V], iter int, name string) *frameInst[V] {
	k := childKey{iter, name}
	if c := f.children[k]; c != nil {
		return c
	}
	if f.children == nil {
		f.children = map[childKey]*frameInst[V]{}
	}
	c := &frameInst[V]{parent: f, parentIter: iter, name: name, pending: r.p.fs.framePending[name], enters: r.p.fs.enters[name], exits: map[int32]bool{},
		maxPar: r.p.fs.parIters[name]}
	f.children[k] = c
	f.outstanding++
	f.at(iter).queued++
	return c
}

// run runs task t and lets go of its inputs.
func (r *frameRun[V]) run(t frameTask[V]) error {
	ins, err := r.runNode(t)
	r.letGo(ins)
	if r.refs != nil {
		r.refs.settle()
	}
	return err
}

// letGo drops and clears the inputs a node held once it is done with
// them: they are its slot's, which a later iteration reuses (recycle).
func (r *frameRun[V]) letGo(ins []V) {
	var zero V
	// A loop, not clear: the slices are short, and clear's call with
	// its write-barrier check costs more than the stores.
	for k, v := range ins {
		if v != zero {
			r.drop(v)
			ins[k] = zero
		}
	}
}

// runNode runs task t (or finds it dead) and hands its outputs on; it
// returns the inputs the node held.
func (r *frameRun[V]) runNode(t frameTask[V]) ([]V, error) {
	ins, outs, dead, call := r.prepare(t)
	if call {
		var err error
		r.cur = t
		if outs, err = r.exec(t.node, &r.p.nodes[t.node], ins); err != nil {
			return ins, err
		}
	}
	return ins, r.handOn(t, outs, dead, call)
}

// startTask readies task t and launches it when it is a live node to run
// but a Const or a control-flow op (launched: its outputs come back in a
// report); any other node runs (exec) or is found dead here and is
// handed on.
func (r *frameRun[V]) startTask(t frameTask[V]) (launched bool, err error) {
	ins, outs, dead, call := r.prepare(t)
	pn := &r.p.nodes[t.node]
	if call && r.launched(pn, ins) {
		r.cur = t
		if err := r.launch(t.node, pn, ins, func(outs []V, err error) { r.finishTask(t, outs, err) }); err != nil {
			return false, err
		}
		r.inflight++
		return true, nil
	}
	if call {
		r.cur = t
		if outs, err = r.exec(t.node, pn, ins); err != nil {
			return false, err
		}
	}
	err = r.handOn(t, outs, dead, call)
	r.letGo(ins)
	return false, err
}

// launched says whether startTask launches node pn on inputs ins.
func (r *frameRun[V]) launched(pn *planNode, ins []V) bool {
	if r.launches != nil {
		return r.launches(pn, ins)
	}
	return !pn.isConst && pn.flow == flowNone
}

// slot is task t's node's slot in its frame and iteration.
func (r *frameRun[V]) slot(t frameTask[V]) *nodeSlot[V] {
	return &t.f.at(t.iter).slots[r.p.fs.local[t.node]]
}

// prepare gathers task t's inputs and says whether it is dead. call says
// its kernel must run; otherwise outs are its outputs (dead ones, or a
// Const's computed earlier in the step).
func (r *frameRun[V]) prepare(t frameTask[V]) (ins, outs []V, dead, call bool) {
	var zero V
	p := r.p
	pn := &p.nodes[t.node]
	sl := r.slot(t)
	// The slot's inputs are the node's (letGo clears them once it is
	// done); only a node whose data inputs are all feeds has none yet.
	if sl.ins == nil {
		sl.ins = r.slab.take(len(pn.inputs))
	}
	ins = sl.ins
	for j, in := range pn.inputs {
		if in.Node < 0 {
			// Held as a value handed on is (letGo drops it): a
			// feed's device copy is the step's buffer.
			ins[j] = r.feeds[in.Index]
			r.hold(ins[j])
		}
	}
	switch pn.flow {
	case flowMerge:
		dead = !sl.live
	case flowTrigger:
	default:
		dead = sl.dead
		for _, v := range ins {
			dead = dead || v == zero
		}
	}
	switch {
	case dead:
		outs = r.none[:len(pn.node.OutTypes)]
	case pn.isConst && r.consts[t.node] != nil:
		// A Const in a loop body runs every iteration; its value
		// never changes (TF's Const kernel also keeps one tensor).
		outs = r.consts[t.node]
		if r.again != nil {
			outs = r.again(t.node, pn, ins, outs)
		}
	default:
		call = true
	}
	return ins, outs, dead, call
}

// handOn hands the outputs of task t on (ran: its kernel just made
// them), by its node's control flow, and lets its slot go.
func (r *frameRun[V]) handOn(t frameTask[V], outs []V, dead, ran bool) error {
	p := r.p
	pn := &p.nodes[t.node]
	if ran && pn.isConst {
		r.consts[t.node] = r.keep(outs)
		for _, v := range outs {
			r.hold(v)
		}
	}
	f, iter := t.f, t.iter
	switch pn.flow {
	case flowEnter:
		c := r.child(f, iter, p.fs.frameName[t.node])
		c.enters--
		if p.fs.isConst[t.node] && !dead {
			c.consts = append(c.consts, constIn[V]{t.node, outs[0]})
			r.hold(outs[0])
			for i := c.base; i < c.started(); i++ {
				r.propagate(c, i, t.node, outs, false, false)
			}
		} else {
			r.propagate(c, 0, t.node, outs, dead, true)
		}
		r.maybeDone(c)
		return nil
	case flowExit:
		if f.parent == nil {
			return status.InvalidArg("node '%s' (op %s) is not inside a while loop frame", pn.node.Name, pn.node.Op)
		}
		if dead {
			if _, seen := f.exits[t.node]; !seen {
				f.exits[t.node] = false
			}
			return nil
		}
		f.exits[t.node] = true
		if f.parent == r.root {
			r.keepRoot(t.node, outs) // fetchable
		}
		r.propagate(f.parent, f.parentIter, t.node, outs, false, false)
		return nil
	case flowNext:
		if dead {
			return nil // the loop has ended: nothing enters the next iteration
		}
		if iter+1 == f.started() && f.maxPar > 0 {
			r.advance(f)
			if f.started()-f.doneIters >= f.maxPar {
				// parallel_iterations are in flight: the value waits
				// (counted outstanding, so the frame stays alive).
				f.deferred = append(f.deferred, deferredNext[V]{t.node, r.keep(outs)})
				f.outstanding++
				for _, v := range outs {
					r.hold(v)
				}
				return nil
			}
		}
		r.propagate(f, iter+1, t.node, outs, false, false)
		return nil
	}
	if f == r.root {
		r.keepRoot(t.node, outs)
	}
	r.propagate(f, iter, t.node, outs, dead, false)
	return nil
}

// propagate delivers the outputs of node src (all nil when it is dead)
// to its consumers in iteration iter of f, queueing those that become
// ready.
func (r *frameRun[V]) propagate(f *frameInst[V], iter int, src int32, outs []V, dead, fromEnter bool) {
	var zero V
	slots := r.iter(f, iter)
	for _, e := range r.p.fs.out[src] {
		sl := &slots[e.local]
		if e.merge {
			if sl.fired {
				continue
			}
			switch {
			case e.slot < 0:
				sl.pending--
			case !dead && outs[e.out] != zero:
				r.setIn(sl, e.nin, e.slot, outs[e.out])
				sl.live = true
			default:
				sl.deadCnt++
				sl.forceDead = sl.forceDead || fromEnter
			}
			if sl.pending == 0 && (sl.live || sl.forceDead || sl.deadCnt == e.nin) {
				sl.fired = true
				r.enqueue(f, iter, e.dst)
			}
			continue
		}
		if e.slot < 0 {
			sl.dead = sl.dead || dead
		} else if dead || outs[e.out] == zero {
			sl.dead = true
		} else {
			r.setIn(sl, e.nin, e.slot, outs[e.out])
		}
		if sl.pending--; sl.pending == 0 {
			r.enqueue(f, iter, e.dst)
		}
	}
}

// setIn puts v in input slot of sl, whose node has nin data inputs.
func (r *frameRun[V]) setIn(sl *nodeSlot[V], nin, slot int32, v V) {
	if sl.ins == nil {
		sl.ins = r.slab.take(int(nin))
	}
	sl.ins[slot] = v
	r.hold(v)
}

// valSlab hands out short slices of values carved from larger blocks:
// a loop makes a few per node per iteration, and one allocation per
// block instead of one per slice is most of a small loop body's cost. A
// block lives as long as any slice of it.
type valSlab[V any] struct{ free []V }

func (b *valSlab[V]) take(n int) []V {
	if n == 0 {
		return nil
	}
	if n > len(b.free) {
		b.free = make([]V, max(n, 256))
	}
	v := b.free[:n:n]
	b.free = b.free[n:]
	return v
}

// maybeDone finishes f once nothing more can happen in it: Exits that were
// never live send dead values to the parent, and the parent may finish in
// turn.
func (r *frameRun[V]) maybeDone(f *frameInst[V]) {
	for f != r.root && !f.done && f.outstanding == 0 && f.enters == 0 {
		f.done = true
		par := f.parent
		for node, live := range f.exits {
			if !live {
				r.propagate(par, f.parentIter, node, make([]V, len(r.p.nodes[node].node.OutTypes)), true, false)
			}
		}
		delete(par.children, childKey{f.parentIter, f.name})
		for _, c := range f.consts {
			r.drop(c.v)
		}
		f.iters, f.consts = nil, nil
		par.outstanding--
		par.at(f.parentIter).queued--
		r.advance(par)
		f = par
	}
}

// now is the start of a traced slice (zero when not tracing).
func (s *step) now() time.Time {
	if !s.trace {
		return time.Time{}
	}
	return time.Now()
}
