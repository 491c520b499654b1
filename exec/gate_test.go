package exec

import (
	"context"
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"mstream/kernels"
)

// TestGateTicketWindows: a gate runs its own mode but for the gateWindow
// steps from probeAt, which run the probe's; it times the probe's steps
// after gateWarm and as many of its own steps just before.
func TestGateTicketWindows(t *testing.T) {
	for _, c := range [][2]int32{{loopsSplit, loopsWhole}, {loopsSplit, loopsEager}, {loopsWhole, loopsSplit}, {loopsEager, loopsSplit}} {
		st := newGateState(1)
		st.mode.Store(c[0])
		st.probe.Store(c[1])
		var reads int
		now := func() time.Time { reads++; return time.Unix(1, 0) }
		const own = gateWindow - gateWarm
		for k := uint64(0); k < gatePeriod+2*gateWindow; k++ {
			reads = 0
			tk := st.ticket(k, now)
			probe := k >= gatePeriod && k < gatePeriod+gateWindow
			timed := k >= gatePeriod-own && k < gatePeriod || k >= gatePeriod+gateWarm && k < gatePeriod+gateWindow
			what := fmt.Sprintf("mode %d probe %d, step %d", c[0], c[1], k)
			want := c[0]
			if probe {
				want = c[1]
			}
			if tk.mode != want || tk.probe != probe {
				t.Errorf("%s: mode %d (probe %v), want %d (%v)", what, tk.mode, tk.probe, want, probe)
			}
			if got := !tk.t0.IsZero(); got != timed || reads != map[bool]int{false: 0, true: 1}[timed] {
				t.Errorf("%s: timed %v (%d clock reads), want %v", what, got, reads, timed)
			}
		}
	}
}

// TestGateDecides: once the own mode and the probe have a window's timed
// steps each, the gate takes the probe's mode if its median is lower by
// gateMargin; the next probe goes on the same way after a switch (back at
// the end of the modes), the other way after a loss, and comes gatePeriod
// steps on after a switch, twice the last gap after a loss (four times
// after a probe gateFar slower), at most gateMaxPeriod.
func TestGateDecides(t *testing.T) {
	ms := func(v ...float64) []time.Duration {
		var d []time.Duration
		for _, x := range v {
			d = append(d, time.Duration(x*float64(time.Microsecond)))
		}
		return d
	}
	steady := ms(20, 20, 20, 20, 20)
	for _, c := range []struct {
		name                string
		mode, probe         int32
		period              uint64
		own, pr             []time.Duration
		wantMode, wantProbe int32
		wantPeriod          uint64
	}{
		{"whole far slower", loopsSplit, loopsWhole, gatePeriod, ms(16, 17, 16, 90, 16), steady, loopsSplit, loopsEager, 4 * gatePeriod},
		{"whole wins", loopsSplit, loopsWhole, 2 * gatePeriod, ms(25, 25, 24, 26, 25), steady, loopsWhole, loopsSplit, gateRecheck},
		{"eager wins", loopsSplit, loopsEager, 4 * gatePeriod, ms(20, 21, 20, 20, 20), ms(17, 17, 17, 17, 17), loopsEager, loopsSplit, gateRecheck},
		{"split wins from whole", loopsWhole, loopsSplit, gatePeriod, steady, ms(17, 17, 17, 17, 17), loopsSplit, loopsWhole, gateRecheck},
		{"within the margin", loopsEager, loopsSplit, gatePeriod, steady, ms(20.5, 20.5, 20.5, 20.5, 20.5), loopsEager, loopsSplit, 2 * gatePeriod},
		{"outliers do not decide", loopsWhole, loopsSplit, gatePeriod, steady, ms(19, 19, 90, 90, 19), loopsSplit, loopsWhole, gateRecheck},
		{"at most the longest gap", loopsSplit, loopsEager, gateMaxPeriod, steady, ms(30, 30, 30, 30, 30), loopsSplit, loopsWhole, gateMaxPeriod},
	} {
		if len(c.own) != gateWindow-gateWarm || len(c.pr) != gateWindow-gateWarm {
			t.Fatalf("%s: the test wants gateWindow-gateWarm samples a mode", c.name)
		}
		st := newGateState(1)
		st.mode.Store(c.mode)
		st.probe.Store(c.probe)
		st.period = c.period
		st.steps.Store(5000)
		for i := range c.own {
			// Interleaved, as concurrent steps report.
			st.record(false, c.own[i])
			st.record(true, c.pr[i])
		}
		if m, p := st.mode.Load(), st.probe.Load(); m != c.wantMode || p != c.wantProbe {
			t.Errorf("%s: mode %d, next probe %d; want %d, %d", c.name, m, p, c.wantMode, c.wantProbe)
		}
		if st.period != c.wantPeriod || st.probeAt.Load() != 5000+c.wantPeriod {
			t.Errorf("%s: period %d, next probe at %d; want %d, %d", c.name, st.period, st.probeAt.Load(), c.wantPeriod, 5000+c.wantPeriod)
		}
		if len(st.ns[0])+len(st.ns[1]) != 0 {
			t.Errorf("%s: samples left after the decision", c.name)
		}
	}
	// A switch is rechecked: the mode left, probed gateRecheck steps
	// later, wins back (the switch was a window's chance) or loses (the
	// switch holds and the probes go on the same way).
	for _, c := range []struct {
		name                string
		back                []time.Duration
		wantMode, wantProbe int32
		wantPeriod          uint64
	}{
		{"switch back", ms(15, 15, 15, 15, 15), loopsEager, loopsSplit, 2 * gatePeriod},
		{"switch holds", ms(25, 25, 25, 25, 25), loopsSplit, loopsWhole, gatePeriod},
	} {
		st := newGateState(1)
		st.steps.Store(5000)
		for i := 0; i < gateWindow-gateWarm; i++ {
			st.record(false, 20*time.Microsecond)
			st.record(true, 18*time.Microsecond)
		}
		if m, p := st.mode.Load(), st.probe.Load(); m != loopsSplit || p != loopsEager || st.probeAt.Load() != 5000+gateRecheck {
			t.Fatalf("%s: after split won: mode %d, probe %d at %d", c.name, m, p, st.probeAt.Load())
		}
		for i := 0; i < gateWindow-gateWarm; i++ {
			st.record(false, 20*time.Microsecond)
			st.record(true, c.back[i])
		}
		if m, p := st.mode.Load(), st.probe.Load(); m != c.wantMode || p != c.wantProbe || st.period != c.wantPeriod {
			t.Errorf("%s: mode %d, next probe %d, period %d; want %d, %d, %d", c.name, m, p, st.period, c.wantMode, c.wantProbe, c.wantPeriod)
		}
		if st.recheck {
			t.Errorf("%s: still rechecking after the recheck", c.name)
		}
	}
	// One side's steps alone: no decision yet.
	st := newGateState(1)
	for i := 0; i < 10; i++ {
		st.record(true, time.Microsecond)
	}
	if st.mode.Load() != loopsEager || st.probeAt.Load() != gatePeriod {
		t.Errorf("the gate decided on the probe's steps alone")
	}
}

// TestGateUndecidedProbeStartsOver: a probe whose steps never reported
// does not leave the gate stuck: a step well past it sets the next probe.
func TestGateUndecidedProbeStartsOver(t *testing.T) {
	st := newGateState(1)
	st.record(false, time.Microsecond)
	k := uint64(gatePeriod + 4*gateWindow)
	if tk := st.ticket(k, time.Now); tk.mode != loopsEager || tk.probe || !tk.t0.IsZero() {
		t.Fatalf("step %d: mode %d probe %v timed %v, want the own mode, untimed", k, tk.mode, tk.probe, !tk.t0.IsZero())
	}
	if at := st.probeAt.Load(); at != k+gatePeriod {
		t.Fatalf("next probe at %d, want %d", at, k+gatePeriod)
	}
	if len(st.ns[0]) != 0 {
		t.Fatalf("the stale probe's samples were kept")
	}
}

// TestGateSizes: steps of different feed sizes keep gates apart, up to
// gateSizes; a step of a further size runs loopsEager, untimed.
func TestGateSizes(t *testing.T) {
	var g splitGate
	for k := int64(0); k < gateSizes; k++ {
		g.ticket(k)
	}
	g.lookup(3).mode.Store(loopsWhole)
	if tk := g.ticket(3); tk.mode != loopsWhole {
		t.Fatal("size 3's gate, set to whole, gave another mode")
	}
	if tk := g.ticket(4); tk.mode != loopsEager {
		t.Fatal("size 4's gate took size 3's mode")
	}
	if got := g.lookup(3).steps.Load(); got != 2 {
		t.Fatalf("size 3 counted %d steps, want 2", got)
	}
	if tk := g.ticket(gateSizes); tk.st != nil || tk.mode != loopsEager || !tk.t0.IsZero() {
		t.Fatalf("a size past gateSizes got a gate")
	}
}

// TestLoopModes: loopsWhole runs a loop in one call on its caller,
// loopsSplit and loopsEager over the pool; each says the pool's thread
// count, and each visits every element once.
func TestLoopModes(t *testing.T) {
	p := NewIntra(3)
	defer p.Close()
	for mode, want := range map[int32]string{loopsWhole: "exec.wholeLoops", loopsSplit: "exec.splitLoops", loopsEager: "*exec.Intra"} {
		par := loopsFor(p, mode)
		if got := fmt.Sprintf("%T", par); got != want {
			t.Errorf("mode %d: pool %s, want %s", mode, got, want)
		}
		if got := par.(kernels.Sized).Threads(); got != 3 {
			t.Errorf("mode %d: Threads %d, want the pool's 3", mode, got)
		}
		hits := make([]int32, 1000)
		var calls atomic.Int32
		par.For(len(hits), 1e6, 0, func(lo, hi int) {
			calls.Add(1)
			for i := lo; i < hi; i++ {
				atomic.AddInt32(&hits[i], 1)
			}
		})
		checkCovered(t, fmt.Sprintf("mode %d", mode), hits)
		if c := calls.Load(); (mode == loopsWhole) != (c == 1) {
			t.Errorf("mode %d: %d calls", mode, c)
		}
	}
	// A small loop (three grains, under two minimum splits) with a
	// worker spinning: split in loopsEager, whole in loopsSplit.
	small := func(par kernels.Parallelizer) int32 {
		var calls atomic.Int32
		par.For(64, float64(3*grainNs)/64, 0, func(lo, hi int) { calls.Add(1) })
		return calls.Load()
	}
	for try := 0; ; try++ {
		giveWorkerAChunk(p)
		for t0 := time.Now(); p.spinning.Load() == 0 && time.Since(t0) < time.Millisecond; {
			runtime.Gosched()
		}
		if c := small(splitLoops{p}); c != 1 {
			t.Fatalf("loopsSplit ran a small loop in %d chunks, want 1", c)
		}
		if small(p) > 1 {
			break
		}
		if try == 100 {
			t.Fatalf("loopsEager never split a small loop onto a spinning worker in %d tries", try)
		}
	}
}

// poolKind is what the last ExecTestPoolKind node saw.
var poolKind atomic.Value

// TestStepsTakeTheGatesMode: a host step's kernels see the pool of its
// gate's mode: the Intra (loopsEager) at first, splitLoops in the first
// probe's window; the same outputs either way.
func TestStepsTakeTheGatesMode(t *testing.T) {
	p, r, _ := probePlan(t, "ExecTestPoolKind")
	for k := 0; k < gatePeriod+gateWindow; k++ {
		outs, _, err := p.Run(context.Background(), r, nil, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if got := outs[0].F32()[0]; got != 3 {
			t.Fatalf("step %d: output %v, want 3", k, got)
		}
		want := "eager"
		if k >= gatePeriod {
			want = "split"
		}
		if got := poolKind.Load(); got != want {
			t.Fatalf("step %d: the kernel saw %v, want %v", k, got, want)
		}
	}
}

// TestWakeForSmall: inside a host step a loop split only onto a spinning
// worker, run whole since none spins, wakes a parked one; outside steps,
// or after a step began beside as many as there are workers, it does not.
func TestWakeForSmall(t *testing.T) {
	p := NewIntra(2)
	defer p.Close()
	small := float64(3 * grainNs)
	waitParked := func() {
		for p.parked.Load() == 0 {
			time.Sleep(50 * time.Microsecond)
		}
	}
	stays := func(what string) {
		t.Helper()
		waitParked()
		if p.runs.Load() > 1 {
			// As the crowded step's begin would have, now: the hold
			// must not run out while the worker parks.
			p.crowdedAt.Store(int64(time.Since(monoEpoch)))
		}
		w0 := p.wakes.Load()
		p.For(64, small/64, 0, func(lo, hi int) {})
		for i := 0; i < 100; i++ {
			runtime.Gosched()
		}
		time.Sleep(time.Millisecond)
		if p.wakes.Load() != w0 {
			t.Fatalf("%s: a small loop woke the parked worker", what)
		}
	}
	stays("outside steps")
	p.stepBegins()
	p.stepBegins() // two steps, one worker: crowded
	stays("beside a crowded step")
	p.stepEnds()
	p.stepEnds()
	p.crowdedAt.Store(-int64(time.Hour))
	p.stepBegins()
	defer p.stepEnds()
	waitParked()
	// The worker woken spins for the step, then may park again before
	// this goroutine looks (on a loaded machine): count its wake-ups.
	w0 := p.wakes.Load()
	p.For(64, small/64, 0, func(lo, hi int) {})
	for t0 := time.Now(); p.wakes.Load() == w0; {
		runtime.Gosched()
		if time.Since(t0) > 10*time.Second {
			t.Fatal("a small loop inside a step left the worker parked")
		}
	}
}
