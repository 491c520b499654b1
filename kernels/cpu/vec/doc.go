// Package vec holds the vectorised float32 loops of the CPU kernels,
// written in C (vec_impl.h) because Go does not vectorise: elementwise
// unary and binary maps (the same-shape and scalar-broadcast cases), row
// and column reductions, row softmax, row layer normalisation, the GEMV of
// a one-row GEMM, the per-channel affine + activation epilogue of the
// fused kernels (ChannelAffine, in place, a block of rows per call), and a
// GEMM against a B packed once (PackB, GemmPacked: panels of 32 columns,
// tiles of up to 8 rows held in registers over the whole k, the rows in
// blocks whose A stays in L2 while the block runs over every panel, bias
// and activation applied as a tile is stored, Relu and the exact GELU in
// registers (the tile compiled once for each); one row
// streams four panels at once, each element summed in the same order as
// in a tile; a B of at most 16 columns, a model's head, is packed as its
// transpose and each element is a dot of rows, four rows by four columns
// at a time, with GemmNT's bits), A B^T of
// small matrices by dot products of rows (GemmNT), and a gather
// of whole rows that prefetches the rows ahead of its copy (GatherRows:
// embedding lookups in tables far larger than the caches).
//
// Attention (attention.c, AVX-512 only: its callers otherwise take Gemm
// and Softmax) is one (batch, head) of attention, softmax(scale q k^T) v,
// in one pass with each block of query rows' scores in registers.
//
// vec.c compiles the loops three times on x86-64: for the baseline the cgo
// flags give (-march=x86-64-v2, SSE4.2), for AVX2+FMA and for AVX-512, and
// picks one at run time from CPUID, so a binary built here runs on any
// x86-64-v2 machine. GemmPacked has an AVX-512 build only and reports
// false elsewhere (its callers then take OpenBLAS). Other architectures
// get the plain C loops.
//
// Accuracy: add, sub, mul, div, sqrt, min/max, floor/ceil/round are exact
// IEEE results; exp, expm1, log, tanh, sigmoid, erf (and what is built on
// them: elu, selu, gelu, softmax) use their own polynomials with errors of
// a few ulp, tested against float64 math in vec_test.go over the whole
// float range and at NaN, +-Inf, +-0 and subnormals. Sums accumulate in
// float64 in sixteen independent lanes, so their rounding differs from a
// sequential sum but not their accuracy; Attention's products and its
// softmax's sum are float32 FMA chains (a row of scores and of context
// within 1e-5 of float64 math in attention_test.go).
//
// Invariants: every function reads and writes only the lengths it is
// given (checked on the Go side before the call); inputs and outputs may
// be the same slice for the elementwise maps, never for Softmax. Nothing
// here keeps a pointer after returning. The compute functions are called
// through ccall (directly, keeping the thread's P): calls.h holds each
// one's argument struct and the thunk that unpacks it, and each keeps
// ccall's invariants (it only computes).
package vec
