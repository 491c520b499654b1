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
   serialization into *out. The caller keeps `text` and owns `out`. As strict
   as TF's text parser: an unknown field or garbage is TF_INVALID_ARGUMENT
   naming the line and column; # comments are allowed. */
TF_CAPI_EXPORT extern void MS_GraphDefTextToBinary(const char* text, size_t len,
                                                   TF_Buffer* out,
                                                   TF_Status* status);

/* Parses text[0, len), a text-format ConfigProto, and writes the binary
   serialization into *out (ready for TF_SetConfig). The caller keeps `text`
   and owns `out`. Strict as MS_GraphDefTextToBinary is. */
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

/* Writes the configuration the session runs with as a JSON object into
   *json_out: {"knobs": [{"name", "value", "default", "raw", "set",
   "alias_of", "doc"}, ...]}, one entry per TF_* / MSTREAM_* variable, as
   read once when the session was created (a bad value fails TF_NewSession
   instead). The session is borrowed; the caller owns `json_out`. */
TF_CAPI_EXPORT extern void MS_SessionConfig(TF_Session* session,
                                            TF_Buffer* json_out,
                                            TF_Status* status);

/* Writes the Chrome trace (chrome://tracing, Perfetto) of the steps the
   session has kept to the file at `path` (NUL-terminated; overwritten): one
   process per stream group, one thread per stream, one slice per kernel or
   copy, a flow arrow per cross-stream event wait. Steps are kept for runs
   with RunOptions.trace_level != NO_TRACE, and for every run when the
   session was created with MSTREAM_TRACE set (which also writes that file
   when the session is closed). A session with no kept step writes a trace
   with no slices. The session and `path` are borrowed. */
TF_CAPI_EXPORT extern void MS_SessionWriteTrace(TF_Session* session,
                                                const char* path,
                                                TF_Status* status);

/* Returns how many objects of `kind` exist right now, for leak checks. A kind
   is a handle type the caller deletes ("TF_Status", "TF_Buffer", "TF_Tensor",
   "TF_Graph", "TF_OperationDescription", "TF_ImportGraphDefOptions",
   "TF_ImportGraphDefResults", "TF_SessionOptions", "TF_Session",
   "TF_DeviceList", "TFE_ContextOptions", "TFE_Context", "TFE_TensorHandle",
   "TF_Function"),
   "TF_Operation" (freed with the last of its graph and that graph's
   sessions), "tensor_data" (buffers shared by tensors; a buffer from
   TF_NewTensor goes when its deallocator has run), "prun_handle" (freed by
   TF_DeletePRunHandle), or "goroutines" (the Go runtime's count, which
   includes the runtime's own). NULL gives the sum of every kind but
   "goroutines"; an unknown kind gives -1. */
TF_CAPI_EXPORT extern int64_t MS_LiveObjects(const char* kind);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* MSTREAM_MSTREAM_H_ */
