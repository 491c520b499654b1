package exec

import (
	"runtime"
	"sync"
	"syscall"
	"testing"
	"time"
)

// onThread runs fn on a goroutine locked to a thread of its own that
// exits afterwards, so that the masks fn sets go with it.
func onThread(fn func()) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		runtime.LockOSThread() // never unlocked: the thread exits
		fn()
	}()
	<-done
}

// allowedCPUs is the process's CPUs, up to the first 8.
func allowedCPUs(t *testing.T) []int32 {
	var m cpuMask
	if !threadAffinity(&m) {
		t.Fatal("sched_getaffinity failed")
	}
	var cs []int32
	for c := int32(0); c < 1024 && len(cs) < 8; c++ {
		if m.has(c) {
			cs = append(cs, c)
		}
	}
	return cs
}

// TestThisCPU: thisCPU is the CPU a thread pinned there runs on, or -1
// everywhere where it is not known.
func TestThisCPU(t *testing.T) {
	for _, c := range allowedCPUs(t) {
		var got int32
		var pinned bool
		onThread(func() {
			var m cpuMask
			m[c/64] |= 1 << (c % 64)
			pinned = setThreadAffinity(&m)
			got = thisCPU()
		})
		switch {
		case !pinned:
			t.Fatalf("could not pin a thread to CPU %d", c)
		case !hasRDPID && got != -1:
			t.Fatalf("thisCPU = %d without RDPID, want -1", got)
		case hasRDPID && got != c:
			t.Fatalf("thisCPU = %d on a thread pinned to CPU %d", got, c)
		}
	}
	t.Logf("RDPID: %v", hasRDPID)
}

// TestWorkerThreadMoves: when a worker's thread moves off a CPU.
func TestWorkerThreadMoves(t *testing.T) {
	t0 := time.Now()
	var two cpuMask
	two[0] = 0b11
	own := workerThread{can: true, owned: true, allowed: two, off: -1}
	moved := own
	moved.off, moved.at = 1, t0
	for _, tc := range []struct {
		name string
		w    workerThread
		c    int32
		now  time.Time
		want bool
	}{
		{"owned, first move", own, 1, t0, true},
		{"not owned", workerThread{allowed: two, off: -1}, 1, t0, false},
		{"caller unknown", own, -1, t0, false},
		{"caller on a CPU the thread may not use", own, 5, t0, false},
		{"off that CPU already", moved, 1, t0.Add(time.Second), false},
		{"another CPU within moveGap", moved, 0, t0.Add(moveGap / 2), false},
		{"another CPU after moveGap", moved, 0, t0.Add(moveGap), true},
	} {
		if got := tc.w.moves(tc.c, tc.now); got != tc.want {
			t.Errorf("%s: moves(%d) = %v, want %v", tc.name, tc.c, got, tc.want)
		}
	}
}

// TestWorkerThreadOverdue: an owned worker goes through the scheduler
// every ownedRun, before sysmon's forced preemption would.
func TestWorkerThreadOverdue(t *testing.T) {
	t0 := time.Now()
	for _, tc := range []struct {
		name string
		w    workerThread
		now  time.Time
		want bool
	}{
		{"not owned", workerThread{can: true, ranFrom: t0}, t0.Add(time.Hour), false},
		{"cannot own", workerThread{owned: true, ranFrom: t0}, t0.Add(time.Hour), false},
		{"within ownedRun", workerThread{can: true, owned: true, ranFrom: t0}, t0.Add(ownedRun - 1), false},
		{"at ownedRun", workerThread{can: true, owned: true, ranFrom: t0}, t0.Add(ownedRun), true},
	} {
		if got := tc.w.overdue(tc.now); got != tc.want {
			t.Errorf("%s: overdue = %v, want %v", tc.name, got, tc.want)
		}
	}
	if ownedRun >= 10*time.Millisecond {
		t.Errorf("ownedRun %v is not under sysmon's 10 ms", ownedRun)
	}
}

// TestWorkerThreadKeepOffRefused: a mask the kernel refuses (CPUs the
// process may not use) leaves the thread where it was, moving no more.
func TestWorkerThreadKeepOffRefused(t *testing.T) {
	onThread(func() {
		var before, after cpuMask
		threadAffinity(&before)
		w := workerThread{can: true, owned: true, off: -1}
		w.allowed[1000/64] |= 1<<(1000%64) | 1<<(1001%64)
		w.keepOff(1001, time.Now())
		threadAffinity(&after)
		if after != before {
			t.Errorf("the thread's CPUs changed on a refused mask")
		}
		if w.can || w.off != -1 || w.owned {
			t.Errorf("after a refused mask: can %v, off %d, owned %v; want false, -1, false", w.can, w.off, w.owned)
		}
	})
}

// TestWorkerThreadReleaseRefused: a thread whose starting CPUs the kernel
// refuses to restore is handed back anyway, and the worker owns no thread
// again (a locked worker that cannot move would yield at a locked
// goroutine's price).
func TestWorkerThreadReleaseRefused(t *testing.T) {
	onThread(func() {
		var before, after cpuMask
		threadAffinity(&before)
		w := workerThread{can: true, owned: true, off: 1001}
		w.allowed[1000/64] |= 1<<(1000%64) | 1<<(1001%64)
		w.release()
		threadAffinity(&after)
		if after != before {
			t.Errorf("the thread's CPUs changed on a refused mask")
		}
		if w.can || w.owned || w.off != -1 {
			t.Errorf("after a refused release: can %v, owned %v, off %d; want false, false, -1", w.can, w.owned, w.off)
		}
	})
}

// TestWorkerThreadNeedsPs: a pool with more threads than GOMAXPROCS keeps
// its workers' goroutines unlocked (a locked worker spinning holds a P).
func TestWorkerThreadNeedsPs(t *testing.T) {
	if w := newWorkerThread(runtime.GOMAXPROCS(0) + 1); w.can {
		t.Fatal("a worker of a pool wider than GOMAXPROCS may own its thread")
	}
}

// TestIntraTend: a worker owns its thread and keeps off the caller's CPU
// while the pool is not crowded, and hands it back, with its CPUs, while
// it is (or was within crowdHold).
func TestIntraTend(t *testing.T) {
	cpus := allowedCPUs(t)
	if len(cpus) < 2 {
		t.Skip("needs 2 CPUs")
	}
	p := NewIntra(2)
	defer p.Close()
	onThread(func() {
		runtime.UnlockOSThread() // tend locks and unlocks it
		defer runtime.LockOSThread()
		w := workerThread{can: true, off: -1}
		threadAffinity(&w.allowed)
		before := w.allowed
		now := time.Now()
		p.callerCPU.Store(cpus[0])

		// Two steps, one worker: crowded, whichever pool the other
		// step runs on.
		q := NewIntra(2)
		defer q.Close()
		p.stepBegins()
		q.stepBegins()
		if f := p.tend(&w, now); f != nil || w.owned {
			t.Fatalf("crowded: tend gave a syscall (%v) or owned the thread (%v)", f != nil, w.owned)
		}
		q.stepEnds()
		p.stepEnds()
		p.crowdedAt.Store(int64(now.Sub(monoEpoch)))
		if f := p.tend(&w, now); f != nil || w.owned {
			t.Fatalf("crowded within crowdHold: tend gave a syscall (%v) or owned the thread (%v)", f != nil, w.owned)
		}
		now = now.Add(crowdHold)
		f := p.tend(&w, now)
		if !w.owned || f == nil {
			t.Fatalf("not crowded: owned %v, syscall %v; want both", w.owned, f != nil)
		}
		f()
		var m cpuMask
		threadAffinity(&m)
		if m.has(cpus[0]) || !m.has(cpus[1]) || w.off != cpus[0] {
			t.Fatalf("after the move: CPU %d allowed %v, CPU %d allowed %v, off %d", cpus[0], m.has(cpus[0]), cpus[1], m.has(cpus[1]), w.off)
		}
		if f := p.tend(&w, now.Add(moveGap)); f != nil {
			t.Fatal("tend moves a thread already off the caller's CPU")
		}
		p.stepBegins()
		q.stepBegins()
		f = p.tend(&w, now)
		q.stepEnds()
		p.stepEnds()
		if f == nil {
			t.Fatal("crowded again: no release")
		}
		f()
		threadAffinity(&m)
		if w.owned || m != before || w.off != -1 {
			t.Fatalf("after release: owned %v, CPUs restored %v, off %d", w.owned, m == before, w.off)
		}
	})
}

// TestIntraWorkerKeepsOffCaller: with a caller pinned to one CPU, the
// pool's worker runs its chunks on another, and its thread may no longer
// run on the caller's CPU.
func TestIntraWorkerKeepsOffCaller(t *testing.T) {
	cpus := allowedCPUs(t)
	if !hasRDPID || len(cpus) < 2 || runtime.GOMAXPROCS(0) < 2 {
		t.Logf("no RDPID, fewer than 2 CPUs or GOMAXPROCS < 2: the worker does not own its thread")
		if w := newWorkerThread(2); w.can {
			t.Fatal("a worker may own its thread where it cannot keep off a CPU")
		}
		return
	}
	p := NewIntra(2)
	defer p.Close()
	c := cpus[0]
	type seen struct {
		cpu     int32
		allowed cpuMask
	}
	var mu sync.Mutex
	var workerSaw []seen
	onThread(func() {
		var m cpuMask
		m[c/64] |= 1 << (c % 64)
		if !setThreadAffinity(&m) {
			t.Errorf("could not pin the caller to CPU %d", c)
			return
		}
		caller := syscall.Gettid()
		for i := 0; i < 40; i++ {
			// Two chunks of 1 ms: the worker, woken (70-100 us on
			// this project's VM), takes one while the caller runs
			// the other.
			p.For(2, 1e6, 0, func(lo, hi int) {
				if syscall.Gettid() != caller {
					s := seen{cpu: thisCPU()}
					threadAffinity(&s.allowed)
					mu.Lock()
					workerSaw = append(workerSaw, s)
					mu.Unlock()
				}
				for t0 := time.Now(); time.Since(t0) < time.Millisecond; {
				}
			})
			time.Sleep(200 * time.Microsecond)
		}
	})
	if len(workerSaw) < 5 {
		t.Fatalf("the worker ran %d of 40 loops' chunks", len(workerSaw))
	}
	// Its first chunk may come before its first move.
	for i, s := range workerSaw[1:] {
		if s.cpu == c || s.allowed.has(c) {
			t.Errorf("worker chunk %d ran on CPU %d with CPU %d allowed=%v: the caller's CPU", i+1, s.cpu, c, s.allowed.has(c))
		}
	}
}
