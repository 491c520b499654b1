// The gradients of DepthwiseConv2dNative (NHWC; output channel ch*m+k of
// the forward op read input channel ch through filter[a, b, ch, k]), one
// gradient element per thread, summed in double in the CPU kernel's order
// (kernels/cpu's depthwiseBackprop) and rounded once.
//
// depthwise_bi: the input's gradient at (n, y, x, ch) sums f * dy over
// the output positions (i, j) whose window holds (y, x), at tap
// (a, b) = (y + pt - i*sh, x + pl - j*sw), and over k.
#define DWBI(T, SUF)                                                                                      \
	extern "C" __global__ void depthwise_bi_##SUF(T *__restrict__ dx, const T *__restrict__ f,            \
			const T *__restrict__ dy, i64 total, i64 h, i64 w, i64 c, i64 m, i64 kh, i64 kw, i64 sh,   \
			i64 sw, i64 pt, i64 pl, i64 oh, i64 ow) {                                                  \
		GRID_LOOP(t, total) {                                                                              \
			i64 ch = t % c, r = t / c;                                                                 \
			i64 x = r % w;                                                                             \
			r /= w;                                                                                    \
			i64 y = r % h, n = r / h;                                                                  \
			i64 ty = y + pt, tx = x + pl;                                                              \
			i64 i0 = ty >= kh ? (ty - kh) / sh + 1 : 0, i1 = ty / sh < oh - 1 ? ty / sh : oh - 1;      \
			i64 j0 = tx >= kw ? (tx - kw) / sw + 1 : 0, j1 = tx / sw < ow - 1 ? tx / sw : ow - 1;      \
			double acc = 0;                                                                            \
			for (i64 i = i0; i <= i1; i++) {                                                           \
				i64 a = ty - i * sh;                                                               \
				for (i64 j = j0; j <= j1; j++) {                                                   \
					i64 b = tx - j * sw;                                                       \
					const T *g = dy + ((n * oh + i) * ow + j) * c * m + ch * m;                \
					const T *fp = f + ((a * kw + b) * c + ch) * m;                             \
					for (i64 k = 0; k < m; k++) acc += (double)ld(fp[k]) * (double)ld(g[k]);   \
				}                                                                                  \
			}                                                                                          \
			dx[t] = st<T>((typename Cm<T>::t)acc);                                                     \
		}                                                                                                  \
	}

// depthwise_bf: the filter's gradient at (a, b, ch, k) sums x * dy over
// the batch and the output positions whose tap (a, b) is in bounds.
#define DWBF(T, SUF)                                                                                      \
	extern "C" __global__ void depthwise_bf_##SUF(T *__restrict__ df, const T *__restrict__ x,            \
			const T *__restrict__ dy, i64 total, i64 nb, i64 h, i64 w, i64 c, i64 m, i64 kw, i64 sh,   \
			i64 sw, i64 pt, i64 pl, i64 oh, i64 ow) {                                                  \
		GRID_LOOP(t, total) {                                                                              \
			i64 k = t % m, r = t / m;                                                                  \
			i64 ch = r % c;                                                                            \
			r /= c;                                                                                    \
			i64 b = r % kw, a = r / kw;                                                                \
			double acc = 0;                                                                            \
			for (i64 n = 0; n < nb; n++)                                                               \
				for (i64 i = 0; i < oh; i++) {                                                     \
					i64 y = i * sh - pt + a;                                                   \
					if (y < 0 || y >= h) continue;                                             \
					for (i64 j = 0; j < ow; j++) {                                             \
						i64 xx = j * sw - pl + b;                                          \
						if (xx < 0 || xx >= w) continue;                                   \
						acc += (double)ld(x[((n * h + y) * w + xx) * c + ch]) *            \
						       (double)ld(dy[((n * oh + i) * ow + j) * c * m + ch * m + k]); \
					}                                                                          \
				}                                                                                  \
			df[t] = st<T>((typename Cm<T>::t)acc);                                                     \
		}                                                                                                  \
	}

DWBI(float, f32) DWBI(double, f64) DWBI(f16, f16) DWBI(bf16, bf16)
DWBF(float, f32) DWBF(double, f64) DWBF(f16, f16) DWBF(bf16, bf16)
