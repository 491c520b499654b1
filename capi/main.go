package main

/*
#cgo CFLAGS: -I${SRCDIR}/../include -O2 -Wall
#include "internal.h"
*/
import "C"

import (
	"runtime"
	"runtime/cgo"
	"unsafe"

	"google.golang.org/protobuf/proto"

	// The CPU kernels register themselves; the library runs nothing without them.
	_ "mstream/dataset"
	_ "mstream/kernels/cpu"
	"mstream/status"
)

func main() {}

// setStatus writes err (OK when nil) into s; a NULL status is ignored.
func setStatus(s *C.TF_Status, err error) {
	if s == nil {
		return
	}
	if err == nil {
		C.ms_set_status_n(s, 0, nil, 0)
		return
	}
	msg := err.Error()
	C.ms_set_status_n(s, C.int(status.CodeOf(err)), cstr(msg), C.size_t(len(msg)))
}

// cstr points C at the bytes of a Go string for the length of one call.
func cstr(s string) *C.char {
	if len(s) == 0 {
		return nil
	}
	return (*C.char)(unsafe.Pointer(unsafe.StringData(s)))
}

// recoverTo turns a panic into a TF_INTERNAL status; deferred by every export.
func recoverTo(s *C.TF_Status, fn string) {
	if r := recover(); r != nil {
		setStatus(s, status.Errorf(status.Internal, "%s: internal error: %v", fn, r))
	}
}

// msNumGoroutine backs MS_LiveObjects("goroutines"): a session that does not
// stop its stream and pool goroutines when deleted shows up there.
//
//export msNumGoroutine
func msNumGoroutine() C.int64_t { return C.int64_t(runtime.NumGoroutine()) }

// recoverQuiet swallows a panic in an export that has no status.
func recoverQuiet() { _ = recover() }

func goStr(p *C.char) string {
	if p == nil {
		return ""
	}
	return C.GoString(p)
}

func goBytes(p unsafe.Pointer, n C.size_t) []byte {
	if p == nil || n == 0 {
		return nil
	}
	return C.GoBytes(p, C.int(n))
}

// writeBuffer copies data into an empty caller buffer, as TF's
// MessageToBuffer: a buffer that already holds data is an error.
func writeBuffer(b *C.TF_Buffer, data []byte) error {
	if b == nil {
		return status.InvalidArg("output TF_Buffer is NULL")
	}
	var p unsafe.Pointer
	if len(data) > 0 {
		p = unsafe.Pointer(&data[0])
	}
	if C.ms_buffer_set(b, p, C.size_t(len(data))) != 0 {
		return status.InvalidArg("Passing non-empty TF_Buffer is invalid.")
	}
	return nil
}

func writeProto(b *C.TF_Buffer, m proto.Message) error {
	data, err := proto.MarshalOptions{Deterministic: true}.Marshal(m)
	if err != nil {
		return status.Errorf(status.Internal, "serializing %T: %v", m, err)
	}
	return writeBuffer(b, data)
}

func bufferBytes(b *C.TF_Buffer) []byte {
	if b == nil {
		return nil
	}
	return goBytes(unsafe.Pointer(b.data), b.length)
}

// handleValue returns the Go object behind a handle, or nil for 0.
func handleValue(h C.uintptr_t) any {
	if h == 0 {
		return nil
	}
	return cgo.Handle(h).Value()
}

func nullArg(fn, what string) error {
	return status.InvalidArg("%s: %s is NULL", fn, what)
}
