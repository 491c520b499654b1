/* mstream: TensorFlow 2.15 C API, ABI-compatible declarations. */
#ifndef TENSORFLOW_C_TF_TSTRING_H_
#define TENSORFLOW_C_TF_TSTRING_H_

#include "tensorflow/c/c_api_macros.h"
#include "tensorflow/c/tf_tensor.h"
#include "tensorflow/core/platform/ctstring.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Exported counterparts of the inline TF_TString_* functions, for callers
   that cannot compile C (ctypes, Go, other FFIs). Each behaves exactly like
   the inline function of the same suffix. */

/* Makes *t an empty string; call before any other use. */
TF_CAPI_EXPORT extern void TF_StringInit(TF_TString *t);

/* Sets *dst to an owned copy of src[0, size). */
TF_CAPI_EXPORT extern void TF_StringCopy(TF_TString *dst, const char *src,
                                         size_t size);

/* Makes *dst a non-owning view of src[0, size); src must outlive it. */
TF_CAPI_EXPORT extern void TF_StringAssignView(TF_TString *dst, const char *src,
                                               size_t size);

/* Returns the first byte of the string; it belongs to *tstr. */
TF_CAPI_EXPORT extern const char *TF_StringGetDataPointer(
    const TF_TString *tstr);

/* Returns the representation (SMALL, LARGE, OFFSET or VIEW). */
TF_CAPI_EXPORT extern TF_TString_Type TF_StringGetType(const TF_TString *str);

/* Returns the length in bytes. */
TF_CAPI_EXPORT extern size_t TF_StringGetSize(const TF_TString *tstr);

/* Returns the capacity in bytes (0 for VIEW and OFFSET). */
TF_CAPI_EXPORT extern size_t TF_StringGetCapacity(const TF_TString *str);

/* Frees the heap buffer of a LARGE string and resets it to empty. */
TF_CAPI_EXPORT extern void TF_StringDealloc(TF_TString *tstr);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* TENSORFLOW_C_TF_TSTRING_H_ */
