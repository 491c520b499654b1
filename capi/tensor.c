/* TF_Tensor, TF_DataTypeSize and the exported TF_TString helpers, in plain C.
   A TF_Tensor is a dtype, a shape and a reference to a shared buffer; the
   buffer's deallocator runs exactly once, when its last tensor is deleted. */
#include <stdio.h>
#include <unistd.h>

#include "internal.h"

size_t TF_DataTypeSize(TF_DataType dt) {
  switch (dt) {
    case TF_BOOL: case TF_INT8: case TF_UINT8: case TF_QINT8: case TF_QUINT8:
    case TF_FLOAT8_E5M2: case TF_FLOAT8_E4M3FN: case TF_INT4: case TF_UINT4:
      return 1;
    case TF_INT16: case TF_UINT16: case TF_QINT16: case TF_QUINT16:
    case TF_HALF: case TF_BFLOAT16:
      return 2;
    case TF_FLOAT: case TF_INT32: case TF_UINT32: case TF_QINT32:
      return 4;
    case TF_DOUBLE: case TF_INT64: case TF_UINT64: case TF_COMPLEX64:
      return 8;
    case TF_COMPLEX128:
      return 16;
    default: /* TF_STRING, TF_RESOURCE, TF_VARIANT, unknown */
      return 0;
  }
}

static void buf_unref(ms_tensor_buf* b) {
  if (b == NULL) return;
  if (__atomic_fetch_sub(&b->refs, 1, __ATOMIC_ACQ_REL) != 1) return;
  if (b->owned_strings > 0) {
    TF_TString* s = (TF_TString*)b->data;
    for (size_t i = 0; i < b->owned_strings; i++) TF_TString_Dealloc(&s[i]);
  }
  if (b->dealloc != NULL) b->dealloc(b->data, b->len, b->arg);
  free(b);
  ms_live(MS_LIVE_TENSOR_DATA, -1);
}

static int64_t num_elements(const int64_t* dims, int num_dims) {
  int64_t n = 1;
  for (int i = 0; i < num_dims; i++) n *= dims[i];
  return n;
}

static TF_Tensor* wrap(TF_DataType dt, const int64_t* dims, int num_dims,
                       ms_tensor_buf* b) {
  if (num_dims < 0) num_dims = 0;
  TF_Tensor* t = malloc(sizeof(TF_Tensor));
  if (t == NULL) abort();
  t->dtype = dt;
  t->num_dims = num_dims;
  t->dims = malloc(sizeof(int64_t) * (num_dims > 0 ? num_dims : 1));
  if (t->dims == NULL) abort();
  for (int i = 0; i < num_dims; i++) t->dims[i] = dims[i];
  t->buf = b;
  ms_live(MS_LIVE_TENSOR, 1);
  return t;
}

static ms_tensor_buf* new_buf(void* data, size_t len,
                              void (*dealloc)(void*, size_t, void*),
                              void* arg) {
  ms_tensor_buf* b = calloc(1, sizeof(ms_tensor_buf));
  if (b == NULL) abort();
  b->data = data;
  b->len = len;
  b->dealloc = dealloc;
  b->arg = arg;
  b->refs = 1;
  ms_live(MS_LIVE_TENSOR_DATA, 1);
  return b;
}

/* Too small a buffer for a fixed-size dtype: TF returns NULL. */
static int len_too_small(TF_DataType dt, const int64_t* dims, int num_dims,
                         size_t len) {
  size_t es = TF_DataTypeSize(dt);
  if (es == 0) return 0;
  int64_t n = num_elements(dims, num_dims);
  return n > 0 && len < es * (size_t)n;
}

static void aligned_free(void* data, size_t len, void* arg);
static void* alloc_aligned(size_t len);

/* Data that is not 64-byte aligned is copied into an aligned buffer and the
 * caller's deallocator runs before TF_NewTensor returns, as TF does (for every
 * dtype whose bytes can be copied: not strings, resources or variants). So a
 * client sees the same lifetime on both libraries, and kernels may assume the
 * alignment TF_TensorIsAligned reports. */
TF_Tensor* TF_NewTensor(TF_DataType dt, const int64_t* dims, int num_dims,
                        void* data, size_t len,
                        void (*deallocator)(void* data, size_t len, void* arg),
                        void* deallocator_arg) {
  if (dt != TF_STRING && dt != TF_RESOURCE && dt != TF_VARIANT && (uintptr_t)data % 64 != 0) {
    void* copy = alloc_aligned(len);
    if (len) memcpy(copy, data, len);
    if (deallocator != NULL) deallocator(data, len, deallocator_arg);
    data = copy;
    deallocator = aligned_free;
    deallocator_arg = NULL;
  }
  ms_tensor_buf* b = new_buf(data, len, deallocator, deallocator_arg);
  if (len_too_small(dt, dims, num_dims, len)) {
    buf_unref(b);
    return NULL;
  }
  return wrap(dt, dims, num_dims, b);
}

static void aligned_free(void* data, size_t len, void* arg) {
  (void)len;
  (void)arg;
  free(data);
}

/* The machine's physical memory: no single buffer larger than it can be
   used, so such a size is refused before asking (with overcommit on, the
   system would say yes and the memset below would bring the OOM killer).
   Read once: sysconf(_SC_PHYS_PAGES) is a sysinfo system call, which cost
   a small model's Run 4% of its CPU when made for every fetch. Threads
   that race here store the same value. */
static size_t physical_bytes(void) {
  static size_t bytes;
  size_t b = __atomic_load_n(&bytes, __ATOMIC_RELAXED);
  if (b != 0) return b;
  long pages = sysconf(_SC_PHYS_PAGES), size = sysconf(_SC_PAGESIZE);
  b = pages <= 0 || size <= 0 ? (size_t)1 << 40 : (size_t)pages * (size_t)size;
  __atomic_store_n(&bytes, b, __ATOMIC_RELAXED);
  return b;
}

/* Memory aligned to 64 bytes, zeroed when zero is set; NULL when it cannot
   be had (a size from a caller must never abort the process). */
static void* alloc_aligned_zero(size_t len, int zero) {
  if (len > physical_bytes()) return NULL;
  size_t n = (len + 63) / 64 * 64;
  if (n == 0) n = 64;
  void* p = aligned_alloc(64, n);
  if (p == NULL) return NULL;
  if (zero) memset(p, 0, n);
  return p;
}

static void* alloc_aligned(size_t len) { return alloc_aligned_zero(len, 1); }

TF_Tensor* TF_AllocateTensor(TF_DataType dt, const int64_t* dims, int num_dims,
                             size_t len) {
  if (len_too_small(dt, dims, num_dims, len)) return NULL;
  /* Zeroed, so TF_STRING elements start as valid empty strings. Memory that
     cannot be had gives a tensor without data, as TF's TF_AllocateTensor
     does (its allocator returns NULL and the tensor keeps len and dims). */
  return wrap(dt, dims, num_dims,
              new_buf(alloc_aligned(len), len, aligned_free, NULL));
}

/* A tensor for an output handed to the caller; NULL when its memory cannot
   be had. Only string tensors are zeroed (empty TF_TStrings for the caller
   to fill): every other byte is written by the copy that follows. */
TF_Tensor* ms_new_tensor(TF_DataType dt, const int64_t* dims, int num_dims,
                         size_t len) {
  void* p = alloc_aligned_zero(len, dt == TF_STRING);
  if (p == NULL) return NULL;
  TF_Tensor* t = wrap(dt, dims, num_dims, new_buf(p, len, aligned_free, NULL));
  if (dt == TF_STRING) t->buf->owned_strings = len / sizeof(TF_TString);
  return t;
}

TF_TString* ms_tstring_at(TF_Tensor* t, size_t i) {
  return &((TF_TString*)t->buf->data)[i];
}

TF_Tensor* TF_TensorMaybeMove(TF_Tensor* t) {
  if (t == NULL) return NULL;
  if (TF_DataTypeSize(t->dtype) == 0) return NULL;
  return __atomic_load_n(&t->buf->refs, __ATOMIC_ACQUIRE) == 1 ? t : NULL;
}

void TF_DeleteTensor(TF_Tensor* t) {
  if (t == NULL) return;
  buf_unref(t->buf);
  free(t->dims);
  free(t);
  ms_live(MS_LIVE_TENSOR, -1);
}

TF_DataType TF_TensorType(const TF_Tensor* t) { return t->dtype; }

void TF_SetShape(TF_Tensor* t, const int64_t* dims, int num_dims) {
  if (num_dims < 0) num_dims = 0;
  int64_t* d = malloc(sizeof(int64_t) * (num_dims > 0 ? num_dims : 1));
  if (d == NULL) abort();
  for (int i = 0; i < num_dims; i++) d[i] = dims[i];
  free(t->dims);
  t->dims = d;
  t->num_dims = num_dims;
}

int TF_NumDims(const TF_Tensor* t) { return t->num_dims; }

int64_t TF_Dim(const TF_Tensor* t, int i) { return t->dims[i]; }

size_t TF_TensorByteSize(const TF_Tensor* t) { return t->buf->len; }

void* TF_TensorData(const TF_Tensor* t) { return t->buf->data; }

int64_t TF_TensorElementCount(const TF_Tensor* t) {
  return num_elements(t->dims, t->num_dims);
}

bool TF_TensorIsAligned(const TF_Tensor* t) {
  return ((uintptr_t)t->buf->data % 64) == 0;
}

void TF_TensorBitcastFrom(const TF_Tensor* from, TF_DataType type,
                          TF_Tensor* to, const int64_t* new_dims,
                          int num_new_dims, TF_Status* status) {
  if (from == NULL || to == NULL) {
    TF_SetStatus(status, TF_INVALID_ARGUMENT,
                 "TF_TensorBitcastFrom: NULL tensor");
    return;
  }
  size_t in_size = TF_DataTypeSize(from->dtype);
  size_t out_size = TF_DataTypeSize(type);
  if (in_size == 0 || out_size == 0) {
    TF_SetStatus(status, TF_INVALID_ARGUMENT,
                 "TF_TensorBitcastFrom: only fixed-size dtypes can be bitcast");
    return;
  }
  int64_t in_n = TF_TensorElementCount(from);
  int64_t out_n = num_elements(new_dims, num_new_dims < 0 ? 0 : num_new_dims);
  if (in_n * (int64_t)in_size != out_n * (int64_t)out_size) {
    char msg[200];
    snprintf(msg, sizeof msg,
             "Cannot bitcast from %d to %d: %lld bytes do not make %lld "
             "elements of %zu bytes",
             (int)from->dtype, (int)type, (long long)(in_n * (int64_t)in_size),
             (long long)out_n, out_size);
    TF_SetStatus(status, TF_INVALID_ARGUMENT, msg);
    return;
  }
  __atomic_fetch_add(&from->buf->refs, 1, __ATOMIC_ACQ_REL);
  buf_unref(to->buf);
  to->buf = from->buf;
  to->dtype = type;
  TF_SetShape(to, new_dims, num_new_dims);
  TF_SetStatus(status, TF_OK, "");
}

/* Exported counterparts of the inline TF_TString functions. */
void TF_StringInit(TF_TString* t) { TF_TString_Init(t); }

void TF_StringCopy(TF_TString* dst, const char* src, size_t size) {
  TF_TString_Copy(dst, src, size);
}

void TF_StringAssignView(TF_TString* dst, const char* src, size_t size) {
  TF_TString_AssignView(dst, src, size);
}

const char* TF_StringGetDataPointer(const TF_TString* tstr) {
  return TF_TString_GetDataPointer(tstr);
}

TF_TString_Type TF_StringGetType(const TF_TString* str) {
  return TF_TString_GetType(str);
}

size_t TF_StringGetSize(const TF_TString* tstr) {
  return TF_TString_GetSize(tstr);
}

size_t TF_StringGetCapacity(const TF_TString* str) {
  return TF_TString_GetCapacity(str);
}

void TF_StringDealloc(TF_TString* tstr) { TF_TString_Dealloc(tstr); }

TF_Tensor* ms_tensor_share(const TF_Tensor* t) {
  __atomic_fetch_add(&t->buf->refs, 1, __ATOMIC_ACQ_REL);
  return wrap(t->dtype, t->dims, t->num_dims, t->buf);
}

void ms_tensor_assign(TF_Tensor* to, TF_Tensor* from) {
  buf_unref(to->buf);
  free(to->dims);
  *to = *from;
  free(from);
  ms_live(MS_LIVE_TENSOR, -1);
}
