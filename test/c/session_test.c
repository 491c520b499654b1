/* Sessions through the built library: import a text GraphDef and run it (wrong
 * feed dtype, unknown op: NOT_FOUND, graph unchanged); session options
 * (TF_SetConfig with binary, text and malformed ConfigProtos, TF_SetTarget);
 * run_options and run_metadata (FULL_TRACE gives step stats); partial runs;
 * TF_SessionListDevices; feeds replacing non-placeholders; targets; inputs never
 * kept (deallocated right after the run, buffers overwritten); 8 threads on one
 * session with checked results and errors mixed in; feeds of several dtypes,
 * ranks and a string in one Run; every handle freed. */
#define _GNU_SOURCE /* memmem */
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include "util.h"

static const char* kGraph =
  "node { name: 'x' op: 'Placeholder' attr { key: 'dtype' value { type: DT_FLOAT } } }\n"
  "node { name: 'c' op: 'Const' attr { key: 'dtype' value { type: DT_FLOAT } }\n"
  "  attr { key: 'value' value { tensor { dtype: DT_FLOAT tensor_shape { dim { size: 2 } } float_val: 1.5 float_val: -2 } } } }\n"
  "node { name: 'y' op: 'AddV2' input: 'x' input: 'c' attr { key: 'T' value { type: DT_FLOAT } } }\n";

static void test_basic(void) {
  TF_Status* s = TF_NewStatus();
  TF_Graph* g = TF_NewGraph();
  CHECK(import_text(g, kGraph, s), "import: %s", TF_Message(s));
  CHECK(count_ops(g) == 3, "ops %d", count_ops(g));
  TF_SessionOptions* so = TF_NewSessionOptions();
  TF_Session* sess = TF_NewSession(g, so, s);
  CHECK(TF_GetCode(s) == TF_OK, "new session: %s", TF_Message(s));
  TF_Output x = {TF_GraphOperationByName(g, "x"), 0}, y = {TF_GraphOperationByName(g, "y"), 0};
  CHECK(x.oper && y.oper, "lookup");
  int64_t dims[1] = {2};
  for (int round = 0; round < 2 && sess && x.oper && y.oper; round++) {
    TF_Tensor* in = TF_AllocateTensor(TF_FLOAT, dims, 1, 8);
    float* p = TF_TensorData(in); p[0] = 1 + round; p[1] = 3;
    TF_Tensor* out = NULL;
    TF_SessionRun(sess, NULL, &x, &in, 1, &y, &out, 1, NULL, 0, NULL, s);
    CHECK(TF_GetCode(s) == TF_OK, "run %d: %s", round, TF_Message(s));
    if (out) {
      float* q = TF_TensorData(out);
      CHECK(q[0] == 2.5f + round && q[1] == 1.0f, "run %d got %g %g", round, q[0], q[1]);
      TF_DeleteTensor(out);
    }
    TF_DeleteTensor(in);
    /* A feed of the wrong dtype: INVALID_ARGUMENT, then the next round runs again. */
    TF_Tensor* bad = TF_AllocateTensor(TF_INT32, dims, 1, 8);
    out = NULL;
    TF_SessionRun(sess, NULL, &x, &bad, 1, &y, &out, 1, NULL, 0, NULL, s);
    CHECK(TF_GetCode(s) == TF_INVALID_ARGUMENT, "wrong dtype feed code %d: %s", TF_GetCode(s), TF_Message(s));
    if (out) TF_DeleteTensor(out);
    TF_DeleteTensor(bad);
  }
  TF_CloseSession(sess, s); TF_DeleteSession(sess, s);
  CHECK(TF_GetCode(s) == TF_OK, "delete session: %s", TF_Message(s));
  TF_DeleteSessionOptions(so);

  CHECK(!import_text(g, "node { name: 'z' op: 'NoSuchOpAnywhere' }", s) && TF_GetCode(s) == TF_NOT_FOUND,
        "unknown op code %d: %s", TF_GetCode(s), TF_Message(s));
  CHECK(strstr(TF_Message(s), "NoSuchOpAnywhere") != NULL, "message does not name the op: %s", TF_Message(s));
  CHECK(count_ops(g) == 3, "graph changed by failed import: %d ops", count_ops(g));
  TF_DeleteGraph(g); TF_DeleteStatus(s);
}


static int ok(TF_Status* s) { return TF_GetCode(s) == TF_OK; }

/* The JSON of MS_SessionStats contains `needle`. TF keeps no such stats: built
 * against TF (MS_ON_TF) it is true, and only the rest of each check runs. */
#ifdef MS_ON_TF
static int stats_have(TF_Session* sess, const char* needle) { (void)sess; (void)needle; return 1; }
#else
static int stats_have(TF_Session* sess, const char* needle) {
  TF_Status* s = TF_NewStatus();
  TF_Buffer* b = TF_NewBuffer();
  MS_SessionStats(sess, b, s);
  int found = TF_GetCode(s) == TF_OK && b->data && memmem(b->data, b->length, needle, strlen(needle)) != NULL;
  if (!found) fprintf(stderr, "stats: %.*s\n", (int)b->length, (const char*)b->data);
  TF_DeleteBuffer(b);
  TF_DeleteStatus(s);
  return found;
}
#endif

/* x [-1,2] float; y = x + c (c = [1.5, -2]). */
static TF_Graph* small_graph(TF_Status* s) {
  TF_Graph* g = TF_NewGraph();
  CHECK(import_text(g, kGraph, s), "import: %s", TF_Message(s));
  return g;
}

static TF_Tensor* vec2(float a, float b) {
  float v[2] = {a, b};
  int64_t d[1] = {2};
  return make_tensor(TF_FLOAT, d, 1, v);
}

/* Runs y with x = [1, 2]; 1 if y = [2.5, 0]. */
static int runs_ok(TF_Session* sess, TF_Graph* g, TF_Status* s) {
  TF_Output x = out0(g, "x");
  TF_Tensor* in = vec2(1, 2);
  TF_Tensor* out = run1(sess, &x, &in, 1, out0(g, "y"), s);
  TF_DeleteTensor(in);
  int good = out && ((float*)TF_TensorData(out))[0] == 2.5f && ((float*)TF_TensorData(out))[1] == 0.0f;
  if (out) TF_DeleteTensor(out);
  return good;
}

static void test_options(void) {
  TF_Status* s = TF_NewStatus();
  TF_Graph* g = small_graph(s);

  /* Binary ConfigProto: intra_op 2, inter_op 3, gpu_options.allow_growth, a
   * device_count map entry and a field TF 2.15 does not have (ignored, as protobuf
   * parsers do). */
  const unsigned char cfg[] = {0x10, 0x02, 0x28, 0x03, 0x32, 0x02, 0x20, 0x01, 0x0a, 0x07, 0x0a, 0x03,
                               'C',  'P',  'U',  0x10, 0x01, 0xb8, 0x3e, 0x01};
  TF_SessionOptions* so = TF_NewSessionOptions();
  TF_SetConfig(so, cfg, sizeof cfg, s);
  CHECK_OK(s, "TF_SetConfig");
  TF_Session* sess = TF_NewSession(g, so, s);
  CHECK_OK(s, "session with config");
  if (sess) {
    CHECK(runs_ok(sess, g, s), "run with config: %s", TF_Message(s));
    CHECK(stats_have(sess, "\"intra_op_threads\":2") && stats_have(sess, "\"inter_op_pools\":[3]"),
          "config honoured");
    CHECK(runs_ok(sess, g, s) && stats_have(sess, "\"cached_plans\":1"), "one plan for repeated runs");
    TF_CloseSession(sess, s);
    TF_DeleteSession(sess, s);
  }
  TF_DeleteSessionOptions(so);

  /* Text ConfigProto with session_inter_op_thread_pool. */
  const char* text = "intra_op_parallelism_threads: 1 session_inter_op_thread_pool { num_threads: 2 }\n"
                     "session_inter_op_thread_pool { num_threads: 1 } allow_soft_placement: true";
  TF_Buffer* b = TF_NewBuffer();
  MS_ConfigProtoTextToBinary(text, strlen(text), b, s);
  CHECK_OK(s, "config text to binary");
  so = TF_NewSessionOptions();
  TF_SetConfig(so, b->data, b->length, s);
  CHECK_OK(s, "TF_SetConfig from text");
  TF_DeleteBuffer(b);
  sess = TF_NewSession(g, so, s);
  CHECK_OK(s, "session with thread pools");
  if (sess) {
    CHECK(runs_ok(sess, g, s), "run with pools: %s", TF_Message(s));
    CHECK(stats_have(sess, "\"inter_op_pools\":[2,1]"), "session_inter_op_thread_pool honoured");
    TF_DeleteSession(sess, s); /* without TF_CloseSession: TF closes it */
    CHECK_OK(s, "delete unclosed session");
  }
  b = TF_NewBuffer();
  MS_ConfigProtoTextToBinary("intra_op_parallelism_threads: 'x'", 33, b, s);
  CHECK(TF_GetCode(s) == TF_INVALID_ARGUMENT, "bad config text: %d", TF_GetCode(s));
  TF_DeleteBuffer(b);

  /* Malformed bytes: an error, and the options keep their previous config. */
  const unsigned char bad1[] = {0x10};             /* truncated varint */
  const unsigned char bad2[] = {0x32, 0x05, 0x20}; /* gpu_options longer than the buffer */
  const unsigned char bad3[] = {0x0f};             /* wire type 7 */
  const unsigned char* bads[3] = {bad1, bad2, bad3};
  size_t badl[3] = {sizeof bad1, sizeof bad2, sizeof bad3};
  for (int i = 0; i < 3; i++) {
    TF_SetConfig(so, bads[i], badl[i], s);
    CHECK_ERR(s, TF_INVALID_ARGUMENT, "ConfigProto", "malformed ConfigProto");
  }
  sess = TF_NewSession(g, so, s);
  CHECK(ok(s) && sess && runs_ok(sess, g, s), "options usable after bad configs: %s", TF_Message(s));
  if (sess) TF_DeleteSession(sess, s);
#ifndef MS_ON_TF /* TF crashes on NULL options (README, "safer than TF") */
  TF_SetConfig(NULL, cfg, sizeof cfg, s);
  CHECK(TF_GetCode(s) == TF_INVALID_ARGUMENT, "TF_SetConfig(NULL options)");
#endif

  /* Targets: in-process only. TF makes a session for a grpc:// target and
   * fails when it runs; mstream, which has no remote runtime, refuses it at
   * TF_NewSession (README, "safer than TF"). */
#ifndef MS_ON_TF
  TF_SetTarget(so, "grpc://localhost:2222");
  sess = TF_NewSession(g, so, s);
  CHECK(sess == NULL, "session for a remote target");
  CHECK_ERR(s, TF_NOT_FOUND, "grpc://localhost:2222", "unknown target");
#endif
  TF_SetTarget(so, "");
  sess = TF_NewSession(g, so, s);
  CHECK(ok(s) && sess && runs_ok(sess, g, s), "target \"\": %s", TF_Message(s));
  if (sess) TF_DeleteSession(sess, s);
  TF_DeleteSessionOptions(so);

#ifndef MS_ON_TF
  /* NULL options are the defaults (TF crashes: README, "safer than TF"). */
  sess = TF_NewSession(g, NULL, s);
  CHECK(ok(s) && sess && runs_ok(sess, g, s), "NULL options: %s", TF_Message(s));
  if (sess) TF_DeleteSession(sess, s);
#endif
  TF_DeleteGraph(g);
  TF_DeleteStatus(s);
}

static void test_run_options(void) {
  TF_Status* s = TF_NewStatus();
  TF_Graph* g = small_graph(s);
  TF_SessionOptions* so = TF_NewSessionOptions();
  TF_Session* sess = TF_NewSession(g, so, s);
  TF_Output x = out0(g, "x"), y = out0(g, "y");
  TF_Tensor* in = vec2(3, 4);
  const unsigned char full_trace[] = {0x08, 0x03}; /* RunOptions { trace_level: FULL_TRACE } */
  TF_Buffer* ro = TF_NewBufferFromString(full_trace, sizeof full_trace);
  TF_Buffer* md = TF_NewBuffer();
  TF_Tensor* out = NULL;
  TF_SessionRun(sess, ro, &x, &in, 1, &y, &out, 1, NULL, 0, md, s);
  CHECK_OK(s, "run with FULL_TRACE");
  CHECK(out && ((float*)TF_TensorData(out))[0] == 4.5f, "traced run value");
  if (out) TF_DeleteTensor(out);
  /* RunMetadata.step_stats.dev_stats[].node_stats[] names the nodes that ran. */
  pb_field st, dev, ns;
  int nodes = 0, named_y = 0;
  if (pb_get(md->data, md->length, 1, 0, &st)) {
    for (int d = 0; pb_get(st.data, st.len, 1, d, &dev); d++) {
      CHECK(pb_str_eq(&dev, 1, "/job:localhost/replica:0/task:0/device:CPU:0"), "dev_stats device");
      for (int i = 0; pb_get(dev.data, dev.len, 2, i, &ns); i++) {
        nodes++;
        named_y += pb_str_eq(&ns, 1, "y");
      }
    }
  }
  CHECK(nodes >= 2 && named_y == 1, "step stats: %d node stats, y %d times", nodes, named_y);
  TF_DeleteBuffer(md);

  /* No trace: run_metadata is filled but has no step stats. */
  const unsigned char no_trace[] = {0x08, 0x00, 0x10, 0xe8, 0x07}; /* timeout_in_ms: 1000 */
  TF_Buffer* ro2 = TF_NewBufferFromString(no_trace, sizeof no_trace);
  md = TF_NewBuffer();
  out = NULL;
  TF_SessionRun(sess, ro2, &x, &in, 1, &y, &out, 1, NULL, 0, md, s);
  CHECK_OK(s, "run without trace");
  CHECK(pb_count(md->data, md->length, 1) == 0 ||
            (pb_get(md->data, md->length, 1, 0, &st) && pb_count(st.data, st.len, 1) == 0) ||
            (pb_get(st.data, st.len, 1, 0, &dev) && pb_count(dev.data, dev.len, 2) == 0),
        "no node stats without a trace");
  if (out) TF_DeleteTensor(out);
  TF_DeleteBuffer(md);
  TF_DeleteBuffer(ro2);

  /* Malformed run_options: INVALID_ARGUMENT, the session still runs. */
  const unsigned char bad[] = {0x08};
  TF_Buffer* rob = TF_NewBufferFromString(bad, sizeof bad);
  out = NULL;
  TF_SessionRun(sess, rob, &x, &in, 1, &y, &out, 1, NULL, 0, NULL, s);
  CHECK_ERR(s, TF_INVALID_ARGUMENT, "RunOptions", "malformed RunOptions");
  CHECK(out == NULL, "no output on error");
  TF_DeleteBuffer(rob);
  CHECK(runs_ok(sess, g, s), "usable after malformed RunOptions");
  TF_DeleteTensor(in);
  TF_DeleteBuffer(ro);
  TF_DeleteSession(sess, s);
  TF_DeleteSessionOptions(so);
  TF_DeleteGraph(g);
  TF_DeleteStatus(s);
}

/* a, b placeholders; s = a + b; m = s * b; n = NoOp after m. */
static const char* kPRunGraph =
    "node { name: 'a' op: 'Placeholder' attr { key: 'dtype' value { type: DT_FLOAT } } }\n"
    "node { name: 'b' op: 'Placeholder' attr { key: 'dtype' value { type: DT_FLOAT } } }\n"
    "node { name: 's' op: 'AddV2' input: 'a' input: 'b' attr { key: 'T' value { type: DT_FLOAT } } }\n"
    "node { name: 'm' op: 'Mul' input: 's' input: 'b' attr { key: 'T' value { type: DT_FLOAT } } }\n"
    "node { name: 'c' op: 'Const' attr { key: 'dtype' value { type: DT_FLOAT } }\n"
    "  attr { key: 'value' value { tensor { dtype: DT_FLOAT tensor_shape {} float_val: 10 } } } }\n"
    "node { name: 'r' op: 'Relu' input: 's' attr { key: 'T' value { type: DT_FLOAT } } }\n"
    "node { name: 'sub' op: 'Sub' input: 'c' input: 'r' attr { key: 'T' value { type: DT_FLOAT } } }\n";

static TF_Tensor* scalar(float v) { return make_tensor(TF_FLOAT, NULL, 0, &v); }
static float value(TF_Tensor* t) { return t ? *(float*)TF_TensorData(t) : NAN; }

static void test_prun(void) {
  TF_Status* s = TF_NewStatus();
  TF_Graph* g = TF_NewGraph();
  CHECK(import_text(g, kPRunGraph, s), "import: %s", TF_Message(s));
  TF_SessionOptions* opts = TF_NewSessionOptions();
  TF_Session* sess = TF_NewSession(g, opts, s);
  TF_DeleteSessionOptions(opts);
  TF_Output ins[2] = {out0(g, "a"), out0(g, "b")}, outs[2] = {out0(g, "s"), out0(g, "m")};
  const char* h = NULL;
  TF_SessionPRunSetup(sess, ins, 2, outs, 2, NULL, 0, &h, s);
  CHECK(ok(s) && h != NULL, "PRunSetup: %s", TF_Message(s));
  if (h) {
    TF_Tensor* va = scalar(2);
    TF_Tensor* out = NULL;
    TF_SessionPRun(sess, h, &ins[0], &va, 1, NULL, NULL, 0, NULL, 0, s);
    CHECK_OK(s, "PRun feeding a");
    TF_Tensor* vb = scalar(5);
    TF_SessionPRun(sess, h, &ins[1], &vb, 1, &outs[0], &out, 1, NULL, 0, s);
    CHECK(ok(s) && value(out) == 7, "PRun s = %g: %s", value(out), TF_Message(s));
    if (out) TF_DeleteTensor(out);
    out = NULL;
    TF_SessionPRun(sess, h, &ins[0], &va, 1, NULL, NULL, 0, NULL, 0, s);
    CHECK_ERR(s, TF_INVALID_ARGUMENT, "a", "feeding a twice");
    TF_Output sub = out0(g, "sub");
    TF_SessionPRun(sess, h, NULL, NULL, 0, &sub, &out, 1, NULL, 0, s);
    CHECK_ERR(s, TF_INVALID_ARGUMENT, "sub", "fetch not in PRunSetup");
    TF_SessionPRun(sess, h, NULL, NULL, 0, &outs[1], &out, 1, NULL, 0, s);
    CHECK(ok(s) && value(out) == 35, "PRun m = %g: %s", value(out), TF_Message(s));
    if (out) TF_DeleteTensor(out);
    TF_DeleteTensor(va);
    TF_DeleteTensor(vb);
    TF_DeletePRunHandle(h);
  }
  /* A fetch that needs a placeholder the setup does not feed: as in TF, the
   * setup succeeds and the PRun that fetches it fails naming the placeholder. */
  h = NULL;
  TF_SessionPRunSetup(sess, ins, 1, &outs[0], 1, NULL, 0, &h, s);
  CHECK_OK(s, "setup with an unfed placeholder");
  if (h) {
    TF_Tensor* va = scalar(2);
    TF_Tensor* out = NULL;
    TF_SessionPRun(sess, h, &ins[0], &va, 1, &outs[0], &out, 1, NULL, 0, s);
    CHECK_ERR(s, TF_INVALID_ARGUMENT, "'b'", "PRun needing an unfed placeholder");
    CHECK(out == NULL, "no output on a failed PRun");
    TF_DeleteTensor(va);
    TF_DeletePRunHandle(h);
  }
  TF_SessionPRun(sess, "no-such-handle", NULL, NULL, 0, &outs[0], NULL, 0, NULL, 0, s);
  CHECK(TF_GetCode(s) == TF_INVALID_ARGUMENT, "unknown handle: %d %s", TF_GetCode(s), TF_Message(s));
#ifdef MS_ON_TF
  /* After a failed partial run TF cancels the session: every later Run is
   * CANCELLED ("Run call was cancelled"). mstream's stays usable (README,
   * "safer than TF"); on TF the rest runs on a fresh session. */
  TF_CloseSession(sess, s);
  TF_DeleteSession(sess, s);
  opts = TF_NewSessionOptions();
  sess = TF_NewSession(g, opts, s);
  TF_DeleteSessionOptions(opts);
#endif

  /* Feeds may replace any tensor: feed s directly, a and b are never needed. */
  TF_Tensor* sv = scalar(-3);
  TF_Output so = out0(g, "s"), sub = out0(g, "sub");
  TF_Tensor* out = run1(sess, &so, &sv, 1, sub, s);
  CHECK(ok(s) && value(out) == 10, "sub with s fed = -3: %g %s", value(out), TF_Message(s));
  if (out) TF_DeleteTensor(out);
  TF_Output co = out0(g, "c");
  TF_Tensor* cv = scalar(100);
  TF_Output feeds2[2] = {so, co};
  TF_Tensor* vals2[2] = {sv, cv};
  TF_Tensor* r = NULL;
  TF_SessionRun(sess, NULL, feeds2, vals2, 2, &sub, &r, 1, NULL, 0, NULL, s);
  CHECK(ok(s) && value(r) == 100, "Const replaced by a feed: %g", value(r));
  if (r) TF_DeleteTensor(r);
  /* A fetch that is also fed: TF refuses it ("s:0 is both fed and fetched."). */
  r = run1(sess, &so, &sv, 1, so, s);
  CHECK_ERR(s, TF_INVALID_ARGUMENT, "both fed and fetched", "fetching a fed tensor");
  if (r) TF_DeleteTensor(r);
  TF_DeleteTensor(cv);
  TF_DeleteTensor(sv);

  /* Targets: run for effect, no fetches; a target needing an unfed placeholder fails. */
  TF_Operation* tgt = TF_GraphOperationByName(g, "c");
  TF_SessionRun(sess, NULL, NULL, NULL, 0, NULL, NULL, 0, (const TF_Operation* const*)&tgt, 1, NULL, s);
  CHECK_OK(s, "run a target");
  tgt = TF_GraphOperationByName(g, "m");
  TF_SessionRun(sess, NULL, NULL, NULL, 0, NULL, NULL, 0, (const TF_Operation* const*)&tgt, 1, NULL, s);
  CHECK(TF_GetCode(s) == TF_INVALID_ARGUMENT && (strstr(TF_Message(s), "'a'") || strstr(TF_Message(s), "'b'")),
        "target needing an unfed placeholder: %d %s", TF_GetCode(s), TF_Message(s));
  TF_Tensor* va = scalar(1);
  TF_Tensor* vb = scalar(2);
  TF_Tensor* vals[2] = {va, vb};
  TF_Output rr = out0(g, "r");
  TF_Tensor* rv = NULL;
  TF_SessionRun(sess, NULL, ins, vals, 2, &rr, &rv, 1, (const TF_Operation* const*)&tgt, 1, NULL, s);
  CHECK(ok(s) && value(rv) == 3, "fetch with a target: %g %s", value(rv), TF_Message(s));
  if (rv) TF_DeleteTensor(rv);
  TF_DeleteTensor(va);
  TF_DeleteTensor(vb);

  /* Devices. */
  TF_DeviceList* dl = TF_SessionListDevices(sess, s);
  CHECK(ok(s) && TF_DeviceListCount(dl) >= 1, "device count %d", TF_DeviceListCount(dl));
  const char* name = TF_DeviceListName(dl, 0, s);
  CHECK(ok(s) && name && strcmp(name, "/job:localhost/replica:0/task:0/device:CPU:0") == 0, "device 0 name %s",
        name ? name : "(null)");
  const char* type = TF_DeviceListType(dl, 0, s);
  CHECK(ok(s) && type && strcmp(type, "CPU") == 0, "device 0 type %s", type ? type : "(null)");
  CHECK(TF_DeviceListMemoryBytes(dl, 0, s) >= 0 && ok(s), "memory bytes");
  TF_DeviceListIncarnation(dl, 0, s);
  CHECK_OK(s, "incarnation");
  CHECK(TF_DeviceListType(dl, -1, s) == NULL && TF_GetCode(s) == TF_INVALID_ARGUMENT, "index -1");
  CHECK(TF_DeviceListMemoryBytes(dl, TF_DeviceListCount(dl), s) == -1 && TF_GetCode(s) == TF_INVALID_ARGUMENT,
        "index past the end");
  TF_DeleteDeviceList(dl);
#ifndef MS_ON_TF /* TF does not check a NULL session (README, "safer than TF") */
  CHECK(TF_SessionListDevices(NULL, s) == NULL && TF_GetCode(s) == TF_INVALID_ARGUMENT, "ListDevices(NULL)");
#endif

  /* The graph outlives TF_DeleteGraph while the session uses it. */
  TF_DeleteGraph(g);
  va = scalar(4);
  TF_Output ao = ins[0];
  TF_Tensor* vbb = scalar(1);
  TF_Tensor* v2[2] = {va, vbb};
  rv = NULL;
  TF_SessionRun(sess, NULL, ins, v2, 2, &outs[1], &rv, 1, NULL, 0, NULL, s);
  CHECK(ok(s) && value(rv) == 5, "run after TF_DeleteGraph: %g", value(rv));
  (void)ao;
  if (rv) TF_DeleteTensor(rv);
  TF_DeleteTensor(va);
  TF_DeleteTensor(vbb);
  TF_CloseSession(sess, s);
  CHECK_OK(s, "close");
  rv = run1(sess, ins, v2, 0, co, s);
  CHECK(TF_GetCode(s) != TF_OK && rv == NULL, "run after close fails: %d", TF_GetCode(s));
  TF_DeleteSession(sess, s);
  CHECK_OK(s, "delete");
  TF_DeleteStatus(s);
}

/* ---- 8 threads on one session ------------------------------------------------ */

#define THREADS 8
#define ITERS 200
#define K 8
#define M 5

typedef struct {
  TF_Session* sess;
  TF_Output x, y, ba;
  const float* w;
  const float* b;
  unsigned seed;
  int bad, errors, runs, failed_runs;
  atomic_int freed;
} worker;

static void count_free(void* data, size_t len, void* arg) {
  (void)len;
  free(data);
  atomic_fetch_add(&((worker*)arg)->freed, 1);
}

static void* work(void* p) {
  worker* wk = p;
  TF_Status* s = TF_NewStatus();
  for (int it = 0; it < ITERS; it++) {
    int batch = 1 + rand_r(&wk->seed) % 16;
    size_t bytes = (size_t)batch * K * sizeof(float);
    /* 64-byte aligned, so that TF_NewTensor keeps it rather than copy it. */
    float* x = aligned_alloc(64, (bytes + 63) / 64 * 64);
    for (int i = 0; i < batch * K; i++) x[i] = (float)rand_r(&wk->seed) / RAND_MAX * 4 - 2;
    int64_t dims[2] = {batch, K};
    TF_Tensor* in = TF_NewTensor(TF_FLOAT, dims, 2, x, bytes, count_free, wk);
    TF_Output fetch[2] = {wk->y, wk->ba};
    TF_Tensor* out[2] = {NULL, NULL};
    if (it % 10 == 7) {
      /* Every tenth run feeds a shape MatMul rejects; the others must not notice. */
      int64_t bd[2] = {batch, K + 1};
      TF_Tensor* bad = TF_AllocateTensor(TF_FLOAT, bd, 2, (size_t)batch * (K + 1) * sizeof(float));
      TF_SessionRun(wk->sess, NULL, &wk->x, &bad, 1, fetch, out, 2, NULL, 0, NULL, s);
      if (TF_GetCode(s) != TF_INVALID_ARGUMENT || out[0] || out[1]) wk->bad++;
      wk->failed_runs++;
      TF_DeleteTensor(bad);
    }
    int before = atomic_load(&wk->freed);
    TF_SessionRun(wk->sess, NULL, &wk->x, &in, 1, fetch, out, 2, NULL, 0, NULL, s);
    wk->runs++;
    /* Keep a copy for the reference, then overwrite the caller's buffer and free it
     * at once: the library must not hold it after the run. */
    float* ref = malloc(bytes);
    memcpy(ref, x, bytes);
    for (int i = 0; i < batch * K; i++) x[i] = NAN;
    TF_DeleteTensor(in);
    if (atomic_load(&wk->freed) != before + 1) wk->bad++;
    if (TF_GetCode(s) != TF_OK || !out[0] || !out[1]) {
      wk->errors++;
      fprintf(stderr, "thread run failed: %s\n", TF_Message(s));
    } else if (TF_Dim(out[0], 0) != batch || TF_Dim(out[0], 1) != M) {
      wk->bad++;
    } else {
      const float* y = TF_TensorData(out[0]);
      const float* ba = TF_TensorData(out[1]);
      for (int r = 0; r < batch; r++) {
        for (int c = 0; c < M; c++) {
          double acc = wk->b[c];
          for (int k = 0; k < K; k++) acc += (double)ref[r * K + k] * wk->w[k * M + c];
          double want = acc > 0 ? acc : 0;
          if (fabs(ba[r * M + c] - acc) > 1e-4 * (1 + fabs(acc)) || fabs(y[r * M + c] - want) > 1e-4 * (1 + want)) {
            wk->bad++;
            r = batch;
            break;
          }
        }
      }
    }
    free(ref);
    for (int i = 0; i < 2; i++) if (out[i]) TF_DeleteTensor(out[i]);
  }
  TF_DeleteStatus(s);
  return NULL;
}

static void test_threads(void) {
  TF_Status* s = TF_NewStatus();
  TF_Graph* g = TF_NewGraph();
  static float w[K * M], b[M];
  unsigned seed = (unsigned)time(NULL);
  for (int i = 0; i < K * M; i++) w[i] = (float)rand_r(&seed) / RAND_MAX - 0.5f;
  for (int i = 0; i < M; i++) b[i] = (float)rand_r(&seed) / RAND_MAX - 0.5f;
  int64_t xd[2] = {-1, K}, wd[2] = {K, M}, bd[1] = {M};
  TF_Operation* x = placeholder(g, "x", TF_FLOAT, xd, 2, s);
  TF_Operation* wo = const_op(g, "w", TF_FLOAT, wd, 2, w, s);
  TF_Operation* bo = const_op(g, "b", TF_FLOAT, bd, 1, b, s);
  TF_Operation* mm = binary(g, "MatMul", "mm", (TF_Output){x, 0}, (TF_Output){wo, 0}, s);
  TF_Operation* ba = binary(g, "BiasAdd", "ba", (TF_Output){mm, 0}, (TF_Output){bo, 0}, s);
  TF_Operation* y = unary(g, "Relu", "y", (TF_Output){ba, 0}, s);
  CHECK_OK(s, "thread graph");
  const unsigned char cfg[] = {0x10, 0x02, 0x28, 0x02}; /* intra 2, inter 2 */
  TF_SessionOptions* so = TF_NewSessionOptions();
  TF_SetConfig(so, cfg, sizeof cfg, s);
  TF_Session* sess = TF_NewSession(g, so, s);
  CHECK_OK(s, "thread session");
  static worker wk[THREADS];
  pthread_t th[THREADS];
  for (int i = 0; i < THREADS && sess; i++) {
    wk[i] = (worker){.sess = sess, .x = {x, 0}, .y = {y, 0}, .ba = {ba, 0}, .w = w, .b = b, .seed = seed + 7919u * i};
    atomic_init(&wk[i].freed, 0);
    pthread_create(&th[i], NULL, work, &wk[i]);
  }
  int runs = 0, failed = 0;
  for (int i = 0; i < THREADS && sess; i++) {
    pthread_join(th[i], NULL);
    CHECK(wk[i].errors == 0 && wk[i].bad == 0, "thread %d: %d errors, %d wrong results", i, wk[i].errors, wk[i].bad);
    CHECK(atomic_load(&wk[i].freed) == ITERS, "thread %d: %d of %d inputs deallocated", i, atomic_load(&wk[i].freed),
          ITERS);
    runs += wk[i].runs;
    failed += wk[i].failed_runs;
  }
  char want[64];
  snprintf(want, sizeof want, "\"runs_completed\":%d", runs);
  CHECK(sess && stats_have(sess, want), "stats count %d completed runs", runs);
  (void)failed; /* rejected feeds never start a run, so runs_failed does not count them */
  CHECK(sess && stats_have(sess, "\"runs_in_flight\":0"), "nothing in flight after the joins");
  TF_CloseSession(sess, s);
  TF_DeleteSession(sess, s);
  TF_DeleteSessionOptions(so);
  TF_DeleteGraph(g);
  TF_DeleteStatus(s);
}

#ifndef MS_ON_TF /* mstream's knobs, read back through MS_SessionConfig */
/* The knobs are read from the C environment when TF_NewSession runs, as TF's
 * getenv does: a setenv after the library has loaded takes effect, a bad value
 * fails that TF_NewSession naming the variable, and an unsetenv is seen by the
 * next session. */
static void test_env(void) {
  TF_Status* s = TF_NewStatus();
  TF_Graph* g = small_graph(s);
  TF_SessionOptions* so = TF_NewSessionOptions();
  static const struct {
    const char* value; /* NULL: unset */
    TF_Code code;
    const char* stats;
  } cases[] = {
      {"3", TF_OK, "\"mode\":\"streams\""},
      {"abc", TF_INVALID_ARGUMENT, NULL},
      {NULL, TF_OK, "\"mode\":\"pool\""},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    if (cases[i].value) setenv("TF_GPU_STREAM_GROUP_COUNT", cases[i].value, 1);
    else unsetenv("TF_GPU_STREAM_GROUP_COUNT");
    TF_Session* sess = TF_NewSession(g, so, s);
    const char* v = cases[i].value ? cases[i].value : "(unset)";
    if (cases[i].code != TF_OK) {
      CHECK_ERR(s, cases[i].code, "TF_GPU_STREAM_GROUP_COUNT", v);
      CHECK(sess == NULL, "TF_GPU_STREAM_GROUP_COUNT=%s: a session came back", v);
    } else {
      CHECK_OK(s, v);
      char want[96];
      snprintf(want, sizeof want, "{\"name\":\"TF_GPU_STREAM_GROUP_COUNT\",\"value\":\"%s\"",
               cases[i].value ? cases[i].value : "1");
      TF_Buffer* b = TF_NewBuffer();
      MS_SessionConfig(sess, b, s);
      CHECK(TF_GetCode(s) == TF_OK && memmem(b->data, b->length, want, strlen(want)) != NULL,
            "TF_GPU_STREAM_GROUP_COUNT=%s: config %.*s", v, (int)b->length, (const char*)b->data);
      TF_DeleteBuffer(b);
      CHECK(sess && stats_have(sess, cases[i].stats), "TF_GPU_STREAM_GROUP_COUNT=%s: stats show %s", v,
            cases[i].stats);
    }
    if (sess) {
      TF_CloseSession(sess, s);
      TF_DeleteSession(sess, s);
    }
  }
  unsetenv("TF_GPU_STREAM_GROUP_COUNT");
  TF_DeleteSessionOptions(so);
  TF_DeleteGraph(g);
  TF_DeleteStatus(s);
}
#endif

/* Feeds of every kind in one Run, each fetched back through an Identity: a
 * few fixed-size dtypes of ranks 0 to 5, an empty one, a string and, with
 * n = 18, more feeds than the C API copies in one block; three Runs on one
 * session with other values and sizes each (the C API reuses its copies'
 * memory from Run to Run); the callers' tensors are deleted before the
 * outputs are read. */
static void run_mixed_feeds(int n) {
  TF_Status* s = TF_NewStatus();
  TF_Graph* g = TF_NewGraph();
  TF_DataType dts[6] = {TF_FLOAT, TF_INT32, TF_STRING, TF_INT64, TF_DOUBLE, TF_BOOL};
  int nds[6] = {2, 0, 1, 1, 1, 5};
  TF_Output in[18], out[18];
  char name[16];
  for (int i = 0; i < n; i++) {
    snprintf(name, sizeof name, "p%d", i);
    in[i] = (TF_Output){placeholder(g, name, dts[i % 6], NULL, -1, s), 0};
    CHECK(ok(s), "placeholder %d: %s", i, TF_Message(s));
    snprintf(name, sizeof name, "id%d", i);
    out[i] = (TF_Output){unary(g, "Identity", name, in[i], s), 0};
    CHECK(ok(s), "identity %d: %s", i, TF_Message(s));
  }
  TF_SessionOptions* so = TF_NewSessionOptions();
  TF_Session* sess = TF_NewSession(g, so, s);
  CHECK(ok(s), "new session: %s", TF_Message(s));
  for (int round = 0; round < 3 && ok(s); round++) {
    /* Round 1 feeds more bytes than round 0, round 2 fewer. */
    int64_t dims[6][5] = {{2 + round % 2, 3}, {0}, {2}, {round % 2}, {5 - round}, {1, 1, 1, 1, 3}};
    TF_Tensor* vals[18];
    TF_Tensor* got[18] = {0};
    unsigned char want[18][64];
    size_t wantn[18];
    for (int i = 0; i < n; i++) {
      int k = i % 6;
      if (dts[k] == TF_STRING) {
        vals[i] = TF_AllocateTensor(TF_STRING, dims[k], nds[k], 2 * sizeof(TF_TString));
        TF_TString* p = TF_TensorData(vals[i]);
        for (int j = 0; j < 2; j++) {
          TF_StringInit(&p[j]);
          snprintf(name, sizeof name, "s%d.%d.%d", round, i, j);
          TF_StringCopy(&p[j], name, strlen(name));
        }
        wantn[i] = 0;
        continue;
      }
      int64_t e = 1;
      for (int d = 0; d < nds[k]; d++) e *= dims[k][d];
      wantn[i] = (size_t)e * TF_DataTypeSize(dts[k]);
      for (size_t b = 0; b < wantn[i]; b++)
        want[i][b] = (unsigned char)(dts[k] == TF_BOOL ? (i + b + round) % 2 : 7 * i + b + 31 * round + 1);
      vals[i] = make_tensor(dts[k], dims[k], nds[k], want[i]);
    }
    TF_SessionRun(sess, NULL, in, vals, n, out, got, n, NULL, 0, NULL, s);
    CHECK(ok(s), "run %d with %d mixed feeds: %s", round, n, TF_Message(s));
    /* Deleted, not overwritten: TF's outputs may share the feeds' buffers
     * (an Identity forwards its input), which deleting leaves alive. */
    for (int i = 0; i < n; i++) TF_DeleteTensor(vals[i]);
    for (int i = 0; i < n && ok(s); i++) {
      int k = i % 6;
      CHECK(got[i] && TF_TensorType(got[i]) == dts[k] && TF_NumDims(got[i]) == nds[k], "output %d: type or rank", i);
      if (!got[i]) continue;
      for (int d = 0; d < nds[k] && d < TF_NumDims(got[i]); d++)
        CHECK(TF_Dim(got[i], d) == dims[k][d], "output %d dim %d: %lld", i, d, (long long)TF_Dim(got[i], d));
      if (dts[k] == TF_STRING) {
        const TF_TString* p = TF_TensorData(got[i]);
        for (int j = 0; j < 2; j++) {
          snprintf(name, sizeof name, "s%d.%d.%d", round, i, j);
          CHECK(TF_StringGetSize(&p[j]) == strlen(name) && !memcmp(TF_StringGetDataPointer(&p[j]), name, strlen(name)),
                "output %d string %d", i, j);
        }
      } else {
        CHECK(TF_TensorByteSize(got[i]) == wantn[i] && !memcmp(TF_TensorData(got[i]), want[i], wantn[i]),
              "run %d output %d (%d bytes): values differ from the feed's", round, i, (int)wantn[i]);
      }
      TF_DeleteTensor(got[i]);
    }
  }
  TF_CloseSession(sess, s); TF_DeleteSession(sess, s);
  TF_DeleteSessionOptions(so);
  TF_DeleteGraph(g); TF_DeleteStatus(s);
}

static void test_mixed_feeds(void) {
  run_mixed_feeds(6);
  run_mixed_feeds(18);
}

#ifndef MS_ON_TF
/* x [-1,9,9,3] -> Conv2D (SAME, a constant 3x3x3x4 filter) -> Relu ->
   MaxPool 2x2 -> Softmax: the kernels that hold oneDNN primitives. */
static const char* kCNN =
  "node { name: 'x' op: 'Placeholder' attr { key: 'dtype' value { type: DT_FLOAT } } }\n"
  "node { name: 'w' op: 'Const' attr { key: 'dtype' value { type: DT_FLOAT } }\n"
  "  attr { key: 'value' value { tensor { dtype: DT_FLOAT tensor_shape { dim { size: 3 } dim { size: 3 } dim { size: 3 } dim { size: 4 } }"
  " float_val: 0.25 float_val: -0.5 float_val: 0.125 } } } }\n"
  "node { name: 'conv' op: 'Conv2D' input: 'x' input: 'w' attr { key: 'T' value { type: DT_FLOAT } }\n"
  "  attr { key: 'strides' value { list { i: 1 i: 1 i: 1 i: 1 } } } attr { key: 'padding' value { s: 'SAME' } } }\n"
  "node { name: 'relu' op: 'Relu' input: 'conv' attr { key: 'T' value { type: DT_FLOAT } } }\n"
  "node { name: 'pool' op: 'MaxPool' input: 'relu' attr { key: 'T' value { type: DT_FLOAT } }\n"
  "  attr { key: 'ksize' value { list { i: 1 i: 2 i: 2 i: 1 } } } attr { key: 'strides' value { list { i: 1 i: 2 i: 2 i: 1 } } }\n"
  "  attr { key: 'padding' value { s: 'VALID' } } }\n"
  "node { name: 'y' op: 'Softmax' input: 'pool' attr { key: 'T' value { type: DT_FLOAT } } }\n";

/* cpu_kernels.onednn.live in sess's MS_SessionStats: the oneDNN primitives
   alive in the process; -1 when absent. */
static long dnnl_live(TF_Session* sess) {
  TF_Status* s = TF_NewStatus();
  TF_Buffer* b = TF_NewBuffer();
  MS_SessionStats(sess, b, s);
  long v = -1;
  char* json = TF_GetCode(s) == TF_OK ? strndup((const char*)b->data, b->length) : NULL;
  const char* o = json ? strstr(json, "\"onednn\"") : NULL;
  const char* l = o ? strstr(o, "\"live\":") : NULL;
  if (l) v = atol(l + 7);
  free(json);
  TF_DeleteBuffer(b);
  TF_DeleteStatus(s);
  return v;
}

/* Sessions of a CNN opened, run at two batch sizes and deleted: the oneDNN
   primitives their kernels made go with them (before, each session left
   its primitives in C memory for the life of the process). A session on
   another graph, open throughout, reads the count. */
static void test_session_frees_primitives(void) {
  TF_Status* s = TF_NewStatus();
  TF_Graph* wg = small_graph(s);
  TF_SessionOptions* so = TF_NewSessionOptions();
  TF_Session* watch = TF_NewSession(wg, so, s);
  CHECK_OK(s, "watch session");
  long base = dnnl_live(watch);
  CHECK(base >= 0, "MS_SessionStats has no cpu_kernels.onednn.live");
  for (int i = 0; i < 3; i++) {
    TF_Graph* g = TF_NewGraph();
    CHECK(import_text(g, kCNN, s), "import: %s", TF_Message(s));
    TF_Session* sess = TF_NewSession(g, so, s);
    CHECK_OK(s, "cnn session");
    TF_Output x = out0(g, "x");
    for (int64_t n = 1; n <= 3; n += 2) {
      int64_t d[4] = {n, 9, 9, 3};
      float v[3 * 9 * 9 * 3];
      for (int j = 0; j < n * 9 * 9 * 3; j++) v[j] = (float)rand() / RAND_MAX - 0.5f;
      TF_Tensor* in = make_tensor(TF_FLOAT, d, 4, v);
      TF_Tensor* out = run1(sess, &x, &in, 1, out0(g, "y"), s);
      CHECK_OK(s, "cnn run");
      TF_DeleteTensor(in);
      if (out) TF_DeleteTensor(out);
    }
    long during = dnnl_live(sess);
    TF_CloseSession(sess, s);
    TF_DeleteSession(sess, s);
    CHECK_OK(s, "delete cnn session");
    TF_DeleteGraph(g);
    long after = dnnl_live(watch);
    CHECK(after == base, "session %d deleted: %ld oneDNN primitives alive (%ld while it ran), %ld before", i, after, during, base);
  }
  TF_CloseSession(watch, s);
  TF_DeleteSession(watch, s);
  TF_DeleteSessionOptions(so);
  TF_DeleteGraph(wg);
  TF_DeleteStatus(s);
}
#endif

int main(void) {
  TF_DeleteStatus(TF_NewStatus());
  leak_baseline();
  test_basic();
  test_mixed_feeds();
  test_options();
  test_run_options();
  test_prun();
  test_threads();
#ifndef MS_ON_TF
  test_env();
  test_session_frees_primitives();
#endif
  check_no_leaks();
  return DONE();
}
