package exec

import (
	"runtime"
	"syscall"
	"time"
	"unsafe"
)

// cpuMask is a sched_setaffinity(2) mask of up to 1024 CPUs.
type cpuMask [16]uint64

func (m *cpuMask) has(c int32) bool { return c >= 0 && c < 1024 && m[c/64]&(1<<(c%64)) != 0 }

func (m *cpuMask) count() (n int) {
	for _, w := range m {
		for ; w != 0; w &= w - 1 {
			n++
		}
	}
	return n
}

// threadAffinity and setThreadAffinity read and set the calling thread's
// CPUs.
func threadAffinity(m *cpuMask) bool {
	_, _, e := syscall.RawSyscall(syscall.SYS_SCHED_GETAFFINITY, 0, unsafe.Sizeof(*m), uintptr(unsafe.Pointer(m)))
	return e == 0
}

func setThreadAffinity(m *cpuMask) bool {
	_, _, e := syscall.RawSyscall(syscall.SYS_SCHED_SETAFFINITY, 0, unsafe.Sizeof(*m), uintptr(unsafe.Pointer(m)))
	return e == 0
}

// moveGap is the least time between two moves of a worker's thread (a
// sched_setaffinity call, 1-2 us, and the move itself).
const moveGap = time.Millisecond

// workerThread is an Intra worker's hold on its thread (Intra.tend). An
// owned one is the worker's own (runtime.LockOSThread), which it keeps
// off the CPU where its pool's caller runs: the kernel places a woken
// thread near its waker, and on this project's 2-vCPU VM it put a
// worker's thread on the caller's CPU while the other idled (perf
// sched_wakeup, mlp B=16 at one client thread: 793 of 1100 wake-ups by
// the caller), where the worker, spinning, held the caller off its own
// CPU for up to intraRunSpin (13 times in 3 s).
type workerThread struct {
	// can: the worker may own its thread. thisCPU knows the CPU, the
	// thread may run on two CPUs or more, and the Go runtime runs as
	// many goroutines at once as the pool has threads (GOMAXPROCS).
	can     bool
	owned   bool
	ranFrom time.Time // when the owned worker last went through the scheduler
	allowed cpuMask   // the thread's CPUs when the worker started
	off     int32     // the CPU the owned thread keeps off, -1 none
	at      time.Time // its last move
}

// newWorkerThread is the hold of a worker of a pool of threads threads,
// made on the worker's goroutine.
func newWorkerThread(threads int) workerThread {
	w := workerThread{off: -1}
	w.can = thisCPU() >= 0 && runtime.GOMAXPROCS(0) >= threads && threadAffinity(&w.allowed) && w.allowed.count() >= 2
	return w
}

// own locks the worker's goroutine to the thread it runs on.
func (w *workerThread) own() {
	runtime.LockOSThread()
	w.owned, w.ranFrom = true, time.Now()
}

// release hands the thread back to the Go runtime with the CPUs it had
// when the worker started. Where the kernel refuses them (the process's
// CPUs changed since) the worker gives up owning threads (giveUp).
func (w *workerThread) release() {
	if w.off >= 0 {
		if !setThreadAffinity(&w.allowed) {
			w.giveUp()
			return
		}
		w.off = -1
	}
	runtime.UnlockOSThread()
	// The next thread owned moves at once: it may be another one.
	w.owned, w.at = false, time.Time{}
}

// giveUp ends the worker's owning of threads for good, after the kernel
// refused a mask (the process's CPUs changed since the worker started):
// it puts back the CPUs the thread started with where it can and hands
// the thread back either way. A worker left locked would yield only at a
// locked goroutine's price (a hand-off of its P and thread each way) at
// every spin check, where a thread kept off one CPU costs the runtime
// next to nothing.
func (w *workerThread) giveUp() {
	if w.off >= 0 {
		setThreadAffinity(&w.allowed)
	}
	w.can, w.off = false, -1
	if w.owned {
		runtime.UnlockOSThread()
		w.owned = false
	}
}

// overdue says whether the owned worker is to go through the Go
// scheduler now: it last did ownedRun ago or more (Intra.spin).
func (w *workerThread) overdue(now time.Time) bool {
	return w.owned && w.can && now.Sub(w.ranFrom) >= ownedRun
}

// moves says whether the owned thread is to move off CPU c now: it may
// run on c, does not keep off c already, and last moved moveGap ago or
// more.
func (w *workerThread) moves(c int32, now time.Time) bool {
	return w.owned && c != w.off && w.allowed.has(c) && now.Sub(w.at) >= moveGap
}

// keepOff moves the thread to its allowed CPUs but c. Where the kernel
// refuses (the process's CPUs changed since), the worker gives up owning
// threads (giveUp).
func (w *workerThread) keepOff(c int32, now time.Time) {
	m := w.allowed
	m[c/64] &^= 1 << (c % 64)
	w.at = now
	if setThreadAffinity(&m) {
		w.off = c
	} else {
		w.giveUp()
	}
}
