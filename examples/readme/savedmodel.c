/* savedmodel: the README's SavedModel example, whole. It loads the TF1
 * SavedModel test/savedmodel/mlp_ref (written by TF's SavedModel Builder),
 * runs its serving signature (x:0 -> y:0) on a batch of 2 and prints the
 * output's shape. examples/test.sh (check readme) builds it with the
 * README's link command and runs it from the repository's top directory. */
#include <stdio.h>
#include <stdlib.h>

#include "tensorflow/c/c_api.h"

static void check(const char* what, TF_Status* status) {
  if (TF_GetCode(status) != TF_OK) {
    fprintf(stderr, "%s: %s\n", what, TF_Message(status));
    exit(1);
  }
}

int main(void) {
  TF_Status* status = TF_NewStatus();
  TF_Graph* g = TF_NewGraph();
  TF_SessionOptions* so = TF_NewSessionOptions();
  TF_Buffer* meta_graph = TF_NewBuffer();                 /* receives the MetaGraphDef */
  const char* tags[] = {"serve"};
  TF_Session* s = TF_LoadSessionFromSavedModel(so, NULL, "test/savedmodel/mlp_ref", tags, 1, g,
                                               meta_graph, status);
  check("TF_LoadSessionFromSavedModel", status);           /* variables restored, init op run */

  int64_t dims[2] = {2, 4};
  TF_Tensor* x = TF_AllocateTensor(TF_FLOAT, dims, 2, 8 * sizeof(float));
  for (int i = 0; i < 8; i++) ((float*)TF_TensorData(x))[i] = 1;
  TF_Output in = {TF_GraphOperationByName(g, "x"), 0}, out = {TF_GraphOperationByName(g, "y"), 0};
  TF_Tensor* y = NULL;
  TF_SessionRun(s, NULL, &in, &x, 1, &out, &y, 1, NULL, 0, NULL, status);
  check("TF_SessionRun", status);
  printf("output: [%lld,%lld]\n", (long long)TF_Dim(y, 0), (long long)TF_Dim(y, 1));  /* output: [2,3] */

  TF_DeleteTensor(y);
  TF_DeleteTensor(x);
  TF_CloseSession(s, status);
  TF_DeleteSession(s, status);
  TF_DeleteBuffer(meta_graph);
  TF_DeleteSessionOptions(so);
  TF_DeleteGraph(g);
  TF_DeleteStatus(status);
  return 0;
}
