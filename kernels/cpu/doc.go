// Package cpu holds the host kernels and registers them in init.
//
// Conventions: kernels never write into inputs; shape-like inputs (shapes,
// axes, dims) are host tensors read with Tensor.Int64s; half and bfloat16
// are computed in float32; every bad shape or value is an INVALID_ARGUMENT
// from ctx.Errorf, which names the node. Loops over large tensors split over
// ctx.For (serial when the context has no pool).
package cpu
