/* TF_STRING tensors: elements written with the TF_TString inline helpers of our
 * headers (small, large, views, empty, embedded NULs, a 1 MiB string), fed and
 * fetched through a session (Identity, Reshape, GatherV2, ConcatV2 on strings, a
 * string Const built with TF_SetAttrTensor or imported from text), input strings
 * freed and overwritten right after the run, string attrs read back; then a
 * live-handle count. */
#include <stdio.h>
#include "util.h"

#define N 6
static char big[1 << 20], const_big[100];
static int ok_s(TF_Status* s) { return TF_GetCode(s) == TF_OK; }

/* The test strings; element 5 is the big one. */
static void fill(TF_TString* ts, const char* view_src) {
  for (int i = 0; i < N; i++) TF_TString_Init(&ts[i]);
  TF_TString_Copy(&ts[0], "", 0);
  TF_TString_Copy(&ts[1], "hi", 2);
  TF_TString_Copy(&ts[2], "a\0b\0c", 5);
  TF_TString_Copy(&ts[3], "exactly twenty-two ch!", 22); /* the largest small string */
  TF_TString_AssignView(&ts[4], view_src, strlen(view_src));
  TF_TString_Copy(&ts[5], big, sizeof big);
}

static int same(const TF_TString* t, const void* want, size_t n) {
  return TF_TString_GetSize(t) == n && memcmp(TF_TString_GetDataPointer(t), want, n) == 0;
}

static int check_all(const TF_Tensor* t, const char* view_src, const char* what) {
  if (!t || TF_TensorType(t) != TF_STRING || TF_TensorElementCount(t) != N) {
    CHECK(0, "%s: not a %d-element string tensor", what, N);
    return 0;
  }
  const TF_TString* ts = TF_TensorData(t);
  int okc = same(&ts[0], "", 0) && same(&ts[1], "hi", 2) && same(&ts[2], "a\0b\0c", 5) &&
            same(&ts[3], "exactly twenty-two ch!", 22) && same(&ts[4], view_src, strlen(view_src)) &&
            same(&ts[5], big, sizeof big);
  CHECK(okc, "%s: string contents differ", what);
  return okc;
}

static void dealloc_all(TF_Tensor* t) {
  TF_TString* ts = TF_TensorData(t);
  for (int64_t i = 0; i < TF_TensorElementCount(t); i++) TF_TString_Dealloc(&ts[i]);
}

static void test_tstring_types(void) {
  TF_TString t;
  TF_TString_Init(&t);
  CHECK(TF_TString_GetType(&t) == TF_TSTR_SMALL && TF_TString_GetSize(&t) == 0, "init is an empty small string");
  TF_TString_Copy(&t, "12345678901234567890123", 23);
  CHECK(TF_TString_GetType(&t) == TF_TSTR_LARGE && TF_TString_GetCapacity(&t) >= 23, "23 bytes are large");
  TF_TString u;
  TF_TString_Init(&u);
  TF_TString_Copy(&u, "abc", 3);
  TF_TString_Append(&t, &u);
  CHECK(same(&t, "12345678901234567890123abc", 26), "append");
  TF_TString_Dealloc(&u);
  TF_TString_Dealloc(&t);
  const char* src = "viewed";
  TF_TString_AssignView(&t, src, 6);
  CHECK(TF_TString_GetType(&t) == TF_TSTR_VIEW && TF_TString_GetDataPointer(&t) == src, "view points at its source");
  TF_TString_Dealloc(&t);
  /* The exported counterparts agree with the inline helpers. */
  TF_StringInit(&t);
  TF_StringCopy(&t, "a\0b", 3);
  CHECK(TF_StringGetSize(&t) == 3 && memcmp(TF_StringGetDataPointer(&t), "a\0b", 3) == 0 &&
            TF_StringGetType(&t) == TF_TString_GetType(&t), "TF_String* functions");
  TF_StringDealloc(&t);
  CHECK(sizeof(TF_TString) == 24, "sizeof(TF_TString) %zu", sizeof(TF_TString));
}

static void test_session(void) {
  TF_Status* s = TF_NewStatus();
  TF_Graph* g = TF_NewGraph();
  int64_t pdims[1] = {-1};
  TF_Operation* x = placeholder(g, "x", TF_STRING, pdims, 1, s);
  TF_Operation* id = unary(g, "Identity", "id", (TF_Output){x, 0}, s);
  int32_t shp[2] = {2, 3};
  int64_t shpd[1] = {2};
  TF_Operation* sc = const_op(g, "shp", TF_INT32, shpd, 1, shp, s);
  TF_Operation* rs = binary(g, "Reshape", "rs", (TF_Output){x, 0}, (TF_Output){sc, 0}, s);
  CHECK_OK(s, "graph");

  /* A string Const from TF_SetAttrTensor: the attr is a copy. */
  int64_t cd[1] = {3};
  TF_Tensor* ct = TF_AllocateTensor(TF_STRING, cd, 1, 3 * sizeof(TF_TString));
  TF_TString* cts = TF_TensorData(ct);
  for (int i = 0; i < 3; i++) TF_TString_Init(&cts[i]);
  TF_TString_Copy(&cts[0], "const\0zero", 10);
  memcpy(const_big, big, 100);
  TF_TString_Copy(&cts[1], const_big, 100);
  TF_TString_Copy(&cts[2], "", 0);
  TF_OperationDescription* d = TF_NewOperation(g, "Const", "cs");
  TF_SetAttrTensor(d, "value", ct, s);
  TF_SetAttrType(d, "dtype", TF_STRING);
  TF_Operation* cs = TF_FinishOperation(d, s);
  CHECK_OK(s, "string Const");
  TF_TString_Copy(&cts[0], "changed", 7);
  dealloc_all(ct);
  TF_DeleteTensor(ct);
  int32_t idx[4] = {5, 0, 2, 5};
  int64_t idxd[1] = {4};
  TF_Operation* ic = const_op(g, "idx", TF_INT32, idxd, 1, idx, s);
  int32_t zero = 0;
  TF_Operation* ax = const_op(g, "axis", TF_INT32, NULL, 0, &zero, s);
  d = TF_NewOperation(g, "GatherV2", "gather");
  TF_AddInput(d, (TF_Output){x, 0});
  TF_AddInput(d, (TF_Output){ic, 0});
  TF_AddInput(d, (TF_Output){ax, 0});
  TF_Operation* gather = TF_FinishOperation(d, s);
  CHECK_OK(s, "GatherV2 on strings");
  TF_Output parts[2] = {{cs, 0}, {x, 0}};
  d = TF_NewOperation(g, "ConcatV2", "concat");
  TF_AddInputList(d, parts, 2);
  TF_AddInput(d, (TF_Output){ax, 0});
  TF_Operation* concat = TF_FinishOperation(d, s);
  CHECK_OK(s, "ConcatV2 on strings");

  TF_Tensor* cv = NULL;
  TF_OperationGetAttrTensor(cs, "value", &cv, s);
  const TF_TString* cvs = cv ? TF_TensorData(cv) : NULL;
  CHECK(ok_s(s) && cvs && TF_TensorType(cv) == TF_STRING && TF_TensorElementCount(cv) == 3 &&
            same(&cvs[0], "const\0zero", 10) && same(&cvs[1], const_big, 100) && same(&cvs[2], "", 0),
        "string tensor attr read back");
  if (cv) TF_DeleteTensor(cv);

  TF_SessionOptions* so = TF_NewSessionOptions();
  TF_Session* sess = TF_NewSession(g, so, s);
  CHECK_OK(s, "session");
  char view_src[64];
  for (int round = 0; round < 3 && sess; round++) {
    snprintf(view_src, sizeof view_src, "a view that is longer than 22 bytes, round %d", round);
    big[round] = (char)('A' + round);
    int64_t dims[1] = {N};
    TF_Tensor* in = TF_AllocateTensor(TF_STRING, dims, 1, N * sizeof(TF_TString));
    fill(TF_TensorData(in), view_src);
    TF_Output outs[5] = {{id, 0}, {rs, 0}, {cs, 0}, {gather, 0}, {concat, 0}};
    TF_Tensor* vals[5] = {0};
    TF_Output xo = {x, 0};
    TF_SessionRun(sess, NULL, &xo, &in, 1, outs, vals, 5, NULL, 0, NULL, s);
    CHECK_OK(s, "run");
    /* Inputs are not kept: free and overwrite them before looking at the outputs.
     * TF lets an output share a fed tensor's buffer (Identity of the feed
     * here), so there the overwrite would show: README, "safer than TF". */
#ifndef MS_ON_TF
    dealloc_all(in);
    TF_TString* its = TF_TensorData(in);
    for (int i = 0; i < N; i++) { TF_TString_Init(&its[i]); TF_TString_Copy(&its[i], "overwritten", 11); }
    memset(view_src + 2, '#', 5);
#endif
    char want_view[64];
    snprintf(want_view, sizeof want_view, "a view that is longer than 22 bytes, round %d", round);
    if (TF_GetCode(s) == TF_OK) {
      check_all(vals[0], want_view, "Identity");
      CHECK(vals[1] && TF_NumDims(vals[1]) == 2 && TF_Dim(vals[1], 0) == 2 && TF_Dim(vals[1], 1) == 3,
            "Reshape of strings to [2,3]");
      if (vals[1]) check_all(vals[1], want_view, "Reshape");
      const TF_TString* c = vals[2] ? TF_TensorData(vals[2]) : NULL;
      CHECK(c && TF_TensorElementCount(vals[2]) == 3 && same(&c[0], "const\0zero", 10) && same(&c[1], const_big, 100) &&
                same(&c[2], "", 0), "string Const keeps the value it was built with");
      const TF_TString* gs = vals[3] ? TF_TensorData(vals[3]) : NULL;
      CHECK(gs && TF_TensorElementCount(vals[3]) == 4 && same(&gs[0], big, sizeof big) && same(&gs[1], "", 0) &&
                same(&gs[2], "a\0b\0c", 5) && same(&gs[3], big, sizeof big), "GatherV2 on strings");
      const TF_TString* cc = vals[4] ? TF_TensorData(vals[4]) : NULL;
      CHECK(cc && TF_TensorElementCount(vals[4]) == 3 + N && same(&cc[0], "const\0zero", 10) &&
                same(&cc[3], "", 0) && same(&cc[5], "a\0b\0c", 5) && same(&cc[8], big, sizeof big),
            "ConcatV2 on strings");
    }
    dealloc_all(in);
    TF_DeleteTensor(in);
    for (int i = 0; i < 5; i++) if (vals[i]) TF_DeleteTensor(vals[i]); /* fetched strings belong to the tensor */
  }
  TF_CloseSession(sess, s);
  TF_DeleteSession(sess, s);
  TF_DeleteSessionOptions(so);
  TF_DeleteGraph(g);
  TF_DeleteStatus(s);
}

/* A string Const imported from a text GraphDef (string_val with escapes). */
static void test_text_const(void) {
  TF_Status* s = TF_NewStatus();
  TF_Graph* g = TF_NewGraph();
  CHECK(import_text(g,
                    "node { name: 'c' op: 'Const' attr { key: 'dtype' value { type: DT_STRING } }\n"
                    "  attr { key: 'value' value { tensor { dtype: DT_STRING tensor_shape { dim { size: 2 } }\n"
                    "    string_val: 'nul\\000inside' string_val: '\\377\\001' } } } }\n"
                    "node { name: 'i' op: 'Identity' input: 'c' attr { key: 'T' value { type: DT_STRING } } }\n",
                    s),
        "import: %s", TF_Message(s));
  TF_SessionOptions* so = TF_NewSessionOptions();
  TF_Session* sess = TF_NewSession(g, so, s);
  TF_Tensor* out = sess ? run1(sess, NULL, NULL, 0, out0(g, "i"), s) : NULL;
  CHECK_OK(s, "run text const");
  const TF_TString* ts = out ? TF_TensorData(out) : NULL;
  CHECK(ts && TF_TensorElementCount(out) == 2 && same(&ts[0], "nul\0inside", 10) && same(&ts[1], "\377\001", 2),
        "string_val with escapes");
  if (out) TF_DeleteTensor(out);
  /* A feed replaces the Const's value (same shape: mstream checks fed shapes
   * against the graph's static ones). */
  int64_t d2[1] = {2};
  TF_Tensor* rep = TF_AllocateTensor(TF_STRING, d2, 1, 2 * sizeof(TF_TString));
  TF_TString* rs = TF_TensorData(rep);
  TF_TString_Init(&rs[0]);
  TF_TString_Init(&rs[1]);
  TF_TString_Copy(&rs[1], big, 300);
  TF_Output c = out0(g, "c");
  out = sess ? run1(sess, &c, &rep, 1, out0(g, "i"), s) : NULL;
  CHECK_OK(s, "feeding strings over the string Const");
  ts = out ? TF_TensorData(out) : NULL;
  CHECK(ts && TF_TensorElementCount(out) == 2 && same(&ts[0], "", 0) && same(&ts[1], big, 300), "replaced Const");
  if (out) TF_DeleteTensor(out);
  TF_TString_Dealloc(&rs[1]);
  TF_DeleteTensor(rep);
  TF_CloseSession(sess, s);
  TF_DeleteSession(sess, s);
  TF_DeleteSessionOptions(so);
  TF_DeleteGraph(g);
  TF_DeleteStatus(s);
}

int main(void) {
  for (size_t i = 0; i < sizeof big; i++) big[i] = (char)(i * 131 + (i >> 9));
  TF_DeleteStatus(TF_NewStatus());
  leak_baseline();
  test_tstring_types();
  test_session();
  test_text_const();
  check_no_leaks();
  return DONE();
}
