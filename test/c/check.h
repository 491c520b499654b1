/* Minimal test harness: CHECK counts passes and failures; each program ends with
 * "N passed, M failed" so test/run.sh can sum them. */
#ifndef MS_TEST_CHECK_H
#define MS_TEST_CHECK_H
#include <stdio.h>
static int t_pass, t_fail;
#define CHECK(cond, ...) do { if (cond) { t_pass++; } else { t_fail++; \
  fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond); \
  fprintf(stderr, __VA_ARGS__); fprintf(stderr, "\n"); } } while (0)
#define DONE() (printf("%d passed, %d failed\n", t_pass, t_fail), t_fail ? 1 : 0)
#endif
