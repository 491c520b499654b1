package exec

import (
	"fmt"
	"math"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"mstream/kernels"
)

// checkCovered fails unless every index of hits was visited once.
func checkCovered(t *testing.T, what string, hits []int32) {
	t.Helper()
	for i := range hits {
		if h := atomic.LoadInt32(&hits[i]); h != 1 {
			t.Fatalf("%s: index %d visited %d times", what, i, h)
		}
	}
}

func TestIntraFor(t *testing.T) {
	p := NewIntra(4)
	defer p.Close()
	// The kernels' thread count (which bounds oneDNN's OpenMP team) is the
	// pool's, 1 without one.
	if got := (&kernels.Context{Pool: p}).Threads(); got != 4 {
		t.Errorf("Context.Threads on a pool of 4: %d", got)
	}
	if got := (&kernels.Context{}).Threads(); got != 1 {
		t.Errorf("Context.Threads without a pool: %d", got)
	}
	// Every index once, in equal chunks but the last, whatever the cut (a
	// cost or start past any int's range, or not a number, included).
	for _, n := range []int{0, 1, 7, 1000, 100000} {
		for _, cost := range []float64{0.001, 100, 1e6, 1e300, math.NaN()} {
			for _, start := range []float64{-1, 0, kernels.StartCall, 1e300, math.NaN()} {
				hits := make([]int32, n)
				var mu sync.Mutex
				var calls [][2]int
				p.For(n, cost, start, func(lo, hi int) {
					mu.Lock()
					calls = append(calls, [2]int{lo, hi})
					mu.Unlock()
					for i := lo; i < hi; i++ {
						atomic.AddInt32(&hits[i], 1)
					}
				})
				what := fmt.Sprintf("n=%d cost=%v start=%v", n, cost, start)
				checkCovered(t, what, hits)
				if len(calls) > 4*maxChunksPerThread {
					t.Errorf("%s: %d chunks, more than %d a thread", what, len(calls), maxChunksPerThread)
				}
				per := 0 // the first chunk's size: calls come in any order
				for _, c := range calls {
					if c[0] == 0 {
						per = c[1]
					}
				}
				for _, c := range calls {
					if c[1] != n && c[1]-c[0] != per {
						t.Errorf("%s: chunks %v not equal", what, calls)
						break
					}
				}
			}
		}
	}
}

// TestIntraChunksByStart: how many chunks a loop gets on two threads
// (a worker spinning or not: these loops are worth two minimum splits,
// or less than two grains) depends on its total and on what a chunk
// costs to start: a oneDNN part (StartCall) of a 40 us convolution 4,
// a loop of the same total whose chunks start for nothing 8; always a
// multiple of the two threads, so that neither waits a chunk long for
// the other's last.
func TestIntraChunksByStart(t *testing.T) {
	p := NewIntra(2)
	defer p.Close()
	for _, c := range []struct {
		n           int
		cost, start float64
		want        int
	}{
		{1000, 0.001, 0, 1},               // below two grains: whole
		{1000, 9, 0, 1},                   // 9 us: whole
		{1000, 40, kernels.StartLoop, 8},  // sqrt(40000*2/500) = 12.6, at most 4 a thread
		{1000, 40, kernels.StartCall, 4},  // sqrt(40000*2/4500) = 4.2
		{1000, 40, 1e6, 4},                // a start past the loop: 2 a thread
		{1000, 400, kernels.StartCall, 8}, // sqrt(400000*2/4500) = 13.3, at most 4 a thread
		{1000, 1000, 5e5, 4},              // sqrt(1e6*2/(2*500250)) = 1.4: 2 a thread
		{1000, 100, 5000, 4},              // sqrt(1e5*2/10500) = 4.4
		{1000, 60, 0, 8},                  // 60 us: grains of 7.5 us
		{1000, 45, 0, 8},                  // 45 us, 9 grains: at most 4 a thread
		{3, 1e6, 0, 2},                    // one an element at most, and a multiple of 2
		{128, 21000, 52000, 8},            // mlp's 256x1024x512 at B=256: sqrt(2.69e6*2/104500) = 7.2, 4 a thread
		{1000, 55, 1634, 6},               // sqrt(55000*2/3768) = 5.4: 3 a thread, not 5 over 2
		{64, 42000, 105000, 6},            // mlp's 256x512x1024: 5.1 -> 3 a thread
		{1000, 1e300, 0, 8},               // huge: no wrap
		{1000, 40, -5, 8},                 // a negative start is none
		{1000, 40, math.NaN(), 8},         // and so is NaN
		{1000, math.NaN(), 0, 1},          // a cost that is not a number: whole
		{1000, 40, math.Inf(1), 4},        // an endless start: 2 a thread
		{1 << 30, 1e300, math.Inf(1), 4},  // and over an endless loop (Inf/Inf)
	} {
		var calls atomic.Int32
		p.For(c.n, c.cost, c.start, func(lo, hi int) { calls.Add(1) })
		if got := int(calls.Load()); got != c.want {
			t.Errorf("n=%d cost=%v start=%v: %d chunks, want %d", c.n, c.cost, c.start, got, c.want)
		}
	}
}

// giveWorkerAChunk runs a loop of two chunks on p (of two threads) until
// the worker runs one (the caller's waits until the other has started,
// which only the worker can start meanwhile) and finishes it after the
// caller has left the job (so that the worker does not find it listed
// and claimed: TestIntraWorkerSpinsPastClaimedJob), so that its spin
// starts now.
func giveWorkerAChunk(p *Intra) {
	var took atomic.Bool
	wait := func(cond func() bool) {
		for t0 := time.Now(); !cond() && time.Since(t0) < time.Millisecond; {
			// A worker woken from its park waits on this P's run queue.
			runtime.Gosched()
		}
	}
	for !took.Load() {
		p.For(2, 1e9, 0, func(lo, hi int) {
			if lo == 1 {
				took.Store(true)
				wait(func() bool { return p.queued.Load() == 0 })
				return
			}
			wait(took.Load)
		})
	}
}

// TestIntraSmallLoopsSplitOnlyOntoSpinning: a loop worth two grains but
// less than two minimum splits runs whole while the workers are parked
// (waking one costs more than the loop), and is split while a worker
// spins, which takes a chunk without a wake-up.
func TestIntraSmallLoopsSplitOnlyOntoSpinning(t *testing.T) {
	p := NewIntra(2)
	defer p.Close()
	const n = 64
	cost := float64(3*grainNs) / n // 3 grains, under 2 minimum splits
	chunks := func() int {
		var calls atomic.Int32
		p.For(n, cost, 0, func(lo, hi int) { calls.Add(1) })
		return int(calls.Load())
	}
	for p.parked.Load() == 0 {
		time.Sleep(50 * time.Microsecond)
	}
	if c := chunks(); c != 1 {
		t.Fatalf("a small loop with the worker parked ran in %d chunks, want 1 (whole)", c)
	}
	// A worker spins from its last chunk for intraSpin: give it one, and
	// catch it spinning (a loaded machine may deschedule it past its spin,
	// so a few tries).
	for try := 0; ; try++ {
		giveWorkerAChunk(p)
		t0 := time.Now()
		for p.spinning.Load() == 0 && time.Since(t0) < time.Millisecond {
			// A worker woken from its park waits on this P's run queue.
			runtime.Gosched()
		}
		if c := chunks(); c > 1 {
			break
		}
		if try == 100 {
			t.Fatalf("a small loop never split onto a spinning worker in %d tries", try)
		}
	}
}

// TestIntraSpinMore: a worker spins intraSpin from its last job, and up
// to intraRunSpin while a host step runs on the pool or for intraSpin
// after one ended; never longer.
func TestIntraSpinMore(t *testing.T) {
	p := NewIntra(1)
	defer p.Close()
	now := time.Now()
	ago := func(d time.Duration) time.Time { return now.Add(-d) }
	half := (intraSpin + intraRunSpin) / 2
	for _, tc := range []struct {
		name  string
		steps int32
		ended time.Duration // before now
		last  time.Duration // the worker's last job, before now
		want  bool
	}{
		{"no step, fresh", 0, 10 * intraRunSpin, intraSpin / 2, true},
		{"no step, past intraSpin", 0, 10 * intraRunSpin, intraSpin + time.Microsecond, false},
		{"step running", 1, 10 * intraRunSpin, half, true},
		{"step running, past intraRunSpin", 1, 10 * intraRunSpin, intraRunSpin, false},
		{"step just ended", 0, intraSpin / 2, half, true},
		{"step ended intraSpin ago", 0, intraSpin, half, false},
		{"step just ended, past intraRunSpin", 0, 0, intraRunSpin + time.Microsecond, false},
	} {
		p.runs.Store(tc.steps)
		p.lastEnd.Store(int64(now.Sub(monoEpoch) - tc.ended))
		if got := p.spinMore(ago(tc.last), now); got != tc.want {
			t.Errorf("%s: spinMore = %v, want %v", tc.name, got, tc.want)
		}
	}
	p.runs.Store(0)
}

// TestIntraWorkerSpinsPastClaimedJob: a worker that finds the listed job
// claimed to its last chunk (its caller ran them all) goes back to its
// spin rather than parking, so that the next split (a model's next layer)
// finds it awake. Parking happens under the same lock as dropping the
// job, so a dropped job with the worker not parked shows the rule; a
// worker descheduled past its spin parks anyway, hence the tries.
func TestIntraWorkerSpinsPastClaimedJob(t *testing.T) {
	p := NewIntra(2)
	defer p.Close()
	for try := 0; ; try++ {
		giveWorkerAChunk(p)
		j := newIntraJob(func(int, int) {}, 2, 1, 2)
		j.ends.Store(2 | 2<<32) // claimed to its last chunk
		p.publish(j)
		for t0 := time.Now(); p.queued.Load() != 0 && time.Since(t0) < time.Second; {
			runtime.Gosched()
		}
		parked := p.parked.Load()
		p.unlist(j)
		if parked == 0 {
			return
		}
		if try == 100 {
			t.Fatalf("the worker parked on a claimed job in %d of %d tries", try+1, try+1)
		}
	}
}

// TestIntraConcurrent runs many For calls at once, some nested inside a
// chunk, on a pool of 3 threads: every index is visited once, and no more
// than the pool's workers run chunks beside the callers.
func TestIntraConcurrent(t *testing.T) {
	const threads, callers = 3, 8
	p := NewIntra(threads)
	defer p.Close()
	var inChunk, most atomic.Int32
	var callersIn atomic.Int32
	var wg sync.WaitGroup
	for c := 0; c < callers; c++ {
		wg.Add(1)
		go func(c int) {
			defer wg.Done()
			for it := 0; it < 50; it++ {
				n := 1 + (c*131+it*17)%5000
				hits := make([]int32, n)
				callersIn.Add(1)
				p.For(n, 1e5, 0, func(lo, hi int) {
					k := inChunk.Add(1)
					for m := most.Load(); k > m && !most.CompareAndSwap(m, k); m = most.Load() {
					}
					if it%7 == 0 && hi-lo > 1 {
						// A nested loop, as a kernel inside a chunk may make.
						p.For(hi-lo, 1e5, 0, func(a, b int) {
							for i := a; i < b; i++ {
								atomic.AddInt32(&hits[lo+i], 1)
							}
						})
					} else {
						for i := lo; i < hi; i++ {
							atomic.AddInt32(&hits[i], 1)
						}
					}
					inChunk.Add(-1)
				})
				callersIn.Add(-1)
				checkCovered(t, fmt.Sprintf("caller %d iteration %d n=%d", c, it, n), hits)
			}
		}(c)
	}
	wg.Wait()
	// Callers run chunks too; the pool adds at most threads-1 goroutines.
	if m := most.Load(); m > callers+threads-1 {
		t.Errorf("%d chunks ran at once: more than %d callers and %d workers", m, callers, threads-1)
	}
}

// TestIntraPanic: a panic in any chunk reaches the caller, after every
// other chunk has stopped, and the pool keeps working.
func TestIntraPanic(t *testing.T) {
	p := NewIntra(4)
	defer p.Close()
	for _, bad := range []int{0, 1, 3} {
		var running atomic.Int32
		func() {
			defer func() {
				r := recover()
				if r != fmt.Sprint("chunk ", bad) {
					t.Errorf("chunk %d panicked: recovered %v", bad, r)
				}
				if n := running.Load(); n != 0 {
					t.Errorf("chunk %d panicked: %d chunks still running when For returned", bad, n)
				}
			}()
			p.For(4, 1e6, 0, func(lo, hi int) {
				running.Add(1)
				defer running.Add(-1)
				if lo == bad {
					panic(fmt.Sprint("chunk ", bad))
				}
				time.Sleep(time.Millisecond)
			})
		}()
	}
	hits := make([]int32, 100)
	p.For(100, 1e6, 0, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			atomic.AddInt32(&hits[i], 1)
		}
	})
	checkCovered(t, "after the panics", hits)
}

// TestIntraClose: Close stops every worker (none left behind, parked or
// spinning), and a For after Close still runs, on its caller.
func TestIntraClose(t *testing.T) {
	before := runtime.NumGoroutine()
	p := NewIntra(6)
	hits := make([]int32, 1000)
	p.For(1000, 1e6, 0, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			atomic.AddInt32(&hits[i], 1)
		}
	})
	checkCovered(t, "before Close", hits)
	p.Close()
	// A worker's goroutine ends just after it reports done to Close
	// (under -race, 3 goroutines against 2 in 3 of 30 runs).
	n := runtime.NumGoroutine()
	for t0 := time.Now(); n > before && time.Since(t0) < time.Second; n = runtime.NumGoroutine() {
		time.Sleep(time.Millisecond)
	}
	if n > before {
		t.Errorf("%d goroutines a second after Close, %d before NewIntra", n, before)
	}
	hits = make([]int32, 1000)
	p.For(1000, 1e6, 0, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			atomic.AddInt32(&hits[i], 1)
		}
	})
	checkCovered(t, "after Close", hits)
}

// BenchmarkIntraFor: a loop of two chunks of about 20 us each, the
// smallest the pool splits, back to back as a model's layers run: what a
// split costs beyond the work (ns/op against twice the work on one
// thread, cpu-ns/op the process's CPU time over it, spinning included).
//
//	go test ./exec -run '^$' -bench IntraFor
func BenchmarkIntraFor(b *testing.B) {
	const n = 2 << 10
	work := func(x []float64, lo, hi int) {
		for i := lo; i < hi; i++ {
			v := x[i]
			for r := 0; r < 15; r++ {
				v = v*0.999 + 1
			}
			x[i] = v
		}
	}
	x := make([]float64, n+200)
	for _, gap := range []int{0, 200} {
		b.Run(fmt.Sprint("serial/gap", gap), func(b *testing.B) {
			cpu0 := cpuTime()
			for i := 0; i < b.N; i++ {
				work(x, 0, n+gap)
			}
			b.ReportMetric(float64((cpuTime()-cpu0).Nanoseconds())/float64(b.N), "cpu-ns/op")
		})
		b.Run(fmt.Sprint("pool/gap", gap), func(b *testing.B) {
			p := NewIntra(2)
			defer p.Close()
			cpu0 := cpuTime()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				p.For(n, minChunkNs/(n/2), 0, func(lo, hi int) { work(x, lo, hi) })
				// A serial kernel between two parallel ones.
				work(x, 0, gap)
			}
			b.StopTimer()
			b.ReportMetric(float64((cpuTime()-cpu0).Nanoseconds())/float64(b.N), "cpu-ns/op")
		})
	}
}

// BenchmarkHandOff: what handing one of two independent kernels of w
// each to the inter-op pool costs against running both on the caller
// (serial), the caller locked to its OS thread as a C client's cgo call
// is (whose goroutine, when it blocks, parks its thread and must be woken
// by a futex): pool waits for the worker, reclaim takes the task back
// when no worker has started it by the time the caller's own kernel is
// done, as the host step does (step.offer). ns/op below serial's is a
// gain; cpu-ns/op counts the wake-ups. On this project's 2-core machine,
// shared (load 5-9), pool lost at every w from 2 to 50 us (2 us: 32 us
// against 4; 50 us: 131-157 against 100-120) and reclaim stayed within
// 1.5-5 us of serial (50 us: 119 against 120):
//
//	go test ./exec -run '^$' -bench HandOff
func BenchmarkHandOff(b *testing.B) {
	spin := func(d time.Duration) {
		for t0 := time.Now(); time.Since(t0) < d; {
		}
	}
	for _, w := range []time.Duration{2 * time.Microsecond, 5 * time.Microsecond, 10 * time.Microsecond, 20 * time.Microsecond, 50 * time.Microsecond} {
		for _, mode := range []string{"serial", "pool", "reclaim"} {
			b.Run(fmt.Sprintf("%s/w%v", mode, w), func(b *testing.B) {
				p := NewPool(2)
				defer p.Close()
				done := make(chan struct{}, 1)
				var claim atomic.Bool
				task := func() {
					if mode == "reclaim" && !claim.CompareAndSwap(false, true) {
						return
					}
					spin(w)
					done <- struct{}{}
				}
				cpu0 := cpuTime()
				b.ResetTimer()
				ch := make(chan struct{})
				go func() {
					runtime.LockOSThread()
					defer runtime.UnlockOSThread()
					for i := 0; i < b.N; i++ {
						if mode == "pool" {
							p.Submit(task)
							spin(w)
							<-done
						} else if mode == "reclaim" {
							claim.Store(false)
							p.Submit(task)
							spin(w)
							if claim.CompareAndSwap(false, true) {
								spin(w)
							} else {
								<-done
							}
						} else {
							spin(2 * w)
						}
					}
					close(ch)
				}()
				<-ch
				b.StopTimer()
				b.ReportMetric(float64((cpuTime()-cpu0).Nanoseconds())/float64(b.N), "cpu-ns/op")
			})
		}
	}
}

// TestIntraCallersBeyondThreads: while as many For calls as the pool has
// threads are in progress, a further caller runs its loop whole on its own
// thread instead of cutting it into chunks that a worker would have to
// take over (on a machine with as many cores as threads, such a worker is
// one thread too many: preempted in a chunk, it held its caller for the
// scheduler's time slice, issue 22's p99 at two client threads).
func TestIntraCallersBeyondThreads(t *testing.T) {
	p := NewIntra(2)
	defer p.Close()
	// A: two chunks, each blocked until released, so A's caller and the
	// one worker are both inside A's For.
	var started sync.WaitGroup
	started.Add(2)
	release := make(chan struct{})
	doneA := make(chan struct{})
	go func() {
		defer close(doneA)
		p.For(2, 1e9, 0, func(lo, hi int) {
			started.Done()
			<-release
		})
	}()
	started.Wait()
	var calls [][2]int
	p.For(8, 1e9, 0, func(lo, hi int) { calls = append(calls, [2]int{lo, hi}) })
	close(release)
	<-doneA
	if len(calls) != 1 || calls[0] != [2]int{0, 8} {
		t.Fatalf("a For beside a caller that holds every thread ran %v, want [[0 8]] (whole, on its caller)", calls)
	}
	// Alone again, the same loop is cut into chunks.
	calls = calls[:0]
	var mu sync.Mutex
	p.For(8, 1e9, 0, func(lo, hi int) { mu.Lock(); calls = append(calls, [2]int{lo, hi}); mu.Unlock() })
	if len(calls) != 2*maxChunksPerThread {
		t.Fatalf("a lone For ran %v, want %d chunks", calls, 2*maxChunksPerThread)
	}
}

// TestIntraLastChunkHandOff: a job's last chunk sends on finished only to
// a caller that set waitBit (it waits), and a caller that comes after the
// last chunk finds nothing to wait for, whichever of the two runs first.
func TestIntraLastChunkHandOff(t *testing.T) {
	newJob := func() *intraJob { return newIntraJob(func(lo, hi int) {}, 2, 1, 2) }
	// The chunks finish before the caller looks: no send, nothing to wait for.
	j := newJob()
	j.run(0)
	j.run(1)
	if len(j.finished) != 0 {
		t.Fatal("the last chunk sent to a caller that does not wait")
	}
	if r := j.remaining.Add(waitBit); r != waitBit {
		t.Fatalf("caller after the last chunk: remaining %#x, want waitBit alone", r)
	}
	// The caller waits first: the last chunk (only the last) sends.
	j = newJob()
	j.run(0)
	if r := j.remaining.Add(waitBit); r == waitBit {
		t.Fatal("caller with a chunk left found nothing to wait for")
	}
	if len(j.finished) != 0 {
		t.Fatal("a chunk that was not the last sent")
	}
	j.run(1)
	select {
	case <-j.finished:
	default:
		t.Fatal("the last chunk did not wake the waiting caller")
	}
}

// TestIntraUnlistNeverWaits: a caller done with its job does not wait for
// the pool's lock to unlist it; the job stays listed, claimed to its last
// chunk, and the next publish drops it. The pool has no worker: a
// worker's take drops a claimed job too, and could before the test looks.
func TestIntraUnlistNeverWaits(t *testing.T) {
	p := NewIntra(1)
	defer p.Close()
	j := newIntraJob(func(lo, hi int) {}, 1, 1, 1)
	p.publish(j)
	j.work(false)
	p.mu.Lock()
	done := make(chan struct{})
	go func() {
		p.unlist(j)
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		p.mu.Unlock()
		<-done
		t.Fatal("unlist waited for the lock")
	}
	listed := slices.Contains(p.jobs, j)
	p.mu.Unlock()
	if !listed {
		t.Fatal("unlist removed the job without the lock")
	}
	k := newIntraJob(func(lo, hi int) {}, 1, 1, 1)
	p.publish(k)
	k.work(false)
	p.mu.Lock()
	defer p.mu.Unlock()
	if slices.Contains(p.jobs, j) {
		t.Fatal("publish kept a job claimed to its last chunk")
	}
}

// TestIntraClaimEnds: the caller claims a job's chunks from the front and
// the workers from the back, each chunk once, also when they race.
func TestIntraClaimEnds(t *testing.T) {
	j := newIntraJob(func(int, int) {}, 6, 1, 6)
	for i, want := range []struct {
		front bool
		c     int
	}{{true, 0}, {false, 5}, {false, 4}, {true, 1}, {true, 2}, {false, 3}, {true, -1}, {false, -1}} {
		if c := j.claim(want.front); c != want.c {
			t.Fatalf("claim %d (front %v) = %d, want %d", i, want.front, c, want.c)
		}
	}
	if !j.claimedAll() {
		t.Fatal("claimedAll = false with every chunk claimed")
	}
	const n = 10000
	for try := 0; try < 20; try++ {
		j := newIntraJob(func(int, int) {}, n, 1, n)
		var got [2][]int
		var wg sync.WaitGroup
		for e := range got {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for c := j.claim(e == 0); c >= 0; c = j.claim(e == 0) {
					got[e] = append(got[e], c)
				}
			}()
		}
		wg.Wait()
		front, back := got[0], got[1]
		if len(front)+len(back) != n {
			t.Fatalf("%d + %d chunks claimed, want %d", len(front), len(back), n)
		}
		for i, c := range front {
			if c != i {
				t.Fatalf("front claim %d took chunk %d", i, c)
			}
		}
		for i, c := range back {
			if c != n-1-i {
				t.Fatalf("back claim %d took chunk %d", i, c)
			}
		}
	}
}
