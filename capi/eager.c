/* The eager API: what the official TF Go bindings reference works for host
   tensors (a context that lists the CPU, tensor handles wrapping a
   TF_Tensor); running ops eagerly (TFE_Op, TFE_Execute) and functions are
   not supported and report TF_UNIMPLEMENTED. */
#include <stdio.h>

#include "internal.h"
#include "_cgo_export.h"

#define CPU_DEVICE "/job:localhost/replica:0/task:0/device:CPU:0"

TFE_ContextOptions* TFE_NewContextOptions(void) {
  TFE_ContextOptions* o = calloc(1, sizeof *o);
  if (o == NULL) abort();
  o->policy = TFE_DEVICE_PLACEMENT_SILENT;
  ms_live(MS_LIVE_EAGER_CONTEXT_OPTIONS, 1);
  return o;
}

void TFE_ContextOptionsSetConfig(TFE_ContextOptions* options,
                                 const void* proto, size_t proto_len,
                                 TF_Status* status) {
  (void)options;
  msValidateConfig((void*)proto, proto_len, status);
}

void TFE_ContextOptionsSetAsync(TFE_ContextOptions* options,
                                unsigned char enable) {
  if (options) options->async = enable;
}

void TFE_ContextOptionsSetDevicePlacementPolicy(
    TFE_ContextOptions* options, TFE_ContextDevicePlacementPolicy policy) {
  if (options) options->policy = policy;
}

void TFE_DeleteContextOptions(TFE_ContextOptions* options) {
  if (options == NULL) return;
  free(options);
  ms_live(MS_LIVE_EAGER_CONTEXT_OPTIONS, -1);
}

TFE_Context* TFE_NewContext(const TFE_ContextOptions* opts, TF_Status* status) {
  TFE_Context* c = calloc(1, sizeof *c);
  if (c == NULL) abort();
  c->policy = opts ? opts->policy : TFE_DEVICE_PLACEMENT_SILENT;
  ms_live(MS_LIVE_EAGER_CONTEXT, 1);
  TF_SetStatus(status, TF_OK, "");
  return c;
}

void TFE_DeleteContext(TFE_Context* ctx) {
  if (ctx == NULL) return;
  free(ctx);
  ms_live(MS_LIVE_EAGER_CONTEXT, -1);
}

TF_DeviceList* TFE_ContextListDevices(TFE_Context* ctx, TF_Status* status) {
  if (ctx == NULL) {
    TF_SetStatus(status, TF_INVALID_ARGUMENT, "TFE_ContextListDevices: context is NULL");
    return NULL;
  }
  TF_DeviceList* l = ms_new_device_list(1);
  l->names[0] = strdup(CPU_DEVICE);
  l->types[0] = strdup("CPU");
  l->memory[0] = 268435456;
  l->incarnation[0] = (uint64_t)(uintptr_t)ctx | 1;
  TF_SetStatus(status, TF_OK, "");
  return l;
}

void TFE_ContextClearCaches(TFE_Context* ctx) { (void)ctx; }

void TFE_ContextSetThreadLocalDevicePlacementPolicy(
    TFE_Context* ctx, TFE_ContextDevicePlacementPolicy policy) {
  if (ctx) ctx->policy = policy;
}

TFE_ContextDevicePlacementPolicy TFE_ContextGetDevicePlacementPolicy(
    TFE_Context* ctx) {
  return ctx ? (TFE_ContextDevicePlacementPolicy)ctx->policy
             : TFE_DEVICE_PLACEMENT_SILENT;
}

void TFE_ContextSetServerDef(TFE_Context* ctx, int keep_alive_secs,
                             const void* proto, size_t proto_len,
                             TF_Status* status) {
  (void)ctx, (void)keep_alive_secs, (void)proto, (void)proto_len;
  ms_set_unimplemented(status, "TFE_ContextSetServerDef");
}

/* Tensor handles. */

TFE_TensorHandle* TFE_NewTensorHandle(const TF_Tensor* t, TF_Status* status) {
  if (t == NULL) {
    TF_SetStatus(status, TF_INVALID_ARGUMENT, "TFE_NewTensorHandle: tensor is NULL");
    return NULL;
  }
  TFE_TensorHandle* h = malloc(sizeof *h);
  if (h == NULL) abort();
  h->t = ms_tensor_share(t);
  ms_live(MS_LIVE_TENSOR_HANDLE, 1);
  TF_SetStatus(status, TF_OK, "");
  return h;
}

void TFE_DeleteTensorHandle(TFE_TensorHandle* h) {
  if (h == NULL) return;
  TF_DeleteTensor(h->t);
  free(h);
  ms_live(MS_LIVE_TENSOR_HANDLE, -1);
}

static int check_handle(TFE_TensorHandle* h, TF_Status* status) {
  if (h == NULL) {
    TF_SetStatus(status, TF_INVALID_ARGUMENT, "Invalid handle");
    return 0;
  }
  TF_SetStatus(status, TF_OK, "");
  return 1;
}

TF_DataType TFE_TensorHandleDataType(TFE_TensorHandle* h) {
  return h ? TF_TensorType(h->t) : (TF_DataType)0;
}

int TFE_TensorHandleNumDims(TFE_TensorHandle* h, TF_Status* status) {
  return check_handle(h, status) ? TF_NumDims(h->t) : -1;
}

int64_t TFE_TensorHandleNumElements(TFE_TensorHandle* h, TF_Status* status) {
  return check_handle(h, status) ? TF_TensorElementCount(h->t) : -1;
}

int64_t TFE_TensorHandleDim(TFE_TensorHandle* h, int dim_index,
                            TF_Status* status) {
  if (!check_handle(h, status)) return -1;
  if (dim_index < 0 || dim_index >= TF_NumDims(h->t)) {
    char msg[100];
    snprintf(msg, sizeof msg, "dim_index %d is out of range for rank %d",
             dim_index, TF_NumDims(h->t));
    TF_SetStatus(status, TF_INVALID_ARGUMENT, msg);
    return -1;
  }
  return TF_Dim(h->t, dim_index);
}

const char* TFE_TensorHandleDeviceName(TFE_TensorHandle* h, TF_Status* status) {
  return check_handle(h, status) ? CPU_DEVICE : NULL;
}

const char* TFE_TensorHandleBackingDeviceName(TFE_TensorHandle* h,
                                              TF_Status* status) {
  return check_handle(h, status) ? CPU_DEVICE : NULL;
}

TFE_TensorHandle* TFE_TensorHandleCopySharingTensor(TFE_TensorHandle* h,
                                                    TF_Status* status) {
  if (!check_handle(h, status)) return NULL;
  return TFE_NewTensorHandle(h->t, status);
}

TF_Tensor* TFE_TensorHandleResolve(TFE_TensorHandle* h, TF_Status* status) {
  if (!check_handle(h, status)) return NULL;
  return ms_tensor_share(h->t);
}

/* The host is the only device: copies to it share the buffer. */
TFE_TensorHandle* TFE_TensorHandleCopyToDevice(TFE_TensorHandle* h,
                                               TFE_Context* ctx,
                                               const char* device_name,
                                               TF_Status* status) {
  (void)ctx;
  if (!check_handle(h, status)) return NULL;
  if (device_name != NULL && device_name[0] != 0 &&
      strstr(device_name, "CPU:0") == NULL &&
      strstr(device_name, "cpu:0") == NULL) {
    char msg[300];
    snprintf(msg, sizeof msg, "Invalid device name %.200s: mstream's eager "
             "API has only " CPU_DEVICE, device_name);
    TF_SetStatus(status, TF_INVALID_ARGUMENT, msg);
    return NULL;
  }
  return TFE_NewTensorHandle(h->t, status);
}

TFE_TensorDebugInfo* TFE_TensorHandleTensorDebugInfo(TFE_TensorHandle* h,
                                                     TF_Status* status) {
  (void)h;
  ms_set_unimplemented(status, "TFE_TensorHandleTensorDebugInfo");
  return NULL;
}

void TFE_DeleteTensorDebugInfo(TFE_TensorDebugInfo* debug_info) {
  (void)debug_info;
}

int TFE_TensorDebugInfoOnDeviceNumDims(TFE_TensorDebugInfo* debug_info) {
  (void)debug_info;
  return -1;
}

int64_t TFE_TensorDebugInfoOnDeviceDim(TFE_TensorDebugInfo* debug_info,
                                       int dim_index) {
  (void)debug_info, (void)dim_index;
  return -1;
}

/* Eager ops and functions: not supported. TFE_NewOp never returns an op, so
   the TFE_Op functions below only ever see NULL. */

TFE_Op* TFE_NewOp(TFE_Context* ctx, const char* op_or_function_name,
                  TF_Status* status) {
  (void)ctx, (void)op_or_function_name;
  ms_set_unimplemented(status, "TFE_NewOp (eager execution)");
  return NULL;
}

void TFE_DeleteOp(TFE_Op* op) { (void)op; }

const char* TFE_OpGetName(const TFE_Op* op, TF_Status* status) {
  (void)op;
  ms_set_unimplemented(status, "TFE_OpGetName");
  return NULL;
}

TFE_Context* TFE_OpGetContext(const TFE_Op* op, TF_Status* status) {
  (void)op;
  ms_set_unimplemented(status, "TFE_OpGetContext");
  return NULL;
}

void TFE_OpSetDevice(TFE_Op* op, const char* device_name, TF_Status* status) {
  (void)op, (void)device_name;
  ms_set_unimplemented(status, "TFE_OpSetDevice");
}

const char* TFE_OpGetDevice(const TFE_Op* op, TF_Status* status) {
  (void)op;
  ms_set_unimplemented(status, "TFE_OpGetDevice");
  return NULL;
}

void TFE_OpAddInput(TFE_Op* op, TFE_TensorHandle* input, TF_Status* status) {
  (void)op, (void)input;
  ms_set_unimplemented(status, "TFE_OpAddInput");
}

void TFE_OpAddInputList(TFE_Op* op, TFE_TensorHandle** inputs, int num_inputs,
                        TF_Status* status) {
  (void)op, (void)inputs, (void)num_inputs;
  ms_set_unimplemented(status, "TFE_OpAddInputList");
}

int TFE_OpGetFlatInputCount(const TFE_Op* op, TF_Status* status) {
  (void)op;
  ms_set_unimplemented(status, "TFE_OpGetFlatInputCount");
  return 0;
}

TFE_TensorHandle* TFE_OpGetFlatInput(const TFE_Op* op, int index,
                                     TF_Status* status) {
  (void)op, (void)index;
  ms_set_unimplemented(status, "TFE_OpGetFlatInput");
  return NULL;
}

TF_AttrType TFE_OpGetAttrType(TFE_Op* op, const char* attr_name,
                              unsigned char* is_list, TF_Status* status) {
  (void)op, (void)attr_name, (void)is_list;
  ms_set_unimplemented(status, "TFE_OpGetAttrType");
  return TF_ATTR_INT;
}

TF_AttrType TFE_OpNameGetAttrType(TFE_Context* ctx,
                                  const char* op_or_function_name,
                                  const char* attr_name, unsigned char* is_list,
                                  TF_Status* status) {
  (void)ctx, (void)op_or_function_name, (void)attr_name, (void)is_list;
  ms_set_unimplemented(status, "TFE_OpNameGetAttrType");
  return TF_ATTR_INT;
}

void TFE_OpSetAttrString(TFE_Op* op, const char* attr_name, const void* value,
                         size_t length) {
  (void)op, (void)attr_name, (void)value, (void)length;
}

void TFE_OpSetAttrInt(TFE_Op* op, const char* attr_name, int64_t value) {
  (void)op, (void)attr_name, (void)value;
}

void TFE_OpSetAttrFloat(TFE_Op* op, const char* attr_name, float value) {
  (void)op, (void)attr_name, (void)value;
}

void TFE_OpSetAttrBool(TFE_Op* op, const char* attr_name,
                       unsigned char value) {
  (void)op, (void)attr_name, (void)value;
}

void TFE_OpSetAttrType(TFE_Op* op, const char* attr_name, TF_DataType value) {
  (void)op, (void)attr_name, (void)value;
}

void TFE_OpSetAttrShape(TFE_Op* op, const char* attr_name, const int64_t* dims,
                        const int num_dims, TF_Status* out_status) {
  (void)op, (void)attr_name, (void)dims, (void)num_dims;
  ms_set_unimplemented(out_status, "TFE_OpSetAttrShape");
}

void TFE_OpSetAttrFunction(TFE_Op* op, const char* attr_name,
                           const TFE_Op* value) {
  (void)op, (void)attr_name, (void)value;
}

void TFE_OpSetAttrFunctionName(TFE_Op* op, const char* attr_name,
                               const char* data, size_t length) {
  (void)op, (void)attr_name, (void)data, (void)length;
}

void TFE_OpSetAttrTensor(TFE_Op* op, const char* attr_name, TF_Tensor* tensor,
                         TF_Status* status) {
  (void)op, (void)attr_name, (void)tensor;
  ms_set_unimplemented(status, "TFE_OpSetAttrTensor");
}

void TFE_OpSetAttrStringList(TFE_Op* op, const char* attr_name,
                             const void* const* values, const size_t* lengths,
                             int num_values) {
  (void)op, (void)attr_name, (void)values, (void)lengths, (void)num_values;
}

void TFE_OpSetAttrIntList(TFE_Op* op, const char* attr_name,
                          const int64_t* values, int num_values) {
  (void)op, (void)attr_name, (void)values, (void)num_values;
}

void TFE_OpSetAttrFloatList(TFE_Op* op, const char* attr_name,
                            const float* values, int num_values) {
  (void)op, (void)attr_name, (void)values, (void)num_values;
}

void TFE_OpSetAttrBoolList(TFE_Op* op, const char* attr_name,
                           const unsigned char* values, int num_values) {
  (void)op, (void)attr_name, (void)values, (void)num_values;
}

void TFE_OpSetAttrTypeList(TFE_Op* op, const char* attr_name,
                           const TF_DataType* values, int num_values) {
  (void)op, (void)attr_name, (void)values, (void)num_values;
}

void TFE_OpSetAttrShapeList(TFE_Op* op, const char* attr_name,
                            const int64_t** dims, const int* num_dims,
                            int num_values, TF_Status* out_status) {
  (void)op, (void)attr_name, (void)dims, (void)num_dims, (void)num_values;
  ms_set_unimplemented(out_status, "TFE_OpSetAttrShapeList");
}

void TFE_OpSetAttrFunctionList(TFE_Op* op, const char* attr_name,
                               const TFE_Op** value, int num_values) {
  (void)op, (void)attr_name, (void)value, (void)num_values;
}

int TFE_OpGetInputLength(TFE_Op* op, const char* input_name,
                         TF_Status* status) {
  (void)op, (void)input_name;
  ms_set_unimplemented(status, "TFE_OpGetInputLength");
  return -1;
}

int TFE_OpGetOutputLength(TFE_Op* op, const char* output_name,
                          TF_Status* status) {
  (void)op, (void)output_name;
  ms_set_unimplemented(status, "TFE_OpGetOutputLength");
  return -1;
}

void TFE_Execute(TFE_Op* op, TFE_TensorHandle** retvals, int* num_retvals,
                 TF_Status* status) {
  (void)op, (void)retvals;
  if (num_retvals) *num_retvals = 0;
  ms_set_unimplemented(status, "TFE_Execute (eager execution)");
}

void TFE_ContextAddFunctionDef(TFE_Context* ctx,
                               const char* serialized_function_def,
                               size_t size, TF_Status* status) {
  (void)ctx, (void)serialized_function_def, (void)size;
  ms_set_unimplemented(status, "TFE_ContextAddFunctionDef");
}

void TFE_ContextAddFunction(TFE_Context* ctx, TF_Function* function,
                            TF_Status* status) {
  (void)ctx, (void)function;
  ms_set_unimplemented(status, "TFE_ContextAddFunction");
}

void TFE_ContextRemoveFunction(TFE_Context* ctx, const char* name,
                               TF_Status* status) {
  (void)ctx, (void)name;
  ms_set_unimplemented(status, "TFE_ContextRemoveFunction");
}

unsigned char TFE_ContextHasFunction(TFE_Context* ctx, const char* name) {
  (void)ctx, (void)name;
  return 0;
}

void TFE_ContextEnableRunMetadata(TFE_Context* ctx) { (void)ctx; }

void TFE_ContextDisableRunMetadata(TFE_Context* ctx) { (void)ctx; }

void TFE_ContextExportRunMetadata(TFE_Context* ctx, TF_Buffer* buf,
                                  TF_Status* status) {
  (void)ctx, (void)buf;
  ms_set_unimplemented(status, "TFE_ContextExportRunMetadata");
}

void TFE_ContextStartStep(TFE_Context* ctx) { (void)ctx; }

void TFE_ContextEndStep(TFE_Context* ctx) { (void)ctx; }
