package cuda

import (
	cu "mstream/device/cuda"
	"mstream/graph"
	"mstream/kernels"
	"mstream/status"
	"mstream/tensor"
)

func init() {
	for _, op := range []string{"Sum", "Mean"} {
		mean := op == "Mean"
		reg(op, "T", numTypes, []string{"reduction_indices"}, func(n *graph.Node) (kernels.Kernel, error) {
			keep := false
			if a := n.Attrs["keep_dims"]; a != nil {
				keep = a.GetB()
			}
			return fn(func(k kctx) error { return reduce(k, mean, keep) })(n)
		})
	}
	reg("Softmax", "T", floatTypes, nil, fn(softmax))
}

// redDim is one dim of a normalised reduction.
type redDim struct {
	size    int64
	reduced bool
}

func reduce(k kctx, mean, keep bool) error {
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
	// Normalise: drop size-1 dims, merge neighbours of the same kind.
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
	suf := suffix(in.DType)
	m := int32(0)
	if mean {
		m = 1
	}
	var args cu.Args
	args.Ptr(ptr(o)).Ptr(ptr(in))
	// With an empty input (count 0) nothing is read: the mid kernel writes
	// the empty sum (0, or NaN for a float mean) to every output.
	outer, rr, inner, shaped := int64(1), int64(1), int64(1), true
	switch {
	case count == 0 || len(dims) == 0:
		outer, rr, inner = nout, count, 1
		if count == 0 {
			rr = 0
		}
		return midLaunch(k, suf, &args, outer, rr, inner, m)
	case len(dims) == 1 && dims[0].reduced:
		rr = dims[0].size
	case len(dims) == 1:
		outer = dims[0].size // nothing reduced: a copy through the mid kernel
		rr = 1
		return midLaunch(k, suf, &args, outer, rr, inner, m)
	case len(dims) == 2 && !dims[0].reduced:
		outer, rr = dims[0].size, dims[1].size
	case len(dims) == 2:
		rr, inner = dims[0].size, dims[1].size
		return midLaunch(k, suf, &args, outer, rr, inner, m)
	case len(dims) == 3 && !dims[0].reduced:
		outer, rr, inner = dims[0].size, dims[1].size, dims[2].size
		return midLaunch(k, suf, &args, outer, rr, inner, m)
	default:
		shaped = false
	}
	if shaped {
		// Rows: reduce the contiguous last dim.
		args.I64(outer).I64(rr).I32(m)
		if rr >= 2048 && outer < int64(4*k.sms()) {
			return k.launch(reductions, "sumrow_b_"+suf, int(outer), 512, 0, &args)
		}
		return k.launch(reductions, "sumrow_w_"+suf, int((outer+7)/8), threads, 0, &args)
	}
	// General: strides of kept and reduced dims over the merged shape.
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
	args.I64(nout).I64(count).I32(m).I64s(meta...)
	return k.launch(reductions, "sumgen_"+suf, int((nout+7)/8), threads, 0, &args)
}

func midLaunch(k kctx, suf string, args *cu.Args, outer, r, inner int64, mean int32) error {
	args.I64(outer).I64(r).I64(inner).I32(mean)
	if blocks := outer * ((inner + 31) / 32); inner >= 32 && r >= 32 && blocks <= 1<<31-1 {
		// Wide rows: 32 columns x 32 row lanes per block.
		return k.launch3(reductions, "summid2_"+suf, cu.D1(int(blocks)), cu.Dim3{X: 32, Y: 32, Z: 1}, 0, args)
	}
	return k.launchN(reductions, "summid_"+suf, outer*inner, args)
}

func softmax(k kctx) error {
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
	block := int64(256)
	if d < block {
		block = (d + 31) / 32 * 32
	}
	var args cu.Args
	args.Ptr(ptr(o)).Ptr(ptr(in)).I64(rows).I64(d)
	if rows > 1<<31-1 {
		return k.Errorf(status.Unimplemented, "softmax over %d rows", rows)
	}
	return k.launch(reductions, "softmax_"+suffix(in.DType), int(rows), int(block), 0, &args)
}
