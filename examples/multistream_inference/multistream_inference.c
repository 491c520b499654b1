/* multistream_inference: run a frozen GraphDef through the TensorFlow C API
 * from one thread, then from several threads sharing one session, and report
 * throughput and latency. The command line mirrors NVIDIA's Multiple Stream
 * TensorFlow example:
 *
 *   multistream_inference MODEL N_IN IN_NAME... N_OUT OUT_NAME...
 *                         [BATCH [ITERS [THREADS [CONFIG]]]]
 *
 * MODEL is a binary (.pb) or text (.pbtxt) GraphDef, or a SavedModel
 * directory (its "serve" MetaGraphDef); CONFIG a binary or text
 * ConfigProto. Inputs are random, shaped from each placeholder's static shape:
 * the first unknown dimension becomes BATCH, any other unknown one becomes 1.
 * Integer inputs that feed a GatherV2 as indices stay below the table's row
 * count; other integers stay below 100.
 *
 * After each phase it prints which stream groups served that phase's runs
 * and how many each (TF_GPU_STREAM_GROUP_COUNT sets the groups), read from
 * MS_SessionStats.
 *
 * Only the standard TF C API is used, plus the two MS_ text-format helpers
 * and MS_SessionStats (a weak reference: against TensorFlow's libtensorflow
 * the group report is skipped), so the same source builds against
 * TensorFlow when the helpers are replaced by binary files. */

#include <inttypes.h>
#include <pthread.h>
#include <sys/stat.h>

#define EXAMPLE "multistream_inference"
#include "../common.h"

#define DEFAULT_BATCH 16
#define DEFAULT_ITERS 1000
#define DEFAULT_THREADS 4
#define WARMUP_RUNS 10
#define DEFAULT_ID_RANGE 100
#define PRINT_VALUES 32

typedef struct {
  TF_Session* session;
  TF_Output* inputs;
  TF_Tensor** input_values;
  int n_in;
  TF_Output* outputs;
  int n_out;
  int iters;
  double* latencies_ms; /* iters entries, filled by the worker */
  int failed;
} Worker;

/* dtype_name is the C API's name of the dtypes this example prints. */
static const char* dtype_name(TF_DataType t) {
  switch (t) {
    case TF_FLOAT: return "TF_FLOAT";
    case TF_DOUBLE: return "TF_DOUBLE";
    case TF_INT32: return "TF_INT32";
    case TF_INT64: return "TF_INT64";
    case TF_BOOL: return "TF_BOOL";
    case TF_HALF: return "TF_HALF";
    case TF_UINT8: return "TF_UINT8";
    case TF_INT8: return "TF_INT8";
    case TF_STRING: return "TF_STRING";
    default: return "TF_DataType?";
  }
}

static void usage(void) {
  fprintf(stderr,
          "usage: multistream_inference MODEL N_IN IN_NAME... N_OUT "
          "OUT_NAME... [BATCH [ITERS [THREADS [CONFIG]]]]\n"
          "  MODEL   GraphDef, binary (.pb) or text (.pbtxt), or a SavedModel directory\n"
          "  BATCH   replaces the first -1 dimension of each input (default "
          "%d)\n"
          "  ITERS   runs per phase and per thread (default %d)\n"
          "  THREADS threads sharing one session in the second phase "
          "(default %d)\n"
          "  CONFIG  ConfigProto, binary or text\n",
          DEFAULT_BATCH, DEFAULT_ITERS, DEFAULT_THREADS);
  exit(2);
}

/* parse_output turns "name" or "name:index" into a TF_Output. */
static TF_Output parse_output(TF_Graph* g, const char* spec) {
  char name[1024];
  int index = 0;
  snprintf(name, sizeof name, "%s", spec);
  char* colon = strrchr(name, ':');
  if (colon != NULL) {
    char* end;
    long v = strtol(colon + 1, &end, 10);
    if (*end == '\0' && end != colon + 1 && v >= 0) {
      *colon = '\0';
      index = (int)v;
    }
  }
  TF_Operation* op = TF_GraphOperationByName(g, name);
  if (op == NULL) die("no operation named '%s' in the graph", name);
  if (index >= TF_OperationNumOutputs(op)) die("'%s': no such output", spec);
  TF_Output out = {op, index};
  return out;
}

/* id_range bounds random integers fed to an input: the smallest row count
 * of the GatherV2 params it indexes, else DEFAULT_ID_RANGE. */
static int64_t id_range(TF_Graph* g, TF_Output in, TF_Status* s) {
  int64_t range = -1;
  int n = TF_OperationOutputNumConsumers(in);
  if (n <= 0) return DEFAULT_ID_RANGE;
  TF_Input* consumers = calloc((size_t)n, sizeof *consumers);
  n = TF_OperationOutputConsumers(in, consumers, n);
  for (int i = 0; i < n; i++) {
    const char* type = TF_OperationOpType(consumers[i].oper);
    if (consumers[i].index != 1 ||
        (strcmp(type, "GatherV2") != 0 && strcmp(type, "Gather") != 0)) {
      continue;
    }
    TF_Input params_in = {consumers[i].oper, 0};
    TF_Output params = TF_OperationInput(params_in);
    int nd = TF_GraphGetTensorNumDims(g, params, s);
    if (TF_GetCode(s) != TF_OK || nd < 1) continue;
    int64_t* dims = calloc((size_t)nd, sizeof *dims);
    TF_GraphGetTensorShape(g, params, dims, nd, s);
    if (TF_GetCode(s) == TF_OK && dims[0] > 0 &&
        (range < 0 || dims[0] < range)) {
      range = dims[0];
    }
    free(dims);
  }
  free(consumers);
  TF_SetStatus(s, TF_OK, "");
  return range > 0 ? range : DEFAULT_ID_RANGE;
}

/* make_input returns a random tensor for a placeholder. */
static TF_Tensor* make_input(TF_Graph* g, TF_Output in, int batch,
                             unsigned* seed, TF_Status* s) {
  const char* name = TF_OperationName(in.oper);
  TF_DataType dt = TF_OperationOutputType(in);
  int nd = TF_GraphGetTensorNumDims(g, in, s);
  check(name, s);
  int64_t* dims = NULL;
  if (nd < 0) {
    /* Unknown rank: feed a vector of BATCH. */
    nd = 1;
    dims = calloc(1, sizeof *dims);
    dims[0] = -1;
  } else {
    dims = calloc(nd > 0 ? (size_t)nd : 1, sizeof *dims);
    TF_GraphGetTensorShape(g, in, dims, nd, s);
    check(name, s);
  }
  int batched = 0;
  int64_t count = 1;
  for (int i = 0; i < nd; i++) {
    if (dims[i] < 0) {
      dims[i] = batched ? 1 : batch;
      batched = 1;
    }
    count *= dims[i];
  }
  size_t elem = TF_DataTypeSize(dt);
  if (elem == 0) die("input '%s': only fixed-size dtypes are supported", name);
  TF_Tensor* t = TF_AllocateTensor(dt, dims, nd, (size_t)count * elem);
  free(dims);
  if (t == NULL) die("input '%s': TF_AllocateTensor failed", name);
  void* p = TF_TensorData(t);
  int64_t range = 0;
  if (dt == TF_INT32 || dt == TF_INT64 || dt == TF_INT16 || dt == TF_INT8 ||
      dt == TF_UINT8 || dt == TF_UINT16 || dt == TF_UINT32 ||
      dt == TF_UINT64) {
    range = id_range(g, in, s);
    if (dt == TF_INT8 && range > 128) range = 128;
    if (dt == TF_UINT8 && range > 256) range = 256;
  }
  for (int64_t i = 0; i < count; i++) {
    double u = (double)rand_r(seed) / ((double)RAND_MAX + 1.0);
    int64_t id = range > 0 ? (int64_t)(u * (double)range) : 0;
    switch (dt) {
      case TF_FLOAT: ((float*)p)[i] = (float)(2 * u - 1); break;
      case TF_DOUBLE: ((double*)p)[i] = 2 * u - 1; break;
      case TF_INT32: ((int32_t*)p)[i] = (int32_t)id; break;
      case TF_INT64: ((int64_t*)p)[i] = id; break;
      case TF_INT16: ((int16_t*)p)[i] = (int16_t)id; break;
      case TF_INT8: ((int8_t*)p)[i] = (int8_t)id; break;
      case TF_UINT8: ((uint8_t*)p)[i] = (uint8_t)id; break;
      case TF_UINT16: ((uint16_t*)p)[i] = (uint16_t)id; break;
      case TF_UINT32: ((uint32_t*)p)[i] = (uint32_t)id; break;
      case TF_UINT64: ((uint64_t*)p)[i] = (uint64_t)id; break;
      case TF_BOOL: ((unsigned char*)p)[i] = u < 0.5; break;
      default: memset((char*)p + i * elem, 0, elem); break;
    }
  }
  return t;
}

/* run_once runs the session once and frees the outputs unless kept. */
static int run_once(Worker* w, TF_Tensor** keep, TF_Status* s) {
  TF_Tensor** out = calloc((size_t)w->n_out, sizeof *out);
  TF_SessionRun(w->session, NULL, w->inputs, w->input_values, w->n_in,
                w->outputs, out, w->n_out, NULL, 0, NULL, s);
  int ok = TF_GetCode(s) == TF_OK;
  for (int i = 0; i < w->n_out; i++) {
    if (ok && keep != NULL && i == 0) {
      *keep = out[i];
    } else {
      TF_DeleteTensor(out[i]);
    }
  }
  free(out);
  return ok;
}

static void* worker_main(void* arg) {
  Worker* w = arg;
  TF_Status* s = TF_NewStatus();
  for (int i = 0; i < w->iters; i++) {
    double t0 = 1e3 * now_s();
    if (!run_once(w, NULL, s)) {
      fprintf(stderr, "multistream_inference: TF_SessionRun: %s: %s\n",
              code_name(TF_GetCode(s)), TF_Message(s));
      w->failed = 1;
      break;
    }
    w->latencies_ms[i] = 1e3 * now_s() - t0;
  }
  TF_DeleteStatus(s);
  return NULL;
}

static int cmp_double(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

/* percentile returns the smallest latency at or above fraction q of runs. */
static double percentile(const double* sorted, int n, double q) {
  int k = (int)((double)n * q + 0.999999) - 1;
  if (k < 0) k = 0;
  if (k >= n) k = n - 1;
  return sorted[k];
}

static void report(const char* phase, int threads, double* lat, int n,
                   double wall_ms, int batch) {
  qsort(lat, (size_t)n, sizeof *lat, cmp_double);
  double sum = 0;
  for (int i = 0; i < n; i++) sum += lat[i];
  double qps = (double)n / (wall_ms / 1e3);
  printf("%s: threads=%d runs=%d batch=%d wall=%.1f ms\n", phase, threads, n,
         batch, wall_ms);
  printf("  QPS %.1f (%.0f samples/s)\n", qps, qps * batch);
  printf("  latency ms: TP99 %.3f  TP95 %.3f  mean %.3f\n",
         percentile(lat, n, 0.99), percentile(lat, n, 0.95), sum / n);
}

/* report_groups prints, per device whose groups served runs since
 * `before`, how many runs each of its groups served (a session on a GPU
 * also has the host's group, which serves no runs then); when several
 * devices served (MSTREAM_GPU_POOL on a host with two GPUs), a last line
 * gives the runs per device. */
static void report_groups(TF_Session* session, const GroupStats* before, int nb) {
  GroupStats now[MAX_GROUPS];
  int n = group_stats(session, now, MAX_GROUPS);
  if (n < 0) return;
  int serving = 0, firsts[MAX_GROUPS];
  long long totals[MAX_GROUPS];
  for (int g = 0; g < n; g++) {
    int first = 1;
    for (int h = 0; h < g; h++) first &= strcmp(now[h].device, now[g].device) != 0;
    if (!first) continue;
    int used = 0, total = 0;
    long long runs = 0;
    for (int h = g; h < n; h++) {
      if (strcmp(now[h].device, now[g].device) != 0) continue;
      long long r = now[h].runs - (h < nb ? before[h].runs : 0);
      total++;
      used += r > 0;
      runs += r;
    }
    if (runs == 0) continue;
    const char* dev = now[g].device;
    const char* shortname = strstr(dev, "device:");
    printf("  stream groups: %d of %d on %s served runs:", used, total,
           shortname ? shortname + strlen("device:") : dev[0] ? dev : "?");
    for (int h = g, i = 0; h < n; h++) {
      if (strcmp(now[h].device, dev) != 0) continue;
      printf(" group%d=%lld", i++, now[h].runs - (h < nb ? before[h].runs : 0));
    }
    printf("\n");
    firsts[serving] = g;
    totals[serving++] = runs;
  }
  if (serving < 2) return;
  printf("  runs per device:");
  for (int i = 0; i < serving; i++) {
    const char* name = now[firsts[i]].device;
    const char* shortname = strstr(name, "device:");
    printf(" %s=%lld", shortname ? shortname + strlen("device:") : name, totals[i]);
  }
  printf("\n");
}

/* phase runs ITERS runs on each of THREADS threads and reports. */
static void phase(const char* name, Worker* proto, int threads, int batch) {
  GroupStats before[MAX_GROUPS];
  int nb = group_stats(proto->session, before, MAX_GROUPS);
  Worker* ws = calloc((size_t)threads, sizeof *ws);
  pthread_t* tids = calloc((size_t)threads, sizeof *tids);
  double* lat = calloc((size_t)threads * (size_t)proto->iters, sizeof *lat);
  for (int t = 0; t < threads; t++) {
    ws[t] = *proto;
    ws[t].latencies_ms = lat + (size_t)t * (size_t)proto->iters;
  }
  double t0 = 1e3 * now_s();
  for (int t = 0; t < threads; t++) {
    int rc = pthread_create(&tids[t], NULL, worker_main, &ws[t]);
    if (rc != 0) die("pthread_create: %s", strerror(rc));
  }
  int failed = 0;
  for (int t = 0; t < threads; t++) {
    pthread_join(tids[t], NULL);
    failed |= ws[t].failed;
  }
  double wall = 1e3 * now_s() - t0;
  if (failed) exit(1);
  report(name, threads, lat, threads * proto->iters, wall, batch);
  report_groups(proto->session, before, nb);
  free(lat);
  free(tids);
  free(ws);
}

static void print_values(const char* name, TF_Tensor* t) {
  int nd = TF_NumDims(t);
  printf("first output '%s': dtype %s shape [", name, dtype_name(TF_TensorType(t)));
  for (int i = 0; i < nd; i++) {
    printf("%s%" PRId64, i ? "," : "", TF_Dim(t, i));
  }
  printf("]\n ");
  int64_t n = TF_TensorElementCount(t);
  if (n > PRINT_VALUES) n = PRINT_VALUES;
  const void* p = TF_TensorData(t);
  for (int64_t i = 0; i < n; i++) {
    switch (TF_TensorType(t)) {
      case TF_FLOAT: printf(" %.6g", ((const float*)p)[i]); break;
      case TF_DOUBLE: printf(" %.6g", ((const double*)p)[i]); break;
      case TF_INT32: printf(" %" PRId32, ((const int32_t*)p)[i]); break;
      case TF_INT64: printf(" %" PRId64, ((const int64_t*)p)[i]); break;
      case TF_BOOL: printf(" %d", ((const unsigned char*)p)[i]); break;
      default: printf(" ?"); break;
    }
  }
  printf("\n");
}

static int parse_int(const char* s, const char* what) {
  char* end;
  long v = strtol(s, &end, 10);
  if (*s == '\0' || *end != '\0' || v <= 0 || v > 1000000000) {
    die("bad %s", what);
  }
  return (int)v;
}

int main(int argc, char** argv) {
  if (argc < 4) usage();
  int a = 1;
  const char* model = argv[a++];
  int n_in = atoi(argv[a++]);
  if (n_in < 0 || a + n_in >= argc) usage();
  char** in_names = argv + a;
  a += n_in;
  int n_out = atoi(argv[a++]);
  if (n_out < 1 || a + n_out > argc) usage();
  char** out_names = argv + a;
  a += n_out;
  int batch = a < argc ? parse_int(argv[a++], "BATCH") : DEFAULT_BATCH;
  int iters = a < argc ? parse_int(argv[a++], "ITERS") : DEFAULT_ITERS;
  int threads = a < argc ? parse_int(argv[a++], "THREADS") : DEFAULT_THREADS;
  const char* config = a < argc ? argv[a++] : NULL;
  if (a != argc) usage();

  TF_Status* s = TF_NewStatus();

  TF_SessionOptions* opts = TF_NewSessionOptions();
  if (config != NULL) {
    TF_Buffer* cfg = load_proto(config, 0, s);
    TF_SetConfig(opts, cfg->data, cfg->length, s);
    TF_DeleteBuffer(cfg);
    check(config, s);
  }
  TF_Graph* graph = TF_NewGraph();
  TF_Session* session;
  struct stat st;
  if (stat(model, &st) == 0 && S_ISDIR(st.st_mode)) {
    /* A SavedModel directory: its "serve" MetaGraphDef, variables restored. */
    const char* tags[] = {"serve"};
    session = TF_LoadSessionFromSavedModel(opts, NULL, model, tags, 1, graph, NULL, s);
    check(model, s);
  } else {
    TF_Buffer* graph_def = load_proto(model, 1, s);
    TF_ImportGraphDefOptions* import_opts = TF_NewImportGraphDefOptions();
    TF_GraphImportGraphDef(graph, graph_def, import_opts, s);
    TF_DeleteImportGraphDefOptions(import_opts);
    TF_DeleteBuffer(graph_def);
    check(model, s);
    session = TF_NewSession(graph, opts, s);
    check("TF_NewSession", s);
  }
  TF_DeleteSessionOptions(opts);

  Worker w = {0};
  w.session = session;
  w.n_in = n_in;
  w.n_out = n_out;
  w.iters = iters;
  w.inputs = calloc(n_in > 0 ? (size_t)n_in : 1, sizeof *w.inputs);
  w.input_values = calloc(n_in > 0 ? (size_t)n_in : 1, sizeof *w.input_values);
  w.outputs = calloc((size_t)n_out, sizeof *w.outputs);
  unsigned seed = 12345;
  for (int i = 0; i < n_in; i++) {
    w.inputs[i] = parse_output(graph, in_names[i]);
    w.input_values[i] = make_input(graph, w.inputs[i], batch, &seed, s);
  }
  for (int i = 0; i < n_out; i++) w.outputs[i] = parse_output(graph, out_names[i]);

  TF_Tensor* first = NULL;
  if (!run_once(&w, &first, s)) die_status("first TF_SessionRun", s);
  /* The banner comes once the model runs, so an error is the first line. */
  printf("TensorFlow C API %s (%s)\n", TF_Version(), MS_Version());
  print_values(out_names[0], first);
  TF_DeleteTensor(first);
  for (int i = 1; i < WARMUP_RUNS; i++) {
    if (!run_once(&w, NULL, s)) die_status("warm-up TF_SessionRun", s);
  }

  phase("single thread", &w, 1, batch);
  phase("multi thread", &w, threads, batch);

  for (int i = 0; i < n_in; i++) TF_DeleteTensor(w.input_values[i]);
  free(w.inputs);
  free(w.input_values);
  free(w.outputs);
  TF_CloseSession(session, s);
  check("TF_CloseSession", s);
  TF_DeleteSession(session, s);
  check("TF_DeleteSession", s);
  TF_DeleteGraph(graph);
  TF_DeleteStatus(s);
  return 0;
}
