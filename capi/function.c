/* The TF_Function calls but the builders (TF_GraphToFunction... stay in
   stubs.c): each forwards to its Go export (function.go). */
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
