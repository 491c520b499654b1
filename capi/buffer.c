/* TF_Buffer in plain C. */
#include "internal.h"

void ms_free_deallocator(void* data, size_t len) {
  (void)len;
  free(data);
}

TF_Buffer* TF_NewBuffer(void) {
  TF_Buffer* b = calloc(1, sizeof(TF_Buffer));
  if (b == NULL) abort();
  ms_live(MS_LIVE_BUFFER, 1);
  return b;
}

TF_Buffer* TF_NewBufferFromString(const void* proto, size_t proto_len) {
  TF_Buffer* b = TF_NewBuffer();
  void* copy = malloc(proto_len > 0 ? proto_len : 1);
  if (copy == NULL) abort();
  if (proto_len > 0 && proto != NULL) memcpy(copy, proto, proto_len);
  b->data = copy;
  b->length = proto_len;
  b->data_deallocator = ms_free_deallocator;
  return b;
}

void TF_DeleteBuffer(TF_Buffer* b) {
  if (b == NULL) return;
  if (b->data_deallocator != NULL) {
    b->data_deallocator((void*)b->data, b->length);
  }
  free(b);
  ms_live(MS_LIVE_BUFFER, -1);
}

TF_Buffer TF_GetBuffer(TF_Buffer* buffer) { return *buffer; }

int ms_buffer_set(TF_Buffer* b, const void* data, size_t len) {
  if (b->data != NULL) return -1;
  void* copy = malloc(len > 0 ? len : 1);
  if (copy == NULL) abort();
  if (len > 0) memcpy(copy, data, len);
  b->data = copy;
  b->length = len;
  b->data_deallocator = ms_free_deallocator;
  return 0;
}
