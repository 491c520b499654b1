/* runner: runs the field models of test/models through the TensorFlow C API
 * of build/libtensorflow.so (our libmstream.so) and compares each fetched
 * tensor with the NumPy reference that reference.py wrote.
 *
 *   runner PLANDIR
 *
 * PLANDIR/ORDER lists the cases; PLANDIR/<case>.plan says, one directive a
 * line: the model file, an optional ConfigProto (text), input mappings to
 * new placeholders, feeds (with raw data files), fetches (with expected data
 * files and tolerances), targets, and what to expect:
 *   expect ok                    run and match the reference
 *   expect error STAGE CODE      fail at import or run (STAGE "any": either,
 *                                for graphs whose TF fails at another stage)
 *                                with TF's code, the message containing
 *                                each "contains" line
 *   expect xfail OP...           TF runs it but we cannot yet: a failure
 *                                whose message names one of OP passes as
 *                                XFAIL; a run that matches is an XPASS
 * Each case prints one line (PASS, XFAIL, XPASS or FAIL); the last line is
 * "N passed, M failed, 0 skipped, X expected failures": X counts the XFAILs,
 * N the PASSes and XPASSes (an XPASS also says to drop its xfail). */

#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mstream/mstream.h"
#include "tensorflow/c/c_api.h"
#include "tensorflow/c/tf_tstring.h"

#define MAX_ITEMS 32
#define MAX_DIMS 8
#define MAX_CONTAINS 8
#define LINE 4096

typedef struct {
  char name[256];
  int index;
  TF_DataType dtype;
  int ndims; /* -1: no expected value (fetch without a reference) */
  int64_t dims[MAX_DIMS];
  char path[1024];
  double rtol, atol;
} Item;

typedef struct {
  char source[256];
  int index;
  char placeholder[256];
  TF_DataType dtype;
} Mapping;

typedef struct {
  char name[128];
  char model[1024];
  char config[1024];
  Item feeds[MAX_ITEMS], fetches[MAX_ITEMS];
  int n_feeds, n_fetches;
  char targets[MAX_ITEMS][256];
  int n_targets;
  Mapping maps[MAX_ITEMS];
  int n_maps;
  enum { EXPECT_OK, EXPECT_ERROR, EXPECT_XFAIL } expect;
  char stage[16];    /* error: "import" or "run" */
  char code[32];     /* error: TF code name */
  char contains[MAX_CONTAINS][256];
  int n_contains;
  char xfail_ops[LINE]; /* space-separated */
  char gap[512];        /* a documented divergence from TF, or "" */
} Case;

static int n_pass, n_fail, n_xfail, n_xpass;

enum { PASS, XFAIL, XPASS, FAIL };

/* outcome prints a case's result line and counts it. A case with a known
 * gap (a divergence from TF that the case documents) turns FAIL into XFAIL
 * and PASS into XPASS, so the gap shows on every run and its closing too. */
static void outcome(const Case* c, int kind, const char* fmt, ...) {
  static const char* names[] = {"PASS", "XFAIL", "XPASS", "FAIL"};
  const char* note = "";
  if (c->gap[0] && kind == FAIL) {
    kind = XFAIL;
    note = "known gap, ";
  } else if (c->gap[0] && kind != XFAIL) {
    kind = XPASS;
    note = "gap closed, drop it: ";
  }
  printf("%s %s: %s", names[kind], c->name, note);
  if (c->gap[0]) printf("[%s] ", c->gap);
  va_list ap;
  va_start(ap, fmt);
  vprintf(fmt, ap);
  va_end(ap);
  printf("\n");
  int* counts[] = {&n_pass, &n_xfail, &n_xpass, &n_fail};
  (*counts[kind])++;
}

static void free_data(void* data, size_t len) {
  (void)len;
  free(data);
}

static const char* code_name(TF_Code c) {
  static const char* names[] = {"OK", "CANCELLED", "UNKNOWN", "INVALID_ARGUMENT",
                                "DEADLINE_EXCEEDED", "NOT_FOUND", "ALREADY_EXISTS",
                                "PERMISSION_DENIED", "RESOURCE_EXHAUSTED",
                                "FAILED_PRECONDITION", "ABORTED", "OUT_OF_RANGE",
                                "UNIMPLEMENTED", "INTERNAL", "UNAVAILABLE", "DATA_LOSS",
                                "UNAUTHENTICATED"};
  return (unsigned)c < sizeof names / sizeof *names ? names[c] : "?";
}

static char* read_file(const char* path, size_t* len) {
  FILE* f = fopen(path, "rb");
  if (f == NULL) return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char* p = malloc((size_t)n + 1);
  if (p == NULL || fread(p, 1, (size_t)n, f) != (size_t)n) {
    free(p);
    fclose(f);
    return NULL;
  }
  p[n] = 0;
  fclose(f);
  *len = (size_t)n;
  return p;
}

/* parse_item reads "NAME INDEX DTYPE NDIMS DIMS... PATH [RTOL ATOL]"; NDIMS
 * "-" (with DIMS and PATH "-") means no expected value. */
static int parse_item(char* rest, Item* it, int with_tol) {
  char* save = NULL;
  char* tok[4 + MAX_DIMS + 3];
  int n = 0;
  for (char* t = strtok_r(rest, " \n", &save); t && n < (int)(sizeof tok / sizeof *tok);
       t = strtok_r(NULL, " \n", &save)) {
    tok[n++] = t;
  }
  if (n < 5) return -1;
  snprintf(it->name, sizeof it->name, "%s", tok[0]);
  it->index = atoi(tok[1]);
  it->dtype = (TF_DataType)atoi(tok[2]);
  int k = 4;
  if (strcmp(tok[3], "-") == 0) {
    it->ndims = -1;
    k = 6; /* "- -" for dims and path */
  } else {
    it->ndims = atoi(tok[3]);
    if (it->ndims > MAX_DIMS) return -1;
    if (it->ndims == 0) k++; /* the "-" that stands for no dims */
    for (int d = 0; d < it->ndims; d++) it->dims[d] = strtoll(tok[k++], NULL, 10);
    if (k >= n) return -1;
    snprintf(it->path, sizeof it->path, "%s", tok[k++]);
  }
  if (with_tol) {
    if (k + 2 > n) return -1;
    it->rtol = atof(tok[k]);
    it->atol = atof(tok[k + 1]);
  }
  return 0;
}

static int parse_plan(const char* path, Case* c) {
  FILE* f = fopen(path, "r");
  if (f == NULL) return -1;
  memset(c, 0, sizeof *c);
  char line[LINE];
  int ok = 0;
  while (fgets(line, sizeof line, f)) {
    line[strcspn(line, "\n")] = 0;
    char* sp = strchr(line, ' ');
    char* rest = sp ? sp + 1 : line + strlen(line);
    if (sp) *sp = 0;
    if (strcmp(line, "case") == 0) {
      snprintf(c->name, sizeof c->name, "%s", rest);
    } else if (strcmp(line, "model") == 0) {
      snprintf(c->model, sizeof c->model, "%s", rest);
    } else if (strcmp(line, "config") == 0) {
      snprintf(c->config, sizeof c->config, "%s", rest);
    } else if (strcmp(line, "map") == 0 && c->n_maps < MAX_ITEMS) {
      Mapping* m = &c->maps[c->n_maps++];
      int dt;
      if (sscanf(rest, "%255s %d %255s %d", m->source, &m->index, m->placeholder, &dt) != 4)
        goto bad;
      m->dtype = (TF_DataType)dt;
    } else if (strcmp(line, "feed") == 0 && c->n_feeds < MAX_ITEMS) {
      if (parse_item(rest, &c->feeds[c->n_feeds++], 0) != 0) goto bad;
    } else if (strcmp(line, "fetch") == 0 && c->n_fetches < MAX_ITEMS) {
      if (parse_item(rest, &c->fetches[c->n_fetches++], 1) != 0) goto bad;
    } else if (strcmp(line, "target") == 0 && c->n_targets < MAX_ITEMS) {
      snprintf(c->targets[c->n_targets++], 256, "%s", rest);
    } else if (strcmp(line, "expect") == 0) {
      if (strcmp(rest, "ok") == 0) {
        c->expect = EXPECT_OK;
      } else if (strncmp(rest, "error ", 6) == 0) {
        c->expect = EXPECT_ERROR;
        if (sscanf(rest + 6, "%15s %31s", c->stage, c->code) != 2) goto bad;
      } else if (strncmp(rest, "xfail ", 6) == 0) {
        c->expect = EXPECT_XFAIL;
        snprintf(c->xfail_ops, sizeof c->xfail_ops, "%s", rest + 6);
      } else {
        goto bad;
      }
    } else if (strcmp(line, "gap") == 0) {
      snprintf(c->gap, sizeof c->gap, "%s", rest);
    } else if (strcmp(line, "contains") == 0 && c->n_contains < MAX_CONTAINS) {
      snprintf(c->contains[c->n_contains++], 256, "%s", rest);
    } else if (strcmp(line, "end") == 0) {
      ok = 1;
    } else if (line[0] != 0) {
      goto bad;
    }
  }
  fclose(f);
  return ok ? 0 : -1;
bad:
  fclose(f);
  return -1;
}

static size_t dtype_size(TF_DataType dt) {
  switch (dt) {
    case TF_BFLOAT16: return 2;
    case TF_QUINT8: return 1;
    default: return TF_DataTypeSize(dt);
  }
}

static int64_t num_elements(const int64_t* dims, int n) {
  int64_t e = 1;
  for (int i = 0; i < n; i++) e *= dims[i];
  return e;
}

/* load_tensor builds a tensor from a raw data file: little-endian elements,
 * or for TF_STRING an 8-byte length then the bytes, per element. */
static TF_Tensor* load_tensor(const Item* it, char* why, size_t why_len) {
  size_t len;
  char* data = read_file(it->path, &len);
  if (data == NULL) {
    snprintf(why, why_len, "cannot read %s", it->path);
    return NULL;
  }
  int64_t n = num_elements(it->dims, it->ndims);
  TF_Tensor* t;
  if (it->dtype == TF_STRING) {
    t = TF_AllocateTensor(TF_STRING, it->dims, it->ndims, (size_t)n * sizeof(TF_TString));
    TF_TString* s = TF_TensorData(t);
    size_t off = 0;
    for (int64_t i = 0; i < n; i++) {
      uint64_t l;
      memcpy(&l, data + off, 8);
      off += 8;
      TF_StringInit(&s[i]);
      TF_StringCopy(&s[i], data + off, (size_t)l);
      off += (size_t)l;
    }
  } else {
    size_t bytes = (size_t)n * dtype_size(it->dtype);
    if (bytes != len) {
      snprintf(why, why_len, "%s holds %zu bytes, want %zu", it->path, len, bytes);
      free(data);
      return NULL;
    }
    t = TF_AllocateTensor(it->dtype, it->dims, it->ndims, bytes);
    memcpy(TF_TensorData(t), data, bytes);
  }
  free(data);
  return t;
}

static void free_tensor(TF_Tensor* t) {
  if (t == NULL) return;
  if (TF_TensorType(t) == TF_STRING) {
    TF_TString* s = TF_TensorData(t);
    for (int64_t i = 0; i < TF_TensorElementCount(t); i++) TF_StringDealloc(&s[i]);
  }
  TF_DeleteTensor(t);
}

static double bf16_to_double(uint16_t b) {
  uint32_t u = (uint32_t)b << 16;
  float f;
  memcpy(&f, &u, 4);
  return f;
}

static double half_to_double(uint16_t h) {
  int e = (h >> 10) & 31, m = h & 1023;
  double v = e == 0 ? ldexp(m, -24) : e == 31 ? (m ? NAN : INFINITY) : ldexp(m + 1024, e - 25);
  return h & 0x8000 ? -v : v;
}

/* element returns element i of raw data of dtype dt as a double (for
 * integers exact up to 2^53, which the cases stay under). */
static double element(const void* p, TF_DataType dt, int64_t i) {
  switch (dt) {
    case TF_FLOAT: return ((const float*)p)[i];
    case TF_DOUBLE: return ((const double*)p)[i];
    case TF_INT32: return ((const int32_t*)p)[i];
    case TF_INT64: return (double)((const int64_t*)p)[i];
    case TF_INT16: return ((const int16_t*)p)[i];
    case TF_INT8: return ((const int8_t*)p)[i];
    case TF_UINT8: case TF_QUINT8: case TF_BOOL: return ((const uint8_t*)p)[i];
    case TF_BFLOAT16: return bf16_to_double(((const uint16_t*)p)[i]);
    case TF_HALF: return half_to_double(((const uint16_t*)p)[i]);
    default: return NAN;
  }
}

/* compare checks a fetched tensor against its expected item; it writes the
 * first difference into why. */
static int compare(TF_Tensor* got, const Item* want, char* why, size_t why_len) {
  if (TF_TensorType(got) != want->dtype) {
    snprintf(why, why_len, "%s:%d has dtype %d, want %d", want->name, want->index,
             (int)TF_TensorType(got), (int)want->dtype);
    return 0;
  }
  if (TF_NumDims(got) != want->ndims) {
    snprintf(why, why_len, "%s:%d has rank %d, want %d", want->name, want->index,
             TF_NumDims(got), want->ndims);
    return 0;
  }
  for (int d = 0; d < want->ndims; d++) {
    if (TF_Dim(got, d) != want->dims[d]) {
      snprintf(why, why_len, "%s:%d dim %d is %" PRId64 ", want %" PRId64, want->name,
               want->index, d, TF_Dim(got, d), want->dims[d]);
      return 0;
    }
  }
  size_t len;
  char* data = read_file(want->path, &len);
  if (data == NULL) {
    snprintf(why, why_len, "cannot read %s", want->path);
    return 0;
  }
  int64_t n = num_elements(want->dims, want->ndims);
  int ok = 1;
  if (want->dtype == TF_STRING) {
    const TF_TString* s = TF_TensorData(got);
    size_t off = 0;
    for (int64_t i = 0; i < n && ok; i++) {
      uint64_t l;
      memcpy(&l, data + off, 8);
      off += 8;
      if (TF_StringGetSize(&s[i]) != l || memcmp(TF_StringGetDataPointer(&s[i]), data + off, l) != 0) {
        snprintf(why, why_len, "%s:%d element %" PRId64 " differs (%zu bytes, want %" PRIu64 ")",
                 want->name, want->index, i, TF_StringGetSize(&s[i]), l);
        ok = 0;
      }
      off += (size_t)l;
    }
  } else {
    /* The reference writes floats at the fetched dtype, except float32 and
     * float16, which it writes as float64 to keep its own precision. */
    TF_DataType ref_dt = (want->dtype == TF_FLOAT || want->dtype == TF_HALF) ? TF_DOUBLE : want->dtype;
    if (len != (size_t)n * dtype_size(ref_dt)) {
      snprintf(why, why_len, "%s holds %zu bytes for %" PRId64 " elements", want->path, len, n);
      ok = 0;
    }
    const void* p = TF_TensorData(got);
    for (int64_t i = 0; i < n && ok; i++) {
      double g = element(p, want->dtype, i), w = element(data, ref_dt, i);
      int same = (isnan(g) && isnan(w)) || g == w || fabs(g - w) <= want->atol + want->rtol * fabs(w);
      if (!same) {
        snprintf(why, why_len, "%s:%d element %" PRId64 " is %.9g, want %.9g (rtol %g, atol %g)",
                 want->name, want->index, i, g, w, want->rtol, want->atol);
        ok = 0;
      }
    }
  }
  free(data);
  return ok;
}

/* names_listed_op reports whether msg names one of the space-separated ops
 * (or other tokens, such as "cycle") of list. */
static const char* names_listed_op(const char* msg, const char* list) {
  static char tok[256];
  const char* p = list;
  while (*p) {
    while (*p == ' ') p++;
    size_t n = strcspn(p, " ");
    if (n == 0) break;
    snprintf(tok, sizeof tok, "%.*s", (int)n, p);
    if (strstr(msg, tok) != NULL) return tok;
    p += n;
  }
  return NULL;
}

/* failed judges a failure at stage: PASS when it is the expected error,
 * XFAIL when it names an op the case lists, FAIL otherwise. */
static void failed(const Case* c, const char* stage, TF_Status* s) {
  TF_Code code = TF_GetCode(s);
  const char* msg = TF_Message(s);
  if (c->expect == EXPECT_ERROR && (strcmp(stage, c->stage) == 0 || strcmp(c->stage, "any") == 0) &&
      strcmp(code_name(code), c->code) == 0) {
    for (int i = 0; i < c->n_contains; i++) {
      if (strstr(msg, c->contains[i]) == NULL) {
        outcome(c, FAIL, "%s error %s lacks \"%s\": %s", stage, code_name(code),
               c->contains[i], msg);
        return;
      }
    }
    outcome(c, PASS, "%s error %s as TF: %s", stage, code_name(code), msg);
    return;
  }
  const char* op;
  if (c->expect == EXPECT_XFAIL && (op = names_listed_op(msg, c->xfail_ops)) != NULL) {
    outcome(c, XFAIL, "%s fails on %s (%s): %s", stage, op, code_name(code), msg);
    return;
  }
  if (c->expect == EXPECT_ERROR) {
    outcome(c, FAIL, "want %s error %s, got %s error %s: %s", c->stage, c->code, stage,
            code_name(code), msg);
  } else {
    outcome(c, FAIL, "%s error %s: %s", stage, code_name(code), msg);
  }
}

static void run_case(const Case* c) {
  TF_Status* s = TF_NewStatus();
  TF_Graph* g = TF_NewGraph();
  TF_Buffer* gdef = TF_NewBuffer();
  TF_Session* sess = NULL;
  TF_Tensor* in[MAX_ITEMS] = {0};
  TF_Tensor* out[MAX_ITEMS] = {0};
  char why[512];
  size_t len;
  char* text = read_file(c->model, &len);
  if (text == NULL) {
    outcome(c, FAIL, "cannot read %s", c->model);
    goto done;
  }
  size_t ml = strlen(c->model);
  if (ml > 3 && strcmp(c->model + ml - 3, ".pb") == 0) {
    gdef->data = text;
    gdef->length = len;
    gdef->data_deallocator = free_data;
    text = NULL;
  } else {
    MS_GraphDefTextToBinary(text, len, gdef, s);
    if (TF_GetCode(s) != TF_OK) {
      failed(c, "import", s);
      goto done;
    }
  }

  TF_ImportGraphDefOptions* opts = TF_NewImportGraphDefOptions();
  for (int i = 0; i < c->n_maps; i++) {
    TF_OperationDescription* d = TF_NewOperation(g, "Placeholder", c->maps[i].placeholder);
    TF_SetAttrType(d, "dtype", c->maps[i].dtype);
    TF_Operation* ph = TF_FinishOperation(d, s);
    if (TF_GetCode(s) != TF_OK) {
      outcome(c, FAIL, "placeholder %s: %s", c->maps[i].placeholder, TF_Message(s));
      TF_DeleteImportGraphDefOptions(opts);
      goto done;
    }
    TF_Output o = {ph, 0};
    TF_ImportGraphDefOptionsAddInputMapping(opts, c->maps[i].source, c->maps[i].index, o);
  }
  TF_GraphImportGraphDef(g, gdef, opts, s);
  TF_DeleteImportGraphDefOptions(opts);
  if (TF_GetCode(s) != TF_OK) {
    failed(c, "import", s);
    goto done;
  }

  TF_SessionOptions* so = TF_NewSessionOptions();
  if (c->config[0]) {
    char* cfg = read_file(c->config, &len);
    TF_Buffer* bin = TF_NewBuffer();
    if (cfg != NULL) MS_ConfigProtoTextToBinary(cfg, len, bin, s);
    if (cfg == NULL || TF_GetCode(s) != TF_OK) {
      outcome(c, FAIL, "config %s: %s", c->config, cfg ? TF_Message(s) : "unreadable");
      free(cfg);
      TF_DeleteBuffer(bin);
      TF_DeleteSessionOptions(so);
      goto done;
    }
    TF_SetConfig(so, bin->data, bin->length, s);
    free(cfg);
    TF_DeleteBuffer(bin);
  }
  sess = TF_NewSession(g, so, s);
  TF_DeleteSessionOptions(so);
  if (TF_GetCode(s) != TF_OK) {
    failed(c, "run", s);
    goto done;
  }

  TF_Output feeds[MAX_ITEMS], fetches[MAX_ITEMS];
  const TF_Operation* targets[MAX_ITEMS];
  for (int i = 0; i < c->n_feeds; i++) {
    TF_Operation* op = TF_GraphOperationByName(g, c->feeds[i].name);
    if (op == NULL) {
      outcome(c, FAIL, "no node %s to feed", c->feeds[i].name);
      goto done;
    }
    feeds[i] = (TF_Output){op, c->feeds[i].index};
    if ((in[i] = load_tensor(&c->feeds[i], why, sizeof why)) == NULL) {
      outcome(c, FAIL, "feed %s: %s", c->feeds[i].name, why);
      goto done;
    }
  }
  for (int i = 0; i < c->n_fetches; i++) {
    TF_Operation* op = TF_GraphOperationByName(g, c->fetches[i].name);
    if (op == NULL) {
      outcome(c, FAIL, "no node %s to fetch", c->fetches[i].name);
      goto done;
    }
    fetches[i] = (TF_Output){op, c->fetches[i].index};
  }
  for (int i = 0; i < c->n_targets; i++) {
    if ((targets[i] = TF_GraphOperationByName(g, c->targets[i])) == NULL) {
      outcome(c, FAIL, "no target %s", c->targets[i]);
      goto done;
    }
  }
  TF_SessionRun(sess, NULL, feeds, in, c->n_feeds, fetches, out, c->n_fetches, targets,
                c->n_targets, NULL, s);
  if (TF_GetCode(s) != TF_OK) {
    failed(c, "run", s);
    goto done;
  }
  if (c->expect == EXPECT_ERROR) {
    outcome(c, FAIL, "want %s error %s, but it ran", c->stage, c->code);
    goto done;
  }
  int checked = 0;
  for (int i = 0; i < c->n_fetches; i++) {
    if (c->fetches[i].ndims < 0) continue;
    if (!compare(out[i], &c->fetches[i], why, sizeof why)) {
      outcome(c, FAIL, "%s", why);
      goto done;
    }
    checked++;
  }
  if (c->expect == EXPECT_XFAIL) {
    outcome(c, XPASS, "runs and matches the reference in %d of %d fetches; drop its xfail", checked, c->n_fetches);
  } else {
    outcome(c, PASS, "%d fetches match the reference", checked);
  }

done:
  for (int i = 0; i < MAX_ITEMS; i++) {
    free_tensor(in[i]);
    free_tensor(out[i]);
  }
  if (sess != NULL) {
    TF_CloseSession(sess, s);
    TF_DeleteSession(sess, s);
  }
  TF_DeleteBuffer(gdef);
  TF_DeleteGraph(g);
  TF_DeleteStatus(s);
  free(text);
}

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: runner PLANDIR\n");
    return 2;
  }
  char path[1200];
  snprintf(path, sizeof path, "%s/ORDER", argv[1]);
  FILE* order = fopen(path, "r");
  if (order == NULL) {
    fprintf(stderr, "runner: cannot read %s\n", path);
    printf("0 passed, 1 failed\n");
    return 1;
  }
  char name[256];
  static Case c;
  while (fscanf(order, "%255s", name) == 1) {
    snprintf(path, sizeof path, "%s/%s.plan", argv[1], name);
    if (parse_plan(path, &c) != 0) {
      printf("FAIL %s: bad plan %s\n", name, path);
      n_fail++;
      continue;
    }
    run_case(&c);
    fflush(stdout);
  }
  fclose(order);
  int64_t live = MS_LiveObjects(NULL);
  if (live != 0) {
    printf("FAIL live objects: %" PRId64 " handles left after every case cleaned up\n", live);
    n_fail++;
  }
  printf("%d pass, %d xfail, %d xpass, %d fail\n", n_pass, n_xfail, n_xpass, n_fail);
  printf("%d passed, %d failed, 0 skipped, %d expected failures\n", n_pass + n_xpass, n_fail, n_xfail);
  return n_fail ? 1 : 0;
}
