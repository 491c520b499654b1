// Reductions (Sum, Mean) and Softmax.
//
// The Go side normalises a reduction to one of three shapes: rows
// ([outer, r], reducing the contiguous last dim), mid ([outer, r, inner],
// reducing a middle dim, inner contiguous), or the general case (any axes,
// through strides). A is the accumulator: double for float and double (the
// reductions are bound by memory, and this matches the CPU kernels, which
// sum in float64; TF's GPU kernels sum float in float), a 64-bit unsigned
// one for integers, so
// overflow wraps (a sum is the 64-bit sum truncated to the dtype, a mean the
// 64-bit sum divided), as the CPU kernels compute.

struct RedMeta {
	i64 krank;          // kept dims
	i64 kdims[MAXR];
	i64 kstr[MAXR];     // input stride of each kept dim
	i64 rrank;          // reduced dims
	i64 rdims[MAXR];
	i64 rstr[MAXR];
};

template <typename T, typename A> __device__ __forceinline__ T finish(A acc, i64 count, int mean) {
	if (!mean) return (T)acc;
	return (T)(acc / (A)count);
}
template <> __device__ __forceinline__ int finish<int, u64>(u64 acc, i64 count, int mean) {
	if (!mean) return (int)acc;
	return count == 0 ? 0 : (int)((i64)acc / count);
}
template <> __device__ __forceinline__ i64 finish<i64, u64>(u64 acc, i64 count, int mean) {
	if (!mean) return (i64)acc;
	return count == 0 ? 0 : (i64)acc / count;
}

// One warp per row.
#define RED_ROWS_W(T, A, SUF)                                                                           \
	extern "C" __global__ void sumrow_w_##SUF(T *__restrict__ o, const T *__restrict__ x, i64 outer,  \
		i64 r, int mean) {                                                                        \
		i64 row = (i64)blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);                       \
		int lane = threadIdx.x & 31;                                                              \
		if (row >= outer) return;                                                                 \
		const T *p = x + row * r;                                                                 \
		A acc = 0;                                                                                \
		for (i64 j = lane; j < r; j += 32) acc += (A)p[j];                                        \
		acc = warp_sum(acc);                                                                      \
		if (lane == 0) o[row] = finish<T, A>(acc, r, mean);                                       \
	}

// One block per row (long rows).
#define RED_ROWS_B(T, A, SUF)                                                                           \
	extern "C" __global__ void sumrow_b_##SUF(T *__restrict__ o, const T *__restrict__ x, i64 outer,  \
		i64 r, int mean) {                                                                        \
		__shared__ A scratch[32];                                                                 \
		const T *p = x + (i64)blockIdx.x * r;                                                     \
		A acc = 0;                                                                                \
		for (i64 j = threadIdx.x; j < r; j += blockDim.x) acc += (A)p[j];                         \
		acc = block_sum(acc, scratch);                                                            \
		if (threadIdx.x == 0) o[blockIdx.x] = finish<T, A>(acc, r, mean);                         \
	}

// One thread per (outer, inner) output, looping over the middle dim.
#define RED_MID(T, A, SUF)                                                                              \
	extern "C" __global__ void summid_##SUF(T *__restrict__ o, const T *__restrict__ x, i64 outer,    \
		i64 r, i64 inner, int mean) {                                                             \
		GRID_LOOP(i, outer * inner) {                                                             \
			i64 ob = i / inner, ii = i - ob * inner;                                          \
			const T *p = x + ob * r * inner + ii;                                             \
			A acc = 0;                                                                        \
			for (i64 j = 0; j < r; j++) acc += (A)p[j * inner];                               \
			o[i] = finish<T, A>(acc, r, mean);                                                \
		}                                                                                         \
	}

// Mid with wide rows (inner >= 32): a block of 32 x 32 threads covers 32
// consecutive columns of one outer index; each of the 32 row lanes sums
// every 32nd row (loads coalesced along the columns), then the partial
// sums meet in shared memory. Many more threads than summid when the
// output is a few thousand columns.
#define RED_MID2(T, A, SUF)                                                                             \
	extern "C" __global__ void summid2_##SUF(T *__restrict__ o, const T *__restrict__ x, i64 outer,   \
		i64 r, i64 inner, int mean) {                                                             \
		__shared__ A part[32][33];                                                                \
		i64 cblocks = (inner + 31) / 32;                                                          \
		i64 ob = blockIdx.x / cblocks;                                                            \
		i64 col = (blockIdx.x - ob * cblocks) * 32 + threadIdx.x;                                 \
		A acc = 0;                                                                                \
		if (col < inner) {                                                                        \
			const T *p = x + ob * r * inner + col;                                            \
			for (i64 j = threadIdx.y; j < r; j += blockDim.y) acc += (A)p[j * inner];         \
		}                                                                                         \
		part[threadIdx.y][threadIdx.x] = acc;                                                     \
		__syncthreads();                                                                          \
		if (threadIdx.y == 0 && col < inner) {                                                    \
			for (int k = 1; k < (int)blockDim.y; k++) acc += part[k][threadIdx.x];            \
			o[ob * inner + col] = finish<T, A>(acc, r, mean);                                 \
		}                                                                                         \
	}

// General: one warp per output, lanes over the reduced index space.
#define RED_GEN(T, A, SUF)                                                                              \
	extern "C" __global__ void sumgen_##SUF(T *__restrict__ o, const T *__restrict__ x, i64 nout,     \
		i64 count, int mean, RedMeta m) {                                                         \
		i64 out = (i64)blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);                       \
		int lane = threadIdx.x & 31;                                                              \
		if (out >= nout) return;                                                                  \
		i64 base = 0, q = out;                                                                    \
		for (int d = (int)m.krank - 1; d >= 0; d--) {                                             \
			i64 k = q % m.kdims[d];                                                           \
			q /= m.kdims[d];                                                                  \
			base += k * m.kstr[d];                                                            \
		}                                                                                         \
		A acc = 0;                                                                                \
		for (i64 j = lane; j < count; j += 32) {                                                  \
			i64 off = 0, rj = j;                                                              \
			for (int d = (int)m.rrank - 1; d >= 0; d--) {                                     \
				i64 k = rj % m.rdims[d];                                                  \
				rj /= m.rdims[d];                                                         \
				off += k * m.rstr[d];                                                     \
			}                                                                                 \
			acc += (A)x[base + off];                                                          \
		}                                                                                         \
		acc = warp_sum(acc);                                                                      \
		if (lane == 0) o[out] = finish<T, A>(acc, count, mean);                                   \
	}

#define RED_ALL(T, A, SUF) RED_ROWS_W(T, A, SUF) RED_ROWS_B(T, A, SUF) RED_MID(T, A, SUF) RED_MID2(T, A, SUF) RED_GEN(T, A, SUF)

RED_ALL(float, double, f32)
RED_ALL(double, double, f64)
RED_ALL(int, u64, i32)
RED_ALL(i64, u64, i64)

// Softmax over the last dim: one block per row, three passes (max, sum of
// exponentials, normalise) with the row read from global memory each time
// (rows of inference models are short and stay in L1/L2).
__device__ __forceinline__ float exp_(float x) { return expf(x); }
__device__ __forceinline__ double exp_(double x) { return exp(x); }

#define SOFTMAX(T, SUF)                                                                                 \
	extern "C" __global__ void softmax_##SUF(T *__restrict__ o, const T *__restrict__ x, i64 rows,    \
		i64 d) {                                                                                  \
		__shared__ T scratch[32];                                                                 \
		const T *p = x + (i64)blockIdx.x * d;                                                     \
		T *q = o + (i64)blockIdx.x * d;                                                           \
		T mx = p[0];                                                                              \
		for (i64 j = threadIdx.x; j < d; j += blockDim.x) {                                       \
			T v = p[j];                                                                       \
			mx = (v > mx || v != v) ? v : mx;                                                 \
		}                                                                                         \
		mx = block_max(mx, scratch);                                                              \
		T sum = 0;                                                                                \
		for (i64 j = threadIdx.x; j < d; j += blockDim.x) sum += exp_(p[j] - mx);                 \
		sum = block_sum(sum, scratch);                                                            \
		T inv = (T)1 / sum;                                                                       \
		for (i64 j = threadIdx.x; j < d; j += blockDim.x) q[j] = exp_(p[j] - mx) * inv;           \
	}

SOFTMAX(float, f32)
SOFTMAX(double, f64)
