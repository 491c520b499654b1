/* quickstart: the README's C example, whole. It imports the bundled text
 * GraphDef, runs it once on a batch of 4 and prints the output's dtype and
 * shape. examples/test.sh (check readme) builds it with the README's link
 * commands and runs it from the repository's top directory. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mstream/mstream.h"
#include "tensorflow/c/c_api.h"

#define B 4

static void check(const char* what, TF_Status* status) {
  if (TF_GetCode(status) != TF_OK) {
    fprintf(stderr, "%s: %s\n", what, TF_Message(status));
    exit(1);
  }
}

static void free_data(void* data, size_t len) { (void)len, free(data); }

/* read_file returns the file's bytes in a TF_Buffer the caller deletes. */
static TF_Buffer* read_file(const char* path) {
  FILE* f = fopen(path, "rb");
  if (f == NULL) { perror(path); exit(1); }
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  rewind(f);
  void* data = malloc(n > 0 ? (size_t)n : 1);
  if (data == NULL || fread(data, 1, (size_t)n, f) != (size_t)n) { perror(path); exit(1); }
  fclose(f);
  TF_Buffer* b = TF_NewBuffer();
  b->data = data;
  b->length = (size_t)n;
  b->data_deallocator = free_data;
  return b;
}

/* filled returns a new tensor of dtype dt and the given shape, every element
 * set to v (the feeds of this example need no more). */
static TF_Tensor* filled(TF_DataType dt, const int64_t* dims, int nd, double v) {
  int64_t n = 1;
  for (int i = 0; i < nd; i++) n *= dims[i];
  TF_Tensor* t = TF_AllocateTensor(dt, dims, nd, (size_t)n * TF_DataTypeSize(dt));
  for (int64_t i = 0; i < n; i++) {
    if (dt == TF_FLOAT) ((float*)TF_TensorData(t))[i] = (float)v;
    if (dt == TF_INT32) ((int32_t*)TF_TensorData(t))[i] = (int32_t)(v * i);
    if (dt == TF_INT64) ((int64_t*)TF_TensorData(t))[i] = (int64_t)(v * i);
  }
  return t;
}

int main(void) {
  TF_Status* status = TF_NewStatus();
  TF_Buffer* text = read_file("examples/data/model_test.pbtxt");
  TF_Buffer* graph_def = TF_NewBuffer();
  MS_GraphDefTextToBinary(text->data, text->length, graph_def, status);  /* .pbtxt -> binary */
  check("examples/data/model_test.pbtxt", status);

  TF_Graph* g = TF_NewGraph();
  TF_ImportGraphDefOptions* o = TF_NewImportGraphDefOptions();
  TF_GraphImportGraphDef(g, graph_def, o, status);        /* graph_def: a TF_Buffer */
  check("import", status);
  TF_SessionOptions* so = TF_NewSessionOptions();
  TF_Session* s = TF_NewSession(g, so, status);           /* reads the TF_* knobs */
  check("TF_NewSession", status);

  const char* names[5] = {"dense", "ids_0", "ids_1", "ids_2", "ids_3"};
  int64_t d2[2] = {B, 13}, d1[1] = {B}, dc[2] = {B, 1};
  TF_Tensor* x[5] = {filled(TF_FLOAT, d2, 2, 1), filled(TF_INT32, d1, 1, 1), filled(TF_INT64, d1, 1, 1),
                     filled(TF_INT32, dc, 2, 0), filled(TF_INT64, dc, 2, 0)};
  TF_Output in[5];
  for (int i = 0; i < 5; i++) in[i] = (TF_Output){TF_GraphOperationByName(g, names[i]), 0};
  TF_Output out = {TF_GraphOperationByName(g, "output"), 0};
  TF_Tensor* y = NULL;
  TF_SessionRun(s, NULL, in, x, 5, &out, &y, 1, NULL, 0, NULL, status);  /* any thread */
  check("TF_SessionRun", status);
  printf("output: %s [%lld,%lld]\n", TF_TensorType(y) == TF_FLOAT ? "TF_FLOAT" : "other",
         (long long)TF_Dim(y, 0), (long long)TF_Dim(y, 1));  /* output: TF_FLOAT [4,1] */

  TF_DeleteTensor(y);
  for (int i = 0; i < 5; i++) TF_DeleteTensor(x[i]);
  TF_CloseSession(s, status);
  TF_DeleteSession(s, status);
  TF_DeleteSessionOptions(so);
  TF_DeleteImportGraphDefOptions(o);
  TF_DeleteGraph(g);
  TF_DeleteBuffer(graph_def);
  TF_DeleteBuffer(text);
  TF_DeleteStatus(status);
  return 0;
}
