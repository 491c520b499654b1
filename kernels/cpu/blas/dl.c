#include <dlfcn.h>
#include <stddef.h>
#include "dl.h"

typedef void (*sgemm_fn)(int, int, int, int, int, int, float, const float*, int, const float*, int, float, float*, int);
typedef void (*dgemm_fn)(int, int, int, int, int, int, double, const double*, int, const double*, int, double, double*, int);
typedef void (*setthreads_fn)(int);

static sgemm_fn p_sgemm;
static dgemm_fn p_dgemm;
static setthreads_fn p_setthreads;

int mstream_blas_open(void) {
	static const char *names[] = {"libopenblas.so.0", "libopenblas.so", "libblas.so.3", NULL};
	for (int i = 0; names[i]; i++) {
		void *h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
		if (!h) continue;
		sgemm_fn s = (sgemm_fn)dlsym(h, "cblas_sgemm");
		dgemm_fn d = (dgemm_fn)dlsym(h, "cblas_dgemm");
		if (!s || !d) { dlclose(h); continue; }
		p_sgemm = s;
		p_dgemm = d;
		p_setthreads = (setthreads_fn)dlsym(h, "openblas_set_num_threads");
		return 1;
	}
	return 0;
}

/* CblasRowMajor = 101, CblasNoTrans = 111, CblasTrans = 112 */
void mstream_sgemm(int ta, int tb, int m, int n, int k, float alpha, const float *a, int lda,
		const float *b, int ldb, float beta, float *c, int ldc) {
	p_sgemm(101, ta ? 112 : 111, tb ? 112 : 111, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

void mstream_dgemm(int ta, int tb, int m, int n, int k, double alpha, const double *a, int lda,
		const double *b, int ldb, double beta, double *c, int ldc) {
	p_dgemm(101, ta ? 112 : 111, tb ? 112 : 111, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

void mstream_blas_set_threads(int n) {
	if (p_setthreads) p_setthreads(n);
}
