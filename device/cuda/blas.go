package cuda

/*
#include <stdlib.h>
#include "shim.h"
*/
import "C"

import (
	"fmt"
	"unsafe"

	"mstream/status"
)

// WorkspaceBytes is the device workspace each stream gives cuBLAS and
// cuBLASLt (32 MiB, what cuBLAS recommends for Hopper). It is allocated
// once per stream at the first GEMM, so GEMMs never allocate.
const WorkspaceBytes = 32 << 20

// cuBLASLt epilogues.
const (
	epilogueDefault  = 1
	epilogueBias     = 4
	epilogueReluBias = 6
)

// blasState is a stream's cuBLAS and cuBLASLt handles, workspace and
// cuBLASLt plans; guarded by Stream.mu. The plans are the stream's, not a
// package's: a plan's descriptor holds the bias pointer of its last run,
// which two streams must not rewrite under each other.
type blasState struct {
	h     C.cublasHandle_t
	lt    C.cublasLtHandle_t
	ws    C.CUdeviceptr
	plans *planCache[ltKey, *ltPlan]
}

type ltKey struct {
	dbl, tf32, ta, tb bool
	m, n, k           int
	epilogue          int
}

type ltPlan struct {
	p   *C.ms_lt_plan // C memory
	err error         // the heuristic found nothing: the caller falls back
}

func (s *Stream) blasLocked() (*blasState, error) {
	if s.blas != nil {
		return s.blas, nil
	}
	l := s.lib()
	b := &blasState{plans: newPlanCache[ltKey](maxLtPlans, func(p *ltPlan) { p.free(l) })}
	if err := s.check("cuMemAlloc_v2", C.ms_mem_alloc(l, s.ctx.c, &b.ws, WorkspaceBytes)); err != nil {
		return nil, status.Wrap(err, "cuBLAS workspace for stream %d", s.id)
	}
	if err := s.ctx.dev.lib.blasErr("cublasCreate_v2", C.ms_blas_create(l, s.ctx.c, &b.h, s.s, hostPtr(uint64(b.ws)), WorkspaceBytes), "on "+s.ctx.String()); err != nil {
		C.ms_mem_free(l, s.ctx.c, b.ws)
		return nil, err
	}
	if err := s.ctx.dev.lib.blasErr("cublasLtCreate", C.ms_lt_create(l, s.ctx.c, &b.lt), "on "+s.ctx.String()); err != nil {
		C.ms_blas_destroy(l, s.ctx.c, b.h)
		C.ms_mem_free(l, s.ctx.c, b.ws)
		return nil, err
	}
	s.blas = b
	return b, nil
}

func (s *Stream) closeBlasLocked() {
	b := s.blas
	if b == nil {
		return
	}
	l := s.lib()
	b.plans.clear()
	C.ms_lt_destroy(l, s.ctx.c, b.lt)
	C.ms_blas_destroy(l, s.ctx.c, b.h)
	C.ms_mem_free(l, s.ctx.c, b.ws)
	s.blas = nil
}

// GemmArgs describe a row-major product C[m,n] = op(A)[m,k] · op(B)[k,n],
// batch times, the i-th operands at A+i*StrideA elements and so on (a
// stride of 0 broadcasts one matrix to every batch).
type GemmArgs struct {
	Double         bool // float64; else float32
	TF32           bool // allow TF32 tensor cores for float32 (TF's default)
	TransA, TransB bool
	M, N, K        int
	A, B, C        uint64
	Batch          int
	StrideA        int64
	StrideB        int64
	StrideC        int64
}

// prepare checks g's dimensions against cuBLAS's int range, defaults
// Batch to 1, and gives the row-major leading dimensions of A and B; skip
// says the product is empty (nothing to launch).
func (g *GemmArgs) prepare() (lda, ldb int, skip bool, err error) {
	if g.Batch == 0 {
		g.Batch = 1
	}
	if g.M == 0 || g.N == 0 || g.Batch < 0 {
		return 0, 0, true, nil
	}
	for _, v := range []int{g.M, g.N, g.K, g.Batch} {
		if v > 1<<31-1 {
			return 0, 0, true, status.Errorf(status.InvalidArgument, "cuda: GEMM dimension %d exceeds cuBLAS's int range", v)
		}
	}
	lda, ldb = g.K, g.N
	if g.TransA {
		lda = g.M
	}
	if g.TransB {
		ldb = g.K
	}
	return lda, ldb, false, nil
}

// ltAligned says whether A, B and C meet the alignment cuBLASLt's
// heuristic assumes unless told otherwise (256 bytes: the
// MIN_ALIGNMENT preferences' default), as every bfc chunk and packed
// feed does; a view at another offset runs through cuBLAS instead.
func (g *GemmArgs) ltAligned() bool { return (g.A|g.B|g.C)%256 == 0 }

// Gemm runs the product through cuBLAS on the stream. cuBLAS is column
// major, so it computes Cᵀ = op(B)ᵀ·op(A)ᵀ, which has C's row-major layout.
func (s *Stream) Gemm(g GemmArgs) error {
	lda, ldb, skip, err := g.prepare()
	if skip || err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	b, err := s.blasLocked()
	if err != nil {
		return err
	}
	if g.Batch == 1 && g.K > 0 && g.ltAligned() {
		// One product: the stream's cached cuBLASLt plan, so the call is
		// the matmul alone, with the algorithm chosen once per shape
		// (cublasSgemm picks one on every call). A shape cuBLASLt cannot
		// plan runs through cuBLAS.
		if p := s.ltPlanLocked(b, g, epilogueDefault); p.err == nil {
			return s.ltRunLocked(b, p, g, 0)
		}
	}
	call := "cublasSgemm_v2"
	switch {
	case g.Double && g.Batch > 1:
		call = "cublasDgemmStridedBatched"
	case g.Double:
		call = "cublasDgemm_v2"
	case g.Batch > 1:
		call = "cublasSgemmStridedBatched"
	}
	r := C.ms_blas_gemm(s.lib(), s.ctx.c, b.h, cbool(g.Double), cbool(g.TF32), cbool(g.TransB), cbool(g.TransA),
		C.int(g.N), C.int(g.M), C.int(g.K), 1, C.CUdeviceptr(g.B), C.int(ldb), C.longlong(g.StrideB),
		C.CUdeviceptr(g.A), C.int(lda), C.longlong(g.StrideA), 0, C.CUdeviceptr(g.C), C.int(g.N),
		C.longlong(g.StrideC), C.int(g.Batch))
	if r == 0 {
		return nil // the detail below is formatted only for an error
	}
	return s.ctx.dev.lib.blasErr(call, r, fmt.Sprintf("(m=%d n=%d k=%d batch=%d)", g.M, g.N, g.K, g.Batch))
}

// GemmBias computes C[m,n] = op(A)·op(B) + bias[n], then ReLU when relu is
// set, in one cuBLASLt call with a bias (or bias+ReLU) epilogue. When
// cuBLASLt cannot plan the case (no algorithm, or an unsupported type or
// epilogue) the error has code UNIMPLEMENTED, is remembered for the shape,
// and the caller runs Gemm and a bias kernel instead. Batch must be 1.
func (s *Stream) GemmBias(g GemmArgs, bias uint64, relu bool) error {
	if g.Batch > 1 {
		return status.Errorf(status.Unimplemented, "cuda: batched GemmBias")
	}
	if g.M == 0 || g.N == 0 {
		return nil
	}
	if g.K == 0 {
		return status.Errorf(status.Unimplemented, "cuda: GemmBias with k=0")
	}
	if !g.ltAligned() {
		return status.Errorf(status.Unimplemented, "cuda: GemmBias with operands off cuBLASLt's 256-byte alignment")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	b, err := s.blasLocked()
	if err != nil {
		return err
	}
	ep := epilogueBias
	if relu {
		ep = epilogueReluBias
	}
	p := s.ltPlanLocked(b, g, ep)
	if p.err != nil {
		return p.err
	}
	return s.ltRunLocked(b, p, g, bias)
}

// ltPlanLocked returns the stream's cuBLASLt plan for g's shape and the
// epilogue, making it on first use: descriptors, layouts and the
// heuristic's algorithm. A shape cuBLASLt cannot plan gets a plan whose
// err (code UNIMPLEMENTED) is remembered, so it is asked once.
func (s *Stream) ltPlanLocked(b *blasState, g GemmArgs, ep int) *ltPlan {
	key := ltKey{g.Double, g.TF32 && !g.Double, g.TransA, g.TransB, g.M, g.N, g.K, ep}
	if p, ok := b.plans.get(key); ok {
		return p
	}
	l := s.lib()
	p := &ltPlan{p: (*C.ms_lt_plan)(C.calloc(1, C.sizeof_ms_lt_plan))}
	lda, ldb := g.K, g.N
	if g.TransA {
		lda = g.M
	}
	if g.TransB {
		ldb = g.K
	}
	var stage C.int
	// Column-major problem: D(n x m) = op(B)ᵀ op(A)ᵀ; bias runs along
	// D's rows, i.e. C's columns.
	r := C.ms_lt_plan_make(l, s.ctx.c, b.lt, p.p, cbool(g.Double), cbool(key.tf32), cbool(g.TransB), cbool(g.TransA),
		C.int(g.N), C.int(g.M), C.int(g.K), C.int(ldb), C.int(lda), C.int(g.N), C.int(ep), WorkspaceBytes, &stage)
	if r != 0 {
		calls := [...]string{"cuCtxSetCurrent", "cublasLtMatmulDescCreate", "cublasLtMatmulDescSetAttribute",
			"cublasLtMatrixLayoutCreate", "cublasLtMatmulPreferenceCreate", "cublasLtMatmulAlgoGetHeuristic",
			"cublasLtMatmulAlgoGetHeuristic (no algorithm)"}
		// Any failure to make a plan means "no cuBLASLt for this case":
		// the caller falls back, so the code is UNIMPLEMENTED whatever
		// cuBLASLt said (the message keeps its status).
		err := s.ctx.dev.lib.blasErr(calls[stage], r, fmt.Sprintf("(m=%d n=%d k=%d epilogue %d)", g.M, g.N, g.K, ep))
		p.err = &status.Error{Code: status.Unimplemented, Msg: err.Error(), Inner: err}
		C.free(unsafe.Pointer(p.p))
		p.p = nil
	}
	b.plans.put(key, p)
	return p
}

// ltRunLocked enqueues plan p's matmul for g's operands (and bias, 0 for
// none) on the stream.
func (s *Stream) ltRunLocked(b *blasState, p *ltPlan, g GemmArgs, bias uint64) error {
	var stage C.int
	r := C.ms_lt_run(s.lib(), s.ctx.c, b.lt, p.p, C.CUdeviceptr(g.B), C.CUdeviceptr(g.A), C.CUdeviceptr(g.C),
		C.CUdeviceptr(bias), hostPtr(uint64(b.ws)), WorkspaceBytes, s.s, &stage)
	call := "cublasLtMatmul"
	if stage == 7 {
		call = "cublasLtMatmulDescSetAttribute(BIAS_POINTER)"
	}
	if r == 0 {
		return nil // the detail below is formatted only for an error
	}
	return s.ctx.dev.lib.blasErr(call, r, fmt.Sprintf("(m=%d n=%d k=%d)", g.M, g.N, g.K))
}

// free releases the plan's descriptors (C memory); the caller holds the
// stream's lock, and no enqueue of the plan is in progress. Work already
// enqueued (or captured) keeps what it needs: cuBLASLt reads the
// descriptors during the call.
func (p *ltPlan) free(l *C.ms_lib) {
	if p.p != nil {
		C.ms_lt_plan_free(l, p.p)
		C.free(unsafe.Pointer(p.p))
		p.p = nil
	}
}

// GemmType is the operand type of GemmEx.
type GemmType int

// GemmEx operand types (their cudaDataType_t values).
const (
	GemmHalf     GemmType = 2  // CUDA_R_16F
	GemmBfloat16 GemmType = 14 // CUDA_R_16BF
)

// GemmEx is Gemm for half or bfloat16 operands and result
// (cublasGemmEx, cublasGemmStridedBatchedEx): products accumulate in
// float (CUBLAS_COMPUTE_32F, as TF computes its half and bfloat16
// MatMuls) and C is rounded to dt once. g.Double and g.TF32 are ignored.
// A cuBLAS without the Ex entry points gives UNIMPLEMENTED.
func (s *Stream) GemmEx(g GemmArgs, dt GemmType) error {
	if dt != GemmHalf && dt != GemmBfloat16 {
		return status.Errorf(status.InvalidArgument, "cuda: GemmEx of type %d", dt)
	}
	lda, ldb, skip, err := g.prepare()
	if skip || err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	b, err := s.blasLocked()
	if err != nil {
		return err
	}
	call := "cublasGemmEx"
	if g.Batch > 1 {
		call = "cublasGemmStridedBatchedEx"
	}
	// Column major, as Gemm: Cᵀ = op(B)ᵀ·op(A)ᵀ.
	r := C.ms_blas_gemm_ex(s.lib(), s.ctx.c, b.h, C.int(dt), cbool(g.TransB), cbool(g.TransA),
		C.int(g.N), C.int(g.M), C.int(g.K), C.CUdeviceptr(g.B), C.int(ldb), C.longlong(g.StrideB),
		C.CUdeviceptr(g.A), C.int(lda), C.longlong(g.StrideA), C.CUdeviceptr(g.C), C.int(g.N),
		C.longlong(g.StrideC), C.int(g.Batch))
	if r == 0 {
		return nil // the detail below is formatted only for an error
	}
	return s.ctx.dev.lib.blasErr(call, r, fmt.Sprintf("(m=%d n=%d k=%d batch=%d)", g.M, g.N, g.K, g.Batch))
}
