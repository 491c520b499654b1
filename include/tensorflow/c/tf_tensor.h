/* mstream: TensorFlow 2.15 C API, ABI-compatible declarations. */
#ifndef TENSORFLOW_C_TF_TENSOR_H_
#define TENSORFLOW_C_TF_TENSOR_H_

#include <stdbool.h>
#include <stdint.h>

#include "tensorflow/c/c_api_macros.h"
#include "tensorflow/c/tf_datatype.h"
#include "tensorflow/c/tf_status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Where a kernel wants a tensor allocated. Versioned by struct_size: set it
   to TF_ALLOCATOR_ATTRIBUTES_STRUCT_SIZE. on_host is 1 for host memory. */
typedef struct TF_AllocatorAttributes {
  size_t struct_size;
  TF_Bool on_host;
} TF_AllocatorAttributes;

#define TF_ALLOCATOR_ATTRIBUTES_STRUCT_SIZE \
  TF_OFFSET_OF_END(TF_AllocatorAttributes, on_host)

/* Opaque n-dimensional array of one dtype. Data is dense and row-major; a
   TF_STRING tensor's data is an array of TF_TString (see tf_tstring.h). */
typedef struct TF_Tensor TF_Tensor;

/* Wraps caller memory data[0, len) as a tensor of the given dtype and shape.
   The tensor takes ownership of `data`: when it is deleted it calls
   deallocator(data, len, deallocator_arg). If len does not fit the dtype and
   shape, returns NULL after calling the deallocator. The caller owns the
   result; free it with TF_DeleteTensor. */
TF_CAPI_EXPORT extern TF_Tensor* TF_NewTensor(
    TF_DataType, const int64_t* dims, int num_dims, void* data, size_t len,
    void (*deallocator)(void* data, size_t len, void* arg),
    void* deallocator_arg);

/* Returns a new tensor with `len` bytes of uninitialized, suitably aligned
   memory; fill it through TF_TensorData. The caller owns the result; free it
   with TF_DeleteTensor. When `len` bytes cannot be had (more than the
   machine's memory, or the system refuses), the tensor comes back without
   data, as TensorFlow's does: TF_TensorData is NULL while TF_TensorByteSize
   and the dims are as asked; the process is not aborted. Feeding such a
   tensor to TF_SessionRun fails with INVALID_ARGUMENT. */
TF_CAPI_EXPORT extern TF_Tensor* TF_AllocateTensor(TF_DataType,
                                                   const int64_t* dims,
                                                   int num_dims, size_t len);

/* If `tensor` is the sole owner of its buffer, deletes it and returns a new
   tensor (owned by the caller) with the same contents; otherwise returns NULL
   and leaves `tensor` unchanged. */
TF_CAPI_EXPORT extern TF_Tensor* TF_TensorMaybeMove(TF_Tensor* tensor);

/* Frees a tensor (its buffer goes when its last user is done). NULL is a
   no-op. */
TF_CAPI_EXPORT extern void TF_DeleteTensor(TF_Tensor*);

/* Returns the element type. */
TF_CAPI_EXPORT extern TF_DataType TF_TensorType(const TF_Tensor*);

/* Replaces the shape; dims is copied. */
TF_CAPI_EXPORT extern void TF_SetShape(TF_Tensor* tensor, const int64_t* dims,
                                       int num_dims);

/* Returns the number of dimensions. */
TF_CAPI_EXPORT extern int TF_NumDims(const TF_Tensor*);

/* Returns the size of dimension dim_index (0 <= dim_index < TF_NumDims). */
TF_CAPI_EXPORT extern int64_t TF_Dim(const TF_Tensor* tensor, int dim_index);

/* Returns the size of the data buffer in bytes. */
TF_CAPI_EXPORT extern size_t TF_TensorByteSize(const TF_Tensor*);

/* Returns the data buffer; it belongs to the tensor. */
TF_CAPI_EXPORT extern void* TF_TensorData(const TF_Tensor*);

/* Returns the number of elements (the product of the dimensions). */
TF_CAPI_EXPORT extern int64_t TF_TensorElementCount(const TF_Tensor* tensor);

/* Makes `to` share `from`'s buffer, viewed as dtype `type` with shape
   new_dims. Both dtypes must have a fixed size and the byte counts must
   match, else INVALID_ARGUMENT. */
TF_CAPI_EXPORT extern void TF_TensorBitcastFrom(const TF_Tensor* from,
                                                TF_DataType type, TF_Tensor* to,
                                                const int64_t* new_dims,
                                                int num_new_dims,
                                                TF_Status* status);

/* Returns true if the data buffer meets the library's alignment. */
TF_CAPI_EXPORT extern bool TF_TensorIsAligned(const TF_Tensor*);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* TENSORFLOW_C_TF_TENSOR_H_ */
