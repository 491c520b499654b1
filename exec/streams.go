package exec

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"mstream/device"
	"mstream/groups"
	"mstream/kernels"
	"mstream/status"
	"mstream/tensor"
	"mstream/trace"
)

// opKind is what a stream op does.
type opKind uint8

const (
	opFeed  opKind = iota // copy feed idx in (H2D)
	opNode                // run plan node idx (compute)
	opFetch               // copy fetch idx out (D2H)
	// opFrames runs the plan's nodes through the frame driver (a plan
	// with frames or dead tensors): one item of the home compute stream
	// that drives every node inline, or, when the assignment spreads the
	// nodes over groups, on no stream, its items the live nodes, each on
	// its group's compute stream (runFrames).
	opFrames
)

// sop is one op of a stream step, in launch order: an item of the host
// scheduler, ready once the ops it waits for have run.
type sop struct {
	kind   opKind
	idx    int
	stream int     // step stream index; -1 when resolved at launch (consts, string feeds)
	group  int     // index in Runtime.Groups
	prods  []int32 // ops that must have run first
	// next is the op after this one on its stream (-1: none), waiters
	// the ops on other streams with a wait on this one (one entry per
	// wait), and wait how many ops this one waits for: its stream
	// predecessor and its waits the reduction kept. join says the end of
	// the step waits for it.
	next    int
	waiters []int
	wait    int32
	join    bool
}

// sstream is one stream a step uses.
type sstream struct {
	dev    device.Stream
	inline device.Stream // for code running inside the stream's items
	group  *groups.Group
	role   string
	last   int // the last op laid out on it (-1: none)
}

// sstep is the state of one stream step. Slots (outputs, feedDev, staged)
// are written by the item that produces them and read by items that wait
// for it, by stream order or by a wait, never by locks: a missing wait is
// a race the race detector reports and a wrong value the jitter exposes.
type sstep struct {
	kstep kernels.Step // the step's temporary variables
	plan  *Plan
	sr    *Runtime
	feeds []*tensor.Tensor
	// ops and streams are the layout's (read-only here).
	lay     *streamLayout
	ops     []sop
	streams []sstream
	mem     *tracker
	ctx     context.Context
	// envs is, per step stream, what kernels run with on it: its
	// group's memory as seen from that stream, the group's intra-op
	// pool. workers are the streams' kernel contexts, each made and
	// used by its stream's items only (a stream runs one at a time).
	envs    []kenv
	workers []*worker
	// frameMem tracks the values of a one-group frame op (runFrames),
	// made by its item and drained once the step has joined.
	frameMem *tracker

	// pending counts, per op, the ops it still waits for; joinLeft the
	// ops the step's end still waits for, done closed when none is left.
	pending  []atomic.Int32
	joinLeft atomic.Int32
	done     chan struct{}

	outputs [][]*tensor.Tensor
	feedDev []*tensor.Tensor
	staged  []staged

	failed atomic.Bool
	errMu  sync.Mutex
	err    error

	trace bool
	tr    traceBuf
	// traceID numbers the trace slices of the frame driver's items,
	// after the ops' (whose IDs are their indices).
	traceID atomic.Int32
}

// staged is a fetch copied into host staging memory by its D2H op.
type staged struct {
	t     *tensor.Tensor // strings and empty tensors skip staging
	alloc interface{ Free(uint64) error }
	addr  uint64
	buf   []byte
	dt    tensor.DType
	shape tensor.Shape
}

func (s *sstep) fail(err error) {
	s.errMu.Lock()
	if s.err == nil {
		s.err = err
	}
	s.errMu.Unlock()
	s.failed.Store(true)
}

// driveStreams is the host scheduler on streams (several groups, a
// node-level assignment or MSTREAM_HOST_STREAMS). Its items are the ops
// schedule lays out: the feeds copied in on the home group's H2D stream,
// the nodes on their groups' compute streams (a plan with frames or dead
// tensors: one opFrames op, the frame driver, runFrames), the fetches
// copied out on the D2H stream. An op is ready once
// the op before it on its stream has run and every op on another stream
// it waits for (a producer, unless the wait reduction found the wait
// implied by earlier ones); a ready op is handed to its stream, which runs
// it (after the jitter's delay, when the sanitizer is on) and makes its
// successors ready. The step ends when the join, the ops that every
// stream's last one follows, has run. No event and no host wait is
// involved but the first upload of a constant.
func (p *Plan) driveStreams(ctx context.Context, sr *Runtime, feeds []*tensor.Tensor, opts Options) ([]*tensor.Tensor, *trace.Step, error) {
	for _, g := range sr.Groups {
		if _, ok := g.Device.Memory().(device.HostAddressable); !ok {
			return nil, nil, status.Errorf(status.Unimplemented, "device %s: the host stream executor needs host-addressable memory", g.Device.Name())
		}
	}
	if sr.Holder == nil {
		return nil, nil, status.Errorf(status.Internal, "stream step without a tensor holder")
	}
	if sr.Assign != nil && len(sr.Assign) != len(p.nodes) {
		return nil, nil, status.Errorf(status.Internal, "stream step: %d group assignments for %d nodes", len(sr.Assign), len(p.nodes))
	}
	lay := p.streamLayout(sr, feeds)
	s := &sstep{
		plan: p, sr: sr, feeds: feeds, lay: lay, ops: lay.ops, streams: lay.streams,
		outputs: make([][]*tensor.Tensor, len(p.nodes)),
		feedDev: make([]*tensor.Tensor, len(feeds)),
		staged:  make([]staged, len(p.fetches)),
		trace:   opts.Trace,
		done:    make(chan struct{}),
		ctx:     ctx,
	}
	for a, st := range lay.streams {
		st.group.CountWaits(lay.inserted[a], lay.skipped[a])
	}
	if s.trace {
		s.tr.flows = append([]trace.Flow(nil), lay.flows...)
	}
	s.joinLeft.Store(lay.joins)
	s.mem = newTracker(sr.Holder, lay.devs)
	s.envs = make([]kenv, len(lay.streams))
	s.workers = make([]*worker, len(lay.streams))
	for a := range lay.streams {
		st := &lay.streams[a]
		var as device.Stream
		if st.group.StreamAware {
			as = st.inline
		}
		e := &s.envs[a]
		e.pool, e.kstep = st.group.Intra, &s.kstep
		if err := e.onGroup(st.group, as, s.mem); err != nil {
			return nil, nil, err
		}
	}
	// The step starts on its home group's launch pool, as a device step
	// launches there: TF_GPU_THREAD_MODE says whose threads those are
	// (the inter-op pool, the group's own or the device's shared ones).
	// From then on each stream makes the ops after its items ready.
	if pool := sr.Groups[0].Launch; pool != nil {
		pool.Submit(s.start)
	} else {
		s.start()
	}
	if ctx.Done() == nil {
		<-s.done
	} else {
		select {
		case <-s.done:
		case <-ctx.Done():
			// Items check the flag and skip their work; the buffers go
			// back only after the join, when no item can touch them.
			s.fail(status.Errorf(status.Cancelled, "step cancelled: %v", ctx.Err()))
			<-s.done
		}
	}
	defer s.mem.drain()
	if s.frameMem != nil {
		// Every item has run, the fetch copies included: what the
		// frame driver still holds (the fetched values, or all of
		// them after a failure) goes back.
		s.frameMem.drain()
		if s.frameMem.err != nil {
			s.fail(s.frameMem.err)
		}
	}
	var st *trace.Step
	if s.trace {
		st = s.tr.take(opts.Run, int(sr.Groups[0].ID))
	}
	if s.failed.Load() {
		s.freeStaged()
		return nil, st, s.err
	}
	out := make([]*tensor.Tensor, len(p.fetches))
	for i := range p.fetches {
		sg := &s.staged[i]
		if sg.t != nil {
			out[i] = sg.t
			continue
		}
		t := tensor.New(sg.dt, sg.shape)
		copy(t.Buf, sg.buf)
		out[i] = t
	}
	s.freeStaged()
	if s.mem.err != nil {
		return nil, st, s.mem.err
	}
	return out, st, nil
}

func (s *sstep) freeStaged() {
	for i := range s.staged {
		if sg := &s.staged[i]; sg.alloc != nil {
			sg.alloc.Free(sg.addr)
			sg.alloc = nil
		}
	}
}

// streamLayout is what a stream step's ops are and how they wait for
// each other: schedule's ops and streams, order's edges, the join's size,
// the waits kept and left out per stream and a trace flow per wait kept.
// It depends on the plan, the runtime's groups, assignment and wait
// reduction, and which feeds are strings (copied by no stream), so the
// plan keeps it for the next step with the same (layouts); a step only
// reads it. A runtime whose DropWait is set (the sanitizer's meta-tests,
// dropping a different wait each step) lays its ops out every step.
type streamLayout struct {
	groups   []*groups.Group
	assign   []int
	reduce   bool
	strFeeds []bool

	ops     []sop
	streams []sstream
	devs    []device.Stream // streams[i].dev
	// feedRefs counts, per feed, the reads of its device copy: the
	// plan's uses, or, with opFrames, its fetches and one for the
	// frame driver, whose reads only the step's end bounds.
	feedRefs []int32
	// compute is, with an opFrames on no stream, the index of each
	// group's compute stream, where the frame driver's items run.
	compute  []int
	joins    int32
	inserted []int
	skipped  []int
	flows    []trace.Flow
}

// layouts keeps a plan's stream layouts, a few runtimes' worth: a
// graph-level session rotates its steps over its groups, each of which
// has its own streams and so its own layout.
type layouts struct {
	mu   sync.Mutex
	list []*streamLayout
}

// maxLayouts bounds the layouts a plan keeps (the least recently laid
// out goes first): more than the groups a device usually has.
const maxLayouts = 8

// streamLayout returns the layout of a stream step of p on sr with these
// feeds, from the plan's cache when a step with the same runtime laid it
// out before.
func (p *Plan) streamLayout(sr *Runtime, feeds []*tensor.Tensor) *streamLayout {
	if sr.DropWait != nil {
		return p.layOut(sr, feeds)
	}
	c := &p.layouts
	c.mu.Lock()
	for i, l := range c.list {
		if l.fits(sr, feeds) {
			if i > 0 {
				copy(c.list[1:i+1], c.list[:i])
				c.list[0] = l
			}
			c.mu.Unlock()
			return l
		}
	}
	c.mu.Unlock()
	l := p.layOut(sr, feeds)
	c.mu.Lock()
	if len(c.list) < maxLayouts {
		c.list = append(c.list, nil)
	}
	copy(c.list[1:], c.list)
	c.list[0] = l
	c.mu.Unlock()
	return l
}

// fits says l is the layout of a step on sr with these feeds.
func (l *streamLayout) fits(sr *Runtime, feeds []*tensor.Tensor) bool {
	if l.reduce != sr.ReduceWaits || len(l.groups) != len(sr.Groups) || len(l.assign) != len(sr.Assign) ||
		(l.assign == nil) != (sr.Assign == nil) || len(l.strFeeds) != len(feeds) {
		return false
	}
	for i, g := range sr.Groups {
		if l.groups[i] != g {
			return false
		}
	}
	for i, a := range sr.Assign {
		if l.assign[i] != a {
			return false
		}
	}
	for i, f := range feeds {
		if l.strFeeds[i] != (f.DType == tensor.String) {
			return false
		}
	}
	return true
}

// layOut makes the layout of a stream step of p on sr with these feeds.
func (p *Plan) layOut(sr *Runtime, feeds []*tensor.Tensor) *streamLayout {
	l := &streamLayout{groups: append([]*groups.Group(nil), sr.Groups...), reduce: sr.ReduceWaits,
		strFeeds: make([]bool, len(feeds))}
	if sr.Assign != nil {
		l.assign = append([]int{}, sr.Assign...)
	}
	for i, f := range feeds {
		l.strFeeds[i] = f.DType == tensor.String
	}
	l.schedule(p, sr)
	l.order(sr)
	l.devs = make([]device.Stream, len(l.streams))
	for i, st := range l.streams {
		l.devs[i] = st.dev
	}
	return l
}

// streamIndex returns the step index of stream d, adding it.
func (s *streamLayout) streamIndex(d device.Stream, g *groups.Group, role string) int {
	for i, st := range s.streams {
		if st.dev == d {
			return i
		}
	}
	inline := d
	if v, ok := d.(interface{ Inline() device.Stream }); ok {
		inline = v.Inline()
	}
	s.streams = append(s.streams, sstream{dev: d, inline: inline, group: g, role: role, last: -1})
	return len(s.streams) - 1
}

// schedule lays out the ops: feeds, then nodes in topological order, then
// fetches, each on its stream, with the ops each must wait for.
func (s *streamLayout) schedule(p *Plan, sr *Runtime) {
	home := sr.Groups[0]
	h2d := s.streamIndex(home.H2D, home, role(home, home.H2D, "h2d"))
	nodeOp := make([]int32, len(p.nodes))
	feedOp := make([]int32, len(p.feeds))
	for k, str := range s.strFeeds {
		st := h2d
		if str {
			st = -1
		}
		feedOp[k] = int32(len(s.ops))
		s.ops = append(s.ops, sop{kind: opFeed, idx: k, stream: st})
	}
	s.feedRefs = p.feedUses
	if p.deadness {
		s.scheduleFrames(p, sr, feedOp)
		return
	}
	group := func(i int) int {
		if sr.Assign == nil {
			return 0
		}
		return sr.Assign[i]
	}
	for _, i := range p.laneOrder(group) {
		pn := &p.nodes[i]
		gi := group(i)
		g := sr.Groups[gi]
		op := sop{kind: opNode, idx: i, group: gi, stream: -1}
		if !pn.isConst {
			op.stream = s.streamIndex(g.Compute, g, role(g, g.Compute, "compute"))
		}
		// The producers first, then the feeds, as the device's lanes
		// name them (laneSched): the same order gives the same waits.
		for _, pr := range pn.preds {
			op.prods = append(op.prods, nodeOp[pr])
		}
		for _, r := range pn.inputs {
			if r.Node < 0 {
				op.prods = append(op.prods, feedOp[r.Index])
			}
		}
		nodeOp[i] = int32(len(s.ops))
		s.ops = append(s.ops, op)
	}
	d2h := s.streamIndex(home.D2H, home, role(home, home.D2H, "d2h"))
	for k, f := range p.fetches {
		op := sop{kind: opFetch, idx: k, stream: d2h}
		if f.Node < 0 {
			op.prods = []int32{feedOp[f.Index]}
		} else {
			op.prods = []int32{nodeOp[f.Node]}
		}
		s.ops = append(s.ops, op)
	}
}

// scheduleFrames lays out a plan with frames or dead tensors: the feed
// copies, then one opFrames op that waits for all of them, then the
// fetch copies, which wait for it. The op is an item of the home compute
// stream unless the assignment puts a node on another group, when the
// frame driver runs on no stream and launches each live node on its
// group's stream.
func (s *streamLayout) scheduleFrames(p *Plan, sr *Runtime, feedOp []int32) {
	home := sr.Groups[0]
	op := sop{kind: opFrames, stream: -1}
	if !assigned(sr.Assign) {
		op.stream = s.streamIndex(home.Compute, home, role(home, home.Compute, "compute"))
	} else {
		s.compute = make([]int, len(sr.Groups))
		for gi, g := range sr.Groups {
			s.compute[gi] = s.streamIndex(g.Compute, g, role(g, g.Compute, "compute"))
		}
	}
	op.prods = append(op.prods, feedOp...)
	frames := int32(len(s.ops))
	s.ops = append(s.ops, op)
	d2h := s.streamIndex(home.D2H, home, role(home, home.D2H, "d2h"))
	s.feedRefs = make([]int32, len(p.feeds))
	for k := range s.feedRefs {
		s.feedRefs[k] = 1
	}
	for k, f := range p.fetches {
		op := sop{kind: opFetch, idx: k, stream: d2h, prods: []int32{frames}}
		if f.Node < 0 {
			op.prods = []int32{feedOp[f.Index]}
			s.feedRefs[f.Index]++
		}
		s.ops = append(s.ops, op)
	}
}

// role names a stream of g for traces: "compute" or the copy role, or
// "merged" when one stream serves all.
func role(g *groups.Group, d device.Stream, r string) string {
	if g.H2D == g.Compute {
		return "merged"
	}
	return r
}

// order turns the layout into the scheduler's edges: layWaits works out
// the waits between streams, over the ops in launch order as a device
// launcher would, and each becomes an edge from the producer op; each
// op also follows the one before it on its stream. The join waits in the
// same way for every stream's last op, from the home D2H stream. The
// frame driver's op on no stream (opFrames over several groups) is no
// item of layWaits: it waits for every feed copy, the fetches wait for
// it, no clock involved, and the step's end waits for it (a step may
// fetch nothing). A wait that DropWait names is left out after the
// reduction, as on a device (lane.waitOn): the waits it implied are
// missing with it, but the join then waits for every stream unreduced
// (the clocks learned the dropped wait), so the step still ends after
// everything. It counts the waits kept and left out per stream.
func (s *streamLayout) order(sr *Runtime) {
	items := make([]layItem, len(s.ops))
	for i := range s.ops {
		op := &s.ops[i]
		if op.stream < 0 && op.kind == opFrames {
			items[i] = layItem{stream: -1}
			continue
		}
		items[i] = layItem{stream: int32(op.stream), tick: op.stream >= 0, prods: op.prods}
	}
	w := layWaits(items, len(s.streams), sr.ReduceWaits)
	dropped := false // the clocks learned a wait that is not there
	for i := range s.ops {
		op := &s.ops[i]
		op.next = -1
		if op.stream < 0 && op.kind == opFrames {
			for _, pr := range op.prods {
				if s.ops[pr].stream >= 0 {
					s.ops[pr].waiters = append(s.ops[pr].waiters, i)
					op.wait++
				}
			}
			op.join = true
			s.joins++
			continue
		}
		if op.stream < 0 {
			continue
		}
		st := &s.streams[op.stream]
		if st.last >= 0 {
			s.ops[st.last].next = i
			op.wait++
		}
		st.last = i
		for _, pr := range op.prods {
			if q := &s.ops[pr]; q.stream < 0 && q.kind == opFrames {
				q.waiters = append(q.waiters, i)
				op.wait++
			}
		}
		for _, pr := range w.waits[i] {
			if sr.DropWait != nil && sr.DropWait(int(pr), i) {
				w.kept[op.stream]--
				dropped = true
				continue
			}
			q := &s.ops[pr]
			q.waiters = append(q.waiters, i)
			op.wait++
			if op.kind != opFrames && q.kind != opFrames {
				// (The frame driver's op has no slice of its own: its
				// items have theirs.)
				s.flows = append(s.flows, trace.Flow{From: int(pr), To: i})
			}
		}
	}
	home := sr.Groups[0]
	f := s.streamIndex(home.D2H, home, role(home, home.D2H, "d2h"))
	if dropped {
		// A join reduced with those clocks may leave out a stream that
		// the step's end follows only through the dropped wait: it waits
		// for every stream's last op instead.
		w.reduce = false
	}
	for _, b := range w.join(f) {
		s.ops[s.streams[b].last].join = true
		s.joins++
	}
	if last := s.streams[f].last; last >= 0 {
		s.ops[last].join = true
		s.joins++
	}
	s.inserted, s.skipped = w.kept, w.skipped
}

// start settles the ops that need no stream, in launch order, and hands
// every op that waits for nothing to its stream.
func (s *sstep) start() {
	s.pending = make([]atomic.Int32, len(s.ops))
	for i := range s.ops {
		s.pending[i].Store(s.ops[i].wait)
	}
	for i := range s.ops {
		if op := &s.ops[i]; op.stream < 0 && op.kind != opFrames && !s.failed.Load() {
			s.resolve(op)
		}
	}
	if s.joinLeft.Load() == 0 {
		close(s.done)
		return
	}
	for i := range s.ops {
		if op := &s.ops[i]; (op.stream >= 0 || op.kind == opFrames) && op.wait == 0 {
			s.dispatch(i)
		}
	}
}

// dispatch hands ready op i to its stream. A stream that cannot take it
// fails the step, and the op is done at once (without its work), so that
// the ops after it still come to the join.
func (s *sstep) dispatch(i int) {
	if op := &s.ops[i]; op.stream < 0 {
		// The frame driver on no stream: it starts its items here and
		// finishes the op once the last has reported.
		if s.failed.Load() {
			s.finish(i)
		} else {
			s.runFrames(i, op)
		}
		return
	}
	st := &s.streams[s.ops[i].stream]
	if err := device.Enqueue(st.dev, func() { s.runOp(i) }); err != nil {
		s.fail(status.Wrap(err, "stream %d of %s", st.dev.ID(), st.group.Device.Name()))
		s.finish(i)
	}
}

// runOp is the item of op i on its stream.
func (s *sstep) runOp(i int) {
	if op := &s.ops[i]; !s.failed.Load() {
		switch op.kind {
		case opFeed:
			s.runFeed(i, op)
		case opNode:
			s.runNode(i, op)
		case opFetch:
			s.runFetch(i, op)
		case opFrames:
			s.runFrames(i, op)
		}
	}
	s.finish(i)
}

// finish makes the ops that waited for op i ready, or ends the step.
func (s *sstep) finish(i int) {
	op := &s.ops[i]
	if n := op.next; n >= 0 && s.pending[n].Add(-1) == 0 {
		s.dispatch(n)
	}
	for _, w := range op.waiters {
		if s.pending[w].Add(-1) == 0 {
			s.dispatch(w)
		}
	}
	if op.join && s.joinLeft.Add(-1) == 0 {
		close(s.done)
	}
}

// resolve settles an op that needs no stream: a constant (from the group's
// store, materialised on first use) or a string feed (host memory).
func (s *sstep) resolve(op *sop) {
	switch op.kind {
	case opFeed:
		s.feedDev[op.idx] = s.feeds[op.idx]
	case opNode:
		pn := &s.plan.nodes[op.idx]
		c, err := constant(s.sr.Groups[op.group], pn)
		if err != nil {
			s.fail(err)
			return
		}
		s.outputs[op.idx] = []*tensor.Tensor{c.Value}
	}
}

// runFeed is the item that copies feed op.idx into device memory on the
// H2D stream, through host staging memory.
func (s *sstep) runFeed(i int, op *sop) {
	f := s.feeds[op.idx]
	st := &s.streams[op.stream]
	g := st.group
	start := s.now()
	name := s.plan.feeds[op.idx].String()
	size := uint64(len(f.Buf))
	hostMem := g.Device.HostMemory()
	haddr, err := g.HostAlloc.Allocate(size, nil)
	if err != nil {
		s.fail(status.Errorf(status.CodeOf(err), "feed '%s' (%v%v): staging: %v", name, f.DType, f.Shape, err))
		return
	}
	defer g.HostAlloc.Free(haddr)
	hbuf := hostMem.Bytes(haddr, max(size, 1))[:size]
	copy(hbuf, f.Buf)
	// The chunk is keyed to the stream's inline view, as kernels' are:
	// its free (by the tracker, once every use is done) then completes
	// the event at once.
	var as device.Stream
	if g.StreamAware {
		as = st.inline
	}
	daddr, err := g.Alloc.Allocate(size, as)
	if err != nil {
		s.fail(status.Errorf(status.CodeOf(err), "feed '%s' (%v%v): %v", name, f.DType, f.Shape, err))
		return
	}
	mem := g.Device.Memory().(device.HostAddressable)
	dt := &tensor.Tensor{DType: f.DType, Shape: f.Shape.Clone(), Buf: mem.Bytes(daddr, max(size, 1))[:size]}
	if size > 0 {
		if err := st.inline.CopyH2D(daddr, hbuf); err != nil {
			g.Alloc.Free(daddr)
			s.fail(status.Wrap(err, "feed '%s'", name))
			return
		}
	}
	s.feedDev[op.idx] = dt
	b := &buffer{addr: daddr, alloc: g.Alloc, refs: s.lay.feedRefs[op.idx], users: []int{op.stream}}
	if b.refs == 0 {
		s.mem.release(b, op.stream) // nothing reads it
	} else {
		s.mem.add(dt, b)
	}
	if s.trace {
		s.tr.add(trace.Slice{ID: i, Name: name, Op: "MEMCPYHtoD", Kind: trace.H2D, Device: g.Device.Name(),
			Group: int(g.ID), Stream: int(st.dev.ID()), Role: st.role, Start: start, End: time.Now(), Bytes: int64(size)})
	}
}

// now is the start of a traced slice (zero when not tracing).
func (s *sstep) now() time.Time {
	if !s.trace {
		return time.Time{}
	}
	return time.Now()
}

// runNode is the item of a node on its compute stream.
func (s *sstep) runNode(i int, op *sop) {
	pn := &s.plan.nodes[op.idx]
	st := &s.streams[op.stream]
	g := st.group
	start := s.now()
	ins := make([]*tensor.Tensor, len(pn.inputs))
	for j, r := range pn.inputs {
		if r.Node < 0 {
			ins[j] = s.feedDev[r.Index]
		} else if outs := s.outputs[r.Node]; outs != nil {
			ins[j] = outs[r.Index]
		}
		if ins[j] == nil {
			s.fail(status.Errorf(status.Internal, "node '%s': input %d is not ready on stream %d: a missing cross-stream wait", pn.node.Name, j, st.dev.ID()))
			return
		}
	}
	w := s.worker(op.stream)
	emptyFresh(&w.alloc.fresh)
	outs, a, err := w.call(&s.envs[op.stream], pn, ins, make([]*tensor.Tensor, len(pn.node.OutTypes)))
	if err != nil {
		s.mem.retire(nil, nil, nil, a.fresh, op.stream)
		s.fail(err)
		return
	}
	s.outputs[op.idx] = outs
	s.mem.retire(outs, pn.uses, ins, a.fresh, op.stream)
	if s.trace {
		s.tr.add(trace.Slice{ID: i, Name: pn.node.Name, Op: pn.node.Op, Kind: trace.Kernel, Device: g.Device.Name(),
			Group: int(g.ID), Stream: int(st.dev.ID()), Role: st.role, Start: start, End: time.Now(),
			Bytes: a.bytes, Allocator: g.Alloc.Name()})
	}
}

// worker is the kernel context of step stream a's items, made on first
// use.
func (s *sstep) worker(a int) *worker {
	w := s.workers[a]
	if w == nil {
		w = newWorker()
		s.workers[a] = w
	}
	return w
}

// runFetch is the item that copies fetch op.idx into host staging memory
// on the D2H stream.
func (s *sstep) runFetch(i int, op *sop) {
	st := &s.streams[op.stream]
	g := st.group
	start := s.now()
	r := s.plan.fetches[op.idx]
	var t *tensor.Tensor
	if r.Node < 0 {
		t = s.feedDev[r.Index]
	} else if outs := s.outputs[r.Node]; outs != nil {
		t = outs[r.Index]
	}
	if t == nil {
		s.fail(status.Errorf(status.Internal, "fetch %d is not ready on stream %d: a missing cross-stream wait", op.idx, st.dev.ID()))
		return
	}
	sg := &s.staged[op.idx]
	size := uint64(len(t.Buf))
	switch {
	case t.DType == tensor.String:
		sg.t = t.Clone()
	case size == 0:
		sg.t = tensor.New(t.DType, t.Shape)
	default:
		addr, err := g.HostAlloc.Allocate(size, nil)
		if err != nil {
			s.fail(status.Errorf(status.CodeOf(err), "fetch %d (%v%v): staging: %v", op.idx, t.DType, t.Shape, err))
			return
		}
		buf := g.Device.HostMemory().Bytes(addr, size)
		copy(buf, t.Buf)
		*sg = staged{alloc: g.HostAlloc, addr: addr, buf: buf, dt: t.DType, shape: t.Shape.Clone()}
	}
	s.mem.unref(t, op.stream)
	if s.trace {
		s.tr.add(trace.Slice{ID: i, Name: fetchName(s.plan, op.idx), Op: "MEMCPYDtoH", Kind: trace.D2H, Device: g.Device.Name(),
			Group: int(g.ID), Stream: int(st.dev.ID()), Role: st.role, Start: start, End: time.Now(), Bytes: int64(size)})
	}
}

func fetchName(p *Plan, k int) string {
	r := p.fetches[k]
	if r.Node < 0 {
		return p.feeds[r.Index].String()
	}
	return fmt.Sprintf("%s:%d", p.nodes[r.Node].node.Name, r.Index)
}
