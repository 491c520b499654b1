// SparseSoftmaxCrossEntropyWithLogits over logits [rows, cols] and one
// label per row (int32 or int64), a block per row (blocks stride over the
// rows; blockDim a multiple of 32), in double as the CPU's xentRow with a
// one-hot row: the block reduces the row's max and its sum of exp(x - max)
// (block_max, block_sum: warp shuffles, then one value per warp in shared
// memory), the loss sums label * (lse - (x - max)) over the row, the
// gradient is softmax - label. A label outside [0, cols) makes its row's
// loss and gradient NaN, as TF's GPU kernel does (checking would need a
// synchronisation; the CPU kernel reports the error).
#define SPARSE_XENT(T, L, SUF)                                                                          \
	extern "C" __global__ void sparse_xent_##SUF(T *__restrict__ loss, T *__restrict__ back,           \
			const T *__restrict__ x, const L *__restrict__ lab, i64 rows, i64 cols) {                 \
		__shared__ double scratch[32];                                                                  \
		for (i64 i = blockIdx.x; i < rows; i += gridDim.x) {                                            \
			const T *xr = x + i * cols;                                                             \
			T *br = back + i * cols;                                                                \
			i64 y = (i64)lab[i];                                                                    \
			if (y < 0 || y >= cols) {                                                               \
				double nan = 0.0 / 0.0;                                                         \
				for (i64 j = threadIdx.x; j < cols; j += blockDim.x) br[j] = (T)nan;            \
				if (threadIdx.x == 0) loss[i] = (T)nan;                                         \
				continue;                                                                       \
			}                                                                                       \
			double mx = -1.0 / 0.0;                                                                 \
			for (i64 j = threadIdx.x; j < cols; j += blockDim.x) {                                  \
				double v = (double)xr[j];                                                       \
				mx = v > mx || v != v ? v : mx;                                                 \
			}                                                                                       \
			mx = block_max(mx, scratch);                                                            \
			double sum = 0;                                                                         \
			for (i64 j = threadIdx.x; j < cols; j += blockDim.x) sum += exp((double)xr[j] - mx);    \
			sum = block_sum(sum, scratch);                                                          \
			double lse = log(sum), ls = 0;                                                          \
			for (i64 j = threadIdx.x; j < cols; j += blockDim.x) {                                  \
				double v = (double)xr[j] - mx, lv = j == y ? 1.0 : 0.0;                         \
				ls += lv * (lse - v);                                                           \
				br[j] = (T)(exp(v) / sum - lv);                                                 \
			}                                                                                       \
			ls = block_sum(ls, scratch);                                                            \
			if (threadIdx.x == 0) loss[i] = (T)ls;                                                  \
		}                                                                                               \
	}

SPARSE_XENT(float, int, f32_i32)
SPARSE_XENT(float, i64, f32_i64)
SPARSE_XENT(double, int, f64_i32)
SPARSE_XENT(double, i64, f64_i64)
