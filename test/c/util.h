/* Shared helpers of the C tests: importing text GraphDefs, building small ops,
 * reading protobuf wire format (enough to look inside GraphDef, OpList,
 * RunMetadata), and the live-object leak check over MS_LiveObjects. */
#ifndef MS_TEST_UTIL_H
#define MS_TEST_UTIL_H
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "tensorflow/c/c_api.h"
#include "mstream/mstream.h"
#include "check.h"

/* ---- Status checks --------------------------------------------------------- */

#define CHECK_OK(s, what) CHECK(TF_GetCode(s) == TF_OK, "%s: code %d: %s", what, TF_GetCode(s), TF_Message(s))
/* The status has `code` and its message contains `needle` (the culprit's name).
 * The error is then cleared: TF's getters (TF_GraphGetTensorShape,
 * TF_OperationGetAttr*, ...) leave the status as it was when they succeed, so
 * a stale error would otherwise fail the next check on TF. */
#define CHECK_ERR(s, code, needle, what)                                                          \
  do {                                                                                            \
    CHECK(TF_GetCode(s) == (code) && strstr(TF_Message(s), needle) != NULL,                       \
          "%s: want code %d naming '%s', got code %d: %s", what, (int)(code), needle, TF_GetCode(s), \
          TF_Message(s));                                                                         \
    TF_SetStatus(s, TF_OK, "");                                                                   \
  } while (0)

/* ---- Graphs ---------------------------------------------------------------- */

static inline int count_ops(TF_Graph* g) {
  size_t pos = 0;
  int n = 0;
  while (TF_GraphNextOperation(g, &pos)) n++;
  return n;
}

/* Text GraphDef -> binary buffer (caller deletes), NULL on error. */
static inline TF_Buffer* text_graph(const char* text, TF_Status* s) {
  TF_Buffer* b = TF_NewBuffer();
  MS_GraphDefTextToBinary(text, strlen(text), b, s);
  if (TF_GetCode(s) != TF_OK) { TF_DeleteBuffer(b); return NULL; }
  return b;
}

/* Imports a text GraphDef with opts (NULL: defaults); 1 on success. */
static inline int import_text_opts(TF_Graph* g, const char* text, TF_ImportGraphDefOptions* opts, TF_Status* s) {
  TF_Buffer* b = text_graph(text, s);
  if (!b) return 0;
  TF_ImportGraphDefOptions* o = opts ? opts : TF_NewImportGraphDefOptions();
  TF_GraphImportGraphDef(g, b, o, s);
  if (!opts) TF_DeleteImportGraphDefOptions(o);
  TF_DeleteBuffer(b);
  return TF_GetCode(s) == TF_OK;
}
static inline int import_text(TF_Graph* g, const char* text, TF_Status* s) { return import_text_opts(g, text, NULL, s); }

static inline TF_Output out0(TF_Graph* g, const char* name) {
  TF_Output o = {TF_GraphOperationByName(g, name), 0};
  return o;
}

static inline TF_Operation* placeholder(TF_Graph* g, const char* name, TF_DataType dt, const int64_t* dims, int nd,
                                        TF_Status* s) {
  TF_OperationDescription* d = TF_NewOperation(g, "Placeholder", name);
  TF_SetAttrType(d, "dtype", dt);
  if (nd >= 0) TF_SetAttrShape(d, "shape", dims, nd);
  return TF_FinishOperation(d, s);
}

/* A tensor of dtype dt and shape dims filled from data (elements of TF_DataTypeSize(dt)). */
static inline TF_Tensor* make_tensor(TF_DataType dt, const int64_t* dims, int nd, const void* data) {
  int64_t n = 1;
  for (int i = 0; i < nd; i++) n *= dims[i];
  size_t bytes = (size_t)n * TF_DataTypeSize(dt);
  TF_Tensor* t = TF_AllocateTensor(dt, dims, nd, bytes);
  if (t && bytes) memcpy(TF_TensorData(t), data, bytes);
  return t;
}

static inline TF_Operation* const_op(TF_Graph* g, const char* name, TF_DataType dt, const int64_t* dims, int nd,
                                     const void* data, TF_Status* s) {
  TF_Tensor* t = make_tensor(dt, dims, nd, data);
  TF_OperationDescription* d = TF_NewOperation(g, "Const", name);
  TF_SetAttrTensor(d, "value", t, s);
  TF_SetAttrType(d, "dtype", dt);
  TF_Operation* op = TF_FinishOperation(d, s);
  TF_DeleteTensor(t);
  return op;
}

static inline TF_Operation* unary(TF_Graph* g, const char* type, const char* name, TF_Output x, TF_Status* s) {
  TF_OperationDescription* d = TF_NewOperation(g, type, name);
  TF_AddInput(d, x);
  return TF_FinishOperation(d, s);
}

static inline TF_Operation* binary(TF_Graph* g, const char* type, const char* name, TF_Output a, TF_Output b,
                                   TF_Status* s) {
  TF_OperationDescription* d = TF_NewOperation(g, type, name);
  TF_AddInput(d, a);
  TF_AddInput(d, b);
  return TF_FinishOperation(d, s);
}

/* Runs one fetch with any feeds; returns the output (caller deletes) or NULL. */
static inline TF_Tensor* run1(TF_Session* sess, const TF_Output* in, TF_Tensor* const* vals, int nin, TF_Output out,
                              TF_Status* s) {
  TF_Tensor* r = NULL;
  TF_SessionRun(sess, NULL, in, vals, nin, &out, &r, 1, NULL, 0, NULL, s);
  if (TF_GetCode(s) != TF_OK && r) { TF_DeleteTensor(r); r = NULL; }
  return r;
}

/* ---- Protobuf wire format --------------------------------------------------- */

typedef struct { const uint8_t* p; const uint8_t* end; } pb_reader;
typedef struct { int field, wire; uint64_t v; const uint8_t* data; size_t len; } pb_field;

static inline pb_reader pb_of(const void* data, size_t len) {
  pb_reader r = {(const uint8_t*)data, (const uint8_t*)data + len};
  return r;
}

static inline int pb_varint(pb_reader* r, uint64_t* v) {
  *v = 0;
  for (int shift = 0; shift < 64 && r->p < r->end; shift += 7) {
    uint8_t b = *r->p++;
    *v |= (uint64_t)(b & 0x7f) << shift;
    if (!(b & 0x80)) return 1;
  }
  return 0;
}

/* Reads the next field; 0 at the end or on malformed input. */
static inline int pb_next(pb_reader* r, pb_field* f) {
  uint64_t key;
  if (r->p >= r->end || !pb_varint(r, &key)) return 0;
  f->field = (int)(key >> 3);
  f->wire = (int)(key & 7);
  f->data = NULL; f->len = 0; f->v = 0;
  switch (f->wire) {
    case 0: return pb_varint(r, &f->v);
    case 1: if (r->end - r->p < 8) return 0; memcpy(&f->v, r->p, 8); r->p += 8; return 1;
    case 5: if (r->end - r->p < 4) return 0; memcpy(&f->v, r->p, 4); r->p += 4; return 1;
    case 2: {
      uint64_t n;
      if (!pb_varint(r, &n) || n > (uint64_t)(r->end - r->p)) return 0;
      f->data = r->p; f->len = (size_t)n; r->p += n; return 1;
    }
    default: return 0;
  }
}

/* Number of occurrences of field `num` in the message. */
static inline int pb_count(const void* data, size_t len, int num) {
  pb_reader r = pb_of(data, len);
  pb_field f;
  int n = 0;
  while (pb_next(&r, &f)) n += f.field == num;
  return n;
}

/* The idx-th occurrence of length-delimited field `num`; 1 if found. */
static inline int pb_get(const void* data, size_t len, int num, int idx, pb_field* out) {
  pb_reader r = pb_of(data, len);
  while (pb_next(&r, out)) {
    if (out->field == num && idx-- == 0) return 1;
  }
  return 0;
}

/* 1 if field `num` (a string) of the message equals str. */
static inline int pb_str_eq(const pb_field* msg, int num, const char* str) {
  pb_field f;
  return pb_get(msg->data, msg->len, num, 0, &f) && f.len == strlen(str) && memcmp(f.data, str, f.len) == 0;
}

/* ---- Leak check ------------------------------------------------------------- */

static const char* const leak_kinds[] = {
    "TF_Status", "TF_Buffer", "TF_Tensor", "tensor_data", "TF_Graph", "TF_Operation",
    "TF_OperationDescription", "TF_ImportGraphDefOptions", "TF_ImportGraphDefResults",
    "TF_SessionOptions", "TF_Session", "TF_DeviceList", "prun_handle", "TFE_ContextOptions",
    "TFE_Context", "TFE_TensorHandle", "TF_Function"};
#define LEAK_KINDS ((int)(sizeof leak_kinds / sizeof leak_kinds[0]))

static inline void sleep_ms(int ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

/* MS_ON_TF: the program is built against TF's own libtensorflow (test/capidiff
 * runs test/c there too). mstream's extensions do not exist in TF, bar the two
 * text parsers that test/capidiff/tfshim.cc provides over TF's protobuf classes,
 * so the checks of MS_SessionStats, MS_LiveObjects, ... are compiled out. */
#ifdef MS_ON_TF
static inline void leak_baseline(void) {}
static inline void check_no_leaks(void) {}
#else
static int64_t leak_base[LEAK_KINDS + 1];

/* Records the live counts; call before creating anything. */
static inline void leak_baseline(void) {
  for (int i = 0; i < LEAK_KINDS; i++) leak_base[i] = MS_LiveObjects(leak_kinds[i]);
  leak_base[LEAK_KINDS] = MS_LiveObjects("goroutines");
}

/* Checks that every kind is back at its baseline. Goroutines of deleted sessions
 * may take a moment to return, so that count is polled (for up to ~5 s) before it
 * is compared. */
static inline void check_no_leaks(void) {
  for (int i = 0; i < LEAK_KINDS; i++) {
    int64_t now = MS_LiveObjects(leak_kinds[i]);
    CHECK(now == leak_base[i], "leak: %lld %s live at the end, %lld at the start", (long long)now, leak_kinds[i],
          (long long)leak_base[i]);
  }
  CHECK(MS_LiveObjects(NULL) >= 0 && MS_LiveObjects("no such kind") == -1, "MS_LiveObjects total/unknown kind");
  int64_t g = MS_LiveObjects("goroutines");
  for (int i = 0; i < 100 && g > leak_base[LEAK_KINDS]; i++) { sleep_ms(50); g = MS_LiveObjects("goroutines"); }
  CHECK(g <= leak_base[LEAK_KINDS], "leak: %lld goroutines at the end, %lld at the start", (long long)g,
        (long long)leak_base[LEAK_KINDS]);
}
#endif

#endif
