// Binary elementwise ops with numpy broadcasting beyond elementwise.cu's:
// the dtypes it lacks for Add/Sub/Mul/Maximum/Minimum/RealDiv, Pow,
// SquaredDifference, the float division family, DivNoNan, comparisons and
// logical ops (bool outputs), then Select/SelectV2, ClipByValue and AddN.
//
// Names: c_<op>_<suffix>(o, a, b, n, Bc) (Bc and bc_index: bcast.cuh). The Go side has merged the
// broadcast (elementwise.go's collapse): rank 1 covers equal shapes and a
// scalar on either side (strides 1 or 0), so that case skips the index
// arithmetic.

// Ops over compute values; O is the output's compute type.
template <typename C> __device__ __forceinline__ C b_add(C a, C b) { return (C)(a + b); }
template <typename C> __device__ __forceinline__ C b_sub(C a, C b) { return (C)(a - b); }
template <typename C> __device__ __forceinline__ C b_mul(C a, C b) { return (C)(a * b); }
template <typename C> __device__ __forceinline__ C b_div(C a, C b) { return a / b; }
template <typename C> __device__ __forceinline__ C b_max(C a, C b) { return (a != a || a > b) ? a : b; }
template <typename C> __device__ __forceinline__ C b_min(C a, C b) { return (a != a || a < b) ? a : b; }
__device__ __forceinline__ float b_pow(float a, float b) { return powf(a, b); }
__device__ __forceinline__ double b_pow(double a, double b) { return pow(a, b); }
template <typename C> __device__ __forceinline__ C b_sqdiff(C a, C b) {
	C d = (C)(a - b);
	return (C)(d * d);
}
__device__ __forceinline__ float ffloor(float x) { return floorf(x); }
__device__ __forceinline__ double ffloor(double x) { return floor(x); }
__device__ __forceinline__ float ftrunc(float x) { return truncf(x); }
__device__ __forceinline__ double ftrunc(double x) { return trunc(x); }
__device__ __forceinline__ float ffmod(float a, float b) { return fmodf(a, b); }
__device__ __forceinline__ double ffmod(double a, double b) { return fmod(a, b); }
template <typename C> __device__ __forceinline__ C b_floormod(C a, C b) {
	C m = ffmod(a, b);
	if (m != (C)0 && ((b < (C)0) != (m < (C)0))) m += b;
	return m;
}
template <typename C> __device__ __forceinline__ C b_truncmod(C a, C b) { return ffmod(a, b); }
template <typename C> __device__ __forceinline__ C b_divnonan(C a, C b) { return b == (C)0 ? (C)0 : a / b; }
template <typename C> __device__ __forceinline__ u8 b_eq(C a, C b) { return a == b; }
template <typename C> __device__ __forceinline__ u8 b_ne(C a, C b) { return a != b; }
template <typename C> __device__ __forceinline__ u8 b_lt(C a, C b) { return a < b; }
template <typename C> __device__ __forceinline__ u8 b_le(C a, C b) { return a <= b; }
template <typename C> __device__ __forceinline__ u8 b_gt(C a, C b) { return a > b; }
template <typename C> __device__ __forceinline__ u8 b_ge(C a, C b) { return a >= b; }

// T -> T ops.
#define CW(NAME, T, SUF)                                                                                 \
	extern "C" __global__ void c_##NAME##_##SUF(T *__restrict__ o, const T *__restrict__ a,           \
		const T *__restrict__ b, i64 n, Bc bc) {                                                   \
		GRID_LOOP(i, n) {                                                                          \
			i64 ia, ib;                                                                        \
			bc_index(bc, i, ia, ib);                                                           \
			o[i] = st<T>(b_##NAME(ld(a[ia]), ld(b[ib])));                                      \
		}                                                                                          \
	}

// FloorDiv and TruncateDiv of floats: the quotient is rounded to T first
// (it matters for half and bfloat16, as in TF).
#define CWQ(NAME, RND, T, SUF)                                                                           \
	extern "C" __global__ void c_##NAME##_##SUF(T *__restrict__ o, const T *__restrict__ a,           \
		const T *__restrict__ b, i64 n, Bc bc) {                                                   \
		GRID_LOOP(i, n) {                                                                          \
			i64 ia, ib;                                                                        \
			bc_index(bc, i, ia, ib);                                                           \
			o[i] = st<T>(RND(rnd<T>(ld(a[ia]) / ld(b[ib]))));                                  \
		}                                                                                          \
	}

// T -> bool ops.
#define CWB(NAME, T, SUF)                                                                                \
	extern "C" __global__ void c_##NAME##_##SUF(u8 *__restrict__ o, const T *__restrict__ a,          \
		const T *__restrict__ b, i64 n, Bc bc) {                                                   \
		GRID_LOOP(i, n) {                                                                          \
			i64 ia, ib;                                                                        \
			bc_index(bc, i, ia, ib);                                                           \
			o[i] = b_##NAME(ld(a[ia]), ld(b[ib]));                                             \
		}                                                                                          \
	}

// The arithmetic dtypes elementwise.cu lacks.
#define ARITH(T, SUF) CW(add, T, SUF) CW(sub, T, SUF) CW(mul, T, SUF) CW(max, T, SUF) CW(min, T, SUF)
ARITH(f16, f16) ARITH(bf16, bf16) ARITH(i8, i8) ARITH(i16, i16) UINTS(ARITH)
CW(div, f16, f16) CW(div, bf16, bf16) CW(div, float, f32) CW(div, double, f64)

#define FLOATOPS(T, SUF)                                                                                 \
	CW(pow, T, SUF) CW(sqdiff, T, SUF) CW(floormod, T, SUF) CW(truncmod, T, SUF) CW(divnonan, T, SUF) \
	CWQ(floordiv, ffloor, T, SUF) CWQ(truncdiv, ftrunc, T, SUF)
FLOATS(FLOATOPS)
CW(sqdiff, int, i32) CW(sqdiff, i64, i64)

#define CMP(T, SUF) CWB(eq, T, SUF) CWB(ne, T, SUF) CWB(lt, T, SUF) CWB(le, T, SUF) CWB(gt, T, SUF) CWB(ge, T, SUF)
REALS(CMP)
CWB(eq, u8, b) CWB(ne, u8, b)

template <typename C> __device__ __forceinline__ u8 b_and(C a, C b) { return a && b; }
template <typename C> __device__ __forceinline__ u8 b_or(C a, C b) { return a || b; }
CWB(and, u8, b) CWB(or, u8, b)

// SelectV2 (and Select, mapped onto it): three-way broadcast of cond,
// then and else to the output. Per element size.
struct Bc3 {
	i64 rank;
	i64 out[MAXR];
	i64 sc[MAXR];
	i64 st[MAXR];
	i64 se[MAXR];
};
#define SELECT(T, SZ)                                                                                    \
	extern "C" __global__ void select_##SZ(T *__restrict__ o, const u8 *__restrict__ c,               \
		const T *__restrict__ t, const T *__restrict__ e, i64 n, Bc3 bc) {                         \
		GRID_LOOP(i, n) {                                                                          \
			i64 r = i, ic = 0, it = 0, ie = 0;                                                 \
			for (int d = (int)bc.rank - 1; d >= 0; d--) {                                      \
				i64 q = r / bc.out[d];                                                     \
				i64 x = r - q * bc.out[d];                                                 \
				r = q;                                                                     \
				ic += x * bc.sc[d];                                                        \
				it += x * bc.st[d];                                                        \
				ie += x * bc.se[d];                                                        \
			}                                                                                  \
			o[i] = c[ic] ? t[it] : e[ie];                                                      \
		}                                                                                          \
	}
SELECT(u8, 1) SELECT(u16, 2) SELECT(u32, 4) SELECT(u64, 8) SELECT(u128, 16)

// ClipByValue: lo and hi are scalars (stride 0) or shaped like x.
#define CLIP(T, SUF)                                                                                     \
	extern "C" __global__ void clip_##SUF(T *__restrict__ o, const T *__restrict__ x,                 \
		const T *__restrict__ lo, const T *__restrict__ hi, i64 n, int sl, int sh) {               \
		GRID_LOOP(i, n) {                                                                          \
			Cm<T>::t m = ld(x[i]), h = ld(hi[i * sh]), l = ld(lo[i * sl]);                     \
			if (h < m) m = h;                                                                  \
			if (m < l) m = l;                                                                  \
			o[i] = st<T>(m);                                                                   \
		}                                                                                          \
	}
FLOATS(CLIP) SINTS(CLIP) CLIP(u8, u8) CLIP(u16, u16)

// AddN: up to 8 inputs per launch, added in order, each partial sum
// rounded to T (half and bfloat16 add in the dtype, as TF's do); acc says
// whether o already holds a partial sum.
struct Ptrs8 {
	const void *p[8];
};
#define ADDN(T, SUF)                                                                                     \
	extern "C" __global__ void addn_##SUF(T *__restrict__ o, Ptrs8 in, int k, int acc, i64 n) {       \
		GRID_LOOP(i, n) {                                                                          \
			typedef Cm<T>::t C;                                                                \
			C s = acc ? ld(o[i]) : ld(((const T *)in.p[0])[i]);                                \
			for (int j = acc ? 0 : 1; j < k; j++) s = rnd<T>((C)(s + ld(((const T *)in.p[j])[i])));    \
			o[i] = st<T>(s);                                                                   \
		}                                                                                          \
	}
REALS(ADDN)

// BiasAdd for the dtypes elementwise.cu's bias_* lacks: element i gets
// bias[(i / inner) % c] (inner is 1 for NHWC), added in the compute type.
#define BIAS2(T, SUF)                                                                                    \
	extern "C" __global__ void bias2_##SUF(T *__restrict__ o, const T *__restrict__ x,                \
		const T *__restrict__ b, i64 n, i64 c, i64 inner) {                                        \
		GRID_LOOP(i, n) {                                                                          \
			i64 ch = (i / inner) % c;                                                          \
			o[i] = st<T>((Cm<T>::t)(ld(x[i]) + ld(b[ch])));                                    \
		}                                                                                          \
	}
BIAS2(f16, f16) BIAS2(bf16, bf16) BIAS2(i8, i8) BIAS2(i16, i16) UINTS(BIAS2)
