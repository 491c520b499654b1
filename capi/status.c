/* TF_Status in plain C: a code, a message copied in, key/value payloads. */
#include <errno.h>
#include <stdio.h>

#include "internal.h"

static void clear_payloads(TF_Status* s) {
  ms_payload* p = s->payloads;
  while (p != NULL) {
    ms_payload* next = p->next;
    free(p->key);
    free(p->value);
    free(p);
    p = next;
  }
  s->payloads = NULL;
}

static char* dup_n(const char* msg, size_t len) {
  char* m = malloc(len + 1);
  if (m == NULL) abort();
  if (len > 0) memcpy(m, msg, len);
  m[len] = 0;
  return m;
}

TF_Status* TF_NewStatus(void) {
  TF_Status* s = calloc(1, sizeof(TF_Status));
  if (s == NULL) abort();
  s->code = TSL_OK;
  s->msg = dup_n("", 0);
  ms_live(MS_LIVE_STATUS, 1);
  return s;
}

void TF_DeleteStatus(TF_Status* s) {
  if (s == NULL) return;
  clear_payloads(s);
  free(s->msg);
  free(s);
  ms_live(MS_LIVE_STATUS, -1);
}

void ms_set_status_n(TF_Status* s, int code, const char* msg, size_t len) {
  if (s == NULL) return;
  /* OK over OK, a status reused call after call: nothing to change (and no
   * free and malloc of its empty message). */
  if (code == TSL_OK && s->code == TSL_OK && s->payloads == NULL && s->msg != NULL && s->msg[0] == 0) return;
  clear_payloads(s);
  free(s->msg);
  s->code = (TSL_Code)code;
  /* As TF: an OK status carries no message. */
  s->msg = code == TSL_OK ? dup_n("", 0) : dup_n(msg, msg == NULL ? 0 : len);
}

void TF_SetStatus(TF_Status* s, TF_Code code, const char* msg) {
  ms_set_status_n(s, code, msg, msg == NULL ? 0 : strlen(msg));
}

void ms_set_unimplemented(TF_Status* s, const char* fn) {
  char buf[256];
  int n = snprintf(buf, sizeof buf, "%s is not supported by mstream", fn);
  ms_set_status_n(s, TSL_UNIMPLEMENTED, buf, (size_t)n);
}

void TF_SetPayload(TF_Status* s, const char* key, const char* value) {
  if (s == NULL || key == NULL || s->code == TSL_OK) return;
  if (value == NULL) value = "";
  for (ms_payload* p = s->payloads; p != NULL; p = p->next) {
    if (strcmp(p->key, key) == 0) {
      free(p->value);
      p->value = dup_n(value, strlen(value));
      return;
    }
  }
  ms_payload* p = malloc(sizeof *p);
  if (p == NULL) abort();
  p->key = dup_n(key, strlen(key));
  p->value = dup_n(value, strlen(value));
  p->next = NULL;
  /* Append, so that visitors see payloads in the order they were set. */
  ms_payload** tail = &s->payloads;
  while (*tail != NULL) tail = &(*tail)->next;
  *tail = p;
}

void TF_ForEachPayload(const TF_Status* s, TF_PayloadVisitor visitor,
                       void* capture) {
  if (s == NULL || visitor == NULL) return;
  for (const ms_payload* p = s->payloads; p != NULL; p = p->next) {
    visitor(p->key, p->value, capture);
  }
}

/* errno -> code, as TF's ErrnoToCode. */
static TSL_Code errno_code(int e) {
  switch (e) {
    case 0: return TSL_OK;
    case EINVAL: case ENAMETOOLONG: case E2BIG: case EDESTADDRREQ: case EDOM:
    case EFAULT: case EILSEQ: case ENOPROTOOPT: case ENOSTR: case ENOTSOCK:
    case ENOTTY: case EPROTOTYPE: case ESPIPE:
      return TSL_INVALID_ARGUMENT;
    case ETIMEDOUT: case ETIME: return TSL_DEADLINE_EXCEEDED;
    case ENODEV: case ENOENT: case ENXIO: case ESRCH: return TSL_NOT_FOUND;
    case EEXIST: case EADDRNOTAVAIL: case EALREADY: return TSL_ALREADY_EXISTS;
    case EPERM: case EACCES: case EROFS: return TSL_PERMISSION_DENIED;
    case ENOTEMPTY: case EISDIR: case ENOTDIR: case EADDRINUSE: case EBADF:
    case EBUSY: case ECHILD: case EISCONN: case ENOTBLK: case ENOTCONN:
    case EPIPE: case ESHUTDOWN: case ETXTBSY:
      return TSL_FAILED_PRECONDITION;
    case ENOSPC: case EDQUOT: case EMFILE: case EMLINK: case ENFILE:
    case ENOBUFS: case ENODATA: case ENOMEM: case ENOSR: case EUSERS:
      return TSL_RESOURCE_EXHAUSTED;
    case EFBIG: case EOVERFLOW: case ERANGE: return TSL_OUT_OF_RANGE;
    case ENOSYS: case ENOTSUP: case EAFNOSUPPORT: case EPFNOSUPPORT:
    case EPROTONOSUPPORT: case ESOCKTNOSUPPORT: case EXDEV:
      return TSL_UNIMPLEMENTED;
    case EAGAIN: case ECONNREFUSED: case ECONNABORTED: case ECONNRESET:
    case EINTR: case EHOSTDOWN: case EHOSTUNREACH: case ENETDOWN:
    case ENETRESET: case ENETUNREACH: case ENOLCK: case ENOLINK:
      return TSL_UNAVAILABLE;
    case EDEADLK: case ESTALE: return TSL_ABORTED;
    case ECANCELED: return TSL_CANCELLED;
    default: return TSL_UNKNOWN;
  }
}

void TF_SetStatusFromIOError(TF_Status* s, int error_code,
                             const char* context) {
  char buf[1024];
  int n = snprintf(buf, sizeof buf, "%s; %s", context == NULL ? "" : context,
                   strerror(error_code));
  if (n < 0) n = 0;
  if ((size_t)n >= sizeof buf) n = sizeof buf - 1;
  ms_set_status_n(s, errno_code(error_code), buf, (size_t)n);
}

TF_Code TF_GetCode(const TF_Status* s) {
  return s == NULL ? TSL_OK : s->code;
}

const char* TF_Message(const TF_Status* s) {
  return s == NULL ? "" : s->msg;
}
