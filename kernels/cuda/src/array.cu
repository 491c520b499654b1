// Data movement: GatherV2 (one or 32 a launch), concat and split of column blocks, Transpose.
// Kernels are per element size (1, 2, 4, 8, 16 bytes), not per dtype.

// GatherV2 with batch_dims: out[b][p][j][k] = params[b][p][idx[b][j]][k];
// an index outside [0, limit) gives zeros, as TF's GPU kernel does.
#define GATHER(T, SZ, I, IS)                                                                            \
	extern "C" __global__ void gather_##SZ##_##IS(T *__restrict__ o, const T *__restrict__ params,   \
		const I *__restrict__ idx, i64 total, i64 outer, i64 limit, i64 inner, i64 nidx) {        \
		GRID_LOOP(i, total) {                                                                     \
			i64 k = i % inner, t = i / inner;                                                 \
			i64 j = t % nidx;                                                                 \
			t /= nidx; /* t = b * outer + p */                                                \
			i64 b = t / outer;                                                                \
			i64 ix = (i64)idx[b * nidx + j];                                                  \
			if (ix >= 0 && ix < limit) {                                                      \
				o[i] = params[(t * limit + ix) * inner + k];                              \
			} else {                                                                          \
				o[i] = T();                                                               \
			}                                                                                 \
		}                                                                                         \
	}
#define GATHER_SZ(T, SZ) GATHER(T, SZ, int, i32) GATHER(T, SZ, i64, i64)
GATHER_SZ(u8, 1)
GATHER_SZ(u16, 2)
GATHER_SZ(u32, 4)
GATHER_SZ(u64, 8)
GATHER_SZ(u128, 16)

// _MstreamGatherN (sibling GatherV2s along axis 0, merged by package
// optimize) in one launch for up to 32 pairs: block row blockIdx.y
// gathers pair q, n[q] elements of rows of inner[q] from the table p[q]
// (limit[q] rows) by idx[q] into o[q]; an index outside [0, limit[q])
// gives zeros, as gather_. A node of more pairs launches once per 32.
struct GatherN32 {
	void *o[32];
	const void *p[32];
	const void *idx[32];
	i64 limit[32], inner[32], n[32];
};
#define GATHERN(T, SZ, I, IS)                                                                           \
	extern "C" __global__ void gathern_##SZ##_##IS(GatherN32 g) {                                     \
		const int q = blockIdx.y;                                                                 \
		T *__restrict__ o = (T *)g.o[q];                                                          \
		const T *__restrict__ p = (const T *)g.p[q];                                              \
		const I *__restrict__ idx = (const I *)g.idx[q];                                          \
		const i64 inner = g.inner[q], limit = g.limit[q];                                         \
		GRID_LOOP(i, g.n[q]) {                                                                    \
			i64 j = i / inner, k = i - j * inner;                                             \
			i64 ix = (i64)idx[j];                                                             \
			o[i] = (ix >= 0 && ix < limit) ? p[ix * inner + k] : T();                         \
		}                                                                                         \
	}
#define GATHERN_SZ(T, SZ) GATHERN(T, SZ, int, i32) GATHERN(T, SZ, i64, i64)
GATHERN_SZ(u8, 1)
GATHERN_SZ(u16, 2)
GATHERN_SZ(u32, 4)
GATHERN_SZ(u64, 8)
GATHERN_SZ(u128, 16)

// Concat and split in one launch for up to 28 inputs (outputs): block
// row blockIdx.y moves block q, [outer, off[q+1]-off[q]] elements at
// p[q], from (concat_) or to (split_) columns [off[q], off[q+1]) of the
// [outer, ow] matrix at m; a null p[q] is a gap the host filled itself.
// A node of more blocks launches once per 28.
struct Cols28 {
	void *p[28];
	i64 off[29];
};
#define COLS(T, SZ)                                                                                     \
	extern "C" __global__ void concat_##SZ(T *__restrict__ m, Cols28 c, i64 outer, i64 ow) {          \
		const int q = blockIdx.y;                                                                 \
		const T *__restrict__ x = (const T *)c.p[q];                                              \
		const i64 off = c.off[q], w = c.off[q + 1] - off;                                         \
		if (x == nullptr) return;                                                                 \
		GRID_LOOP(i, outer * w) {                                                                 \
			i64 r = i / w, j = i - r * w;                                                     \
			m[r * ow + off + j] = x[i];                                                       \
		}                                                                                         \
	}                                                                                                 \
	extern "C" __global__ void split_##SZ(const T *__restrict__ m, Cols28 c, i64 outer, i64 ow) {     \
		const int q = blockIdx.y;                                                                 \
		T *__restrict__ y = (T *)c.p[q];                                                          \
		const i64 off = c.off[q], w = c.off[q + 1] - off;                                         \
		if (y == nullptr) return;                                                                 \
		GRID_LOOP(i, outer * w) {                                                                 \
			i64 r = i / w, j = i - r * w;                                                     \
			y[i] = m[r * ow + off + j];                                                       \
		}                                                                                         \
	}
COLS(u8, 1)
COLS(u16, 2)
COLS(u32, 4)
COLS(u64, 8)
COLS(u128, 16)

// Transpose: output element i, with output dims out[], reads the input at
// sum(idx[d] * str[d]) where str[d] is the input stride of the input dim
// that output dim d comes from.
struct Perm {
	i64 rank;
	i64 out[MAXR];
	i64 str[MAXR];
};
#define TRANSPOSE(T, SZ)                                                                                \
	extern "C" __global__ void transpose_##SZ(T *__restrict__ o, const T *__restrict__ x, i64 n,      \
		Perm pm) {                                                                                \
		GRID_LOOP(i, n) {                                                                         \
			i64 r = i, src = 0;                                                               \
			for (int d = (int)pm.rank - 1; d >= 0; d--) {                                     \
				i64 q = r / pm.out[d];                                                    \
				src += (r - q * pm.out[d]) * pm.str[d];                                   \
				r = q;                                                                    \
			}                                                                                 \
			o[i] = x[src];                                                                    \
		}                                                                                         \
	}
TRANSPOSE(u8, 1)
TRANSPOSE(u16, 2)
TRANSPOSE(u32, 4)
TRANSPOSE(u64, 8)
TRANSPOSE(u128, 16)

// SpaceToBatchND / BatchToSpaceND (cpu.SpaceBatchGeom): batch-side
// element i is element e of row r = i / inner; r decomposes into the
// batch-side batch ob and y[], ob into the block offsets and b, and the
// space-side row is b, y[d]*block[d] + offset[d] - start[d]. Going to the
// batch side an element outside the space side is padding (zero); going
// to the space side it is cropped (not written).
struct SB {
	i64 m, batch, inner, to_batch;
	i64 block[4], start[4], space[4], y[4];
};
#define SPACEBATCH(T, SZ)                                                                               \
	extern "C" __global__ void spacebatch_##SZ(T *__restrict__ sp, T *__restrict__ bt, i64 n, SB g) { \
		GRID_LOOP(i, n) {                                                                         \
			i64 r = i / g.inner, e = i - r * g.inner;                                         \
			i64 yv[4];                                                                        \
			for (int d = (int)g.m - 1; d >= 0; d--) {                                         \
				i64 q = r / g.y[d];                                                       \
				yv[d] = r - q * g.y[d];                                                   \
				r = q;                                                                    \
			}                                                                                 \
			i64 off = r / g.batch, src = r - off * g.batch;                                   \
			bool inside = true;                                                               \
			for (int d = 0; d < (int)g.m; d++) src *= g.space[d];                             \
			i64 st = 1;                                                                       \
			for (int d = (int)g.m - 1; d >= 0; d--) {                                         \
				i64 q = off / g.block[d];                                                 \
				i64 s = yv[d] * g.block[d] + (off - q * g.block[d]) - g.start[d];         \
				off = q;                                                                  \
				if (s < 0 || s >= g.space[d]) {                                           \
					inside = false;                                                   \
					break;                                                            \
				}                                                                         \
				src += s * st;                                                            \
				st *= g.space[d];                                                         \
			}                                                                                 \
			if (g.to_batch) {                                                                 \
				if (inside) {                                                             \
					bt[i] = sp[src * g.inner + e];                                    \
				} else {                                                                  \
					bt[i] = (T)0;                                                     \
				}                                                                         \
			} else if (inside) {                                                              \
				sp[src * g.inner + e] = bt[i];                                            \
			}                                                                                 \
		}                                                                                         \
	}
SPACEBATCH(u8, 1)
SPACEBATCH(u16, 2)
SPACEBATCH(u32, 4)
SPACEBATCH(u64, 8)
