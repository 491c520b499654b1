/* The C-API differential program: built once against mstream's library and once
 * against TF's own libtensorflow (-DMS_ON_TF, with tfshim.cc for the text-format
 * GraphDef parser), it runs the same call sequences on both and prints every
 * observable result as one line per call: status codes (and the parts of a
 * message that TF keeps stable: the names it must carry, the [[{{node NAME}}]]
 * suffix), output dtypes, shapes and values, graph introspection (operations,
 * names, types, attrs, shapes, positions, consumers) and deallocator calls.
 * test/capidiff/run.sh diffs the two transcripts, case by case.
 *
 *   capidiff                 every case of the scripted catalogue
 *   capidiff list            the catalogue's case names
 *   capidiff random SEED N   N random call sequences over the graph-building
 *                            and session API, drawn from SEED
 *
 * Nothing here may crash TF: the calls on which TF crashes (NULL arguments) are
 * mstream's "safer than TF" table in README.md, tested by test/c. */
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>

#include "../c/util.h"

/* ---- Transcript ------------------------------------------------------------- */

static void out(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vprintf(fmt, ap);
  va_end(ap);
  putchar('\n');
}

/* The status: its code, and for each name whether the message contains it. */
static void st(const char* what, TF_Status* s, ...) {
  char line[1024];
  int n = snprintf(line, sizeof line, "%s: code %d", what, TF_GetCode(s));
  va_list ap;
  va_start(ap, s);
  for (const char* needle; (needle = va_arg(ap, const char*)) != NULL;)
    n += snprintf(line + n, sizeof line - n, " has(%s)=%d", needle, strstr(TF_Message(s), needle) != NULL);
  va_end(ap);
  out("%s", line);
  if (getenv("CAPIDIFF_MSG")) out("  message: %s", TF_Message(s)); /* for debugging, never in a compared run */
}
#define ST(what, s, ...) st(what, s, ##__VA_ARGS__, (const char*)NULL)

/* A kernel error ends with TF's "[[{{node NAME}}]]". */
static void st_node(const char* what, TF_Status* s, const char* node) {
  char want[256];
  snprintf(want, sizeof want, "[[{{node %s}}]]", node);
  const char* m = TF_Message(s);
  size_t lm = strlen(m), lw = strlen(want);
  while (lm && (m[lm - 1] == '\n' || m[lm - 1] == ' ')) lm--;
  if (getenv("CAPIDIFF_MSG")) out("  message: %s", m);
  out("%s: code %d ends-with-node(%s)=%d", what, TF_GetCode(s), node, lm >= lw && memcmp(m + lm - lw, want, lw) == 0);
}

static void show_tensor(const char* what, const TF_Tensor* t) {
  if (!t) { out("%s: NULL", what); return; }
  char line[4096];
  int n = snprintf(line, sizeof line, "%s: dtype %d dims [", what, TF_TensorType(t));
  for (int i = 0; i < TF_NumDims(t); i++) n += snprintf(line + n, sizeof line - n, "%s%" PRId64, i ? "," : "", TF_Dim(t, i));
  int64_t count = TF_TensorElementCount(t);
  n += snprintf(line + n, sizeof line - n, "] count %" PRId64 " bytes %zu values", count, TF_TensorByteSize(t));
  const void* d = TF_TensorData(t);
  for (int64_t i = 0; i < count && i < 24 && n < (int)sizeof line - 64; i++) {
    switch (TF_TensorType(t)) {
      case TF_FLOAT: n += snprintf(line + n, sizeof line - n, " %.6g", ((const float*)d)[i]); break;
      case TF_DOUBLE: n += snprintf(line + n, sizeof line - n, " %.10g", ((const double*)d)[i]); break;
      case TF_INT32: n += snprintf(line + n, sizeof line - n, " %d", ((const int32_t*)d)[i]); break;
      case TF_INT64: n += snprintf(line + n, sizeof line - n, " %" PRId64, ((const int64_t*)d)[i]); break;
      case TF_BOOL: n += snprintf(line + n, sizeof line - n, " %d", ((const uint8_t*)d)[i]); break;
      case TF_STRING: {
        const TF_TString* ts = (const TF_TString*)d + i;
        n += snprintf(line + n, sizeof line - n, " '%.*s'", (int)TF_StringGetSize(ts), TF_StringGetDataPointer(ts));
        break;
      }
      default: n += snprintf(line + n, sizeof line - n, " ?"); break;
    }
  }
  out("%s", line);
}

static void show_shape(TF_Graph* g, TF_Output o) {
  TF_Status* s = TF_NewStatus();
  int nd = TF_GraphGetTensorNumDims(g, o, s);
  char line[512];
  int n = snprintf(line, sizeof line, "  shape %s:%d: code %d ndims %d [", TF_OperationName(o.oper), o.index,
                   TF_GetCode(s), nd);
  if (nd > 0 && nd < 16) {
    int64_t dims[16];
    TF_GraphGetTensorShape(g, o, dims, nd, s);
    for (int i = 0; i < nd; i++) n += snprintf(line + n, sizeof line - n, "%s%" PRId64, i ? "," : "", dims[i]);
  }
  out("%s]", line);
  TF_DeleteStatus(s);
}

/* Everything the C API says about one operation. */
static void show_op(TF_Graph* g, TF_Operation* op) {
  out("op %s type %s device '%s' inputs %d outputs %d controls-in %d controls-out %d", TF_OperationName(op),
      TF_OperationOpType(op), TF_OperationDevice(op), TF_OperationNumInputs(op), TF_OperationNumOutputs(op),
      TF_OperationNumControlInputs(op), TF_OperationNumControlOutputs(op));
  for (int i = 0; i < TF_OperationNumInputs(op); i++) {
    TF_Input in = {op, i};
    TF_Output src = TF_OperationInput(in);
    out("  input %d from %s:%d dtype %d", i, TF_OperationName(src.oper), src.index, TF_OperationInputType(in));
  }
  for (int i = 0; i < TF_OperationNumOutputs(op); i++) {
    TF_Output o = {op, i};
    out("  output %d dtype %d consumers %d", i, TF_OperationOutputType(o), TF_OperationOutputNumConsumers(o));
    show_shape(g, o);
  }
}

/* The operations in TF_GraphNextOperation's order, with their positions. */
static void show_graph(TF_Graph* g) {
  size_t pos = 0;
  TF_Operation* op;
  while ((op = TF_GraphNextOperation(g, &pos)) != NULL) {
    out("pos %zu", pos);
    show_op(g, op);
  }
  out("end pos %zu", pos);
}

static void show_attr(TF_Operation* op, const char* name) {
  TF_Status* s = TF_NewStatus();
  TF_AttrMetadata m = TF_OperationGetAttrMetadata(op, name, s);
  if (TF_GetCode(s) != TF_OK) {
    ST("  attr meta", s, name);
    TF_DeleteStatus(s);
    return;
  }
  out("  attr %s: is_list %d list_size %" PRId64 " type %d total_size %" PRId64, name, m.is_list, m.list_size, m.type,
      m.total_size);
  if (!m.is_list) {
    switch (m.type) {
      case TF_ATTR_TYPE: {
        TF_DataType t;
        TF_OperationGetAttrType(op, name, &t, s);
        out("   = type %d code %d", t, TF_GetCode(s));
        break;
      }
      case TF_ATTR_INT: {
        int64_t v;
        TF_OperationGetAttrInt(op, name, &v, s);
        out("   = int %" PRId64 " code %d", v, TF_GetCode(s));
        break;
      }
      case TF_ATTR_SHAPE: {
        int64_t d[16] = {0};
        int nd = m.total_size > 16 ? 16 : (int)m.total_size;
        TF_OperationGetAttrShape(op, name, d, nd < 0 ? 0 : nd, s);
        out("   = shape nd %" PRId64 " [%" PRId64 ",%" PRId64 "] code %d", m.total_size, d[0], d[1], TF_GetCode(s));
        break;
      }
      case TF_ATTR_STRING: {
        char buf[256] = {0};
        size_t len = m.total_size < 255 ? (size_t)m.total_size : 255;
        TF_OperationGetAttrString(op, name, buf, len, s);
        out("   = string '%s' code %d", buf, TF_GetCode(s));
        break;
      }
      case TF_ATTR_TENSOR: {
        TF_Tensor* t = NULL;
        TF_OperationGetAttrTensor(op, name, &t, s);
        show_tensor("   = tensor", t);
        if (t) TF_DeleteTensor(t);
        break;
      }
      default: break;
    }
  } else if (m.type == TF_ATTR_INT) {
    int64_t v[8] = {0};
    TF_OperationGetAttrIntList(op, name, v, m.list_size < 8 ? (int)m.list_size : 8, s);
    out("   = ints %" PRId64 " %" PRId64 " %" PRId64 " %" PRId64 " code %d", v[0], v[1], v[2], v[3], TF_GetCode(s));
  }
  TF_DeleteStatus(s);
}

/* ---- Helpers ------------------------------------------------------------------ */

static int deallocs;
static void count_dealloc(void* data, size_t len, void* arg) {
  (void)data; (void)len; (void)arg;
  deallocs++;
}

static TF_Tensor* ftensor(const int64_t* dims, int nd, const float* v) { return make_tensor(TF_FLOAT, dims, nd, v); }

static TF_Session* session(TF_Graph* g, TF_Status* s) {
  TF_SessionOptions* so = TF_NewSessionOptions();
  TF_Session* sess = TF_NewSession(g, so, s);
  TF_DeleteSessionOptions(so);
  return sess;
}

static void end_session(TF_Session* sess) {
  TF_Status* s = TF_NewStatus();
  if (sess) {
    TF_CloseSession(sess, s);
    TF_DeleteSession(sess, s);
  }
  TF_DeleteStatus(s);
}

/* Runs the graph and prints the status and every fetched output. */
static void run_show(TF_Session* sess, const TF_Output* in, TF_Tensor* const* vals, int nin, const TF_Output* outs,
                     int nout, const TF_Operation* const* targets, int ntargets, const char* kernel_node) {
  TF_Status* s = TF_NewStatus();
  TF_Tensor* res[32] = {0};
  TF_SessionRun(sess, NULL, in, vals, nin, outs, res, nout, targets, ntargets, NULL, s);
  if (kernel_node) st_node("run", s, kernel_node);
  else ST("run", s);
  for (int i = 0; i < nout; i++) {
    char what[32];
    snprintf(what, sizeof what, " fetch %d", i);
    if (TF_GetCode(s) == TF_OK) show_tensor(what, res[i]);
    if (res[i]) TF_DeleteTensor(res[i]);
  }
  TF_DeleteStatus(s);
}

/* Imports a text GraphDef into a fresh graph and prints the status. */
static TF_Graph* import_show(const char* what, const char* text, const char* name) {
  TF_Graph* g = TF_NewGraph();
  TF_Status* s = TF_NewStatus();
  import_text(g, text, s);
  ST(what, s, name);
  TF_DeleteStatus(s);
  return g;
}

/* ---- The catalogue -------------------------------------------------------- */

static void c_build_introspect(void) {
  TF_Status* s = TF_NewStatus();
  TF_Graph* g = TF_NewGraph();
  int64_t dims[2] = {-1, 3};
  placeholder(g, "x", TF_FLOAT, dims, 2, s);
  ST("placeholder", s);
  float c[3] = {1.5f, -2, 0.25f};
  int64_t cd[1] = {3};
  const_op(g, "c", TF_FLOAT, cd, 1, c, s);
  ST("const", s);
  binary(g, "AddV2", "y", out0(g, "x"), out0(g, "c"), s);
  ST("add", s);
  unary(g, "Neg", "n", out0(g, "y"), s);
  ST("neg", s);
  show_graph(g);
  show_attr(TF_GraphOperationByName(g, "x"), "dtype");
  show_attr(TF_GraphOperationByName(g, "x"), "shape");
  show_attr(TF_GraphOperationByName(g, "c"), "value");
  show_attr(TF_GraphOperationByName(g, "y"), "T");
  show_attr(TF_GraphOperationByName(g, "y"), "nosuch");
  out("by name missing: %d", TF_GraphOperationByName(g, "nosuch") == NULL);
  TF_Input cons[4];
  int nc = TF_OperationOutputConsumers(out0(g, "y"), cons, 4);
  out("consumers of y: %d first %s:%d", nc, nc ? TF_OperationName(cons[0].oper) : "-", nc ? cons[0].index : -1);
  TF_DeleteGraph(g);
  TF_DeleteStatus(s);
}

static void c_next_operation_pos(void) {
  TF_Graph* g = TF_NewGraph();
  size_t pos = 0;
  out("empty graph: %d pos %zu", TF_GraphNextOperation(g, &pos) != NULL, pos);
  TF_Status* s = TF_NewStatus();
  placeholder(g, "a", TF_INT32, NULL, 0, s);
  placeholder(g, "b", TF_INT32, NULL, 0, s);
  pos = 0;
  for (int i = 0; i < 4; i++) {
    TF_Operation* op = TF_GraphNextOperation(g, &pos);
    out("next: %s pos %zu", op ? TF_OperationName(op) : "NULL", pos);
  }
  TF_DeleteGraph(g);
  TF_DeleteStatus(s);
}

static void c_unknown_op(void) {
  TF_Status* s = TF_NewStatus();
  TF_Graph* g = TF_NewGraph();
  TF_OperationDescription* d = TF_NewOperation(g, "NoSuchOp", "z");
  TF_Operation* op = TF_FinishOperation(d, s);
  ST("finish unknown op", s, "NoSuchOp");
  out("op NULL: %d", op == NULL);
  TF_Buffer* b = TF_NewBuffer();
  TF_GraphGetOpDef(g, "NoSuchOp", b, s);
  ST("op def of unknown op", s, "NoSuchOp");
  TF_DeleteBuffer(b);
  TF_DeleteGraph(import_show("import unknown op", "node { name: 'z' op: 'NoSuchOp' }", "NoSuchOp"));
  TF_DeleteGraph(g);
  TF_DeleteStatus(s);
}

static void c_placeholder_bad_dim(void) {
  TF_Graph* g = import_show("import placeholder dim -2",
                            "node { name: 'x' op: 'Placeholder' attr { key: 'dtype' value { type: DT_FLOAT } }"
                            " attr { key: 'shape' value { shape { dim { size: -2 } } } } }",
                            "x");
  out("ops: %d", count_ops(g));
  TF_DeleteGraph(g);
  TF_Status* s = TF_NewStatus();
  g = TF_NewGraph();
  int64_t dims[2] = {2, -2};
  placeholder(g, "x", TF_FLOAT, dims, 2, s);
  ST("finish placeholder dim -2", s, "x");
  TF_DeleteGraph(g);
  TF_DeleteStatus(s);
}

static void c_conv2d_zero_stride(void) {
  TF_Status* s = TF_NewStatus();
  TF_Graph* g = TF_NewGraph();
  int64_t xd[4] = {1, 4, 4, 1}, fd[4] = {2, 2, 1, 1};
  placeholder(g, "x", TF_FLOAT, xd, 4, s);
  placeholder(g, "f", TF_FLOAT, fd, 4, s);
  TF_OperationDescription* d = TF_NewOperation(g, "Conv2D", "conv");
  TF_AddInput(d, out0(g, "x"));
  TF_AddInput(d, out0(g, "f"));
  int64_t strides[4] = {1, 0, 1, 1};
  TF_SetAttrIntList(d, "strides", strides, 4);
  TF_SetAttrString(d, "padding", "VALID", 5);
  TF_FinishOperation(d, s);
  ST("conv2d zero stride", s, "conv");
  out("ops: %d", count_ops(g));
  TF_DeleteGraph(g);
  g = import_show("import conv2d zero stride",
                  "node { name: 'x' op: 'Placeholder' attr { key: 'dtype' value { type: DT_FLOAT } } }"
                  "node { name: 'f' op: 'Placeholder' attr { key: 'dtype' value { type: DT_FLOAT } } }"
                  "node { name: 'conv' op: 'Conv2D' input: 'x' input: 'f' attr { key: 'T' value { type: DT_FLOAT } }"
                  " attr { key: 'strides' value { list { i: 1 i: 1 i: 0 i: 1 } } }"
                  " attr { key: 'padding' value { s: 'SAME' } } }",
                  "conv");
  TF_DeleteGraph(g);
  TF_DeleteStatus(s);
}

static void c_const_mismatch(void) {
  /* Content shorter than the shape, a negative dim, and dtype != value's dtype. */
  TF_DeleteGraph(import_show("const content shorter than shape",
                             "node { name: 'c' op: 'Const' attr { key: 'dtype' value { type: DT_FLOAT } }"
                             " attr { key: 'value' value { tensor { dtype: DT_FLOAT tensor_shape { dim { size: 4 } }"
                             " tensor_content: '\\000\\000\\200?\\000\\000\\000@' } } } }",
                             "c"));
  TF_DeleteGraph(import_show("const negative dim",
                             "node { name: 'c' op: 'Const' attr { key: 'dtype' value { type: DT_FLOAT } }"
                             " attr { key: 'value' value { tensor { dtype: DT_FLOAT tensor_shape { dim { size: -3 } }"
                             " float_val: 1 } } } }",
                             "c"));
  TF_DeleteGraph(import_show("const dtype differs from value",
                             "node { name: 'c' op: 'Const' attr { key: 'dtype' value { type: DT_INT32 } }"
                             " attr { key: 'value' value { tensor { dtype: DT_FLOAT tensor_shape { dim { size: 2 } }"
                             " float_val: 1 float_val: 2 } } } }",
                             "c"));
}

static void c_gather_axis(void) {
  TF_Graph* g = import_show(
      "import gatherv2 axis out of range",
      "node { name: 'p' op: 'Placeholder' attr { key: 'dtype' value { type: DT_FLOAT } }"
      " attr { key: 'shape' value { shape { dim { size: 2 } dim { size: 3 } } } } }"
      "node { name: 'i' op: 'Const' attr { key: 'dtype' value { type: DT_INT32 } }"
      " attr { key: 'value' value { tensor { dtype: DT_INT32 tensor_shape { dim { size: 1 } } int_val: 0 } } } }"
      "node { name: 'a' op: 'Const' attr { key: 'dtype' value { type: DT_INT32 } }"
      " attr { key: 'value' value { tensor { dtype: DT_INT32 tensor_shape { } int_val: 5 } } } }"
      "node { name: 'g' op: 'GatherV2' input: 'p' input: 'i' input: 'a' attr { key: 'Tparams' value { type: DT_FLOAT } }"
      " attr { key: 'Tindices' value { type: DT_INT32 } } attr { key: 'Taxis' value { type: DT_INT32 } } }",
      "g");
  out("ops: %d", count_ops(g));
  TF_DeleteGraph(g);
}

static void c_fill_huge(void) {
  TF_Status* s = TF_NewStatus();
  TF_Graph* g = TF_NewGraph();
  int32_t dims[3] = {100000, 100000, 10};
  int64_t dd[1] = {3};
  const_op(g, "dims", TF_INT32, dd, 1, dims, s);
  float v = 1;
  const_op(g, "v", TF_FLOAT, NULL, 0, &v, s);
  binary(g, "Fill", "fill", out0(g, "dims"), out0(g, "v"), s);
  ST("fill 400 GB", s, "fill");
  unary(g, "Size", "size", out0(g, "fill"), s);
  TF_Session* sess = session(g, s);
  TF_Output o = out0(g, "fill");
  run_show(sess, NULL, NULL, 0, &o, 1, NULL, 0, NULL);
  end_session(sess);
  TF_DeleteGraph(g);
  TF_DeleteStatus(s);
}

/* x declared [] fed [1,2,3]: TF's C API runs it (x*3 = [3,6,9]). */
static void c_feed_shape(void) {
  TF_Status* s = TF_NewStatus();
  TF_Graph* g = TF_NewGraph();
  placeholder(g, "x", TF_FLOAT, NULL, 0, s);
  float three = 3;
  const_op(g, "k", TF_FLOAT, NULL, 0, &three, s);
  binary(g, "Mul", "y", out0(g, "x"), out0(g, "k"), s);
  unary(g, "Shape", "sh", out0(g, "x"), s);
  TF_Session* sess = session(g, s);
  float v[3] = {1, 2, 3};
  int64_t d[1] = {3};
  TF_Tensor* t = ftensor(d, 1, v);
  TF_Output in = out0(g, "x"), outs[2] = {out0(g, "y"), out0(g, "sh")};
  run_show(sess, &in, &t, 1, outs, 2, NULL, 0, NULL);
  TF_DeleteTensor(t);
  /* A rank-2 feed to a placeholder declared [2]. */
  TF_DeleteGraph(g);
  end_session(sess);
  g = TF_NewGraph();
  int64_t two[1] = {2};
  placeholder(g, "x", TF_FLOAT, two, 1, s);
  unary(g, "Neg", "y", out0(g, "x"), s);
  sess = session(g, s);
  int64_t d22[2] = {2, 2};
  float v4[4] = {1, -2, 3, -4};
  t = ftensor(d22, 2, v4);
  in = out0(g, "x");
  TF_Output o = out0(g, "y");
  run_show(sess, &in, &t, 1, &o, 1, NULL, 0, NULL);
  TF_DeleteTensor(t);
  end_session(sess);
  TF_DeleteGraph(g);
  TF_DeleteStatus(s);
}

static void c_feed_fetch_rules(void) {
  TF_Status* s = TF_NewStatus();
  TF_Graph* g = TF_NewGraph();
  placeholder(g, "x", TF_FLOAT, NULL, 0, s);
  unary(g, "Neg", "y", out0(g, "x"), s);
  TF_Session* sess = session(g, s);
  float v = 2;
  TF_Tensor* t = ftensor(NULL, 0, &v);
  TF_Tensor* tt[2] = {t, t};
  TF_Output x = out0(g, "x"), y = out0(g, "y"), xs[2] = {x, x};
  out("-- fed and fetched");
  run_show(sess, &x, &t, 1, &x, 1, NULL, 0, NULL);
  out("-- fed twice");
  run_show(sess, xs, tt, 2, &y, 1, NULL, 0, NULL);
  out("-- fetched twice");
  TF_Output ys[2] = {y, y};
  run_show(sess, &x, &t, 1, ys, 2, NULL, 0, NULL);
  out("-- fetch of output 3 of a one-output op");
  TF_Output bad = {TF_GraphOperationByName(g, "y"), 3};
  run_show(sess, &x, &t, 1, &bad, 1, NULL, 0, NULL);
  out("-- feed of output 1 of a one-output op");
  TF_Output badin = {TF_GraphOperationByName(g, "x"), 1};
  run_show(sess, &badin, &t, 1, &y, 1, NULL, 0, NULL);
  out("-- no fetches, no targets");
  run_show(sess, &x, &t, 1, NULL, 0, NULL, 0, NULL);
  out("-- a target only");
  const TF_Operation* target = TF_GraphOperationByName(g, "y");
  run_show(sess, &x, &t, 1, NULL, 0, &target, 1, NULL);
  out("-- a feed missing");
  run_show(sess, NULL, NULL, 0, &y, 1, NULL, 0, NULL);
  out("-- the wrong dtype");
  double dv = 1;
  TF_Tensor* td = make_tensor(TF_DOUBLE, NULL, 0, &dv);
  run_show(sess, &x, &td, 1, &y, 1, NULL, 0, NULL);
  TF_DeleteTensor(td);
  out("-- a fed non-placeholder");
  TF_Output yy = out0(g, "y");
  run_show(sess, &yy, &t, 1, &yy, 0, NULL, 0, NULL);
  TF_DeleteTensor(t);
  end_session(sess);
  TF_DeleteGraph(g);
  TF_DeleteStatus(s);
}

static void c_kernel_error(void) {
  TF_Status* s = TF_NewStatus();
  TF_Graph* g = TF_NewGraph();
  placeholder(g, "x", TF_FLOAT, NULL, -1, s);
  placeholder(g, "shp", TF_INT32, NULL, -1, s);
  binary(g, "Reshape", "r", out0(g, "x"), out0(g, "shp"), s);
  placeholder(g, "a", TF_FLOAT, NULL, -1, s);
  binary(g, "MatMul", "mm", out0(g, "a"), out0(g, "a"), s);
  TF_Session* sess = session(g, s);
  float v[6] = {1, 2, 3, 4, 5, 6};
  int64_t d[1] = {6};
  int32_t bad[2] = {4, 4};
  int64_t d2[1] = {2};
  TF_Tensor* vals[2] = {ftensor(d, 1, v), make_tensor(TF_INT32, d2, 1, bad)};
  TF_Output in[2] = {out0(g, "x"), out0(g, "shp")}, o = out0(g, "r");
  run_show(sess, in, vals, 2, &o, 1, NULL, 0, "r");
  int64_t d23[2] = {2, 3};
  TF_Tensor* m = ftensor(d23, 2, v);
  TF_Output a = out0(g, "a"), mm = out0(g, "mm");
  run_show(sess, &a, &m, 1, &mm, 1, NULL, 0, "mm");
  TF_DeleteTensor(m);
  TF_DeleteTensor(vals[0]);
  TF_DeleteTensor(vals[1]);
  end_session(sess);
  TF_DeleteGraph(g);
  TF_DeleteStatus(s);
}

static void c_static_shape_errors(void) {
  TF_Status* s = TF_NewStatus();
  TF_Graph* g = TF_NewGraph();
  int64_t d2[1] = {2}, d3[1] = {3};
  placeholder(g, "a", TF_FLOAT, d2, 1, s);
  placeholder(g, "b", TF_FLOAT, d3, 1, s);
  binary(g, "AddV2", "ab", out0(g, "a"), out0(g, "b"), s);
  ST("add [2]+[3]", s, "ab");
  placeholder(g, "i", TF_INT32, d2, 1, s);
  binary(g, "AddV2", "ai", out0(g, "a"), out0(g, "i"), s);
  ST("add float+int32", s, "ai");
  int64_t d22[2] = {2, 2};
  placeholder(g, "m", TF_FLOAT, d22, 2, s);
  binary(g, "MatMul", "mv", out0(g, "m"), out0(g, "a"), s);
  ST("matmul [2,2]x[2]", s, "mv");
  TF_GraphSetTensorShape(g, out0(g, "a"), d3, 1, s);
  ST("set shape [2] to [3]", s);
  int64_t dunk[1] = {-1};
  placeholder(g, "u", TF_FLOAT, dunk, 1, s);
  TF_GraphSetTensorShape(g, out0(g, "u"), d3, 1, s);
  ST("set shape [-1] to [3]", s);
  show_shape(g, out0(g, "u"));
  out("ops: %d", count_ops(g));
  TF_DeleteGraph(g);
  TF_DeleteStatus(s);
}

static void c_new_tensor_lifetime(void) {
  int64_t d[1] = {4};
  float* aligned = aligned_alloc(64, 64);
  for (int i = 0; i < 4; i++) aligned[i] = (float)i;
  deallocs = 0;
  TF_Tensor* t = TF_NewTensor(TF_FLOAT, d, 1, aligned, 16, count_dealloc, NULL);
  out("aligned: deallocs after new %d same data %d aligned %d", deallocs, TF_TensorData(t) == aligned,
      TF_TensorIsAligned(t));
  show_tensor("aligned", t);
  TF_DeleteTensor(t);
  out("aligned: deallocs after delete %d", deallocs);
  char* raw = aligned_alloc(64, 128);
  float* un = (float*)(raw + 4);
  for (int i = 0; i < 4; i++) un[i] = (float)(i + 10);
  deallocs = 0;
  t = TF_NewTensor(TF_FLOAT, d, 1, un, 16, count_dealloc, NULL);
  out("unaligned: deallocs after new %d same data %d aligned %d", deallocs, TF_TensorData(t) == un,
      TF_TensorIsAligned(t));
  un[0] = 99; /* the caller's buffer: visible only if the tensor kept it */
  show_tensor("unaligned", t);
  TF_DeleteTensor(t);
  out("unaligned: deallocs after delete %d", deallocs);
  /* Which alignment TF_NewTensor keeps the caller's buffer for. */
  for (int off = 8; off < 64; off += 8) {
    deallocs = 0;
    t = TF_NewTensor(TF_FLOAT, d, 1, raw + off, 16, count_dealloc, NULL);
    out("offset %d: deallocs after new %d same data %d aligned %d", off, deallocs, TF_TensorData(t) == raw + off,
        TF_TensorIsAligned(t));
    TF_DeleteTensor(t);
  }
  /* A zero-byte tensor: TF calls the deallocator at once, as for any tensor whose data it did not keep. */
  deallocs = 0;
  int64_t d0[1] = {0};
  t = TF_NewTensor(TF_FLOAT, d0, 1, aligned, 0, count_dealloc, NULL);
  out("empty: deallocs after new %d", deallocs);
  show_tensor("empty", t);
  if (t) TF_DeleteTensor(t);
  out("empty: deallocs after delete %d", deallocs);
  free(raw);
  free(aligned);
}

static void c_tensor_api(void) {
  int64_t d[2] = {2, 3};
  TF_Tensor* t = TF_AllocateTensor(TF_INT64, d, 2, 48);
  out("allocate: dims %d size %zu count %" PRId64 " aligned %d", TF_NumDims(t), TF_TensorByteSize(t),
      TF_TensorElementCount(t), TF_TensorIsAligned(t));
  TF_Tensor* m = TF_TensorMaybeMove(t);
  out("maybe move of a fresh tensor: %d", m != NULL);
  if (m) t = m;
  TF_Status* s = TF_NewStatus();
  int64_t d6[1] = {6};
  TF_Tensor* to = TF_AllocateTensor(TF_INT64, d6, 1, 48);
  TF_TensorBitcastFrom(t, TF_INT64, to, d6, 1, s);
  ST("bitcast same size", s);
  int64_t d5[1] = {5};
  TF_TensorBitcastFrom(t, TF_INT64, to, d5, 1, s);
  ST("bitcast other size", s);
  TF_TensorBitcastFrom(t, TF_INT32, to, d6, 1, s);
  ST("bitcast int64 to int32 x6", s);
  int64_t d12[1] = {12};
  TF_TensorBitcastFrom(t, TF_INT32, to, d12, 1, s);
  ST("bitcast int64 to int32 x12", s);
  TF_SetShape(to, d12, 1);
  out("set shape: dims %d dim0 %" PRId64 " size %zu", TF_NumDims(to), TF_Dim(to, 0), TF_TensorByteSize(to));
  TF_DeleteTensor(to);
  TF_DeleteTensor(t);
  out("allocate short: %d", TF_AllocateTensor(TF_FLOAT, d, 2, 4) != NULL);
  for (int dt = 1; dt <= 23; dt++) out("size of dtype %d: %zu", dt, TF_DataTypeSize((TF_DataType)dt));
  TF_DeleteStatus(s);
}

static void c_strings(void) {
  TF_TString ts;
  TF_StringInit(&ts);
  TF_StringCopy(&ts, "hello", 5);
  out("string: type %d size %zu cap>=size %d", (int)TF_StringGetType(&ts), TF_StringGetSize(&ts),
      TF_StringGetCapacity(&ts) >= TF_StringGetSize(&ts));
  char big[100];
  memset(big, 'q', sizeof big);
  TF_StringCopy(&ts, big, sizeof big);
  out("large string: type %d size %zu", (int)TF_StringGetType(&ts), TF_StringGetSize(&ts));
  TF_StringDealloc(&ts);
  TF_Status* s = TF_NewStatus();
  TF_Graph* g = TF_NewGraph();
  placeholder(g, "x", TF_STRING, NULL, -1, s);
  unary(g, "Identity", "y", out0(g, "x"), s);
  TF_Session* sess = session(g, s);
  int64_t d[1] = {2};
  TF_Tensor* t = TF_AllocateTensor(TF_STRING, d, 1, 2 * sizeof(TF_TString));
  TF_TString* e = (TF_TString*)TF_TensorData(t);
  TF_StringInit(&e[0]);
  TF_StringCopy(&e[0], "ab", 2);
  TF_StringInit(&e[1]);
  TF_StringCopy(&e[1], big, sizeof big);
  TF_Output x = out0(g, "x"), y = out0(g, "y");
  run_show(sess, &x, &t, 1, &y, 1, NULL, 0, NULL);
  TF_DeleteTensor(t);
  end_session(sess);
  TF_DeleteGraph(g);
  TF_DeleteStatus(s);
}

static const char* kImportGraph =
    "node { name: 'x' op: 'Placeholder' attr { key: 'dtype' value { type: DT_FLOAT } } }"
    "node { name: 'k' op: 'Const' attr { key: 'dtype' value { type: DT_FLOAT } }"
    " attr { key: 'value' value { tensor { dtype: DT_FLOAT tensor_shape { } float_val: 2 } } } }"
    "node { name: 'y' op: 'Mul' input: 'x' input: 'k' attr { key: 'T' value { type: DT_FLOAT } } }"
    "node { name: 'z' op: 'Neg' input: 'y' input: '^k' attr { key: 'T' value { type: DT_FLOAT } } }";

static void c_import_options(void) {
  TF_Status* s = TF_NewStatus();
  TF_Graph* g = TF_NewGraph();
  import_text(g, kImportGraph, s);
  ST("import", s);
  show_graph(g);
  /* Again with a prefix, an input map and return outputs. */
  TF_Buffer* b = text_graph(kImportGraph, s);
  TF_ImportGraphDefOptions* o = TF_NewImportGraphDefOptions();
  TF_ImportGraphDefOptionsSetPrefix(o, "p");
  TF_ImportGraphDefOptionsAddInputMapping(o, "x", 0, out0(g, "z"));
  TF_ImportGraphDefOptionsAddReturnOutput(o, "z", 0);
  TF_ImportGraphDefOptionsAddReturnOperation(o, "y");
  TF_ImportGraphDefOptionsAddControlDependency(o, TF_GraphOperationByName(g, "k"));
  out("num return outputs %d", TF_ImportGraphDefOptionsNumReturnOutputs(o));
  TF_ImportGraphDefResults* r = TF_GraphImportGraphDefWithResults(g, b, o, s);
  ST("import with options", s);
  if (r) {
    int n;
    TF_Output* outs;
    TF_ImportGraphDefResultsReturnOutputs(r, &n, &outs);
    out("return outputs %d: %s:%d", n, n ? TF_OperationName(outs[0].oper) : "-", n ? outs[0].index : -1);
    TF_Operation** ops;
    TF_ImportGraphDefResultsReturnOperations(r, &n, &ops);
    out("return operations %d: %s", n, n ? TF_OperationName(ops[0]) : "-");
    const char** names;
    int* idx;
    TF_ImportGraphDefResultsMissingUnusedInputMappings(r, &n, &names, &idx);
    out("missing unused %d", n);
    TF_DeleteImportGraphDefResults(r);
  }
  show_graph(g);
  TF_DeleteImportGraphDefOptions(o);
  /* Name clash without a prefix; then an input map naming a missing node, then a missing key. */
  o = TF_NewImportGraphDefOptions();
  TF_GraphImportGraphDef(g, b, o, s);
  ST("import clash", s, "x");
  TF_ImportGraphDefOptionsSetUniquifyNames(o, 1);
  TF_GraphImportGraphDef(g, b, o, s);
  ST("import uniquified", s);
  TF_DeleteImportGraphDefOptions(o);
  o = TF_NewImportGraphDefOptions();
  TF_ImportGraphDefOptionsSetPrefix(o, "q");
  TF_ImportGraphDefOptionsAddInputMapping(o, "nosuch", 0, out0(g, "z"));
  r = TF_GraphImportGraphDefWithResults(g, b, o, s);
  ST("input map of a missing node", s);
  if (r) {
    int n;
    const char** names;
    int* idx;
    TF_ImportGraphDefResultsMissingUnusedInputMappings(r, &n, &names, &idx);
    out("missing unused %d: %s:%d", n, n ? names[0] : "-", n ? idx[0] : -1);
    TF_DeleteImportGraphDefResults(r);
  }
  TF_DeleteImportGraphDefOptions(o);
  o = TF_NewImportGraphDefOptions();
  TF_ImportGraphDefOptionsSetPrefix(o, "r");
  TF_ImportGraphDefOptionsAddInputMapping(o, "x", 3, out0(g, "z"));
  TF_GraphImportGraphDef(g, b, o, s);
  ST("input map of a missing output index", s, "x:3");
  TF_DeleteImportGraphDefOptions(o);
  /* An input map whose source has another dtype: the error names the node and the key. */
  placeholder(g, "ints", TF_INT32, NULL, -1, s);
  o = TF_NewImportGraphDefOptions();
  TF_ImportGraphDefOptionsSetPrefix(o, "u");
  TF_ImportGraphDefOptionsAddInputMapping(o, "x", 0, out0(g, "ints"));
  TF_GraphImportGraphDef(g, b, o, s);
  ST("input map of another dtype", s, "u/y", "x");
  TF_DeleteImportGraphDefOptions(o);
  o = TF_NewImportGraphDefOptions();
  TF_ImportGraphDefOptionsSetPrefix(o, "t");
  TF_ImportGraphDefOptionsAddReturnOutput(o, "nosuch", 0);
  TF_GraphImportGraphDef(g, b, o, s);
  ST("return output of a missing node", s, "nosuch");
  TF_DeleteImportGraphDefOptions(o);
  out("ops: %d", count_ops(g));
  TF_DeleteBuffer(b);
  TF_DeleteGraph(g);
  TF_DeleteStatus(s);
}

static void c_import_errors(void) {
  TF_DeleteGraph(import_show("missing input", "node { name: 'y' op: 'Neg' input: 'nosuch' attr { key: 'T' value { type: DT_FLOAT } } }", "nosuch"));
  TF_DeleteGraph(import_show("duplicate node",
                             "node { name: 'x' op: 'NoOp' } node { name: 'x' op: 'NoOp' }", "x"));
  TF_DeleteGraph(import_show("cycle",
                             "node { name: 'a' op: 'Neg' input: 'b' attr { key: 'T' value { type: DT_FLOAT } } }"
                             "node { name: 'b' op: 'Neg' input: 'a' attr { key: 'T' value { type: DT_FLOAT } } }",
                             "a"));
  TF_DeleteGraph(import_show("missing attr", "node { name: 'p' op: 'Placeholder' }", "dtype"));
  TF_DeleteGraph(import_show("wrong input count",
                             "node { name: 'x' op: 'Placeholder' attr { key: 'dtype' value { type: DT_FLOAT } } }"
                             "node { name: 'y' op: 'Neg' input: 'x' input: 'x' attr { key: 'T' value { type: DT_FLOAT } } }",
                             "y"));
  TF_DeleteGraph(import_show("input dtype mismatch",
                             "node { name: 'x' op: 'Placeholder' attr { key: 'dtype' value { type: DT_INT32 } } }"
                             "node { name: 'y' op: 'Neg' input: 'x' attr { key: 'T' value { type: DT_FLOAT } } }",
                             "y"));
  TF_DeleteGraph(import_show("output index out of range",
                             "node { name: 'x' op: 'Placeholder' attr { key: 'dtype' value { type: DT_FLOAT } } }"
                             "node { name: 'y' op: 'Neg' input: 'x:2' attr { key: 'T' value { type: DT_FLOAT } } }",
                             "y"));
  TF_Graph* g = TF_NewGraph();
  TF_Status* s = TF_NewStatus();
  TF_Buffer* b = TF_NewBufferFromString("\xff\xff\xff", 3);
  TF_ImportGraphDefOptions* o = TF_NewImportGraphDefOptions();
  TF_GraphImportGraphDef(g, b, o, s);
  ST("garbage bytes", s);
  TF_DeleteImportGraphDefOptions(o);
  TF_DeleteBuffer(b);
  TF_DeleteGraph(g);
  TF_DeleteStatus(s);
}

static void c_graph_def_roundtrip(void) {
  TF_Status* s = TF_NewStatus();
  TF_Graph* g = TF_NewGraph();
  import_text(g, kImportGraph, s);
  TF_Buffer* b = TF_NewBuffer();
  TF_GraphToGraphDef(g, b, s);
  ST("to graphdef", s);
  out("graphdef nodes %d", pb_count(b->data, b->length, 1));
  TF_Graph* g2 = TF_NewGraph();
  TF_ImportGraphDefOptions* o = TF_NewImportGraphDefOptions();
  TF_GraphImportGraphDef(g2, b, o, s);
  ST("reimport", s);
  show_graph(g2);
  TF_Buffer* nb = TF_NewBuffer();
  TF_OperationToNodeDef(TF_GraphOperationByName(g2, "z"), nb, s);
  ST("to nodedef", s);
  pb_field f;
  out("nodedef inputs %d name z %d", pb_count(nb->data, nb->length, 3),
      pb_get(nb->data, nb->length, 1, 0, &f) && f.len == 1 && f.data[0] == 'z');
  TF_DeleteBuffer(nb);
  TF_DeleteImportGraphDefOptions(o);
  TF_DeleteBuffer(b);
  TF_DeleteGraph(g2);
  TF_DeleteGraph(g);
  TF_DeleteStatus(s);
}

static void c_session_lifecycle(void) {
  TF_Status* s = TF_NewStatus();
  TF_Graph* g = TF_NewGraph();
  placeholder(g, "x", TF_FLOAT, NULL, 0, s);
  unary(g, "Square", "y", out0(g, "x"), s);
  TF_Session* sess = session(g, s);
  ST("new session", s);
  /* Ops added after the session was made are runnable. */
  unary(g, "Neg", "z", out0(g, "y"), s);
  float v = 3;
  TF_Tensor* t = ftensor(NULL, 0, &v);
  TF_Output x = out0(g, "x"), z = out0(g, "z");
  run_show(sess, &x, &t, 1, &z, 1, NULL, 0, NULL);
  TF_DeviceList* dl = TF_SessionListDevices(sess, s);
  ST("list devices", s);
  if (dl) {
    out("devices %d first type %s", TF_DeviceListCount(dl), TF_DeviceListType(dl, 0, s));
    TF_DeleteDeviceList(dl);
  }
  TF_CloseSession(sess, s);
  ST("close", s);
  TF_CloseSession(sess, s);
  ST("close again", s);
  run_show(sess, &x, &t, 1, &z, 1, NULL, 0, NULL);
  TF_DeleteSession(sess, s);
  ST("delete", s);
  TF_DeleteTensor(t);
  TF_DeleteGraph(g);
  TF_DeleteStatus(s);
}

/* Device annotations a CPU-only process cannot satisfy: without
 * allow_soft_placement a Run fails naming the node (TF's placer); with it
 * (ConfigProto field 7) the nodes run on the CPU. The reference sessions of
 * mstream's multi-GPU tests rely on the second. */
static void c_soft_placement(void) {
  static const char* devs[] = {"/device:GPU:0", "/job:localhost/replica:0/task:0/device:GPU:1", "/device:CPU:1", "/gpu:0"};
  static const unsigned char soft[] = {0x38, 0x01};
  for (int i = 0; i < 4; i++) {
    TF_Status* s = TF_NewStatus();
    TF_Graph* g = TF_NewGraph();
    placeholder(g, "x", TF_FLOAT, NULL, 0, s);
    TF_OperationDescription* d = TF_NewOperation(g, "Relu", "pinned");
    TF_AddInput(d, out0(g, "x"));
    TF_SetDevice(d, devs[i]);
    TF_FinishOperation(d, s);
    unary(g, "Neg", "y", out0(g, "pinned"), s);
    out("device %s", devs[i]);
    float v = -2;
    TF_Tensor* t = ftensor(NULL, 0, &v);
    TF_Output x = out0(g, "x"), y = out0(g, "y");
    for (int k = 0; k < 2; k++) {
      TF_SessionOptions* so = TF_NewSessionOptions();
      if (k == 1) TF_SetConfig(so, soft, sizeof soft, s);
      TF_Session* sess = TF_NewSession(g, so, s);
      TF_DeleteSessionOptions(so);
      out(k ? " allow_soft_placement" : " strict");
      TF_Tensor* res = NULL;
      TF_SessionRun(sess, NULL, &x, &t, 1, &y, &res, 1, NULL, 0, NULL, s);
      ST(" run", s, "pinned", "Cannot assign a device for operation");
      if (TF_GetCode(s) == TF_OK) show_tensor("  fetch", res);
      if (res) TF_DeleteTensor(res);
      end_session(sess);
    }
    TF_DeleteTensor(t);
    TF_DeleteGraph(g);
    TF_DeleteStatus(s);
  }
}

static void c_prun(void) {
  TF_Status* s = TF_NewStatus();
  TF_Graph* g = TF_NewGraph();
  placeholder(g, "a", TF_FLOAT, NULL, 0, s);
  placeholder(g, "b", TF_FLOAT, NULL, 0, s);
  unary(g, "Neg", "na", out0(g, "a"), s);
  binary(g, "AddV2", "sum", out0(g, "na"), out0(g, "b"), s);
  TF_Session* sess = session(g, s);
  TF_Output feeds[2] = {out0(g, "a"), out0(g, "b")}, fetches[2] = {out0(g, "na"), out0(g, "sum")};
  const char* h = NULL;
  TF_SessionPRunSetup(sess, feeds, 2, fetches, 2, NULL, 0, &h, s);
  ST("prun setup", s);
  float av = 4, bv = 10;
  TF_Tensor* a = ftensor(NULL, 0, &av);
  TF_Tensor* b = ftensor(NULL, 0, &bv);
  TF_Tensor* r = NULL;
  TF_SessionPRun(sess, h, &feeds[0], &a, 1, &fetches[0], &r, 1, NULL, 0, s);
  ST("prun 1", s);
  show_tensor(" na", r);
  if (r) TF_DeleteTensor(r);
  r = NULL;
  TF_SessionPRun(sess, h, &feeds[0], &a, 1, &fetches[0], &r, 1, NULL, 0, s);
  ST("prun feed again", s);
  if (r) TF_DeleteTensor(r);
  r = NULL;
  TF_SessionPRun(sess, h, &feeds[1], &b, 1, &fetches[1], &r, 1, NULL, 0, s);
  ST("prun 2", s);
  show_tensor(" sum", r);
  if (r) TF_DeleteTensor(r);
  TF_DeletePRunHandle(h);
  TF_DeleteTensor(a);
  TF_DeleteTensor(b);
  end_session(sess);
  TF_DeleteGraph(g);
  TF_DeleteStatus(s);
}

static void c_status_buffer(void) {
  TF_Status* s = TF_NewStatus();
  out("new status: code %d msg '%s'", TF_GetCode(s), TF_Message(s));
  TF_SetStatus(s, TF_ABORTED, "stop");
  out("set: code %d msg '%s'", TF_GetCode(s), TF_Message(s));
  TF_SetStatus(s, TF_OK, "ignored");
  out("set ok: code %d msg '%s'", TF_GetCode(s), TF_Message(s));
  TF_Buffer* b = TF_NewBufferFromString("abc", 3);
  TF_Buffer view = TF_GetBuffer(b);
  out("buffer: length %zu same %d", view.length, memcmp(view.data, "abc", 3) == 0);
  TF_DeleteBuffer(b);
  b = TF_NewBuffer();
  out("empty buffer: length %zu data NULL %d", b->length, b->data == NULL);
  TF_DeleteBuffer(b);
  TF_DeleteStatus(s);
}

static void c_attr_setters(void) {
  TF_Status* s = TF_NewStatus();
  TF_Graph* g = TF_NewGraph();
  TF_OperationDescription* d = TF_NewOperation(g, "Placeholder", "p");
  TF_SetAttrType(d, "dtype", TF_FLOAT);
  TF_SetAttrInt(d, "nosuch", 3);
  TF_FinishOperation(d, s);
  ST("unknown attr", s, "nosuch");
  d = TF_NewOperation(g, "Placeholder", "p2");
  TF_SetAttrInt(d, "dtype", 3);
  TF_FinishOperation(d, s);
  ST("attr of the wrong kind", s, "dtype");
  d = TF_NewOperation(g, "Placeholder", "p3");
  TF_FinishOperation(d, s);
  ST("missing attr", s, "dtype");
  d = TF_NewOperation(g, "Placeholder", "p4");
  TF_SetAttrType(d, "dtype", TF_FLOAT);
  TF_SetDevice(d, "/device:CPU:0");
  TF_Operation* op = TF_FinishOperation(d, s);
  ST("with device", s);
  if (op) out("device '%s'", TF_OperationDevice(op));
  d = TF_NewOperation(g, "Placeholder", "p4");
  TF_SetAttrType(d, "dtype", TF_FLOAT);
  TF_FinishOperation(d, s);
  ST("duplicate name", s, "p4");
  d = TF_NewOperation(g, "Neg", "n");
  TF_FinishOperation(d, s);
  ST("missing input", s, "n");
  d = TF_NewOperation(g, "AddN", "sum");
  TF_Output ins[2] = {out0(g, "p4"), out0(g, "p4")};
  TF_AddInputList(d, ins, 2);
  op = TF_FinishOperation(d, s);
  ST("addn", s);
  if (op) {
    out("input list length %d", TF_OperationInputListLength(op, "inputs", s));
    show_attr(op, "N");
  }
  TF_DeleteGraph(g);
  TF_DeleteStatus(s);
}

/* TF_AddGradients: a small MLP's loss, default and explicit prefixes,
   initial gradients, several ys, a NoGradient x, and the errors. */
static const char* kGradGraph =
    "node { name: 'x' op: 'Placeholder' attr { key: 'dtype' value { type: DT_FLOAT } }"
    " attr { key: 'shape' value { shape { dim { size: 2 } dim { size: 3 } } } } }"
    "node { name: 'w' op: 'Const' attr { key: 'dtype' value { type: DT_FLOAT } }"
    " attr { key: 'value' value { tensor { dtype: DT_FLOAT tensor_shape { dim { size: 3 } dim { size: 2 } }"
    " float_val: 0.5 float_val: -1 float_val: 0.25 float_val: 2 float_val: -0.75 float_val: 1.5 } } } }"
    "node { name: 'b' op: 'Const' attr { key: 'dtype' value { type: DT_FLOAT } }"
    " attr { key: 'value' value { tensor { dtype: DT_FLOAT tensor_shape { dim { size: 2 } } float_val: 0.1 float_val: -0.2 } } } }"
    "node { name: 'axes' op: 'Const' attr { key: 'dtype' value { type: DT_INT32 } }"
    " attr { key: 'value' value { tensor { dtype: DT_INT32 tensor_shape { dim { size: 2 } } int_val: 0 int_val: 1 } } } }"
    "node { name: 'mm' op: 'MatMul' input: 'x' input: 'w' attr { key: 'T' value { type: DT_FLOAT } } }"
    "node { name: 'ba' op: 'BiasAdd' input: 'mm' input: 'b' attr { key: 'T' value { type: DT_FLOAT } } }"
    "node { name: 'h' op: 'Relu' input: 'ba' attr { key: 'T' value { type: DT_FLOAT } } }"
    "node { name: 'sq' op: 'Square' input: 'h' attr { key: 'T' value { type: DT_FLOAT } } }"
    "node { name: 'loss' op: 'Sum' input: 'sq' input: 'axes' attr { key: 'T' value { type: DT_FLOAT } } }"
    "node { name: 't' op: 'Tanh' input: 'x' attr { key: 'T' value { type: DT_FLOAT } } }"
    "node { name: 'sh' op: 'Shape' input: 'x' attr { key: 'T' value { type: DT_FLOAT } } }"
    "node { name: 'zero' op: 'Const' attr { key: 'dtype' value { type: DT_INT32 } }"
    " attr { key: 'value' value { tensor { dtype: DT_INT32 tensor_shape { } int_val: 0 } } } }"
    "node { name: 'cp' op: 'Cumprod' input: 'x' input: 'zero' attr { key: 'T' value { type: DT_FLOAT } } }";

static void show_grads(TF_Graph* g, const char* what, TF_Status* s, TF_Output* dy, int n) {
  ST(what, s, "No gradient defined for op: Cumprod", "unreachable", "conflicts with existing node");
  if (TF_GetCode(s) != TF_OK) return;
  for (int i = 0; i < n; i++) {
    if (dy[i].oper == NULL) {
      out("  dy %d: none (index %d)", i, dy[i].index);
      continue;
    }
    out("  dy %d: %s:%d type %s dtype %d", i, TF_OperationName(dy[i].oper), dy[i].index, TF_OperationOpType(dy[i].oper),
        TF_OperationOutputType(dy[i]));
    show_shape(g, dy[i]);
  }
}

static void c_add_gradients(void) {
  TF_Status* s = TF_NewStatus();
  TF_Graph* g = import_show("import", kGradGraph, "");
  TF_Output x = out0(g, "x"), w = out0(g, "w"), b = out0(g, "b"), loss = out0(g, "loss"), t = out0(g, "t");
  TF_Output dy[3];
  TF_Output xs[3] = {x, w, b};
  /* TF's AddGradients builds in a scope over the caller's status, so a
     status left failed by an earlier call fails the next: reset it. */
  TF_SetStatus(s, TF_OK, "");
  TF_AddGradients(g, &loss, 1, xs, 3, NULL, s, dy);
  show_grads(g, "loss wrt x w b", s, dy, 3);
  TF_Output g1[3] = {dy[0], dy[1], dy[2]};
  TF_SetStatus(s, TF_OK, "");
  TF_AddGradients(g, &loss, 1, &x, 1, NULL, s, dy);
  show_grads(g, "again", s, dy, 1);
  TF_Output ys[2] = {loss, t};
  TF_SetStatus(s, TF_OK, "");
  TF_AddGradientsWithPrefix(g, "mine", ys, 2, &x, 1, NULL, s, dy);
  show_grads(g, "two ys, prefix mine", s, dy, 1);
  TF_Output g2 = dy[0];
  TF_SetStatus(s, TF_OK, "");
  TF_AddGradientsWithPrefix(g, "mine", &loss, 1, &x, 1, NULL, s, dy);
  show_grads(g, "prefix mine again", s, dy, 1);
  TF_Output dx0 = t; /* an initial gradient: dt = tanh(x) itself */
  TF_SetStatus(s, TF_OK, "");
  TF_AddGradientsWithPrefix(g, "init", &t, 1, &x, 1, &dx0, s, dy);
  show_grads(g, "initial dy", s, dy, 1);
  TF_Output g3 = dy[0];
  TF_Output sh = out0(g, "sh");
  TF_SetStatus(s, TF_OK, "");
  TF_AddGradients(g, &sh, 1, &x, 1, NULL, s, dy);
  show_grads(g, "through Shape", s, dy, 1);
  TF_SetStatus(s, TF_OK, "");
  TF_AddGradients(g, &t, 1, &w, 1, NULL, s, dy);
  show_grads(g, "unreachable", s, dy, 1);
  TF_Output cp = out0(g, "cp");
  TF_SetStatus(s, TF_OK, "");
  TF_AddGradients(g, &cp, 1, &x, 1, NULL, s, dy);
  show_grads(g, "no gradient function", s, dy, 1);

  TF_Session* sess = session(g, s);
  ST("session", s);
  const float xv[6] = {1, -2, 0.5, 0.75, 0.25, -1}; /* |x| <= 2: 1 - tanh(x)^2 keeps its digits */
  const int64_t dims[2] = {2, 3};
  TF_Tensor* in = ftensor(dims, 2, xv);
  TF_Output fetch[5] = {g1[0], g1[1], g1[2], g2, g3};
  run_show(sess, &x, &in, 1, fetch, 5, NULL, 0, NULL);
  TF_DeleteTensor(in);
  end_session(sess);
  TF_DeleteGraph(g);
  TF_DeleteStatus(s);
}

/* TF_AddGradients over each op of TF's C++ gradient registry that grad added
   after the MLP's: one y per op over a double x, its gradient taken alone and
   run; and a v1 cond (Switch/Merge), whose Merge TF's C++ has no gradient for. */
static TF_Operation* nary(TF_Graph* g, const char* type, const char* name, TF_Output* in, int n, TF_Status* s) {
  TF_OperationDescription* d = TF_NewOperation(g, type, name);
  for (int i = 0; i < n; i++) TF_AddInput(d, in[i]);
  return TF_FinishOperation(d, s);
}

static void c_add_gradients_ops(void) {
  TF_Status* s = TF_NewStatus();
  TF_Graph* g = TF_NewGraph();
  const int64_t d23[2] = {2, 3}, d2[1] = {2}, d3[1] = {3};
  TF_Output x = {placeholder(g, "x", TF_DOUBLE, d23, 2, s), 0};
  double c15 = 1.5, lo = -0.5, hi = 0.5;
  TF_Output k15 = {const_op(g, "c15", TF_DOUBLE, NULL, 0, &c15, s), 0};
  TF_Output xa = {binary(g, "AddV2", "xa", (TF_Output){unary(g, "Square", "x2", x, s), 0}, k15, s), 0};
  int32_t one = 1, zero = 0, three = 3, ids[2] = {1, 0}, shp[3] = {2, 2, 3}, nd[4] = {1, 2, 0, 0};
  TF_Output a1 = {const_op(g, "a1", TF_INT32, NULL, 0, &one, s), 0};
  TF_Output a0 = {const_op(g, "a0", TF_INT32, NULL, 0, &zero, s), 0};
  TF_Output av1 = {const_op(g, "av1", TF_INT32, &(int64_t){1}, 1, &one, s), 0};
  ST("build", s);
  struct { const char* op; int n; TF_Output in[3]; } cs[] = {
      {"Sin", 1, {x}}, {"Cos", 1, {x}}, {"Tan", 1, {x}}, {"Asin", 1, {x}}, {"Acos", 1, {x}}, {"Atan", 1, {x}},
      {"Sinh", 1, {x}}, {"Cosh", 1, {x}}, {"Asinh", 1, {x}}, {"Acosh", 1, {xa}}, {"Atanh", 1, {x}}, {"Erf", 1, {x}},
      {"Expm1", 1, {x}}, {"Log1p", 1, {x}}, {"Sign", 1, {x}}, {"Softsign", 1, {x}}, {"Atan2", 2, {x, xa}},
      {"DivNoNan", 2, {x, xa}}, {"Prod", 2, {x, av1}}, {"Max", 2, {x, a0}}, {"Min", 2, {x, a1}}, {"Cumsum", 2, {x, a1}},
      {"Select", 3, {{NULL, 0}, x, xa}}, {"SelectV2", 3, {{NULL, 0}, x, xa}}, {"ClipByValue", 3, {x, {NULL, 0}, {NULL, 0}}},
      {"UnsortedSegmentSum", 3, {x, {NULL, 0}, {NULL, 0}}}, {"BroadcastTo", 2, {x, {NULL, 0}}},
      {"ReverseV2", 2, {x, av1}}, {"MatrixBandPart", 3, {x, a1, a0}}, {"GatherNd", 2, {x, {NULL, 0}}},
      {"LeakyReluGrad", 2, {xa, x}}};
  const int n = sizeof cs / sizeof cs[0];
  uint8_t cond[6] = {1, 0, 0, 1, 1, 0}, c3[3] = {0, 1, 1};
  for (int i = 0; i < n; i++) {
    const char* op = cs[i].op;
    if (!strcmp(op, "Select")) cs[i].in[0] = (TF_Output){const_op(g, "cond", TF_BOOL, d23, 2, cond, s), 0};
    if (!strcmp(op, "SelectV2")) cs[i].in[0] = (TF_Output){const_op(g, "cond3", TF_BOOL, d3, 1, c3, s), 0};
    if (!strcmp(op, "ClipByValue")) {
      cs[i].in[1] = (TF_Output){const_op(g, "lo", TF_DOUBLE, NULL, 0, &lo, s), 0};
      cs[i].in[2] = (TF_Output){const_op(g, "hi", TF_DOUBLE, NULL, 0, &hi, s), 0};
    }
    if (!strcmp(op, "UnsortedSegmentSum")) {
      cs[i].in[1] = (TF_Output){const_op(g, "ids", TF_INT32, d2, 1, ids, s), 0};
      cs[i].in[2] = (TF_Output){const_op(g, "nseg", TF_INT32, NULL, 0, &three, s), 0};
    }
    if (!strcmp(op, "BroadcastTo")) cs[i].in[1] = (TF_Output){const_op(g, "shp", TF_INT32, d3, 1, shp, s), 0};
    if (!strcmp(op, "GatherNd")) cs[i].in[1] = (TF_Output){const_op(g, "nd", TF_INT32, (int64_t[]){2, 2}, 2, nd, s), 0};
  }
  ST("consts", s);
  TF_Output dys[64];
  int ndy = 0;
  for (int i = 0; i < n; i++) {
    char name[64];
    snprintf(name, sizeof name, "y_%s", cs[i].op);
    TF_Output y = {nary(g, cs[i].op, name, cs[i].in, cs[i].n, s), 0};
    ST(name, s);
    if (TF_GetCode(s) != TF_OK) continue;
    TF_Output dy = {NULL, -1};
    TF_AddGradients(g, &y, 1, &x, 1, NULL, s, &dy);
    out("gradient of %s:", cs[i].op);
    show_grads(g, "  add gradients", s, &dy, 0);
    if (TF_GetCode(s) == TF_OK && dy.oper != NULL) dys[ndy++] = dy;
    TF_SetStatus(s, TF_OK, "");
  }
  TF_Session* sess = session(g, s);
  ST("session", s);
  const double xv[6] = {0.25, -0.5, 0.75, -0.8, 0.1, 0.5};
  TF_Tensor* in = make_tensor(TF_DOUBLE, d23, 2, xv);
  for (int i = 0; i < ndy; i++) run_show(sess, &x, &in, 1, &dys[i], 1, NULL, 0, NULL);
  TF_DeleteTensor(in);
  end_session(sess);

  /* A v1 cond: y = Merge(Switch(x, p)). */
  TF_Output p = {placeholder(g, "p", TF_BOOL, NULL, 0, s), 0};
  TF_Operation* sw = binary(g, "Switch", "sw", x, p, s);
  TF_Output br[2] = {{unary(g, "Neg", "f_branch", (TF_Output){sw, 0}, s), 0}, {unary(g, "Square", "t_branch", (TF_Output){sw, 1}, s), 0}};
  TF_OperationDescription* md = TF_NewOperation(g, "Merge", "merge");
  TF_AddInputList(md, br, 2);
  TF_Output m = {TF_FinishOperation(md, s), 0};
  ST("cond", s);
  TF_Output dy;
  TF_AddGradients(g, &m, 1, &x, 1, NULL, s, &dy);
  ST("gradient through Merge", s, "No gradient defined for op: Merge");
  TF_DeleteGraph(g);
  TF_DeleteStatus(s);
}

/* A tensor attr as TF_SetAttrTensor stores it (TF's SetAttrValue): the dtype's
 * typed field for zero or one element, tensor_content (strings included, as a
 * varint-length list) for more; the AttrValue's bytes are printed. A GraphDef
 * whose string constant uses tensor_content imports and runs; a malformed one
 * is refused. */
static void c_attr_tensor_proto(void) {
  TF_Status* s = TF_NewStatus();
  TF_Graph* g = TF_NewGraph();
  float f1 = 7.5f, f3[3] = {1, -2, 3.25f};
  int32_t i1 = -4;
  int64_t i2[2] = {1LL << 40, -9};
  int64_t d1[1] = {1}, d2[1] = {2}, d3[1] = {3}, d0[1] = {0};
  struct { const char* name; TF_DataType dt; const int64_t* dims; int nd; const void* v; size_t bytes; } cs[] = {
      {"f_scalar", TF_FLOAT, NULL, 0, &f1, 4}, {"f_one", TF_FLOAT, d1, 1, &f1, 4}, {"f_three", TF_FLOAT, d3, 1, f3, 12},
      {"i_scalar", TF_INT32, NULL, 0, &i1, 4}, {"i64_two", TF_INT64, d2, 1, i2, 16}, {"f_empty", TF_FLOAT, d0, 1, f3, 0},
  };
  TF_Operation* ops[8] = {0};
  int nops = 0;
  for (size_t i = 0; i < sizeof cs / sizeof cs[0]; i++) {
    TF_Tensor* t = make_tensor(cs[i].dt, cs[i].dims, cs[i].nd, cs[i].v);
    (void)cs[i].bytes;
    TF_OperationDescription* d = TF_NewOperation(g, "Const", cs[i].name);
    TF_SetAttrTensor(d, "value", t, s);
    TF_SetAttrType(d, "dtype", cs[i].dt);
    ops[nops++] = TF_FinishOperation(d, s);
    ST(cs[i].name, s);
    TF_DeleteTensor(t);
  }
  const char* strs[3][2] = {{"ab", "xyz"}, {"one", NULL}, {"", "q"}};
  int nstr[3] = {2, 1, 2};
  const char* snames[3] = {"s_two", "s_one", "s_empty_first"};
  for (int i = 0; i < 3; i++) {
    int64_t dd[1] = {nstr[i]};
    TF_Tensor* t = TF_AllocateTensor(TF_STRING, dd, 1, nstr[i] * sizeof(TF_TString));
    TF_TString* e = (TF_TString*)TF_TensorData(t);
    for (int k = 0; k < nstr[i]; k++) {
      TF_StringInit(&e[k]);
      TF_StringCopy(&e[k], strs[i][k], strlen(strs[i][k]));
    }
    TF_OperationDescription* d = TF_NewOperation(g, "Const", snames[i]);
    TF_SetAttrTensor(d, "value", t, s);
    TF_SetAttrType(d, "dtype", TF_STRING);
    ops[nops++] = TF_FinishOperation(d, s);
    ST(snames[i], s);
    TF_DeleteTensor(t);
  }
  for (int i = 0; i < nops; i++) {
    if (!ops[i]) continue;
    TF_Buffer* b = TF_NewBuffer();
    TF_OperationGetAttrValueProto(ops[i], "value", b, s);
    char hex[512] = {0};
    for (size_t k = 0; k < b->length && 2 * k + 2 < sizeof hex; k++)
      snprintf(hex + 2 * k, 3, "%02x", ((const unsigned char*)b->data)[k]);
    out("%s value proto: code %d %zu bytes %s", TF_OperationName(ops[i]), TF_GetCode(s), b->length, hex);
    TF_DeleteBuffer(b);
  }
  TF_Session* sess = session(g, s);
  ST("session", s);
  if (sess) {
    TF_Output f[2] = {out0(g, "s_two"), out0(g, "s_empty_first")};
    run_show(sess, NULL, NULL, 0, f, 2, NULL, 0, NULL);
  }
  end_session(sess);
  TF_DeleteGraph(g);
  static const char* content[2] = {"'\\002\\003abxyz'", "'\\002\\007abxyz'"};
  for (int i = 0; i < 2; i++) {
    char text[512];
    snprintf(text, sizeof text,
             "node { name: 'c' op: 'Const' attr { key: 'dtype' value { type: DT_STRING } }"
             " attr { key: 'value' value { tensor { dtype: DT_STRING tensor_shape { dim { size: 2 } }"
             " tensor_content: %s } } } }", content[i]);
    TF_Graph* gi = import_show(i == 0 ? "import string tensor_content" : "import malformed string tensor_content", text, "c");
    TF_Operation* c = TF_GraphOperationByName(gi, "c");
    if (c) {
      TF_Session* si = session(gi, s);
      ST("session", s, "c");
      TF_Output f = out0(gi, "c");
      if (si) run_show(si, NULL, NULL, 0, &f, 1, NULL, 0, NULL);
      end_session(si);
    }
    TF_DeleteGraph(gi);
  }
  TF_DeleteStatus(s);
}

/* Node names: TF's C API takes any name at TF_NewOperation (the official Go
 * bindings' TestOperationAttrs names a node "const/0/[1 2 3 4]"); a Run, an
 * import and an import of the exported graph check TF's node-name rule (the
 * Run allowing a leading underscore, for TF's internal ops). One graph per
 * name, so that each shows. */
static void c_node_names(void) {
  static const char* names[] = {"const/0/[1 2 3 4]", "a b", "_lead", "-lead", "/lead", "x:0", "x^y", "ok.name-1/>a",
                                "\xc3\xa9t\xc3\xa9", "", "tab\tname", "x/", "9", "a>b", "a>", "a>>b", "a>_b",
                                "a>.b/c", "^x", ".", "_"};
  TF_Status* s = TF_NewStatus();
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    TF_Graph* g = TF_NewGraph();
    TF_OperationDescription* d = TF_NewOperation(g, "Const", names[i]);
    TF_Tensor* t = TF_AllocateTensor(TF_INT32, NULL, 0, 4);
    *(int32_t*)TF_TensorData(t) = (int32_t)i;
    TF_SetAttrTensor(d, "value", t, s);
    TF_SetAttrType(d, "dtype", TF_INT32);
    TF_Operation* op = TF_FinishOperation(d, s);
    TF_DeleteTensor(t);
    out("-- name %zu '%s'", i, names[i]);
    ST("add", s);
    if (op) {
      out("found %d", TF_GraphOperationByName(g, names[i]) == op);
      TF_Session* sess = session(g, s);
      ST("session", s);
      TF_Output f[1] = {{op, 0}};
      if (sess) run_show(sess, NULL, NULL, 0, f, 1, NULL, 0, NULL);
      end_session(sess);
      TF_Buffer* b = TF_NewBuffer();
      TF_GraphToGraphDef(g, b, s);
      ST("export", s);
      TF_Graph* g2 = TF_NewGraph();
      TF_ImportGraphDefOptions* o = TF_NewImportGraphDefOptions();
      TF_GraphImportGraphDef(g2, b, o, s);
      ST("import of the exported graph", s);
      TF_DeleteImportGraphDefOptions(o);
      TF_DeleteBuffer(b);
      TF_DeleteGraph(g2);
    }
    TF_DeleteGraph(g);
    char text[256];
    snprintf(text, sizeof text, "node { name: '%s' op: 'NoOp' }", names[i]);
    TF_DeleteGraph(import_show("import", text, names[i]));
  }
  TF_DeleteStatus(s);
}

/* Shape tensors: TF's shape refiner reads the shape input of Reshape, Fill
 * and others through Shape, StridedSlice, Pack, ConcatV2 and Cast, and folds
 * small constant subgraphs by running them; TF_GraphGetTensorShape shows what
 * it learnt, and the errors it finds are TF_FinishOperation's. */
static TF_Operation* ints(TF_Graph* g, const char* name, const int32_t* v, int n, TF_Status* s) {
  int64_t dims[1] = {n};
  return const_op(g, name, TF_INT32, dims, n < 0 ? 0 : 1, v, s);
}

static TF_Operation* slice1(TF_Graph* g, const char* name, TF_Output in, int32_t b, int32_t e, int32_t st, int shrink,
                            int bmask, int emask, TF_Status* s) {
  char nb[64];
  snprintf(nb, sizeof nb, "%s_b", name);
  TF_Operation* ob = ints(g, nb, &b, 1, s);
  snprintf(nb, sizeof nb, "%s_e", name);
  TF_Operation* oe = ints(g, nb, &e, 1, s);
  snprintf(nb, sizeof nb, "%s_s", name);
  TF_Operation* os = ints(g, nb, &st, 1, s);
  TF_OperationDescription* d = TF_NewOperation(g, "StridedSlice", name);
  TF_AddInput(d, in);
  TF_AddInput(d, (TF_Output){ob, 0});
  TF_AddInput(d, (TF_Output){oe, 0});
  TF_AddInput(d, (TF_Output){os, 0});
  TF_SetAttrInt(d, "shrink_axis_mask", shrink);
  TF_SetAttrInt(d, "begin_mask", bmask);
  TF_SetAttrInt(d, "end_mask", emask);
  return TF_FinishOperation(d, s);
}

static TF_Operation* listop(TF_Graph* g, const char* type, const char* name, TF_Output* in, int n, TF_Output* axis,
                            TF_Status* s) {
  TF_OperationDescription* d = TF_NewOperation(g, type, name);
  TF_AddInputList(d, in, n);
  if (axis) TF_AddInput(d, *axis);
  return TF_FinishOperation(d, s);
}

static void show_new(TF_Graph* g, const char* what, TF_Operation* op, TF_Status* s) {
  ST(what, s);
  if (op) show_shape(g, (TF_Output){op, 0});
}

static void c_shape_chains(void) {
  TF_Status* s = TF_NewStatus();
  TF_Graph* g = TF_NewGraph();
  int64_t xd[3] = {-1, 6, 4}, zd[2] = {2, 3}, yd[2] = {-1, 24};
  TF_Output x = {placeholder(g, "x", TF_FLOAT, xd, 3, s), 0};
  TF_Output z = {placeholder(g, "z", TF_FLOAT, zd, 2, s), 0};
  TF_Output y = {placeholder(g, "y", TF_FLOAT, yd, 2, s), 0};
  TF_Output iu = {placeholder(g, "iu", TF_INT32, NULL, 0, s), 0}; /* a scalar whose value is fed */
  TF_Output sh = {unary(g, "Shape", "sh", x, s), 0};
  TF_Output shz = {unary(g, "Shape", "shz", z, s), 0};
  show_new(g, "slice [1:3]", slice1(g, "ss", sh, 1, 3, 1, 0, 0, 0, s), s);
  show_new(g, "reshape x to it", binary(g, "Reshape", "r1", x, out0(g, "ss"), s), s);
  show_new(g, "slice [0] shrink", slice1(g, "s0", sh, 0, 1, 1, 1, 0, 0, s), s);
  show_new(g, "slice [1] shrink", slice1(g, "s1", sh, 1, 2, 1, 1, 0, 0, s), s);
  show_new(g, "slice [-1] shrink", slice1(g, "sm1", sh, -1, 0, 1, 1, 0, 0, s), s);
  show_new(g, "slice [::-1]", slice1(g, "srev", sh, 0, 0, -1, 0, 1, 1, s), s);
  show_new(g, "reshape x to the reversed shape", binary(g, "Reshape", "rrev", x, out0(g, "srev"), s), s);
  int32_t four = 4, m1 = -1, two = 2, three = 3;
  TF_Output c4 = {const_op(g, "c4", TF_INT32, NULL, 0, &four, s), 0};
  TF_Output cm1 = {const_op(g, "cm1", TF_INT32, NULL, 0, &m1, s), 0};
  TF_Output c2v = {ints(g, "c2v", &two, 1, s), 0};
  TF_Output c3v = {ints(g, "c3v", &three, 1, s), 0};
  TF_Output cm1v = {ints(g, "cm1v", &m1, 1, s), 0};
  TF_Output pk[3] = {out0(g, "s0"), out0(g, "s1"), c4};
  show_new(g, "pack of the slices", listop(g, "Pack", "pk", pk, 3, NULL, s), s);
  show_new(g, "reshape y to the pack", binary(g, "Reshape", "rpk", y, out0(g, "pk"), s), s);
  TF_Output pk2[2] = {out0(g, "s1"), cm1};
  show_new(g, "pack with -1", listop(g, "Pack", "pk2", pk2, 2, NULL, s), s);
  show_new(g, "reshape z to it", binary(g, "Reshape", "rpk2", z, out0(g, "pk2"), s), s);
  TF_Output pk3[2] = {iu, c4};
  show_new(g, "pack with a fed scalar", listop(g, "Pack", "pk3", pk3, 2, NULL, s), s);
  show_new(g, "reshape y to it", binary(g, "Reshape", "rpk3", y, out0(g, "pk3"), s), s);
  int32_t zero = 0;
  TF_Output ax = {const_op(g, "ax", TF_INT32, NULL, 0, &zero, s), 0};
  TF_Output cc[2] = {out0(g, "ss"), cm1v};
  show_new(g, "concat of a slice and [-1]", listop(g, "ConcatV2", "cc", cc, 2, &ax, s), s);
  show_new(g, "reshape x to it", binary(g, "Reshape", "rcc", x, out0(g, "cc"), s), s);
  TF_Output cc2[2] = {sh, out0(g, "pk3")};
  show_new(g, "concat of a shape and a pack", listop(g, "ConcatV2", "cc2", cc2, 2, &ax, s), s);
  show_new(g, "mul of a shape and [2]", binary(g, "Mul", "mul", shz, c2v, s), s);
  float f24[24];
  for (int i = 0; i < 24; i++) f24[i] = (float)i;
  int64_t d24[1] = {24};
  TF_Output c24 = {const_op(g, "c24", TF_FLOAT, d24, 1, f24, s), 0};
  show_new(g, "reshape 24 values to shape(z) * 2 = [4,6]", binary(g, "Reshape", "rmul", c24, out0(g, "mul"), s), s);
  show_new(g, "mul of a shape and [3]", binary(g, "Mul", "mul3", shz, c3v, s), s);
  show_new(g, "reshape 24 values to [6,9]", binary(g, "Reshape", "rmul3", c24, out0(g, "mul3"), s), s);
  TF_OperationDescription* d = TF_NewOperation(g, "Cast", "cast");
  TF_AddInput(d, sh);
  TF_SetAttrType(d, "DstT", TF_INT64);
  show_new(g, "cast of a shape", TF_FinishOperation(d, s), s);
  show_new(g, "reshape x to it", binary(g, "Reshape", "rcast", x, out0(g, "cast"), s), s);
  TF_Output fp[2] = {out0(g, "s1"), c4};
  show_new(g, "pack for fill", listop(g, "Pack", "fpk", fp, 2, NULL, s), s);
  float one = 1;
  TF_Output c1f = {const_op(g, "c1f", TF_FLOAT, NULL, 0, &one, s), 0};
  show_new(g, "fill of it", binary(g, "Fill", "fill", out0(g, "fpk"), c1f, s), s);
  show_new(g, "empty shape vector", ints(g, "empty", NULL, 0, s), s);
  show_new(g, "reshape a scalar to []", binary(g, "Reshape", "rscalar", c1f, out0(g, "empty"), s), s);
  show_new(g, "reshape 24 values to [] ", binary(g, "Reshape", "rscalar24", c24, out0(g, "empty"), s), s);
  show_new(g, "reshape to a fed scalar shape", binary(g, "Reshape", "rfed", x, iu, s), s);
  show_new(g, "reshape to shape [-1]", binary(g, "Reshape", "rm1", x, cm1v, s), s);
  show_new(g, "shape of an unknown-length vector", unary(g, "Shape", "shy", y, s), s);
  TF_Output two_neg[2] = {cm1, cm1};
  show_new(g, "pack of two -1", listop(g, "Pack", "pkmm", two_neg, 2, NULL, s), s);
  show_new(g, "reshape x to [-1,-1]", binary(g, "Reshape", "rmm", x, out0(g, "pkmm"), s), s);
  TF_DeleteGraph(g);
  TF_DeleteStatus(s);
}

/* ---- Random call sequences ---------------------------------------------------- */

static uint64_t rng;
static unsigned rnd(unsigned n) {
  rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
  return (unsigned)((rng >> 33) % n);
}

/* One sequence: build a graph of random ops over random earlier outputs
 * (a wrong dtype or shape now and then), print what each build call said, then
 * run random fetches with feeds of random shapes and print what came back. */
static void random_sequence(int seq) {
  static const char* unaries[] = {"Neg", "Square", "Abs", "Identity", "Exp", "Tanh", "Relu", "Sign", "Floor", "Shape"};
  static const char* binaries[] = {"AddV2", "Sub", "Mul", "Maximum", "Minimum", "MatMul", "Reshape", "Sum", "Pack2"};
  TF_Status* s = TF_NewStatus();
  TF_Graph* g = TF_NewGraph();
  TF_Output outs[32];
  int nouts = 0, nph = 0;
  char name[32];
  out("== sequence %d", seq);
  int nops = 3 + (int)rnd(10);
  for (int i = 0; i < nops; i++) {
    snprintf(name, sizeof name, "n%d", i);
    unsigned kind = nouts == 0 ? 0 : rnd(10);
    TF_Operation* op = NULL;
    if (kind < 2) {
      int64_t dims[3] = {(int64_t)rnd(4) - 1, (int64_t)rnd(4), 2};
      int nd = (int)rnd(4) - 1;
      op = placeholder(g, name, rnd(5) ? TF_FLOAT : TF_INT32, dims, nd, s);
      ST(name, s);
      if (op) nph++;
    } else if (kind < 4) {
      float v[6];
      for (int j = 0; j < 6; j++) v[j] = (float)((int)rnd(17) - 8) / 4;
      int64_t dims[2] = {(int64_t)rnd(3) + 1, 2};
      int nd = (int)rnd(3);
      op = const_op(g, name, TF_FLOAT, dims, nd, v, s);
      ST(name, s);
    } else if (kind < 7) {
      op = unary(g, unaries[rnd(10)], name, outs[rnd(nouts)], s);
      ST(name, s);
    } else {
      const char* t = binaries[rnd(9)];
      TF_Output a = outs[rnd(nouts)], b = outs[rnd(nouts)];
      if (strcmp(t, "Pack2") == 0) {
        TF_OperationDescription* d = TF_NewOperation(g, "Pack", name);
        TF_Output ab[2] = {a, b};
        TF_AddInputList(d, ab, 2);
        op = TF_FinishOperation(d, s);
      } else {
        op = binary(g, t, name, a, b, s);
      }
      ST(name, s);
    }
    if (op) {
      show_op(g, op);
      for (int j = 0; j < TF_OperationNumOutputs(op) && nouts < 32; j++) outs[nouts++] = (TF_Output){op, j};
    }
  }
  (void)nph;
  TF_Session* sess = session(g, s);
  ST("session", s);
  for (int r = 0; r < 3 && sess && nouts; r++) {
    TF_Output fetch[2] = {outs[rnd(nouts)], outs[rnd(nouts)]};
    int nf = 1 + (int)rnd(2);
    TF_Output feeds[8];
    TF_Tensor* vals[8];
    int nfeed = 0;
    size_t pos = 0;
    TF_Operation* op;
    while ((op = TF_GraphNextOperation(g, &pos)) != NULL && nfeed < 8) {
      if (strcmp(TF_OperationOpType(op), "Placeholder") != 0 || rnd(8) == 0) continue;
      int64_t dims[2] = {(int64_t)rnd(3) + 1, 2};
      int nd = (int)rnd(3);
      TF_DataType dt = TF_OperationOutputType((TF_Output){op, 0});
      if (rnd(10) == 0) dt = dt == TF_FLOAT ? TF_INT32 : TF_FLOAT;
      float fv[6];
      int32_t iv[6];
      for (int j = 0; j < 6; j++) { fv[j] = (float)((int)rnd(9) - 4) / 2; iv[j] = (int)rnd(5) - 1; }
      feeds[nfeed] = (TF_Output){op, 0};
      vals[nfeed++] = make_tensor(dt, dims, nd, dt == TF_FLOAT ? (const void*)fv : (const void*)iv);
    }
    out("-- run %d: %d feeds, fetch %s:%d, %s:%d", r, nfeed, TF_OperationName(fetch[0].oper), fetch[0].index,
        nf > 1 ? TF_OperationName(fetch[1].oper) : "-", nf > 1 ? fetch[1].index : -1);
    run_show(sess, feeds, vals, nfeed, fetch, nf, NULL, 0, NULL);
    for (int j = 0; j < nfeed; j++) TF_DeleteTensor(vals[j]);
  }
  end_session(sess);
  TF_DeleteGraph(g);
  TF_DeleteStatus(s);
}

/* ---- While loops (TF_NewWhile / TF_FinishWhile) ---------------------------- */

static TF_Operation* i32_const(TF_Graph* g, const char* name, int32_t v, TF_Status* s) {
  return const_op(g, name, TF_INT32, NULL, 0, &v, s);
}

/* Finishes p (named name) and prints the status and the outputs' names. */
static void finish_show(TF_WhileParams* p, const char* name, TF_Output* outs) {
  TF_Status* s = TF_NewStatus();
  p->name = name;
  for (int i = 0; i < p->ninputs; i++) outs[i] = (TF_Output){NULL, -1};
  int n = p->ninputs;
  TF_FinishWhile(p, s, outs);
  ST("finish while", s);
  if (getenv("CAPIDIFF_MSG") == NULL) out("  message: %s", TF_Message(s));
  for (int i = 0; i < n && TF_GetCode(s) == TF_OK; i++) out("  output %d: %s:%d", i, TF_OperationName(outs[i].oper), outs[i].index);
  TF_DeleteStatus(s);
}

static void show_loop_attrs(TF_Graph* g, const char* scope) {
  char name[128];
  snprintf(name, sizeof name, "%s/Enter", scope);
  TF_Operation* e = TF_GraphOperationByName(g, name);
  out("%s: %d", name, e != NULL);
  if (e) {
    show_attr(e, "frame_name");
    show_attr(e, "is_constant");
    show_attr(e, "parallel_iterations");
    show_attr(e, "T");
  }
  snprintf(name, sizeof name, "%s/Merge", scope);
  TF_Operation* m = TF_GraphOperationByName(g, name);
  if (m) show_attr(m, "N");
}

/* while (x < y) x += y + 1, TF's BasicLoop: the whole graph and two runs. */
static void c_while_basic(void) {
  TF_Status* s = TF_NewStatus();
  TF_Graph* g = TF_NewGraph();
  TF_Output in[2] = {{placeholder(g, "p0", TF_INT32, NULL, -1, s), 0}, {placeholder(g, "p1", TF_INT32, NULL, 0, s), 0}};
  TF_WhileParams p = TF_NewWhile(g, in, 2, s);
  ST("new while", s);
  out("ops after new: %d; cond ops %d body ops %d", count_ops(g), count_ops(p.cond_graph), count_ops(p.body_graph));
  show_graph(p.cond_graph);
  TF_Operation* lt = binary(p.cond_graph, "Less", "less_than", p.cond_inputs[0], p.cond_inputs[1], s);
  p.cond_output = (TF_Output){lt, 0};
  TF_Operation* add1 = binary(p.body_graph, "AddV2", "add1", p.body_inputs[0], p.body_inputs[1], s);
  TF_Operation* one = i32_const(p.body_graph, "one", 1, s);
  TF_Operation* add2 = binary(p.body_graph, "AddV2", "add2", (TF_Output){add1, 0}, (TF_Output){one, 0}, s);
  p.body_outputs[0] = (TF_Output){add2, 0};
  p.body_outputs[1] = p.body_inputs[1];
  ST("body", s);
  TF_Output outs[2];
  finish_show(&p, "test_loop", outs);
  show_graph(g);
  show_loop_attrs(g, "test_loop");
  TF_Session* sess = session(g, s);
  int32_t a = -9, b = 2;
  for (int k = 0; k < 2; k++) {
    TF_Tensor* vals[2] = {make_tensor(TF_INT32, NULL, 0, &a), make_tensor(TF_INT32, NULL, 0, &b)};
    run_show(sess, in, vals, 2, outs, 2, NULL, 0, NULL);
    TF_DeleteTensor(vals[0]);
    TF_DeleteTensor(vals[1]);
    a = 40;
  }
  end_session(sess);
  TF_DeleteGraph(g);
  TF_DeleteStatus(s);
}

/* TF's NestedLoop: the inner loop built in the outer body. */
static void c_while_nested(void) {
  TF_Status* s = TF_NewStatus();
  TF_Graph* g = TF_NewGraph();
  TF_Output in[2] = {{placeholder(g, "p0", TF_INT32, NULL, 0, s), 0}, {placeholder(g, "p1", TF_INT32, NULL, 0, s), 0}};
  TF_WhileParams p = TF_NewWhile(g, in, 2, s);
  TF_Operation* six = i32_const(p.cond_graph, "scalar", 6, s);
  p.cond_output = (TF_Output){binary(p.cond_graph, "Less", "less_than", p.cond_inputs[0], (TF_Output){six, 0}, s), 0};
  TF_Output iin[2] = {p.body_inputs[0], p.body_inputs[1]};
  TF_WhileParams ip = TF_NewWhile(p.body_graph, iin, 2, s);
  ST("inner new while", s);
  TF_Operation* three = i32_const(ip.cond_graph, "scalar", 3, s);
  ip.cond_output = (TF_Output){binary(ip.cond_graph, "Less", "less_than", ip.cond_inputs[0], (TF_Output){three, 0}, s), 0};
  TF_Operation* one = i32_const(ip.body_graph, "one", 1, s);
  TF_Operation* two = i32_const(ip.body_graph, "two", 2, s);
  ip.body_outputs[1] = (TF_Output){binary(ip.body_graph, "AddV2", "add", ip.body_inputs[1], (TF_Output){one, 0}, s), 0};
  ip.body_outputs[0] = (TF_Output){binary(ip.body_graph, "AddV2", "add2", ip.body_inputs[0], (TF_Output){two, 0}, s), 0};
  TF_Output iout[2];
  finish_show(&ip, "inner_loop", iout);
  p.body_outputs[0] = (TF_Output){binary(p.body_graph, "AddV2", "add", p.body_inputs[0], iout[1], s), 0};
  p.body_outputs[1] = iout[1];
  TF_Output outs[2];
  finish_show(&p, "test_loop", outs);
  show_graph(g);
  show_loop_attrs(g, "test_loop/body/inner_loop");
  TF_Session* sess = session(g, s);
  int32_t a = 0, b = 0;
  TF_Tensor* vals[2] = {make_tensor(TF_INT32, NULL, 0, &a), make_tensor(TF_INT32, NULL, 0, &b)};
  run_show(sess, in, vals, 2, outs, 2, NULL, 0, NULL);
  TF_DeleteTensor(vals[0]);
  TF_DeleteTensor(vals[1]);
  end_session(sess);
  TF_DeleteGraph(g);
  TF_DeleteStatus(s);
}

/* TF_AddGradients over TF_NewWhile loops (TF's while_gradients_test): the
   gradients' names and types, their values, a body whose gradient reads its own
   values (x * 1.5: INVALID_ARGUMENT when run, on both) and an Exit without
   gradient. Not here: a loop over a loop's Square (x -> 2x until 3, then +7 until
   100), whose gradient TF runs into a dead tensor and mstream computes (24 at
   x = 0.75; grad/while_test.go checks it by finite differences). */
static TF_Output addn2(TF_Graph* g, const char* name, TF_Output a, TF_Output b, TF_Status* s) {
  TF_Output in[2] = {a, b};
  TF_OperationDescription* d = TF_NewOperation(g, "AddN", name);
  TF_AddInputList(d, in, 2);
  return (TF_Output){TF_FinishOperation(d, s), 0};
}

static TF_Output dconst(TF_Graph* g, const char* name, double v, TF_Status* s) {
  return (TF_Output){const_op(g, name, TF_DOUBLE, NULL, 0, &v, s), 0};
}

static void c_while_gradients(void) {
  TF_Status* s = TF_NewStatus();
  for (int k = 0; k < 4; k++) {
    static const char* what[] = {"i += j; j += 1; k = k", "chaining", "x * 1.5", "exit without gradient"};
    out("-- %s", what[k]);
    TF_Graph* g = TF_NewGraph();
    int n = k == 0 ? 3 : k == 2 ? 1 : 2;
    TF_Output x[3], in[3];
    for (int i = 0; i < n; i++) {
      char name[8];
      snprintf(name, sizeof name, "x%d", i);
      x[i] = (TF_Output){placeholder(g, name, TF_DOUBLE, NULL, 0, s), 0};
      in[i] = x[i];
    }
    if (k == 1) {
      TF_Output two = dconst(g, "two", 2, s);
      for (int i = 0; i < 2; i++) in[i] = (TF_Output){binary(g, "Mul", i ? "m1" : "m0", x[i], two, s), 0};
    }
    TF_WhileParams p = TF_NewWhile(g, in, n, s);
    ST("new while", s);
    if (k == 1) {
      TF_Output z = dconst(p.cond_graph, "zero", 0, s);
      TF_Output a = {binary(p.cond_graph, "Greater", "gi", p.cond_inputs[0], z, s), 0};
      TF_Output b = {binary(p.cond_graph, "Greater", "gj", p.cond_inputs[1], z, s), 0};
      p.cond_output = (TF_Output){binary(p.cond_graph, "LogicalAnd", "and", a, b, s), 0};
      p.body_outputs[0] = addn2(p.body_graph, "dec", p.body_inputs[0], dconst(p.body_graph, "m1", -1, s), s);
      p.body_outputs[1] = p.body_inputs[1];
    } else {
      TF_Output lim = dconst(p.cond_graph, "limit", 10, s);
      p.cond_output = (TF_Output){binary(p.cond_graph, "Less", "lt", p.cond_inputs[0], lim, s), 0};
      if (k == 2) {
        p.body_outputs[0] = (TF_Output){binary(p.body_graph, "Mul", "scale", p.body_inputs[0], dconst(p.body_graph, "c", 1.5, s), s), 0};
      } else {
        p.body_outputs[0] = addn2(p.body_graph, "i_plus_j", p.body_inputs[0], p.body_inputs[1], s);
        p.body_outputs[1] = k == 3 ? p.body_inputs[1] : addn2(p.body_graph, "j_plus_1", p.body_inputs[1], dconst(p.body_graph, "one", 1, s), s);
        if (n == 3) p.body_outputs[2] = p.body_inputs[2];
      }
    }
    ST("body", s);
    TF_Output outs[3];
    finish_show(&p, "test_loop", outs);
    TF_Output ys[3];
    int ny = n;
    for (int i = 0; i < n; i++) ys[i] = outs[i];
    if (k == 1) ys[0] = (TF_Output){unary(g, "Neg", "neg", outs[0], s), 0};
    if (k == 3) {
      /* The second Exit feeds only a Shape: NoGradient into the loop. */
      TF_Operation* sh = unary(g, "Shape", "sh", outs[1], s);
      TF_OperationDescription* d = TF_NewOperation(g, "Cast", "shd");
      TF_AddInput(d, (TF_Output){sh, 0});
      TF_SetAttrType(d, "DstT", TF_DOUBLE);
      ys[1] = (TF_Output){TF_FinishOperation(d, s), 0};
      ny = 2;
    }
    TF_Output dy[3] = {{NULL, -1}, {NULL, -1}, {NULL, -1}};
    TF_SetStatus(s, TF_OK, "");
    TF_AddGradients(g, ys, ny, x, n, NULL, s, dy);
    ST("add gradients", s, "Missing gradient into while loop");
    if (TF_GetCode(s) == TF_OK) {
      for (int i = 0; i < n; i++) {
        if (dy[i].oper == NULL) out("  dy %d: none", i);
        else out("  dy %d: %s:%d type %s", i, TF_OperationName(dy[i].oper), dy[i].index, TF_OperationOpType(dy[i].oper));
      }
      TF_Session* sess = session(g, s);
      ST("session", s);
      static const double feeds[4][3] = {{0, 1, 2}, {1, 1}, {1.25}, {0, 1}};
      TF_Tensor* vals[3];
      for (int i = 0; i < n; i++) vals[i] = make_tensor(TF_DOUBLE, NULL, 0, &feeds[k][i]);
      TF_Output fetch[3];
      int nf = 0;
      for (int i = 0; i < n; i++)
        if (dy[i].oper) fetch[nf++] = dy[i];
      TF_Tensor* res[3] = {0};
      TF_SessionRun(sess, NULL, x, vals, n, fetch, res, nf, NULL, 0, NULL, s);
      ST("run", s);
      for (int i = 0; i < nf; i++) {
        if (TF_GetCode(s) == TF_OK) show_tensor("  grad", res[i]);
        if (res[i]) TF_DeleteTensor(res[i]);
      }
      for (int i = 0; i < n; i++) TF_DeleteTensor(vals[i]);
      end_session(sess);
    }
    TF_DeleteGraph(g);
  }
  TF_DeleteStatus(s);
}

/* The params' errors, a name scope already taken and a frame name used
   twice; a cond Const and a loop-invariant body op (control inputs). */
static void c_while_errors(void) {
  TF_Status* s = TF_NewStatus();
  TF_Graph* g = TF_NewGraph();
  TF_Output x = {placeholder(g, "w", TF_FLOAT, NULL, 0, s), 0};
  TF_WhileParams p0 = TF_NewWhile(g, &x, 0, s);
  ST("new while, no inputs", s);
  out("  params: %d %d", p0.ninputs, p0.cond_graph == NULL);
  out("  message: %s", TF_Message(s));
  const char* names[] = {"unset cond", "int cond", "parent cond", "cond index", "unset body", "parent body", "null name",
                         "ok", "same frame", "other frame"};
  for (int k = 0; k < (int)(sizeof names / sizeof names[0]); k++) {
    out("-- %s", names[k]);
    /* TF leaves part of a loop behind when BuildWhileLoop fails (mstream
       leaves the graph as it was), so each failing attempt gets a graph of
       its own. */
    TF_Graph* eg = k < 7 ? TF_NewGraph() : g;
    TF_Output ex = {k < 7 ? placeholder(eg, "w", TF_FLOAT, NULL, 0, s) : x.oper, 0};
    TF_WhileParams p = TF_NewWhile(eg, &ex, 1, s);
    TF_Operation* lim = const_op(p.cond_graph, "limit", TF_FLOAT, NULL, 0, &(float){100}, s);
    TF_Operation* lt = binary(p.cond_graph, "Less", "lt", p.cond_inputs[0], (TF_Output){lim, 0}, s);
    if (k != 0) p.cond_output = (TF_Output){lt, 0};
    if (k == 1) p.cond_output = p.cond_inputs[0];
    if (k == 2) p.cond_output = ex;
    if (k == 3) p.cond_output.index = 7;
    TF_Operation* c = const_op(p.body_graph, "c", TF_FLOAT, NULL, 0, &(float){1.5f}, s);
    TF_Operation* c2 = unary(p.body_graph, "Square", "c2", (TF_Output){c, 0}, s);
    TF_Operation* m = binary(p.body_graph, "Mul", "m", p.body_inputs[0], (TF_Output){c2, 0}, s);
    if (k != 4) p.body_outputs[0] = (TF_Output){m, 0};
    if (k == 5) p.body_outputs[0] = ex;
    TF_Output o[1];
    if (k == 6) {
      TF_FinishWhile(&p, s, o);
      ST("finish while", s);
      out("  message: %s", TF_Message(s));
      TF_DeleteGraph(eg);
      continue;
    }
    finish_show(&p, k == 9 ? "v" : "w", o);
    if (eg != g) TF_DeleteGraph(eg);
    if (k == 7) {
      /* The graph as the first loop left it: TF leaves most of the second
         loop behind when its frame name is refused. */
      show_graph(g);
      show_loop_attrs(g, "w_1");
      TF_Session* sess = session(g, s);
      TF_Output in = {TF_GraphOperationByName(g, "w"), 0};
      TF_Tensor* v = make_tensor(TF_FLOAT, NULL, 0, &(float){3});
      run_show(sess, &in, &v, 1, o, 1, NULL, 0, NULL);
      TF_DeleteTensor(v);
      end_session(sess);
      x = o[0];
    }
  }
  TF_DeleteGraph(g);
  TF_DeleteStatus(s);
}

/* ---- Functions (TF_Function) ------------------------------------------------ */

static const char* addone_graph =
    "library { function { signature { name: 'AddOne' input_arg { name: 'x' type: DT_FLOAT }"
    " output_arg { name: 'y' type: DT_FLOAT } }"
    " node_def { name: 'one' op: 'Const' attr { key: 'dtype' value { type: DT_FLOAT } }"
    " attr { key: 'value' value { tensor { dtype: DT_FLOAT tensor_shape { } float_val: 1 } } } }"
    " node_def { name: 'add' op: 'AddV2' input: 'x' input: 'one:output:0' attr { key: 'T' value { type: DT_FLOAT } } }"
    " ret { key: 'y' value: 'add:z:0' } } }"
    "node { name: 'p' op: 'Placeholder' attr { key: 'dtype' value { type: DT_FLOAT } } }"
    "node { name: 'call' op: 'AddOne' input: 'p' }";

/* The library of an imported GraphDef through TF_GraphGetFunctions, a
   FunctionDef's round trip, attrs, and TF_GraphCopyFunction's rules. */
static void c_functions(void) {
  TF_Status* s = TF_NewStatus();
  TF_Graph* g = import_show("import graph with library", addone_graph, "AddOne");
  out("num functions: %d", TF_GraphNumFunctions(g));
  TF_Function* fs[4] = {0};
  int n = TF_GraphGetFunctions(g, fs, 4, s);
  ST("get functions", s);
  out("got %d: %s", n, n > 0 ? TF_FunctionName(fs[0]) : "-");
  out("get 0 functions: %d", TF_GraphGetFunctions(g, NULL, 0, s));
  if (n < 1) { TF_DeleteGraph(g); TF_DeleteStatus(s); return; }
  TF_Buffer* b = TF_NewBuffer();
  TF_FunctionToFunctionDef(fs[0], b, s);
  ST("to FunctionDef", s);
  out("FunctionDef bytes: %zu", b->length);
  TF_FunctionToFunctionDef(fs[0], b, s);
  ST("to FunctionDef into a full buffer", s);
  TF_Function* f = TF_FunctionImportFunctionDef(b->data, b->length, s);
  ST("import FunctionDef", s);
  out("imported: %s", f ? TF_FunctionName(f) : "NULL");
  TF_Function* bad = TF_FunctionImportFunctionDef("\xff\xff\xff", 3, s);
  ST("import garbage", s);
  out("  message: %s; NULL %d", TF_Message(s), bad == NULL);
  TF_Buffer* ab = TF_NewBuffer();
  TF_FunctionGetAttrValueProto(f, "_noinline", ab, s);
  ST("get missing attr", s);
  out("  message: %s", TF_Message(s));
  const char attr[] = {0x28, 0x01}; /* AttrValue { b: true } */
  TF_FunctionSetAttrValueProto(f, "_noinline", attr, sizeof attr, s);
  ST("set attr", s);
  TF_FunctionSetAttrValueProto(f, "_bad", "\xff", 1, s);
  ST("set unparseable attr", s);
  out("  message: %s", TF_Message(s));
  TF_FunctionGetAttrValueProto(f, "_noinline", ab, s);
  ST("get attr", s);
  out("attr bytes: %zu %d %d", ab->length, ab->length > 0 ? ((const unsigned char*)ab->data)[0] : -1,
      ab->length > 1 ? ((const unsigned char*)ab->data)[1] : -1);
  TF_Graph* g2 = TF_NewGraph();
  TF_GraphCopyFunction(g2, NULL, NULL, s);
  ST("copy NULL", s);
  out("  message: %s", TF_Message(s));
  TF_GraphCopyFunction(g2, fs[0], NULL, s);
  ST("copy", s);
  TF_GraphCopyFunction(g2, fs[0], NULL, s);
  ST("copy again", s);
  TF_GraphCopyFunction(g2, f, NULL, s);
  ST("copy a different def of the same name", s, "AddOne");
  out("num functions: %d", TF_GraphNumFunctions(g2));
  TF_Operation* p = placeholder(g2, "x", TF_FLOAT, NULL, 0, s);
  TF_Operation* call = unary(g2, "AddOne", "call", (TF_Output){p, 0}, s);
  ST("call node", s);
  /* (Not show_op: the call's static shape is not inferred through the
     function yet, TF says [].) */
  if (call)
    out("call: type %s inputs %d outputs %d dtype %d", TF_OperationOpType(call), TF_OperationNumInputs(call),
        TF_OperationNumOutputs(call), TF_OperationOutputType((TF_Output){call, 0}));
  TF_Buffer* gd = TF_NewBuffer();
  TF_GraphToGraphDef(g2, gd, s);
  ST("export with library", s);
  TF_Graph* g3 = TF_NewGraph();
  TF_ImportGraphDefOptions* io = TF_NewImportGraphDefOptions();
  TF_GraphImportGraphDef(g3, gd, io, s);
  ST("reimport", s);
  out("reimported functions: %d ops: %d", TF_GraphNumFunctions(g3), count_ops(g3));
  TF_DeleteImportGraphDefOptions(io);
  TF_DeleteGraph(g3);
  TF_DeleteBuffer(gd);
  TF_DeleteGraph(g2);
  TF_DeleteBuffer(ab);
  TF_DeleteBuffer(b);
  TF_DeleteFunction(f);
  TF_DeleteFunction(NULL);
  for (int i = 0; i < n; i++) TF_DeleteFunction(fs[i]);
  TF_DeleteGraph(g);
  TF_DeleteStatus(s);
}

/* Prints the string field `num` of each submessage `sub` of msg, with a label. */
static void pb_strings(const char* label, const void* data, size_t len, int sub, int num) {
  char line[2048];
  int n = snprintf(line, sizeof line, "  %s:", label);
  pb_field m, f;
  for (int i = 0; pb_get(data, len, sub, i, &m); i++) {
    n += snprintf(line + n, sizeof line - n, " [");
    for (int j = 0; pb_get(m.data, m.len, num, j, &f); j++)
      n += snprintf(line + n, sizeof line - n, "%s%.*s", j ? "," : "", (int)f.len, (const char*)f.data);
    n += snprintf(line + n, sizeof line - n, "]");
  }
  out("%s", line);
}

/* Map entries (key=1, value=2, strings) of field `num`, sorted by key (the
   two libraries serialize maps in different orders). */
static void pb_map(const char* label, const void* data, size_t len, int num) {
  char keys[16][256];
  int k = 0;
  pb_field m, a, b;
  for (int i = 0; k < 16 && pb_get(data, len, num, i, &m); i++) {
    int la = pb_get(m.data, m.len, 1, 0, &a), lb = pb_get(m.data, m.len, 2, 0, &b);
    snprintf(keys[k++], 256, "%.*s=%.*s", la ? (int)a.len : 0, la ? (const char*)a.data : "", lb ? (int)b.len : 0,
             lb ? (const char*)b.data : "");
  }
  for (int i = 1; i < k; i++)
    for (int j = i; j > 0 && strcmp(keys[j], keys[j - 1]) < 0; j--) {
      char t[256];
      memcpy(t, keys[j], 256); memcpy(keys[j], keys[j - 1], 256); memcpy(keys[j - 1], t, 256);
    }
  char line[4096];
  int n = snprintf(line, sizeof line, "  %s:", label);
  for (int i = 0; i < k; i++) n += snprintf(line + n, sizeof line - n, " %s", keys[i]);
  out("%s", line);
}

/* A FunctionDef as both libraries must agree on it: signature name, args
   (name, type), stateful, control outputs, the nodes (name, op, inputs),
   ret and control_ret. */
static void show_fdef(TF_Function* f) {
  TF_Status* s = TF_NewStatus();
  TF_Buffer* b = TF_NewBuffer();
  TF_FunctionToFunctionDef(f, b, s);
  ST("  to FunctionDef", s);
  /* (Not the byte count: a one-element Const value is tensor_content in
     mstream, int_val in TF, a few bytes apart.) */
  out("  name %s", TF_FunctionName(f));
  pb_field sig, a;
  if (pb_get(b->data, b->length, 1, 0, &sig)) {
    pb_strings("input args", sig.data, sig.len, 2, 1);
    pb_strings("output args", sig.data, sig.len, 3, 1);
    for (int i = 0; pb_get(sig.data, sig.len, 2, i, &a); i++) {
      pb_reader r = pb_of(a.data, a.len);
      pb_field f2;
      while (pb_next(&r, &f2)) if (f2.field == 3) out("  input arg %d type %d", i, (int)f2.v);
    }
    pb_reader r = pb_of(sig.data, sig.len);
    pb_field f2;
    int stateful = 0;
    while (pb_next(&r, &f2)) if (f2.field == 16 && f2.wire == 0) stateful = (int)f2.v;
    out("  stateful %d", stateful);
    pb_field co;
    char line[512];
    int n = snprintf(line, sizeof line, "  control outputs:");
    for (int i = 0; pb_get(sig.data, sig.len, 20, i, &co); i++) n += snprintf(line + n, sizeof line - n, " %.*s", (int)co.len, (const char*)co.data);
    out("%s", line);
  }
  pb_strings("node names", b->data, b->length, 3, 1);
  pb_strings("node ops", b->data, b->length, 3, 2);
  pb_strings("node inputs", b->data, b->length, 3, 3);
  pb_map("ret", b->data, b->length, 4);
  pb_map("control_ret", b->data, b->length, 6);
  TF_DeleteBuffer(b);
  TF_DeleteStatus(s);
}

/* TF_GraphToFunction on the cases of TF's c_api_function_test.cc: the
   FunctionDef it makes, its errors, and the function copied into another
   graph and called there. */
static void c_graph_to_function(void) {
  TF_Status* s = TF_NewStatus();
  TF_Graph* g = TF_NewGraph();
  TF_Operation* feed = placeholder(g, "Feed", TF_INT32, NULL, -1, s);
  TF_Operation* feed2 = placeholder(g, "feed2", TF_INT32, NULL, 0, s);
  int32_t ten = 10;
  TF_Operation* c = const_op(g, "scalar10", TF_INT32, NULL, 0, &ten, s);
  TF_Operation* neg = unary(g, "Neg", "neg", (TF_Output){feed, 0}, s);
  TF_Operation* add = binary(g, "AddV2", "Add", (TF_Output){neg, 0}, (TF_Output){c, 0}, s);
  TF_Operation* add2 = binary(g, "AddV2", "add_1", (TF_Output){add, 0}, (TF_Output){feed2, 0}, s);
  TF_OperationDescription* d = TF_NewOperation(g, "NoOp", "side");
  TF_AddControlInput(d, add2);
  TF_AddControlInput(d, neg);
  TF_Operation* side = TF_FinishOperation(d, s);
  ST("graph", s);
  TF_Output ins[2] = {{feed, 0}, {feed2, 0}};
  TF_Output outs[2] = {{add2, 0}, {neg, 0}};

  out("-- zero inputs, one op");
  const TF_Operation* one[1] = {c};
  TF_Output co = {c, 0};
  TF_Function* f = TF_GraphToFunction(g, "const_fn", 0, 1, one, 0, NULL, 1, &co, NULL, NULL, NULL, s);
  ST("to function", s);
  if (f) { show_fdef(f); TF_DeleteFunction(f); }

  out("-- whole graph, two inputs, two outputs");
  f = TF_GraphToFunction(g, "MyFunc", 0, -1, NULL, 2, ins, 2, outs, NULL, NULL, "a description", s);
  ST("to function", s);
  TF_Function* whole = f;
  if (f) show_fdef(f);

  out("-- named outputs, control outputs");
  const char* names[2] = {"sum", "Negated"};
  const TF_Operation* body[4] = {neg, add, add2, side};
  const TF_Operation* ctrl[1] = {side};
  const char* ctrl_names[1] = {"side_effect"};
  TF_Output ins2[3] = {{feed, 0}, {feed2, 0}, {c, 0}};
  f = TF_GraphToFunctionWithControlOutputs(g, "named", 0, 4, body, 3, ins2, 2, outs, names, 1, ctrl, ctrl_names, NULL,
                                           NULL, s);
  ST("to function", s);
  if (f) { show_fdef(f); TF_DeleteFunction(f); }

  out("-- append_hash_to_fn_name");
  /* TF's FunctionDefHash in the name: a Const body (a tensor attr, hashed
     by its canonical form), the whole graph with a description, named
     outputs with control outputs (hashed before they are added). */
  f = TF_GraphToFunction(g, "const_fn", 1, 1, one, 0, NULL, 1, &co, NULL, NULL, NULL, s);
  ST("hashed const_fn", s);
  if (f) { out("  name %s", TF_FunctionName(f)); TF_DeleteFunction(f); }
  f = TF_GraphToFunction(g, "MyFunc", 1, -1, NULL, 2, ins, 2, outs, NULL, NULL, "a description", s);
  ST("hashed MyFunc", s);
  if (f) { out("  name %s", TF_FunctionName(f)); TF_DeleteFunction(f); }
  f = TF_GraphToFunctionWithControlOutputs(g, "named", 1, 4, body, 3, ins2, 2, outs, names, 1, ctrl, ctrl_names, NULL,
                                           NULL, s);
  ST("hashed named", s);
  if (f) { out("  name %s", TF_FunctionName(f)); TF_DeleteFunction(f); }

  out("-- errors");
  const char* dup[2] = {"x", "x"};
  f = TF_GraphToFunction(g, "e", 0, -1, NULL, 2, ins, 2, outs, dup, NULL, NULL, s);
  ST("duplicate output names", s);
  out("  message: %s; NULL %d", TF_Message(s), f == NULL);
  TF_Output twice[2] = {{feed, 0}, {feed, 0}};
  f = TF_GraphToFunction(g, "e", 0, -1, NULL, 2, twice, 1, outs, NULL, NULL, NULL, s);
  ST("input twice", s);
  out("  message: %s", TF_Message(s));
  TF_Output bad_out = {neg, 3};
  f = TF_GraphToFunction(g, "e", 0, -1, NULL, 2, ins, 1, &bad_out, NULL, NULL, NULL, s);
  ST("output index out of range", s, "neg", "Encountered while processing output 0 from function 'e'");
  const TF_Operation* part[1] = {add2};
  f = TF_GraphToFunction(g, "e", 0, 1, part, 1, &ins[1], 1, outs, NULL, NULL, NULL, s);
  ST("body input not available", s);
  out("  message: %s", TF_Message(s));
  f = TF_GraphToFunction(g, "e", 0, 1, part, 0, NULL, 1, &outs[1], NULL, NULL, NULL, s);
  ST("output neither in body nor inputs", s);
  out("  message: %s", TF_Message(s));

  out("-- copied into another graph and called");
  TF_Graph* g2 = TF_NewGraph();
  if (whole) {
    TF_GraphCopyFunction(g2, whole, NULL, s);
    ST("copy", s);
    out("functions: %d", TF_GraphNumFunctions(g2));
    TF_Operation* a = placeholder(g2, "a", TF_INT32, NULL, 0, s);
    TF_Operation* b2 = placeholder(g2, "b", TF_INT32, NULL, 0, s);
    TF_OperationDescription* cd = TF_NewOperation(g2, "MyFunc", "call");
    TF_AddInput(cd, (TF_Output){a, 0});
    TF_AddInput(cd, (TF_Output){b2, 0});
    TF_Operation* call = TF_FinishOperation(cd, s);
    ST("call node", s);
    if (call) out("call outputs %d dtypes %d %d", TF_OperationNumOutputs(call), TF_OperationOutputType((TF_Output){call, 0}),
                  TF_OperationOutputType((TF_Output){call, 1}));
    TF_DeleteFunction(whole);
  }
  TF_DeleteGraph(g2);
  TF_DeleteGraph(g);
  TF_DeleteStatus(s);
}

/* ---- Main ------------------------------------------------------------------------ */

typedef struct {
  const char* name;
  void (*fn)(void);
} test_case;

static const test_case cases[] = {
    {"build_introspect", c_build_introspect},
    {"next_operation_pos", c_next_operation_pos},
    {"unknown_op", c_unknown_op},
    {"placeholder_bad_dim", c_placeholder_bad_dim},
    {"conv2d_zero_stride", c_conv2d_zero_stride},
    {"const_mismatch", c_const_mismatch},
    {"gather_axis", c_gather_axis},
    {"fill_huge", c_fill_huge},
    {"feed_shape", c_feed_shape},
    {"feed_fetch_rules", c_feed_fetch_rules},
    {"kernel_error", c_kernel_error},
    {"static_shape_errors", c_static_shape_errors},
    {"new_tensor_lifetime", c_new_tensor_lifetime},
    {"tensor_api", c_tensor_api},
    {"strings", c_strings},
    {"import_options", c_import_options},
    {"import_errors", c_import_errors},
    {"graph_def_roundtrip", c_graph_def_roundtrip},
    {"session_lifecycle", c_session_lifecycle},
    {"prun", c_prun},
    {"soft_placement", c_soft_placement},
    {"status_buffer", c_status_buffer},
    {"attr_setters", c_attr_setters},
    {"add_gradients", c_add_gradients},
    {"add_gradients_ops", c_add_gradients_ops},
    {"while_basic", c_while_basic},
    {"while_nested", c_while_nested},
    {"while_errors", c_while_errors},
    {"while_gradients", c_while_gradients},
    {"functions", c_functions},
    {"graph_to_function", c_graph_to_function},
    {"node_names", c_node_names},
    {"shape_chains", c_shape_chains},
    {"attr_tensor_proto", c_attr_tensor_proto},
};
#define NCASES ((int)(sizeof cases / sizeof cases[0]))

int main(int argc, char** argv) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  (void)t_pass, (void)t_fail; /* util.h's CHECK counters: this program prints, it does not check */
  if (argc > 1 && strcmp(argv[1], "list") == 0) {
    for (int i = 0; i < NCASES; i++) out("%s", cases[i].name);
    return 0;
  }
  if (argc > 3 && strcmp(argv[1], "random") == 0) {
    rng = strtoull(argv[2], NULL, 10);
    int n = atoi(argv[3]);
    for (int i = 0; i < n; i++) random_sequence(i);
    return 0;
  }
  for (int i = 0; i < NCASES; i++) {
    if (argc > 1 && strcmp(argv[1], cases[i].name) != 0) continue;
    out("== case %s", cases[i].name);
    cases[i].fn();
  }
  return 0;
}
