// Package cpu holds the host kernels and registers them in init.
//
// Conventions: kernels never write into inputs (Identity, Reshape,
// ExpandDims, Squeeze forward or re-view the input buffer instead);
// shape-like inputs (shapes, axes, dims, begin/end/strides) are host tensors
// read with Tensor.Int64s; half and bfloat16 are computed in float32; every
// bad shape or value is an INVALID_ARGUMENT from ctx.Errorf, which names the
// node. Elementwise and reduction loops split over ctx.For (serial when the
// context has no pool); the loops are generic over element types with the op
// switch outside the loop, so there is no per-element indirect call.
//
// Binary ops share one broadcasting helper (broadcastShapes, forRows) with
// fast paths for equal shapes and a scalar on either side; BiasAdd is a
// broadcast add of the bias viewed as [C, 1, ...].
//
// Elementwise ops beyond the arithmetic of binary.go live in
// elementwise_unary.go (math, activations, predicates, *Like),
// elementwise_binary.go (Pow, the division family with TF's integer
// semantics and errors), compare.go (comparisons, logical ops),
// elementwise_select.go (Select, SelectV2, ClipByValue, AddN) and
// activation.go (LogSoftmax); reductions (Sum, Mean, Prod, Max, Min, All,
// Any, ArgMax, ArgMin) in reduce2.go. Float32 inputs of the hot ones take
// the vectorised C loops of package vec through fastpath.go.
//
// GEMM (MatMul, BatchMatMulV2/V3) goes through package blas: OpenBLAS when it
// can be loaded, a blocked pure-Go GEMM otherwise. A GEMM is never split over
// the intra-op pool: OpenBLAS parallelises large products with its own
// threads, so the two pools do not nest.
//
// Not yet honoured: Cast's Truncate attr (conversions round to nearest, as
// TF does with Truncate=false); BatchMatMulV3 with mixed input dtypes
// (rejected as UNIMPLEMENTED at kernel construction).
package cpu
