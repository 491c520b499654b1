/* loadgen_ov: bench/gpu/loadgen.c's closed-loop load (closedloop.h) on
 * OpenVINO's C API (libopenvino_c and the headers its wheel ships), so
 * that OpenVINO is measured through the same client as mstream and TF
 * (bench/cpu/vs_tf.sh).
 *
 *   loadgen_ov MODEL.xml BATCHES THREADS DUR INTRA [INPUTS]
 *
 * MODEL is bench/cpu/peers.py's IR of a GraphDef (OpenVINO's TensorFlow
 * frontend, weights f32). As peers.py's Python side: compiled for each batch
 * size with static shapes (OpenVINO's fast path) on the CPU with
 * INFERENCE_NUM_THREADS = INTRA, the LATENCY hint (one stream, which the
 * requests of all client threads share, as TF's pools are shared) and
 * INFERENCE_PRECISION_HINT = f32 (its default on an AVX-512 or AMX CPU is
 * bf16, which moves outputs by up to 1%); one infer request per client
 * thread. OpenVINO has no switch for its graph optimizations. INPUTS, a
 * comma list of the GraphDef's Placeholder names in loadgen's feed order,
 * maps them onto the model's inputs (named "x" or "x:0"); without it the
 * model's order is used. OUTPUT_DUMP writes output 0. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../gpu/closedloop.h"
#include "openvino/c/openvino.h"

#define MAX_INPUTS 8

static void check(const char* what, ov_status_e st) {
  if (st != OK) {
    fprintf(stderr, "loadgen_ov: %s: %s: %s\n", what, ov_get_error_info(st), ov_get_last_err_msg());
    exit(1);
  }
}

typedef struct {
  ov_core_t* core;
  const char* xml;
  const char* intra;
  int n_in;
  size_t port[MAX_INPUTS]; /* the model's input index of loadgen's k-th input */
  ov_element_type_e type[MAX_INPUTS];
  int64_t dims[MAX_INPUTS][8]; /* -1: the batch */
  int64_t nd[MAX_INPUTS];
  ov_compiled_model_t* compiled; /* for the current batch */
  ov_infer_request_t** req;      /* per client */
  ov_tensor_t* (*feeds)[MAX_INPUTS];
  void* (*data)[MAX_INPUTS];
} Model;

static ClType cl_type(ov_element_type_e t, size_t* size) {
  switch (t) {
    case F32: *size = 4; return CL_F32;
    case I32: *size = 4; return CL_I32;
    case I64: *size = 8; return CL_I64;
    default: fprintf(stderr, "loadgen_ov: input element type %d not supported\n", (int)t); exit(1);
  }
}

static int prepare(void* ctx, int batch, int clients) {
  Model* m = ctx;
  ov_model_t* model;
  check("read model", ov_core_read_model(m->core, m->xml, NULL, &model));
  ov_partial_shape_t shapes[MAX_INPUTS];
  int64_t dims[MAX_INPUTS][8];
  for (int k = 0; k < m->n_in; k++) {
    for (int64_t d = 0; d < m->nd[k]; d++) dims[k][d] = m->dims[k][d] < 0 ? batch : m->dims[k][d];
    check("shape", ov_partial_shape_create_static(m->nd[k], dims[k], &shapes[k]));
  }
  check("reshape", ov_model_reshape_by_port_indexes(model, m->port, shapes, (size_t)m->n_in));
  for (int k = 0; k < m->n_in; k++) ov_partial_shape_free(&shapes[k]);
  ov_property_t props[] = {
      {ov_property_key_inference_num_threads, m->intra},
      {ov_property_key_hint_performance_mode, "LATENCY"},
      {ov_property_key_hint_inference_precision, "f32"},
  };
  check("compile", ov_core_compile_model_props(m->core, model, "CPU", 3, props, &m->compiled));
  ov_model_free(model);
  for (int i = 0; i < clients; i++) {
    check("infer request", ov_compiled_model_create_infer_request(m->compiled, &m->req[i]));
    unsigned seed = cl_seed(i, batch);
    for (int k = 0; k < m->n_in; k++) {
      int64_t n = 1;
      for (int64_t d = 0; d < m->nd[k]; d++) n *= dims[k][d];
      size_t esize;
      ClType t = cl_type(m->type[k], &esize);
      m->data[i][k] = malloc((size_t)n * esize + 1);
      cl_fill(t, m->data[i][k], n, &seed);
      ov_shape_t shape;
      check("tensor shape", ov_shape_create(m->nd[k], dims[k], &shape));
      check("input tensor", ov_tensor_create_from_host_ptr(m->type[k], shape, m->data[i][k], &m->feeds[i][k]));
      ov_shape_free(&shape);
      check("set input", ov_infer_request_set_input_tensor_by_index(m->req[i], m->port[k], m->feeds[i][k]));
    }
  }
  return 0;
}

static void release(void* ctx, int batch, int clients) {
  Model* m = ctx;
  (void)batch;
  for (int i = 0; i < clients; i++) {
    ov_infer_request_free(m->req[i]);
    for (int k = 0; k < m->n_in; k++) {
      ov_tensor_free(m->feeds[i][k]);
      free(m->data[i][k]);
    }
  }
  ov_compiled_model_free(m->compiled);
}

static int request(void* ctx, int client, const char* dump) {
  Model* m = ctx;
  ov_status_e st = ov_infer_request_infer(m->req[client]);
  if (st != OK) {
    fprintf(stderr, "loadgen_ov: infer: %s: %s\n", ov_get_error_info(st), ov_get_last_err_msg());
    return -1;
  }
  if (dump) {
    ov_tensor_t* t;
    void* p;
    size_t n;
    check("output", ov_infer_request_get_output_tensor_by_index(m->req[client], 0, &t));
    check("output data", ov_tensor_data(t, &p));
    check("output size", ov_tensor_get_byte_size(t, &n));
    cl_dump(dump, p, n);
    ov_tensor_free(t);
  }
  return 0;
}

/* same_name: the model's input name got ("x" or "x:0") is want ("x"). */
static int same_name(const char* got, const char* want, size_t len) {
  return strncmp(got, want, len) == 0 && (got[len] == '\0' || strcmp(got + len, ":0") == 0);
}

int main(int argc, char** argv) {
  if (argc < 6) {
    fprintf(stderr, "usage: loadgen_ov MODEL.xml BATCHES THREADS DUR INTRA [INPUTS]\n");
    return 2;
  }
  Model m = {.xml = argv[1], .intra = argv[5]};
  check("core", ov_core_create(&m.core));
  ov_model_t* model;
  check("read model", ov_core_read_model(m.core, m.xml, NULL, &model));
  size_t n;
  check("inputs", ov_model_inputs_size(model, &n));
  if (n == 0 || n > MAX_INPUTS) {
    fprintf(stderr, "loadgen_ov: %zu inputs (1..%d supported)\n", n, MAX_INPUTS);
    return 1;
  }
  m.n_in = (int)n;
  char* names[MAX_INPUTS];
  for (size_t i = 0; i < n; i++) {
    ov_output_const_port_t* p;
    check("input", ov_model_const_input_by_index(model, i, &p));
    check("input name", ov_port_get_any_name(p, &names[i]));
    ov_output_const_port_free(p);
  }
  for (int k = 0; k < m.n_in; k++) m.port[k] = (size_t)k;
  if (argc > 6) {
    const char* s = argv[6];
    for (int k = 0; k < m.n_in; k++) {
      const char* c = strchr(s, ',');
      size_t len = c ? (size_t)(c - s) : strlen(s);
      int j = 0;
      while (j < m.n_in && !same_name(names[j], s, len)) j++;
      if (len == 0 || j == m.n_in) {
        fprintf(stderr, "loadgen_ov: the model has no input %.*s\n", (int)len, s);
        return 1;
      }
      m.port[k] = (size_t)j;
      s = c ? c + 1 : s + len;
    }
  }
  for (int k = 0; k < m.n_in; k++) {
    ov_output_const_port_t* p;
    ov_partial_shape_t ps;
    check("input", ov_model_const_input_by_index(model, m.port[k], &p));
    check("input type", ov_port_get_element_type(p, &m.type[k]));
    check("input shape", ov_port_get_partial_shape(p, &ps));
    m.nd[k] = ps.rank.max;
    if (ps.rank.min != ps.rank.max || m.nd[k] > 8) {
      fprintf(stderr, "loadgen_ov: input %s has rank %s\n", names[m.port[k]], ov_partial_shape_to_string(ps));
      return 1;
    }
    for (int64_t d = 0; d < m.nd[k]; d++) m.dims[k][d] = ps.dims[d].min == ps.dims[d].max ? ps.dims[d].max : -1;
    ov_partial_shape_free(&ps);
    ov_output_const_port_free(p);
  }
  for (int i = 0; i < m.n_in; i++) ov_free(names[i]);
  ov_model_free(model);
  m.req = calloc(CL_MAX_THREADS, sizeof *m.req);
  m.feeds = calloc(CL_MAX_THREADS, sizeof *m.feeds);
  m.data = calloc(CL_MAX_THREADS, sizeof *m.data);
  ClBackend be = {prepare, request, release, 1};
  int rc = cl_run(&be, &m, argv[2], argv[3], atof(argv[4]));
  free(m.req);
  free(m.feeds);
  free(m.data);
  ov_core_free(m.core);
  return rc;
}
