// Elementwise kernels: binary ops with broadcasting, unary ops, BiasAdd,
// Cast and Fill. Names: <kind>_<op>_<type>, types f32 f64 i32 i64 (u8 for
// bool).

struct Bcast {
	i64 rank;
	i64 out[MAXR]; // output dims
	i64 sa[MAXR];  // element stride of a per output dim (0: broadcast)
	i64 sb[MAXR];
};

template <typename T> __device__ __forceinline__ T op_add(T a, T b) { return a + b; }
template <typename T> __device__ __forceinline__ T op_sub(T a, T b) { return a - b; }
template <typename T> __device__ __forceinline__ T op_mul(T a, T b) { return a * b; }
template <typename T> __device__ __forceinline__ T op_div(T a, T b) { return a / b; }
// NaN propagates from either side, as TF's CPU kernels do.
template <typename T> __device__ __forceinline__ T op_max(T a, T b) { return (a != a || a > b) ? a : b; }
template <typename T> __device__ __forceinline__ T op_min(T a, T b) { return (a != a || a < b) ? a : b; }

// bin_*: same shapes, or one side a single element (sa or sb is 0).
// binb_*: general broadcasting through Bcast.
#define BINARY(NAME, T, SUF)                                                                             \
	extern "C" __global__ void bin_##NAME##_##SUF(T *__restrict__ o, const T *__restrict__ a,       \
		const T *__restrict__ b, i64 n, int sa, int sb) {                                        \
		GRID_LOOP(i, n) o[i] = op_##NAME<T>(a[i * sa], b[i * sb]);                               \
	}                                                                                                \
	extern "C" __global__ void binb_##NAME##_##SUF(T *__restrict__ o, const T *__restrict__ a,      \
		const T *__restrict__ b, i64 n, Bcast bc) {                                              \
		GRID_LOOP(i, n) {                                                                        \
			i64 r = i, ia = 0, ib = 0;                                                       \
			for (int d = (int)bc.rank - 1; d >= 0; d--) {                                    \
				i64 q = r / bc.out[d];                                                   \
				i64 x = r - q * bc.out[d];                                               \
				r = q;                                                                   \
				ia += x * bc.sa[d];                                                      \
				ib += x * bc.sb[d];                                                      \
			}                                                                                \
			o[i] = op_##NAME<T>(a[ia], b[ib]);                                               \
		}                                                                                        \
	}

// binr_*: one operand (vec) is a row of c elements repeated along the
// other (full): o[i] = full[i] op vec[i % c], operands swapped when flip.
// Index arithmetic is 32-bit when the tensor allows (a 64-bit division
// costs several times more).
#define BINROW(NAME, T, SUF)                                                                             \
	extern "C" __global__ void binr_##NAME##_##SUF(T *__restrict__ o, const T *__restrict__ full,   \
		const T *__restrict__ vec, i64 n, i64 c, int flip) {                                     \
		bool narrow = n < 4294967296LL;                                                          \
		GRID_LOOP(i, n) {                                                                        \
			i64 j = narrow ? (i64)((u32)i % (u32)c) : i % c;                                 \
			T f = full[i], v = vec[j];                                                       \
			o[i] = flip ? op_##NAME<T>(v, f) : op_##NAME<T>(f, v);                           \
		}                                                                                        \
	}

#define BIN2(NAME, T, SUF) BINARY(NAME, T, SUF) BINROW(NAME, T, SUF)
#define BINARY_ALL(T, SUF) BIN2(add, T, SUF) BIN2(sub, T, SUF) BIN2(mul, T, SUF) \
	BIN2(max, T, SUF) BIN2(min, T, SUF)

BINARY_ALL(float, f32)
BINARY_ALL(double, f64)
BINARY_ALL(int, i32)
BINARY_ALL(i64, i64)
BIN2(div, float, f32)
BIN2(div, double, f64)

// Unary ops. Relu keeps NaN, as TF's does.
__device__ __forceinline__ float relu_(float x) { return (x > 0.f || x != x) ? x : 0.f; }
__device__ __forceinline__ double relu_(double x) { return (x > 0.0 || x != x) ? x : 0.0; }
__device__ __forceinline__ int relu_(int x) { return x > 0 ? x : 0; }
__device__ __forceinline__ i64 relu_(i64 x) { return x > 0 ? x : 0; }
__device__ __forceinline__ float sigmoid_(float x) { return 1.f / (1.f + expf(-x)); }
__device__ __forceinline__ double sigmoid_(double x) { return 1.0 / (1.0 + exp(-x)); }
__device__ __forceinline__ float tanh_(float x) { return tanhf(x); }
__device__ __forceinline__ double tanh_(double x) { return tanh(x); }

#define UNARY(NAME, T, SUF)                                                                              \
	extern "C" __global__ void un_##NAME##_##SUF(T *__restrict__ o, const T *__restrict__ x, i64 n) { \
		GRID_LOOP(i, n) o[i] = NAME##_(x[i]);                                                    \
	}

UNARY(relu, float, f32)
UNARY(relu, double, f64)
UNARY(relu, int, i32)
UNARY(relu, i64, i64)
UNARY(sigmoid, float, f32)
UNARY(sigmoid, double, f64)
UNARY(tanh, float, f32)
UNARY(tanh, double, f64)

// BiasAdd: element i gets bias[(i / inner) % c] (inner is 1 for NHWC).
// relu fuses a following Relu (used by the MatMul+BiasAdd+Relu fallback).
#define BIAS(T, SUF)                                                                                    \
	extern "C" __global__ void bias_##SUF(T *__restrict__ o, const T *__restrict__ x,              \
		const T *__restrict__ b, i64 n, i64 c, i64 inner, int relu) {                           \
		bool narrow = n < 4294967296LL;                                                         \
		GRID_LOOP(i, n) {                                                                       \
			i64 ch = narrow ? (i64)(((u32)i / (u32)inner) % (u32)c) : (i / inner) % c;      \
			T v = x[i] + b[ch];                                                             \
			o[i] = relu ? relu_(v) : v;                                                     \
		}                                                                                       \
	}

BIAS(float, f32)
BIAS(double, f64)
BIAS(int, i32)
BIAS(i64, i64)

// Cast between every numeric dtype and bool. Storage types: f16 and bf16
// are their bits, b a byte. get() widens a source element to a native C
// type (half and bfloat16 to float, as the CPU kernels do); Put<D>
// narrows it: floats to integers as x86-64 does (below), to half and
// bfloat16 through float with round-to-nearest-even, to bool as "not
// zero".
// f16, bf16, i8, i16 and their conversions come from types.cuh.
struct b8 { u8 b; };

template <typename T> __device__ __forceinline__ T get(T v) { return v; }
__device__ __forceinline__ float get(f16 v) { return h2f(v.b); }
__device__ __forceinline__ float get(bf16 v) { return bf2f(v.b); }
__device__ __forceinline__ u8 get(b8 v) { return v.b != 0 ? 1 : 0; }

template <typename T> struct is_fp { static const bool v = false; };
template <> struct is_fp<float> { static const bool v = true; };
template <> struct is_fp<double> { static const bool v = true; };

// Floats to integers as x86-64 converts them (the CPU kernels' reference):
// a value outside the range, or NaN, gives the "integer indefinite" (the
// minimum) of the 32- or 64-bit conversion; narrower types truncate the
// 32-bit result, uint32 the 64-bit one; uint64 converts values of 2^63 and
// up through an offset.
__device__ __forceinline__ int x86_i32(double v) {
	return (v >= -2147483648.0 && v < 2147483648.0) ? (int)v : (int)0x80000000u;
}
__device__ __forceinline__ i64 x86_i64(double v) {
	return (v >= -9223372036854775808.0 && v < 9223372036854775808.0) ? (i64)v : (i64)0x8000000000000000ull;
}
__device__ __forceinline__ u64 x86_u64(double v) {
	if (v < 9223372036854775808.0) return (u64)x86_i64(v);
	return (u64)x86_i64(v - 9223372036854775808.0) | 0x8000000000000000ull;
}

template <typename D> struct Put {
	template <typename V> static __device__ __forceinline__ D f(V v) {
		if constexpr (is_fp<V>::v && !is_fp<D>::v) {
			if constexpr (sizeof(D) == 8 && (D)(-1) > (D)0) {
				return (D)x86_u64((double)v);
			} else if constexpr (sizeof(D) == 8 || (sizeof(D) == 4 && (D)(-1) > (D)0)) {
				return (D)x86_i64((double)v);
			} else {
				return (D)x86_i32((double)v);
			}
		} else {
			return (D)v;
		}
	}
};
template <> struct Put<f16> {
	template <typename V> static __device__ __forceinline__ f16 f(V v) {
		f16 r;
		r.b = f2h((float)v);
		return r;
	}
};
template <> struct Put<bf16> {
	template <typename V> static __device__ __forceinline__ bf16 f(V v) {
		bf16 r;
		r.b = f2bf((float)v);
		return r;
	}
};
template <> struct Put<b8> {
	template <typename V> static __device__ __forceinline__ b8 f(V v) {
		b8 r;
		r.b = v != (V)0 ? 1 : 0;
		return r;
	}
};

#define CAST(S, SS, D, DS)                                                                              \
	extern "C" __global__ void cast_##SS##_##DS(D *__restrict__ o, const S *__restrict__ x, i64 n) { \
		GRID_LOOP(i, n) o[i] = Put<D>::f(get(x[i]));                                             \
	}
#define CAST_FROM(S, SS)                                                                                \
	CAST(S, SS, float, f32) CAST(S, SS, double, f64) CAST(S, SS, f16, f16) CAST(S, SS, bf16, bf16)  \
	CAST(S, SS, i8, i8) CAST(S, SS, i16, i16) CAST(S, SS, int, i32) CAST(S, SS, i64, i64)           \
	CAST(S, SS, u8, u8) CAST(S, SS, u16, u16) CAST(S, SS, u32, u32) CAST(S, SS, u64, u64)           \
	CAST(S, SS, b8, b)

CAST_FROM(float, f32)
CAST_FROM(double, f64)
CAST_FROM(f16, f16)
CAST_FROM(bf16, bf16)
CAST_FROM(i8, i8)
CAST_FROM(i16, i16)
CAST_FROM(int, i32)
CAST_FROM(i64, i64)
CAST_FROM(u8, u8)
CAST_FROM(u16, u16)
CAST_FROM(u32, u32)
CAST_FROM(u64, u64)
CAST_FROM(b8, b)

// Fill: every element gets *v (the value lives in device memory).
#define FILL(T, SUF)                                                                                    \
	extern "C" __global__ void fill_##SUF(T *__restrict__ o, const T *__restrict__ v, i64 n) {     \
		T x = *v;                                                                               \
		GRID_LOOP(i, n) o[i] = x;                                                               \
	}
FILL(u8, 1)
FILL(u16, 2)
FILL(u32, 4)
FILL(u64, 8)
FILL(u128, 16)
