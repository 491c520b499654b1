package vec

import (
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"mstream/kernels/cpu/ccall"
)

// TestCallKeepsP: a direct call (ccall's default for calls expected to
// take at most LongCall) keeps its goroutine's P for the whole C
// function, where a cgo call gives it up: with one P, a goroutine that
// counts while it can run never counts during a direct call (one of 20 ms
// or more, made direct with an estimate of 0), and does during a cgo call
// of that length once sysmon has handed the P on (within its 10 ms tick).
func TestCallKeepsP(t *testing.T) {
	if !ccall.Linked {
		t.Skip("built with -tags ccall_cgo: every call is a cgo call")
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	defer ccall.SetMode(ccall.Mode())

	// One MapUnary call of 20 ms or more (timed on its second call: the
	// first one faults the pages in).
	var x []float32
	for n := 1 << 20; ; n *= 2 {
		x = make([]float32, n)
		mapUnary(Exp, x, x, 0)
		t0 := time.Now()
		mapUnary(Exp, x, x, 0)
		if time.Since(t0) >= 20*time.Millisecond {
			break
		}
	}

	// The counting goroutine stamps each of its turns in a ring.
	var ticks atomic.Int64
	ring := make([]atomic.Int64, 1<<20)
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		for {
			select {
			case <-stop:
				return
			default:
				i := ticks.Add(1) - 1
				ring[i&int64(len(ring)-1)].Store(time.Now().UnixNano())
				runtime.Gosched()
			}
		}
	}()

	// moved runs one call and reports whether the counting goroutine had
	// a turn inside it, 5 ms from either end: a turn just before the call
	// (this goroutine preempted on its way in, by a GC's stack scan, say)
	// or just after it does not count.
	moved := func() bool {
		runtime.Gosched()
		n0 := ticks.Load()
		t0 := time.Now()
		mapUnary(Exp, x, x, 0)
		t1 := time.Now()
		n1 := ticks.Load()
		lo, hi := t0.Add(5*time.Millisecond).UnixNano(), t1.Add(-5*time.Millisecond).UnixNano()
		for i := max(n0, n1-int64(len(ring))); i < n1; i++ {
			if v := ring[i&int64(len(ring)-1)].Load(); v > lo && v < hi {
				return true
			}
		}
		return false
	}

	ccall.SetMode(ccall.Direct)
	for i := 0; i < 10; i++ {
		if moved() {
			t.Fatalf("call %d: another goroutine ran on the only P during a direct call", i)
		}
	}
	ccall.SetMode(ccall.Cgo)
	for i := 0; ; i++ {
		if moved() {
			break
		}
		if i == 50 {
			t.Fatal("50 cgo calls of 20 ms or more and none gave up its P: the check above proves nothing")
		}
	}
}

// TestCallUnderGC: direct calls on freshly allocated slices, from several
// goroutines, while the GC runs without pause: every result is right (a
// direct call's Go memory must stay where it is and alive until it
// returns; its argument struct lives on the caller's stack).
func TestCallUnderGC(t *testing.T) {
	defer ccall.SetMode(ccall.Mode())
	ccall.SetMode(ccall.Direct)
	stop := make(chan struct{})
	gcDone := make(chan struct{})
	go func() {
		defer close(gcDone)
		for {
			select {
			case <-stop:
				return
			default:
				runtime.GC()
			}
		}
	}()
	errs := make(chan string, 4)
	for g := 0; g < 4; g++ {
		go func(g int) {
			for i := 0; i < 300; i++ {
				n := 1 + (i*37+g*11)%4000
				a, b := make([]float32, n), make([]float32, n)
				for j := range a {
					a[j], b[j] = float32(j+g), float32(i)
				}
				y := make([]float32, n)
				MapBinary(Add, a, b, y, 1, 1)
				for j := range y {
					if y[j] != float32(j+g)+float32(i) {
						errs <- "MapBinary wrong under GC"
						return
					}
				}
			}
			errs <- ""
		}(g)
	}
	for g := 0; g < 4; g++ {
		if e := <-errs; e != "" {
			t.Error(e)
		}
	}
	close(stop)
	<-gcDone
}
