int mstream_blas_open(const char *path, char *err, int errlen);
int mstream_blas_close(const char *path);
const char *mstream_blas_corename(void);
const char *mstream_blas_config(void);
int mstream_cpu_isa(void);
/* The GEMMs' arguments, for ccall.Call (dl.c says what each computes). */
typedef struct {
	int ta, tb, m, n, k; float alpha; const float *a; int lda, incx; const float *b; int ldb; float beta; float *c;
	int ldc, ret;
} mstream_sgemm_args;
void mstream_sgemm_call(void *p);
void mstream_sgemm_row_call(void *p);
typedef struct {
	int ta, tb, m, n, k; double alpha; const double *a; int lda; const double *b; int ldb; double beta; double *c;
	int ldc;
} mstream_dgemm_args;
void mstream_dgemm_call(void *p);
void mstream_blas_set_threads(int n);
int mstream_blas_get_threads(void);
