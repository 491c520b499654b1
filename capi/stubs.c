/* Functions of c_api.h that mstream does not support: servers, libraries,
   ApiDefs, the deprecated
   session API and in-place graph edits. Each exists so that any program
   written against TF's headers links; those with a status report
   TF_UNIMPLEMENTED naming the function, and return NULL / 0. */
#include "internal.h"
#include "_cgo_export.h"

#define UNIMPLEMENTED(status) ms_set_unimplemented(status, __func__)

void TF_TensorFromProto(const TF_Buffer* from, TF_Tensor* to,
                        TF_Status* status) {
  if (from == NULL || to == NULL) {
    TF_SetStatus(status, TF_INVALID_ARGUMENT, "TF_TensorFromProto: NULL argument");
    return;
  }
  TF_Tensor* t = msTensorFromProto((TF_Buffer*)from, status);
  if (t != NULL) ms_tensor_assign(to, t);
}

/* Returns 0 ("not evaluated") without an error: allowed by the contract,
   the caller then runs the graph instead. */
unsigned char TF_TryEvaluateConstant(TF_Graph* graph, TF_Output output,
                                     TF_Tensor** result, TF_Status* status) {
  (void)graph, (void)output;
  if (result) *result = NULL;
  TF_SetStatus(status, TF_OK, "");
  return 0;
}

/* The deprecated session API. */

TF_DeprecatedSession* TF_NewDeprecatedSession(const TF_SessionOptions* opts,
                                              TF_Status* status) {
  (void)opts;
  UNIMPLEMENTED(status);
  return NULL;
}

void TF_CloseDeprecatedSession(TF_DeprecatedSession* s, TF_Status* status) {
  (void)s;
  UNIMPLEMENTED(status);
}

void TF_DeleteDeprecatedSession(TF_DeprecatedSession* s, TF_Status* status) {
  (void)s;
  TF_SetStatus(status, TF_OK, "");
}

void TF_Reset(const TF_SessionOptions* opt, const char** containers,
              int ncontainers, TF_Status* status) {
  (void)opt, (void)containers, (void)ncontainers;
  UNIMPLEMENTED(status);
}

void TF_ExtendGraph(TF_DeprecatedSession* s, const void* proto,
                    size_t proto_len, TF_Status* status) {
  (void)s, (void)proto, (void)proto_len;
  UNIMPLEMENTED(status);
}

void TF_Run(TF_DeprecatedSession* s, const TF_Buffer* run_options,
            const char** input_names, TF_Tensor** inputs, int ninputs,
            const char** output_names, TF_Tensor** outputs, int noutputs,
            const char** target_oper_names, int ntargets,
            TF_Buffer* run_metadata, TF_Status* status) {
  (void)s, (void)run_options, (void)input_names, (void)inputs, (void)ninputs,
      (void)output_names, (void)target_oper_names, (void)ntargets,
      (void)run_metadata;
  for (int i = 0; outputs != NULL && i < noutputs; i++) outputs[i] = NULL;
  UNIMPLEMENTED(status);
}

void TF_PRunSetup(TF_DeprecatedSession* s, const char** input_names,
                  int ninputs, const char** output_names, int noutputs,
                  const char** target_oper_names, int ntargets,
                  const char** handle, TF_Status* status) {
  (void)s, (void)input_names, (void)ninputs, (void)output_names,
      (void)noutputs, (void)target_oper_names, (void)ntargets;
  if (handle) *handle = NULL;
  UNIMPLEMENTED(status);
}

void TF_PRun(TF_DeprecatedSession* s, const char* handle,
             const char** input_names, TF_Tensor** inputs, int ninputs,
             const char** output_names, TF_Tensor** outputs, int noutputs,
             const char** target_oper_names, int ntargets, TF_Status* status) {
  (void)s, (void)handle, (void)input_names, (void)inputs, (void)ninputs,
      (void)output_names, (void)target_oper_names, (void)ntargets;
  for (int i = 0; outputs != NULL && i < noutputs; i++) outputs[i] = NULL;
  UNIMPLEMENTED(status);
}

TF_DeviceList* TF_DeprecatedSessionListDevices(TF_DeprecatedSession* session,
                                               TF_Status* status) {
  (void)session;
  UNIMPLEMENTED(status);
  return NULL;
}

/* Libraries, kernels, ApiDefs. */

TF_Library* TF_LoadLibrary(const char* library_filename, TF_Status* status) {
  (void)library_filename;
  UNIMPLEMENTED(status);
  return NULL;
}

TF_Buffer TF_GetOpList(TF_Library* lib_handle) {
  (void)lib_handle;
  TF_Buffer empty = {NULL, 0, NULL};
  return empty;
}

void TF_DeleteLibraryHandle(TF_Library* lib_handle) { (void)lib_handle; }

TF_ApiDefMap* TF_NewApiDefMap(TF_Buffer* op_list_buffer, TF_Status* status) {
  (void)op_list_buffer;
  UNIMPLEMENTED(status);
  return NULL;
}

void TF_DeleteApiDefMap(TF_ApiDefMap* apimap) { (void)apimap; }

void TF_ApiDefMapPut(TF_ApiDefMap* api_def_map, const char* text,
                     size_t text_len, TF_Status* status) {
  (void)api_def_map, (void)text, (void)text_len;
  UNIMPLEMENTED(status);
}

TF_Buffer* TF_ApiDefMapGet(TF_ApiDefMap* api_def_map, const char* name,
                           size_t name_len, TF_Status* status) {
  (void)api_def_map, (void)name, (void)name_len;
  UNIMPLEMENTED(status);
  return NULL;
}

TF_Buffer* TF_GetAllRegisteredKernels(TF_Status* status) {
  UNIMPLEMENTED(status);
  return NULL;
}

TF_Buffer* TF_GetRegisteredKernelsForOp(const char* name, TF_Status* status) {
  (void)name;
  UNIMPLEMENTED(status);
  return NULL;
}

/* Servers. */

TF_Server* TF_NewServer(const void* proto, size_t proto_len,
                        TF_Status* status) {
  (void)proto, (void)proto_len;
  UNIMPLEMENTED(status);
  return NULL;
}

void TF_ServerStart(TF_Server* server, TF_Status* status) {
  (void)server;
  UNIMPLEMENTED(status);
}

void TF_ServerStop(TF_Server* server, TF_Status* status) {
  (void)server;
  UNIMPLEMENTED(status);
}

void TF_ServerJoin(TF_Server* server, TF_Status* status) {
  (void)server;
  UNIMPLEMENTED(status);
}

const char* TF_ServerTarget(TF_Server* server) {
  (void)server;
  return NULL;
}

void TF_DeleteServer(TF_Server* server) { (void)server; }

/* Logging and plugins. */

void TF_RegisterLogListener(void (*listener)(const char*)) { (void)listener; }

void TF_RegisterFilesystemPlugin(const char* plugin_filename,
                                 TF_Status* status) {
  (void)plugin_filename;
  UNIMPLEMENTED(status);
}

/* In-place edits of existing nodes: the graph only ever grows, so these are
   not supported. Those without a status can only do nothing. */

void TF_UpdateEdge(TF_Graph* graph, TF_Output new_src, TF_Input dst,
                   TF_Status* status) {
  (void)graph, (void)new_src, (void)dst;
  UNIMPLEMENTED(status);
}

void TF_AddOperationControlInput(TF_Graph* graph, TF_Operation* op,
                                 TF_Operation* input) {
  (void)graph, (void)op, (void)input;
}

void TF_SetAttr(TF_Graph* graph, TF_Operation* op, const char* attr_name,
                TF_Buffer* attr_value_proto, TF_Status* status) {
  (void)graph, (void)op, (void)attr_name, (void)attr_value_proto;
  UNIMPLEMENTED(status);
}

void TF_ClearAttr(TF_Graph* graph, TF_Operation* op, const char* attr_name,
                  TF_Status* status) {
  (void)graph, (void)op, (void)attr_name;
  UNIMPLEMENTED(status);
}

void TF_SetFullType(TF_Graph* graph, TF_Operation* op,
                    const TF_Buffer* full_type_proto) {
  (void)graph, (void)op, (void)full_type_proto;
}

void TF_SetRequestedDevice(TF_Graph* graph, TF_Operation* op,
                           const char* device) {
  (void)graph, (void)op, (void)device;
}

void TF_RemoveAllControlInputs(TF_Graph* graph, TF_Operation* op) {
  (void)graph, (void)op;
}

/* Every op we run has a shape function or gets unknown shapes. */
void TF_SetRequireShapeInferenceFns(TF_Graph* graph, bool require) {
  (void)graph, (void)require;
}

/* No resource handles carry shape data here: an empty buffer, as TF returns
   when there is none. */
TF_Buffer* TF_GetHandleShapeAndType(TF_Graph* graph, TF_Output output) {
  (void)graph, (void)output;
  return TF_NewBuffer();
}

void TF_SetHandleShapeAndType(TF_Graph* graph, TF_Output output,
                              const void* proto, size_t proto_len,
                              TF_Status* status) {
  (void)graph, (void)output, (void)proto, (void)proto_len;
  UNIMPLEMENTED(status);
}

void TF_AddWhileInputHack(TF_Graph* graph, TF_Output new_src, TF_Operation* dst,
                          TF_Status* status) {
  (void)graph, (void)new_src, (void)dst;
  UNIMPLEMENTED(status);
}
