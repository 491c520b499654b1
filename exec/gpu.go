package exec

import (
	"context"
	"math/rand"
	"runtime/debug"
	"sync"
	"time"

	"mstream/device"
	"mstream/graph"
	"mstream/groups"
	"mstream/hostmem"
	"mstream/kernels"
	"mstream/status"
	"mstream/tensor"
	"mstream/trace"
)

// gval is one value of a GPU step: its host tensor, its device tensor, or
// both (a value copied across). A device value made on the H2D stream is
// ready for the compute stream once it waits on the step's feed event.
type gval struct {
	host *tensor.Tensor
	dev  *tensor.Tensor
}

// constCache is a Const's host value, computed once per plan.
type constCache struct {
	once sync.Once
	t    *tensor.Tensor
	err  error
}

// gstep is the launcher of a device step on one group (one group's step
// and a capture run one alone; over several groups, or with frames, each
// lane is one). A gstep launches from one goroutine, in topological
// order (with frames, in the order the frame driver makes nodes ready),
// so its state needs no lock; the streams order the device work. What lanes share (the tracker, the trace's merge,
// laneSync) has its own lock.
type gstep struct {
	plan     *Plan
	rt       *Runtime
	g        *groups.Group
	c, h, d  device.Stream
	cix, dix int // the compute and D2H streams' indices in mem.streams
	mem      *tracker
	kstep    kernels.Step  // the step's temporary variables
	kst      *kernels.Step // a lane's: the home lane's kstep (nil: kstep)
	vals     [][]gval
	feeds    []gval
	events   []device.PooledEvent // released after the final event
	pinned   []uint64             // host staging from g.HostAlloc, freed after it
	staged   []staged
	out      []*tensor.Tensor

	// dirty says compute has work the D2H stream has not been ordered
	// after; outD that the fetches went out on the D2H stream (else the
	// final event goes on compute, which then follows everything).
	dirty bool
	outD  bool

	trace bool
	tr    traceBuf
	// sid, when positive, is one more than the trace ID of the next
	// launch window (a lane's, numbered as the one-launcher order would).
	sid int
	// Traced steps: the context's timing anchor and the device work
	// measured against it (gpu_trace.go).
	anchor     device.Event
	anchorHost time.Time
	marks      []devMark
	timing     []timingEvent
	run        int64

	// jit picks the sanitizer's delays (Runtime.Jitter); nil: off.
	jit *rand.Rand

	// ar holds the per-node records; ga is the allocator of the kernel
	// being launched and alloc its allocate, bound once per step.
	ar    *arena
	ga    gpuAlloc
	alloc func(tensor.DType, tensor.Shape) (*tensor.Tensor, error)

	// keep holds every device buffer until the step ends (a step with
	// frames: a loop's values are read a number of times the plan's
	// static use counts cannot know).
	keep bool

	// capt is set while the step is captured into a CUDA graph
	// (gpu_graph.go): its buffers are owned by the graph instead of being
	// freed, and host values reach the device through the graph's pinned
	// staging.
	capt *graphInst
}

// launchAndWait runs launch on one goroutine of pool (the group's launch
// pool; nil: the caller's goroutine, devStep.launcher), then finish,
// whatever launch did: the final event finish records follows everything
// launched, so nothing goes back to an allocator while a stream may still
// use it. A panic in launch becomes INTERNAL naming what. The caller
// waits for the final event; if ctx is cancelled meanwhile, the device
// work (which cannot be taken back) is still waited for, and the step
// reports CANCELLED. The first error wins.
func launchAndWait(ctx context.Context, pool groups.Pool, what, dev string, st stepLauncher) error {
	var l launched
	if pool == nil {
		l = launchOnce(what, st)
	} else {
		ch := make(chan launched, 1)
		pool.Submit(func() { ch <- launchOnce(what, st) })
		l = <-ch
	}
	err := l.err
	if l.final == nil {
		return err
	}
	wrap := func(werr error) {
		if err == nil && werr != nil {
			err = status.Wrap(werr, "waiting for the step's final event on %s", dev)
		}
	}
	if ctx.Done() == nil {
		wrap(l.final.Synchronize())
		return err
	}
	waited := make(chan error, 1)
	go func() { waited <- l.final.Synchronize() }()
	select {
	case werr := <-waited:
		wrap(werr)
	case <-ctx.Done():
		<-waited
		if err == nil {
			err = status.Errorf(status.Cancelled, "step cancelled: %v", ctx.Err())
		}
	}
	return err
}

// launched is what a step's launch left: the final event (nil: none
// recorded) and the first error.
type launched struct {
	final device.Event
	err   error
}

// stepLauncher is a step launchAndWait runs: launchStep enqueues it,
// finishStep records the final event after whatever launchStep
// enqueued. (An interface rather than two method values, which would
// cost two allocations a step.)
type stepLauncher interface {
	launchStep() error
	finishStep() (device.Event, error)
}

// launchOnce runs st's launch, then its finish whatever launch did, a
// panic in launch becoming INTERNAL naming what.
func launchOnce(what string, st stepLauncher) (l launched) {
	defer func() {
		if r := recover(); r != nil {
			l.err = status.Errorf(status.Internal, "%s panicked: %v\n%s", what, r, debug.Stack())
		}
		fin, err := st.finishStep()
		if l.err == nil {
			l.err = err
		}
		l.final = fin
	}()
	l.err = st.launchStep()
	return l
}

// asyncStreams checks that g's streams are those of an asynchronous
// device (a GPU): the device step needs pooled events from them.
func asyncStreams(g *groups.Group) error {
	for _, st := range []device.Stream{g.Compute, g.H2D, g.D2H} {
		if _, ok := st.(device.EventPool); !ok {
			return status.Errorf(status.Internal, "group %d of %s: stream %d (%T) has no event pool, which a device step needs", g.ID, g.Device.Name(), st.ID(), st)
		}
	}
	return nil
}

// pooledEvent takes an event of st's context from the device's pool
// (creating and destroying device events costs microseconds, and a step
// needs several); it goes back with Release once it has completed.
func pooledEvent(st device.Stream) (device.PooledEvent, error) {
	p, ok := st.(device.EventPool)
	if !ok {
		return nil, status.Errorf(status.Internal, "stream %d (%T) has no event pool", st.ID(), st)
	}
	return p.PooledEvent()
}

// event records an event on st.
func (s *gstep) event(st device.Stream) (device.Event, error) {
	e, err := pooledEvent(st)
	if err != nil {
		return nil, err
	}
	s.events = append(s.events, e)
	return e, st.Record(e)
}

// order makes stream to wait for the work enqueued on from so far.
func (s *gstep) order(to, from device.Stream) error {
	if to == from {
		return nil
	}
	if to == s.d && from == s.c {
		s.dirty = false
	}
	e, err := s.event(from)
	if err != nil {
		return err
	}
	return to.Wait(e)
}

// launchFeeds copies the feeds GPU kernels read into device memory,
// through pinned staging from the group's host allocator, on the compute
// stream. Not on the H2D stream: the feeds' memory may have been freed in
// compute's order a moment ago, so a copy there would first wait for
// everything compute was given (TF's CopyCPUTensorToGPU waits the same
// way) and compute would then wait for the copy: the same order as the
// copy on compute itself, at the cost of two events and two stream waits
// a step (about 3 us of the host's time on the H100: TestGPULaunchCost).
func (s *gstep) launchFeeds() error {
	p, g := s.plan, s.g
	type up struct {
		k    int
		addr uint64
		hbuf []byte
	}
	var ub [4]up // on the stack: a step's feed copies cost no allocation
	ups := ub[:0]
	packed := false
	if addr, hbuf, ok := s.packFeeds(); ok {
		ups, packed = append(ups, up{-1, addr, hbuf}), true // feed_pack.go
	}
	for k, f := range p.feedDev {
		if !f || packed {
			continue
		}
		t := s.feeds[k].host
		size := uint64(len(t.Buf))
		addr, err := g.Alloc.Allocate(size, s.allocStream())
		if err != nil {
			return status.Errorf(status.CodeOf(err), "feed '%s' (%v%v): %v", p.feeds[k], t.DType, t.Shape, err)
		}
		// The records are the arena's, as a kernel's outputs' are.
		dt := s.ar.tensor()
		*dt = tensor.Tensor{DType: t.DType, Shape: s.ar.shape(t.Shape), Buf: hostmem.DeviceBytes(addr, int(max(size, 1)))[:size]}
		refs := p.feedUses[k]
		if s.keep {
			refs = 1 << 30
		}
		b := s.ar.buffer()
		*b = buffer{addr: addr, alloc: g.Alloc, refs: refs}
		b.use(s.cix)
		s.track(dt, b)
		s.feeds[k].dev = dt
		if size == 0 {
			continue
		}
		haddr, err := g.HostAlloc.Allocate(size, nil)
		if err != nil {
			return status.Errorf(status.CodeOf(err), "feed '%s' (%v%v): pinned staging: %v", p.feeds[k], t.DType, t.Shape, err)
		}
		s.pinned = append(s.pinned, haddr)
		hbuf := g.Device.HostMemory().Bytes(haddr, size)
		copy(hbuf, t.Buf)
		ups = append(ups, up{k, addr, hbuf})
	}
	if len(ups) == 0 {
		return nil
	}
	var start time.Time
	if s.trace {
		start = time.Now()
	}
	if err := s.delay(s.c); err != nil {
		return err
	}
	unlock := s.lockTrace(s.c)
	before := s.mark(s.c)
	for _, u := range ups {
		if err := s.c.CopyH2D(u.addr, u.hbuf); err != nil {
			unlock()
			if u.k < 0 {
				return status.Wrap(err, "feeds: one copy of %d bytes to %s", len(u.hbuf), s.g.Device.Name())
			}
			return status.Wrap(err, "feed '%s': copy to %s", s.plan.feeds[u.k], s.g.Device.Name())
		}
	}
	if s.trace {
		s.slice("feeds", "MEMCPYHtoD", trace.H2D, "h2d", start, 0)
		s.devSlice("feeds", "MEMCPYHtoD", trace.H2D, "h2d", s.c, before, s.mark(s.c), 0)
	}
	unlock()
	s.dirty = true
	return nil
}

// allocStream is the stream a stream-aware allocator is told: the group's
// compute stream, also while capturing (a graph replays there, never on
// the private capture stream).
func (s *gstep) allocStream() device.Stream {
	if s.g.StreamAware {
		return s.g.Compute
	}
	return nil
}

// track registers a new step buffer with the tracker, or, while
// capturing, makes it the graph's for the graph's lifetime (the tracker
// never sees it, so nothing frees it).
func (s *gstep) track(t *tensor.Tensor, b *buffer) {
	if s.capt != nil {
		s.capt.own(b.alloc, b.addr)
		return
	}
	s.mem.add(t, b)
}

// value is input r of a node.
func (s *gstep) value(r ref) *gval {
	if r.Node < 0 {
		return &s.feeds[r.Index]
	}
	return &s.vals[r.Node][r.Index]
}

// hostOf returns v's host tensor, copying it back from the device (and
// waiting for the copy) the first time a host kernel needs it.
func (s *gstep) hostOf(v *gval, what inName) (*tensor.Tensor, error) {
	if v.host != nil {
		return v.host, nil
	}
	if s.capt != nil {
		// graphIneligible keeps such plans off graphs; this is the guard.
		return nil, status.Errorf(status.Unimplemented, "%s: a device value read on the host cannot be captured", what)
	}
	t := v.dev
	out := tensor.New(t.DType, t.Shape)
	if len(out.Buf) > 0 {
		if err := s.c.CopyD2H(out.Buf, hostmem.DeviceAddr(t.Buf)); err != nil {
			return nil, status.Wrap(err, "%s: copy to the host", what)
		}
	}
	// Waited for even with nothing copied: a host copy is complete after
	// the launch that made the value (the frames path's readers of it
	// wait for no more, fval.after).
	e, err := s.event(s.c)
	if err == nil {
		err = e.Synchronize()
	}
	if err != nil {
		return nil, status.Wrap(err, "%s: waiting for the copy to the host", what)
	}
	v.host = out
	return out, nil
}

// devOf returns v's device tensor, copying a host value in on the compute
// stream the first time a GPU kernel needs it (a constant comes from the
// group's constant store). The copy stages the source inside the call, so
// the host tensor is free on return.
func (s *gstep) devOf(v *gval, r ref, what inName) (*tensor.Tensor, error) {
	if v.dev != nil {
		return v.dev, nil
	}
	if r.Node >= 0 && s.plan.nodes[r.Node].where == onConst {
		k, err := gpuConstant(s.g, &s.plan.nodes[r.Node], v.host)
		if err != nil {
			return nil, err
		}
		v.dev = k.Value
		return v.dev, nil
	}
	t := v.host
	size := uint64(len(t.Buf))
	addr, err := s.g.Alloc.Allocate(size, s.allocStream())
	if err != nil {
		return nil, status.Errorf(status.CodeOf(err), "%s (%v%v): copy to %s: %v", what, t.DType, t.Shape, s.g.Device.Name(), err)
	}
	dt := &tensor.Tensor{DType: t.DType, Shape: t.Shape.Clone(), Buf: hostmem.DeviceBytes(addr, int(max(size, 1)))[:size]}
	// Held until the step ends: its readers are counted on the host value.
	s.track(dt, &buffer{addr: addr, alloc: s.g.Alloc, refs: 1 << 30, users: []int{s.cix}})
	if size > 0 {
		s.dirty = true
		src := t.Buf
		if s.capt != nil {
			// The graph copies from pinned memory it owns: a staged copy's
			// buffer would be gone by the replay.
			if src, err = s.capt.pinned(s.g, size); err != nil {
				return nil, status.Errorf(status.CodeOf(err), "%s: pinned staging: %v", what, err)
			}
			copy(src, t.Buf)
		}
		if err := s.delay(s.c); err != nil {
			return nil, err
		}
		if err := s.c.CopyH2D(addr, src); err != nil {
			return nil, status.Wrap(err, "%s: copy to %s", what, s.g.Device.Name())
		}
	}
	v.dev = dt
	return dt, nil
}

// node launches (GPU) or runs (host) plan node i on the plan's values.
func (s *gstep) node(i int) error {
	vs, err := s.nodeOn(i, nil)
	if err != nil {
		return err
	}
	s.vals[i] = vs
	return nil
}

// nodeOn launches (GPU) or runs (host) plan node i and returns its
// values: its inputs are the plan's values, or, from the frame driver,
// fins (one per input, the value of the node's frame and iteration).
func (s *gstep) nodeOn(i int, fins []*gval) ([]gval, error) {
	pn := &s.plan.nodes[i]
	n := pn.node
	if pn.where == onConst {
		t, err := constHost(pn)
		if err != nil {
			return nil, err
		}
		return []gval{{host: t}}, nil
	}
	var start time.Time
	if s.trace {
		start = time.Now()
	}
	ins := s.ar.tensors(len(pn.inputs))
	devIns := s.ar.tensors(len(pn.inputs))[:0]
	var host0 *tensor.Tensor // input 0's host copy, for a forwarding kernel
	for j, r := range pn.inputs {
		var v *gval
		if fins != nil {
			v = fins[j]
		} else {
			v = s.value(r)
		}
		if j == 0 {
			host0 = v.host
		}
		what := inName{n: n, j: j}
		var err error
		wants, may := pn.wantsDevice(j)
		switch {
		case wants:
			ins[j], err = s.devOf(v, r, what)
		case may && v.host == nil:
			ins[j] = v.dev // only its shape is read
		default:
			ins[j], err = s.hostOf(v, what)
		}
		if err != nil {
			return nil, err
		}
		if v.dev != nil {
			devIns = append(devIns, v.dev)
		}
	}
	if pn.where != onGPU {
		ks := s.kst
		if ks == nil {
			ks = &s.kstep
		}
		k := kernelCall{step: ks}
		outs, err := k.run(pn, ins, s.rt.Intra)
		if err != nil {
			return nil, err
		}
		vs := s.ar.values(len(outs))
		for j, t := range outs {
			vs[j].host = t
		}
		s.mem.retire(nil, nil, devIns, nil, s.cix)
		if s.trace {
			s.slice(n.Name, n.Op, trace.Kernel, "host", start, 0)
		}
		return vs, nil
	}
	if err := s.delay(s.c); err != nil {
		return nil, err
	}
	a := &s.ga
	a.reset(s)
	if s.alloc == nil {
		s.alloc = a.allocate
	}
	kc := s.ar.context()
	*kc = kernels.Context{Node: n, Inputs: ins, Outputs: s.ar.tensors(len(n.OutTypes)),
		Pool: kernels.Serial{}, Alloc: s.alloc, Stream: s.c, Persist: a}
	unlock := s.lockTrace(s.c)
	before := s.mark(s.c)
	err := s.compute(pn, kc)
	after := s.mark(s.c)
	unlock()
	if err != nil {
		s.mem.retireAdopt(nil, nil, nil, a.fresh, s.cix, s.capt == nil)
		return nil, err
	}
	vs := s.ar.values(len(kc.Outputs))
	for j, t := range kc.Outputs {
		vs[j].dev = t
	}
	if pn.fwd {
		vs[0].host = forwardHost(host0, vs[0].dev)
	}
	uses := pn.uses
	if s.keep {
		uses = keepUses(len(uses))
	}
	s.mem.retireAdopt(kc.Outputs, uses, devIns, a.fresh, s.cix, s.capt == nil)
	if s.trace {
		s.slice(n.Name, n.Op, trace.Kernel, "compute", start, a.bytes)
		s.devSlice(n.Name, n.Op, trace.Kernel, "compute", s.c, before, after, a.bytes)
	}
	return vs, nil
}

// compute calls a GPU kernel on the launching goroutine (it enqueues on
// kc.Stream and returns), turning a panic into INTERNAL naming the node.
func (s *gstep) compute(pn *planNode, kc *kernels.Context) (err error) {
	n := pn.node
	defer func() {
		if r := recover(); r != nil {
			err = status.Errorf(status.Internal, "node '%s' (op %s) on %s panicked: %v\n%s", n.Name, n.Op, s.g.Device.Name(), r, debug.Stack())
		}
	}()
	s.dirty = true
	if err := pn.kernel.Compute(kc); err != nil {
		if status.CodeOf(err) == status.Unknown {
			err = status.Errorf(status.Internal, "node '%s' (op %s): %v", n.Name, n.Op, err)
		}
		return status.Wrap(err, "on %s", s.g.Device.Name())
	}
	for j, t := range kc.Outputs {
		if t == nil {
			return status.Errorf(status.Internal, "node '%s' (op %s) did not set output %d", n.Name, n.Op, j)
		}
		if t.DType != n.OutTypes[j] {
			return status.Errorf(status.Internal, "node '%s' (op %s) produced %v for output %d, declared %v", n.Name, n.Op, t.DType, j, n.OutTypes[j])
		}
	}
	return nil
}

// launchFetches copies the fetched device values out into pinned
// staging; host values are cloned at once. Up to fetchOnCompute bytes in
// all are copied on the compute stream, which already follows the step's
// kernels; more go on the D2H stream after one wait for compute, so a
// large copy does not hold up the next step's kernels on compute. The
// small copy's few microseconds on compute cost less than the D2H
// stream's event, wait and second final record, ~2 us of the host's time
// a step on the H100 (TestGPULaunchCost: a B=1 MLP fetches 4 bytes).
func (s *gstep) launchFetches() error {
	p, g := s.plan, s.g
	var total uint64
	n := 0
	for _, r := range p.fetches {
		if v := s.value(r); v.dev != nil && v.host == nil && len(v.dev.Buf) > 0 {
			total += uint64(len(v.dev.Buf))
			n++
		}
	}
	out := s.d
	if total <= fetchOnCompute {
		out = s.c
	}
	ordered := false
	var before device.Event
	unlock := func() {}
	defer func() { unlock() }()
	var start time.Time
	if s.trace {
		start = time.Now()
	}
	// A traced step packs only on compute, whose trace lock and marks
	// then cover the pack and the copy together.
	if n >= packMin && (!s.trace || out == s.c) {
		unlock = s.lockTrace(out)
		before = s.mark(out)
		packed, err := s.packFetches(out, n) // fetch_pack.go
		if err != nil {
			return err
		}
		if !packed {
			unlock()
			unlock = func() {}
		}
		ordered = packed
	}
	for k, r := range p.fetches {
		v := s.value(r)
		if v.dev == nil || v.host != nil {
			s.out[k] = v.host.Clone()
			if v.dev != nil {
				s.mem.unrefOn(v.dev, s.cix, s.cix)
			}
			continue
		}
		t := v.dev
		size := uint64(len(t.Buf))
		if size == 0 {
			s.out[k] = tensor.New(t.DType, t.Shape)
			s.mem.unrefOn(t, s.cix, s.cix)
			continue
		}
		if s.staged[k].buf != nil {
			continue // packed
		}
		if !ordered {
			// One wait covers every fetch: all kernels are enqueued.
			if err := s.order(out, s.c); err != nil {
				return status.Wrap(err, "fetches: ordering the D2H stream after compute")
			}
			ordered = true
			s.outD = out == s.d && s.d != s.c
			if err := s.delay(out); err != nil {
				return err
			}
			unlock = s.lockTrace(out)
			before = s.mark(out)
		}
		haddr, err := g.HostAlloc.Allocate(size, nil)
		if err != nil {
			return status.Errorf(status.CodeOf(err), "fetch '%s' (%v%v): pinned staging: %v", fetchName(p, k), t.DType, t.Shape, err)
		}
		s.pinned = append(s.pinned, haddr)
		buf := g.Device.HostMemory().Bytes(haddr, size)
		if err := out.CopyD2H(buf, hostmem.DeviceAddr(t.Buf)); err != nil {
			return status.Wrap(err, "fetch '%s': copy from %s", fetchName(p, k), g.Device.Name())
		}
		s.staged[k] = staged{buf: buf, dt: t.DType, shape: t.Shape.Clone()}
		// The buffer stays held to the step's end (the tracker's drain,
		// after the final event, which follows this copy): freeing it
		// after the copy would cost an event on the copy's stream and a
		// waiter per fetch, to free it a moment sooner.
	}
	if s.trace && ordered {
		s.slice("fetches", "MEMCPYDtoH", trace.D2H, "d2h", start, 0)
		s.devSlice("fetches", "MEMCPYDtoH", trace.D2H, "d2h", out, before, s.mark(out), 0)
	}
	return nil
}

// fetchOnCompute is how many bytes of fetches in all a step copies out on
// its compute stream rather than the D2H stream: 64 KiB take a few
// microseconds of the copy engine.
const fetchOnCompute = 64 << 10

// finish records the final event after everything the step enqueued:
// on the compute stream, or, when the fetches went out on the D2H
// stream, there after everything compute was given.
func (s *gstep) finish() (device.Event, error) {
	if !s.outD {
		e, err := s.event(s.c)
		if err != nil {
			s.c.Synchronize()
			return nil, status.Wrap(err, "final event")
		}
		return e, nil
	}
	if !s.dirty {
		// D2H already follows everything compute was given.
	} else if err := s.order(s.d, s.c); err != nil {
		s.c.Synchronize()
		return nil, status.Wrap(err, "final event")
	}
	e, err := s.event(s.d)
	if err != nil {
		s.c.Synchronize()
		s.d.Synchronize()
		return nil, status.Wrap(err, "final event")
	}
	return e, nil
}

// slice records a launch window measured on the host: when the host
// enqueued each kernel or copy, on the group's launch lane (Stream -1),
// where runs of the group may overlap. The device times of the same work
// are slices on the streams' own tracks (gpu_trace.go).
func (s *gstep) slice(name, op, kind, role string, start time.Time, bytes int64) {
	s.tr.mu.Lock()
	id := len(s.tr.slices)
	if s.sid > 0 {
		id = s.sid - 1
	}
	s.tr.slices = append(s.tr.slices, trace.Slice{ID: id, Name: name, Op: op, Kind: kind,
		Device: s.g.Device.Name(), Group: int(s.g.ID), Stream: -1, Role: "launch:" + role,
		Start: start, End: time.Now(), Bytes: bytes, Allocator: s.g.Alloc.Name()})
	s.tr.mu.Unlock()
}

// gpuAlloc gives a GPU kernel its outputs from the group's allocator. A
// step has one, reset for each node it launches (kernels are called one
// at a time and allocate only inside Compute).
type gpuAlloc struct {
	s     *gstep
	fresh []*buffer
	bytes int64
}

func (a *gpuAlloc) reset(s *gstep) {
	clear(a.fresh)
	a.s, a.fresh, a.bytes = s, a.fresh[:0], 0
}

func (a *gpuAlloc) allocate(dt tensor.DType, shape tensor.Shape) (*tensor.Tensor, error) {
	g := a.s.g
	size := uint64(shape.NumElements()) * uint64(dt.Size())
	addr, err := g.Alloc.Allocate(size, a.s.allocStream())
	if err != nil {
		return nil, err
	}
	// The tensor is the record's own (one arena slot for both). A
	// zero-size tensor keeps its chunk's address (capacity 1), so the
	// tracker can key on it; kernels see length 0.
	b := a.s.ar.buffer()
	*b = buffer{addr: addr, alloc: g.Alloc}
	t := b.t.Tensor()
	*t = tensor.Tensor{DType: dt, Shape: a.s.ar.shape(shape), Buf: hostmem.DeviceBytes(addr, int(max(size, 1)))[:size]}
	if a.s.capt != nil {
		a.s.capt.own(b.alloc, b.addr)
	} else {
		b.k = key(t) // the tracker registers it as the node retires
	}
	a.fresh = append(a.fresh, b)
	a.bytes += int64(size)
	return t, nil
}

// Owner implements kernels.Persist: the group's device, shared by every
// group and context of it.
func (a *gpuAlloc) Owner() any { return a.s.g.Device }

// Keep implements kernels.Persist: a chunk of the group's allocator that
// the step does not track (a variable's value, freed by its owner).
func (a *gpuAlloc) Keep(dt tensor.DType, shape tensor.Shape) (*tensor.Tensor, func(), error) {
	g := a.s.g
	size := uint64(shape.NumElements()) * uint64(dt.Size())
	addr, err := g.Alloc.Allocate(size, a.s.allocStream())
	if err != nil {
		return nil, nil, err
	}
	t := &tensor.Tensor{DType: dt, Shape: shape.Clone(), Buf: hostmem.DeviceBytes(addr, int(max(size, 1)))[:size]}
	return t, func() { g.Alloc.Free(addr) }, nil
}

// constHost is a Const's host value, computed once per plan.
func constHost(pn *planNode) (*tensor.Tensor, error) {
	cc := pn.cval
	cc.once.Do(func() {
		var k kernelCall
		outs, err := k.run(pn, nil, kernels.Serial{})
		if err != nil {
			cc.err = err
			return
		}
		cc.t = outs[0]
	})
	return cc.t, cc.err
}

// gpuConstant returns a Const's device copy from g's store, uploading it on
// the H2D stream on first use and waiting for that copy (the one-time
// upload TF's constant kernels also do).
func gpuConstant(g *groups.Group, pn *planNode, v *tensor.Tensor) (*groups.Const, error) {
	return g.Consts.Get(pn.node, func() (*groups.Const, error) {
		name := pn.node.Name
		size := uint64(len(v.Buf))
		var as device.Stream
		if g.StreamAware {
			as = g.Compute
		}
		addr, err := g.Alloc.Allocate(size, as)
		if err != nil {
			return nil, status.Errorf(status.CodeOf(err), "node '%s' (op Const): constant %v%v on %s: %v", name, v.DType, v.Shape, g.Device.Name(), err)
		}
		if size > 0 {
			c, h := g.Compute, g.H2D
			// The chunk may have been used on compute just before.
			var err error
			if h != c {
				var e device.PooledEvent
				if e, err = pooledEvent(c); err == nil {
					if err = c.Record(e); err == nil {
						err = h.Wait(e)
					}
					defer e.Release() // after h's sync below, or never recorded
				}
			}
			if err == nil {
				err = h.CopyH2D(addr, v.Buf)
			}
			if err == nil {
				err = h.Synchronize()
			}
			if err != nil {
				g.Alloc.Free(addr)
				return nil, status.Wrap(err, "node '%s' (op Const): upload to %s", name, g.Device.Name())
			}
		}
		dt := &tensor.Tensor{DType: v.DType, Shape: v.Shape.Clone(), Buf: hostmem.DeviceBytes(addr, int(max(size, 1)))[:size]}
		return &groups.Const{Value: dt, Addr: addr, Bytes: int64(g.Alloc.ChunkSize(addr)), Alloc: g.Alloc}, nil
	})
}

// delay is the stream sanitizer on a device (Runtime.Jitter): one
// item in four that the step puts on st is preceded by a delay of random
// length, up to Jitter, in st's own order (device.Delayer: a spin kernel
// on a GPU), so work on other streams overtakes it and a missing wait
// reads a value before it is written. A stream without Delayer (the host
// device's, which pauses by itself) gets none.
func (s *gstep) delay(st device.Stream) error {
	if s.jit == nil || s.capt != nil || s.jit.Intn(4) != 0 {
		return nil
	}
	d, ok := st.(device.Delayer)
	if !ok {
		return nil
	}
	if err := d.Delay(time.Duration(s.jit.Int63n(int64(s.rt.Jitter)))); err != nil {
		return status.Wrap(err, "stream %d of %s", st.ID(), s.g.Device.Name())
	}
	return nil
}

// inName names input j of node n (and what more, note) in an error, or,
// with n nil, fetch j of plan p; the string is formed only when an error
// needs it.
type inName struct {
	n    *graph.Node
	j    int
	note string
	p    *Plan
}

func (w inName) String() string {
	if w.n == nil {
		return "fetch '" + fetchName(w.p, w.j) + "'"
	}
	return "node '" + w.n.Name + "' input " + itoa(w.j) + w.note
}

// keepUses is a use count per output that never runs out: the buffers of
// a step with frames are freed when it ends.
func keepUses(n int) []int32 {
	u := make([]int32, n)
	for j := range u {
		u[j] = 1 << 30
	}
	return u
}

func itoa(i int) string {
	if i < 10 {
		return string(rune('0' + i))
	}
	return itoa(i/10) + string(rune('0'+i%10))
}
