package cpu

import (
	"mstream/hostmem"
	"mstream/kernels"
	"mstream/status"
	"mstream/tensor"
)

// DenseBincount counts (or sums weights of) each value of a vector, or of
// each row of a matrix, into size bins; values at or past size are
// dropped, as in TF. Keras's CategoryEncoding and tf.math.bincount with
// minlength/axis=-1 write it.

func init() {
	reg("DenseBincount", []tensor.DType{tensor.Int32, tensor.Int64, tensor.Float, tensor.Double}, []string{"size"}, fn(denseBincount))
}

func denseBincount(ctx *kernels.Context) error {
	data, sizeT, w := ctx.Input(0), ctx.Input(1), ctx.Input(2)
	if len(data.Shape) > 2 {
		return ctx.Errorf(status.InvalidArgument, "Shape must be at most rank 2 but is rank %d", len(data.Shape))
	}
	if len(sizeT.Shape) != 0 {
		return ctx.Errorf(status.InvalidArgument, "Shape must be rank 0 but is rank %d", len(sizeT.Shape))
	}
	if !w.Shape.Equal(data.Shape) && w.NumElements() != 0 {
		return ctx.Errorf(status.InvalidArgument, "`weights` must be the same shape as `arr` or a length-0 `Tensor`, in which case it acts as all weights equal to 1. Received %v", w.Shape)
	}
	sz, err := sizeT.Int64s()
	if err != nil {
		return ctx.Errorf(status.InvalidArgument, "size: %v", err)
	}
	size := sz[0]
	if size < 0 {
		return ctx.Errorf(status.InvalidArgument, "size (%d) must be non-negative", size)
	}
	vals, err := data.Int64s()
	if err != nil {
		return ctx.Errorf(status.InvalidArgument, "arr: %v", err)
	}
	// TF checks the sign only of a vector (its matrix kernel writes
	// out of bounds); here a negative value is an error in both.
	for _, v := range vals {
		if v < 0 {
			return ctx.Errorf(status.InvalidArgument, "Input arr must be non-negative!")
		}
	}
	rows, cols := int64(1), int64(len(vals))
	outShape := tensor.Shape{size}
	if len(data.Shape) == 2 {
		rows, cols = data.Shape[0], data.Shape[1]
		outShape = tensor.Shape{rows, size}
	}
	out, err := ctx.Allocate(0, outShape)
	if err != nil {
		return err
	}
	binary := attrBool(ctx.Node, "binary_output")
	switch out.DType {
	case tensor.Int32:
		bincount(out.I32(), hostmem.View[int32](w.Buf), vals, rows, cols, size, binary)
	case tensor.Int64:
		bincount(out.I64(), hostmem.View[int64](w.Buf), vals, rows, cols, size, binary)
	case tensor.Float:
		bincount(out.F32(), hostmem.View[float32](w.Buf), vals, rows, cols, size, binary)
	case tensor.Double:
		bincount(out.F64(), hostmem.View[float64](w.Buf), vals, rows, cols, size, binary)
	}
	return nil
}

func bincount[T int32 | int64 | float32 | float64](out, w []T, vals []int64, rows, cols, size int64, binary bool) {
	clear(out)
	for r := range rows {
		bins := out[r*size : (r+1)*size]
		for j, v := range vals[r*cols : (r+1)*cols] {
			switch {
			case v >= size:
			case binary:
				bins[v] = 1
			case len(w) == 0:
				bins[v]++
			default:
				bins[v] += w[r*cols+int64(j)]
			}
		}
	}
}
