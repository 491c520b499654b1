/* mstream: TensorFlow 2.15 C API, ABI-compatible declarations. */
#ifndef TENSORFLOW_C_C_API_MACROS_H_
#define TENSORFLOW_C_C_API_MACROS_H_

/* TF_CAPI_EXPORT marks every function the library exports. SWIG sees no
   attribute; Windows builds import (or, with TF_COMPILE_LIBRARY, export) the
   symbol; elsewhere it has default visibility, and TF_CAPI_WEAK makes the
   declaration weak so a program can run without the library present. */
#ifdef SWIG
#define TF_CAPI_EXPORT
#elif defined(_WIN32)
#ifdef TF_COMPILE_LIBRARY
#define TF_CAPI_EXPORT __declspec(dllexport)
#else
#define TF_CAPI_EXPORT __declspec(dllimport)
#endif
#elif defined(TF_CAPI_WEAK)
#define TF_CAPI_EXPORT \
  __attribute__((visibility("default"))) __attribute((weak))
#else
#define TF_CAPI_EXPORT __attribute__((visibility("default")))
#endif

/* The C API's boolean: one byte, 0 or 1. (TF_BOOL is the tensor dtype.) */
#ifndef TF_Bool
#define TF_Bool unsigned char
#endif

/* Bytes from the start of TYPE to the end of MEMBER; versioned structs
   record this in their struct_size field. */
#ifndef TF_OFFSET_OF_END
#define TF_OFFSET_OF_END(TYPE, MEMBER) \
  (offsetof(TYPE, MEMBER) + sizeof(((TYPE *)0)->MEMBER))
#endif

#endif /* TENSORFLOW_C_C_API_MACROS_H_ */
