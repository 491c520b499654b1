package ccall

import (
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

// asmcgocall runs fn(arg) on the thread's system stack, with the C ABI,
// and nothing more: the cgo call without the scheduler's part.
//
//go:linkname asmcgocall runtime.asmcgocall
//go:noescape
func asmcgocall(fn, arg unsafe.Pointer) int32

// viaCgo is set when calls take runtime.cgocall (MSTREAM_CCALL=cgo).
var viaCgo atomic.Bool

// Call runs fn(arg), a C function void fn(void *arg), on the calling
// thread: directly (the default) or as a cgo call. fn must keep the
// package's invariants (doc.go).
func Call(fn, arg unsafe.Pointer) {
	if viaCgo.Load() {
		cgocall(fn, arg)
		return
	}
	asmcgocall(fn, arg)
}

// The modes, as MSTREAM_CCALL spells them.
const (
	Direct = "direct"
	Cgo    = "cgo"
)

// Mode is how Call runs: Direct or Cgo.
func Mode() string {
	if viaCgo.Load() {
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
