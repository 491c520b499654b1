/* The loops of vec.c, compiled once per ISA level: vec.c includes this file
 * with SFX(name) naming the variant and the target set around it. Every
 * helper is branch-free (selects instead of ifs) so that the compiler can
 * vectorise the loops that call it. NaN and infinities follow IEEE: the
 * helpers select the special result explicitly where the polynomial would
 * not give it. */

/* Round to nearest even for |v| < 2^22 by the 1.5*2^23 trick. */
static inline float SFX(rint_small)(float v) {
	const float magic = 12582912.0f;
	return (v + magic) - magic;
}

/* e^x: x = k*ln2 + r, |r| <= ln2/2, e^r by its Taylor polynomial to r^7
 * (error below 1e-8 relative), 2^k applied in two halves so that results
 * down to the subnormal range come out right. */
static inline float SFX(exp_f)(float x) {
	const float hi = 88.72283935546875f, lo = -103.97208404541015625f;
	float xc = x > hi ? hi : x;
	xc = xc < lo ? lo : xc;
	xc = xc == xc ? xc : 0.0f;
	float k = SFX(rint_small)(xc * 1.44269504088896341f);
	float r = xc - k * 0.693145751953125f;
	r = r - k * 1.42860682030941723212e-6f;
	float p = 1.0f / 5040.0f;
	p = p * r + 1.0f / 720.0f;
	p = p * r + 1.0f / 120.0f;
	p = p * r + 1.0f / 24.0f;
	p = p * r + 1.0f / 6.0f;
	p = p * r + 0.5f;
	p = p * r + 1.0f;
	p = p * r + 1.0f;
	int ki = (int)k;
	int k1 = ki >> 1, k2 = ki - k1;
	union { unsigned u; float f; } s1, s2;
	s1.u = (unsigned)(k1 + 127) << 23;
	s2.u = (unsigned)(k2 + 127) << 23;
	float y = p * s1.f * s2.f;
	y = x > hi ? __builtin_inff() : y;
	y = x < lo ? 0.0f : y;
	return x == x ? y : x;
}

/* e^x - 1, accurate near 0: a Taylor polynomial to x^10 for |x| < 0.5,
 * e^x - 1 outside (no cancellation there). */
static inline float SFX(expm1_f)(float x) {
	float p = 1.0f / 3628800.0f;
	p = p * x + 1.0f / 362880.0f;
	p = p * x + 1.0f / 40320.0f;
	p = p * x + 1.0f / 5040.0f;
	p = p * x + 1.0f / 720.0f;
	p = p * x + 1.0f / 120.0f;
	p = p * x + 1.0f / 24.0f;
	p = p * x + 1.0f / 6.0f;
	p = p * x + 0.5f;
	p = p * x * x + x;
	float e = SFX(exp_f)(x) - 1.0f;
	float ax = x < 0 ? -x : x;
	return ax < 0.5f ? p : e;
}

/* log(x): x = 2^e * m, m in [sqrt(1/2), sqrt(2)), log m = 2 atanh(s) with
 * s = (m-1)/(m+1), |s| < 0.172, by its series to s^11. Subnormals are
 * scaled up first; 0, negatives, inf and NaN are selected at the end. */
static inline float SFX(log_f)(float x) {
	int sub = x < 1.17549435e-38f;
	float xs = sub ? x * 8388608.0f : x;
	union { unsigned u; float f; } b;
	b.f = xs;
	int e = (int)(b.u >> 23) - 127 - (sub ? 23 : 0);
	b.u = (b.u & 0x007fffffu) | 0x3f800000u;
	float m = b.f;
	int big = m > 1.41421356237f;
	m = big ? m * 0.5f : m;
	e = big ? e + 1 : e;
	float s = (m - 1.0f) / (m + 1.0f);
	float s2 = s * s;
	float p = 2.0f / 11.0f;
	p = p * s2 + 2.0f / 9.0f;
	p = p * s2 + 2.0f / 7.0f;
	p = p * s2 + 2.0f / 5.0f;
	p = p * s2 + 2.0f / 3.0f;
	p = p * s2 + 2.0f;
	float ef = (float)e;
	float y = ef * 0.693145751953125f + (s * p + ef * 1.42860682030941723212e-6f);
	y = x == 0.0f ? -__builtin_inff() : y;
	y = x < 0.0f ? __builtin_nanf("") : y;
	y = x == __builtin_inff() ? x : y;
	return x == x ? y : x;
}

/* tanh: an odd polynomial below |x| = 0.625 (a least-squares fit of
 * (tanh x - x)/x^3 in x^2, relative error 2e-9), 1 - 2/(e^(2|x|) + 1)
 * above (no cancellation there, the result exceeds 0.55), 1 beyond 9. */
static inline float SFX(tanh_f)(float x) {
	float ax = x < 0 ? -x : x;
	float c = ax > 9.0f ? 9.0f : ax;
	float big = 1.0f - 2.0f / (SFX(exp_f)(2.0f * c) + 1.0f);
	float u = c * c;
	float p = 0.0023392921275201504f;
	p = p * u - 0.008386081489861964f;
	p = p * u + 0.02178214521499778f;
	p = p * u - 0.05396093431958845f;
	p = p * u + 0.1333331086288712f;
	p = p * u - 0.3333333322183118f;
	float small = c + c * u * p;
	float y = ax < 0.625f ? small : big;
	y = ax > 9.0f ? 1.0f : y;
	y = __builtin_copysignf(y, x); /* tanh(-0) is -0, as TF's */
	return x == x ? y : x;
}

/* 1/(1 + e^-x) for x >= 0 and e^x/(1 + e^x) below, so that neither side
 * overflows and tiny results keep their precision. */
static inline float SFX(sigmoid_f)(float x) {
	float ax = x < 0 ? -x : x;
	float e = SFX(exp_f)(-ax);
	float s = 1.0f / (1.0f + e);
	float y = x < 0 ? e * s : s;
	return x == x ? y : x;
}

/* erf(x) as TF computes it (Eigen's generic_fast_erf_float, the packet
 * path of TF 2.15's Erf kernel): an odd degree-9 over even degree-12
 * rational fit, +-1 from |x| >= 3.8325 (where erf rounds to 1). A third
 * of the operations of the erfc-based form it replaces (1 - t e^(-x^2 +
 * P(t)) with the Maclaurin series below 0.5: ten FMAs, an exp, a divide
 * and both branches), which made the transformer's GELU 12% of its CPU. */
static inline float SFX(erf_f)(float x) {
	float x2 = x * x;
	float p = 0.00022905065861350646f;
	p = p * x2 + 0.0034082910107109506f;
	p = p * x2 + 0.050955695062380861f;
	p = p * x2 + 0.18520832239976145f;
	p = p * x2 + 1.128379143519084f;
	p = p * x;
	float q = -1.1791602954361697e-7f;
	q = q * x2 + 0.000023547966471313185f;
	q = q * x2 + 0.0010179625278914885f;
	q = q * x2 + 0.014070470171167667f;
	q = q * x2 + 0.11098505178285362f;
	q = q * x2 + 0.49746925110067538f;
	q = q * x2 + 1.0f;
	float ax = x < 0 ? -x : x;
	float y = p / q;
	y = ax >= 3.832506856900711f ? __builtin_copysignf(1.0f, x) : y;
	return y;
}

#if defined(__AVX512F__)
/* 0.5 v (1 + erf(v / sqrt 2)) on 16 lanes: erf_f's operations as GCC
 * compiles them (each p * x2 + c one FMA, the rest as written), so that a
 * lane has the bits of the scalar expression, and the one GELU that both
 * unary's loop and the packed GEMM's tiles (in registers, before they
 * store) run. */
static inline __m512 SFX(gelu_erf16)(__m512 v) {
	__m512 u = _mm512_mul_ps(v, _mm512_set1_ps(0.70710678118654752f));
	__m512 x2 = _mm512_mul_ps(u, u);
	__m512 p = _mm512_fmadd_ps(_mm512_set1_ps(0.00022905065861350646f), x2, _mm512_set1_ps(0.0034082910107109506f));
	p = _mm512_fmadd_ps(p, x2, _mm512_set1_ps(0.050955695062380861f));
	p = _mm512_fmadd_ps(p, x2, _mm512_set1_ps(0.18520832239976145f));
	p = _mm512_fmadd_ps(p, x2, _mm512_set1_ps(1.128379143519084f));
	p = _mm512_mul_ps(p, u);
	__m512 q = _mm512_fmadd_ps(_mm512_set1_ps(-1.1791602954361697e-7f), x2, _mm512_set1_ps(0.000023547966471313185f));
	q = _mm512_fmadd_ps(q, x2, _mm512_set1_ps(0.0010179625278914885f));
	q = _mm512_fmadd_ps(q, x2, _mm512_set1_ps(0.014070470171167667f));
	q = _mm512_fmadd_ps(q, x2, _mm512_set1_ps(0.11098505178285362f));
	q = _mm512_fmadd_ps(q, x2, _mm512_set1_ps(0.49746925110067538f));
	q = _mm512_fmadd_ps(q, x2, _mm512_set1_ps(1.0f));
	/* +-1 where |u| >= 3.8325 (NaN compares false and keeps p / q). */
	__mmask16 sat = _mm512_cmp_ps_mask(_mm512_abs_ps(u), _mm512_set1_ps(3.832506856900711f), _CMP_GE_OQ);
	__m512 one = _mm512_set1_ps(1.0f);
	__m512 s1 = _mm512_castsi512_ps(_mm512_or_si512(_mm512_castps_si512(one),
		_mm512_and_si512(_mm512_castps_si512(u), _mm512_set1_epi32((int)0x80000000u))));
	__m512 y = _mm512_mask_blend_ps(sat, _mm512_div_ps(p, q), s1);
	return _mm512_mul_ps(_mm512_mul_ps(v, _mm512_set1_ps(0.5f)), _mm512_add_ps(one, y));
}
#endif

/* sqrt through intrinsics: GCC keeps a libm call (for errno) in a plain
 * sqrtf loop and will not vectorise it. */
static void SFX(sqrt_loop)(const float *restrict x, float *restrict y, long n, int recip) {
	long i = 0;
#if defined(__AVX512F__)
	const __m512 one16 = _mm512_set1_ps(1.0f);
	for (; i + 16 <= n; i += 16) {
		__m512 v = _mm512_sqrt_ps(_mm512_loadu_ps(x + i));
		_mm512_storeu_ps(y + i, recip ? _mm512_div_ps(one16, v) : v);
	}
#endif
#if defined(__AVX__)
	const __m256 one8 = _mm256_set1_ps(1.0f);
	for (; i + 8 <= n; i += 8) {
		__m256 v = _mm256_sqrt_ps(_mm256_loadu_ps(x + i));
		_mm256_storeu_ps(y + i, recip ? _mm256_div_ps(one8, v) : v);
	}
#endif
#if defined(__SSE2__)
	const __m128 one4 = _mm_set1_ps(1.0f);
	for (; i + 4 <= n; i += 4) {
		__m128 v = _mm_sqrt_ps(_mm_loadu_ps(x + i));
		_mm_storeu_ps(y + i, recip ? _mm_div_ps(one4, v) : v);
	}
#endif
	for (; i < n; i++) {
		float s = __builtin_sqrtf(x[i]);
		y[i] = recip ? 1.0f / s : s;
	}
}

static void SFX(unary)(int op, const float *restrict x, float *restrict y, long n) {
	long i;
	switch (op) {
	case MS_NEG:
		for (i = 0; i < n; i++) y[i] = -x[i];
		break;
	case MS_ABS:
		for (i = 0; i < n; i++) y[i] = __builtin_fabsf(x[i]);
		break;
	case MS_SQUARE:
		for (i = 0; i < n; i++) y[i] = x[i] * x[i];
		break;
	case MS_SQRT:
		SFX(sqrt_loop)(x, y, n, 0);
		break;
	case MS_RSQRT:
		SFX(sqrt_loop)(x, y, n, 1);
		break;
	case MS_RECIP:
		for (i = 0; i < n; i++) y[i] = 1.0f / x[i];
		break;
	case MS_EXP:
		for (i = 0; i < n; i++) y[i] = SFX(exp_f)(x[i]);
		break;
	case MS_EXPM1:
		for (i = 0; i < n; i++) y[i] = SFX(expm1_f)(x[i]);
		break;
	case MS_LOG:
		for (i = 0; i < n; i++) y[i] = SFX(log_f)(x[i]);
		break;
	case MS_SIGMOID:
		for (i = 0; i < n; i++) y[i] = SFX(sigmoid_f)(x[i]);
		break;
	case MS_TANH:
		for (i = 0; i < n; i++) y[i] = SFX(tanh_f)(x[i]);
		break;
	case MS_RELU:
		for (i = 0; i < n; i++) { float v = x[i]; y[i] = (v > 0 || v != v) ? v : 0.0f; }
		break;
	case MS_RELU6:
		for (i = 0; i < n; i++) {
			float v = x[i];
			float r = v > 0 ? v : 0.0f;
			r = r < 6.0f ? r : 6.0f;
			y[i] = v == v ? r : v;
		}
		break;
	case MS_FLOOR:
		for (i = 0; i < n; i++) y[i] = __builtin_floorf(x[i]);
		break;
	case MS_CEIL:
		for (i = 0; i < n; i++) y[i] = __builtin_ceilf(x[i]);
		break;
	case MS_ROUND:
		/* a + 2^23 has no fraction bits left for a in [0, 2^23), so the
		 * addition rounds half to even; |v| >= 2^23 is already integral
		 * (and inf/NaN stay). */
		for (i = 0; i < n; i++) {
			float v = x[i];
			float a = v < 0 ? -v : v;
			float r = (a + 8388608.0f) - 8388608.0f;
			r = __builtin_copysignf(r, v); /* -0 and -0.4 give -0, as TF */
			y[i] = a < 8388608.0f ? r : v;
		}
		break;
	case MS_ELU:
		for (i = 0; i < n; i++) { float v = x[i]; y[i] = v < 0 ? SFX(expm1_f)(v) : v; }
		break;
	case MS_SELU:
		for (i = 0; i < n; i++) {
			float v = x[i];
			y[i] = v < 0 ? 1.7580993408473768f * SFX(expm1_f)(v) : 1.0507009873554805f * v;
		}
		break;
	case MS_SOFTSIGN:
		for (i = 0; i < n; i++) { float v = x[i]; y[i] = v / (1.0f + __builtin_fabsf(v)); }
		break;
	case MS_GELU_ERF:
		i = 0;
#if defined(__AVX512F__)
		for (; i < n; i += 16) {
			__mmask16 m = n - i >= 16 ? 0xffff : (__mmask16)((1u << (n - i)) - 1);
			_mm512_mask_storeu_ps(y + i, m, SFX(gelu_erf16)(_mm512_maskz_loadu_ps(m, x + i)));
		}
#endif
		for (; i < n; i++) {
			float v = x[i];
			y[i] = 0.5f * v * (1.0f + SFX(erf_f)(v * 0.70710678118654752f));
		}
		break;
	case MS_ERF:
		for (i = 0; i < n; i++) y[i] = SFX(erf_f)(x[i]);
		break;
	case MS_GELU_TANH:
		for (i = 0; i < n; i++) {
			float v = x[i];
			float u = 0.79788456080286536f * (v + 0.044715f * v * v * v);
			y[i] = 0.5f * v * (1.0f + SFX(tanh_f)(u));
		}
		break;
	}
}

#define MS_BIN_LOOPS(EXPR)                                                   \
	if (sa && sb) {                                                      \
		for (i = 0; i < n; i++) { float p = a[i], q = b[i]; y[i] = EXPR; } \
	} else if (sb) {                                                     \
		float p = a[0];                                              \
		for (i = 0; i < n; i++) { float q = b[i]; y[i] = EXPR; }     \
	} else if (sa) {                                                     \
		float q = b[0];                                              \
		for (i = 0; i < n; i++) { float p = a[i]; y[i] = EXPR; }     \
	} else {                                                             \
		float p = a[0], q = b[0], v = EXPR;                          \
		for (i = 0; i < n; i++) y[i] = v;                            \
	}

static void SFX(binary)(int op, const float *restrict a, const float *restrict b, float *restrict y, long n, int sa, int sb) {
	long i;
	switch (op) {
	case MS_ADD:
		MS_BIN_LOOPS(p + q)
		break;
	case MS_SUB:
		MS_BIN_LOOPS(p - q)
		break;
	case MS_MUL:
		MS_BIN_LOOPS(p * q)
		break;
	case MS_DIV:
		MS_BIN_LOOPS(p / q)
		break;
	case MS_MAX:
		MS_BIN_LOOPS((p != p || p > q) ? p : q)
		break;
	case MS_MIN:
		MS_BIN_LOOPS((p != p || p < q) ? p : q)
		break;
	case MS_SQDIFF:
		MS_BIN_LOOPS((p - q) * (p - q))
		break;
	}
}

/* Sixteen lanes of accumulators the compiler keeps in vector registers. */
#define MS_LANES 16

static double SFX(sum_row)(const float *restrict x, long n) {
	double acc[MS_LANES] = {0};
	long i = 0;
	for (; i + MS_LANES <= n; i += MS_LANES)
		for (int j = 0; j < MS_LANES; j++) acc[j] += (double)x[i + j];
	double s = 0;
	for (; i < n; i++) s += (double)x[i];
	for (int j = 0; j < MS_LANES; j++) s += acc[j];
	return s;
}

static void SFX(colminmax)(int op, const float *x, long rows, long cols, long ld, float *restrict acc) {
	for (long r = 0; r < rows; r++) {
		const float *restrict row = x + r * ld;
		if (op == MS_RMAX) {
			for (long j = 0; j < cols; j++) {
				float v = row[j], m = acc[j];
				acc[j] = (v > m || v != v) ? v : m;
			}
		} else {
			for (long j = 0; j < cols; j++) {
				float v = row[j], m = acc[j];
				acc[j] = (v < m || v != v) ? v : m;
			}
		}
	}
}

/* Max and min of a non-empty row. NaN is tracked on the bits, so the loops
 * can be compiled with finite-math-only, under which GCC turns the select
 * into a vector max/min reduction; no constant inf enters them (the first
 * element seeds the fold), so nothing is folded wrongly at compile time. */
__attribute__((optimize("finite-math-only", "no-signed-zeros")))
static float SFX(max_row_fast)(const float *restrict x, long n, unsigned *nanp) {
	float m = x[0];
	unsigned nan = 0;
	for (long i = 0; i < n; i++) {
		float v = x[i];
		union { float f; unsigned u; } b = { v };
		nan |= (b.u & 0x7fffffffu) > 0x7f800000u;
		m = v > m ? v : m;
	}
	*nanp = nan;
	return m;
}

__attribute__((optimize("finite-math-only", "no-signed-zeros")))
static float SFX(min_row_fast)(const float *restrict x, long n, unsigned *nanp) {
	float m = x[0];
	unsigned nan = 0;
	for (long i = 0; i < n; i++) {
		float v = x[i];
		union { float f; unsigned u; } b = { v };
		nan |= (b.u & 0x7fffffffu) > 0x7f800000u;
		m = v < m ? v : m;
	}
	*nanp = nan;
	return m;
}

/* Max (or Min) of a row, NaN if the row holds one; the identity (-inf or
 * +inf) for an empty row. */
static float SFX(minmax_row)(int op, const float *restrict x, long n) {
	if (n == 0)
		return op == MS_RMAX ? -__builtin_inff() : __builtin_inff();
	unsigned nan;
	float m = op == MS_RMAX ? SFX(max_row_fast)(x, n, &nan) : SFX(min_row_fast)(x, n, &nan);
	return nan ? __builtin_nanf("") : m;
}

/* Index of the first element of row equal to m (the first NaN when m is
 * NaN): blocks of 64 are tested with a vectorised any-equal, and only the
 * block that hits is scanned. */
static long SFX(find_first)(const float *restrict row, long n, float m) {
	int isnan = m != m;
	long i = 0;
	for (; i + 64 <= n; i += 64) {
		int hit = 0;
		if (isnan) {
			for (int j = 0; j < 64; j++) hit |= row[i + j] != row[i + j];
		} else {
			for (int j = 0; j < 64; j++) hit |= row[i + j] == m;
		}
		if (hit)
			break;
	}
	if (isnan) {
		while (i < n && row[i] == row[i]) i++;
	} else {
		while (i < n && row[i] != m) i++;
	}
	return i;
}

/* Index of the first max (or min) of each row, or of the first NaN. */
static void SFX(argreduce)(int op, const float *x, long rows, long n, long long *out) {
	for (long r = 0; r < rows; r++) {
		const float *row = x + r * n;
		out[r] = SFX(find_first)(row, n, SFX(minmax_row)(op, row, n));
	}
}

static void SFX(rowreduce)(int op, const float *x, long rows, long n, float *out, double scale) {
	for (long r = 0; r < rows; r++) {
		const float *row = x + r * n;
		out[r] = op == MS_RSUM ? (float)(SFX(sum_row)(row, n) * scale) : SFX(minmax_row)(op, row, n);
	}
}

static void SFX(colsum)(const float *x, long rows, long cols, long ld, double *restrict acc) {
	for (long r = 0; r < rows; r++) {
		const float *restrict row = x + r * ld;
		for (long j = 0; j < cols; j++) acc[j] += (double)row[j];
	}
}

#if defined(__AVX512F__)
/* exp_f on 16 lanes: the same reduction, polynomial and special cases,
 * written with intrinsics, 2^k applied by one scalef (exact down to the
 * subnormals) where exp_f multiplies by two halves. Softmax's rows of 64
 * (the attention's) took 0.92 ns an element through the vectorised
 * exp_f loops, 0.63 through this (4096 rows, one thread). */
static inline __m512 SFX(exp16)(__m512 x) {
	const __m512 hi = _mm512_set1_ps(88.72283935546875f), lo = _mm512_set1_ps(-103.97208404541015625f);
	__m512 xc = _mm512_min_ps(_mm512_max_ps(x, lo), hi);
	__mmask16 isnan = _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q);
	xc = _mm512_mask_blend_ps(isnan, xc, _mm512_setzero_ps());
	__m512 k = _mm512_roundscale_ps(_mm512_mul_ps(xc, _mm512_set1_ps(1.44269504088896341f)), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
	__m512 r = _mm512_fnmadd_ps(k, _mm512_set1_ps(0.693145751953125f), xc);
	r = _mm512_fnmadd_ps(k, _mm512_set1_ps(1.42860682030941723212e-6f), r);
	__m512 p = _mm512_set1_ps(1.0f / 5040.0f);
	p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 720.0f));
	p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 120.0f));
	p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 24.0f));
	p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 6.0f));
	p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0.5f));
	p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
	p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
	__m512 y = _mm512_scalef_ps(p, k);
	y = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(x, hi, _CMP_GT_OQ), y, _mm512_set1_ps(__builtin_inff()));
	y = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(x, lo, _CMP_LT_OQ), y, _mm512_setzero_ps());
	return _mm512_mask_blend_ps(isnan, y, x);
}

/* One softmax row on 16 lanes (the tail masked): max, e^(x - max) into y
 * with its sum in double in the lanes sum_row uses, then the scale. A
 * NaN anywhere makes the max, and so the row, NaN, as the loops do. */
static void SFX(softmax_row16)(const float *restrict xr, float *restrict yr, long n) {
	long full = n & ~15L;
	__mmask16 tail = (__mmask16)((1u << (n - full)) - 1);
	__m512 mv = _mm512_set1_ps(-__builtin_inff());
	__mmask16 nan = 0;
	for (long i = 0; i < full; i += 16) {
		__m512 v = _mm512_loadu_ps(xr + i);
		nan |= _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
		mv = _mm512_max_ps(mv, v);
	}
	if (tail) {
		__m512 v = _mm512_mask_loadu_ps(_mm512_set1_ps(-__builtin_inff()), tail, xr + full);
		nan |= _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
		mv = _mm512_max_ps(mv, v);
	}
	float m = nan ? __builtin_nanf("") : _mm512_reduce_max_ps(mv);
	__m512 mm = _mm512_set1_ps(m);
	__m512d lo = _mm512_setzero_pd(), hi = _mm512_setzero_pd();
	for (long i = 0; i < full; i += 16) {
		__m512 e = SFX(exp16)(_mm512_sub_ps(_mm512_loadu_ps(xr + i), mm));
		_mm512_storeu_ps(yr + i, e);
		lo = _mm512_add_pd(lo, _mm512_cvtps_pd(_mm512_castps512_ps256(e)));
		hi = _mm512_add_pd(hi, _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(e), 1))));
	}
	double s = 0;
	if (tail) {
		__m512 e = SFX(exp16)(_mm512_sub_ps(_mm512_maskz_loadu_ps(tail, xr + full), mm));
		_mm512_mask_storeu_ps(yr + full, tail, e);
		for (long i = full; i < n; i++) s += (double)yr[i];
	}
	s += _mm512_reduce_add_pd(_mm512_add_pd(lo, hi));
	__m512 inv = _mm512_set1_ps((float)(1.0 / s));
	for (long i = 0; i < full; i += 16) _mm512_storeu_ps(yr + i, _mm512_mul_ps(_mm512_loadu_ps(yr + i), inv));
	if (tail) _mm512_mask_storeu_ps(yr + full, tail, _mm512_mul_ps(_mm512_maskz_loadu_ps(tail, yr + full), inv));
}
#endif

static void SFX(softmax)(const float *x, float *restrict y, long rows, long n, int log) {
#if defined(__AVX512F__)
	if (!log) {
		for (long r = 0; r < rows; r++) SFX(softmax_row16)(x + r * n, y + r * n, n);
		return;
	}
#endif
	for (long r = 0; r < rows; r++) {
		const float *restrict xr = x + r * n;
		float *restrict yr = y + r * n;
		float m = SFX(minmax_row)(MS_RMAX, xr, n);
		/* e^(x - max) into y first: the exp loop then vectorises, and
		 * the sum runs in sum_row's independent lanes. */
		for (long i = 0; i < n; i++) yr[i] = SFX(exp_f)(xr[i] - m);
		double s = SFX(sum_row)(yr, n);
		if (log) {
			float ls = (float)__builtin_log(s);
			for (long i = 0; i < n; i++) yr[i] = (xr[i] - m) - ls;
		} else {
			float inv = (float)(1.0 / s);
			for (long i = 0; i < n; i++) yr[i] *= inv;
		}
	}
}

/* Sum of (x[i] - m)^2 in double, in sum_row's independent lanes. */
static double SFX(sqdiff_row)(const float *restrict x, long n, double m) {
	double acc[MS_LANES] = {0};
	long i = 0;
	for (; i + MS_LANES <= n; i += MS_LANES)
		for (int j = 0; j < MS_LANES; j++) {
			double d = (double)x[i + j] - m;
			acc[j] += d * d;
		}
	double s = 0;
	for (; i < n; i++) {
		double d = (double)x[i] - m;
		s += d * d;
	}
	for (int j = 0; j < MS_LANES; j++) s += acc[j];
	return s;
}

#if defined(__AVX512F__)
/* One layernorm row on 16 lanes: the loops below (the residual summed into
 * y first, mean and variance in double in the same sixteen lanes) with the
 * lanes summed by a tree rather than one after another (the two chains of
 * sixteen dependent adds took half of a row of 128's time). gamma and beta
 * repeat every c, a multiple of 16 that divides n. */
static void SFX(layernorm_row16)(const float *xr, const float *res, float *yr, long n,
		const float *restrict gamma, const float *restrict beta, long c, double eps) {
	__m512d lo = _mm512_setzero_pd(), hi = _mm512_setzero_pd();
	for (long i = 0; i < n; i += 16) {
		__m512 v = _mm512_loadu_ps(xr + i);
		if (res) {
			v = _mm512_add_ps(v, _mm512_loadu_ps(res + i));
			_mm512_storeu_ps(yr + i, v);
		}
		lo = _mm512_add_pd(lo, _mm512_cvtps_pd(_mm512_castps512_ps256(v)));
		hi = _mm512_add_pd(hi, _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1))));
	}
	if (res) xr = yr;
	double mean = _mm512_reduce_add_pd(_mm512_add_pd(lo, hi)) / (double)n;
	const __m512d md = _mm512_set1_pd(mean);
	lo = hi = _mm512_setzero_pd();
	for (long i = 0; i < n; i += 16) {
		__m512 v = _mm512_loadu_ps(xr + i);
		__m512d d0 = _mm512_sub_pd(_mm512_cvtps_pd(_mm512_castps512_ps256(v)), md);
		__m512d d1 = _mm512_sub_pd(_mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1))), md);
		lo = _mm512_fmadd_pd(d0, d0, lo);
		hi = _mm512_fmadd_pd(d1, d1, hi);
	}
	double var = _mm512_reduce_add_pd(_mm512_add_pd(lo, hi)) / (double)n;
	const __m512 inv = _mm512_set1_ps((float)(1.0 / __builtin_sqrt(var + eps))), mf = _mm512_set1_ps((float)mean);
	for (long j0 = 0; j0 < n; j0 += c)
		for (long j = 0; j < c; j += 16) {
			__m512 t = _mm512_mul_ps(_mm512_sub_ps(_mm512_loadu_ps(xr + j0 + j), mf), inv);
			_mm512_storeu_ps(yr + j0 + j, _mm512_fmadd_ps(t, _mm512_loadu_ps(gamma + j), _mm512_loadu_ps(beta + j)));
		}
}
#endif

/* With res (else NULL), each row of x + res, summed into y first as the
 * residual Add it replaces stores it (so the bits are that Add's and the
 * normalisation's), is normalised from y while the row is in L1. y is not
 * restrict: with res the row is read back from y while y is written. */
static void SFX(layernorm)(const float *x, const float *res, float *y, long rows, long n,
		const float *restrict gamma, const float *restrict beta, long c, double eps) {
#if defined(__AVX512F__)
	if (c % 16 == 0) {
		for (long r = 0; r < rows; r++) SFX(layernorm_row16)(x + r * n, res ? res + r * n : 0, y + r * n, n, gamma, beta, c, eps);
		return;
	}
#endif
	for (long r = 0; r < rows; r++) {
		const float *xr = x + r * n;
		float *yr = y + r * n;
		if (res) {
			const float *restrict rr = res + r * n;
			for (long j = 0; j < n; j++) yr[j] = xr[j] + rr[j];
			xr = yr;
		}
		double mean = SFX(sum_row)(xr, n) / (double)n;
		double var = SFX(sqdiff_row)(xr, n, mean) / (double)n;
		float inv = (float)(1.0 / __builtin_sqrt(var + eps)), m = (float)mean;
		for (long j0 = 0; j0 < n; j0 += c)
			for (long j = 0; j < c; j++)
				yr[j0 + j] = (xr[j0 + j] - m) * inv * gamma[j] + beta[j];
	}
}

/* y[0:n] = beta y + alpha x B for the row x[0:k] and B of k rows (row
 * stride ldb): B streams past once, four rows at a time, into a strip of y
 * of up to MS_GEMV_COLS columns that stays in L1. Each column sums in row
 * order, four products at a time, whatever strip it falls in. */
#define MS_GEMV_COLS 1024
static void SFX(gemv)(const float *x, long k, const float *b, long ldb, long n, float alpha, float beta, float *restrict y) {
	for (long c0 = 0; c0 < n; c0 += MS_GEMV_COLS) {
		long w = n - c0 < MS_GEMV_COLS ? n - c0 : MS_GEMV_COLS;
		float *restrict yc = y + c0;
		if (beta == 0) {
			for (long j = 0; j < w; j++) yc[j] = 0;
		} else if (beta != 1) {
			for (long j = 0; j < w; j++) yc[j] *= beta;
		}
		long i = 0;
		for (; i + 4 <= k; i += 4) {
			const float *restrict b0 = b + i * ldb + c0, *restrict b1 = b0 + ldb, *restrict b2 = b1 + ldb, *restrict b3 = b2 + ldb;
			float x0 = alpha * x[i], x1 = alpha * x[i + 1], x2 = alpha * x[i + 2], x3 = alpha * x[i + 3];
			for (long j = 0; j < w; j++) yc[j] += (x0 * b0[j] + x1 * b1[j]) + (x2 * b2[j] + x3 * b3[j]);
		}
		for (; i < k; i++) {
			const float *restrict b0 = b + i * ldb + c0;
			float x0 = alpha * x[i];
			for (long j = 0; j < w; j++) yc[j] += x0 * b0[j];
		}
	}
}
