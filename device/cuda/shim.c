/* dlopen/dlsym loader and one-call wrappers; see shim.h. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "shim.h"

/* ---- loading ---------------------------------------------------------- */

/* try_open dlopens the first of names found, plain (ld.so's search) unless
 * only_dirs, then in each folder of dirs. tried collects the names. */
static void *try_open(const char *const *names, const char *dirs, int only_dirs, char *path, size_t pathlen,
		char *tried, size_t triedlen) {
	for (int i = 0; names[i]; i++) {
		size_t u = strlen(tried);
		snprintf(tried + u, triedlen - u, "%s%s", u ? ", " : "", names[i]);
		if (!only_dirs) {
			void *h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
			if (h) {
				snprintf(path, pathlen, "%s", names[i]);
				return h;
			}
		}
		const char *d = dirs;
		while (d && *d) {
			const char *e = strchr(d, ':');
			size_t n = e ? (size_t)(e - d) : strlen(d);
			if (n > 0 && n < 400) {
				char p[512];
				snprintf(p, sizeof p, "%.*s/%s", (int)n, d, names[i]);
				void *h = dlopen(p, RTLD_NOW | RTLD_LOCAL);
				if (h) {
					snprintf(path, pathlen, "%s", p);
					return h;
				}
			}
			d = e ? e + 1 : NULL;
		}
	}
	return NULL;
}

static void where(char *buf, size_t n, const char *dirs, int only_dirs) {
	snprintf(buf, n, "%s%s%s", only_dirs ? "" : "on the loader's path", (dirs && *dirs) ? (only_dirs ? "in " : " or in ") : "",
		(dirs && *dirs) ? dirs : "");
}

#define SYM(h, name, required)                                                                   \
	do {                                                                                     \
		*(void **)(&L->name) = dlsym(h, #name);                                          \
		if (!L->name && (required)) {                                                    \
			snprintf(err, errlen, "symbol %s not found in %s", #name, libpath);      \
			return MS_NO_SYMBOL;                                                     \
		}                                                                                \
	} while (0)

static int load_driver(ms_lib *L, char *err, size_t errlen) {
	void *h = L->h_cuda;
	const char *libpath = L->path_cuda;
	SYM(h, cuInit, 1);
	SYM(h, cuDriverGetVersion, 1);
	SYM(h, cuGetErrorName, 1);
	SYM(h, cuGetErrorString, 1);
	SYM(h, cuDeviceGetCount, 1);
	SYM(h, cuDeviceGet, 1);
	SYM(h, cuDeviceGetName, 1);
	SYM(h, cuDeviceTotalMem_v2, 1);
	SYM(h, cuDeviceGetAttribute, 1);
	SYM(h, cuDeviceGetPCIBusId, 1);
	SYM(h, cuDevicePrimaryCtxRetain, 1);
	SYM(h, cuDevicePrimaryCtxRelease_v2, 1);
	SYM(h, cuCtxCreate_v2, 0);
	SYM(h, cuCtxCreate_v4, 0);
	SYM(h, cuCtxDestroy_v2, 1);
	SYM(h, cuCtxSetCurrent, 1);
	SYM(h, cuCtxSynchronize, 1);
	SYM(h, cuMemGetInfo_v2, 1);
	SYM(h, cuStreamCreate, 1);
	SYM(h, cuStreamDestroy_v2, 1);
	SYM(h, cuStreamSynchronize, 1);
	SYM(h, cuStreamQuery, 1);
	SYM(h, cuStreamWaitEvent, 1);
	SYM(h, cuEventCreate, 1);
	SYM(h, cuEventDestroy_v2, 1);
	SYM(h, cuEventRecord, 1);
	SYM(h, cuEventQuery, 1);
	SYM(h, cuEventSynchronize, 1);
	SYM(h, cuEventElapsedTime, 1);
	SYM(h, cuMemAlloc_v2, 1);
	SYM(h, cuMemFree_v2, 1);
	SYM(h, cuMemHostAlloc, 1);
	SYM(h, cuMemFreeHost, 1);
	SYM(h, cuMemcpyHtoDAsync_v2, 1);
	SYM(h, cuMemcpyDtoHAsync_v2, 1);
	SYM(h, cuMemcpyDtoDAsync_v2, 1);
	SYM(h, cuMemcpyPeerAsync, 1);
	SYM(h, cuMemsetD8Async, 1);
	SYM(h, cuModuleLoadData, 1);
	SYM(h, cuModuleUnload, 1);
	SYM(h, cuModuleGetFunction, 1);
	SYM(h, cuLaunchKernel, 1);
	SYM(h, cuLaunchHostFunc, 1);
	if (!L->cuCtxCreate_v2 && !L->cuCtxCreate_v4) {
		snprintf(err, errlen, "neither cuCtxCreate_v2 nor cuCtxCreate_v4 found in %s", libpath);
		return MS_NO_SYMBOL;
	}
	return MS_OK;
}

static int load_blas(ms_lib *L, char *err, size_t errlen) {
	void *h = L->h_blas;
	const char *libpath = L->path_blas;
	SYM(h, cublasCreate_v2, 1);
	SYM(h, cublasDestroy_v2, 1);
	SYM(h, cublasSetStream_v2, 1);
	SYM(h, cublasSetMathMode, 1);
	SYM(h, cublasSetWorkspace_v2, 0);
	SYM(h, cublasGetProperty, 0);
	SYM(h, cublasGetStatusString, 0);
	SYM(h, cublasSgemm_v2, 1);
	SYM(h, cublasDgemm_v2, 1);
	SYM(h, cublasSgemmStridedBatched, 1);
	SYM(h, cublasDgemmStridedBatched, 1);
	SYM(h, cublasGemmEx, 0);
	SYM(h, cublasGemmStridedBatchedEx, 0);
	h = L->h_lt;
	libpath = L->path_lt;
	SYM(h, cublasLtCreate, 1);
	SYM(h, cublasLtDestroy, 1);
	SYM(h, cublasLtGetVersion, 1);
	SYM(h, cublasLtMatmulDescCreate, 1);
	SYM(h, cublasLtMatmulDescDestroy, 1);
	SYM(h, cublasLtMatmulDescSetAttribute, 1);
	SYM(h, cublasLtMatrixLayoutCreate, 1);
	SYM(h, cublasLtMatrixLayoutDestroy, 1);
	SYM(h, cublasLtMatmulPreferenceCreate, 1);
	SYM(h, cublasLtMatmulPreferenceDestroy, 1);
	SYM(h, cublasLtMatmulPreferenceSetAttribute, 1);
	SYM(h, cublasLtMatmulAlgoGetHeuristic, 1);
	SYM(h, cublasLtMatmul, 1);
	return MS_OK;
}

static int load_nvrtc(ms_lib *L, char *err, size_t errlen) {
	void *h = L->h_nvrtc;
	const char *libpath = L->path_nvrtc;
	SYM(h, nvrtcVersion, 1);
	SYM(h, nvrtcGetErrorString, 1);
	SYM(h, nvrtcCreateProgram, 1);
	SYM(h, nvrtcDestroyProgram, 1);
	SYM(h, nvrtcCompileProgram, 1);
	SYM(h, nvrtcGetProgramLogSize, 1);
	SYM(h, nvrtcGetProgramLog, 1);
	SYM(h, nvrtcGetPTXSize, 1);
	SYM(h, nvrtcGetPTX, 1);
	SYM(h, nvrtcGetCUBINSize, 0);
	SYM(h, nvrtcGetCUBIN, 0);
	SYM(h, nvrtcGetNumSupportedArchs, 0);
	SYM(h, nvrtcGetSupportedArchs, 0);
	return MS_OK;
}

/* Sonames by CUDA major, newest first; a library whose major is newer than
 * the driver's CUDA version is tried last, since its code may not load. */
static const char *cublas_names[][2] = {
	{"libcublas.so.13", "libcublasLt.so.13"},
	{"libcublas.so.12", "libcublasLt.so.12"},
	{"libcublas.so.11", "libcublasLt.so.11"},
	{"libcublas.so", "libcublasLt.so"},
};
static const int cublas_major[] = {13, 12, 11, 0};
static const char *nvrtc_names[] = {"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so.11.2", "libnvrtc.so.11.1",
	"libnvrtc.so.11.0", "libnvrtc.so"};
static const int nvrtc_major[] = {13, 12, 11, 11, 11, 0};

int ms_open(ms_lib *L, const char *dirs, int only_dirs, int driver_only, char *err, size_t errlen) {
	char tried[4096];
	memset(L, 0, sizeof *L);
	err[0] = 0;
	tried[0] = 0;
	static const char *cuda_names[] = {"libcuda.so.1", "libcuda.so", NULL};
	L->h_cuda = try_open(cuda_names, dirs, only_dirs, L->path_cuda, sizeof L->path_cuda, tried, sizeof tried);
	char wh[1200];
	where(wh, sizeof wh, dirs, only_dirs);
	if (!L->h_cuda) {
		snprintf(err, errlen, "no CUDA driver library: none of %s found %s", tried, wh);
		return MS_NO_DRIVER;
	}
	int st = load_driver(L, err, errlen);
	if (st != MS_OK) return st;
	CUresult r = L->cuInit(0);
	if (r != 0) {
		const char *name = NULL, *msg = NULL;
		L->cuGetErrorName(r, &name);
		L->cuGetErrorString(r, &msg);
		snprintf(err, errlen, "cuInit failed in %s: %s (%s)", L->path_cuda, name ? name : "?", msg ? msg : "?");
		return MS_INIT_FAILED;
	}
	L->cuDriverGetVersion(&L->driver_version);
	if (driver_only) return MS_OK;
	int drv_major = L->driver_version / 1000;

	/* cuBLAS and cuBLASLt of one major. */
	for (int pass = 0; pass < 2 && !L->h_blas; pass++) {
		for (size_t i = 0; i < sizeof cublas_major / sizeof cublas_major[0]; i++) {
			int newer = cublas_major[i] > drv_major;
			if ((pass == 0) == newer) continue;
			const char *b[] = {cublas_names[i][0], NULL}, *l[] = {cublas_names[i][1], NULL};
			char t2[16];
			t2[0] = 0;
			void *hb = try_open(b, dirs, only_dirs, L->path_blas, sizeof L->path_blas, tried, sizeof tried);
			if (!hb) continue;
			void *hl = try_open(l, dirs, only_dirs, L->path_lt, sizeof L->path_lt, t2, sizeof t2);
			if (!hl) {
				dlclose(hb);
				continue;
			}
			L->h_blas = hb;
			L->h_lt = hl;
			break;
		}
	}
	if (!L->h_blas) {
		snprintf(err, errlen, "no cuBLAS/cuBLASLt library pair: none of %s found %s", tried, wh);
		return MS_NO_BLAS;
	}
	st = load_blas(L, err, errlen);
	if (st != MS_OK) return st;

	tried[0] = 0;
	for (int pass = 0; pass < 2 && !L->h_nvrtc; pass++) {
		for (size_t i = 0; i < sizeof nvrtc_major / sizeof nvrtc_major[0]; i++) {
			int newer = nvrtc_major[i] > drv_major;
			if ((pass == 0) == newer) continue;
			const char *n[] = {nvrtc_names[i], NULL};
			L->h_nvrtc = try_open(n, dirs, only_dirs, L->path_nvrtc, sizeof L->path_nvrtc, tried, sizeof tried);
			if (L->h_nvrtc) break;
		}
	}
	if (!L->h_nvrtc) {
		snprintf(err, errlen, "no NVRTC library: none of %s found %s", tried, wh);
		return MS_NO_NVRTC;
	}
	return load_nvrtc(L, err, errlen);
}

void ms_close(ms_lib *L) {
	/* Only for a failed or test load: a loaded driver stays for the life of
	 * the process. */
	if (L->h_nvrtc) dlclose(L->h_nvrtc);
	if (L->h_lt) dlclose(L->h_lt);
	if (L->h_blas) dlclose(L->h_blas);
	if (L->h_cuda) dlclose(L->h_cuda);
	memset(L, 0, sizeof *L);
}

void ms_error_name(const ms_lib *L, int r, const char **name, const char **msg) {
	*name = NULL;
	*msg = NULL;
	if (L->cuGetErrorName(r, name) != 0) *name = NULL;
	if (L->cuGetErrorString(r, msg) != 0) *msg = NULL;
}

int ms_nvrtc_version(const ms_lib *L, int *major, int *minor) { return L->nvrtcVersion(major, minor); }
const char *ms_nvrtc_error(const ms_lib *L, int r) { return L->nvrtcGetErrorString(r); }

int ms_nvrtc_archs(const ms_lib *L, int *out, int n) {
	int k = 0;
	if (!L->nvrtcGetNumSupportedArchs || !L->nvrtcGetSupportedArchs) return -1;
	if (L->nvrtcGetNumSupportedArchs(&k) != 0 || k <= 0) return -1;
	int *all = malloc(sizeof(int) * (size_t)k);
	if (!all) return -1;
	if (L->nvrtcGetSupportedArchs(all) != 0) {
		free(all);
		return -1;
	}
	for (int i = 0; i < k && i < n; i++) out[i] = all[i];
	free(all);
	return k < n ? k : n;
}

/* ---- driver wrappers -------------------------------------------------- */

#define SETCTX()                                                  \
	do {                                                      \
		CUresult r_ = L->cuCtxSetCurrent(c);              \
		if (r_ != 0) return -r_;                          \
	} while (0)

int ms_device_count(const ms_lib *L, int *n) { return L->cuDeviceGetCount(n); }

int ms_device_info(const ms_lib *L, int ordinal, CUdevice *d, char *name, int namelen, char *pci, int pcilen,
		size_t *mem, int *major, int *minor, int *sms) {
	int r;
	if ((r = L->cuDeviceGet(d, ordinal))) return r;
	if ((r = L->cuDeviceGetName(name, namelen, *d))) return r;
	if (L->cuDeviceGetPCIBusId(pci, pcilen, *d)) pci[0] = 0;
	if ((r = L->cuDeviceTotalMem_v2(mem, *d))) return r;
	if ((r = L->cuDeviceGetAttribute(major, 75, *d))) return r;
	if ((r = L->cuDeviceGetAttribute(minor, 76, *d))) return r;
	return L->cuDeviceGetAttribute(sms, 16, *d);
}

int ms_primary_retain(const ms_lib *L, CUcontext *c, CUdevice d) { return L->cuDevicePrimaryCtxRetain(c, d); }

int ms_ctx_sync(const ms_lib *L, CUcontext c) { SETCTX(); return L->cuCtxSynchronize(); }
int ms_mem_info(const ms_lib *L, CUcontext c, size_t *f, size_t *t) { SETCTX(); return L->cuMemGetInfo_v2(f, t); }
int ms_stream_create(const ms_lib *L, CUcontext c, CUstream *s, unsigned flags) {
	SETCTX();
	return L->cuStreamCreate(s, flags);
}
int ms_stream_destroy(const ms_lib *L, CUcontext c, CUstream s) { SETCTX(); return L->cuStreamDestroy_v2(s); }
int ms_stream_sync(const ms_lib *L, CUcontext c, CUstream s) { SETCTX(); return L->cuStreamSynchronize(s); }
int ms_stream_query(const ms_lib *L, CUcontext c, CUstream s) { SETCTX(); return L->cuStreamQuery(s); }
int ms_stream_wait(const ms_lib *L, CUcontext c, CUstream s, CUevent e) {
	SETCTX();
	return L->cuStreamWaitEvent(s, e, 0);
}
int ms_event_create(const ms_lib *L, CUcontext c, CUevent *e, unsigned flags) {
	SETCTX();
	return L->cuEventCreate(e, flags);
}
int ms_event_destroy(const ms_lib *L, CUcontext c, CUevent e) { SETCTX(); return L->cuEventDestroy_v2(e); }
int ms_event_record(const ms_lib *L, CUcontext c, CUevent e, CUstream s) { SETCTX(); return L->cuEventRecord(e, s); }
int ms_event_query(const ms_lib *L, CUcontext c, CUevent e) { SETCTX(); return L->cuEventQuery(e); }
int ms_event_sync(const ms_lib *L, CUcontext c, CUevent e) { SETCTX(); return L->cuEventSynchronize(e); }
int ms_event_elapsed(const ms_lib *L, CUcontext c, float *ms, CUevent a, CUevent b) {
	SETCTX();
	return L->cuEventElapsedTime(ms, a, b);
}
int ms_mem_alloc(const ms_lib *L, CUcontext c, CUdeviceptr *p, size_t n) { SETCTX(); return L->cuMemAlloc_v2(p, n); }
int ms_mem_free(const ms_lib *L, CUcontext c, CUdeviceptr p) { SETCTX(); return L->cuMemFree_v2(p); }
int ms_host_alloc(const ms_lib *L, CUcontext c, void **p, size_t n, unsigned flags) {
	SETCTX();
	return L->cuMemHostAlloc(p, n, flags);
}
int ms_host_free(const ms_lib *L, CUcontext c, void *p) { SETCTX(); return L->cuMemFreeHost(p); }
int ms_h2d(const ms_lib *L, CUcontext c, CUdeviceptr dst, const void *src, size_t n, CUstream s) {
	SETCTX();
	return L->cuMemcpyHtoDAsync_v2(dst, src, n, s);
}
int ms_d2h(const ms_lib *L, CUcontext c, void *dst, CUdeviceptr src, size_t n, CUstream s) {
	SETCTX();
	return L->cuMemcpyDtoHAsync_v2(dst, src, n, s);
}
int ms_d2d(const ms_lib *L, CUcontext c, CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s) {
	SETCTX();
	return L->cuMemcpyDtoDAsync_v2(dst, src, n, s);
}
int ms_peer(const ms_lib *L, CUcontext c, CUdeviceptr dst, CUcontext dc, CUdeviceptr src, CUcontext sc, size_t n,
		CUstream s) {
	SETCTX();
	return L->cuMemcpyPeerAsync(dst, dc, src, sc, n, s);
}
int ms_memset8(const ms_lib *L, CUcontext c, CUdeviceptr dst, unsigned char v, size_t n, CUstream s) {
	SETCTX();
	return L->cuMemsetD8Async(dst, v, n, s);
}
int ms_h2d_staged(const ms_lib *L, CUcontext c, CUdeviceptr dst, void *staging, const void *src, size_t n,
		CUstream s) {
	memcpy(staging, src, n);
	SETCTX();
	return L->cuMemcpyHtoDAsync_v2(dst, staging, n, s);
}
int ms_module_load(const ms_lib *L, CUcontext c, CUmodule *m, const void *image) {
	SETCTX();
	return L->cuModuleLoadData(m, image);
}
int ms_module_unload(const ms_lib *L, CUcontext c, CUmodule m) { SETCTX(); return L->cuModuleUnload(m); }
int ms_module_function(const ms_lib *L, CUcontext c, CUfunction *f, CUmodule m, const char *name) {
	SETCTX();
	return L->cuModuleGetFunction(f, m, name);
}

#define MS_MAX_ARGS 32

int ms_launch(const ms_lib *L, CUcontext c, CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
		unsigned by, unsigned bz, unsigned shmem, CUstream s, char *args, const uint16_t *offs, int nargs) {
	void *params[MS_MAX_ARGS];
	if (nargs > MS_MAX_ARGS) return 1; /* CUDA_ERROR_INVALID_VALUE */
	for (int i = 0; i < nargs; i++) params[i] = args + offs[i];
	SETCTX();
	return L->cuLaunchKernel(f, gx, gy, gz, bx, by, bz, shmem, s, params, NULL);
}

extern void msGoHostFn(uintptr_t handle);
static void ms_host_trampoline(void *p) { msGoHostFn((uintptr_t)p); }

int ms_launch_host(const ms_lib *L, CUcontext c, CUstream s, uintptr_t handle) {
	SETCTX();
	return L->cuLaunchHostFunc(s, ms_host_trampoline, (void *)handle);
}

int ms_d2h_host(const ms_lib *L, CUcontext c, void *staging, CUdeviceptr src, size_t n, CUstream s, uintptr_t handle,
		int *stage) {
	*stage = 0;
	SETCTX();
	int r = L->cuMemcpyDtoHAsync_v2(staging, src, n, s);
	if (r) return r;
	*stage = 1;
	return L->cuLaunchHostFunc(s, ms_host_trampoline, (void *)handle);
}

int ms_ctx_create(const ms_lib *L, CUcontext *c, CUdevice d) {
	if (L->cuCtxCreate_v2) return L->cuCtxCreate_v2(c, 0, d);
	return L->cuCtxCreate_v4(c, NULL, 0, d);
}
int ms_ctx_destroy(const ms_lib *L, CUcontext c) { return L->cuCtxDestroy_v2(c); }

static long long now_ns(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

long long ms_bench_raw_launch(const ms_lib *L, CUcontext c, CUfunction f, CUstream s, int iters, int *status) {
	*status = L->cuCtxSetCurrent(c);
	if (*status) return 0;
	long long t0 = now_ns();
	for (int i = 0; i < iters; i++) {
		CUresult r = L->cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, s, NULL, NULL);
		if (r) {
			*status = r;
			return 0;
		}
	}
	return now_ns() - t0;
}

/* ---- cuBLAS ----------------------------------------------------------- */

enum { CUBLAS_DEFAULT_MATH = 0, CUBLAS_PEDANTIC_MATH = 2, CUBLAS_TF32_TENSOR_OP_MATH = 3 };

int ms_blas_create(const ms_lib *L, CUcontext c, cublasHandle_t *h, CUstream s, void *ws, size_t wsn) {
	SETCTX();
	int st = L->cublasCreate_v2(h);
	if (st) return st;
	st = L->cublasSetStream_v2(*h, s);
	if (!st && ws && L->cublasSetWorkspace_v2) st = L->cublasSetWorkspace_v2(*h, ws, wsn);
	if (st) {
		L->cublasDestroy_v2(*h);
		*h = NULL;
	}
	return st;
}

int ms_blas_destroy(const ms_lib *L, CUcontext c, cublasHandle_t h) { SETCTX(); return L->cublasDestroy_v2(h); }

int ms_blas_gemm(const ms_lib *L, CUcontext c, cublasHandle_t h, int dbl, int tf32, int ta, int tb, int m, int n,
		int k, double alpha, CUdeviceptr A, int lda, long long sa, CUdeviceptr B, int ldb, long long sb, double beta,
		CUdeviceptr C, int ldc, long long sc, int batch) {
	SETCTX();
	int st = L->cublasSetMathMode(h, (!dbl && tf32) ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH);
	if (st) return st;
	if (dbl) {
		if (batch == 1)
			return L->cublasDgemm_v2(h, ta, tb, m, n, k, &alpha, (const double *)A, lda, (const double *)B, ldb,
				&beta, (double *)C, ldc);
		return L->cublasDgemmStridedBatched(h, ta, tb, m, n, k, &alpha, (const double *)A, lda, sa,
			(const double *)B, ldb, sb, &beta, (double *)C, ldc, sc, batch);
	}
	float fa = (float)alpha, fb = (float)beta;
	if (batch == 1)
		return L->cublasSgemm_v2(h, ta, tb, m, n, k, &fa, (const float *)A, lda, (const float *)B, ldb, &fb,
			(float *)C, ldc);
	return L->cublasSgemmStridedBatched(h, ta, tb, m, n, k, &fa, (const float *)A, lda, sa, (const float *)B, ldb,
		sb, &fb, (float *)C, ldc, sc, batch);
}

int ms_blas_gemm_ex(const ms_lib *L, CUcontext c, cublasHandle_t h, int dt, int ta, int tb, int m, int n, int k,
		CUdeviceptr A, int lda, long long sa, CUdeviceptr B, int ldb, long long sb, CUdeviceptr C, int ldc,
		long long sc, int batch) {
	enum { COMPUTE_32F = 68, GEMM_DEFAULT = -1 };
	if (!L->cublasGemmEx || !L->cublasGemmStridedBatchedEx) return 15; /* CUBLAS_STATUS_NOT_SUPPORTED */
	SETCTX();
	int st = L->cublasSetMathMode(h, CUBLAS_DEFAULT_MATH);
	if (st) return st;
	float alpha = 1, beta = 0;
	if (batch == 1)
		return L->cublasGemmEx(h, ta, tb, m, n, k, &alpha, (const void *)A, dt, lda, (const void *)B, dt, ldb,
			&beta, (void *)C, dt, ldc, COMPUTE_32F, GEMM_DEFAULT);
	return L->cublasGemmStridedBatchedEx(h, ta, tb, m, n, k, &alpha, (const void *)A, dt, lda, sa, (const void *)B,
		dt, ldb, sb, &beta, (void *)C, dt, ldc, sc, batch, COMPUTE_32F, GEMM_DEFAULT);
}

/* ---- cuBLASLt ---------------------------------------------------------- */

enum {
	LT_DESC_TRANSA = 3, LT_DESC_TRANSB = 4, LT_DESC_EPILOGUE = 7, LT_DESC_BIAS_POINTER = 8,
	LT_PREF_MAX_WORKSPACE_BYTES = 1,
	CUBLAS_COMPUTE_32F = 68, CUBLAS_COMPUTE_32F_FAST_TF32 = 77, CUBLAS_COMPUTE_64F = 70,
	CUDA_R_32F = 0, CUDA_R_64F = 1,
};

int ms_lt_create(const ms_lib *L, CUcontext c, cublasLtHandle_t *h) { SETCTX(); return L->cublasLtCreate(h); }
int ms_lt_destroy(const ms_lib *L, CUcontext c, cublasLtHandle_t h) { SETCTX(); return L->cublasLtDestroy(h); }

void ms_lt_plan_free(const ms_lib *L, ms_lt_plan *p) {
	if (p->desc) L->cublasLtMatmulDescDestroy(p->desc);
	if (p->a) L->cublasLtMatrixLayoutDestroy(p->a);
	if (p->b) L->cublasLtMatrixLayoutDestroy(p->b);
	if (p->c) L->cublasLtMatrixLayoutDestroy(p->c);
	memset(p, 0, sizeof *p);
}

/* Stages of ms_lt_plan_make, named on the Go side. */
int ms_lt_plan_make(const ms_lib *L, CUcontext c, cublasLtHandle_t h, ms_lt_plan *p, int dbl, int tf32, int ta,
		int tb, int m, int n, int k, int lda, int ldb, int ldc, int epilogue, size_t max_ws, int *stage) {
	memset(p, 0, sizeof *p);
	p->dbl = dbl;
	*stage = 0;
	CUresult r = L->cuCtxSetCurrent(c);
	if (r) return -r;
	int dt = dbl ? CUDA_R_64F : CUDA_R_32F;
	int ct = dbl ? CUBLAS_COMPUTE_64F : (tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F);
	int st;
	*stage = 1;
	if ((st = L->cublasLtMatmulDescCreate(&p->desc, ct, dt))) goto fail;
	*stage = 2;
	if ((st = L->cublasLtMatmulDescSetAttribute(p->desc, LT_DESC_TRANSA, &ta, sizeof ta))) goto fail;
	if ((st = L->cublasLtMatmulDescSetAttribute(p->desc, LT_DESC_TRANSB, &tb, sizeof tb))) goto fail;
	unsigned ep = (unsigned)epilogue;
	if ((st = L->cublasLtMatmulDescSetAttribute(p->desc, LT_DESC_EPILOGUE, &ep, sizeof ep))) goto fail;
	*stage = 3;
	/* Column-major layouts of op(A) m x k, op(B) k x n, C m x n. */
	if ((st = L->cublasLtMatrixLayoutCreate(&p->a, dt, ta ? k : m, ta ? m : k, lda))) goto fail;
	if ((st = L->cublasLtMatrixLayoutCreate(&p->b, dt, tb ? n : k, tb ? k : n, ldb))) goto fail;
	if ((st = L->cublasLtMatrixLayoutCreate(&p->c, dt, m, n, ldc))) goto fail;
	*stage = 4;
	cublasLtMatmulPreference_t pref = NULL;
	if ((st = L->cublasLtMatmulPreferenceCreate(&pref))) goto fail;
	uint64_t ws = max_ws;
	st = L->cublasLtMatmulPreferenceSetAttribute(pref, LT_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws);
	if (st) {
		L->cublasLtMatmulPreferenceDestroy(pref);
		goto fail;
	}
	*stage = 5;
	cublasLtMatmulHeuristicResult_t res;
	int found = 0;
	memset(&res, 0, sizeof res);
	st = L->cublasLtMatmulAlgoGetHeuristic(h, p->desc, p->a, p->b, p->c, p->c, pref, 1, &res, &found);
	L->cublasLtMatmulPreferenceDestroy(pref);
	if (st) goto fail;
	if (found < 1) {
		*stage = 6;
		st = 15; /* CUBLAS_STATUS_NOT_SUPPORTED */
		goto fail;
	}
	p->algo = res.algo;
	p->ws = res.workspaceSize;
	*stage = 0;
	return 0;
fail:
	ms_lt_plan_free(L, p);
	return st;
}

int ms_lt_run(const ms_lib *L, CUcontext c, cublasLtHandle_t h, ms_lt_plan *p, CUdeviceptr A, CUdeviceptr B,
		CUdeviceptr C, CUdeviceptr bias, void *ws, size_t wsn, CUstream s, int *stage) {
	*stage = 0;
	CUresult r = L->cuCtxSetCurrent(c);
	if (r) return -r;
	int st;
	if (bias && bias != p->bias) {
		*stage = 7;
		void *bp = (void *)bias;
		if ((st = L->cublasLtMatmulDescSetAttribute(p->desc, LT_DESC_BIAS_POINTER, &bp, sizeof bp))) return st;
		p->bias = bias;
	}
	*stage = 8;
	double one = 1, zero = 0;
	float fone = 1, fzero = 0;
	const void *alpha = p->dbl ? (const void *)&one : (const void *)&fone;
	const void *beta = p->dbl ? (const void *)&zero : (const void *)&fzero;
	return L->cublasLtMatmul(h, p->desc, alpha, (const void *)A, p->a, (const void *)B, p->b, beta, (const void *)C,
		p->c, (void *)C, p->c, &p->algo, ws, wsn, s);
}

/* ---- NVRTC ------------------------------------------------------------- */

int ms_nvrtc_compile(const ms_lib *L, const char *src, const char *name, const char *arch, int ptx, char **image,
		size_t *image_len, char **log, int *stage) {
	nvrtcProgram prog = NULL;
	*image = NULL;
	*image_len = 0;
	*log = NULL;
	*stage = 0;
	int st = L->nvrtcCreateProgram(&prog, src, name, 0, NULL, NULL);
	if (st) return st;
	const char *opts[] = {arch, "--std=c++17"};
	*stage = 1;
	int cst = L->nvrtcCompileProgram(prog, 2, opts);
	size_t ln = 0;
	if (L->nvrtcGetProgramLogSize(prog, &ln) == 0 && ln > 0) {
		*log = malloc(ln + 1);
		if (*log) {
			if (L->nvrtcGetProgramLog(prog, *log) != 0) (*log)[0] = 0;
			(*log)[ln] = 0;
		}
	}
	if (cst) {
		L->nvrtcDestroyProgram(&prog);
		return cst;
	}
	*stage = 2;
	size_t n = 0;
	if (ptx) {
		st = L->nvrtcGetPTXSize(prog, &n);
		if (!st) {
			*image = malloc(n + 1);
			st = L->nvrtcGetPTX(prog, *image);
		}
	} else {
		st = L->nvrtcGetCUBINSize(prog, &n);
		if (!st) {
			*image = malloc(n + 1);
			st = L->nvrtcGetCUBIN(prog, *image);
		}
	}
	if (st) {
		free(*image);
		*image = NULL;
	} else {
		*image_len = n;
	}
	L->nvrtcDestroyProgram(&prog);
	return st;
}
