//go:build !ccall_cgo

package ccall

import "unsafe"

// asmcgocall runs fn(arg) on the thread's system stack, with the C ABI,
// and nothing more: the cgo call without the scheduler's part. (The
// linker accepts this name only through its exemption for ABI wrappers:
// a Go whose linker refuses it builds with -tags ccall_cgo.)
//
//go:linkname asmcgocall runtime.asmcgocall
//go:noescape
func asmcgocall(fn, arg unsafe.Pointer) int32

// Linked says direct calls are built in (not under the ccall_cgo tag).
const Linked = true
