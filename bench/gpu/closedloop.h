/* closedloop: the closed-loop load that every C client of the benchmarks
 * shares (bench/gpu/loadgen.c for mstream and TF's C API,
 * bench/cpu/loadgen_ort.c for ONNX Runtime, bench/cpu/loadgen_ov.c for
 * OpenVINO), so that their numbers differ only by the library behind the
 * request.
 *
 * For each batch size B, each client's feeds are drawn from the same seeds
 * (12345 + 7919 * client + B, inputs in the model's order, cl_fill), so the
 * outputs of two libraries can be compared byte for byte. For each thread
 * count T, T threads warm up (5 + (2 * groups + T - 1) / T requests each: a
 * point starts after every stream group has served two runs; at a
 * process's first point, WARM_S=s seconds more of requests, so that the
 * window starts past a library's first seconds: mstream's Go heap
 * faults its pages in over its first GC cycles), then send
 * requests back to back for DUR seconds; one JSON line per (B, T) point on
 * stdout: QPS, samples/s, p50 / p99 latency, the process's CPU time per
 * request over the window, and the window's wall-clock bounds.
 *
 * A backend owns its session and feeds: prepare(ctx, B, clients) makes the
 * feeds of B, request(ctx, client, dump) sends one request (writing its
 * first output's bytes to dump when dump is not NULL) and returns 0, or
 * prints why and returns -1; release(ctx, B, clients) frees what prepare
 * made. OUTPUT_DUMP=path dumps client 0's first request of each batch's
 * first point to path.B. LAT_DUMP=path writes every request of each point
 * to path.B.T, one line each: client, start (s from the window's start),
 * latency (s), under a header that names the window's start and the client
 * threads' ids, so that a tail can be read request by request beside a
 * trace of the same window (bench/cpu/tail.sh). Header-only: each client includes it once. */
#ifndef BENCH_CLOSEDLOOP_H
#define BENCH_CLOSEDLOOP_H

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/syscall.h>
#endif

#define CL_MAX_POINTS 16
#define CL_MAX_THREADS 256

typedef enum { CL_F32, CL_I32, CL_I64 } ClType;

typedef struct {
  int (*prepare)(void* ctx, int batch, int clients);
  int (*request)(void* ctx, int client, const char* dump);
  void (*release)(void* ctx, int batch, int clients);
  int groups; /* stream groups the warm-up must go round (1 but for mstream) */
} ClBackend;

static double cl_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Wall-clock time, so a report can match a point's window with samples
 * taken beside it (nvidia-smi's timestamps are wall clock). */
static double cl_epoch(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* The process's CPU time, every thread (the library's pools, spinning
 * BLAS threads, GC), user and system: on a loaded machine wall time mostly
 * measures the run queue, the CPU a request took says what it cost. */
static double cl_cpu(void) {
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int cl_parse_list(const char* s, int* out) {
  int n = 0;
  while (*s && n < CL_MAX_POINTS) {
    out[n++] = atoi(s);
    const char* c = strchr(s, ',');
    if (!c) break;
    s = c + 1;
  }
  return n;
}

/* The seed of client c's feeds at batch size B. */
static unsigned cl_seed(int client, int batch) { return 12345u + (unsigned)client * 7919u + (unsigned)batch; }

static unsigned cl_rng(unsigned* s) {
  *s = *s * 1664525u + 1013904223u;
  return *s >> 8;
}

/* Fills n elements at p from seed: floats in [-1, 1), integers (ids) below
 * IDS_MAX (default 100000). bench/cpu/peers.py draws the same values. */
static void cl_fill(ClType t, void* p, int64_t n, unsigned* seed) {
  long ids_max = getenv("IDS_MAX") ? atol(getenv("IDS_MAX")) : 100000;
  for (int64_t i = 0; i < n; i++) {
    unsigned r = cl_rng(seed);
    switch (t) {
      case CL_F32: ((float*)p)[i] = (float)(r % 2000) / 1000.0f - 1.0f; break;
      case CL_I32: ((int32_t*)p)[i] = (int32_t)(r % ids_max); break;
      case CL_I64: ((int64_t*)p)[i] = (int64_t)(r % ids_max); break;
    }
  }
}

/* Writes n bytes at p to path (OUTPUT_DUMP's files). */
static void cl_dump(const char* path, const void* p, size_t n) {
  FILE* f = fopen(path, "wb");
  if (!f) return;
  fwrite(p, 1, n, f);
  fclose(f);
}

typedef struct {
  const ClBackend* be;
  void* ctx;
  int id;
  double stop;
  pthread_barrier_t* start;
  double* lat;
  double* at; /* each request's start (cl_now), kept only for LAT_DUMP */
  long tid;   /* the client thread's id (LAT_DUMP), 0 where unknown */
  long n_lat, cap_lat;
  int keep_at;
  int failed;
  int warmup;
  double warm_until; /* and warm up until then (WARM_S, a process's first point) */
  const char* dump;
} ClClient;

static void* cl_client_main(void* arg) {
  ClClient* c = arg;
#ifdef SYS_gettid
  c->tid = (long)syscall(SYS_gettid);
#endif
  for (int i = 0; i < c->warmup && !c->failed; i++) {
    c->failed = c->be->request(c->ctx, c->id, c->dump) != 0;
    c->dump = NULL;
  }
  while (!c->failed && cl_now() < c->warm_until) c->failed = c->be->request(c->ctx, c->id, NULL) != 0;
  pthread_barrier_wait(c->start);
  while (!c->failed) {
    double t0 = cl_now(), stop;
    __atomic_load(&c->stop, &stop, __ATOMIC_ACQUIRE);
    if (t0 >= stop) break;
    if (c->be->request(c->ctx, c->id, NULL) != 0) {
      c->failed = 1;
      break;
    }
    if (c->n_lat == c->cap_lat) {
      c->cap_lat = c->cap_lat ? 2 * c->cap_lat : 4096;
      c->lat = realloc(c->lat, (size_t)c->cap_lat * sizeof(double));
      if (c->keep_at) c->at = realloc(c->at, (size_t)c->cap_lat * sizeof(double));
    }
    if (c->keep_at) c->at[c->n_lat] = t0;
    c->lat[c->n_lat++] = cl_now() - t0;
  }
  return NULL;
}

static int cl_cmp(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return x < y ? -1 : x > y;
}

/* Runs every (batch, threads) point and prints its JSON line; 0 when every
 * request succeeded. */
static int cl_run(const ClBackend* be, void* ctx, const char* batches_arg, const char* threads_arg, double dur) {
  int batches[CL_MAX_POINTS], threads[CL_MAX_POINTS];
  int nb = cl_parse_list(batches_arg, batches), nt = cl_parse_list(threads_arg, threads);
  int maxT = 0;
  for (int i = 0; i < nt; i++) maxT = threads[i] > maxT ? threads[i] : maxT;
  if (maxT < 1 || maxT > CL_MAX_THREADS) {
    fprintf(stderr, "closedloop: threads must be 1..%d\n", CL_MAX_THREADS);
    return 2;
  }
  ClClient* cl = calloc((size_t)maxT, sizeof *cl);
  double warm = getenv("WARM_S") ? atof(getenv("WARM_S")) : 0;
  int rc = 0;
  for (int bi = 0; bi < nb && !rc; bi++) {
    int B = batches[bi];
    if (be->prepare(ctx, B, maxT) != 0) {
      rc = 1;
      break;
    }
    for (int ti = 0; ti < nt && !rc; ti++) {
      int T = threads[ti];
      pthread_barrier_t bar;
      pthread_barrier_init(&bar, NULL, (unsigned)T + 1);
      pthread_t th[CL_MAX_THREADS];
      for (int i = 0; i < T; i++) {
        cl[i].be = be;
        cl[i].ctx = ctx;
        cl[i].id = i;
        cl[i].start = &bar;
        cl[i].n_lat = 0;
        cl[i].failed = 0;
        cl[i].stop = 1e300;
        cl[i].warmup = 5 + (2 * be->groups + T - 1) / T;
        cl[i].warm_until = bi == 0 && ti == 0 ? cl_now() + warm : 0;
        cl[i].keep_at = getenv("LAT_DUMP") != NULL;
        cl[i].dump = NULL;
        if (i == 0 && ti == 0 && getenv("OUTPUT_DUMP")) {
          static char path[4096];
          snprintf(path, sizeof path, "%s.%d", getenv("OUTPUT_DUMP"), B);
          cl[i].dump = path;
        }
        pthread_create(&th[i], NULL, cl_client_main, &cl[i]);
      }
      /* Everyone has warmed up when the barrier opens; the window starts then. */
      pthread_barrier_wait(&bar);
      double t0 = cl_now();
      double e0 = cl_epoch();
      double cpu0 = cl_cpu();
      double end = t0 + dur;
      for (int i = 0; i < T; i++) __atomic_store(&cl[i].stop, &end, __ATOMIC_RELEASE);
      long total = 0;
      for (int i = 0; i < T; i++) {
        pthread_join(th[i], NULL);
        total += cl[i].n_lat;
        if (cl[i].failed) rc = 1;
      }
      double wall = cl_now() - t0;
      double cpu = cl_cpu() - cpu0;
      pthread_barrier_destroy(&bar);
      double* all = malloc((size_t)(total ? total : 1) * sizeof(double));
      long k = 0;
      for (int i = 0; i < T; i++) {
        memcpy(all + k, cl[i].lat, (size_t)cl[i].n_lat * sizeof(double));
        k += cl[i].n_lat;
      }
      qsort(all, (size_t)total, sizeof(double), cl_cmp);
      printf("{\"batch\": %d, \"threads\": %d, \"qps\": %.1f, \"samples_per_s\": %.1f, \"p50_ms\": %.4f, "
             "\"p99_ms\": %.4f, \"requests\": %ld, \"cpu_us_per_request\": %.1f, \"t0\": %.3f, \"t1\": %.3f}\n",
             B, T, total / wall, total * (double)B / wall, total ? all[total / 2] * 1e3 : 0,
             total ? all[(long)(0.99 * (double)(total - 1))] * 1e3 : 0, total, total ? cpu * 1e6 / (double)total : 0,
             e0, e0 + wall);
      fflush(stdout);
      free(all);
      if (getenv("LAT_DUMP")) {
        char path[4096];
        snprintf(path, sizeof path, "%s.%d.%d", getenv("LAT_DUMP"), B, T);
        FILE* f = fopen(path, "w");
        if (!f) {
          fprintf(stderr, "closedloop: LAT_DUMP: cannot write %s\n", path);
        } else {
          fprintf(f, "# client, start (s after %.9f, CLOCK_MONOTONIC), latency (s); client tids:", t0);
          for (int i = 0; i < T; i++) fprintf(f, " %ld", cl[i].tid);
          fprintf(f, "\n");
          for (int i = 0; i < T; i++)
            for (long j = 0; j < cl[i].n_lat; j++)
              fprintf(f, "%d %.9f %.9f\n", i, cl[i].at[j] - t0, cl[i].lat[j]);
          fclose(f);
        }
      }
    }
    be->release(ctx, B, maxT);
  }
  for (int i = 0; i < maxT; i++) {
    free(cl[i].lat);
    free(cl[i].at);
  }
  free(cl);
  return rc;
}

#endif
