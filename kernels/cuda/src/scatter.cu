// ScatterNd: a zeroed output, then every update element added at its
// index with an atomic add. As TF's GPU kernel, an index outside the
// output's shape skips its slice instead of failing (the check would need
// a synchronisation); the host has already checked the shapes
// (cpu.ScatterNdArgs). Floats add in whatever order the atomics land, so
// duplicate indices may round differently from the CPU's in-order sum.
// Dtypes without a native atomic add accumulate in a 32-bit scratch and
// are stored once: half and bfloat16 in float (rounded once, as the CPU
// kernel does; TF's GPU rounds at each add), 8- and 16-bit integers in
// u32, whose sum wraps to the same low bits.
//
// Names: scatter_nd_<dtype>_<index dtype>(acc, indices, updates, n,
// slice, NdMeta) over the n update elements, slice of them per index;
// scatter_store_<dtype>(o, acc, n) for the scratch dtypes.

struct NdMeta {
	i64 depth;         // indices.shape[-1]
	i64 dims[MAXR];    // the output's leading dims
	i64 pstr[MAXR];    // their element strides
};

__device__ __forceinline__ void acc_add(float *p, float v) { atomicAdd(p, v); }
__device__ __forceinline__ void acc_add(double *p, double v) { atomicAdd(p, v); }
__device__ __forceinline__ void acc_add(u32 *p, u32 v) { atomicAdd(p, v); }
__device__ __forceinline__ void acc_add(u64 *p, u64 v) { atomicAdd(p, v); }

#define SCATTER(TS, T, A, IS, I)                                                                          \
	extern "C" __global__ void scatter_nd_##TS##_##IS(A *__restrict__ acc, const I *__restrict__ idx,   \
		const T *__restrict__ upd, i64 n, i64 slice, NdMeta m) {                                   \
		GRID_LOOP(i, n) {                                                                          \
			i64 s = i / slice, e = i - s * slice, off = 0;                                     \
			bool ok = true;                                                                    \
			for (int j = 0; j < (int)m.depth; j++) {                                           \
				i64 v = (i64)idx[s * m.depth + j];                                         \
				if (v < 0 || v >= m.dims[j]) {                                             \
					ok = false;                                                        \
					break;                                                             \
				}                                                                          \
				off += v * m.pstr[j];                                                      \
			}                                                                                  \
			if (ok) acc_add(acc + off + e, (A)ld(upd[i]));                                     \
		}                                                                                          \
	}
#define SCATTER2(TS, T, A) SCATTER(TS, T, A, i32, int) SCATTER(TS, T, A, i64, i64)

SCATTER2(f32, float, float)
SCATTER2(f64, double, double)
SCATTER2(u32, u32, u32)
SCATTER2(u64, u64, u64)
SCATTER2(i64, i64, u64)
SCATTER2(f16, f16, float)
SCATTER2(bf16, bf16, float)
SCATTER2(i8, i8, u32)
SCATTER2(u8, u8, u32)
SCATTER2(i16, i16, u32)
SCATTER2(u16, u16, u32)

#define STORE(TS, T, A)                                                                                   \
	extern "C" __global__ void scatter_store_##TS(T *__restrict__ o, const A *__restrict__ acc, i64 n) { \
		GRID_LOOP(i, n) o[i] = st<T>((typename Cm<T>::t)acc[i]);                                   \
	}

STORE(f16, f16, float)
STORE(bf16, bf16, float)
STORE(i8, i8, u32)
STORE(u8, u8, u32)
STORE(i16, i16, u32)
STORE(u16, u16, u32)

// UnsortedSegmentSum: a zeroed accumulator (double for the floats, u64
// for the integers, so the sum rounds once, as the CPU kernel's float64
// sum does), every element added at its segment's row with an atomic
// add, then stored in the dtype. A segment id outside [0, num) drops its
// row, as in TF's GPU kernel (the CPU kernel fails for one >= num).
//
// Names: segment_sum_<dtype>_<index dtype>(acc, ids, data, n, inner, num)
// over the n data elements, inner per id; segment_store_<dtype>(o, acc, n).
#define SEGSUM(TS, T, A, IS, I)                                                                             \
	extern "C" __global__ void segment_sum_##TS##_##IS(A *__restrict__ acc, const I *__restrict__ ids, \
		const T *__restrict__ data, i64 n, i64 inner, i64 num) {                                  \
		GRID_LOOP(i, n) {                                                                         \
			i64 s = (i64)ids[i / inner];                                                      \
			if (s >= 0 && s < num) acc_add(acc + s * inner + i % inner, seg_in<A>(data[i]));  \
		}                                                                                         \
	}
#define SEGSUM2(TS, T, A) SEGSUM(TS, T, A, i32, int) SEGSUM(TS, T, A, i64, i64)

template <typename A, typename T> __device__ __forceinline__ A seg_in(T v) { return (A)ld(v); }
template <> __device__ __forceinline__ u64 seg_in<u64, int>(int v) { return (u64)(i64)v; }
template <> __device__ __forceinline__ u64 seg_in<u64, i64>(i64 v) { return (u64)v; }

SEGSUM2(f32, float, double)
SEGSUM2(f64, double, double)
SEGSUM2(f16, f16, double)
SEGSUM2(bf16, bf16, double)
SEGSUM2(i32, int, u64)
SEGSUM2(i64, i64, u64)

#define SEGSTORE(TS, T, A, CONV)                                                                            \
	extern "C" __global__ void segment_store_##TS(T *__restrict__ o, const A *__restrict__ acc, i64 n) { \
		GRID_LOOP(i, n) o[i] = CONV;                                                               \
	}

SEGSTORE(f32, float, double, (float)acc[i])
SEGSTORE(f64, double, double, acc[i])
SEGSTORE(f16, f16, double, st<f16>((float)acc[i]))
SEGSTORE(bf16, bf16, double, st<bf16>((float)acc[i]))
SEGSTORE(i32, int, u64, (int)(i64)acc[i])
SEGSTORE(i64, i64, u64, (i64)acc[i])
