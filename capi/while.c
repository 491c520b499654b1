/* TF_NewWhile, TF_FinishWhile, TF_AbortWhile: the params' graphs and arrays
   are allocated here and freed by FreeWhileResources, as in TF; the loop
   itself is built by Go (while.go, graph.AddWhileLoop). */
#include "internal.h"
#include "_cgo_export.h"

static void free_while_resources(const TF_WhileParams* p) {
  TF_DeleteGraph(p->cond_graph);
  TF_DeleteGraph(p->body_graph);
  free((void*)p->cond_inputs);
  free((void*)p->body_inputs);
  free((void*)p->body_outputs);
}

static TF_WhileParams empty_while_params(void) {
  TF_WhileParams p = {0, NULL, NULL, {NULL, 0}, NULL, NULL, NULL, NULL};
  return p;
}

/* The caller keeps `inputs` alive until TF_FinishWhile, which reads it again
   (TF's contract). */
TF_WhileParams TF_NewWhile(TF_Graph* g, TF_Output* inputs, int ninputs,
                           TF_Status* status) {
  if (ninputs <= 0) {
    TF_SetStatus(status, TF_INVALID_ARGUMENT,
                 "TF_NewWhile() must be passed at least one input");
    return empty_while_params();
  }
  TF_Output* cond_inputs = calloc((size_t)ninputs, sizeof(TF_Output));
  TF_Output* body_inputs = calloc((size_t)ninputs, sizeof(TF_Output));
  TF_Output* body_outputs = calloc((size_t)ninputs, sizeof(TF_Output));
  if (!cond_inputs || !body_inputs || !body_outputs) abort();
  for (int i = 0; i < ninputs; i++) body_outputs[i].index = -1;
  TF_WhileParams p = {ninputs,      TF_NewGraph(), cond_inputs,
                      {NULL, -1},   TF_NewGraph(), body_inputs,
                      body_outputs, NULL};
  msNewWhile(g, inputs, ninputs, (TF_Graph*)p.cond_graph, (TF_Graph*)p.body_graph,
             cond_inputs, body_inputs, status);
  if (TF_GetCode(status) != TF_OK) {
    free_while_resources(&p);
    return empty_while_params();
  }
  return p;
}

void TF_FinishWhile(const TF_WhileParams* params, TF_Status* status,
                    TF_Output* outputs) {
  if (msFinishWhile((TF_WhileParams*)params, status, outputs))
    free_while_resources(params);
}

void TF_AbortWhile(const TF_WhileParams* params) {
  if (params) free_while_resources(params);
}
