// Random ops (RandomUniform, RandomStandardNormal, TruncatedNormal,
// RandomUniformInt): the device half of kernels/cpu's random kernels. The
// host reserves the call's Philox blocks from the node's stream
// (cpu.RandomStream) exactly as the CPU kernel does, so each block here is
// the CPU's block: Philox4x32-10 with counter (block lo, block hi, h0, h1)
// and key (k0, k1). The transforms are the CPU's, bit for bit where they
// are integer and bit tricks (uniforms, integers); the normals use the
// device's double log, sqrt, sin and cos, which CUDA documents to within
// 1 to 2 ulp where Go's are within 1, so a normal may differ from the CPU's
// in the last bit of a double (the float, half and bfloat16 results round
// that away except in rare ties).

struct Philox { u32 v[4]; };

__device__ __forceinline__ Philox philox(u64 block, u32 h0, u32 h1, u32 k0, u32 k1) {
	u32 c0 = (u32)block, c1 = (u32)(block >> 32), c2 = h0, c3 = h1;
	for (int r = 0; r < 10; r++) {
		u64 p0 = (u64)0xD2511F53u * c0, p1 = (u64)0xCD9E8D57u * c2;
		u32 n0 = (u32)(p1 >> 32) ^ c1 ^ k0, n2 = (u32)(p0 >> 32) ^ c3 ^ k1;
		c0 = n0;
		c1 = (u32)p1;
		c2 = n2;
		c3 = (u32)p0;
		k0 += 0x9E3779B9u;
		k1 += 0xBB67AE85u;
	}
	Philox o;
	o.v[0] = c0;
	o.v[1] = c1;
	o.v[2] = c2;
	o.v[3] = c3;
	return o;
}

// u01f: a float in [0, 1) from 23 bits; u01d: a double from 52 bits.
__device__ __forceinline__ float u01f(u32 x) { return __uint_as_float(0x3f800000u | (x & 0x7fffffu)) - 1.0f; }
__device__ __forceinline__ double u01d(u32 a, u32 b) {
	u64 m = (((u64)a << 32) | b) & ((1ull << 52) - 1);
	return __longlong_as_double((long long)(0x3ff0000000000000ull | m)) - 1.0;
}

// normal2 is the CPU's Box-Muller pair of one block.
__device__ __forceinline__ void normal2(const Philox &b, double *z0, double *z1) {
	double u1 = u01d(b.v[0], b.v[1]), u2 = u01d(b.v[2], b.v[3]);
	if (u1 < 1e-300) u1 = 1e-300;
	double r = sqrt(-2.0 * log(u1));
	double a = 6.283185307179586 * u2; // float64(2π), as Go folds 2*math.Pi
	*z0 = r * sin(a);
	*z1 = r * cos(a);
}

// Stores of a double or float result in each float dtype (half and
// bfloat16 round the float once, as the CPU's storeF32).
__device__ __forceinline__ void putf(float *o, i64 j, double v) { o[j] = (float)v; }
__device__ __forceinline__ void putf(double *o, i64 j, double v) { o[j] = v; }
__device__ __forceinline__ void putf(f16 *o, i64 j, double v) { o[j].b = f2h((float)v); }
__device__ __forceinline__ void putf(bf16 *o, i64 j, double v) { o[j].b = f2bf((float)v); }

// Uniforms, Per values per block.
__device__ __forceinline__ void unif(float *o, i64 j, const Philox &b, int lane) { o[j] = u01f(b.v[lane]); }
__device__ __forceinline__ void unif(double *o, i64 j, const Philox &b, int lane) { o[j] = u01d(b.v[2 * lane], b.v[2 * lane + 1]); }
__device__ __forceinline__ void unif(f16 *o, i64 j, const Philox &b, int lane) {
	// 10 random mantissa bits: k/1024, exact in half.
	o[j].b = f2h(__uint_as_float(0x3f800000u | ((b.v[lane] & 0x3ffu) << 13)) - 1.0f);
}
__device__ __forceinline__ void unif(bf16 *o, i64 j, const Philox &b, int lane) {
	o[j].b = f2bf(__uint_as_float(0x3f800000u | ((b.v[lane] & 0x7fu) << 16)) - 1.0f);
}

// Integers in [lo, lo+span), span > 0, in the dtype's wrapping arithmetic.
__device__ __forceinline__ void uint_(int *o, i64 j, const Philox &b, int lane, u64 lo, u64 span) {
	o[j] = (int)((u32)lo + b.v[lane] % (u32)span);
}
__device__ __forceinline__ void uint_(i64 *o, i64 j, const Philox &b, int lane, u64 lo, u64 span) {
	u64 x = ((u64)b.v[2 * lane] << 32) | b.v[2 * lane + 1];
	o[j] = (i64)(lo + x % span);
}

// Each thread fills whole blocks: block i of the call holds elements
// [i*per, i*per+per).
#define RAND_BLOCKS(per) \
	i64 nb = (n + (per) - 1) / (per); \
	GRID_LOOP(i, nb)

#define RAND_FLOAT(sfx, T) \
	extern "C" __global__ void rand_uniform_##sfx(T *o, i64 n, int per, u64 base, u32 h0, u32 h1, u32 k0, u32 k1) { \
		RAND_BLOCKS(per) { \
			Philox b = philox(base + (u64)i, h0, h1, k0, k1); \
			for (int l = 0; l < per && i * per + l < n; l++) unif(o, i * per + l, b, l); \
		} \
	} \
	extern "C" __global__ void rand_normal_##sfx(T *o, i64 n, int per, u64 base, u32 h0, u32 h1, u32 k0, u32 k1) { \
		RAND_BLOCKS(2) { \
			Philox b = philox(base + (u64)i, h0, h1, k0, k1); \
			double z0, z1; \
			normal2(b, &z0, &z1); \
			putf(o, 2 * i, z0); \
			if (2 * i + 1 < n) putf(o, 2 * i + 1, z1); \
		} \
	} \
	extern "C" __global__ void rand_truncated_##sfx(T *o, i64 n, int dbl, u64 base, u32 h0, u32 h1, u32 k0, u32 k1) { \
		GRID_LOOP(j, n) { \
			u64 first = base + (u64)j * 16; /* cpu.RandomTruncBlocks */ \
			for (u64 t = 0;; t++) { \
				Philox b = philox(first + t % 16 + (t / 16 << 40), h0, h1, k0, k1); \
				double z[2]; \
				normal2(b, &z[0], &z[1]); \
				int done = 0; \
				for (int q = 0; q < 2; q++) { \
					double v = dbl ? z[q] : (double)(float)z[q]; \
					if (fabs(v) <= 2.0) { \
						putf(o, j, v); \
						done = 1; \
						break; \
					} \
				} \
				if (done) break; \
			} \
		} \
	}

RAND_FLOAT(f32, float)
RAND_FLOAT(f64, double)
RAND_FLOAT(f16, f16)
RAND_FLOAT(bf16, bf16)

#define RAND_INT(sfx, T) \
	extern "C" __global__ void rand_int_##sfx(T *o, i64 n, int per, u64 base, u32 h0, u32 h1, u32 k0, u32 k1, u64 lo, u64 span) { \
		RAND_BLOCKS(per) { \
			Philox b = philox(base + (u64)i, h0, h1, k0, k1); \
			for (int l = 0; l < per && i * per + l < n; l++) uint_(o, i * per + l, b, l, lo, span); \
		} \
	}

RAND_INT(i32, int)
RAND_INT(i64, i64)
