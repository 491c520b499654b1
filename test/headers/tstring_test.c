/* Exercises the inline TF_TString functions and prints what they do.
 *
 * abi_check.sh compiles this file against include/ and against TF 2.15's
 * own headers, as C and as C++, and requires the outputs to be identical byte
 * for byte. The inline functions are compiled into every host program, so
 * equal behaviour (sizes, capacities, types, contents, and the raw 24 bytes,
 * leftovers included) is what ABI compatibility means for them.
 *
 * Built with -DTS_ARENA and -Wl,--wrap=malloc,--wrap=realloc,--wrap=free,
 * every allocation made in this file, including those made by the inline
 * functions, comes from a region mapped at a fixed address and is filled
 * with a fixed pattern, so heap pointers and uninitialized bytes are the
 * same in every build and run and can be printed. Without TS_ARENA (the
 * sanitizer build) raw bytes are not printed and the output is not compared.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tensorflow/c/tf_tstring.h"

#ifdef TS_ARENA
#include <sys/mman.h>
#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000
#endif

#define ARENA_BASE ((uintptr_t)0x5a5a00000000ull)
#define ARENA_SIZE ((size_t)64 << 20)
#define BLOCK_MAGIC ((size_t)0xB10CB10CB10CB10Cull)
#define FREED_MAGIC ((size_t)0xF4EEF4EEF4EEF4EEull)

static unsigned char *arena;
static size_t arena_used;
static long live_blocks;

#ifdef __cplusplus
extern "C" {
#endif
void *__wrap_malloc(size_t n);
void *__wrap_realloc(void *p, size_t n);
void __wrap_free(void *p);
#ifdef __cplusplus
}
#endif

static void arena_init(void) {
  void *want = (void *)ARENA_BASE;
  void *got;
  if (arena != NULL) return;
  got = mmap(want, ARENA_SIZE, PROT_READ | PROT_WRITE,
             MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
  if (got != want) {
    fprintf(stderr, "tstring_test: cannot map the arena at %p\n", want);
    exit(2);
  }
  arena = (unsigned char *)got;
}

/* Each block: a 16-byte header {size, magic}, then the bytes, 16-aligned. */
void *__wrap_malloc(size_t n) {
  size_t *hdr;
  size_t need = 16 + ((n + 15) & ~(size_t)15);
  arena_init();
  if (arena_used + need > ARENA_SIZE) {
    fprintf(stderr, "tstring_test: arena exhausted\n");
    exit(2);
  }
  hdr = (size_t *)(arena + arena_used);
  arena_used += need;
  hdr[0] = n;
  hdr[1] = BLOCK_MAGIC;
  memset(hdr + 2, 0xCD, n);
  live_blocks++;
  return hdr + 2;
}

void __wrap_free(void *p) {
  size_t *hdr;
  if (p == NULL) return;
  hdr = (size_t *)p - 2;
  if (hdr[1] != BLOCK_MAGIC) {
    fprintf(stderr, "tstring_test: bad free of %p\n", p);
    exit(2);
  }
  hdr[1] = FREED_MAGIC;
  memset(p, 0xEE, hdr[0]);
  live_blocks--;
}

void *__wrap_realloc(void *p, size_t n) {
  void *q;
  size_t old;
  if (p == NULL) return __wrap_malloc(n);
  old = ((size_t *)p)[-2];
  q = __wrap_malloc(n);
  memcpy(q, p, old < n ? old : n);
  __wrap_free(p);
  return q;
}
#endif /* TS_ARENA */

/* Source bytes for copies and views, NULs included. */
static char *pool;
#define POOL_SIZE 512

static void pool_init(void) {
  int i;
  pool = (char *)malloc(POOL_SIZE);
  for (i = 0; i < POOL_SIZE; i++) {
    pool[i] = (char)(i % 7 == 3 ? 0 : 'A' + (i * 13) % 58);
  }
}

static const char *where(const TF_TString *s, const char *p) {
  static char buf[64];
  uintptr_t u = (uintptr_t)p;
  if (p == NULL) return "null";
  if (u >= (uintptr_t)s && u < (uintptr_t)s + sizeof(*s)) {
    snprintf(buf, sizeof buf, "inline+%u", (unsigned)(u - (uintptr_t)s));
    return buf;
  }
  if (u >= (uintptr_t)pool && u < (uintptr_t)pool + POOL_SIZE) {
    snprintf(buf, sizeof buf, "pool+%u", (unsigned)(u - (uintptr_t)pool));
    return buf;
  }
#ifdef TS_ARENA
  if (u >= ARENA_BASE && u < ARENA_BASE + ARENA_SIZE) {
    snprintf(buf, sizeof buf, "arena+%#lx", (unsigned long)(u - ARENA_BASE));
    return buf;
  }
#endif
  return "elsewhere";
}

static const char *type_name(TF_TString_Type t) {
  switch (t) {
    case TF_TSTR_SMALL: return "SMALL";
    case TF_TSTR_LARGE: return "LARGE";
    case TF_TSTR_OFFSET: return "OFFSET";
    case TF_TSTR_VIEW: return "VIEW";
    default: return "?";
  }
}

static uint64_t fnv(const void *p, size_t n) {
  const unsigned char *b = (const unsigned char *)p;
  uint64_t h = 1469598103934665603ull;
  size_t i;
  for (i = 0; i < n; i++) h = (h ^ b[i]) * 1099511628211ull;
  return h;
}

static void print_bytes(const char *p, size_t n) {
  size_t i;
  putchar('"');
  for (i = 0; i < n; i++) {
    unsigned char c = (unsigned char)p[i];
    if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\') {
      putchar(c);
    } else {
      printf("\\x%02x", c);
    }
  }
  putchar('"');
}

static void print_raw(const TF_TString *s) {
#ifdef TS_ARENA
  size_t i;
  printf(" raw=");
  for (i = 0; i < sizeof(s->u.raw.raw); i++) printf("%02x", s->u.raw.raw[i]);
#else
  (void)s;
#endif
}

/* One line: type, size, capacity, where the data lives, the bytes, whether
   an owned string is NUL-terminated, and the raw struct. */
static void show(const char *label, const TF_TString *s) {
  TF_TString_Type t = TF_TString_GetType(s);
  size_t n = TF_TString_GetSize(s);
  const char *p = TF_TString_GetDataPointer(s);
  printf("%s: %s size=%lu cap=%lu at=%s data=", label, type_name(t),
         (unsigned long)n, (unsigned long)TF_TString_GetCapacity(s),
         where(s, p));
  if (n <= 80) {
    print_bytes(p, n);
  } else {
    print_bytes(p, 16);
    printf("...#%016llx", (unsigned long long)fnv(p, n));
  }
  if (t == TF_TSTR_SMALL || t == TF_TSTR_LARGE) printf(" nul=%d", p[n] == 0);
  print_raw(s);
  putchar('\n');
}

static void test_helpers(void) {
  size_t v[] = {0, 1, 15, 16, 17, 31, 32, 33, 1000, (size_t)1 << 40};
  size_t i;
  printf("== helpers\n");
  printf("sizeof TF_TString=%lu SmallCapacity=%d little_endian=%d\n",
         (unsigned long)sizeof(TF_TString), (int)TF_TString_SmallCapacity,
         (int)TF_TSTRING_LITTLE_ENDIAN);
  for (i = 0; i < sizeof v / sizeof v[0]; i++) {
    printf("align16(%lu)=%lu internal(L)=%#llx internal(V)=%#llx "
           "actual(internal)=%lu\n",
           (unsigned long)v[i], (unsigned long)TF_align16(v[i]),
           (unsigned long long)TF_TString_ToInternalSizeT(v[i], TF_TSTR_LARGE),
           (unsigned long long)TF_TString_ToInternalSizeT(v[i], TF_TSTR_VIEW),
           (unsigned long)TF_TString_ToActualSizeT(
               TF_TString_ToInternalSizeT(v[i], TF_TSTR_LARGE)));
  }
  printf("actual(~0)=%#llx\n",
         (unsigned long long)TF_TString_ToActualSizeT(~(size_t)0));
  printf("max=%lu min=%lu swap32=%#x le32toh=%#x\n",
         (unsigned long)TF_max(3, 9), (unsigned long)TF_min(3, 9),
         (unsigned)TF_swap32(0x11223344u), (unsigned)TF_le32toh(0x11223344u));
}

static void test_small_large(void) {
  TF_TString s, t;
  char big[300];
  int i;
  for (i = 0; i < 300; i++) big[i] = (char)('a' + i % 26);
  printf("== init, copy, small/large boundary\n");
  TF_TString_Init(&s);
  show("init", &s);
  TF_TString_Copy(&s, "hello", 5);
  show("copy 5", &s);
  TF_TString_Copy(&s, big, 22);
  show("copy 22", &s);
  TF_TString_Copy(&s, big, 23);
  show("copy 23", &s);
  TF_TString_Copy(&s, big, 31);
  show("copy 31", &s);
  TF_TString_Copy(&s, big, 32);
  show("copy 32", &s);
  TF_TString_Copy(&s, big, 100);
  show("copy 100", &s);
  TF_TString_Copy(&s, big, 40);
  show("copy 40 (shrink below half)", &s);
  TF_TString_Copy(&s, "tiny", 4);
  show("copy 4 (back to small)", &s);
  TF_TString_Copy(&s, "", 0);
  show("copy 0", &s);
  TF_TString_Copy(&s, big, 300);
  show("copy 300", &s);
  TF_TString_Dealloc(&s);
  show("dealloc large", &s);
  TF_TString_Copy(&s, "abc", 3);
  TF_TString_Dealloc(&s);
  show("dealloc small", &s);

  printf("== embedded NULs\n");
  TF_TString_Init(&t);
  TF_TString_Copy(&t, "a\0b\0c", 5);
  show("copy nuls", &t);
  TF_TString_AppendN(&t, "\0\0z", 3);
  show("append nuls", &t);
  memset(big, 0, 40);
  TF_TString_AppendN(&t, big, 40);
  show("append 40 nuls", &t);
  TF_TString_Dealloc(&t);
}

static void test_view(void) {
  TF_TString s, t;
  char *p;
  printf("== views\n");
  TF_TString_Init(&s);
  TF_TString_AssignView(&s, pool, 10);
  show("view 10", &s);
  p = TF_TString_GetMutableDataPointer(&s);
  printf("mutable at=%s\n", where(&s, p));
  show("view 10 made mutable", &s);
  TF_TString_AssignView(&s, pool + 5, 40);
  show("view 40", &s);
  p = TF_TString_GetMutableDataPointer(&s);
  p[0] = '#';
  show("view 40 made mutable", &s);
  TF_TString_AssignView(&s, pool + 100, 30);
  show("view over large", &s);
  TF_TString_AppendN(&s, "", 0);
  show("append 0 to view", &s);
  TF_TString_AppendN(&s, "!", 1);
  show("append 1 to view", &s);
  TF_TString_AssignView(&s, pool, 0);
  show("view 0", &s);
  TF_TString_AssignView(&s, NULL, 0);
  show("view null", &s);
  TF_TString_Init(&t);
  TF_TString_Copy(&t, "0123456789", 10);
  TF_TString_AssignView(&t, pool + 7, 3);
  show("view over small", &t);
  TF_TString_Resize(&t, 8, '+');
  show("resize view 3->8", &t);
  TF_TString_AssignView(&t, pool + 7, 25);
  TF_TString_Resize(&t, 5, '+');
  show("resize view 25->5", &t);
  TF_TString_AssignView(&t, pool + 7, 25);
  TF_TString_Reserve(&t, 10);
  show("reserve 10 on view", &t);
  TF_TString_Reserve(&t, 50);
  show("reserve 50 on view", &t);
  TF_TString_Dealloc(&t);
}

static void test_resize_reserve(void) {
  TF_TString s;
  size_t sizes[] = {3, 10, 22, 23, 40, 47, 48, 100, 60, 49, 30, 23, 22, 5, 0};
  size_t caps[] = {5, 22, 23, 64, 30, 64, 65, 200};
  size_t i;
  printf("== resize\n");
  TF_TString_Init(&s);
  for (i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
    char label[64];
    TF_TString_Resize(&s, sizes[i], (char)('a' + i));
    snprintf(label, sizeof label, "resize %lu", (unsigned long)sizes[i]);
    show(label, &s);
  }
  for (i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
    char label[64];
    TF_TString_ResizeUninitialized(&s, sizes[i]);
    snprintf(label, sizeof label, "resize uninit %lu", (unsigned long)sizes[i]);
    show(label, &s);
  }
  printf("== reserve\n");
  TF_TString_Dealloc(&s);
  TF_TString_Copy(&s, "xyz", 3);
  for (i = 0; i < sizeof caps / sizeof caps[0]; i++) {
    char label[64];
    TF_TString_Reserve(&s, caps[i]);
    snprintf(label, sizeof label, "reserve %lu", (unsigned long)caps[i]);
    show(label, &s);
  }
  TF_TString_Dealloc(&s);
  TF_TString_Copy(&s, "xyz", 3);
  for (i = 0; i < sizeof caps / sizeof caps[0]; i++) {
    char label[64];
    TF_TString_ReserveAmortized(&s, caps[i]);
    snprintf(label, sizeof label, "reserve amortized %lu",
             (unsigned long)caps[i]);
    show(label, &s);
  }
  TF_TString_Dealloc(&s);
}

static void test_append(void) {
  TF_TString s, t;
  int i;
  printf("== append\n");
  TF_TString_Init(&s);
  for (i = 0; i < 40; i++) {
    char label[32];
    TF_TString_AppendN(&s, pool + i, (size_t)(i % 5) * 3);
    snprintf(label, sizeof label, "append #%d", i);
    show(label, &s);
  }
  TF_TString_Init(&t);
  TF_TString_Copy(&t, "tail", 4);
  TF_TString_Append(&t, &s);
  show("append tstring", &t);
  TF_TString_Append(&s, &t);
  show("append tstring back", &s);
  TF_TString_Dealloc(&s);
  TF_TString_Dealloc(&t);
}

static void test_assign_move(void) {
  TF_TString src[4], dst;
  const char *names[4] = {"small", "large", "view", "offset"};
  int i;
  /* The OFFSET string and its bytes live in one block, as in a tensor. */
  TF_TString *off = (TF_TString *)malloc(sizeof(TF_TString) + 64);
  char *bytes = (char *)(off + 1);
  uint32_t enc_size, enc_off;

  printf("== offset\n");
  memcpy(bytes, "offset-string-bytes-that-run-long-enough-to-be-large", 52);
  TF_TString_Init(off);
  enc_size = (uint32_t)(40u << 2) | TF_TSTR_OFFSET;
  enc_off = (uint32_t)sizeof(TF_TString);
  /* Stored little-endian whatever the host order. */
  off->u.offset.size = TF_le32toh(enc_size);
  off->u.offset.offset = TF_le32toh(enc_off);
  off->u.offset.count = TF_le32toh(1u);
  show("offset 40", off);

  printf("== assign and move\n");
  for (i = 0; i < 4; i++) TF_TString_Init(&src[i]);
  TF_TString_Copy(&src[0], "short one", 9);
  TF_TString_Copy(&src[1], pool, 70);
  TF_TString_AssignView(&src[2], pool + 3, 33);
  TF_TString_Init(&dst);
  for (i = 0; i < 4; i++) {
    char label[64];
    const TF_TString *from = i == 3 ? off : &src[i];
    TF_TString_Assign(&dst, from);
    snprintf(label, sizeof label, "assign from %s", names[i]);
    show(label, &dst);
    show("  source after", from);
  }
  TF_TString_Assign(&dst, &dst);
  show("assign self", &dst);
  TF_TString_Copy(&dst, pool, 50);
  for (i = 0; i < 4; i++) {
    char label[64];
    TF_TString *from = i == 3 ? off : &src[i];
    TF_TString_Move(&dst, from);
    snprintf(label, sizeof label, "move from %s", names[i]);
    show(label, &dst);
    show("  source after", from);
  }
  TF_TString_Move(&dst, &dst);
  show("move self", &dst);

  printf("== offset made mutable\n");
  TF_TString_Init(&dst);
  TF_TString_Assign(&dst, off);
  TF_TString_AppendN(off, "++", 2);
  show("offset after append", off);
  show("view of old offset", &dst);
  TF_TString_Dealloc(off);
  enc_size = (uint32_t)(7u << 2) | TF_TSTR_OFFSET;
  off->u.offset.size = TF_le32toh(enc_size);
  off->u.offset.offset = TF_le32toh(enc_off);
  show("offset 7", off);
  TF_TString_GetMutableDataPointer(off)[0] = '*';
  show("offset 7 made mutable", off);
  TF_TString_Dealloc(off);
  free(off);
  for (i = 0; i < 3; i++) TF_TString_Dealloc(&src[i]);
  TF_TString_Dealloc(&dst);
}

static void test_odd_states(void) {
  TF_TString s;
  printf("== odd states\n");
  TF_TString_Init(&s);
  s.u.large.size = TF_TString_ToInternalSizeT(5, TF_TSTR_LARGE);
  s.u.large.cap = 7;
  s.u.large.ptr = NULL;
  TF_TString_Dealloc(&s);
  printf("dealloc large with null ptr: type=%s size=%lu cap=%lu\n",
         type_name(TF_TString_GetType(&s)), (unsigned long)TF_TString_GetSize(&s),
         (unsigned long)TF_TString_GetCapacity(&s));
  print_raw(&s);
  putchar('\n');
}

/* xorshift64*: a fixed sequence on every platform. */
static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
static uint32_t rnd(uint32_t n) {
  uint64_t x = rng_state;
  x ^= x >> 12;
  x ^= x << 25;
  x ^= x >> 27;
  rng_state = x;
  return (uint32_t)((x * 2685821657736338717ull) >> 33) % n;
}

static size_t rnd_len(void) {
  static const size_t edges[] = {0, 1, 21, 22, 23, 24, 31, 32, 33, 47, 48, 63};
  switch (rnd(4)) {
    case 0: return edges[rnd(sizeof edges / sizeof edges[0])];
    case 1: return rnd(200);
    default: return rnd(64);
  }
}

/* Random operations on a few strings; every step prints the touched
   string in full (raw bytes and contents hashed). */
static void test_random(int steps) {
  enum { N = 6 };
  TF_TString s[N];
  int k;
  printf("== random\n");
  for (k = 0; k < N; k++) TF_TString_Init(&s[k]);
  for (k = 0; k < steps; k++) {
    int i = (int)rnd(N), j = (int)rnd(N), op = (int)rnd(13);
    size_t len = rnd_len();
    size_t off = rnd(POOL_SIZE - 200);
    char *p;
    char label[64];
    switch (op) {
      case 0: TF_TString_Copy(&s[i], pool + off, len); break;
      case 1: TF_TString_AssignView(&s[i], pool + off, len); break;
      case 2: TF_TString_AppendN(&s[i], pool + off, len); break;
      case 3: if (i != j) TF_TString_Append(&s[i], &s[j]); break;
      case 4: TF_TString_Resize(&s[i], len, (char)('a' + k % 26)); break;
      case 5: TF_TString_ResizeUninitialized(&s[i], len); break;
      case 6: TF_TString_Reserve(&s[i], len); break;
      case 7: TF_TString_ReserveAmortized(&s[i], len); break;
      case 8: TF_TString_Assign(&s[i], &s[j]); break;
      case 9: TF_TString_Move(&s[i], &s[j]); break;
      case 10: TF_TString_Dealloc(&s[i]); break;
      case 11:
        p = TF_TString_GetMutableDataPointer(&s[i]);
        if (TF_TString_GetSize(&s[i]) > 0) p[0] ^= 1;
        break;
      default:
        TF_TString_Dealloc(&s[i]);
        TF_TString_Init(&s[i]);
        break;
    }
    snprintf(label, sizeof label, "%d op%d s%d s%d len%lu off%lu", k, op, i, j,
             (unsigned long)len, (unsigned long)off);
    show(label, &s[i]);
  }
  for (k = 0; k < N; k++) TF_TString_Dealloc(&s[k]);
}

int main(void) {
  pool_init();
  test_helpers();
  test_small_large();
  test_view();
  test_resize_reserve();
  test_append();
  test_assign_move();
  test_odd_states();
  test_random(3000);
  free(pool);
#ifdef TS_ARENA
  printf("live heap blocks at exit: %ld\n", live_blocks);
  return live_blocks == 0 ? 0 : 1;
#else
  return 0;
#endif
}
