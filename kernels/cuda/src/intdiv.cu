// Integer Div, TruncateDiv, FloorDiv and Pow for the dtypes TF 2.15 runs
// them on the GPU (int16, int64, uint8, uint16; Pow int64 only), with TF's
// GPU results where the CPU kernel reports an error. TF's GPU kernels are
// generated from MHLO, whose integer division is total: x / 0 is -1 (all
// bits set, so the maximum of an unsigned dtype) and INT_MIN / -1 is
// INT_MIN. FloorDiv of signed dtypes is q = x / y, then q - 1 where
// q * y != x and the signs differ (with q = -1 for y = 0, so -2 for a
// negative x); of unsigned dtypes it is Div. Pow with a negative exponent
// is 1 for a base of 1, +-1 for -1 (by the exponent's parity), else 0;
// otherwise the power wraps, computed exactly as the CPU kernel does (TF's
// generated kernel reads only the exponent's low 6 bits, so it differs
// for exponents of 64 and more).
//
// Names: i_<op>_<suffix>(o, a, b, n, Bc), broadcasting as cwise.cu.

// Lowest value and unsigned twin of each dtype.
template <typename T> struct IntT;
template <> struct IntT<i16> { typedef u16 U; static __device__ __forceinline__ i16 lo() { return (i16)-32768; } };
template <> struct IntT<i64> { typedef u64 U; static __device__ __forceinline__ i64 lo() { return (i64)(1ull << 63); } };

// MHLO's total division.
template <typename T> __device__ __forceinline__ T sdiv(T x, T y) {
	if (y == 0) return (T)-1;
	if (x == IntT<T>::lo() && y == (T)-1) return x;
	return (T)(x / y);
}
template <typename T> __device__ __forceinline__ T udiv(T x, T y) { return y == 0 ? (T)~(T)0 : (T)(x / y); }

template <typename T> __device__ __forceinline__ T sfloordiv(T x, T y) {
	typedef typename IntT<T>::U U;
	T q = sdiv(x, y);
	T back = (T)(U)((U)q * (U)y); // wraps, as MHLO's multiply
	return (back != x && ((x < 0) != (y < 0))) ? (T)(U)((U)q - 1) : q;
}

__device__ __forceinline__ i64 ipow(i64 x, i64 y) {
	if (y < 0) return x == 1 ? 1 : x == -1 ? ((y & 1) ? -1 : 1) : 0;
	u64 r = 1, b = (u64)x;
	for (u64 e = (u64)y; e; e >>= 1) {
		if (e & 1) r *= b;
		b *= b;
	}
	return (i64)r;
}

#define IDIV(NAME, F, T, SUF)                                                                            \
	extern "C" __global__ void i_##NAME##_##SUF(T *__restrict__ o, const T *__restrict__ a,           \
		const T *__restrict__ b, i64 n, Bc bc) {                                                   \
		GRID_LOOP(i, n) {                                                                          \
			i64 ia, ib;                                                                        \
			bc_index(bc, i, ia, ib);                                                           \
			o[i] = F(a[ia], b[ib]);                                                            \
		}                                                                                          \
	}

IDIV(div, sdiv, i16, i16)
IDIV(div, sdiv, i64, i64)
IDIV(div, udiv, u8, u8)
IDIV(div, udiv, u16, u16)
IDIV(floordiv, sfloordiv, i16, i16)
IDIV(floordiv, sfloordiv, i64, i64)
IDIV(pow, ipow, i64, i64)
