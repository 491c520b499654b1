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
)

// sop is one op of a stream step, in launch order.
type sop struct {
	kind   opKind
	idx    int
	stream int   // step stream index; -1 when resolved at launch (consts, string feeds)
	group  int   // index in Runtime.Groups
	prods  []int // ops that must have run first
	record bool  // an op on another stream waits for this one
}

// sstream is one stream a step uses.
type sstream struct {
	dev    device.Stream
	inline device.Stream // for code running inside the stream's items
	group  *groups.Group
	role   string
}

// sstep is the state of one stream step. Slots (outputs, feedDev, staged)
// are written by the item that produces them and read by items ordered
// after it by stream order or events, never by locks: a missing wait is a
// race the race detector reports and a wrong value the jitter exposes.
type sstep struct {
	kstep   kernels.Step // the step's temporary variables
	plan    *Plan
	sr      *Runtime
	feeds   []*tensor.Tensor
	ops     []sop
	streams []sstream
	mem     *tracker

	outputs [][]*tensor.Tensor
	feedDev []*tensor.Tensor
	staged  []staged

	failed atomic.Bool
	errMu  sync.Mutex
	err    error

	trace bool
	tr    traceBuf
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

// runStreams is Run on host streams: the feeds are copied in on the home
// group's H2D stream, kernels run as items on compute streams in
// topological order, the fetches are copied out on the D2H stream, and a
// consumer on another stream than its producer waits on an event recorded
// after the producer. The host launches everything without waiting (the
// launch runs on the home group's launch pool) and then waits once, on
// the final event. See the package documentation.
func (p *Plan) runStreams(ctx context.Context, sr *Runtime, feeds []*tensor.Tensor, opts Options) ([]*tensor.Tensor, *trace.Step, error) {
	for _, g := range sr.Groups {
		if _, ok := g.Device.Memory().(device.HostAddressable); !ok {
			return nil, nil, status.Errorf(status.Unimplemented, "device %s: the host stream executor needs host-addressable memory", g.Device.Name())
		}
	}
	s := &sstep{
		plan: p, sr: sr, feeds: feeds,
		outputs: make([][]*tensor.Tensor, len(p.nodes)),
		feedDev: make([]*tensor.Tensor, len(feeds)),
		staged:  make([]staged, len(p.fetches)),
		trace:   opts.Trace,
	}
	s.schedule()
	var streams []device.Stream
	for _, st := range s.streams {
		streams = append(streams, st.dev)
	}
	s.mem = newTracker(sr.Holder, streams)

	if sr.Holder == nil {
		return nil, nil, status.Errorf(status.Internal, "stream step without a tensor holder")
	}
	home := sr.Groups[0]
	launched := make(chan device.Event, 1)
	home.Launch.Submit(func() { launched <- s.launch() })
	final := <-launched
	if ctx.Done() == nil {
		final.Synchronize()
	} else {
		waited := make(chan struct{})
		go func() { final.Synchronize(); close(waited) }()
		select {
		case <-waited:
		case <-ctx.Done():
			// Items check the flag and skip their work; the buffers go
			// back only after the final event, when no stream can touch
			// them.
			s.fail(status.Errorf(status.Cancelled, "step cancelled: %v", ctx.Err()))
			<-waited
		}
	}
	defer s.mem.drain()
	var st *trace.Step
	if s.trace {
		st = s.tr.step(opts.Run, int(home.ID))
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

// streamIndex returns the step index of stream d, adding it.
func (s *sstep) streamIndex(d device.Stream, g *groups.Group, role string) int {
	for i, st := range s.streams {
		if st.dev == d {
			return i
		}
	}
	inline := d
	if v, ok := d.(interface{ Inline() device.Stream }); ok {
		inline = v.Inline()
	}
	s.streams = append(s.streams, sstream{dev: d, inline: inline, group: g, role: role})
	return len(s.streams) - 1
}

// schedule lays out the ops: feeds, then nodes in topological order, then
// fetches, each on its stream, with the ops each must wait for.
func (s *sstep) schedule() {
	p, sr := s.plan, s.sr
	home := sr.Groups[0]
	h2d := s.streamIndex(home.H2D, home, role(home, home.H2D, "h2d"))
	nodeOp := make([]int, len(p.nodes))
	feedOp := make([]int, len(p.feeds))
	for k, f := range s.feeds {
		st := h2d
		if f.DType == tensor.String {
			st = -1
		}
		feedOp[k] = len(s.ops)
		s.ops = append(s.ops, sop{kind: opFeed, idx: k, stream: st})
	}
	for _, i := range p.topo {
		pn := &p.nodes[i]
		gi := 0
		if sr.Assign != nil {
			gi = sr.Assign[i]
		}
		g := sr.Groups[gi]
		op := sop{kind: opNode, idx: i, group: gi, stream: -1}
		if !pn.isConst {
			op.stream = s.streamIndex(g.Compute, g, role(g, g.Compute, "compute"))
		}
		for _, r := range pn.inputs {
			if r.Node < 0 {
				op.prods = append(op.prods, feedOp[r.Index])
			}
		}
		for _, pr := range pn.preds {
			op.prods = append(op.prods, nodeOp[pr])
		}
		nodeOp[i] = len(s.ops)
		s.ops = append(s.ops, op)
	}
	d2h := s.streamIndex(home.D2H, home, role(home, home.D2H, "d2h"))
	for k, f := range p.fetches {
		op := sop{kind: opFetch, idx: k, stream: d2h}
		if f.Node < 0 {
			op.prods = []int{feedOp[f.Index]}
		} else {
			op.prods = []int{nodeOp[f.Node]}
		}
		s.ops = append(s.ops, op)
	}
	for i := range s.ops {
		op := &s.ops[i]
		for _, pr := range op.prods {
			if q := &s.ops[pr]; q.stream >= 0 && q.stream != op.stream {
				q.record = true
			}
		}
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

// launch enqueues every op and returns the final event. It never waits on
// a device, except to upload a constant the first time a group uses it.
func (s *sstep) launch() device.Event {
	home := s.sr.Groups[0]
	m := len(s.streams)
	clk := newClocks(m)
	opAt := make([]point, len(s.ops))
	evAt := make([]device.Event, len(s.ops))
	vcAt := make([][]int, len(s.ops)) // the producer stream's clock at its event
	inserted := make([]int, m)
	skipped := make([]int, m)

	waitFor := func(a, pr, consumer int) {
		q := &s.ops[pr]
		b := q.stream
		if b < 0 || b == a || (s.sr.DropWait != nil && s.sr.DropWait(pr, consumer)) {
			return
		}
		if s.sr.ReduceWaits && clk.covers(a, opAt[pr]) {
			skipped[a]++
			return
		}
		if err := s.streams[a].dev.Wait(evAt[pr]); err != nil {
			s.fail(status.Wrap(err, "stream %d waiting for stream %d", s.streams[a].dev.ID(), s.streams[b].dev.ID()))
			return
		}
		clk.learn(a, vcAt[pr])
		inserted[a]++
		if s.trace && consumer >= 0 {
			s.tr.mu.Lock()
			s.tr.flows = append(s.tr.flows, trace.Flow{From: pr, To: consumer})
			s.tr.mu.Unlock()
		}
	}
	newEvent := func(d device.Device) device.Event {
		ev, err := d.NewEvent()
		if err != nil {
			s.fail(status.Wrap(err, "new event"))
			return nil
		}
		return ev
	}

	for i := range s.ops {
		if s.failed.Load() {
			break
		}
		op := &s.ops[i]
		if op.stream < 0 {
			s.resolve(op)
			continue
		}
		a := op.stream
		for _, pr := range op.prods {
			waitFor(a, pr, i)
		}
		st := &s.streams[a]
		switch op.kind {
		case opFeed:
			if !s.launchFeed(i, op, st) {
				continue
			}
		case opNode:
			i, op := i, op
			if !s.enqueue(st, func() { s.runNode(i, op) }) {
				continue
			}
		case opFetch:
			i, op := i, op
			if !s.enqueue(st, func() { s.runFetch(i, op) }) {
				continue
			}
		}
		opAt[i] = clk.tick(a)
		if op.record {
			if evAt[i] = newEvent(st.group.Device); evAt[i] == nil {
				break
			}
			if err := st.dev.Record(evAt[i]); err != nil {
				s.fail(status.Wrap(err, "recording an event on stream %d", st.dev.ID()))
				break
			}
			vcAt[i] = clk.snapshot(a)
		}
	}

	// The final event, on the home D2H stream, follows every stream's
	// last op of this step.
	f := s.streamIndex(home.D2H, home, role(home, home.D2H, "d2h"))
	for b := range s.streams {
		if b == f || clk.seq[b] == 0 {
			continue
		}
		if s.sr.ReduceWaits && clk.covers(f, point{b, clk.seq[b]}) {
			skipped[f]++
			continue
		}
		ev := newEvent(s.streams[b].group.Device)
		if ev == nil {
			// No event: fall back to the host waiting for the stream.
			s.streams[b].dev.Synchronize()
			continue
		}
		if s.streams[b].dev.Record(ev) != nil || s.streams[f].dev.Wait(ev) != nil {
			s.streams[b].dev.Synchronize()
			continue
		}
		inserted[f]++
	}
	final := newEvent(home.Device)
	if final == nil || s.streams[f].dev.Record(final) != nil {
		s.streams[f].dev.Synchronize()
		final = doneEvent{}
	}
	for a, st := range s.streams {
		st.group.CountWaits(inserted[a], skipped[a])
	}
	return final
}

// doneEvent is an event that has completed.
type doneEvent struct{}

func (doneEvent) Query() bool        { return true }
func (doneEvent) Synchronize() error { return nil }

// enqueue puts fn on st's queue, failing the step if st cannot take it.
func (s *sstep) enqueue(st *sstream, fn func()) bool {
	if err := device.Enqueue(st.dev, fn); err != nil {
		s.fail(status.Wrap(err, "stream %d of %s", st.dev.ID(), st.group.Device.Name()))
		return false
	}
	return true
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

// launchFeed stages feed op.idx in host memory and enqueues its copy into
// device memory on the H2D stream. It reports whether an item was enqueued.
func (s *sstep) launchFeed(i int, op *sop, st *sstream) bool {
	f := s.feeds[op.idx]
	g := st.group
	name := s.plan.feeds[op.idx].String()
	size := uint64(len(f.Buf))
	hostMem := g.Device.HostMemory()
	haddr, err := g.HostAlloc.Allocate(size, nil)
	if err != nil {
		s.fail(status.Errorf(status.CodeOf(err), "feed '%s' (%v%v): staging: %v", name, f.DType, f.Shape, err))
		return false
	}
	hbuf := hostMem.Bytes(haddr, max(size, 1))[:size]
	copy(hbuf, f.Buf)
	// The chunk is keyed to the stream's inline view, as kernels' are: its
	// free (by the tracker, once every use is done) then completes the
	// event at once. Keyed to the queue, the free's event would land at
	// the queue's end, behind later steps' items, and a stream reusing
	// the chunk inline could wait on a stream that waits on it (a
	// deadlock across groups sharing a stream-aware allocator).
	var as device.Stream
	if g.StreamAware {
		as = st.inline
	}
	daddr, err := g.Alloc.Allocate(size, as)
	if err != nil {
		g.HostAlloc.Free(haddr)
		s.fail(status.Errorf(status.CodeOf(err), "feed '%s' (%v%v): %v", name, f.DType, f.Shape, err))
		return false
	}
	mem := g.Device.Memory().(device.HostAddressable)
	dt := &tensor.Tensor{DType: f.DType, Shape: f.Shape.Clone(), Buf: mem.Bytes(daddr, max(size, 1))[:size]}
	if s.trace {
		// One item times the copy: items of concurrent steps' launches
		// may interleave on the queue, so a start item and an end item
		// could bracket another step's copy.
		s.enqueue(st, func() {
			start := time.Now()
			if size > 0 {
				if err := st.inline.CopyH2D(daddr, hbuf); err != nil {
					s.fail(status.Wrap(err, "feed '%s'", name))
				}
			}
			s.tr.add(trace.Slice{ID: i, Name: name, Op: "MEMCPYHtoD", Kind: trace.H2D, Device: g.Device.Name(),
				Group: int(g.ID), Stream: int(st.dev.ID()), Role: st.role, Start: start, End: time.Now(), Bytes: int64(size)})
		})
	} else if size > 0 {
		if err := st.dev.CopyH2D(daddr, hbuf); err != nil {
			s.fail(status.Wrap(err, "feed '%s'", name))
		}
	}
	s.feedDev[op.idx] = dt
	b := &buffer{addr: daddr, alloc: g.Alloc, refs: s.plan.feedUses[op.idx], users: []int{op.stream}}
	if b.refs == 0 {
		// Nothing reads it: back once the copy has run.
		s.mem.release(b, -1)
	} else {
		s.mem.add(dt, b)
	}
	// The staging buffer goes back once the H2D stream has copied it.
	s.mem.holder.HoldOn(func() { g.HostAlloc.Free(haddr) }, []device.Stream{st.dev})
	return true
}

// runNode is the item of a node on its compute stream.
func (s *sstep) runNode(i int, op *sop) {
	if s.failed.Load() {
		return
	}
	pn := &s.plan.nodes[op.idx]
	st := &s.streams[op.stream]
	g := st.group
	var start time.Time
	if s.trace {
		start = time.Now()
	}
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
	var as device.Stream
	if g.StreamAware {
		as = st.inline
	}
	k := kernelCall{alloc: newOutAlloc(g, as, s.mem), step: &s.kstep}
	outs, err := k.run(pn, ins, g.Intra)
	if err != nil {
		s.mem.retire(nil, nil, nil, k.alloc.fresh, op.stream)
		s.fail(err)
		return
	}
	s.outputs[op.idx] = outs
	s.mem.retire(outs, pn.uses, ins, k.alloc.fresh, op.stream)
	if s.trace {
		s.tr.add(trace.Slice{ID: i, Name: pn.node.Name, Op: pn.node.Op, Kind: trace.Kernel, Device: g.Device.Name(),
			Group: int(g.ID), Stream: int(st.dev.ID()), Role: st.role, Start: start, End: time.Now(),
			Bytes: k.alloc.bytes, Allocator: g.Alloc.Name()})
	}
}

// runFetch is the item that copies fetch op.idx into host staging memory
// on the D2H stream.
func (s *sstep) runFetch(i int, op *sop) {
	if s.failed.Load() {
		return
	}
	st := &s.streams[op.stream]
	g := st.group
	var start time.Time
	if s.trace {
		start = time.Now()
	}
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
