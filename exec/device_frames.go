package exec

import (
	"context"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"mstream/device"
	"mstream/kernels"
	"mstream/status"
	"mstream/tensor"
	"mstream/trace"
)

// Frames on the device step: a plan with dead tensors or frames (TF's
// v1 cond and while_loop) launched by the lanes of device_lanes.go.
//
// The frame driver of every other step (frameRun, frames.go) is the
// propagator: it decides the frame, iteration and deadness of every
// node and which node is ready; its values are fvals, so a
// loop-carried device value never leaves the device. The lanes launch:
// a live node is an item of its group's lane (Assign holds in every
// frame and iteration), which waits for what it reads from other
// groups, launches the node on its compute stream as any lane does
// (GPU launches stay asynchronous) and reports its outputs back at
// once (finishTask, on the lane's goroutine, which hands them on and
// queues what became ready on its lanes). A node is queued only once
// its inputs were launched, so a lane never waits on the host for
// another: each wait is a device wait for the event recorded right
// after the producer's launch, left out when the lane's stream already
// follows it (the vector clocks of waits.go, each lane ticking and
// learning on its own row, each event's clock kept with it: the static
// lanes' reduction, worked out as the step goes instead of once per
// plan). Which launches record an event is worked out once per plan
// and assignment (frameReaders: a node a node of another group reads,
// through the control-flow ops that pass its value on, or runs after,
// through the control edges of the nodes that launch nothing). Such a
// node (a control-flow op, a ControlTrigger, a host kernel, a Const)
// keeps the launches it ran after, for its control successors and in a
// value it passes on or makes (relay; a Switch's predicate held on the
// host adds its own, a loop body's Const relays each iteration's): one
// stream orders those implicitly, lanes must wait for them.
//
// The control-flow ops run no kernel, and the driver runs them itself:
// Enter, Exit, NextIteration and LoopCond pass their value on, Merge
// passes its live input on with its index (a host scalar), Switch
// picks its output by its predicate, which TF keeps in host memory. A
// predicate still on the device is read back by the Switch's lane,
// after its event, on that lane's compute stream (where a lane blocks,
// as for a host kernel's device inputs; the host copy is kept for the
// value's other readers). Every device buffer is held until the step ends
// (keep): a loop's values are read a number of times the static use
// counts cannot know. Never a CUDA graph: the step's work depends on
// its predicates.
//
// With one group the same item code runs on the driver's goroutine
// (frameRun.drive): one stream orders everything, no waits, no queue.
// Over several groups the first error of any lane fails the step once
// (laneSync.fail): the lanes report their queued items unlaunched, and
// the driver ends once every item has reported; a cancelled context
// stops the driver as in every step.

// fval is a value of a device step with frames: its host and device
// copies, and, over several groups, what a reader waits for (nil: none):
// from, the launch that made a device value joined with what the nodes
// that passed it on ran after (relay); rel, of a device value, that
// relayed part alone. gval, from and rel are never written once handed
// to the driver: lanes read them at once, each into a copy of its own.
// A copy a reader makes is kept for the next readers: a device value's
// host copy (hc: the value is complete there, every lane may read it,
// as both Switches of a loop read its condition), a host value's
// device copy (dc: on its lane's stream, for that lane's readers only).
type fval struct {
	gval
	from *flaunch
	rel  *flaunch
	hc   atomic.Pointer[tensor.Tensor]
	dc   atomic.Pointer[laneCopy]
}

// after is what a reader of v's host copy, or of its shape alone, waits
// for: all of a host value's record; of a device value, what was
// relayed onto it, not the launch that made it (its data is not read
// there, and a host copy read back waited for it already).
func (v *fval) after() *flaunch {
	if v.dev == nil {
		return v.from
	}
	return v.rel
}

// laneCopy is a host value's device copy, made on lane's stream.
type laneCopy struct {
	t    *tensor.Tensor
	lane int
}

// local is v as lane k reads it: with the copies readers made that k
// may use.
func (v *fval) local(k int) gval {
	g := v.gval
	if g.host == nil {
		g.host = v.hc.Load()
	}
	if g.dev == nil {
		if c := v.dc.Load(); c != nil && c.lane == k {
			g.dev = c.t
		}
	}
	return g
}

// keep keeps the copies lane k made of v (as g) for v's next readers.
func (v *fval) keep(k int, g *gval) {
	if v.host == nil && g.host != nil && v.hc.Load() == nil {
		v.hc.Store(g.host)
	}
	if v.dev == nil && g.dev != nil && v.dc.Load() == nil {
		v.dc.Store(&laneCopy{g.dev, k})
	}
}

// flaunch is one launch of a GPU node over several groups: where its
// work ends on its group's stream, the event recorded right after it
// (when another group reads its values or runs after it) with the
// group's clock at that point, and its launch window's trace ID. A
// record with deps is no launch but stands for those, at most one a
// group, each the latest of its group (join): what a node that
// launches nothing (a control-flow op, a host kernel) waited for.
type flaunch struct {
	at   point
	snap []int
	ev   device.Event
	id   int
	deps []*flaunch
}

// nparts and part are the launches f stands for.
func (f *flaunch) nparts() int {
	if f.deps == nil {
		return 1
	}
	return len(f.deps)
}

func (f *flaunch) part(k int) *flaunch {
	if f.deps == nil {
		return f
	}
	return f.deps[k]
}

// covers says whether every launch y stands for is one of x's or before
// one on its group's stream.
func (x *flaunch) covers(y *flaunch) bool {
	for k := range y.nparts() {
		yp, ok := y.part(k), false
		for j := range x.nparts() {
			if xp := x.part(j); xp.at.stream == yp.at.stream && xp.at.seq >= yp.at.seq {
				ok = true
				break
			}
		}
		if !ok {
			return false
		}
	}
	return true
}

// devFrames is a device step's frames: the driver and what the lanes
// share.
type devFrames struct {
	s     *devStep
	r     *frameRun[*fval]
	multi bool
	// readers says, per GPU node, that another group reads its values or
	// runs after it: its launch records an event; per node that launches
	// nothing, that a node runs after it (frameReaders).
	readers []bool
	// last is, per plan node that has readers, its latest launch (a
	// node that launches nothing: what it waited for, joined over its
	// runs): a node that runs after it (a control edge) waits for that.
	last []atomic.Pointer[flaunch]
	clk  *clocks
	// recs are the records of what the driver runs itself, under its
	// lock.
	recs fvals
	// base is the trace ID before the first launch window; deep numbers
	// the windows of nested frames (windowID).
	base int
	deep int
	err  error // the driver's end, for the home lane
}

// laneFrames is a lane's part of a step with frames: its queue of
// items and the records of what it launches.
type laneFrames struct {
	q     frameQueue
	recs  fvals
	runs  valSlab[flaunch]
	ints  valSlab[int]
	loc   []gval
	locp  []*gval
	skips int
}

// fvals hands out the records of a step's fvals and of their slices,
// and of joined launches, carved from blocks (valSlab): the driver's,
// and each lane's.
type fvals struct {
	vals  valSlab[fval]
	ptrs  valSlab[*fval]
	joins valSlab[flaunch]
	deps  valSlab[*flaunch]
}

// join is a record that stands for the launches of x and y (either may
// be nil): per group the later one, as a stream that follows it follows
// the earlier.
func (b *fvals) join(x, y *flaunch) *flaunch {
	switch {
	case x == nil:
		return y
	case y == nil || x.covers(y):
		return x
	case y.covers(x):
		return y
	}
	ds := b.deps.take(x.nparts() + y.nparts())[:0]
	for k := range x.nparts() {
		ds = append(ds, x.part(k))
	}
next:
	for k := range y.nparts() {
		yp := y.part(k)
		for j, d := range ds {
			if d.at.stream == yp.at.stream {
				if yp.at.seq > d.at.seq {
					ds[j] = yp
				}
				continue next
			}
		}
		ds = append(ds, yp)
	}
	f := &b.joins.take(1)[0]
	f.deps = ds
	return f
}

// copyOf returns a new value of v's copies, which readers wait for as
// from and rel say. v's host copy, read back after v.from, is the new
// value's only where from is v.from: a host copy is read back after all
// its value carries (a Switch's predicate is not waited for again).
func (b *fvals) copyOf(v *fval, from, rel *flaunch) *fval {
	c := &b.vals.take(1)[0]
	c.gval, c.from, c.rel = v.gval, from, rel
	if from == v.from {
		c.hc.Store(v.hc.Load())
	}
	c.dc.Store(v.dc.Load())
	return c
}

// host returns a new value of host tensor t.
func (b *fvals) host(t *tensor.Tensor) *fval {
	v := &b.vals.take(1)[0]
	v.host = t
	return v
}

// frameItem is a live node the driver gave a lane: done reports its
// outputs; id is its launch window's trace ID.
type frameItem struct {
	node int32
	ins  []*fval
	done func([]*fval, error)
	id   int
}

// frameQueue is a lane's items, in the order the driver made them
// ready; the lane blocks in pop until one comes or the driver has
// ended (close).
type frameQueue struct {
	mu      sync.Mutex
	items   []frameItem
	head    int
	closed  bool
	waiting bool
	wake    chan struct{} // capacity 1: a token per wait
}

func (q *frameQueue) push(it frameItem) {
	q.mu.Lock()
	q.items = append(q.items, it)
	w := q.waiting
	q.waiting = false
	q.mu.Unlock()
	if w {
		q.wake <- struct{}{}
	}
}

func (q *frameQueue) pop() (frameItem, bool) {
	q.mu.Lock()
	for {
		if q.head < len(q.items) {
			it := q.items[q.head]
			q.items[q.head] = frameItem{}
			if q.head++; q.head == len(q.items) {
				q.items, q.head = q.items[:0], 0
			}
			q.mu.Unlock()
			return it, true
		}
		if q.closed {
			q.mu.Unlock()
			return frameItem{}, false
		}
		q.waiting = true
		q.mu.Unlock()
		<-q.wake
		q.mu.Lock()
	}
}

func (q *frameQueue) close() {
	q.mu.Lock()
	q.closed = true
	w := q.waiting
	q.waiting = false
	q.mu.Unlock()
	if w {
		q.wake <- struct{}{}
	}
}

// launchFrames is the launch of a device step with frames: the feeds on
// the home lane, then the frame driver, its live nodes launched by
// their groups' lanes (with one group, on this goroutine), then the
// home compute stream joined after every other group's and the fetches.
func (s *devStep) launchFrames(ctx context.Context) error {
	p := s.plan
	home := &s.lanes[0]
	fr := &devFrames{s: s, multi: s.multi}
	for k := range s.lanes {
		s.lanes[k].lf = &laneFrames{q: frameQueue{wake: make(chan struct{}, 1)}}
	}
	start := time.Now()
	defer func() {
		nodes := 0
		for k := range s.lanes {
			nodes += s.lanes[k].nodes
		}
		s.gs[0].g.CountLaunch(time.Since(start), nodes)
	}()
	if fr.multi {
		s.ar.lanes.reset(0)
		fr.readers = s.ls.readers
		fr.last = make([]atomic.Pointer[flaunch], len(p.nodes))
		fr.clk = newClocks(len(s.lanes))
	}
	if err := home.launchFeeds(); err != nil {
		return err
	}
	feeds := fr.recs.vals.take(len(home.feeds))
	fed := (*flaunch)(nil)
	for k := range home.feeds {
		feeds[k].gval = home.feeds[k]
		if fr.multi && feeds[k].dev != nil && fed == nil {
			// The feeds' copies: home compute waited for them.
			e, err := home.event(home.c)
			if err != nil {
				return status.Wrap(err, "feeds: an event after their copies on %s", home.g.Device.Name())
			}
			at := fr.clk.tick(0)
			fed = &flaunch{at: at, snap: fr.clk.snapshot(0), ev: e}
		}
		if feeds[k].dev != nil {
			feeds[k].from = fed // a host feed: a reader copies it on its own stream
		}
	}
	if s.trace {
		fr.base = len(home.tr.slices)
	}
	fptrs := fr.recs.ptrs.take(len(feeds))
	for k := range feeds {
		fptrs[k] = &feeds[k]
	}
	if !fr.multi {
		fr.r = newFrameRun(p, fptrs, func(i int32, pn *planNode, ins []*fval) ([]*fval, error) {
			return home.frameNode(fr, i, pn, ins, 0)
		})
		fr.err = fr.r.drive(ctx)
	} else {
		fr.r = newFrameRun(p, fptrs, fr.exec)
		fr.r.launch, fr.r.launches, fr.r.again = fr.launch, fr.launches, fr.constAgain
		var wg sync.WaitGroup
		for k := range s.lanes {
			l := &s.lanes[k]
			l.fr = fr
			if k > 0 {
				l.wg = &wg
				wg.Add(1)
				p.crew.start(l)
			}
		}
		fr.r.start(ctx, func(err error) {
			fr.err = err
			for k := range s.lanes {
				s.lanes[k].lf.q.close()
			}
		})
		s.ar.lanes.fail(home.runFrames())
		wg.Wait()
		// A lane's error is the step's (the driver may have heard of
		// another's, or errStopped, first).
		if err := s.ar.lanes.firstErr(); err != nil {
			fr.err = err
		}
	}
	if fr.err != nil {
		return fr.err
	}
	if fr.multi {
		if err := s.joinFrames(fr); err != nil {
			return err
		}
	}
	s.joined = true
	// The fetched values go into the home lane's table, where the fetch
	// copies read them.
	for k, f := range p.fetches {
		if f.Node < 0 {
			continue
		}
		o := fr.r.rootOut[f.Node]
		if o == nil || o[f.Index] == nil {
			return deadFetch(p, k)
		}
		if home.vals[f.Node] == nil {
			home.vals[f.Node] = home.ar.values(len(o))
		}
		home.vals[f.Node][f.Index] = o[f.Index].gval
	}
	return home.launchFetches()
}

// joinFrames makes the home compute stream follow every other group's
// last launch, unless it already does, before the fetches; a traced
// step's fetches get the window after every launch's.
func (s *devStep) joinFrames(fr *devFrames) error {
	home := &s.lanes[0]
	for k := 1; k < len(s.lanes); k++ {
		l := &s.lanes[k]
		if l.end == nil {
			continue
		}
		if pt := (point{k, fr.clk.seq[k]}); s.rt.ReduceWaits && pt.seq > 0 && fr.clk.covers(0, pt) {
			home.lf.skips++
			continue
		}
		if err := home.c.Wait(l.end); err != nil {
			return status.Wrap(err, "joining group %d of %s into the home group", s.gs[k].g.Index, s.gs[k].g.Device.Name())
		}
		home.waits++
		// The home compute stream now carries the other groups' work:
		// the final event must follow it.
		home.dirty = true
	}
	if s.trace {
		last := fr.base
		for k := range s.lanes {
			for _, sl := range s.lanes[k].tr.slices {
				last = max(last, sl.ID)
			}
		}
		home.sid = last + 2
	}
	return nil
}

// launches says whether the driver gives node pn to its lane rather
// than running it itself: every live node but Consts and the
// control-flow ops, and a Switch whose predicate is on the device.
func (fr *devFrames) launches(pn *planNode, ins []*fval) bool {
	if pn.isConst {
		return false
	}
	return pn.flow == flowNone || pn.flow == flowSwitch && ins[1].host == nil && ins[1].hc.Load() == nil
}

// launch queues live node i on its group's lane (the driver's lock is
// held).
func (fr *devFrames) launch(i int32, pn *planNode, ins []*fval, done func([]*fval, error)) error {
	s := fr.s
	id := 0
	if s.trace {
		id = fr.windowID(i)
	}
	s.lanes[s.groupOf(int(i))].lf.q.push(frameItem{node: i, ins: ins, done: done, id: id})
	return nil
}

// windowID is the trace ID of the launch window of node i in the task
// the driver is launching (its lock held): the same in every step for
// a node of the root frame or of a loop in it (by iteration), so the
// sanitizer's meta-test can drop one wait by its IDs; the windows of
// nested loops are numbered in launch order after those.
func (fr *devFrames) windowID(i int32) int {
	r := fr.r
	key := 0
	if f := r.cur.f; f != r.root {
		if f.parent == r.root {
			key = r.cur.iter + 1
		} else {
			fr.deep++
			key = 1<<31 + fr.deep
		}
	}
	return fr.base + 1 + int(i) + len(r.p.nodes)*key
}

// exec runs what the driver runs itself over several groups (its lock
// held): Consts and the control-flow ops. A panic is the node's error:
// on a lane's goroutine nothing else would catch it.
func (fr *devFrames) exec(i int32, pn *planNode, ins []*fval) (outs []*fval, err error) {
	defer func() {
		if r := recover(); r != nil {
			outs, err = nil, status.Errorf(status.Internal, "node '%s' (op %s) panicked: %v\n%s", pn.node.Name, pn.node.Op, r, debug.Stack())
		}
	}()
	if pn.flow != flowNone {
		if outs, err = fr.recs.flowOp(pn, ins, nil); err != nil {
			return nil, err
		}
		return fr.relay(&fr.recs, i, pn, ins, outs), nil
	}
	var t *tensor.Tensor
	if pn.where == onConst {
		t, err = constHost(pn)
	} else {
		var k kernelCall // a Const placed on the host
		var ts []*tensor.Tensor
		if ts, err = k.run(pn, nil, kernels.Serial{}); err == nil {
			t = ts[0]
		}
	}
	if err != nil {
		return nil, err
	}
	outs = fr.recs.ptrs.take(1)
	outs[0] = fr.recs.host(t)
	return fr.relay(&fr.recs, i, pn, ins, outs), nil
}

// constAgain is a Const's run after its first in the step (the driver's
// lock held): its cached values, each copied with what this run ran
// after (relay) where it has control predecessors, whose records are
// this iteration's. Lanes may be reading the cached values' records.
func (fr *devFrames) constAgain(i int32, pn *planNode, ins, outs []*fval) []*fval {
	if len(pn.ctrl) == 0 {
		return outs // no record, as the first run's
	}
	cs := fr.recs.ptrs.take(len(outs))
	for k, v := range outs {
		cs[k] = fr.recs.copyOf(v, nil, nil)
	}
	return fr.relay(&fr.recs, i, pn, ins, cs)
}

// relay records, over several groups, what node i, which launches
// nothing on the device (a control-flow op, a host kernel, a Const),
// ran after there: its control predecessors' records (fr.last) and, for
// a control-flow op, the launch of the value it passes on (a Merge's
// taken input, a Switch's data), for a host kernel what its inputs'
// host copies were read after (fval.after: not a device value's launch,
// complete once read back, so that a loop whose condition is a host
// kernel waits for nothing of its counter's launches). That
// is its record for the nodes that run after it (fr.last[i], joined
// with its earlier runs'), a value it passes on carries its control
// predecessors' too (a copy of it, from b, in from and rel), and a host
// kernel's values and a Merge's value_index carry it: a kernel of
// another group that reads it, or runs after it, then waits for the
// device work its control edges order before it, which one stream
// orders implicitly. A Switch's predicate read back on the host (a
// device value without a host copy of its own) was waited for there;
// one held on the host was not: what it ran after is the Switch's too.
func (fr *devFrames) relay(b *fvals, i int32, pn *planNode, ins, outs []*fval) []*fval {
	if !fr.multi {
		return outs // one stream orders everything
	}
	var ctl *flaunch
	for _, c := range pn.ctrl {
		ctl = b.join(ctl, fr.last[c].Load())
	}
	rec := ctl
	switch {
	case pn.flow == flowNone:
		for _, v := range ins {
			rec = b.join(rec, v.after()) // a device value was read back after its launch
		}
		for _, v := range outs {
			v.from = rec // its own records: a kernel reading it waits for those
		}
	case pn.flow != flowTrigger:
		if pn.flow == flowSwitch && ins[1].host != nil {
			ctl = b.join(ctl, ins[1].after())
		}
		k := 0
		if outs[0] == nil {
			k = 1 // a Switch's true side
		}
		v := outs[k]
		rec = b.join(v.from, ctl)
		if rel := b.join(v.rel, ctl); rec != v.from || rel != v.rel {
			outs[k] = b.copyOf(v, rec, rel)
		}
		if pn.flow == flowMerge {
			outs[1].from = rec // value_index: a new host value
		}
	}
	if rec == nil || !fr.readers[i] {
		return outs
	}
	for {
		old := fr.last[i].Load()
		j := b.join(old, rec)
		if j == old || fr.last[i].CompareAndSwap(old, j) {
			return outs
		}
	}
}

// flowOp runs a control-flow op, its records from b: it passes values
// on; a Switch picks its output by pred (nil: ins[1]'s host copy).
func (b *fvals) flowOp(pn *planNode, ins []*fval, pred *tensor.Tensor) ([]*fval, error) {
	n := pn.node
	switch pn.flow {
	case flowTrigger:
		return b.ptrs.take(len(n.OutTypes)), nil
	case flowMerge:
		for j, v := range ins {
			if v != nil {
				out := b.ptrs.take(2)
				out[0], out[1] = v, b.host(tensor.ScalarI32(int32(j)))
				return out, nil
			}
		}
		return nil, status.Errorf(status.Internal, "node '%s' (op %s) ran with every input dead", n.Name, n.Op)
	case flowSwitch:
		if pred == nil {
			if pred = ins[1].host; pred == nil {
				pred = ins[1].hc.Load()
			}
		}
		if len(pred.Shape) != 0 || pred.DType != tensor.Bool {
			return nil, status.InvalidArg("node '%s' (op %s): The second input must be a scalar, but it has shape %v", n.Name, n.Op, pred.Shape)
		}
		out := b.ptrs.take(2)
		if pred.Buf[0] != 0 {
			out[1] = ins[0]
		} else {
			out[0] = ins[0]
		}
		return out, nil
	case flowLoopCond:
		v := ins[0]
		t := v.host
		if t == nil {
			t = v.dev
		}
		if len(t.Shape) != 0 {
			return nil, status.InvalidArg("node '%s' (op %s): LoopCond: the predicate must be a scalar, but it has shape %v", n.Name, n.Op, t.Shape)
		}
	}
	// Enter, Exit, NextIteration, LoopCond: the driver moves the value
	// between frames and iterations.
	out := b.ptrs.take(1)
	out[0] = ins[0]
	return out, nil
}

// runFrames is a lane's loop over a step with frames: it launches each
// item the driver queues and reports it, until the driver has ended;
// after another lane's error it reports its items unlaunched. Its last
// launch gets an event for the join.
func (l *lane) runFrames() error {
	ps := &l.s.ar.lanes
	for {
		it, ok := l.lf.q.pop()
		if !ok {
			break
		}
		outs, err := []*fval(nil), errStopped
		if !ps.failed.Load() {
			outs, err = l.launchItem(it)
			if err != nil {
				ps.fail(err)
			}
		}
		it.done(outs, err)
	}
	if l.k != 0 && l.dirty {
		e, err := l.event(l.c)
		if err != nil {
			return status.Wrap(err, "group %d of %s: an event after its last launch", l.g.Index, l.g.Device.Name())
		}
		l.end = e
	}
	return nil
}

// launchItem launches item it, a panic an error naming the node.
func (l *lane) launchItem(it frameItem) (outs []*fval, err error) {
	pn := &l.plan.nodes[it.node]
	defer func() {
		if r := recover(); r != nil {
			err = status.Errorf(status.Internal, "node '%s' (op %s): its launch on group %d panicked: %v\n%s", pn.node.Name, pn.node.Op, l.g.Index, r, debug.Stack())
		}
	}()
	return l.frameNode(l.fr, it.node, pn, it.ins, it.id)
}

// frameNode launches (GPU) or runs (host) live node i of a step with
// frames, inputs ins, on the lane's group, id its launch window's trace
// ID: the waits for what it reads from other groups first, then the
// launch, then, when another group reads it, an event. With one group
// it also runs the control-flow ops (fr.flowOp).
func (l *lane) frameNode(fr *devFrames, i int32, pn *planNode, ins []*fval, id int) ([]*fval, error) {
	n := pn.node
	if fr.multi && l.trace {
		l.sid = id + 1
	}
	lf := l.lf
	if pn.flow != flowNone {
		if pn.flow != flowSwitch || ins[1].host != nil || ins[1].hc.Load() != nil {
			// One group: the driver's goroutine; over several, a Switch
			// whose predicate another lane has read back since the
			// driver queued it.
			outs, err := lf.recs.flowOp(pn, ins, nil)
			if err != nil {
				return nil, err
			}
			return fr.relay(&lf.recs, i, pn, ins, outs), nil
		}
		// The predicate, on the device: read back here after its
		// producer.
		if err := l.waitFrom(fr, ins[1].from, id); err != nil {
			return nil, status.Wrap(err, "node '%s': ordering group %d after its predicate", n.Name, l.g.Index)
		}
		var start time.Time
		if l.trace {
			start = time.Now()
		}
		v := ins[1].gval
		pred, err := l.hostOf(&v, inName{n: n, j: 1, note: " (the predicate)"})
		if err != nil {
			return nil, err
		}
		ins[1].keep(l.k, &v)
		if l.trace {
			l.slice(n.Name, n.Op, trace.D2H, "d2h", start, 0)
		}
		outs, err := lf.recs.flowOp(pn, ins, pred)
		if err != nil {
			return nil, err
		}
		return fr.relay(&lf.recs, i, pn, ins, outs), nil
	}
	// The inputs as the lane's own: the launch may copy a value across
	// (hostOf, devOf), which another lane's reader must not see until
	// kept.
	lf.loc, lf.locp = lf.loc[:0], lf.locp[:0]
	for _, v := range ins {
		lf.loc = append(lf.loc, v.local(l.k))
	}
	for j := range lf.loc {
		lf.locp = append(lf.locp, &lf.loc[j])
	}
	if fr.multi && pn.where != onConst {
		for j, v := range ins {
			f := v.from
			if wants, may := pn.wantsDevice(j); v.dev != nil && !wants && (may || lf.loc[j].host != nil) {
				f = v.rel // the host copy (or only the shape) is read
			}
			if err := l.waitFrom(fr, f, id); err != nil {
				return nil, status.Wrap(err, "node '%s': ordering group %d after its inputs", n.Name, l.g.Index)
			}
		}
		for _, c := range pn.ctrl {
			if err := l.waitFrom(fr, fr.last[c].Load(), id); err != nil {
				return nil, status.Wrap(err, "node '%s': ordering group %d after its inputs", n.Name, l.g.Index)
			}
		}
	}
	vs, err := l.nodeOn(int(i), lf.locp)
	if err != nil {
		return nil, err
	}
	for j, v := range ins {
		v.keep(l.k, &lf.loc[j])
	}
	var from *flaunch
	if pn.where == onGPU {
		l.nodes++
		if fr.multi {
			rec := &lf.runs.take(1)[0]
			rec.at, rec.id = fr.clk.tick(l.k), id
			if fr.readers[i] {
				if rec.ev, err = l.event(l.c); err != nil {
					return nil, status.Wrap(err, "node '%s': an event after it on %s", n.Name, l.g.Device.Name())
				}
				if l.rt.ReduceWaits {
					rec.snap = fr.clk.snapshotTo(l.k, lf.ints.take(len(l.s.lanes)))
				}
				fr.last[i].Store(rec)
			}
			from = rec
		}
	}
	fv := lf.recs.vals.take(len(vs))
	out := lf.recs.ptrs.take(len(vs))
	for j := range vs {
		fv[j].gval, fv[j].from = vs[j], from
		out[j] = &fv[j]
	}
	if fr.multi && pn.fwd && len(fv) > 0 && fv[0].host != nil && fv[0].dev != nil {
		// A forwarded host copy is input 0's, read after what that
		// carries, and the node's control predecessors ran before it:
		// its readers wait for those, not for this launch.
		rel := ins[0].after()
		for _, c := range pn.ctrl {
			rel = lf.recs.join(rel, fr.last[c].Load())
		}
		fv[0].rel = rel
	}
	if pn.where != onGPU {
		return fr.relay(&lf.recs, i, pn, ins, out), nil
	}
	return out, nil
}

// waitFrom makes the lane's compute stream wait for the event after
// launch f (nil, or of the lane's own group: nothing to wait for),
// unless it already follows it (ReduceWaits). In a traced step the wait
// is a flow between the two launch windows, and DropWait is asked with
// their IDs.
func (l *lane) waitFrom(fr *devFrames, f *flaunch, id int) error {
	if f != nil && f.deps != nil {
		for _, d := range f.deps {
			if err := l.waitFrom(fr, d, id); err != nil {
				return err
			}
		}
		return nil
	}
	if f == nil || f.at.stream == l.k {
		return nil
	}
	if l.rt.ReduceWaits && fr.clk.covers(l.k, f.at) {
		l.lf.skips++
		return nil
	}
	prod, cons := -1, -1
	if l.trace {
		prod, cons = f.id, id
	}
	if !l.dropped(prod, cons) {
		if f.ev == nil {
			return status.Errorf(status.Internal, "no event after launch %d of group %d to wait for", f.at.seq, f.at.stream)
		}
		if err := l.waitEvent(f.ev, prod, cons); err != nil {
			return err
		}
	}
	if l.rt.ReduceWaits {
		// Learnt even when the sanitizer dropped the wait, as the static
		// lanes' schedule, worked out before, has it.
		fr.clk.learn(l.k, f.snap)
	}
	return nil
}

// relays says that the frame driver or a lane runs node pn without a
// launch on the device (frameReaders, devFrames.relay).
func (pn *planNode) relays() bool {
	return pn.flow != flowNone || pn.where != onGPU || pn.isConst
}

// frameReaders says, per node of a plan with frames over groups, that a
// node of another group reads its values or runs after it. A GPU node's
// value is followed through the nodes that launch nothing (relay) to
// the nodes that wait for it: through a control-flow op that passes it
// on (Enter, Exit, NextIteration, LoopCond, Merge's outputs, Switch's
// data), through a host kernel's values (which carry what it ran
// after), through a control edge to any of those or a ControlTrigger,
// whose control edges then order its successors after it, through a
// forwarding GPU kernel's input 0 or control edge (its host copy carries
// those records), and through a Switch's predicate that may be held on
// the host (hostVals), which is not read back after it (a device
// predicate's host copy is read back after all it carries, fvals.copyOf);
// a Switch (its predicate) and a host kernel wait for it on their lanes
// too. Only GPU nodes' launches need an event. For a node that launches
// nothing it says that a node runs after it: its record is kept
// (fr.last).
func (p *Plan) frameReaders(group func(int) int) []bool {
	readers := make([]bool, len(p.nodes))
	held := p.hostVals()
	seen := make([]int32, len(p.nodes)) // stamp: the source walked from, plus one
	var stack []int32
	for i := range p.nodes {
		if p.nodes[i].relays() {
			for _, e := range p.fs.out[i] {
				readers[i] = readers[i] || e.slot < 0
			}
			continue
		}
		k := group(i)
		stack = append(stack[:0], int32(i))
		for len(stack) > 0 && !readers[i] {
			src := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			for _, e := range p.fs.out[src] {
				dpn := &p.nodes[e.dst]
				pred := dpn.flow == flowSwitch && e.slot == 1
				if (dpn.flow == flowNone && !dpn.isConst || pred) && group(int(e.dst)) != k {
					readers[i] = true // a kernel or a Switch waits on its lane
				}
				if pred && !p.heldOut(held, int(src), int(e.out)) {
					continue // read back after all it carries
				}
				// A forwarding kernel's host copy carries its input 0's
				// record and its control predecessors' (fval.rel).
				if (dpn.relays() || dpn.fwd && e.slot <= 0) && seen[e.dst] != int32(i)+1 {
					seen[e.dst] = int32(i) + 1
					stack = append(stack, e.dst)
				}
			}
		}
	}
	return readers
}

// hostVals says, per node of a plan with frames, that its output 0 (the
// value a control-flow op passes on) may be held on the host when it
// runs, where a Switch reads it as its predicate without reading it back
// after what it carries (relay): a host kernel's or a Const's value, a
// feed, a forwarding GPU kernel's (its input's host copy) and those
// passed on, a Merge's value_index (heldOut).
func (p *Plan) hostVals() []bool {
	held := make([]bool, len(p.nodes))
	for changed := true; changed; { // a loop's values come back through NextIteration
		changed = false
		for i := range p.nodes {
			pn := &p.nodes[i]
			h := held[i]
			switch pn.flow {
			case flowNone:
				h = pn.relays() || pn.fwd
			case flowTrigger:
			case flowMerge:
				for _, r := range pn.inputs {
					h = h || p.heldOut(held, r.Node, r.Index)
				}
			default: // Enter, Exit, NextIteration, LoopCond, Switch: input 0
				if len(pn.inputs) > 0 {
					h = h || p.heldOut(held, pn.inputs[0].Node, pn.inputs[0].Index)
				}
			}
			if h && !held[i] {
				held[i], changed = true, true
			}
		}
	}
	return held
}

// heldOut says that output out of node n (a feed when n < 0) may be held
// on the host (hostVals' held).
func (p *Plan) heldOut(held []bool, n, out int) bool {
	return n < 0 || held[n] || p.nodes[n].flow == flowMerge && out == 1
}
