/* TF_LoadSessionFromSavedModel on SavedModels written by TF 2.15's
 * tf.compat.v1.saved_model.Builder (test/savedmodel/gen.py): a binary
 * saved_model.pb over ref variables and a saved_model.pbtxt over resource
 * variables with two tags; and TF's own half_plus_two test data (tf/). Each
 * is loaded, its serving signature run on TF's
 * inputs, and the outputs compared with TF's (test/savedmodel/<name>.txt);
 * meta_graph_def is filled in the caller's buffer; a missing directory and
 * unknown tags are NOT_FOUND naming the directory or listing the tag sets. */
#define _GNU_SOURCE /* memmem */
#include <math.h>
#include <stdio.h>
#include "util.h"

static char dir[4096];

/* Reads "rows cols\nvalues" twice (input, output) from test/savedmodel/NAME.txt. */
static int read_expect(const char* name, int64_t in_dims[2], float** in, int64_t out_dims[2], float** out) {
  char path[4200];
  snprintf(path, sizeof path, "%s/%s.txt", dir, name);
  FILE* f = fopen(path, "r");
  if (!f) return 0;
  int64_t* dims[2] = {in_dims, out_dims};
  float** vals[2] = {in, out};
  for (int k = 0; k < 2; k++) {
    long r, c;
    if (fscanf(f, "%ld %ld", &r, &c) != 2) { fclose(f); return 0; }
    dims[k][0] = r, dims[k][1] = c;
    *vals[k] = malloc(sizeof(float) * r * c);
    for (long i = 0; i < r * c; i++) {
      double v;
      if (fscanf(f, "%lf", &v) != 1) { fclose(f); return 0; }
      (*vals[k])[i] = (float)v;
    }
  }
  fclose(f);
  return 1;
}

static void test_model(const char* name, const char* const* tags, int ntags) {
  int64_t in_dims[2], out_dims[2];
  float *in = NULL, *want = NULL;
  CHECK(read_expect(name, in_dims, &in, out_dims, &want), "reading %s.txt", name);
  if (!in || !want) return;
  char path[4200];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  TF_Status* s = TF_NewStatus();
  TF_Graph* g = TF_NewGraph();
  TF_SessionOptions* so = TF_NewSessionOptions();
  TF_Buffer* mg = TF_NewBuffer();
  TF_Session* sess = TF_LoadSessionFromSavedModel(so, NULL, path, tags, ntags, g, mg, s);
  CHECK_OK(s, name);
  CHECK(mg->length > 0 && memmem(mg->data, mg->length, "serving_default", 15) != NULL, "%s: meta_graph_def of %zu bytes", name, mg->length);
  if (sess) {
    TF_Output x = out0(g, "x"), y = out0(g, "y");
    CHECK(x.oper && y.oper, "%s: signature tensors", name);
    TF_Operation* w1 = TF_GraphOperationByName(g, "w1");
    if (w1 && strcmp(TF_OperationOpType(w1), "VariableV2") == 0) {
      /* A ref variable's output is DT_FLOAT_REF, as TF's C API reports it. */
      TF_Output v = {w1, 0};
      CHECK(TF_OperationOutputType(v) == TF_FLOAT + 100, "%s: w1's output type %d", name, TF_OperationOutputType(v));
    }
    TF_Tensor* t = TF_AllocateTensor(TF_FLOAT, in_dims, 2, sizeof(float) * in_dims[0] * in_dims[1]);
    memcpy(TF_TensorData(t), in, TF_TensorByteSize(t));
    TF_Tensor* out = NULL;
    TF_SessionRun(sess, NULL, &x, &t, 1, &y, &out, 1, NULL, 0, NULL, s);
    CHECK_OK(s, "run");
    if (out) {
      CHECK(TF_NumDims(out) == 2 && TF_Dim(out, 0) == out_dims[0] && TF_Dim(out, 1) == out_dims[1], "%s: output shape", name);
      const float* got = TF_TensorData(out);
      int bad = 0;
      /* 1e-5 on the CPU; a GPU's TF32 GEMMs (TF's default there) agree to
         about 1e-3 of the output's scale, and the test runs on either. */
      for (int64_t i = 0; i < out_dims[0] * out_dims[1]; i++) bad += fabsf(got[i] - want[i]) > 2e-3f * fmaxf(1, fabsf(want[i]));
      CHECK(bad == 0, "%s: %d outputs differ from TF's", name, bad);
      TF_DeleteTensor(out);
    }
    TF_DeleteTensor(t);
    TF_CloseSession(sess, s);
    TF_DeleteSession(sess, s);
  }
  TF_DeleteBuffer(mg);
  TF_DeleteSessionOptions(so);
  TF_DeleteGraph(g);
  TF_DeleteStatus(s);
  free(in);
  free(want);
}

static void test_errors(void) {
  TF_Status* s = TF_NewStatus();
  TF_SessionOptions* so = TF_NewSessionOptions();
  const char* serve[] = {"serve"};
  char path[4200];
  snprintf(path, sizeof path, "%s/no_such_model", dir);
  TF_Graph* g = TF_NewGraph();
  CHECK(TF_LoadSessionFromSavedModel(so, NULL, path, serve, 1, g, NULL, s) == NULL, "missing dir loads");
  CHECK_ERR(s, TF_NOT_FOUND, "no_such_model", "missing directory");
  snprintf(path, sizeof path, "%s/mlp_resource", dir);
  CHECK(TF_LoadSessionFromSavedModel(so, NULL, path, serve, 1, g, NULL, s) == NULL, "wrong tags load");
  /* TF's message names the tags asked for; mstream's names the tag sets
     there too. */
#ifndef MS_ON_TF
  CHECK(strstr(TF_Message(s), "{ gpu serve }") != NULL, "wrong tags: the sets there: %s", TF_Message(s));
#endif
  CHECK_ERR(s, TF_NOT_FOUND, "matching supplied tags: { serve }", "wrong tags");
  TF_DeleteGraph(g);
  TF_DeleteSessionOptions(so);
  TF_DeleteStatus(s);
}

int main(void) {
  /* The SavedModels sit beside this file's directory: test/savedmodel. */
  snprintf(dir, sizeof dir, "%s", __FILE__);
  char* slash = strrchr(dir, '/');
  if (slash) *slash = 0; else strcpy(dir, ".");
  strncat(dir, "/../savedmodel", sizeof dir - strlen(dir) - 1);
  const char* serve[] = {"serve"};
  const char* serve_gpu[] = {"gpu", "serve"};
  test_model("mlp_ref", serve, 1);
  test_model("mlp_resource", serve_gpu, 2);
  test_model("tf/half_plus_two/00000123", serve, 1);       /* TF's own test data */
  test_model("tf/half_plus_two_main_op/00000123", serve, 1);
  test_errors();
  return DONE();
}
