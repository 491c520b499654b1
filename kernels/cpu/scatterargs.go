package cpu

import (
	"mstream/kernels"
	"mstream/status"
	"mstream/tensor"
)

// ScatterNdArgs checks ScatterNd's inputs as TF does, for the CPU kernel
// and the GPU kernel (kernels/cuda) alike: every check but the indices'
// range, which needs their values (the GPU keeps them on the device and,
// as TF's GPU kernel, skips an out-of-range index instead). shape is a
// host tensor on every device. It returns the output shape, the index
// depth k (indices.shape[-1]), the number of update slices and the
// elements per slice.
func ScatterNdArgs(ctx *kernels.Context) (shape tensor.Shape, k, slices, sliceSize int64, err error) {
	it, upd := ctx.Input(0), ctx.Input(1)
	dims, err := hostInts(ctx, 2, "shape")
	if err != nil {
		return nil, 0, 0, 0, err
	}
	if len(ctx.Input(2).Shape) != 1 {
		return nil, 0, 0, 0, ctx.Errorf(status.InvalidArgument, "Shape must be a vector, got %v", ctx.Input(2).Shape)
	}
	shape = tensor.Shape(dims)
	if err := shape.Validate(); err != nil {
		return nil, 0, 0, 0, ctx.Errorf(status.InvalidArgument, "shape: %v", err)
	}
	if len(it.Shape) < 1 {
		return nil, 0, 0, 0, ctx.Errorf(status.InvalidArgument, "Indices shape must have rank at least one. Found:%v", it.Shape)
	}
	k = it.Shape[len(it.Shape)-1]
	if k > int64(len(shape)) {
		return nil, 0, 0, 0, ctx.Errorf(status.InvalidArgument, "Dimensions [0,%d) of indices[shape=%v] = %d must match dimensions [0,%d) of updates[shape=%v]", len(it.Shape)-1, it.Shape, k, len(it.Shape)-1, upd.Shape)
	}
	lead := it.Shape[:len(it.Shape)-1]
	want := append(lead.Clone(), shape[k:]...)
	if !upd.Shape.Equal(want) {
		return nil, 0, 0, 0, ctx.Errorf(status.InvalidArgument, "updates must have shape indices.shape[:-1] + shape[indices.shape[-1]:] = %v, got %v (indices %v, shape %v)", want, upd.Shape, it.Shape, shape)
	}
	if shape.NumElements() == 0 && upd.NumElements() > 0 {
		return nil, 0, 0, 0, ctx.Errorf(status.InvalidArgument, "Indices and updates specified for empty output shape")
	}
	return shape, k, lead.NumElements(), tensor.Shape(shape[k:]).NumElements(), nil
}
