package cuda

import (
	cu "mstream/device/cuda"
	"mstream/kernels/cpu"
	"mstream/status"
	"mstream/tensor"
)

// ArgMax/ArgMin, LogSoftmax, the half and bfloat16 Softmax and the
// generic reductions' launch (src/reduce2.cu); reduce.go holds the
// reductions' front end.

func init() {
	for _, op := range []string{"ArgMax", "ArgMin"} {
		name := "argmax"
		if op == "ArgMin" {
			name = "argmin"
		}
		reg(op, "T", cat(realTypes, []tensor.DType{tensor.Bool}), []string{"dimension"}, fn(func(k kctx) error { return argReduce(k, name) }))
	}
	reg("LogSoftmax", "T", gpuFloats, nil, fn(func(k kctx) error { return softmaxRows(k, reductions2, "logsoftmax_") }))
	reg("Softmax", "T", []tensor.DType{tensor.Half, tensor.Bfloat16}, nil, fn(func(k kctx) error { return softmaxRows(k, reductions2, "softmax2_") }))
}

// genLaunch runs r<name>_{w,t}_<dtype> over the kept and reduced runs.
func genLaunch(k kctx, o, in *tensor.Tensor, dims []cpu.ReducedRun, count int64, name string) error {
	meta, err := genMeta(k, dims, count)
	if err != nil {
		return err
	}
	nout := o.NumElements()
	var args cu.Args
	args.Ptr(ptr(o)).Ptr(ptr(in)).I64(nout).I64(count).I64s(meta...)
	suf := suffix(in.DType)
	// The innermost dim reduced: a warp per output reads along it.
	if len(dims) > 0 && dims[len(dims)-1].Reduced && count >= 32 {
		if blocks := (nout + 7) / 8; blocks <= 1<<31-1 {
			return k.launch(reductions2, "r"+name+"_w_"+suf, int(blocks), threads, 0, &args)
		}
	}
	return k.launchN(reductions2, "r"+name+"_t_"+suf, nout, &args)
}

func argReduce(k kctx, name string) error {
	in := k.Input(0)
	outer, n, inner, out, err := cpu.ArgReduceArgs(k.Context)
	if err != nil {
		return err
	}
	ot := k.Node.OutTypes[0]
	if ot != tensor.Int32 && ot != tensor.Int64 && ot != tensor.Int16 && ot != tensor.Uint16 {
		return k.Errorf(status.InvalidArgument, "output_type %v is not supported", ot)
	}
	o, err := k.Allocate(0, out)
	if err != nil {
		return err
	}
	nout := o.NumElements()
	if nout == 0 {
		return nil
	}
	suf := suffix(in.DType) + "_" + suffix(ot)
	var args cu.Args
	args.Ptr(ptr(o)).Ptr(ptr(in)).I64(outer).I64(n)
	if inner == 1 && n >= 32 {
		if blocks := (outer + 7) / 8; blocks <= 1<<31-1 {
			return k.launch(reductions2, name+"_w_"+suf, int(blocks), threads, 0, &args)
		}
	}
	args.I64(inner)
	return k.launchN(reductions2, name+"_t_"+suf, nout, &args)
}
