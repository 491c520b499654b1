package exec

import (
	"mstream/device"
	"mstream/kernels"
	"mstream/tensor"
	"mstream/tensorholder"
)

// arena hands out a device step's per-node records (a node's input and
// output slices, its values, its kernel context, its output buffers'
// records and shapes) from blocks, so launching a node costs no heap
// allocation of its own: the launcher's host time per GPU node is what
// the device step is judged by when it runs node by node
// (BenchmarkDeviceStep, TestGPULaunchCost). Nothing handed out is reused
// within the step: a kernel's enqueued work may still read its inputs
// when the next node launches.
//
// A finished step's blocks go back to its plan (Plan.arenas, release)
// for the next step, cleared, buffer records included: a buffer the
// holder frees after the step has returned is known to it by its chunk
// (holdOn), not its record. Everything is read only while the step runs: the final event follows every
// kernel's enqueued work, and device tensors never outlive their step (a
// fetch is copied out; a variable's memory is its own, Persist.Keep).
type arena struct {
	chunk int
	// heap hands out each record on its own (a step with frames: a
	// loop's records would pile up in blocks until the step ends,
	// however many iterations had long let go of theirs).
	heap bool
	ts   slab[*tensor.Tensor]
	vs   slab[gval]
	kcs  slab[kernels.Context]
	dims slab[int64]
	bs   slab[bool]
	tens slab[tensor.Tensor]
	bufs slab[buffer]
	vt   slab[[]gval]
	// held is a device step's gathering holds, per stream (holdOn).
	held []*heldFree
	// lanes is what the lanes of a step over several groups share, kept
	// in the home lane's arena (device_lanes.go).
	lanes laneSync
	// mem is the step's tracker (the home lane's arena's), kept with its
	// index, which a drained tracker leaves empty but grown: a new one per
	// step grew, and rehashed, as the step's buffers came.
	mem *tracker
	// evs is a launcher's list of events, kept empty between steps with
	// its room (gstep.events).
	evs []device.PooledEvent
	// pins is the home launcher's list of pinned staging, kept empty
	// between steps with its room (gstep.pinned).
	pins []uint64
}

// slab is one kind of record: the block in use and how much of it is
// handed out. A block that runs out is replaced by one twice its size
// (the old one stays with what it handed out), so a reused arena comes
// to serve a whole step from one block.
type slab[T any] struct {
	blk []T
	n   int
}

func (s *slab[T]) take(k, chunk int) []T {
	if chunk == 0 {
		return make([]T, k)
	}
	if s.n+k > len(s.blk) {
		s.blk, s.n = make([]T, max(k, chunk, 2*len(s.blk))), 0
	}
	t := s.blk[s.n : s.n+k : s.n+k]
	s.n += k
	return t
}

// reset clears what was handed out, for the block's next step.
func (s *slab[T]) reset() {
	clear(s.blk[:s.n])
	s.n = 0
}

// newArena returns an arena for plan p: its first blocks serve a step
// whose nodes have a few inputs and outputs each.
func newArena(p *Plan) *arena {
	return &arena{chunk: min(max(len(p.nodes), 8), 512), heap: p.deadness}
}

// arena returns a cleared arena for a device step of p.
func (p *Plan) arena() *arena {
	if a := p.arenas.get(); a != nil {
		return a
	}
	return newArena(p)
}

// release clears a finished step's arena for the next step of its plan;
func (a *arena) release() {
	a.ts.reset()
	a.vs.reset()
	a.kcs.reset()
	a.dims.reset()
	a.bs.reset()
	a.tens.reset()
	a.vt.reset()
	a.bufs.reset()
}

// size is the records a block holds; 0 with heap, which makes every
// take a block of its own.
func (a *arena) size() int {
	if a.heap {
		return 0
	}
	return a.chunk
}

// tracker returns the arena's tracker, empty, for a step over streams.
func (a *arena) tracker(h *tensorholder.Holder, streams []device.Stream) *tracker {
	if a.mem == nil {
		a.mem = newTracker(h, streams)
		return a.mem
	}
	// Field by field, under its lock: a hold of an earlier step may
	// still report a failed free to it (freeChunks).
	m := a.mem
	m.mu.Lock()
	m.holder, m.streams, m.err, m.hold = h, streams, nil, nil
	m.recycle, m.spare, m.small = false, nil, m.small[:0]
	m.mu.Unlock()
	return m
}

// heldList returns the arena's list of n empty holds (devStep.held).
func (a *arena) heldList(n int) []*heldFree {
	if cap(a.held) < n {
		a.held = make([]*heldFree, n)
	}
	a.held = a.held[:n]
	clear(a.held)
	return a.held
}

// events returns the arena's empty list of events, for a step's gstep.
func (a *arena) events() []device.PooledEvent { return a.evs[:0] }

// keepEvents keeps a finished step's list of events (released) for the
// arena's next step.
func (a *arena) keepEvents(evs []device.PooledEvent) {
	clear(evs)
	a.evs = evs[:0]
}

// tensors returns n nil tensor pointers.
func (a *arena) tensors(n int) []*tensor.Tensor { return a.ts.take(n, 4*a.size()) }

// values returns n empty values.
func (a *arena) values(n int) []gval { return a.vs.take(n, 2*a.size()) }

// valueTable returns a lane's empty table of values, n nodes long.
func (a *arena) valueTable(n int) [][]gval { return a.vt.take(n, max(n, a.size())) }

// tensor returns a zero tensor header (a feed's device view).
func (a *arena) tensor() *tensor.Tensor { return &a.tens.take(1, a.size())[0] }

// bools returns n false flags.
func (a *arena) bools(n int) []bool { return a.bs.take(n, 4*a.size()) }

// context returns a zero kernel context.
func (a *arena) context() *kernels.Context { return &a.kcs.take(1, a.size())[0] }

// buffer returns a zero buffer record.
func (a *arena) buffer() *buffer { return &a.bufs.take(1, a.size())[0] }

// shape returns a copy of s (never nil, as Shape.Clone).
func (a *arena) shape(s tensor.Shape) tensor.Shape {
	d := a.dims.take(len(s), 4*a.size())
	if d == nil {
		d = tensor.Shape{}
	}
	copy(d, s)
	return d
}
