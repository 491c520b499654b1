package cuda

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// clangShim declares what NVRTC provides implicitly (execution space
// attributes, builtin variables, the device math library, warp shuffles,
// atomic adds), so that clang's CUDA front end can check a program
// without a CUDA install. Clang's own wrapper headers supply the math functions.
const clangShim = `#define __host__ __attribute__((host))
#define __device__ __attribute__((device))
#define __global__ __attribute__((global))
#define __shared__ __attribute__((shared))
#define __constant__ __attribute__((constant))
#define __forceinline__ __inline__ __attribute__((always_inline))
#define CUDA_VERSION 12000
#define INT_MAX 2147483647
#define INT_MIN (-INT_MAX - 1)
#define HUGE_VAL __builtin_huge_val()
#define HUGE_VALF __builtin_huge_valf()
typedef __SIZE_TYPE__ size_t;
#include <__clang_cuda_builtin_vars.h>
#include <__clang_cuda_libdevice_declares.h>
#include <__clang_cuda_device_functions.h>
#include <__clang_cuda_math.h>
#define SHFL(T) __device__ T __shfl_xor_sync(unsigned, T, int, int = 32); \
	__device__ T __shfl_sync(unsigned, T, int, int = 32); \
	__device__ T __shfl_down_sync(unsigned, T, int, int = 32); \
	__device__ T __shfl_up_sync(unsigned, T, unsigned, int = 32);
SHFL(int) SHFL(unsigned) SHFL(long) SHFL(unsigned long) SHFL(long long) SHFL(unsigned long long) SHFL(float) SHFL(double)
#undef SHFL
__device__ float atomicAdd(float *, float);
__device__ double atomicAdd(double *, double);
__device__ unsigned atomicAdd(unsigned *, unsigned);
__device__ unsigned long long atomicAdd(unsigned long long *, unsigned long long);
__device__ unsigned long long atomicCAS(unsigned long long *, unsigned long long, unsigned long long);
__device__ long long atomicMin(long long *, long long);
`

// TestProgramsClang checks every program's CUDA C with clang's CUDA front
// end (syntax, types, template instantiation), so a typo in src/ fails
// here on a machine without a GPU or nvcc instead of at NVRTC's first use
// on the device. It skips when clang is not installed
// (apt-get install clang).
func TestProgramsClang(t *testing.T) {
	clang, err := exec.LookPath("clang")
	if err != nil {
		t.Skip("clang not installed")
	}
	dir := t.TempDir()
	// Clang's wrapper headers include crt/sm_70_rt.hpp from CUDA; the shim
	// needs nothing from it.
	if err := os.MkdirAll(filepath.Join(dir, "inc", "crt"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "inc", "crt", "sm_70_rt.hpp"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	shim := filepath.Join(dir, "shim.h")
	if err := os.WriteFile(shim, []byte(clangShim), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, p := range Programs() {
		src := filepath.Join(dir, p.Name)
		if err := os.WriteFile(src, []byte(p.Source), 0o644); err != nil {
			t.Fatal(err)
		}
		var out []byte
		for _, arch := range []string{"sm_90", "sm_80", "sm_70"} {
			cmd := exec.Command(clang, "-x", "cuda", "--cuda-device-only", "-nocudainc", "-nocudalib",
				"--cuda-gpu-arch="+arch, "-fsyntax-only", "-std=c++17", "-I", filepath.Join(dir, "inc"),
				"-include", shim, src)
			out, err = cmd.CombinedOutput()
			if err != nil && strings.Contains(string(out), "unsupported CUDA gpu architecture") {
				continue // an older clang: try an older architecture
			}
			break
		}
		if err != nil {
			t.Errorf("%s: clang: %v\n%s", p.Name, err, out)
		} else if len(out) > 0 {
			t.Logf("%s: clang warnings:\n%s", p.Name, out)
		}
	}
}
