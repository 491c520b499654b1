// Package cenv reads the C environment: what the host's setenv (or
// Python's os.environ, which calls putenv) holds now, where Go's
// os.Getenv and os.LookupEnv see only the copy the runtime took when the
// library was loaded. It is the one such reader: session's knobs (through
// capi, which hands it to envcfg's parse) and the CPU libraries' loaders
// (blas, dnnl), which check a variable of the library's own before they
// set it, call it. It imports nothing of mstream's.
package cenv

/*
#include <stdlib.h>
*/
import "C"

import "unsafe"

// Getenv is name's value in the C environment now, and whether it is set.
func Getenv(name string) (string, bool) {
	cs := C.CString(name)
	defer C.free(unsafe.Pointer(cs))
	v := C.getenv(cs)
	if v == nil {
		return "", false
	}
	return C.GoString(v), true
}
