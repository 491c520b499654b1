/* Import a text GraphDef (via MS_GraphDefTextToBinary), run it in a session, and
 * check bad inputs: unknown fetch, wrong feed dtype, unknown op (NOT_FOUND, graph
 * unchanged). The session stays usable after each error. */
#include <stdlib.h>
#include <string.h>
#include "tensorflow/c/c_api.h"
#include "mstream/mstream.h"
#include "check.h"

static const char* kGraph =
  "node { name: 'x' op: 'Placeholder' attr { key: 'dtype' value { type: DT_FLOAT } } }\n"
  "node { name: 'c' op: 'Const' attr { key: 'dtype' value { type: DT_FLOAT } }\n"
  "  attr { key: 'value' value { tensor { dtype: DT_FLOAT tensor_shape { dim { size: 2 } } float_val: 1.5 float_val: -2 } } } }\n"
  "node { name: 'y' op: 'AddV2' input: 'x' input: 'c' attr { key: 'T' value { type: DT_FLOAT } } }\n";

static int count_ops(TF_Graph* g) { size_t pos = 0; int n = 0; while (TF_GraphNextOperation(g, &pos)) n++; return n; }

static int import_text(TF_Graph* g, const char* text, TF_Status* s) {
  TF_Buffer* b = TF_NewBuffer();
  MS_GraphDefTextToBinary(text, strlen(text), b, s);
  if (TF_GetCode(s) != TF_OK) { TF_DeleteBuffer(b); return 0; }
  TF_ImportGraphDefOptions* o = TF_NewImportGraphDefOptions();
  TF_GraphImportGraphDef(g, b, o, s);
  TF_DeleteImportGraphDefOptions(o); TF_DeleteBuffer(b);
  return TF_GetCode(s) == TF_OK;
}

int main(void) {
  TF_Status* s = TF_NewStatus();
  TF_Graph* g = TF_NewGraph();
  CHECK(import_text(g, kGraph, s), "import: %s", TF_Message(s));
  CHECK(count_ops(g) == 3, "ops %d", count_ops(g));
  TF_SessionOptions* so = TF_NewSessionOptions();
  TF_Session* sess = TF_NewSession(g, so, s);
  CHECK(TF_GetCode(s) == TF_OK, "new session: %s", TF_Message(s));
  TF_Output x = {TF_GraphOperationByName(g, "x"), 0}, y = {TF_GraphOperationByName(g, "y"), 0};
  CHECK(x.oper && y.oper, "lookup");
  int64_t dims[1] = {2};
  for (int round = 0; round < 2 && sess && x.oper && y.oper; round++) {
    TF_Tensor* in = TF_AllocateTensor(TF_FLOAT, dims, 1, 8);
    float* p = TF_TensorData(in); p[0] = 1 + round; p[1] = 3;
    TF_Tensor* out = NULL;
    TF_SessionRun(sess, NULL, &x, &in, 1, &y, &out, 1, NULL, 0, NULL, s);
    CHECK(TF_GetCode(s) == TF_OK, "run %d: %s", round, TF_Message(s));
    if (out) {
      float* q = TF_TensorData(out);
      CHECK(q[0] == 2.5f + round && q[1] == 1.0f, "run %d got %g %g", round, q[0], q[1]);
      TF_DeleteTensor(out);
    }
    TF_DeleteTensor(in);
    /* A feed of the wrong dtype: INVALID_ARGUMENT, then the next round runs again. */
    TF_Tensor* bad = TF_AllocateTensor(TF_INT32, dims, 1, 8);
    out = NULL;
    TF_SessionRun(sess, NULL, &x, &bad, 1, &y, &out, 1, NULL, 0, NULL, s);
    CHECK(TF_GetCode(s) == TF_INVALID_ARGUMENT, "wrong dtype feed code %d: %s", TF_GetCode(s), TF_Message(s));
    if (out) TF_DeleteTensor(out);
    TF_DeleteTensor(bad);
  }
  TF_CloseSession(sess, s); TF_DeleteSession(sess, s);
  CHECK(TF_GetCode(s) == TF_OK, "delete session: %s", TF_Message(s));
  TF_DeleteSessionOptions(so);

  CHECK(!import_text(g, "node { name: 'z' op: 'NoSuchOpAnywhere' }", s) && TF_GetCode(s) == TF_NOT_FOUND,
        "unknown op code %d: %s", TF_GetCode(s), TF_Message(s));
  CHECK(strstr(TF_Message(s), "NoSuchOpAnywhere") != NULL, "message does not name the op: %s", TF_Message(s));
  CHECK(count_ops(g) == 3, "graph changed by failed import: %d ops", count_ops(g));
  TF_DeleteGraph(g); TF_DeleteStatus(s);
  return DONE();
}
