/* The thunks of calls.h. */
#include "vec.h"
#include "calls.h"

void ms_unary_call(void *p) {
	ms_unary_args *a = p;
	ms_unary_f32(a->op, a->x, a->y, a->n);
}

void ms_channel_affine_call(void *p) {
	ms_channel_affine_args *a = p;
	ms_channel_affine_f32(a->x, a->rows, a->c, a->scale, a->offset, a->act);
}

void ms_binary_call(void *p) {
	ms_binary_args *a = p;
	ms_binary_f32(a->op, a->a, a->b, a->y, a->n, a->sa, a->sb);
}

void ms_binary_rows_call(void *p) {
	ms_binary_rows_args *a = p;
	ms_binary_rows_f32(a->op, a->a, a->b, a->y, a->rows, a->w, a->tiled_a);
}

void ms_rowreduce_call(void *p) {
	ms_rowreduce_args *a = p;
	ms_rowreduce_f32(a->op, a->x, a->rows, a->n, a->out, a->scale);
}

void ms_colsum_call(void *p) {
	ms_colsum_args *a = p;
	ms_colsum_f32(a->x, a->rows, a->cols, a->ld, a->acc);
}

void ms_colminmax_call(void *p) {
	ms_colminmax_args *a = p;
	ms_colminmax_f32(a->op, a->x, a->rows, a->cols, a->ld, a->acc);
}

void ms_argreduce_call(void *p) {
	ms_argreduce_args *a = p;
	ms_argreduce_f32(a->op, a->x, a->rows, a->n, a->out);
}

void ms_softmax_call(void *p) {
	ms_softmax_args *a = p;
	ms_softmax_f32(a->x, a->y, a->rows, a->n, a->log);
}

void ms_layernorm_call(void *p) {
	ms_layernorm_args *a = p;
	ms_layernorm_f32(a->x, a->res, a->y, a->rows, a->n, a->gamma, a->beta, a->c, a->eps);
}

void ms_gemv_call(void *p) {
	ms_gemv_args *a = p;
	ms_gemv_f32(a->x, a->k, a->b, a->ldb, a->n, a->alpha, a->beta, a->y);
}

void ms_gemm_call(void *p) {
	ms_gemm_args *a = p;
	a->ret = ms_gemm_f32(a->transb, a->m, a->n, a->k, a->a, a->lda, a->b, a->ldb, a->c, a->ldc);
}

void ms_gemm_nt_call(void *p) {
	ms_gemm_nt_args *a = p;
	a->ret = ms_gemm_nt_f32(a->m, a->n, a->k, a->a, a->lda, a->b, a->ldb, a->c, a->ldc, a->sym);
}

void ms_gemm_packed_call(void *p) {
	ms_gemm_packed_args *a = p;
	a->ret = ms_gemm_packed_f32(a->m, a->n, a->k, a->a, a->lda, a->bp, a->c, a->ldc, a->bias, a->accum, a->act,
		a->r0, a->r1, a->p0, a->p1);
}

void ms_gather_rows_call(void *p) {
	ms_gather_rows_args *a = p;
	ms_gather_rows(a->dst, a->src, a->idx64, a->idx32, a->n, a->row);
}

void ms_attention_call(void *p) {
	ms_attention_args *a = p;
	a->ret = ms_attention_f32(a->sq, a->sk, a->d, a->dv, a->q, a->ldq, a->k, a->ldk, a->v, a->ldv, a->out, a->ldo,
		a->scale, a->scale_q, a->scratch);
}
