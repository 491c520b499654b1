/* Declarations of the CUDA driver, cuBLAS, cuBLASLt and NVRTC entry points
 * that mstream uses, written from the public ABI (no CUDA header is needed at
 * build time), and of the shim that calls them through a table filled by
 * dlopen/dlsym.
 *
 * Every ms_* wrapper that takes a CUcontext makes it current and then makes
 * its one call, inside a single cgo call, because a goroutine may move to
 * another OS thread between two cgo calls and CUDA's current context is per
 * thread. A wrapper returns the CUDA status of its call, or the negated
 * status of cuCtxSetCurrent when that failed first (statuses are never
 * negative), so the Go side can name the call that failed. */
#ifndef MSTREAM_CUDA_SHIM_H
#define MSTREAM_CUDA_SHIM_H

#include <stddef.h>
#include <stdint.h>

typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef struct CUctx_st *CUcontext;
typedef struct CUstream_st *CUstream;
typedef struct CUevent_st *CUevent;
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;
typedef void (*CUhostFn)(void *userData);

typedef int cublasStatus_t;
typedef struct cublasContext *cublasHandle_t;
typedef struct cublasLtContext *cublasLtHandle_t;
typedef struct cublasLtMatmulDescOpaque *cublasLtMatmulDesc_t;
typedef struct cublasLtMatrixLayoutOpaque *cublasLtMatrixLayout_t;
typedef struct cublasLtMatmulPreferenceOpaque *cublasLtMatmulPreference_t;
typedef struct { uint64_t data[8]; } cublasLtMatmulAlgo_t;
typedef struct {
	cublasLtMatmulAlgo_t algo;
	size_t workspaceSize;
	cublasStatus_t state;
	float wavesCount;
	int reserved[4];
} cublasLtMatmulHeuristicResult_t;

typedef int nvrtcResult;
typedef struct _nvrtcProgram *nvrtcProgram;

/* The function table. Pointers marked optional may be NULL. */
typedef struct ms_lib {
	void *h_cuda, *h_blas, *h_lt, *h_nvrtc;
	char path_cuda[512], path_blas[512], path_lt[512], path_nvrtc[512];
	int driver_version; /* e.g. 13000 */

	/* driver */
	CUresult (*cuInit)(unsigned);
	CUresult (*cuDriverGetVersion)(int *);
	CUresult (*cuGetErrorName)(CUresult, const char **);
	CUresult (*cuGetErrorString)(CUresult, const char **);
	CUresult (*cuDeviceGetCount)(int *);
	CUresult (*cuDeviceGet)(CUdevice *, int);
	CUresult (*cuDeviceGetName)(char *, int, CUdevice);
	CUresult (*cuDeviceTotalMem_v2)(size_t *, CUdevice);
	CUresult (*cuDeviceGetAttribute)(int *, int, CUdevice);
	CUresult (*cuDeviceGetPCIBusId)(char *, int, CUdevice);
	CUresult (*cuDevicePrimaryCtxRetain)(CUcontext *, CUdevice);
	CUresult (*cuDevicePrimaryCtxRelease_v2)(CUdevice);
	CUresult (*cuCtxCreate_v2)(CUcontext *, unsigned, CUdevice);             /* optional */
	CUresult (*cuCtxCreate_v4)(CUcontext *, void *, unsigned, CUdevice);     /* optional */
	CUresult (*cuCtxDestroy_v2)(CUcontext);
	CUresult (*cuCtxSetCurrent)(CUcontext);
	CUresult (*cuCtxSynchronize)(void);
	CUresult (*cuMemGetInfo_v2)(size_t *, size_t *);
	CUresult (*cuStreamCreate)(CUstream *, unsigned);
	CUresult (*cuStreamDestroy_v2)(CUstream);
	CUresult (*cuStreamSynchronize)(CUstream);
	CUresult (*cuStreamQuery)(CUstream);
	CUresult (*cuStreamWaitEvent)(CUstream, CUevent, unsigned);
	CUresult (*cuEventCreate)(CUevent *, unsigned);
	CUresult (*cuEventDestroy_v2)(CUevent);
	CUresult (*cuEventRecord)(CUevent, CUstream);
	CUresult (*cuEventQuery)(CUevent);
	CUresult (*cuEventSynchronize)(CUevent);
	CUresult (*cuEventElapsedTime)(float *, CUevent, CUevent);
	CUresult (*cuMemAlloc_v2)(CUdeviceptr *, size_t);
	CUresult (*cuMemFree_v2)(CUdeviceptr);
	CUresult (*cuMemHostAlloc)(void **, size_t, unsigned);
	CUresult (*cuMemFreeHost)(void *);
	CUresult (*cuMemcpyHtoDAsync_v2)(CUdeviceptr, const void *, size_t, CUstream);
	CUresult (*cuMemcpyDtoHAsync_v2)(void *, CUdeviceptr, size_t, CUstream);
	CUresult (*cuMemcpyDtoDAsync_v2)(CUdeviceptr, CUdeviceptr, size_t, CUstream);
	CUresult (*cuMemcpyPeerAsync)(CUdeviceptr, CUcontext, CUdeviceptr, CUcontext, size_t, CUstream);
	CUresult (*cuMemsetD8Async)(CUdeviceptr, unsigned char, size_t, CUstream);
	CUresult (*cuModuleLoadData)(CUmodule *, const void *);
	CUresult (*cuModuleUnload)(CUmodule);
	CUresult (*cuModuleGetFunction)(CUfunction *, CUmodule, const char *);
	CUresult (*cuLaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
		unsigned, CUstream, void **, void **);
	CUresult (*cuLaunchHostFunc)(CUstream, CUhostFn, void *);

	/* cuBLAS */
	cublasStatus_t (*cublasCreate_v2)(cublasHandle_t *);
	cublasStatus_t (*cublasDestroy_v2)(cublasHandle_t);
	cublasStatus_t (*cublasSetStream_v2)(cublasHandle_t, CUstream);
	cublasStatus_t (*cublasSetMathMode)(cublasHandle_t, int);
	cublasStatus_t (*cublasSetWorkspace_v2)(cublasHandle_t, void *, size_t); /* optional */
	cublasStatus_t (*cublasGetProperty)(int, int *);                        /* optional */
	const char *(*cublasGetStatusString)(cublasStatus_t);                   /* optional */
	cublasStatus_t (*cublasSgemm_v2)(cublasHandle_t, int, int, int, int, int, const float *,
		const float *, int, const float *, int, const float *, float *, int);
	cublasStatus_t (*cublasDgemm_v2)(cublasHandle_t, int, int, int, int, int, const double *,
		const double *, int, const double *, int, const double *, double *, int);
	cublasStatus_t (*cublasSgemmStridedBatched)(cublasHandle_t, int, int, int, int, int, const float *,
		const float *, int, long long, const float *, int, long long, const float *, float *, int,
		long long, int);
	cublasStatus_t (*cublasDgemmStridedBatched)(cublasHandle_t, int, int, int, int, int, const double *,
		const double *, int, long long, const double *, int, long long, const double *, double *, int,
		long long, int);
	/* Mixed-precision GEMMs (half, bfloat16): optional, so a library without them still loads. */
	cublasStatus_t (*cublasGemmEx)(cublasHandle_t, int, int, int, int, int, const void *, const void *, int,
		int, const void *, int, int, const void *, void *, int, int, int, int);
	cublasStatus_t (*cublasGemmStridedBatchedEx)(cublasHandle_t, int, int, int, int, int, const void *,
		const void *, int, int, long long, const void *, int, int, long long, const void *, void *, int, int,
		long long, int, int, int);

	/* cuBLASLt */
	cublasStatus_t (*cublasLtCreate)(cublasLtHandle_t *);
	cublasStatus_t (*cublasLtDestroy)(cublasLtHandle_t);
	size_t (*cublasLtGetVersion)(void);
	cublasStatus_t (*cublasLtMatmulDescCreate)(cublasLtMatmulDesc_t *, int, int);
	cublasStatus_t (*cublasLtMatmulDescDestroy)(cublasLtMatmulDesc_t);
	cublasStatus_t (*cublasLtMatmulDescSetAttribute)(cublasLtMatmulDesc_t, int, const void *, size_t);
	cublasStatus_t (*cublasLtMatrixLayoutCreate)(cublasLtMatrixLayout_t *, int, uint64_t, uint64_t, int64_t);
	cublasStatus_t (*cublasLtMatrixLayoutDestroy)(cublasLtMatrixLayout_t);
	cublasStatus_t (*cublasLtMatmulPreferenceCreate)(cublasLtMatmulPreference_t *);
	cublasStatus_t (*cublasLtMatmulPreferenceDestroy)(cublasLtMatmulPreference_t);
	cublasStatus_t (*cublasLtMatmulPreferenceSetAttribute)(cublasLtMatmulPreference_t, int, const void *, size_t);
	cublasStatus_t (*cublasLtMatmulAlgoGetHeuristic)(cublasLtHandle_t, cublasLtMatmulDesc_t,
		cublasLtMatrixLayout_t, cublasLtMatrixLayout_t, cublasLtMatrixLayout_t, cublasLtMatrixLayout_t,
		cublasLtMatmulPreference_t, int, cublasLtMatmulHeuristicResult_t *, int *);
	cublasStatus_t (*cublasLtMatmul)(cublasLtHandle_t, cublasLtMatmulDesc_t, const void *, const void *,
		cublasLtMatrixLayout_t, const void *, cublasLtMatrixLayout_t, const void *, const void *,
		cublasLtMatrixLayout_t, void *, cublasLtMatrixLayout_t, const cublasLtMatmulAlgo_t *, void *, size_t,
		CUstream);

	/* NVRTC */
	nvrtcResult (*nvrtcVersion)(int *, int *);
	const char *(*nvrtcGetErrorString)(nvrtcResult);
	nvrtcResult (*nvrtcCreateProgram)(nvrtcProgram *, const char *, const char *, int, const char *const *,
		const char *const *);
	nvrtcResult (*nvrtcDestroyProgram)(nvrtcProgram *);
	nvrtcResult (*nvrtcCompileProgram)(nvrtcProgram, int, const char *const *);
	nvrtcResult (*nvrtcGetProgramLogSize)(nvrtcProgram, size_t *);
	nvrtcResult (*nvrtcGetProgramLog)(nvrtcProgram, char *);
	nvrtcResult (*nvrtcGetPTXSize)(nvrtcProgram, size_t *);
	nvrtcResult (*nvrtcGetPTX)(nvrtcProgram, char *);
	nvrtcResult (*nvrtcGetCUBINSize)(nvrtcProgram, size_t *); /* optional (11.1+) */
	nvrtcResult (*nvrtcGetCUBIN)(nvrtcProgram, char *);       /* optional */
	nvrtcResult (*nvrtcGetNumSupportedArchs)(int *);          /* optional (11.2+) */
	nvrtcResult (*nvrtcGetSupportedArchs)(int *);             /* optional */
} ms_lib;

/* Loading. ms_open fills L; on failure it returns a non-zero stage and
 * writes a message to err. dirs is a ':'-separated list of folders tried
 * after the plain soname (which follows LD_LIBRARY_PATH and ld.so.cache);
 * with only_dirs set the plain soname is not tried. */
enum { MS_OK = 0, MS_NO_DRIVER = 1, MS_NO_SYMBOL = 2, MS_INIT_FAILED = 3, MS_NO_BLAS = 4, MS_NO_NVRTC = 5 };
int ms_open(ms_lib *L, const char *dirs, int only_dirs, int driver_only, char *err, size_t errlen);
void ms_close(ms_lib *L);

void ms_error_name(const ms_lib *L, int r, const char **name, const char **msg);
int ms_nvrtc_version(const ms_lib *L, int *major, int *minor);
const char *ms_nvrtc_error(const ms_lib *L, int r);
/* ms_nvrtc_archs writes up to n supported sm numbers; returns the count or
 * -1 when this NVRTC cannot say. */
int ms_nvrtc_archs(const ms_lib *L, int *out, int n);

/* Driver wrappers. */
int ms_device_count(const ms_lib *L, int *n);
int ms_device_info(const ms_lib *L, int ordinal, CUdevice *d, char *name, int namelen, char *pci, int pcilen,
	size_t *mem, int *major, int *minor, int *sms);
int ms_primary_retain(const ms_lib *L, CUcontext *c, CUdevice d);
int ms_ctx_sync(const ms_lib *L, CUcontext c);
int ms_mem_info(const ms_lib *L, CUcontext c, size_t *free_, size_t *total);
int ms_stream_create(const ms_lib *L, CUcontext c, CUstream *s, unsigned flags);
int ms_stream_destroy(const ms_lib *L, CUcontext c, CUstream s);
int ms_stream_sync(const ms_lib *L, CUcontext c, CUstream s);
int ms_stream_query(const ms_lib *L, CUcontext c, CUstream s);
int ms_stream_wait(const ms_lib *L, CUcontext c, CUstream s, CUevent e);
int ms_event_create(const ms_lib *L, CUcontext c, CUevent *e, unsigned flags);
int ms_event_destroy(const ms_lib *L, CUcontext c, CUevent e);
int ms_event_record(const ms_lib *L, CUcontext c, CUevent e, CUstream s);
int ms_event_query(const ms_lib *L, CUcontext c, CUevent e);
int ms_event_sync(const ms_lib *L, CUcontext c, CUevent e);
int ms_event_elapsed(const ms_lib *L, CUcontext c, float *ms, CUevent a, CUevent b);
int ms_mem_alloc(const ms_lib *L, CUcontext c, CUdeviceptr *p, size_t n);
int ms_mem_free(const ms_lib *L, CUcontext c, CUdeviceptr p);
int ms_host_alloc(const ms_lib *L, CUcontext c, void **p, size_t n, unsigned flags);
int ms_host_free(const ms_lib *L, CUcontext c, void *p);
int ms_h2d(const ms_lib *L, CUcontext c, CUdeviceptr dst, const void *src, size_t n, CUstream s);
int ms_d2h(const ms_lib *L, CUcontext c, void *dst, CUdeviceptr src, size_t n, CUstream s);
int ms_d2d(const ms_lib *L, CUcontext c, CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s);
int ms_peer(const ms_lib *L, CUcontext c, CUdeviceptr dst, CUcontext dc, CUdeviceptr src, CUcontext sc, size_t n,
	CUstream s);
int ms_memset8(const ms_lib *L, CUcontext c, CUdeviceptr dst, unsigned char v, size_t n, CUstream s);
/* ms_h2d_staged copies n bytes from src (any host memory) into pinned
 * staging, then enqueues the staging->device copy: one cgo call. */
int ms_h2d_staged(const ms_lib *L, CUcontext c, CUdeviceptr dst, void *staging, const void *src, size_t n,
	CUstream s);
/* ms_d2h_host enqueues the device->staging copy and then the host function
 * that moves the bytes on (handle is passed to msGoHostFn). */
int ms_d2h_host(const ms_lib *L, CUcontext c, void *staging, CUdeviceptr src, size_t n, CUstream s, uintptr_t handle,
	int *stage);
int ms_module_load(const ms_lib *L, CUcontext c, CUmodule *m, const void *image);
int ms_module_unload(const ms_lib *L, CUcontext c, CUmodule m);
int ms_module_function(const ms_lib *L, CUcontext c, CUfunction *f, CUmodule m, const char *name);
/* ms_launch: args is a packed buffer of nargs parameters at offs[i]. */
int ms_launch(const ms_lib *L, CUcontext c, CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
	unsigned by, unsigned bz, unsigned shmem, CUstream s, char *args, const uint16_t *offs, int nargs);
int ms_launch_host(const ms_lib *L, CUcontext c, CUstream s, uintptr_t handle);
int ms_ctx_create(const ms_lib *L, CUcontext *c, CUdevice d);
int ms_ctx_destroy(const ms_lib *L, CUcontext c);

/* Launch-overhead measurement: iters launches of f (no parameters) in a
 * plain C loop, returning the nanoseconds the loop took. */
long long ms_bench_raw_launch(const ms_lib *L, CUcontext c, CUfunction f, CUstream s, int iters, int *status);

/* cuBLAS. */
int ms_blas_create(const ms_lib *L, CUcontext c, cublasHandle_t *h, CUstream s, void *ws, size_t wsn);
int ms_blas_destroy(const ms_lib *L, CUcontext c, cublasHandle_t h);
int ms_blas_gemm(const ms_lib *L, CUcontext c, cublasHandle_t h, int dbl, int tf32, int ta, int tb, int m, int n,
	int k, double alpha, CUdeviceptr A, int lda, long long sa, CUdeviceptr B, int ldb, long long sb, double beta,
	CUdeviceptr C, int ldc, long long sc, int batch);
/* C = A·B for operands of cudaDataType dt (half or bfloat16), computed in
 * float (CUBLAS_COMPUTE_32F); CUBLAS_STATUS_NOT_SUPPORTED when cuBLAS lacks GemmEx. */
int ms_blas_gemm_ex(const ms_lib *L, CUcontext c, cublasHandle_t h, int dt, int ta, int tb, int m, int n, int k,
	CUdeviceptr A, int lda, long long sa, CUdeviceptr B, int ldb, long long sb, CUdeviceptr C, int ldc,
	long long sc, int batch);

/* cuBLASLt: a plan holds the descriptors and the algorithm for one shape. */
typedef struct ms_lt_plan {
	cublasLtMatmulDesc_t desc;
	cublasLtMatrixLayout_t a, b, c;
	cublasLtMatmulAlgo_t algo;
	size_t ws;
	int dbl;
	CUdeviceptr bias; /* the BIAS_POINTER the descriptor holds: set again only when it changes */
} ms_lt_plan;
int ms_lt_create(const ms_lib *L, CUcontext c, cublasLtHandle_t *h);
int ms_lt_destroy(const ms_lib *L, CUcontext c, cublasLtHandle_t h);
/* ms_lt_plan_make returns a cuBLAS status; *stage says which call failed
 * (index into a list the Go side knows). */
int ms_lt_plan_make(const ms_lib *L, CUcontext c, cublasLtHandle_t h, ms_lt_plan *p, int dbl, int tf32, int ta,
	int tb, int m, int n, int k, int lda, int ldb, int ldc, int epilogue, size_t max_ws, int *stage);
void ms_lt_plan_free(const ms_lib *L, ms_lt_plan *p);
int ms_lt_run(const ms_lib *L, CUcontext c, cublasLtHandle_t h, ms_lt_plan *p, CUdeviceptr A, CUdeviceptr B,
	CUdeviceptr C, CUdeviceptr bias, void *ws, size_t wsn, CUstream s, int *stage);

/* NVRTC: compile src; on success *image and *image_len hold a malloc'd CUBIN (or
 * PTX when ptx is set). The log, malloc'd, is returned in any case. */
int ms_nvrtc_compile(const ms_lib *L, const char *src, const char *name, const char *arch, int ptx, char **image,
	size_t *image_len, char **log, int *stage);

#endif
