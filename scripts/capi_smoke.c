/* A quick end-to-end check of build/libmstream.so through TF's C API, for
   whoever changes capi/: a text GraphDef imported through
   MS_GraphDefTextToBinary, operations built and introspected, attributes
   read back, sessions run (Run, PRun, strings), eager handles, stubs and
   NULL arguments. The thorough per-family tests live in test/.
   Run by scripts/capi_smoke.sh (and `make test`). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mstream/mstream.h"
#include "tensorflow/c/c_api.h"
#include "tensorflow/c/eager/c_api.h"

static int failures = 0, checks = 0;
#define CHECK(cond, ...)                                   \
  do {                                                     \
    checks++;                                              \
    if (!(cond)) {                                         \
      failures++;                                          \
      fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond); \
      fprintf(stderr, __VA_ARGS__);                        \
      fprintf(stderr, "\n");                               \
    }                                                      \
  } while (0)
#define OK(s) CHECK(TF_GetCode(s) == TF_OK, "%s", TF_Message(s))

static const char* kGraph =
    "node { name: 'x' op: 'Placeholder' attr { key: 'dtype' value { type: DT_FLOAT } }"
    "  attr { key: 'shape' value { shape { dim { size: -1 } dim { size: 2 } } } } }\n"
    "node { name: 'w' op: 'Const' attr { key: 'dtype' value { type: DT_FLOAT } }"
    "  attr { key: 'value' value { tensor { dtype: DT_FLOAT tensor_shape { dim { size: 2 } dim { size: 1 } }"
    "  float_val: 2 float_val: 3 } } } }\n"
    "node { name: 'y' op: 'MatMul' input: 'x' input: 'w'"
    "  attr { key: 'T' value { type: DT_FLOAT } } }\n";

static void free_data(void* data, size_t len, void* arg) {
  (void)len;
  free(data);
  (*(int*)arg)++;
}

int main(void) {
  TF_Status* s = TF_NewStatus();
  CHECK(strcmp(TF_Version(), "2.15.0") == 0, "%s", TF_Version());
  CHECK(MS_Version()[0] != 0, "empty MS_Version");

  /* Import a text GraphDef. */
  TF_Buffer* gd = TF_NewBuffer();
  MS_GraphDefTextToBinary(kGraph, strlen(kGraph), gd, s);
  OK(s);
  TF_Graph* g = TF_NewGraph();
  TF_ImportGraphDefOptions* io = TF_NewImportGraphDefOptions();
  TF_ImportGraphDefOptionsAddReturnOutput(io, "y", 0);
  TF_ImportGraphDefOptionsAddReturnOperation(io, "w");
  TF_ImportGraphDefResults* res = TF_GraphImportGraphDefWithResults(g, gd, io, s);
  OK(s);
  int nout = 0, nops = 0;
  TF_Output* outs = NULL;
  TF_Operation** ops = NULL;
  TF_ImportGraphDefResultsReturnOutputs(res, &nout, &outs);
  TF_ImportGraphDefResultsReturnOperations(res, &nops, &ops);
  CHECK(nout == 1 && nops == 1, "%d %d", nout, nops);
  TF_Operation* x = TF_GraphOperationByName(g, "x");
  TF_Operation* y = TF_GraphOperationByName(g, "y");
  CHECK(x != NULL && y != NULL, "lookup");
  CHECK(outs[0].oper == y, "return output is not the same TF_Operation*");
  TF_Operation* w = ops[0];
  CHECK(w == TF_GraphOperationByName(g, "w"), "stable pointers");
  TF_DeleteImportGraphDefResults(res);
  TF_DeleteImportGraphDefOptions(io);

  /* Iteration and introspection. */
  size_t pos = 0;
  int n = 0;
  while (TF_GraphNextOperation(g, &pos) != NULL) n++;
  CHECK(n == 3, "%d operations", n);
  CHECK(strcmp(TF_OperationOpType(y), "MatMul") == 0, "%s", TF_OperationOpType(y));
  CHECK(TF_OperationNumInputs(y) == 2, "inputs");
  TF_Output in1 = TF_OperationInput((TF_Input){y, 1});
  CHECK(in1.oper == w && in1.index == 0, "input 1");
  CHECK(TF_OperationOutputNumConsumers((TF_Output){x, 0}) == 1, "consumers");
  CHECK(TF_OperationOutputType((TF_Output){y, 0}) == TF_FLOAT, "type");
  int64_t dims[2];
  CHECK(TF_GraphGetTensorNumDims(g, (TF_Output){y, 0}, s) == 2, "rank");
  TF_GraphGetTensorShape(g, (TF_Output){y, 0}, dims, 2, s);
  OK(s);
  CHECK(dims[0] == -1 && dims[1] == 1, "%lld %lld", (long long)dims[0], (long long)dims[1]);
  TF_AttrMetadata md = TF_OperationGetAttrMetadata(x, "shape", s);
  OK(s);
  CHECK(md.is_list == 0 && md.type == TF_ATTR_SHAPE && md.total_size == 2, "metadata");
  TF_DataType dt;
  TF_OperationGetAttrType(x, "dtype", &dt, s);
  OK(s);
  CHECK(dt == TF_FLOAT, "dtype %d", dt);
  unsigned char ta = 1;
  TF_OperationGetAttrBool(y, "transpose_a", &ta, s);
  OK(s);
  CHECK(ta == 0, "default attr");
  TF_OperationGetAttrInt(x, "nope", NULL, s);
  CHECK(TF_GetCode(s) == TF_NOT_FOUND, "missing attr: %d", TF_GetCode(s));
  TF_Tensor* wt = NULL;
  TF_OperationGetAttrTensor(w, "value", &wt, s);
  OK(s);
  CHECK(wt && ((float*)TF_TensorData(wt))[1] == 3.0f, "const value");
  TF_DeleteTensor(wt);

  /* Build an operation: z = Add(y, c) with c a Const set from a tensor. */
  TF_Tensor* ct = TF_AllocateTensor(TF_FLOAT, NULL, 0, 4);
  *(float*)TF_TensorData(ct) = 0.5f;
  TF_OperationDescription* d = TF_NewOperation(g, "Const", "c");
  TF_SetAttrTensor(d, "value", ct, s);
  OK(s);
  TF_SetAttrType(d, "dtype", TF_FLOAT);
  TF_Operation* c = TF_FinishOperation(d, s);
  OK(s);
  TF_DeleteTensor(ct);
  d = TF_NewOperation(g, "AddV2", "z");
  TF_AddInput(d, (TF_Output){y, 0});
  TF_AddInput(d, (TF_Output){c, 0});
  TF_Operation* z = TF_FinishOperation(d, s);
  OK(s);
  d = TF_NewOperation(g, "NoSuchOp", "bad");
  CHECK(TF_FinishOperation(d, s) == NULL && TF_GetCode(s) != TF_OK, "unknown op");
  TF_Buffer* nd = TF_NewBuffer();
  TF_OperationToNodeDef(z, nd, s);
  OK(s);
  CHECK(nd->length > 0, "NodeDef");
  TF_DeleteBuffer(nd);

  /* Run. */
  TF_Buffer* cfg = TF_NewBuffer();
  const char* ctext = "inter_op_parallelism_threads: 2";
  MS_ConfigProtoTextToBinary(ctext, strlen(ctext), cfg, s);
  OK(s);
  TF_SessionOptions* so = TF_NewSessionOptions();
  TF_SetConfig(so, cfg->data, cfg->length, s);
  OK(s);
  TF_SetConfig(so, "\xff\xff\xff", 3, s);
  CHECK(TF_GetCode(s) == TF_INVALID_ARGUMENT, "bad config: %d", TF_GetCode(s));
  TF_Session* sess = TF_NewSession(g, so, s);
  OK(s);
  int freed = 0;
  float* xv = malloc(4 * sizeof(float));
  xv[0] = 1, xv[1] = 2, xv[2] = 3, xv[3] = 4;
  int64_t xd[2] = {2, 2};
  TF_Tensor* xt = TF_NewTensor(TF_FLOAT, xd, 2, xv, 4 * sizeof(float), free_data, &freed);
  TF_Output feed = {x, 0}, fetch = {z, 0};
  TF_Tensor* out = NULL;
  TF_Buffer* meta = TF_NewBuffer();
  TF_SessionRun(sess, NULL, &feed, &xt, 1, &fetch, &out, 1, NULL, 0, meta, s);
  OK(s);
  if (out) {
    float* o = TF_TensorData(out);
    CHECK(TF_NumDims(out) == 2 && TF_Dim(out, 0) == 2 && TF_Dim(out, 1) == 1, "shape");
    CHECK(o[0] == 8.5f && o[1] == 18.5f, "%g %g", o[0], o[1]);
    TF_DeleteTensor(out);
  }
  TF_DeleteBuffer(meta);
  /* A feed of the wrong dtype: an error, every output NULL, session usable. */
  TF_Tensor* it = TF_AllocateTensor(TF_INT32, xd, 2, 16);
  out = (TF_Tensor*)1;
  TF_SessionRun(sess, NULL, &feed, &it, 1, &fetch, &out, 1, NULL, 0, NULL, s);
  CHECK(TF_GetCode(s) == TF_INVALID_ARGUMENT && out == NULL, "wrong dtype: %d %s", TF_GetCode(s), TF_Message(s));
  TF_DeleteTensor(it);
  TF_SessionRun(sess, NULL, &feed, &xt, 1, &fetch, &out, 1, NULL, 0, NULL, s);
  OK(s);
  TF_DeleteTensor(out);
  TF_DeleteTensor(xt);
  CHECK(freed == 1, "deallocator called %d times", freed);

  /* Partial run. */
  const char* handle = NULL;
  TF_SessionPRunSetup(sess, &feed, 1, &fetch, 1, NULL, 0, &handle, s);
  OK(s);
  if (handle) {
    float* v = malloc(2 * sizeof(float));
    v[0] = 1, v[1] = 1;
    int64_t d12[2] = {1, 2};
    TF_Tensor* t = TF_NewTensor(TF_FLOAT, d12, 2, v, 8, free_data, &freed);
    out = NULL;
    TF_SessionPRun(sess, handle, &feed, &t, 1, &fetch, &out, 1, NULL, 0, s);
    OK(s);
    CHECK(out && *(float*)TF_TensorData(out) == 5.5f, "prun value");
    TF_DeleteTensor(out);
    TF_DeleteTensor(t);
    TF_DeletePRunHandle(handle);
  }

  TF_DeviceList* dl = TF_SessionListDevices(sess, s);
  OK(s);
  CHECK(TF_DeviceListCount(dl) >= 1, "devices");
  CHECK(TF_DeviceListName(dl, 99, s) == NULL && TF_GetCode(s) == TF_INVALID_ARGUMENT, "index");
  TF_DeleteDeviceList(dl);
  TF_Buffer* js = TF_NewBuffer();
  MS_SessionStats(sess, js, s);
  OK(s);
  TF_DeleteBuffer(js);

  /* The graph outlives TF_DeleteGraph while a session uses it. */
  TF_DeleteGraph(g);
  TF_SessionRun(sess, NULL, NULL, NULL, 0, &fetch, &out, 1, NULL, 0, NULL, s);
  CHECK(TF_GetCode(s) != TF_OK && out == NULL, "x unfed must fail");
  TF_CloseSession(sess, s);
  OK(s);
  TF_DeleteSession(sess, s);
  OK(s);

  /* Strings. */
  TF_Tensor* st = TF_AllocateTensor(TF_STRING, NULL, 0, sizeof(TF_TString));
  TF_TString* ts = TF_TensorData(st);
  TF_StringInit(ts);
  TF_StringCopy(ts, "a string longer than the small-string limit", 43);
  CHECK(TF_StringGetSize(ts) == 43, "size");
  TF_StringDealloc(ts);
  TF_DeleteTensor(st);

  /* Eager host handles. */
  TFE_ContextOptions* eo = TFE_NewContextOptions();
  TFE_Context* ctx = TFE_NewContext(eo, s);
  OK(s);
  TF_DeviceList* edl = TFE_ContextListDevices(ctx, s);
  OK(s);
  CHECK(TF_DeviceListCount(edl) == 1, "eager devices");
  TF_DeleteDeviceList(edl);
  TF_Tensor* et = TF_AllocateTensor(TF_INT64, xd, 2, 32);
  TFE_TensorHandle* h = TFE_NewTensorHandle(et, s);
  OK(s);
  CHECK(TFE_TensorHandleNumDims(h, s) == 2 && TFE_TensorHandleDim(h, 1, s) == 2, "handle dims");
  TF_Tensor* back = TFE_TensorHandleResolve(h, s);
  OK(s);
  CHECK(TF_TensorData(back) == TF_TensorData(et), "resolve shares the buffer");
  TF_DeleteTensor(back);
  TF_DeleteTensor(et);
  TFE_DeleteTensorHandle(h);
  TFE_NewOp(ctx, "Add", s);
  CHECK(TF_GetCode(s) == TF_UNIMPLEMENTED, "TFE_NewOp");
  TFE_DeleteContext(ctx);
  TFE_DeleteContextOptions(eo);

  /* Stubs and NULLs. */
  TF_LoadSessionFromSavedModel(NULL, NULL, "x", NULL, 0, NULL, NULL, s);
  CHECK(TF_GetCode(s) == TF_INVALID_ARGUMENT && strstr(TF_Message(s), "graph"), "%s", TF_Message(s));
  TF_GraphImportGraphDef(NULL, gd, NULL, s);
  CHECK(TF_GetCode(s) == TF_INVALID_ARGUMENT, "NULL graph");
  TF_SessionRun(NULL, NULL, NULL, NULL, 0, NULL, NULL, 0, NULL, 0, NULL, s);
  CHECK(TF_GetCode(s) == TF_INVALID_ARGUMENT, "NULL session");
  TF_DeleteGraph(NULL);
  TF_DeleteSession(NULL, s);
  TF_DeleteTensor(NULL);
  TF_DeleteBuffer(NULL);
  TF_DeleteStatus(NULL);
  TF_DeleteBuffer(gd);
  TF_DeleteBuffer(cfg);
  TF_DeleteSessionOptions(so);
  TF_DeleteStatus(s);
  printf("%d passed, %d failed\n", checks - failures, failures);
  return failures != 0;
}
