package cuda

/*
#cgo CFLAGS: -O2
#cgo LDFLAGS: -ldl
#include <stdlib.h>
#include "shim.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"unsafe"

	"mstream/status"
)

// MinDriverVersion is the oldest driver (as cuDriverGetVersion reports it,
// 1000*major + 10*minor) the package accepts: CUDA 11.4.
const MinDriverVersion = 11040

// ErrNoCUDA is wrapped by every error that means "CUDA cannot be used in
// this process": no driver library, a missing symbol, an old driver, no GPU,
// no cuBLAS or NVRTC. The caller logs it once and runs on the CPU (or fails,
// when the user asked for the GPU). Its code is UNAVAILABLE.
var ErrNoCUDA = errors.New("CUDA is not available")

// LoadOptions say where to look for the libraries.
type LoadOptions struct {
	// Dirs are folders tried after the plain sonames (which follow
	// LD_LIBRARY_PATH and the ld.so cache), in order.
	Dirs []string
	// OnlyDirs skips the plain sonames: only Dirs are searched.
	OnlyDirs bool
	// DriverOnly loads the driver alone, without cuBLAS, cuBLASLt and
	// NVRTC (device enumeration, memory and streams still work; kernels
	// and GEMM do not).
	DriverOnly bool
}

// DefaultDirs are the folders searched when the sonames are not on the
// loader's path: $CUDA_HOME and $CUDA_PATH first, then the usual install
// and driver folders. CUDA_HOME is the toolkit's own variable, read here
// as the toolkit's tools read it.
func DefaultDirs() []string {
	var dirs []string
	for _, env := range []string{"CUDA_HOME", "CUDA_PATH"} {
		if h := os.Getenv(env); h != "" {
			dirs = append(dirs, filepath.Join(h, "lib64"), filepath.Join(h, "lib"),
				filepath.Join(h, "targets", "x86_64-linux", "lib"))
		}
	}
	return append(dirs,
		"/usr/local/cuda/lib64",
		"/usr/local/cuda/targets/x86_64-linux/lib",
		"/usr/local/nvidia/lib64",
		"/usr/local/nvidia/lib",
		"/usr/lib/x86_64-linux-gnu",
		"/usr/lib64",
	)
}

// Lib is one loaded set of CUDA libraries: the function table and the
// devices the driver shows. A process normally has one, from Load.
type Lib struct {
	l *C.ms_lib // C memory: the table is read by C on every call

	// DriverVersion is cuDriverGetVersion's value (e.g. 13000).
	DriverVersion int
	// NVRTCVersion is major*1000+minor*10, 0 with DriverOnly.
	NVRTCVersion int
	// Paths of the libraries loaded, for the log.
	DriverPath, BLASPath, BLASLtPath, NVRTCPath string

	devOnce sync.Once
	devs    []*Device
	devErr  error
}

var (
	loadOnce sync.Once
	loaded   *Lib
	loadErr  error
)

// Load opens the CUDA libraries once per process from the default places
// (DefaultDirs) and returns them, or an error wrapping ErrNoCUDA that
// names what is missing. Later calls return the same result.
func Load() (*Lib, error) {
	loadOnce.Do(func() { loaded, loadErr = Open(LoadOptions{Dirs: DefaultDirs()}) })
	return loaded, loadErr
}

// Open loads a fresh set of libraries; Load is Open with the defaults,
// done once. A failed Open leaves nothing loaded.
func Open(opts LoadOptions) (*Lib, error) {
	l := (*C.ms_lib)(C.calloc(1, C.sizeof_ms_lib))
	if l == nil {
		return nil, status.Errorf(status.ResourceExhausted, "cuda: out of host memory for the function table")
	}
	var errbuf [1024]C.char
	dirs := C.CString(strings.Join(opts.Dirs, ":"))
	defer C.free(unsafe.Pointer(dirs))
	st := C.ms_open(l, dirs, cbool(opts.OnlyDirs), cbool(opts.DriverOnly), &errbuf[0], C.size_t(len(errbuf)))
	if st != C.MS_OK {
		msg := C.GoString(&errbuf[0])
		C.ms_close(l)
		C.free(unsafe.Pointer(l))
		return nil, noCUDA("%s", msg)
	}
	lib := &Lib{
		l:             l,
		DriverVersion: int(l.driver_version),
		DriverPath:    C.GoString(&l.path_cuda[0]),
	}
	if lib.DriverVersion < MinDriverVersion {
		v := lib.DriverVersion
		C.ms_close(l)
		C.free(unsafe.Pointer(l))
		return nil, noCUDA("the driver supports CUDA %d.%d; mstream needs %d.%d or newer (update the NVIDIA driver)",
			v/1000, v%1000/10, MinDriverVersion/1000, MinDriverVersion%1000/10)
	}
	if !opts.DriverOnly {
		lib.BLASPath = C.GoString(&l.path_blas[0])
		lib.BLASLtPath = C.GoString(&l.path_lt[0])
		lib.NVRTCPath = C.GoString(&l.path_nvrtc[0])
		var maj, min C.int
		if st := C.ms_nvrtc_version(l, &maj, &min); st == 0 {
			lib.NVRTCVersion = int(maj)*1000 + int(min)*10
		}
	}
	devs, err := lib.Devices()
	if err != nil {
		return nil, err
	}
	if len(devs) == 0 {
		return nil, noCUDA("the driver (%s, CUDA %d.%d) shows no GPU (check CUDA_VISIBLE_DEVICES)",
			lib.DriverPath, lib.DriverVersion/1000, lib.DriverVersion%1000/10)
	}
	return lib, nil
}

// Close unloads a library set obtained from Open whose devices hold no
// contexts any more (tests only; the process-wide set from Load is never
// closed, as a loaded driver is never unloaded).
func (lib *Lib) Close() {
	if lib == nil || lib.l == nil || lib == loaded {
		return
	}
	C.ms_close(lib.l)
	C.free(unsafe.Pointer(lib.l))
	lib.l = nil
}

// String describes the loaded libraries for the log.
func (lib *Lib) String() string {
	s := fmt.Sprintf("CUDA driver %d.%d (%s)", lib.DriverVersion/1000, lib.DriverVersion%1000/10, lib.DriverPath)
	if lib.NVRTCPath != "" {
		s += fmt.Sprintf(", cuBLAS %s, cuBLASLt %s, NVRTC %d.%d (%s)", lib.BLASPath, lib.BLASLtPath,
			lib.NVRTCVersion/1000, lib.NVRTCVersion%1000/10, lib.NVRTCPath)
	}
	return s
}

func noCUDA(format string, args ...any) error {
	return &status.Error{Code: status.Unavailable, Msg: "cuda: " + fmt.Sprintf(format, args...), Inner: ErrNoCUDA}
}

func cbool(b bool) C.int {
	if b {
		return 1
	}
	return 0
}

// CallError describes one failed CUDA, cuBLAS or NVRTC call. It is the
// Inner error of the status error the package returns.
type CallError struct {
	// Call is the API function, e.g. "cuMemAlloc_v2".
	Call string
	// Result is the numeric status the call returned.
	Result int
	// Name is the status's name, e.g. "CUDA_ERROR_OUT_OF_MEMORY".
	Name string
	// Sticky is set for errors after which the CUDA context cannot be
	// used again (an illegal address, a kernel trap): every later call on
	// the context fails too, and only a new process recovers.
	Sticky bool
}

func (e *CallError) Error() string {
	s := fmt.Sprintf("%s: %s", e.Call, e.Name)
	if e.Sticky {
		s += " (sticky device error: the CUDA context is unusable until the process restarts)"
	}
	return s
}

// Sticky CUDA errors (CUDA_ERROR_*): the context is corrupt after them.
var stickyResults = map[int]bool{
	214: true, // ECC_UNCORRECTABLE
	700: true, // ILLEGAL_ADDRESS
	702: true, // LAUNCH_TIMEOUT
	710: true, // ASSERT
	714: true, // HARDWARE_STACK_ERROR
	715: true, // ILLEGAL_INSTRUCTION
	716: true, // MISALIGNED_ADDRESS
	717: true, // INVALID_ADDRESS_SPACE
	718: true, // INVALID_PC
	719: true, // LAUNCH_FAILED
}

// cuErr turns a wrapper's return value into an error naming call; nil for
// success. A negative value means cuCtxSetCurrent failed first.
func (lib *Lib) cuErr(call string, r C.int, detail string) error {
	if r == 0 {
		return nil
	}
	if r < 0 {
		call, r = "cuCtxSetCurrent (before "+call+")", -r
	}
	var name, msg *C.char
	C.ms_error_name(lib.l, C.int(r), &name, &msg)
	ce := &CallError{Call: call, Result: int(r), Name: fmt.Sprintf("CUresult %d", int(r)), Sticky: stickyResults[int(r)]}
	if name != nil {
		ce.Name = C.GoString(name)
	}
	text := ce.Name
	if msg != nil {
		text += " (" + C.GoString(msg) + ")"
	}
	code := status.Internal
	switch int(r) {
	case 2: // OUT_OF_MEMORY
		code = status.ResourceExhausted
	case 1, 400, 201: // INVALID_VALUE, INVALID_HANDLE, INVALID_CONTEXT
		code = status.Internal
	}
	if detail != "" {
		detail = " " + detail
	}
	m := fmt.Sprintf("cuda: %s%s failed: %s", call, detail, text)
	if ce.Sticky {
		m += "; this is a sticky device error: the CUDA context is unusable until the process restarts"
	}
	return &status.Error{Code: code, Msg: m, Inner: ce}
}

// blasStatusNames are cuBLAS's cublasStatus_t names.
var blasStatusNames = map[int]string{
	0: "CUBLAS_STATUS_SUCCESS", 1: "CUBLAS_STATUS_NOT_INITIALIZED", 3: "CUBLAS_STATUS_ALLOC_FAILED",
	7: "CUBLAS_STATUS_INVALID_VALUE", 8: "CUBLAS_STATUS_ARCH_MISMATCH", 11: "CUBLAS_STATUS_MAPPING_ERROR",
	13: "CUBLAS_STATUS_EXECUTION_FAILED", 14: "CUBLAS_STATUS_INTERNAL_ERROR", 15: "CUBLAS_STATUS_NOT_SUPPORTED",
	16: "CUBLAS_STATUS_LICENSE_ERROR",
}

func (lib *Lib) blasErr(call string, r C.int, detail string) error {
	if r == 0 {
		return nil
	}
	if r < 0 {
		return lib.cuErr(call, r, detail)
	}
	name, ok := blasStatusNames[int(r)]
	if !ok {
		name = fmt.Sprintf("cublasStatus_t %d", int(r))
	}
	code := status.Internal
	switch int(r) {
	case 3:
		code = status.ResourceExhausted
	case 15:
		code = status.Unimplemented
	}
	if detail != "" {
		detail = " " + detail
	}
	return &status.Error{Code: code, Msg: fmt.Sprintf("cuda: %s%s failed: %s", call, detail, name),
		Inner: &CallError{Call: call, Result: int(r), Name: name}}
}
