/* mstream: TensorFlow 2.15 C API, ABI-compatible declarations. */
#ifndef TENSORFLOW_TSL_C_TSL_STATUS_H_
#define TENSORFLOW_TSL_C_TSL_STATUS_H_

#ifdef __cplusplus
extern "C" {
#endif

/* Opaque status object: an error code, a message and key/value payloads.
   TF_Status is the same type. */
typedef struct TSL_Status TSL_Status;

/* Error codes, numbered as in error_codes.proto (note UNAUTHENTICATED = 16). */
typedef enum TSL_Code {
  TSL_OK = 0,
  TSL_CANCELLED = 1,
  TSL_UNKNOWN = 2,
  TSL_INVALID_ARGUMENT = 3,
  TSL_DEADLINE_EXCEEDED = 4,
  TSL_NOT_FOUND = 5,
  TSL_ALREADY_EXISTS = 6,
  TSL_PERMISSION_DENIED = 7,
  TSL_UNAUTHENTICATED = 16,
  TSL_RESOURCE_EXHAUSTED = 8,
  TSL_FAILED_PRECONDITION = 9,
  TSL_ABORTED = 10,
  TSL_OUT_OF_RANGE = 11,
  TSL_UNIMPLEMENTED = 12,
  TSL_INTERNAL = 13,
  TSL_UNAVAILABLE = 14,
  TSL_DATA_LOSS = 15,
} TSL_Code;

/* The TSL_* functions are declared as TF 2.15 declares them, without
   TF_CAPI_EXPORT: TF's own library does not export them either (its export
   list is TF_* and TFE_*). Use the TF_* equivalents in tf_status.h. */

/* Returns a new OK status. The caller owns it; free it with TSL_DeleteStatus. */
extern TSL_Status* TSL_NewStatus(void);

/* Frees a status. */
extern void TSL_DeleteStatus(TSL_Status*);

/* Replaces the code and message of *s (msg is copied); payloads are cleared. */
extern void TSL_SetStatus(TSL_Status* s, TSL_Code code, const char* msg);

/* Sets payload `key` to `value` (both copied), replacing any old value.
   Ignored when *s is OK. */
extern void TSL_SetPayload(TSL_Status* s, const char* key, const char* value);

/* Called once per payload; key and value are valid only during the call. */
typedef void (*TSL_PayloadVisitor)(const char* key, const char* value,
                                   void* capture);

/* Calls visitor(key, value, capture) for each payload of *s. */
extern void TSL_ForEachPayload(const TSL_Status* s, TSL_PayloadVisitor visitor,
                               void* capture);

/* Sets *s from an errno-style code, with `context` in the message. */
extern void TSL_SetStatusFromIOError(TSL_Status* s, int error_code,
                                     const char* context);

/* Returns the code of *s. */
extern TSL_Code TSL_GetCode(const TSL_Status* s);

/* Returns the NUL-terminated message of *s ("" when OK). The string belongs
   to *s and is valid until *s is next changed or deleted. */
extern const char* TSL_Message(const TSL_Status* s);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* TENSORFLOW_TSL_C_TSL_STATUS_H_ */
