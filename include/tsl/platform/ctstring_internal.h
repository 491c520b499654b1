/* mstream: TensorFlow 2.15 C API, ABI-compatible declarations. */
#ifndef TENSORFLOW_TSL_PLATFORM_CTSTRING_INTERNAL_H_
#define TENSORFLOW_TSL_PLATFORM_CTSTRING_INTERNAL_H_

/* TF_TString: the 24-byte element of a TF_STRING tensor.
 *
 * The low 2 bits of byte 0 give the representation:
 *   SMALL  (0)  up to 22 bytes stored inline; byte 0 is size << 2, then the
 *               characters and a NUL.
 *   LARGE  (1)  heap buffer (malloc) owned by the string: size, cap, ptr.
 *   OFFSET (2)  read-only bytes at (char*)str + offset; size and offset are
 *               little-endian uint32 (size << 2 | type).
 *   VIEW   (3)  read-only bytes at ptr, not owned.
 * LARGE and VIEW keep size << 2 | type in their size_t size field on little-
 * endian machines; on big-endian ones the type lives in the top byte, which
 * is byte 0 in memory, and the size's top byte is shifted past it.
 *
 * Everything here is static inline and compiled into the caller, so layout
 * and behaviour must stay exactly TF's: a tensor written by one side is read
 * and freed by the other. Any change to a VIEW or OFFSET string first turns
 * it into an owned SMALL or LARGE copy. */

#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#if (defined(__BYTE_ORDER__) && defined(__ORDER_LITTLE_ENDIAN__) && \
     __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__) ||                  \
    defined(_WIN32)
#define TF_TSTRING_LITTLE_ENDIAN 1
#elif defined(__BYTE_ORDER__) && defined(__ORDER_BIG_ENDIAN__) && \
    __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
#define TF_TSTRING_LITTLE_ENDIAN 0
#else
#error "Unable to detect endianness."
#endif

/* Reverses the byte order of a 32-bit value. */
#if defined(__GNUC__) || defined(__clang__)
static inline uint32_t TF_swap32(uint32_t host_int) {
  return __builtin_bswap32(host_int);
}
#elif defined(_MSC_VER)
static inline uint32_t TF_swap32(uint32_t host_int) {
  return _byteswap_ulong(host_int);
}
#else
static inline uint32_t TF_swap32(uint32_t host_int) {
  return ((host_int & 0x000000FFu) << 24) | ((host_int & 0x0000FF00u) << 8) |
         ((host_int & 0x00FF0000u) >> 8) | ((host_int & 0xFF000000u) >> 24);
}
#endif

/* Little-endian 32-bit value to host order. */
#if TF_TSTRING_LITTLE_ENDIAN
#define TF_le32toh(x) x
#else
#define TF_le32toh(x) TF_swap32(x)
#endif

/* Rounds i up to a multiple of 16. */
static inline size_t TF_align16(size_t i) { return (i + 0xF) & ~0xF; }

static inline size_t TF_max(size_t a, size_t b) { return a > b ? a : b; }
static inline size_t TF_min(size_t a, size_t b) { return a < b ? a : b; }

typedef enum TF_TString_Type {
  TF_TSTR_SMALL = 0x00,
  TF_TSTR_LARGE = 0x01,
  TF_TSTR_OFFSET = 0x02,
  TF_TSTR_VIEW = 0x03,
  TF_TSTR_TYPE_MASK = 0x03
} TF_TString_Type;

typedef struct TF_TString_Large {
  size_t size; /* internal form: see TF_TString_ToInternalSizeT */
  size_t cap;  /* usable bytes; the allocation is cap + 1 */
  char *ptr;
} TF_TString_Large;

typedef struct TF_TString_Offset {
  uint32_t size;   /* little-endian, size << 2 | TF_TSTR_OFFSET */
  uint32_t offset; /* little-endian, from the start of the TF_TString */
  uint32_t count;
} TF_TString_Offset;

typedef struct TF_TString_View {
  size_t size; /* internal form: see TF_TString_ToInternalSizeT */
  const char *ptr;
} TF_TString_View;

typedef struct TF_TString_Raw {
  uint8_t raw[24];
} TF_TString_Raw;

typedef union TF_TString_Union {
  TF_TString_Large large;
  TF_TString_Offset offset;
  TF_TString_View view;
  TF_TString_Raw raw;
} TF_TString_Union;

/* Longest inline string: the union less one size byte and one NUL (22). */
enum {
  TF_TString_SmallCapacity =
      (sizeof(TF_TString_Union) - sizeof(uint8_t) - sizeof(char)),
};

typedef struct TF_TString_Small {
  uint8_t size; /* size << 2 | TF_TSTR_SMALL */
  char str[TF_TString_SmallCapacity + sizeof(char)];
} TF_TString_Small;

/* The member is spelled smll because MSVC's RpcNdr.h defines `small`. */
typedef struct TF_TString {
  union {
    TF_TString_Small smll;
    TF_TString_Large large;
    TF_TString_Offset offset;
    TF_TString_View view;
    TF_TString_Raw raw;
  } u;
} TF_TString;

static inline TF_TString_Type TF_TString_GetType(const TF_TString *str) {
  return (TF_TString_Type)(str->u.raw.raw[0] & TF_TSTR_TYPE_MASK);
}

/* Decodes the size_t size field of a LARGE or VIEW string. */
static inline size_t TF_TString_ToActualSizeT(size_t size) {
#if TF_TSTRING_LITTLE_ENDIAN
  return size >> 2;
#else
  const size_t top_byte = ~((~(size_t)0) >> 8);
  return ((size & (top_byte << 2)) >> 2) | (size & ~top_byte);
#endif
}

/* Encodes `size` and `type` into the size_t size field of a LARGE or VIEW
   string, so that the type bits land in byte 0 in memory. */
static inline size_t TF_TString_ToInternalSizeT(size_t size,
                                                TF_TString_Type type) {
#if TF_TSTRING_LITTLE_ENDIAN
  return (size << 2) | type;
#else
  const size_t top_byte = ~((~(size_t)0) >> 8);
  return ((size << 2) & top_byte) | (size & ~top_byte) |
         ((size_t)type << ((sizeof(size_t) - 1) * 8));
#endif
}

/* Makes *str the empty SMALL string. Call before any other function. */
static inline void TF_TString_Init(TF_TString *str) {
  memset(str->u.raw.raw, 0, sizeof(str->u.raw.raw));
}

/* Frees a LARGE string's buffer and resets *str to empty; other kinds own
   no memory and are left as they are. */
static inline void TF_TString_Dealloc(TF_TString *str) {
  if (TF_TString_GetType(str) != TF_TSTR_LARGE || str->u.large.ptr == NULL) {
    return;
  }
  free(str->u.large.ptr);
  TF_TString_Init(str);
}

/* Returns the length in bytes (NULs included, terminator excluded). */
static inline size_t TF_TString_GetSize(const TF_TString *str) {
  switch (TF_TString_GetType(str)) {
    case TF_TSTR_SMALL:
      return str->u.smll.size >> 2;
    case TF_TSTR_LARGE:
      return TF_TString_ToActualSizeT(str->u.large.size);
    case TF_TSTR_OFFSET:
      return TF_le32toh(str->u.offset.size) >> 2;
    case TF_TSTR_VIEW:
      return TF_TString_ToActualSizeT(str->u.view.size);
    default:
      return 0;
  }
}

/* Returns how many bytes fit without reallocating: 22 for SMALL, the heap
   capacity for LARGE, 0 for the read-only VIEW and OFFSET. */
static inline size_t TF_TString_GetCapacity(const TF_TString *str) {
  switch (TF_TString_GetType(str)) {
    case TF_TSTR_SMALL:
      return TF_TString_SmallCapacity;
    case TF_TSTR_LARGE:
      return str->u.large.cap;
    default:
      return 0;
  }
}

/* Returns the first byte. Owned strings are NUL-terminated; VIEW and OFFSET
   strings need not be. The pointer is valid until *str is next changed. */
static inline const char *TF_TString_GetDataPointer(const TF_TString *str) {
  switch (TF_TString_GetType(str)) {
    case TF_TSTR_SMALL:
      return str->u.smll.str;
    case TF_TSTR_LARGE:
      return str->u.large.ptr;
    case TF_TSTR_OFFSET:
      return (const char *)str + TF_le32toh(str->u.offset.offset);
    case TF_TSTR_VIEW:
      return str->u.view.ptr;
    default:
      return NULL;
  }
}

/* Sets the size to new_size, keeping the first min(old, new) bytes; bytes
   past the old end are left uninitialized. The result is SMALL when it fits,
   else LARGE. A LARGE buffer grows to the next 16-byte boundary (less one
   for the NUL) and shrinks to half its capacity when new_size drops below
   half. Returns the mutable data, NUL-terminated at new_size. */
static inline char *TF_TString_ResizeUninitialized(TF_TString *str,
                                                   size_t new_size) {
  const TF_TString_Type old_type = TF_TString_GetType(str);
  const size_t old_size = TF_TString_GetSize(str);
  const char *old_data = TF_TString_GetDataPointer(str);
  const size_t keep = TF_min(new_size, old_size);
  size_t old_cap;
  size_t new_cap;
  char *data;

  if (new_size <= TF_TString_SmallCapacity) {
    /* Whatever lies past the new end inside the struct is left as is. */
    str->u.smll.size = (uint8_t)((new_size << 2) | TF_TSTR_SMALL);
    str->u.smll.str[new_size] = '\0';
    if (old_type != TF_TSTR_SMALL && keep != 0) {
      memcpy(str->u.smll.str, old_data, keep);
    }
    if (old_type == TF_TSTR_LARGE) {
      free((void *)old_data);
    }
    return str->u.smll.str;
  }

  old_cap = TF_TString_GetCapacity(str);
  if (new_size < old_size && new_size < old_cap / 2) {
    new_cap = TF_align16(old_cap / 2 + 1) - 1;
  } else if (new_size > old_cap) {
    new_cap = TF_align16(new_size + 1) - 1;
  } else {
    new_cap = old_cap;
  }

  if (new_cap == old_cap) {
    /* Only a LARGE string can keep its capacity here. */
    data = str->u.large.ptr;
  } else if (old_type == TF_TSTR_LARGE) {
    data = (char *)realloc(str->u.large.ptr, new_cap + 1);
  } else {
    data = (char *)malloc(new_cap + 1);
    if (keep != 0) {
      memcpy(data, old_data, keep);
    }
  }

  str->u.large.size = TF_TString_ToInternalSizeT(new_size, TF_TSTR_LARGE);
  str->u.large.ptr = data;
  str->u.large.cap = new_cap;
  data[new_size] = '\0';
  return data;
}

/* Returns writable data, first copying a VIEW or OFFSET string into an
   owned SMALL or LARGE one. */
static inline char *TF_TString_GetMutableDataPointer(TF_TString *str) {
  switch (TF_TString_GetType(str)) {
    case TF_TSTR_SMALL:
      return str->u.smll.str;
    case TF_TSTR_LARGE:
      return str->u.large.ptr;
    case TF_TSTR_OFFSET:
    case TF_TSTR_VIEW:
      return TF_TString_ResizeUninitialized(str, TF_TString_GetSize(str));
    default:
      return NULL;
  }
}

/* Ensures room for at least new_cap bytes without changing size or
   contents. Capacities that fit inline do nothing (a VIEW or OFFSET string
   is converted later, when it is written); otherwise the string becomes
   LARGE with capacity max(new_cap, size) rounded as in ResizeUninitialized.
   Never shrinks. */
static inline void TF_TString_Reserve(TF_TString *str, size_t new_cap) {
  const TF_TString_Type type = TF_TString_GetType(str);
  size_t size;
  const char *data;
  char *copy;

  if (new_cap <= TF_TString_SmallCapacity) return;
  if (type == TF_TSTR_LARGE && new_cap <= str->u.large.cap) return;

  size = TF_TString_GetSize(str);
  data = TF_TString_GetDataPointer(str);
  new_cap = TF_align16(TF_max(new_cap, size) + 1) - 1;

  if (type == TF_TSTR_LARGE) {
    str->u.large.ptr = (char *)realloc(str->u.large.ptr, new_cap + 1);
  } else {
    copy = (char *)malloc(new_cap + 1);
    if (size != 0) {
      memcpy(copy, data, size);
    }
    str->u.large.size = TF_TString_ToInternalSizeT(size, TF_TSTR_LARGE);
    str->u.large.ptr = copy;
    copy[size] = '\0';
  }
  str->u.large.cap = new_cap;
}

/* Like Reserve, but grows to at least twice the current capacity, so that
   repeated appends cost amortized O(1). */
static inline void TF_TString_ReserveAmortized(TF_TString *str,
                                               size_t new_cap) {
  const size_t cap = TF_TString_GetCapacity(str);
  if (new_cap <= cap) return;
  TF_TString_Reserve(str, TF_max(new_cap, 2 * cap));
}

/* ResizeUninitialized, then fills any grown region with c. */
static inline char *TF_TString_Resize(TF_TString *str, size_t new_size,
                                      char c) {
  const size_t old_size = TF_TString_GetSize(str);
  char *data = TF_TString_ResizeUninitialized(str, new_size);
  if (new_size > old_size) {
    memset(data + old_size, c, new_size - old_size);
  }
  return data;
}

/* Makes *dst a VIEW of src[0, size), freeing what dst owned. dst does not
   own src: src must outlive dst's use of it. */
static inline void TF_TString_AssignView(TF_TString *dst, const char *src,
                                         size_t size) {
  TF_TString_Dealloc(dst);
  dst->u.view.size = TF_TString_ToInternalSizeT(size, TF_TSTR_VIEW);
  dst->u.view.ptr = src;
}

/* Appends src[0, src_size) to *dst, which becomes owned. src must not point
   into dst's own storage. */
static inline void TF_TString_AppendN(TF_TString *dst, const char *src,
                                      size_t src_size) {
  size_t dst_size;
  char *data;

  if (src_size == 0) return;
  dst_size = TF_TString_GetSize(dst);
  TF_TString_ReserveAmortized(dst, dst_size + src_size);
  data = TF_TString_ResizeUninitialized(dst, dst_size + src_size);
  memcpy(data + dst_size, src, src_size);
}

/* Appends the contents of *src to *dst. */
static inline void TF_TString_Append(TF_TString *dst, const TF_TString *src) {
  TF_TString_AppendN(dst, TF_TString_GetDataPointer(src),
                     TF_TString_GetSize(src));
}

/* Sets *dst to an owned (SMALL or LARGE) copy of src[0, size). src must not
   point into dst's own storage. */
static inline void TF_TString_Copy(TF_TString *dst, const char *src,
                                   size_t size) {
  char *data = TF_TString_ResizeUninitialized(dst, size);
  if (size != 0) {
    memcpy(data, src, size);
  }
}

/* Sets *dst to *src: SMALL and VIEW are copied as they are, LARGE gets a
   fresh buffer, OFFSET becomes a VIEW of the same bytes. */
static inline void TF_TString_Assign(TF_TString *dst, const TF_TString *src) {
  if (dst == src) return;
  TF_TString_Dealloc(dst);
  switch (TF_TString_GetType(src)) {
    case TF_TSTR_SMALL:
    case TF_TSTR_VIEW:
      *dst = *src;
      break;
    case TF_TSTR_LARGE:
      TF_TString_Copy(dst, TF_TString_GetDataPointer(src),
                      TF_TString_GetSize(src));
      break;
    case TF_TSTR_OFFSET:
      TF_TString_AssignView(dst, TF_TString_GetDataPointer(src),
                            TF_TString_GetSize(src));
      break;
    default:
      break;
  }
}

/* Moves *src into *dst in constant time. A LARGE src hands over its buffer
   and is reset to empty; an OFFSET src yields a VIEW. */
static inline void TF_TString_Move(TF_TString *dst, TF_TString *src) {
  if (dst == src) return;
  TF_TString_Dealloc(dst);
  switch (TF_TString_GetType(src)) {
    case TF_TSTR_SMALL:
    case TF_TSTR_VIEW:
      *dst = *src;
      break;
    case TF_TSTR_LARGE:
      *dst = *src;
      TF_TString_Init(src);
      break;
    case TF_TSTR_OFFSET:
      TF_TString_AssignView(dst, TF_TString_GetDataPointer(src),
                            TF_TString_GetSize(src));
      break;
    default:
      break;
  }
}

#endif /* TENSORFLOW_TSL_PLATFORM_CTSTRING_INTERNAL_H_ */
