/* The TF_Function calls: each forwards to its Go export (function.go);
   TF_GraphToFunction's work is graph.ToFunctionDef. */
#include "internal.h"
#include "_cgo_export.h"

const char* TF_FunctionName(TF_Function* func) {
  return func ? func->name : "";
}

void TF_DeleteFunction(TF_Function* func) {
  if (func) msDeleteFunction(func);
}

TF_Function* TF_FunctionImportFunctionDef(const void* proto, size_t proto_len,
                                          TF_Status* status) {
  return msFunctionImportFunctionDef((void*)proto, proto_len, status);
}

void TF_FunctionToFunctionDef(TF_Function* func, TF_Buffer* output_func_def,
                              TF_Status* status) {
  msFunctionToFunctionDef(func, output_func_def, status);
}

void TF_FunctionSetAttrValueProto(TF_Function* func, const char* attr_name,
                                  const void* proto, size_t proto_len,
                                  TF_Status* status) {
  msFunctionSetAttrValueProto(func, (char*)attr_name, (void*)proto, proto_len,
                              status);
}

void TF_FunctionGetAttrValueProto(TF_Function* func, const char* attr_name,
                                  TF_Buffer* output_attr_value,
                                  TF_Status* status) {
  msFunctionGetAttrValueProto(func, (char*)attr_name, output_attr_value,
                              status);
}

void TF_GraphCopyFunction(TF_Graph* g, const TF_Function* func,
                          const TF_Function* grad, TF_Status* status) {
  msGraphCopyFunction(g, (TF_Function*)func, (TF_Function*)grad, status);
}

int TF_GraphNumFunctions(TF_Graph* g) { return msGraphNumFunctions(g); }

int TF_GraphGetFunctions(TF_Graph* g, TF_Function** funcs, int max_func,
                         TF_Status* status) {
  return msGraphGetFunctions(g, funcs, max_func, status);
}

TF_Function* TF_GraphToFunctionWithControlOutputs(
    const TF_Graph* fn_body, const char* fn_name,
    unsigned char append_hash_to_fn_name, int num_opers,
    const TF_Operation* const* opers, int ninputs, const TF_Output* inputs,
    int noutputs, const TF_Output* outputs, const char* const* output_names,
    int ncontrol_outputs, const TF_Operation* const* control_outputs,
    const char* const* control_output_names, const TF_FunctionOptions* opts,
    const char* description, TF_Status* status) {
  (void)opts; /* TF ignores it too */
  return msGraphToFunction(
      (TF_Graph*)fn_body, (char*)fn_name, append_hash_to_fn_name, num_opers,
      (TF_Operation**)opers, ninputs, (TF_Output*)inputs, noutputs,
      (TF_Output*)outputs, (char**)output_names, ncontrol_outputs,
      (TF_Operation**)control_outputs, (char**)control_output_names,
      (char*)description, status);
}

TF_Function* TF_GraphToFunction(const TF_Graph* fn_body, const char* fn_name,
                                unsigned char append_hash_to_fn_name,
                                int num_opers, const TF_Operation* const* opers,
                                int ninputs, const TF_Output* inputs,
                                int noutputs, const TF_Output* outputs,
                                const char* const* output_names,
                                const TF_FunctionOptions* opts,
                                const char* description, TF_Status* status) {
  return TF_GraphToFunctionWithControlOutputs(
      fn_body, fn_name, append_hash_to_fn_name, num_opers, opers, ninputs,
      inputs, noutputs, outputs, output_names, 0, NULL, NULL, opts,
      description, status);
}
