package exec

import (
	"cmp"
	"errors"
	"math/rand"
	"runtime/debug"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"mstream/device"
	"mstream/hostmem"
	"mstream/status"
	"mstream/tensor"
	"mstream/trace"
)

// Launch lanes: a device step over several groups launches each
// group's nodes from a goroutine of its own, a lane, in a topological
// order that puts what waits for fewer other groups first (laneOrder),
// so the host's enqueueing, which sets the pace of a step of many small
// kernels, is spread over the groups as the device work is. A step
// with frames runs on the same lanes, the items of each the nodes the
// frame driver makes ready (device_frames.go); what follows is the
// plan's list.
//
// The home lane (group 0) runs on the home group's launch pool, as a
// one-group step does; every other lane runs on a goroutine of the
// plan's lane crew (laneCrew), which keeps them parked between steps
// and starts one only when none is idle, so a step never queues a lane
// behind another. Not the groups' own launch pools: those may be shared
// by several groups and smaller than the group count (the inter-op
// pool, a session pool), and a lane blocks until another has launched
// what it waits for, so a lane queued behind a blocked one could
// deadlock the step. A goroutine kept from step to step keeps the stack
// it grew (a goroutine started per step grew it again each step) and
// costs a channel send to wake; an idle one exits after laneIdle.
//
// What a lane waits for is worked out once per plan and assignment
// (laneSched) by the walk that lays out host streams too (layWaits,
// waits.go; this is its launching strategy, host streams its running
// one): the producers, on other groups, of each node's inputs
// and control edges (for a producer that launches nothing, a host
// kernel, NoOp or constant, the last GPU node of each group it ran
// after), and the feeds' copies for a node of another group
// that reads them in device memory, less the waits implied by earlier
// ones (ReduceWaits: the vector clocks of waits.go, over events recorded
// right after each producer). A producer that another group waits for
// records an event on its compute stream right after its launch; a
// producer whose values another group reads publishes a copy of them
// (its gvals). A consumer's lane waits on the host only for that
// publication, never for the device, then makes its compute stream wait
// for the event (cuStreamWaitEvent). A constant is never published: a
// node that reads or follows one waits on the host for the nodes of
// other groups the constant ran after (laneSched.awaits), as its device
// waits through it cover only their launches, not a host kernel's run.
// Each lane has its own table of values: a value another lane made is
// copied in on first use (a device value of another GPU with
// cuMemcpyPeerAsync on the reader's compute stream, after its wait), and
// a host value's device copy, or a device value's host copy, is the
// lane's own, so no lane writes a value another reads. The feeds are copied in by the home lane before the
// others start; the fetches go out on the home group's D2H stream after
// every lane has finished and the home compute stream has waited for
// each other group's last launch.
//
// The first error of any lane fails the step (launchSync.fail): every
// lane stops before its next node, and one waiting for a publication
// that will never come wakes up; the step then waits for every lane to
// return before it records its final event after everything launched
// on any group, so no buffer or event goes back while a stream may use
// it. A traced step numbers its launch windows in that order
// (laneSched.slice), so the same wait has the same trace IDs in every
// step (the sanitizer's meta-test drops waits by them) and a group's
// windows are numbered in its launch order.

// laneSched is how a step of a plan over n groups with an assignment
// launches on lanes: worked out once and kept by the plan while the
// assignment stays the same.
type laneSched struct {
	assign []int
	n      int
	reduce bool
	// nodes lists each group's non-constant nodes in launch order.
	nodes [][]int32
	// waits lists, per plan node, the producers whose events its group's
	// compute stream waits for before its launch (-1: the feeds' copies).
	waits [][]int32
	// skips counts, per group, the waits left out as implied.
	skips []int
	// pub says another group reads the node's values or runs after it;
	// rec that another group waits for an event recorded after it.
	pub, rec []bool
	// awaits lists, per node, the nodes of other groups (no constants)
	// that it runs after only through constants: a constant launches
	// nothing and is never published, so its lane awaits them itself
	// before it launches (the device waits through the constant stand
	// for their launches, not for a host kernel's run).
	awaits [][]int32
	// fed says some node waits for the feeds' copies.
	fed bool
	// slice is each node's launch window's place among the step's (-1:
	// none, a constant); nslices counts them.
	slice   []int32
	nslices int
	// join lists the groups whose last launch the home group's compute
	// stream waits for before the fetches (the others are implied).
	join []int
	// readers, for a plan with frames (whose launches the frame driver
	// orders as the step goes: nodes, waits, pub and rec stay empty),
	// says which nodes' launches record an event (frameReaders).
	readers []bool
}

// laneSched returns the plan's lane schedule for sr's groups and
// assignment: layWaits' layout of the feeds' copies (an item on the
// home compute stream, before everything) and the nodes in laneOrder,
// read back per node, with what only lanes need (pub, slice, the join
// into the home group).
func (p *Plan) laneSched(sr *Runtime) *laneSched {
	n := len(sr.Groups)
	if ls := p.lanes.Load(); ls != nil && ls.n == n && ls.reduce == sr.ReduceWaits && slices.Equal(ls.assign, sr.Assign) {
		return ls
	}
	group := func(i int) int {
		if sr.Assign == nil {
			return 0
		}
		return sr.Assign[i]
	}
	if p.deadness {
		ls := &laneSched{assign: slices.Clone(sr.Assign), n: n, reduce: sr.ReduceWaits, skips: make([]int, n),
			readers: p.frameReaders(group)}
		p.lanes.Store(ls)
		return ls
	}
	ls := &laneSched{assign: slices.Clone(sr.Assign), n: n, reduce: sr.ReduceWaits,
		nodes: make([][]int32, n), waits: make([][]int32, len(p.nodes)), awaits: make([][]int32, len(p.nodes)),
		pub: make([]bool, len(p.nodes)), rec: make([]bool, len(p.nodes)), slice: make([]int32, len(p.nodes))}
	// The items: the feeds' copies (item 0: the home compute stream has
	// them first), then the nodes in the lanes' order, each on its
	// group's stream, a point of it if it launches there.
	order := p.laneOrder(group)
	item := make([]int32, len(p.nodes)) // plan node -> item
	items := make([]layItem, 1, 1+len(order))
	items[0] = layItem{stream: 0, tick: true}
	for _, i := range order {
		pn := &p.nodes[i]
		it := layItem{stream: -1}
		if pn.where != onConst {
			it = layItem{stream: int32(group(i)), tick: pn.where == onGPU}
		}
		for _, pr := range pn.preds {
			it.prods = append(it.prods, item[pr])
		}
		for j, r := range pn.inputs {
			if r.Node < 0 && p.feedDev[r.Index] {
				if wants, _ := pn.wantsDevice(j); wants {
					it.prods = append(it.prods, 0)
				}
			}
		}
		item[i] = int32(len(items))
		items = append(items, it)
	}
	w := layWaits(items, n, sr.ReduceWaits)
	node := func(it int32) int32 {
		if it == 0 {
			return -1 // the feeds' copies
		}
		return int32(order[it-1])
	}
	ls.fed = w.rec[0]
	for i := range ls.slice {
		ls.slice[i] = -1
	}
	for _, i := range order {
		pn := &p.nodes[i]
		if pn.where == onConst {
			continue
		}
		k := group(i)
		ls.slice[i] = int32(ls.nslices)
		ls.nslices++
		ls.nodes[k] = append(ls.nodes[k], int32(i))
		for _, pr := range w.waits[item[i]] {
			ls.waits[i] = append(ls.waits[i], node(pr))
		}
		ls.rec[i] = w.rec[item[i]]
		for _, pr := range pn.preds {
			if p.nodes[pr].where == onConst {
				ls.awaits[i] = p.behindConst(pr, ls.awaits[i])
			} else if group(pr) != k {
				ls.pub[pr] = true
			}
		}
		ls.awaits[i] = slices.DeleteFunc(ls.awaits[i], func(d int32) bool { return group(int(d)) == k })
		for _, d := range ls.awaits[i] {
			ls.pub[d] = true
		}
	}
	for _, r := range p.fetches {
		if r.Node >= 0 && group(r.Node) != 0 && p.nodes[r.Node].where != onConst {
			ls.pub[r.Node] = true
		}
	}
	ls.join = w.join(0)
	ls.skips = w.skipped
	p.lanes.Store(ls)
	return ls
}

// behindConst appends to ds the nodes other than constants that constant
// c runs after, through other constants, each once.
func (p *Plan) behindConst(c int, ds []int32) []int32 {
	for _, pr := range p.nodes[c].preds {
		if p.nodes[pr].where == onConst {
			ds = p.behindConst(pr, ds)
		} else if !slices.Contains(ds, int32(pr)) {
			ds = append(ds, int32(pr))
		}
	}
	return ds
}

// laneOrder is the order lanes launch the plan's nodes in: the
// topological order, stably sorted by how many hops between groups the
// longest path to each node makes (its cross-group depth). A lane so
// launches everything that waits for no other group before the first
// node that does, rather than blocking at that node while work of its
// own that could go now sits behind it: in the training example the
// home lane would wait for the other towers' outputs with 33 of its 205
// nodes (the head's variable reads, the loss gradient's shape
// arithmetic) ready behind the wait. Depth never falls along an edge,
// so the order stays topological, and ties keep the plan's order. A
// constant (any Const: host plans place none onConst) launches nothing
// and is on no lane or host stream, so an edge into or out
// of one makes no hop, but it has the depth of what it runs after: a
// constant with a control edge (an inlined body's hang off the call's
// input NoOp) goes after its predecessors, as do its readers, whose
// lanes wait for those through it (layWaits).
func (p *Plan) laneOrder(group func(int) int) []int {
	depth := make([]int32, len(p.nodes))
	for _, i := range p.topo {
		c := p.nodes[i].isConst
		for _, pr := range p.nodes[i].preds {
			d := depth[pr]
			if !c && !p.nodes[pr].isConst && group(pr) != group(i) {
				d++
			}
			depth[i] = max(depth[i], d)
		}
	}
	order := slices.Clone(p.topo)
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(depth[a], depth[b]) })
	return order
}

// laneSync is what a step's lanes share: per plan node, whether its
// publication is out, its published values and the event recorded after
// it; and the step's first error. Kept in the home lane's arena between
// steps.
//
// A lane that must wait registers the node it waits for with a channel
// of its own (waiting), and a publication wakes only the lanes waiting
// for that node: with one condition for all, every publication woke
// every waiting lane, the home lane about 5.6 times a step on the GPU
// training step, mostly to find its producer still out and sleep again.
type laneSync struct {
	mu sync.Mutex
	// done is set, after vals and ev, once node i is published: a lane
	// whose producer is already out reads it without the lock.
	done   []atomic.Bool
	vals   [][]gval
	ev     []device.Event
	err    error
	failed atomic.Bool
	// waiting is the lanes blocked in await, each woken exactly once (a
	// token in its channel) by the publication of its node or by fail,
	// which takes it off the list; chans is the channels not in use.
	waiting []laneWaiter
	chans   []chan struct{}
}

// laneWaiter is a lane blocked until node is published.
type laneWaiter struct {
	node int
	wake chan struct{} // capacity 1
}

// errStopped is what a lane returns when another lane failed the step:
// never the step's error.
var errStopped = errors.New("another lane failed the step")

func (ls *laneSync) reset(n int) {
	if cap(ls.vals) < n {
		ls.done, ls.vals, ls.ev = make([]atomic.Bool, n), make([][]gval, n), make([]device.Event, n)
	}
	ls.done, ls.vals, ls.ev = ls.done[:n], ls.vals[:n], ls.ev[:n]
	for i := range ls.done {
		ls.done[i].Store(false)
	}
	clear(ls.vals)
	clear(ls.ev)
	ls.err = nil
	ls.failed.Store(false)
	ls.waiting = ls.waiting[:0] // empty: every await of the last step returned
}

// publish makes node i's values (a copy no lane writes) and event
// visible to the other lanes, and wakes the lanes waiting for it.
func (ls *laneSync) publish(i int, vs []gval, ev device.Event) {
	ls.mu.Lock()
	ls.vals[i], ls.ev[i] = vs, ev
	ls.done[i].Store(true)
	for k := 0; k < len(ls.waiting); {
		if w := ls.waiting[k]; w.node == i {
			w.wake <- struct{}{}
			last := len(ls.waiting) - 1
			ls.waiting[k] = ls.waiting[last]
			ls.waiting = ls.waiting[:last]
			continue
		}
		k++
	}
	ls.mu.Unlock()
}

// await blocks until node i is published or the step has failed.
func (ls *laneSync) await(i int) ([]gval, device.Event, error) {
	if ls.done[i].Load() {
		return ls.vals[i], ls.ev[i], nil
	}
	ls.mu.Lock()
	if ls.err != nil {
		ls.mu.Unlock()
		return nil, nil, errStopped
	}
	if ls.done[i].Load() {
		ls.mu.Unlock()
		return ls.vals[i], ls.ev[i], nil
	}
	var wake chan struct{}
	if n := len(ls.chans); n > 0 {
		wake = ls.chans[n-1]
		ls.chans = ls.chans[:n-1]
	} else {
		wake = make(chan struct{}, 1)
	}
	ls.waiting = append(ls.waiting, laneWaiter{i, wake})
	ls.mu.Unlock()
	<-wake
	ls.mu.Lock()
	ls.chans = append(ls.chans, wake) // its one token taken: reusable
	err := ls.err
	ls.mu.Unlock()
	if err != nil {
		return nil, nil, errStopped
	}
	return ls.vals[i], ls.ev[i], nil
}

// fail records the step's first error and stops every lane.
func (ls *laneSync) fail(err error) {
	if err == nil || errors.Is(err, errStopped) {
		return
	}
	ls.mu.Lock()
	if ls.err == nil {
		ls.err = err
	}
	ls.failed.Store(true)
	for _, w := range ls.waiting {
		w.wake <- struct{}{}
	}
	ls.waiting = ls.waiting[:0]
	ls.mu.Unlock()
}

func (ls *laneSync) firstErr() error {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	return ls.err
}

// lane launches one group's nodes of a step.
type lane struct {
	gstep
	s     *devStep
	k     int
	waits int
	nodes int
	// end is an event after the lane's last launch, for the join.
	end device.Event
	// fed and base are run's arguments for a lane on the crew, which
	// reports to wg once the lane has returned.
	fed  device.Event
	base int
	wg   *sync.WaitGroup
	// fr, in a step with frames, is the step's frames: the lane launches
	// the items the frame driver queues for it (lf.q) instead of a list
	// worked out per plan.
	fr *devFrames
	lf *laneFrames
}

// launch runs the lane: its plan's nodes, or a step with frames' items.
func (l *lane) launch() error {
	if l.fr != nil {
		return l.runFrames()
	}
	return l.run(l.s.ls, l.fed, l.base)
}

// laneIdle is how long a crew's goroutine stays parked without a step
// before it exits: long enough to outlast any pause between the steps
// of a training loop, short enough that a dropped plan's goroutines go.
const laneIdle = 2 * time.Second

// laneCrew keeps the goroutines of a plan's lanes (other than the
// home lane) between steps. Steps of the plan may run at once, so the
// crew is a stack of idle workers rather than one per group: a step
// takes one per lane, starting a new one when none is idle, and each
// goes back once its lane has returned.
type laneCrew struct {
	mu   sync.Mutex
	idle []*laneWorker
	// live counts the crew's goroutines, idle or not.
	live int
	// idleFor, when set, replaces laneIdle (tests).
	idleFor time.Duration
}

// laneWorker is one goroutine of a crew; work hands it its next lane.
type laneWorker struct {
	crew  *laneCrew
	work  chan *lane
	timer *time.Timer
}

// start runs lane l on an idle worker of the crew, or a new one, which
// reports to l.wg once l has returned; its error, unless another
// lane's came first, is the step's.
func (c *laneCrew) start(l *lane) {
	c.mu.Lock()
	var w *laneWorker
	if n := len(c.idle); n > 0 {
		w = c.idle[n-1]
		c.idle[n-1] = nil
		c.idle = c.idle[:n-1]
	}
	if w != nil {
		c.mu.Unlock()
		w.work <- l // buffered: the worker may not have parked yet
		return
	}
	c.live++
	c.mu.Unlock()
	w = &laneWorker{crew: c, work: make(chan *lane, 1)}
	go w.loop(l)
}

func (w *laneWorker) loop(l *lane) {
	c := w.crew
	for l != nil {
		l.s.ar.lanes.fail(l.launch())
		wg := l.wg
		// Idle before the step hears of it: the plan's next step finds
		// the worker free rather than starting another.
		c.mu.Lock()
		c.idle = append(c.idle, w)
		idle := cmp.Or(c.idleFor, laneIdle)
		c.mu.Unlock()
		wg.Done()
		l = w.next(idle)
	}
}

// next waits for the worker's next lane; nil once it has been idle for
// idle and has left the crew.
func (w *laneWorker) next(idle time.Duration) *lane {
	if w.timer == nil {
		w.timer = time.NewTimer(idle)
	} else {
		w.timer.Reset(idle)
	}
	select {
	case l := <-w.work:
		w.timer.Stop()
		return l
	case <-w.timer.C:
	}
	c := w.crew
	c.mu.Lock()
	if i := slices.Index(c.idle, w); i >= 0 {
		c.idle = slices.Delete(c.idle, i, i+1)
		c.live--
		c.mu.Unlock()
		return nil
	}
	c.mu.Unlock()
	return <-w.work // a step took it as the timer fired
}

// newLanes makes the lanes of step s over its groups: the home lane's
// gstep is s's own.
func (s *devStep) newLanes(feeds []*tensor.Tensor) {
	p := s.plan
	for k := range s.lanes {
		l := &s.lanes[k]
		ng := &s.gs[k]
		l.s, l.k = s, k
		if k > 0 {
			l.gstep = gstep{plan: p, rt: s.rt, mem: s.mem, trace: s.trace, run: s.run, dix: s.dix, kst: &s.gstep.kstep, keep: s.keep}
			l.ar = p.arena()
			l.events = l.ar.events()
			if s.jit != nil {
				l.jit = rand.New(rand.NewSource(s.jit.Int63()))
			}
		}
		l.g, l.c, l.h, l.d, l.cix = ng.g, ng.c, ng.h, ng.d, k
		l.vals = l.ar.valueTable(len(p.nodes))
		l.feeds = l.ar.values(len(feeds))
		for j, f := range feeds {
			l.feeds[j].host = f
		}
	}
}

// launchLanes is the launch of a step over several groups without
// frames: the feeds on the home lane, then every group's nodes on its
// own lane, then the fetches on the home group.
func (s *devStep) launchLanes() error {
	start := time.Now()
	p, ls := s.plan, s.ls
	ps := &s.ar.lanes
	ps.reset(len(p.nodes))
	home := &s.lanes[0]
	var nodes int
	defer func() {
		for k := range s.lanes {
			nodes += s.lanes[k].nodes
		}
		s.gs[0].g.CountLaunch(time.Since(start), nodes)
	}()
	if err := home.launchFeeds(); err != nil {
		return err
	}
	var fed device.Event
	if ls.fed {
		e, err := home.event(home.c)
		if err != nil {
			return status.Wrap(err, "feeds: an event after their copies on %s", home.g.Device.Name())
		}
		fed = e
	}
	base := 0 // the trace ID of the first node's launch window
	if s.trace {
		base = len(home.tr.slices)
	}
	var wg sync.WaitGroup
	for k := 1; k < len(s.lanes); k++ {
		l := &s.lanes[k]
		if len(ls.nodes[k]) == 0 {
			continue // a group the assignment leaves empty
		}
		if s.gs[k].tab == s.gs[0].tab {
			copy(l.feeds, home.feeds) // the home GPU's copies serve its groups
		} // else another GPU copies in the feeds its kernels read itself (devOf)
		l.fed, l.base, l.wg = fed, base, &wg
		wg.Add(1)
		p.crew.start(l)
	}
	ps.fail(home.run(ls, fed, base))
	wg.Wait()
	if err := ps.firstErr(); err != nil {
		return err
	}
	for _, k := range ls.join {
		if err := home.c.Wait(s.lanes[k].end); err != nil {
			return status.Wrap(err, "joining group %d of %s into the home group", s.gs[k].g.Index, s.gs[k].g.Device.Name())
		}
		home.waits++
	}
	if len(ls.join) > 0 {
		// The home compute stream now carries the other groups' work: the
		// final event must follow it even when the home lane itself
		// launched nothing.
		home.dirty = true
	}
	s.joined = true
	for k, r := range p.fetches {
		if r.Node < 0 || home.vals[r.Node] != nil {
			continue
		}
		if err := home.bring(r.Node, inName{p: p, j: k}); err != nil {
			return err
		}
	}
	if s.trace {
		home.sid = base + ls.nslices + 1
	}
	return home.launchFetches()
}

// run launches the lane's nodes; fed is the event after the feeds'
// copies and base the trace ID of the step's first node.
func (l *lane) run(ls *laneSched, fed device.Event, base int) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = status.Errorf(status.Internal, "device step: the launch of group %d panicked: %v\n%s", l.g.Index, r, debug.Stack())
		}
	}()
	p, ps := l.plan, &l.s.ar.lanes
	for _, i32 := range ls.nodes[l.k] {
		i := int(i32)
		if ps.failed.Load() {
			return errStopped
		}
		pn := &p.nodes[i]
		if l.trace {
			l.sid = base + int(ls.slice[i]) + 1
		}
		// The waits first: a peer copy of an input (bringIn) follows them.
		for _, pr := range ls.waits[i] {
			if err := l.waitOn(int(pr), fed, base); err != nil {
				if errors.Is(err, errStopped) {
					return err
				}
				return status.Wrap(err, "node '%s': ordering group %d after its inputs", pn.node.Name, l.g.Index)
			}
		}
		if err := l.bringIn(ls, i); err != nil {
			return err
		}
		if err := l.node(i); err != nil {
			return err
		}
		var ev device.Event
		if pn.where == onGPU {
			l.nodes++
			if ls.rec[i] {
				if ev, err = l.event(l.c); err != nil {
					return status.Wrap(err, "node '%s': an event after it on %s", pn.node.Name, l.g.Device.Name())
				}
			}
		}
		if ls.pub[i] || ls.rec[i] {
			vs := l.vals[i]
			pub := l.ar.values(len(vs))
			copy(pub, vs)
			ps.publish(i, pub, ev)
		}
	}
	if l.k != 0 && slices.Contains(ls.join, l.k) {
		e, err := l.event(l.c)
		if err != nil {
			return status.Wrap(err, "group %d of %s: an event after its last launch", l.g.Index, l.g.Device.Name())
		}
		l.end = e
	}
	return nil
}

// bringIn makes node i's inputs and control predecessors from other
// groups available to the lane (bring), and waits (on the host) for
// what it runs after through constants (laneSched.awaits).
func (l *lane) bringIn(ls *laneSched, i int) error {
	p := l.plan
	pn := &p.nodes[i]
	for j, r := range pn.inputs {
		if r.Node < 0 || l.vals[r.Node] != nil {
			continue
		}
		if err := l.bring(r.Node, inName{n: pn.node, j: j}); err != nil {
			return err
		}
	}
	for _, pr := range pn.preds {
		if l.vals[pr] != nil || p.nodes[pr].where == onConst || l.s.groupOf(pr) == l.k {
			continue
		}
		if _, _, err := l.s.ar.lanes.await(pr); err != nil {
			return err
		}
	}
	for _, d := range ls.awaits[i] {
		if _, _, err := l.s.ar.lanes.await(int(d)); err != nil {
			return err
		}
	}
	return nil
}

// bring puts node i's values, not yet in the lane's table, there: a
// constant's host value is the lane's own; another group's node's are
// copied from its publication, once out (waiting for it on the host).
func (l *lane) bring(i int, what inName) error {
	if l.plan.nodes[i].where == onConst {
		return l.node(i)
	}
	vs, _, err := l.s.ar.lanes.await(i)
	if err != nil {
		return err
	}
	return l.take(i, vs, what)
}

// take copies node i's published values into the lane's table. A device
// value of another GPU without a host copy is copied into this GPU's
// memory on the lane's compute stream (which already follows its
// producer), held until the step ends, as is the source: its readers
// here read the copy, so its references never all come back before the
// step's end.
func (l *lane) take(i int, src []gval, what inName) error {
	vs := l.ar.values(len(src))
	copy(vs, src)
	l.vals[i] = vs
	from := l.s.groupOf(i)
	if l.s.gs[from].tab == l.s.gs[l.k].tab {
		return nil
	}
	for j := range vs {
		v := &vs[j]
		if v.host != nil || v.dev == nil {
			v.dev = nil // the host tensor is shared; a device copy is made here if read
			continue
		}
		dt, err := l.peerCopy(v.dev, l.s.gs[from].c, what)
		if err != nil {
			return err
		}
		v.dev = dt
	}
	return nil
}

// peerCopy copies t, in another GPU's memory, into the lane's on its
// compute stream, after src's work so far.
func (l *lane) peerCopy(t *tensor.Tensor, src device.Stream, what inName) (*tensor.Tensor, error) {
	size := uint64(len(t.Buf))
	addr, err := l.g.Alloc.Allocate(size, l.allocStream())
	if err != nil {
		return nil, status.Errorf(status.CodeOf(err), "%s (%v%v): copy to %s: %v", what, t.DType, t.Shape, l.g.Device.Name(), err)
	}
	dt := &tensor.Tensor{DType: t.DType, Shape: t.Shape.Clone(), Buf: hostmem.DeviceBytes(addr, int(max(size, 1)))[:size]}
	l.mem.add(dt, &buffer{addr: addr, alloc: l.g.Alloc, refs: 1 << 30, users: []int{l.cix}})
	if size > 0 {
		l.dirty = true
		pc, ok := l.c.(device.PeerCopier)
		if !ok {
			return nil, status.Errorf(status.Unimplemented, "%s: %s cannot copy from another device's memory", what, l.g.Device.Name())
		}
		if err := l.delay(l.c); err != nil {
			return nil, err
		}
		if err := pc.CopyPeer(addr, hostmem.DeviceAddr(t.Buf), src, size); err != nil {
			return nil, status.Wrap(err, "%s: copy to %s", what, l.g.Device.Name())
		}
	}
	return dt, nil
}

// waitOn makes the lane's compute stream wait for the event after
// producer pr (-1: the feeds' copies), once it is recorded. In a traced
// step the wait is a flow between the two launch windows, and DropWait
// is asked with their IDs (-1 where untraced).
func (l *lane) waitOn(pr int, fed device.Event, base int) error {
	ev := fed
	prod, cons := -1, -1
	if pr >= 0 {
		var err error
		if _, ev, err = l.s.ar.lanes.await(pr); err != nil {
			return err
		}
	}
	if l.trace {
		cons = l.sid - 1
		prod = 0 // the feeds' window
		if pr >= 0 {
			prod = base + int(l.s.ls.slice[pr])
		}
	}
	if l.dropped(prod, cons) {
		return nil
	}
	if ev == nil {
		return status.Errorf(status.Internal, "no event after node %d to wait for", pr)
	}
	return l.waitEvent(ev, prod, cons)
}

// dropped says the sanitizer leaves out the wait of launch window cons
// on prod (-1: untraced).
func (l *lane) dropped(prod, cons int) bool {
	return l.rt.DropWait != nil && l.rt.DropWait(prod, cons)
}

// waitEvent makes the lane's compute stream wait for ev, recorded
// after launch window prod, before cons (-1: untraced): a wait the
// reduction and the sanitizer kept. In a traced step it is a flow
// between them.
func (l *lane) waitEvent(ev device.Event, prod, cons int) error {
	if err := l.c.Wait(ev); err != nil {
		return err
	}
	l.waits++
	if l.trace {
		l.tr.flows = append(l.tr.flows, trace.Flow{From: prod, To: cons})
	}
	return nil
}

// endLanes gathers the lanes after the step: their counts, events,
// staging, traces and arenas.
func (s *devStep) endLanes() {
	home := &s.lanes[0]
	for k := range s.lanes {
		l := &s.lanes[k]
		skips := 0
		if l.lf != nil {
			skips += l.lf.skips
		}
		if s.ls != nil {
			skips += s.ls.skips[k]
		}
		s.gs[k].g.CountWaits(l.waits, skips)
		if k == 0 {
			continue
		}
		// Every event of the step has completed (the final event
		// follows them all, or the streams were synchronised).
		for _, e := range l.events {
			e.Release()
		}
		l.ar.keepEvents(l.events)
		for _, a := range l.pinned {
			l.g.HostAlloc.Free(a)
		}
		if s.trace {
			home.tr.slices = append(home.tr.slices, l.tr.slices...)
			home.tr.flows = append(home.tr.flows, l.tr.flows...)
		}
	}
	if s.trace {
		sort.Slice(home.tr.slices, func(a, b int) bool { return home.tr.slices[a].ID < home.tr.slices[b].ID })
	}
}

// releaseLanes gives the other lanes' arenas back to the plan.
func (s *devStep) releaseLanes() {
	for k := 1; k < len(s.lanes); k++ {
		a := s.lanes[k].ar
		a.release()
		s.plan.arenas.put(a)
	}
}
