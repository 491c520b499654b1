/* The TF_* session functions and the MS_* extensions, forwarding to
   session.go. */
#include "internal.h"
#include "_cgo_export.h"

TF_SessionOptions* TF_NewSessionOptions(void) {
  TF_SessionOptions* o = malloc(sizeof *o);
  if (o == NULL) abort();
  o->h = msNewSessionOptions();
  ms_live(MS_LIVE_SESSION_OPTIONS, 1);
  return o;
}

void TF_DeleteSessionOptions(TF_SessionOptions* opts) {
  if (opts == NULL) return;
  msDeleteSessionOptions(opts->h);
  free(opts);
  ms_live(MS_LIVE_SESSION_OPTIONS, -1);
}

void TF_SetTarget(TF_SessionOptions* options, const char* target) {
  if (options) msSetTarget(options->h, (char*)target);
}

void TF_SetConfig(TF_SessionOptions* options, const void* proto,
                  size_t proto_len, TF_Status* status) {
  if (options == NULL) {
    TF_SetStatus(status, TF_INVALID_ARGUMENT, "TF_SetConfig: options is NULL");
    return;
  }
  msSetConfig(options->h, (void*)proto, proto_len, status);
}

TF_Session* TF_NewSession(TF_Graph* graph, const TF_SessionOptions* opts,
                          TF_Status* status) {
  uintptr_t h = msNewSession(graph, opts ? opts->h : 0, status);
  if (h == 0) return NULL;
  TF_Session* s = malloc(sizeof *s);
  if (s == NULL) abort();
  s->h = h;
  ms_live(MS_LIVE_SESSION, 1);
  return s;
}

TF_Session* TF_LoadSessionFromSavedModel(
    const TF_SessionOptions* session_options, const TF_Buffer* run_options,
    const char* export_dir, const char* const* tags, int tags_len,
    TF_Graph* graph, TF_Buffer* meta_graph_def, TF_Status* status) {
  uintptr_t h = msLoadSessionFromSavedModel(
      session_options ? session_options->h : 0, (TF_Buffer*)run_options,
      (char*)export_dir, (char**)tags, tags_len, graph, meta_graph_def,
      status);
  if (h == 0) return NULL;
  TF_Session* s = malloc(sizeof *s);
  if (s == NULL) abort();
  s->h = h;
  ms_live(MS_LIVE_SESSION, 1);
  return s;
}

void TF_CloseSession(TF_Session* s, TF_Status* status) {
  msCloseSession(s ? s->h : 0, status);
}

void TF_DeleteSession(TF_Session* s, TF_Status* status) {
  if (s == NULL) {
    TF_SetStatus(status, TF_OK, "");
    return;
  }
  msDeleteSession(s->h, status);
  free(s);
  ms_live(MS_LIVE_SESSION, -1);
}

void TF_SessionRun(TF_Session* session, const TF_Buffer* run_options,
                   const TF_Output* inputs, TF_Tensor* const* input_values,
                   int ninputs, const TF_Output* outputs,
                   TF_Tensor** output_values, int noutputs,
                   const TF_Operation* const* target_opers, int ntargets,
                   TF_Buffer* run_metadata, TF_Status* status) {
  /* OK here, on the C side: msSessionRun sets only an error, which saves a
   * call back into C on every successful Run. */
  ms_set_status_n(status, TSL_OK, NULL, 0);
  msSessionRun(session ? session->h : 0, (TF_Buffer*)run_options,
               (TF_Output*)inputs, (TF_Tensor**)input_values, ninputs,
               (TF_Output*)outputs, output_values, noutputs,
               (TF_Operation**)target_opers, ntargets, run_metadata, status);
}

void TF_SessionPRunSetup(TF_Session* session, const TF_Output* inputs,
                         int ninputs, const TF_Output* outputs, int noutputs,
                         const TF_Operation* const* target_opers, int ntargets,
                         const char** handle, TF_Status* status) {
  msSessionPRunSetup(session ? session->h : 0, (TF_Output*)inputs, ninputs,
                     (TF_Output*)outputs, noutputs,
                     (TF_Operation**)target_opers, ntargets, (char**)handle,
                     status);
}

void TF_SessionPRun(TF_Session* session, const char* handle,
                    const TF_Output* inputs, TF_Tensor* const* input_values,
                    int ninputs, const TF_Output* outputs,
                    TF_Tensor** output_values, int noutputs,
                    const TF_Operation* const* target_opers, int ntargets,
                    TF_Status* status) {
  msSessionPRun(session ? session->h : 0, (char*)handle, (TF_Output*)inputs,
                (TF_Tensor**)input_values, ninputs, (TF_Output*)outputs,
                output_values, noutputs, (TF_Operation**)target_opers,
                ntargets, status);
}

TF_DeviceList* TF_SessionListDevices(TF_Session* session, TF_Status* status) {
  return msSessionListDevices(session ? session->h : 0, status);
}

/* A new session sees every node added to its graph before each run. */
void TF_ExtendSession(TF_Session* session, TF_Status* status) {
  if (session == NULL) {
    TF_SetStatus(status, TF_INVALID_ARGUMENT, "TF_ExtendSession: session is NULL");
    return;
  }
  TF_SetStatus(status, TF_OK, "");
}

void MS_GraphDefTextToBinary(const char* text, size_t len, TF_Buffer* out,
                             TF_Status* status) {
  msTextToBinary((void*)text, len, 0, out, status);
}

void MS_ConfigProtoTextToBinary(const char* text, size_t len, TF_Buffer* out,
                                TF_Status* status) {
  msTextToBinary((void*)text, len, 1, out, status);
}

void MS_SessionStats(TF_Session* session, TF_Buffer* json_out,
                     TF_Status* status) {
  msSessionStats(session ? session->h : 0, json_out, status);
}

void MS_SessionConfig(TF_Session* session, TF_Buffer* json_out,
                      TF_Status* status) {
  msSessionConfig(session ? session->h : 0, json_out, status);
}

void MS_SessionWriteTrace(TF_Session* session, const char* path,
                          TF_Status* status) {
  msSessionWriteTrace(session ? session->h : 0, (char*)path, status);
}
