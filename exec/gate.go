package exec

import (
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"mstream/kernels"
	"mstream/tensor"
)

// Loop modes, what a host step does with its kernels' loops (splitGate):
const (
	// loopsWhole runs every loop whole on the step's caller (wholeLoops).
	loopsWhole = iota
	// loopsSplit splits a loop worth two minimum splits over the pool
	// and runs a smaller one whole (splitLoops).
	loopsSplit
	// loopsEager also splits a small loop onto a worker that spins, and
	// wakes a parked one for the step's next small loops (Intra.For:
	// wakeForSmall). A worker spins on for the step's loops once it has
	// had one, so this is loopsSplit's behaviour too wherever it
	// allowed the small splits.
	loopsEager
	loopModes
)

// splitGate chooses, for a plan's host steps, how they run their kernels'
// loops, by timing steps of each kind: whichever is fastest on this
// machine now.
//
// Two threads are not always faster than one. On this project's 2-vCPU
// build VM the hypervisor moves the vCPUs between placements where a
// cache line goes from one to the other in about 60 ns round trip and
// ones where it takes 350 (a ping-pong of two pinned threads), for seconds
// to minutes at a time. In the far placement a worker's chunk reads its
// inputs from the other core and the caller then reads the chunk's
// output back: the bundled model at B=16 and one client thread took 25-26
// us a request with its small GEMMs split against 21 whole, and ONNX
// Runtime, whose two threads split as ours do, fell from 51k to 25-28k
// QPS in the same minutes (its one thread: 45k); the bundled model at
// B=256 ran 3046 QPS split and 3757 whole. The earlier sessions' "slow
// phases", where intra_op=1 beat 2, were this. Near, splitting the small
// loops too is what wins (the bundled model at B=16: 46k -> 52k QPS,
// dlrm_small at B=1: 22k -> 28k). No fixed rule is right in both
// placements, so each plan measures.
//
// A gate keeps a mode and runs gateWindow steps of one feed size in a
// neighbouring one (the probe: one mode down, then one up, in turn), timing
// the last gateWindow-gateWarm of them and as many steps in its own mode
// just before; when the probe's median is below its own by gateMargin it
// switches, and probes the mode it left gateRecheck steps later, going
// back to it (and on as after a lost probe, from 2*gatePeriod) if that
// one wins again. The next probe comes gatePeriod steps after a switch
// that held, and twice the last gap (four times after a probe gateFar slower; up to
// gateMaxPeriod) after a probe that lost: a probe's cost is at most
// gateWindow/gatePeriod of the steps, and far less while one mode keeps
// winning. A gate starts in loopsEager. Steps of different feed sizes (a
// plan serves any batch) keep gates apart, up to gateSizes of them; a
// step of a further size runs loopsEager, untimed.
type splitGate struct {
	// last is the gate of the last step's size, read without mu.
	last  atomic.Pointer[gateState]
	mu    sync.Mutex
	sizes map[int64]*gateState
}

const (
	gatePeriod    = 1024
	gateMaxPeriod = 8192
	gateWindow    = 6
	// gateWarm: the probe's first step is not timed (the worker that a
	// probe of loopsEager wakes may still be on its way).
	gateWarm   = 1
	gateMargin = 0.03
	// gateFar: a probe slower than the own mode by this factor or more
	// puts the next one four times as far, not twice: its steps cost
	// the most (mlp at B=256, one client thread: whole steps take twice
	// the split ones, and probes every 128 steps were the p99).
	gateFar   = 1.25
	gateSizes = 16
	// gateRecheck: a switch is checked by a probe of the mode left this
	// many steps later, which switches back if that mode wins again. Five
	// steps against five are fooled now and then by a disturbance that
	// hits the own mode's window (mlp B=16 at one client thread: its
	// eager steps' window fell among 0.65 ms steps, as slow as whole
	// ones, of a worker held off; 1036 whole steps followed, p99 0.50 ->
	// 0.70 ms).
	gateRecheck = 64
)

type gateState struct {
	key int64
	// steps is written by every step: on a line of its own.
	_       [64]byte
	steps   atomic.Uint64
	_       [56]byte
	probeAt atomic.Uint64 // the next probe's first step
	mode    atomic.Int32  // the mode in use outside probes
	probe   atomic.Int32  // the next probe's mode
	mu      sync.Mutex
	period  uint64     // the gap to the next probe (under mu)
	recheck bool       // the next probe checks a switch (under mu)
	ns      [2][]int64 // timed steps of this probe: [own mode, probe]
}

func newGateState(key int64) *gateState {
	st := &gateState{key: key, period: gatePeriod}
	st.mode.Store(loopsEager)
	st.probe.Store(loopsSplit)
	st.probeAt.Store(gatePeriod)
	return st
}

// gateTicket is one step's mode and, when it is timed, its start.
type gateTicket struct {
	st    *gateState
	mode  int32
	probe bool
	t0    time.Time // zero: not timed
}

// gateKey is what a step's gate is chosen by: its feeds' element count.
func gateKey(feeds []*tensor.Tensor) int64 {
	var n int64
	for _, t := range feeds {
		if t != nil {
			n += t.NumElements()
		}
	}
	return n
}

// ticket picks the mode of a step with feeds of key's size.
func (g *splitGate) ticket(key int64) gateTicket {
	st := g.last.Load()
	if st == nil || st.key != key {
		if st = g.lookup(key); st == nil {
			return gateTicket{mode: loopsEager}
		}
		g.last.Store(st)
	}
	return st.ticket(st.steps.Add(1)-1, time.Now)
}

// lookup is key's gate, made on its first step; nil past gateSizes.
func (g *splitGate) lookup(key int64) *gateState {
	g.mu.Lock()
	defer g.mu.Unlock()
	st := g.sizes[key]
	if st == nil && len(g.sizes) < gateSizes {
		if g.sizes == nil {
			g.sizes = make(map[int64]*gateState)
		}
		st = newGateState(key)
		g.sizes[key] = st
	}
	return st
}

// ticket is step k's mode: the gate's own, or the probe's in the probe
// window; now is read only for a timed step.
func (st *gateState) ticket(k uint64, now func() time.Time) gateTicket {
	at := st.probeAt.Load()
	t := gateTicket{st: st, mode: st.mode.Load()}
	switch {
	case k >= at+4*gateWindow:
		// A probe whose steps never all reported (a step of the
		// window that failed before it was timed; none do today):
		// start over.
		st.mu.Lock()
		if st.probeAt.CompareAndSwap(at, k+st.period) {
			st.ns[0], st.ns[1] = st.ns[0][:0], st.ns[1][:0]
		}
		st.mu.Unlock()
	case k >= at+gateWindow:
		// After the window, before the decision (steps of the window
		// still running).
	case k >= at:
		t.mode, t.probe = st.probe.Load(), true
		if k >= at+gateWarm {
			t.t0 = now()
		}
	case k+gateWindow-gateWarm >= at:
		t.t0 = now()
	}
	return t
}

// done records a timed step's time.
func (t gateTicket) done() {
	if !t.t0.IsZero() {
		t.st.record(t.probe, time.Since(t.t0))
	}
}

// record adds a timed step and decides once the own mode and the probe
// have a window's timed steps each.
func (st *gateState) record(probe bool, d time.Duration) {
	i := 0
	if probe {
		i = 1
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	st.ns[i] = append(st.ns[i], int64(d))
	const want = gateWindow - gateWarm
	if len(st.ns[0]) < want || len(st.ns[1]) < want {
		return
	}
	own, pr := float64(median(st.ns[0])), float64(median(st.ns[1]))
	mode, next := st.mode.Load(), st.probe.Load()
	wins := pr < own*(1-gateMargin)
	switch {
	case st.recheck && wins:
		// The mode left wins back: the switch was a window's chance.
		// Back to it, and on as after a loss.
		mode, next = next, mode
		st.period = min(2*gatePeriod, gateMaxPeriod)
		next = 2*mode - next
	case st.recheck:
		// The switch holds; the next probe goes on the same way (or
		// back, at the end of the modes).
		st.period = gatePeriod
		next = 2*mode - next
	case wins:
		// The probe's mode wins: switch, and probe the mode left soon.
		mode, next = next, mode
		st.period = gateRecheck
	case pr >= gateFar*own:
		st.period = min(4*st.period, gateMaxPeriod)
		next = 2*mode - next
	default:
		st.period = min(2*st.period, gateMaxPeriod)
		next = 2*mode - next
	}
	st.recheck = wins && !st.recheck
	if next < 0 || next >= loopModes {
		next = 2*mode - next
	}
	st.mode.Store(mode)
	st.probe.Store(next)
	st.probeAt.Store(st.steps.Load() + st.period)
	st.ns[0], st.ns[1] = st.ns[0][:0], st.ns[1][:0]
}

func median(v []int64) int64 {
	slices.Sort(v)
	return v[len(v)/2]
}

// LoopModeStats counts the host steps that ran on an intra-op pool with
// workers, by the loop mode their plan's gate gave them (MS_SessionStats'
// intra_op_loop_modes).
type LoopModeStats struct {
	Eager int64 `json:"eager"`
	Split int64 `json:"split"`
	Whole int64 `json:"whole"`
}

// LoopModes is p's count of host steps by loop mode.
func (p *Intra) LoopModes() LoopModeStats {
	return LoopModeStats{
		Eager: p.modeSteps[loopsEager].Load(),
		Split: p.modeSteps[loopsSplit].Load(),
		Whole: p.modeSteps[loopsWhole].Load(),
	}
}

// loopsFor is the intra-op pool a step in mode gives its kernels.
func loopsFor(p *Intra, mode int32) kernels.Parallelizer {
	switch mode {
	case loopsWhole:
		return wholeLoops{p: p}
	case loopsSplit:
		return splitLoops{p}
	}
	return p
}

// wholeLoops is the intra-op pool seen by a step in loopsWhole: every
// loop runs on its caller in one call, as the pool would run a loop it
// cuts into one chunk (a kernel's result does not depend on the cut);
// Threads stays the pool's, so kernels that size their work by it (oneDNN
// primitives made for the thread count) keep the same primitives, and
// results, in every mode.
type wholeLoops struct {
	kernels.Serial // For
	p              *Intra
}

func (w wholeLoops) Threads() int { return w.p.Threads() }

// splitLoops is the intra-op pool seen by a step in loopsSplit: Intra.For
// without its small splits and wake-ups.
type splitLoops struct{ p *Intra }

func (s splitLoops) Threads() int { return s.p.Threads() }

func (s splitLoops) For(n int, cost, start float64, fn func(lo, hi int)) {
	s.p.loop(n, cost, start, fn, false)
}

var (
	_ kernels.Sized = wholeLoops{}
	_ kernels.Sized = splitLoops{}
)
