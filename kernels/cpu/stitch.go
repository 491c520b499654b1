package cpu

import (
	"fmt"

	"mstream/graph"
	"mstream/kernels"
	"mstream/status"
	"mstream/tensor"
)

// DynamicStitch and DynamicPartition move rows (the trailing dimensions
// beyond the index tensor's) by an int32 index, for every dtype: fixed-size
// ones as bytes, strings as elements.

func init() {
	reg("DynamicStitch", nil, nil, fn(dynamicStitch))
	reg("DynamicPartition", nil, nil, func(n *graph.Node) (kernels.Kernel, error) {
		np := attrInt(n, "num_partitions", 0)
		return kernels.KernelFunc(func(ctx *kernels.Context) error { return dynamicPartition(ctx, np) }), nil
	})
}

func startsWith(s, prefix tensor.Shape) bool {
	return len(s) >= len(prefix) && s[:len(prefix)].Equal(prefix)
}

// copyRows copies rows [from, from+1) of src into row to of dst, rowLen
// elements per row.
func copyRow(dst *tensor.Tensor, to int64, src *tensor.Tensor, from, rowLen int64) {
	if dst.DType == tensor.String {
		copy(dst.Strs[to*rowLen:(to+1)*rowLen], src.Strs[from*rowLen:(from+1)*rowLen])
		return
	}
	sz := rowLen * int64(dst.DType.Size())
	copy(dst.Buf[to*sz:(to+1)*sz], src.Buf[from*sz:(from+1)*sz])
}

func dynamicStitch(ctx *kernels.Context) error {
	n := ctx.NumInputs() / 2
	idx, data := ctx.Inputs[:n], ctx.Inputs[n:]
	maxIndex := int32(-1)
	for _, t := range idx {
		for _, v := range t.I32() {
			maxIndex = max(maxIndex, v)
		}
	}
	rows := int64(maxIndex) + 1
	for _, t := range idx {
		for i, v := range t.I32() {
			if v < 0 || int64(v) >= rows {
				return ctx.Errorf(status.InvalidArgument, "indices[%d] is out of range", i)
			}
		}
	}
	for m := range idx {
		if !startsWith(data[m].Shape, idx[m].Shape) {
			return ctx.Errorf(status.InvalidArgument, "data[%d].shape = %v does not start with indices[%d].shape = %v", m, data[m].Shape, m, idx[m].Shape)
		}
		if m > 0 && !data[0].Shape[len(idx[0].Shape):].Equal(data[m].Shape[len(idx[m].Shape):]) {
			return ctx.Errorf(status.InvalidArgument, "Need data[0].shape[%d:] = data[%d].shape[%d:], got data[0].shape = %v, data[%d].shape = %v, indices[0].shape = %v, indices[%d].shape = %v",
				len(idx[0].Shape), m, len(idx[m].Shape), data[0].Shape, m, data[m].Shape, idx[0].Shape, m, idx[m].Shape)
		}
	}
	shape := append(tensor.Shape{rows}, data[0].Shape[len(idx[0].Shape):]...)
	out, err := ctx.Allocate(0, shape)
	if err != nil {
		return err
	}
	// Rows no index names are zero (TF leaves them unset).
	clear(out.Buf)
	rowLen := tensor.Shape(shape[1:]).NumElements()
	for m := range idx {
		for i, v := range idx[m].I32() {
			copyRow(out, int64(v), data[m], int64(i), rowLen)
		}
	}
	return nil
}

func dynamicPartition(ctx *kernels.Context, np int64) error {
	data, parts := ctx.Input(0), ctx.Input(1)
	if !startsWith(data.Shape, parts.Shape) {
		return ctx.Errorf(status.InvalidArgument, "data.shape must start with partitions.shape, got data.shape = %v, partitions.shape = %v", data.Shape, parts.Shape)
	}
	count := make([]int64, np)
	for i, p := range parts.I32() {
		if p < 0 || int64(p) >= np {
			return ctx.Errorf(status.InvalidArgument, "partitions%s = %d is not in [0, %d)", sliceDebug(parts.Shape, int64(i)), p, np)
		}
		count[p]++
	}
	rest := data.Shape[len(parts.Shape):]
	rowLen := rest.NumElements()
	outs := make([]*tensor.Tensor, np)
	for p := range outs {
		o, err := ctx.Allocate(p, append(tensor.Shape{count[p]}, rest...))
		if err != nil {
			return err
		}
		outs[p] = o
	}
	next := make([]int64, np)
	for i, p := range parts.I32() {
		copyRow(outs[p], next[p], data, int64(i), rowLen)
		next[p]++
	}
	return nil
}

// sliceDebug is TF's SliceDebugString: the coordinates of flat index i
// of a tensor of shape s, "" for a scalar.
func sliceDebug(s tensor.Shape, i int64) string {
	switch len(s) {
	case 0:
		return ""
	case 1:
		return fmt.Sprintf("[%d]", i)
	}
	st := strides(s)
	out := "["
	for d := range s {
		if d > 0 {
			out += ","
		}
		out += fmt.Sprint(i / st[d])
		i %= st[d]
	}
	return out + "]"
}
