//go:build ccall_cgo

package ccall

import "unsafe"

// asmcgocall is a cgo call under the ccall_cgo tag, for a Go whose linker
// refuses direct.go's //go:linkname: every call is a cgo call.
func asmcgocall(fn, arg unsafe.Pointer) int32 { return cgocall(fn, arg) }

// Linked says direct calls are built in (not under the ccall_cgo tag).
const Linked = false
