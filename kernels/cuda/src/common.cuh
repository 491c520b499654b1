// Shared definitions, prepended to every program (NVRTC is given no
// headers: everything a kernel needs is here).
typedef long long i64;
typedef unsigned long long u64;
typedef unsigned int u32;
typedef unsigned short u16;
typedef unsigned char u8;
struct u128 { u64 lo, hi; };

#define MAXR 8

// Grid-stride loop over [0, n).
#define GRID_LOOP(i, n) \
	for (i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x; i < (n); i += (i64)gridDim.x * blockDim.x)

template <typename T> __device__ __forceinline__ T warp_sum(T v) {
	for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
	return v;
}

template <typename T> __device__ __forceinline__ T warp_max(T v) {
	for (int o = 16; o > 0; o >>= 1) {
		T w = __shfl_xor_sync(0xffffffffu, v, o);
		v = (w > v || w != w) ? w : v;
	}
	return v;
}

// block_sum/block_max reduce over the whole block (blockDim.x a multiple
// of 32, at most 1024); every thread gets the result. scratch holds 32.
template <typename T> __device__ __forceinline__ T block_sum(T v, T *scratch) {
	int lane = threadIdx.x & 31, w = threadIdx.x >> 5, nw = blockDim.x >> 5;
	v = warp_sum(v);
	__syncthreads();
	if (lane == 0) scratch[w] = v;
	__syncthreads();
	v = lane < nw ? scratch[lane] : (T)0;
	return warp_sum(v);
}

template <typename T> __device__ __forceinline__ T block_max(T v, T *scratch) {
	int lane = threadIdx.x & 31, w = threadIdx.x >> 5, nw = blockDim.x >> 5;
	v = warp_max(v);
	__syncthreads();
	if (lane == 0) scratch[w] = v;
	__syncthreads();
	v = lane < nw ? scratch[lane] : scratch[0];
	return warp_max(v);
}
