package exec

import (
	"context"
	"math/rand"
	"slices"
	"sync"
	"time"

	"mstream/bfc"
	"mstream/device"
	"mstream/groups"
	"mstream/status"
	"mstream/tensor"
	"mstream/trace"
)

// devGroup is one group of a device step.
type devGroup struct {
	g       *groups.Group
	c, h, d device.Stream
	tab     int // its device's value table, an index in devStep.tabs
}

// devTab is the values of a step as one GPU sees them: host tensors are
// shared by every table, device tensors live in the table of their GPU.
type devTab struct {
	vals  [][]gval
	feeds []gval
}

// devStep is a device step over one group or several. With one group
// and no frames its gstep launches every node (one compute stream
// orders them all, no waits); otherwise each group has a lane
// (device_lanes.go), the home lane's gstep the step's: over several
// groups each lane launches its group's nodes from a goroutine of its
// own, and a step with frames (device_frames.go) is launched by the
// lanes as the frame driver makes its nodes ready.
type devStep struct {
	*gstep
	gs    []devGroup
	multi bool      // more than one group: nodes wait across compute streams
	tabs  []*devTab // per GPU of the step
	// joined says the home group's compute stream follows every other
	// group's, and nothing was launched on them since.
	joined bool
	// held gathers, per step stream (an index of mem.streams), the
	// releases not yet handed to the holder (holdOn).
	held []*heldFree
	// lanes are the step's lanes, one per group; ls is their schedule
	// over several groups.
	lanes []lane
	ls    *laneSched
	// ctx is the Run's, for the frame driver (launchStep).
	ctx context.Context
	// The storage of a step on one GPU (and of gs for up to two groups,
	// streams for up to three), so a step costs few allocations.
	g0 gstep
	t0 devTab
	gb [2]devGroup
	tb [1]*devTab
	sb [3]device.Stream
}

// runDevice is Run on asynchronous devices (GPUs): each node is
// launched on the compute stream of its group (sr.Assign; nil: all on
// Groups[0]), a node whose producer (a data or control predecessor, or
// the copy of a feed or host value) is on another group's stream waits
// for it with an event (cuStreamWaitEvent), the feeds come in on the home
// group's compute stream and the fetches go out after it has waited for
// every other group's (on compute, or on the D2H stream when they are
// large: launchFetches). A device value read on another GPU is copied
// there first (cuMemcpyPeerAsync on the reader's compute stream, after
// the wait); host values are shared. The host launches in topological
// order: one group's step from the Run's goroutine or the home group's
// launch pool (launcher), several groups' each from a lane of its own
// (device_lanes.go; with frames, as the frame driver makes them ready:
// device_frames.go), and waits once, for the final event; host kernels
// run on the launching goroutine, their device inputs copied back first
// (the one place a step blocks mid-way, with a Switch's predicate). A
// buffer goes back to its group's allocator once every stream that
// touched it has passed its use. A one-group step may instead replay a
// captured CUDA graph (sr.Graphs; gpu_graph.go).
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
	s := &devStep{multi: len(sr.Groups) > 1}
	s.gs = s.gb[:0]
	if len(sr.Groups) > len(s.gb) {
		s.gs = make([]devGroup, 0, len(sr.Groups))
	}
	s.gs = s.gs[:len(sr.Groups)]
	s.tabs = s.tb[:0]
	lanes := s.multi || p.deadness
	ar := p.arena()
	streams := s.sb[:0]
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
			t := &devTab{} // on lanes, a GPU's identity only: each lane has its own values
			if tab == 0 {
				t = &s.t0
			}
			if !lanes {
				t.vals, t.feeds = ar.valueTable(len(p.nodes)), ar.values(len(feeds))
			}
			s.tabs = append(s.tabs, t)
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
	g0 := &s.g0
	if lanes {
		if s.multi {
			s.ls = p.laneSched(sr)
		}
		s.lanes = make([]lane, len(s.gs))
		g0 = &s.lanes[0].gstep
	}
	*g0 = gstep{plan: p, dix: dix, rt: sr, keep: p.deadness,
		staged: make([]staged, len(p.fetches)), out: make([]*tensor.Tensor, len(p.fetches)),
		trace: opts.Trace, run: opts.Run}
	s.gstep = g0
	if sr.Jitter > 0 {
		s.jit = rand.New(rand.NewSource(time.Now().UnixNano() + opts.Run))
	}
	s.ar = ar
	s.events = s.ar.events()
	s.pinned = s.ar.pins[:0]
	s.mem = s.ar.tracker(sr.Holder, streams)
	s.mem.hold = s.holdOn
	s.held = s.ar.heldList(len(streams))
	if s.lanes != nil {
		s.newLanes(feeds)
	} else {
		for _, t := range s.tabs {
			for k, f := range feeds {
				t.feeds[k].host = f
			}
		}
	}
	if !lanes {
		s.setTables()
	}
	if s.trace && !s.multi {
		// Device times need one context's anchor; without it (or with
		// several groups) the step keeps only its launch windows.
		s.anchor, s.anchorHost, _ = traceAnchor(home.c)
	}

	s.ctx = ctx
	err := launchAndWait(ctx, s.launcher(), "device step", home.g.Device.Name(), s)
	s.freeHeld()
	if s.lanes != nil {
		s.endLanes()
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
	s.ar.pins = s.pinned[:0]
	s.mem.drain()
	// Every event of the step has completed (the final event follows
	// them all, or the streams were synchronised).
	for _, e := range s.events {
		e.Release()
	}
	s.ar.keepEvents(s.events)
	var st *trace.Step
	if s.trace {
		s.deviceSlices(err == nil)
		st = s.tr.take(opts.Run, int(home.g.ID))
	}
	if err == nil {
		// Before the arena, and the tracker in it, goes to the next step.
		s.mem.mu.Lock()
		err = s.mem.err
		s.mem.mu.Unlock()
	}
	s.releaseLanes()
	s.ar.release()
	p.arenas.put(s.ar)
	if err != nil {
		return nil, st, err
	}
	return s.out, st, nil
}

// launchStep launches the step (stepLauncher): node by node on one
// group, through the frame driver, or on lanes.
func (s *devStep) launchStep() error {
	switch {
	case s.plan.deadness:
		return s.launchFrames(s.ctx)
	case s.lanes != nil:
		return s.launchLanes()
	}
	return s.launchNodes()
}

// finishStep is finishAll (stepLauncher).
func (s *devStep) finishStep() (device.Event, error) { return s.finishAll() }

// launcher is the pool a step launches from: the home group's launch
// pool, or nil, the Run's own goroutine, for a step that only enqueues
// work where the group lets the caller launch (groups.CallerLaunches:
// TF_GPU_THREAD_MODE global). A step with host kernels keeps to the pool,
// as the host executor hands its costly kernels to the inter-op pool.
func (s *devStep) launcher() groups.Pool {
	home := s.gs[0].g
	if home.CallerLaunches && s.plan.enqueues {
		return nil
	}
	return home.Launch
}

// groupOf is the index in gs of the group that runs plan node i.
func (s *devStep) groupOf(i int) int {
	if s.rt.Assign == nil {
		return 0
	}
	return s.rt.Assign[i]
}

// setTables makes the one group's step launch on its group and tables.
func (s *devStep) setTables() {
	ng := &s.gs[0]
	s.g, s.c, s.h, s.d, s.cix = ng.g, ng.c, ng.h, ng.d, 0
	s.vals, s.feeds = s.tabs[ng.tab].vals, s.tabs[ng.tab].feeds
}

// launchNodes enqueues a one-group step: the feeds, each node in
// topological order on the one compute stream, which orders them all (no
// waits to work out), then the fetches. A step over several groups runs
// on lanes instead (launchLanes).
func (s *devStep) launchNodes() error {
	start := time.Now()
	nodes := 0
	defer func() { s.gs[0].g.CountLaunch(time.Since(start), nodes) }()
	p := s.plan
	if err := s.launchFeeds(); err != nil {
		return err
	}
	first := time.Now()
	for _, i := range p.topo {
		if err := s.node(i); err != nil {
			return err
		}
		if p.nodes[i].where == onGPU {
			nodes++
		}
	}
	s.gs[0].g.CountNodeLaunch(time.Since(first))
	s.joined = true
	return s.launchFetches()
}

// holdOn frees b once an event recorded on each other stream that
// touched it has completed, each event from its stream's own context
// (the tracker's hold for a device step: a goroutine waits, so neither a
// host callback, which must not call CUDA as a stream-aware free does,
// nor the launching goroutine blocks). Over several groups the releasing
// compute stream (cur) is held on too: the tracker frees at once a
// buffer only it touched, which is safe only on the stream that
// allocated it, and a last read may have been on another group's
// stream.
//
// A stream's releases are gathered, holdBatch at a time, into one hold
// (s.held[cur]): one event per stream the batch's buffers touched rather
// than per buffer, each recorded when the batch is full, which follows
// every use of its buffers so far. On the H100's training example over
// four groups an event record and query per cross-stream buffer, each
// slower for the lanes calling the driver at once, were ~10% of the
// step's driver time. What is still gathered when the step's final
// event has completed is freed at once (freeHeld): the device has
// passed every use. The record comes from a pool and goes back once it
// has run, so a held buffer costs no allocation of the step's, and it
// keeps the chunks, not the buffers: those are the step's arena's,
// reused by the plan's next step while the holder may still wait.
func (s *devStep) holdOn(b *buffer, cur int) {
	if cur < 0 || cur >= len(s.held) {
		h := s.newHeld()
		h.add(b, cur)
		s.holdNow(h, cur)
		return
	}
	h := s.held[cur]
	if h == nil {
		h = s.newHeld()
		s.held[cur] = h
	}
	h.add(b, cur)
	if b.alloc != nil {
		h.bytes += b.alloc.ChunkSize(b.addr)
	}
	if len(h.chunks) == holdBatch || h.bytes >= holdBytes {
		s.held[cur] = nil
		s.holdNow(h, cur)
	}
}

// holdBatch is how many releases of a stream one hold gathers: enough
// to make its events rare, few enough that the memory it keeps from
// reuse for a while stays small next to the step's. holdBytes bounds
// the bytes a batch keeps the same way: a batch that reaches it is
// held at once, so a stream's pending releases never keep more than
// holdBytes plus one buffer from reuse (without it, a chain of 1 MiB
// buffers crossing four groups peaked at 32 MiB where one hold per
// buffer peaked at 5: TestHeldBatchPeak).
const (
	holdBatch = 8
	holdBytes = 1 << 20
)

func (s *devStep) newHeld() *heldFree {
	h := heldFrees.Get().(*heldFree)
	h.tr = s.mem
	h.chunks, h.users, h.own, h.bytes = h.cb[:0], h.ub[:0], h.ob[:0], 0
	return h
}

// holdNow hands h to the holder with an event on each stream it waits
// for.
func (s *devStep) holdNow(h *heldFree, cur int) {
	evs := h.eb[:0]
	hold := func(st device.Stream) {
		e, err := pooledEvent(st)
		if err == nil {
			if err = st.Record(e); err != nil {
				e.Release()
			}
		}
		if err != nil {
			st.Synchronize() // no event: the stream's own sync is the fallback
			return
		}
		evs = append(evs, e)
		h.own = append(h.own, e)
	}
	streams := s.mem.streams
	mine := cur < 0 || !s.multi // cur's own stream needs no event
	for _, u := range h.users {
		if streams[u] != nil {
			hold(streams[u])
			mine = mine || streams[u] == streams[cur]
		}
	}
	if !mine {
		hold(streams[cur])
	}
	s.rt.Holder.Hold(h.fn, evs)
}

// freeHeld frees what the step's streams gathered and did not hold yet,
// once the step's final event has completed (or its streams were
// synchronised): nothing on the device uses it any more.
func (s *devStep) freeHeld() {
	for k, h := range s.held {
		if h != nil {
			s.held[k] = nil
			h.run()
		}
	}
}

// heldFree is the frees of a hold, which wait for events that go back to
// their pool after it: one record, pooled, for what holdOn's closures
// and slices were.
type heldFree struct {
	tr     *tracker
	chunks []heldChunk
	bytes  uint64 // the chunks' sizes, for holdBytes
	// users are the step streams, other than the releasing one, that
	// touched a chunk: those the hold waits for.
	users []int
	fn    func() // run, bound once
	own   []device.PooledEvent
	cb    [holdBatch]heldChunk
	ub    [8]int
	ob    [8]device.PooledEvent
	eb    [8]device.Event
}

// heldChunk is a held buffer's chunk (its record may be gone by the
// time it is freed).
type heldChunk struct {
	alloc *bfc.Allocator
	addr  uint64
}

var heldFrees sync.Pool

func init() {
	heldFrees.New = func() any {
		h := &heldFree{}
		h.fn = h.run
		return h
	}
}

// add gathers b's chunk, released on stream cur, into h.
func (h *heldFree) add(b *buffer, cur int) {
	h.chunks = append(h.chunks, heldChunk{alloc: b.alloc, addr: b.addr})
	for _, u := range b.users {
		if u != cur && !slices.Contains(h.users, u) {
			h.users = append(h.users, u)
		}
	}
}

// run frees h's chunks, those of one allocator together (one call
// and, without stream caches, one lock).
func (h *heldFree) run() {
	var ab [holdBatch]uint64
	for i, c := range h.chunks {
		if c.alloc == nil {
			continue // freed with an earlier chunk of its allocator
		}
		addrs := append(ab[:0], c.addr)
		for j := i + 1; j < len(h.chunks); j++ {
			if d := &h.chunks[j]; d.alloc == c.alloc {
				addrs = append(addrs, d.addr)
				d.alloc = nil
			}
		}
		h.tr.freeChunks(c.alloc, addrs)
	}
	for _, e := range h.own {
		e.Release()
	}
	clear(h.cb[:])
	clear(h.ob[:])
	clear(h.eb[:])
	h.tr, h.chunks, h.users, h.own = nil, nil, nil, nil
	heldFrees.Put(h)
}

// finishAll records the final event after everything the step launched on
// any group, whatever the launch got to.
func (s *devStep) finishAll() (device.Event, error) {
	if s.lanes != nil {
		return s.finishLanes()
	}
	if !s.joined {
		s.dirty = true // a failed launch: the final event follows whatever it got to
	}
	return s.finish()
}

// finishLanes is finishAll on lanes, which have all returned: unless the
// launch joined them, the home compute stream waits for every other
// group's.
func (s *devStep) finishLanes() (device.Event, error) {
	home := &s.lanes[0]
	if s.joined {
		return home.finish()
	}
	home.dirty = true
	var jerr error
	for k := 1; k < len(s.lanes); k++ {
		if err := home.order(home.c, s.lanes[k].c); err != nil {
			s.lanes[k].c.Synchronize() // no event: the host waits instead
			if jerr == nil {
				jerr = status.Wrap(err, "joining group %d of %s into the home group", s.gs[k].g.Index, s.gs[k].g.Device.Name())
			}
		}
	}
	fin, err := home.finish()
	if err == nil {
		err = jerr
	}
	return fin, err
}
