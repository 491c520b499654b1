/* A libFuzzer target over the whole C API path an attacker controls: a text
 * GraphDef, imported, then run with feeds whose shapes and values come from
 * the input, fetching each operation's first output in turn.
 *
 * Input: the GraphDef in protobuf text format, optionally followed by a line
 * "--" and raw bytes. Each Placeholder is fed a tensor of its dtype; an
 * unknown dimension (or rank) takes its size from the next raw byte (0-3),
 * and the values cycle through the raw bytes (so a fed size such as Pad's
 * paddings or BroadcastTo's shape is the fuzzer's to choose).
 *
 * Every outcome is acceptable except ending the process: a crash, an abort
 * (Go's fatal "out of memory" included), a hang or a leak of live objects is
 * what the fuzzer finds. The host device is capped at 64 MiB so that hostile
 * sizes meet the limit instead of the machine's memory.
 *
 * run.sh links it twice: against build/libmstream.so for the corpus, and
 * against the library's Go code built with libFuzzer's instrumentation
 * (a c-archive, -gcflags=all=-d=libfuzzer) for the bounded mutation run in
 * `make test`, whose search is then coverage-guided through the Go code (in
 * 20 s: about 4800 edges and 300 corpus inputs, against 56 edges and 44
 * inputs when only this harness was instrumented). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tensorflow/c/c_api.h"
#include "mstream/mstream.h"

typedef struct {
  const uint8_t* p;
  size_t n, at;
} bytes;

static uint8_t next_byte(bytes* b) {
  if (b->n == 0) return 1;
  return b->p[b->at++ % b->n];
}

static const size_t kMaxFeedBytes = 1 << 16;

/* A tensor for Placeholder op, or NULL when its dtype is not one we feed. */
static TF_Tensor* make_feed(TF_Operation* op, bytes* raw, TF_Status* s) {
  TF_DataType dt = TF_OperationOutputType((TF_Output){op, 0});
  int64_t dims[4] = {0};
  int nd = -1;
  TF_AttrMetadata m = TF_OperationGetAttrMetadata(op, "shape", s);
  if (TF_GetCode(s) == TF_OK && m.total_size >= 0 && m.total_size <= 4) {
    nd = (int)m.total_size;
    TF_OperationGetAttrShape(op, "shape", dims, nd, s);
    if (TF_GetCode(s) != TF_OK) nd = -1;
  }
  if (nd < 0) nd = next_byte(raw) % 3;
  int64_t n = 1;
  for (int i = 0; i < nd; i++) {
    if (dims[i] < 0 || dims[i] > 64) dims[i] = next_byte(raw) % 4;
    n *= dims[i];
  }
  if (dt == TF_STRING) {
    TF_Tensor* t = TF_AllocateTensor(dt, dims, nd, sizeof(TF_TString) * (size_t)n);
    TF_TString* v = TF_TensorData(t);
    for (int64_t i = 0; i < n; i++) {
      char c[4];
      size_t len = next_byte(raw) % 4;
      for (size_t k = 0; k < len; k++) c[k] = (char)next_byte(raw);
      TF_StringInit(&v[i]);
      TF_StringCopy(&v[i], c, len);
    }
    return t;
  }
  size_t es = TF_DataTypeSize(dt);
  if (es == 0 || (size_t)n * es > kMaxFeedBytes) return NULL;
  TF_Tensor* t = TF_AllocateTensor(dt, dims, nd, (size_t)n * es);
  uint8_t* d = TF_TensorData(t);
  for (size_t i = 0; i < (size_t)n * es; i++) d[i] = next_byte(raw);
  if (dt == TF_BOOL)
    for (int64_t i = 0; i < n; i++) d[i] &= 1;
  return t;
}

int LLVMFuzzerInitialize(int* argc, char*** argv) {
  (void)argc;
  (void)argv;
  setenv("MSTREAM_HOST_MEMORY_MB", "64", 1);
  setenv("MSTREAM_DEVICE", "cpu", 1);
  setenv("TF_CPP_MIN_LOG_LEVEL", "3", 1);
  return 0;
}

enum { kMaxOps = 32 };

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const uint8_t* sep = NULL;
  for (size_t i = 0; i + 3 <= size; i++)
    if ((i == 0 || data[i - 1] == '\n') && memcmp(data + i, "--\n", 3) == 0) { sep = data + i; break; }
  size_t text_len = sep ? (size_t)(sep - data) : size;
  bytes raw = {sep ? sep + 3 : NULL, sep ? size - text_len - 3 : 0, 0};

  TF_Status* s = TF_NewStatus();
  TF_Buffer* def = TF_NewBuffer();
  TF_Graph* g = TF_NewGraph();
  MS_GraphDefTextToBinary((const char*)data, text_len, def, s);
  if (TF_GetCode(s) == TF_OK) {
    TF_ImportGraphDefOptions* o = TF_NewImportGraphDefOptions();
    TF_GraphImportGraphDef(g, def, o, s);
    TF_DeleteImportGraphDefOptions(o);
  }
  TF_Session* sess = NULL;
  TF_SessionOptions* so = TF_NewSessionOptions();
  if (TF_GetCode(s) == TF_OK) sess = TF_NewSession(g, so, s);
  if (sess) {
    TF_Output in[kMaxOps];
    TF_Tensor* vals[kMaxOps];
    TF_Operation* ops[kMaxOps];
    int nin = 0, nops = 0;
    size_t pos = 0;
    TF_Operation* op;
    while ((op = TF_GraphNextOperation(g, &pos)) != NULL && nops < kMaxOps) {
      ops[nops++] = op;
      if (strcmp(TF_OperationOpType(op), "Placeholder") == 0) {
        TF_Tensor* t = make_feed(op, &raw, s);
        if (t) {
          in[nin] = (TF_Output){op, 0};
          vals[nin++] = t;
        }
      }
    }
    for (int i = 0; i < nops; i++) {
      if (TF_OperationNumOutputs(ops[i]) == 0) continue;
      TF_Output f = {ops[i], 0};
      TF_Tensor* out = NULL;
      TF_SessionRun(sess, NULL, in, vals, nin, &f, &out, 1, NULL, 0, NULL, s);
      if (TF_GetCode(s) == TF_OK && out == NULL) abort(); /* OK must come with an output */
      if (TF_GetCode(s) != TF_OK && out != NULL) abort(); /* an error must not */
      if (out) TF_DeleteTensor(out);
    }
    for (int i = 0; i < nin; i++) TF_DeleteTensor(vals[i]);
    TF_CloseSession(sess, s);
    TF_DeleteSession(sess, s);
  }
  TF_DeleteSessionOptions(so);
  TF_DeleteGraph(g);
  TF_DeleteBuffer(def);
  TF_DeleteStatus(s);
  return 0;
}
