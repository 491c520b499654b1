// Unary math and activations, per dtype: u_<op>_<suffix>(o, x, n).
// Each op is an overload set over compute types (float, double, and the
// integer types where the CPU registers them); half and bfloat16 compute
// in float. Semantics follow the CPU kernels: Sign keeps NaN and -0,
// Round is half to even, Relu6 keeps NaN, integer Neg/Abs/Square wrap.

template <typename C> __device__ __forceinline__ C f_abs(C x) { return x < (C)0 ? (C)(0 - x) : x; }
__device__ __forceinline__ float f_abs(float x) { return fabsf(x); }
__device__ __forceinline__ double f_abs(double x) { return fabs(x); }

template <typename C> __device__ __forceinline__ C f_neg(C x) { return (C)(0 - x); }
template <typename C> __device__ __forceinline__ C f_sign(C x) { return x > (C)0 ? (C)1 : (x < (C)0 ? (C)-1 : x); }
template <typename C> __device__ __forceinline__ C f_square(C x) { return (C)(x * x); }
template <typename C> __device__ __forceinline__ C f_recip(C x) { return (C)1 / x; }

__device__ __forceinline__ float f_sqrt(float x) { return sqrtf(x); }
__device__ __forceinline__ double f_sqrt(double x) { return sqrt(x); }
__device__ __forceinline__ float f_rsqrt(float x) { return 1.f / sqrtf(x); }
__device__ __forceinline__ double f_rsqrt(double x) { return 1.0 / sqrt(x); }
__device__ __forceinline__ float f_exp(float x) { return expf(x); }
__device__ __forceinline__ double f_exp(double x) { return exp(x); }
__device__ __forceinline__ float f_expm1(float x) { return expm1f(x); }
__device__ __forceinline__ double f_expm1(double x) { return expm1(x); }
__device__ __forceinline__ float f_log(float x) { return logf(x); }
__device__ __forceinline__ double f_log(double x) { return log(x); }
__device__ __forceinline__ float f_log1p(float x) { return log1pf(x); }
__device__ __forceinline__ double f_log1p(double x) { return log1p(x); }
__device__ __forceinline__ float f_sin(float x) { return sinf(x); }
__device__ __forceinline__ double f_sin(double x) { return sin(x); }
__device__ __forceinline__ float f_cos(float x) { return cosf(x); }
__device__ __forceinline__ double f_cos(double x) { return cos(x); }
__device__ __forceinline__ float f_erf(float x) { return erff(x); }
__device__ __forceinline__ double f_erf(double x) { return erf(x); }
__device__ __forceinline__ float f_floor(float x) { return floorf(x); }
__device__ __forceinline__ double f_floor(double x) { return floor(x); }
__device__ __forceinline__ float f_ceil(float x) { return ceilf(x); }
__device__ __forceinline__ double f_ceil(double x) { return ceil(x); }
// rint rounds half to even in the default rounding mode.
__device__ __forceinline__ float f_round(float x) { return rintf(x); }
__device__ __forceinline__ double f_round(double x) { return rint(x); }
template <typename C> __device__ __forceinline__ C f_round(C x) { return x; }
__device__ __forceinline__ float f_tanh(float x) { return tanhf(x); }
__device__ __forceinline__ double f_tanh(double x) { return tanh(x); }
__device__ __forceinline__ float f_sigmoid(float x) { return 1.f / (1.f + expf(-x)); }
__device__ __forceinline__ double f_sigmoid(double x) { return 1.0 / (1.0 + exp(-x)); }

template <typename C> __device__ __forceinline__ C f_relu(C x) { return (x > (C)0 || x != x) ? x : (C)0; }
template <typename C> __device__ __forceinline__ C f_relu6(C x) {
	if (x != x) return x;
	return x < (C)0 ? (C)0 : (x > (C)6 ? (C)6 : x);
}
template <typename C> __device__ __forceinline__ C f_elu(C x) { return x < (C)0 ? f_expm1(x) : x; }
// scale*alpha rounded once (TF's constant), as g_selu and the CPU's.
template <typename C> __device__ __forceinline__ C f_selu(C x) {
	const C scale = (C)1.0507009873554804934193349852946, scale_alpha = (C)1.7580993408473768599402175208123;
	return x < (C)0 ? scale_alpha * f_expm1(x) : scale * x;
}
template <typename C> __device__ __forceinline__ C f_softsign(C x) { return x / ((C)1 + f_abs(x)); }

#define UN(NAME, T, SUF)                                                                                 \
	extern "C" __global__ void u_##NAME##_##SUF(T *__restrict__ o, const T *__restrict__ x, i64 n) { \
		GRID_LOOP(i, n) o[i] = st<T>(f_##NAME(ld(x[i])));                                        \
	}

// Per-op dtype lists (the CPU kernels' sets).
#define UN_FLOAT(NAME) UN(NAME, float, f32) UN(NAME, double, f64) UN(NAME, f16, f16) UN(NAME, bf16, bf16)
#define UN_SINT(NAME) UN(NAME, i8, i8) UN(NAME, i16, i16) UN(NAME, int, i32) UN(NAME, i64, i64)
#define UN_UINT(NAME) UN(NAME, u8, u8) UN(NAME, u16, u16) UN(NAME, u32, u32) UN(NAME, u64, u64)

UN_FLOAT(abs) UN_SINT(abs)
UN_FLOAT(neg) UN_SINT(neg)
UN_FLOAT(sign) UN_SINT(sign)
UN_FLOAT(square) UN_SINT(square) UN_UINT(square)
UN_FLOAT(recip)
UN_FLOAT(sqrt)
UN_FLOAT(rsqrt)
UN_FLOAT(exp)
UN_FLOAT(expm1)
UN_FLOAT(log)
UN_FLOAT(log1p)
UN_FLOAT(sin)
UN_FLOAT(cos)
UN_FLOAT(erf)
UN_FLOAT(floor)
UN_FLOAT(ceil)
UN_FLOAT(round) UN(round, int, i32) UN(round, i64, i64)
UN_FLOAT(relu6) UN_SINT(relu6) UN_UINT(relu6)
UN_FLOAT(elu)
UN_FLOAT(selu)
UN_FLOAT(softsign)
// The dtypes the elementwise program's Relu, Sigmoid and Tanh lack.
UN(relu, f16, f16) UN(relu, bf16, bf16) UN(relu, i8, i8) UN(relu, i16, i16) UN_UINT(relu)
UN(sigmoid, f16, f16) UN(sigmoid, bf16, bf16)
UN(tanh, f16, f16) UN(tanh, bf16, bf16)

// Softplus with TF's cut-offs: thr = log(eps) + 2 of the dtype (host
// computed): x above -thr, e^x below thr, log1p(e^x) between.
#define SOFTPLUS(T, SUF)                                                                                 \
	extern "C" __global__ void u_softplus_##SUF(T *__restrict__ o, const T *__restrict__ x, i64 n,    \
		double thr) {                                                                              \
		typedef Cm<T>::t C;                                                                        \
		C t = (C)thr;                                                                              \
		GRID_LOOP(i, n) {                                                                          \
			C v = ld(x[i]);                                                                    \
			C r = v > -t ? v : (v < t ? f_exp(v) : f_log1p(f_exp(v)));                         \
			o[i] = st<T>(r);                                                                   \
		}                                                                                          \
	}
FLOATS(SOFTPLUS)

// LeakyRelu: x > 0 ? x : x * alpha, alpha already in the dtype (host
// rounded for floats, truncated for integers), passed as double.
#define LEAKY(T, SUF)                                                                                    \
	extern "C" __global__ void u_leaky_##SUF(T *__restrict__ o, const T *__restrict__ x, i64 n,       \
		double alpha) {                                                                            \
		typedef Cm<T>::t C;                                                                        \
		C a = (C)alpha;                                                                            \
		GRID_LOOP(i, n) {                                                                          \
			C v = ld(x[i]);                                                                    \
			o[i] = st<T>(v > (C)0 ? v : (C)(v * a));                                           \
		}                                                                                          \
	}
FLOATS(LEAKY) SINTS(LEAKY)
// Unsigned alphas arrive as their integer value (a double holds every
// value TF's cast of a float can give).
LEAKY(u8, u8) LEAKY(u16, u16) LEAKY(u32, u32) LEAKY(u64, u64)

// Float predicates into bool bytes.
#define PRED(T, SUF)                                                                                     \
	extern "C" __global__ void p_isnan_##SUF(u8 *__restrict__ o, const T *__restrict__ x, i64 n) {   \
		GRID_LOOP(i, n) {                                                                          \
			Cm<T>::t v = ld(x[i]);                                                             \
			o[i] = v != v;                                                                     \
		}                                                                                          \
	}                                                                                                  \
	extern "C" __global__ void p_isinf_##SUF(u8 *__restrict__ o, const T *__restrict__ x, i64 n) {   \
		GRID_LOOP(i, n) {                                                                          \
			Cm<T>::t v = ld(x[i]);                                                             \
			o[i] = v == Lim<Cm<T>::t>::hi() || v == Lim<Cm<T>::t>::lo();                       \
		}                                                                                          \
	}                                                                                                  \
	extern "C" __global__ void p_isfinite_##SUF(u8 *__restrict__ o, const T *__restrict__ x, i64 n) { \
		GRID_LOOP(i, n) {                                                                          \
			Cm<T>::t v = ld(x[i]);                                                             \
			o[i] = v == v && v != Lim<Cm<T>::t>::hi() && v != Lim<Cm<T>::t>::lo();             \
		}                                                                                          \
	}
FLOATS(PRED)

extern "C" __global__ void logical_not(u8 *__restrict__ o, const u8 *__restrict__ x, i64 n) {
	GRID_LOOP(i, n) o[i] = x[i] ? 0 : 1;
}

// Fill with a constant given by its bits (OnesLike).
#define FILLC(T, SZ)                                                                                     \
	extern "C" __global__ void fillc_##SZ(T *__restrict__ o, u64 v, i64 n) {                         \
		T x = (T)v;                                                                                \
		GRID_LOOP(i, n) o[i] = x;                                                                  \
	}
FILLC(u8, 1) FILLC(u16, 2) FILLC(u32, 4) FILLC(u64, 8)

// _MstreamUnaryChain (float32): the ops of c applied in turn to each
// element; codes as math.go's chainOps.
struct Chain {
	i64 n;
	i64 op[16];
};
__device__ __forceinline__ float chain_op(i64 code, float x) {
	switch (code) {
	case 0: return f_neg(x);
	case 1: return f_abs(x);
	case 2: return f_square(x);
	case 3: return f_sqrt(x);
	case 4: return f_rsqrt(x);
	case 5: return f_recip(x);
	case 6: return f_exp(x);
	case 7: return f_expm1(x);
	case 8: return f_log(x);
	case 9: return f_sigmoid(x);
	case 10: return f_tanh(x);
	case 11: return f_relu(x);
	case 12: return f_relu6(x);
	case 13: return f_floor(x);
	case 14: return f_ceil(x);
	case 15: return f_round(x);
	case 16: return f_elu(x);
	case 17: return f_selu(x);
	case 18: return f_softsign(x);
	}
	return x;
}
extern "C" __global__ void uchain_f32(float *__restrict__ o, const float *__restrict__ x, i64 n, Chain c) {
	GRID_LOOP(i, n) {
		float v = x[i];
		for (i64 k = 0; k < c.n; k++) v = chain_op(c.op[k], v);
		o[i] = v;
	}
}

// The activation gradients, two same-size inputs in the op's order
// ((dy, x or y) for ReluGrad..LeakyReluGrad, (y, dy) for SigmoidGrad..
// ReciprocalGrad) and p, LeakyReluGrad's alpha (unused by the others);
// TF's formulas, a zero dy giving zero for Sqrt/Rsqrt/ReciprocalGrad.
template <typename C> __device__ __forceinline__ C g_relu(C g, C x, C) { return g * (x > (C)0 ? (C)1 : (C)0); }
template <typename C> __device__ __forceinline__ C g_relu6(C g, C x, C) {
	return g * ((x > (C)0 && x < (C)6) ? (C)1 : (C)0);
}
template <typename C> __device__ __forceinline__ C g_elu(C g, C y, C) { return y < (C)0 ? g * (y + (C)1) : g; }
// y + scale*alpha cancels for y near -scale*alpha: it is formed in double
// with scale*alpha rounded once (TF's constant; the product of the two
// rounded doubles is an ulp lower), as the CPU kernel does, so that the
// two devices agree there.
template <typename C> __device__ __forceinline__ C g_selu(C g, C y, C) {
	const double scale = 1.0507009873554804934193349852946, scale_alpha = 1.7580993408473768599402175208123;
	return y < (C)0 ? (C)((double)g * ((double)y + scale_alpha)) : (C)((double)g * scale);
}
template <typename C> __device__ __forceinline__ C g_softplus(C g, C x, C) { return g / (f_exp(-x) + (C)1); }
template <typename C> __device__ __forceinline__ C g_leaky(C g, C x, C a) { return x > (C)0 ? g : g * a; }
template <typename C> __device__ __forceinline__ C g_sigmoid(C y, C dy, C) { return dy * y * ((C)1 - y); }
template <typename C> __device__ __forceinline__ C g_tanh(C y, C dy, C) { return dy * ((C)1 - y * y); }
template <typename C> __device__ __forceinline__ C g_sqrt(C y, C dy, C) { return dy == (C)0 ? (C)0 : ((C)0.5 * dy) / y; }
template <typename C> __device__ __forceinline__ C g_rsqrt(C y, C dy, C) {
	return dy == (C)0 ? (C)0 : (C)-0.5 * (dy * y) * (y * y);
}
template <typename C> __device__ __forceinline__ C g_recip(C y, C dy, C) { return dy == (C)0 ? (C)0 : -y * y * dy; }

#define GRADB(NAME, T, SUF)                                                                              \
	extern "C" __global__ void g_##NAME##_##SUF(T *__restrict__ o, const T *__restrict__ a,           \
		const T *__restrict__ b, i64 n, double p) {                                                \
		typedef Cm<T>::t C;                                                                        \
		C pc = (C)p;                                                                               \
		GRID_LOOP(i, n) o[i] = st<T>(g_##NAME<C>(ld(a[i]), ld(b[i]), pc));                          \
	}
#define GRAD_FLOAT(NAME) GRADB(NAME, float, f32) GRADB(NAME, double, f64) GRADB(NAME, f16, f16) GRADB(NAME, bf16, bf16)
GRAD_FLOAT(relu) GRAD_FLOAT(relu6) GRAD_FLOAT(elu) GRAD_FLOAT(selu) GRAD_FLOAT(softplus) GRAD_FLOAT(leaky)
GRAD_FLOAT(sigmoid) GRAD_FLOAT(tanh) GRAD_FLOAT(sqrt) GRAD_FLOAT(rsqrt) GRAD_FLOAT(recip)
