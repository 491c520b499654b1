/* tf.data through the C API: a dataset pipeline built op by op
 * (TensorSliceDataset -> BatchDatasetV2 -> PrefetchDataset -> IteratorV2,
 * MakeIterator, IteratorGetNext), read to its end: OUT_OF_RANGE "End of
 * sequence", again on the next call, then MakeIterator starts over and a
 * string handle reaches the same iterator; every handle freed.
 * test/capidiff runs this program against TF's own library too. */
#include <string.h>
#include "util.h"

static TF_Status* s;

static TF_Operation* op1(TF_Graph* g, const char* type, const char* name, const TF_Output* in, int nin,
                         const TF_DataType* types, const int64_t* dims, int rank) {
  TF_OperationDescription* d = TF_NewOperation(g, type, name);
  if (strcmp(type, "TensorSliceDataset") == 0) TF_AddInputList(d, in, nin); /* components: a list */
  else for (int i = 0; i < nin; i++) TF_AddInput(d, in[i]);
  if (types) {
    const int64_t* shapes[1] = {dims};
    int ranks[1] = {rank};
    TF_SetAttrTypeList(d, strcmp(type, "TensorSliceDataset") == 0 ? "Toutput_types" : "output_types", types, 1);
    TF_SetAttrShapeList(d, "output_shapes", shapes, ranks, 1);
  }
  if (strcmp(type, "IteratorV2") == 0) {
    TF_SetAttrString(d, "shared_name", "", 0);
    TF_SetAttrString(d, "container", "", 0);
  }
  TF_Operation* op = TF_FinishOperation(d, s);
  CHECK_OK(s, name);
  return op;
}

static TF_Output o(TF_Operation* op) { return (TF_Output){op, 0}; }

/* Fetches one batch: 1 and its values in got, 0 with s set at the end. */
static int next_batch(TF_Session* sess, TF_Output next, int32_t* got, int64_t* rows) {
  TF_Tensor* t = run1(sess, NULL, NULL, 0, next, s);
  if (!t) return 0;
  *rows = TF_Dim(t, 0);
  memcpy(got, TF_TensorData(t), TF_TensorByteSize(t));
  TF_DeleteTensor(t);
  return 1;
}

int main(void) {
  leak_baseline();
  s = TF_NewStatus();
  TF_Graph* g = TF_NewGraph();
  int32_t data[10] = {3, 1, 4, 1, 5, 9, 2, 6, 5, 3};
  int64_t ddims[2] = {5, 2}, one = 2, pre = 1;
  TF_DataType i32 = TF_INT32;
  int64_t elem[1] = {2}, batch[2] = {-1, 2};
  TF_Operation* c = const_op(g, "data", TF_INT32, ddims, 2, data, s);
  TF_Operation* bs = const_op(g, "batch_size", TF_INT64, NULL, 0, &one, s);
  unsigned char no = 0;
  TF_Operation* drop = const_op(g, "drop", TF_BOOL, NULL, 0, &no, s);
  TF_Operation* depth = const_op(g, "depth", TF_INT64, NULL, 0, &pre, s);
  TF_Output in = o(c);
  TF_Operation* slices = op1(g, "TensorSliceDataset", "slices", &in, 1, &i32, elem, 1);
  TF_Output bin[3] = {o(slices), o(bs), o(drop)};
  TF_Operation* batched = op1(g, "BatchDatasetV2", "batch", bin, 3, &i32, batch, 2);
  TF_Output pin[2] = {o(batched), o(depth)};
  TF_Operation* prefetch = op1(g, "PrefetchDataset", "prefetch", pin, 2, &i32, batch, 2);
  TF_Operation* it = op1(g, "IteratorV2", "it", NULL, 0, &i32, batch, 2);
  TF_Output min[2] = {o(prefetch), o(it)};
  const TF_Operation* make = op1(g, "MakeIterator", "make", min, 2, NULL, NULL, 0);
  CHECK_OK(s, "MakeIterator op");
  TF_Output iin = o(it);
  TF_Operation* next = op1(g, "IteratorGetNext", "next", &iin, 1, &i32, batch, 2);
  TF_Operation* str = op1(g, "IteratorToStringHandle", "str", &iin, 1, NULL, NULL, 0);
  TF_Output sin = o(str);
  TF_Operation* from = op1(g, "IteratorFromStringHandleV2", "from", &sin, 1, &i32, batch, 2);
  TF_Output fin = o(from);
  TF_Operation* next2 = op1(g, "IteratorGetNext", "next2", &fin, 1, &i32, batch, 2);
  CHECK_OK(s, "build the pipeline");

  TF_SessionOptions* so = TF_NewSessionOptions();
  TF_Session* sess = TF_NewSession(g, so, s);
  TF_DeleteSessionOptions(so);
  CHECK_OK(s, "TF_NewSession");

  int32_t got[4];
  int64_t rows = 0;
  CHECK(!next_batch(sess, o(next), got, &rows) && TF_GetCode(s) == TF_FAILED_PRECONDITION,
        "GetNext before MakeIterator: %d %s", TF_GetCode(s), TF_Message(s));
  for (int pass = 0; pass < 2; pass++) {
    TF_SessionRun(sess, NULL, NULL, NULL, 0, NULL, NULL, 0, &make, 1, NULL, s);
    CHECK_OK(s, "MakeIterator");
    int seen = 0;
    for (int b = 0; b < 3; b++) {
      if (!next_batch(sess, o(next), got, &rows)) {
        CHECK(0, "pass %d batch %d: %s", pass, b, TF_Message(s));
        break;
      }
      int64_t want = b < 2 ? 2 : 1;
      CHECK(rows == want && memcmp(got, data + seen, rows * 2 * sizeof(int32_t)) == 0, "pass %d batch %d: %lld rows",
            pass, b, (long long)rows);
      seen += (int)rows * 2;
    }
    for (int k = 0; k < 2; k++) {
      CHECK(!next_batch(sess, o(next), got, &rows) && TF_GetCode(s) == TF_OUT_OF_RANGE &&
                strstr(TF_Message(s), "End of sequence") != NULL,
            "pass %d end %d: %d %s", pass, k, TF_GetCode(s), TF_Message(s));
    }
  }
  /* Through a string handle: the same iterator, started over. */
  TF_SessionRun(sess, NULL, NULL, NULL, 0, NULL, NULL, 0, &make, 1, NULL, s);
  CHECK(next_batch(sess, o(next2), got, &rows) && rows == 2 && got[0] == 3 && got[3] == 1, "string handle: %s",
        TF_Message(s));
  CHECK(next_batch(sess, o(next), got, &rows) && rows == 2 && got[0] == 5 && got[3] == 6,
        "the handle's iterator is the node's: %s", TF_Message(s));

  TF_CloseSession(sess, s);
  TF_DeleteSession(sess, s);
  TF_DeleteGraph(g);
  TF_DeleteStatus(s);
  check_no_leaks();
  return DONE();
}
