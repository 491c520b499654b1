/* TF_NewWhile, TF_FinishWhile, TF_AbortWhile: the cases of TF's own
 * tensorflow/c/while_loop_test.cc (basic and nested loops, every error of the
 * params with TF's exact message), plus loops over several dtypes, a name
 * scope that is already taken and repeated runs; and that every handle is
 * freed. test/capidiff runs this program against TF's own library too. */
#include <stdio.h>
#include "util.h"

static TF_Status* s;

static TF_Operation* scalar_i32(TF_Graph* g, const char* name, int32_t v) {
  return const_op(g, name, TF_INT32, NULL, 0, &v, s);
}

static TF_Output o0(TF_Operation* op) { return (TF_Output){op, 0}; }

/* A loop over ninputs int32 placeholders p0, p1, ... of a fresh graph. */
typedef struct {
  TF_Graph* g;
  TF_Output in[4];
  TF_Output out[4];
  TF_WhileParams* p;
  TF_WhileParams params;
} loop;

static void init(loop* l, int n) {
  memset(l, 0, sizeof *l);
  l->g = TF_NewGraph();
  for (int i = 0; i < n; i++) {
    char name[8];
    snprintf(name, sizeof name, "p%d", i);
    l->in[i] = o0(placeholder(l->g, name, TF_INT32, NULL, -1, s));
    l->out[i] = (TF_Output){NULL, -1};
  }
  CHECK_OK(s, "placeholders");
  TF_WhileParams p = TF_NewWhile(l->g, l->in, n, s);
  CHECK_OK(s, "TF_NewWhile");
  memcpy(&l->params, &p, sizeof p);
  l->p = &l->params;
  l->p->name = "test_loop";
}

/* The valid cond of TF's tests: cond_input0 < 1. */
static void simple_cond(loop* l) {
  TF_Operation* one = scalar_i32(l->p->cond_graph, "scalar", 1);
  TF_Operation* lt = binary(l->p->cond_graph, "Less", "less_than", l->p->cond_inputs[0], o0(one), s);
  CHECK_OK(s, "cond");
  l->p->cond_output = o0(lt);
}

/* Runs the graph feeding p_i = vals[i] and fetching outs; 1 on success. */
static int run_ints(TF_Graph* g, const TF_Output* in, const int32_t* vals, int nin, const TF_Output* outs, int nout,
                    int32_t* got) {
  TF_SessionOptions* so = TF_NewSessionOptions();
  TF_Session* sess = TF_NewSession(g, so, s);
  TF_DeleteSessionOptions(so);
  TF_Tensor* feeds[4];
  for (int i = 0; i < nin; i++) feeds[i] = make_tensor(TF_INT32, NULL, 0, &vals[i]);
  TF_Tensor* res[4] = {0};
  TF_SessionRun(sess, NULL, in, feeds, nin, outs, res, nout, NULL, 0, NULL, s);
  int ok = TF_GetCode(s) == TF_OK;
  CHECK_OK(s, "run");
  for (int i = 0; i < nout; i++) {
    if (res[i] && TF_TensorType(res[i]) == TF_INT32 && TF_NumDims(res[i]) == 0) got[i] = *(int32_t*)TF_TensorData(res[i]);
    else ok = 0;
    if (res[i]) TF_DeleteTensor(res[i]);
  }
  for (int i = 0; i < nin; i++) TF_DeleteTensor(feeds[i]);
  TF_Status* cs = TF_NewStatus();
  TF_CloseSession(sess, cs);
  TF_DeleteSession(sess, cs);
  TF_DeleteStatus(cs);
  return ok;
}

/* while (in0 < in1) in0 += in1 + 1, as TF's BasicLoop. */
static void test_basic(void) {
  loop l;
  init(&l, 2);
  CHECK(l.p->ninputs == 2 && l.p->cond_graph && l.p->body_graph && l.p->cond_inputs && l.p->body_inputs &&
            l.p->body_outputs && l.p->cond_inputs[1].oper && l.p->body_inputs[1].oper,
        "params filled");
  CHECK(count_ops(l.g) == 2, "TF_NewWhile leaves the graph as it was: %d ops", count_ops(l.g));
  CHECK(strcmp(TF_OperationName(l.p->cond_inputs[1].oper), "cond_input1") == 0 &&
            strcmp(TF_OperationOpType(l.p->body_inputs[0].oper), "Placeholder") == 0,
        "cond/body inputs are Placeholders named as TF names them");
  CHECK(l.p->body_outputs[0].oper == NULL && l.p->body_outputs[1].index == -1 && l.p->cond_output.oper == NULL,
        "outputs unset");
  TF_Operation* lt = binary(l.p->cond_graph, "Less", "less_than", l.p->cond_inputs[0], l.p->cond_inputs[1], s);
  l.p->cond_output = o0(lt);
  TF_Operation* add1 = binary(l.p->body_graph, "AddV2", "add1", l.p->body_inputs[0], l.p->body_inputs[1], s);
  TF_Operation* one = scalar_i32(l.p->body_graph, "one", 1);
  TF_Operation* add2 = binary(l.p->body_graph, "AddV2", "add2", o0(add1), o0(one), s);
  CHECK_OK(s, "body");
  l.p->body_outputs[0] = o0(add2);
  l.p->body_outputs[1] = l.p->body_inputs[1];
  TF_FinishWhile(l.p, s, l.out);
  CHECK_OK(s, "TF_FinishWhile");
  CHECK(l.out[0].oper && l.out[1].oper && l.out[0].index == 0, "outputs set");
  if (l.out[0].oper) {
    CHECK(strcmp(TF_OperationName(l.out[0].oper), "test_loop/Exit") == 0 &&
              strcmp(TF_OperationName(l.out[1].oper), "test_loop/Exit_1") == 0,
          "outputs are the Exits: %s", TF_OperationName(l.out[0].oper));
  }
  CHECK(TF_GraphOperationByName(l.g, "test_loop/cond/cond_input0") == NULL &&
            TF_GraphOperationByName(l.g, "test_loop/body/body_input1") == NULL,
        "the input placeholders are not copied");
  CHECK(TF_GraphOperationByName(l.g, "test_loop/body/add2") != NULL &&
            TF_GraphOperationByName(l.g, "test_loop/cond/less_than") != NULL &&
            TF_GraphOperationByName(l.g, "test_loop/LoopCond") != NULL,
        "cond and body copied under the loop's scope");
  int32_t vals[2] = {-9, 2}, got[2] = {0, 0};
  if (run_ints(l.g, l.in, vals, 2, l.out, 2, got)) CHECK(got[0] == 3 && got[1] == 2, "loop gives %d %d", got[0], got[1]);
  /* The loop does not run at all when the cond is false at once. */
  int32_t vals2[2] = {7, 2};
  if (run_ints(l.g, l.in, vals2, 2, l.out, 2, got)) CHECK(got[0] == 7 && got[1] == 2, "no iteration: %d %d", got[0], got[1]);
  TF_DeleteGraph(l.g);
}

/* TF's NestedLoop: an inner loop built in the outer body graph. */
static void test_nested(void) {
  loop l;
  init(&l, 2);
  TF_Operation* six = scalar_i32(l.p->cond_graph, "scalar", 6);
  l.p->cond_output = o0(binary(l.p->cond_graph, "Less", "less_than", l.p->cond_inputs[0], o0(six), s));
  TF_Output inner_in[2] = {l.p->body_inputs[0], l.p->body_inputs[1]};
  TF_WhileParams ip = TF_NewWhile(l.p->body_graph, inner_in, 2, s);
  CHECK_OK(s, "inner TF_NewWhile");
  ip.name = "inner_loop";
  TF_Operation* three = scalar_i32(ip.cond_graph, "scalar", 3);
  ip.cond_output = o0(binary(ip.cond_graph, "Less", "less_than", ip.cond_inputs[0], o0(three), s));
  TF_Operation* one = scalar_i32(ip.body_graph, "one", 1);
  TF_Operation* two = scalar_i32(ip.body_graph, "two", 2);
  ip.body_outputs[1] = o0(binary(ip.body_graph, "AddV2", "add", ip.body_inputs[1], o0(one), s));
  ip.body_outputs[0] = o0(binary(ip.body_graph, "AddV2", "add2", ip.body_inputs[0], o0(two), s));
  CHECK_OK(s, "inner body");
  TF_Output inner_out[2] = {{NULL, -1}, {NULL, -1}};
  TF_FinishWhile(&ip, s, inner_out);
  CHECK_OK(s, "inner TF_FinishWhile");
  l.p->body_outputs[0] = o0(binary(l.p->body_graph, "AddV2", "add", l.p->body_inputs[0], inner_out[1], s));
  l.p->body_outputs[1] = inner_out[1];
  TF_FinishWhile(l.p, s, l.out);
  CHECK_OK(s, "outer TF_FinishWhile");
  CHECK(TF_GraphOperationByName(l.g, "test_loop/cond/scalar") && TF_GraphOperationByName(l.g, "test_loop/body/add") &&
            TF_GraphOperationByName(l.g, "test_loop/body/inner_loop/body/one") &&
            TF_GraphOperationByName(l.g, "test_loop/body/inner_loop/cond/less_than"),
        "nested names");
  int32_t vals[2] = {0, 0}, got[2] = {0, 0};
  if (run_ints(l.g, l.in, vals, 2, l.out, 2, got)) CHECK(got[0] == 8 && got[1] == 3, "nested gives %d %d", got[0], got[1]);
  TF_DeleteGraph(l.g);
}

/* Loop variables of three dtypes; one unchanged, one only read by the cond. */
static void test_dtypes(void) {
  TF_Graph* g = TF_NewGraph();
  TF_Output in[3] = {o0(placeholder(g, "i", TF_INT32, NULL, 0, s)), o0(placeholder(g, "f", TF_FLOAT, NULL, 0, s)),
                     o0(placeholder(g, "n", TF_INT64, NULL, 0, s))};
  TF_WhileParams p = TF_NewWhile(g, in, 3, s);
  CHECK_OK(s, "TF_NewWhile");
  TF_DataType t;
  t = TF_OperationOutputType(p.cond_inputs[1]);
  CHECK(t == TF_FLOAT, "cond_input1 dtype %d", t);
  t = TF_OperationOutputType(p.body_inputs[2]);
  CHECK(t == TF_INT64, "body_input2 dtype %d", t);
  TF_OperationDescription* d = TF_NewOperation(p.cond_graph, "Cast", "cast");
  TF_AddInput(d, p.cond_inputs[2]);
  TF_SetAttrType(d, "DstT", TF_INT32);
  TF_Operation* c = TF_FinishOperation(d, s);
  p.cond_output = o0(binary(p.cond_graph, "Less", "lt", p.cond_inputs[0], o0(c), s));
  TF_Operation* one = scalar_i32(p.body_graph, "one", 1);
  float half = 0.5f;
  TF_Operation* h = const_op(p.body_graph, "half", TF_FLOAT, NULL, 0, &half, s);
  p.body_outputs[0] = o0(binary(p.body_graph, "AddV2", "inc", p.body_inputs[0], o0(one), s));
  p.body_outputs[1] = o0(binary(p.body_graph, "Mul", "halve", p.body_inputs[1], o0(h), s));
  p.body_outputs[2] = p.body_inputs[2];
  CHECK_OK(s, "body");
  p.name = "loop";
  TF_Output out[3];
  TF_FinishWhile(&p, s, out);
  CHECK_OK(s, "TF_FinishWhile");
  TF_SessionOptions* so = TF_NewSessionOptions();
  TF_Session* sess = TF_NewSession(g, so, s);
  TF_DeleteSessionOptions(so);
  int32_t i0 = 1;
  float f0 = 40;
  int64_t n0 = 5;
  TF_Tensor* feeds[3] = {make_tensor(TF_INT32, NULL, 0, &i0), make_tensor(TF_FLOAT, NULL, 0, &f0),
                         make_tensor(TF_INT64, NULL, 0, &n0)};
  TF_Tensor* res[3] = {0};
  TF_SessionRun(sess, NULL, in, feeds, 3, out, res, 3, NULL, 0, NULL, s);
  CHECK_OK(s, "run");
  if (TF_GetCode(s) == TF_OK) {
    CHECK(*(int32_t*)TF_TensorData(res[0]) == 5 && *(float*)TF_TensorData(res[1]) == 2.5f &&
              *(int64_t*)TF_TensorData(res[2]) == 5,
          "dtypes loop gives %d %g %lld", *(int32_t*)TF_TensorData(res[0]), *(float*)TF_TensorData(res[1]),
          (long long)*(int64_t*)TF_TensorData(res[2]));
  }
  for (int i = 0; i < 3; i++) {
    TF_DeleteTensor(feeds[i]);
    if (res[i]) TF_DeleteTensor(res[i]);
  }
  TF_CloseSession(sess, s);
  TF_DeleteSession(sess, s);
  TF_DeleteGraph(g);
}

/* A loop under a name that a node already has gets the scope name_1 (TF's
 * NewSubScope), with the frame name unchanged; a second loop of the same
 * frame name is refused. */
static void test_scope_taken(void) {
  TF_Graph* g = TF_NewGraph();
  TF_Output in = o0(placeholder(g, "w", TF_INT32, NULL, 0, s));
  TF_Output out;
  for (int k = 0; k < 2; k++) {
    TF_WhileParams p = TF_NewWhile(g, &in, 1, s);
    TF_Operation* ten = scalar_i32(p.cond_graph, "ten", 10);
    p.cond_output = o0(binary(p.cond_graph, "Less", "lt", p.cond_inputs[0], o0(ten), s));
    TF_Operation* two = scalar_i32(p.body_graph, "two", 2);
    p.body_outputs[0] = o0(binary(p.body_graph, "Mul", "dbl", p.body_inputs[0], o0(two), s));
    p.name = "w";
    TF_FinishWhile(&p, s, k ? &in : &out);
    if (k == 0) {
      CHECK_OK(s, "TF_FinishWhile");
    } else {
      CHECK(TF_GetCode(s) == TF_INVALID_ARGUMENT &&
                strcmp(TF_Message(s), "WhileContext with frame name 'w' already exists") == 0,
            "second loop of frame w: %s", TF_Message(s));
      TF_SetStatus(s, TF_OK, "");
    }
  }
  CHECK(strcmp(TF_OperationName(out.oper), "w_1/Exit") == 0, "loop's exit: %s", TF_OperationName(out.oper));
  TF_Operation* enter = TF_GraphOperationByName(g, "w_1/Enter");
  CHECK(enter != NULL, "w_1/Enter");
  if (enter) {
    char frame[16] = {0};
    TF_OperationGetAttrString(enter, "frame_name", frame, 1, s);
    CHECK_OK(s, "frame_name");
    CHECK(frame[0] == 'w', "frame name %s", frame);
  }
  int32_t v = 3, got = 0;
  TF_Output x = out0(g, "w");
  if (run_ints(g, &x, &v, 1, &out, 1, &got)) CHECK(got == 12, "loop gives %d", got);
  TF_DeleteGraph(g);
}

/* Every error case of TF's while_loop_test.cc, with its exact message. */
static void expect_error(loop* l, const char* msg, const char* what) {
  TF_FinishWhile(l->p, s, l->out);
  CHECK(TF_GetCode(s) == TF_INVALID_ARGUMENT && strcmp(TF_Message(s), msg) == 0, "%s: code %d '%s'", what,
        TF_GetCode(s), TF_Message(s));
  TF_SetStatus(s, TF_OK, "");
  TF_DeleteGraph(l->g);
}

static void test_errors(void) {
  loop l;
  TF_Graph* g = TF_NewGraph();
  TF_WhileParams p = TF_NewWhile(g, NULL, 0, s);
  CHECK(TF_GetCode(s) == TF_INVALID_ARGUMENT && strcmp(TF_Message(s), "TF_NewWhile() must be passed at least one input") == 0,
        "no inputs: %s", TF_Message(s));
  CHECK(p.cond_graph == NULL && p.body_graph == NULL && p.ninputs == 0, "empty params");
  TF_SetStatus(s, TF_OK, "");
  TF_DeleteGraph(g);

  init(&l, 1);
  l.p->body_outputs[0] = l.p->body_inputs[0];
  expect_error(&l, "TF_WhileParams `cond_output` field isn't set", "unset cond output");

  init(&l, 1);
  l.p->cond_output = l.p->cond_inputs[0];
  l.p->body_outputs[0] = l.p->body_inputs[0];
  expect_error(&l, "BuildWhileLoop: 'cond' argument must return a boolean output, got int32", "int32 cond");

  init(&l, 1);
  l.p->cond_output = l.in[0];
  l.p->body_outputs[0] = l.p->body_inputs[0];
  expect_error(&l, "Requested return tensor 'p0:0' not found in graph def", "cond output from the parent");

  init(&l, 1);
  simple_cond(&l);
  l.p->cond_output.index = 100;
  l.p->body_outputs[0] = l.p->body_inputs[0];
  expect_error(&l, "Invalid return output 100 of node 'less_than', which has 1 output(s)", "cond output index");

  init(&l, 1);
  simple_cond(&l);
  expect_error(&l, "TF_WhileParams `body_outputs[0]` field isn't set", "unset body output");

  init(&l, 1);
  simple_cond(&l);
  l.p->body_outputs[0] = l.in[0];
  expect_error(&l, "Requested return tensor 'p0:0' not found in graph def", "body output from the parent");

  init(&l, 1);
  simple_cond(&l);
  l.p->body_outputs[0] = l.p->body_inputs[0];
  l.p->name = NULL;
  expect_error(&l, "TF_WhileParams `name` field is null", "NULL name");

  /* An op of the wrong input type in the body fails at TF_FinishOperation;
     TF_AbortWhile then frees the params. */
  init(&l, 1);
  simple_cond(&l);
  TF_OperationDescription* d = TF_NewOperation(l.p->body_graph, "FakeQuantWithMinMaxArgs", "float_op");
  TF_AddInput(d, l.p->body_inputs[0]);
  TF_FinishOperation(d, s);
  CHECK(TF_GetCode(s) == TF_INVALID_ARGUMENT, "bad types: code %d", TF_GetCode(s));
  TF_SetStatus(s, TF_OK, "");
  TF_AbortWhile(l.p);
  CHECK(count_ops(l.g) == 1, "abort leaves the graph: %d ops", count_ops(l.g));
  TF_DeleteGraph(l.g);

  /* Params not made by TF_NewWhile: nothing is freed. */
  TF_WhileParams bad = {0, NULL, NULL, {NULL, 0}, NULL, NULL, NULL, NULL};
  TF_Output o;
  TF_FinishWhile(&bad, s, &o);
  CHECK(TF_GetCode(s) == TF_INVALID_ARGUMENT &&
            strcmp(TF_Message(s), "TF_WhileParams must be created by successful TF_NewWhile() call") == 0,
        "bad params: %s", TF_Message(s));
  TF_SetStatus(s, TF_OK, "");
}

/* The parent graph deleted before TF_FinishWhile is kept alive by the params
   in mstream (TF reads freed memory); TF_AbortWhile then releases both. */
static void test_abort_after_parent(void) {
#ifndef MS_ON_TF
  TF_Graph* g = TF_NewGraph();
  TF_Output in = o0(placeholder(g, "x", TF_INT32, NULL, 0, s));
  TF_WhileParams p = TF_NewWhile(g, &in, 1, s);
  CHECK_OK(s, "TF_NewWhile");
  TF_DeleteGraph(g);
  TF_AbortWhile(&p);
#endif
}

int main(void) {
  s = TF_NewStatus();
  leak_baseline();
  test_basic();
  test_nested();
  test_dtypes();
  test_scope_taken();
  test_errors();
  test_abort_after_parent();
  check_no_leaks();
  TF_DeleteStatus(s);
  return DONE();
}
