#define _GNU_SOURCE
#include <dlfcn.h>
#include <sched.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include "dl.h"

typedef void (*sgemm_fn)(int, int, int, int, int, int, float, const float*, int, const float*, int, float, float*, int);
typedef void (*dgemm_fn)(int, int, int, int, int, int, double, const double*, int, const double*, int, double, double*, int);
typedef void (*sgemv_fn)(int, int, int, int, float, const float*, int, const float*, int, float, float*, int);
typedef void (*setthreads_fn)(int);
typedef int (*getthreads_fn)(void);
typedef char *(*str_fn)(void);

static void *handle;
static sgemm_fn p_sgemm;
static dgemm_fn p_dgemm;
static sgemv_fn p_sgemv;
static setthreads_fn p_setthreads;
static getthreads_fn p_getthreads;
static str_fn p_corename, p_config;

/* sym looks name up with the library's symbol prefix ("" for a plain
   OpenBLAS, "scipy_" for the scipy-openblas32 wheel's). */
static void *sym(void *h, const char *prefix, const char *name) {
	char buf[128];
	snprintf(buf, sizeof buf, "%s%s", prefix, name);
	return dlsym(h, buf);
}

/* open_one_cpu dlopens path with the calling thread held to the CPU it
   runs on. OpenBLAS's constructor starts a server thread for each CPU
   beyond the first that the loading thread may run on (it reads the
   affinity mask), and each spins on sched_yield for about 0.1 s before it
   sleeps, while the session runs OpenBLAS on one thread
   (mstream_blas_set_threads(1)): 100 ms of a core at every process start.
   Held to one CPU, the constructor starts none; a later set_threads(n)
   still starts n. The thread's own mask is restored after, and nothing
   in the process environment changes (setenv from a library races with
   the host's getenv). Where the mask cannot be read or set, the load
   goes on as before. */
static void *open_one_cpu(const char *path) {
	cpu_set_t was, one;
	int cpu = sched_getcpu();
	int held = cpu >= 0 && sched_getaffinity(0, sizeof was, &was) == 0;
	if (held) {
		CPU_ZERO(&one);
		CPU_SET(cpu, &one);
		held = sched_setaffinity(0, sizeof one, &one) == 0;
	}
	void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (held) sched_setaffinity(0, sizeof was, &was);
	return h;
}

int mstream_blas_open(const char *path, char *err, int errlen) {
	static const char *prefixes[] = {"", "scipy_", NULL};
	void *h = open_one_cpu(path);
	if (!h) {
		snprintf(err, errlen, "%s", dlerror());
		return 0;
	}
	for (int i = 0; prefixes[i]; i++) {
		sgemm_fn s = (sgemm_fn)sym(h, prefixes[i], "cblas_sgemm");
		dgemm_fn d = (dgemm_fn)sym(h, prefixes[i], "cblas_dgemm");
		if (!s || !d) continue;
		handle = h;
		p_sgemm = s;
		p_dgemm = d;
		p_sgemv = (sgemv_fn)sym(h, prefixes[i], "cblas_sgemv");
		p_setthreads = (setthreads_fn)sym(h, prefixes[i], "openblas_set_num_threads");
		p_getthreads = (getthreads_fn)sym(h, prefixes[i], "openblas_get_num_threads");
		p_corename = (str_fn)sym(h, prefixes[i], "openblas_get_corename");
		p_config = (str_fn)sym(h, prefixes[i], "openblas_get_config");
		return 1;
	}
	dlclose(h);
	snprintf(err, errlen, "no cblas_sgemm/cblas_dgemm (nor scipy_-prefixed) in %s", path);
	return 0;
}

/* mstream_blas_close unloads the library so that a second open runs its
   constructor again (OpenBLAS reads OPENBLAS_CORETYPE there). It returns 1
   when the library really left the process. */
int mstream_blas_close(const char *path) {
	if (!handle) return 1;
	dlclose(handle);
	handle = NULL;
	p_sgemm = NULL;
	p_dgemm = NULL;
	p_sgemv = NULL;
	p_setthreads = NULL;
	p_getthreads = NULL;
	p_corename = p_config = NULL;
	void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
	if (h) {
		dlclose(h);
		return 0;
	}
	return 1;
}

const char *mstream_blas_corename(void) { return p_corename ? p_corename() : ""; }
const char *mstream_blas_config(void) { return p_config ? p_config() : ""; }

/* mstream_cpu_isa ranks the CPU's vector ISA: 4 AVX-512 (F, BW, VL, DQ),
   3 AVX2 with FMA, 2 AVX, 1 older. */
int mstream_cpu_isa(void) {
	__builtin_cpu_init();
	if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
	    __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq"))
		return 4;
	if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return 3;
	if (__builtin_cpu_supports("avx")) return 2;
	return 1;
}

/* The GEMMs, as ccall.Call runs them (dl.h's argument structs).
   CblasRowMajor = 101, CblasNoTrans = 111, CblasTrans = 112 */
void mstream_sgemm_call(void *p) {
	mstream_sgemm_args *a = p;
	p_sgemm(101, a->ta ? 112 : 111, a->tb ? 112 : 111, a->m, a->n, a->k, a->alpha, a->a, a->lda, a->b, a->ldb, a->beta,
		a->c, a->ldc);
}

void mstream_dgemm_call(void *p) {
	mstream_dgemm_args *a = p;
	p_dgemm(101, a->ta ? 112 : 111, a->tb ? 112 : 111, a->m, a->n, a->k, a->alpha, a->a, a->lda, a->b, a->ldb, a->beta,
		a->c, a->ldc);
}

/* mstream_sgemm_row_call is the sgemm for one row of C (m = 1, ta and
   lda unused): c[0:n] = alpha x op(B) + beta c, x the row of A (stride
   incx). OpenBLAS 0.3.21's GEMM packs B for a single row; its GEMV streams
   B once. ret is 0 when the library has no cblas_sgemv. */
void mstream_sgemm_row_call(void *p) {
	mstream_sgemm_args *a = p;
	a->ret = p_sgemv != 0;
	if (!p_sgemv) return;
	if (a->tb)
		p_sgemv(101, 111, a->n, a->k, a->alpha, a->b, a->ldb, a->a, a->incx, a->beta, a->c, 1); /* B is n x k: c = B x */
	else
		p_sgemv(101, 112, a->k, a->n, a->alpha, a->b, a->ldb, a->a, a->incx, a->beta, a->c, 1); /* B is k x n: c = B^T x */
}

void mstream_blas_set_threads(int n) {
	if (p_setthreads) p_setthreads(n);
}

int mstream_blas_get_threads(void) { return p_getthreads ? p_getthreads() : 0; }
