/* The TF_* graph functions: each checks the signature against our header
   and forwards to its Go export (graph.go, attr.go). */
#include <stdio.h>

#include "internal.h"
#include "_cgo_export.h"

TF_Graph* TF_NewGraph(void) {
  TF_Graph* g = malloc(sizeof *g);
  if (g == NULL) abort();
  g->h = msNewGraph();
  ms_live(MS_LIVE_GRAPH, 1);
  return g;
}

void TF_DeleteGraph(TF_Graph* g) {
  if (g == NULL) return;
  msDeleteGraph(g->h);
  free(g);
  ms_live(MS_LIVE_GRAPH, -1);
}

void TF_GraphSetTensorShape(TF_Graph* graph, TF_Output output,
                            const int64_t* dims, const int num_dims,
                            TF_Status* status) {
  msGraphSetTensorShape(graph, &output, (int64_t*)dims, num_dims, status);
}

int TF_GraphGetTensorNumDims(TF_Graph* graph, TF_Output output,
                             TF_Status* status) {
  return msGraphGetTensorNumDims(graph, &output, status);
}

void TF_GraphGetTensorShape(TF_Graph* graph, TF_Output output, int64_t* dims,
                            int num_dims, TF_Status* status) {
  msGraphGetTensorShape(graph, &output, dims, num_dims, status);
}

TF_Operation* TF_GraphOperationByName(TF_Graph* graph, const char* oper_name) {
  return msGraphOperationByName(graph, (char*)oper_name);
}

TF_Operation* TF_GraphNextOperation(TF_Graph* graph, size_t* pos) {
  return msGraphNextOperation(graph, pos);
}

void TF_GraphToGraphDef(TF_Graph* graph, TF_Buffer* output_graph_def,
                        TF_Status* status) {
  msGraphToGraphDef(graph, output_graph_def, status);
}

void TF_GraphGetOpDef(TF_Graph* graph, const char* op_name,
                      TF_Buffer* output_op_def, TF_Status* status) {
  msGraphGetOpDef(graph, (char*)op_name, output_op_def, status);
}

void TF_GraphVersions(TF_Graph* graph, TF_Buffer* output_version_def,
                      TF_Status* status) {
  msGraphVersions(graph, output_version_def, status);
}

TF_Buffer* TF_GetAllOpList(void) { return msGetAllOpList(); }

void TF_OperationToNodeDef(TF_Operation* oper, TF_Buffer* output_node_def,
                           TF_Status* status) {
  msOperationToNodeDef(oper, output_node_def, status);
}

/* Import. */

TF_ImportGraphDefOptions* TF_NewImportGraphDefOptions(void) {
  TF_ImportGraphDefOptions* o = malloc(sizeof *o);
  if (o == NULL) abort();
  o->h = msNewImportOptions();
  ms_live(MS_LIVE_IMPORT_OPTIONS, 1);
  return o;
}

void TF_DeleteImportGraphDefOptions(TF_ImportGraphDefOptions* opts) {
  if (opts == NULL) return;
  msDeleteImportOptions(opts->h);
  free(opts);
  ms_live(MS_LIVE_IMPORT_OPTIONS, -1);
}

void TF_ImportGraphDefOptionsSetPrefix(TF_ImportGraphDefOptions* opts,
                                       const char* prefix) {
  if (opts) msImportSetString(opts->h, 0, (char*)prefix);
}

void TF_ImportGraphDefOptionsSetDefaultDevice(TF_ImportGraphDefOptions* opts,
                                              const char* device) {
  if (opts) msImportSetString(opts->h, 1, (char*)device);
}

void TF_ImportGraphDefOptionsSetUniquifyNames(TF_ImportGraphDefOptions* opts,
                                              unsigned char uniquify_names) {
  if (opts) msImportSetBool(opts->h, 0, uniquify_names);
}

void TF_ImportGraphDefOptionsSetUniquifyPrefix(TF_ImportGraphDefOptions* opts,
                                               unsigned char uniquify_prefix) {
  if (opts) msImportSetBool(opts->h, 1, uniquify_prefix);
}

void TF_ImportGraphDefOptionsAddInputMapping(TF_ImportGraphDefOptions* opts,
                                             const char* src_name,
                                             int src_index, TF_Output dst) {
  if (opts) msImportAddInputMapping(opts->h, (char*)src_name, src_index, &dst);
}

void TF_ImportGraphDefOptionsRemapControlDependency(
    TF_ImportGraphDefOptions* opts, const char* src_name, TF_Operation* dst) {
  if (opts) msImportRemapControl(opts->h, (char*)src_name, dst);
}

void TF_ImportGraphDefOptionsAddControlDependency(
    TF_ImportGraphDefOptions* opts, TF_Operation* oper) {
  if (opts) msImportAddControlDependency(opts->h, oper);
}

void TF_ImportGraphDefOptionsAddReturnOutput(TF_ImportGraphDefOptions* opts,
                                             const char* oper_name,
                                             int index) {
  if (opts) msImportAddReturnOutput(opts->h, (char*)oper_name, index);
}

int TF_ImportGraphDefOptionsNumReturnOutputs(
    const TF_ImportGraphDefOptions* opts) {
  return opts ? msImportNumReturns(opts->h, 0) : 0;
}

void TF_ImportGraphDefOptionsAddReturnOperation(TF_ImportGraphDefOptions* opts,
                                                const char* oper_name) {
  if (opts) msImportAddReturnOperation(opts->h, (char*)oper_name);
}

int TF_ImportGraphDefOptionsNumReturnOperations(
    const TF_ImportGraphDefOptions* opts) {
  return opts ? msImportNumReturns(opts->h, 1) : 0;
}

TF_ImportGraphDefResults* TF_GraphImportGraphDefWithResults(
    TF_Graph* graph, const TF_Buffer* graph_def,
    const TF_ImportGraphDefOptions* options, TF_Status* status) {
  return msGraphImport(graph, (TF_Buffer*)graph_def,
                       options ? options->h : 0, status);
}

void TF_GraphImportGraphDefWithReturnOutputs(
    TF_Graph* graph, const TF_Buffer* graph_def,
    const TF_ImportGraphDefOptions* options, TF_Output* return_outputs,
    int num_return_outputs, TF_Status* status) {
  int want = TF_ImportGraphDefOptionsNumReturnOutputs(options);
  if (num_return_outputs != want) {
    char msg[128];
    snprintf(msg, sizeof msg,
             "Expected 'num_return_outputs' to be %d, got %d", want,
             num_return_outputs);
    TF_SetStatus(status, TF_INVALID_ARGUMENT, msg);
    return;
  }
  if (num_return_outputs > 0 && return_outputs == NULL) {
    TF_SetStatus(status, TF_INVALID_ARGUMENT,
                 "TF_GraphImportGraphDefWithReturnOutputs: return_outputs is "
                 "NULL");
    return;
  }
  TF_ImportGraphDefResults* r =
      TF_GraphImportGraphDefWithResults(graph, graph_def, options, status);
  if (r == NULL) return;
  for (int i = 0; i < r->num_outputs && i < num_return_outputs; i++) {
    return_outputs[i] = r->outputs[i];
  }
  TF_DeleteImportGraphDefResults(r);
}

void TF_GraphImportGraphDef(TF_Graph* graph, const TF_Buffer* graph_def,
                            const TF_ImportGraphDefOptions* options,
                            TF_Status* status) {
  TF_DeleteImportGraphDefResults(
      TF_GraphImportGraphDefWithResults(graph, graph_def, options, status));
}

/* Building operations. */

TF_OperationDescription* TF_NewOperation(TF_Graph* graph, const char* op_type,
                                         const char* oper_name) {
  TF_OperationDescription* d = malloc(sizeof *d);
  if (d == NULL) abort();
  d->h = msNewOperation(graph, (char*)op_type, (char*)oper_name);
  ms_live(MS_LIVE_OPERATION_DESCRIPTION, 1);
  return d;
}

/* The graph takes its own lock, so the Locked variants are the same. */
TF_OperationDescription* TF_NewOperationLocked(TF_Graph* graph,
                                               const char* op_type,
                                               const char* oper_name) {
  return TF_NewOperation(graph, op_type, oper_name);
}

void TF_SetDevice(TF_OperationDescription* desc, const char* device) {
  if (desc) msSetDevice(desc->h, (char*)device);
}

void TF_AddInput(TF_OperationDescription* desc, TF_Output input) {
  if (desc) msAddInput(desc->h, &input);
}

void TF_AddInputList(TF_OperationDescription* desc, const TF_Output* inputs,
                     int num_inputs) {
  if (desc) msAddInputList(desc->h, (TF_Output*)inputs, num_inputs);
}

void TF_AddControlInput(TF_OperationDescription* desc, TF_Operation* input) {
  if (desc) msAddControlInput(desc->h, input, 0);
}

void TF_ColocateWith(TF_OperationDescription* desc, TF_Operation* op) {
  if (desc) msAddControlInput(desc->h, op, 1);
}

enum { K_STRING, K_INT, K_FLOAT, K_BOOL, K_TYPE, K_PLACEHOLDER, K_FUNC };

void TF_SetAttrString(TF_OperationDescription* desc, const char* attr_name,
                      const void* value, size_t length) {
  if (desc)
    msSetAttrScalar(desc->h, (char*)attr_name, K_STRING, (void*)value, length,
                    0, 0);
}

void TF_SetAttrStringList(TF_OperationDescription* desc, const char* attr_name,
                          const void* const* values, const size_t* lengths,
                          int num_values) {
  if (desc)
    msSetAttrList(desc->h, (char*)attr_name, K_STRING, (void*)values,
                  (size_t*)lengths, num_values);
}

void TF_SetAttrInt(TF_OperationDescription* desc, const char* attr_name,
                   int64_t value) {
  if (desc) msSetAttrScalar(desc->h, (char*)attr_name, K_INT, NULL, 0, value, 0);
}

void TF_SetAttrIntList(TF_OperationDescription* desc, const char* attr_name,
                       const int64_t* values, int num_values) {
  if (desc)
    msSetAttrList(desc->h, (char*)attr_name, K_INT, (void*)values, NULL,
                  num_values);
}

void TF_SetAttrFloat(TF_OperationDescription* desc, const char* attr_name,
                     float value) {
  if (desc)
    msSetAttrScalar(desc->h, (char*)attr_name, K_FLOAT, NULL, 0, 0, value);
}

void TF_SetAttrFloatList(TF_OperationDescription* desc, const char* attr_name,
                         const float* values, int num_values) {
  if (desc)
    msSetAttrList(desc->h, (char*)attr_name, K_FLOAT, (void*)values, NULL,
                  num_values);
}

void TF_SetAttrBool(TF_OperationDescription* desc, const char* attr_name,
                    unsigned char value) {
  if (desc)
    msSetAttrScalar(desc->h, (char*)attr_name, K_BOOL, NULL, 0, value, 0);
}

void TF_SetAttrBoolList(TF_OperationDescription* desc, const char* attr_name,
                        const unsigned char* values, int num_values) {
  if (desc)
    msSetAttrList(desc->h, (char*)attr_name, K_BOOL, (void*)values, NULL,
                  num_values);
}

void TF_SetAttrType(TF_OperationDescription* desc, const char* attr_name,
                    TF_DataType value) {
  if (desc)
    msSetAttrScalar(desc->h, (char*)attr_name, K_TYPE, NULL, 0, value, 0);
}

void TF_SetAttrTypeList(TF_OperationDescription* desc, const char* attr_name,
                        const TF_DataType* values, int num_values) {
  if (desc)
    msSetAttrList(desc->h, (char*)attr_name, K_TYPE, (void*)values, NULL,
                  num_values);
}

void TF_SetAttrPlaceholder(TF_OperationDescription* desc,
                           const char* attr_name, const char* placeholder) {
  if (desc)
    msSetAttrScalar(desc->h, (char*)attr_name, K_PLACEHOLDER,
                    (void*)placeholder,
                    placeholder ? strlen(placeholder) : 0, 0, 0);
}

void TF_SetAttrFuncName(TF_OperationDescription* desc, const char* attr_name,
                        const char* value, size_t length) {
  if (desc)
    msSetAttrScalar(desc->h, (char*)attr_name, K_FUNC, (void*)value, length, 0,
                    0);
}

void TF_SetAttrShape(TF_OperationDescription* desc, const char* attr_name,
                     const int64_t* dims, int num_dims) {
  if (desc) msSetAttrShape(desc->h, (char*)attr_name, (int64_t*)dims, num_dims);
}

void TF_SetAttrShapeList(TF_OperationDescription* desc, const char* attr_name,
                         const int64_t* const* dims, const int* num_dims,
                         int num_shapes) {
  if (desc)
    msSetAttrShapeList(desc->h, (char*)attr_name, (int64_t**)dims,
                       (int*)num_dims, num_shapes);
}

void TF_SetAttrTensorShapeProto(TF_OperationDescription* desc,
                                const char* attr_name, const void* proto,
                                size_t proto_len, TF_Status* status) {
  if (desc == NULL) {
    TF_SetStatus(status, TF_INVALID_ARGUMENT, "description is NULL");
    return;
  }
  void* p = (void*)proto;
  msSetAttrProtos(desc->h, (char*)attr_name, 0, &p, &proto_len, 1, 0, status);
}

void TF_SetAttrTensorShapeProtoList(TF_OperationDescription* desc,
                                    const char* attr_name,
                                    const void* const* protos,
                                    const size_t* proto_lens, int num_shapes,
                                    TF_Status* status) {
  if (desc == NULL) {
    TF_SetStatus(status, TF_INVALID_ARGUMENT, "description is NULL");
    return;
  }
  msSetAttrProtos(desc->h, (char*)attr_name, 0, (void**)protos,
                  (size_t*)proto_lens, num_shapes, 1, status);
}

void TF_SetAttrTensor(TF_OperationDescription* desc, const char* attr_name,
                      TF_Tensor* value, TF_Status* status) {
  if (desc == NULL) {
    TF_SetStatus(status, TF_INVALID_ARGUMENT, "description is NULL");
    return;
  }
  msSetAttrTensors(desc->h, (char*)attr_name, &value, 1, 0, status);
}

void TF_SetAttrTensorList(TF_OperationDescription* desc, const char* attr_name,
                          TF_Tensor* const* values, int num_values,
                          TF_Status* status) {
  if (desc == NULL) {
    TF_SetStatus(status, TF_INVALID_ARGUMENT, "description is NULL");
    return;
  }
  msSetAttrTensors(desc->h, (char*)attr_name, (TF_Tensor**)values, num_values,
                   1, status);
}

void TF_SetAttrValueProto(TF_OperationDescription* desc, const char* attr_name,
                          const void* proto, size_t proto_len,
                          TF_Status* status) {
  if (desc == NULL) {
    TF_SetStatus(status, TF_INVALID_ARGUMENT, "description is NULL");
    return;
  }
  void* p = (void*)proto;
  msSetAttrProtos(desc->h, (char*)attr_name, 1, &p, &proto_len, 1, 0, status);
}

TF_Operation* TF_FinishOperation(TF_OperationDescription* desc,
                                 TF_Status* status) {
  if (desc == NULL) {
    TF_SetStatus(status, TF_INVALID_ARGUMENT, "description is NULL");
    return NULL;
  }
  TF_Operation* op = msFinishOperation(desc->h, status);
  free(desc);
  ms_live(MS_LIVE_OPERATION_DESCRIPTION, -1);
  return op;
}

TF_Operation* TF_FinishOperationLocked(TF_OperationDescription* desc,
                                       TF_Status* status) {
  return TF_FinishOperation(desc, status);
}

/* Introspection. */

const char* TF_OperationName(TF_Operation* oper) { return oper->name; }

const char* TF_OperationOpType(TF_Operation* oper) { return oper->op_type; }

const char* TF_OperationDevice(TF_Operation* oper) { return oper->device; }

int TF_OperationNumOutputs(TF_Operation* oper) {
  return msOperationNumOutputs(oper);
}

TF_DataType TF_OperationOutputType(TF_Output oper_out) {
  return msOperationOutputType(&oper_out);
}

int TF_OperationOutputListLength(TF_Operation* oper, const char* arg_name,
                                 TF_Status* status) {
  return msOperationListLength(oper, (char*)arg_name, 0, status);
}

int TF_OperationNumInputs(TF_Operation* oper) {
  return msOperationNumInputs(oper);
}

TF_DataType TF_OperationInputType(TF_Input oper_in) {
  return msOperationInputType(&oper_in);
}

int TF_OperationInputListLength(TF_Operation* oper, const char* arg_name,
                                TF_Status* status) {
  return msOperationListLength(oper, (char*)arg_name, 1, status);
}

TF_Output TF_OperationInput(TF_Input oper_in) {
  TF_Output out;
  msOperationInput(&oper_in, &out);
  return out;
}

void TF_OperationAllInputs(TF_Operation* oper, TF_Output* inputs,
                           int max_inputs) {
  msOperationAllInputs(oper, inputs, max_inputs);
}

int TF_OperationOutputNumConsumers(TF_Output oper_out) {
  return msOperationOutputConsumers(&oper_out, NULL, 0);
}

int TF_OperationOutputConsumers(TF_Output oper_out, TF_Input* consumers,
                                int max_consumers) {
  return msOperationOutputConsumers(&oper_out, consumers, max_consumers);
}

int TF_OperationNumControlInputs(TF_Operation* oper) {
  return msOperationControls(oper, 0, NULL, 0);
}

int TF_OperationGetControlInputs(TF_Operation* oper,
                                 TF_Operation** control_inputs,
                                 int max_control_inputs) {
  return msOperationControls(oper, 0, control_inputs, max_control_inputs);
}

int TF_OperationNumControlOutputs(TF_Operation* oper) {
  return msOperationControls(oper, 1, NULL, 0);
}

int TF_OperationGetControlOutputs(TF_Operation* oper,
                                  TF_Operation** control_outputs,
                                  int max_control_outputs) {
  return msOperationControls(oper, 1, control_outputs, max_control_outputs);
}

TF_AttrMetadata TF_OperationGetAttrMetadata(TF_Operation* oper,
                                            const char* attr_name,
                                            TF_Status* status) {
  TF_AttrMetadata md;
  memset(&md, 0, sizeof md);
  msOperationGetAttrMetadata(oper, (char*)attr_name, &md, status);
  return md;
}

void TF_OperationGetAttrString(TF_Operation* oper, const char* attr_name,
                               void* value, size_t max_length,
                               TF_Status* status) {
  msOperationGetAttrString(oper, (char*)attr_name, value, max_length, status);
}

void TF_OperationGetAttrStringList(TF_Operation* oper, const char* attr_name,
                                   void** values, size_t* lengths,
                                   int max_values, void* storage,
                                   size_t storage_size, TF_Status* status) {
  msOperationGetAttrStringList(oper, (char*)attr_name, values, lengths,
                               max_values, storage, storage_size, status);
}

void TF_OperationGetAttrInt(TF_Operation* oper, const char* attr_name,
                            int64_t* value, TF_Status* status) {
  msOperationGetAttrScalar(oper, (char*)attr_name, 0, value, status);
}

void TF_OperationGetAttrIntList(TF_Operation* oper, const char* attr_name,
                                int64_t* values, int max_values,
                                TF_Status* status) {
  msOperationGetAttrList(oper, (char*)attr_name, 0, values, max_values, status);
}

void TF_OperationGetAttrFloat(TF_Operation* oper, const char* attr_name,
                              float* value, TF_Status* status) {
  msOperationGetAttrScalar(oper, (char*)attr_name, 1, value, status);
}

void TF_OperationGetAttrFloatList(TF_Operation* oper, const char* attr_name,
                                  float* values, int max_values,
                                  TF_Status* status) {
  msOperationGetAttrList(oper, (char*)attr_name, 1, values, max_values, status);
}

void TF_OperationGetAttrBool(TF_Operation* oper, const char* attr_name,
                             unsigned char* value, TF_Status* status) {
  msOperationGetAttrScalar(oper, (char*)attr_name, 2, value, status);
}

void TF_OperationGetAttrBoolList(TF_Operation* oper, const char* attr_name,
                                 unsigned char* values, int max_values,
                                 TF_Status* status) {
  msOperationGetAttrList(oper, (char*)attr_name, 2, values, max_values, status);
}

void TF_OperationGetAttrType(TF_Operation* oper, const char* attr_name,
                             TF_DataType* value, TF_Status* status) {
  msOperationGetAttrScalar(oper, (char*)attr_name, 3, value, status);
}

void TF_OperationGetAttrTypeList(TF_Operation* oper, const char* attr_name,
                                 TF_DataType* values, int max_values,
                                 TF_Status* status) {
  msOperationGetAttrList(oper, (char*)attr_name, 3, values, max_values, status);
}

void TF_OperationGetAttrShape(TF_Operation* oper, const char* attr_name,
                              int64_t* value, int num_dims,
                              TF_Status* status) {
  msOperationGetAttrShape(oper, (char*)attr_name, value, num_dims, status);
}

void TF_OperationGetAttrShapeList(TF_Operation* oper, const char* attr_name,
                                  int64_t** dims, int* num_dims,
                                  int num_shapes, int64_t* storage,
                                  int storage_size, TF_Status* status) {
  msOperationGetAttrShapeList(oper, (char*)attr_name, dims, num_dims,
                              num_shapes, storage, storage_size, status);
}

void TF_OperationGetAttrTensorShapeProto(TF_Operation* oper,
                                         const char* attr_name,
                                         TF_Buffer* value, TF_Status* status) {
  msOperationGetAttrTensorShapeProto(oper, (char*)attr_name, value, status);
}

void TF_OperationGetAttrTensorShapeProtoList(TF_Operation* oper,
                                             const char* attr_name,
                                             TF_Buffer** values,
                                             int max_values,
                                             TF_Status* status) {
  msOperationGetAttrTensorShapeProtoList(oper, (char*)attr_name, values,
                                         max_values, status);
}

void TF_OperationGetAttrTensor(TF_Operation* oper, const char* attr_name,
                               TF_Tensor** value, TF_Status* status) {
  msOperationGetAttrTensor(oper, (char*)attr_name, value, status);
}

void TF_OperationGetAttrTensorList(TF_Operation* oper, const char* attr_name,
                                   TF_Tensor** values, int max_values,
                                   TF_Status* status) {
  msOperationGetAttrTensorList(oper, (char*)attr_name, values, max_values,
                               status);
}

void TF_OperationGetAttrValueProto(TF_Operation* oper, const char* attr_name,
                                   TF_Buffer* output_attr_value,
                                   TF_Status* status) {
  msOperationGetAttrValueProto(oper, (char*)attr_name, output_attr_value,
                               status);
}

int TF_OperationGetNumAttrs(TF_Operation* oper) {
  return msOperationGetNumAttrs(oper);
}

int TF_OperationGetAttrNameLength(TF_Operation* oper, int i) {
  return msOperationGetAttrNameLength(oper, i);
}

void TF_OperationGetAttrName(TF_Operation* oper, int i, char* output,
                             TF_Status* status) {
  msOperationGetAttrName(oper, i, output, status);
}

void TF_AddGradients(TF_Graph* g, TF_Output* y, int ny, TF_Output* x, int nx,
                     TF_Output* dx, TF_Status* status, TF_Output* dy) {
  msAddGradients(g, NULL, y, ny, x, nx, dx, status, dy);
}

void TF_AddGradientsWithPrefix(TF_Graph* g, const char* prefix, TF_Output* y,
                               int ny, TF_Output* x, int nx, TF_Output* dx,
                               TF_Status* status, TF_Output* dy) {
  msAddGradients(g, (char*)prefix, y, ny, x, nx, dx, status, dy);
}
