package exec

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"
	"sync/atomic"

	"mstream/bfc"
	"mstream/device"
	"mstream/groups"
	"mstream/hostmem"
	"mstream/kernels"
	"mstream/status"
	"mstream/tensor"
)

// Bounds of a GraphCache. A key is (plan, group, feed dtypes and shapes).
const (
	// graphWarmup is how many ordinary runs of a key come before its
	// capture: kernels are compiled and loaded, constants uploaded and
	// cuBLASLt plans made outside the capture.
	graphWarmup = 1
	// graphKeysPerGroup bounds the keys of one plan on one group, so shape
	// churn cannot fill memory with graphs: the least recently used idle
	// key goes when a new one comes.
	graphKeysPerGroup = 4
	// graphInstances bounds the instances of one key: a replay holds its
	// instance (pinned staging, device buffers) until its final event, so
	// concurrent runs of a key need an instance each (a group serves
	// several runs at once, as many as clients pick it); past the bound
	// they run the ordinary way.
	graphInstances = 4
)

// GraphCache replays GPU steps as CUDA graphs (MSTREAM_CUDA_GRAPH). A
// session owns one; Close releases every graph and buffer it holds.
//
// A step is captured once per key, after graphWarmup ordinary runs, on a
// private stream of its group (nothing else enqueues there, so the
// capture holds this step's work only). The capture is an ordinary
// gstep with c = h = d = that stream and capt set: every device buffer it
// allocates, and pinned staging for the feeds, the fetches and host
// values copied in, becomes the graph instance's until it is destroyed,
// since a replay reuses the addresses. A replay copies the feeds into the
// instance's pinned staging, launches the graph on the group's compute
// stream (so it is ordered after the memory the group freed in compute
// order before the capture allocated it), waits for one event, and copies
// the fetches out of the pinned output staging.
//
// Lock order: GraphCache.mu, then nothing (capture and replay run
// without it; an instance is marked busy under it). capStream.mu
// serialises captures on one group's capture stream.
type GraphCache struct {
	log func(format string, args ...any)

	mu     sync.Mutex
	plans  map[*Plan]*planGraphs
	capS   map[*groups.Group]*capStream
	closed bool
	tick   int64

	replays, captures, failures, fallbacks atomic.Int64
}

// GraphStats counts a GraphCache's work, for MS_SessionStats.
type GraphStats struct {
	Replays  int64 `json:"replays"`
	Captures int64 `json:"captures"`
	// Failures counts captures that failed (the key then runs the
	// ordinary way); Fallbacks counts steps of eligible plans that ran
	// the ordinary way (warm-up, every instance busy, a failed key).
	Failures  int64 `json:"failures"`
	Fallbacks int64 `json:"fallbacks"`
	// Live is the number of graph instances held now; Ineligible the
	// plans that cannot be captured.
	Live       int `json:"live"`
	Ineligible int `json:"ineligible_plans"`
	// DeviceBytes and PinnedBytes are what the live instances hold of
	// the groups' device and pinned host allocators (their chunks, which
	// those allocators' bytes_in_use include).
	DeviceBytes uint64 `json:"device_bytes"`
	PinnedBytes uint64 `json:"pinned_bytes"`
}

type planGraphs struct {
	why    string // why the plan cannot be captured; "" when it can
	keys   map[graphKey]*graphEntry
	logged bool // a failed capture of the plan was logged
	// dropped: the session dropped the plan (Drop); an instance a step
	// still replays, or captures, is destroyed when that step is done.
	dropped bool
}

type graphKey struct {
	g      *groups.Group
	shapes string
}

type graphEntry struct {
	pg        *planGraphs
	seen      int
	bad       string // why its capture failed
	insts     []*graphInst
	capturing int
	used      int64
}

// capStream is a group's private capture stream. Its cuBLAS workspace is
// baked into the graphs captured on it, so it lives until they are gone.
type capStream struct {
	mu sync.Mutex
	s  device.Stream
}

// graphInst is one instantiated graph and everything its nodes address.
type graphInst struct {
	g    *groups.Group
	exec device.GraphExec
	busy bool // guarded by GraphCache.mu

	feedIn []([]byte) // per feed: its pinned staging, nil if no GPU kernel reads it
	// feedAll is the pinned staging of every feed when they share one
	// block (feed_pack.go), copied to feedAddr in one copy; feedIn are
	// its parts.
	feedAll  []byte
	feedAddr uint64
	outs     []graphOut
	dev      []owned // device buffers of the group's allocator
	host     []owned // pinned buffers of the group's host allocator
}

type owned struct {
	alloc *bfc.Allocator
	addr  uint64
	size  uint64 // the chunk's bytes
}

const (
	outStaged = iota // copied from buf
	outFeed          // the feed itself
	outHost          // a host value fixed by the key (a constant, a shape)
)

type graphOut struct {
	kind  uint8
	buf   []byte
	dt    tensor.DType
	shape tensor.Shape
	feed  int
	host  *tensor.Tensor
}

// NewGraphCache makes an empty cache; log reports, once per plan or key,
// why a step runs without a graph.
func NewGraphCache(log func(format string, args ...any)) *GraphCache {
	if log == nil {
		log = func(string, ...any) {}
	}
	return &GraphCache{log: log, plans: map[*Plan]*planGraphs{}, capS: map[*groups.Group]*capStream{}}
}

// graphs is the cache a step may replay from: sr.Graphs when the step has
// one group, whose compute stream can capture. A step over several groups
// runs node by node.
func (sr *Runtime) graphs() *GraphCache {
	if sr.Graphs == nil || len(sr.Groups) != 1 {
		return nil
	}
	if _, ok := sr.Groups[0].Compute.(device.Capturer); !ok {
		return nil
	}
	return sr.Graphs
}

// Stats returns the counters and the instances held.
func (gc *GraphCache) Stats() GraphStats {
	st := GraphStats{Replays: gc.replays.Load(), Captures: gc.captures.Load(),
		Failures: gc.failures.Load(), Fallbacks: gc.fallbacks.Load()}
	gc.mu.Lock()
	for _, pg := range gc.plans {
		if pg.why != "" {
			st.Ineligible++
		}
		for _, e := range pg.keys {
			st.Live += len(e.insts)
			for _, gi := range e.insts {
				st.DeviceBytes += held(gi.dev, nil)
				st.PinnedBytes += held(gi.host, nil)
			}
		}
	}
	gc.mu.Unlock()
	return st
}

// Held returns the bytes of allocator a that live graph instances hold,
// so a caller can tell them from a leak.
func (gc *GraphCache) Held(a *bfc.Allocator) uint64 {
	gc.mu.Lock()
	defer gc.mu.Unlock()
	var n uint64
	for _, pg := range gc.plans {
		for _, e := range pg.keys {
			for _, gi := range e.insts {
				n += held(gi.dev, a) + held(gi.host, a)
			}
		}
	}
	return n
}

// held sums the chunks of buffers in os, only a's when a is set.
func held(os []owned, a *bfc.Allocator) uint64 {
	var n uint64
	for _, o := range os {
		if a == nil || o.alloc == a {
			n += o.size
		}
	}
	return n
}

// Close destroys every graph, frees its buffers and closes the capture
// streams. No step may be running (the session has waited for its runs);
// later steps run the ordinary way.
func (gc *GraphCache) Close() error {
	gc.mu.Lock()
	gc.closed = true
	var insts []*graphInst
	for _, pg := range gc.plans {
		for _, e := range pg.keys {
			insts = append(insts, e.insts...)
			e.insts = nil
		}
	}
	gc.plans = map[*Plan]*planGraphs{}
	caps := gc.capS
	gc.capS = map[*groups.Group]*capStream{}
	gc.mu.Unlock()
	var first error
	for _, gi := range insts {
		if err := gi.destroy(); err != nil && first == nil {
			first = err
		}
	}
	for _, cs := range caps {
		cs.mu.Lock()
		cs.s.Close()
		cs.mu.Unlock()
	}
	return first
}

// Drop destroys the graphs of plan p, which its session has dropped from
// its cache and closed: the idle instances now, one a step of p still
// replays or captures when that step is done with it. Steps of p that
// start looking for a graph after its Close run the ordinary way.
// Without it, a dropped plan's graphs, and the device and pinned buffers
// they address, stayed until the session closed.
func (gc *GraphCache) Drop(p *Plan) {
	gc.mu.Lock()
	pg := gc.plans[p]
	delete(gc.plans, p)
	var idle []*graphInst
	if pg != nil {
		pg.dropped = true
		for _, e := range pg.keys {
			for _, gi := range e.insts {
				if !gi.busy {
					idle = append(idle, gi)
				}
			}
		}
	}
	gc.mu.Unlock()
	for _, gi := range idle {
		if err := gi.destroy(); err != nil {
			gc.log("CUDA graph: releasing a dropped plan's graph: %v", err)
		}
	}
}

// run replays p's step as a graph when it can: handled is false when the
// step must run the ordinary way (the plan or key is not capturable, the
// key is warming up, every instance is busy, the capture failed).
func (gc *GraphCache) run(ctx context.Context, p *Plan, rt *Runtime, feeds []*tensor.Tensor) (out []*tensor.Tensor, handled bool, err error) {
	gi, capture, e := gc.acquire(p, rt.Groups[0], feeds)
	if gi == nil && !capture {
		return nil, false, nil
	}
	if capture {
		gi, err = gc.capture(p, rt, feeds)
		gc.mu.Lock()
		e.capturing--
		logIt := false
		if err != nil {
			e.bad = err.Error()
			if errors.Is(err, device.ErrNotCapturable) || status.CodeOf(err) == status.Unimplemented {
				// The plan's work cannot be captured, whatever the shapes.
				e.pg.why = "capture failed: " + e.bad
			}
			logIt, e.pg.logged = !e.pg.logged, true
		} else if gc.closed {
			err = status.Errorf(status.Cancelled, "session closed during the capture")
		} else {
			gi.busy = true
			e.insts = append(e.insts, gi)
		}
		gc.mu.Unlock()
		if err != nil {
			if gi != nil {
				gi.destroy()
			}
			gc.failures.Add(1)
			gc.fallbacks.Add(1)
			if logIt {
				gc.log("CUDA graph: the step of %d nodes on group %d cannot be captured, it runs node by node: %v",
					len(p.nodes), rt.Groups[0].ID, err)
			}
			return nil, false, nil
		}
		gc.captures.Add(1)
	}
	out, err = gi.replay(ctx, feeds)
	gc.mu.Lock()
	gi.busy = false
	if err != nil && status.CodeOf(err) != status.Cancelled {
		e.bad = err.Error() // later steps of the key run the ordinary way
	}
	dropped := e.pg.dropped
	gc.mu.Unlock()
	if dropped && (err == nil || status.CodeOf(err) == status.Cancelled) {
		// The replay waited for its launch (a cancelled one too) and
		// copied the fetches out; after a device error the launch may be
		// pending, and the buffers stay the allocator's until it closes.
		gi.destroy()
	}
	if err == nil {
		gc.replays.Add(1)
	}
	return out, true, err
}

// acquire finds an idle instance for the step's key (marked busy), or
// says that the caller should capture one (capture true: e.capturing was
// counted), or neither.
func (gc *GraphCache) acquire(p *Plan, g *groups.Group, feeds []*tensor.Tensor) (gi *graphInst, capture bool, e *graphEntry) {
	gc.mu.Lock()
	defer gc.mu.Unlock()
	if gc.closed || p.isClosed() {
		return nil, false, nil // a closed plan's entry would outlive Drop
	}
	pg := gc.plans[p]
	if pg == nil {
		pg = &planGraphs{why: graphIneligible(p), keys: map[graphKey]*graphEntry{}}
		gc.plans[p] = pg
		if pg.why != "" {
			gc.log("CUDA graph: a plan of %d nodes runs node by node: %s", len(p.nodes), pg.why)
		}
	}
	if pg.why != "" {
		return nil, false, nil
	}
	gc.tick++
	k := graphKey{g: g, shapes: feedKey(feeds)}
	e = pg.keys[k]
	if e == nil {
		var stale []*graphInst
		if !pg.makeRoom(g, &stale) {
			gc.fallbacks.Add(1)
			return nil, false, nil
		}
		// The evicted instances are idle: nothing can launch them now.
		for _, s := range stale {
			s.destroy()
		}
		e = &graphEntry{pg: pg}
		pg.keys[k] = e
	}
	e.used = gc.tick
	e.seen++
	if e.seen <= graphWarmup || e.bad != "" {
		gc.fallbacks.Add(1)
		return nil, false, nil
	}
	for _, x := range e.insts {
		if !x.busy {
			x.busy = true
			return x, false, e
		}
	}
	if len(e.insts)+e.capturing < graphInstances {
		e.capturing++
		return nil, true, e
	}
	gc.fallbacks.Add(1)
	return nil, false, nil
}

// makeRoom keeps a plan's keys on group g under graphKeysPerGroup by
// dropping the least recently used key that is idle; false when none is.
func (pg *planGraphs) makeRoom(g *groups.Group, stale *[]*graphInst) bool {
	n := 0
	var lru graphKey
	var lruE *graphEntry
	for k, e := range pg.keys {
		if k.g != g {
			continue
		}
		n++
		if e.capturing > 0 || anyBusy(e.insts) {
			continue
		}
		if lruE == nil || e.used < lruE.used {
			lru, lruE = k, e
		}
	}
	if n < graphKeysPerGroup {
		return true
	}
	if lruE == nil {
		return false
	}
	*stale = append(*stale, lruE.insts...)
	delete(pg.keys, lru)
	return true
}

func anyBusy(insts []*graphInst) bool {
	for _, x := range insts {
		if x.busy {
			return true
		}
	}
	return false
}

// feedKey encodes the feeds' dtypes and shapes.
func feedKey(feeds []*tensor.Tensor) string {
	b := make([]byte, 0, 8*len(feeds))
	for _, f := range feeds {
		b = binary.AppendUvarint(b, uint64(f.DType))
		b = binary.AppendUvarint(b, uint64(len(f.Shape)))
		for _, d := range f.Shape {
			b = binary.AppendVarint(b, d)
		}
	}
	return string(b)
}

// graphIneligible says why a placed plan's step cannot be replayed from a
// graph, or "" when it can. A replay runs only the device work: whatever
// the host computed during the capture is frozen into it. So every value
// the host reads must be the same on every run of a key: constants,
// shapes (the key fixes the feeds' shapes, and GPU kernels' output shapes
// follow from their inputs' shapes and host inputs), and host nodes over
// those. A value that depends on the feeds' contents (a feed, a device
// value) must never be read on the host, nor by a GPU kernel that reads
// its device values back to size its output (Def.SyncsHost: Where,
// Unique), and stateful ops (variables, random numbers) are never frozen.
func graphIneligible(p *Plan) string {
	if p.deadness {
		// Which nodes run, and how often, is decided on the host as the
		// step goes: no one graph holds every step of a key.
		return "it has v1 control flow (Switch or a frame op)"
	}
	for k, f := range p.feeds {
		if f.DType() == tensor.String {
			return fmt.Sprintf("feed %d ('%s') is a string", k, f)
		}
	}
	// fed[node][output]: the value depends on the feeds' contents.
	fed := make([][]bool, len(p.nodes))
	dep := func(r ref) bool {
		if r.Node < 0 {
			return true
		}
		return fed[r.Node][r.Index]
	}
	for _, i := range p.topo {
		pn := &p.nodes[i]
		n := pn.node
		if n.Def.GetIsStateful() {
			return fmt.Sprintf("node '%s' (op %s) is stateful", n.Name, n.Op)
		}
		out := make([]bool, len(n.OutTypes))
		switch pn.where {
		case onConst:
		case onGPU:
			if def, err := kernels.Lookup(n, kernels.GPU); err == nil && def.SyncsHost {
				return fmt.Sprintf("node '%s' (op %s) reads its device values on the host (its output shape depends on them)", n.Name, n.Op)
			}
			for j, r := range pn.inputs {
				if pn.hostIn[j] && dep(r) {
					return fmt.Sprintf("node '%s' (op %s) reads input %d on the host, and its value depends on the feeds", n.Name, n.Op, j)
				}
			}
			for j := range out {
				out[j] = true
			}
		default:
			if metaOnly[n.Op] {
				break // reads its input's shape only
			}
			for j, r := range pn.inputs {
				if dep(r) {
					return fmt.Sprintf("node '%s' (op %s) runs on the host on input %d, whose value depends on the feeds", n.Name, n.Op, j)
				}
			}
		}
		fed[i] = out
	}
	return ""
}

// capStream returns g's capture stream, making it on first use.
func (gc *GraphCache) capStream(g *groups.Group) (*capStream, error) {
	gc.mu.Lock()
	defer gc.mu.Unlock()
	if cs := gc.capS[g]; cs != nil {
		return cs, nil
	}
	if gc.closed {
		return nil, status.Errorf(status.Cancelled, "graph cache closed")
	}
	c, ok := g.Compute.(device.Capturer)
	if !ok {
		return nil, status.Errorf(status.Internal, "group %d: its compute stream (%T) cannot capture graphs", g.ID, g.Compute)
	}
	s, err := c.NewCaptureStream()
	if err != nil {
		return nil, err
	}
	cs := &capStream{s: s}
	gc.capS[g] = cs
	return cs, nil
}

// capture records p's step for feeds' key into a new instance. On error
// the capture has ended and nothing of it is left (the instance, if
// returned, still needs destroy).
func (gc *GraphCache) capture(p *Plan, rt *Runtime, feeds []*tensor.Tensor) (gi *graphInst, err error) {
	g := rt.Groups[0]
	cs, err := gc.capStream(g)
	if err != nil {
		return nil, err
	}
	cs.mu.Lock()
	defer cs.mu.Unlock()
	gi = &graphInst{g: g, feedIn: make([][]byte, len(feeds)), outs: make([]graphOut, len(p.fetches))}
	cst := cs.s
	s := &gstep{plan: p, rt: rt, g: g, c: cst, h: cst, d: cst,
		vals: make([][]gval, len(p.nodes)), feeds: make([]gval, len(feeds)),
		staged: make([]staged, len(p.fetches)), out: make([]*tensor.Tensor, len(p.fetches)), capt: gi,
		ar: newArena(p)}
	s.mem = newTracker(nil, []device.Stream{cst})
	for k, f := range feeds {
		s.feeds[k].host = f
	}
	// Buffers the capture reads: the feeds' device copies and their
	// pinned staging, allocated before the capture begins; one block
	// each (one copy in the graph) when several feeds go to the device.
	if err := gi.packFeeds(s); err != nil {
		gi.destroy()
		return nil, err
	}
	for k, f := range p.feedDev {
		if !f || gi.feedAll != nil {
			continue
		}
		t := feeds[k]
		size := uint64(len(t.Buf))
		addr, err := g.Alloc.Allocate(size, s.allocStream())
		if err != nil {
			gi.destroy()
			return nil, status.Errorf(status.CodeOf(err), "feed '%s' (%v%v): %v", p.feeds[k], t.DType, t.Shape, err)
		}
		gi.own(g.Alloc, addr)
		s.feeds[k].dev = &tensor.Tensor{DType: t.DType, Shape: t.Shape.Clone(), Buf: hostmem.DeviceBytes(addr, int(max(size, 1)))[:size]}
		if size > 0 {
			if gi.feedIn[k], err = gi.pinned(g, size); err != nil {
				gi.destroy()
				return nil, status.Errorf(status.CodeOf(err), "feed '%s': pinned staging: %v", p.feeds[k], err)
			}
		}
	}
	capt := cst.(device.Capturer)
	if err := capt.BeginCapture(); err != nil {
		gi.destroy()
		return nil, err
	}
	lerr := s.captureWork()
	graph, eerr := capt.EndCapture()
	if lerr == nil {
		lerr = eerr
	}
	if lerr != nil {
		if graph != nil {
			graph.Destroy()
		}
		gi.destroy()
		return nil, lerr
	}
	gi.exec, err = graph.Instantiate()
	graph.Destroy()
	if err != nil {
		gi.destroy()
		return nil, err
	}
	return gi, nil
}

// captureWork enqueues the step on the capture stream: feed copies from
// the instance's pinned staging, the nodes, fetch copies into pinned
// staging it owns.
func (s *gstep) captureWork() (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = status.Errorf(status.Internal, "GPU step capture panicked: %v\n%s", r, debug.Stack())
		}
	}()
	p, gi := s.plan, s.capt
	if gi.feedAll != nil {
		if err := s.c.CopyH2D(gi.feedAddr, gi.feedAll); err != nil {
			return status.Wrap(err, "feeds: one copy of %d bytes", len(gi.feedAll))
		}
	}
	for k, b := range gi.feedIn {
		if b != nil && gi.feedAll == nil {
			if err := s.c.CopyH2D(hostmem.DeviceAddr(s.feeds[k].dev.Buf), b); err != nil {
				return status.Wrap(err, "feed '%s'", p.feeds[k])
			}
		}
	}
	for _, i := range p.topo {
		if err := s.node(i); err != nil {
			return err
		}
	}
	for k, r := range p.fetches {
		v := s.value(r)
		o := &gi.outs[k]
		switch {
		case r.Node < 0:
			o.kind, o.feed = outFeed, r.Index
		case v.host != nil:
			o.kind, o.host = outHost, v.host.Clone()
		default:
			t := v.dev
			o.kind, o.dt, o.shape = outStaged, t.DType, t.Shape.Clone()
			if size := uint64(len(t.Buf)); size > 0 {
				if o.buf, err = gi.pinned(s.g, size); err != nil {
					return status.Errorf(status.CodeOf(err), "fetch '%s': pinned staging: %v", fetchName(p, k), err)
				}
				if err := s.c.CopyD2H(o.buf, hostmem.DeviceAddr(t.Buf)); err != nil {
					return status.Wrap(err, "fetch '%s'", fetchName(p, k))
				}
			}
		}
	}
	return nil
}

// own makes a device buffer the instance's.
func (gi *graphInst) own(a *bfc.Allocator, addr uint64) {
	gi.dev = append(gi.dev, owned{a, addr, a.ChunkSize(addr)})
}

// pinned allocates pinned staging the instance owns.
func (gi *graphInst) pinned(g *groups.Group, size uint64) ([]byte, error) {
	addr, err := g.HostAlloc.Allocate(size, nil)
	if err != nil {
		return nil, err
	}
	gi.host = append(gi.host, owned{g.HostAlloc, addr, g.HostAlloc.ChunkSize(addr)})
	return g.Device.HostMemory().Bytes(addr, size), nil
}

// replay runs the instance for feeds; the caller holds it (busy).
func (gi *graphInst) replay(ctx context.Context, feeds []*tensor.Tensor) ([]*tensor.Tensor, error) {
	g := gi.g
	for k, b := range gi.feedIn {
		if b != nil {
			copy(b, feeds[k].Buf)
		}
	}
	c := g.Compute
	if err := gi.exec.Launch(c); err != nil {
		return nil, status.Wrap(err, "CUDA graph of the step on group %d of %s", g.ID, g.Device.Name())
	}
	e, err := pooledEvent(c)
	if err == nil {
		if err = c.Record(e); err != nil {
			e.Release()
		}
	}
	if err != nil {
		// Without an event, the stream's own sync is the wait.
		if serr := c.Synchronize(); serr != nil {
			return nil, status.Wrap(serr, "waiting for the CUDA graph on %s", g.Device.Name())
		}
	} else {
		werr := waitEvent(ctx, e)
		e.Release()
		if werr != nil {
			return nil, status.Wrap(werr, "waiting for the CUDA graph on %s", g.Device.Name())
		}
		if ctx.Err() != nil {
			return nil, status.Errorf(status.Cancelled, "step cancelled: %v", ctx.Err())
		}
	}
	out := make([]*tensor.Tensor, len(gi.outs))
	for k := range gi.outs {
		o := &gi.outs[k]
		switch o.kind {
		case outFeed:
			out[k] = feeds[o.feed].Clone()
		case outHost:
			out[k] = o.host.Clone()
		default:
			t := tensor.New(o.dt, o.shape)
			copy(t.Buf, o.buf)
			out[k] = t
		}
	}
	return out, nil
}

// waitEvent blocks until e completes; when ctx can be cancelled it still
// waits (device work cannot be taken back) and the caller reports the
// cancellation.
func waitEvent(ctx context.Context, e device.Event) error {
	if ctx.Done() == nil {
		return e.Synchronize()
	}
	waited := make(chan error, 1)
	go func() { waited <- e.Synchronize() }()
	select {
	case err := <-waited:
		return err
	case <-ctx.Done():
		return <-waited
	}
}

// destroy releases the instance: its graph and its buffers. No launch of
// it may be pending.
func (gi *graphInst) destroy() error {
	var first error
	if gi.exec != nil {
		first = gi.exec.Destroy()
		gi.exec = nil
	}
	for _, o := range gi.dev {
		if err := o.alloc.Free(o.addr); err != nil && first == nil {
			first = err
		}
	}
	for _, o := range gi.host {
		if err := o.alloc.Free(o.addr); err != nil && first == nil {
			first = err
		}
	}
	gi.dev, gi.host = nil, nil
	return first
}
