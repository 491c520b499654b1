// The small-batch GEMM (MatMul, BatchMatMul and _FusedMatMul with few
// rows in the left operand, see gemm.go) and the bias+activation
// epilogue run after a cuBLAS GEMM where cuBLASLt has no such epilogue.
//
// small_gemm_<R>_<dt>: o[b][m,n] = act(op(a)[m,k] · op(b)[k,n] + bias[n]),
// float accumulation. Such a product is bound by reading b (the weights):
// each block of SG_THREADS threads owns cb output columns of R rows
// (grid: x column tiles, y row chunks, z batch) and reads its columns of b
// once per row chunk, coalesced: with b [k,n] neighbouring threads take
// neighbouring columns (c = t % cb, k slice s = t / cb), with b
// transposed [n,k] neighbouring k (s = t % ks, c = t / ks). The R rows of
// a are staged in shared memory a k tile at a time, zero past m; every
// thread keeps R partial sums in registers for its column and k slice
// (split-k inside the block), and the slices are summed in shared memory
// in slice order before the epilogue, so a result does not depend on
// timing.

#define SG_THREADS 256
#define SG_AS 4096 // floats of a staged in shared memory (R * k tile)

// The fused activations, as the CPU's _FusedMatMul: 0 none, 1 Relu,
// 2 Relu6, 3 Elu, 4 LeakyRelu, 5 Tanh, 6 Sigmoid, 7 GeluExact,
// 8 GeluApproximate (gemm.go's actCodes).
__device__ __forceinline__ float sg_act(int act, float v, float alpha) {
	switch (act) {
	case 1: return v > 0.f || v != v ? v : 0.f;
	case 2: return v != v ? v : (v < 0.f ? 0.f : (v > 6.f ? 6.f : v));
	case 3: return v < 0.f ? expm1f(v) : v;
	case 4: return v < 0.f ? v * alpha : v;
	case 5: return tanhf(v);
	case 6: return 1.f / (1.f + expf(-v));
	case 7: return 0.5f * v * (1.f + erff(v * 0.70710678118654752f));
	case 8: return 0.5f * v * (1.f + tanhf(0.79788456080286536f * (v + 0.044715f * v * v * v)));
	}
	return v;
}

template <typename T, int R>
__device__ __forceinline__ void small_gemm(T *__restrict__ o, const T *__restrict__ a, const T *__restrict__ b,
		const T *__restrict__ bias, i64 m, i64 n, i64 k, int ta, int tb, int cb, i64 sa, i64 sb, i64 sc, int act,
		float alpha) {
	__shared__ float as[SG_AS];
	__shared__ float red[SG_THREADS * R];
	const int t = threadIdx.x, ks = SG_THREADS / cb;
	const int c = tb ? t / ks : t % cb, s = tb ? t % ks : t / cb;
	const i64 j = (i64)blockIdx.x * cb + c, row0 = (i64)blockIdx.y * R;
	const i64 bt = blockIdx.z;
	a += bt * sa;
	b += bt * sb;
	o += bt * sc;
	const int kt = SG_AS / R;
	float acc[R];
#pragma unroll
	for (int r = 0; r < R; r++) acc[r] = 0.f;
	for (i64 k0 = 0; k0 < k; k0 += kt) {
		const int kn = (int)(k - k0 < kt ? k - k0 : kt);
		__syncthreads();
		for (int i = t; i < R * kn; i += SG_THREADS) {
			// Coalesced along a's contiguous dimension.
			int r = ta ? i % R : i / kn, kk = ta ? i / R : i % kn;
			i64 row = row0 + r;
			float v = 0.f;
			if (row < m) v = (float)ld(ta ? a[(k0 + kk) * m + row] : a[row * k + k0 + kk]);
			as[r * kt + kk] = v;
		}
		__syncthreads();
		if (j < n) {
			const T *bp = tb ? b + j * k + k0 : b + k0 * n + j;
			const i64 step = tb ? 1 : n;
#pragma unroll 4
			for (int kk = s; kk < kn; kk += ks) {
				float bv = (float)ld(bp[kk * step]);
#pragma unroll
				for (int r = 0; r < R; r++) acc[r] += as[r * kt + kk] * bv;
			}
		}
	}
	// red[(s * R + r) * cb + c]: the slices' partial sums, added in slice
	// order by the thread that owns output (r, c).
#pragma unroll
	for (int r = 0; r < R; r++) red[(s * R + r) * cb + c] = acc[r];
	__syncthreads();
	for (int i = t; i < R * cb; i += SG_THREADS) {
		int r = i / cb, cc = i % cb;
		i64 row = row0 + r, col = (i64)blockIdx.x * cb + cc;
		if (row >= m || col >= n) continue;
		float v = 0.f;
		for (int q = 0; q < ks; q++) v += red[(q * R + r) * cb + cc];
		if (bias) v += (float)ld(bias[col]);
		o[row * n + col] = st<T>(sg_act(act, v, alpha));
	}
}

#define SMALL_GEMM(T, SUF, R)                                                                              \
	extern "C" __global__ void small_gemm_##R##_##SUF(T *__restrict__ o,     \
			const T *__restrict__ a, const T *__restrict__ b, const T *__restrict__ bias, i64 m, i64 n, \
			i64 k, int ta, int tb, int cb, i64 sa, i64 sb, i64 sc, int act, float alpha) {             \
		small_gemm<T, R>(o, a, b, bias, m, n, k, ta, tb, cb, sa, sb, sc, act, alpha);                   \
	}
#define SMALL_GEMMS(T, SUF) \
	SMALL_GEMM(T, SUF, 1) SMALL_GEMM(T, SUF, 2) SMALL_GEMM(T, SUF, 4) SMALL_GEMM(T, SUF, 8) SMALL_GEMM(T, SUF, 16)

SMALL_GEMMS(float, f32)
SMALL_GEMMS(f16, f16)
SMALL_GEMMS(bf16, bf16)

// bias_act_<dt>: o[i] = act(o[i] + bias[i % n]) in place (bias may be
// null), after a cuBLAS GEMM, for the epilogues cuBLASLt lacks.
#define BIAS_ACT(T, SUF)                                                                                   \
	extern "C" __global__ void bias_act_##SUF(T *__restrict__ o, const T *__restrict__ bias, i64 total,    \
			i64 n, int act, float alpha) {                                                              \
		GRID_LOOP(i, total) {                                                                               \
			float v = (float)ld(o[i]);                                                                  \
			if (bias) v += (float)ld(bias[i % n]);                                                      \
			o[i] = st<T>(sg_act(act, v, alpha));                                                        \
		}                                                                                                   \
	}
BIAS_ACT(float, f32) BIAS_ACT(f16, f16) BIAS_ACT(bf16, bf16)

// bias_act_f64 is the double epilogue, computed in double.
extern "C" __global__ void bias_act_f64(double *__restrict__ o, const double *__restrict__ bias, i64 total, i64 n,
		int act, float alpha) {
	GRID_LOOP(i, total) {
		double v = o[i];
		if (bias) v += bias[i % n];
		switch (act) {
		case 1: v = v > 0.0 || v != v ? v : 0.0; break;
		case 2: v = v != v ? v : (v < 0.0 ? 0.0 : (v > 6.0 ? 6.0 : v)); break;
		case 3: v = v < 0.0 ? expm1(v) : v; break;
		case 4: v = v < 0.0 ? v * (double)alpha : v; break;
		case 5: v = tanh(v); break;
		case 6: v = 1.0 / (1.0 + exp(-v)); break;
		case 7: v = 0.5 * v * (1.0 + erf(v * 0.70710678118654752)); break;
		case 8: v = 0.5 * v * (1.0 + tanh(0.79788456080286536 * (v + 0.044715 * v * v * v))); break;
		}
		o[i] = v;
	}
}
