/* A client written against TensorFlow 2.15's own headers (copied from the Go
 * module cache at test time), linked against build/libtensorflow.so: it builds
 * a graph with TF_NewOperation, exports and reimports it, runs a session with
 * float and string feeds, uses the inline TF_TString helpers of TF's
 * ctstring.h, and touches the eager API. Compiled as C and as C++. Prints
 * "N passed, M failed". */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tensorflow/c/c_api.h"
#include "tensorflow/c/eager/c_api.h"

static int pass, fail;
#define CHECK(cond, what)                                         \
  do {                                                            \
    if (cond) {                                                   \
      pass++;                                                     \
    } else {                                                      \
      fail++;                                                     \
      fprintf(stderr, "FAIL %s:%d: %s\n", __FILE__, __LINE__, what); \
    }                                                             \
  } while (0)
#define OK(s, what) CHECK(TF_GetCode(s) == TF_OK, what)

static TF_Operation* op1(TF_Graph* g, const char* type, const char* name, TF_Output in, TF_Status* s) {
  TF_OperationDescription* d = TF_NewOperation(g, type, name);
  TF_AddInput(d, in);
  return TF_FinishOperation(d, s);
}

int main(void) {
  CHECK(strcmp(TF_Version(), "2.15.0") == 0, "TF_Version");
  TF_Status* s = TF_NewStatus();
  TF_Graph* g = TF_NewGraph();

  /* x [-1,2] -> MatMul(x, w) -> Relu. */
  TF_OperationDescription* d = TF_NewOperation(g, "Placeholder", "x");
  TF_SetAttrType(d, "dtype", TF_FLOAT);
  int64_t xshape[2] = {-1, 2};
  TF_SetAttrShape(d, "shape", xshape, 2);
  TF_Operation* x = TF_FinishOperation(d, s);
  OK(s, "Placeholder");
  int64_t wd[2] = {2, 2};
  TF_Tensor* wt = TF_AllocateTensor(TF_FLOAT, wd, 2, 4 * sizeof(float));
  float* w = (float*)TF_TensorData(wt);
  w[0] = 1; w[1] = -1; w[2] = 2; w[3] = 0.5f;
  d = TF_NewOperation(g, "Const", "w");
  TF_SetAttrTensor(d, "value", wt, s);
  TF_SetAttrType(d, "dtype", TF_FLOAT);
  TF_Operation* wop = TF_FinishOperation(d, s);
  OK(s, "Const");
  TF_DeleteTensor(wt);
  d = TF_NewOperation(g, "MatMul", "mm");
  TF_Output xo = {x, 0}, wo = {wop, 0};
  TF_AddInput(d, xo);
  TF_AddInput(d, wo);
  TF_Operation* mm = TF_FinishOperation(d, s);
  OK(s, "MatMul");
  TF_Output mmo = {mm, 0};
  TF_Operation* relu = op1(g, "Relu", "relu", mmo, s);
  OK(s, "Relu");
  TF_AttrMetadata md = TF_OperationGetAttrMetadata(mm, "transpose_a", s);
  CHECK(TF_GetCode(s) == TF_OK && md.type == TF_ATTR_BOOL && md.is_list == 0, "TF_AttrMetadata by value");
  int64_t dims[2];
  TF_Output ro = {relu, 0};
  TF_GraphGetTensorShape(g, ro, dims, 2, s);
  CHECK(TF_GetCode(s) == TF_OK && dims[0] == -1 && dims[1] == 2, "inferred shape");

  /* Export and reimport under a prefix, with return outputs. */
  TF_Buffer* gd = TF_NewBuffer();
  TF_GraphToGraphDef(g, gd, s);
  OK(s, "GraphToGraphDef");
  TF_ImportGraphDefOptions* io = TF_NewImportGraphDefOptions();
  TF_ImportGraphDefOptionsSetPrefix(io, "copy");
  TF_ImportGraphDefOptionsAddReturnOutput(io, "relu", 0);
  TF_ImportGraphDefOptionsAddInputMapping(io, "x", 0, xo); /* copy/mm reads x */
  TF_Output ret;
  TF_GraphImportGraphDefWithReturnOutputs(g, gd, io, &ret, 1, s);
  OK(s, "reimport");
  CHECK(ret.oper == TF_GraphOperationByName(g, "copy/relu"), "return output");
  TF_DeleteImportGraphDefOptions(io);
  TF_DeleteBuffer(gd);

  /* String identity. */
  d = TF_NewOperation(g, "Placeholder", "sx");
  TF_SetAttrType(d, "dtype", TF_STRING);
  TF_Operation* sx = TF_FinishOperation(d, s);
  TF_Output sxo = {sx, 0};
  TF_Operation* sid = op1(g, "Identity", "sid", sxo, s);
  OK(s, "string graph");

  TF_SessionOptions* so = TF_NewSessionOptions();
  const unsigned char cfg[] = {0x10, 0x01, 0x28, 0x02};
  TF_SetConfig(so, cfg, sizeof cfg, s);
  OK(s, "TF_SetConfig");
  TF_Session* sess = TF_NewSession(g, so, s);
  OK(s, "TF_NewSession");

  int64_t in_dims[2] = {2, 2};
  TF_Tensor* in = TF_AllocateTensor(TF_FLOAT, in_dims, 2, 4 * sizeof(float));
  float* iv = (float*)TF_TensorData(in);
  iv[0] = 1; iv[1] = 2; iv[2] = -3; iv[3] = 1;
  TF_Tensor* sin = TF_AllocateTensor(TF_STRING, NULL, 0, sizeof(TF_TString));
  TF_TString* ts = (TF_TString*)TF_TensorData(sin);
  TF_TString_Init(ts);
  const char* msg = "a string longer than twenty-two bytes, with a \0 inside";
  size_t msg_len = 54;
  TF_TString_Copy(ts, msg, msg_len);
  TF_Output feeds[2] = {xo, sxo};
  TF_Tensor* feed_vals[2] = {in, sin};
  TF_Output fetches[3] = {ro, ret, {sid, 0}};
  TF_Tensor* outs[3] = {NULL, NULL, NULL};
  TF_SessionRun(sess, NULL, feeds, feed_vals, 2, fetches, outs, 3, NULL, 0, NULL, s);
  OK(s, "TF_SessionRun");
  /* [[1,2],[-3,1]] x [[1,-1],[2,0.5]] = [[5,0],[-1,3.5]] -> relu [[5,0],[0,3.5]] */
  for (int k = 0; k < 2; k++) {
    const float* o = outs[k] ? (const float*)TF_TensorData(outs[k]) : NULL;
    CHECK(o && o[0] == 5 && o[1] == 0 && o[2] == 0 && o[3] == 3.5f, "relu values");
  }
  const TF_TString* os = outs[2] ? (const TF_TString*)TF_TensorData(outs[2]) : NULL;
  CHECK(os && TF_TString_GetSize(os) == msg_len && memcmp(TF_TString_GetDataPointer(os), msg, msg_len) == 0,
        "string round trip");
  for (int k = 0; k < 3; k++) if (outs[k]) TF_DeleteTensor(outs[k]);
  TF_TString_Dealloc(ts);
  TF_DeleteTensor(sin);
  TF_DeleteTensor(in);

  TF_DeviceList* dl = TF_SessionListDevices(sess, s);
  OK(s, "ListDevices");
  CHECK(TF_DeviceListCount(dl) >= 1 && strcmp(TF_DeviceListType(dl, 0, s), "CPU") == 0, "CPU device");
  TF_DeleteDeviceList(dl);

  /* A bad run: error code through TF's own enum. */
  TF_SessionRun(sess, NULL, NULL, NULL, 0, fetches, outs, 1, NULL, 0, NULL, s);
  CHECK(TF_GetCode(s) == TF_INVALID_ARGUMENT && strstr(TF_Message(s), "x") != NULL, "missing feed");

  TF_CloseSession(sess, s);
  TF_DeleteSession(sess, s);
  OK(s, "delete session");
  TF_DeleteSessionOptions(so);
  TF_DeleteGraph(g);

  /* Eager: a context and a host tensor handle. */
  TFE_ContextOptions* eo = TFE_NewContextOptions();
  TFE_Context* ctx = TFE_NewContext(eo, s);
  OK(s, "TFE_NewContext");
  int64_t hd[1] = {3};
  TF_Tensor* ht = TF_AllocateTensor(TF_INT64, hd, 1, 3 * sizeof(int64_t));
  TFE_TensorHandle* h = TFE_NewTensorHandle(ht, s);
  OK(s, "TFE_NewTensorHandle");
  CHECK(TFE_TensorHandleNumElements(h, s) == 3 && TFE_TensorHandleDataType(h) == TF_INT64, "handle");
  TFE_DeleteTensorHandle(h);
  TF_DeleteTensor(ht);
  TFE_DeleteContext(ctx);
  TFE_DeleteContextOptions(eo);
  TF_DeleteStatus(s);
  printf("%d passed, %d failed\n", pass, fail);
  return fail != 0;
}
