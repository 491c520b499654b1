// NN kernels, NHWC: im2col for Conv2D's cuBLAS GEMM, a direct grouped
// convolution (DepthwiseConv2dNative, grouped Conv2D and the dtypes cuBLAS
// does not serve), MaxPool/AvgPool, and FusedBatchNorm.

__device__ __forceinline__ i64 imax(i64 a, i64 b) { return a > b ? a : b; }
__device__ __forceinline__ i64 imin(i64 a, i64 b) { return a < b ? a : b; }

// Conv geometry: input [n, h, w, c], filter [kh, kw, c/groups, o],
// output [n, oh, ow, o].
struct Conv {
	i64 n, h, w, c;
	i64 kh, kw, o, groups;
	i64 sh, sw, dh, dw;
	i64 pt, pl, oh, ow;
	i64 pad0, pad1, pad2, pad3;
};

// im2col for images [n0, n0 + nb): col[m][(a*kw + b)*c + ch] with
// m = ((n - n0)*oh + y)*ow + x, zero where the tap falls in the padding.
#define IM2COL(T, SUF)                                                                                   \
	extern "C" __global__ void im2col_##SUF(T *__restrict__ col, const T *__restrict__ x, i64 n0,     \
		i64 total, Conv p) {                                                                       \
		i64 kdim = p.kh * p.kw * p.c;                                                              \
		GRID_LOOP(i, total) {                                                                      \
			i64 m = i / kdim, k = i - m * kdim;                                                \
			i64 ch = k % p.c, t = k / p.c;                                                     \
			i64 b = t % p.kw, a = t / p.kw;                                                    \
			i64 xx = m % p.ow, r = m / p.ow;                                                   \
			i64 y = r % p.oh, n = n0 + r / p.oh;                                               \
			i64 iy = y * p.sh - p.pt + a * p.dh, ix = xx * p.sw - p.pl + b * p.dw;             \
			T v = (T)0;                                                                        \
			if (iy >= 0 && iy < p.h && ix >= 0 && ix < p.w) v = x[((n * p.h + iy) * p.w + ix) * p.c + ch]; \
			col[i] = v;                                                                        \
		}                                                                                          \
	}
IM2COL(float, f32) IM2COL(double, f64)

// Direct convolution, one thread per output element, accumulating in
// CA (float for float/half/bfloat16, double for double, wrapping 32 bits
// for int32).
template <typename T> struct ConvAcc { typedef typename Cm<T>::t t; };
template <> struct ConvAcc<int> { typedef u32 t; };
#define CONVD(T, SUF)                                                                                    \
	extern "C" __global__ void convd_##SUF(T *__restrict__ out, const T *__restrict__ x,              \
		const T *__restrict__ f, i64 total, Conv p) {                                              \
		typedef ConvAcc<T>::t A;                                                                   \
		i64 cg = p.c / p.groups, og = p.o / p.groups;                                              \
		GRID_LOOP(i, total) {                                                                      \
			i64 oc = i % p.o, r = i / p.o;                                                     \
			i64 xx = r % p.ow;                                                                 \
			r /= p.ow;                                                                         \
			i64 y = r % p.oh, n = r / p.oh;                                                    \
			i64 c0 = (oc / og) * cg;                                                           \
			A acc = 0;                                                                         \
			for (i64 a = 0; a < p.kh; a++) {                                                   \
				i64 iy = y * p.sh - p.pt + a * p.dh;                                       \
				if (iy < 0 || iy >= p.h) continue;                                         \
				for (i64 b = 0; b < p.kw; b++) {                                           \
					i64 ix = xx * p.sw - p.pl + b * p.dw;                              \
					if (ix < 0 || ix >= p.w) continue;                                 \
					const T *xp = x + ((n * p.h + iy) * p.w + ix) * p.c + c0;          \
					const T *fp = f + (a * p.kw + b) * cg * p.o + oc;                  \
					for (i64 ci = 0; ci < cg; ci++)                                    \
						acc += (A)ld(xp[ci]) * (A)ld(fp[ci * p.o]);                \
				}                                                                          \
			}                                                                                  \
			out[i] = st<T>((Cm<T>::t)acc);                                                     \
		}                                                                                          \
	}
CONVD(float, f32) CONVD(double, f64) CONVD(f16, f16) CONVD(bf16, bf16) CONVD(int, i32)

// Conv2DBackpropInput, gathered: dx[n, y, x, ch] sums dy[n, oy, ox, o] *
// f[a, b, ch, o] over the taps (a, b) whose window position (oy, ox) lands
// on (y, x) (p describes the forward convolution, its output being dy).
#define CONVBI(T, SUF)                                                                                   \
	extern "C" __global__ void convbi_##SUF(T *__restrict__ dx, const T *__restrict__ dy,             \
		const T *__restrict__ f, i64 total, Conv p) {                                              \
		typedef ConvAcc<T>::t A;                                                                   \
		GRID_LOOP(i, total) {                                                                      \
			i64 ch = i % p.c, r = i / p.c;                                                     \
			i64 xx = r % p.w;                                                                  \
			r /= p.w;                                                                          \
			i64 y = r % p.h, n = r / p.h;                                                      \
			A acc = 0;                                                                         \
			for (i64 a = 0; a < p.kh; a++) {                                                   \
				i64 ty = y + p.pt - a * p.dh;                                              \
				if (ty < 0 || ty % p.sh != 0 || ty / p.sh >= p.oh) continue;               \
				i64 oy = ty / p.sh;                                                        \
				for (i64 b = 0; b < p.kw; b++) {                                           \
					i64 tx = xx + p.pl - b * p.dw;                                     \
					if (tx < 0 || tx % p.sw != 0 || tx / p.sw >= p.ow) continue;      \
					i64 ox = tx / p.sw;                                                \
					const T *g = dy + ((n * p.oh + oy) * p.ow + ox) * p.o;             \
					const T *fp = f + ((a * p.kw + b) * p.c + ch) * p.o;               \
					for (i64 o = 0; o < p.o; o++) acc += (A)ld(g[o]) * (A)ld(fp[o]);   \
				}                                                                          \
			}                                                                                  \
			dx[i] = st<T>((Cm<T>::t)acc);                                                      \
		}                                                                                          \
	}
CONVBI(float, f32) CONVBI(double, f64) CONVBI(f16, f16) CONVBI(bf16, bf16) CONVBI(int, i32)

// Pooling over [n, h, w, c] windows (kh x kw, stride sh x sw, padding
// pt/pl before): max (NaN wins, the dtype's lowest for an all-padding
// window) or the mean over the in-bounds elements (in double). Depth
// pooling (kd > 1, 1x1 window) takes the max over kd channels.
#define POOL(T, SUF)                                                                                     \
	extern "C" __global__ void maxpool_##SUF(T *__restrict__ o, const T *__restrict__ x, i64 total,   \
		Conv p, i64 kd) {                                                                          \
		typedef Cm<T>::t C;                                                                        \
		i64 od = p.c / kd;                                                                         \
		GRID_LOOP(i, total) {                                                                      \
			i64 d = i % od, r = i / od;                                                        \
			i64 xx = r % p.ow;                                                                 \
			r /= p.ow;                                                                         \
			i64 y = r % p.oh, n = r / p.oh;                                                    \
			C m = Lim<C>::lo();                                                                \
			if (kd != 1) {                                                                     \
				const T *s = x + ((n * p.h + y * p.sh) * p.w + xx * p.sw) * p.c + d * kd;  \
				for (i64 j = 0; j < kd; j++) {                                             \
					C v = ld(s[j]);                                                    \
					if (v > m || v != v) m = v;                                        \
				}                                                                          \
			} else {                                                                           \
				i64 h0 = y * p.sh - p.pt, w0 = xx * p.sw - p.pl;                           \
				for (i64 a = imax(h0, 0); a < imin(h0 + p.kh, p.h); a++)                \
					for (i64 b = imax(w0, 0); b < imin(w0 + p.kw, p.w); b++) {      \
						C v = ld(x[((n * p.h + a) * p.w + b) * p.c + d]);          \
						if (v > m || v != v) m = v;                                \
					}                                                                  \
			}                                                                                  \
			o[i] = st<T>(m);                                                                   \
		}                                                                                          \
	}
REALS(POOL)

#define AVGPOOL(T, SUF)                                                                                  \
	extern "C" __global__ void avgpool_##SUF(T *__restrict__ o, const T *__restrict__ x, i64 total,   \
		Conv p) {                                                                                  \
		GRID_LOOP(i, total) {                                                                      \
			i64 d = i % p.c, r = i / p.c;                                                      \
			i64 xx = r % p.ow;                                                                 \
			r /= p.ow;                                                                         \
			i64 y = r % p.oh, n = r / p.oh;                                                    \
			i64 h0 = y * p.sh - p.pt, w0 = xx * p.sw - p.pl;                                   \
			i64 hs = imax(h0, 0), he = imin(h0 + p.kh, p.h);                                \
			i64 ws = imax(w0, 0), we = imin(w0 + p.kw, p.w);                                \
			double acc = 0;                                                                    \
			for (i64 a = hs; a < he; a++)                                                      \
				for (i64 b = ws; b < we; b++) acc += (double)ld(x[((n * p.h + a) * p.w + b) * p.c + d]); \
			o[i] = st<T>((Cm<T>::t)(acc * (1.0 / (double)((he - hs) * (we - ws)))));           \
		}                                                                                          \
	}
FLOATS(AVGPOOL)

// FusedBatchNorm. bn_stats: one block per channel of x viewed as
// [outer, c, inner]: the batch mean and (biased) variance in double,
// two passes as the CPU kernel; it writes batch_mean/batch_var (the
// reserve spaces) and the running statistics (factor 1: the batch's,
// variance made unbiased; otherwise blended with the given mean/var).
#define BNSTATS(T, SUF)                                                                                  \
	extern "C" __global__ void bn_stats_##SUF(const T *__restrict__ x, i64 outer, i64 c, i64 inner,   \
		const float *__restrict__ mean, const float *__restrict__ var, double factor,              \
		float *__restrict__ rmean, float *__restrict__ rvar, float *__restrict__ bmean,            \
		float *__restrict__ bvar) {                                                                \
		__shared__ double scratch[32];                                                             \
		i64 k = blockIdx.x, cnt = outer * inner;                                                   \
		double s = 0;                                                                              \
		for (i64 j = threadIdx.x; j < cnt; j += blockDim.x) {                                      \
			i64 p = j / inner, q = j - p * inner;                                              \
			s += (double)ld(x[(p * c + k) * inner + q]);                                       \
		}                                                                                          \
		s = block_sum(s, scratch);                                                                 \
		float bm = (float)(s / (double)cnt);                                                       \
		double sq = 0;                                                                             \
		for (i64 j = threadIdx.x; j < cnt; j += blockDim.x) {                                      \
			i64 p = j / inner, q = j - p * inner;                                              \
			double d = (double)ld(x[(p * c + k) * inner + q]) - (double)bm;                    \
			sq += d * d;                                                                       \
		}                                                                                          \
		sq = block_sum(sq, scratch);                                                               \
		if (threadIdx.x == 0) {                                                                    \
			float bv = (float)(sq / (double)cnt);                                              \
			double adj = (double)cnt / fmax((double)cnt - 1, 1.0);                             \
			if (factor == 1.0) {                                                               \
				rmean[k] = bm;                                                             \
				rvar[k] = (float)((double)bv * adj);                                       \
			} else {                                                                           \
				rmean[k] = (float)((1 - factor) * (double)mean[k] + factor * (double)bm);  \
				rvar[k] = (float)((1 - factor) * (double)var[k] + factor * adj * (double)bv); \
			}                                                                                  \
			bmean[k] = bm;                                                                     \
			bvar[k] = bv;                                                                      \
		}                                                                                          \
	}
BNSTATS(float, f32) BNSTATS(f16, f16) BNSTATS(bf16, bf16)

// bn_coef: mul = scale / sqrt(var + eps), add = offset - mean * mul per
// channel (float32, as the CPU kernel rounds them).
extern "C" __global__ void bn_coef(float *__restrict__ mul, float *__restrict__ add, const float *__restrict__ scale,
	const float *__restrict__ offset, const float *__restrict__ mean, const float *__restrict__ var, i64 c, double eps) {
	GRID_LOOP(k, c) {
		float s = (float)(1.0 / sqrt((double)var[k] + eps)) * scale[k];
		mul[k] = s;
		add[k] = offset[k] - mean[k] * s;
	}
}

// bng_coef_<dtype>: BatchNormWithGlobalNormalization's mul and add, from
// statistics of the input's dtype (half computes in float, as the CPU
// kernel does): mul = 1 / sqrt(var + eps), times gamma when scaled.
#define BNGCOEF(T, SUF)                                                                                  \
	extern "C" __global__ void bng_coef_##SUF(float *__restrict__ mul, float *__restrict__ add,         \
		const T *__restrict__ gamma, const T *__restrict__ beta, const T *__restrict__ mean,       \
		const T *__restrict__ var, i64 c, double eps, int scaled) {                                \
		GRID_LOOP(k, c) {                                                                          \
			float s = (float)(1.0 / sqrt((double)ld(var[k]) + eps));                           \
			if (scaled) s = __fmul_rn(s, (float)ld(gamma[k]));                                 \
			mul[k] = s;                                                                        \
			add[k] = __fadd_rn((float)ld(beta[k]), -__fmul_rn((float)ld(mean[k]), s));         \
		}                                                                                          \
	}
BNGCOEF(float, f32) BNGCOEF(f16, f16)

// bn_apply: y = x * mul[k] + add[k] with k the channel of [outer, c, inner].
#define BNAPPLY(T, SUF)                                                                                  \
	extern "C" __global__ void bn_apply_##SUF(T *__restrict__ y, const T *__restrict__ x,             \
		const float *__restrict__ mul, const float *__restrict__ add, i64 n, i64 c, i64 inner) {   \
		GRID_LOOP(i, n) {                                                                          \
			i64 k = (i / inner) % c;                                                           \
			y[i] = st<T>((Cm<T>::t)(ld(x[i]) * mul[k] + add[k]));                              \
		}                                                                                          \
	}
BNAPPLY(float, f32) BNAPPLY(f16, f16) BNAPPLY(bf16, bf16)

// FakeQuant (quant.go, kernels/cpu/quant.go): clamp to the nudged range,
// then round to the grid, every operation rounded on its own (_rn: no
// fused multiply-add) so the bits equal the CPU kernel's. fake_quant1 has
// one grid, passed by value; fake_quantc one per channel of the last dim,
// 6 floats each (min, max, scale, inverse scale, quantised zero), from a
// device buffer, plus a sixth: 1 for a channel of min = max = 0, whose
// output is 0.
// div divides by the scale instead of multiplying by its inverse
// (FakeQuantWithMinMaxVars, as TF's functor).
__device__ __forceinline__ float fq_apply(float x, float mn, float mx, float scale, float inv, float qz, int div) {
	float c = x;
	if (mx < c) c = mx;
	if (c < mn) c = mn;
	float s = __fadd_rn(c, -mn);
	float q = div ? __fdiv_rn(s, scale) : __fmul_rn(s, inv);
	q = __fadd_rn(__fadd_rn(q, -qz), 0.5f);
	return __fmul_rn(floorf(q), scale);
}

extern "C" __global__ void fake_quant1(float *__restrict__ o, const float *__restrict__ x, i64 n, float mn, float mx,
	float scale, float inv, float qz, int div) {
	GRID_LOOP(i, n) o[i] = fq_apply(x[i], mn, mx, scale, inv, qz, div);
}

extern "C" __global__ void fake_quantc(float *__restrict__ o, const float *__restrict__ x, const float *__restrict__ g,
	i64 n, i64 depth) {
	GRID_LOOP(i, n) {
		const float *p = g + 6 * (i % depth);
		o[i] = p[5] != 0.0f ? 0.0f : fq_apply(x[i], p[0], p[1], p[2], p[3], p[4], 0);
	}
}

// A float32 fill (NaN statistics of an empty batch, reserve_space_3).
extern "C" __global__ void fill_f32v(float *__restrict__ o, float v, i64 n) {
	GRID_LOOP(i, n) o[i] = v;
}

// LRN over the last dim (depth d): x / (bias + alpha * sum of squares over
// [i - r, i + r])^beta, in double as the CPU kernel.
#define LRN(T, SUF)                                                                                      \
	extern "C" __global__ void lrn_##SUF(T *__restrict__ o, const T *__restrict__ x, i64 n, i64 d,    \
		i64 r, double bias, double alpha, double beta) {                                           \
		GRID_LOOP(i, n) {                                                                          \
			i64 c = i % d, row = i - c;                                                        \
			i64 lo = c - r < 0 ? 0 : c - r, hi = c + r >= d ? d - 1 : c + r;                   \
			double sq = 0;                                                                     \
			for (i64 j = lo; j <= hi; j++) {                                                   \
				double v = (double)ld(x[row + j]);                                         \
				sq += v * v;                                                               \
			}                                                                                  \
			double den = bias + alpha * sq, inv;                                               \
			if (beta == 0.5) inv = 1 / sqrt(den);                                              \
			else if (beta == 0.75) inv = 1 / sqrt(den * sqrt(den));                            \
			else if (beta == 1) inv = 1 / den;                                                 \
			else inv = pow(den, -beta);                                                        \
			o[i] = st<T>((float)((double)ld(x[i]) * inv));                                     \
		}                                                                                          \
	}
LRN(float, f32) LRN(f16, f16) LRN(bf16, bf16)

// The epilogue of _FusedConv2D, in place over the NHWC output o (channel
// i % c): x + bias[c], or with bn set x * s + (offset - mean * s) where
// s = scale / sqrt(variance + eps) (the four args in p0..p3), then the
// activation act: 0 none, 1 Relu, 2 Relu6, 3 Elu, 4 LeakyRelu (alpha),
// 5 Tanh, 6 Sigmoid. In double, rounded once, as the CPU kernel's
// float64 coefficients.
#define CONVEPI(T, SUF)                                                                                  \
	extern "C" __global__ void conv_epi_##SUF(T *o, const T *p0, const T *p1, const T *p2, const T *p3, \
		i64 n, i64 c, int bn, double eps, int act, double alpha) {                                 \
		GRID_LOOP(i, n) {                                                                          \
			i64 k = i % c;                                                                     \
			double v = (double)ld(o[i]);                                                       \
			if (bn) {                                                                          \
				double s = (double)ld(p0[k]) / sqrt((double)ld(p3[k]) + eps);              \
				v = v * s + ((double)ld(p1[k]) - (double)ld(p2[k]) * s);                   \
			} else {                                                                           \
				v += (double)ld(p0[k]);                                                    \
			}                                                                                  \
			switch (act) {                                                                     \
			case 1: v = v > 0 ? v : 0; break;                                                  \
			case 2: v = v > 0 ? (v < 6 ? v : 6) : 0; break;                                    \
			case 3: v = v < 0 ? expm1(v) : v; break;                                           \
			case 4: v = v > 0 ? v : v * alpha; break;                                          \
			case 5: v = tanh(v); break;                                                        \
			case 6: v = 1 / (1 + exp(-v)); break;                                              \
			}                                                                                  \
			o[i] = st<T>((Cm<T>::t)v);                                                         \
		}                                                                                          \
	}
CONVEPI(float, f32) CONVEPI(double, f64) CONVEPI(f16, f16)
