// Where and Unique: ops whose output shape depends on the data. Both
// number the elements they keep with a prefix sum (Where per chunk,
// Unique over 0/1 flags with scan_blocks, scan_sums, scan_add); the host
// reads the total back
// (the one readback of a GPU kernel, see select.go), allocates the output
// and launches the writer.
//
// Scan: pos[] holds 0/1 flags (any i64 counts work). scan_blocks turns
// each chunk of SCAN_CH elements into its exclusive scan and writes the
// chunk's total to sums[c]; scan_sums (one block) turns sums[0..nb) into
// their exclusive scan and writes the grand total to sums[nb]; scan_add
// adds each chunk's offset. Blocks are SCAN_T threads exactly.
//
// Where: where_count_<dtype>(x, sums, n) counts each chunk's nonzero
// elements (NaN is nonzero, -0 is zero, a complex value is nonzero when a
// part is) into sums, which scan_sums turns into each chunk's first
// output row and the total; where_write_<dtype>(x, sums, o, n, WhereDims)
// then numbers each chunk's nonzero elements in order (a block scan per
// SCAN_T elements) and writes their coordinates to their rows of the
// [count, rank] int64 output: the coordinates along dims longer than 1
// (at most MAXR of them, TF's GPU limit); the host zeroes the output first
// when the input has dims of length 1, whose coordinate is always 0. No
// per-element positions are stored: x is read twice, the output written
// once.
// Unique: unique_insert_<dtype>(x, n, table, mask, slot) puts every
// element into an open-addressing hash table (mask + 1 slots, a power of
// two at least 2n, all -1) keyed by value: the first thread to reach an
// empty slot claims it with its index, an equal key lowers the slot to
// the smallest index holding that value (atomicMin), so once every insert
// is done each slot holds the first occurrence of its value. Values
// compare as the CPU kernel compares them: floats by value (-0 equals 0,
// a NaN equals nothing and gets a slot of its own), integers by value.
// slot[i] is the element's slot. unique_flag(table, slot, pos, n)
// replaces slot[i] by the first occurrence f and flags pos[i] = (f == i);
// after the scan, pos[f] is f's rank among the first occurrences, which
// is the order of first occurrence the CPU kernel gives.
// unique_write_<size>(x, first, pos, y, n) gathers y, unique_idx_<index
// dtype>(first, pos, idx, n) writes idx[i] = pos[first[i]].

#define SCAN_T 256
#define SCAN_PER 4
#define SCAN_CH (SCAN_T * SCAN_PER)

// block_incl_scan is the inclusive scan of one value per thread over the
// block (SCAN_T threads); sh holds SCAN_T values and, on return, the
// block's scan (sh[SCAN_T - 1] is the block's total).
__device__ __forceinline__ i64 block_incl_scan(i64 v, i64 *sh) {
	int t = threadIdx.x;
	sh[t] = v;
	__syncthreads();
	for (int o = 1; o < SCAN_T; o <<= 1) {
		i64 a = t >= o ? sh[t - o] : 0;
		__syncthreads();
		sh[t] += a;
		__syncthreads();
	}
	return sh[t];
}

extern "C" __global__ void scan_blocks(i64 *__restrict__ v, i64 *__restrict__ sums, i64 n) {
	__shared__ i64 sh[SCAN_T];
	i64 nb = (n + SCAN_CH - 1) / SCAN_CH;
	for (i64 c = blockIdx.x; c < nb; c += gridDim.x) {
		i64 base = c * SCAN_CH + (i64)threadIdx.x * SCAN_PER, x[SCAN_PER], s = 0;
		for (int j = 0; j < SCAN_PER; j++) {
			x[j] = base + j < n ? v[base + j] : 0;
			s += x[j];
		}
		i64 incl = block_incl_scan(s, sh), run = incl - s;
		for (int j = 0; j < SCAN_PER; j++) {
			if (base + j < n) v[base + j] = run;
			run += x[j];
		}
		if (threadIdx.x == SCAN_T - 1) sums[c] = incl;
		__syncthreads();
	}
}

extern "C" __global__ void scan_sums(i64 *sums, i64 nb) {
	__shared__ i64 sh[SCAN_T];
	i64 carry = 0;
	for (i64 c = 0; c < nb; c += SCAN_T) {
		i64 i = c + threadIdx.x, x = i < nb ? sums[i] : 0;
		i64 incl = block_incl_scan(x, sh);
		if (i < nb) sums[i] = carry + incl - x;
		carry += sh[SCAN_T - 1];
		__syncthreads();
	}
	if (threadIdx.x == 0) sums[nb] = carry;
}

extern "C" __global__ void scan_add(i64 *__restrict__ v, const i64 *__restrict__ sums, i64 n) {
	GRID_LOOP(i, n) v[i] += sums[i / SCAN_CH];
}

// Where.

struct c64 {
	float re, im;
};
struct c128 {
	double re, im;
};

template <typename T> __device__ __forceinline__ bool nz(T v) { return ld(v) != 0; }
__device__ __forceinline__ bool nz(c64 v) { return v.re != 0 || v.im != 0; }
__device__ __forceinline__ bool nz(c128 v) { return v.re != 0 || v.im != 0; }

struct WhereDims {
	i64 rank;      // the output's columns (the input's rank)
	i64 kept;      // the input dims longer than 1 (the others' columns are zeroed first)
	i64 col[MAXR]; // each kept dim's column
	i64 str[MAXR]; // and its element stride in the input
};

#define WHERE(TS, T)                                                                                      \
	extern "C" __global__ void where_count_##TS(const T *__restrict__ x, i64 *__restrict__ sums, i64 n) { \
		__shared__ i64 sh[32];                                                                     \
		i64 nb = (n + SCAN_CH - 1) / SCAN_CH;                                                      \
		for (i64 c = blockIdx.x; c < nb; c += gridDim.x) {                                         \
			i64 s = 0;                                                                         \
			for (int j = 0; j < SCAN_PER; j++) {                                               \
				i64 i = c * SCAN_CH + j * SCAN_T + threadIdx.x;                            \
				if (i < n && nz(x[i])) s++;                                                \
			}                                                                                  \
			s = block_sum(s, sh);                                                              \
			if (threadIdx.x == 0) sums[c] = s;                                                 \
			__syncthreads();                                                                   \
		}                                                                                          \
	}                                                                                                  \
	extern "C" __global__ void where_write_##TS(const T *__restrict__ x, const i64 *__restrict__ sums,  \
		i64 *__restrict__ o, i64 n, WhereDims d) {                                                  \
		__shared__ i64 sh[SCAN_T];                                                                 \
		i64 nb = (n + SCAN_CH - 1) / SCAN_CH;                                                      \
		for (i64 c = blockIdx.x; c < nb; c += gridDim.x) {                                         \
			i64 run = sums[c];                                                                 \
			for (int j = 0; j < SCAN_PER; j++) {                                               \
				i64 i = c * SCAN_CH + j * SCAN_T + threadIdx.x;                            \
				i64 f = (i < n && nz(x[i])) ? 1 : 0;                                       \
				i64 incl = block_incl_scan(f, sh), tot = sh[SCAN_T - 1];                   \
				if (f) {                                                                   \
					i64 *r = o + (run + incl - 1) * d.rank, e = i;                     \
					for (int k = 0; k < (int)d.kept; k++) {                            \
						i64 q = e / d.str[k];                                      \
						r[d.col[k]] = q;                                           \
						e -= q * d.str[k];                                         \
					}                                                                  \
				}                                                                          \
				run += tot;                                                                \
				__syncthreads();                                                           \
			}                                                                                  \
		}                                                                                          \
	}

WHERE(i8, i8)
WHERE(u8, u8)
WHERE(i64, i64)
WHERE(f32, float)
WHERE(f64, double)
WHERE(c64, c64)
WHERE(c128, c128)
WHERE(b, u8)

// Unique.

// hkey is the bits a value hashes by: equal values (as eqv compares
// them) give equal bits.
template <typename T> __device__ __forceinline__ u64 hkey(T v) { return (u64)v; }
__device__ __forceinline__ u64 hkey(float v) { return v == 0 ? 0 : (u64)__float_as_uint(v); }
__device__ __forceinline__ u64 hkey(double v) { return v == 0 ? 0 : (u64)__double_as_longlong(v); }
__device__ __forceinline__ u64 hkey(f16 v) { return hkey(ld(v)); }
__device__ __forceinline__ u64 hkey(bf16 v) { return hkey(ld(v)); }

template <typename T> __device__ __forceinline__ bool eqv(T a, T b) { return ld(a) == ld(b); }

// mix is splitmix64's finaliser.
__device__ __forceinline__ u64 mix(u64 z) {
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

#define UNIQUE(TS, T)                                                                                     \
	extern "C" __global__ void unique_insert_##TS(const T *__restrict__ x, i64 n, i64 *table, i64 mask, \
		i64 *__restrict__ slot) {                                                                   \
		GRID_LOOP(i, n) {                                                                          \
			T v = x[i];                                                                        \
			u64 h = mix(hkey(v)) & (u64)mask;                                                  \
			for (;;) {                                                                         \
				i64 cur = (i64)atomicCAS((u64 *)&table[h], ~0ull, (u64)i);                 \
				if (cur == -1) break;                                                      \
				if (eqv(x[cur], v)) {                                                      \
					atomicMin(&table[h], i);                                           \
					break;                                                             \
				}                                                                          \
				h = (h + 1) & (u64)mask;                                                   \
			}                                                                                  \
			slot[i] = (i64)h;                                                                  \
		}                                                                                          \
	}

UNIQUE(f16, f16)
UNIQUE(bf16, bf16)
UNIQUE(f32, float)
UNIQUE(f64, double)
UNIQUE(i8, i8)
UNIQUE(i16, i16)
UNIQUE(i32, int)
UNIQUE(i64, i64)
UNIQUE(u8, u8)
UNIQUE(u16, u16)
UNIQUE(u32, u32)
UNIQUE(u64, u64)

extern "C" __global__ void unique_flag(const i64 *__restrict__ table, i64 *__restrict__ slot, i64 *__restrict__ pos,
	i64 n) {
	GRID_LOOP(i, n) {
		i64 f = table[slot[i]];
		slot[i] = f;
		pos[i] = f == i;
	}
}

#define UWRITE(SZ, T)                                                                                     \
	extern "C" __global__ void unique_write_##SZ(const T *__restrict__ x, const i64 *__restrict__ first, \
		const i64 *__restrict__ pos, T *__restrict__ y, i64 n) {                                    \
		GRID_LOOP(i, n) if (first[i] == i) y[pos[i]] = x[i];                                       \
	}

UWRITE(1, u8)
UWRITE(2, u16)
UWRITE(4, u32)
UWRITE(8, u64)

#define UIDX(IS, I)                                                                                       \
	extern "C" __global__ void unique_idx_##IS(const i64 *__restrict__ first, const i64 *__restrict__ pos, \
		I *__restrict__ idx, i64 n) {                                                               \
		GRID_LOOP(i, n) idx[i] = (I)pos[first[i]];                                                 \
	}

UIDX(i32, int)
UIDX(i64, i64)
