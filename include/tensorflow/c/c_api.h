/* mstream: TensorFlow 2.15 C API, ABI-compatible declarations. */
#ifndef TENSORFLOW_C_C_API_H_
#define TENSORFLOW_C_C_API_H_

/* The graph and session API: build or import a graph, run it in a session.
 *
 * Conventions that hold throughout:
 * - Every TF_New* / TF_Load* result is owned by the caller and freed with the
 *   matching TF_Delete*; passing NULL to a TF_Delete* function is a no-op.
 * - TF_Operation pointers belong to their graph and stay valid until the
 *   graph is deleted.
 * - Strings and arrays passed in are copied unless a comment says otherwise;
 *   strings returned belong to the object they came from.
 * - A function that takes a TF_Status* reports failure there and leaves its
 *   out-parameters unspecified (or NULL) on error.
 * - A TF_Buffer* out-parameter must come from TF_NewBuffer() (or be an empty
 *   buffer); the result written into it is freed with TF_DeleteBuffer.
 * Functions marked "not supported by mstream" exist for ABI compatibility and
 * fail with TF_UNIMPLEMENTED or do nothing. */

#include <stddef.h>
#include <stdint.h>

#include "tensorflow/c/c_api_macros.h"
#include "tensorflow/c/tf_attrtype.h"
#include "tensorflow/c/tf_buffer.h"
#include "tensorflow/c/tf_datatype.h"
#include "tensorflow/c/tf_status.h"
#include "tensorflow/c/tf_tensor.h"
#include "tensorflow/c/tf_tstring.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Library ---------------------------------------------------------- */

/* Returns the version string of the library; it is static, do not free. */
TF_CAPI_EXPORT extern const char* TF_Version(void);

/* Parses the serialized TensorProto in *from into the existing tensor *to. */
TF_CAPI_EXPORT extern void TF_TensorFromProto(const TF_Buffer* from,
                                              TF_Tensor* to, TF_Status* status);

/* A string returned by reference: the callee owns `data`; do not free it. */
typedef struct TF_StringView {
  const char* data;
  size_t len;
} TF_StringView;

/* ---- Session options -------------------------------------------------- */

/* Options for TF_NewSession: a target and a ConfigProto. */
typedef struct TF_SessionOptions TF_SessionOptions;

/* Returns new default options. Free with TF_DeleteSessionOptions. */
TF_CAPI_EXPORT extern TF_SessionOptions* TF_NewSessionOptions(void);

/* Sets the target ("", "local", or host:port entries separated by commas);
   the string is copied. */
TF_CAPI_EXPORT extern void TF_SetTarget(TF_SessionOptions* options,
                                        const char* target);

/* Sets the configuration from a serialized ConfigProto (copied). A proto
   that does not parse is reported in *status. */
TF_CAPI_EXPORT extern void TF_SetConfig(TF_SessionOptions* options,
                                        const void* proto, size_t proto_len,
                                        TF_Status* status);

/* Frees session options. */
TF_CAPI_EXPORT extern void TF_DeleteSessionOptions(TF_SessionOptions*);

/* ---- Graphs and operations -------------------------------------------- */

/* A computation graph; thread-safe, and shareable between sessions. */
typedef struct TF_Graph TF_Graph;

/* Returns a new empty graph. Free with TF_DeleteGraph. */
TF_CAPI_EXPORT extern TF_Graph* TF_NewGraph(void);

/* Releases the caller's reference; the graph is freed once no session uses
   it. */
TF_CAPI_EXPORT extern void TF_DeleteGraph(TF_Graph*);

/* An operation under construction; its graph must outlive it. It is
   consumed by TF_FinishOperation. */
typedef struct TF_OperationDescription TF_OperationDescription;

/* An operation in a graph, owned by the graph. Adding operations does not
   invalidate existing TF_Operation pointers. */
typedef struct TF_Operation TF_Operation;

/* One input of an operation (passed by value). */
typedef struct TF_Input {
  TF_Operation* oper;
  int index;
} TF_Input;

/* One output of an operation (passed by value). */
typedef struct TF_Output {
  TF_Operation* oper;
  int index;
} TF_Output;

/* A function: a named subgraph with inputs and outputs, callable as an op. */
typedef struct TF_Function TF_Function;

/* Options for building functions (none are defined). */
typedef struct TF_FunctionOptions TF_FunctionOptions;

/* Merges dims[0, num_dims) into the known shape of `output` (num_dims -1:
   unknown rank; a dim -1: unknown size). Fails if `output` is not in the
   graph or the shapes are incompatible. */
TF_CAPI_EXPORT extern void TF_GraphSetTensorShape(TF_Graph* graph,
                                                  TF_Output output,
                                                  const int64_t* dims,
                                                  const int num_dims,
                                                  TF_Status* status);

/* Returns the known rank of `output`, or -1 if unknown. */
TF_CAPI_EXPORT extern int TF_GraphGetTensorNumDims(TF_Graph* graph,
                                                   TF_Output output,
                                                   TF_Status* status);

/* Writes the known shape of `output` into dims[0, num_dims), -1 for unknown
   sizes; num_dims must equal TF_GraphGetTensorNumDims. */
TF_CAPI_EXPORT extern void TF_GraphGetTensorShape(TF_Graph* graph,
                                                  TF_Output output,
                                                  int64_t* dims, int num_dims,
                                                  TF_Status* status);

/* TF_NewOperation for a caller that already holds the graph's lock. */
TF_CAPI_EXPORT extern TF_OperationDescription* TF_NewOperationLocked(
    TF_Graph* graph, const char* op_type, const char* oper_name);

/* Starts building an operation of type op_type named oper_name (both
   copied). Finish it with TF_FinishOperation, which frees the description. */
TF_CAPI_EXPORT extern TF_OperationDescription* TF_NewOperation(
    TF_Graph* graph, const char* op_type, const char* oper_name);

/* Requests a device for the operation (copied). */
TF_CAPI_EXPORT extern void TF_SetDevice(TF_OperationDescription* desc,
                                        const char* device);

/* Adds the next input: a single tensor. Inputs are added in OpDef order. */
TF_CAPI_EXPORT extern void TF_AddInput(TF_OperationDescription* desc,
                                       TF_Output input);

/* Adds the next input: a list of tensors (inputs is copied). */
TF_CAPI_EXPORT extern void TF_AddInputList(TF_OperationDescription* desc,
                                           const TF_Output* inputs,
                                           int num_inputs);

/* Adds a control dependency on `input`. */
TF_CAPI_EXPORT extern void TF_AddControlInput(TF_OperationDescription* desc,
                                              TF_Operation* input);

/* Asks for the operation to be placed on the same device as `op`. */
TF_CAPI_EXPORT extern void TF_ColocateWith(TF_OperationDescription* desc,
                                           TF_Operation* op);

/* Attribute setters. Names, values and arrays are copied. */
TF_CAPI_EXPORT extern void TF_SetAttrString(TF_OperationDescription* desc,
                                            const char* attr_name,
                                            const void* value, size_t length);
TF_CAPI_EXPORT extern void TF_SetAttrStringList(TF_OperationDescription* desc,
                                                const char* attr_name,
                                                const void* const* values,
                                                const size_t* lengths,
                                                int num_values);
TF_CAPI_EXPORT extern void TF_SetAttrInt(TF_OperationDescription* desc,
                                         const char* attr_name, int64_t value);
TF_CAPI_EXPORT extern void TF_SetAttrIntList(TF_OperationDescription* desc,
                                             const char* attr_name,
                                             const int64_t* values,
                                             int num_values);
TF_CAPI_EXPORT extern void TF_SetAttrFloat(TF_OperationDescription* desc,
                                           const char* attr_name, float value);
TF_CAPI_EXPORT extern void TF_SetAttrFloatList(TF_OperationDescription* desc,
                                               const char* attr_name,
                                               const float* values,
                                               int num_values);
TF_CAPI_EXPORT extern void TF_SetAttrBool(TF_OperationDescription* desc,
                                          const char* attr_name,
                                          unsigned char value);
TF_CAPI_EXPORT extern void TF_SetAttrBoolList(TF_OperationDescription* desc,
                                              const char* attr_name,
                                              const unsigned char* values,
                                              int num_values);
TF_CAPI_EXPORT extern void TF_SetAttrType(TF_OperationDescription* desc,
                                          const char* attr_name,
                                          TF_DataType value);
TF_CAPI_EXPORT extern void TF_SetAttrTypeList(TF_OperationDescription* desc,
                                              const char* attr_name,
                                              const TF_DataType* values,
                                              int num_values);
/* Sets the attribute to a placeholder naming a function attribute. */
TF_CAPI_EXPORT extern void TF_SetAttrPlaceholder(TF_OperationDescription* desc,
                                                 const char* attr_name,
                                                 const char* placeholder);

/* Sets a function-valued attribute to the function named value[0, length). */
TF_CAPI_EXPORT extern void TF_SetAttrFuncName(TF_OperationDescription* desc,
                                              const char* attr_name,
                                              const char* value, size_t length);

/* Sets a shape attribute; num_dims -1 means unknown rank, a dim -1 an unknown
   size. */
TF_CAPI_EXPORT extern void TF_SetAttrShape(TF_OperationDescription* desc,
                                           const char* attr_name,
                                           const int64_t* dims, int num_dims);
/* Sets a list of shapes: shape i is dims[i][0, num_dims[i]). */
TF_CAPI_EXPORT extern void TF_SetAttrShapeList(TF_OperationDescription* desc,
                                               const char* attr_name,
                                               const int64_t* const* dims,
                                               const int* num_dims,
                                               int num_shapes);
/* Sets a shape attribute from a serialized TensorShapeProto. */
TF_CAPI_EXPORT extern void TF_SetAttrTensorShapeProto(
    TF_OperationDescription* desc, const char* attr_name, const void* proto,
    size_t proto_len, TF_Status* status);
/* Sets a list of shapes from serialized TensorShapeProtos. */
TF_CAPI_EXPORT extern void TF_SetAttrTensorShapeProtoList(
    TF_OperationDescription* desc, const char* attr_name,
    const void* const* protos, const size_t* proto_lens, int num_shapes,
    TF_Status* status);

/* Sets a tensor attribute; the value is copied, the caller keeps `value`. */
TF_CAPI_EXPORT extern void TF_SetAttrTensor(TF_OperationDescription* desc,
                                            const char* attr_name,
                                            TF_Tensor* value,
                                            TF_Status* status);
/* Sets a list of tensors; values are copied, the caller keeps them. */
TF_CAPI_EXPORT extern void TF_SetAttrTensorList(TF_OperationDescription* desc,
                                                const char* attr_name,
                                                TF_Tensor* const* values,
                                                int num_values,
                                                TF_Status* status);

/* Sets an attribute from a serialized AttrValue proto. */
TF_CAPI_EXPORT extern void TF_SetAttrValueProto(TF_OperationDescription* desc,
                                                const char* attr_name,
                                                const void* proto,
                                                size_t proto_len,
                                                TF_Status* status);

/* TF_FinishOperation for a caller that already holds the graph's lock. */
TF_CAPI_EXPORT extern TF_Operation* TF_FinishOperationLocked(
    TF_OperationDescription* desc, TF_Status* status);

/* Adds the described operation to the graph and frees `desc` (on success
   and on failure). Returns the operation (owned by the graph) or NULL. */
TF_CAPI_EXPORT extern TF_Operation* TF_FinishOperation(
    TF_OperationDescription* desc, TF_Status* status);

/* Operation properties. Returned strings belong to the operation. */
TF_CAPI_EXPORT extern const char* TF_OperationName(TF_Operation* oper);
TF_CAPI_EXPORT extern const char* TF_OperationOpType(TF_Operation* oper);
TF_CAPI_EXPORT extern const char* TF_OperationDevice(TF_Operation* oper);

/* Number of outputs, the dtype of one, and the length of the output list
   named arg_name in the OpDef. */
TF_CAPI_EXPORT extern int TF_OperationNumOutputs(TF_Operation* oper);
TF_CAPI_EXPORT extern TF_DataType TF_OperationOutputType(TF_Output oper_out);
TF_CAPI_EXPORT extern int TF_OperationOutputListLength(TF_Operation* oper,
                                                       const char* arg_name,
                                                       TF_Status* status);

/* Number of inputs, the dtype of one, and the length of the input list
   named arg_name in the OpDef. */
TF_CAPI_EXPORT extern int TF_OperationNumInputs(TF_Operation* oper);
TF_CAPI_EXPORT extern TF_DataType TF_OperationInputType(TF_Input oper_in);
TF_CAPI_EXPORT extern int TF_OperationInputListLength(TF_Operation* oper,
                                                      const char* arg_name,
                                                      TF_Status* status);

/* Returns the output that feeds input `oper_in`. */
TF_CAPI_EXPORT extern TF_Output TF_OperationInput(TF_Input oper_in);

/* Writes the sources of all inputs into inputs[0, max_inputs);
   max_inputs must be TF_OperationNumInputs(oper). */
TF_CAPI_EXPORT extern void TF_OperationAllInputs(TF_Operation* oper,
                                                 TF_Output* inputs,
                                                 int max_inputs);

/* Returns how many inputs consume `oper_out`. */
TF_CAPI_EXPORT extern int TF_OperationOutputNumConsumers(TF_Output oper_out);

/* Writes up to max_consumers consumers of `oper_out` into the caller's array
   and returns the total number of consumers. */
TF_CAPI_EXPORT extern int TF_OperationOutputConsumers(TF_Output oper_out,
                                                      TF_Input* consumers,
                                                      int max_consumers);

/* Returns the number of control inputs of `oper`. */
TF_CAPI_EXPORT extern int TF_OperationNumControlInputs(TF_Operation* oper);

/* Writes up to max_control_inputs control inputs into the caller's array
   and returns their total number. */
TF_CAPI_EXPORT extern int TF_OperationGetControlInputs(
    TF_Operation* oper, TF_Operation** control_inputs, int max_control_inputs);

/* Returns the number of operations that have `oper` as a control input. */
TF_CAPI_EXPORT extern int TF_OperationNumControlOutputs(TF_Operation* oper);

/* Writes up to max_control_outputs such operations into the caller's array
   and returns their total number. */
TF_CAPI_EXPORT extern int TF_OperationGetControlOutputs(
    TF_Operation* oper, TF_Operation** control_outputs,
    int max_control_outputs);

/* Describes an attribute value (returned by value).
   total_size: string -> byte length; string list -> sum of byte lengths;
   shape -> rank (-1 unknown); shape list -> sum of ranks; else undefined. */
typedef struct TF_AttrMetadata {
  unsigned char is_list; /* 1 if the value is a list */
  int64_t list_size;     /* list length, when is_list */
  TF_AttrType type;      /* type of the value, or of its elements */
  int64_t total_size;
} TF_AttrMetadata;

/* Returns the metadata of attribute attr_name of oper. */
TF_CAPI_EXPORT extern TF_AttrMetadata TF_OperationGetAttrMetadata(
    TF_Operation* oper, const char* attr_name, TF_Status* status);

/* Attribute getters. They write into caller-owned memory sized from
   TF_OperationGetAttrMetadata: scalars into *value, lists into
   values[0, max_values). */

/* Copies up to max_length bytes of a string attribute into `value`. */
TF_CAPI_EXPORT extern void TF_OperationGetAttrString(TF_Operation* oper,
                                                     const char* attr_name,
                                                     void* value,
                                                     size_t max_length,
                                                     TF_Status* status);

/* Copies a string list into `storage` (storage_size bytes) and sets
   values[i] (pointing into storage) and lengths[i]; fails if storage is too
   small. */
TF_CAPI_EXPORT extern void TF_OperationGetAttrStringList(
    TF_Operation* oper, const char* attr_name, void** values, size_t* lengths,
    int max_values, void* storage, size_t storage_size, TF_Status* status);

TF_CAPI_EXPORT extern void TF_OperationGetAttrInt(TF_Operation* oper,
                                                  const char* attr_name,
                                                  int64_t* value,
                                                  TF_Status* status);

TF_CAPI_EXPORT extern void TF_OperationGetAttrIntList(TF_Operation* oper,
                                                      const char* attr_name,
                                                      int64_t* values,
                                                      int max_values,
                                                      TF_Status* status);

TF_CAPI_EXPORT extern void TF_OperationGetAttrFloat(TF_Operation* oper,
                                                    const char* attr_name,
                                                    float* value,
                                                    TF_Status* status);

TF_CAPI_EXPORT extern void TF_OperationGetAttrFloatList(TF_Operation* oper,
                                                        const char* attr_name,
                                                        float* values,
                                                        int max_values,
                                                        TF_Status* status);

TF_CAPI_EXPORT extern void TF_OperationGetAttrBool(TF_Operation* oper,
                                                   const char* attr_name,
                                                   unsigned char* value,
                                                   TF_Status* status);

TF_CAPI_EXPORT extern void TF_OperationGetAttrBoolList(TF_Operation* oper,
                                                       const char* attr_name,
                                                       unsigned char* values,
                                                       int max_values,
                                                       TF_Status* status);

TF_CAPI_EXPORT extern void TF_OperationGetAttrType(TF_Operation* oper,
                                                   const char* attr_name,
                                                   TF_DataType* value,
                                                   TF_Status* status);

TF_CAPI_EXPORT extern void TF_OperationGetAttrTypeList(TF_Operation* oper,
                                                       const char* attr_name,
                                                       TF_DataType* values,
                                                       int max_values,
                                                       TF_Status* status);

/* Writes the dims of a shape attribute into value[0, num_dims). */
TF_CAPI_EXPORT extern void TF_OperationGetAttrShape(TF_Operation* oper,
                                                    const char* attr_name,
                                                    int64_t* value,
                                                    int num_dims,
                                                    TF_Status* status);

/* Copies a shape list into `storage` (storage_size int64s) and sets
   dims[i] (pointing into storage) and num_dims[i] (-1: unknown rank);
   fails if storage is too small. */
TF_CAPI_EXPORT extern void TF_OperationGetAttrShapeList(
    TF_Operation* oper, const char* attr_name, int64_t** dims, int* num_dims,
    int num_shapes, int64_t* storage, int storage_size, TF_Status* status);

/* Writes a shape attribute as a serialized TensorShapeProto into *value. */
TF_CAPI_EXPORT extern void TF_OperationGetAttrTensorShapeProto(
    TF_Operation* oper, const char* attr_name, TF_Buffer* value,
    TF_Status* status);

/* Sets values[i] to new buffers holding serialized TensorShapeProtos; the
   caller owns them and frees each with TF_DeleteBuffer. */
TF_CAPI_EXPORT extern void TF_OperationGetAttrTensorShapeProtoList(
    TF_Operation* oper, const char* attr_name, TF_Buffer** values,
    int max_values, TF_Status* status);

/* Sets *value to a new tensor; the caller owns it (TF_DeleteTensor). */
TF_CAPI_EXPORT extern void TF_OperationGetAttrTensor(TF_Operation* oper,
                                                     const char* attr_name,
                                                     TF_Tensor** value,
                                                     TF_Status* status);

/* Sets values[i] to new tensors; the caller owns every non-NULL entry. */
TF_CAPI_EXPORT extern void TF_OperationGetAttrTensorList(TF_Operation* oper,
                                                         const char* attr_name,
                                                         TF_Tensor** values,
                                                         int max_values,
                                                         TF_Status* status);

/* Writes the attribute as a serialized AttrValue into *output_attr_value. */
TF_CAPI_EXPORT extern void TF_OperationGetAttrValueProto(
    TF_Operation* oper, const char* attr_name, TF_Buffer* output_attr_value,
    TF_Status* status);

/* Returns the number of attributes of `oper`. */
TF_CAPI_EXPORT extern int TF_OperationGetNumAttrs(TF_Operation* oper);

/* Returns the length of the i-th attribute's name, or -1 if there is none. */
TF_CAPI_EXPORT extern int TF_OperationGetAttrNameLength(TF_Operation* oper,
                                                        int i);

/* Copies the i-th attribute's name into `output`, which must hold
   TF_OperationGetAttrNameLength(oper, i) bytes (no NUL is written). */
TF_CAPI_EXPORT extern void TF_OperationGetAttrName(TF_Operation* oper, int i,
                                                   char* output,
                                                   TF_Status* status);

/* Returns the operation named oper_name, or NULL. */
TF_CAPI_EXPORT extern TF_Operation* TF_GraphOperationByName(
    TF_Graph* graph, const char* oper_name);

/* Iterates over the operations: start with *pos = 0 and call until NULL. */
TF_CAPI_EXPORT extern TF_Operation* TF_GraphNextOperation(TF_Graph* graph,
                                                          size_t* pos);

/* Writes the graph as a serialized GraphDef into *output_graph_def. */
TF_CAPI_EXPORT extern void TF_GraphToGraphDef(TF_Graph* graph,
                                              TF_Buffer* output_graph_def,
                                              TF_Status* status);

/* Writes the serialized OpDef of op_name (an op or a function in the graph)
   into *output_op_def; NOT_FOUND if there is none. */
TF_CAPI_EXPORT extern void TF_GraphGetOpDef(TF_Graph* graph,
                                            const char* op_name,
                                            TF_Buffer* output_op_def,
                                            TF_Status* status);

/* Writes the graph's serialized VersionDef into *output_version_def. */
TF_CAPI_EXPORT extern void TF_GraphVersions(TF_Graph* graph,
                                            TF_Buffer* output_version_def,
                                            TF_Status* status);

/* Writes the operation as a serialized NodeDef into *output_node_def. */
TF_CAPI_EXPORT extern void TF_OperationToNodeDef(TF_Operation* oper,
                                                 TF_Buffer* output_node_def,
                                                 TF_Status* status);

/* ---- GraphDef import -------------------------------------------------- */

/* Options for TF_GraphImportGraphDef*. Every string given is copied. */
typedef struct TF_ImportGraphDefOptions TF_ImportGraphDefOptions;

/* Returns new default options. Free with TF_DeleteImportGraphDefOptions. */
TF_CAPI_EXPORT extern TF_ImportGraphDefOptions* TF_NewImportGraphDefOptions(
    void);
/* Frees import options. */
TF_CAPI_EXPORT extern void TF_DeleteImportGraphDefOptions(
    TF_ImportGraphDefOptions* opts);

/* Prefixes every imported node name with `prefix` + "/". */
TF_CAPI_EXPORT extern void TF_ImportGraphDefOptionsSetPrefix(
    TF_ImportGraphDefOptions* opts, const char* prefix);

/* Device for imported nodes that name none. */
TF_CAPI_EXPORT extern void TF_ImportGraphDefOptionsSetDefaultDevice(
    TF_ImportGraphDefOptions* opts, const char* device);

/* If nonzero, renames imported nodes that clash with existing ones. */
TF_CAPI_EXPORT extern void TF_ImportGraphDefOptionsSetUniquifyNames(
    TF_ImportGraphDefOptions* opts, unsigned char uniquify_names);

/* If nonzero, makes the prefix unique instead of failing on a clash. */
TF_CAPI_EXPORT extern void TF_ImportGraphDefOptionsSetUniquifyPrefix(
    TF_ImportGraphDefOptions* opts, unsigned char uniquify_prefix);

/* Replaces uses of src_name:src_index in the GraphDef by `dst`. */
TF_CAPI_EXPORT extern void TF_ImportGraphDefOptionsAddInputMapping(
    TF_ImportGraphDefOptions* opts, const char* src_name, int src_index,
    TF_Output dst);

/* Replaces control dependencies on src_name by ones on `dst`. */
TF_CAPI_EXPORT extern void TF_ImportGraphDefOptionsRemapControlDependency(
    TF_ImportGraphDefOptions* opts, const char* src_name, TF_Operation* dst);

/* Adds a control dependency on `oper` to every imported node without
   inputs. */
TF_CAPI_EXPORT extern void TF_ImportGraphDefOptionsAddControlDependency(
    TF_ImportGraphDefOptions* opts, TF_Operation* oper);

/* Asks for output oper_name:index to be returned in the results. */
TF_CAPI_EXPORT extern void TF_ImportGraphDefOptionsAddReturnOutput(
    TF_ImportGraphDefOptions* opts, const char* oper_name, int index);

/* Returns how many return outputs have been requested. */
TF_CAPI_EXPORT extern int TF_ImportGraphDefOptionsNumReturnOutputs(
    const TF_ImportGraphDefOptions* opts);

/* Asks for operation oper_name to be returned in the results. */
TF_CAPI_EXPORT extern void TF_ImportGraphDefOptionsAddReturnOperation(
    TF_ImportGraphDefOptions* opts, const char* oper_name);

/* Returns how many return operations have been requested. */
TF_CAPI_EXPORT extern int TF_ImportGraphDefOptionsNumReturnOperations(
    const TF_ImportGraphDefOptions* opts);

/* What an import produced. Arrays it hands out belong to it. */
typedef struct TF_ImportGraphDefResults TF_ImportGraphDefResults;

/* Sets *outputs to the requested return outputs; the array belongs to
   `results`. */
TF_CAPI_EXPORT extern void TF_ImportGraphDefResultsReturnOutputs(
    TF_ImportGraphDefResults* results, int* num_outputs, TF_Output** outputs);

/* Sets *opers to the requested return operations; the array belongs to
   `results`. */
TF_CAPI_EXPORT extern void TF_ImportGraphDefResultsReturnOperations(
    TF_ImportGraphDefResults* results, int* num_opers, TF_Operation*** opers);

/* Lists input mappings whose source was not in the GraphDef; the arrays and
   strings belong to `results`. */
TF_CAPI_EXPORT extern void TF_ImportGraphDefResultsMissingUnusedInputMappings(
    TF_ImportGraphDefResults* results, int* num_missing_unused_input_mappings,
    const char*** src_names, int** src_indexes);

/* Frees import results. */
TF_CAPI_EXPORT extern void TF_DeleteImportGraphDefResults(
    TF_ImportGraphDefResults* results);

/* Imports the serialized GraphDef into `graph`. Returns results owned by the
   caller (TF_DeleteImportGraphDefResults), or NULL on error, in which case
   the graph is unchanged. */
TF_CAPI_EXPORT extern TF_ImportGraphDefResults*
TF_GraphImportGraphDefWithResults(TF_Graph* graph, const TF_Buffer* graph_def,
                                  const TF_ImportGraphDefOptions* options,
                                  TF_Status* status);

/* Imports the GraphDef and writes the requested return outputs into the
   caller's array; num_return_outputs must match the options. */
TF_CAPI_EXPORT extern void TF_GraphImportGraphDefWithReturnOutputs(
    TF_Graph* graph, const TF_Buffer* graph_def,
    const TF_ImportGraphDefOptions* options, TF_Output* return_outputs,
    int num_return_outputs, TF_Status* status);

/* Imports the GraphDef into `graph`. */
TF_CAPI_EXPORT extern void TF_GraphImportGraphDef(
    TF_Graph* graph, const TF_Buffer* graph_def,
    const TF_ImportGraphDefOptions* options, TF_Status* status);

/* ---- Functions ------------------------------------------------------- */

/* Adds copies of `func` and its gradient `grad` (may be NULL) to `g`. */
TF_CAPI_EXPORT extern void TF_GraphCopyFunction(TF_Graph* g,
                                                const TF_Function* func,
                                                const TF_Function* grad,
                                                TF_Status* status);

/* Returns the number of functions in `g`. */
TF_CAPI_EXPORT extern int TF_GraphNumFunctions(TF_Graph* g);

/* Writes up to max_func functions of `g` into funcs and returns how many;
   the caller owns each one (TF_DeleteFunction). */
TF_CAPI_EXPORT extern int TF_GraphGetFunctions(TF_Graph* g, TF_Function** funcs,
                                               int max_func, TF_Status* status);

/* ---- While loops ------------------------------------------------------ */

/* Filled in by TF_NewWhile; the caller builds cond_graph and body_graph,
   then calls TF_FinishWhile or TF_AbortWhile, which free them. */
typedef struct TF_WhileParams {
  const int ninputs;

  TF_Graph* const cond_graph;
  const TF_Output* const cond_inputs;
  TF_Output cond_output; /* set by the caller: a scalar bool */

  TF_Graph* const body_graph;
  const TF_Output* const body_inputs;
  TF_Output* const body_outputs; /* set by the caller, ninputs entries */

  const char* name; /* may be set by the caller; copied */
} TF_WhileParams;

/* Starts a while loop over inputs[0, ninputs): fresh cond and body graphs
   with a Placeholder per loop variable. The caller keeps `inputs` alive until
   TF_FinishWhile or TF_AbortWhile, which read it again. */
TF_CAPI_EXPORT extern TF_WhileParams TF_NewWhile(TF_Graph* g, TF_Output* inputs,
                                                 int ninputs,
                                                 TF_Status* status);

/* Adds the loop to the graph (Enter, Merge, Switch, LoopCond,
   NextIteration, Exit under the scope `name`, as TF's C API builds it) and
   writes its ninputs outputs into `outputs`. Frees the params' graphs and
   arrays unless params do not come from TF_NewWhile. */
TF_CAPI_EXPORT extern void TF_FinishWhile(const TF_WhileParams* params,
                                          TF_Status* status,
                                          TF_Output* outputs);

/* Abandons a loop started by TF_NewWhile and frees its resources. */
TF_CAPI_EXPORT extern void TF_AbortWhile(const TF_WhileParams* params);

/* ---- Gradients -------------------------------------------------------- */

/* Adds ops computing d(sum y)/dx for each x, seeded by dx (NULL: ones), and
   writes the nx results into dy. */
TF_CAPI_EXPORT void TF_AddGradients(TF_Graph* g, TF_Output* y, int ny,
                                    TF_Output* x, int nx, TF_Output* dx,
                                    TF_Status* status, TF_Output* dy);

/* TF_AddGradients with the new ops named under `prefix` (unique in g). */
TF_CAPI_EXPORT void TF_AddGradientsWithPrefix(TF_Graph* g, const char* prefix,
                                              TF_Output* y, int ny,
                                              TF_Output* x, int nx,
                                              TF_Output* dx, TF_Status* status,
                                              TF_Output* dy);

/* ---- Functions, continued --------------------------------------------- */

/* Builds a function from opers (num_opers -1: the whole graph) with the given
   inputs and outputs. The caller owns the result (TF_DeleteFunction).
   mstream: append_hash_to_fn_name is UNIMPLEMENTED. */
TF_CAPI_EXPORT extern TF_Function* TF_GraphToFunction(
    const TF_Graph* fn_body, const char* fn_name,
    unsigned char append_hash_to_fn_name, int num_opers,
    const TF_Operation* const* opers, int ninputs, const TF_Output* inputs,
    int noutputs, const TF_Output* outputs, const char* const* output_names,
    const TF_FunctionOptions* opts, const char* description, TF_Status* status);

/* TF_GraphToFunction with named control outputs. */
TF_CAPI_EXPORT extern TF_Function* TF_GraphToFunctionWithControlOutputs(
    const TF_Graph* fn_body, const char* fn_name,
    unsigned char append_hash_to_fn_name, int num_opers,
    const TF_Operation* const* opers, int ninputs, const TF_Output* inputs,
    int noutputs, const TF_Output* outputs, const char* const* output_names,
    int ncontrol_outputs, const TF_Operation* const* control_outputs,
    const char* const* control_output_names, const TF_FunctionOptions* opts,
    const char* description, TF_Status* status);

/* Returns the function's name; it belongs to the function. */
TF_CAPI_EXPORT extern const char* TF_FunctionName(TF_Function* func);

/* Writes the function as a serialized FunctionDef into *output_func_def. */
TF_CAPI_EXPORT extern void TF_FunctionToFunctionDef(TF_Function* func,
                                                    TF_Buffer* output_func_def,
                                                    TF_Status* status);

/* Returns a function parsed from a serialized FunctionDef, owned by the
   caller (TF_DeleteFunction), or NULL. */
TF_CAPI_EXPORT extern TF_Function* TF_FunctionImportFunctionDef(
    const void* proto, size_t proto_len, TF_Status* status);

/* Sets a function attribute from a serialized AttrValue. */
TF_CAPI_EXPORT extern void TF_FunctionSetAttrValueProto(TF_Function* func,
                                                        const char* attr_name,
                                                        const void* proto,
                                                        size_t proto_len,
                                                        TF_Status* status);

/* Writes a function attribute as a serialized AttrValue. */
TF_CAPI_EXPORT extern void TF_FunctionGetAttrValueProto(
    TF_Function* func, const char* attr_name, TF_Buffer* output_attr_value,
    TF_Status* status);

/* Frees a function; graphs it was copied into keep their copies. */
TF_CAPI_EXPORT extern void TF_DeleteFunction(TF_Function* func);

/* Tries to compute `output` without running a session (possible only if it
   depends on no feeds). Returns 1 and sets *result (owned by the caller) on
   success; returns 0 otherwise, with an error in *status only if the graph
   is at fault. */
TF_CAPI_EXPORT extern unsigned char TF_TryEvaluateConstant(TF_Graph* graph,
                                                           TF_Output output,
                                                           TF_Tensor** result,
                                                           TF_Status* status);

/* ---- Sessions --------------------------------------------------------- */

/* Runs a graph. */
typedef struct TF_Session TF_Session;

/* Returns a new session on `graph` (which it keeps alive; nodes may still be
   added), or NULL. Takes ownership of nothing. Free with TF_DeleteSession. */
TF_CAPI_EXPORT extern TF_Session* TF_NewSession(TF_Graph* graph,
                                                const TF_SessionOptions* opts,
                                                TF_Status* status);

/* Loads a SavedModel from export_dir (tags select the MetaGraphDef) into the
   new graph `graph` and returns a session on it; writes the MetaGraphDef
   into meta_graph_def when non-NULL. Not supported by mstream. */
TF_CAPI_EXPORT extern TF_Session* TF_LoadSessionFromSavedModel(
    const TF_SessionOptions* session_options, const TF_Buffer* run_options,
    const char* export_dir, const char* const* tags, int tags_len,
    TF_Graph* graph, TF_Buffer* meta_graph_def, TF_Status* status);

/* Closes a session; not allowed after TF_DeleteSession. */
TF_CAPI_EXPORT extern void TF_CloseSession(TF_Session*, TF_Status* status);

/* Frees a session and all its resources, even if *status reports an error,
   and releases its reference to the graph. */
TF_CAPI_EXPORT extern void TF_DeleteSession(TF_Session*, TF_Status* status);

/* Runs the graph: feeds inputs[i] with input_values[i], computes
   outputs[0, noutputs) into output_values and runs target_opers.
   run_options (a serialized RunOptions) and run_metadata (an empty buffer
   that receives a serialized RunMetadata) may be NULL. The caller keeps
   ownership of the inputs and of both buffers, and takes ownership of
   every output tensor (TF_DeleteTensor). On failure output_values are NULL. */
TF_CAPI_EXPORT extern void TF_SessionRun(
    TF_Session* session,
    const TF_Buffer* run_options,
    const TF_Output* inputs, TF_Tensor* const* input_values, int ninputs,
    const TF_Output* outputs, TF_Tensor** output_values, int noutputs,
    const TF_Operation* const* target_opers, int ntargets,
    TF_Buffer* run_metadata,
    TF_Status*);

/* Prepares a partial run with the given feeds and fetches. On success sets
   *handle to a string the caller frees with TF_DeletePRunHandle; on failure
   *handle is NULL. */
TF_CAPI_EXPORT extern void TF_SessionPRunSetup(
    TF_Session*,
    const TF_Output* inputs, int ninputs,
    const TF_Output* outputs, int noutputs,
    const TF_Operation* const* target_opers, int ntargets,
    const char** handle,
    TF_Status*);

/* Continues the partial run `handle`; ownership as in TF_SessionRun. */
TF_CAPI_EXPORT extern void TF_SessionPRun(
    TF_Session*, const char* handle,
    const TF_Output* inputs, TF_Tensor* const* input_values, int ninputs,
    const TF_Output* outputs, TF_Tensor** output_values, int noutputs,
    const TF_Operation* const* target_opers, int ntargets,
    TF_Status*);

/* Frees a partial-run handle; the partial run cannot be continued after. */
TF_CAPI_EXPORT extern void TF_DeletePRunHandle(const char* handle);

/* ---- Deprecated session API ------------------------------------------ */

/* A session that owns its graph, extended by GraphDef bytes. */
typedef struct TF_DeprecatedSession TF_DeprecatedSession;

/* Returns a new deprecated session (TF_DeleteDeprecatedSession). */
TF_CAPI_EXPORT extern TF_DeprecatedSession* TF_NewDeprecatedSession(
    const TF_SessionOptions*, TF_Status* status);
/* Closes a deprecated session. */
TF_CAPI_EXPORT extern void TF_CloseDeprecatedSession(TF_DeprecatedSession*,
                                                     TF_Status* status);
/* Frees a deprecated session. */
TF_CAPI_EXPORT extern void TF_DeleteDeprecatedSession(TF_DeprecatedSession*,
                                                      TF_Status* status);
/* Clears the named resource containers (all when ncontainers is 0) of the
   target in `opt`. */
TF_CAPI_EXPORT extern void TF_Reset(const TF_SessionOptions* opt,
                                    const char** containers, int ncontainers,
                                    TF_Status* status);
/* Adds the nodes of a serialized GraphDef to the session's graph. */
TF_CAPI_EXPORT extern void TF_ExtendGraph(TF_DeprecatedSession*,
                                          const void* proto, size_t proto_len,
                                          TF_Status*);

/* TF_SessionRun with nodes named by string ("name:index"). */
TF_CAPI_EXPORT extern void TF_Run(TF_DeprecatedSession*,
                                  const TF_Buffer* run_options,
                                  const char** input_names, TF_Tensor** inputs,
                                  int ninputs, const char** output_names,
                                  TF_Tensor** outputs, int noutputs,
                                  const char** target_oper_names, int ntargets,
                                  TF_Buffer* run_metadata, TF_Status*);

/* TF_SessionPRunSetup with nodes named by string. */
TF_CAPI_EXPORT extern void TF_PRunSetup(TF_DeprecatedSession*,
                                        const char** input_names, int ninputs,
                                        const char** output_names, int noutputs,
                                        const char** target_oper_names,
                                        int ntargets, const char** handle,
                                        TF_Status*);

/* TF_SessionPRun with nodes named by string. */
TF_CAPI_EXPORT extern void TF_PRun(TF_DeprecatedSession*, const char* handle,
                                   const char** input_names, TF_Tensor** inputs,
                                   int ninputs, const char** output_names,
                                   TF_Tensor** outputs, int noutputs,
                                   const char** target_oper_names, int ntargets,
                                   TF_Status*);

/* ---- Devices ---------------------------------------------------------- */

/* A snapshot of a session's devices. */
typedef struct TF_DeviceList TF_DeviceList;

/* Returns the session's devices; the caller owns the list
   (TF_DeleteDeviceList). */
TF_CAPI_EXPORT extern TF_DeviceList* TF_SessionListDevices(TF_Session* session,
                                                           TF_Status* status);

/* As TF_SessionListDevices, for a deprecated session. */
TF_CAPI_EXPORT extern TF_DeviceList* TF_DeprecatedSessionListDevices(
    TF_DeprecatedSession* session, TF_Status* status);

/* Frees a device list and the strings it handed out. */
TF_CAPI_EXPORT extern void TF_DeleteDeviceList(TF_DeviceList* list);

/* Returns the number of devices in the list. */
TF_CAPI_EXPORT extern int TF_DeviceListCount(const TF_DeviceList* list);

/* Returns the full name of device `index` ("/job:.../device:GPU:0"); the
   string belongs to the list. NULL and an error if index is out of range. */
TF_CAPI_EXPORT extern const char* TF_DeviceListName(const TF_DeviceList* list,
                                                    int index,
                                                    TF_Status* status);

/* Returns the type ("CPU", "GPU") of device `index`; the string belongs to
   the list. NULL and an error if index is out of range. */
TF_CAPI_EXPORT extern const char* TF_DeviceListType(const TF_DeviceList* list,
                                                    int index,
                                                    TF_Status* status);

/* Returns the memory limit of device `index` in bytes; -1 and an error if
   index is out of range. */
TF_CAPI_EXPORT extern int64_t TF_DeviceListMemoryBytes(
    const TF_DeviceList* list, int index, TF_Status* status);

/* Returns the incarnation number of device `index`; 0 and an error if index
   is out of range. */
TF_CAPI_EXPORT extern uint64_t TF_DeviceListIncarnation(
    const TF_DeviceList* list, int index, TF_Status* status);

/* ---- Op libraries (not supported by mstream) -------------------------- */

/* A loaded library of custom ops and kernels. */
typedef struct TF_Library TF_Library;

/* Loads a shared library of ops and kernels and registers them. The caller
   owns the handle (TF_DeleteLibraryHandle); NULL on error. */
TF_CAPI_EXPORT extern TF_Library* TF_LoadLibrary(const char* library_filename,
                                                 TF_Status* status);

/* Returns the library's ops as a serialized OpList; the data belongs to
   lib_handle. */
TF_CAPI_EXPORT extern TF_Buffer TF_GetOpList(TF_Library* lib_handle);

/* Frees the handle; the library stays loaded. */
TF_CAPI_EXPORT extern void TF_DeleteLibraryHandle(TF_Library* lib_handle);

/* Returns every registered op as a serialized OpList in a new buffer owned by
   the caller (TF_DeleteBuffer). */
TF_CAPI_EXPORT extern TF_Buffer* TF_GetAllOpList(void);

/* ---- API definitions -------------------------------------------------- */

/* Maps op names to ApiDef protos (names and docs for language bindings). */
typedef struct TF_ApiDefMap TF_ApiDefMap;

/* Returns a map built from a serialized OpList; the caller owns it
   (TF_DeleteApiDefMap). */
TF_CAPI_EXPORT extern TF_ApiDefMap* TF_NewApiDefMap(TF_Buffer* op_list_buffer,
                                                    TF_Status* status);

/* Frees an ApiDef map. */
TF_CAPI_EXPORT extern void TF_DeleteApiDefMap(TF_ApiDefMap* apimap);

/* Merges text-format ApiDefs into the map; newer entries win. */
TF_CAPI_EXPORT extern void TF_ApiDefMapPut(TF_ApiDefMap* api_def_map,
                                           const char* text, size_t text_len,
                                           TF_Status* status);

/* Returns the serialized ApiDef of op name[0, name_len) in a new buffer owned
   by the caller (TF_DeleteBuffer). */
TF_CAPI_EXPORT extern TF_Buffer* TF_ApiDefMapGet(TF_ApiDefMap* api_def_map,
                                                 const char* name,
                                                 size_t name_len,
                                                 TF_Status* status);

/* ---- Kernels ---------------------------------------------------------- */

/* Returns every registered kernel as a serialized KernelList in a new buffer
   owned by the caller (TF_DeleteBuffer). */
TF_CAPI_EXPORT extern TF_Buffer* TF_GetAllRegisteredKernels(TF_Status* status);

/* As TF_GetAllRegisteredKernels, for the op `name` only. */
TF_CAPI_EXPORT extern TF_Buffer* TF_GetRegisteredKernelsForOp(
    const char* name, TF_Status* status);

/* Makes input `dst` read from `new_src` instead. */
TF_CAPI_EXPORT extern void TF_UpdateEdge(TF_Graph* graph, TF_Output new_src,
                                         TF_Input dst, TF_Status* status);

/* ---- In-process servers (not supported by mstream) -------------------- */

/* A distributed-runtime server for one task of a cluster. */
typedef struct TF_Server TF_Server;

/* Returns a server configured by a serialized ServerDef, not yet started;
   the caller owns it (TF_DeleteServer). */
TF_CAPI_EXPORT extern TF_Server* TF_NewServer(const void* proto,
                                              size_t proto_len,
                                              TF_Status* status);

/* Starts serving. */
TF_CAPI_EXPORT extern void TF_ServerStart(TF_Server* server, TF_Status* status);

/* Stops serving. */
TF_CAPI_EXPORT extern void TF_ServerStop(TF_Server* server, TF_Status* status);

/* Blocks until the server has stopped. */
TF_CAPI_EXPORT extern void TF_ServerJoin(TF_Server* server, TF_Status* status);

/* Returns the target to pass to TF_SetTarget; the string belongs to the
   server. */
TF_CAPI_EXPORT extern const char* TF_ServerTarget(TF_Server* server);

/* Stops, joins and frees a server. */
TF_CAPI_EXPORT extern void TF_DeleteServer(TF_Server* server);

/* ---- Process-wide hooks ----------------------------------------------- */

/* Registers a function that receives the output of Print ops instead of the
   log. */
TF_CAPI_EXPORT extern void TF_RegisterLogListener(
    void (*listener)(const char*));

/* Loads a filesystem plugin and registers its filesystems. */
TF_CAPI_EXPORT extern void TF_RegisterFilesystemPlugin(
    const char* plugin_filename, TF_Status* status);

/* ---- Graph mutation (the Python API's needs) -------------------------- */

/* Adds a control input to an existing operation. */
TF_CAPI_EXPORT extern void TF_AddOperationControlInput(TF_Graph* graph,
                                                       TF_Operation* op,
                                                       TF_Operation* input);

/* Sets an attribute of an existing operation from a serialized AttrValue. */
TF_CAPI_EXPORT extern void TF_SetAttr(TF_Graph* graph, TF_Operation* op,
                                      const char* attr_name,
                                      TF_Buffer* attr_value_proto,
                                      TF_Status* status);

/* Removes an attribute of an existing operation. */
TF_CAPI_EXPORT extern void TF_ClearAttr(TF_Graph* graph, TF_Operation* op,
                                        const char* attr_name,
                                        TF_Status* status);

/* Sets the operation's full type from a serialized FullTypeDef. */
TF_CAPI_EXPORT extern void TF_SetFullType(TF_Graph* graph, TF_Operation* op,
                                          const TF_Buffer* full_type_proto);

/* Sets the device requested for an existing operation. */
TF_CAPI_EXPORT extern void TF_SetRequestedDevice(TF_Graph* graph,
                                                 TF_Operation* op,
                                                 const char* device);

/* Removes every control input of `op`. */
TF_CAPI_EXPORT extern void TF_RemoveAllControlInputs(TF_Graph* graph,
                                                     TF_Operation* op);

/* Sets whether every op added to `graph` must have a shape function. */
TF_CAPI_EXPORT extern void TF_SetRequireShapeInferenceFns(TF_Graph* graph,
                                                          bool require);

/* Makes the session take in operations added to its graph so far; after
   this, TF_SessionRun no longer does so by itself. */
TF_CAPI_EXPORT extern void TF_ExtendSession(TF_Session* session,
                                            TF_Status* status);

/* Returns the serialized handle shape-and-type data of a resource or variant
   `output` (empty otherwise) in a new buffer owned by the caller. */
TF_CAPI_EXPORT extern TF_Buffer* TF_GetHandleShapeAndType(TF_Graph* graph,
                                                          TF_Output output);

/* Sets the handle shape-and-type data of a resource or variant `output`. */
TF_CAPI_EXPORT extern void TF_SetHandleShapeAndType(TF_Graph* graph,
                                                    TF_Output output,
                                                    const void* proto,
                                                    size_t proto_len,
                                                    TF_Status* status);

/* Adds an input edge from new_src to the While op `dst`. Not supported by
   mstream. */
TF_CAPI_EXPORT extern void TF_AddWhileInputHack(TF_Graph* graph,
                                                TF_Output new_src,
                                                TF_Operation* dst,
                                                TF_Status* status);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* TENSORFLOW_C_C_API_H_ */
