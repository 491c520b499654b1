/* Vectorised float32 loops: vec_impl.h compiled for the baseline ISA and,
 * on x86-64, again for AVX2+FMA, picked at run time by CPUID. */
#include <stdlib.h>
#include <string.h>
#include "vec.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

#if defined(__GNUC__) && !defined(__clang__)
/* The selects in vec_impl.h compare NaNs on purpose; with trapping math GCC
 * keeps them as branches and does not vectorise the loops. No code here
 * reads the floating-point exception flags. */
#pragma GCC optimize("no-trapping-math")
#endif

#define SFX(n) n##_base
#include "vec_impl.h"
#undef SFX

#if defined(__x86_64__) && defined(__GNUC__)
#define MS_HAVE_AVX2_VARIANT 1
#pragma GCC push_options
#pragma GCC target("avx2,fma")
#define SFX(n) n##_avx2
#include "vec_impl.h"
#undef SFX
#pragma GCC pop_options
#pragma GCC push_options
#pragma GCC target("avx512f,avx512vl,avx512dq,avx512bw,fma")
#define SFX(n) n##_avx512
#include "vec_impl.h"
#undef SFX

/* unary's MS_RELU on 16 lanes, bit for bit: v where v > 0 or v is NaN,
 * else +0 (also for -0). The tiles apply it in registers before they
 * store: calling unary for each row of 32 floats was 4% of the MLP's CPU
 * at B=256. */
static inline __m512 relu16(__m512 v) {
	return _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(v, _mm512_setzero_ps(), _CMP_NLE_UQ), v);
}

/* Whether the tiles apply act in registers before they store (act16);
 * any other activation runs unary over the rows they stored. */
static inline int act_in_regs(int act) {
	return act == MS_RELU || act == MS_GELU_ERF;
}

static inline __m512 act16(int act, __m512 v) {
	return act == MS_RELU ? relu16(v) : gelu_erf16_avx512(v);
}

/* The packed GEMM's tile: C rows [0, MR) x one panel of MS_PANEL columns,
 * acc[i] two registers of row i, started from C (accum), the bias or zero,
 * then every k in order: each element sums its products in k order, one
 * FMA each, whatever rows or panels the caller's block holds. The panel
 * is k rows of MS_PANEL floats (zero past column n), so its loads need no
 * mask; C's stores do. MR is a constant at each call (the switch below),
 * so the arrays live in registers. */
static inline __attribute__((always_inline)) void gemmp_tile(const int mr, const int ra, long k, const float *a, long lda,
		const float *bp, float *c, long ldc, __mmask16 m0, __mmask16 m1, const float *bias, int accum, int act) {
	__m512 acc0[MS_MR], acc1[MS_MR];
	for (int i = 0; i < mr; i++) {
		if (accum) {
			acc0[i] = _mm512_maskz_loadu_ps(m0, c + i * ldc);
			acc1[i] = _mm512_maskz_loadu_ps(m1, c + i * ldc + 16);
		} else if (bias) {
			acc0[i] = _mm512_maskz_loadu_ps(m0, bias);
			acc1[i] = _mm512_maskz_loadu_ps(m1, bias + 16);
		} else {
			acc0[i] = _mm512_setzero_ps();
			acc1[i] = _mm512_setzero_ps();
		}
	}
	for (long p = 0; p < k; p++) {
		__m512 b0 = _mm512_loadu_ps(bp + p * MS_PANEL), b1 = _mm512_loadu_ps(bp + p * MS_PANEL + 16);
		for (int i = 0; i < mr; i++) {
			__m512 av = _mm512_set1_ps(a[i * lda + p]);
			acc0[i] = _mm512_fmadd_ps(av, b0, acc0[i]);
			acc1[i] = _mm512_fmadd_ps(av, b1, acc1[i]);
		}
	}
	for (int i = 0; i < mr; i++) {
		__m512 v0 = acc0[i], v1 = acc1[i];
		if (ra >= 0) {
			v0 = act16(ra, v0);
			v1 = act16(ra, v1);
		}
		_mm512_mask_storeu_ps(c + i * ldc, m0, v0);
		_mm512_mask_storeu_ps(c + i * ldc + 16, m1, v1);
	}
	if (act >= 0 && !act_in_regs(act)) {
		int w = __builtin_popcount(m0) + __builtin_popcount(m1);
		for (int i = 0; i < mr; i++) unary_avx512(act, c + i * ldc, c + i * ldc, w);
	}
}

/* Rows [r0, r1) of C times panel p of B (panel: its k x MS_PANEL floats). */
static void gemm_panel_avx512(long n, long k, const float *a, long lda, const float *panel, float *c, long ldc,
		const float *bias, int accum, int act, long r0, long r1, long p) {
	long c0 = p * MS_PANEL, w = n - c0 < MS_PANEL ? n - c0 : MS_PANEL;
	__mmask16 m0 = w >= 16 ? 0xffff : (__mmask16)((1u << w) - 1);
	__mmask16 m1 = w <= 16 ? 0 : w >= 32 ? 0xffff : (__mmask16)((1u << (w - 16)) - 1);
	const float *bb = bias ? bias + c0 : 0;
	/* Tiles of at most MS_MR rows, balanced: 10 rows are 5 + 5. */
	long rows = r1 - r0, tiles = (rows + MS_MR - 1) / MS_MR;
	for (long t = 0, r = r0; t < tiles; t++) {
		long mr = (rows - (r - r0) + (tiles - t) - 1) / (tiles - t);
		const float *ar = a + r * lda;
		float *cr = c + r * ldc + c0;
		switch (mr) {
#define MS_TILE(R) case R: \
	if (act == MS_RELU) gemmp_tile(R, MS_RELU, k, ar, lda, panel, cr, ldc, m0, m1, bb, accum, act); \
	else if (act == MS_GELU_ERF) gemmp_tile(R, MS_GELU_ERF, k, ar, lda, panel, cr, ldc, m0, m1, bb, accum, act); \
	else gemmp_tile(R, -1, k, ar, lda, panel, cr, ldc, m0, m1, bb, accum, act); \
	break;
		MS_TILE(1) MS_TILE(2) MS_TILE(3) MS_TILE(4) MS_TILE(5) MS_TILE(6) MS_TILE(7) MS_TILE(8)
#undef MS_TILE
		}
		r += mr;
	}
}

/* One row of C (row a of A) times MS_GEMV_GROUP panels from panel p at
 * once: a GEMV, which streams the weights once and does one FMA per float
 * read, so the tile's two accumulators (one FMA chain each, latency bound)
 * would hold it under what L2 and L3 deliver; a group keeps 2 *
 * MS_GEMV_GROUP chains and as many streams of panels in flight, one
 * broadcast of A's element serving them all. Each element still sums its
 * products in k order from its start value, one FMA each: gemmp_tile's
 * bits for a tile of one row. */
#define MS_GEMV_GROUP 4
static void gemv_group_avx512(long n, long k, const float *a, const float *bp, float *c, const float *bias, int accum,
		int act, long p) {
	__m512 acc[2 * MS_GEMV_GROUP];
	__mmask16 mk[2 * MS_GEMV_GROUP];
	const float *pp[MS_GEMV_GROUP];
	for (int g = 0; g < MS_GEMV_GROUP; g++) {
		long c0 = (p + g) * MS_PANEL, w = n - c0 < MS_PANEL ? n - c0 : MS_PANEL;
		mk[2 * g] = w >= 16 ? 0xffff : (__mmask16)((1u << w) - 1);
		mk[2 * g + 1] = w <= 16 ? 0 : w >= 32 ? 0xffff : (__mmask16)((1u << (w - 16)) - 1);
		pp[g] = bp + (p + g) * k * MS_PANEL;
		for (int h = 0; h < 2; h++) {
			const float *src = accum ? c + c0 + 16 * h : bias ? bias + c0 + 16 * h : 0;
			acc[2 * g + h] = src ? _mm512_maskz_loadu_ps(mk[2 * g + h], src) : _mm512_setzero_ps();
		}
	}
	for (long q = 0; q < k; q++) {
		__m512 av = _mm512_set1_ps(a[q]);
		for (int g = 0; g < MS_GEMV_GROUP; g++) {
			acc[2 * g] = _mm512_fmadd_ps(av, _mm512_loadu_ps(pp[g] + q * MS_PANEL), acc[2 * g]);
			acc[2 * g + 1] = _mm512_fmadd_ps(av, _mm512_loadu_ps(pp[g] + q * MS_PANEL + 16), acc[2 * g + 1]);
		}
	}
	if (act_in_regs(act))
		for (int h = 0; h < 2 * MS_GEMV_GROUP; h++) acc[h] = act16(act, acc[h]);
	for (int g = 0; g < MS_GEMV_GROUP; g++) {
		float *cg = c + (p + g) * MS_PANEL;
		_mm512_mask_storeu_ps(cg, mk[2 * g], acc[2 * g]);
		_mm512_mask_storeu_ps(cg + 16, mk[2 * g + 1], acc[2 * g + 1]);
	}
	if (act >= 0 && !act_in_regs(act)) {
		long c0 = p * MS_PANEL, end = (p + MS_GEMV_GROUP) * MS_PANEL;
		unary_avx512(act, c + c0, c + c0, (end < n ? end : n) - c0);
	}
}
/* out[i * ldo + j] = the dot of row i of A and row j of bt (k floats
 * each) for i < R, j < J, R and J constants at each call (the switch in
 * gemm_narrow_avx512) so that the R * J sums live in registers: each in
 * 16 lanes, one FMA a chunk of 16 in k order, the last chunk masked, then
 * across the lanes, as gemm_nt_avx512 sums a dot, whatever R and J. */
static inline __attribute__((always_inline)) void dots_block(const int R, const int J, long k, const float *a, long lda,
		const float *bt, long ldb, float *out, long ldo) {
	long kf = k & ~15L;
	__mmask16 tail = (__mmask16)((1u << (k - kf)) - 1);
	__m512 s[4][4], bv[4];
	for (int i = 0; i < R; i++)
		for (int j = 0; j < J; j++) s[i][j] = _mm512_setzero_ps();
	for (long p = 0; p < kf; p += 16) {
		for (int j = 0; j < J; j++) bv[j] = _mm512_loadu_ps(bt + j * ldb + p);
		for (int i = 0; i < R; i++) {
			__m512 av = _mm512_loadu_ps(a + i * lda + p);
			for (int j = 0; j < J; j++) s[i][j] = _mm512_fmadd_ps(av, bv[j], s[i][j]);
		}
	}
	if (tail) {
		for (int j = 0; j < J; j++) bv[j] = _mm512_maskz_loadu_ps(tail, bt + j * ldb + kf);
		for (int i = 0; i < R; i++) {
			__m512 av = _mm512_maskz_loadu_ps(tail, a + i * lda + kf);
			for (int j = 0; j < J; j++) s[i][j] = _mm512_fmadd_ps(av, bv[j], s[i][j]);
		}
	}
	for (int i = 0; i < R; i++)
		for (int j = 0; j < J; j++) out[i * ldo + j] = _mm512_reduce_add_ps(s[i][j]);
}

/* Rows [r0, r1) of C = A B (+ bias, or + C) for a B of n <= MS_NARROW
 * columns packed as B^T: each element a dot of rows (dots_block, four
 * rows by four columns at a time), then the start value added and act
 * applied to the row. A panel of 32 columns made a head of one column (an
 * MLP's 256 x 1, a classifier's 2048 x 10) do 32x or 3.2x its work and
 * read as many bytes of weights. */
static void gemm_narrow_avx512(long n, long k, const float *a, long lda, const float *bt, float *c, long ldc,
		const float *bias, int accum, int act, long r0, long r1) {
	float dot[4 * MS_NARROW];
	for (long r = r0; r < r1; r += 4) {
		int R = r1 - r < 4 ? (int)(r1 - r) : 4;
		for (long j = 0; j < n; j += 4) {
			int J = n - j < 4 ? (int)(n - j) : 4;
			const float *ar = a + r * lda, *bj = bt + j * k;
			switch (R * 8 + J) {
#define MS_DOTS(R, J) case R * 8 + J: dots_block(R, J, k, ar, lda, bj, k, dot + j, MS_NARROW); break;
			MS_DOTS(1, 1) MS_DOTS(1, 2) MS_DOTS(1, 3) MS_DOTS(1, 4) MS_DOTS(2, 1) MS_DOTS(2, 2) MS_DOTS(2, 3) MS_DOTS(2, 4)
			MS_DOTS(3, 1) MS_DOTS(3, 2) MS_DOTS(3, 3) MS_DOTS(3, 4) MS_DOTS(4, 1) MS_DOTS(4, 2) MS_DOTS(4, 3) MS_DOTS(4, 4)
#undef MS_DOTS
			}
		}
		for (int i = 0; i < R; i++) {
			float *cr = c + (r + i) * ldc;
			const float *d = dot + i * MS_NARROW;
			for (long j = 0; j < n; j++)
				cr[j] = accum ? cr[j] + d[j] : bias ? bias[j] + d[j] : d[j];
			if (act >= 0)
				unary_avx512(act, cr, cr, n);
		}
	}
}

/* Floats of A in one block of rows (gemm_packed_avx512). */
#define MS_ABLOCK 65536
static int gemm_packed_avx512(long m, long n, long k, const float *a, long lda, const float *bp, float *c, long ldc,
		const float *bias, int accum, int act, long r0, long r1, long p0, long p1) {
	long p = p0;
	if (n <= MS_NARROW) {
		if (k > 0)
			gemm_narrow_avx512(n, k, a, lda, bp, c, ldc, bias, accum, act, r0, r1);
		else
			gemm_panel_avx512(n, k, a, lda, bp, c, ldc, bias, accum, act, r0, r1, 0);
		return 1;
	}
	if (r1 - r0 == 1)
		for (; p + MS_GEMV_GROUP <= p1; p += MS_GEMV_GROUP)
			gemv_group_avx512(n, k, a + r0 * lda, bp, c + r0 * ldc, bias, accum, act, p);
	/* Blocks of rows whose A (MS_ABLOCK floats, 256 KB) stays in L2
	 * while the block runs over every panel, rather than all the rows
	 * per panel, which read all of A again from L3 for each panel (1 MB
	 * at the MLP's 256 x 1024; 256 x 1024 x 1024 moved 36 MB from L3,
	 * now 17). The sums are the tiles', whatever the blocks. */
	long rows = r1 - r0, mb = MS_ABLOCK / (k > 0 ? k : 1), blocks;
	mb = mb < MS_MR ? MS_MR : mb;
	blocks = (rows + mb - 1) / mb;
	for (long b = 0, r = r0; b < blocks; b++) {
		long re = r + (r1 - r + (blocks - b) - 1) / (blocks - b);
		for (long q = p; q < p1; q++)
			gemm_panel_avx512(n, k, a, lda, bp + q * k * MS_PANEL, c, ldc, bias, accum, act, r, re, q);
		r = re;
	}
	(void)m;
	return 1;
}

/* C = A op(B), B packed a panel at a time into buf (k x MS_PANEL floats)
 * as it goes: each panel is read from B once, then used by every tile of
 * rows; the same tile kernel, so the same sums, as a B packed whole. */
static void gemm_avx512(int transb, long m, long n, long k, const float *a, long lda, const float *b, long ldb,
		float *c, long ldc, float *buf) {
	long panels = (n + MS_PANEL - 1) / MS_PANEL;
	for (long p = 0; p < panels; p++) {
		long c0 = p * MS_PANEL, w = n - c0 < MS_PANEL ? n - c0 : MS_PANEL;
		for (long r = 0; r < k; r++) {
			float *row = buf + r * MS_PANEL;
			long j = 0;
			if (transb)
				for (; j < w; j++) row[j] = b[(c0 + j) * ldb + r];
			else
				for (; j < w; j++) row[j] = b[r * ldb + c0 + j];
			for (; j < MS_PANEL; j++) row[j] = 0;
		}
		gemm_panel_avx512(n, k, a, lda, buf, c, ldc, 0, 0, -1, 0, m, p);
	}
}

/* C = A B^T by dot products of rows, four columns of C at a time sharing
 * the loads of A's row: for products too small to pay for packing B (a
 * DLRM interaction's 27 x 27 of 64). Each dot sums its k products in
 * 16-lane chunks, one FMA each in k order, then across the lanes, so
 * element (i, j) of A A^T equals (j, i) bit for bit; sym (B is A) computes
 * the lower triangle and copies it up. */
static inline __m512 dot_step(__m512 s, const float *x, const float *y, long p, __mmask16 m) {
	return _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, x + p), _mm512_maskz_loadu_ps(m, y + p), s);
}

static void gemm_nt_avx512(long m, long n, long k, const float *a, long lda, const float *b, long ldb, float *c, long ldc, int sym) {
	long kf = k & ~15L;
	__mmask16 tail = (__mmask16)((1u << (k - kf)) - 1);
	for (long i = 0; i < m; i++) {
		const float *x = a + i * lda;
		long jn = sym ? i + 1 : n, j = 0;
		for (; j + 4 <= jn; j += 4) {
			const float *y0 = b + j * ldb, *y1 = y0 + ldb, *y2 = y1 + ldb, *y3 = y2 + ldb;
			__m512 s0 = _mm512_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
			for (long p = 0; p < kf; p += 16) {
				__m512 xv = _mm512_loadu_ps(x + p);
				s0 = _mm512_fmadd_ps(xv, _mm512_loadu_ps(y0 + p), s0);
				s1 = _mm512_fmadd_ps(xv, _mm512_loadu_ps(y1 + p), s1);
				s2 = _mm512_fmadd_ps(xv, _mm512_loadu_ps(y2 + p), s2);
				s3 = _mm512_fmadd_ps(xv, _mm512_loadu_ps(y3 + p), s3);
			}
			if (tail) {
				s0 = dot_step(s0, x, y0, kf, tail);
				s1 = dot_step(s1, x, y1, kf, tail);
				s2 = dot_step(s2, x, y2, kf, tail);
				s3 = dot_step(s3, x, y3, kf, tail);
			}
			float *o = c + i * ldc + j;
			o[0] = _mm512_reduce_add_ps(s0);
			o[1] = _mm512_reduce_add_ps(s1);
			o[2] = _mm512_reduce_add_ps(s2);
			o[3] = _mm512_reduce_add_ps(s3);
		}
		for (; j < jn; j++) {
			const float *y = b + j * ldb;
			__m512 s = _mm512_setzero_ps();
			for (long p = 0; p < kf; p += 16) s = _mm512_fmadd_ps(_mm512_loadu_ps(x + p), _mm512_loadu_ps(y + p), s);
			if (tail) s = dot_step(s, x, y, kf, tail);
			c[i * ldc + j] = _mm512_reduce_add_ps(s);
		}
	}
	if (sym)
		for (long i = 0; i < m; i++)
			for (long j = 0; j < i; j++) c[j * ldc + i] = c[i * ldc + j];
}
#pragma GCC pop_options
#endif

int ms_gemm_nt_f32(long m, long n, long k, const float *a, long lda, const float *b, long ldb, float *c, long ldc, int sym) {
#ifdef MS_HAVE_AVX2_VARIANT
	if (ms_vec_level() == 2) {
		gemm_nt_avx512(m, n, k, a, lda, b, ldb, c, ldc, sym);
		return 1;
	}
#endif
	return 0;
}

int ms_gemm_f32(int transb, long m, long n, long k, const float *a, long lda, const float *b, long ldb, float *c, long ldc) {
#ifdef MS_HAVE_AVX2_VARIANT
	if (ms_vec_level() == 2) {
		float *buf = malloc((size_t)(k > 0 ? k : 1) * MS_PANEL * sizeof(float));
		if (!buf)
			return 0;
		gemm_avx512(transb, m, n, k, a, lda, b, ldb, c, ldc, buf);
		free(buf);
		return 1;
	}
#endif
	return 0;
}

int ms_gemm_packed_f32(long m, long n, long k, const float *a, long lda, const float *bp, float *c, long ldc,
		const float *bias, int accum, int act, long r0, long r1, long p0, long p1) {
#ifdef MS_HAVE_AVX2_VARIANT
	if (ms_vec_level() == 2)
		return gemm_packed_avx512(m, n, k, a, lda, bp, c, ldc, bias, accum, act, r0, r1, p0, p1);
#endif
	return 0;
}

static int level = -1;

static int detect(void) {
#ifdef MS_HAVE_AVX2_VARIANT
	__builtin_cpu_init();
	/* libgcc also checks that the OS saves the vector state (XGETBV). */
	if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
	    __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("fma"))
		return 2;
	if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
		return 1;
#endif
	return 0;
}

int ms_vec_level(void) {
	if (level < 0)
		level = detect();
	return level;
}

void ms_vec_set_level(int l) {
	int best = detect();
	level = l < best ? l : best;
}


void ms_unary_f32(int op, const float *x, float *y, long n) {
#ifdef MS_HAVE_AVX2_VARIANT
	if (ms_vec_level() == 2) { unary_avx512(op, x, y, n); return; }
	if (ms_vec_level() == 1) { unary_avx2(op, x, y, n); return; }
#endif
	unary_base(op, x, y, n);
}

void ms_binary_f32(int op, const float *a, const float *b, float *y, long n, int sa, int sb) {
#ifdef MS_HAVE_AVX2_VARIANT
	if (ms_vec_level() == 2) { binary_avx512(op, a, b, y, n, sa, sb); return; }
	if (ms_vec_level() == 1) { binary_avx2(op, a, b, y, n, sa, sb); return; }
#endif
	binary_base(op, a, b, y, n, sa, sb);
}

void ms_binary_rows_f32(int op, const float *a, const float *b, float *y, long rows, long w, int tiled_a) {
	for (long r = 0; r < rows; r++) {
		if (tiled_a)
			ms_binary_f32(op, a, b + r * w, y + r * w, w, 1, 1);
		else
			ms_binary_f32(op, a + r * w, b, y + r * w, w, 1, 1);
	}
}

void ms_rowreduce_f32(int op, const float *x, long rows, long n, float *out, double scale) {
#ifdef MS_HAVE_AVX2_VARIANT
	if (ms_vec_level() == 2) { rowreduce_avx512(op, x, rows, n, out, scale); return; }
	if (ms_vec_level() == 1) { rowreduce_avx2(op, x, rows, n, out, scale); return; }
#endif
	rowreduce_base(op, x, rows, n, out, scale);
}

void ms_colsum_f32(const float *x, long rows, long cols, long ld, double *acc) {
#ifdef MS_HAVE_AVX2_VARIANT
	if (ms_vec_level() == 2) { colsum_avx512(x, rows, cols, ld, acc); return; }
	if (ms_vec_level() == 1) { colsum_avx2(x, rows, cols, ld, acc); return; }
#endif
	colsum_base(x, rows, cols, ld, acc);
}

void ms_colminmax_f32(int op, const float *x, long rows, long cols, long ld, float *acc) {
#ifdef MS_HAVE_AVX2_VARIANT
	if (ms_vec_level() == 2) { colminmax_avx512(op, x, rows, cols, ld, acc); return; }
	if (ms_vec_level() == 1) { colminmax_avx2(op, x, rows, cols, ld, acc); return; }
#endif
	colminmax_base(op, x, rows, cols, ld, acc);
}

void ms_softmax_f32(const float *x, float *y, long rows, long n, int log) {
#ifdef MS_HAVE_AVX2_VARIANT
	if (ms_vec_level() == 2) { softmax_avx512(x, y, rows, n, log); return; }
	if (ms_vec_level() == 1) { softmax_avx2(x, y, rows, n, log); return; }
#endif
	softmax_base(x, y, rows, n, log);
}

void ms_argreduce_f32(int op, const float *x, long rows, long n, long long *out) {
#ifdef MS_HAVE_AVX2_VARIANT
	if (ms_vec_level() == 2) { argreduce_avx512(op, x, rows, n, out); return; }
	if (ms_vec_level() == 1) { argreduce_avx2(op, x, rows, n, out); return; }
#endif
	argreduce_base(op, x, rows, n, out);
}

void ms_layernorm_f32(const float *x, const float *res, float *y, long rows, long n, const float *gamma, const float *beta, long c, double eps) {
#ifdef MS_HAVE_AVX2_VARIANT
	if (ms_vec_level() == 2) { layernorm_avx512(x, res, y, rows, n, gamma, beta, c, eps); return; }
	if (ms_vec_level() == 1) { layernorm_avx2(x, res, y, rows, n, gamma, beta, c, eps); return; }
#endif
	layernorm_base(x, res, y, rows, n, gamma, beta, c, eps);
}

void ms_gemv_f32(const float *x, long k, const float *b, long ldb, long n, float alpha, float beta, float *y) {
#ifdef MS_HAVE_AVX2_VARIANT
	if (ms_vec_level() == 2) { gemv_avx512(x, k, b, ldb, n, alpha, beta, y); return; }
	if (ms_vec_level() == 1) { gemv_avx2(x, k, b, ldb, n, alpha, beta, y); return; }
#endif
	gemv_base(x, k, b, ldb, n, alpha, beta, y);
}

/* Rows are done a block at a time: the affine part row by row (a loop the
 * compiler vectorises), then the activation over the whole block while it
 * is still in L1. */
void ms_channel_affine_f32(float *x, long rows, long c, const float *scale, const float *offset, int act) {
	const long block = 4096;
	long per = c < block ? block / c : 1;
	for (long r = 0; r < rows; r += per) {
		long nr = rows - r < per ? rows - r : per;
		float *b = x + r * c;
		for (long i = 0; i < nr; i++) {
			float *restrict row = b + i * c;
			if (scale) {
				for (long j = 0; j < c; j++)
					row[j] = row[j] * scale[j] + offset[j];
			} else {
				for (long j = 0; j < c; j++)
					row[j] += offset[j];
			}
		}
		if (act >= 0)
			ms_unary_f32(act, b, b, nr * c);
	}
}

/* How many rows ahead ms_gather_rows prefetches, and how many of each
 * row's 64-byte lines (a 64-float row has four; the hardware's own
 * prefetcher follows a longer row once its first lines are in). */
#define GATHER_AHEAD 16
#define GATHER_LINES 4

void ms_gather_rows(unsigned char *dst, const unsigned char *src, const long long *idx64, const int *idx32, long n, long row) {
#define GATHER_IDX(j) (idx64 ? idx64[j] : (long long)idx32[j])
	long lines = (row + 63) / 64;
	if (lines > GATHER_LINES) lines = GATHER_LINES;
	for (long j = 0; j < n && j < GATHER_AHEAD; j++)
		for (long l = 0; l < lines; l++) __builtin_prefetch(src + GATHER_IDX(j) * row + l * 64, 0, 0);
	for (long j = 0; j < n; j++) {
		if (j + GATHER_AHEAD < n) {
			const unsigned char *p = src + GATHER_IDX(j + GATHER_AHEAD) * row;
			for (long l = 0; l < lines; l++) __builtin_prefetch(p + l * 64, 0, 0);
		}
		memcpy(dst + j * row, src + GATHER_IDX(j) * row, (size_t)row);
	}
#undef GATHER_IDX
}
