package vec

import (
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"mstream/kernels/cpu/ccall"
)

// longCall returns one C call through ccall (Attention where the CPU has
// it, else MapUnary over a large buffer) that takes 100 ms or more, as a
// large batch's convolution or GEMM run whole in one call can.
func longCall(t *testing.T) func() {
	t.Helper()
	timed := func(f func()) time.Duration {
		f() // the first call faults the pages in
		t0 := time.Now()
		f()
		return time.Since(t0)
	}
	if CurrentLevel() >= AVX512 {
		const d = 64
		for s := 512; s <= 1<<15; s *= 2 {
			q, k, v, out := make([]float32, s*d), make([]float32, s*d), make([]float32, s*d), make([]float32, s*d)
			for i := range q {
				q[i], k[i], v[i] = float32(i%13)*0.01, float32(i%7)*0.02, float32(i%5)
			}
			scratch := make([]float32, AttentionScratch(s, d))
			f := func() { Attention(s, s, d, d, q, d, k, d, v, d, out, d, 0.125, false, scratch) }
			if timed(f) >= 100*time.Millisecond {
				return f
			}
		}
	}
	x := make([]float32, 1<<26)
	return func() { MapUnary(Exp, x, x) }
}

// TestLongCallLetsGCRun: a garbage collection started while another
// goroutine is inside one long kernel call completes without waiting for
// that call to return. (As a cgo call the goroutine is in a system call:
// the collector scans its stack and stops the world without it. A direct
// call keeps its goroutine running with its P: the stop-the-world, and the
// mark phase's scan of that stack, wait for the call to end, and while the
// world is being stopped every other goroutine of the process stands
// still.) Call makes a call expected to take over ccall.LongCall a cgo
// call for that reason: this test's long calls are estimated as such.
func TestLongCallLetsGCRun(t *testing.T) {
	defer ccall.SetMode(ccall.Mode())
	call := longCall(t)
	for _, mode := range []string{ccall.Cgo, ccall.Direct} {
		ccall.SetMode(mode)
		var done atomic.Bool
		started, finished := make(chan struct{}), make(chan struct{})
		go func() {
			close(started)
			call()
			done.Store(true)
			close(finished)
		}()
		<-started
		time.Sleep(10 * time.Millisecond) // the call begins
		runtime.GC()
		if done.Load() {
			t.Errorf("%s: runtime.GC returned only after a kernel's C call in another goroutine had ended", mode)
		}
		<-finished
	}
}
