package cuda

import (
	"slices"

	cu "mstream/device/cuda"
	"mstream/graph"
	"mstream/kernels"
	"mstream/kernels/cpu"
	"mstream/status"
	"mstream/tensor"
)

// Reductions (Sum, Mean, Prod, Max, Min, All, Any) have one front end,
// reduceGPU: cpu.ReductionArgs validates the axes (the CPU kernel's codes
// and messages) and gives the output shape, cpu.ReducedRuns merges the
// dims; then Sum and Mean of numTypes take reduce.cu's specialised row,
// column and general kernels (sumLaunch), every other reduction
// reduce2.cu's generic r<name> kernels (genLaunch in reduce2.go).

func init() {
	for _, r := range []struct {
		op, name string
		types    []tensor.DType
	}{
		{"Sum", "sum", realTypes}, {"Mean", "mean", realTypes},
		{"Prod", "prod", realTypes}, {"Max", "max", realTypes}, {"Min", "min", realTypes},
		{"All", "all", nil}, {"Any", "any", nil},
	} {
		name := r.name
		f := func(n *graph.Node) (kernels.Kernel, error) {
			keep := false
			if a := n.Attrs["keep_dims"]; a != nil {
				keep = a.GetB()
			}
			return fn(func(k kctx) error { return reduceGPU(k, name, keep) })(n)
		}
		if r.types == nil {
			kernels.Register(kernels.Def{Op: r.op, Device: kernels.GPU, HostMemory: []string{"reduction_indices"}, Factory: f})
			continue
		}
		reg(r.op, "T", r.types, []string{"reduction_indices"}, f)
	}
	reg("Softmax", "T", floatTypes, nil, fn(func(k kctx) error { return softmaxRows(k, reductions, "softmax_") }))
}

// reduceGPU is every reduction's front end (see above).
func reduceGPU(k kctx, name string, keep bool) error {
	in := k.Input(0)
	red, out, count, err := cpu.ReductionArgs(k.Context, keep)
	if err != nil {
		return err
	}
	o, err := k.Allocate(0, out)
	if err != nil {
		return err
	}
	if o.NumElements() == 0 {
		return nil
	}
	return reduceRuns(k, o, in, cpu.ReducedRuns(in.Shape, red), count, name)
}

// reduceRuns reduces in into o over the merged runs with reduction name:
// reduce.cu's specialised kernels for Sum and Mean of numTypes, reduce2.cu's
// generic ones otherwise (reduceGPU and Einsum's sums call it).
func reduceRuns(k kctx, o, in *tensor.Tensor, runs []cpu.ReducedRun, count int64, name string) error {
	if (name == "sum" || name == "mean") && slices.Contains(numTypes, in.DType) {
		return sumLaunch(k, o, in, runs, count, name == "mean")
	}
	return genLaunch(k, o, in, runs, count, name)
}

// genMeta describes a reduction to the general kernels (reduce.cu's
// sumgen and reduce2.cu's r<name>): the kept and the reduced runs, each
// with its stride in the input, at most 8 of each. With count 0 nothing
// is read, so the reduced runs are left out.
func genMeta(k kctx, runs []cpu.ReducedRun, count int64) ([]int64, error) {
	st := make([]int64, len(runs))
	p := int64(1)
	for i := len(runs) - 1; i >= 0; i-- {
		st[i] = p
		p *= runs[i].N
	}
	var kd, ks, rd, rs []int64
	for i, d := range runs {
		if d.Reduced {
			rd, rs = append(rd, d.N), append(rs, st[i])
		} else {
			kd, ks = append(kd, d.N), append(ks, st[i])
		}
	}
	if count == 0 {
		rd, rs = nil, nil
	}
	if len(kd) > 8 || len(rd) > 8 {
		return nil, k.Errorf(status.Unimplemented, "reduction with %d kept and %d reduced dims after merging (at most 8 each)", len(kd), len(rd))
	}
	meta := make([]int64, 2+4*8)
	meta[0] = int64(len(kd))
	copy(meta[1:9], kd)
	copy(meta[9:17], ks)
	meta[17] = int64(len(rd))
	copy(meta[18:26], rd)
	copy(meta[26:34], rs)
	return meta, nil
}

// sumLaunch runs Sum or Mean of a numTypes input through reduce.cu: a
// reduced innermost run as rows, [outer, red, inner] shapes through the
// mid kernels, anything else through sumgen.
func sumLaunch(k kctx, o, in *tensor.Tensor, dims []cpu.ReducedRun, count int64, mean bool) error {
	nout := o.NumElements()
	suf := suffix(in.DType)
	m := int32(0)
	if mean {
		m = 1
	}
	var args cu.Args
	args.Ptr(ptr(o)).Ptr(ptr(in))
	// With an empty input (count 0) nothing is read: the mid kernel writes
	// the empty sum (0, or NaN for a float mean) to every output.
	outer, rr := int64(1), int64(1)
	switch {
	case count == 0 || len(dims) == 0:
		return midLaunch(k, suf, &args, nout, count, 1, m)
	case len(dims) == 1 && dims[0].Reduced:
		rr = dims[0].N
	case len(dims) == 1:
		// Nothing reduced: a copy through the mid kernel.
		return midLaunch(k, suf, &args, dims[0].N, 1, 1, m)
	case len(dims) == 2 && !dims[0].Reduced:
		outer, rr = dims[0].N, dims[1].N
	case len(dims) == 2:
		return midLaunch(k, suf, &args, 1, dims[0].N, dims[1].N, m)
	case len(dims) == 3 && !dims[0].Reduced:
		return midLaunch(k, suf, &args, dims[0].N, dims[1].N, dims[2].N, m)
	default:
		meta, err := genMeta(k, dims, count)
		if err != nil {
			return err
		}
		args.I64(nout).I64(count).I32(m).I64s(meta...)
		return k.launch(reductions, "sumgen_"+suf, int((nout+7)/8), threads, 0, &args)
	}
	// Rows: reduce the contiguous last dim.
	args.I64(outer).I64(rr).I32(m)
	if rr >= 2048 && outer < int64(4*k.sms()) {
		return k.launch(reductions, "sumrow_b_"+suf, int(outer), 512, 0, &args)
	}
	return k.launch(reductions, "sumrow_w_"+suf, int((outer+7)/8), threads, 0, &args)
}

func midLaunch(k kctx, suf string, args *cu.Args, outer, r, inner int64, mean int32) error {
	args.I64(outer).I64(r).I64(inner).I32(mean)
	if blocks := outer * ((inner + 31) / 32); inner >= 32 && r >= 32 && blocks <= 1<<31-1 {
		// Wide rows: 32 columns x 32 row lanes per block.
		return k.launch3(reductions, "summid2_"+suf, cu.D1(int(blocks)), cu.Dim3{X: 32, Y: 32, Z: 1}, 0, args)
	}
	return k.launchN(reductions, "summid_"+suf, outer*inner, args)
}

// softmaxRows launches prefix<dtype> of p with one block per row of the
// last dim (Softmax, LogSoftmax).
func softmaxRows(k kctx, p *cu.Program, prefix string) error {
	in := k.Input(0)
	if err := cpu.SoftmaxArgs(k.Context); err != nil {
		return err
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
	return k.launch(p, prefix+suffix(in.DType), int(rows), int(block), 0, &args)
}
