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
 * to path.B, so two libraries' answers can be compared. The load itself
 * (threads, warm-up, feeds' values, the JSON lines) is closedloop.h's, which
 * the ONNX Runtime and OpenVINO clients of bench/cpu share. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "closedloop.h"
#include "mstream/mstream.h"
#include "tensorflow/c/c_api.h"

#pragma weak MS_SessionStats
#pragma weak MS_GraphDefTextToBinary

#define MAX_INPUTS 8

static void check(const char* what, TF_Status* s) {
  if (TF_GetCode(s) != TF_OK) {
    fprintf(stderr, "loadgen: %s: %s\n", what, TF_Message(s));
    exit(1);
  }
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

typedef struct {
  TF_Graph* g;
  TF_Session* sess;
  TF_Output in[MAX_INPUTS];
  int n_in;
  TF_Output out;
  int target; /* "output" has no outputs: run it as a target */
  TF_Tensor* (*feeds)[MAX_INPUTS]; /* per client */
  TF_Status** status;              /* per client */
} Model;

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
  switch (dt) {
    case TF_FLOAT: cl_fill(CL_F32, TF_TensorData(t), n, seed); break;
    case TF_INT32: cl_fill(CL_I32, TF_TensorData(t), n, seed); break;
    case TF_INT64: cl_fill(CL_I64, TF_TensorData(t), n, seed); break;
    default: fprintf(stderr, "loadgen: input dtype %d not supported\n", dt); exit(1);
  }
  return t;
}

static int prepare(void* ctx, int batch, int clients) {
  Model* m = ctx;
  TF_Status* s = TF_NewStatus();
  for (int i = 0; i < clients; i++) {
    unsigned seed = cl_seed(i, batch);
    for (int k = 0; k < m->n_in; k++) m->feeds[i][k] = make_feed(m->g, m->in[k], batch, &seed, s);
  }
  TF_DeleteStatus(s);
  return 0;
}

static void release(void* ctx, int batch, int clients) {
  Model* m = ctx;
  (void)batch;
  for (int i = 0; i < clients; i++)
    for (int k = 0; k < m->n_in; k++) TF_DeleteTensor(m->feeds[i][k]);
}

static int request(void* ctx, int client, const char* dump) {
  Model* m = ctx;
  TF_Status* s = m->status[client];
  TF_Tensor* out = NULL;
  if (m->target)
    TF_SessionRun(m->sess, NULL, m->in, m->feeds[client], m->n_in, NULL, NULL, 0, (const TF_Operation* const*)&m->out.oper, 1, NULL, s);
  else
    TF_SessionRun(m->sess, NULL, m->in, m->feeds[client], m->n_in, &m->out, &out, 1, NULL, 0, NULL, s);
  if (TF_GetCode(s) != TF_OK) {
    fprintf(stderr, "loadgen: run: %s\n", TF_Message(s));
    return -1;
  }
  if (out && dump) cl_dump(dump, TF_TensorData(out), TF_TensorByteSize(out));
  if (out) TF_DeleteTensor(out);
  return 0;
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

int main(int argc, char** argv) {
  if (argc < 5) {
    fprintf(stderr, "usage: loadgen MODEL.pb BATCHES THREADS DUR [CONFIG.pb]\n");
    return 2;
  }
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
  Model m = {.g = g, .sess = sess};
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
  m.feeds = calloc(CL_MAX_THREADS, sizeof *m.feeds);
  m.status = calloc(CL_MAX_THREADS, sizeof *m.status);
  for (int i = 0; i < CL_MAX_THREADS; i++) m.status[i] = TF_NewStatus();
  /* Each group's first runs pay one-time costs (its copy of the constants,
   * plan and kernel set-up), and sequential requests go round robin over
   * idle groups: the warm-up goes round them all. */
  ClBackend be = {prepare, request, release, session_groups(sess, s)};
  int rc = cl_run(&be, &m, argv[2], argv[3], dur);
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
  for (int i = 0; i < CL_MAX_THREADS; i++) TF_DeleteStatus(m.status[i]);
  free(m.status);
  free(m.feeds);
  return rc;
}
