// Cumsum/Cumprod, MatrixBandPart, ResizeBilinear and
// ResizeNearestNeighbor.

// Scans: one thread per (outer, inner) line of [outer, n, inner],
// accumulating in the compute type (the CPU kernels' arithmetic: floats in
// float, half/bfloat16 in float, integers wrapping in the dtype).
#define SCAN(T, SUF)                                                                                     \
	extern "C" __global__ void scan_##SUF(T *__restrict__ o, const T *__restrict__ x, i64 outer,      \
		i64 n, i64 inner, int prod, int exclusive, int reverse) {                                  \
		typedef Cm<T>::t C;                                                                        \
		GRID_LOOP(t, outer * inner) {                                                              \
			i64 p = t / inner, q = t - p * inner;                                              \
			i64 base = p * n * inner + q;                                                      \
			C acc = prod ? (C)1 : (C)0;                                                        \
			for (i64 s = 0; s < n; s++) {                                                      \
				i64 j = reverse ? n - 1 - s : s;                                           \
				i64 at = base + j * inner;                                                 \
				C v = ld(x[at]);                                                           \
				if (exclusive) o[at] = st<T>(acc);                                         \
				acc = prod ? (C)(acc * v) : (C)(acc + v);                                  \
				if (!exclusive) o[at] = st<T>(acc);                                        \
			}                                                                                  \
		}                                                                                          \
	}
REALS(SCAN)

// MatrixBandPart over [batch, m, n]: keep element (i, j) when
// (lo < 0 || i - j <= lo) && (hi < 0 || j - i <= hi), else zero.
#define BAND(T, SZ)                                                                                      \
	extern "C" __global__ void band_##SZ(T *__restrict__ o, const T *__restrict__ x, i64 total, i64 m, \
		i64 n, i64 lo, i64 hi) {                                                                   \
		GRID_LOOP(k, total) {                                                                      \
			i64 j = k % n, i = (k / n) % m;                                                    \
			bool keep = (lo < 0 || i - j <= lo) && (hi < 0 || j - i <= hi);                    \
			o[k] = keep ? x[k] : T();                                                          \
		}                                                                                          \
	}
BAND(u8, 1) BAND(u16, 2) BAND(u32, 4) BAND(u64, 8) BAND(u128, 16)

// Resize coordinates in float32 as TF computes them, each product and sum
// rounded on its own (no fused multiply-add), so the pixels picked at
// ties are the CPU kernel's.
__device__ __forceinline__ i64 nearest_idx(i64 i, i64 in, float scale, int ac, int hp) {
	float f = hp ? __fmul_rn(__fadd_rn((float)i, 0.5f), scale) : __fmul_rn((float)i, scale);
	i64 v;
	if (ac) {
		// Half away from zero, as the CPU kernel's math.Round.
		double d = (double)f;
		v = (i64)(d < 0 ? -floor(-d + 0.5) : floor(d + 0.5));
	} else {
		v = (i64)floorf(f);
	}
	if (v > in - 1) v = in - 1;
	if (hp && v < 0) v = 0;
	return v;
}

#define RESIZE_NN(T, SZ)                                                                                 \
	extern "C" __global__ void resize_nn_##SZ(T *__restrict__ o, const T *__restrict__ x, i64 total,  \
		i64 ih, i64 iw, i64 oh, i64 ow, i64 c, float hs, float ws, int ac, int hp) {               \
		GRID_LOOP(i, total) {                                                                      \
			i64 ch = i % c, r = i / c;                                                         \
			i64 xo = r % ow;                                                                   \
			r /= ow;                                                                           \
			i64 yo = r % oh, b = r / oh;                                                       \
			i64 y = nearest_idx(yo, ih, hs, ac, hp), xi = nearest_idx(xo, iw, ws, ac, hp);     \
			o[i] = x[((b * ih + y) * iw + xi) * c + ch];                                       \
		}                                                                                          \
	}
RESIZE_NN(u8, 1) RESIZE_NN(u16, 2) RESIZE_NN(u32, 4) RESIZE_NN(u64, 8)

struct Lerp {
	i64 lo, hi;
	float frac;
};
__device__ __forceinline__ Lerp lerp_idx(i64 i, i64 in, float scale, int hp) {
	float f = hp ? __fadd_rn(__fmul_rn(__fadd_rn((float)i, 0.5f), scale), -0.5f) : __fmul_rn((float)i, scale);
	float fl = floorf(f);
	Lerp l;
	l.lo = (i64)fl < 0 ? 0 : (i64)fl;
	l.hi = (i64)ceilf(f) > in - 1 ? in - 1 : (i64)ceilf(f);
	l.frac = __fadd_rn(f, -fl);
	return l;
}

// ResizeBilinear: float32 output for every input dtype.
#define RESIZE_BL(T, SUF)                                                                                \
	extern "C" __global__ void resize_bl_##SUF(float *__restrict__ o, const T *__restrict__ x,        \
		i64 total, i64 ih, i64 iw, i64 oh, i64 ow, i64 c, float hs, float ws, int hp) {            \
		GRID_LOOP(i, total) {                                                                      \
			i64 ch = i % c, r = i / c;                                                         \
			i64 xo = r % ow;                                                                   \
			r /= ow;                                                                           \
			i64 yo = r % oh, b = r / oh;                                                       \
			Lerp ly = lerp_idx(yo, ih, hs, hp), lx = lerp_idx(xo, iw, ws, hp);                 \
			const T *top = x + (b * ih + ly.lo) * iw * c, *bot = x + (b * ih + ly.hi) * iw * c; \
			float tl = (float)ld(top[lx.lo * c + ch]), tr = (float)ld(top[lx.hi * c + ch]);    \
			float bl = (float)ld(bot[lx.lo * c + ch]), br = (float)ld(bot[lx.hi * c + ch]);    \
			float t = tl + (tr - tl) * lx.frac;                                                \
			float bb = bl + (br - bl) * lx.frac;                                               \
			o[i] = t + (bb - t) * ly.frac;                                                     \
		}                                                                                          \
	}
FLOATS(RESIZE_BL) SINTS(RESIZE_BL) RESIZE_BL(u8, u8) RESIZE_BL(u16, u16)

// TopKV2 along the last dim: one warp per row, k rounds; round j finds
// the best element after the (j-1)th in the order "larger value first,
// then lower index" (the CPU kernel's), each lane over a strided part of
// the row and the warp combining. Values and indices come out sorted.
template <typename A> struct TkSh { typedef A t; };
template <> struct TkSh<i8> { typedef int t; };
template <> struct TkSh<i16> { typedef int t; };
template <> struct TkSh<u8> { typedef int t; };
template <> struct TkSh<u16> { typedef int t; };
template <typename C> __device__ __forceinline__ bool tk_before(C a, i64 ia, C b, i64 ib) {
	if (a != b) return a > b;
	return ia < ib;
}
#define TOPK(T, SUF, I, IS)                                                                              \
	extern "C" __global__ void topk_##SUF##_##IS(T *__restrict__ vals, I *__restrict__ idx,            \
		const T *__restrict__ x, i64 rows, i64 n, i64 k) {                                         \
		typedef Cm<T>::t C;                                                                        \
		typedef TkSh<C>::t S;                                                                      \
		i64 row = (i64)blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);                        \
		int lane = threadIdx.x & 31;                                                               \
		if (row >= rows) return;                                                                   \
		const T *p = x + row * n;                                                                  \
		C pv = (C)0;                                                                               \
		i64 pi = -1;                                                                               \
		for (i64 j = 0; j < k; j++) {                                                              \
			C bv = (C)0;                                                                       \
			i64 bi = -1;                                                                       \
			for (i64 i = lane; i < n; i += 32) {                                               \
				C v = ld(p[i]);                                                            \
				if (pi >= 0 && !tk_before(pv, pi, v, i)) continue;                         \
				if (bi < 0 || tk_before(v, i, bv, bi)) {                                   \
					bv = v;                                                            \
					bi = i;                                                            \
				}                                                                          \
			}                                                                                  \
			for (int s = 16; s > 0; s >>= 1) {                                                 \
				C ov = (C)__shfl_xor_sync(0xffffffffu, (S)bv, s);                          \
				i64 oi = __shfl_xor_sync(0xffffffffu, bi, s);                              \
				if (oi >= 0 && (bi < 0 || tk_before(ov, oi, bv, bi))) {                    \
					bv = ov;                                                           \
					bi = oi;                                                           \
				}                                                                          \
			}                                                                                  \
			if (lane == 0) {                                                                   \
				vals[row * k + j] = p[bi];                                                 \
				idx[row * k + j] = (I)bi;                                                  \
			}                                                                                  \
			pv = bv;                                                                           \
			pi = bi;                                                                           \
		}                                                                                          \
	}
#define TOPK_I(T, SUF) TOPK(T, SUF, int, i32) TOPK(T, SUF, i64, i64) TOPK(T, SUF, i16, i16)
REALS(TOPK_I)
