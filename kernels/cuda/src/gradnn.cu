// The backward kernels of the NN ops (kernels/cuda/gradnn.go), float and
// double. Each sums in double and in the order the CPU kernel does
// (kernels/cpu/nn_backprop.go, nn_grad.go), so the two agree to the last
// rounding; L2Loss alone sums in a different order (a block reduction).
// The pooling gradients gather: one thread per input element visits the
// windows that contain it, so no two threads write one element and no
// atomics are needed.

// Pool geometry, as cpu.PoolGeom: n h w c kh kw sh sw pt pl oh ow (by
// value, as Args.I64s passes it).
struct PoolG { i64 v[12]; };
// Convolution: n h w c kh kw o sh sw dh dw pt pl oh ow.
struct ConvF { i64 v[15]; };
#define PG_N g.v[0]
#define PG_H g.v[1]
#define PG_W g.v[2]
#define PG_C g.v[3]
#define PG_KH g.v[4]
#define PG_KW g.v[5]
#define PG_SH g.v[6]
#define PG_SW g.v[7]
#define PG_PT g.v[8]
#define PG_PL g.v[9]
#define PG_OH g.v[10]
#define PG_OW g.v[11]

// The windows (oh, ow) whose rows cover input row y: oh*sh - pt <= y <
// oh*sh - pt + kh.
__device__ __forceinline__ void pool_range(i64 y, i64 k, i64 s, i64 p, i64 out, i64 *lo, i64 *hi) {
	i64 t = y + p - k + 1;
	*lo = t <= 0 ? 0 : (t + s - 1) / s;
	i64 h = (y + p) / s;
	*hi = h < out - 1 ? h : out - 1;
}

// Input element i (NHWC) of a pooling gradient: its batch, row, column and
// channel, and the windows [oh0, oh1] x [ow0, ow1] that contain it.
__device__ __forceinline__ void pool_grad_elem(const PoolG &g, i64 i, i64 *n, i64 *y, i64 *x, i64 *ch, i64 *oh0,
		i64 *oh1, i64 *ow0, i64 *ow1) {
	*ch = i % PG_C;
	i64 r = i / PG_C;
	*x = r % PG_W;
	*y = (r / PG_W) % PG_H;
	*n = r / (PG_W * PG_H);
	pool_range(*y, PG_KH, PG_SH, PG_PT, PG_OH, oh0, oh1);
	pool_range(*x, PG_KW, PG_SW, PG_PL, PG_OW, ow0, ow1);
}

// Window (oh, ow)'s rows [hs, he) and columns [ws, we) inside the input.
__device__ __forceinline__ void pool_window(const PoolG &g, i64 oh, i64 ow, i64 *hs, i64 *he, i64 *ws, i64 *we) {
	i64 h0 = oh * PG_SH - PG_PT, w0 = ow * PG_SW - PG_PL;
	*hs = h0 > 0 ? h0 : 0;
	*he = h0 + PG_KH < PG_H ? h0 + PG_KH : PG_H;
	*ws = w0 > 0 ? w0 : 0;
	*we = w0 + PG_KW < PG_W ? w0 + PG_KW : PG_W;
}

#define GRADNN(T, SUF)                                                                                     \
	extern "C" __global__ void softsign_grad_##SUF(T *__restrict__ o, const T *__restrict__ dy,           \
			const T *__restrict__ x, i64 n) {                                                          \
		GRID_LOOP(i, n) {                                                                                  \
			double d = 1.0 + fabs((double)x[i]);                                                       \
			o[i] = (T)((double)dy[i] / (d * d));                                                       \
		}                                                                                                  \
	}                                                                                                          \
	/* g is [outer, c, inner]; one channel per thread. */                                                  \
	extern "C" __global__ void bias_add_grad_##SUF(T *__restrict__ o, const T *__restrict__ g, i64 outer,   \
			i64 c, i64 inner) {                                                                        \
		GRID_LOOP(ch, c) {                                                                                 \
			double s = 0;                                                                              \
			for (i64 a = 0; a < outer; a++)                                                            \
				for (i64 b = 0; b < inner; b++) s += (double)g[(a * c + ch) * inner + b];             \
			o[ch] = (T)s;                                                                              \
		}                                                                                                  \
	}                                                                                                          \
	/* One block: partial sums of squares per thread, then the block's sum. */                              \
	extern "C" __global__ void l2_loss_##SUF(T *__restrict__ o, const T *__restrict__ x, i64 n) {         \
		__shared__ double scratch[32];                                                                     \
		double s = 0;                                                                                      \
		for (i64 i = threadIdx.x; i < n; i += blockDim.x) {                                                \
			double v = (double)x[i];                                                                   \
			s += v * v;                                                                                \
		}                                                                                                  \
		s = block_sum(s, scratch);                                                                         \
		if (threadIdx.x == 0) o[0] = (T)(s / 2);                                                           \
	}                                                                                                          \
	/* dx[n,y,x,c] = the sum of dy over the windows whose first maximum (row-major,                          \
	   NaN the largest) is (y, x). */                                                                      \
	extern "C" __global__ void max_pool_grad_##SUF(T *__restrict__ dx, const T *__restrict__ x,            \
			const T *__restrict__ dy, i64 total, PoolG g) {                          \
		GRID_LOOP(i, total) {                                                                              \
			i64 n, y, xx, ch, oh0, oh1, ow0, ow1;                                                      \
			pool_grad_elem(g, i, &n, &y, &xx, &ch, &oh0, &oh1, &ow0, &ow1);                            \
			double s = 0;                                                                              \
			for (i64 oh = oh0; oh <= oh1; oh++)                                                        \
				for (i64 ow = ow0; ow <= ow1; ow++) {                                                  \
					i64 hs, he, ws, we;                                                            \
					pool_window(g, oh, ow, &hs, &he, &ws, &we);                                    \
					i64 best = -1;                                                                 \
					for (i64 a = hs; a < he; a++)                                                  \
						for (i64 b = ws; b < we; b++) {                                        \
							i64 k = ((n * PG_H + a) * PG_W + b) * PG_C + ch;               \
							if (best < 0 || x[k] > x[best] || (x[k] != x[k] && x[best] == x[best])) \
								best = k;                                              \
						}                                                                      \
					if (best == i) s += (double)dy[((n * PG_OH + oh) * PG_OW + ow) * PG_C + ch];    \
				}                                                                                      \
			dx[i] = (T)s;                                                                              \
		}                                                                                                  \
	}                                                                                                          \
	/* dx[n,y,x,c] = the sum over the windows containing (y, x) of dy / their in-bounds size. */             \
	extern "C" __global__ void avg_pool_grad_##SUF(T *__restrict__ dx, const T *__restrict__ dy, i64 total, \
			PoolG g) {                                                               \
		GRID_LOOP(i, total) {                                                                              \
			i64 n, y, xx, ch, oh0, oh1, ow0, ow1;                                                      \
			pool_grad_elem(g, i, &n, &y, &xx, &ch, &oh0, &oh1, &ow0, &ow1);                            \
			double s = 0;                                                                              \
			for (i64 oh = oh0; oh <= oh1; oh++)                                                        \
				for (i64 ow = ow0; ow <= ow1; ow++) {                                                  \
					i64 hs, he, ws, we;                                                            \
					pool_window(g, oh, ow, &hs, &he, &ws, &we);                                    \
					double cnt = (double)((he - hs) * (we - ws));                                  \
					if (cnt > 0) s += (double)dy[((n * PG_OH + oh) * PG_OW + ow) * PG_C + ch] / cnt; \
				}                                                                                      \
			dx[i] = (T)s;                                                                              \
		}                                                                                                  \
	}                                                                                                          \
	/* df[a,b,c,o] = sum over n, i, j of x[n, i*sh-pt+a*dh, j*sw-pl+b*dw, c] * dy[n, i, j, o].               \
	   */                                                      \
	extern "C" __global__ void conv_backprop_filter_##SUF(T *__restrict__ df, const T *__restrict__ x,     \
			const T *__restrict__ dy, i64 total, ConvF cf) {                                           \
		const i64 *p = cf.v;                                                                               \
		i64 N = p[0], H = p[1], W = p[2], C = p[3], KW = p[5], O = p[6], SH = p[7], SW = p[8];        \
		i64 DH = p[9], DW = p[10], PT = p[11], PL = p[12], OH = p[13], OW = p[14];                     \
		GRID_LOOP(t, total) {                                                                              \
			i64 o = t % O, c = (t / O) % C, b = (t / (O * C)) % KW, a = t / (O * C * KW);             \
			double s = 0;                                                                              \
			for (i64 n = 0; n < N; n++)                                                                \
				for (i64 i = 0; i < OH; i++) {                                                         \
					i64 y = i * SH - PT + a * DH;                                                  \
					if (y < 0 || y >= H) continue;                                                 \
					for (i64 j = 0; j < OW; j++) {                                                 \
						i64 xx = j * SW - PL + b * DW;                                         \
						if (xx < 0 || xx >= W) continue;                                       \
						s += (double)x[((n * H + y) * W + xx) * C + c] *                       \
						     (double)dy[((n * OH + i) * OW + j) * O + o];                      \
					}                                                                              \
				}                                                                                      \
			df[t] = (T)s;                                                                              \
		}                                                                                                  \
	}

// SoftmaxCrossEntropyWithLogits over [rows, cols] broadcast from x and l
// (element strides sx0, sx1, sl0, sl1; 0 along a broadcast dim), one row
// per thread, in double as the CPU's xentRow.
#define XENT(T, SUF)                                                                                       \
	extern "C" __global__ void softmax_xent_##SUF(T *__restrict__ loss, T *__restrict__ back,             \
			const T *__restrict__ x, const T *__restrict__ l, i64 rows, i64 cols, i64 sx0, i64 sx1,    \
			i64 sl0, i64 sl1) {                                                                        \
		GRID_LOOP(i, rows) {                                                                               \
			double mx = -1.0 / 0.0;                                                                    \
			for (i64 j = 0; j < cols; j++) {                                                           \
				double v = (double)x[i * sx0 + j * sx1];                                           \
				mx = v > mx || v != v ? v : mx;                                                    \
			}                                                                                          \
			double sum = 0;                                                                            \
			for (i64 j = 0; j < cols; j++) sum += exp((double)x[i * sx0 + j * sx1] - mx);              \
			double lse = log(sum), ls = 0;                                                             \
			for (i64 j = 0; j < cols; j++) {                                                           \
				double v = (double)x[i * sx0 + j * sx1] - mx, lv = (double)l[i * sl0 + j * sl1];  \
				ls += lv * (lse - v);                                                              \
				back[i * cols + j] = (T)(exp(v) / sum - lv);                                       \
			}                                                                                          \
			loss[i] = (T)ls;                                                                           \
		}                                                                                                  \
	}

// FusedBatchNormGrad over x and dy as [outer, c, inner] (NHWC: inner 1),
// float: bn_grad_sums, one channel per thread, sums dy and dy * (x -
// mean) in the CPU's order into sums[2c] and writes the scale and offset
// gradients; bn_grad_dx then makes x's gradient, one element per thread.
extern "C" __global__ void bn_grad_sums_f32(double *__restrict__ sums, float *__restrict__ dscale,
		float *__restrict__ doffset, const float *__restrict__ dy, const float *__restrict__ x,
		const float *__restrict__ mean, const float *__restrict__ var, i64 outer, i64 c, i64 inner, double eps) {
	GRID_LOOP(k, c) {
		double sd = 0, sdx = 0, m = (double)mean[k];
		for (i64 a = 0; a < outer; a++)
			for (i64 b = 0; b < inner; b++) {
				i64 i = (a * c + k) * inner + b;
				double v = (double)dy[i];
				sd += v;
				sdx += v * ((double)x[i] - m);
			}
		sums[k] = sd;
		sums[c + k] = sdx;
		if (dscale) dscale[k] = (float)(sdx / sqrt((double)var[k] + eps));
		if (doffset) doffset[k] = (float)sd;
	}
}

extern "C" __global__ void bn_grad_dx_f32(float *__restrict__ dx, const double *__restrict__ sums,
		const float *__restrict__ dy, const float *__restrict__ x, const float *__restrict__ scale,
		const float *__restrict__ mean, const float *__restrict__ var, i64 n, i64 c, i64 inner, double eps,
		int training) {
	double cnt = c > 0 ? (double)(n / c) : 0;
	GRID_LOOP(i, n) {
		i64 k = (i / inner) % c;
		double inv = 1 / sqrt((double)var[k] + eps), v = (double)dy[i];
		if (training) {
			double xc = (double)x[i] - (double)mean[k];
			dx[i] = (float)((double)scale[k] * inv * (v - sums[k] / cnt - xc * (sums[c + k] / cnt) * inv * inv));
		} else {
			dx[i] = (float)(v * (double)scale[k] * inv);
		}
	}
}

GRADNN(float, f32)
GRADNN(double, f64)
XENT(float, f32)
XENT(double, f64)

// StridedSliceGrad's scatter: dy's element i, at index (i_0..i_r-1) of
// the slice sizes, goes to dx at sum (start_d + i_d * step_d) * stride_d
// (dx zeroed first). Distinct indices never meet, so no atomics.
struct SliceG { i64 v[1 + 4 * 8]; }; // rank; size, start, step, stride (8 each)
#define SLICE_GRAD(T, SUF)                                                                                 \
	extern "C" __global__ void slice_grad_##SUF(T *__restrict__ dx, const T *__restrict__ dy, i64 n,       \
			SliceG s) {                                                                                \
		i64 r = s.v[0];                                                                                    \
		GRID_LOOP(i, n) {                                                                                  \
			i64 rem = i, off = 0;                                                                      \
			for (i64 d = r - 1; d >= 0; d--) {                                                         \
				i64 size = s.v[1 + d], idx = rem % size;                                           \
				rem /= size;                                                                       \
				off += (s.v[9 + d] + idx * s.v[17 + d]) * s.v[25 + d];                             \
			}                                                                                          \
			dx[off] = dy[i];                                                                           \
		}                                                                                                  \
	}
SLICE_GRAD(u8, 1) SLICE_GRAD(u16, 2) SLICE_GRAD(u32, 4) SLICE_GRAD(u64, 8)
