/* mstream: TensorFlow 2.15 C API, ABI-compatible declarations. */
#ifndef MSTREAM_MSTREAM_H_
#define MSTREAM_MSTREAM_H_

/* mstream's own extensions to the TensorFlow C API (MS_ prefix). They follow
   the conventions of tensorflow/c/c_api.h: a TF_Status* reports failure, and
   a TF_Buffer* result must be an empty buffer (from TF_NewBuffer) that the
   caller owns and frees with TF_DeleteBuffer. New options are added as
   functions, never as public structs. */

#include <stddef.h>

#include "tensorflow/c/c_api.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Returns mstream's own version (TF_Version gives the TF API level). The
   string is static: do not free it. */
TF_CAPI_EXPORT extern const char* MS_Version(void);

/* Parses text[0, len), a text-format GraphDef, and writes the binary
   serialization into *out. The caller keeps `text` and owns `out`. */
TF_CAPI_EXPORT extern void MS_GraphDefTextToBinary(const char* text, size_t len,
                                                   TF_Buffer* out,
                                                   TF_Status* status);

/* Parses text[0, len), a text-format ConfigProto, and writes the binary
   serialization into *out (ready for TF_SetConfig). The caller keeps `text`
   and owns `out`. */
TF_CAPI_EXPORT extern void MS_ConfigProtoTextToBinary(const char* text,
                                                      size_t len,
                                                      TF_Buffer* out,
                                                      TF_Status* status);

/* Writes the session's run statistics as a JSON object (UTF-8 text of
   json_out->length bytes) into *json_out. The session is borrowed; the
   caller owns `json_out`. */
TF_CAPI_EXPORT extern void MS_SessionStats(TF_Session* session,
                                           TF_Buffer* json_out,
                                           TF_Status* status);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* MSTREAM_MSTREAM_H_ */
