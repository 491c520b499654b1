// Array movement per element size (1, 2, 4, 8, 16 bytes): one strided
// map serves Slice, StridedSlice, Tile, Pad, MirrorPad, ReverseV2,
// BroadcastTo, Split and Unpack; Pack and Concat use array.cu's concat.
// Then OneHot and GatherNd.
//
// move_<size>: output element i, with output index (j_0..j_r-1), reads
// the input at base + sum_d v_d * istr[d] where v_d = start[d] + j_d *
// step[d], taken modulo mod[d] when mod[d] > 0 (Tile), reflected back
// into [0, l) (l = lim[d] - 1, the input dim) when bits 2d..2d+1 of
// mirror are 1 (symmetric) or 2 (reflect), and otherwise, when lim[d] > 0
// and v_d falls outside [0, l), the element is padding: *pad, or zero
// when pad is null. lim[d] == 0 means the dim needs no bounds check.
struct Strided {
	i64 rank;
	i64 base;
	i64 out[MAXR];
	i64 istr[MAXR];
	i64 start[MAXR];
	i64 step[MAXR];
	i64 mod[MAXR];
	i64 lim[MAXR];
};

#define MOVE(T, SZ)                                                                                      \
	extern "C" __global__ void move_##SZ(T *__restrict__ o, const T *__restrict__ x,                  \
		const T *__restrict__ pad, i64 n, Strided s, i64 mirror) {                                 \
		GRID_LOOP(i, n) {                                                                          \
			i64 r = i, src = s.base;                                                           \
			bool padded = false;                                                               \
			for (int d = (int)s.rank - 1; d >= 0; d--) {                                       \
				i64 q = r / s.out[d];                                                      \
				i64 j = r - q * s.out[d];                                                  \
				r = q;                                                                     \
				i64 v = s.start[d] + j * s.step[d];                                        \
				if (s.mod[d] > 0) v %= s.mod[d];                                           \
				int m = (int)((mirror >> (2 * d)) & 3);                                    \
				if (m) {                                                                   \
					i64 off = m - 1, l = s.lim[d] - 1;                                     \
					if (v < 0) v = -v - 1 + off;                                       \
					else if (v >= l) v = 2 * l - v - 1 - off;                          \
				} else if (s.lim[d] > 0 && (v < 0 || v >= s.lim[d] - 1)) {                     \
					padded = true;                                                     \
				}                                                                          \
				src += v * s.istr[d];                                                      \
			}                                                                                  \
			o[i] = padded ? (pad ? *pad : T()) : x[src];                                       \
		}                                                                                          \
	}
MOVE(u8, 1) MOVE(u16, 2) MOVE(u32, 4) MOVE(u64, 8) MOVE(u128, 16)

// OneHot: out[p][j][q] = (idx[p][q] == j) ? on : off over [outer, depth,
// inner]; an index outside [0, depth) matches nothing.
#define ONEHOT(T, SZ, I, IS)                                                                             \
	extern "C" __global__ void onehot_##SZ##_##IS(T *__restrict__ o, const I *__restrict__ idx,       \
		const T *__restrict__ on, const T *__restrict__ off, i64 n, i64 depth, i64 inner) {        \
		T a = *on, b = *off;                                                                       \
		GRID_LOOP(i, n) {                                                                          \
			i64 q = i % inner, t = i / inner;                                                  \
			i64 j = t % depth, p = t / depth;                                                  \
			o[i] = (i64)idx[p * inner + q] == j ? a : b;                                       \
		}                                                                                          \
	}
#define ONEHOT_I(T, SZ) ONEHOT(T, SZ, u8, u8) ONEHOT(T, SZ, i8, i8) ONEHOT(T, SZ, int, i32) ONEHOT(T, SZ, i64, i64)
ONEHOT_I(u8, 1) ONEHOT_I(u16, 2) ONEHOT_I(u32, 4) ONEHOT_I(u64, 8) ONEHOT_I(u128, 16)

// GatherNd: idx is [nidx, depth] over the first depth dims of params
// (strides pstr), each picking a slice of slice elements; an index out of
// range gives zeros, as TF's GPU kernel does.
struct NdMeta {
	i64 depth;
	i64 dims[MAXR];
	i64 pstr[MAXR];
};
#define GATHERND(T, SZ, I, IS)                                                                           \
	extern "C" __global__ void gathernd_##SZ##_##IS(T *__restrict__ o, const T *__restrict__ params,  \
		const I *__restrict__ idx, i64 n, i64 slice, NdMeta m) {                                   \
		GRID_LOOP(i, n) {                                                                          \
			i64 k = i / slice, e = i - k * slice, off = 0;                                     \
			bool ok = true;                                                                    \
			for (int d = 0; d < (int)m.depth; d++) {                                           \
				i64 v = (i64)idx[k * m.depth + d];                                         \
				ok = ok && v >= 0 && v < m.dims[d];                                        \
				off += v * m.pstr[d];                                                      \
			}                                                                                  \
			o[i] = ok ? params[off + e] : T();                                                 \
		}                                                                                          \
	}
#define GATHERND_I(T, SZ) GATHERND(T, SZ, int, i32) GATHERND(T, SZ, i64, i64)
GATHERND_I(u8, 1) GATHERND_I(u16, 2) GATHERND_I(u32, 4) GATHERND_I(u64, 8) GATHERND_I(u128, 16)
