/* The attention core of one (batch, head) in one pass over its scores:
 * out = softmax(scale q k^T) v with the scores of a block of query rows
 * kept in registers and L1 from the first product through the softmax to
 * the second. AVX-512 only; ms_attention_f32 returns 0 elsewhere and the
 * caller takes the GEMM path (package kernels/cpu). vec_impl.h is compiled
 * once more here for its exp16, so the exponential is the one Softmax
 * uses. */
#include <stdlib.h>
#include <string.h>
#include "vec.h"


#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#if !defined(__clang__)
#pragma GCC optimize("no-trapping-math")
#endif
#pragma GCC push_options
#pragma GCC target("avx512f,avx512vl,avx512dq,avx512bw,fma")
#define SFX(n) n##_attn
#include "vec_impl.h"
#undef SFX

/* Scores of rows [0, mr) over kT's columns [0, ldt) (ldt a multiple of
 * 64, kT zero past sk), each the sum over d in order, times scale (not
 * with scale_q: q comes scaled), into s (rows ldt apart); mx[i] gets row
 * i's max over the first sk columns (NaN-blind: a NaN score makes its
 * exponential, and so the row, NaN anyway). */
static inline __attribute__((always_inline)) void att_scores(const int mr, long sk, long d, const float *q, long ldq,
		const float *kT, long ldt, float scale, int scale_q, float *s, float *mx) {
	__m512 m[MS_ATT_MR];
	for (int i = 0; i < mr; i++) m[i] = _mm512_set1_ps(-__builtin_inff());
	const __m512 sv = _mm512_set1_ps(scale);
	for (long j0 = 0; j0 < ldt; j0 += 64) {
		__m512 acc[MS_ATT_MR][4];
		for (int i = 0; i < mr; i++)
			for (int t = 0; t < 4; t++) acc[i][t] = _mm512_setzero_ps();
		for (long c = 0; c < d; c++) {
			const float *b = kT + c * ldt + j0;
			__m512 b0 = _mm512_loadu_ps(b), b1 = _mm512_loadu_ps(b + 16), b2 = _mm512_loadu_ps(b + 32), b3 = _mm512_loadu_ps(b + 48);
			for (int i = 0; i < mr; i++) {
				__m512 a = _mm512_set1_ps(q[i * ldq + c]);
				acc[i][0] = _mm512_fmadd_ps(a, b0, acc[i][0]);
				acc[i][1] = _mm512_fmadd_ps(a, b1, acc[i][1]);
				acc[i][2] = _mm512_fmadd_ps(a, b2, acc[i][2]);
				acc[i][3] = _mm512_fmadd_ps(a, b3, acc[i][3]);
			}
		}
		for (int t = 0; t < 4; t++) {
			long j = j0 + 16 * t;
			__mmask16 live = j >= sk ? 0 : sk - j >= 16 ? 0xffff : (__mmask16)((1u << (sk - j)) - 1);
			for (int i = 0; i < mr; i++) {
				__m512 x = acc[i][t];
				if (!scale_q && scale != 1.0f) x = _mm512_mul_ps(x, sv);
				_mm512_storeu_ps(s + i * ldt + j, x);
				m[i] = _mm512_mask_max_ps(m[i], live, m[i], x);
			}
		}
	}
	for (int i = 0; i < mr; i++) mx[i] = _mm512_reduce_max_ps(m[i]);
}

/* e^(s - max) over a row's first sk columns, in place; returns 1 / sum. */
static inline float att_exp_row(float *s, long sk, float mx) {
	const __m512 mm = _mm512_set1_ps(mx);
	__m512 sum = _mm512_setzero_ps();
	long j = 0;
	for (; j + 16 <= sk; j += 16) {
		__m512 e = exp16_attn(_mm512_sub_ps(_mm512_loadu_ps(s + j), mm));
		_mm512_storeu_ps(s + j, e);
		sum = _mm512_add_ps(sum, e);
	}
	if (j < sk) {
		__mmask16 tail = (__mmask16)((1u << (sk - j)) - 1);
		__m512 e = exp16_attn(_mm512_sub_ps(_mm512_maskz_loadu_ps(tail, s + j), mm));
		_mm512_mask_storeu_ps(s + j, tail, e);
		sum = _mm512_add_ps(sum, _mm512_maskz_mov_ps(tail, e));
	}
	return 1.0f / _mm512_reduce_add_ps(sum);
}

/* out rows [0, mr), columns [c0, c0 + 32) masked to dv: the sum over j <
 * sk of p[i][j] v[j], times inv[i] (the softmax's 1 / sum, applied once
 * to the context rather than to every probability). */
static inline __attribute__((always_inline)) void att_context(const int mr, long sk, const float *p, long ldt,
		const float *v, long ldv, long c0, long dv, const float *inv, float *out, long ldo) {
	long left = dv - c0;
	__mmask16 m0 = left >= 16 ? 0xffff : (__mmask16)((1u << left) - 1);
	__mmask16 m1 = left >= 32 ? 0xffff : left <= 16 ? 0 : (__mmask16)((1u << (left - 16)) - 1);
	__m512 acc0[MS_ATT_MR], acc1[MS_ATT_MR];
	for (int i = 0; i < mr; i++) acc0[i] = acc1[i] = _mm512_setzero_ps();
	for (long j = 0; j < sk; j++) {
		const float *vr = v + j * ldv + c0;
		__m512 b0 = _mm512_maskz_loadu_ps(m0, vr), b1 = _mm512_maskz_loadu_ps(m1, vr + 16);
		for (int i = 0; i < mr; i++) {
			__m512 a = _mm512_set1_ps(p[i * ldt + j]);
			acc0[i] = _mm512_fmadd_ps(a, b0, acc0[i]);
			acc1[i] = _mm512_fmadd_ps(a, b1, acc1[i]);
		}
	}
	for (int i = 0; i < mr; i++) {
		__m512 r = _mm512_set1_ps(inv[i]);
		_mm512_mask_storeu_ps(out + i * ldo + c0, m0, _mm512_mul_ps(acc0[i], r));
		_mm512_mask_storeu_ps(out + i * ldo + c0 + 16, m1, _mm512_mul_ps(acc1[i], r));
	}
}

static inline __attribute__((always_inline)) void att_block(const int mr, long sk, long d, long dv, const float *q, long ldq,
		const float *kT, long ldt, const float *v, long ldv, float *out, long ldo, float scale, int scale_q, float *s) {
	float mx[MS_ATT_MR], inv[MS_ATT_MR];
	att_scores(mr, sk, d, q, ldq, kT, ldt, scale, scale_q, s, mx);
	for (int i = 0; i < mr; i++) inv[i] = att_exp_row(s + i * ldt, sk, mx[i]);
	for (long c0 = 0; c0 < dv; c0 += 32) att_context(mr, sk, s, ldt, v, ldv, c0, dv, inv, out, ldo);
}

/* dst rows [0, 16) (ldd apart) = the 16 x 16 block of src's rows [0, rows)
 * (lds apart) and columns [0, cols) transposed, zero past them; only dst
 * rows below cols are stored. Unpacks, then shuffles of pairs and of
 * 128-bit lanes: 64 register ops for 256 elements. */
static inline void att_transpose16(const float *src, long lds, long rows, long cols, float *dst, long ldd) {
	__m512 r[16], t[16];
	__mmask16 m = cols >= 16 ? 0xffff : (__mmask16)((1u << cols) - 1);
	for (int i = 0; i < 16; i++) r[i] = i < rows ? _mm512_maskz_loadu_ps(m, src + i * lds) : _mm512_setzero_ps();
	for (int i = 0; i < 16; i += 2) {
		t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
		t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
	}
	for (int i = 0; i < 16; i += 4) {
		r[i] = _mm512_shuffle_ps(t[i], t[i + 2], _MM_SHUFFLE(1, 0, 1, 0));
		r[i + 1] = _mm512_shuffle_ps(t[i], t[i + 2], _MM_SHUFFLE(3, 2, 3, 2));
		r[i + 2] = _mm512_shuffle_ps(t[i + 1], t[i + 3], _MM_SHUFFLE(1, 0, 1, 0));
		r[i + 3] = _mm512_shuffle_ps(t[i + 1], t[i + 3], _MM_SHUFFLE(3, 2, 3, 2));
	}
	for (int i = 0; i < 16; i += 8) {
		for (int j = 0; j < 4; j++) {
			t[i + j] = _mm512_shuffle_f32x4(r[i + j], r[i + j + 4], 0x88);
			t[i + j + 4] = _mm512_shuffle_f32x4(r[i + j], r[i + j + 4], 0xdd);
		}
	}
	for (int j = 0; j < 8; j++) {
		r[j] = _mm512_shuffle_f32x4(t[j], t[j + 8], 0x88);
		r[j + 8] = _mm512_shuffle_f32x4(t[j], t[j + 8], 0xdd);
	}
	for (int i = 0; i < 16 && i < cols; i++) _mm512_storeu_ps(dst + i * ldd, r[i]);
}

static void attention_avx512(long sq, long sk, long d, long dv, const float *q, long ldq, const float *k, long ldk,
		const float *v, long ldv, float *out, long ldo, float scale, int scale_q, float *scratch) {
	long ldt = (sk + 63) & ~63L;
	float *kT = scratch, *s = scratch + d * ldt, *qs = s + MS_ATT_MR * ldt;
	/* k^T, zero past sk: the scores' columns load whole vectors. */
	long sk16 = (sk + 15) & ~15L;
	for (long j = 0; j < sk; j += 16)
		for (long c = 0; c < d; c += 16)
			att_transpose16(k + j * ldk + c, ldk, sk - j < 16 ? sk - j : 16, d - c, kT + c * ldt + j, ldt);
	for (long c = 0; c < d && sk16 < ldt; c++) memset(kT + c * ldt + sk16, 0, (size_t)(ldt - sk16) * sizeof(float));
	for (long i = 0; i < sq; i += MS_ATT_MR) {
		long mr = sq - i < MS_ATT_MR ? sq - i : MS_ATT_MR;
		const float *qb = q + i * ldq;
		long ldb = ldq;
		if (scale_q) {
			/* Keras scales the query before its product: q times scale,
			 * rounded to float32, once per element rather than per key. */
			for (long r = 0; r < mr; r++)
				for (long c = 0; c < d; c++) qs[r * d + c] = qb[r * ldq + c] * scale;
			qb = qs;
			ldb = d;
		}
		switch (mr) {
		case 6: att_block(6, sk, d, dv, qb, ldb, kT, ldt, v, ldv, out + i * ldo, ldo, scale, scale_q, s); break;
		case 5: att_block(5, sk, d, dv, qb, ldb, kT, ldt, v, ldv, out + i * ldo, ldo, scale, scale_q, s); break;
		case 4: att_block(4, sk, d, dv, qb, ldb, kT, ldt, v, ldv, out + i * ldo, ldo, scale, scale_q, s); break;
		case 3: att_block(3, sk, d, dv, qb, ldb, kT, ldt, v, ldv, out + i * ldo, ldo, scale, scale_q, s); break;
		case 2: att_block(2, sk, d, dv, qb, ldb, kT, ldt, v, ldv, out + i * ldo, ldo, scale, scale_q, s); break;
		case 1: att_block(1, sk, d, dv, qb, ldb, kT, ldt, v, ldv, out + i * ldo, ldo, scale, scale_q, s); break;
		}
	}
}
#pragma GCC pop_options
#endif

int ms_attention_f32(long sq, long sk, long d, long dv, const float *q, long ldq, const float *k, long ldk,
		const float *v, long ldv, float *out, long ldo, float scale, int scale_q, float *scratch) {
#if defined(__x86_64__) && defined(__GNUC__)
	if (ms_vec_level() == 2) {
		attention_avx512(sq, sk, d, dv, q, ldq, k, ldk, v, ldv, out, ldo, scale, scale_q, scratch);
		return 1;
	}
#endif
	return 0;
}
