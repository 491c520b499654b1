/* oneDNN 3.x through dlopen: the few entry points and constants mstream
   uses, declared here (values from oneDNN 3.2's dnnl_types.h) so that
   nothing of oneDNN is needed at build time. */
#define _GNU_SOURCE
#include <dirent.h>
#include <dlfcn.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include "dl.h"

typedef int64_t dims_t[12];
typedef void *md_t;
enum {
	f32 = 3, tag_any = 1, tag_a = 2, tag_ab = 3, tag_ba = 14, tag_nhwc = 22, tag_hwio = 28,
	fwd_training = 64, fwd_inference = 96, conv_direct = 1, eltwise_relu = 32,
	pool_max = 0x1ff, pool_avg_exclude_padding = 0x3ff,
	softmax_accurate = 0x30000, softmax_log = 0x30001,
	use_global_stats = 1, use_scale = 2, use_shift = 4,
	q_impl_info_str = 8, q_weights_md = 131, q_scratchpad_md = 136,
	scratchpad_user = 1, engine_cpu = 1, stream_default = 1,
	ARG_SRC = 1, ARG_DST = 17, ARG_WEIGHTS = 33, ARG_BIAS = 41, ARG_MEAN = 49, ARG_VARIANCE = 50,
	ARG_SCALE = 51, ARG_SHIFT = 52, ARG_SCRATCHPAD = 80,
};
typedef struct { int arg; void *memory; } exec_arg;
typedef struct { int major, minor, patch; const char *hash; unsigned cpu_runtime, gpu_runtime; } version_t;

static struct {
	int (*engine_create)(void **, int, size_t);
	int (*stream_create)(void **, void *, unsigned);
	int (*stream_wait)(void *);
	int (*stream_destroy)(void *);
	int (*md_create_with_tag)(md_t *, int, const dims_t, int, int);
	int (*md_destroy)(md_t);
	int (*md_equal)(const md_t, const md_t);
	size_t (*md_get_size)(const md_t);
	int (*attr_create)(void **);
	int (*attr_destroy)(void *);
	int (*attr_set_scratchpad_mode)(void *, int);
	int (*attr_set_post_ops)(void *, void *);
	int (*post_ops_create)(void **);
	int (*post_ops_destroy)(void *);
	int (*post_ops_append_eltwise)(void *, int, float, float);
	int (*conv_pd_create)(void **, void *, int, int, const md_t, const md_t, const md_t, const md_t,
		const dims_t, const dims_t, const dims_t, const dims_t, const void *);
	int (*pool_pd_create)(void **, void *, int, int, const md_t, const md_t,
		const dims_t, const dims_t, const dims_t, const dims_t, const dims_t, const void *);
	int (*reorder_pd_create)(void **, const md_t, void *, const md_t, void *, const void *);
	int (*softmax_pd_create)(void **, void *, int, int, const md_t, const md_t, int, const void *);
	int (*lnorm_pd_create)(void **, void *, int, const md_t, const md_t, const md_t, float, unsigned, const void *);
	int (*bnorm_pd_create)(void **, void *, int, const md_t, const md_t, float, unsigned, const void *);
	int (*matmul_pd_create)(void **, void *, const md_t, const md_t, const md_t, const md_t, const void *);
	int (*pd_query)(const void *, int, int, void *);
	md_t (*pd_query_md)(const void *, int, int);
	int (*pd_destroy)(void *);
	int (*primitive_create)(void **, const void *);
	int (*primitive_execute)(const void *, void *, int, const exec_arg *);
	int (*primitive_destroy)(void *);
	int (*memory_create)(void **, const md_t, void *, void *);
	int (*memory_destroy)(void *);
	int (*memory_set_data_handle)(void *, void *);
	const version_t *(*version)(void);
	int (*get_effective_cpu_isa)(void);
} d;

static void *engine;

/* The OpenMP runtime oneDNN was built with (libgomp for the wheel), found
   through its handle: a team's size is the calling thread's nthreads ICV,
   which use_threads sets before every create and run, in the same cgo
   call, so that the goroutine cannot move to another OS thread between.
   Both matter: oneDNN fixes a primitive's thread count (its work split
   and scratchpad) when it creates it, and parallel regions without one
   read the ICV. Absent (a TBB or sequential build), nothing is set. */
static void (*omp_set_num_threads_)(int);
static int omp_default; /* omp_get_max_threads() at load: OMP_NUM_THREADS or the cores */

static void use_threads(int n) {
	if (omp_set_num_threads_) omp_set_num_threads_(n > 0 ? n : omp_default);
}

int ms_dnnl_omp_default(void) { return omp_set_num_threads_ ? omp_default : 0; }

#define SYM(field, name) if (!(*(void **)&d.field = dlsym(h, name))) { snprintf(err, errlen, "%s: no %s", path, name); return 0; }

int ms_dnnl_open(const char *path, char *err, int errlen) {
	void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		snprintf(err, errlen, "%s", dlerror());
		return 0;
	}
	SYM(version, "dnnl_version");
	if (d.version()->major != 3) {
		snprintf(err, errlen, "%s is oneDNN %d.%d: 3.x is needed", path, d.version()->major, d.version()->minor);
		return 0;
	}
	SYM(engine_create, "dnnl_engine_create");
	SYM(stream_create, "dnnl_stream_create");
	SYM(stream_wait, "dnnl_stream_wait");
	SYM(stream_destroy, "dnnl_stream_destroy");
	SYM(md_create_with_tag, "dnnl_memory_desc_create_with_tag");
	SYM(md_destroy, "dnnl_memory_desc_destroy");
	SYM(md_equal, "dnnl_memory_desc_equal");
	SYM(md_get_size, "dnnl_memory_desc_get_size");
	SYM(attr_create, "dnnl_primitive_attr_create");
	SYM(attr_destroy, "dnnl_primitive_attr_destroy");
	SYM(attr_set_scratchpad_mode, "dnnl_primitive_attr_set_scratchpad_mode");
	SYM(attr_set_post_ops, "dnnl_primitive_attr_set_post_ops");
	SYM(post_ops_create, "dnnl_post_ops_create");
	SYM(post_ops_destroy, "dnnl_post_ops_destroy");
	SYM(post_ops_append_eltwise, "dnnl_post_ops_append_eltwise");
	SYM(conv_pd_create, "dnnl_convolution_forward_primitive_desc_create");
	SYM(pool_pd_create, "dnnl_pooling_forward_primitive_desc_create");
	SYM(reorder_pd_create, "dnnl_reorder_primitive_desc_create");
	SYM(softmax_pd_create, "dnnl_softmax_forward_primitive_desc_create");
	SYM(lnorm_pd_create, "dnnl_layer_normalization_forward_primitive_desc_create");
	SYM(bnorm_pd_create, "dnnl_batch_normalization_forward_primitive_desc_create");
	SYM(matmul_pd_create, "dnnl_matmul_primitive_desc_create");
	SYM(pd_query, "dnnl_primitive_desc_query");
	SYM(pd_query_md, "dnnl_primitive_desc_query_md");
	SYM(pd_destroy, "dnnl_primitive_desc_destroy");
	SYM(primitive_create, "dnnl_primitive_create");
	SYM(primitive_execute, "dnnl_primitive_execute");
	SYM(primitive_destroy, "dnnl_primitive_destroy");
	SYM(memory_create, "dnnl_memory_create");
	SYM(memory_destroy, "dnnl_memory_destroy");
	SYM(memory_set_data_handle, "dnnl_memory_set_data_handle");
	SYM(get_effective_cpu_isa, "dnnl_get_effective_cpu_isa");
	*(void **)&omp_set_num_threads_ = dlsym(h, "omp_set_num_threads");
	int (*omp_get_max_threads_)(void);
	*(void **)&omp_get_max_threads_ = dlsym(h, "omp_get_max_threads");
	if (!omp_get_max_threads_) omp_set_num_threads_ = NULL;
	else omp_default = omp_get_max_threads_();
	int st = d.engine_create(&engine, engine_cpu, 0);
	if (st) {
		snprintf(err, errlen, "%s: dnnl_engine_create: status %d", path, st);
		return 0;
	}
	return 1;
}

void ms_dnnl_version(int *major, int *minor, int *patch) {
	const version_t *v = d.version();
	*major = v->major;
	*minor = v->minor;
	*patch = v->patch;
}

int ms_dnnl_isa(void) { return d.get_effective_cpu_isa(); }

static const char *status_name(int st) {
	static const char *names[] = {"success", "out_of_memory", "invalid_arguments", "unimplemented",
		"last_impl_reached", "runtime_error", "not_required", "invalid_graph", "invalid_graph_op",
		"invalid_shape", "invalid_data_type"};
	return st >= 0 && st < (int)(sizeof names / sizeof names[0]) ? names[st] : "unknown status";
}

#define CHECK(call) do { int st_ = (call); if (st_) { snprintf(err, errlen, "%s: %s", #call, status_name(st_)); goto fail; } } while (0)

/* A run's stream and memory objects, kept between runs: creating them
   cost more than a small primitive's run (5-9 us a call at a batch of one,
   most of it malloc and free), so each primitive keeps a free list of
   slots, one per run ever in flight at once, and a run only points the
   memory objects at its buffers (dnnl_memory_set_data_handle). A stream
   or memory object serves one run at a time, whichever thread runs it. */
#define SLOT_MEMS 10
typedef struct slot {
	struct slot *next;
	void *stream;
	void *mem[SLOT_MEMS]; /* by the owner's argument order; NULL until made */
	const void *packed;   /* conv: the packed weights mem[WEI] points at */
} slot;

typedef struct {
	atomic_int held; /* slots_lock */
	slot *free;
} slots;

/* slots_lock guards a pop or a push of the free list, a few nanoseconds.
   The threads of a split loop come to it together (every chunk of a
   pooling runs the same primitive), and a pthread mutex found held puts
   its thread to sleep on a futex at once, to be woken by the holder's
   unlock: a thread switch for a wait of nanoseconds. perf of cnn at B=1,
   one client thread: 620 such sleeps a second beside 9200 requests, one
   request in 15. The lock spins instead, and yields the CPU after 64
   pauses (2-3 us, a hundred times the hold), when the holder must have
   been preempted inside. */
static void slots_lock(slots *l) {
	for (unsigned spins = 0; atomic_exchange_explicit(&l->held, 1, memory_order_acquire);)
		while (atomic_load_explicit(&l->held, memory_order_relaxed)) {
			if (++spins % 64 == 0) sched_yield();
#if defined(__x86_64__) || defined(__i386__)
			else __builtin_ia32_pause();
#endif
		}
}

static void slots_unlock(slots *l) { atomic_store_explicit(&l->held, 0, memory_order_release); }

static slot *slot_take(slots *l, char *err, int errlen) {
	slots_lock(l);
	slot *sl = l->free;
	if (sl) l->free = sl->next;
	slots_unlock(l);
	if (sl) return sl;
	if (!(sl = calloc(1, sizeof *sl))) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	int st = d.stream_create(&sl->stream, engine, stream_default);
	if (st) {
		snprintf(err, errlen, "dnnl_stream_create: %s", "failed");
		free(sl);
		return NULL;
	}
	return sl;
}

static void slot_free(slot *sl) {
	for (int i = 0; i < SLOT_MEMS; i++)
		if (sl->mem[i]) d.memory_destroy(sl->mem[i]);
	if (sl->stream) d.stream_destroy(sl->stream);
	free(sl);
}

/* slot_give returns sl to the list after a run that succeeded; one that
   failed is freed (its objects may be in any state). */
static void slot_give(slots *l, slot *sl, int ok) {
	if (!ok) {
		slot_free(sl);
		return;
	}
	slots_lock(l);
	sl->next = l->free;
	l->free = sl;
	slots_unlock(l);
}

static void slots_init(slots *l) { atomic_init(&l->held, 0); }

static void slots_free(slots *l) {
	for (slot *sl = l->free, *next; sl; sl = next) {
		next = sl->next;
		slot_free(sl);
	}
}

/* bind points sl's memory object i (made for md on first use) at buf. */
static int bind(slot *sl, int i, md_t md, const void *buf, char *err, int errlen) {
	int st;
	if (!sl->mem[i]) st = d.memory_create(&sl->mem[i], md, engine, (void *)buf);
	else st = d.memory_set_data_handle(sl->mem[i], (void *)buf);
	if (st) snprintf(err, errlen, "binding argument %d: %s", i, st == 1 ? "out of memory" : "invalid arguments");
	return st == 0;
}

/* A convolution primitive made for one (node, shape). The weights are kept
   in the node's HWIO layout by the caller and reordered into the layout the
   primitive chose: once (ms_conv_pack) when they are constant, else per
   run, into a buffer of that run. */
struct ms_conv {
	void *pd, *prim, *reorder_pd, *reorder;
	md_t src_md, wei_user_md, bias_md, dst_md;
	md_t wei_md, scratch_md; /* owned by pd */
	size_t wei_size, scratch_size;
	int bias;
	slots runs;
};

/* A conv slot's memory objects. */
enum { C_SRC, C_DST, C_BIAS, C_WEI_USER, C_WEI, C_SCR };

void ms_conv_free(ms_conv *c) {
	if (!c) return;
	slots_free(&c->runs);
	if (c->reorder) d.primitive_destroy(c->reorder);
	if (c->reorder_pd) d.pd_destroy(c->reorder_pd);
	if (c->prim) d.primitive_destroy(c->prim);
	if (c->pd) d.pd_destroy(c->pd);
	md_t mds[] = {c->src_md, c->wei_user_md, c->bias_md, c->dst_md};
	for (int i = 0; i < 4; i++)
		if (mds[i]) d.md_destroy(mds[i]);
	free(c);
}

int ms_conv_create(const int64_t *p, int bias, int relu, int threads, ms_conv **out, char *err, int errlen) {
	int64_t N = p[0], C = p[1], H = p[2], W = p[3], O = p[4], KH = p[5], KW = p[6];
	int64_t OH = p[15], OW = p[16];
	void *attr = NULL, *po = NULL;
	md_t wei_any = NULL;
	ms_conv *c = calloc(1, sizeof *c);
	if (!c) {
		snprintf(err, errlen, "out of memory");
		return 0;
	}
	c->bias = bias;
	slots_init(&c->runs);
	use_threads(threads);
	dims_t src = {N, C, H, W}, wei = {O, C, KH, KW}, dst = {N, O, OH, OW}, b = {O};
	dims_t strides = {p[7], p[8]}, dil = {p[9] - 1, p[10] - 1}, pl = {p[11], p[12]}, pr = {p[13], p[14]};
	CHECK(d.md_create_with_tag(&c->src_md, 4, src, f32, tag_nhwc));
	CHECK(d.md_create_with_tag(&c->wei_user_md, 4, wei, f32, tag_hwio));
	CHECK(d.md_create_with_tag(&wei_any, 4, wei, f32, tag_any));
	CHECK(d.md_create_with_tag(&c->dst_md, 4, dst, f32, tag_nhwc));
	if (bias) CHECK(d.md_create_with_tag(&c->bias_md, 1, b, f32, 2 /* a */));
	CHECK(d.attr_create(&attr));
	CHECK(d.attr_set_scratchpad_mode(attr, scratchpad_user));
	if (relu) {
		CHECK(d.post_ops_create(&po));
		CHECK(d.post_ops_append_eltwise(po, eltwise_relu, 0, 0));
		CHECK(d.attr_set_post_ops(attr, po));
	}
	CHECK(d.conv_pd_create(&c->pd, engine, fwd_inference, conv_direct, c->src_md, wei_any,
		c->bias_md, c->dst_md, strides, dil, pl, pr, attr));
	CHECK(d.primitive_create(&c->prim, c->pd));
	c->wei_md = d.pd_query_md(c->pd, q_weights_md, 0);
	c->scratch_md = d.pd_query_md(c->pd, q_scratchpad_md, 0);
	c->scratch_size = c->scratch_md ? d.md_get_size(c->scratch_md) : 0;
	if (!d.md_equal(c->wei_md, c->wei_user_md)) {
		c->wei_size = d.md_get_size(c->wei_md);
		CHECK(d.reorder_pd_create(&c->reorder_pd, c->wei_user_md, engine, c->wei_md, engine, NULL));
		CHECK(d.primitive_create(&c->reorder, c->reorder_pd));
	}
	d.md_destroy(wei_any);
	if (po) d.post_ops_destroy(po);
	d.attr_destroy(attr);
	*out = c;
	return 1;
fail:
	if (wei_any) d.md_destroy(wei_any);
	if (po) d.post_ops_destroy(po);
	if (attr) d.attr_destroy(attr);
	ms_conv_free(c);
	return 0;
}

static char *align64(void *p) { return (char *)(((uintptr_t)p + 63) & ~(uintptr_t)63); }

size_t ms_conv_work_size(ms_conv *c) { return c->wei_size + c->scratch_size + 128; }

int ms_conv_same_weights(ms_conv *a, ms_conv *b) {
	return a->reorder && b->reorder && d.md_equal(a->wei_md, b->wei_md);
}

size_t ms_conv_packed_size(ms_conv *c) { return c->reorder ? c->wei_size + 64 : 0; }

size_t ms_conv_scratch_size(ms_conv *c) { return c->scratch_size + 64; }

/* ms_conv_pack reorders the HWIO weights wei into out (ms_conv_packed_size
   bytes; they start at its first 64-byte boundary), the layout the
   primitive chose. */
int ms_conv_pack(ms_conv *c, int threads, const float *wei, void *out, char *err, int errlen) {
	use_threads(threads);
	void *stream = NULL, *m_user = NULL, *m_wei = NULL;
	int ok = 0;
	if (!c->reorder) {
		snprintf(err, errlen, "the primitive takes its weights as they are: nothing to pack");
		return 0;
	}
	CHECK(d.stream_create(&stream, engine, stream_default));
	CHECK(d.memory_create(&m_user, c->wei_user_md, engine, (void *)wei));
	CHECK(d.memory_create(&m_wei, c->wei_md, engine, align64(out)));
	exec_arg ra[] = {{ARG_SRC, m_user}, {ARG_DST, m_wei}};
	CHECK(d.primitive_execute(c->reorder, stream, 2, ra));
	CHECK(d.stream_wait(stream));
	ok = 1;
fail:
	if (m_user) d.memory_destroy(m_user);
	if (m_wei) d.memory_destroy(m_wei);
	if (stream) d.stream_destroy(stream);
	return ok;
}

/* work holds ms_conv_work_size bytes: the reordered weights and the
   scratchpad, each at a 64-byte boundary. With packed (ms_conv_pack's
   output) the weights are not reordered and work holds only the
   scratchpad (ms_conv_scratch_size bytes); wei is then unused. */
static int conv_run(ms_conv *c, int threads, const float *src, const float *wei, const void *packed, const float *bias, float *dst, void *work, char *err, int errlen) {
	use_threads(threads);
	char *wbuf = align64(work), *sbuf = packed ? wbuf : align64(wbuf + c->wei_size);
	slot *sl = slot_take(&c->runs, err, errlen);
	if (!sl) return 0;
	int ok = 0;
	if (!bind(sl, C_SRC, c->src_md, src, err, errlen) || !bind(sl, C_DST, c->dst_md, dst, err, errlen)) goto fail;
	if (c->bias && !bind(sl, C_BIAS, c->bias_md, bias, err, errlen)) goto fail;
	void *m_w;
	if (packed) {
		/* The packed weights never move once made: bound once per slot. */
		if (sl->packed != packed && !bind(sl, C_WEI, c->wei_md, align64((void *)packed), err, errlen)) goto fail;
		sl->packed = packed;
		m_w = sl->mem[C_WEI];
	} else {
		if (!bind(sl, C_WEI_USER, c->wei_user_md, wei, err, errlen)) goto fail;
		m_w = sl->mem[C_WEI_USER];
		if (c->reorder) {
			sl->packed = NULL;
			if (!bind(sl, C_WEI, c->wei_md, wbuf, err, errlen)) goto fail;
			exec_arg ra[] = {{ARG_SRC, sl->mem[C_WEI_USER]}, {ARG_DST, sl->mem[C_WEI]}};
			CHECK(d.primitive_execute(c->reorder, sl->stream, 2, ra));
			m_w = sl->mem[C_WEI];
		}
	}
	exec_arg a[5] = {{ARG_SRC, sl->mem[C_SRC]}, {ARG_WEIGHTS, m_w}, {ARG_DST, sl->mem[C_DST]}};
	int na = 3;
	if (c->bias) a[na++] = (exec_arg){ARG_BIAS, sl->mem[C_BIAS]};
	if (c->scratch_size) {
		if (!bind(sl, C_SCR, c->scratch_md, sbuf, err, errlen)) goto fail;
		a[na++] = (exec_arg){ARG_SCRATCHPAD, sl->mem[C_SCR]};
	}
	CHECK(d.primitive_execute(c->prim, sl->stream, na, a));
	CHECK(d.stream_wait(sl->stream));
	ok = 1;
fail:
	slot_give(&c->runs, sl, ok);
	return ok;
}

static const char *impl_of(void *pd) {
	const char *s = NULL;
	if (d.pd_query(pd, q_impl_info_str, 0, &s) || !s) return "?";
	return s;
}

const char *ms_conv_impl(ms_conv *c) { return impl_of(c->pd); }

/* A primitive whose arguments are plain buffers in the layouts given at
   creation (every op here but the convolution, whose weights are
   reordered): run binds one pointer per argument and the scratchpad. */
#define MAX_ARGS 8
_Static_assert(sizeof(((ms_prim_run_args *)0)->args) / sizeof(float *) == MAX_ARGS, "ms_prim_run_args holds MAX_ARGS arguments");
struct ms_prim {
	void *pd, *prim;
	int n;
	int args[MAX_ARGS];
	md_t mds[MAX_ARGS]; /* owned */
	md_t scratch_md;    /* owned by pd */
	size_t scratch_size;
	slots runs; /* memory objects 0..n-1 the arguments, MAX_ARGS the scratchpad */
};

void ms_prim_free(ms_prim *c) {
	if (!c) return;
	slots_free(&c->runs);
	if (c->prim) d.primitive_destroy(c->prim);
	if (c->pd) d.pd_destroy(c->pd);
	for (int i = 0; i < c->n; i++)
		if (c->mds[i]) d.md_destroy(c->mds[i]);
	free(c);
}

/* add makes a plain descriptor for argument arg; it returns it (owned by
   c), or NULL with err set. */
static md_t add(ms_prim *c, int arg, int ndims, const int64_t *dims, int tag, char *err, int errlen) {
	dims_t dd = {0};
	for (int i = 0; i < ndims; i++) dd[i] = dims[i];
	md_t md = NULL;
	int st = d.md_create_with_tag(&md, ndims, dd, f32, tag);
	if (st) {
		snprintf(err, errlen, "dnnl_memory_desc_create_with_tag: %s", status_name(st));
		return NULL;
	}
	c->args[c->n] = arg;
	c->mds[c->n++] = md;
	return md;
}

static ms_prim *prim_new(int threads, char *err, int errlen) {
	use_threads(threads);
	ms_prim *c = calloc(1, sizeof *c);
	if (!c) snprintf(err, errlen, "out of memory");
	else slots_init(&c->runs);
	return c;
}

/* prim_finish makes the primitive from c->pd and frees attr; on failure
   it frees c. */
static int prim_finish(ms_prim *c, int st, const char *what, void *attr, ms_prim **out, char *err, int errlen) {
	if (attr) d.attr_destroy(attr);
	if (st) {
		snprintf(err, errlen, "%s: %s", what, status_name(st));
		ms_prim_free(c);
		return 0;
	}
	if ((st = d.primitive_create(&c->prim, c->pd))) {
		snprintf(err, errlen, "dnnl_primitive_create: %s", status_name(st));
		ms_prim_free(c);
		return 0;
	}
	c->scratch_md = d.pd_query_md(c->pd, q_scratchpad_md, 0);
	c->scratch_size = c->scratch_md ? d.md_get_size(c->scratch_md) : 0;
	*out = c;
	return 1;
}

static void *user_scratchpad_attr(void) {
	void *attr = NULL;
	if (d.attr_create(&attr)) return NULL;
	d.attr_set_scratchpad_mode(attr, scratchpad_user);
	return attr;
}

const char *ms_prim_impl(ms_prim *c) { return impl_of(c->pd); }

size_t ms_prim_work_size(ms_prim *c) { return c->scratch_size + 64; }

static int prim_run(ms_prim *c, int threads, void *const *ptrs, void *work, char *err, int errlen) {
	use_threads(threads);
	slot *sl = slot_take(&c->runs, err, errlen);
	if (!sl) return 0;
	exec_arg a[MAX_ARGS + 1];
	int na = 0, ok = 0;
	for (; na < c->n; na++) {
		if (!bind(sl, na, c->mds[na], ptrs[na], err, errlen)) goto fail;
		a[na] = (exec_arg){c->args[na], sl->mem[na]};
	}
	if (c->scratch_size) {
		if (!bind(sl, MAX_ARGS, c->scratch_md, align64(work), err, errlen)) goto fail;
		a[na++] = (exec_arg){ARG_SCRATCHPAD, sl->mem[MAX_ARGS]};
	}
	CHECK(d.primitive_execute(c->prim, sl->stream, na, a));
	CHECK(d.stream_wait(sl->stream));
	ok = 1;
fail:
	slot_give(&c->runs, sl, ok);
	return ok;
}

/* The runs Go makes, on every call of a kernel, through ccall.Call (dl.h's
   argument structs): they take no error buffer from the caller (a Go
   array whose address goes to C escapes to the Go heap: an allocation a
   call); a failure comes back as a message to free, NULL is success. */
void ms_conv_run_call(void *p) {
	ms_conv_run_args *a = p;
	char err[256];
	a->err = conv_run(a->c, a->threads, a->src, a->wei, a->packed, a->bias, a->dst, a->work, err, sizeof err) ? NULL
		: strdup(err);
}

void ms_prim_run_call(void *p) {
	ms_prim_run_args *a = p;
	char err[256];
	a->err = prim_run(a->c, a->threads, (void *const *)a->args, a->work, err, sizeof err) ? NULL : strdup(err);
}

#define ADD(arg, nd, dims, tag) if (!add(c, arg, nd, dims, tag, err, errlen)) { ms_prim_free(c); return 0; }

int ms_pool_create(const int64_t *p, int is_max, int threads, ms_prim **out, char *err, int errlen) {
	int64_t src[] = {p[0], p[1], p[2], p[3]}, dst[] = {p[0], p[1], p[4], p[5]};
	dims_t kernel = {p[6], p[7]}, strides = {p[8], p[9]}, dil = {0, 0}, pl = {p[10], p[11]}, pr = {p[12], p[13]};
	ms_prim *c = prim_new(threads, err, errlen);
	if (!c) return 0;
	ADD(ARG_SRC, 4, src, tag_nhwc);
	ADD(ARG_DST, 4, dst, tag_nhwc);
	void *attr = user_scratchpad_attr();
	int st = d.pool_pd_create(&c->pd, engine, fwd_inference, is_max ? pool_max : pool_avg_exclude_padding,
		c->mds[0], c->mds[1], strides, kernel, dil, pl, pr, attr);
	return prim_finish(c, st, "dnnl_pooling_forward_primitive_desc_create", attr, out, err, errlen);
}

int ms_softmax_create(int64_t rows, int64_t cols, int log, int threads, ms_prim **out, char *err, int errlen) {
	int64_t dims[] = {rows, cols};
	ms_prim *c = prim_new(threads, err, errlen);
	if (!c) return 0;
	ADD(ARG_SRC, 2, dims, tag_ab);
	ADD(ARG_DST, 2, dims, tag_ab);
	void *attr = user_scratchpad_attr();
	int st = d.softmax_pd_create(&c->pd, engine, fwd_inference, log ? softmax_log : softmax_accurate,
		c->mds[0], c->mds[1], 1, attr);
	return prim_finish(c, st, "dnnl_softmax_forward_primitive_desc_create", attr, out, err, errlen);
}

int ms_lnorm_create(int64_t rows, int64_t cols, float eps, int threads, ms_prim **out, char *err, int errlen) {
	int64_t dims[] = {rows, cols};
	ms_prim *c = prim_new(threads, err, errlen);
	if (!c) return 0;
	ADD(ARG_SRC, 2, dims, tag_ab);
	ADD(ARG_DST, 2, dims, tag_ab);
	ADD(ARG_MEAN, 1, dims, tag_a);
	ADD(ARG_VARIANCE, 1, dims, tag_a);
	void *attr = user_scratchpad_attr();
	int st = d.lnorm_pd_create(&c->pd, engine, fwd_training, c->mds[0], c->mds[1], c->mds[2], eps, 0, attr);
	return prim_finish(c, st, "dnnl_layer_normalization_forward_primitive_desc_create", attr, out, err, errlen);
}

int ms_bnorm_create(int64_t n, int64_t ch, int64_t spatial, float eps, int training, int threads, ms_prim **out, char *err, int errlen) {
	/* NHWC as [n, ch, spatial, 1] in nhwc order: channels innermost. */
	int64_t dims[] = {n, ch, spatial, 1}, cd[] = {ch};
	ms_prim *c = prim_new(threads, err, errlen);
	if (!c) return 0;
	ADD(ARG_SRC, 4, dims, tag_nhwc);
	ADD(ARG_DST, 4, dims, tag_nhwc);
	ADD(ARG_SCALE, 1, cd, tag_a);
	ADD(ARG_SHIFT, 1, cd, tag_a);
	ADD(ARG_MEAN, 1, cd, tag_a);
	ADD(ARG_VARIANCE, 1, cd, tag_a);
	void *attr = user_scratchpad_attr();
	unsigned flags = use_scale | use_shift | (training ? 0 : use_global_stats);
	int st = d.bnorm_pd_create(&c->pd, engine, training ? fwd_training : fwd_inference, c->mds[0], c->mds[1], eps, flags, attr);
	return prim_finish(c, st, "dnnl_batch_normalization_forward_primitive_desc_create", attr, out, err, errlen);
}

int ms_matmul_create(int64_t m, int64_t k, int64_t n, int ta, int tb, int bias, int act, float alpha, float beta,
	int threads, ms_prim **out, char *err, int errlen) {
	int64_t a[] = {m, k}, b[] = {k, n}, bd[] = {1, n}, dst[] = {m, n};
	void *po = NULL;
	ms_prim *c = prim_new(threads, err, errlen);
	if (!c) return 0;
	ADD(ARG_SRC, 2, a, ta ? tag_ba : tag_ab);
	ADD(ARG_WEIGHTS, 2, b, tb ? tag_ba : tag_ab);
	ADD(ARG_DST, 2, dst, tag_ab);
	if (bias) ADD(ARG_BIAS, 2, bd, tag_ab);
	void *attr = user_scratchpad_attr();
	if (act) {
		d.post_ops_create(&po);
		d.post_ops_append_eltwise(po, act, alpha, beta);
		d.attr_set_post_ops(attr, po);
		d.post_ops_destroy(po);
	}
	int st = d.matmul_pd_create(&c->pd, engine, c->mds[0], c->mds[1], bias ? c->mds[3] : NULL, c->mds[2], attr);
	return prim_finish(c, st, "dnnl_matmul_primitive_desc_create", attr, out, err, errlen);
}

/* The team-size probe (tests only): runs one primitive on a new thread
   named "ms-omp-probe", whose OpenMP workers inherit the name, and counts
   the process's threads of that name before the probe thread exits (and
   its pool with it): the caller plus the workers its team started. */
struct probe {
	ms_conv *conv;
	ms_prim *prim;
	int threads;
	const float *src, *wei, *bias;
	float *dst;
	void *const *ptrs;
	void *work;
	int ok, count;
	char *err;
	int errlen;
};

static int count_named(const char *name) {
	DIR *dir = opendir("/proc/self/task");
	if (!dir) return -1;
	int n = 0;
	struct dirent *e;
	while ((e = readdir(dir))) {
		if (e->d_name[0] == '.') continue;
		char path[300], comm[32] = {0};
		snprintf(path, sizeof path, "/proc/self/task/%s/comm", e->d_name);
		FILE *f = fopen(path, "r");
		if (!f) continue;
		if (fgets(comm, sizeof comm, f)) {
			comm[strcspn(comm, "\n")] = 0;
			if (!strcmp(comm, name)) n++;
		}
		fclose(f);
	}
	closedir(dir);
	return n;
}

static void *probe_main(void *arg) {
	struct probe *p = arg;
	prctl(PR_SET_NAME, "ms-omp-probe", 0, 0, 0);
	if (p->conv)
		p->ok = conv_run(p->conv, p->threads, p->src, p->wei, NULL, p->bias, p->dst, p->work, p->err, p->errlen);
	else
		p->ok = prim_run(p->prim, p->threads, p->ptrs, p->work, p->err, p->errlen);
	p->count = count_named("ms-omp-probe");
	return NULL;
}

int ms_dnnl_team_probe(ms_conv *conv, ms_prim *prim, int threads, const float *src, const float *wei, const float *bias,
	float *dst, void *const *ptrs, void *work, char *err, int errlen) {
	struct probe p = {conv, prim, threads, src, wei, bias, dst, ptrs, work, 0, 0, err, errlen};
	pthread_t t;
	if (pthread_create(&t, NULL, probe_main, &p)) {
		snprintf(err, errlen, "pthread_create failed");
		return -1;
	}
	pthread_join(t, NULL);
	return p.ok ? p.count : -1;
}
