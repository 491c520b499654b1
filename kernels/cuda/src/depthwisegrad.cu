// The gradients of DepthwiseConv2dNative (NHWC; output channel ch*m+k of
// the forward op read input channel ch through filter[a, b, ch, k]),
// summed in double and rounded once: the input's gradient one element per
// thread in the CPU kernel's order (kernels/cpu's depthwiseBackprop), the
// filter's a block per element (its sum runs over the whole batch).
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
// the batch and the output positions whose tap (a, b) is in bounds: a
// block per filter element (blocks stride over them), its threads taking
// the (n, i, j) positions in turn, then a block_sum in double.
#define DWBF(T, SUF)                                                                                      \
	extern "C" __global__ void depthwise_bf_##SUF(T *__restrict__ df, const T *__restrict__ x,            \
			const T *__restrict__ dy, i64 total, i64 nb, i64 h, i64 w, i64 c, i64 m, i64 kw, i64 sh,   \
			i64 sw, i64 pt, i64 pl, i64 oh, i64 ow) {                                                  \
		__shared__ double scratch[32];                                                                     \
		const i64 pos = nb * oh * ow;                                                                      \
		for (i64 t = blockIdx.x; t < total; t += gridDim.x) {                                              \
			i64 k = t % m, r = t / m;                                                                  \
			i64 ch = r % c;                                                                            \
			r /= c;                                                                                    \
			i64 b = r % kw, a = r / kw;                                                                \
			double acc = 0;                                                                            \
			for (i64 q = threadIdx.x; q < pos; q += blockDim.x) {                                      \
				i64 j = q % ow, ni = q / ow;                                                       \
				i64 i = ni % oh, n = ni / oh;                                                      \
				i64 y = i * sh - pt + a, xx = j * sw - pl + b;                                     \
				if (y < 0 || y >= h || xx < 0 || xx >= w) continue;                                \
				acc += (double)ld(x[((n * h + y) * w + xx) * c + ch]) *                            \
				       (double)ld(dy[((n * oh + i) * ow + j) * c * m + ch * m + k]);               \
			}                                                                                          \
			acc = block_sum(acc, scratch);                                                             \
			if (threadIdx.x == 0) df[t] = st<T>((typename Cm<T>::t)acc);                               \
		}                                                                                                  \
	}

DWBI(float, f32) DWBI(double, f64) DWBI(f16, f16) DWBI(bf16, bf16)
DWBF(float, f32) DWBF(double, f64) DWBF(f16, f16) DWBF(bf16, bf16)
