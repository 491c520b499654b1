// Variables and optimizers: kernels that update a variable's device value
// in place (state.go orders them after its other uses). The rules are
// the CPU kernels' (kernels/cpu/optimizer.go), in the variable's dtype,
// element by element; sqrt and pow go through double as the CPU's do.
//
// Names: state_addsub_<dtype>(v, d, n, sub): v += d (v -= d);
// state_scatter_<op>_<dtype>_<index dtype>(v, idx, upd, n, slice, rows,
// scalar) for op set, add, sub over the n update elements, slice per
// index (a scalar update serves them all); an index outside [0, rows)
// skips its slice, as TF's GPU kernels do. opt_dense_<dtype>(op, flags,
// w, a, b, c, g, p0..p5, n): rule op on n elements, its scalars read from
// the device pointers p0..p5; opt_sparse_<dtype>_<index dtype>(op, flags,
// w, a, b, c, g, idx, nidx, slice, rows, s0..s5): the rule on the rows
// idx names, the gradient's row i for row idx[i], its scalars by value;
// a row named twice takes its updates in the order of indices, as on the
// CPU (TF's GPU kernels race there; TF's optimizers sum repeated indices
// first, so their graphs never repeat one).

__device__ __forceinline__ float st_sqrt(float x) { return (float)sqrt((double)x); }
__device__ __forceinline__ double st_sqrt(double x) { return sqrt(x); }

#define OPT_SGD 0
#define OPT_MOMENTUM 1
#define OPT_ADAM 2
#define OPT_ADAGRAD 3
#define OPT_RMSPROP 4
#define OPT_CENTERED 5
#define OPT_FTRL 6

#define FLAG_NESTEROV 1
#define FLAG_NO_SLOTS 2   // Adagrad's update_slots=false
#define FLAG_BY_LR 4      // Ftrl's multiply_linear_by_lr
#define FLAG_SHRINK 8     // FtrlV2: s[4] is l2_shrinkage

template <typename T> __device__ __forceinline__ T st_sign(T x) { return x > (T)0 ? (T)1 : (x < (T)0 ? (T)-1 : (T)0); }

// rule applies optimizer op to element k of the slots w, a, b, c with
// gradient g and scalars s (in the order of the CPU kernel's rule).
template <typename T>
__device__ __forceinline__ void rule(int op, int flags, T *w, T *a, T *b, T *c, i64 k, T g, const T *s) {
	switch (op) {
	case OPT_SGD:
		w[k] -= s[0] * g;
		break;
	case OPT_MOMENTUM: {
		T lr = s[0], mom = s[1];
		a[k] = a[k] * mom + g;
		if (flags & FLAG_NESTEROV)
			w[k] -= g * lr + a[k] * mom * lr;
		else
			w[k] -= lr * a[k];
		break;
	}
	case OPT_ADAM: {
		T b1p = s[0], b2p = s[1], lr = s[2], b1 = s[3], b2 = s[4], eps = s[5];
		T lrt = lr * st_sqrt((T)1 - b2p) / ((T)1 - b1p);
		a[k] += (g - a[k]) * ((T)1 - b1);
		b[k] += (g * g - b[k]) * ((T)1 - b2);
		if (flags & FLAG_NESTEROV)
			w[k] -= (a[k] * b1 + ((T)1 - b1) * g) * lrt / (st_sqrt(b[k]) + eps);
		else
			w[k] -= a[k] * lrt / (st_sqrt(b[k]) + eps);
		break;
	}
	case OPT_ADAGRAD:
		if (!(flags & FLAG_NO_SLOTS)) a[k] += g * g;
		w[k] -= s[0] * g * ((T)1 / st_sqrt(a[k]));
		break;
	case OPT_RMSPROP: {
		T lr = s[0], rho = s[1], mom = s[2], eps = s[3];
		a[k] += (g * g - a[k]) * ((T)1 - rho);
		b[k] = b[k] * mom + (g * lr) / st_sqrt(a[k] + eps);
		w[k] -= b[k];
		break;
	}
	case OPT_CENTERED: { // a = mg, b = ms, c = mom
		T lr = s[0], rho = s[1], mom = s[2], eps = s[3];
		b[k] += (g * g - b[k]) * ((T)1 - rho);
		a[k] += (g - a[k]) * ((T)1 - rho);
		c[k] = c[k] * mom + (g * lr) / st_sqrt((b[k] - a[k] * a[k]) + eps);
		w[k] -= c[k];
		break;
	}
	case OPT_FTRL: { // a = accum, b = linear
		T lr = s[0], l1 = s[1], l2 = s[2], power = s[3];
		T gs = g;
		if (flags & FLAG_SHRINK) gs = g + (T)2 * s[4] * w[k];
		T acc = a[k], na = acc + g * g;
		T pn, po;
		if (power == (T)-0.5) {
			pn = st_sqrt(na);
			po = st_sqrt(acc);
		} else {
			pn = (T)pow((double)na, (double)-power);
			po = (T)pow((double)acc, (double)-power);
		}
		T l1e, y;
		if (flags & FLAG_BY_LR) {
			b[k] += gs * lr - (pn - po) * w[k];
			l1e = l1 * lr;
			y = pn + (T)2 * l2 * lr;
		} else {
			b[k] += gs - (pn - po) / lr * w[k];
			l1e = l1;
			y = pn / lr + (T)2 * l2;
		}
		T lin = b[k];
		T al = lin < (T)0 ? -lin : lin;
		w[k] = al > l1e ? (l1e * st_sign(lin) - lin) / y : (T)0;
		a[k] = na;
		break;
	}
	}
}

#define OPT(TS, T)                                                                                          \
	extern "C" __global__ void opt_dense_##TS(int op, int flags, T *w, T *a, T *b, T *c, const T *g,     \
		const T *p0, const T *p1, const T *p2, const T *p3, const T *p4, const T *p5, i64 n) {       \
		T s[6] = {p0 ? *p0 : (T)0, p1 ? *p1 : (T)0, p2 ? *p2 : (T)0, p3 ? *p3 : (T)0,                \
			p4 ? *p4 : (T)0, p5 ? *p5 : (T)0};                                                   \
		GRID_LOOP(i, n) rule<T>(op, flags, w, a, b, c, i, g[i], s);                                  \
	}                                                                                                    \
	OPT_SPARSE(TS, T, i32, int) OPT_SPARSE(TS, T, i64, i64)
// A block per index i (a block-uniform loop, for the barriers), its
// threads over the row's elements: the block first looks for an earlier
// index of the same row; the first occurrence then applies every
// occurrence in order, so repeated rows apply as on the CPU.
#define OPT_SPARSE(TS, T, IS, I)                                                                            \
	extern "C" __global__ void opt_sparse_##TS##_##IS(int op, int flags, T *w, T *a, T *b, T *c,         \
		const T *g, const I *idx, i64 nidx, i64 slice, i64 rows, double s0, double s1, double s2,    \
		double s3, double s4, double s5) {                                                           \
		T s[6] = {(T)s0, (T)s1, (T)s2, (T)s3, (T)s4, (T)s5};                                         \
		__shared__ u32 dup;                                                                          \
		for (i64 i = blockIdx.x; i < nidx; i += gridDim.x) {                                         \
			i64 r = (i64)idx[i];                                                                 \
			if (threadIdx.x == 0) dup = 0;                                                       \
			__syncthreads();                                                                     \
			for (i64 j = threadIdx.x; j < i; j += blockDim.x)                                    \
				if ((i64)idx[j] == r) atomicAdd(&dup, 1u); /* racecheck-clean */             \
			__syncthreads();                                                                     \
			if (!dup && r >= 0 && r < rows) {                                                    \
				for (i64 e = threadIdx.x; e < slice; e += blockDim.x)                        \
					for (i64 j = i; j < nidx; j++)                                       \
						if ((i64)idx[j] == r)                                        \
							rule<T>(op, flags, w, a, b, c, r * slice + e, g[j * slice + e], s); \
			}                                                                                    \
			__syncthreads();                                                                     \
		}                                                                                            \
	}

OPT(f32, float)
OPT(f64, double)

__device__ __forceinline__ void st_atomic_add(float *p, float v) { atomicAdd(p, v); }
__device__ __forceinline__ void st_atomic_add(double *p, double v) { atomicAdd(p, v); }
__device__ __forceinline__ void st_atomic_add(int *p, int v) { atomicAdd((u32 *)p, (u32)v); }
__device__ __forceinline__ void st_atomic_add(i64 *p, i64 v) { atomicAdd((u64 *)p, (u64)v); }

#define STATE(TS, T)                                                                                         \
	extern "C" __global__ void state_addsub_##TS(T *v, const T *d, i64 n, int sub) {                      \
		GRID_LOOP(i, n) v[i] = sub ? (T)(v[i] - d[i]) : (T)(v[i] + d[i]);                             \
	}                                                                                                     \
	SCATTER_ST(TS, T, i32, int) SCATTER_ST(TS, T, i64, i64)
#define SCATTER_ST(TS, T, IS, I)                                                                             \
	extern "C" __global__ void state_scatter_set_##TS##_##IS(T *v, const I *idx, const T *upd, i64 n,    \
		i64 slice, i64 rows, int scalar) {                                                            \
		GRID_LOOP(i, n) {                                                                             \
			i64 r = (i64)idx[i / slice];                                                          \
			if (r >= 0 && r < rows) v[r * slice + i % slice] = upd[scalar ? 0 : i];               \
		}                                                                                             \
	}                                                                                                     \
	extern "C" __global__ void state_scatter_add_##TS##_##IS(T *v, const I *idx, const T *upd, i64 n,    \
		i64 slice, i64 rows, int scalar) {                                                            \
		GRID_LOOP(i, n) {                                                                             \
			i64 r = (i64)idx[i / slice];                                                          \
			if (r >= 0 && r < rows) st_atomic_add(v + r * slice + i % slice, upd[scalar ? 0 : i]); \
		}                                                                                             \
	}                                                                                                     \
	extern "C" __global__ void state_scatter_sub_##TS##_##IS(T *v, const I *idx, const T *upd, i64 n,    \
		i64 slice, i64 rows, int scalar) {                                                            \
		GRID_LOOP(i, n) {                                                                             \
			i64 r = (i64)idx[i / slice];                                                          \
			if (r >= 0 && r < rows) st_atomic_add(v + r * slice + i % slice, (T)-upd[scalar ? 0 : i]); \
		}                                                                                             \
	}

STATE(f32, float)
STATE(f64, double)
STATE(i32, int)
STATE(i64, i64)
