/* Tensor functions of c_api.h: dtype sizes, allocation alignment, TF_NewTensor's
 * deallocator (called exactly once, also when the length is too small and TF_NewTensor
 * returns NULL, as tf_tensor.cc does by releasing the buffer it wrapped). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "tensorflow/c/c_api.h"
#include "check.h"

static int dealloc_calls;
static void dealloc(void* data, size_t len, void* arg) { (void)len; (void)arg; dealloc_calls++; free(data); }
static void dealloc_count(void* data, size_t len, void* arg) { (void)data; (void)len; (void)arg; dealloc_calls++; }

int main(void) {
  static const struct { TF_DataType t; size_t size; } sizes[] = {
    {TF_FLOAT, 4}, {TF_DOUBLE, 8}, {TF_INT32, 4}, {TF_UINT8, 1}, {TF_INT16, 2},
    {TF_INT8, 1}, {TF_COMPLEX64, 8}, {TF_INT64, 8}, {TF_BOOL, 1}, {TF_BFLOAT16, 2},
    {TF_UINT16, 2}, {TF_COMPLEX128, 16}, {TF_HALF, 2}, {TF_UINT32, 4}, {TF_UINT64, 8}};
  for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
    CHECK(TF_DataTypeSize(sizes[i].t) == sizes[i].size, "dtype %d size %zu", sizes[i].t, TF_DataTypeSize(sizes[i].t));
    int64_t dims[2] = {3, 5};
    TF_Tensor* t = TF_AllocateTensor(sizes[i].t, dims, 2, 15 * sizes[i].size);
    CHECK(t != NULL, "allocate dtype %d", sizes[i].t);
    if (!t) continue;
    CHECK(((uintptr_t)TF_TensorData(t)) % 64 == 0, "dtype %d data not 64-byte aligned", sizes[i].t);
    CHECK(TF_TensorType(t) == sizes[i].t && TF_NumDims(t) == 2 && TF_Dim(t, 0) == 3 && TF_Dim(t, 1) == 5, "dtype %d shape", sizes[i].t);
    CHECK(TF_TensorByteSize(t) == 15 * sizes[i].size, "bytes %zu", TF_TensorByteSize(t));
    CHECK(TF_TensorElementCount(t) == 15, "elements %lld", (long long)TF_TensorElementCount(t));
    TF_DeleteTensor(t);
  }

  /* 64-byte aligned data is kept until the tensor goes; other data is copied
   * and its deallocator runs at once (TF does both). */
  int64_t dims[1] = {3};
  float* data = aligned_alloc(64, 64);
  for (int i = 0; i < 4; i++) data[i] = i;
  TF_Tensor* t = TF_NewTensor(TF_FLOAT, dims, 1, data + 1, 3 * sizeof(float), dealloc_count, NULL);
  CHECK(t != NULL && dealloc_calls == 1 && TF_TensorData(t) != data + 1 && ((float*)TF_TensorData(t))[2] == 3,
        "unaligned data copied, its deallocator run at once: %d calls", dealloc_calls);
  if (t) TF_DeleteTensor(t);
  CHECK(dealloc_calls == 1, "the copy's own deallocation is not the caller's: %d calls", dealloc_calls);
  dealloc_calls = 0;
  dims[0] = 4;
  t = TF_NewTensor(TF_FLOAT, dims, 1, data, 4 * sizeof(float), dealloc, NULL);
  CHECK(t != NULL && TF_TensorData(t) == data, "TF_NewTensor keeps aligned data");
  CHECK(dealloc_calls == 0, "deallocator called early");
  TF_Tensor* m = TF_TensorMaybeMove(t);
  if (m) TF_DeleteTensor(m); else TF_DeleteTensor(t);
  CHECK(dealloc_calls == 1, "deallocator called %d times after delete", dealloc_calls);

  dealloc_calls = 0;
  data = malloc(3 * sizeof(float));
  t = TF_NewTensor(TF_FLOAT, dims, 1, data, 3 * sizeof(float), dealloc, NULL);
  CHECK(t == NULL, "TF_NewTensor accepted a length too small for the shape");
  if (t) TF_DeleteTensor(t);
  CHECK(dealloc_calls == 1, "deallocator called %d times when TF_NewTensor failed (TF: once)", dealloc_calls);
  TF_DeleteTensor(NULL);
  return DONE();
}
