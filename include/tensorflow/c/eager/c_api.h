/* mstream: TensorFlow 2.15 C API, ABI-compatible declarations. */
#ifndef TENSORFLOW_C_EAGER_C_API_H_
#define TENSORFLOW_C_EAGER_C_API_H_

/* The eager API: run single ops on tensor handles, without building a graph.
 * The conventions of c_api.h apply. In addition, a TFE_Context must outlive
 * every TFE_Op and TFE_TensorHandle made with it: delete those first. */

#include "tensorflow/c/c_api.h"
#include "tensorflow/c/c_api_macros.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Context options -------------------------------------------------- */

/* Options for TFE_NewContext. */
typedef struct TFE_ContextOptions TFE_ContextOptions;

/* Returns new default options. Free with TFE_DeleteContextOptions. */
TF_CAPI_EXPORT extern TFE_ContextOptions* TFE_NewContextOptions(void);

/* Sets the configuration from a serialized ConfigProto (copied). */
TF_CAPI_EXPORT extern void TFE_ContextOptionsSetConfig(
    TFE_ContextOptions* options, const void* proto, size_t proto_len,
    TF_Status* status);

/* What to do when an op's inputs are on a different device than the op. */
typedef enum TFE_ContextDevicePlacementPolicy {
  /* Fail. */
  TFE_DEVICE_PLACEMENT_EXPLICIT = 0,
  /* Copy the input and log a warning. */
  TFE_DEVICE_PLACEMENT_WARN = 1,
  /* Copy the input silently (the default). */
  TFE_DEVICE_PLACEMENT_SILENT = 2,
  /* Copy int32 inputs silently, fail for other dtypes. */
  TFE_DEVICE_PLACEMENT_SILENT_FOR_INT32 = 3,
} TFE_ContextDevicePlacementPolicy;

/* Nonzero makes execution asynchronous by default. */
TF_CAPI_EXPORT extern void TFE_ContextOptionsSetAsync(TFE_ContextOptions*,
                                                      unsigned char enable);

/* Sets the default device placement policy. */
TF_CAPI_EXPORT extern void TFE_ContextOptionsSetDevicePlacementPolicy(
    TFE_ContextOptions*, TFE_ContextDevicePlacementPolicy);

/* Frees context options. */
TF_CAPI_EXPORT extern void TFE_DeleteContextOptions(TFE_ContextOptions*);

/* ---- Contexts --------------------------------------------------------- */

/* Devices, resources and caches under which eager ops run. */
typedef struct TFE_Context TFE_Context;

/* Returns a new context, or NULL; opts is not retained. Free with
   TFE_DeleteContext. */
TF_CAPI_EXPORT extern TFE_Context* TFE_NewContext(
    const TFE_ContextOptions* opts, TF_Status* status);
/* Frees a context, after all its ops and handles have been deleted. */
TF_CAPI_EXPORT extern void TFE_DeleteContext(TFE_Context* ctx);
/* Returns the context's devices; the caller owns the list
   (TF_DeleteDeviceList). */
TF_CAPI_EXPORT extern TF_DeviceList* TFE_ContextListDevices(TFE_Context* ctx,
                                                            TF_Status* status);

/* Drops cached kernels and ops (for example before reseeding random ops). */
TF_CAPI_EXPORT extern void TFE_ContextClearCaches(TFE_Context* ctx);

/* Overrides the placement policy for the calling thread only. */
TF_CAPI_EXPORT extern void TFE_ContextSetThreadLocalDevicePlacementPolicy(
    TFE_Context* ctx, TFE_ContextDevicePlacementPolicy policy);

/* Returns the placement policy in effect for the calling thread. */
TF_CAPI_EXPORT extern TFE_ContextDevicePlacementPolicy
TFE_ContextGetDevicePlacementPolicy(TFE_Context* ctx);

/* Adds the remote workers of a serialized ServerDef to the context (every
   server must be up). Not supported by mstream. */
TF_CAPI_EXPORT extern void TFE_ContextSetServerDef(TFE_Context* ctx,
                                                   int keep_alive_secs,
                                                   const void* proto,
                                                   size_t proto_len,
                                                   TF_Status* status);

/* ---- Tensor handles --------------------------------------------------- */

/* A reference to a tensor on some device, possibly still being computed. */
typedef struct TFE_TensorHandle TFE_TensorHandle;

/* Returns a new host handle to the contents of `t`; the caller keeps `t` and
   owns the handle (TFE_DeleteTensorHandle). */
TF_CAPI_EXPORT extern TFE_TensorHandle* TFE_NewTensorHandle(const TF_Tensor* t,
                                                            TF_Status* status);
/* Releases the caller's reference to `h`. */
TF_CAPI_EXPORT extern void TFE_DeleteTensorHandle(TFE_TensorHandle* h);
/* Returns the element type. */
TF_CAPI_EXPORT extern TF_DataType TFE_TensorHandleDataType(TFE_TensorHandle* h);
/* Returns the rank; waits until the producing op has finished. */
TF_CAPI_EXPORT extern int TFE_TensorHandleNumDims(TFE_TensorHandle* h,
                                                  TF_Status* status);
/* Returns the element count; waits until the producing op has finished. */
TF_CAPI_EXPORT extern int64_t TFE_TensorHandleNumElements(TFE_TensorHandle* h,
                                                          TF_Status* status);
/* Returns one dimension; waits until the producing op has finished. */
TF_CAPI_EXPORT extern int64_t TFE_TensorHandleDim(TFE_TensorHandle* h,
                                                  int dim_index,
                                                  TF_Status* status);

/* Returns the device of the op that produced `h` (the destination, for a
   copy); the string belongs to `h`. Waits for the producer. */
TF_CAPI_EXPORT extern const char* TFE_TensorHandleDeviceName(
    TFE_TensorHandle* h, TF_Status* status);

/* Returns the device whose memory holds `h`; the string belongs to `h`.
   Waits for the producer. */
TF_CAPI_EXPORT extern const char* TFE_TensorHandleBackingDeviceName(
    TFE_TensorHandle* h, TF_Status* status);

/* Returns a new handle (owned by the caller) sharing h's tensor, or NULL. */
TF_CAPI_EXPORT extern TFE_TensorHandle* TFE_TensorHandleCopySharingTensor(
    TFE_TensorHandle* h, TF_Status* status);

/* Waits for `h` and returns its value as a host tensor owned by the caller
   (TF_DeleteTensor). Its data may alias the library's memory: do not
   modify it. */
TF_CAPI_EXPORT extern TF_Tensor* TFE_TensorHandleResolve(TFE_TensorHandle* h,
                                                         TF_Status* status);

/* Returns a new handle (owned by the caller) with h's contents on device
   device_name; on the same device the buffer is shared. With async
   execution the copy may still be pending when this returns. */
TF_CAPI_EXPORT extern TFE_TensorHandle* TFE_TensorHandleCopyToDevice(
    TFE_TensorHandle* h, TFE_Context* ctx, const char* device_name,
    TF_Status* status);

/* How a tensor is laid out on its device (for debugging and profiling). */
typedef struct TFE_TensorDebugInfo TFE_TensorDebugInfo;

/* Returns the debug info of `h`, owned by the caller
   (TFE_DeleteTensorDebugInfo), or NULL. May wait for the producer. */
TF_CAPI_EXPORT extern TFE_TensorDebugInfo* TFE_TensorHandleTensorDebugInfo(
    TFE_TensorHandle* h, TF_Status* status);

/* Frees debug info. */
TF_CAPI_EXPORT extern void TFE_DeleteTensorDebugInfo(
    TFE_TensorDebugInfo* debug_info);

/* Returns the rank of the on-device representation (which may differ from
   the logical rank). */
TF_CAPI_EXPORT extern int TFE_TensorDebugInfoOnDeviceNumDims(
    TFE_TensorDebugInfo* debug_info);

/* Returns the padded size of on-device dimension dim_index (major to minor). */
TF_CAPI_EXPORT extern int64_t TFE_TensorDebugInfoOnDeviceDim(
    TFE_TensorDebugInfo* debug_info, int dim_index);

/* ---- Ops -------------------------------------------------------------- */

/* One op or function call to execute eagerly; its context must outlive it. */
typedef struct TFE_Op TFE_Op;

/* Returns a new op of the given op or function name, owned by the caller
   (TFE_DeleteOp), or NULL. */
TF_CAPI_EXPORT extern TFE_Op* TFE_NewOp(TFE_Context* ctx,
                                        const char* op_or_function_name,
                                        TF_Status* status);
/* Frees an op. */
TF_CAPI_EXPORT extern void TFE_DeleteOp(TFE_Op* op);

/* Returns the op or function name; the string lives as long as `op`. */
TF_CAPI_EXPORT extern const char* TFE_OpGetName(const TFE_Op* op,
                                                TF_Status* status);
/* Returns the op's context (borrowed). */
TF_CAPI_EXPORT extern TFE_Context* TFE_OpGetContext(const TFE_Op* op,
                                                    TF_Status* status);

/* Requests a device for the op (copied). */
TF_CAPI_EXPORT extern void TFE_OpSetDevice(TFE_Op* op, const char* device_name,
                                           TF_Status* status);
/* Returns the requested device; the string lives as long as `op`. */
TF_CAPI_EXPORT extern const char* TFE_OpGetDevice(const TFE_Op* op,
                                                  TF_Status* status);

/* Adds the next input; the op takes its own reference to `input`. */
TF_CAPI_EXPORT extern void TFE_OpAddInput(TFE_Op* op, TFE_TensorHandle* input,
                                          TF_Status* status);

/* Adds the next input as a list of handles. */
TF_CAPI_EXPORT extern void TFE_OpAddInputList(TFE_Op* op,
                                              TFE_TensorHandle** inputs,
                                              int num_inputs,
                                              TF_Status* status);

/* Returns how many handles have been added as inputs, lists flattened. */
TF_CAPI_EXPORT extern int TFE_OpGetFlatInputCount(const TFE_Op* op,
                                                  TF_Status* status);
/* Returns flat input `index`, borrowed from the op (use
   TFE_TensorHandleCopySharingTensor to keep it). */
TF_CAPI_EXPORT extern TFE_TensorHandle* TFE_OpGetFlatInput(const TFE_Op* op,
                                                           int index,
                                                           TF_Status* status);

/* Returns the type of attribute attr_name and sets *is_list. */
TF_CAPI_EXPORT extern TF_AttrType TFE_OpGetAttrType(TFE_Op* op,
                                                    const char* attr_name,
                                                    unsigned char* is_list,
                                                    TF_Status* status);
/* TFE_OpGetAttrType by op name, without creating an op. */
TF_CAPI_EXPORT extern TF_AttrType TFE_OpNameGetAttrType(
    TFE_Context* ctx, const char* op_or_function_name, const char* attr_name,
    unsigned char* is_list, TF_Status* status);

/* Attribute setters, as the TF_SetAttr* ones; values are copied. */
TF_CAPI_EXPORT extern void TFE_OpSetAttrString(TFE_Op* op,
                                               const char* attr_name,
                                               const void* value,
                                               size_t length);
TF_CAPI_EXPORT extern void TFE_OpSetAttrInt(TFE_Op* op, const char* attr_name,
                                            int64_t value);
TF_CAPI_EXPORT extern void TFE_OpSetAttrFloat(TFE_Op* op, const char* attr_name,
                                              float value);
TF_CAPI_EXPORT extern void TFE_OpSetAttrBool(TFE_Op* op, const char* attr_name,
                                             unsigned char value);
TF_CAPI_EXPORT extern void TFE_OpSetAttrType(TFE_Op* op, const char* attr_name,
                                             TF_DataType value);
/* num_dims -1 means unknown rank; a dim -1 an unknown size. */
TF_CAPI_EXPORT extern void TFE_OpSetAttrShape(TFE_Op* op, const char* attr_name,
                                              const int64_t* dims,
                                              const int num_dims,
                                              TF_Status* out_status);

/* Sets a function attribute to the function (and attributes) of `value`. */
TF_CAPI_EXPORT extern void TFE_OpSetAttrFunction(TFE_Op* op,
                                                 const char* attr_name,
                                                 const TFE_Op* value);

/* Sets a function attribute to the function named data[0, length). */
TF_CAPI_EXPORT void TFE_OpSetAttrFunctionName(TFE_Op* op, const char* attr_name,
                                              const char* data, size_t length);

/* Sets a tensor attribute; the tensor is copied, the caller keeps it. */
TF_CAPI_EXPORT extern void TFE_OpSetAttrTensor(TFE_Op* op,
                                               const char* attr_name,
                                               TF_Tensor* tensor,
                                               TF_Status* status);

TF_CAPI_EXPORT extern void TFE_OpSetAttrStringList(TFE_Op* op,
                                                   const char* attr_name,
                                                   const void* const* values,
                                                   const size_t* lengths,
                                                   int num_values);
TF_CAPI_EXPORT extern void TFE_OpSetAttrIntList(TFE_Op* op,
                                                const char* attr_name,
                                                const int64_t* values,
                                                int num_values);
TF_CAPI_EXPORT extern void TFE_OpSetAttrFloatList(TFE_Op* op,
                                                  const char* attr_name,
                                                  const float* values,
                                                  int num_values);
TF_CAPI_EXPORT extern void TFE_OpSetAttrBoolList(TFE_Op* op,
                                                 const char* attr_name,
                                                 const unsigned char* values,
                                                 int num_values);
TF_CAPI_EXPORT extern void TFE_OpSetAttrTypeList(TFE_Op* op,
                                                 const char* attr_name,
                                                 const TF_DataType* values,
                                                 int num_values);
/* Shape i is dims[i][0, num_dims[i]). */
TF_CAPI_EXPORT extern void TFE_OpSetAttrShapeList(
    TFE_Op* op, const char* attr_name, const int64_t** dims,
    const int* num_dims, int num_values, TF_Status* out_status);
TF_CAPI_EXPORT extern void TFE_OpSetAttrFunctionList(TFE_Op* op,
                                                     const char* attr_name,
                                                     const TFE_Op** value,
                                                     int num_values);

/* Returns the number of tensors in the input argument input_name. */
TF_CAPI_EXPORT extern int TFE_OpGetInputLength(TFE_Op* op,
                                               const char* input_name,
                                               TF_Status* status);

/* Returns the number of tensors in the output argument output_name. */
TF_CAPI_EXPORT extern int TFE_OpGetOutputLength(TFE_Op* op,
                                                const char* output_name,
                                                TF_Status* status);

/* Runs the op. retvals is the caller's array of *num_retvals entries (an
   error if too small); on return *num_retvals is the number of outputs and
   the caller owns each handle written (TFE_DeleteTensorHandle). Synchronous
   execution returns when the kernel is done; asynchronous execution may
   return handles that are not ready yet, and the inputs must not be changed
   until they are. */
TF_CAPI_EXPORT extern void TFE_Execute(TFE_Op* op, TFE_TensorHandle** retvals,
                                       int* num_retvals, TF_Status* status);

/* ---- Functions and run metadata --------------------------------------- */

/* Registers a function from a serialized FunctionDef so TFE_NewOp can call
   it by name. */
TF_CAPI_EXPORT extern void TFE_ContextAddFunctionDef(
    TFE_Context* ctx, const char* serialized_function_def, size_t size,
    TF_Status* status);

/* Registers a TF_Function (copied; the caller keeps it). */
TF_CAPI_EXPORT extern void TFE_ContextAddFunction(TFE_Context* ctx,
                                                  TF_Function* function,
                                                  TF_Status* status);

/* Unregisters the function `name`. */
TF_CAPI_EXPORT extern void TFE_ContextRemoveFunction(TFE_Context* ctx,
                                                     const char* name,
                                                     TF_Status* status);

/* Returns 1 if a function named `name` is registered, else 0. */
TF_CAPI_EXPORT unsigned char TFE_ContextHasFunction(TFE_Context* ctx,
                                                    const char* name);

/* Starts collecting RunMetadata for ops run in this context. */
TF_CAPI_EXPORT extern void TFE_ContextEnableRunMetadata(TFE_Context* ctx);

/* Stops collecting RunMetadata. */
TF_CAPI_EXPORT extern void TFE_ContextDisableRunMetadata(TFE_Context* ctx);

/* Writes the RunMetadata collected so far into *buf (serialized) and clears
   it; waits for pending async ops first. */
TF_CAPI_EXPORT extern void TFE_ContextExportRunMetadata(TFE_Context* ctx,
                                                        TF_Buffer* buf,
                                                        TF_Status* status);

/* Opens a step: per-step resources live until the last open step ends. */
TF_CAPI_EXPORT extern void TFE_ContextStartStep(TFE_Context* ctx);

/* Closes a step; when none remains open, per-step resources are cleared. */
TF_CAPI_EXPORT extern void TFE_ContextEndStep(TFE_Context* ctx);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* TENSORFLOW_C_EAGER_C_API_H_ */
