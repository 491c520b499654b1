int mstream_blas_open(const char *path, char *err, int errlen);
int mstream_blas_close(const char *path);
const char *mstream_blas_corename(void);
const char *mstream_blas_config(void);
int mstream_cpu_isa(void);
void mstream_sgemm(int ta, int tb, int m, int n, int k, float alpha, const float *a, int lda,
		const float *b, int ldb, float beta, float *c, int ldc);
void mstream_dgemm(int ta, int tb, int m, int n, int k, double alpha, const double *a, int lda,
		const double *b, int ldb, double beta, double *c, int ldc);
int mstream_sgemm_row(int tb, int n, int k, float alpha, const float *x, int incx, const float *b, int ldb,
		float beta, float *c);
void mstream_blas_set_threads(int n);
int mstream_blas_get_threads(void);
