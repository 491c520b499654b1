package exec

import (
	"math"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"mstream/fifo"
)

// Pool is a fixed set of worker goroutines serving a FIFO queue: the
// inter-op pool. Submit never blocks, so workers may submit from inside
// tasks without deadlock.
type Pool struct {
	mu      sync.Mutex
	cond    *sync.Cond
	queue   fifo.Queue[func()] // tasks waiting for a worker
	closed  bool
	size    int
	waiting int          // workers parked on cond (under mu)
	idle    atomic.Int32 // waiting - queue.Len(), kept under mu, read without it
}

// NewPool starts n workers (n <= 0 means one per CPU).
func NewPool(n int) *Pool {
	if n <= 0 {
		n = runtime.NumCPU()
	}
	p := &Pool{size: n}
	p.cond = sync.NewCond(&p.mu)
	for i := 0; i < n; i++ {
		go p.worker()
	}
	return p
}

// Size is the number of workers.
func (p *Pool) Size() int { return p.size }

// Submit queues f.
func (p *Pool) Submit(f func()) {
	p.mu.Lock()
	p.queue.Push(f)
	p.countIdleLocked()
	p.mu.Unlock()
	p.cond.Signal()
}

// Idle says whether a worker waits with nothing queued for it: a task
// submitted now would start without waiting for another to finish. It
// reads one atomic, for the executor to ask before each hand-off.
func (p *Pool) Idle() bool { return p.idle.Load() > 0 }

func (p *Pool) countIdleLocked() {
	p.idle.Store(int32(p.waiting - p.queue.Len()))
}

// Close stops the workers once the queue is drained.
func (p *Pool) Close() {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	p.cond.Broadcast()
}

func (p *Pool) worker() {
	for {
		p.mu.Lock()
		for p.queue.Len() == 0 && !p.closed {
			p.waiting++
			p.countIdleLocked()
			p.cond.Wait()
			p.waiting--
		}
		f, ok := p.queue.Pop()
		if !ok {
			p.countIdleLocked()
			p.mu.Unlock()
			return
		}
		p.countIdleLocked()
		p.mu.Unlock()
		f()
	}
}

// Intra is the intra-op Parallelizer: a session's (or a group's) fixed set
// of n-1 worker goroutines, which with the caller make the n threads of
// intra_op_parallelism_threads. For splits a loop worth two minimum
// splits (minChunkNs) or more (a smaller loop, of two grains or more,
// only while a worker spins: waking a parked one costs more than such a
// loop) into chunks by what its caller says a chunk costs to start (For's
// start: a oneDNN primitive call per chunk, a packed GEMM's A read once
// more, nothing for a plain loop): few where starts cost, more where
// a finer cut only lets the threads finish together, at least
// minChunksPerThread a thread (as every loop was cut before For took its
// start), at most maxChunksPerThread, each worth grainNs or
// more (chunks says how); the caller and the idle workers claim chunks
// from a shared counter, so concurrent Runs share the n-1 workers (never
// more threads than that beside the callers), a caller whose workers are
// all busy runs every chunk itself, and a worker that comes late still
// takes the chunks nobody has reached. The chunks are the loop's
// elements in equal runs; a kernel's result must not depend on where
// they are cut (blocks fixed by the shape: blas.SgemmOn, gemmUnits).
// While as many For calls as there are threads are in progress
// (concurrent Runs, each
// caller a thread of its own), a further one runs its loop whole on its
// caller: a worker taking a chunk of it would be one runnable thread more
// than the pool's count, and preempted inside the chunk it would hold its
// caller for the scheduler's time slice (issue 22: p99 at two client
// threads, B=16, 3 ms against a p50 of 0.7).
//
// A worker spins for intraSpin from its last job (or its wake-up), or
// up to intraRunSpin while a host step runs on the pool (Plan.Run says
// so) and for intraSpin after one ends, before it parks (its goroutine
// yielding now and then), also when the job it finds listed has every
// chunk claimed already (its caller runs the last one), and a caller
// waiting for its last chunks spins as long, without yielding, before it
// blocks: as TF's Eigen pool does, back-to-back parallel kernels (a
// model's layers, and at one client thread the next Run's first layer)
// then hand work over without the scheduler's park and wake-up. Both
// spins pause (cpuRelax) between their loads. A loop run whole only
// because no worker spins wakes a parked one for the loops after it
// (wakeForSmall), within a host step.
//
// On Linux, where the CPU a thread runs on is known cheaply (RDPID), a
// worker owns its thread (runtime.LockOSThread) while the pool is not
// crowded (tend) and keeps that thread off the CPU where the pool's caller last
// split a loop (sched_setaffinity, at most once a millisecond: tend,
// workerThread). The kernel places a woken thread near its waker: on the
// project's 2-vCPU VM a woken worker landed on the caller's CPU while
// the other idled, then ran the step's chunks after the caller's or, its
// spin preempting the caller, held it off its CPU for up to
// intraRunSpin. mlp B=16 at one client thread, requests over 1.5 ms in
// 3 s: 13-35 -> 4-15, p99 0.64 -> 0.46 ms (keras_cnn B=16 2.88 -> 1.54).
// An owned worker goes through the Go scheduler every ownedRun
// (yieldOwned), which sysmon would otherwise force every 10 ms, at a
// locked goroutine's price.
//
// Lock order: Intra.mu is a leaf.
type Intra struct {
	mu       sync.Mutex
	cond     *sync.Cond
	jobs     []*intraJob  // jobs with chunks perhaps not yet claimed, oldest first
	queued   atomic.Int32 // len(jobs), read by spinning workers without mu
	spinning atomic.Int32
	parked   atomic.Int32 // workers waiting on cond (changed under mu)
	// callerCPU is the CPU (thisCPU) where a For's caller last split a
	// loop, -1 unknown: a worker with a thread of its own keeps off it
	// (tend). Written only when it changes.
	callerCPU atomic.Int32
	closed    bool
	workers   int
	done      sync.WaitGroup
	// callers is written by every For, split or not: on a line of its own,
	// away from queued, which spinning workers poll (128 bytes: a core may
	// fetch lines in pairs).
	_       [128]byte
	callers atomic.Int32 // For calls in progress
	runs    atomic.Int32 // host steps running on the pool (Plan.Run): spinMore
	lastEnd atomic.Int64 // when the last of them ended, since monoEpoch
	// crowdedAt is when a step began with more steps running than
	// workers (since monoEpoch): wakeForSmall wakes none for crowdHold
	// after.
	crowdedAt atomic.Int64
	// modeSteps counts the host steps run in each loop mode (runHost,
	// LoopModes).
	modeSteps [loopModes]atomic.Int64
	// wakes counts the workers' returns from a park.
	wakes atomic.Int64
	_     [72]byte
}

// waitBit is set in intraJob.remaining by a caller that waits on
// finished for its last chunks (For).
const waitBit = 1 << 30

// intraJob is one For call: chunks of per elements over [0, n).
type intraJob struct {
	fn        func(lo, hi int)
	n, per    int
	chunks    int32
	ends      atomic.Uint64 // the chunks not yet claimed, [front, back): front in the low half
	remaining atomic.Int32  // chunks not yet finished, plus waitBit once the caller waits
	finished  chan struct{} // receives once remaining falls to waitBit
	pmu       sync.Mutex
	panicked  any
}

const (
	// minChunkNs: a loop worth less than two of these is not worth
	// waking a parked worker for (the caller's futex wake and the
	// worker's start-up, 5-50 us on a loaded machine); it is split only
	// onto a worker that spins already, which takes a chunk in well under
	// a microsecond.
	minChunkNs = 20000
	// grainNs: no chunk is worth less, and a loop is split only when it
	// is worth two (the pool's hand-over and a worker's start on it).
	grainNs = 5000
	// claimNs is what the pool adds to each chunk it cuts: claiming it
	// (an atomic on a line the threads share), the call, the count of
	// chunks finished; a caller's start (For's start) comes on top.
	claimNs = 250
	// minChunksPerThread and maxChunksPerThread bound the cut whatever
	// the start. The least: chunks enough that a worker that comes late
	// (woken from its park, or descheduled by another process on a shared
	// machine) still takes the chunks the caller has not reached, and a
	// caller that finishes first waits for one small chunk rather than
	// half the loop. Cut one per thread, mlp B=1 at one client thread on
	// the shared 2-core machine (load 6-8) had the worker run 8-15% of
	// the chunks: woken or scheduled late, it found the caller had
	// claimed both; and where a large start cut the transformer's 20-80
	// us GEMMs at B=1 one a thread, it took 5-9% more CPU a request in 4
	// of 5 A/B runs. The most: at 2 a thread for every loop, perf of mlp
	// B=16 had the caller wait for the worker's last chunk in 9-11% of
	// its samples, and 4 a thread for every loop gained the GEMM models
	// 5-20% but lost the CNNs 5-11% at B=1 (a oneDNN part's start): hence
	// a cut per loop by its start, between the two.
	minChunksPerThread = 2
	maxChunksPerThread = 4
	// intraSpin bounds a worker's spin for the next job and a caller's
	// spin for its last chunks: longer than the small kernels between two
	// parallel ones and than a client's gap between two Runs (at 20 us
	// the worker had parked again by a CNN's second convolution: cnn B=1
	// one client thread 4684 -> 5646 QPS at 100 us, 300 us no better),
	// short enough to cost little when nothing comes.
	intraSpin = 100 * time.Microsecond
	// intraRunSpin bounds both spins instead while a host step runs on
	// the pool (runs): the gaps between a step's parallel loops (its
	// small or unsplit kernels) and a worker's chunk late by a preemption
	// are often longer than intraSpin. A worker that parked in such a gap
	// was woken for the next loop through the Go scheduler's wake of an
	// idle thread, which on this 2-core VM the kernel put on the caller's
	// own core while the other idled, and a caller (a locked thread) that
	// parked for its last chunk handed its P off and was handed it back:
	// perf sched_switch of cnn B=16 at one client thread had the caller
	// preempted 0.3-0.9 ms by the woken thread, and 3% of requests took
	// twice the median. Means of 5 alternating 2 s runs at one client
	// thread, p99 from 100 us to 2 ms: cnn B=16 3.25 -> 1.95 ms, keras_cnn
	// B=16 3.18 -> 1.95, mlp B=16 1.09 -> 0.64, keras_mlp B=16 0.64 ->
	// 0.48, cnn B=1 0.26 -> 0.19, medians level; neither spin alone did
	// as well (cnn B=16, runs of 2-5 s: the worker's alone p99 2.4-4.9
	// ms, the caller's alone, for twice its chunk's cost, 2.2-3.2). A
	// step that waits on something else (a queue, a long kernel left
	// whole) costs at most this much of a thread's spin before it parks.
	intraRunSpin = 2 * time.Millisecond
	// ownedRun: a worker that owns its thread goes through the Go
	// scheduler at least this often (spin), under the 10 ms after which
	// sysmon preempts a goroutine that has not.
	ownedRun = 5 * time.Millisecond
	// crowdHold: for this long after a step began with more steps
	// running than workers (client threads as many as the pool's
	// threads), wakeForSmall wakes no worker: a worker spinning for
	// small loops beside two client threads on two cores is a third
	// runnable thread (the bundled model at B=16, two client threads:
	// 87k -> 78k QPS).
	crowdHold = 10 * time.Millisecond
	// callerLockTries bounds a caller's tries of mu before it blocks
	// (lockCaller): a few microseconds of TryLock on a held mutex.
	callerLockTries = 1000
	// spinCheck paces the spins, a worker's and a caller's: loads, each
	// after a pause (cpuRelax, 25 ns here), between two clock reads
	// (without pauses, at 256 loads a read, clock_gettime took a third of
	// a spin's samples; 64 paused loads are 1.6 us).
	spinCheck = 64
)

// NewIntra returns an intra-op parallelizer with n threads, the caller's
// included (n <= 0: one per CPU). Close stops its workers.
func NewIntra(n int) *Intra {
	if n <= 0 {
		n = runtime.NumCPU()
	}
	p := &Intra{workers: n - 1}
	p.cond = sync.NewCond(&p.mu)
	p.callerCPU.Store(-1)
	p.crowdedAt.Store(-int64(crowdHold)) // never crowded yet
	p.done.Add(p.workers)
	for i := 0; i < p.workers; i++ {
		go p.worker()
	}
	return p
}

// Threads is n, the threads a For runs on at most (kernels.Sized): the
// bound kernels also give the libraries that start threads of their own.
func (p *Intra) Threads() int { return p.workers + 1 }

// Close stops the workers once they finish the chunks they run and waits
// for them; a For after Close runs on its caller alone.
func (p *Intra) Close() {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	p.cond.Broadcast()
	p.done.Wait()
}

// For runs fn over [0, n): cost is the work per element in ns, start
// what a chunk costs its thread to begin beyond the pool's hand-over
// (kernels.Parallelizer).
func (p *Intra) For(n int, cost, start float64, fn func(lo, hi int)) {
	p.loop(n, cost, start, fn, true)
}

// loop is For; eager says whether a small loop (under two minimum
// splits) is split onto a spinning worker, or run whole waking a parked
// one for the loops after it (wakeForSmall); without it a small loop
// runs whole (a step in loopsSplit; chunks says which).
func (p *Intra) loop(n int, cost, start float64, fn func(lo, hi int), eager bool) {
	if n <= 0 {
		return
	}
	chunks := p.chunks(n, cost, start, eager)
	if c := p.callers.Add(1); c > int32(p.workers) {
		chunks = 1
	} else if chunks <= 1 && eager {
		p.wakeForSmall(float64(n) * cost)
	}
	defer p.callers.Add(-1)
	if chunks <= 1 {
		fn(0, n)
		return
	}
	per := (n + chunks - 1) / chunks
	chunks = (n + per - 1) / per
	j := newIntraJob(fn, n, per, chunks)
	if c := thisCPU(); p.callerCPU.Load() != c {
		p.callerCPU.Store(c)
	}
	p.publish(j)
	j.work(true)
	p.unlist(j)
	if j.remaining.Load() != 0 {
		// Without yielding: the chunks left are running on workers that
		// claimed them, and a caller entered from C (cgo) is a locked
		// thread, for which runtime.Gosched hands its P to another thread
		// and sleeps on a futex until it gets one back (a thread switch
		// each way: 18% of mlp B=1's samples at one client thread).
		wait := intraSpin
		if p.runs.Load() > 0 {
			wait = intraRunSpin
		}
		for t0 := time.Now(); j.remaining.Load() != 0 && time.Since(t0) < wait; {
			for i := 0; i < spinCheck && j.remaining.Load() != 0; i++ {
				cpuRelax()
			}
		}
	}
	// The caller waits on finished only while a chunk still runs: it
	// sets waitBit in remaining, and the worker whose decrement leaves
	// waitBit alone sends. (Where the last chunk's worker sent whenever
	// its decrement reached zero, a caller that had seen the zero first
	// parked in the receive until the send: at one client thread 12% of
	// mlp B=1's requests, each a locked thread's park and hand-off of its
	// P, 0.1-0.4 ms; p99 0.40 ms against ONNX Runtime's 0.09.)
	if j.remaining.Add(waitBit) != waitBit {
		<-j.finished
	}
	// A panic in a chunk is re-raised on the caller's goroutine once every
	// chunk has stopped, where the executor turns it into a status.
	if j.panicked != nil {
		panic(j.panicked)
	}
}

// wakeForSmall wakes a parked worker, without waiting for it, for a loop
// of total ns that For runs whole only because no worker spins (two
// grains or more, under two minimum splits), while a host step runs on
// the pool: the worker then spins for the step (spinMore) and takes the
// step's next such loops, and at one client thread the next steps' too.
// The bundled model at B=16, one client thread: its 16 x 256 x 128 GEMM,
// about 8 us, ran whole on the caller on every request, ORT's two
// threads took 19.5 us a request against mstream's one thread 22. Where
// the vCPUs sit far apart this loses (splitGate), and a plan's steps
// then run loopsSplit, which does not wake.
func (p *Intra) wakeForSmall(total float64) {
	if total < 2*grainNs || p.runs.Load() == 0 || p.spinning.Load() != 0 || p.parked.Load() == 0 {
		return
	}
	if p.crowdedLately(time.Now()) {
		return
	}
	p.cond.Signal()
}

// crowdedLately says whether a step began within crowdHold of now with
// more steps running than the pool has workers (stepBegins).
func (p *Intra) crowdedLately(now time.Time) bool {
	return now.Sub(monoEpoch)-time.Duration(p.crowdedAt.Load()) < crowdHold
}

// chunks is how many chunks For cuts a loop of n elements of cost ns
// each, start ns to begin a chunk, into: 1 (whole, on the caller) below
// two grains, or below two minimum splits while no worker spins (or
// always, unless eager: loop); else
// the count that balances the chunks' starts against the wait for the
// last one, at least minChunksPerThread a thread (where the loop has that
// many elements and grains), at most maxChunksPerThread a thread, one an
// element and one a grain, and a multiple of the threads where it is at
// least one a thread.
//
// With c chunks over t threads a loop of total ns ends after about
// (total + c*(start+claimNs))/t, each thread's share and starts, plus
// half a chunk, total/(2c), that one thread runs while the others have
// none left (or a late worker's head start): least at c = sqrt(total *
// t / (2*(start+claimNs))). A oneDNN part (StartCall) of a 40 us
// convolution gets 4 chunks over 2 threads, one of a packed GEMM's
// panel blocks 8.
func (p *Intra) chunks(n int, cost, start float64, eager bool) int {
	// Bounded in float64 first: a huge cost must not wrap the int.
	// (A cost that is not a number fails the first test.)
	total := float64(n) * cost
	if p.workers == 0 || !(total >= 2*grainNs) || total < 2*minChunkNs && (!eager || p.spinning.Load() == 0) {
		return 1
	}
	if !(start > 0) { // negative, or not a number
		start = 0
	}
	t := float64(p.workers + 1)
	c := math.Sqrt(total * t / (2 * (start + claimNs)))
	if !(c >= minChunksPerThread*t) { // also NaN: an infinite start over an infinite total
		c = minChunksPerThread * t
	}
	most := min(total/grainNs, maxChunksPerThread*t, float64(n))
	c = min(c, most)
	if c >= t {
		// A whole number of chunks a thread: threads that claim equal
		// chunks at the same pace end together, where one chunk more
		// than a multiple of t leaves t-1 of them idle for a chunk
		// (mlp's B=256 layers, 7 and 5 chunks over 2 threads: 11-19% of
		// the layer on one thread alone).
		r := math.Round(c/t) * t
		if r > most {
			r = math.Floor(most/t) * t
		}
		c = r
	}
	return int(c)
}

// publish lists j for the workers, dropping the jobs claimed to their
// last chunk that unlist left listed, and wakes as many parked workers as
// j has chunks for beyond the caller's and the spinning workers'.
func (p *Intra) publish(j *intraJob) {
	p.lockCaller()
	if p.closed {
		p.mu.Unlock()
		return
	}
	p.dropClaimed()
	p.jobs = append(p.jobs, j)
	p.queued.Store(int32(len(p.jobs)))
	wake := min(int(j.chunks)-1-int(p.spinning.Load()), int(p.parked.Load()))
	p.mu.Unlock()
	for ; wake > 0; wake-- {
		p.cond.Signal()
	}
}

// unlist removes j, which its caller has claimed to the last chunk, from
// the list if mu is free; else it leaves it to the next publish, or to a
// worker's take, to drop (a worker that takes it finds no chunk to run).
// A caller never waits for mu here: one that did parked (a thread locked
// to its goroutine, its P handed off, 0.3-0.5 ms) on 2% of keras_encoder's
// requests at B=1 and one client thread.
func (p *Intra) unlist(j *intraJob) {
	if !p.mu.TryLock() {
		return
	}
	if i := slices.Index(p.jobs, j); i >= 0 {
		p.jobs = slices.Delete(p.jobs, i, i+1)
	}
	p.queued.Store(int32(len(p.jobs)))
	p.mu.Unlock()
}

// dropClaimed drops the listed jobs claimed to their last chunk (under
// mu): ones whose callers unlist could not remove, and ones the workers
// and callers claimed to the end since.
func (p *Intra) dropClaimed() {
	p.jobs = slices.DeleteFunc(p.jobs, func(q *intraJob) bool { return q.claimedAll() })
}

// lockCaller takes mu for a For's caller: it tries for a while before it
// blocks, since the holder (a worker in take, or another caller, for a
// few loads) lets go at once unless its thread was descheduled.
func (p *Intra) lockCaller() {
	for i := 0; i < callerLockTries; i++ {
		if p.mu.TryLock() {
			return
		}
	}
	p.mu.Lock()
}

// newIntraJob is a For call's job: n elements in chunks of per, none
// claimed yet.
func newIntraJob(fn func(lo, hi int), n, per, chunks int) *intraJob {
	j := &intraJob{fn: fn, n: n, per: per, chunks: int32(chunks), finished: make(chan struct{}, 1)}
	j.remaining.Store(int32(chunks))
	j.ends.Store(uint64(chunks) << 32)
	return j
}

// work claims and runs chunks of j until none is left: from the front
// for j's caller, from the back for a worker (claim).
func (j *intraJob) work(front bool) (woke bool) {
	for {
		c := j.claim(front)
		if c < 0 {
			return woke
		}
		woke = j.run(c) || woke
	}
}

// claim takes j's first unclaimed chunk (front) or its last, -1 when
// none is left. The caller works from the front and the workers from the
// back, so that a thread gets the same part of every loop of a step
// where the threads keep pace: the rows a worker writes in one layer
// (gemmUnits' bands of rows) are the rows it reads in the next, in its
// own cache. Against every thread claiming from the front, with the
// GEMMs split by rows (one client thread, 0.5 s runs alternating for 420
// s, medians): far apart the bundled model at B=256 4502 QPS against
// 4278, mlp B=256 167 against 163, the transformer at B=16 186 against
// 163; near, level at B=256 and for mlp and the transformer at B=16,
// the bundled model at B=16 43983 against 47444 (level, 49671 against
// 48928, in an A/B of the two commits).
func (j *intraJob) claim(front bool) int {
	for {
		v := j.ends.Load()
		f, b := uint32(v), uint32(v>>32)
		if f >= b {
			return -1
		}
		if front {
			if j.ends.CompareAndSwap(v, v+1) {
				return int(f)
			}
		} else if j.ends.CompareAndSwap(v, v-1<<32) {
			return int(b - 1)
		}
	}
}

// claimedAll says whether every chunk of j has been claimed.
func (j *intraJob) claimedAll() bool {
	v := j.ends.Load()
	return uint32(v) >= uint32(v>>32)
}

// run runs chunk c; woke says whether it woke j's caller, which waited
// for it on finished.
func (j *intraJob) run(c int) (woke bool) {
	defer func() {
		if r := recover(); r != nil {
			j.pmu.Lock()
			if j.panicked == nil {
				j.panicked = r
			}
			j.pmu.Unlock()
		}
		if j.remaining.Add(-1) == waitBit {
			j.finished <- struct{}{}
			woke = true
		}
	}()
	lo := c * j.per
	j.fn(lo, min(lo+j.per, j.n))
	return false
}

// take returns a listed job with chunks left to claim, spinning until
// spinMore says no, from the worker's last job (or its wake-up), then parking
// until one is published; nil once closed. A listed job found claimed to
// its last chunk sends the worker back to its spin, not to its park: at
// one client thread a worker that finished its chunk before its caller
// found their job still listed, parked there and slept through most next
// layers' splits (0.5-0.9 parks and 2.5 wake-ups a request of mlp at
// B=1).
func (p *Intra) take(w *workerThread) *intraJob {
	t0 := time.Now()
	p.mu.Lock()
	for {
		p.dropClaimed()
		p.queued.Store(int32(len(p.jobs)))
		if len(p.jobs) > 0 {
			j := p.jobs[0]
			p.mu.Unlock()
			return j
		}
		if p.closed {
			p.mu.Unlock()
			return nil
		}
		if p.spinMore(t0, time.Now()) {
			p.spinning.Add(1)
			p.mu.Unlock()
			p.spin(t0, w)
			p.mu.Lock()
			p.spinning.Add(-1)
			continue
		}
		if f := p.tend(w, time.Now()); f != nil {
			// Off the caller's CPU before the park (the kernel wakes a
			// thread near its waker), or the thread handed back: the
			// syscall without mu.
			p.mu.Unlock()
			f()
			p.mu.Lock()
			continue
		}
		p.parked.Add(1)
		p.cond.Wait()
		p.parked.Add(-1)
		p.wakes.Add(1)
		t0 = time.Now()
		w.ranFrom = t0 // the park went through the scheduler
	}
}

// spin waits for a listed job while spinMore says so, reading the
// clock every spinCheck loads, where it also tends the worker's thread
// (tend) and yields unless the thread is its own (runtime.Gosched: a
// goroutine not locked to its thread yields cheaply, where a locked one
// hands its P and thread off and sleeps until both come back).
func (p *Intra) spin(t0 time.Time, w *workerThread) {
	for p.queued.Load() == 0 {
		for i := 0; i < spinCheck && p.queued.Load() == 0; i++ {
			cpuRelax()
		}
		now := time.Now()
		if !p.spinMore(t0, now) {
			return
		}
		if w.overdue(now) {
			// Through the scheduler before sysmon forces it: a
			// goroutine that runs 10 ms on one P without one is
			// preempted, and a locked one then hands its P and
			// thread off and sleeps until both come back (perf of
			// keras_cnn B=1, one client thread: the worker preempted
			// 264 times in 3 s, 26 us each at the median). Unlocked,
			// the yield is cheap; tend owns the thread again.
			p.yieldOwned(w)
			continue
		}
		if f := p.tend(w, now); f != nil {
			f()
		}
		if !w.owned || !w.can {
			runtime.Gosched()
		}
	}
}

// yieldOwned takes an owned worker through the Go scheduler (overdue):
// it hands its thread back, yields, and owns the thread it resumes on,
// moved off the caller's CPU again, before it looks for a job.
func (p *Intra) yieldOwned(w *workerThread) {
	w.release()
	runtime.Gosched()
	if f := p.tend(w, time.Now()); f != nil {
		f()
	}
}

// tend keeps worker w's thread right for now, returning the syscall to
// make, if any. While the pool is not crowded the worker owns its
// thread (runtime.LockOSThread) and keeps it off the CPU where the
// pool's caller last split a loop. While it is crowded (more host steps
// in the process than the pool's workers, now or within crowdHold) the
// worker hands the thread back, with the CPUs it had, and yields as it
// spins: a locked worker spinning holds its P, and at two client threads
// on two Ps that held a caller off its P for up to intraRunSpin (mlp
// B=16: p99 0.7 -> 4.7 ms).
func (p *Intra) tend(w *workerThread, now time.Time) func() {
	if !w.can {
		return nil
	}
	if stepsRunning.Load() > int32(p.workers) || p.crowdedLately(now) {
		if w.owned {
			return w.release
		}
		return nil
	}
	if !w.owned {
		w.own()
	}
	if c := p.callerCPU.Load(); w.moves(c, now) {
		return func() { w.keepOff(c, now) }
	}
	return nil
}

// spinMore says whether a worker whose last job (or wake-up) was at t0
// spins on at now: for intraSpin from t0, and up to intraRunSpin while a
// host step runs on the pool or one ended less than intraSpin ago (a
// client's gap between two Runs: a worker that parked there, where a
// step's last kernels were left whole, was woken for the next step's
// first loop).
func (p *Intra) spinMore(t0, now time.Time) bool {
	d := now.Sub(t0)
	if d < intraSpin {
		return true
	}
	if d >= intraRunSpin {
		return false
	}
	return p.runs.Load() > 0 || now.Sub(monoEpoch)-time.Duration(p.lastEnd.Load()) < intraSpin
}

// stepBegins and stepEnds bracket a host step that splits its kernels'
// loops on the pool (runHost): while one runs, and for intraSpin after,
// the workers spin longer (spinMore).
func (p *Intra) stepBegins() {
	p.runs.Add(1)
	if stepsRunning.Add(1) > int32(p.workers) {
		p.crowdedAt.Store(int64(time.Since(monoEpoch)))
	}
}
func (p *Intra) stepEnds() {
	p.lastEnd.Store(int64(time.Since(monoEpoch)))
	p.runs.Add(-1)
	stepsRunning.Add(-1)
}

// stepsRunning counts the host steps running on every Intra of the
// process: a pool is crowded when more run than it has workers, whatever
// pools they run on (two sessions' callers and a worker are three
// runnable threads on two CPUs as much as one session's are).
var stepsRunning atomic.Int32

// monoEpoch is the origin of lastEnd's monotonic times.
var monoEpoch = time.Now()

func (p *Intra) worker() {
	defer p.done.Done()
	w := newWorkerThread(p.workers + 1)
	for {
		j := p.take(&w)
		if j == nil {
			return
		}
		switch woke := j.work(false); {
		case w.overdue(time.Now()):
			p.yieldOwned(&w)
		case woke && w.owned:
			// The caller woken is queued on this worker's P, which a
			// worker locked to its thread keeps while it spins.
			runtime.Gosched()
		}
	}
}
