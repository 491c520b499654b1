// Storage and compute types for the kernels that serve every numeric
// dtype (prepended after common.cuh to every program but reduce.cu and
// array.cu: see programs.go). Half and bfloat16 are stored as their bits and computed in
// float, as the CPU kernels do (they round once when storing); bool is a
// byte holding 0 or 1. Integer types compute in themselves, so arithmetic
// wraps to the dtype.

typedef signed char i8;
typedef short i16;
struct f16 { u16 b; };
struct bf16 { u16 b; };

__device__ __forceinline__ float h2f(u16 h) {
	float f;
	asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
	return f;
}
__device__ __forceinline__ u16 f2h(float f) {
	u16 h;
	asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f));
	return h;
}
__device__ __forceinline__ float bf2f(u16 h) { return __uint_as_float((u32)h << 16); }
__device__ __forceinline__ u16 f2bf(float f) {
	u32 b = __float_as_uint(f);
	if ((b & 0x7fffffffu) > 0x7f800000u) return (u16)((b >> 16) | 0x40); // NaN stays a quiet NaN
	b += 0x7fffu + ((b >> 16) & 1u);
	return (u16)(b >> 16);
}

// Cm<T>::t is the type T computes in.
template <typename T> struct Cm { typedef T t; };
template <> struct Cm<f16> { typedef float t; };
template <> struct Cm<bf16> { typedef float t; };

template <typename T> __device__ __forceinline__ T ld(T v) { return v; }
__device__ __forceinline__ float ld(f16 v) { return h2f(v.b); }
__device__ __forceinline__ float ld(bf16 v) { return bf2f(v.b); }

template <typename T> struct St {
	static __device__ __forceinline__ T f(typename Cm<T>::t v) { return (T)v; }
};
template <> struct St<f16> {
	static __device__ __forceinline__ f16 f(float v) {
		f16 r;
		r.b = f2h(v);
		return r;
	}
};
template <> struct St<bf16> {
	static __device__ __forceinline__ bf16 f(float v) {
		bf16 r;
		r.b = f2bf(v);
		return r;
	}
};
template <typename T> __device__ __forceinline__ T st(typename Cm<T>::t v) { return St<T>::f(v); }

// rnd<T> rounds a compute value to T's precision and back (FloorDiv of
// half rounds the quotient to half first, as TF does).
template <typename T> __device__ __forceinline__ typename Cm<T>::t rnd(typename Cm<T>::t v) { return ld(st<T>(v)); }

template <typename C> struct Lim;
template <> struct Lim<float> {
	static __device__ __forceinline__ float lo() { return __int_as_float(0xff800000); }
	static __device__ __forceinline__ float hi() { return __int_as_float(0x7f800000); }
};
template <> struct Lim<double> {
	static __device__ __forceinline__ double lo() { return __longlong_as_double(0xfff0000000000000ll); }
	static __device__ __forceinline__ double hi() { return __longlong_as_double(0x7ff0000000000000ll); }
};
template <> struct Lim<i8> {
	static __device__ __forceinline__ i8 lo() { return -128; }
	static __device__ __forceinline__ i8 hi() { return 127; }
};
template <> struct Lim<i16> {
	static __device__ __forceinline__ i16 lo() { return -32768; }
	static __device__ __forceinline__ i16 hi() { return 32767; }
};
template <> struct Lim<int> {
	static __device__ __forceinline__ int lo() { return (int)0x80000000u; }
	static __device__ __forceinline__ int hi() { return 0x7fffffff; }
};
template <> struct Lim<i64> {
	static __device__ __forceinline__ i64 lo() { return (i64)0x8000000000000000ull; }
	static __device__ __forceinline__ i64 hi() { return 0x7fffffffffffffffll; }
};
template <> struct Lim<u8> {
	static __device__ __forceinline__ u8 lo() { return 0; }
	static __device__ __forceinline__ u8 hi() { return 0xff; }
};
template <> struct Lim<u16> {
	static __device__ __forceinline__ u16 lo() { return 0; }
	static __device__ __forceinline__ u16 hi() { return 0xffff; }
};
template <> struct Lim<u32> {
	static __device__ __forceinline__ u32 lo() { return 0; }
	static __device__ __forceinline__ u32 hi() { return 0xffffffffu; }
};
template <> struct Lim<u64> {
	static __device__ __forceinline__ u64 lo() { return 0; }
	static __device__ __forceinline__ u64 hi() { return 0xffffffffffffffffull; }
};

// Type lists: X(T, SUF) for each dtype of a set.
#define FLOATS(X) X(float, f32) X(double, f64) X(f16, f16) X(bf16, bf16)
#define SINTS(X) X(i8, i8) X(i16, i16) X(int, i32) X(i64, i64)
#define UINTS(X) X(u8, u8) X(u16, u16) X(u32, u32) X(u64, u64)
#define REALS(X) FLOATS(X) SINTS(X) UINTS(X)
