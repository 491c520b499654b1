/* loadgen_ort: bench/gpu/loadgen.c's closed-loop load (closedloop.h) on
 * ONNX Runtime's C API, so that ORT is measured through the same client as
 * mstream and TF (bench/cpu/vs_tf.sh).
 *
 *   loadgen_ort MODEL.onnx BATCHES THREADS DUR INTRA OPT [INPUTS]
 *
 * MODEL is bench/cpu/peers.py's tf2onnx conversion of a GraphDef. INTRA is
 * the session's intra-op threads (the ConfigProto's
 * intra_op_parallelism_threads that mstream and TF get); inter-op threads 1
 * and sequential execution, ORT's default mode, in which inter-op threads
 * are unused. OPT is "all" (ORT_ENABLE_ALL, ORT's default) or "none"
 * (ORT_DISABLE_ALL, for the *_noopt models, whose ConfigProto turns TF's
 * optimizer off). INPUTS, a comma list of the GraphDef's Placeholder names
 * in loadgen's feed order (TF_GraphNextOperation's), maps them onto ORT's
 * inputs (tf2onnx names them "x:0"); without it ORT's order is used. Every
 * output of the model is fetched (a GraphDef whose "output" is a NoOp was
 * converted with what it groups as outputs); OUTPUT_DUMP writes the first. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../gpu/closedloop.h"
#include "onnxruntime_c_api.h"

#define MAX_INPUTS 8

static const OrtApi* ort;

static void check(const char* what, OrtStatus* st) {
  if (st) {
    fprintf(stderr, "loadgen_ort: %s: %s\n", what, ort->GetErrorMessage(st));
    ort->ReleaseStatus(st);
    exit(1);
  }
}

typedef struct {
  OrtSession* sess;
  OrtMemoryInfo* mem;
  int n_in, n_out;
  char* in_name[MAX_INPUTS];
  ONNXTensorElementDataType in_type[MAX_INPUTS];
  int64_t in_dims[MAX_INPUTS][8];
  size_t in_nd[MAX_INPUTS];
  char** out_name;
  OrtValue* (*feeds)[MAX_INPUTS]; /* per client */
  void* (*data)[MAX_INPUTS];
} Model;

static ClType cl_type(ONNXTensorElementDataType t, size_t* size) {
  switch (t) {
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT: *size = 4; return CL_F32;
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT32: *size = 4; return CL_I32;
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64: *size = 8; return CL_I64;
    default: fprintf(stderr, "loadgen_ort: input element type %d not supported\n", (int)t); exit(1);
  }
}

static int prepare(void* ctx, int batch, int clients) {
  Model* m = ctx;
  for (int i = 0; i < clients; i++) {
    unsigned seed = cl_seed(i, batch);
    for (int k = 0; k < m->n_in; k++) {
      int64_t dims[8], n = 1;
      for (size_t d = 0; d < m->in_nd[k]; d++) {
        dims[d] = m->in_dims[k][d] < 0 ? batch : m->in_dims[k][d];
        n *= dims[d];
      }
      size_t esize;
      ClType t = cl_type(m->in_type[k], &esize);
      m->data[i][k] = malloc((size_t)n * esize + 1);
      cl_fill(t, m->data[i][k], n, &seed);
      check("input tensor", ort->CreateTensorWithDataAsOrtValue(m->mem, m->data[i][k], (size_t)n * esize, dims, m->in_nd[k],
                                                                m->in_type[k], &m->feeds[i][k]));
    }
  }
  return 0;
}

static void release(void* ctx, int batch, int clients) {
  Model* m = ctx;
  (void)batch;
  for (int i = 0; i < clients; i++)
    for (int k = 0; k < m->n_in; k++) {
      ort->ReleaseValue(m->feeds[i][k]);
      free(m->data[i][k]);
    }
}

static int request(void* ctx, int client, const char* dump) {
  Model* m = ctx;
  OrtValue* outs[m->n_out];
  memset(outs, 0, sizeof outs);
  OrtStatus* st = ort->Run(m->sess, NULL, (const char* const*)m->in_name, (const OrtValue* const*)m->feeds[client], (size_t)m->n_in,
                           (const char* const*)m->out_name, (size_t)m->n_out, outs);
  if (st) {
    fprintf(stderr, "loadgen_ort: run: %s\n", ort->GetErrorMessage(st));
    ort->ReleaseStatus(st);
    return -1;
  }
  if (dump) {
    void* p;
    OrtTensorTypeAndShapeInfo* info;
    size_t n;
    ONNXTensorElementDataType t;
    check("output data", ort->GetTensorMutableData(outs[0], &p));
    check("output shape", ort->GetTensorTypeAndShape(outs[0], &info));
    check("output size", ort->GetTensorShapeElementCount(info, &n));
    check("output type", ort->GetTensorElementType(info, &t));
    ort->ReleaseTensorTypeAndShapeInfo(info);
    size_t esize;
    switch (t) {
      case ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT: case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT32:
      case ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT32: esize = 4; break;
      case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64: case ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT64:
      case ONNX_TENSOR_ELEMENT_DATA_TYPE_DOUBLE: esize = 8; break;
      case ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT16: case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT16:
      case ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT16: esize = 2; break;
      case ONNX_TENSOR_ELEMENT_DATA_TYPE_BOOL: case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT8:
      case ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT8: esize = 1; break;
      default: fprintf(stderr, "loadgen_ort: output element type %d not supported\n", (int)t); return -1;
    }
    cl_dump(dump, p, n * esize);
  }
  for (int i = 0; i < m->n_out; i++) ort->ReleaseValue(outs[i]);
  return 0;
}

/* input_index finds want ("x") among ORT's inputs ("x:0" or "x"). */
static int input_index(char** names, int n, const char* want) {
  size_t len = strlen(want);
  for (int i = 0; i < n; i++)
    if (strncmp(names[i], want, len) == 0 && (names[i][len] == '\0' || strcmp(names[i] + len, ":0") == 0)) return i;
  fprintf(stderr, "loadgen_ort: the model has no input %s\n", want);
  exit(1);
}

int main(int argc, char** argv) {
  if (argc < 7) {
    fprintf(stderr, "usage: loadgen_ort MODEL.onnx BATCHES THREADS DUR INTRA all|none [INPUTS]\n");
    return 2;
  }
  ort = OrtGetApiBase()->GetApi(ORT_API_VERSION);
  if (!ort) {
    fprintf(stderr, "loadgen_ort: the library does not serve ORT API version %d (%s)\n", ORT_API_VERSION,
            OrtGetApiBase()->GetVersionString());
    return 1;
  }
  OrtEnv* env;
  check("env", ort->CreateEnv(ORT_LOGGING_LEVEL_WARNING, "loadgen_ort", &env));
  OrtSessionOptions* so;
  check("options", ort->CreateSessionOptions(&so));
  check("intra-op threads", ort->SetIntraOpNumThreads(so, atoi(argv[5])));
  check("inter-op threads", ort->SetInterOpNumThreads(so, 1));
  check("execution mode", ort->SetSessionExecutionMode(so, ORT_SEQUENTIAL));
  check("optimization level", ort->SetSessionGraphOptimizationLevel(so, strcmp(argv[6], "none") == 0 ? ORT_DISABLE_ALL : ORT_ENABLE_ALL));
  Model m = {0};
  check("session", ort->CreateSession(env, argv[1], so, &m.sess));
  OrtAllocator* alloc;
  check("allocator", ort->GetAllocatorWithDefaultOptions(&alloc));
  size_t n;
  check("inputs", ort->SessionGetInputCount(m.sess, &n));
  if (n == 0 || n > MAX_INPUTS) {
    fprintf(stderr, "loadgen_ort: %zu inputs (1..%d supported)\n", n, MAX_INPUTS);
    return 1;
  }
  char* names[MAX_INPUTS];
  for (size_t i = 0; i < n; i++) check("input name", ort->SessionGetInputName(m.sess, i, alloc, &names[i]));
  m.n_in = (int)n;
  /* order[k]: ORT's index of loadgen's k-th input. */
  int order[MAX_INPUTS];
  for (int k = 0; k < m.n_in; k++) order[k] = k;
  if (argc > 7) {
    const char* s = argv[7];
    for (int k = 0; k < m.n_in; k++) {
      char want[512];
      const char* c = strchr(s, ',');
      size_t len = c ? (size_t)(c - s) : strlen(s);
      if (len == 0 || len >= sizeof want) {
        fprintf(stderr, "loadgen_ort: INPUTS names %d inputs, the model has %d\n", k, m.n_in);
        return 1;
      }
      memcpy(want, s, len);
      want[len] = '\0';
      order[k] = input_index(names, m.n_in, want);
      s = c ? c + 1 : s + len;
    }
  }
  for (int k = 0; k < m.n_in; k++) {
    int j = order[k];
    m.in_name[k] = names[j];
    OrtTypeInfo* ti;
    const OrtTensorTypeAndShapeInfo* tti;
    check("input type", ort->SessionGetInputTypeInfo(m.sess, (size_t)j, &ti));
    check("input tensor type", ort->CastTypeInfoToTensorInfo(ti, &tti));
    check("input element type", ort->GetTensorElementType(tti, &m.in_type[k]));
    check("input rank", ort->GetDimensionsCount(tti, &m.in_nd[k]));
    if (m.in_nd[k] > 8) {
      fprintf(stderr, "loadgen_ort: input %s has rank %zu\n", names[j], m.in_nd[k]);
      return 1;
    }
    check("input dims", ort->GetDimensions(tti, m.in_dims[k], m.in_nd[k]));
    ort->ReleaseTypeInfo(ti);
  }
  check("outputs", ort->SessionGetOutputCount(m.sess, &n));
  m.n_out = (int)n;
  m.out_name = calloc(n, sizeof *m.out_name);
  for (size_t i = 0; i < n; i++) check("output name", ort->SessionGetOutputName(m.sess, i, alloc, &m.out_name[i]));
  check("memory info", ort->CreateCpuMemoryInfo(OrtArenaAllocator, OrtMemTypeDefault, &m.mem));
  m.feeds = calloc(CL_MAX_THREADS, sizeof *m.feeds);
  m.data = calloc(CL_MAX_THREADS, sizeof *m.data);
  ClBackend be = {prepare, request, release, 1};
  int rc = cl_run(&be, &m, argv[2], argv[3], atof(argv[4]));
  for (int i = 0; i < m.n_in; i++) check("free", ort->AllocatorFree(alloc, names[i]));
  for (int i = 0; i < m.n_out; i++) check("free", ort->AllocatorFree(alloc, m.out_name[i]));
  free(m.out_name);
  free(m.feeds);
  free(m.data);
  ort->ReleaseMemoryInfo(m.mem);
  ort->ReleaseSession(m.sess);
  ort->ReleaseSessionOptions(so);
  ort->ReleaseEnv(env);
  return rc;
}
