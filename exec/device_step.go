package exec

import (
	"context"
	"math/rand"
	"time"

	"mstream/device"
	"mstream/groups"
	"mstream/hostmem"
	"mstream/status"
	"mstream/tensor"
	"mstream/trace"
)

// devGroup is one group of a device step.
type devGroup struct {
	g       *groups.Group
	c, h, d device.Stream
	tab     int // its device's value table, an index in devStep.tabs
	waits   int
	skips   int
}

// devTab is the values of a step as one GPU sees them: host tensors are
// shared by every table, device tensors live in the table of their GPU.
type devTab struct {
	vals  [][]gval
	feeds []gval
}

// devStep is a device step over one group or several: a gstep whose
// current group (g, c, h, d, cix) switches to each node's group before
// the node is launched. With one group nothing switches and no node waits
// (one compute stream orders them all).
type devStep struct {
	*gstep
	gs    []devGroup
	multi bool // more than one group: nodes wait across compute streams
	clk   *clocks
	cur   int       // the current group, an index in gs
	tabs  []*devTab // per GPU of the step
	at    []point   // per plan node: where a GPU node's work ends (seq 0: none)
	// made holds the device copies of feeds and host values, made on a
	// compute stream (the feeds' H2D copies count as the home group's).
	made map[*tensor.Tensor]point
	// joined says the home group's compute stream follows every other
	// group's, and nothing was launched on them since.
	joined bool
	// sliceOf is, in a traced step over several groups, the launch
	// window (trace slice ID) of the node whose work ends at a point.
	sliceOf map[point]int
	// held says a buffer went to the holder (holdOn), which may free it
	// after the step has returned.
	held bool
}

// launched notes, in a traced step, that the launch window just recorded
// ends at pt.
func (s *devStep) launched(pt point) {
	if s.trace && len(s.tr.slices) > 0 {
		if s.sliceOf == nil {
			s.sliceOf = map[point]int{}
		}
		s.sliceOf[pt] = len(s.tr.slices) - 1
	}
}

// runDevice is Run on asynchronous devices (GPUs): each node is
// launched on the compute stream of its group (sr.Assign; nil: all on
// Groups[0]), a node whose producer (a data or control predecessor, or
// the copy of a feed or host value) is on another group's stream waits
// for it with an event (cuStreamWaitEvent), the feeds come in on the home
// group's H2D stream and the fetches go out on its D2H stream after its
// compute stream has waited for every other group's. A device value read
// on another GPU is copied there first (cuMemcpyPeerAsync on the reader's
// compute stream, after the wait), once per GPU; host values are shared.
// The host launches everything in topological order from the home
// group's launch pool and waits once, for the final event; host kernels
// run on the launching goroutine, on the home GPU, their device inputs
// copied back first (the one place a step blocks mid-way). A buffer goes
// back to its group's allocator once every stream that touched it has
// passed its use. A one-group step may instead replay a captured CUDA
// graph (sr.Graphs; gpu_graph.go).
func (p *Plan) runDevice(ctx context.Context, sr *Runtime, feeds []*tensor.Tensor, opts Options) ([]*tensor.Tensor, *trace.Step, error) {
	if sr.Holder == nil {
		return nil, nil, status.Errorf(status.Internal, "device step without a tensor holder")
	}
	if sr.Assign != nil && len(sr.Assign) != len(p.nodes) {
		return nil, nil, status.Errorf(status.Internal, "device step: %d group assignments for %d nodes", len(sr.Assign), len(p.nodes))
	}
	for i, a := range sr.Assign {
		if a < 0 || a >= len(sr.Groups) {
			return nil, nil, status.InvalidArg("node '%s' is assigned stream group %d, but %s has %d groups (0 to %d)",
				p.nodes[i].node.Name, a, sr.Groups[0].Device.Name(), len(sr.Groups), len(sr.Groups)-1)
		}
	}
	for _, g := range sr.Groups {
		if err := asyncStreams(g); err != nil {
			return nil, nil, err
		}
	}
	if gc := sr.graphs(); gc != nil && !opts.Trace {
		if out, ok, err := gc.run(ctx, p, sr, feeds); ok {
			return out, nil, err
		}
	}
	s := &devStep{gs: make([]devGroup, len(sr.Groups)), multi: len(sr.Groups) > 1}
	if s.multi {
		s.clk, s.at, s.made = newClocks(len(sr.Groups)), make([]point, len(p.nodes)), map[*tensor.Tensor]point{}
	}
	streams := make([]device.Stream, 0, len(sr.Groups)+1)
	for k, g := range sr.Groups {
		c, h, d := g.Compute, g.H2D, g.D2H
		tab := len(s.tabs)
		for j := 0; j < k; j++ {
			if o := sr.Groups[j]; o.Device == g.Device {
				// Groups of one GPU share its value table even in different
				// CUDA contexts (TF_GPU_CONTEXT_COUNT): device memory is
				// addressed alike from every context of the device (unified
				// addressing; device/cuda's cross-context probe), events are
				// made in their stream's own context, and cuStreamWaitEvent
				// takes an event of another context of the same device.
				tab = s.gs[j].tab
				break
			}
		}
		if tab == len(s.tabs) {
			s.tabs = append(s.tabs, &devTab{vals: make([][]gval, len(p.nodes)), feeds: make([]gval, len(feeds))})
		}
		s.gs[k] = devGroup{g: g, c: c, h: h, d: d, tab: tab}
		streams = append(streams, c)
	}
	if p.deadness && len(s.tabs) > 1 {
		return nil, nil, status.Errorf(status.Unimplemented, "a plan with v1 control flow (Switch or a frame op) placed on %d GPUs: a step with frames runs on one GPU's groups", len(s.tabs))
	}
	home := &s.gs[0]
	dix := 0 // merged: the home group's one stream serves D2H too
	if home.d != home.c {
		dix = len(streams)
		streams = append(streams, home.d)
	}
	s.gstep = &gstep{plan: p, dix: dix, rt: sr, keep: p.deadness,
		staged: make([]staged, len(p.fetches)), out: make([]*tensor.Tensor, len(p.fetches)),
		trace: opts.Trace, run: opts.Run}
	if sr.Jitter > 0 {
		s.jit = rand.New(rand.NewSource(time.Now().UnixNano() + opts.Run))
	}
	s.ar = p.arena()
	s.mem = newTracker(sr.Holder, streams)
	s.mem.hold = s.holdOn
	for _, t := range s.tabs {
		for k, f := range feeds {
			t.feeds[k].host = f
		}
	}
	s.switchTo(0)
	if s.trace && !s.multi {
		// Device times need one context's anchor; without it (or with
		// several groups) the step keeps only its launch windows.
		s.anchor, s.anchorHost, _ = traceAnchor(home.c)
	}

	launch := s.launchNodes
	if p.deadness {
		launch = func() error { return s.launchFrames(ctx) }
	}
	err := launchAndWait(ctx, home.g.Launch, "device step", home.g.Device.Name(), launch, s.finishAll)
	for k := range s.gs {
		ng := &s.gs[k]
		ng.g.CountWaits(ng.waits, ng.skips)
	}
	if err == nil {
		for k := range s.staged {
			if sg := &s.staged[k]; s.out[k] == nil {
				t := tensor.New(sg.dt, sg.shape)
				copy(t.Buf, sg.buf)
				s.out[k] = t
			}
		}
	}
	for _, a := range s.pinned {
		home.g.HostAlloc.Free(a)
	}
	s.mem.drain()
	// Every event of the step has completed (the final event follows
	// them all, or the streams were synchronised).
	for _, e := range s.events {
		e.Release()
	}
	var st *trace.Step
	if s.trace {
		s.switchTo(0)
		s.deviceSlices(err == nil)
		st = s.tr.step(opts.Run, int(home.g.ID))
	}
	s.ar.release(s.held)
	p.arenas.Put(s.ar)
	if err == nil && s.mem.err != nil {
		err = s.mem.err
	}
	if err != nil {
		return nil, st, err
	}
	return s.out, st, nil
}

// groupOf is the index in gs of the group that runs plan node i.
func (s *devStep) groupOf(i int) int {
	if s.rt.Assign == nil {
		return 0
	}
	return s.rt.Assign[i]
}

// switchTo makes group k the one the gstep launches on.
func (s *devStep) switchTo(k int) {
	ng := &s.gs[k]
	s.cur, s.g, s.c, s.h, s.d = k, ng.g, ng.c, ng.h, ng.d
	s.cix = k
	s.vals, s.feeds = s.tabs[ng.tab].vals, s.tabs[ng.tab].feeds
}

// waitFor makes the current group's compute stream follow pt, unless it
// already does (and ReduceWaits).
//
// In a traced step the wait is a flow from the launch window of the
// producer (sliceOf) to the next one, the consumer's; DropWait is asked
// with those slice IDs (-1 where unknown), as the host streams' step asks
// with its ops'.
func (s *devStep) waitFor(pt point) error {
	if pt.seq == 0 || pt.stream == s.cur {
		return nil
	}
	prod, cons := -1, -1
	if s.trace {
		cons = len(s.tr.slices)
		if id, ok := s.sliceOf[pt]; ok {
			prod = id
		}
	}
	if s.rt.DropWait != nil && s.rt.DropWait(prod, cons) {
		return nil
	}
	me, from := &s.gs[s.cur], &s.gs[pt.stream]
	if s.rt.ReduceWaits && s.clk.covers(s.cur, pt) {
		me.skips++
		return nil
	}
	if err := s.order(me.c, from.c); err != nil {
		return err
	}
	me.waits++
	s.clk.waited(s.cur, pt.stream)
	if prod >= 0 {
		s.tr.mu.Lock()
		s.tr.flows = append(s.tr.flows, trace.Flow{From: prod, To: cons})
		s.tr.mu.Unlock()
	}
	return nil
}

// launchNodes enqueues the step: feeds on the home group, each node on its
// group after waiting for its producers, then the fetches on the home
// group after it has joined every other group.
func (s *devStep) launchNodes() error {
	start := time.Now()
	nodes := 0
	defer func() { s.gs[0].g.CountLaunch(time.Since(start), nodes) }()
	p := s.plan
	s.switchTo(0)
	if err := s.launchFeeds(); err != nil {
		return err
	}
	if !s.multi {
		// One compute stream orders every node: no waits to work out.
		for _, i := range p.topo {
			if err := s.node(i); err != nil {
				return err
			}
			if p.nodes[i].where == onGPU {
				nodes++
			}
		}
		s.joined = true
		return s.launchFetches()
	}
	fed := s.clk.tick(0) // the feeds' copies: home compute waited for them
	s.launched(fed)
	for k := range s.feeds {
		if dt := s.feeds[k].dev; dt != nil {
			s.made[dt] = fed
		}
	}
	for _, i := range p.topo {
		pn := &p.nodes[i]
		s.switchTo(s.groupOf(i))
		if pn.where != onConst {
			if err := s.waitInputs(i); err != nil {
				return err
			}
		}
		var before []bool
		if pn.where != onConst {
			before = s.ar.bools(len(pn.inputs))
			for j, r := range pn.inputs {
				before[j] = s.value(r).dev != nil
			}
		}
		if err := s.node(i); err != nil {
			return err
		}
		if pn.where == onConst {
			continue
		}
		var copied point
		for j, r := range pn.inputs {
			v := s.value(r)
			if !before[j] && v.dev != nil && (r.Node < 0 || p.nodes[r.Node].where != onConst) {
				// Copied in on this compute stream for this node.
				if copied.seq == 0 {
					copied = s.clk.tick(s.cur)
				}
				s.made[v.dev] = copied
			}
		}
		if pn.where == onGPU {
			s.at[i] = s.clk.tick(s.cur)
			s.launched(s.at[i])
			nodes++
		}
	}
	s.switchTo(0)
	if err := s.join(); err != nil {
		return err
	}
	s.joined = true
	for k, r := range p.fetches {
		if err := s.bring(r, inName{p: p, j: k}); err != nil {
			return err
		}
	}
	return s.launchFetches()
}

// bring makes value r readable on the current group's GPU: a value made on
// another GPU is shared when it has a host tensor, else copied into this
// GPU's memory on the current compute stream (which already follows its
// producer), held until the step ends. The source stays held too: its
// readers here read the copy, so its references never all come back
// before the step's end.
func (s *devStep) bring(r ref, what inName) error {
	if r.Node < 0 {
		return nil // a feed's host tensor is in every table
	}
	from := s.tabs[s.gs[s.groupOf(r.Node)].tab]
	to := s.tabs[s.gs[s.cur].tab]
	if from == to {
		return nil
	}
	src := from.vals[r.Node]
	if to.vals[r.Node] == nil {
		to.vals[r.Node] = make([]gval, len(src))
	}
	v, u := &to.vals[r.Node][r.Index], src[r.Index]
	switch {
	case v.host != nil || v.dev != nil:
		return nil
	case u.host != nil:
		v.host = u.host
		return nil
	case u.dev == nil:
		return status.Errorf(status.Internal, "%s: no value on %s", what, s.gs[s.groupOf(r.Node)].g.Device.Name())
	}
	t := u.dev
	size := uint64(len(t.Buf))
	addr, err := s.g.Alloc.Allocate(size, s.allocStream())
	if err != nil {
		return status.Errorf(status.CodeOf(err), "%s (%v%v): copy to %s: %v", what, t.DType, t.Shape, s.g.Device.Name(), err)
	}
	dt := &tensor.Tensor{DType: t.DType, Shape: t.Shape.Clone(), Buf: hostmem.DeviceBytes(addr, int(max(size, 1)))[:size]}
	s.mem.add(dt, &buffer{addr: addr, alloc: s.g.Alloc, refs: 1 << 30, users: []int{s.cix}})
	if size > 0 {
		s.dirty = true
		pc, ok := s.c.(device.PeerCopier)
		if !ok {
			return status.Errorf(status.Unimplemented, "%s: %s cannot copy from another device's memory", what, s.g.Device.Name())
		}
		if err := s.delay(s.c); err != nil {
			return err
		}
		if err := pc.CopyPeer(addr, hostmem.DeviceAddr(t.Buf), s.gs[s.groupOf(r.Node)].c, size); err != nil {
			return status.Wrap(err, "%s: copy from %s to %s", what, s.gs[s.groupOf(r.Node)].g.Device.Name(), s.g.Device.Name())
		}
	}
	v.dev = dt
	s.made[dt] = s.clk.tick(s.cur)
	return nil
}

// holdOn frees a buffer once an event recorded now on each of others has
// completed, each event from its stream's own context (the tracker's hold
// for a device step: a goroutine waits, so neither a host callback, which
// must not call CUDA as a stream-aware free does, nor the launching
// goroutine blocks). Over several groups the releasing compute stream is
// held on too: the tracker frees at once a buffer only it touched, which
// is safe only on the stream that allocated it, and a last read may have
// been on another group's stream.
func (s *devStep) holdOn(free func(), others []device.Stream) {
	s.held = true
	if s.multi {
		mine := false
		for _, o := range others {
			mine = mine || o == s.c
		}
		if !mine {
			others = append(others, s.c)
		}
	}
	var eb [4]device.Event // most buffers are held on one or two streams
	evs := eb[:0]
	h := &heldFree{free: free}
	h.own = h.ob[:0]
	for _, st := range others {
		e, err := pooledEvent(st)
		if err == nil {
			if err = st.Record(e); err != nil {
				e.Release()
			}
		}
		if err != nil {
			st.Synchronize() // no event: the stream's own sync is the fallback
			continue
		}
		evs = append(evs, e)
		h.own = append(h.own, e)
	}
	s.rt.Holder.Hold(h.run, evs)
}

// heldFree is a free that waits for events, which go back to their pool
// after it: one record for what holdOn's closure and slices were.
type heldFree struct {
	free func()
	own  []device.PooledEvent
	ob   [4]device.PooledEvent
}

func (h *heldFree) run() {
	h.free()
	for _, e := range h.own {
		e.Release()
	}
}

// waitInputs orders the current group after what node i reads from other
// groups' streams: its GPU predecessors (data and control edges) and the
// device copies of feeds and host values it reads; then it brings the
// inputs made on another GPU here.
func (s *devStep) waitInputs(i int) error {
	pn := &s.plan.nodes[i]
	for _, pr := range pn.preds {
		if err := s.waitFor(s.at[pr]); err != nil {
			return status.Wrap(err, "node '%s': ordering group %d after its inputs", pn.node.Name, s.g.Index)
		}
	}
	for j, r := range pn.inputs {
		if err := s.bring(r, inName{n: pn.node, j: j}); err != nil {
			return err
		}
		v := s.value(r)
		if v.dev == nil {
			continue
		}
		wants, may := pn.wantsDevice(j)
		if !wants && (may || v.host != nil) {
			continue // the host copy (or only the shape) is read
		}
		if pt, ok := s.made[v.dev]; ok {
			if err := s.waitFor(pt); err != nil {
				return status.Wrap(err, "node '%s': ordering group %d after its inputs", pn.node.Name, s.g.Index)
			}
		}
	}
	return nil
}

// join makes the home group's compute stream follow every other group's,
// so the fetches and the final event on its D2H stream follow the step.
func (s *devStep) join() error {
	for k := 1; k < len(s.gs); k++ {
		if err := s.waitFor(point{k, s.clk.seq[k]}); err != nil {
			return status.Wrap(err, "joining group %d of %s into the home group", s.gs[k].g.Index, s.gs[k].g.Device.Name())
		}
	}
	return nil
}

// finishAll records the final event after everything the step launched on
// any group, whatever the launch got to.
func (s *devStep) finishAll() (device.Event, error) {
	s.switchTo(0)
	if s.joined {
		return s.finish()
	}
	s.dirty = true
	jerr := s.join()
	if jerr != nil {
		// No event: the host waits for the other groups instead.
		for k := 1; k < len(s.gs); k++ {
			s.gs[k].c.Synchronize()
		}
	}
	fin, err := s.finish()
	if err == nil {
		err = jerr
	}
	return fin, err
}
