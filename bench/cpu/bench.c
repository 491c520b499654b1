/* bench: CPU benchmarks of libmstream.so through the TensorFlow C API, as a
 * user program sees it. Graphs are built with TF_NewOperation & co.
 *
 *   bench chain [NODES [RUNS]]   a chain of AddV2 on scalars: us per node
 *   bench wide  [NODES [RUNS]]   NODES independent AddV2 on scalars: us per node
 *   bench matmul [N [LAYERS [RUNS]]]  LAYERS x (NxN @ NxN) float32: GFLOP/s,
 *                                next to OpenBLAS's cblas_sgemm on the same
 *                                shapes in the same process (the peer)
 *   bench copy [N [RUNS]]        feed an NxN float32 through Identity and
 *                                fetch it: the feed/fetch share of matmul
 *
 * Each prints one line "name value unit (detail)" that run_cpu.sh tabulates.
 * Times are medians over RUNS after warm-up runs. */

#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tensorflow/c/c_api.h"

static TF_Status* st;

static void check(const char* what) {
  if (TF_GetCode(st) != TF_OK) {
    fprintf(stderr, "bench: %s: code %d: %s\n", what, (int)TF_GetCode(st),
            TF_Message(st));
    exit(1);
  }
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int cmp_double(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

static double median(double* v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static TF_Operation* placeholder(TF_Graph* g, const char* name, TF_DataType dt,
                                 const int64_t* dims, int nd) {
  TF_OperationDescription* d = TF_NewOperation(g, "Placeholder", name);
  TF_SetAttrType(d, "dtype", dt);
  TF_SetAttrShape(d, "shape", dims, nd);
  TF_Operation* op = TF_FinishOperation(d, st);
  check(name);
  return op;
}

static TF_Operation* constant(TF_Graph* g, const char* name, TF_Tensor* t) {
  TF_OperationDescription* d = TF_NewOperation(g, "Const", name);
  TF_SetAttrType(d, "dtype", TF_TensorType(t));
  TF_SetAttrTensor(d, "value", t, st);
  check(name);
  TF_Operation* op = TF_FinishOperation(d, st);
  check(name);
  return op;
}

static TF_Operation* binary(TF_Graph* g, const char* type, const char* name,
                            TF_Operation* a, TF_Operation* b) {
  TF_OperationDescription* d = TF_NewOperation(g, type, name);
  TF_Output in_a = {a, 0}, in_b = {b, 0};
  TF_AddInput(d, in_a);
  TF_AddInput(d, in_b);
  TF_SetAttrType(d, "T", TF_FLOAT);
  TF_Operation* op = TF_FinishOperation(d, st);
  check(name);
  return op;
}

static TF_Tensor* scalar(float v) {
  TF_Tensor* t = TF_AllocateTensor(TF_FLOAT, NULL, 0, sizeof v);
  memcpy(TF_TensorData(t), &v, sizeof v);
  return t;
}

static TF_Session* new_session(TF_Graph* g) {
  TF_SessionOptions* o = TF_NewSessionOptions();
  TF_Session* s = TF_NewSession(g, o, st);
  TF_DeleteSessionOptions(o);
  check("TF_NewSession");
  return s;
}

static void close_session(TF_Session* s) {
  TF_CloseSession(s, st);
  check("TF_CloseSession");
  TF_DeleteSession(s, st);
  check("TF_DeleteSession");
}

/* scalar_graph times a graph of NODES AddV2 ops on scalars, chained or wide,
 * fetching the last op (chain) or running every op as a target (wide). */
static void scalar_graph(int wide, int nodes, int runs) {
  TF_Graph* g = TF_NewGraph();
  TF_Operation* x = placeholder(g, "x", TF_FLOAT, NULL, 0);
  TF_Tensor* one = scalar(1.0f);
  TF_Operation* c = constant(g, "one", one);
  TF_DeleteTensor(one);
  TF_Operation** ops = calloc((size_t)nodes, sizeof *ops);
  TF_Operation* prev = x;
  char name[32];
  for (int i = 0; i < nodes; i++) {
    snprintf(name, sizeof name, "add_%d", i);
    ops[i] = binary(g, "AddV2", name, wide ? x : prev, c);
    prev = ops[i];
  }
  TF_Session* s = new_session(g);
  TF_Output feed = {x, 0};
  TF_Tensor* xv = scalar(0.5f);
  TF_Output fetch = {prev, 0};
  double* t = calloc((size_t)runs, sizeof *t);
  for (int r = -5; r < runs; r++) {
    TF_Tensor* out = NULL;
    double t0 = now_s();
    if (wide) {
      TF_SessionRun(s, NULL, &feed, &xv, 1, NULL, NULL, 0,
                    (const TF_Operation* const*)ops, nodes, NULL, st);
    } else {
      TF_SessionRun(s, NULL, &feed, &xv, 1, &fetch, &out, 1, NULL, 0, NULL, st);
    }
    double dt = now_s() - t0;
    check("TF_SessionRun");
    if (!wide) {
      float got = *(float*)TF_TensorData(out);
      if (got != 0.5f + (float)nodes) {
        fprintf(stderr, "bench: chain result %g, want %g\n", got, 0.5 + nodes);
        exit(1);
      }
      TF_DeleteTensor(out);
    }
    if (r >= 0) t[r] = dt;
  }
  double m = median(t, runs);
  printf("%s %.3f us/node (%d nodes, median of %d runs: %.3f ms/run)\n",
         wide ? "wide" : "chain", m * 1e6 / nodes, nodes, runs, m * 1e3);
  free(t);
  free(ops);
  TF_DeleteTensor(xv);
  close_session(s);
  TF_DeleteGraph(g);
}

static void fill_random(float* p, size_t n, unsigned* seed) {
  for (size_t i = 0; i < n; i++) {
    p[i] = (float)rand_r(seed) / (float)RAND_MAX - 0.5f;
  }
}

/* matmul times LAYERS chained NxN MatMuls with Const weights, then the same
 * sgemm calls made directly on OpenBLAS. */
static void matmul(int n, int layers, int runs) {
  unsigned seed = 42;
  size_t nn = (size_t)n * (size_t)n;
  int64_t dims[2] = {n, n};
  TF_Graph* g = TF_NewGraph();
  TF_Operation* x = placeholder(g, "x", TF_FLOAT, dims, 2);
  TF_Operation* prev = x;
  float** w = calloc((size_t)layers, sizeof *w);
  char name[32];
  for (int l = 0; l < layers; l++) {
    TF_Tensor* wt = TF_AllocateTensor(TF_FLOAT, dims, 2, nn * sizeof(float));
    fill_random(TF_TensorData(wt), nn, &seed);
    /* Scale so values stay O(1) through the layers. */
    float* p = TF_TensorData(wt);
    for (size_t i = 0; i < nn; i++) p[i] *= 3.4f / (float)n;
    w[l] = malloc(nn * sizeof(float));
    memcpy(w[l], p, nn * sizeof(float));
    snprintf(name, sizeof name, "w_%d", l);
    TF_Operation* wc = constant(g, name, wt);
    TF_DeleteTensor(wt);
    snprintf(name, sizeof name, "matmul_%d", l);
    TF_OperationDescription* d = TF_NewOperation(g, "MatMul", name);
    TF_Output a = {prev, 0}, b = {wc, 0};
    TF_AddInput(d, a);
    TF_AddInput(d, b);
    TF_SetAttrType(d, "T", TF_FLOAT);
    TF_SetAttrBool(d, "transpose_a", 0);
    TF_SetAttrBool(d, "transpose_b", 0);
    prev = TF_FinishOperation(d, st);
    check(name);
  }
  TF_Session* s = new_session(g);
  TF_Tensor* xv = TF_AllocateTensor(TF_FLOAT, dims, 2, nn * sizeof(float));
  fill_random(TF_TensorData(xv), nn, &seed);
  TF_Output feed = {x, 0}, fetch = {prev, 0};
  double flop = 2.0 * (double)n * (double)n * (double)n * layers;

  /* The peer: the same products through cblas_sgemm, ping-ponging buffers.
   * Ours and the peer alternate run by run (the order flipping each time), so
   * that load from other processes on a shared machine hits both alike. */
  float* a = malloc(nn * sizeof(float));
  float* b = malloc(nn * sizeof(float));
  double* t = calloc((size_t)runs, sizeof *t);
  double* tp = calloc((size_t)runs, sizeof *tp);
  TF_Tensor* out = NULL;
  for (int r = -2; r < runs; r++) {
    for (int k = 0; k < 2; k++) {
      if ((k ^ (r & 1)) == 0) {
        if (out != NULL) TF_DeleteTensor(out);
        out = NULL;
        double t0 = now_s();
        TF_SessionRun(s, NULL, &feed, &xv, 1, &fetch, &out, 1, NULL, 0, NULL, st);
        double dt = now_s() - t0;
        check("TF_SessionRun");
        if (r >= 0) t[r] = dt;
      } else {
        memcpy(a, TF_TensorData(xv), nn * sizeof(float));
        double t0 = now_s();
        for (int l = 0; l < layers; l++) {
          cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f,
                      a, n, w[l], n, 0.0f, b, n);
          float* tmp = a;
          a = b;
          b = tmp;
        }
        double dt = now_s() - t0;
        if (r >= 0) tp[r] = dt;
      }
    }
  }
  double ours = median(t, runs);
  double peer = median(tp, runs);

  /* The two answers must agree, or the comparison means nothing. */
  const float* got = TF_TensorData(out);
  double max_err = 0, max_ref = 0;
  for (size_t i = 0; i < nn; i++) {
    double e = got[i] - a[i];
    if (e < 0) e = -e;
    if (e > max_err) max_err = e;
    double m = a[i] < 0 ? -a[i] : a[i];
    if (m > max_ref) max_ref = m;
  }
  if (max_err > 1e-3 * (max_ref > 1 ? max_ref : 1)) {
    fprintf(stderr, "bench: matmul differs from sgemm by %g (max |ref| %g)\n",
            max_err, max_ref);
    exit(1);
  }
  printf("matmul %.1f GFLOP/s (%d x %dx%d, median %.1f ms/run)\n",
         flop / ours / 1e9, layers, n, n, ours * 1e3);
  printf("sgemm %.1f GFLOP/s (OpenBLAS %s, %d threads, median %.1f ms/run)\n",
         flop / peer / 1e9, openblas_get_config(), openblas_get_num_threads(),
         peer * 1e3);
  printf("ratio %.1f %% of sgemm\n", 100 * peer / ours);
  TF_DeleteTensor(out);
  free(a);
  free(b);
  for (int l = 0; l < layers; l++) free(w[l]);
  free(w);
  free(t);
  free(tp);
  TF_DeleteTensor(xv);
  close_session(s);
  TF_DeleteGraph(g);
}

/* copy times feeding an NxN float32 tensor through one Identity and fetching
 * it: the cost of a Run's feed and fetch copies alone, which the MatMul graph
 * pays on top of its GEMMs (one feed, one fetch). */
static void copy_graph(int n, int runs) {
  unsigned seed = 7;
  size_t nn = (size_t)n * (size_t)n;
  int64_t dims[2] = {n, n};
  TF_Graph* g = TF_NewGraph();
  TF_Operation* x = placeholder(g, "x", TF_FLOAT, dims, 2);
  TF_OperationDescription* d = TF_NewOperation(g, "Identity", "y");
  TF_Output in = {x, 0};
  TF_AddInput(d, in);
  TF_SetAttrType(d, "T", TF_FLOAT);
  TF_Operation* y = TF_FinishOperation(d, st);
  check("y");
  TF_Session* s = new_session(g);
  TF_Tensor* xv = TF_AllocateTensor(TF_FLOAT, dims, 2, nn * sizeof(float));
  fill_random(TF_TensorData(xv), nn, &seed);
  TF_Output feed = {x, 0}, fetch = {y, 0};
  double* t = calloc((size_t)runs, sizeof *t);
  for (int r = -2; r < runs; r++) {
    TF_Tensor* out = NULL;
    double t0 = now_s();
    TF_SessionRun(s, NULL, &feed, &xv, 1, &fetch, &out, 1, NULL, 0, NULL, st);
    double dt = now_s() - t0;
    check("TF_SessionRun");
    if (memcmp(TF_TensorData(out), TF_TensorData(xv), nn * sizeof(float)) != 0) {
      fprintf(stderr, "bench: copy: fetched tensor differs from the feed\n");
      exit(1);
    }
    TF_DeleteTensor(out);
    if (r >= 0) t[r] = dt;
  }
  double m = median(t, runs);
  printf("copy %.2f ms/run (feed + Identity + fetch of %dx%d float32, %.1f MiB, median of %d runs)\n",
         m * 1e3, n, n, (double)(nn * sizeof(float)) / (1 << 20), runs);
  free(t);
  TF_DeleteTensor(xv);
  close_session(s);
  TF_DeleteGraph(g);
}

static int arg(int argc, char** argv, int i, int def) {
  return argc > i ? atoi(argv[i]) : def;
}

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr,
            "usage: bench chain|wide [NODES [RUNS]] | matmul [N [LAYERS [RUNS]]] |"
            " copy [N [RUNS]]\n");
    return 2;
  }
  st = TF_NewStatus();
  if (strcmp(argv[1], "chain") == 0) {
    scalar_graph(0, arg(argc, argv, 2, 1000), arg(argc, argv, 3, 200));
  } else if (strcmp(argv[1], "wide") == 0) {
    scalar_graph(1, arg(argc, argv, 2, 1000), arg(argc, argv, 3, 200));
  } else if (strcmp(argv[1], "copy") == 0) {
    copy_graph(arg(argc, argv, 2, 1024), arg(argc, argv, 3, 50));
  } else if (strcmp(argv[1], "matmul") == 0) {
    matmul(arg(argc, argv, 2, 1024), arg(argc, argv, 3, 4), arg(argc, argv, 4, 10));
  } else {
    fprintf(stderr, "bench: unknown benchmark %s\n", argv[1]);
    return 2;
  }
  TF_DeleteStatus(st);
  return 0;
}
