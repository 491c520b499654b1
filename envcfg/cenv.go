package envcfg

/*
#include <stdlib.h>
*/
import "C"

import "unsafe"

// Getenv reads the C environment: what the host's setenv (or Python's
// os.environ, which calls putenv) holds now. Go's os.Getenv and
// os.LookupEnv see only the copy the runtime took when the library was
// loaded, so they miss every variable a host sets between dlopen and its
// first session; every knob, and every variable mstream checks before
// setting one of its own, is read through this.
func Getenv(name string) (string, bool) {
	cs := C.CString(name)
	defer C.free(unsafe.Pointer(cs))
	v := C.getenv(cs)
	if v == nil {
		return "", false
	}
	return C.GoString(v), true
}
