package exec

import (
	"context"
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

// GPUNodeRuntime is what a step over several GPU groups runs on: the
// groups and the group of every plan node. Node-level mode
// (TF_NODE_LEVEL_MULTISTREAM with TF_STREAM_FROM_FILE) gives the groups of
// the plan's GPUs, each node on the one the file names among its GPU's;
// graph-level mode gives a plan placed on several GPUs a group of each,
// every node on its GPU's.
type GPUNodeRuntime struct {
	// Groups are the groups the step may use; Groups[0] is the home group:
	// its H2D stream copies the feeds in, its D2H stream the fetches out,
	// and it records the final event. Groups of one GPU must share a CUDA
	// context.
	Groups []*groups.Group
	// Assign gives, per plan index, the index in Groups of the group whose
	// compute stream runs the node.
	Assign []int
	// ReduceWaits leaves out a wait that an earlier wait implies, directly
	// or through other streams (TF_REDUCE_STREAM_WAIT).
	ReduceWaits bool
	// Holder keeps buffers that another stream still reads.
	Holder *tensorholder.Holder
	// Intra splits host kernels' loops (nodes that fell back to the host).
	Intra kernels.Parallelizer
}

// nlGroup is one group of a node-level GPU step.
type nlGroup struct {
	g       *groups.Group
	c, h, d device.Stream
	tab     int // its device's value table, an index in nlstep.tabs
	waits   int
	skips   int
}

// nltab is the values of a step as one GPU sees them: host tensors are
// shared by every table, device tensors live in the table of their GPU.
type nltab struct {
	vals  [][]gval
	feeds []gval
}

// nlstep is a node-level GPU step: a gstep whose current group (g, c, h,
// d, cix) switches to each node's group before the node is launched.
type nlstep struct {
	*gstep
	rt   *GPUNodeRuntime
	gs   []nlGroup
	clk  *clocks
	cur  int      // the current group, an index in gs
	tabs []*nltab // per GPU of the step
	at   []point  // per plan node: where a GPU node's work ends (seq 0: none)
	// made holds the device copies of feeds and host values, made on a
	// compute stream (the feeds' H2D copies count as the home group's).
	made map[*tensor.Tensor]point
	// joined says the home group's compute stream follows every other
	// group's, and nothing was launched on them since.
	joined bool
}

// RunGPUNodes executes one step of a placed plan over several GPU groups:
// each node is launched on the compute stream of its group (rt.Assign), a
// node whose producer (a data or control predecessor, or the copy of a
// feed or host value) is on another group's stream waits for it with an
// event (cuStreamWaitEvent), the feeds come in on the home group's H2D
// stream and the fetches go out on its D2H stream after its compute
// stream has waited for every other group's. A device value read on
// another GPU is copied there first (cuMemcpyPeerAsync on the reader's
// compute stream, after the wait), once per GPU; host values are shared.
// The host launches everything in topological order from the home group's
// launch pool and waits once, for the final event; host kernels run as in
// RunGPU, on the home GPU. A buffer goes back to its group's allocator
// once every stream that touched it has passed its use.
func (p *Plan) RunGPUNodes(ctx context.Context, rt *GPUNodeRuntime, feeds []*tensor.Tensor, opts Options) ([]*tensor.Tensor, *trace.Step, error) {
	if err := p.refuseDeadness("a multi-group GPU step"); err != nil {
		return nil, nil, err
	}
	if len(feeds) != len(p.feeds) {
		return nil, nil, status.Errorf(status.Internal, "plan expects %d feeds, got %d", len(p.feeds), len(feeds))
	}
	if len(rt.Groups) == 0 || rt.Holder == nil {
		return nil, nil, status.Errorf(status.Internal, "multi-group GPU step without groups or a tensor holder")
	}
	if len(rt.Assign) != len(p.nodes) {
		return nil, nil, status.Errorf(status.Internal, "multi-group GPU step: %d group assignments for %d nodes", len(rt.Assign), len(p.nodes))
	}
	s := &nlstep{rt: rt, gs: make([]nlGroup, len(rt.Groups)), clk: newClocks(len(rt.Groups)), at: make([]point, len(p.nodes)), made: map[*tensor.Tensor]point{}}
	streams := make([]device.Stream, 0, len(rt.Groups)+1)
	for k, g := range rt.Groups {
		c, h, d := g.Compute, g.H2D, g.D2H
		if err := asyncStreams(g); err != nil {
			return nil, nil, err
		}
		tab := len(s.tabs)
		for j := 0; j < k; j++ {
			if o := rt.Groups[j]; o.Device == g.Device {
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
			s.tabs = append(s.tabs, &nltab{vals: make([][]gval, len(p.nodes)), feeds: make([]gval, len(feeds))})
		}
		s.gs[k] = nlGroup{g: g, c: c, h: h, d: d, tab: tab}
		streams = append(streams, c)
	}
	for i, a := range rt.Assign {
		if a < 0 || a >= len(rt.Groups) {
			return nil, nil, status.InvalidArg("node '%s' is assigned stream group %d, but %s has %d groups (0 to %d)",
				p.nodes[i].node.Name, a, rt.Groups[0].Device.Name(), len(rt.Groups), len(rt.Groups)-1)
		}
	}
	home := &s.gs[0]
	dix := 0 // merged: the home group's one stream serves D2H too
	if home.d != home.c {
		dix = len(streams)
		streams = append(streams, home.d)
	}
	s.gstep = &gstep{plan: p, dix: dix, rt: &GPURuntime{Group: home.g, Holder: rt.Holder, Intra: rt.Intra},
		staged: make([]staged, len(p.fetches)), out: make([]*tensor.Tensor, len(p.fetches)),
		trace: opts.Trace, run: opts.Run}
	s.mem = newTracker(rt.Holder, streams)
	// The tracker frees a buffer at once when only the releasing stream
	// touched it, which is safe only on the stream that allocated it;
	// holding on the releasing stream too covers a last read on another
	// group's stream.
	s.mem.hold = func(free func(), others []device.Stream) {
		mine := false
		for _, o := range others {
			mine = mine || o == s.c
		}
		if !mine {
			others = append(others, s.c)
		}
		s.holdOn(free, others)
	}
	for _, t := range s.tabs {
		for k, f := range feeds {
			t.feeds[k].host = f
		}
	}
	s.switchTo(0)

	err := launchAndWait(ctx, home.g.Launch, "multi-group GPU step", home.g.Device.Name(), s.launchNodes, s.finishAll)
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
	for _, e := range s.events {
		e.Release()
	}
	var st *trace.Step
	if s.trace {
		st = s.tr.step(opts.Run, int(home.g.ID))
	}
	if err == nil && s.mem.err != nil {
		err = s.mem.err
	}
	if err != nil {
		return nil, st, err
	}
	return s.out, st, nil
}

// switchTo makes group k the one the gstep launches on.
func (s *nlstep) switchTo(k int) {
	ng := &s.gs[k]
	s.cur, s.g, s.c, s.h, s.d = k, ng.g, ng.c, ng.h, ng.d
	s.cix = k
	s.vals, s.feeds = s.tabs[ng.tab].vals, s.tabs[ng.tab].feeds
	s.gstep.rt.Group = ng.g
}

// waitFor makes the current group's compute stream follow pt, unless it
// already does (and ReduceWaits).
func (s *nlstep) waitFor(pt point) error {
	if pt.seq == 0 || pt.stream == s.cur {
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
	return nil
}

// launchNodes enqueues the step: feeds on the home group, each node on its
// group after waiting for its producers, then the fetches on the home
// group after it has joined every other group.
func (s *nlstep) launchNodes() error {
	start := time.Now()
	nodes := 0
	defer func() { s.gs[0].g.CountLaunch(time.Since(start), nodes) }()
	p := s.plan
	s.switchTo(0)
	if err := s.launchFeeds(); err != nil {
		return err
	}
	fed := s.clk.tick(0) // the feeds' copies: home compute waited for them
	for k := range s.feeds {
		if dt := s.feeds[k].dev; dt != nil {
			s.made[dt] = fed
		}
	}
	for _, i := range p.topo {
		pn := &p.nodes[i]
		s.switchTo(s.rt.Assign[i])
		if pn.where != onConst {
			if err := s.waitInputs(i); err != nil {
				return err
			}
		}
		var before []bool
		if pn.where != onConst {
			before = make([]bool, len(pn.inputs))
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
			nodes++
		}
	}
	s.switchTo(0)
	if err := s.join(); err != nil {
		return err
	}
	s.joined = true
	for k, r := range p.fetches {
		if err := s.bring(r, "fetch '"+fetchName(p, k)+"'"); err != nil {
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
func (s *nlstep) bring(r ref, what string) error {
	if r.Node < 0 {
		return nil // a feed's host tensor is in every table
	}
	from := s.tabs[s.gs[s.rt.Assign[r.Node]].tab]
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
		return status.Errorf(status.Internal, "%s: no value on %s", what, s.gs[s.rt.Assign[r.Node]].g.Device.Name())
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
		if err := pc.CopyPeer(addr, hostmem.DeviceAddr(t.Buf), s.gs[s.rt.Assign[r.Node]].c, size); err != nil {
			return status.Wrap(err, "%s: copy from %s to %s", what, s.gs[s.rt.Assign[r.Node]].g.Device.Name(), s.g.Device.Name())
		}
	}
	v.dev = dt
	s.made[dt] = s.clk.tick(s.cur)
	return nil
}

// holdOn frees a buffer once an event recorded now on each of others has
// completed, each event from its stream's own context (holdOnEvents takes
// them all from the current one, which a step over several GPUs cannot).
func (s *nlstep) holdOn(free func(), others []device.Stream) {
	var evs []device.Event
	var own []device.PooledEvent
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
		own = append(own, e)
	}
	s.rt.Holder.Hold(func() {
		free()
		for _, e := range own {
			e.Release()
		}
	}, evs)
}

// waitInputs orders the current group after what node i reads from other
// groups' streams: its GPU predecessors (data and control edges) and the
// device copies of feeds and host values it reads; then it brings the
// inputs made on another GPU here.
func (s *nlstep) waitInputs(i int) error {
	pn := &s.plan.nodes[i]
	for _, pr := range pn.preds {
		if err := s.waitFor(s.at[pr]); err != nil {
			return status.Wrap(err, "node '%s': ordering group %d after its inputs", pn.node.Name, s.g.Index)
		}
	}
	for j, r := range pn.inputs {
		if err := s.bring(r, "node '"+pn.node.Name+"' input "+itoa(j)); err != nil {
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
func (s *nlstep) join() error {
	for k := 1; k < len(s.gs); k++ {
		if err := s.waitFor(point{k, s.clk.seq[k]}); err != nil {
			return status.Wrap(err, "joining group %d of %s into the home group", s.gs[k].g.Index, s.gs[k].g.Device.Name())
		}
	}
	return nil
}

// finishAll records the final event after everything the step launched on
// any group, whatever the launch got to.
func (s *nlstep) finishAll() (device.Event, error) {
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
