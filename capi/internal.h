/* Private to capi/: the layout of the opaque TF_* handles and the C helpers
   that the Go side of the package calls. Nothing here is part of the ABI.

   Ownership: every struct below is allocated with malloc and freed by the
   TF_Delete* function of its type. Handles that reach Go objects hold a
   runtime/cgo.Handle (uintptr_t `h`); a Go pointer never reaches C. */
#ifndef MSTREAM_CAPI_INTERNAL_H_
#define MSTREAM_CAPI_INTERNAL_H_

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tensorflow/c/c_api.h"
#include "tensorflow/c/eager/c_api.h"
#include "mstream/mstream.h"

typedef struct ms_payload {
  char* key;
  char* value;
  struct ms_payload* next;
} ms_payload;

/* TF_Status. msg is never NULL: "" when OK. */
struct TSL_Status {
  TSL_Code code;
  char* msg;
  ms_payload* payloads;
};

/* A tensor's data, shared by the tensors that view it (TF_TensorBitcastFrom)
   and freed through its deallocator when the last one goes. */
typedef struct ms_tensor_buf {
  void* data;
  size_t len;
  void (*dealloc)(void* data, size_t len, void* arg);
  void* arg;
  int refs; /* changed only with __atomic builtins */
  /* Number of TF_TString elements to deallocate with the buffer: set for
     TF_STRING tensors the library creates, as TF's own tensors own theirs. */
  size_t owned_strings;
} ms_tensor_buf;

struct TF_Tensor {
  TF_DataType dtype;
  int num_dims;
  int64_t* dims;
  ms_tensor_buf* buf;
};

/* Handles over Go objects. */
struct TF_Graph { uintptr_t h; };
struct TF_Session { uintptr_t h; };
struct TF_SessionOptions { uintptr_t h; };
struct TF_OperationDescription { uintptr_t h; };
struct TF_ImportGraphDefOptions { uintptr_t h; };
/* A FunctionDef; name is its signature's name, owned here (TF_FunctionName). */
struct TF_Function { uintptr_t h; char* name; };

/* One per node, allocated the first time C sees the node and kept until the
   graph goes, so that a node always has the same TF_Operation*. The strings
   are immutable copies. */
struct TF_Operation {
  uintptr_t graph; /* cgo.Handle of the graph's Go wrapper */
  int id;          /* node ID */
  char* name;
  char* op_type;
  char* device;
};

struct TF_ImportGraphDefResults {
  int num_outputs;
  TF_Output* outputs;
  int num_opers;
  TF_Operation** opers;
  int num_missing;
  const char** missing_names;
  int* missing_indexes;
};

struct TF_DeviceList {
  int count;
  char** names;
  char** types;
  int64_t* memory;
  uint64_t* incarnation;
};

/* Eager: host tensors only. */
struct TFE_ContextOptions { unsigned char async; int policy; };
struct TFE_Context { int policy; };
struct TFE_TensorHandle { TF_Tensor* t; };

/* Live-object counts behind MS_LiveObjects (helpers.c): every site that
   allocates a handle of a kind adds 1, its delete subtracts 1. The names
   MS_LiveObjects accepts are in the same order in helpers.c. */
enum {
  MS_LIVE_STATUS, MS_LIVE_BUFFER, MS_LIVE_TENSOR, MS_LIVE_TENSOR_DATA,
  MS_LIVE_GRAPH, MS_LIVE_OPERATION, MS_LIVE_OPERATION_DESCRIPTION,
  MS_LIVE_IMPORT_OPTIONS, MS_LIVE_IMPORT_RESULTS, MS_LIVE_SESSION_OPTIONS,
  MS_LIVE_SESSION, MS_LIVE_DEVICE_LIST, MS_LIVE_PRUN_HANDLE,
  MS_LIVE_EAGER_CONTEXT_OPTIONS, MS_LIVE_EAGER_CONTEXT, MS_LIVE_TENSOR_HANDLE,
  MS_LIVE_FUNCTION, MS_LIVE_KINDS
};
void ms_live(int kind, int delta);

/* Helpers (helpers.c). */
void ms_set_status_n(TF_Status* s, int code, const char* msg, size_t len);
void ms_set_unimplemented(TF_Status* s, const char* fn);
/* Writes a malloc'd copy of data[0, len) into an empty buffer; returns -1
   (and writes nothing) when the buffer already holds data. */
int ms_buffer_set(TF_Buffer* b, const void* data, size_t len);
void ms_free_deallocator(void* data, size_t len);
/* A tensor over fresh 64-byte aligned memory; strings it will hold are
   initialised empty and owned by it. */
TF_Tensor* ms_new_tensor(TF_DataType dt, const int64_t* dims, int num_dims,
                         size_t len);
TF_TString* ms_tstring_at(TF_Tensor* t, size_t i);
/* A second tensor over t's buffer. */
TF_Tensor* ms_tensor_share(const TF_Tensor* t);
/* Moves *from (a tensor this library made) into *to, freeing to's old
   contents; from is freed. */
void ms_tensor_assign(TF_Tensor* to, TF_Tensor* from);
void ms_free_operation(TF_Operation* op);
TF_ImportGraphDefResults* ms_new_import_results(int nout, int nops,
                                                int nmissing);
TF_DeviceList* ms_new_device_list(int n);

#endif /* MSTREAM_CAPI_INTERNAL_H_ */
