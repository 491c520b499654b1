package ccall

import (
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"
)

// cgocall is what a cgo call compiles to: the thread enters a system
// call, runs fn(arg) on its system stack, and leaves the system call.
//
//go:linkname cgocall runtime.cgocall
//go:noescape
func cgocall(fn, arg unsafe.Pointer) int32

// viaCgo is set when calls take runtime.cgocall (MSTREAM_CCALL=cgo): at
// start from the process's environment, so that code without a session
// (the kernels' tests, benchmarks) runs in the mode too; a session's
// Configure sets it from the session's.
var viaCgo atomic.Bool

func init() {
	viaCgo.Store(strings.EqualFold(strings.TrimSpace(os.Getenv("MSTREAM_CCALL")), Cgo))
}

// Call runs fn(arg), a C function void fn(void *arg), on the calling
// thread: directly (the default) when it is expected to take at most
// LongCall (ns, the caller's estimate: Flops, Bytes), else, or with
// MSTREAM_CCALL=cgo, as a cgo call. fn must keep the package's invariants
// (doc.go).
func Call(fn, arg unsafe.Pointer, ns float64) {
	if viaCgo.Load() || !(ns <= LongCall) {
		cgocall(fn, arg)
		return
	}
	asmcgocall(fn, arg)
}

// LongCall is the longest a call may be expected to take and still be
// made directly: 4 ms, above a chunk of the pool's loops up to a batch of
// 16 or so, below the largest calls of a batch of 256. A stop-the-world
// (a GC's start and end) waits for a direct call in progress while every
// other goroutine already stands still (review26 measured a 50 ms stop
// behind calls of 30-45 ms), where it goes on without a cgo call; beside
// a call this long, a cgo call's P hand-off costs little. At 1 ms
// (Flops at 50 a ns), keras_encoder B=16 lost 16-29% QPS and the CNN
// 14-16% against all calls direct.
const LongCall = 4e6

// Flops is what Call expects n floating-point operations to take: 100 a
// nanosecond, two thirds of one AVX-512 core's peak (the packed GEMM runs
// at 97% of it), so that an estimate errs long.
func Flops(n float64) float64 { return n / 100 }

// Bytes is what Call expects a pass over n bytes to take: 4 GB/s, below
// one core's bandwidth from memory.
func Bytes(n float64) float64 { return n / 4 }

// The modes, as MSTREAM_CCALL spells them.
const (
	Direct = "direct"
	Cgo    = "cgo"
)

// Mode is how Call runs: Direct or Cgo (always Cgo in a build with the
// ccall_cgo tag).
func Mode() string {
	if viaCgo.Load() || !Linked {
		return Cgo
	}
	return Direct
}

// SetMode sets how Call runs and returns the mode before; the caller
// (tests) passes Direct or Cgo.
func SetMode(mode string) (prev string) {
	prev = Mode()
	viaCgo.Store(mode == Cgo)
	return prev
}

var configured struct {
	once sync.Once
	mode string
}

// Configure sets the mode once per process (the first session's
// MSTREAM_CCALL) and returns the mode that holds.
func Configure(mode string) string {
	configured.once.Do(func() {
		SetMode(mode)
		configured.mode = mode
	})
	return configured.mode
}
