/* One argument struct and one thunk per C function that the Go side runs
 * through ccall.Call (a void (*)(void *) taking the struct): the thunk
 * calls the function with the struct's fields and stores its result, if
 * any, in ret. */
#ifndef MSTREAM_VEC_CALLS_H
#define MSTREAM_VEC_CALLS_H

typedef struct { int op; const float *x; float *y; long n; } ms_unary_args;
void ms_unary_call(void *p);
typedef struct { float *x; long rows, c; const float *scale, *offset; int act; } ms_channel_affine_args;
void ms_channel_affine_call(void *p);
typedef struct { int op; const float *a, *b; float *y; long n; int sa, sb; } ms_binary_args;
void ms_binary_call(void *p);
typedef struct { int op; const float *a, *b; float *y; long rows, w; int tiled_a; } ms_binary_rows_args;
void ms_binary_rows_call(void *p);
typedef struct { int op; const float *x; long rows, n; float *out; double scale; } ms_rowreduce_args;
void ms_rowreduce_call(void *p);
typedef struct { const float *x; long rows, cols, ld; double *acc; } ms_colsum_args;
void ms_colsum_call(void *p);
typedef struct { int op; const float *x; long rows, cols, ld; float *acc; } ms_colminmax_args;
void ms_colminmax_call(void *p);
typedef struct { int op; const float *x; long rows, n; long long *out; } ms_argreduce_args;
void ms_argreduce_call(void *p);
typedef struct { const float *x; float *y; long rows, n; int log; } ms_softmax_args;
void ms_softmax_call(void *p);
typedef struct { const float *x, *res; float *y; long rows, n; const float *gamma, *beta; long c; double eps; } ms_layernorm_args;
void ms_layernorm_call(void *p);
typedef struct { const float *x; long k; const float *b; long ldb, n; float alpha, beta; float *y; } ms_gemv_args;
void ms_gemv_call(void *p);
typedef struct { int transb; long m, n, k; const float *a; long lda; const float *b; long ldb; float *c; long ldc; int ret; } ms_gemm_args;
void ms_gemm_call(void *p);
typedef struct { long m, n, k; const float *a; long lda; const float *b; long ldb; float *c; long ldc; int sym, ret; } ms_gemm_nt_args;
void ms_gemm_nt_call(void *p);
typedef struct {
	long m, n, k; const float *a; long lda; const float *bp; float *c; long ldc;
	const float *bias; int accum, act; long r0, r1, p0, p1; int ret;
} ms_gemm_packed_args;
void ms_gemm_packed_call(void *p);
typedef struct { unsigned char *dst; const unsigned char *src; const long long *idx64; const int *idx32; long n, row; } ms_gather_rows_args;
void ms_gather_rows_call(void *p);
typedef struct {
	long sq, sk, d, dv; const float *q; long ldq; const float *k; long ldk; const float *v; long ldv;
	float *out; long ldo; float scale; int scale_q; float *scratch; int ret;
} ms_attention_args;
void ms_attention_call(void *p);

#endif
