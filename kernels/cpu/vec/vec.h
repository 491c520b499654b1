/* Vectorised float32 loops for the CPU kernels (see doc.go). */
#ifndef MSTREAM_VEC_H
#define MSTREAM_VEC_H

/* Unary ops. */
enum {
	MS_NEG, MS_ABS, MS_SQUARE, MS_SQRT, MS_RSQRT, MS_RECIP, MS_EXP, MS_EXPM1, MS_LOG,
	MS_SIGMOID, MS_TANH, MS_RELU, MS_RELU6, MS_FLOOR, MS_CEIL, MS_ROUND, MS_ELU,
	MS_SELU, MS_SOFTSIGN, MS_GELU_ERF, MS_GELU_TANH, MS_ERF, MS_NUM_UNARY
};

/* Binary ops. */
enum { MS_ADD, MS_SUB, MS_MUL, MS_DIV, MS_MAX, MS_MIN, MS_SQDIFF, MS_NUM_BINARY };

/* Row and column reductions. */
enum { MS_RSUM, MS_RMAX, MS_RMIN };

/* 0: plain C (compiler's baseline ISA), 1: AVX2+FMA, 2: AVX-512 (F, VL, DQ,
 * BW), each when the CPU and OS have it. */
int ms_vec_level(void);
void ms_vec_set_level(int level);

void ms_unary_f32(int op, const float *x, float *y, long n);
/* y[i] = a[i*sa] op b[i*sb], sa and sb 0 or 1. */
void ms_binary_f32(int op, const float *a, const float *b, float *y, long n, int sa, int sb);
/* y[r*w + j] = a[r*w + j] op b[j] for r < rows, j < w (tiled_a: a[j] op
 * b[r*w + j]): one operand a row repeated over every row of the other, as
 * a bias of a tensor's trailing dimensions broadcasts, in one call. */
void ms_binary_rows_f32(int op, const float *a, const float *b, float *y, long rows, long w, int tiled_a);
/* out[r] = scale * reduce(x[r*n : r*n+n]) for r < rows; sums add in double. */
void ms_rowreduce_f32(int op, const float *x, long rows, long n, float *out, double scale);
/* Folds rows of a [rows, ld] block, columns [0, cols), into acc (double for
 * sums, float for max/min), which the caller initialises. */
void ms_colsum_f32(const float *x, long rows, long cols, long ld, double *acc);
void ms_colminmax_f32(int op, const float *x, long rows, long cols, long ld, float *acc);
/* Index of the first max (MS_RMAX) or min (MS_RMIN) of each row of
 * [rows, n], n > 0, or of the row's first NaN. */
void ms_argreduce_f32(int op, const float *x, long rows, long n, long long *out);
/* Softmax (or log-softmax) of each row of [rows, n]. */
void ms_softmax_f32(const float *x, float *y, long rows, long n, int log);
/* Layer normalisation of each row of [rows, n]: y = (x - mean) / sqrt(var +
 * eps) * gamma + beta, mean and (biased) variance over the row, summed in
 * double; gamma and beta have c elements, c divides n, and repeat along
 * the row (c = n for one normalised axis). */
void ms_layernorm_f32(const float *x, const float *res, float *y, long rows, long n, const float *gamma, const float *beta, long c, double eps);

/* y[0:n] = beta y + alpha x B: the row x[0:k] times B, k rows of n
 * (row stride ldb), summed in float down each column in row order. */
void ms_gemv_f32(const float *x, long k, const float *b, long ldb, long n, float alpha, float beta, float *y);

/* x[r*c + j] = act(x[r*c + j] * scale[j] + offset[j]) for r < rows, j < c,
 * in place (scale NULL: no multiply; act < 0: no activation): the epilogue
 * of the fused GEMM and convolution kernels. */
void ms_channel_affine_f32(float *x, long rows, long c, const float *scale, const float *offset, int act);

/* The packed GEMM: C = A B (+ bias, or + C when accum), then act (< 0:
 * none), for rows [r0, r1) of C and panels [p0, p1) of B, B packed as
 * panels of MS_PANEL columns, each k rows of MS_PANEL floats (vec.PackB's
 * layout, zero past column n), or, for n <= MS_NARROW, as op(B)^T (n x k,
 * row-major: one panel, a column of B a row). A is row-major (row stride
 * lda), C too. Each element sums in k order from its start value (narrow:
 * a dot of A's row and B's column in 16 lanes, then the start value
 * added), so a block's result does not depend on the blocks around it.
 * Returns 0 where the CPU lacks the kernel (AVX-512 only): nothing is
 * written then. */
#define MS_PANEL 32
#define MS_MR 8
#define MS_NARROW 16
/* C = A op(B) (op(B) k x n; B is n x k when transb), A and C row-major:
 * ms_gemm_packed_f32's kernel with B packed a panel at a time as it goes
 * (malloc'd scratch), for a B that is not kept packed. 0 where the CPU
 * lacks the kernel (or the scratch could not be had): nothing written. */
int ms_gemm_f32(int transb, long m, long n, long k, const float *a, long lda, const float *b, long ldb, float *c, long ldc);
/* C = A B^T (A m x k, B n x k, row-major) by dot products of rows, for
 * products too small to pay for packing B; sym: B is A (m = n, the same
 * rows), the lower triangle computed and copied up. 0 where the CPU lacks
 * the kernel (AVX-512 only): nothing written. */
int ms_gemm_nt_f32(long m, long n, long k, const float *a, long lda, const float *b, long ldb, float *c, long ldc, int sym);
int ms_gemm_packed_f32(long m, long n, long k, const float *a, long lda, const float *bp, float *c, long ldc,
		const float *bias, int accum, int act, long r0, long r1, long p0, long p1);

/* dst[j*row : (j+1)*row] = src[idx[j]*row : (idx[j]+1)*row] for j < n
 * (bytes), idx idx64 or, when that is NULL, idx32: a gather of whole rows, each row's first cache lines prefetched
 * a few rows ahead, for tables far larger than the caches, where each row
 * is a miss to memory and a copy at a time waits for every one in turn. */
void ms_gather_rows(unsigned char *dst, const unsigned char *src, const long long *idx64, const int *idx32, long n, long row);

/* attention.c (attention.go says what it computes; AttentionScratch, its
 * scratch's size). Query rows a block holds: its scores tile is MS_ATT_MR
 * x 64 columns (24 accumulators) and its context tile MS_ATT_MR x 32 (12). */
#define MS_ATT_MR 6
int ms_attention_f32(long sq, long sk, long d, long dv, const float *q, long ldq, const float *k, long ldk,
		const float *v, long ldv, float *out, long ldo, float scale, int scale_q, float *scratch);

#endif
