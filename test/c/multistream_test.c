/* Multi-stream sessions through the C API, as a user drives them with the
 * TF_* environment variables:
 *   trace  TF_GPU_STREAM_GROUP_COUNT=2 and MSTREAM_TRACE: RunOptions FULL_TRACE
 *          fills RunMetadata.step_stats (decoded here from the wire format)
 *          with one DeviceStepStats per stream, each node's start/end, its
 *          stream and group, the bytes it allocated, and copies ordered
 *          around the kernels; MS_SessionWriteTrace and MSTREAM_TRACE write a
 *          Chrome trace with slices and flow arrows; MS_SessionStats counts
 *          the runs and the cross-stream waits.
 *   oom    a 1 MiB host device split over 2 groups (and, in oom1, one group
 *          on the inter-op pool): a node or a feed that does not fit fails
 *          with RESOURCE_EXHAUSTED naming the node or feed, the size and the
 *          allocator's state, and the same session then runs normally.
 *   bad_*  a bad knob fails TF_NewSession with INVALID_ARGUMENT naming the
 *          variable, the value and what is accepted.
 * The runtime reads the environment once, when the library loads, so each
 * phase is a fresh process: the program re-executes itself (execv, no fork)
 * with the next phase's environment, passing the counts along. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util.h"

static char trace_env_path[256], trace_api_path[256];

/* ---- the graph: y = Relu(x @ w) + x, x fed [rows,4] ----------------------- */

static const float w_vals[16] = {0.5f, -1.0f, 0.25f, 2.0f, 1.5f, 0.75f, -0.5f, 1.0f,
                                 -2.0f, 0.5f, 1.0f, -0.25f, 0.125f, 1.0f, 0.5f, -1.5f};

static void build(TF_Graph* g, TF_Status* s) {
  int64_t xd[2] = {-1, 4}, wd[2] = {4, 4};
  placeholder(g, "x", TF_FLOAT, xd, 2, s);
  CHECK_OK(s, "placeholder x");
  const_op(g, "w", TF_FLOAT, wd, 2, w_vals, s);
  CHECK_OK(s, "const w");
  binary(g, "MatMul", "mm", out0(g, "x"), out0(g, "w"), s);
  CHECK_OK(s, "MatMul");
  unary(g, "Relu", "relu", out0(g, "mm"), s);
  CHECK_OK(s, "Relu");
  binary(g, "AddV2", "y", out0(g, "relu"), out0(g, "x"), s);
  CHECK_OK(s, "AddV2");
}

static int check_y(const TF_Tensor* y, const float* x, int rows, const char* what) {
  if (!y || TF_NumDims(y) != 2 || TF_Dim(y, 0) != rows || TF_Dim(y, 1) != 4) {
    CHECK(0, "%s: output missing or not [%d,4]", what, rows);
    return 0;
  }
  const float* got = TF_TensorData(y);
  for (int r = 0; r < rows; r++) {
    for (int c = 0; c < 4; c++) {
      double acc = 0;
      for (int k = 0; k < 4; k++) acc += (double)x[r * 4 + k] * w_vals[k * 4 + c];
      double want = (acc > 0 ? acc : 0) + x[r * 4 + c];
      if (fabs(got[r * 4 + c] - want) > 1e-5 * (1 + fabs(want))) {
        CHECK(0, "%s: y[%d,%d] = %g, want %g", what, r, c, got[r * 4 + c], want);
        return 0;
      }
    }
  }
  CHECK(1, "%s", what);
  return 1;
}

static TF_Tensor* random_x(int rows, float* x) {
  for (int i = 0; i < rows * 4; i++) x[i] = (float)(rand() % 2001 - 1000) / 250.0f;
  int64_t d[2] = {rows, 4};
  return make_tensor(TF_FLOAT, d, 2, x);
}

/* Runs y with x fed; run_options and metadata may be NULL. */
static TF_Tensor* run_y(TF_Session* sess, TF_Graph* g, TF_Tensor* xt, const TF_Buffer* ro, TF_Buffer* md,
                        TF_Status* s) {
  TF_Output in = out0(g, "x"), out = out0(g, "y");
  TF_Tensor* r = NULL;
  TF_SessionRun(sess, ro, &in, &xt, 1, &out, &r, 1, NULL, 0, md, s);
  if (TF_GetCode(s) != TF_OK && r) { TF_DeleteTensor(r); r = NULL; }
  return r;
}

static TF_Session* new_session(TF_Graph* g, TF_Status* s) {
  TF_SessionOptions* o = TF_NewSessionOptions();
  TF_Session* sess = TF_NewSession(g, o, s);
  TF_DeleteSessionOptions(o);
  CHECK_OK(s, "TF_NewSession");
  return sess;
}

/* ---- RunMetadata decoding ----------------------------------------------------- */

typedef struct {
  char name[64], label[128], device[96], thread[96];
  int64_t start_ns, end_ns, bytes;
} node_stat;

static int str_field(const pb_field* msg, int num, char* dst, size_t cap) {
  pb_field f;
  dst[0] = 0;
  if (!pb_get(msg->data, msg->len, num, 0, &f)) return 0;
  size_t n = f.len < cap - 1 ? f.len : cap - 1;
  memcpy(dst, f.data, n);
  dst[n] = 0;
  return 1;
}

static int64_t int_field(const pb_field* msg, int num) {
  pb_reader r = pb_of(msg->data, msg->len);
  pb_field f;
  while (pb_next(&r, &f))
    if (f.field == num && f.wire == 0) return (int64_t)f.v;
  return 0;
}

/* Flattens RunMetadata.step_stats.dev_stats[].node_stats[] into out. */
static int decode_stats(const TF_Buffer* md, node_stat* out, int cap, int* ndev) {
  pb_field ss, ds, ns;
  int n = 0;
  *ndev = 0;
  if (!pb_get(md->data, md->length, 1, 0, &ss)) return 0; /* RunMetadata.step_stats */
  for (int d = 0; pb_get(ss.data, ss.len, 1, d, &ds); d++) { /* StepStats.dev_stats */
    (*ndev)++;
    char dev[96], thread[96] = "";
    str_field(&ds, 1, dev, sizeof dev);
    pb_field tn;
    if (pb_get(ds.data, ds.len, 3, 0, &tn)) str_field(&tn, 2, thread, sizeof thread); /* thread_names entry value */
    for (int k = 0; n < cap && pb_get(ds.data, ds.len, 2, k, &ns); k++) { /* DeviceStepStats.node_stats */
      node_stat* st = &out[n++];
      memset(st, 0, sizeof *st);
      strcpy(st->device, dev);
      strcpy(st->thread, thread);
      str_field(&ns, 1, st->name, sizeof st->name);
      str_field(&ns, 8, st->label, sizeof st->label);
      st->start_ns = int_field(&ns, 13);
      st->end_ns = st->start_ns + int_field(&ns, 16);
      CHECK(int_field(&ns, 2) == st->start_ns / 1000, "%s: all_start_micros agrees with all_start_nanos", st->name);
      pb_field mem;
      if (pb_get(ns.data, ns.len, 6, 0, &mem)) st->bytes = int_field(&mem, 2); /* memory[0].total_bytes */
    }
  }
  return n;
}

static node_stat* find_stat(node_stat* st, int n, const char* name, const char* label_part) {
  for (int i = 0; i < n; i++)
    if (strcmp(st[i].name, name) == 0 && (!label_part || strstr(st[i].label, label_part))) return &st[i];
  return NULL;
}

static char* read_file(const char* path, size_t* len) {
  FILE* f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char* b = malloc((size_t)n + 1);
  size_t got = fread(b, 1, (size_t)n, f);
  fclose(f);
  b[got] = 0;
  if (len) *len = got;
  return b;
}

static int count_str(const char* hay, const char* needle) {
  int n = 0;
  for (const char* p = hay; (p = strstr(p, needle)) != NULL; p += strlen(needle)) n++;
  return n;
}

/* ---- phase trace -------------------------------------------------------------- */

static void phase_trace(void) {
  TF_Status* s = TF_NewStatus();
  TF_Graph* g = TF_NewGraph();
  build(g, s);
  TF_Session* sess = new_session(g, s);

  float x[3 * 4];
  TF_Tensor* xt = random_x(3, x);
  const unsigned char full_trace[] = {0x08, 0x03}; /* RunOptions { trace_level: FULL_TRACE } */
  TF_Buffer* ro = TF_NewBufferFromString(full_trace, sizeof full_trace);
  TF_Buffer* md = TF_NewBuffer();
  TF_Tensor* y = run_y(sess, g, xt, ro, md, s);
  CHECK_OK(s, "FULL_TRACE run on 2 groups");
  check_y(y, x, 3, "FULL_TRACE run value");
  if (y) TF_DeleteTensor(y);

  node_stat st[64];
  int ndev = 0;
  int n = decode_stats(md, st, 64, &ndev);
  /* h2d, compute and d2h are three streams of the group: three lanes. */
  CHECK(ndev == 3, "step_stats has %d DeviceStepStats, want 3 (h2d, compute, d2h streams)", ndev);
  node_stat *cp_in = find_stat(st, n, "x", "MEMCPYHtoD"), *mm = find_stat(st, n, "mm", NULL),
            *relu = find_stat(st, n, "relu", NULL), *add = find_stat(st, n, "y", NULL),
            *cp_out = find_stat(st, n, "y:0", "MEMCPYDtoH");
  CHECK(cp_in && mm && relu && add && cp_out, "step stats name the feed copy, mm, relu, y and the fetch copy (%d stats)", n);
  if (cp_in && mm && relu && add && cp_out) {
    for (int i = 0; i < n; i++) {
      CHECK(st[i].start_ns > 0 && st[i].end_ns >= st[i].start_ns, "%s: start %lld end %lld", st[i].name,
            (long long)st[i].start_ns, (long long)st[i].end_ns);
      CHECK(strstr(st[i].device, "/device:CPU:0/stream:") != NULL, "%s: device '%s' names its stream", st[i].name,
            st[i].device);
      CHECK(strncmp(st[i].thread, "group", 5) == 0, "%s: thread name '%s' names its group", st[i].name, st[i].thread);
    }
    CHECK(strstr(mm->thread, "compute") && strcmp(mm->device, relu->device) == 0 && strcmp(mm->device, add->device) == 0,
          "kernels share the compute stream (%s / %s)", mm->device, mm->thread);
    CHECK(strstr(cp_in->thread, "h2d") && strcmp(cp_in->device, mm->device) != 0, "feed copy on the h2d stream (%s)",
          cp_in->thread);
    CHECK(strstr(cp_out->thread, "d2h") && strcmp(cp_out->device, mm->device) != 0 &&
              strcmp(cp_out->device, cp_in->device) != 0,
          "fetch copy on the d2h stream (%s)", cp_out->thread);
    /* Events order the streams: the kernel started after the copy in ended,
     * the copy out after the last kernel. */
    CHECK(mm->start_ns >= cp_in->end_ns, "MatMul starts %lld ns after the feed copy ended",
          (long long)(mm->start_ns - cp_in->end_ns));
    CHECK(relu->start_ns >= mm->end_ns && add->start_ns >= relu->end_ns, "kernels in order on the compute stream");
    CHECK(cp_out->start_ns >= add->end_ns, "fetch copy starts %lld ns after y ended",
          (long long)(cp_out->start_ns - add->end_ns));
    /* Each kernel allocated its [3,4] float output: 48 bytes. */
    CHECK(mm->bytes == 48 && relu->bytes == 48 && add->bytes == 48, "bytes allocated mm %lld relu %lld y %lld, want 48",
          (long long)mm->bytes, (long long)relu->bytes, (long long)add->bytes);
    CHECK(strstr(cp_in->label, "48 bytes") != NULL, "copy label '%s' says the bytes moved", cp_in->label);
  }
  TF_DeleteBuffer(md);
  TF_DeleteBuffer(ro);

  /* Two untraced runs: with MSTREAM_TRACE every step is still recorded. */
  for (int i = 0; i < 2; i++) {
    y = run_y(sess, g, xt, NULL, NULL, s);
    CHECK_OK(s, "untraced run");
    check_y(y, x, 3, "untraced run value");
    if (y) TF_DeleteTensor(y);
  }
  TF_DeleteTensor(xt);

  TF_Buffer* js = TF_NewBuffer();
  MS_SessionStats(sess, js, s);
  CHECK_OK(s, "MS_SessionStats");
  char* stats = malloc(js->length + 1);
  memcpy(stats, js->data, js->length);
  stats[js->length] = 0;
  CHECK(strstr(stats, "\"runs_completed\":3,") != NULL, "stats count 3 runs");
  CHECK(count_str(stats, "\"stream_count\":4") == 2, "stats: 2 groups of 4 streams");
  CHECK(strstr(stats, "\"steps\":3,") != NULL && strstr(stats, "\"all_steps\":true") != NULL,
        "stats: the trace holds 3 steps, all recorded");
  /* Each step waits at least once across streams (compute on the feed copy,
   * d2h on the compute stream). */
  CHECK(count_str(stats, "\"runs_completed\":0,") == 0 && count_str(stats, "\"stream_waits\":0,") == 0,
        "stats: both groups served runs, and each inserted stream waits");
  free(stats);
  TF_DeleteBuffer(js);

  /* MS_SessionConfig: the knobs as this session read them. */
  js = TF_NewBuffer();
  MS_SessionConfig(sess, js, s);
  CHECK_OK(s, "MS_SessionConfig");
  char* cfg = malloc(js->length + 1);
  memcpy(cfg, js->data, js->length);
  cfg[js->length] = 0;
  CHECK(strstr(cfg, "\"name\":\"TF_GPU_STREAM_GROUP_COUNT\",\"value\":\"2\"") != NULL,
        "MS_SessionConfig gives TF_GPU_STREAM_GROUP_COUNT=2: %.200s", cfg);
  free(cfg);
  TF_DeleteBuffer(js);

  /* MS_SessionWriteTrace: a Chrome trace with a slice per kernel and copy. */
  MS_SessionWriteTrace(sess, trace_api_path, s);
  CHECK_OK(s, "MS_SessionWriteTrace");
  char* tr = read_file(trace_api_path, NULL);
  CHECK(tr != NULL, "trace file %s written", trace_api_path);
  if (tr) {
    CHECK(strncmp(tr, "{", 1) == 0 && strstr(tr, "\"traceEvents\":[") != NULL, "trace is a Chrome trace object");
    CHECK(count_str(tr, "\"ph\":\"X\"") == 15, "15 slices (3 steps x 5), got %d", count_str(tr, "\"ph\":\"X\""));
    CHECK(count_str(tr, "\"cat\":\"h2d\"") == 3 && count_str(tr, "\"cat\":\"d2h\"") == 3 &&
              count_str(tr, "\"cat\":\"kernel\"") == 9,
          "3 feed copies, 3 fetch copies, 9 kernels");
    int fs = count_str(tr, "\"ph\":\"s\""), ff = count_str(tr, "\"ph\":\"f\"");
    CHECK(fs > 0 && fs == ff, "flow arrows: %d starts, %d ends", fs, ff);
    CHECK(count_str(tr, "\"name\":\"thread_name\"") == 6 && count_str(tr, "\"name\":\"process_name\"") == 2,
          "one process per group (2), one track per stream used (3 each)");
    free(tr);
  }
  MS_SessionWriteTrace(sess, NULL, s);
  CHECK_ERR(s, TF_INVALID_ARGUMENT, "path", "MS_SessionWriteTrace(NULL path)");
  MS_SessionWriteTrace(sess, "/nonexistent-dir/t.json", s);
  CHECK_ERR(s, TF_INVALID_ARGUMENT, "/nonexistent-dir/t.json", "MS_SessionWriteTrace to a missing directory");
  MS_SessionWriteTrace(NULL, trace_api_path, s);
  CHECK_ERR(s, TF_INVALID_ARGUMENT, "session", "MS_SessionWriteTrace(NULL session)");

  /* MSTREAM_TRACE is written when the session closes. */
  CHECK(access(trace_env_path, F_OK) != 0, "MSTREAM_TRACE file not written before close");
  TF_CloseSession(sess, s);
  CHECK_OK(s, "TF_CloseSession");
  TF_DeleteSession(sess, s);
  CHECK_OK(s, "TF_DeleteSession");
  tr = read_file(trace_env_path, NULL);
  CHECK(tr != NULL, "MSTREAM_TRACE file %s written at close", trace_env_path);
  if (tr) {
    CHECK(strstr(tr, "\"steps\":3") != NULL && count_str(tr, "\"ph\":\"X\"") == 15,
          "MSTREAM_TRACE holds every step (3 steps, 15 slices)");
    free(tr);
  }
  unlink(trace_env_path);
  unlink(trace_api_path);
  TF_DeleteGraph(g);
  TF_DeleteStatus(s);
}

/* ---- phase oom ---------------------------------------------------------------- */

static void phase_oom(const char* what) {
  TF_Status* s = TF_NewStatus();
  TF_Graph* g = TF_NewGraph();
  build(g, s);
  /* big = Fill([256, 1024], 1.5): 1 MiB, more than any allocator has. */
  int64_t dd[1] = {2};
  int32_t dims[2] = {256, 1024};
  float one = 1.5f;
  const_op(g, "dims", TF_INT32, dd, 1, dims, s);
  const_op(g, "val", TF_FLOAT, NULL, 0, &one, s);
  binary(g, "Fill", "big", out0(g, "dims"), out0(g, "val"), s);
  CHECK_OK(s, "Fill");
  TF_Session* sess = new_session(g, s);

  float x[2 * 4];
  TF_Tensor* xt = random_x(2, x);
  for (int round = 0; round < 2; round++) {
    TF_Tensor* big = run1(sess, NULL, NULL, 0, out0(g, "big"), s);
    CHECK(strstr(TF_Message(s), "1048576") != NULL, "%s: message names the size: %s", what, TF_Message(s));
    CHECK(strstr(TF_Message(s), "limit") != NULL && strstr(TF_Message(s), "in use") != NULL,
          "%s: message gives the allocator's state: %s", what, TF_Message(s));
    CHECK_ERR(s, TF_RESOURCE_EXHAUSTED, "{{node big}}", what);
    if (big) TF_DeleteTensor(big);
    /* The same session runs normally afterwards (on every group). */
    for (int i = 0; i < 3; i++) {
      TF_Tensor* y = run_y(sess, g, xt, NULL, NULL, s);
      CHECK_OK(s, "run after OOM");
      check_y(y, x, 2, "value after OOM");
      if (y) TF_DeleteTensor(y);
    }
  }
  TF_DeleteTensor(xt);

  /* A feed that does not fit names the feed. */
  float* bx = calloc(256 * 1024, sizeof(float));
  int64_t bd[2] = {256 * 256, 4};
  TF_Tensor* bxt = make_tensor(TF_FLOAT, bd, 2, bx);
  free(bx);
  TF_Tensor* y = run_y(sess, g, bxt, NULL, NULL, s);
  /* On streams the feed is copied into device memory and fails there; on
   * the inter-op pool (one group, as stock TF's CPU device) it is used in
   * place and the first kernel's output fails. */
  CHECK(strstr(TF_Message(s), "1048576") != NULL, "%s: feed OOM names the size: %s", what, TF_Message(s));
  CHECK_ERR(s, TF_RESOURCE_EXHAUSTED, strcmp(what, "oom") == 0 ? "feed 'x'" : "{{node mm}}", what);
  if (y) TF_DeleteTensor(y);
  TF_DeleteTensor(bxt);
  xt = random_x(2, x);
  y = run_y(sess, g, xt, NULL, NULL, s);
  CHECK_OK(s, "run after feed OOM");
  check_y(y, x, 2, "value after feed OOM");
  if (y) TF_DeleteTensor(y);
  TF_DeleteTensor(xt);

  TF_Buffer* js = TF_NewBuffer();
  MS_SessionStats(sess, js, s);
  CHECK_OK(s, "MS_SessionStats");
  char* stats = malloc(js->length + 1);
  memcpy(stats, js->data, js->length);
  stats[js->length] = 0;
  CHECK(strstr(stats, "\"runs_failed\":3,") != NULL && strstr(stats, "\"runs_completed\":7,") != NULL,
        "%s: stats count 3 failed and 7 completed runs", what);
  int failed_allocs = 0;
  for (const char* p = stats; (p = strstr(p, "\"failed_allocations\":")) != NULL; p++)
    failed_allocs += atoi(p + strlen("\"failed_allocations\":"));
  /* Each allocator appears in "allocators" and again in its group. */
  CHECK(failed_allocs == 2 * 3, "%s: stats count 3 failed allocations, got %d / 2", what, failed_allocs);
  free(stats);
  TF_DeleteBuffer(js);

  TF_CloseSession(sess, s);
  TF_DeleteSession(sess, s);
  CHECK_OK(s, "TF_DeleteSession");
  TF_DeleteGraph(g);
  TF_DeleteStatus(s);
}

/* ---- phase bad_* ------------------------------------------------------------- */

/* A bad knob fails TF_NewSession with INVALID_ARGUMENT naming the variable,
 * the value and what is accepted; nothing is left behind. */
static void phase_bad(const char* var, const char* value, const char* accepted) {
  TF_Status* s = TF_NewStatus();
  TF_Graph* g = TF_NewGraph();
  build(g, s);
  TF_SessionOptions* o = TF_NewSessionOptions();
  TF_Session* sess = TF_NewSession(g, o, s);
  TF_DeleteSessionOptions(o);
  CHECK(sess == NULL, "%s=%s: TF_NewSession returned a session", var, value);
  CHECK(strstr(TF_Message(s), value) != NULL && strstr(TF_Message(s), accepted) != NULL,
        "%s=%s: message names the value and '%s': %s", var, value, accepted, TF_Message(s));
  CHECK_ERR(s, TF_INVALID_ARGUMENT, var, "bad knob names the variable");
  if (sess) { TF_CloseSession(sess, s); TF_DeleteSession(sess, s); }
  TF_DeleteGraph(g);
  TF_DeleteStatus(s);
}

/* ---- phases ------------------------------------------------------------------- */

typedef struct {
  const char* name;
  const char* env[4]; /* NAME=VALUE; "MSTREAM_TRACE=" gets the temp path */
} phase;

static const phase phases[] = {
    {"trace", {"TF_GPU_STREAM_GROUP_COUNT=2", "MSTREAM_TRACE=", NULL}},
    {"oom", {"TF_GPU_STREAM_GROUP_COUNT=2", "MSTREAM_HOST_MEMORY_MB=1", NULL}},
    {"oom1", {"TF_GPU_STREAM_GROUP_COUNT=1", "MSTREAM_HOST_MEMORY_MB=1", NULL}},
    {"bad_count", {"TF_GPU_STREAM_GROUP_COUNT=abc", NULL}},
    {"bad_zero", {"TF_GPU_STREAM_GROUP_COUNT=0", NULL}},
    {"bad_mode", {"TF_GPU_THREAD_MODE=fast", NULL}},
    {"bad_file", {"TF_STREAM_FROM_FILE=/nonexistent/streams.txt", NULL}},
};
#define NPHASES ((int)(sizeof phases / sizeof phases[0]))

int main(int argc, char** argv) {
  /* argv: [phase index, passes so far, failures so far] */
  int idx = argc > 1 ? atoi(argv[1]) : -1;
  if (argc > 3) { t_pass = atoi(argv[2]); t_fail = atoi(argv[3]); }
  snprintf(trace_env_path, sizeof trace_env_path, "/tmp/ms_trace_env_%d.json", (int)getpid());
  snprintf(trace_api_path, sizeof trace_api_path, "/tmp/ms_trace_api_%d.json", (int)getpid());
  if (idx >= 0 && idx < NPHASES) {
    leak_baseline();
    srand(7 + idx);
    const char* name = phases[idx].name;
    if (strcmp(name, "trace") == 0) phase_trace();
    else if (strcmp(name, "bad_count") == 0) phase_bad("TF_GPU_STREAM_GROUP_COUNT", "abc", "comma list");
    else if (strcmp(name, "bad_zero") == 0) phase_bad("TF_GPU_STREAM_GROUP_COUNT", "0", "from 1 to 1024");
    else if (strcmp(name, "bad_mode") == 0) phase_bad("TF_GPU_THREAD_MODE", "fast", "global, gpu_private, gpu_shared");
    else if (strcmp(name, "bad_file") == 0) phase_bad("TF_STREAM_FROM_FILE", "/nonexistent/streams.txt", "cannot read");
    else phase_oom(name);
    check_no_leaks();
  }
  int next = idx + 1;
  if (next < NPHASES) {
    /* The next phase gets its environment before the library loads. */
    for (const char* const* e = phases[next].env; *e; e++) {
      char* kv = strdup(*e);
      char* eq = strchr(kv, '=');
      *eq = 0;
      setenv(kv, strcmp(kv, "MSTREAM_TRACE") == 0 ? trace_env_path : eq + 1, 1);
      free(kv);
    }
    if (idx >= 0) for (const char* const* e = phases[idx].env; *e; e++) {
      char name[64];
      snprintf(name, sizeof name, "%.*s", (int)(strchr(*e, '=') - *e), *e);
      int kept = 0;
      for (const char* const* f = phases[next].env; *f; f++)
        if (strncmp(*f, name, strlen(name)) == 0 && (*f)[strlen(name)] == '=') kept = 1;
      if (!kept) unsetenv(name);
    }
    char a1[16], a2[16], a3[16];
    snprintf(a1, sizeof a1, "%d", next);
    snprintf(a2, sizeof a2, "%d", t_pass);
    snprintf(a3, sizeof a3, "%d", t_fail);
    fflush(stdout);
    fflush(stderr);
    char* args[] = {argv[0], a1, a2, a3, NULL};
    /* argv[0], not /proc/self/exe, which under valgrind is valgrind. */
    execv(argv[0], args);
    execv("/proc/self/exe", args);
    CHECK(0, "re-executing %s: %s", argv[0], strerror(errno));
  }
  return DONE();
}
