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

func init() {
	for _, b := range []struct {
		ops   []string
		name  string
		types []tensor.DType
	}{
		{[]string{"Add", "AddV2"}, "add", numTypes},
		{[]string{"Sub"}, "sub", numTypes},
		{[]string{"Mul"}, "mul", numTypes},
		{[]string{"RealDiv"}, "div", floatTypes},
		{[]string{"Maximum"}, "max", numTypes},
		{[]string{"Minimum"}, "min", numTypes},
	} {
		name := b.name
		for _, op := range b.ops {
			reg(op, "T", b.types, nil, fn(func(k kctx) error { return binary(k, name) }))
		}
	}
	for op, name := range map[string]string{"Relu": "relu", "Sigmoid": "sigmoid", "Tanh": "tanh"} {
		types := floatTypes
		if op == "Relu" {
			types = numTypes
		}
		name := name
		reg(op, "T", types, nil, fn(func(k kctx) error { return unary(k, name) }))
	}
	reg("BiasAdd", "T", realTypes, nil, func(n *graph.Node) (kernels.Kernel, error) {
		nchw := strAttr(n, "data_format", "NHWC") == "NCHW"
		return fn(func(k kctx) error { return biasAdd(k, nchw) })(n)
	})
	reg("Cast", "SrcT", castTypes, nil, func(n *graph.Node) (kernels.Kernel, error) {
		src, dst := typeAttr(n, "SrcT"), typeAttr(n, "DstT")
		if !slices.Contains(castTypes, dst) {
			return nil, status.Errorf(status.Unimplemented, "no GPU Cast from %v to %v (node '%s')", src, dst, n.Name)
		}
		return fn(func(k kctx) error { return cast(k, src, dst) })(n)
	})
	reg("Fill", "T", fixedTypes, []string{"dims"}, fn(fill))
}

func typeAttr(n *graph.Node, name string) tensor.DType {
	if a := n.Attrs[name]; a != nil {
		return tensor.DType(a.GetType())
	}
	return tensor.Invalid
}

// bcastShapes is numpy broadcasting: the output shape and, per output dim,
// the element stride into a and b (0 where that side repeats).
func bcastShapes(a, b tensor.Shape) (out tensor.Shape, sa, sb []int64, ok bool) {
	r := max(len(a), len(b))
	out = make(tensor.Shape, r)
	sa, sb = make([]int64, r), make([]int64, r)
	pa, pb := int64(1), int64(1)
	for i := r - 1; i >= 0; i-- {
		da, db := int64(1), int64(1)
		if j := i - (r - len(a)); j >= 0 {
			da = a[j]
		}
		if j := i - (r - len(b)); j >= 0 {
			db = b[j]
		}
		switch {
		case da == db:
			out[i] = da
		case da == 1:
			out[i] = db
		case db == 1:
			out[i] = da
		default:
			return nil, nil, nil, false
		}
		if da != 1 {
			sa[i] = pa
		}
		if db != 1 {
			sb[i] = pb
		}
		pa *= da
		pb *= db
	}
	return out, sa, sb, true
}

// collapse drops size-1 output dims and merges neighbours whose strides
// stay contiguous on both sides, so most broadcasts reach the kernel with
// rank 1 or 2.
func collapse(out tensor.Shape, sa, sb []int64) (tensor.Shape, []int64, []int64) {
	var o tensor.Shape
	var a, b []int64
	for i := range out {
		if out[i] == 1 {
			continue
		}
		if k := len(o) - 1; k >= 0 && a[k] == sa[i]*out[i] && b[k] == sb[i]*out[i] {
			o[k] *= out[i]
			a[k], b[k] = sa[i], sb[i]
			continue
		}
		o = append(o, out[i])
		a = append(a, sa[i])
		b = append(b, sb[i])
	}
	return o, a, b
}

// bcastOutput allocates the output of a broadcasting binary op over
// inputs 0 and 1 (INVALID_ARGUMENT when their shapes do not broadcast),
// returning it with the broadcast shape and each input's strides; o is
// nil when the output is empty.
func bcastOutput(k kctx) (o *tensor.Tensor, out tensor.Shape, sa, sb []int64, err error) {
	a, b := k.Input(0), k.Input(1)
	out, sa, sb, ok := bcastShapes(a.Shape, b.Shape)
	if !ok {
		return nil, nil, nil, nil, k.Errorf(status.InvalidArgument, "Incompatible shapes: %v vs. %v", a.Shape, b.Shape)
	}
	if o, err = k.Allocate(0, out); err != nil || o.NumElements() == 0 {
		return nil, nil, nil, nil, err
	}
	return o, out, sa, sb, nil
}

func binary(k kctx, name string) error {
	a, b := k.Input(0), k.Input(1)
	o, out, sa, sb, err := bcastOutput(k)
	if o == nil {
		return err
	}
	n := o.NumElements()
	suf := suffix(a.DType)
	var args cu.Args
	args.Ptr(ptr(o)).Ptr(ptr(a)).Ptr(ptr(b)).I64(n)
	na, nb := a.NumElements(), b.NumElements()
	switch {
	case na == n && nb == n:
		args.I32(1).I32(1)
	case na == 1 && nb == n:
		args.I32(0).I32(1)
	case nb == 1 && na == n:
		args.I32(1).I32(0)
	default:
		co, ca, cb := collapse(out, sa, sb)
		if len(co) == 2 && ca[1] == 1 && cb[1] == 1 && (ca[0] == 0) != (cb[0] == 0) {
			// One side is a row repeated along the other (x + bias[c]).
			var ra cu.Args
			full, vec, flip := a, b, int32(0)
			if ca[0] == 0 {
				full, vec, flip = b, a, 1
			}
			ra.Ptr(ptr(o)).Ptr(ptr(full)).Ptr(ptr(vec)).I64(n).I64(co[1]).I32(flip)
			return k.launchN(elementwise, "binr_"+name+"_"+suf, n, &ra)
		}
		if len(co) > 8 {
			return k.Errorf(status.Unimplemented, "broadcast of rank %d (more than 8 dims after merging)", len(co))
		}
		meta := make([]int64, 1+3*8)
		meta[0] = int64(len(co))
		for i := range co {
			meta[1+i], meta[9+i], meta[17+i] = co[i], ca[i], cb[i]
		}
		args.I64s(meta...)
		return k.launchN(elementwise, "binb_"+name+"_"+suf, n, &args)
	}
	return k.launchN(elementwise, "bin_"+name+"_"+suf, n, &args)
}

func unary(k kctx, name string) error {
	x := k.Input(0)
	o, err := k.Allocate(0, x.Shape)
	if err != nil {
		return err
	}
	var args cu.Args
	args.Ptr(ptr(o)).Ptr(ptr(x)).I64(o.NumElements())
	return k.launchN(elementwise, "un_"+name+"_"+suffix(x.DType), o.NumElements(), &args)
}

// biasAdd serves every GPU BiasAdd dtype: elementwise.cu's bias kernel
// for its dtypes (float, double, int32, int64), cwise.cu's bias2 for the
// rest.
func biasAdd(k kctx, nchw bool) error {
	v, b := k.Input(0), k.Input(1)
	cdim, err := cpu.BiasAddArgs(k.Context, nchw)
	if err != nil {
		return err
	}
	o, err := k.Allocate(0, v.Shape)
	if err != nil {
		return err
	}
	return biasLaunch(k, o, v, b, cdim, false)
}

// biasLaunch adds b along dim cdim of v into o (ReLU after when relu):
// elementwise.cu's bias kernel for its dtypes, cwise.cu's bias2 (no ReLU)
// for the others.
func biasLaunch(k kctx, o, v, b *tensor.Tensor, cdim int, relu bool) error {
	n := o.NumElements()
	if n == 0 {
		return nil
	}
	inner := int64(1)
	for _, d := range v.Shape[cdim+1:] {
		inner *= d
	}
	if !relu && !slices.Contains(numTypes, v.DType) {
		var args cu.Args
		args.Ptr(ptr(o)).Ptr(ptr(v)).Ptr(ptr(b)).I64(n).I64(b.Shape[0]).I64(inner)
		return k.launchN(cwiseP, "bias2_"+suffix(v.DType), n, &args)
	}
	r := int32(0)
	if relu {
		r = 1
	}
	var args cu.Args
	args.Ptr(ptr(o)).Ptr(ptr(v)).Ptr(ptr(b)).I64(n).I64(b.Shape[0]).I64(inner).I32(r)
	return k.launchN(elementwise, "bias_"+suffix(v.DType), n, &args)
}

func cast(k kctx, src, dst tensor.DType) error {
	x := k.Input(0)
	if src == dst {
		k.SetOutput(0, x)
		return nil
	}
	o, err := k.Allocate(0, x.Shape)
	if err != nil {
		return err
	}
	var args cu.Args
	args.Ptr(ptr(o)).Ptr(ptr(x)).I64(o.NumElements())
	return k.launchN(elementwise, "cast_"+suffix(src)+"_"+suffix(dst), o.NumElements(), &args)
}

func fill(k kctx) error {
	dt := k.Input(0)
	if len(dt.Shape) != 1 {
		return k.Errorf(status.InvalidArgument, "dims must be a vector, got shape %v", dt.Shape)
	}
	dims, err := dt.Int64s()
	if err != nil {
		return k.Errorf(status.InvalidArgument, "dims: %v", err)
	}
	v := k.Input(1)
	if len(v.Shape) != 0 {
		return k.Errorf(status.InvalidArgument, "value must be a scalar, got shape %v", v.Shape)
	}
	s := tensor.Shape(dims)
	if err := s.Validate(); err != nil {
		return k.Errorf(status.InvalidArgument, "dims: %v", err)
	}
	o, err := k.Allocate(0, s)
	if err != nil {
		return err
	}
	var args cu.Args
	args.Ptr(ptr(o)).Ptr(ptr(v)).I64(o.NumElements())
	return k.launchN(elementwise, "fill_"+sizeName(v.DType), o.NumElements(), &args)
}
