/* mstream: TensorFlow 2.15 C API, ABI-compatible declarations. */
#ifndef TENSORFLOW_C_TF_STATUS_H_
#define TENSORFLOW_C_TF_STATUS_H_

#include "tensorflow/c/c_api_macros.h"
#include "tsl/c/tsl_status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Opaque status object: every fallible call reports through one. */
typedef struct TSL_Status TF_Status;

/* Error codes: the TSL_Code enum under TF names (the values are TSL_*). */
typedef TSL_Code TF_Code;
#define TF_OK TSL_OK
#define TF_CANCELLED TSL_CANCELLED
#define TF_UNKNOWN TSL_UNKNOWN
#define TF_INVALID_ARGUMENT TSL_INVALID_ARGUMENT
#define TF_DEADLINE_EXCEEDED TSL_DEADLINE_EXCEEDED
#define TF_NOT_FOUND TSL_NOT_FOUND
#define TF_ALREADY_EXISTS TSL_ALREADY_EXISTS
#define TF_PERMISSION_DENIED TSL_PERMISSION_DENIED
#define TF_UNAUTHENTICATED TSL_UNAUTHENTICATED
#define TF_RESOURCE_EXHAUSTED TSL_RESOURCE_EXHAUSTED
#define TF_FAILED_PRECONDITION TSL_FAILED_PRECONDITION
#define TF_ABORTED TSL_ABORTED
#define TF_OUT_OF_RANGE TSL_OUT_OF_RANGE
#define TF_UNIMPLEMENTED TSL_UNIMPLEMENTED
#define TF_INTERNAL TSL_INTERNAL
#define TF_UNAVAILABLE TSL_UNAVAILABLE
#define TF_DATA_LOSS TSL_DATA_LOSS

/* Returns a new OK status. The caller owns it; free it with TF_DeleteStatus. */
TF_CAPI_EXPORT extern TF_Status* TF_NewStatus(void);

/* Frees a status. NULL is a no-op. */
TF_CAPI_EXPORT extern void TF_DeleteStatus(TF_Status*);

/* Replaces the code and message of *s (msg is copied); payloads are cleared.
   TF_SetStatus(s, TF_OK, "") resets a status for reuse. */
TF_CAPI_EXPORT extern void TF_SetStatus(TF_Status* s, TF_Code code,
                                        const char* msg);

/* Sets payload `key` to `value` (both copied), replacing any old value.
   Ignored when *s is OK. */
TF_CAPI_EXPORT void TF_SetPayload(TF_Status* s, const char* key,
                                  const char* value);

/* Callback type for TF_ForEachPayload (the TSL type under a TF name). */
#define TF_PayloadVisitor TSL_PayloadVisitor

/* Calls visitor(key, value, capture) for each payload of *s; key and value
   are valid only during the call. */
TF_CAPI_EXPORT extern void TF_ForEachPayload(const TF_Status* s,
                                             TF_PayloadVisitor visitor,
                                             void* capture);

/* Sets *s from an errno-style code, with `context` in the message. */
TF_CAPI_EXPORT extern void TF_SetStatusFromIOError(TF_Status* s, int error_code,
                                                   const char* context);

/* Returns the code of *s. */
TF_CAPI_EXPORT extern TF_Code TF_GetCode(const TF_Status* s);

/* Returns the NUL-terminated message of *s ("" when OK). The string belongs
   to *s and is valid until *s is next changed or deleted. */
TF_CAPI_EXPORT extern const char* TF_Message(const TF_Status* s);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* TENSORFLOW_C_TF_STATUS_H_ */
