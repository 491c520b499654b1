/* loadgen: closed-loop clients against one TF session, the shape of the GPU
 * benchmark (issue 5) and of peers_torch.py: T threads each send requests
 * back to back for DUR seconds; a request is host feeds in, TF_SessionRun,
 * host fetch out.
 *
 *   loadgen MODEL.pb BATCHES THREADS DUR [CONFIG.pb]
 *     BATCHES, THREADS: comma lists ("1,16,64,256", "1,4,8,16")
 *
 * MODEL is a binary GraphDef, or text when its name ends in .pbtxt. Inputs
 * are all the graph's Placeholders; the first -1 of each becomes the batch.
 * Integer inputs (ids) are drawn below IDS_MAX (default 100000). The output
 * is the node "output". One JSON line per (batch,
 * threads) point on stdout (with the process's CPU time per request over
 * the window), then one line {"stats": MS_SessionStats}.
 * Environment TF_* knobs apply to the session as usual.
 *
 * The same source links against real TensorFlow's C API as well (the CPU
 * benchmark's peer, bench/cpu/vs_tf.sh): mstream's MS_* extensions are weak
 * references, absent there, and text GraphDefs are then refused. An "output"
 * node without outputs (a NoOp grouping others) is run as a target.
 * OUTPUT_DUMP=path writes the first request's output bytes (batch, thread 0)
 * to path.B, so two libraries' answers can be compared. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mstream/mstream.h"
#include "tensorflow/c/c_api.h"

#pragma weak MS_SessionStats
#pragma weak MS_GraphDefTextToBinary

#define MAX_POINTS 16
#define MAX_INPUTS 8

static void check(const char* what, TF_Status* s) {
  if (TF_GetCode(s) != TF_OK) {
    fprintf(stderr, "loadgen: %s: %s\n", what, TF_Message(s));
    exit(1);
  }
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Wall-clock time, so report.py can match a point's window with the
 * nvidia-smi samples taken beside it (their timestamps are wall clock). */
static double epoch_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* The process's CPU time, every thread (the library's pools, spinning
 * BLAS threads, GC), user and system: on a loaded machine wall time mostly
 * measures the run queue, the CPU a request took says what it cost. */
static double cpu_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void free_buf(void* data, size_t len) { (void)len; free(data); }

static TF_Buffer* read_file(const char* path) {
  FILE* f = fopen(path, "rb");
  if (!f) {
    perror(path);
    exit(1);
  }
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  void* data = malloc((size_t)n);
  if (n > 0 && fread(data, 1, (size_t)n, f) != (size_t)n) {
    perror(path);
    exit(1);
  }
  fclose(f);
  TF_Buffer* b = TF_NewBuffer();
  b->data = data;
  b->length = (size_t)n;
  b->data_deallocator = free_buf;
  return b;
}

static int parse_list(const char* s, int* out) {
  int n = 0;
  while (*s && n < MAX_POINTS) {
    out[n++] = atoi(s);
    const char* c = strchr(s, ',');
    if (!c) break;
    s = c + 1;
  }
  return n;
}

typedef struct {
  TF_Output in[MAX_INPUTS];
  int n_in;
  TF_Output out;
  int target; /* "output" has no outputs: run it as a target */
} Model;

typedef struct {
  TF_Session* sess;
  const Model* m;
  TF_Tensor* feeds[MAX_INPUTS];
  double stop;
  pthread_barrier_t* start;
  double* lat;
  long n_lat, cap_lat;
  int failed;
  int warmup; /* requests before the window */
  const char* dump; /* write the next output's bytes here (OUTPUT_DUMP) */
} Client;

static unsigned rng_next(unsigned* s) {
  *s = *s * 1664525u + 1013904223u;
  return *s >> 8;
}

static TF_Tensor* make_feed(TF_Graph* g, TF_Output o, int batch, unsigned* seed, TF_Status* s) {
  int nd = TF_GraphGetTensorNumDims(g, o, s);
  check("num dims", s);
  int64_t dims[8];
  TF_GraphGetTensorShape(g, o, dims, nd, s);
  check("shape", s);
  int64_t n = 1;
  for (int i = 0; i < nd; i++) {
    if (dims[i] < 0) dims[i] = batch;
    n *= dims[i];
  }
  TF_DataType dt = TF_OperationOutputType(o);
  TF_Tensor* t = TF_AllocateTensor(dt, dims, nd, (size_t)n * TF_DataTypeSize(dt));
  long ids_max = getenv("IDS_MAX") ? atol(getenv("IDS_MAX")) : 100000;
  if (dt == TF_FLOAT) {
    float* p = TF_TensorData(t);
    for (int64_t i = 0; i < n; i++) p[i] = (float)(rng_next(seed) % 2000) / 1000.0f - 1.0f;
  } else if (dt == TF_INT32) {
    int32_t* p = TF_TensorData(t);
    for (int64_t i = 0; i < n; i++) p[i] = (int32_t)(rng_next(seed) % ids_max);
  } else if (dt == TF_INT64) {
    int64_t* p = TF_TensorData(t);
    for (int64_t i = 0; i < n; i++) p[i] = (int64_t)(rng_next(seed) % ids_max);
  } else {
    fprintf(stderr, "loadgen: input dtype %d not supported\n", dt);
    exit(1);
  }
  return t;
}

static int request(Client* c, TF_Status* s) {
  TF_Tensor* out = NULL;
  const Model* m = c->m;
  if (m->target)
    TF_SessionRun(c->sess, NULL, m->in, c->feeds, m->n_in, NULL, NULL, 0, (const TF_Operation* const*)&m->out.oper, 1, NULL, s);
  else
    TF_SessionRun(c->sess, NULL, m->in, c->feeds, m->n_in, &m->out, &out, 1, NULL, 0, NULL, s);
  if (TF_GetCode(s) != TF_OK) {
    fprintf(stderr, "loadgen: run: %s\n", TF_Message(s));
    return -1;
  }
  if (out && c->dump) {
    FILE* f = fopen(c->dump, "wb");
    if (f) {
      fwrite(TF_TensorData(out), 1, TF_TensorByteSize(out), f);
      fclose(f);
    }
    c->dump = NULL;
  }
  if (out) TF_DeleteTensor(out);
  return 0;
}

static void* client_main(void* arg) {
  Client* c = arg;
  TF_Status* s = TF_NewStatus();
  for (int i = 0; i < c->warmup && !c->failed; i++) c->failed = request(c, s) != 0;
  pthread_barrier_wait(c->start);
  while (!c->failed) {
    double t0 = now_s(), stop;
    __atomic_load(&c->stop, &stop, __ATOMIC_ACQUIRE);
    if (t0 >= stop) break;
    if (request(c, s) != 0) {
      c->failed = 1;
      break;
    }
    if (c->n_lat == c->cap_lat) {
      c->cap_lat = c->cap_lat ? 2 * c->cap_lat : 4096;
      c->lat = realloc(c->lat, (size_t)c->cap_lat * sizeof(double));
    }
    c->lat[c->n_lat++] = now_s() - t0;
  }
  TF_DeleteStatus(s);
  return NULL;
}

/* session_groups counts the session's stream groups in MS_SessionStats
 * (each group object has a "runs_completed"; so does the session, before
 * the "groups" list). */
static int session_groups(TF_Session* sess, TF_Status* s) {
  if (!MS_SessionStats) return 1; /* real TF: one device, no groups */
  TF_Buffer* b = TF_NewBuffer();
  MS_SessionStats(sess, b, s);
  int n = 0;
  if (TF_GetCode(s) == TF_OK) {
    char* js = malloc(b->length + 1);
    memcpy(js, b->data, b->length);
    js[b->length] = '\0';
    const char* p = strstr(js, "\"groups\":[");
    while (p && (p = strstr(p + 1, "\"runs_completed\":")) != NULL) n++;
    free(js);
  }
  TF_DeleteBuffer(b);
  return n;
}

static int cmp_d(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return x < y ? -1 : x > y;
}

int main(int argc, char** argv) {
  if (argc < 5) {
    fprintf(stderr, "usage: loadgen MODEL.pb BATCHES THREADS DUR [CONFIG.pb]\n");
    return 2;
  }
  int batches[MAX_POINTS], threads[MAX_POINTS];
  int nb = parse_list(argv[2], batches), nt = parse_list(argv[3], threads);
  double dur = atof(argv[4]);
  TF_Status* s = TF_NewStatus();
  TF_Graph* g = TF_NewGraph();
  TF_Buffer* gd = read_file(argv[1]);
  size_t len = strlen(argv[1]);
  if (len > 6 && strcmp(argv[1] + len - 6, ".pbtxt") == 0) {
    if (!MS_GraphDefTextToBinary) {
      fprintf(stderr, "loadgen: %s: text GraphDefs need mstream's MS_GraphDefTextToBinary\n", argv[1]);
      return 2;
    }
    TF_Buffer* bin = TF_NewBuffer();
    MS_GraphDefTextToBinary(gd->data, gd->length, bin, s);
    check("text GraphDef", s);
    TF_DeleteBuffer(gd);
    gd = bin;
  }
  TF_ImportGraphDefOptions* io = TF_NewImportGraphDefOptions();
  TF_GraphImportGraphDef(g, gd, io, s);
  check("import", s);
  TF_DeleteImportGraphDefOptions(io);
  TF_DeleteBuffer(gd);
  TF_SessionOptions* so = TF_NewSessionOptions();
  if (argc > 5) {
    TF_Buffer* cfg = read_file(argv[5]);
    TF_SetConfig(so, cfg->data, cfg->length, s);
    check("config", s);
    TF_DeleteBuffer(cfg);
  }
  TF_Session* sess = TF_NewSession(g, so, s);
  check("new session", s);
  Model m = {.n_in = 0};
  size_t pos = 0;
  TF_Operation* op;
  while ((op = TF_GraphNextOperation(g, &pos)) != NULL) {
    if (strcmp(TF_OperationOpType(op), "Placeholder") != 0) continue;
    if (m.n_in == MAX_INPUTS) {
      fprintf(stderr, "loadgen: more than %d placeholders\n", MAX_INPUTS);
      return 1;
    }
    m.in[m.n_in++] = (TF_Output){op, 0};
  }
  TF_Operation* outop = TF_GraphOperationByName(g, "output");
  if (!outop || m.n_in == 0) {
    fprintf(stderr, "loadgen: the model needs placeholders and an 'output' node\n");
    return 1;
  }
  m.out = (TF_Output){outop, 0};
  m.target = TF_OperationNumOutputs(outop) == 0;
  /* Warm-up: each group's first runs pay one-time costs (its copy of the
   * constants, plan and kernel set-up), and sequential requests go round
   * robin over idle groups, so each point starts after every group has
   * served at least two runs. */
  int ngroups = session_groups(sess, s);
  int maxT = 0;
  for (int i = 0; i < nt; i++) maxT = threads[i] > maxT ? threads[i] : maxT;
  Client* cl = calloc((size_t)maxT, sizeof *cl);
  int rc = 0;
  for (int bi = 0; bi < nb && !rc; bi++) {
    int B = batches[bi];
    for (int i = 0; i < maxT; i++) {
      unsigned seed = 12345u + (unsigned)i * 7919u + (unsigned)B;
      for (int k = 0; k < m.n_in; k++) cl[i].feeds[k] = make_feed(g, m.in[k], B, &seed, s);
    }
    for (int ti = 0; ti < nt && !rc; ti++) {
      int T = threads[ti];
      pthread_barrier_t bar;
      pthread_barrier_init(&bar, NULL, (unsigned)T + 1);
      pthread_t th[256];
      for (int i = 0; i < T; i++) {
        cl[i].sess = sess;
        cl[i].m = &m;
        cl[i].start = &bar;
        cl[i].n_lat = 0;
        cl[i].failed = 0;
        cl[i].stop = 1e300;
        cl[i].warmup = 5 + (2 * ngroups + T - 1) / T;
        cl[i].dump = NULL;
        if (i == 0 && ti == 0 && getenv("OUTPUT_DUMP")) {
          static char path[4096];
          snprintf(path, sizeof path, "%s.%d", getenv("OUTPUT_DUMP"), B);
          cl[i].dump = path;
        }
        pthread_create(&th[i], NULL, client_main, &cl[i]);
      }
      /* Everyone has warmed up when the barrier opens; the window starts then. */
      pthread_barrier_wait(&bar);
      double t0 = now_s();
      double e0 = epoch_s();
      double cpu0 = cpu_s();
      double end = t0 + dur;
      for (int i = 0; i < T; i++) __atomic_store(&cl[i].stop, &end, __ATOMIC_RELEASE);
      long total = 0;
      for (int i = 0; i < T; i++) {
        pthread_join(th[i], NULL);
        total += cl[i].n_lat;
        if (cl[i].failed) rc = 1;
      }
      double wall = now_s() - t0;
      double cpu = cpu_s() - cpu0;
      pthread_barrier_destroy(&bar);
      double* all = malloc((size_t)(total ? total : 1) * sizeof(double));
      long k = 0;
      for (int i = 0; i < T; i++) {
        memcpy(all + k, cl[i].lat, (size_t)cl[i].n_lat * sizeof(double));
        k += cl[i].n_lat;
      }
      qsort(all, (size_t)total, sizeof(double), cmp_d);
      printf("{\"batch\": %d, \"threads\": %d, \"qps\": %.1f, \"samples_per_s\": %.1f, \"p50_ms\": %.4f, "
             "\"p99_ms\": %.4f, \"requests\": %ld, \"cpu_us_per_request\": %.1f, \"t0\": %.3f, \"t1\": %.3f}\n",
             B, T, total / wall, total * (double)B / wall, total ? all[total / 2] * 1e3 : 0,
             total ? all[(long)(0.99 * (double)(total - 1))] * 1e3 : 0, total, total ? cpu * 1e6 / (double)total : 0,
             e0, e0 + wall);
      fflush(stdout);
      free(all);
    }
    for (int i = 0; i < maxT; i++)
      for (int k = 0; k < m.n_in; k++) TF_DeleteTensor(cl[i].feeds[k]);
  }
  if (MS_SessionStats) {
    TF_Buffer* st = TF_NewBuffer();
    MS_SessionStats(sess, st, s);
    if (TF_GetCode(s) == TF_OK) printf("{\"stats\": %.*s}\n", (int)st->length, (const char*)st->data);
    TF_DeleteBuffer(st);
  }
  TF_CloseSession(sess, s);
  TF_DeleteSession(sess, s);
  TF_DeleteSessionOptions(so);
  TF_DeleteGraph(g);
  TF_DeleteStatus(s);
  for (int i = 0; i < maxT; i++) free(cl[i].lat);
  free(cl);
  return rc;
}
