/* Deliberately wrong: leaks a TF_Status and fetched tensors, reads past a
 * tensor's data, branches on an uninitialised value and passes uninitialised
 * bytes to write(2). test/valgrind/run.sh requires Valgrind to report all
 * five, proving that the Go suppressions (go.supp and the generated syscall
 * ones, which match frames of Go's runtime only) leave C code's errors
 * visible.
 * "canary exec" reads past the end and then re-executes itself as "canary
 * clean", which exits cleanly, as multistream_test's phases do: the error of
 * the process that exec'd must still be counted. */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util.h"

static void __attribute__((noinline)) leak(TF_Session* sess, TF_Graph* g) {
  TF_Status* s = TF_NewStatus();
  for (int i = 0; i < 8; i++) (void)run1(sess, NULL, NULL, 0, out0(g, "c"), s);
}

/* Overwrites the stack that leak() used, so no stale pointer keeps its blocks reachable. */
static void __attribute__((noinline)) clobber(void) {
  volatile char buf[8192];
  for (int i = 0; i < 8192; i++) buf[i] = 0;
}

int main(int argc, char** argv) {
  if (argc > 1 && strcmp(argv[1], "clean") == 0) return 0;
  if (argc > 1 && strcmp(argv[1], "exec") == 0) {
    TF_Tensor* t = TF_AllocateTensor(TF_FLOAT, (int64_t[]){3}, 1, 12);
    volatile float past = ((float*)TF_TensorData(t))[16];
    (void)past;
    TF_DeleteTensor(t);
    char* args[] = {argv[0], "clean", NULL};
    execv(argv[0], args);
    return 1;
  }
  TF_Status* s = TF_NewStatus();
  TF_Graph* g = TF_NewGraph();
  import_text(g, "node { name: 'c' op: 'Const' attr { key: 'dtype' value { type: DT_FLOAT } }"
                 " attr { key: 'value' value { tensor { dtype: DT_FLOAT tensor_shape { dim { size: 3 } } float_val: 1 } } } }", s);
  TF_Session* sess = TF_NewSession(g, NULL, s);
  TF_Tensor* t = run1(sess, NULL, NULL, 0, out0(g, "c"), s);
  volatile float past = ((float*)TF_TensorData(t))[16]; /* 64-byte block: one past its end */
  (void)past;
  TF_DeleteTensor(t);
  leak(sess, g);
  clobber();
  int* never_set = malloc(sizeof *never_set);
  if (*never_set == 42) printf("canary: 42\n"); /* a jump on an uninitialised value */
  char* unwritten = malloc(16);
  int fd = open("/dev/null", O_WRONLY);
  if (fd >= 0) { /* uninitialised bytes to a syscall */
    if (write(fd, unwritten, 16) < 0) printf("canary: write failed\n");
    close(fd);
  }
  free(unwritten);
  free(never_set);
  TF_DeleteSession(sess, s);
  TF_DeleteGraph(g);
  TF_DeleteStatus(s);
  printf("canary done\n");
  return 0;
}
