#include <stddef.h>
#include <stdint.h>

typedef struct ms_conv ms_conv;

int ms_dnnl_open(const char *path, char *err, int errlen);
void ms_dnnl_version(int *major, int *minor, int *patch);
int ms_dnnl_isa(void);
/* threads, in every create and run below: the OpenMP team size the call
   uses (the calling thread's ICV, set in the call); 0 is OpenMP's own
   default, ms_dnnl_omp_default (0 when oneDNN's runtime has no
   omp_set_num_threads). */
int ms_dnnl_omp_default(void);

/* p: N, C, H, W, O, KH, KW, SH, SW, DH, DW, PT, PL, PB, PR, OH, OW (NHWC
   input, HWIO filter, NHWC output; dilations as TF's, 1 = none). */
int ms_conv_create(const int64_t *p, int bias, int relu, int threads, ms_conv **out, char *err, int errlen);
/* Work for a run that reorders the weights (packed NULL): the weights in
   the primitive's layout and its scratchpad. */
size_t ms_conv_work_size(ms_conv *c);
/* A constant filter is reordered once (ms_conv_pack, into packed_size
   bytes; 0: the primitive takes HWIO as it is) and run with packed, whose
   work is scratch_size bytes. */
size_t ms_conv_packed_size(ms_conv *c);
/* Whether a's and b's weights take the same packed layout (both reorder). */
int ms_conv_same_weights(ms_conv *a, ms_conv *b);
size_t ms_conv_scratch_size(ms_conv *c);
int ms_conv_pack(ms_conv *c, int threads, const float *wei, void *out, char *err, int errlen);
void ms_conv_free(ms_conv *c);

const char *ms_conv_impl(ms_conv *c);

/* ms_prim: a primitive whose arguments are plain buffers in the layouts
   its create function fixed (see dl.c); run takes one pointer per argument,
   in the order the create function lists them. */
typedef struct ms_prim ms_prim;
const char *ms_prim_impl(ms_prim *c);
size_t ms_prim_work_size(ms_prim *c);
void ms_prim_free(ms_prim *c);

/* The runs, as ccall.Call makes them: one argument struct each. A conv
   runs with packed (ms_conv_pack's weights) or, when that is NULL,
   reorders wei on the way; a prim takes one pointer an argument (as many
   as it takes, the rest NULL). err is NULL, or a message the caller
   frees. */
typedef struct {
	ms_conv *c; int threads; const float *src, *wei; const char *packed; const float *bias; float *dst; char *work;
	char *err;
} ms_conv_run_args;
void ms_conv_run_call(void *p);
typedef struct { ms_prim *c; int threads; float *args[8]; char *work; char *err; } ms_prim_run_args;
void ms_prim_run_call(void *p);

/* p: N, C, H, W, OH, OW, KH, KW, SH, SW, PT, PL, PB, PR (NHWC in and out);
   average pooling excludes the padding, as TF's. Args: src, dst. */
int ms_pool_create(const int64_t *p, int is_max, int threads, ms_prim **out, char *err, int errlen);
/* Softmax or LogSoftmax along the rows of [rows, cols]. Args: src, dst. */
int ms_softmax_create(int64_t rows, int64_t cols, int log, int threads, ms_prim **out, char *err, int errlen);
/* Each row of [rows, cols] normalised, no scale or shift. Args: src, dst,
   mean [rows], variance [rows] (both written). */
int ms_lnorm_create(int64_t rows, int64_t cols, float eps, int threads, ms_prim **out, char *err, int errlen);
/* Batch norm of [n, spatial, ch] (NHWC flattened) per channel. Args: src,
   dst, scale, shift, mean, variance (read when !training, written when
   training). */
int ms_bnorm_create(int64_t n, int64_t ch, int64_t spatial, float eps, int training, int threads, ms_prim **out, char *err, int errlen);
/* dst[m,n] = op(a)[m,k] op(b)[k,n] (+ bias[n]) then the eltwise act (0 =
   none; oneDNN's alg kind, alpha, beta). Args: a, b, dst, bias. */
int ms_matmul_create(int64_t m, int64_t k, int64_t n, int ta, int tb, int bias, int act, float alpha, float beta,
	int threads, ms_prim **out, char *err, int errlen);

/* Tests only: runs conv (or, when conv is NULL, prim with ptrs) with
   threads on a new thread and returns how many threads its OpenMP team
   used (that thread included), or -1 with err set. */
int ms_dnnl_team_probe(ms_conv *conv, ms_prim *prim, int threads, const float *src, const float *wei, const float *bias,
	float *dst, void *const *ptrs, void *work, char *err, int errlen);
