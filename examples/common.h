/* What the two examples share: exits on a failed status, reading a GraphDef
 * or ConfigProto file (binary or text), a clock, and the stream groups'
 * counters from MS_SessionStats. Each example defines EXAMPLE, its name (the
 * prefix of its messages), before it includes this file. The functions are
 * static inline, so each example still builds with one cc command and a
 * program that leaves one unused gets no warning. Only the standard C API is
 * used, plus MS_GraphDefTextToBinary and MS_ConfigProtoTextToBinary for text
 * files and MS_SessionStats (a weak reference: without it, against
 * TensorFlow's libtensorflow, group_stats returns -1). */
#ifndef MSTREAM_EXAMPLES_COMMON_H_
#define MSTREAM_EXAMPLES_COMMON_H_

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mstream/mstream.h"
#include "tensorflow/c/c_api.h"

#ifndef EXAMPLE
#error "define EXAMPLE, the program's name, before including common.h"
#endif

#pragma weak MS_SessionStats

#define MAX_GROUPS 256

/* code_name is TF's name of a status code, as TF_Status prints it. */
static inline const char* code_name(TF_Code c) {
  static const char* names[] = {
      "OK", "CANCELLED", "UNKNOWN", "INVALID_ARGUMENT", "DEADLINE_EXCEEDED",
      "NOT_FOUND", "ALREADY_EXISTS", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED",
      "FAILED_PRECONDITION", "ABORTED", "OUT_OF_RANGE", "UNIMPLEMENTED",
      "INTERNAL", "UNAVAILABLE", "DATA_LOSS", "UNAUTHENTICATED"};
  return (unsigned)c < sizeof names / sizeof names[0] ? names[c] : "code?";
}

static inline void die_status(const char* what, const TF_Status* s) {
  fprintf(stderr, EXAMPLE ": %s: %s: %s\n", what, code_name(TF_GetCode(s)), TF_Message(s));
  exit(1);
}

static inline void check(const char* what, const TF_Status* s) {
  if (TF_GetCode(s) != TF_OK) die_status(what, s);
}

static inline void die(const char* fmt, const char* arg) {
  fprintf(stderr, EXAMPLE ": ");
  fprintf(stderr, fmt, arg);
  fprintf(stderr, "\n");
  exit(1);
}

/* now_s is a monotonic clock in seconds. */
static inline double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static inline void free_data(void* data, size_t len) {
  (void)len;
  free(data);
}

/* read_file returns the whole file as a TF_Buffer that owns its bytes. */
static inline TF_Buffer* read_file(const char* path) {
  FILE* f = fopen(path, "rb");
  if (f == NULL) {
    fprintf(stderr, EXAMPLE ": %s: %s\n", path, strerror(errno));
    exit(1);
  }
  size_t cap = 1 << 16, len = 0;
  char* data = malloc(cap);
  if (data == NULL) die("out of memory reading %s", path);
  for (;;) {
    len += fread(data + len, 1, cap - len, f);
    if (len < cap) break;
    cap *= 2;
    char* grown = realloc(data, cap);
    if (grown == NULL) die("out of memory reading %s", path);
    data = grown;
  }
  if (ferror(f)) die("read error on %s", path);
  fclose(f);
  TF_Buffer* buf = TF_NewBuffer();
  buf->data = data;
  buf->length = len;
  buf->data_deallocator = free_data;
  return buf;
}

static inline int has_suffix(const char* s, const char* suffix) {
  size_t n = strlen(s), m = strlen(suffix);
  return n >= m && strcmp(s + n - m, suffix) == 0;
}

/* looks_like_text says whether a file is plausibly protobuf text format:
 * serialized protos nearly always contain control bytes in the first KiB. */
static inline int looks_like_text(const TF_Buffer* buf) {
  const unsigned char* p = buf->data;
  size_t n = buf->length < 1024 ? buf->length : 1024;
  for (size_t i = 0; i < n; i++) {
    if (p[i] < 0x20 && p[i] != '\n' && p[i] != '\r' && p[i] != '\t') return 0;
  }
  return 1;
}

/* load_proto returns the binary form of a GraphDef (graph != 0) or
 * ConfigProto file: text when the name ends in .pbtxt or .txt, binary when
 * it ends in .pb, else whichever the first KiB looks like. */
static inline TF_Buffer* load_proto(const char* path, int graph, TF_Status* s) {
  TF_Buffer* raw = read_file(path);
  int text = has_suffix(path, ".pbtxt") || has_suffix(path, ".txt") ||
             (!has_suffix(path, ".pb") && looks_like_text(raw));
  if (!text) return raw;
  TF_Buffer* bin = TF_NewBuffer();
  if (graph) {
    MS_GraphDefTextToBinary(raw->data, raw->length, bin, s);
  } else {
    MS_ConfigProtoTextToBinary(raw->data, raw->length, bin, s);
  }
  TF_DeleteBuffer(raw);
  if (TF_GetCode(s) != TF_OK) {
    TF_DeleteBuffer(bin);
    die_status(path, s);
  }
  return bin;
}

/* GroupStats is one stream group's counters in MS_SessionStats. */
typedef struct {
  long long runs;  /* runs_completed */
  long long waits; /* stream_waits: cross-stream waits the executor inserted */
  /* launch_ns, launched_nodes, launch_steps: the host time device steps
   * on this group took to enqueue their work (not their final wait), the
   * device nodes they launched and the steps (0 on the CPU) */
  long long launch_ns, launched_nodes, launch_steps;
  char device[64]; /* the device the group belongs to, e.g. /device:GPU:0 */
} GroupStats;

/* json_int reads the integer after "key": at or after p, before end (NULL:
 * anywhere after p); -1 when it is not there. */
static inline long long json_int(const char* p, const char* end, const char* key) {
  char pat[64];
  snprintf(pat, sizeof pat, "\"%s\":", key);
  const char* k = strstr(p, pat);
  if (k == NULL || (end != NULL && k > end)) return -1;
  return strtoll(k + strlen(pat), NULL, 10);
}

/* group_stats reads each stream group's counters so far from
 * MS_SessionStats' JSON ("groups": [{"id": N, "device": "...", ...,
 * "runs_completed": M, ..., "stream_waits": W, ...}, ...]) into g (at most
 * max groups); it returns the number of groups, or -1 without the call or
 * when it fails. */
static inline int group_stats(TF_Session* session, GroupStats* g, int max) {
  if (!MS_SessionStats) return -1;
  TF_Status* s = TF_NewStatus();
  TF_Buffer* b = TF_NewBuffer();
  MS_SessionStats(session, b, s);
  int n = -1;
  if (TF_GetCode(s) == TF_OK) {
    char* js = malloc(b->length + 1);
    if (js == NULL) die("out of memory reading %s", "MS_SessionStats");
    memcpy(js, b->data, b->length);
    js[b->length] = '\0';
    const char* p = strstr(js, "\"groups\":[");
    n = 0;
    while (p != NULL && n < max && (p = strstr(p + 1, "{\"id\":")) != NULL) {
      const char* next = strstr(p + 1, "{\"id\":");
      g[n].runs = json_int(p, next, "runs_completed");
      g[n].waits = json_int(p, next, "stream_waits");
      g[n].launch_ns = json_int(p, next, "launch_ns");
      g[n].launched_nodes = json_int(p, next, "launched_nodes");
      g[n].launch_steps = json_int(p, next, "launch_steps");
      g[n].device[0] = '\0';
      const char* d = strstr(p, "\"device\":\"");
      if (d != NULL && (next == NULL || d < next)) {
        d += strlen("\"device\":\"");
        size_t k = 0;
        while (d[k] && d[k] != '"' && k < sizeof g[n].device - 1) k++;
        memcpy(g[n].device, d, k);
        g[n].device[k] = '\0';
      }
      n++;
    }
    free(js);
  }
  TF_DeleteBuffer(b);
  TF_DeleteStatus(s);
  return n;
}

#endif /* MSTREAM_EXAMPLES_COMMON_H_ */
