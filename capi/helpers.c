/* Memory the library hands to C: operation records, import results, device
   lists, partial-run handles; and the version strings. */
#include <stdio.h>

#include "internal.h"
#include "_cgo_export.h"

const char* TF_Version(void) { return "2.15.0"; }

const char* MS_Version(void) { return "0.1.0"; }

static int64_t live[MS_LIVE_KINDS];
static const char* const live_names[MS_LIVE_KINDS] = {
    "TF_Status", "TF_Buffer", "TF_Tensor", "tensor_data", "TF_Graph",
    "TF_Operation", "TF_OperationDescription", "TF_ImportGraphDefOptions",
    "TF_ImportGraphDefResults", "TF_SessionOptions", "TF_Session",
    "TF_DeviceList", "prun_handle", "TFE_ContextOptions", "TFE_Context",
    "TFE_TensorHandle", "TF_Function"};

void ms_live(int kind, int delta) {
  __atomic_add_fetch(&live[kind], delta, __ATOMIC_RELAXED);
}

int64_t MS_LiveObjects(const char* kind) {
  if (kind == NULL) {
    int64_t sum = 0;
    for (int i = 0; i < MS_LIVE_KINDS; i++)
      sum += __atomic_load_n(&live[i], __ATOMIC_RELAXED);
    return sum;
  }
  for (int i = 0; i < MS_LIVE_KINDS; i++) {
    if (strcmp(kind, live_names[i]) == 0)
      return __atomic_load_n(&live[i], __ATOMIC_RELAXED);
  }
  if (strcmp(kind, "goroutines") == 0) return msNumGoroutine();
  return -1;
}

void ms_free_operation(TF_Operation* op) {
  ms_live(MS_LIVE_OPERATION, -1);
  free(op->name);
  free(op->op_type);
  free(op->device);
  free(op);
}

static void* xcalloc(size_t n, size_t size) {
  void* p = calloc(n > 0 ? n : 1, size);
  if (p == NULL) abort();
  return p;
}

TF_ImportGraphDefResults* ms_new_import_results(int nout, int nops,
                                                int nmissing) {
  TF_ImportGraphDefResults* r = xcalloc(1, sizeof *r);
  ms_live(MS_LIVE_IMPORT_RESULTS, 1);
  r->num_outputs = nout;
  r->outputs = xcalloc(nout, sizeof(TF_Output));
  r->num_opers = nops;
  r->opers = xcalloc(nops, sizeof(TF_Operation*));
  r->num_missing = nmissing;
  r->missing_names = xcalloc(nmissing, sizeof(char*));
  r->missing_indexes = xcalloc(nmissing, sizeof(int));
  return r;
}

void TF_ImportGraphDefResultsReturnOutputs(TF_ImportGraphDefResults* results,
                                           int* num_outputs,
                                           TF_Output** outputs) {
  if (results == NULL) {
    if (num_outputs) *num_outputs = 0;
    if (outputs) *outputs = NULL;
    return;
  }
  if (num_outputs) *num_outputs = results->num_outputs;
  if (outputs) *outputs = results->outputs;
}

void TF_ImportGraphDefResultsReturnOperations(TF_ImportGraphDefResults* results,
                                              int* num_opers,
                                              TF_Operation*** opers) {
  if (results == NULL) {
    if (num_opers) *num_opers = 0;
    if (opers) *opers = NULL;
    return;
  }
  if (num_opers) *num_opers = results->num_opers;
  if (opers) *opers = results->opers;
}

void TF_ImportGraphDefResultsMissingUnusedInputMappings(
    TF_ImportGraphDefResults* results, int* num_missing_unused_input_mappings,
    const char*** src_names, int** src_indexes) {
  if (results == NULL) {
    if (num_missing_unused_input_mappings) *num_missing_unused_input_mappings = 0;
    if (src_names) *src_names = NULL;
    if (src_indexes) *src_indexes = NULL;
    return;
  }
  if (num_missing_unused_input_mappings)
    *num_missing_unused_input_mappings = results->num_missing;
  if (src_names) *src_names = results->missing_names;
  if (src_indexes) *src_indexes = results->missing_indexes;
}

void TF_DeleteImportGraphDefResults(TF_ImportGraphDefResults* results) {
  if (results == NULL) return;
  for (int i = 0; i < results->num_missing; i++) {
    free((void*)results->missing_names[i]);
  }
  free(results->outputs);
  free(results->opers);
  free(results->missing_names);
  free(results->missing_indexes);
  free(results);
  ms_live(MS_LIVE_IMPORT_RESULTS, -1);
}

TF_DeviceList* ms_new_device_list(int n) {
  TF_DeviceList* l = xcalloc(1, sizeof *l);
  ms_live(MS_LIVE_DEVICE_LIST, 1);
  l->count = n;
  l->names = xcalloc(n, sizeof(char*));
  l->types = xcalloc(n, sizeof(char*));
  l->memory = xcalloc(n, sizeof(int64_t));
  l->incarnation = xcalloc(n, sizeof(uint64_t));
  return l;
}

void TF_DeleteDeviceList(TF_DeviceList* list) {
  if (list == NULL) return;
  for (int i = 0; i < list->count; i++) {
    free(list->names[i]);
    free(list->types[i]);
  }
  free(list->names);
  free(list->types);
  free(list->memory);
  free(list->incarnation);
  free(list);
  ms_live(MS_LIVE_DEVICE_LIST, -1);
}

int TF_DeviceListCount(const TF_DeviceList* list) {
  return list == NULL ? 0 : list->count;
}

static int check_index(const TF_DeviceList* list, int index,
                       TF_Status* status) {
  if (list == NULL) {
    TF_SetStatus(status, TF_INVALID_ARGUMENT, "device list is NULL");
    return 0;
  }
  if (index < 0 || index >= list->count) {
    char msg[100];
    snprintf(msg, sizeof msg, "index out of bounds: %d (the list has %d devices)",
             index, list->count);
    TF_SetStatus(status, TF_INVALID_ARGUMENT, msg);
    return 0;
  }
  TF_SetStatus(status, TF_OK, "");
  return 1;
}

const char* TF_DeviceListName(const TF_DeviceList* list, int index,
                              TF_Status* status) {
  return check_index(list, index, status) ? list->names[index] : NULL;
}

const char* TF_DeviceListType(const TF_DeviceList* list, int index,
                              TF_Status* status) {
  return check_index(list, index, status) ? list->types[index] : NULL;
}

int64_t TF_DeviceListMemoryBytes(const TF_DeviceList* list, int index,
                                 TF_Status* status) {
  return check_index(list, index, status) ? list->memory[index] : -1;
}

uint64_t TF_DeviceListIncarnation(const TF_DeviceList* list, int index,
                                  TF_Status* status) {
  return check_index(list, index, status) ? list->incarnation[index] : 0;
}

void TF_DeletePRunHandle(const char* handle) {
  if (handle == NULL) return;
  free((void*)handle);
  ms_live(MS_LIVE_PRUN_HANDLE, -1);
}
