// Package ccall runs the CPU kernels' C functions (vec's loops and GEMMs,
// oneDNN's primitives, the BLAS) on their caller's thread without the Go
// scheduler's part in a cgo call.
//
// A cgo call puts its goroutine's P in a system call: after one sysmon
// tick (20 us) sysmon hands the P to another thread, and when the call
// returns its thread must get a P back, from the idle list or, when none
// is idle, by queueing its goroutine and sleeping until another thread
// hands it one. For a kernel that is compute from start to end this is
// all cost: on the 2-core host at one client thread (mlp, B=1) the
// executor's caller, a thread locked to its goroutine as every C thread
// entering Go is, and the intra-op worker traded Ps through futex
// wake-ups several times a request, and a third runnable thread (the one
// sysmon woke to take the P) preempted one of the two that had work. A
// direct call (runtime.asmcgocall: the thread's system stack, the C ABI,
// nothing else) keeps the P: mlp B=1 at one client thread 12507 -> 14418
// QPS, p99 0.28 -> 0.13 ms, and CPU time a request 3-15% lower on the
// GEMM and convolution models.
//
// Invariants of a function run through Call:
//   - it computes and returns: it never calls back into Go, and it does
//     not wait on anything a goroutine must do (a lock, a channel, a
//     thread started by Go). It may take locks of its own library and
//     wait on that library's threads (oneDNN's, OpenBLAS's), which are
//     not Go's.
//   - its caller says what it is expected to take (Call's ns; Flops and
//     Bytes err long): only a call expected to take at most LongCall (4
//     ms), one chunk of the intra-op pool's loop or a small kernel, is
//     made directly; while it runs, its P runs nothing else. A longer one
//     is a cgo call, so a stop-the-world never waits long for one.
//   - fn takes one pointer, to an argument struct the caller keeps alive
//     across the call (on its stack: the stack does not move while no Go
//     code runs on it); Go memory it points to is heap or stack memory
//     the caller keeps alive, and the function reads none of it after
//     it returns.
//
// What a direct call gives up, beside its P (review26's probes measured
// each): the goroutine stays running, so a stop-the-world waits for the
// call to end while every other goroutine of the process already stands
// still, and the mark phase's scan of its stack spins on another P,
// signalling the thread every 5 us, until then (TestLongCallLetsGCRun);
// a CPU profile (SIGPROF) records its samples as runtime._ExternalCode
// with no Go stack; and a fault in it goes to Go's signal handler, not
// to one the host installed before the library loaded (Python's
// faulthandler, a JVM's, a crash reporter's), since the runtime sees no
// cgo call in progress. The direct call's name for runtime.asmcgocall is
// a //go:linkname that the linker accepts only because the reference
// resolves to an ABI wrapper (cmd/link's checkLinkname: "For now, allow
// ABI wrappers"), where runtime.cgocall is pushed from the runtime.
//
// MSTREAM_CCALL=cgo (the first session's value holds for the process,
// as MSTREAM_BLAS's and MSTREAM_DNNL's do) runs the same functions
// through runtime.cgocall, what a cgo call compiles to.
package ccall
