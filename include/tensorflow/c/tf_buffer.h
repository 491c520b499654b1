/* mstream: TensorFlow 2.15 C API, ABI-compatible declarations. */
#ifndef TENSORFLOW_C_TF_BUFFER_H_
#define TENSORFLOW_C_TF_BUFFER_H_

#include <stddef.h>

#include "tensorflow/c/c_api_macros.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A byte block, usually a serialized protocol buffer. The struct does not
   own `data` by itself: whoever fills it in sets `data_deallocator`, and
   TF_DeleteBuffer calls it (when non-NULL) on (data, length). */
typedef struct TF_Buffer {
  const void* data;
  size_t length;
  void (*data_deallocator)(void* data, size_t length);
} TF_Buffer;

/* Returns a new buffer holding a copy of proto[0, proto_len). The caller owns
   it; free it with TF_DeleteBuffer. */
TF_CAPI_EXPORT extern TF_Buffer* TF_NewBufferFromString(const void* proto,
                                                        size_t proto_len);

/* Returns a new empty buffer, for functions that write a result into one.
   The caller owns it; free it with TF_DeleteBuffer. */
TF_CAPI_EXPORT extern TF_Buffer* TF_NewBuffer(void);

/* Frees the buffer and, through its deallocator, its data. NULL is a no-op. */
TF_CAPI_EXPORT extern void TF_DeleteBuffer(TF_Buffer*);

/* Returns a copy of the struct *buffer (the data is shared, not copied). */
TF_CAPI_EXPORT extern TF_Buffer TF_GetBuffer(TF_Buffer* buffer);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* TENSORFLOW_C_TF_BUFFER_H_ */
