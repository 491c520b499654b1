package cuda

import (
	cu "mstream/device/cuda"
	"mstream/graph"
	"mstream/kernels"
	"mstream/status"
	"mstream/tensor"
)

// Reductions for every dtype, ArgMax/ArgMin, LogSoftmax and the half and
// bfloat16 Softmax (src/reduce2.cu).

func init() {
	for _, r := range []struct {
		op, name string
		types    []tensor.DType
	}{
		{"Sum", "sum", minus(realTypes, numTypes)}, {"Mean", "mean", minus(realTypes, numTypes)},
		{"Prod", "prod", realTypes}, {"Max", "max", realTypes}, {"Min", "min", realTypes},
		{"All", "all", nil}, {"Any", "any", nil},
	} {
		name := r.name
		f := func(n *graph.Node) (kernels.Kernel, error) {
			keep := false
			if a := n.Attrs["keep_dims"]; a != nil {
				keep = a.GetB()
			}
			return fn(func(k kctx) error { return reduceGen(k, name, keep) })(n)
		}
		if r.types == nil {
			kernels.Register(kernels.Def{Op: r.op, Device: kernels.GPU, HostMemory: []string{"reduction_indices"}, Factory: f})
			continue
		}
		reg(r.op, "T", r.types, []string{"reduction_indices"}, f)
	}
	for _, op := range []string{"ArgMax", "ArgMin"} {
		name := "argmax"
		if op == "ArgMin" {
			name = "argmin"
		}
		reg(op, "T", cat(realTypes, []tensor.DType{tensor.Bool}), []string{"dimension"}, fn(func(k kctx) error { return argReduce(k, name) }))
	}
	reg("LogSoftmax", "T", gpuFloats, nil, fn(func(k kctx) error { return softmaxRows(k, "logsoftmax_") }))
	reg("Softmax", "T", []tensor.DType{tensor.Half, tensor.Bfloat16}, nil, fn(func(k kctx) error { return softmaxRows(k, "softmax2_") }))
}

// reduceGen validates the axes as TF's ReductionHelper does and launches
// r<name>_{w,t}_<dtype> over the kept and reduced dims after dropping
// size-1 dims and merging neighbours of one kind.
func reduceGen(k kctx, name string, keep bool) error {
	in := k.Input(0)
	axes, err := k.Input(1).Int64s()
	if err != nil {
		return k.Errorf(status.InvalidArgument, "reduction_indices: %v", err)
	}
	r := len(in.Shape)
	red := make([]bool, r)
	for _, a := range axes {
		if a < -int64(r) || a >= int64(r) {
			return k.Errorf(status.InvalidArgument, "Invalid reduction dimension (%d for input with %d dimension(s)", a, r)
		}
		if a < 0 {
			a += int64(r)
		}
		if red[a] {
			return k.Errorf(status.InvalidArgument, "Invalid reduction arguments: Axes contains duplicate dimension: %d", a)
		}
		red[a] = true
	}
	var out tensor.Shape
	count := int64(1)
	for i, d := range in.Shape {
		if red[i] {
			count *= d
			if keep {
				out = append(out, 1)
			}
		} else {
			out = append(out, d)
		}
	}
	o, err := k.Allocate(0, out)
	if err != nil {
		return err
	}
	nout := o.NumElements()
	if nout == 0 {
		return nil
	}
	var dims []redDim
	for i, d := range in.Shape {
		if d == 1 {
			continue
		}
		if n := len(dims); n > 0 && dims[n-1].reduced == red[i] {
			dims[n-1].size *= d
			continue
		}
		dims = append(dims, redDim{d, red[i]})
	}
	st := make([]int64, len(dims))
	p := int64(1)
	for i := len(dims) - 1; i >= 0; i-- {
		st[i] = p
		p *= dims[i].size
	}
	var kd, ks, rd, rs []int64
	for i, d := range dims {
		if d.reduced {
			rd, rs = append(rd, d.size), append(rs, st[i])
		} else {
			kd, ks = append(kd, d.size), append(ks, st[i])
		}
	}
	if count == 0 {
		rd, rs = nil, nil
	}
	if len(kd) > 8 || len(rd) > 8 {
		return k.Errorf(status.Unimplemented, "reduction with %d kept and %d reduced dims after merging (at most 8 each)", len(kd), len(rd))
	}
	meta := make([]int64, 2+4*8)
	meta[0] = int64(len(kd))
	copy(meta[1:9], kd)
	copy(meta[9:17], ks)
	meta[17] = int64(len(rd))
	copy(meta[18:26], rd)
	copy(meta[26:34], rs)
	var args cu.Args
	args.Ptr(ptr(o)).Ptr(ptr(in)).I64(nout).I64(count).I64s(meta...)
	suf := suffix(in.DType)
	// The innermost dim reduced: a warp per output reads along it.
	if len(dims) > 0 && dims[len(dims)-1].reduced && count >= 32 {
		if blocks := (nout + 7) / 8; blocks <= 1<<31-1 {
			return k.launch(reductions2, "r"+name+"_w_"+suf, int(blocks), threads, 0, &args)
		}
	}
	return k.launchN(reductions2, "r"+name+"_t_"+suf, nout, &args)
}

func argReduce(k kctx, name string) error {
	in := k.Input(0)
	if len(k.Input(1).Shape) != 0 {
		return k.Errorf(status.InvalidArgument, "dim must be a scalar, but received tensor of shape: %v", k.Input(1).Shape)
	}
	dims, err := k.Input(1).Int64s()
	if err != nil {
		return k.Errorf(status.InvalidArgument, "dimension: %v", err)
	}
	r := len(in.Shape)
	dim := dims[0]
	axis := dim
	if axis < 0 {
		axis += int64(r)
	}
	if axis < 0 || axis >= int64(r) {
		return k.Errorf(status.InvalidArgument, "Expected dimension in the range [%d, %d), but got %d", -r, r, dim)
	}
	if in.Shape[axis] == 0 {
		return k.Errorf(status.InvalidArgument, "Reduction axis %d is empty in shape %v", dim, in.Shape)
	}
	var out tensor.Shape
	outer, inner := int64(1), int64(1)
	for i, d := range in.Shape {
		switch {
		case int64(i) < axis:
			outer *= d
		case int64(i) > axis:
			inner *= d
		}
		if int64(i) != axis {
			out = append(out, d)
		}
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
	n := in.Shape[axis]
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

// softmaxRows launches one block per row of the last dim.
func softmaxRows(k kctx, prefix string) error {
	in := k.Input(0)
	if len(in.Shape) < 1 {
		return k.Errorf(status.InvalidArgument, "logits must have >= 1 dimension, got %v", in.Shape)
	}
	o, err := k.Allocate(0, in.Shape)
	if err != nil {
		return err
	}
	d := in.Shape[len(in.Shape)-1]
	if o.NumElements() == 0 || d == 0 {
		return nil
	}
	rows := o.NumElements() / d
	if rows > 1<<31-1 {
		return k.Errorf(status.Unimplemented, "softmax over %d rows", rows)
	}
	block := int64(256)
	if d < block {
		block = (d + 31) / 32 * 32
	}
	var args cu.Args
	args.Ptr(ptr(o)).Ptr(ptr(in)).I64(rows).I64(d)
	return k.launch(reductions2, prefix+suffix(in.DType), int(rows), int(block), 0, &args)
}
