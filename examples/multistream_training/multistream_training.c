/* multistream_training: train a recommender GraphDef through the TensorFlow C
 * API, the counterpart of NVIDIA's multistream_training example.
 *
 *   multistream_training MODEL [STEPS [BATCH [EVERY [CHECKPOINT [CONFIG]]]]]
 *
 * MODEL "capi" builds the model here through the C API instead (forward
 * ops, TF_AddGradients, ResourceApplyAdagrad, a SaveV2; see build_graph).
 * Otherwise MODEL is a binary (.pb) or text (.pbtxt) GraphDef with the names that
 * examples/multistream_training/gen.py gives (examples/data/training.pbtxt):
 * towers fed by int64 placeholders tower<t>/ids (t = 0, 1, ... while one
 * exists), each indexing the embedding variable tower<t>/emb; a float
 * placeholder head/label [batch,1]; the scalar "loss"; the targets "init" and
 * "train"; a float placeholder <variable>_init_value for each variable that
 * "init" initialises from the client's numbers (uniform [-1, 1), from a
 * fixed seed and the placeholder's name); and a Saver under "save". Every step feeds a batch drawn from a
 * fixed-seed generator (ids skewed towards small values, as real ids are, with
 * repeats within a batch; the label is 1 where the sum of a fixed random score
 * per tower and id is positive, so the model can learn it), runs "train" and,
 * every EVERY steps and at the last, fetches "loss" in the same run. It prints
 * the loss curve ("step N loss X"), then steps/s over every step but the first
 * (which builds the plan), and writes a SaveV2 checkpoint to CHECKPOINT ("-"
 * for none).
 *
 * The stream groups come from the environment, as in NVIDIA's build:
 * TF_NODE_LEVEL_MULTISTREAM=true TF_GPU_STREAM_GROUP_COUNT=4
 * TF_STREAM_FROM_FILE=examples/data/training_streams.txt puts one tower (its
 * forward nodes, gradients and updates) on each group.
 *
 * At the end it prints, from MS_SessionStats, each stream group's steps and
 * the cross-stream waits the executor inserted on it ("stream groups: ...").
 *
 * Only the standard C API is used, plus MS_GraphDefTextToBinary and
 * MS_ConfigProtoTextToBinary for text files (test/capidiff's shim provides
 * them over TensorFlow) and MS_SessionStats (a weak reference, skipped
 * without it), so the same source runs against TensorFlow's own
 * libtensorflow and the losses can be compared. */

#include <inttypes.h>
#include <math.h>

#define EXAMPLE "multistream_training"
#include "../common.h"

#define DEFAULT_STEPS 200
#define DEFAULT_BATCH 256
#define DEFAULT_EVERY 10
#define DEFAULT_CHECKPOINT "/tmp/multistream_training/model.ckpt"
#define MAX_TOWERS 64
#define SEED 20240501u

static void usage(void) {
  fprintf(stderr,
          "usage: multistream_training MODEL [STEPS [BATCH [EVERY [CHECKPOINT [CONFIG]]]]]\n"
          "  MODEL       GraphDef, binary (.pb) or text (.pbtxt), e.g. examples/data/training.pbtxt,\n"
          "              or capi: the same model built here with TF_AddGradients\n"
          "  STEPS       training steps (default %d)\n"
          "  BATCH       examples per step (default %d)\n"
          "  EVERY       fetch and print the loss every EVERY steps (default %d)\n"
          "  CHECKPOINT  SaveV2 prefix written at the end, - for none (default %s)\n"
          "  CONFIG      ConfigProto, binary or text\n",
          DEFAULT_STEPS, DEFAULT_BATCH, DEFAULT_EVERY, DEFAULT_CHECKPOINT);
  exit(2);
}

static TF_Operation* op(TF_Graph* g, const char* name) {
  TF_Operation* o = TF_GraphOperationByName(g, name);
  if (o == NULL) die("the model has no operation '%s' (see examples/multistream_training/gen.py)", name);
  return o;
}

/* splitmix64: a small, fixed generator, so every run and both libraries see
 * the same batches. */
static uint64_t splitmix(uint64_t* x) {
  uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

static double uniform(uint64_t* x) { return (double)(splitmix(x) >> 11) * 0x1.0p-53; }

/* score is the hidden per-(tower, id) score in [-0.5, 0.5) the labels follow. */
static double score(int tower, int64_t id) {
  uint64_t x = ((uint64_t)tower << 40) ^ (uint64_t)id ^ 0x5eedull;
  return uniform(&x) - 0.5;
}

static TF_Tensor* scalar_string(const char* v) {
  TF_Tensor* t = TF_AllocateTensor(TF_STRING, NULL, 0, sizeof(TF_TString));
  TF_TString* p = TF_TensorData(t);
  TF_StringInit(p);
  TF_StringCopy(p, v, strlen(v));
  return t;
}

/* name_seed is a seed drawn from a name (FNV-1a), so each initial value
 * depends on its variable alone, not on the order of the graph's nodes. */
static uint64_t name_seed(const char* name) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (; *name; name++) h = (h ^ (unsigned char)*name) * 0x100000001b3ull;
  return h ^ SEED;
}

/* run_init runs "init", feeding every placeholder named *_init_value (one
 * per variable, scaled in the graph) uniform [-1, 1) numbers. */
static void run_init(TF_Graph* g, TF_Session* sess, const TF_Operation* init, TF_Status* s) {
  size_t pos = 0, n = 0, cap = 16;
  TF_Output* feeds = malloc(cap * sizeof *feeds);
  TF_Tensor** values = malloc(cap * sizeof *values);
  if (feeds == NULL || values == NULL) die("out of memory%s", "");
  const char* suffix = "_init_value";
  for (TF_Operation* o; (o = TF_GraphNextOperation(g, &pos)) != NULL;) {
    const char* name = TF_OperationName(o);
    size_t len = strlen(name);
    if (strcmp(TF_OperationOpType(o), "Placeholder") != 0 || len < strlen(suffix) ||
        strcmp(name + len - strlen(suffix), suffix) != 0) {
      continue;
    }
    TF_Output out = {o, 0};
    int64_t dims[8];
    int nd = TF_GraphGetTensorNumDims(g, out, s);
    check(name, s);
    if (nd < 0 || nd > 8) die("%s: the initial value needs a known shape", name);
    TF_GraphGetTensorShape(g, out, dims, nd, s);
    check(name, s);
    int64_t count = 1;
    for (int i = 0; i < nd; i++) {
      if (dims[i] < 0) die("%s: the initial value needs a known shape", name);
      count *= dims[i];
    }
    if (n == cap) {
      cap *= 2;
      feeds = realloc(feeds, cap * sizeof *feeds);
      values = realloc(values, cap * sizeof *values);
      if (feeds == NULL || values == NULL) die("out of memory%s", "");
    }
    TF_Tensor* t = TF_AllocateTensor(TF_FLOAT, dims, nd, (size_t)count * sizeof(float));
    float* p = TF_TensorData(t);
    uint64_t rng = name_seed(name);
    for (int64_t i = 0; i < count; i++) p[i] = (float)(2 * uniform(&rng) - 1);
    feeds[n] = out;
    values[n++] = t;
  }
  TF_SessionRun(sess, NULL, feeds, values, (int)n, NULL, NULL, 0, &init, 1, NULL, s);
  check("init", s);
  for (size_t i = 0; i < n; i++) TF_DeleteTensor(values[i]);
  free(feeds);
  free(values);
}

/* Launch totals over every group of a session: the host time device steps
 * took to enqueue their device work, the device nodes they launched and
 * the steps (zero off a GPU). */
typedef struct { long long ns, nodes, steps; } Launches;

static Launches launch_totals(const GroupStats* g, int n) {
  Launches l = {0, 0, 0};
  for (int i = 0; i < n; i++) {
    if (g[i].launch_steps > 0) {
      l.ns += g[i].launch_ns;
      l.nodes += g[i].launched_nodes;
      l.steps += g[i].launch_steps;
    }
  }
  return l;
}

/* launches_now reads the session's launch totals (all zero when its stats
 * cannot be read). */
static Launches launches_now(TF_Session* sess) {
  GroupStats g[MAX_GROUPS];
  int n = group_stats(sess, g, MAX_GROUPS);
  if (n < 0) n = 0;
  return launch_totals(g, n);
}

/* report_groups prints each stream group's runs and cross-stream waits
 * from MS_SessionStats' JSON ("groups": [{"id": N, ..., "runs_completed":
 * M, ..., "stream_waits": W, ...}, ...]) and, on a GPU, the host time a
 * step took to enqueue its device work and the device nodes it launched,
 * over the steps since `since` was read (the timed steps: the first one
 * compiles kernels and plans GEMMs; no line when only one step ran): a
 * launch time close to the time per step says the host, not the GPU,
 * sets the pace. */
static void report_groups(TF_Session* sess, Launches since) {
  GroupStats g[MAX_GROUPS];
  int n = group_stats(sess, g, MAX_GROUPS);
  if (n < 0) return;
  printf("stream groups:");
  for (int i = 0; i < n; i++) printf(" group%d runs=%lld waits=%lld", i, g[i].runs, g[i].waits);
  printf("\n");
  Launches l = launch_totals(g, n);
  long long steps = l.steps - since.steps;
  if (steps > 0 && since.steps > 0)
    printf("device launch: %.1f us of host time and %.0f device nodes per step (%lld steps, first step not counted)\n",
           (double)(l.ns - since.ns) / (double)steps / 1e3, (double)(l.nodes - since.nodes) / (double)steps, steps);
}

/* ---- MODEL "capi": the same recommender built through the C API ---------
 *
 * build_graph makes, with TF_NewOperation and TF_AddGradients, what gen.py
 * makes with TF's Python (names included, so the stream file applies): per
 * tower t an embedding tower<t>/emb read by GatherV2 (the dense gradient TF's
 * C++ gradients give) and an MLP; a head; a sigmoid output trained to the
 * label with a mean squared error (the C++ gradient registry has no
 * sigmoid cross-entropy); Adagrad (ResourceApplyAdagrad, accumulators from
 * 0.1) as train/update_<variable>; "init"; and a SaveV2 "save". */

static const int64_t capi_vocab[4] = {1000, 5000, 2000, 500};
static const int capi_mlp[] = {32, 256, 128, 32};

typedef struct {
  TF_Graph* g;
  TF_Status* s;
  /* Every variable: its handle, its read (the gradient's x), its name. */
  int nvars;
  TF_Output handle[64], read[64];
  char name[64][64];
  int64_t dims[64][2];
  int nd[64];
  const TF_Operation* inits[128];
  int ninits;
} Builder;

static TF_Operation* finish(Builder* b, TF_OperationDescription* d, const char* what) {
  TF_Operation* o = TF_FinishOperation(d, b->s);
  check(what, b->s);
  return o;
}

static TF_Output op1(Builder* b, const char* type, const char* name, TF_Output* in, int n) {
  TF_OperationDescription* d = TF_NewOperation(b->g, type, name);
  for (int i = 0; i < n; i++) TF_AddInput(d, in[i]);
  TF_Output o = {finish(b, d, name), 0};
  return o;
}

static TF_Output const_f(Builder* b, const char* name, float v) {
  TF_Tensor* t = TF_AllocateTensor(TF_FLOAT, NULL, 0, sizeof(float));
  *(float*)TF_TensorData(t) = v;
  TF_OperationDescription* d = TF_NewOperation(b->g, "Const", name);
  TF_SetAttrTensor(d, "value", t, b->s);
  check(name, b->s);
  TF_SetAttrType(d, "dtype", TF_FLOAT);
  TF_Output o = {finish(b, d, name), 0};
  TF_DeleteTensor(t);
  return o;
}

static TF_Output const_i32(Builder* b, const char* name, const int32_t* v, int n, int vector) {
  int64_t dims[1] = {n};
  TF_Tensor* t = TF_AllocateTensor(TF_INT32, dims, vector, sizeof(int32_t) * (size_t)n);
  memcpy(TF_TensorData(t), v, sizeof(int32_t) * (size_t)n);
  TF_OperationDescription* d = TF_NewOperation(b->g, "Const", name);
  TF_SetAttrTensor(d, "value", t, b->s);
  check(name, b->s);
  TF_SetAttrType(d, "dtype", TF_INT32);
  TF_Output o = {finish(b, d, name), 0};
  TF_DeleteTensor(t);
  return o;
}

static TF_Output placeholder(Builder* b, const char* name, TF_DataType dt, const int64_t* dims, int nd) {
  TF_OperationDescription* d = TF_NewOperation(b->g, "Placeholder", name);
  TF_SetAttrType(d, "dtype", dt);
  TF_SetAttrShape(d, "shape", dims, nd);
  TF_Output o = {finish(b, d, name), 0};
  return o;
}

/* variable makes VarHandleOp name [rows, cols] (cols 0: a vector), its
 * initialiser (from name_init_value scaled by scale, or zeros with scale 0)
 * and its read, and returns the read. */
static TF_Output variable(Builder* b, const char* name, int64_t rows, int64_t cols, float scale) {
  char buf[160];
  int64_t dims[2] = {rows, cols};
  int nd = cols > 0 ? 2 : 1;
  TF_OperationDescription* d = TF_NewOperation(b->g, "VarHandleOp", name);
  TF_SetAttrType(d, "dtype", TF_FLOAT);
  TF_SetAttrShape(d, "shape", dims, nd);
  TF_SetAttrString(d, "shared_name", name, strlen(name));
  TF_Output h = {finish(b, d, name), 0};
  TF_Output value;
  if (scale != 0) {
    snprintf(buf, sizeof buf, "%s_init_value", name);
    TF_Output u = placeholder(b, buf, TF_FLOAT, dims, nd);
    snprintf(buf, sizeof buf, "%s/Initializer/scale", name);
    TF_Output sc = const_f(b, buf, scale);
    TF_Output in[2] = {u, sc};
    snprintf(buf, sizeof buf, "%s/Initializer/mul", name);
    value = op1(b, "Mul", buf, in, 2);
  } else {
    snprintf(buf, sizeof buf, "%s/Initializer/zeros", name);
    TF_Output z = const_f(b, buf, 0);
    int32_t shape[2] = {(int32_t)rows, (int32_t)cols};
    snprintf(buf, sizeof buf, "%s/Initializer/shape", name);
    TF_Output sh = const_i32(b, buf, shape, nd, 1);
    TF_Output in[2] = {sh, z};
    snprintf(buf, sizeof buf, "%s/Initializer/fill", name);
    value = op1(b, "Fill", buf, in, 2);
  }
  snprintf(buf, sizeof buf, "%s/Assign", name);
  d = TF_NewOperation(b->g, "AssignVariableOp", buf);
  TF_AddInput(d, h);
  TF_AddInput(d, value);
  TF_SetAttrType(d, "dtype", TF_FLOAT);
  b->inits[b->ninits++] = finish(b, d, buf);
  snprintf(buf, sizeof buf, "%s/Read/ReadVariableOp", name);
  d = TF_NewOperation(b->g, "ReadVariableOp", buf);
  TF_AddInput(d, h);
  TF_SetAttrType(d, "dtype", TF_FLOAT);
  TF_Output r = {finish(b, d, buf), 0};
  b->handle[b->nvars] = h;
  b->read[b->nvars] = r;
  snprintf(b->name[b->nvars], sizeof b->name[0], "%s", name);
  b->dims[b->nvars][0] = rows;
  b->dims[b->nvars][1] = cols;
  b->nd[b->nvars] = nd;
  b->nvars++;
  return r;
}

/* dense is x W + b (then Relu) under scope/denseK. */
static TF_Output dense(Builder* b, const char* scope, int k, TF_Output x, int n_in, int n_out, int relu) {
  char name[128], buf[160];
  snprintf(name, sizeof name, "%s/dense%d", scope, k);
  snprintf(buf, sizeof buf, "%s/kernel", name);
  TF_Output w = variable(b, buf, n_in, n_out, (float)sqrt(6.0 / (n_in + n_out)));
  snprintf(buf, sizeof buf, "%s/bias", name);
  TF_Output bias = variable(b, buf, n_out, 0, 0);
  TF_Output in[2] = {x, w};
  snprintf(buf, sizeof buf, "%s/MatMul", name);
  TF_Output y = op1(b, "MatMul", buf, in, 2);
  TF_Output in2[2] = {y, bias};
  snprintf(buf, sizeof buf, "%s/BiasAdd", name);
  y = op1(b, "BiasAdd", buf, in2, 2);
  if (relu) {
    snprintf(buf, sizeof buf, "%s/Relu", name);
    y = op1(b, "Relu", buf, &y, 1);
  }
  return y;
}

static void build_graph(TF_Graph* g, TF_Status* s) {
  static Builder bb;
  Builder* b = &bb;
  memset(b, 0, sizeof *b);
  b->g = g;
  b->s = s;
  TF_Output outs[4];
  char buf[160];
  for (int t = 0; t < 4; t++) {
    char scope[16];
    snprintf(scope, sizeof scope, "tower%d", t);
    int64_t dims[1] = {-1};
    snprintf(buf, sizeof buf, "%s/ids", scope);
    TF_Output ids = placeholder(b, buf, TF_INT64, dims, 1);
    snprintf(buf, sizeof buf, "%s/emb", scope);
    TF_Output emb = variable(b, buf, capi_vocab[t], capi_mlp[0], 1.0f);
    int32_t zero = 0;
    snprintf(buf, sizeof buf, "%s/axis", scope);
    TF_Output axis = const_i32(b, buf, &zero, 1, 0);
    TF_Output in[3] = {emb, ids, axis};
    snprintf(buf, sizeof buf, "%s/embedding_lookup", scope);
    TF_Output x = op1(b, "GatherV2", buf, in, 3);
    for (int k = 0; k < 3; k++) x = dense(b, scope, k, x, capi_mlp[k], capi_mlp[k + 1], 1);
    outs[t] = x;
  }
  int32_t one = 1;
  TF_Output axis = const_i32(b, "head/concat/axis", &one, 1, 0);
  TF_OperationDescription* d = TF_NewOperation(g, "ConcatV2", "head/concat");
  TF_AddInputList(d, outs, 4);
  TF_AddInput(d, axis);
  TF_Output x = {finish(b, d, "head/concat"), 0};
  x = dense(b, "head", 0, x, 4 * capi_mlp[3], 64, 1);
  x = dense(b, "head", 1, x, 64, 1, 0);
  TF_Output p = op1(b, "Sigmoid", "head/Sigmoid", &x, 1);
  int64_t ldims[2] = {-1, 1};
  TF_Output label = placeholder(b, "head/label", TF_FLOAT, ldims, 2);
  TF_Output in[2] = {p, label};
  TF_Output diff = op1(b, "Sub", "head/sub", in, 2);
  TF_Output sq = op1(b, "Square", "head/Square", &diff, 1);
  int32_t both[2] = {0, 1};
  TF_Output red = const_i32(b, "head/Const", both, 2, 1);
  TF_Output in2[2] = {sq, red};
  TF_Output loss = op1(b, "Mean", "loss", in2, 2);

  /* Gradients of the loss with respect to every variable's read. */
  int n = b->nvars;
  TF_Output grads[64];
  TF_AddGradientsWithPrefix(g, "gradients", &loss, 1, b->read, n, NULL, s, grads);
  check("TF_AddGradientsWithPrefix", s);

  /* Adagrad: an accumulator per variable, from 0.1; the updates. */
  TF_Output lr = const_f(b, "train/learning_rate", 0.1f);
  const TF_Operation* updates[64];
  for (int i = 0; i < n; i++) {
    char acc[128];
    snprintf(acc, sizeof acc, "%s/Adagrad", b->name[i]);
    const int64_t* dims = b->dims[i];
    int nd = b->nd[i];
    TF_OperationDescription* ad = TF_NewOperation(g, "VarHandleOp", acc);
    TF_SetAttrType(ad, "dtype", TF_FLOAT);
    TF_SetAttrShape(ad, "shape", dims, nd);
    TF_SetAttrString(ad, "shared_name", acc, strlen(acc));
    TF_Output h = {finish(b, ad, acc), 0};
    snprintf(buf, sizeof buf, "%s/Initializer/value", acc);
    TF_Output v = const_f(b, buf, 0.1f);
    int32_t shape[2] = {(int32_t)dims[0], nd > 1 ? (int32_t)dims[1] : 0};
    snprintf(buf, sizeof buf, "%s/Initializer/shape", acc);
    TF_Output sh = const_i32(b, buf, shape, nd, 1);
    TF_Output fin[2] = {sh, v};
    snprintf(buf, sizeof buf, "%s/Initializer/fill", acc);
    TF_Output fill = op1(b, "Fill", buf, fin, 2);
    snprintf(buf, sizeof buf, "%s/Assign", acc);
    ad = TF_NewOperation(g, "AssignVariableOp", buf);
    TF_AddInput(ad, h);
    TF_AddInput(ad, fill);
    TF_SetAttrType(ad, "dtype", TF_FLOAT);
    b->inits[b->ninits++] = finish(b, ad, buf);
    snprintf(buf, sizeof buf, "train/update_%s/ResourceApplyAdagrad", b->name[i]);
    ad = TF_NewOperation(g, "ResourceApplyAdagrad", buf);
    TF_AddInput(ad, b->handle[i]);
    TF_AddInput(ad, h);
    TF_AddInput(ad, lr);
    TF_AddInput(ad, grads[i]);
    TF_SetAttrType(ad, "T", TF_FLOAT);
    updates[i] = finish(b, ad, buf);
  }
  d = TF_NewOperation(g, "NoOp", "train");
  for (int i = 0; i < n; i++) TF_AddControlInput(d, (TF_Operation*)updates[i]);
  finish(b, d, "train");
  d = TF_NewOperation(g, "NoOp", "init");
  for (int i = 0; i < b->ninits; i++) TF_AddControlInput(d, (TF_Operation*)b->inits[i]);
  finish(b, d, "init");

  /* The Saver: save/Const (the path), SaveV2 of every variable's read,
   * save/control_dependency. */
  TF_Tensor* path = scalar_string("model");
  d = TF_NewOperation(g, "PlaceholderWithDefault", "save/Const");
  TF_Output def = {NULL, 0};
  {
    TF_OperationDescription* cd = TF_NewOperation(g, "Const", "save/filename");
    TF_SetAttrTensor(cd, "value", path, s);
    check("save/filename", s);
    TF_SetAttrType(cd, "dtype", TF_STRING);
    def.oper = finish(b, cd, "save/filename");
  }
  TF_AddInput(d, def);
  TF_SetAttrType(d, "dtype", TF_STRING);
  TF_SetAttrShape(d, "shape", NULL, 0);
  TF_Output file = {finish(b, d, "save/Const"), 0};
  TF_StringDealloc(TF_TensorData(path));
  TF_DeleteTensor(path);
  int64_t nd1[1] = {n};
  TF_Tensor* names = TF_AllocateTensor(TF_STRING, nd1, 1, sizeof(TF_TString) * (size_t)n);
  TF_Tensor* slices = TF_AllocateTensor(TF_STRING, nd1, 1, sizeof(TF_TString) * (size_t)n);
  for (int i = 0; i < n; i++) {
    TF_TString* p1 = (TF_TString*)TF_TensorData(names) + i;
    TF_TString* p2 = (TF_TString*)TF_TensorData(slices) + i;
    TF_StringInit(p1);
    TF_StringCopy(p1, b->name[i], strlen(b->name[i]));
    TF_StringInit(p2);
  }
  TF_Output tn, ts;
  {
    TF_OperationDescription* cd = TF_NewOperation(g, "Const", "save/SaveV2/tensor_names");
    TF_SetAttrTensor(cd, "value", names, s);
    check("save/SaveV2/tensor_names", s);
    TF_SetAttrType(cd, "dtype", TF_STRING);
    tn = (TF_Output){finish(b, cd, "save/SaveV2/tensor_names"), 0};
    cd = TF_NewOperation(g, "Const", "save/SaveV2/shape_and_slices");
    TF_SetAttrTensor(cd, "value", slices, s);
    check("save/SaveV2/shape_and_slices", s);
    TF_SetAttrType(cd, "dtype", TF_STRING);
    ts = (TF_Output){finish(b, cd, "save/SaveV2/shape_and_slices"), 0};
  }
  for (int i = 0; i < n; i++) {
    TF_StringDealloc((TF_TString*)TF_TensorData(names) + i);
    TF_StringDealloc((TF_TString*)TF_TensorData(slices) + i);
  }
  TF_DeleteTensor(names);
  TF_DeleteTensor(slices);
  d = TF_NewOperation(g, "SaveV2", "save/SaveV2");
  TF_AddInput(d, file);
  TF_AddInput(d, tn);
  TF_AddInput(d, ts);
  TF_AddInputList(d, b->read, n);
  TF_DataType types[64];
  for (int i = 0; i < n; i++) types[i] = TF_FLOAT;
  TF_SetAttrTypeList(d, "dtypes", types, n);
  TF_Operation* save = finish(b, d, "save/SaveV2");
  d = TF_NewOperation(g, "Identity", "save/control_dependency");
  TF_AddInput(d, file);
  TF_AddControlInput(d, save);
  finish(b, d, "save/control_dependency");
}

int main(int argc, char** argv) {
  if (argc < 2 || argc > 7) usage();
  const char* model = argv[1];
  int steps = argc > 2 ? atoi(argv[2]) : DEFAULT_STEPS;
  int batch = argc > 3 ? atoi(argv[3]) : DEFAULT_BATCH;
  int every = argc > 4 ? atoi(argv[4]) : DEFAULT_EVERY;
  const char* ckpt = argc > 5 ? argv[5] : DEFAULT_CHECKPOINT;
  const char* config = argc > 6 ? argv[6] : NULL;
  if (steps < 1 || batch < 1 || every < 1) usage();

  TF_Status* s = TF_NewStatus();
  TF_Graph* g = TF_NewGraph();
  if (strcmp(model, "capi") == 0) {
    build_graph(g, s);
  } else {
    TF_Buffer* gd = load_proto(model, 1, s);
    TF_ImportGraphDefOptions* io = TF_NewImportGraphDefOptions();
    TF_GraphImportGraphDef(g, gd, io, s);
    check(model, s);
    TF_DeleteImportGraphDefOptions(io);
    TF_DeleteBuffer(gd);
  }

  /* The towers: tower<t>/ids while it exists; each table's row count from
   * its variable's shape attr bounds the ids. */
  TF_Output feeds[MAX_TOWERS + 1];
  int64_t vocab[MAX_TOWERS];
  int towers = 0;
  for (; towers < MAX_TOWERS; towers++) {
    char name[64];
    snprintf(name, sizeof name, "tower%d/ids", towers);
    TF_Operation* ids = TF_GraphOperationByName(g, name);
    if (ids == NULL) break;
    snprintf(name, sizeof name, "tower%d/emb", towers);
    int64_t dims[8];
    TF_OperationGetAttrShape(op(g, name), "shape", dims, 8, s);
    check(name, s);
    feeds[towers] = (TF_Output){ids, 0};
    vocab[towers] = dims[0];
  }
  if (towers == 0) die("%s has no tower0/ids placeholder", model);
  feeds[towers] = (TF_Output){op(g, "head/label"), 0};
  TF_Output loss = {op(g, "loss"), 0};
  const TF_Operation* train = op(g, "train");
  const TF_Operation* init = op(g, "init");

  TF_SessionOptions* so = TF_NewSessionOptions();
  if (config != NULL) {
    TF_Buffer* cfg = load_proto(config, 0, s);
    TF_SetConfig(so, cfg->data, cfg->length, s);
    check(config, s);
    TF_DeleteBuffer(cfg);
  }
  TF_Session* sess = TF_NewSession(g, so, s);
  check("TF_NewSession", s);
  TF_DeleteSessionOptions(so);
  run_init(g, sess, init, s);

  printf("model %s: %d towers (vocab", model, towers);
  for (int t = 0; t < towers; t++) printf(" %" PRId64, vocab[t]);
  printf("), batch %d, %d steps\n", batch, steps);

  uint64_t rng = SEED;
  TF_Tensor* values[MAX_TOWERS + 1];
  int64_t id_dims[1] = {batch}, label_dims[2] = {batch, 1};
  double t0 = 0;
  Launches launched0 = {0, 0, 0};
  for (int step = 0; step < steps; step++) {
    for (int t = 0; t < towers; t++) values[t] = TF_AllocateTensor(TF_INT64, id_dims, 1, (size_t)batch * 8);
    values[towers] = TF_AllocateTensor(TF_FLOAT, label_dims, 2, (size_t)batch * 4);
    float* label = TF_TensorData(values[towers]);
    for (int i = 0; i < batch; i++) {
      double sum = 0;
      for (int t = 0; t < towers; t++) {
        double u = uniform(&rng);
        int64_t id = (int64_t)(u * u * (double)vocab[t]);
        ((int64_t*)TF_TensorData(values[t]))[i] = id;
        sum += score(t, id);
      }
      label[i] = sum > 0 ? 1.0f : 0.0f;
    }
    int fetch = step % every == 0 || step == steps - 1;
    TF_Tensor* out = NULL;
    if (step == 1) {
      launched0 = launches_now(sess);
      t0 = now_s();
    }
    TF_SessionRun(sess, NULL, feeds, values, towers + 1, &loss, &out, fetch, &train, 1, NULL, s);
    check("train", s);
    for (int t = 0; t <= towers; t++) TF_DeleteTensor(values[t]);
    if (fetch) {
      printf("step %d loss %.9g\n", step, *(float*)TF_TensorData(out));
      TF_DeleteTensor(out);
    }
  }
  if (steps > 1) {
    double wall = now_s() - t0;
    printf("trained %d steps in %.3f s: %.2f steps/s (%.0f examples/s), first step not timed\n",
           steps - 1, wall, (steps - 1) / wall, (steps - 1) * (double)batch / wall);
  }

  report_groups(sess, launched0);
  if (strcmp(ckpt, "-") != 0) {
    TF_Output path = {op(g, "save/Const"), 0};
    TF_Tensor* pv = scalar_string(ckpt);
    const TF_Operation* save = op(g, "save/control_dependency");
    TF_SessionRun(sess, NULL, &path, &pv, 1, NULL, NULL, 0, &save, 1, NULL, s);
    check(ckpt, s);
    TF_StringDealloc(TF_TensorData(pv));
    TF_DeleteTensor(pv);
    printf("checkpoint written to %s\n", ckpt);
  }
  TF_CloseSession(sess, s);
  TF_DeleteSession(sess, s);
  TF_DeleteGraph(g);
  TF_DeleteStatus(s);
  return 0;
}
