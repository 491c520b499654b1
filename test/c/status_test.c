/* Status and buffer functions of c_api.h, through the built library. */
#include <stdlib.h>
#include <string.h>
#include "tensorflow/c/c_api.h"
#include "check.h"

static int dealloc_calls;
static void dealloc(void* data, size_t len) { (void)len; dealloc_calls++; free(data); }

int main(void) {
  TF_Status* s = TF_NewStatus();
  CHECK(TF_GetCode(s) == TF_OK, "new status code %d", TF_GetCode(s));
  TF_SetStatus(s, TF_INVALID_ARGUMENT, "bad thing");
  CHECK(TF_GetCode(s) == TF_INVALID_ARGUMENT, "code %d", TF_GetCode(s));
  CHECK(strcmp(TF_Message(s), "bad thing") == 0, "message %s", TF_Message(s));
  TF_SetStatus(s, TF_OK, "");
  CHECK(TF_GetCode(s) == TF_OK, "reset code %d", TF_GetCode(s));
  TF_DeleteStatus(s);

  char src[] = "abc\0def";
  TF_Buffer* b = TF_NewBufferFromString(src, sizeof src);
  src[0] = 'X';
  CHECK(b && b->length == sizeof src, "length");
  CHECK(b && memcmp(b->data, "abc\0def", sizeof src) == 0, "contents not copied");
  TF_DeleteBuffer(b);

  b = TF_NewBuffer();
  void* mem = malloc(16);
  b->data = mem; b->length = 16; b->data_deallocator = dealloc;
  TF_DeleteBuffer(b);
  CHECK(dealloc_calls == 1, "deallocator called %d times", dealloc_calls);
  TF_DeleteBuffer(NULL);
  return DONE();
}
