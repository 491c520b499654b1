package cuda

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"mstream/status"
)

// These tests run everywhere (no GPU needed): they check that every way of
// not having a usable CUDA ends in one clear UNAVAILABLE error wrapping
// ErrNoCUDA. Fake driver libraries are compiled from C stubs.

func checkNoCUDA(t *testing.T, err error, want ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("Open succeeded, want an error mentioning %q", want)
	}
	if !errors.Is(err, ErrNoCUDA) {
		t.Errorf("error %v does not wrap ErrNoCUDA", err)
	}
	if c := status.CodeOf(err); c != status.Unavailable {
		t.Errorf("code %v, want UNAVAILABLE: %v", c, err)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not mention %q", err, w)
		}
	}
}

func TestNoDriverLibrary(t *testing.T) {
	dir := t.TempDir()
	_, err := Open(LoadOptions{Dirs: []string{dir}, OnlyDirs: true})
	checkNoCUDA(t, err, "no CUDA driver library", "libcuda.so.1", dir)
}

// driverSymbols are the driver functions the loader requires.
var driverSymbols = []string{
	"cuInit", "cuDriverGetVersion", "cuGetErrorName", "cuGetErrorString", "cuDeviceGetCount", "cuDeviceGet",
	"cuDeviceGetName", "cuDeviceTotalMem_v2", "cuDeviceGetAttribute", "cuDeviceGetPCIBusId",
	"cuDevicePrimaryCtxRetain", "cuDevicePrimaryCtxRelease_v2", "cuCtxCreate_v2", "cuCtxDestroy_v2",
	"cuCtxSetCurrent", "cuCtxSynchronize", "cuMemGetInfo_v2", "cuStreamCreate", "cuStreamDestroy_v2",
	"cuStreamSynchronize", "cuStreamQuery", "cuStreamWaitEvent", "cuEventCreate", "cuEventDestroy_v2",
	"cuEventRecord", "cuEventQuery", "cuEventSynchronize", "cuEventElapsedTime", "cuMemAlloc_v2", "cuMemFree_v2",
	"cuMemHostAlloc", "cuMemFreeHost", "cuMemcpyHtoDAsync_v2", "cuMemcpyDtoHAsync_v2", "cuMemcpyDtoDAsync_v2",
	"cuMemcpyPeerAsync", "cuMemsetD8Async", "cuModuleLoadData", "cuModuleUnload", "cuModuleGetFunction",
	"cuLaunchKernel", "cuLaunchHostFunc",
}

// fakeDriver writes and compiles a libcuda.so.1 into a new folder. Symbols
// in only (all when nil) are defined; cuInit returns initResult,
// cuDriverGetVersion reports version, cuDeviceGetCount count; any other
// call fails with CUDA_ERROR_UNKNOWN (999).
func fakeDriver(t *testing.T, only []string, initResult, version, count int) string {
	t.Helper()
	cc, err := exec.LookPath("cc")
	if err != nil {
		if cc, err = exec.LookPath("gcc"); err != nil {
			t.Fatalf("no C compiler to build a fake driver (cgo needs one): %v", err)
		}
	}
	if only == nil {
		only = driverSymbols
	}
	var b strings.Builder
	special := map[string]string{
		"cuInit":             fmt.Sprintf("int cuInit(unsigned f) { (void)f; return %d; }", initResult),
		"cuDriverGetVersion": fmt.Sprintf("int cuDriverGetVersion(int *v) { *v = %d; return 0; }", version),
		"cuDeviceGetCount":   fmt.Sprintf("int cuDeviceGetCount(int *n) { *n = %d; return 0; }", count),
		"cuGetErrorName": `int cuGetErrorName(int r, const char **s) {
	*s = r == 100 ? "CUDA_ERROR_NO_DEVICE" : "CUDA_ERROR_UNKNOWN"; return 0; }`,
		"cuGetErrorString": `int cuGetErrorString(int r, const char **s) {
	*s = r == 100 ? "no CUDA-capable device is detected" : "unknown error"; return 0; }`,
	}
	for _, s := range only {
		if def, ok := special[s]; ok {
			b.WriteString(def + "\n")
		} else {
			fmt.Fprintf(&b, "int %s(void) { return 999; }\n", s)
		}
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "fake.c")
	if err := os.WriteFile(src, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(cc, "-shared", "-fPIC", "-o", filepath.Join(dir, "libcuda.so.1"), src).CombinedOutput()
	if err != nil {
		t.Fatalf("building the fake driver: %v\n%s", err, out)
	}
	return dir
}

func TestFakeDriverMissingSymbol(t *testing.T) {
	dir := fakeDriver(t, []string{"cuInit"}, 0, 13000, 1)
	_, err := Open(LoadOptions{Dirs: []string{dir}, OnlyDirs: true})
	checkNoCUDA(t, err, "symbol cuDriverGetVersion not found", "libcuda.so.1")
}

func TestFakeDriverNoDevice(t *testing.T) {
	dir := fakeDriver(t, nil, 100, 13000, 0)
	_, err := Open(LoadOptions{Dirs: []string{dir}, OnlyDirs: true})
	checkNoCUDA(t, err, "cuInit failed", "CUDA_ERROR_NO_DEVICE")
}

func TestFakeDriverTooOld(t *testing.T) {
	dir := fakeDriver(t, nil, 0, 10020, 1)
	_, err := Open(LoadOptions{Dirs: []string{dir}, OnlyDirs: true, DriverOnly: true})
	checkNoCUDA(t, err, "driver supports CUDA 10.2", "11.4 or newer")
}

func TestFakeDriverZeroDevices(t *testing.T) {
	dir := fakeDriver(t, nil, 0, 13000, 0)
	_, err := Open(LoadOptions{Dirs: []string{dir}, OnlyDirs: true, DriverOnly: true})
	checkNoCUDA(t, err, "shows no GPU", "CUDA_VISIBLE_DEVICES")
}

func TestFakeDriverEnumerationFails(t *testing.T) {
	dir := fakeDriver(t, nil, 0, 13000, 2)
	_, err := Open(LoadOptions{Dirs: []string{dir}, OnlyDirs: true, DriverOnly: true})
	checkNoCUDA(t, err, "cuDeviceGet", "CUDA_ERROR_UNKNOWN")
}

func TestFakeDriverNoBLAS(t *testing.T) {
	dir := fakeDriver(t, nil, 0, 13000, 1)
	_, err := Open(LoadOptions{Dirs: []string{dir}, OnlyDirs: true})
	checkNoCUDA(t, err, "no cuBLAS/cuBLASLt library pair", "libcublas.so.13", dir)
}

func TestDefaultDirsHonourCUDAHome(t *testing.T) {
	t.Setenv("CUDA_HOME", "/opt/cuda-x")
	dirs := DefaultDirs()
	if len(dirs) == 0 || dirs[0] != "/opt/cuda-x/lib64" {
		t.Errorf("DefaultDirs() = %v, want $CUDA_HOME/lib64 first", dirs)
	}
}

// TestLoadWithoutGPU checks the process-wide Load on a machine without a
// GPU: it must fail cleanly (the CI case). On a GPU machine it must work.
func TestLoad(t *testing.T) {
	lib, err := Load()
	if err != nil {
		checkNoCUDA(t, err)
		if os.Getenv("MSTREAM_DEVICE") == "gpu" {
			t.Fatalf("MSTREAM_DEVICE=gpu but Load failed: %v", err)
		}
		t.Logf("no CUDA here, as expected without a GPU: %v", err)
		return
	}
	t.Logf("loaded %s", lib)
	devs, _ := lib.Devices()
	for _, d := range devs {
		t.Logf("%s: %s (%s), %d SMs, %.1f GiB", d.Name(), d.ProductName(), d.Desc(), d.Multiprocessors(),
			float64(d.MemoryBytes())/(1<<30))
	}
}
