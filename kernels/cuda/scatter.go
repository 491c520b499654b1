package cuda

import (
	cu "mstream/device/cuda"
	"mstream/kernels/cpu"
	"mstream/status"
	"mstream/tensor"
)

// ScatterNd on the GPU (src/scatter.cu) for the dtypes TF 2.15 has a GPU
// kernel for: every numeric dtype but int32, which TF runs on the host
// (its int32 kernel is the CPU's with HostMemory inputs and output), as
// placement does here. The shapes are checked by cpu.ScatterNdArgs, the
// CPU kernel's own checks; the indices stay on the device, so, as TF's
// GPU kernel, an out-of-range index skips its slice where the CPU kernel
// fails (TestScatterNdOutOfRange).

func init() {
	types := []tensor.DType{tensor.Float, tensor.Double, tensor.Half, tensor.Bfloat16, tensor.Int8, tensor.Int16,
		tensor.Int64, tensor.Uint8, tensor.Uint16, tensor.Uint32, tensor.Uint64}
	reg("ScatterNd", "T", types, []string{"shape"}, fn(scatterNd))
	reg("UnsortedSegmentSum", "T", []tensor.DType{tensor.Float, tensor.Double, tensor.Half, tensor.Bfloat16, tensor.Int32, tensor.Int64},
		[]string{"num_segments"}, fn(unsortedSegmentSum))
}

// unsortedSegmentSum is UnsortedSegmentSum (src/scatter.cu): the CPU
// kernel's checks but the ids' values (they stay on the device: an id out
// of range drops its row, as in TF's GPU kernel), a sum in double (u64
// for the integers) stored once in the dtype.
func unsortedSegmentSum(k kctx) error {
	data, ids := k.Input(0), k.Input(1)
	_, inner, shape, err := cpu.UnsortedSegmentSumArgs(k.Context)
	if err != nil {
		return err
	}
	is, err := indexSuffix(k, ids)
	if err != nil {
		return err
	}
	o, err := k.Allocate(0, shape)
	if err != nil {
		return err
	}
	total := o.NumElements()
	if total == 0 {
		return nil
	}
	adt := tensor.Double
	if data.DType == tensor.Int32 || data.DType == tensor.Int64 {
		adt = tensor.Uint64
	}
	acc, err := k.Alloc(adt, shape)
	if err != nil {
		return k.Errorf(status.CodeOf(err), "scratch for %v%v: %v", adt, shape, err)
	}
	if err := k.memset(ptr(acc), 0, int(total)*8); err != nil {
		return err
	}
	if n := data.NumElements(); n > 0 && inner > 0 {
		var a cu.Args
		a.Ptr(ptr(acc)).Ptr(ptr(ids)).Ptr(ptr(data)).I64(n).I64(inner).I64(shape[0])
		if err := k.launchN(scatters, "segment_sum_"+suffix(o.DType)+"_"+is, n, &a); err != nil {
			return err
		}
	}
	var a cu.Args
	a.Ptr(ptr(o)).Ptr(ptr(acc)).I64(total)
	return k.launchN(scatters, "segment_store_"+suffix(o.DType), total, &a)
}

// scatterAcc is the scratch dtype of the dtypes without an atomic add.
var scatterAcc = map[tensor.DType]tensor.DType{tensor.Half: tensor.Float, tensor.Bfloat16: tensor.Float,
	tensor.Int8: tensor.Uint32, tensor.Uint8: tensor.Uint32, tensor.Int16: tensor.Uint32, tensor.Uint16: tensor.Uint32}

func scatterNd(k kctx) error {
	shape, depth, slices, slice, err := cpu.ScatterNdArgs(k.Context)
	if err != nil {
		return err
	}
	it, upd := k.Input(0), k.Input(1)
	o, err := k.Allocate(0, shape)
	if err != nil {
		return err
	}
	total := o.NumElements()
	if total == 0 {
		return nil
	}
	if depth > 8 {
		return k.Errorf(status.Unimplemented, "indices.shape[-1] = %d: the GPU kernel takes at most 8", depth)
	}
	acc := o
	if adt, ok := scatterAcc[o.DType]; ok {
		if acc, err = k.Alloc(adt, shape); err != nil {
			return k.Errorf(status.CodeOf(err), "scratch for %v%v: %v", adt, shape, err)
		}
	}
	if err := k.memset(ptr(acc), 0, int(total)*acc.DType.Size()); err != nil {
		return err
	}
	if n := slices * slice; n > 0 {
		meta := make([]int64, 1+2*8)
		meta[0] = depth
		st := int64(1)
		for j := len(shape) - 1; j >= 0; j-- {
			if j < int(depth) {
				meta[1+j], meta[9+j] = shape[j], st
			}
			st *= shape[j]
		}
		var a cu.Args
		a.Ptr(ptr(acc)).Ptr(ptr(it)).Ptr(ptr(upd)).I64(n).I64(slice).I64s(meta...)
		if err := k.launchN(scatters, "scatter_nd_"+suffix(o.DType)+"_"+suffix(it.DType), n, &a); err != nil {
			return err
		}
	}
	if acc == o {
		return nil
	}
	var a cu.Args
	a.Ptr(ptr(o)).Ptr(ptr(acc)).I64(total)
	return k.launchN(scatters, "scatter_store_"+suffix(o.DType), total, &a)
}
