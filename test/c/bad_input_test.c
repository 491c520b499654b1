/* Bad inputs through the built library. Each gets TF's status code and a message
 * that names the culprit (node, feed, op, index); nothing crashes; a graph that
 * fails to import is unchanged; the session runs a good step after every failed
 * one; and every handle is freed at the end. */
#define _GNU_SOURCE /* memmem */
#include <stdio.h>
#include "util.h"

/* x [-1,3] float; y = x + c; ids int32 [-1]; g = GatherV2(params [5,2], ids, 0);
 * by1 = BesselY1(x) (TF knows BesselY1; mstream has no kernel for it);
 * r = Reshape(x, [-1, 2]); mm = MatMul(x, w [3,2]) ; u = Placeholder without a shape. */
static const char* kGraph =
    "node { name: 'x' op: 'Placeholder' attr { key: 'dtype' value { type: DT_FLOAT } }\n"
    "  attr { key: 'shape' value { shape { dim { size: -1 } dim { size: 3 } } } } }\n"
    "node { name: 'c' op: 'Const' attr { key: 'dtype' value { type: DT_FLOAT } }\n"
    "  attr { key: 'value' value { tensor { dtype: DT_FLOAT tensor_shape { dim { size: 3 } } float_val: 1 float_val: 2 float_val: 3 } } } }\n"
    "node { name: 'y' op: 'AddV2' input: 'x' input: 'c' attr { key: 'T' value { type: DT_FLOAT } } }\n"
    "node { name: 'ids' op: 'Placeholder' attr { key: 'dtype' value { type: DT_INT32 } } }\n"
    "node { name: 'params' op: 'Const' attr { key: 'dtype' value { type: DT_FLOAT } }\n"
    "  attr { key: 'value' value { tensor { dtype: DT_FLOAT tensor_shape { dim { size: 5 } dim { size: 2 } }\n"
    "    float_val: 0 float_val: 1 float_val: 2 float_val: 3 float_val: 4 float_val: 5 float_val: 6 float_val: 7 float_val: 8 float_val: 9 } } } }\n"
    "node { name: 'axis' op: 'Const' attr { key: 'dtype' value { type: DT_INT32 } }\n"
    "  attr { key: 'value' value { tensor { dtype: DT_INT32 tensor_shape {} int_val: 0 } } } }\n"
    "node { name: 'g' op: 'GatherV2' input: 'params' input: 'ids' input: 'axis'\n"
    "  attr { key: 'Tparams' value { type: DT_FLOAT } } attr { key: 'Tindices' value { type: DT_INT32 } }\n"
    "  attr { key: 'Taxis' value { type: DT_INT32 } } attr { key: 'batch_dims' value { i: 0 } } }\n"
    "node { name: 'by1' op: 'BesselY1' input: 'x' attr { key: 'T' value { type: DT_FLOAT } } }\n"
    "node { name: 'shape2' op: 'Const' attr { key: 'dtype' value { type: DT_INT32 } }\n"
    "  attr { key: 'value' value { tensor { dtype: DT_INT32 tensor_shape { dim { size: 2 } } int_val: -1 int_val: 2 } } } }\n"
    "node { name: 'u' op: 'Placeholder' attr { key: 'dtype' value { type: DT_FLOAT } } }\n"
    "node { name: 'r' op: 'Reshape' input: 'u' input: 'shape2' attr { key: 'T' value { type: DT_FLOAT } } }\n"
    "node { name: 'w' op: 'Const' attr { key: 'dtype' value { type: DT_FLOAT } }\n"
    "  attr { key: 'value' value { tensor { dtype: DT_FLOAT tensor_shape { dim { size: 3 } dim { size: 2 } } float_val: 1 } } } }\n"
    "node { name: 'mm' op: 'MatMul' input: 'u' input: 'w' attr { key: 'T' value { type: DT_FLOAT } } }\n";

static TF_Graph* g;
static TF_Session* sess;

static TF_Tensor* floats(int64_t d0, int64_t d1, float start) {
  int64_t dims[2] = {d0, d1};
  TF_Tensor* t = TF_AllocateTensor(TF_FLOAT, dims, 2, (size_t)(d0 * d1) * sizeof(float));
  float* p = TF_TensorData(t);
  for (int64_t i = 0; i < d0 * d1; i++) p[i] = start + (float)i;
  return t;
}

/* A good step: y for x = [[0,1,2]] is [[1,3,5]]. Called after every failure. */
static void good_run(const char* after) {
  TF_Status* s = TF_NewStatus();
  TF_Output x = out0(g, "x");
  TF_Tensor* in = floats(1, 3, 0);
  TF_Tensor* out = run1(sess, &x, &in, 1, out0(g, "y"), s);
  const float* p = out ? TF_TensorData(out) : NULL;
  CHECK(TF_GetCode(s) == TF_OK && p && p[0] == 1 && p[1] == 3 && p[2] == 5, "good run after %s: %s", after,
        TF_Message(s));
  if (out) TF_DeleteTensor(out);
  TF_DeleteTensor(in);
  TF_DeleteStatus(s);
}

/* Runs with the given feeds and one fetch, expecting `code` and `needle` in the
 * message, no output; then a good run. */
static void bad_run(const TF_Output* in, TF_Tensor* const* vals, int nin, TF_Output fetch, TF_Code code,
                    const char* needle, const char* what) {
  TF_Status* s = TF_NewStatus();
  TF_Tensor* out = (TF_Tensor*)&out; /* must come back NULL */
  TF_SessionRun(sess, NULL, in, vals, nin, &fetch, &out, 1, NULL, 0, NULL, s);
  CHECK_ERR(s, code, needle, what);
  CHECK(out == NULL, "%s: output not NULL", what);
  if (out && out != (TF_Tensor*)&out) TF_DeleteTensor(out);
  TF_DeleteStatus(s);
  good_run(what);
}

static void test_runs(void) {
  TF_Output x = out0(g, "x"), y = out0(g, "y"), ids = out0(g, "ids"), gg = out0(g, "g"), u = out0(g, "u");

  /* The wrong dtype (TF: "Expects arg[0] to be float but double is provided";
   * mstream names the feed). */
  int64_t d3[1] = {3};
  TF_Tensor* t = TF_AllocateTensor(TF_DOUBLE, d3, 1, 24);
#ifdef MS_ON_TF
  bad_run(&x, &t, 1, y, TF_INVALID_ARGUMENT, "float", "feed of the wrong dtype");
#else
  bad_run(&x, &t, 1, y, TF_INVALID_ARGUMENT, "'x", "feed of the wrong dtype");
#endif
  TF_DeleteTensor(t);
  /* A shape other than x's attr [-1,3]: TF's C API runs the feed (only Python's
   * Session.run checks the attr), and the kernels check what they read: rank 1
   * [3] gives y = x + c of shape [3]; [2,4] fails in y's AddV2. */
  t = floats(3, 1, 0);
  TF_SetShape(t, d3, 1);
  {
    TF_Status* s1 = TF_NewStatus();
    TF_Tensor* r = run1(sess, &x, &t, 1, y, s1);
    CHECK(TF_GetCode(s1) == TF_OK && r && TF_NumDims(r) == 1 && TF_Dim(r, 0) == 3, "feed of another rank runs: %s",
          TF_Message(s1));
    if (r) TF_DeleteTensor(r);
    TF_DeleteStatus(s1);
  }
  TF_DeleteTensor(t);
  t = floats(2, 4, 0);
  bad_run(&x, &t, 1, y, TF_INVALID_ARGUMENT, "{{node y}}", "feed of another dimension");
  TF_DeleteTensor(t);
#ifndef MS_ON_TF
  /* A tensor whose shape (TF_SetShape) claims more bytes than it has: TF reads
   * past its buffer; mstream refuses the feed (README, "safer than TF"). */
  t = floats(1, 3, 0);
  int64_t big[2] = {100, 3};
  TF_SetShape(t, big, 2);
  bad_run(&x, &t, 1, y, TF_INVALID_ARGUMENT, "(x)", "feed with fewer bytes than its shape needs");
  TF_DeleteTensor(t);
#endif

  /* Missing feed for a placeholder (TF: "You must feed a value for placeholder tensor 'x'"). */
  bad_run(NULL, NULL, 0, y, TF_INVALID_ARGUMENT, "'x'", "missing feed");
  /* The same output fed twice. */
  TF_Tensor* a = floats(1, 3, 0);
  TF_Output two[2] = {x, x};
  TF_Tensor* twov[2] = {a, a};
  bad_run(two, twov, 2, y, TF_INVALID_ARGUMENT, "x", "duplicate feed");

  /* Outputs that are not in the session's graph, or past an op's outputs. */
  TF_Graph* other = TF_NewGraph();
  TF_Status* s = TF_NewStatus();
  CHECK(import_text(other, kGraph, s), "import other: %s", TF_Message(s));
  TF_Output y5 = {y.oper, 5};
  bad_run(&x, &a, 1, y5, TF_OUT_OF_RANGE, "'y'", "fetch of output 5 of a one-output op");
#ifndef MS_ON_TF
  /* Operations of another graph, NULL operations, tensors and arrays: TF looks
   * the first up by name in the session's graph (running whatever has that
   * name) and crashes on the others; mstream refuses them (README, "safer than TF"). */
  TF_Output ox = out0(other, "x"), oy = out0(other, "y");
  bad_run(&x, &a, 1, oy, TF_INVALID_ARGUMENT, "y", "fetch from another graph");
  bad_run(&ox, &a, 1, y, TF_INVALID_ARGUMENT, "x", "feed from another graph");
  TF_Output nul = {NULL, 0};
  bad_run(&x, &a, 1, nul, TF_INVALID_ARGUMENT, "NULL", "fetch with a NULL operation");
  bad_run(&nul, &a, 1, y, TF_INVALID_ARGUMENT, "NULL", "feed with a NULL operation");
  TF_Tensor* nullv = NULL;
  bad_run(&x, &nullv, 1, y, TF_INVALID_ARGUMENT, "NULL", "feed of a NULL tensor");
  TF_Operation* tgt = TF_GraphOperationByName(other, "c");
  TF_SessionRun(sess, NULL, NULL, NULL, 0, NULL, NULL, 0, (const TF_Operation* const*)&tgt, 1, NULL, s);
  CHECK(TF_GetCode(s) == TF_INVALID_ARGUMENT, "target from another graph: %d %s", TF_GetCode(s), TF_Message(s));
  good_run("target from another graph");
  TF_Output yy = y;
  TF_SessionRun(sess, NULL, &x, &a, 1, &yy, NULL, 1, NULL, 0, NULL, s);
  CHECK_ERR(s, TF_INVALID_ARGUMENT, "output_values", "NULL output array");
  good_run("NULL output array");
#endif
  TF_DeleteGraph(other);

  /* An op TF knows but mstream has no kernel for: named with its op (TF has
   * one). */
  TF_Tensor* eo = NULL;
#ifndef MS_ON_TF
  bad_run(&x, &a, 1, out0(g, "by1"), TF_INVALID_ARGUMENT, "'by1'", "BesselY1 without a kernel");
  TF_Status* s2 = TF_NewStatus();
  TF_Output by1 = out0(g, "by1");
  TF_SessionRun(sess, NULL, &x, &a, 1, &by1, &eo, 1, NULL, 0, NULL, s2);
  CHECK(strstr(TF_Message(s2), "BesselY1") != NULL, "no-kernel message names the op type: %s", TF_Message(s2));
  if (eo) TF_DeleteTensor(eo);
  TF_DeleteStatus(s2);
#endif
  TF_DeleteTensor(a);

  /* GatherV2 with an index out of [0, 5). */
  int64_t d2[1] = {3};
  int32_t bad_ids[3] = {1, 7, 0};
  TF_Tensor* it = make_tensor(TF_INT32, d2, 1, bad_ids);
  bad_run(&ids, &it, 1, gg, TF_INVALID_ARGUMENT, "{{node g}}", "GatherV2 index 7 of 5");
  TF_SessionRun(sess, NULL, &ids, &it, 1, &gg, &eo, 1, NULL, 0, NULL, s);
  CHECK(strstr(TF_Message(s), "7") && strstr(TF_Message(s), "[1]"), "message names index [1] = 7: %s", TF_Message(s));
  TF_DeleteTensor(it);
  int32_t neg_ids[1] = {-1};
  int64_t d1[1] = {1};
  it = make_tensor(TF_INT32, d1, 1, neg_ids);
  bad_run(&ids, &it, 1, gg, TF_INVALID_ARGUMENT, "-1", "GatherV2 index -1");
  TF_DeleteTensor(it);
  int32_t good_ids[2] = {4, 0};
  int64_t gd2[1] = {2};
  it = make_tensor(TF_INT32, gd2, 1, good_ids);
  TF_Tensor* go = run1(sess, &ids, &it, 1, gg, s);
  const float* gp = go ? TF_TensorData(go) : NULL;
  CHECK(gp && gp[0] == 8 && gp[1] == 9 && gp[2] == 0 && gp[3] == 1, "GatherV2 in range");
  if (go) TF_DeleteTensor(go);
  TF_DeleteTensor(it);

  /* Shapes known only at run time: kernels name their node. */
  TF_Tensor* u5 = floats(1, 5, 0);
  bad_run(&u, &u5, 1, out0(g, "r"), TF_INVALID_ARGUMENT, "{{node r}}", "Reshape of 5 elements to [-1, 2]");
  bad_run(&u, &u5, 1, out0(g, "mm"), TF_INVALID_ARGUMENT, "{{node mm}}", "MatMul [1,5] x [3,2]");
  TF_DeleteTensor(u5);
  TF_DeleteStatus(s);
}

/* A feed may replace any tensor, of any shape: 'c' (a Const of shape [3]) fed
 * as [1,3] runs, y = x + c = [[10,21,32]]. */
static void test_non_placeholder_feed_shape(void) {
  TF_Status* s = TF_NewStatus();
  TF_Output in[2] = {out0(g, "x"), out0(g, "c")};
  TF_Tensor* vals[2] = {floats(1, 3, 0), floats(1, 3, 10)};
  float* cv = TF_TensorData(vals[1]);
  cv[1] = 20, cv[2] = 30;
  TF_Tensor* out = run1(sess, in, vals, 2, out0(g, "y"), s);
  const float* p = out ? TF_TensorData(out) : NULL;
  CHECK(TF_GetCode(s) == TF_OK && p && TF_NumDims(out) == 2 && TF_Dim(out, 0) == 1 && TF_Dim(out, 1) == 3 &&
            p[0] == 10 && p[1] == 21 && p[2] == 32,
        "Const fed with a shape other than its static one: %s", TF_Message(s));
  if (out) TF_DeleteTensor(out);
  /* A Placeholder's attr is no more checked than a Const's shape (TF's C API
   * does not): x = [1,4] fails in y's AddV2 against c = [3]. */
  TF_DeleteTensor(vals[0]);
  vals[0] = floats(1, 4, 0);
  bad_run(in, vals, 1, out0(g, "y"), TF_INVALID_ARGUMENT, "{{node y}}", "Placeholder fed a shape its attr rejects");
  TF_DeleteTensor(vals[0]);
  TF_DeleteTensor(vals[1]);
  TF_DeleteStatus(s);
}

/* MS_SessionStats counts every failed Run, feed validation included: on a fresh
 * session, one good run and three rejected feeds (dtype, shape, missing) give
 * runs_completed 1 and runs_failed 3. */
static void test_failed_count(void) {
  TF_Status* s = TF_NewStatus();
  TF_SessionOptions* so = TF_NewSessionOptions();
  TF_Session* fresh = TF_NewSession(g, so, s);
  CHECK_OK(s, "fresh session");
  TF_Output x = out0(g, "x"), y = out0(g, "y");
  TF_Tensor* good = floats(1, 3, 0);
  TF_Tensor* out = run1(fresh, &x, &good, 1, y, s);
  CHECK_OK(s, "good run on the fresh session");
  if (out) TF_DeleteTensor(out);
  int64_t d3[1] = {3};
  TF_Tensor* dbl = TF_AllocateTensor(TF_DOUBLE, d3, 1, 24);
  TF_Tensor* wide = floats(2, 4, 0);
  TF_Tensor* bad[2] = {dbl, wide};
  for (int i = 0; i < 3; i++) {
    out = NULL;
    TF_SessionRun(fresh, NULL, i < 2 ? &x : NULL, i < 2 ? &bad[i] : NULL, i < 2 ? 1 : 0, &y, &out, 1, NULL, 0, NULL, s);
    CHECK(TF_GetCode(s) == TF_INVALID_ARGUMENT && out == NULL, "rejected feed %d: %d %s", i, TF_GetCode(s), TF_Message(s));
    if (out) TF_DeleteTensor(out);
  }
#ifndef MS_ON_TF /* TF keeps no run statistics */
  TF_Buffer* js = TF_NewBuffer();
  MS_SessionStats(fresh, js, s);
  CHECK_OK(s, "MS_SessionStats");
  CHECK(js->data && memmem(js->data, js->length, "\"runs_failed\":3,", 15) != NULL &&
            memmem(js->data, js->length, "\"runs_completed\":1,", 18) != NULL,
        "stats count 3 failed runs and 1 completed: %.*s", (int)js->length, (const char*)js->data);
  TF_DeleteBuffer(js);
#endif
  TF_DeleteTensor(dbl);
  TF_DeleteTensor(wide);
  TF_DeleteTensor(good);
  TF_CloseSession(fresh, s);
  TF_DeleteSession(fresh, s);
  TF_DeleteSessionOptions(so);
  TF_DeleteStatus(s);
}

/* Every truncation of a small binary GraphDef: a cut at a top-level field
 * boundary is a valid, shorter GraphDef; any other cut is INVALID_ARGUMENT and
 * leaves the graph unchanged. */
static void test_truncations(void) {
  TF_Status* s = TF_NewStatus();
  TF_Buffer* full = text_graph(
      "node { name: 'a' op: 'Placeholder' attr { key: 'dtype' value { type: DT_FLOAT } } }\n"
      "node { name: 'b' op: 'Const' attr { key: 'dtype' value { type: DT_FLOAT } }\n"
      "  attr { key: 'value' value { tensor { dtype: DT_FLOAT tensor_shape {} float_val: 2 } } } }\n"
      "node { name: 's' op: 'Mul' input: 'a' input: 'b' attr { key: 'T' value { type: DT_FLOAT } } }\n"
      "versions { producer: 1645 }\n",
      s);
  CHECK_OK(s, "truncation graph");
  if (!full) { TF_DeleteStatus(s); return; }
  const uint8_t* data = full->data;
  size_t n = full->length;
  /* Top-level field ends. */
  size_t ends[16];
  int nends = 0;
  pb_reader r = pb_of(data, n);
  pb_field f;
  while (nends < 16 && pb_next(&r, &f)) ends[nends++] = (size_t)(r.p - data);
  CHECK(nends == 4 && ends[nends - 1] == n, "GraphDef has %d top-level fields", nends);
  int wrong = 0, valid = 0;
  TF_ImportGraphDefOptions* o = TF_NewImportGraphDefOptions();
  for (size_t len = 0; len < n; len++) {
    TF_Graph* gr = TF_NewGraph();
    TF_Operation* pre = TF_FinishOperation(TF_NewOperation(gr, "NoOp", "existing"), s);
    TF_Buffer* b = TF_NewBufferFromString(data, len);
    TF_GraphImportGraphDef(gr, b, o, s);
    int boundary = len == 0;
    int nodes = 0;
    for (int i = 0; i < nends; i++) if (ends[i] == len) { boundary = 1; nodes = i + 1 < 3 ? i + 1 : 3; }
    if (boundary) {
      valid++;
      if (TF_GetCode(s) != TF_OK || count_ops(gr) != 1 + nodes) {
        wrong++;
        fprintf(stderr, "cut at %zu (boundary): %d %s, %d ops\n", len, TF_GetCode(s), TF_Message(s), count_ops(gr));
      }
    } else if (TF_GetCode(s) != TF_INVALID_ARGUMENT || count_ops(gr) != 1 || TF_GraphNextOperation(gr, &(size_t){0}) != pre) {
      wrong++;
      fprintf(stderr, "cut at %zu: code %d %s, %d ops\n", len, TF_GetCode(s), TF_Message(s), count_ops(gr));
    }
    TF_DeleteBuffer(b);
    TF_DeleteGraph(gr);
  }
  TF_DeleteImportGraphDefOptions(o);
  CHECK(wrong == 0, "%d of %zu truncations handled wrongly", wrong, n);
  CHECK(valid == 4, "%d boundary cuts", valid);
  TF_DeleteBuffer(full);
  TF_DeleteStatus(s);
}

static int import_fails(const void* data, size_t len, TF_Code code, const char* needle, const char* what) {
  TF_Status* s = TF_NewStatus();
  int before = count_ops(g);
  TF_Buffer* b = TF_NewBufferFromString(data, len);
  TF_ImportGraphDefOptions* o = TF_NewImportGraphDefOptions();
  TF_GraphImportGraphDef(g, b, o, s);
  int failed = TF_GetCode(s) == code;
  CHECK_ERR(s, code, needle, what);
  CHECK(count_ops(g) == before, "%s changed the graph (%d -> %d ops)", what, before, count_ops(g));
  TF_DeleteImportGraphDefOptions(o);
  TF_DeleteBuffer(b);
  TF_DeleteStatus(s);
  good_run(what);
  return failed;
}

static void import_text_fails(const char* text, TF_Code code, const char* needle, const char* what) {
  TF_Status* s = TF_NewStatus();
  TF_Buffer* b = text_graph(text, s);
  CHECK_OK(s, what);
  if (b) import_fails(b->data, b->length, code, needle, what);
  TF_DeleteBuffer(b);
  TF_DeleteStatus(s);
}

static void test_imports(void) {
  /* Malformed bytes. */
  const unsigned char junk1[] = {0xff, 0xff, 0xff, 0xff};
  const unsigned char junk2[] = {0x0a, 0x7f, 0x0a, 0x01, 'a'};         /* node longer than the buffer */
  const unsigned char junk3[] = {0x0a, 0x04, 0x0a, 0x02, 0xc3, 0x28};  /* name is not UTF-8 */
  const unsigned char junk4[] = {0x0a, 0x03, 0x12, 0x01, 'Z'};         /* a node with an op and no name */
  import_fails(junk1, sizeof junk1, TF_INVALID_ARGUMENT, "GraphDef", "0xff bytes");
  import_fails(junk2, sizeof junk2, TF_INVALID_ARGUMENT, "GraphDef", "node longer than the buffer");
  import_fails(junk3, sizeof junk3, TF_INVALID_ARGUMENT, "GraphDef", "invalid UTF-8 name");
  import_fails(junk4, sizeof junk4, TF_INVALID_ARGUMENT, "", "node without a name");

  /* A cycle, by data and by control edges, behind valid nodes. mstream names
   * the nodes; TF says only "2 nodes in a cycle". */
#ifdef MS_ON_TF
#define IN_CYCLE(name) "in a cycle"
#else
#define IN_CYCLE(name) name
#endif
  const char* ph = "node { name: 'p' op: 'Placeholder' attr { key: 'dtype' value { type: DT_FLOAT } } }\n";
  char text[1024];
  snprintf(text, sizeof text,
           "%snode { name: 'cyc_a' op: 'AddV2' input: 'p' input: 'cyc_b' attr { key: 'T' value { type: DT_FLOAT } } }\n"
           "node { name: 'cyc_b' op: 'Relu' input: 'cyc_a' attr { key: 'T' value { type: DT_FLOAT } } }\n",
           ph);
  import_text_fails(text, TF_INVALID_ARGUMENT, IN_CYCLE("cyc_a"), "data cycle");
  import_text_fails("node { name: 'n1' op: 'NoOp' input: '^n2' }\nnode { name: 'n2' op: 'NoOp' input: '^n1' }\n",
                    TF_INVALID_ARGUMENT, IN_CYCLE("n1"), "control cycle");
  import_text_fails("node { name: 'self' op: 'Relu' input: 'self' attr { key: 'T' value { type: DT_FLOAT } } }\n",
                    TF_INVALID_ARGUMENT, IN_CYCLE("self"), "self loop");

  /* An op TF does not know: NOT_FOUND naming it; the valid nodes before it are not imported. */
  snprintf(text, sizeof text, "%snode { name: 'weird' op: 'NotARealTFOp' input: 'p' }\n", ph);
  import_text_fails(text, TF_NOT_FOUND, "NotARealTFOp", "unknown op");
  /* Nodes that break their OpDef. */
  import_text_fails("node { name: 'nodtype' op: 'Placeholder' }\n", TF_INVALID_ARGUMENT, "nodtype", "missing attr");
  snprintf(text, sizeof text, "%snode { name: 'arity' op: 'AddV2' input: 'p' attr { key: 'T' value { type: DT_FLOAT } } }\n", ph);
  import_text_fails(text, TF_INVALID_ARGUMENT, "arity", "too few inputs");
  snprintf(text, sizeof text, "%snode { name: 'badT' op: 'Relu' input: 'p' attr { key: 'T' value { type: DT_INT32 } } }\n", ph);
  import_text_fails(text, TF_INVALID_ARGUMENT, "badT", "input type against attr");
  import_text_fails("node { name: 'x' op: 'NoOp' }\n", TF_INVALID_ARGUMENT, "'x'", "name already in the graph");
  import_text_fails("node { name: 'dup' op: 'NoOp' }\nnode { name: 'dup' op: 'NoOp' }\n", TF_INVALID_ARGUMENT, "dup",
                    "duplicate name in the GraphDef");
  import_text_fails("node { name: 'idx' op: 'Relu' input: 'x:7' attr { key: 'T' value { type: DT_FLOAT } } }\n",
                    TF_INVALID_ARGUMENT, "idx", "input index past the outputs");
  /* A Const whose tensor_content is shorter than its shape imports (TF does not
   * parse attr tensors at import) and fails when it runs. */
  TF_Status* s = TF_NewStatus();
  CHECK(import_text(g, "node { name: 'badc' op: 'Const' attr { key: 'dtype' value { type: DT_FLOAT } }\n"
                       "  attr { key: 'value' value { tensor { dtype: DT_FLOAT tensor_shape { dim { size: 4 } }\n"
                       "    tensor_content: '\\000\\000\\200\\077' } } } }\n", s),
        "import of a short tensor_content: %s", TF_Message(s));
  bad_run(NULL, NULL, 0, out0(g, "badc"), TF_INVALID_ARGUMENT, "badc", "tensor_content shorter than the shape");
  TF_DeleteStatus(s);
}

static void test_nulls(void) {
  TF_Status* s = TF_NewStatus();
  /* Deleting NULL is a no-op everywhere. */
  TF_DeleteStatus(NULL);
  TF_DeleteBuffer(NULL);
  TF_DeleteTensor(NULL);
  TF_DeleteGraph(NULL);
  TF_DeleteSessionOptions(NULL);
  TF_DeleteImportGraphDefOptions(NULL);
  TF_DeleteImportGraphDefResults(NULL);
  TF_DeleteDeviceList(NULL);
  TF_DeletePRunHandle(NULL);
  TF_DeleteSession(NULL, s);
  CHECK_OK(s, "TF_DeleteSession(NULL)");
  CHECK(TF_TensorMaybeMove(NULL) == NULL, "TF_TensorMaybeMove(NULL)");

  TF_Buffer* gd = text_graph("node { name: 'n' op: 'NoOp' }", s);
  TF_ImportGraphDefOptions* o = TF_NewImportGraphDefOptions();
  TF_GraphImportGraphDef(NULL, gd, o, s);
  CHECK(TF_GetCode(s) == TF_INVALID_ARGUMENT, "import into a NULL graph: %d", TF_GetCode(s));
  TF_Graph* fresh = TF_NewGraph();
  TF_GraphImportGraphDef(fresh, NULL, o, s);
  CHECK(TF_GetCode(s) == TF_INVALID_ARGUMENT, "import of a NULL buffer: %d", TF_GetCode(s));
  TF_GraphImportGraphDef(fresh, gd, NULL, s);
  CHECK_OK(s, "NULL options are the defaults");
  CHECK(count_ops(fresh) == 1, "imported with NULL options");
  TF_GraphToGraphDef(fresh, NULL, s);
  CHECK(TF_GetCode(s) == TF_INVALID_ARGUMENT, "GraphToGraphDef into NULL: %d", TF_GetCode(s));
  CHECK(TF_NewSession(NULL, NULL, s) == NULL && TF_GetCode(s) == TF_INVALID_ARGUMENT, "session on a NULL graph");
  TF_SessionRun(NULL, NULL, NULL, NULL, 0, NULL, NULL, 0, NULL, 0, NULL, s);
  CHECK(TF_GetCode(s) == TF_INVALID_ARGUMENT, "run a NULL session");
  TF_SessionPRunSetup(sess, NULL, 0, NULL, 0, NULL, 0, NULL, s);
  CHECK(TF_GetCode(s) == TF_INVALID_ARGUMENT, "PRunSetup with a NULL handle pointer");
  TF_SessionPRun(sess, NULL, NULL, NULL, 0, NULL, NULL, 0, NULL, 0, s);
  CHECK(TF_GetCode(s) == TF_INVALID_ARGUMENT, "PRun with a NULL handle");
  CHECK(TF_FinishOperation(NULL, s) == NULL && TF_GetCode(s) == TF_INVALID_ARGUMENT, "TF_FinishOperation(NULL)");
  TF_OperationDescription* d = TF_NewOperation(fresh, "Relu", "nullin");
  TF_AddInput(d, (TF_Output){NULL, 0});
  CHECK(TF_FinishOperation(d, s) == NULL && TF_GetCode(s) == TF_INVALID_ARGUMENT, "input with a NULL operation: %s",
        TF_Message(s));
  CHECK(count_ops(fresh) == 1, "nothing added");
  CHECK(TF_DeviceListCount(NULL) == 0, "TF_DeviceListCount(NULL)");
  CHECK(TF_DeviceListName(NULL, 0, s) == NULL && TF_GetCode(s) == TF_INVALID_ARGUMENT, "TF_DeviceListName(NULL)");
  TF_DeleteGraph(fresh);
  TF_DeleteImportGraphDefOptions(o);
  TF_DeleteBuffer(gd);
  TF_DeleteStatus(s);
  good_run("NULL arguments");
}

/* ---- Hostile sizes -------------------------------------------------------
 * Sizes that come from a graph, a feed or a C caller, each far beyond the host
 * device's limit (MSTREAM_HOST_MEMORY_MB=64, set before TF_NewSession) or the
 * machine's memory: TF's code naming the node, never an abort, and the
 * session answers the next Run. The codes are real TF 2.15's for the same
 * graphs: INVALID_ARGUMENT "Cannot parse tensor from proto" for the Consts,
 * RESOURCE_EXHAUSTED "OOM when allocating tensor" for the rest. */
static const char* kHostile =
    "node { name: 'cbig' op: 'Const' attr { key: 'dtype' value { type: DT_FLOAT } }\n"
    "  attr { key: 'value' value { tensor { dtype: DT_FLOAT tensor_shape { dim { size: 1000000 } dim { size: 1000000 } } } } } }\n"
    "node { name: 'cbigs' op: 'Const' attr { key: 'dtype' value { type: DT_STRING } }\n"
    "  attr { key: 'value' value { tensor { dtype: DT_STRING tensor_shape { dim { size: 1000000 } dim { size: 1000000 } } } } } }\n"
    "node { name: 'x' op: 'Placeholder' attr { key: 'dtype' value { type: DT_FLOAT } } }\n"
    "node { name: 'i' op: 'Placeholder' attr { key: 'dtype' value { type: DT_INT64 } } }\n"
    "node { name: 'str' op: 'Placeholder' attr { key: 'dtype' value { type: DT_STRING } } }\n"
    "node { name: 'neg' op: 'Neg' input: 'x' attr { key: 'T' value { type: DT_FLOAT } } }\n"
    "node { name: 'pad' op: 'Pad' input: 'x' input: 'i' attr { key: 'T' value { type: DT_FLOAT } }\n"
    "  attr { key: 'Tpaddings' value { type: DT_INT64 } } }\n"
    "node { name: 'bcast' op: 'BroadcastTo' input: 'x' input: 'i' attr { key: 'T' value { type: DT_FLOAT } }\n"
    "  attr { key: 'Tidx' value { type: DT_INT64 } } }\n"
    "node { name: 'fill' op: 'Fill' input: 'i' input: 'str' attr { key: 'T' value { type: DT_STRING } }\n"
    "  attr { key: 'index_type' value { type: DT_INT64 } } }\n"
    "node { name: 'tile' op: 'Tile' input: 'str' input: 'i' attr { key: 'T' value { type: DT_STRING } }\n"
    "  attr { key: 'Tmultiples' value { type: DT_INT64 } } }\n"
    /* Kernels that make string bytes sized by their inputs or attrs. */
    "node { name: 'strv' op: 'Placeholder' attr { key: 'dtype' value { type: DT_STRING } } }\n"
    "node { name: 'j' op: 'Placeholder' attr { key: 'dtype' value { type: DT_INT64 } } }\n"
    "node { name: 'sjoin' op: 'StringJoin' input: 'str' input: 'strv' attr { key: 'N' value { i: 2 } } }\n"
    "node { name: 'sadd' op: 'Add' input: 'str' input: 'strv' attr { key: 'T' value { type: DT_STRING } } }\n"
    "node { name: 'substr' op: 'Substr' input: 'str' input: 'i' input: 'j' attr { key: 'T' value { type: DT_INT64 } } }\n"
    "node { name: 'asstr' op: 'AsString' input: 'x' attr { key: 'T' value { type: DT_FLOAT } }\n"
    "  attr { key: 'width' value { i: 100000 } } }\n"
    "node { name: 'regex2' op: 'RegexReplace' input: 'str' input: 'pat' input: 'rw' }\n"
    "node { name: 'pat' op: 'Placeholder' attr { key: 'dtype' value { type: DT_STRING } } }\n"
    "node { name: 'rw' op: 'Placeholder' attr { key: 'dtype' value { type: DT_STRING } } }\n";

/* int64 values: a [rows, n/rows] matrix, or a vector of n when rows is 0. */
static TF_Tensor* ints64(const int64_t* v, int n, int rows) {
  int64_t dims[2] = {rows > 0 ? rows : n, rows > 0 ? n / rows : 0};
  TF_Tensor* t = TF_AllocateTensor(TF_INT64, dims, rows > 0 ? 2 : 1, sizeof(int64_t) * (size_t)n);
  memcpy(TF_TensorData(t), v, sizeof(int64_t) * (size_t)n);
  return t;
}

static TF_Tensor* strings(int n, const char* v) { /* n < 0: a scalar */
  int64_t dims[1] = {n};
  TF_Tensor* t = TF_AllocateTensor(TF_STRING, dims, n < 0 ? 0 : 1, sizeof(TF_TString) * (size_t)(n < 0 ? 1 : n));
  TF_TString* p = TF_TensorData(t);
  for (int k = 0; k < (n < 0 ? 1 : n); k++) TF_StringCopy(&p[k], v, strlen(v));
  return t;
}

/* Deletes a fed tensor; the caller owns the TF_TStrings it initialised (a
   long one lives on the heap), as with TF. */
static void delete_fed(TF_Tensor* t) {
  if (TF_TensorType(t) == TF_STRING) {
    TF_TString* p = TF_TensorData(t);
    for (int64_t k = 0; k < TF_TensorElementCount(t); k++) TF_StringDealloc(&p[k]);
  }
  TF_DeleteTensor(t);
}

/* Neg of [1, 2] is [-1, -2]: the session still answers. */
static void hostile_good_run(TF_Graph* hg, TF_Session* hs, const char* after) {
  TF_Status* s = TF_NewStatus();
  TF_Output x = out0(hg, "x");
  TF_Tensor* in = floats(1, 2, 1);
  TF_Tensor* out = run1(hs, &x, &in, 1, out0(hg, "neg"), s);
  const float* p = out ? TF_TensorData(out) : NULL;
  CHECK(TF_GetCode(s) == TF_OK && p && p[0] == -1 && p[1] == -2, "good run after %s: %s", after, TF_Message(s));
  if (out) TF_DeleteTensor(out);
  TF_DeleteTensor(in);
  TF_DeleteStatus(s);
}

static void hostile_run(TF_Graph* hg, TF_Session* hs, const char** names, TF_Tensor** vals, int nin,
                        const char* fetch, TF_Code code, const char* phrase, const char* what) {
  TF_Status* s = TF_NewStatus();
  TF_Output in[3];
  for (int k = 0; k < nin; k++) in[k] = out0(hg, names[k]);
  TF_Output f = out0(hg, fetch);
  TF_Tensor* out = (TF_Tensor*)&out;
  TF_SessionRun(hs, NULL, in, vals, nin, &f, &out, 1, NULL, 0, NULL, s);
  char needle[64]; /* the node: "{{node name}}" in kernel errors, 'name' at construction, the fetch on the way out */
  snprintf(needle, sizeof needle, "{{node %s}}", fetch);
  if (code == TF_INVALID_ARGUMENT) snprintf(needle, sizeof needle, "'%s'", fetch);
  if (strstr(phrase, "caller's copy")) snprintf(needle, sizeof needle, "fetch %s:0", fetch);
  CHECK(strstr(TF_Message(s), phrase) != NULL, "%s: message lacks '%s': %s", what, phrase, TF_Message(s));
  CHECK_ERR(s, code, needle, what);
  CHECK(out == NULL, "%s: output not NULL", what);
  for (int k = 0; k < nin; k++) delete_fed(vals[k]);
  TF_DeleteStatus(s);
  hostile_good_run(hg, hs, what);
}

static void test_hostile_sizes(void) {
  TF_Status* s = TF_NewStatus();
  TF_Graph* hg = TF_NewGraph();
  CHECK(import_text(hg, kHostile, s), "hostile import: %s", TF_Message(s));
  setenv("MSTREAM_HOST_MEMORY_MB", "64", 1);
  TF_SessionOptions* so = TF_NewSessionOptions();
  TF_Session* hs = TF_NewSession(hg, so, s);
  unsetenv("MSTREAM_HOST_MEMORY_MB");
  CHECK_OK(s, "hostile session");
  if (hs == NULL) return;
  hostile_good_run(hg, hs, "nothing");
  const char* none[1] = {NULL};
  hostile_run(hg, hs, none, NULL, 0, "cbig", TF_INVALID_ARGUMENT, "Cannot parse tensor from proto", "Const [1e6,1e6] float");
  hostile_run(hg, hs, none, NULL, 0, "cbigs", TF_INVALID_ARGUMENT, "Cannot parse tensor from proto", "Const [1e6,1e6] string");
  /* 1e12: beyond the machine; 1e8 floats (400 MB) or strings: beyond the 64 MiB limit. */
  static const int64_t sizes[2] = {1000000000000LL, 100000000LL};
  for (int k = 0; k < 2; k++) {
    const char* pn[2] = {"x", "i"};
    int64_t pads[2] = {0, sizes[k]};
    TF_Tensor* pv[2] = {floats(1, 2, 1), ints64(pads, 2, 1)};
    TF_SetShape(pv[0], (int64_t[]){2}, 1);
    hostile_run(hg, hs, pn, pv, 2, "pad", TF_RESOURCE_EXHAUSTED, "OOM when allocating", "Pad [[0, N]]");
    TF_Tensor* bv[2] = {floats(1, 1, 1), ints64(&sizes[k], 1, 0)};
    TF_SetShape(bv[0], (int64_t[]){1}, 1);
    hostile_run(hg, hs, pn, bv, 2, "bcast", TF_RESOURCE_EXHAUSTED, "OOM when allocating", "BroadcastTo [N]");
    const char* fn[2] = {"i", "str"};
    TF_Tensor* fv[2] = {ints64(&sizes[k], 1, 0), strings(-1, "ab")};
    hostile_run(hg, hs, fn, fv, 2, "fill", TF_RESOURCE_EXHAUSTED, "OOM when allocating", "Fill string [N]");
    const char* tn[2] = {"str", "i"};
    TF_Tensor* tv[2] = {strings(1, "ab"), ints64(&sizes[k], 1, 0)};
    hostile_run(hg, hs, tn, tv, 2, "tile", TF_RESOURCE_EXHAUSTED, "OOM when allocating", "Tile string [N]");
  }
  /* 1e6 elements sharing one 100 kB string fit the limit as Go holds them,
     but the caller's copy would be 100 GB: refused before any malloc (TF
     itself would try to copy every element). */
  {
    static char long_str[100001];
    memset(long_str, 'x', sizeof long_str - 1);
    const char* fn[2] = {"i", "str"};
    int64_t n = 1000000;
    TF_Tensor* fv[2] = {ints64(&n, 1, 0), strings(-1, long_str)};
    hostile_run(hg, hs, fn, fv, 2, "fill", TF_RESOURCE_EXHAUSTED, "the caller's copy", "Fill 1e6 x 100 kB string");
  }
  /* New string bytes: 100 elements of 1 MB (StringJoin, string Add, Substr
     of a broadcast scalar), 1000 floats 100 kB wide (AsString's width), a
     1000-byte rewrite at each of 100001 empty matches (RegexReplace): each
     about 100 MB, beyond the 64 MiB limit, though every input is small. */
  {
    static char mb[1000001], kb[1001];
    memset(mb, 'y', sizeof mb - 1);
    memset(kb, 'z', sizeof kb - 1);
    const char* sn[2] = {"str", "strv"};
    TF_Tensor* sv[2] = {strings(-1, mb), strings(100, "ab")};
    hostile_run(hg, hs, sn, sv, 2, "sjoin", TF_RESOURCE_EXHAUSTED, "OOM when allocating", "StringJoin 100 x 1 MB");
    TF_Tensor* av[2] = {strings(-1, mb), strings(100, "ab")};
    hostile_run(hg, hs, sn, av, 2, "sadd", TF_RESOURCE_EXHAUSTED, "OOM when allocating", "string Add 100 x 1 MB");
    const char* un[3] = {"str", "i", "j"};
    int64_t zeros[100] = {0}, lens[100];
    for (int k = 0; k < 100; k++) lens[k] = 1000000;
    TF_Tensor* uv[3] = {strings(-1, mb), ints64(zeros, 100, 0), ints64(lens, 100, 0)};
    hostile_run(hg, hs, un, uv, 3, "substr", TF_RESOURCE_EXHAUSTED, "OOM when allocating", "Substr 100 x 1 MB");
    const char* xn[1] = {"x"};
    float xs[1000];
    for (int k = 0; k < 1000; k++) xs[k] = (float)k;
    TF_Tensor* xv[1] = {TF_AllocateTensor(TF_FLOAT, (int64_t[]){1000}, 1, sizeof xs)};
    memcpy(TF_TensorData(xv[0]), xs, sizeof xs);
    hostile_run(hg, hs, xn, xv, 1, "asstr", TF_RESOURCE_EXHAUSTED, "OOM when allocating", "AsString width 1e5 x 1000");
    const char* rn[3] = {"str", "pat", "rw"};
    static char hk[100001];
    memset(hk, 'w', sizeof hk - 1);
    TF_Tensor* rv[3] = {strings(-1, hk), strings(-1, ""), strings(-1, kb)};
    hostile_run(hg, hs, rn, rv, 3, "regex2", TF_RESOURCE_EXHAUSTED, "OOM when allocating", "RegexReplace 1e5 x 1 kB");
  }
  /* TF_AllocateTensor of 4e12 bytes: as TF, a tensor without data that keeps
     its dims and byte size; fed, INVALID_ARGUMENT naming the feed. */
  int64_t big[1] = {1000000000000LL};
  TF_Tensor* t = TF_AllocateTensor(TF_FLOAT, big, 1, (size_t)4000000000000ULL);
  CHECK(t != NULL && TF_TensorData(t) == NULL && TF_TensorByteSize(t) == (size_t)4000000000000ULL &&
            TF_Dim(t, 0) == big[0],
        "TF_AllocateTensor(4e12 bytes): %p, data %p", (void*)t, t ? TF_TensorData(t) : NULL);
  if (t) {
    TF_Output x = out0(hg, "x");
    TF_Tensor* out = NULL;
    TF_Output f = out0(hg, "neg");
    TF_SessionRun(hs, NULL, &x, &t, 1, &f, &out, 1, NULL, 0, NULL, s);
    CHECK(strstr(TF_Message(s), "no data") != NULL, "feeding a tensor without data: %s", TF_Message(s));
    CHECK_ERR(s, TF_INVALID_ARGUMENT, "x", "feeding a tensor without data");
    CHECK(out == NULL, "feeding a tensor without data: output not NULL");
    TF_DeleteTensor(t);
    hostile_good_run(hg, hs, "feeding a tensor without data");
  }
  TF_CloseSession(hs, s);
  TF_DeleteSession(hs, s);
  TF_DeleteSessionOptions(so);
  TF_DeleteGraph(hg);
  TF_DeleteStatus(s);
}

int main(void) {
  TF_DeleteStatus(TF_NewStatus());
  leak_baseline();
  TF_Status* s = TF_NewStatus();
  g = TF_NewGraph();
  CHECK(import_text(g, kGraph, s), "import: %s", TF_Message(s));
  TF_SessionOptions* so = TF_NewSessionOptions();
  sess = TF_NewSession(g, so, s);
  CHECK_OK(s, "session");
  if (sess) {
    good_run("nothing");
    test_runs();
    test_non_placeholder_feed_shape();
    test_failed_count();
    test_imports();
    test_truncations();
#ifndef MS_ON_TF /* NULL arguments, on which TF crashes (README, "safer than TF") */
    test_nulls();
#else
    (void)test_nulls;
#endif
#ifndef MS_ON_TF /* TF aborts the process on some of these sizes */
    test_hostile_sizes();
#else
    (void)test_hostile_sizes;
#endif
    TF_CloseSession(sess, s);
    TF_DeleteSession(sess, s);
  }
  TF_DeleteSessionOptions(so);
  TF_DeleteGraph(g);
  TF_DeleteStatus(s);
  check_no_leaks();
  return DONE();
}
