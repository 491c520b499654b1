// Reductions for every dtype (Prod, Max, Min, All, Any, and the Sum/Mean
// dtypes reduce.cu lacks), ArgMax/ArgMin, LogSoftmax and half/bfloat16
// Softmax.
//
// A reduction arrives as kept dims and reduced dims with their input
// strides (RedMeta, as reduce.cu's). r<op>_w_<t>: one warp per output,
// lanes over the reduced index space (the innermost dim is reduced, so
// loads are coalesced along it); r<op>_t_<t>: one thread per output (the
// innermost dim is kept, so neighbouring threads read neighbouring
// elements). Accumulators follow the CPU kernels: double for float sums,
// means and products, 64 bits for integers (wrapping to the dtype), the
// compute type for Max/Min with NaN propagating. An empty reduction
// writes the identity: 0, 1, the dtype's lowest or highest value (-inf or
// +inf for floats), true for All, false for Any, NaN or 0 for Mean.

struct RedMeta {
	i64 krank;
	i64 kdims[MAXR];
	i64 kstr[MAXR];
	i64 rrank;
	i64 rdims[MAXR];
	i64 rstr[MAXR];
};

__device__ __forceinline__ i64 kept_base(const RedMeta &m, i64 out) {
	i64 base = 0, q = out;
	for (int d = (int)m.krank - 1; d >= 0; d--) {
		i64 k = q % m.kdims[d];
		q /= m.kdims[d];
		base += k * m.kstr[d];
	}
	return base;
}

__device__ __forceinline__ i64 red_off(const RedMeta &m, i64 j) {
	if (m.rrank == 1) return j * m.rstr[0];
	i64 off = 0, q = j;
	for (int d = (int)m.rrank - 1; d >= 0; d--) {
		i64 k = q % m.rdims[d];
		q /= m.rdims[d];
		off += k * m.rstr[d];
	}
	return off;
}

// Acc<T>: accumulator of sums and products; Wide<T>: Max/Min's.
template <typename T> struct Acc { typedef i64 t; };
template <> struct Acc<float> { typedef double t; };
template <> struct Acc<double> { typedef double t; };
template <> struct Acc<f16> { typedef double t; };
template <> struct Acc<bf16> { typedef double t; };
template <> struct Acc<u8> { typedef u64 t; };
template <> struct Acc<u16> { typedef u64 t; };
template <> struct Acc<u32> { typedef u64 t; };
template <> struct Acc<u64> { typedef u64 t; };

template <typename A> __device__ __forceinline__ A rmax(A a, A b) {
	if (a != a) return a;
	if (b != b) return b;
	return a > b ? a : b;
}
template <typename A> __device__ __forceinline__ A rmin(A a, A b) {
	if (a != a) return a;
	if (b != b) return b;
	return a < b ? a : b;
}

// Each op: A (its accumulator for T), id, f (combine), fin (to T).
template <typename T> struct OSum {
	typedef typename Acc<T>::t A;
	static __device__ __forceinline__ A id() { return (A)0; }
	static __device__ __forceinline__ A f(A a, A b) { return a + b; }
	static __device__ __forceinline__ T fin(A a, i64) { return st<T>((typename Cm<T>::t)a); }
};
template <typename T> struct OMean {
	typedef typename Acc<T>::t A;
	static __device__ __forceinline__ A id() { return (A)0; }
	static __device__ __forceinline__ A f(A a, A b) { return a + b; }
	static __device__ __forceinline__ T fin(A a, i64 n) {
		if constexpr (sizeof(A) == 8 && (A)0.5 == (A)0) { // integers: 0 for an empty mean
			return st<T>((typename Cm<T>::t)(n == 0 ? (A)0 : a / (A)n));
		} else {
			return st<T>((typename Cm<T>::t)(a / (A)n));
		}
	}
};
template <typename T> struct OProd {
	typedef typename Acc<T>::t A;
	static __device__ __forceinline__ A id() { return (A)1; }
	static __device__ __forceinline__ A f(A a, A b) { return a * b; }
	static __device__ __forceinline__ T fin(A a, i64) { return st<T>((typename Cm<T>::t)a); }
};
template <typename T> struct OMax {
	typedef typename Cm<T>::t A;
	static __device__ __forceinline__ A id() { return Lim<A>::lo(); }
	static __device__ __forceinline__ A f(A a, A b) { return rmax(a, b); }
	static __device__ __forceinline__ T fin(A a, i64) { return st<T>(a); }
};
template <typename T> struct OMin {
	typedef typename Cm<T>::t A;
	static __device__ __forceinline__ A id() { return Lim<A>::hi(); }
	static __device__ __forceinline__ A f(A a, A b) { return rmin(a, b); }
	static __device__ __forceinline__ T fin(A a, i64) { return st<T>(a); }
};
template <typename T> struct OAll {
	typedef int A;
	static __device__ __forceinline__ A id() { return 1; }
	static __device__ __forceinline__ A f(A a, A b) { return a && b; }
	static __device__ __forceinline__ T fin(A a, i64) { return (T)a; }
};
template <typename T> struct OAny {
	typedef int A;
	static __device__ __forceinline__ A id() { return 0; }
	static __device__ __forceinline__ A f(A a, A b) { return a || b; }
	static __device__ __forceinline__ T fin(A a, i64) { return (T)a; }
};

// Shuffles move 32- or 64-bit values; narrow accumulators widen to int.
template <typename A> struct Sh { typedef A t; };
template <> struct Sh<i8> { typedef int t; };
template <> struct Sh<i16> { typedef int t; };
template <> struct Sh<u8> { typedef int t; };
template <> struct Sh<u16> { typedef int t; };

template <typename O> __device__ __forceinline__ typename O::A warp_red(typename O::A v) {
	typedef typename Sh<typename O::A>::t S;
	for (int o = 16; o > 0; o >>= 1) v = O::f(v, (typename O::A)__shfl_xor_sync(0xffffffffu, (S)v, o));
	return v;
}

template <typename T, typename O>
__device__ __forceinline__ void red_warp(T *__restrict__ o, const T *__restrict__ x, i64 nout, i64 count, const RedMeta &m) {
	i64 out = (i64)blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
	int lane = threadIdx.x & 31;
	if (out >= nout) return;
	const T *p = x + kept_base(m, out);
	typename O::A acc = O::id();
	for (i64 j = lane; j < count; j += 32) acc = O::f(acc, (typename O::A)ld(p[red_off(m, j)]));
	acc = warp_red<O>(acc);
	if (lane == 0) o[out] = O::fin(acc, count);
}

template <typename T, typename O>
__device__ __forceinline__ void red_thread(T *__restrict__ o, const T *__restrict__ x, i64 nout, i64 count, const RedMeta &m) {
	GRID_LOOP(out, nout) {
		const T *p = x + kept_base(m, out);
		typename O::A acc = O::id();
		for (i64 j = 0; j < count; j++) acc = O::f(acc, (typename O::A)ld(p[red_off(m, j)]));
		o[out] = O::fin(acc, count);
	}
}

#define RED(OP, OPS, T, SUF)                                                                             \
	extern "C" __global__ void r##OP##_w_##SUF(T *__restrict__ o, const T *__restrict__ x, i64 nout,  \
		i64 count, RedMeta m) {                                                                    \
		red_warp<T, OPS<T> >(o, x, nout, count, m);                                                \
	}                                                                                                  \
	extern "C" __global__ void r##OP##_t_##SUF(T *__restrict__ o, const T *__restrict__ x, i64 nout,  \
		i64 count, RedMeta m) {                                                                    \
		red_thread<T, OPS<T> >(o, x, nout, count, m);                                              \
	}

#define RED_PMM(T, SUF) RED(prod, OProd, T, SUF) RED(max, OMax, T, SUF) RED(min, OMin, T, SUF)
REALS(RED_PMM)
#define RED_SM(T, SUF) RED(sum, OSum, T, SUF) RED(mean, OMean, T, SUF)
RED_SM(f16, f16) RED_SM(bf16, bf16) RED_SM(i8, i8) RED_SM(i16, i16) UINTS(RED_SM)
RED(all, OAll, u8, b) RED(any, OAny, u8, b)

// ArgMax/ArgMin over the middle dim of [outer, n, inner]: the first
// index of the extreme value; a NaN beats every number and the first
// NaN wins, as the CPU kernel scans.
template <typename C, bool MAX> __device__ __forceinline__ bool better(C v, C best) {
	if (best != best) return false;
	if (v != v) return true;
	return MAX ? v > best : v < best;
}

#define ARG(NAME, MAX, T, SUF, I, IS)                                                                    \
	extern "C" __global__ void NAME##_t_##SUF##_##IS(I *__restrict__ o, const T *__restrict__ x,       \
		i64 outer, i64 n, i64 inner) {                                                             \
		GRID_LOOP(t, outer * inner) {                                                              \
			i64 oi = t / inner, j = t - oi * inner;                                            \
			const T *p = x + oi * n * inner + j;                                               \
			typename Cm<T>::t best = ld(p[0]);                                                 \
			i64 bi = 0;                                                                        \
			for (i64 k = 1; k < n; k++) {                                                      \
				typename Cm<T>::t v = ld(p[k * inner]);                                    \
				if (better<typename Cm<T>::t, MAX>(v, best)) {                             \
					best = v;                                                          \
					bi = k;                                                            \
				}                                                                          \
			}                                                                                  \
			o[t] = (I)bi;                                                                      \
		}                                                                                          \
	}                                                                                                  \
	extern "C" __global__ void NAME##_w_##SUF##_##IS(I *__restrict__ o, const T *__restrict__ x,       \
		i64 outer, i64 n) {                                                                        \
		i64 row = (i64)blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);                        \
		int lane = threadIdx.x & 31;                                                               \
		if (row >= outer) return;                                                                  \
		typedef typename Cm<T>::t C;                                                               \
		typedef typename Sh<C>::t S;                                                               \
		const T *p = x + row * n;                                                                  \
		C best = ld(p[0]);                                                                         \
		i64 bi = -1;                                                                               \
		for (i64 k = lane; k < n; k += 32) {                                                       \
			C v = ld(p[k]);                                                                    \
			if (bi < 0 || better<C, MAX>(v, best)) {                                           \
				best = v;                                                                  \
				bi = k;                                                                    \
			}                                                                                  \
		}                                                                                          \
		for (int s = 16; s > 0; s >>= 1) {                                                         \
			C v = (C)__shfl_xor_sync(0xffffffffu, (S)best, s);                                 \
			i64 vi = __shfl_xor_sync(0xffffffffu, bi, s);                                      \
			if (vi < 0) continue;                                                              \
			bool take = bi < 0 || better<C, MAX>(v, best) ||                                   \
				(vi < bi && !better<C, MAX>(best, v));                                     \
			if (take) {                                                                        \
				best = v;                                                                  \
				bi = vi;                                                                   \
			}                                                                                  \
		}                                                                                          \
		if (lane == 0) o[row] = (I)bi;                                                             \
	}

#define ARG_IDX(NAME, MAX, T, SUF)                                                                       \
	ARG(NAME, MAX, T, SUF, i64, i64) ARG(NAME, MAX, T, SUF, int, i32) ARG(NAME, MAX, T, SUF, i16, i16) \
	ARG(NAME, MAX, T, SUF, u16, u16)
#define ARG_OUT(T, SUF) ARG_IDX(argmax, true, T, SUF) ARG_IDX(argmin, false, T, SUF)
REALS(ARG_OUT)
ARG_OUT(u8, b)

// LogSoftmax (every float dtype) and Softmax (half, bfloat16) over the
// last dim: one block per row, in double as the CPU kernels compute.
template <typename T, bool LOG>
__device__ __forceinline__ void softmax_row(T *__restrict__ o, const T *__restrict__ x, i64 d) {
	__shared__ double scratch[32];
	const T *p = x + (i64)blockIdx.x * d;
	T *q = o + (i64)blockIdx.x * d;
	double mx = (double)ld(p[0]);
	for (i64 j = threadIdx.x; j < d; j += blockDim.x) {
		double v = (double)ld(p[j]);
		mx = (v > mx || v != v) ? v : mx;
	}
	mx = block_max(mx, scratch);
	double sum = 0;
	for (i64 j = threadIdx.x; j < d; j += blockDim.x) sum += exp((double)ld(p[j]) - mx);
	sum = block_sum(sum, scratch);
	if (LOG) {
		double ls = log(sum);
		for (i64 j = threadIdx.x; j < d; j += blockDim.x) q[j] = st<T>((typename Cm<T>::t)((double)ld(p[j]) - mx - ls));
	} else {
		for (i64 j = threadIdx.x; j < d; j += blockDim.x) q[j] = st<T>((typename Cm<T>::t)(exp((double)ld(p[j]) - mx) / sum));
	}
}
#define LOGSOFTMAX(T, SUF)                                                                               \
	extern "C" __global__ void logsoftmax_##SUF(T *__restrict__ o, const T *__restrict__ x, i64 rows, \
		i64 d) {                                                                                   \
		softmax_row<T, true>(o, x, d);                                                             \
	}
FLOATS(LOGSOFTMAX)
extern "C" __global__ void softmax2_f16(f16 *__restrict__ o, const f16 *__restrict__ x, i64 rows, i64 d) {
	softmax_row<f16, false>(o, x, d);
}
extern "C" __global__ void softmax2_bf16(bf16 *__restrict__ o, const bf16 *__restrict__ x, i64 rows, i64 d) {
	softmax_row<bf16, false>(o, x, d);
}
