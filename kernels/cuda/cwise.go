package cuda

import (
	cu "mstream/device/cuda"
	"mstream/graph"
	"mstream/kernels"
	"mstream/status"
	"mstream/tensor"
)

// Binary elementwise ops with broadcasting (src/cwise.cu) beyond
// elementwise.go's, Select/SelectV2, ClipByValue and AddN.
//
// Integer Div, TruncateDiv, FloorDiv and Pow are intdiv.go's, for the
// dtypes TF runs them on the GPU; the other integer dtypes of these ops,
// and integer FloorMod, TruncateMod and Mod, run on the host as in TF.

func init() {
	narrow := minus(realTypes, numTypes) // what elementwise.go lacks
	for _, b := range []struct {
		ops   []string
		name  string
		types []tensor.DType
	}{
		{[]string{"Add", "AddV2"}, "add", narrow}, {[]string{"Sub"}, "sub", narrow}, {[]string{"Mul"}, "mul", narrow},
		{[]string{"Maximum"}, "max", narrow}, {[]string{"Minimum"}, "min", narrow},
		{[]string{"RealDiv"}, "div", []tensor.DType{tensor.Half, tensor.Bfloat16}},
		{[]string{"Div"}, "div", gpuFloats},
		{[]string{"Pow"}, "pow", gpuFloats},
		{[]string{"SquaredDifference"}, "sqdiff", cat(gpuFloats, []tensor.DType{tensor.Int32, tensor.Int64})},
		{[]string{"FloorDiv"}, "floordiv", gpuFloats}, {[]string{"FloorMod"}, "floormod", gpuFloats},
		{[]string{"TruncateDiv"}, "truncdiv", gpuFloats},
		{[]string{"TruncateMod", "Mod"}, "truncmod", floatTypes},
		{[]string{"DivNoNan"}, "divnonan", gpuFloats},
		{[]string{"Less"}, "lt", realTypes}, {[]string{"LessEqual"}, "le", realTypes},
		{[]string{"Greater"}, "gt", realTypes}, {[]string{"GreaterEqual"}, "ge", realTypes},
	} {
		name := b.name
		for _, op := range b.ops {
			reg(op, "T", b.types, nil, fn(func(k kctx) error { return cwiseBin(k, name, true, false) }))
		}
	}
	for op, name := range map[string]string{"Equal": "eq", "NotEqual": "ne"} {
		name, ne := name, op == "NotEqual"
		reg(op, "T", cat(realTypes, []tensor.DType{tensor.Bool}), nil, func(n *graph.Node) (kernels.Kernel, error) {
			strict := true
			if a := n.Attrs["incompatible_shape_error"]; a != nil {
				strict = a.GetB()
			}
			return fn(func(k kctx) error { return cwiseBin(k, name, strict, ne) })(n)
		})
	}
	for op, name := range map[string]string{"LogicalAnd": "and", "LogicalOr": "or"} {
		name := name
		kernels.Register(kernels.Def{Op: op, Device: kernels.GPU, Factory: fn(func(k kctx) error { return cwiseBin(k, name, true, false) })})
	}
	selTypes := fixedTypes
	reg("Select", "T", selTypes, nil, fn(selectV1))
	reg("SelectV2", "T", selTypes, nil, fn(selectV2))
	reg("ClipByValue", "T", cat(floatSigned, []tensor.DType{tensor.Uint8, tensor.Uint16}), nil, fn(clip))
	reg("AddN", "T", realTypes, nil, fn(addN))
}

// cwiseBin runs c_<name>_<dtype> over the broadcast of inputs 0 and 1.
// When the shapes do not broadcast and strict is false (Equal/NotEqual's
// incompatible_shape_error=false), the output is the scalar ne.
func cwiseBin(k kctx, name string, strict, ne bool) error {
	a, b := k.Input(0), k.Input(1)
	if _, _, _, ok := bcastShapes(a.Shape, b.Shape); !ok && !strict {
		o, err := k.Allocate(0, tensor.Shape{})
		if err != nil {
			return err
		}
		v := int64(0)
		if ne {
			v = 1
		}
		var args cu.Args
		args.Ptr(ptr(o)).I64(v).I64(1)
		return k.launchN(maths, "fillc_1", 1, &args)
	}
	o, out, sa, sb, err := bcastOutput(k)
	if o == nil {
		return err
	}
	return launchBroadcast(k, cwiseP, "c_"+name+"_"+suffix(a.DType), o, a, b, out, sa, sb)
}

// launchBroadcast launches kernel kname of prog for o = f(a, b), a and b
// broadcast to out with element strides sa and sb (bcastShapes), o
// allocated and not empty: dims are merged where they can be, and the
// kernel gets the merged shape and strides (at most 8 dims) in one
// metadata array after (o, a, b, n).
func launchBroadcast(k kctx, prog *cu.Program, kname string, o, a, b *tensor.Tensor, out tensor.Shape, sa, sb []int64) error {
	n := o.NumElements()
	co, ca, cb := collapse(out, sa, sb)
	if len(co) > 8 {
		return k.Errorf(status.Unimplemented, "broadcast of rank %d (more than 8 dims after merging)", len(co))
	}
	meta := make([]int64, 1+3*8)
	meta[0] = int64(len(co))
	for i := range co {
		meta[1+i], meta[9+i], meta[17+i] = co[i], ca[i], cb[i]
	}
	var args cu.Args
	args.Ptr(ptr(o)).Ptr(ptr(a)).Ptr(ptr(b)).I64(n).I64s(meta...)
	return k.launchN(prog, kname, n, &args)
}

// stridesIn gives, per dim of out, the element stride of in broadcast to
// out (0 where in repeats); in is right-aligned with out.
func stridesIn(in, out tensor.Shape) []int64 {
	st := make([]int64, len(out))
	p := int64(1)
	for d := len(in) - 1; d >= 0; d-- {
		if in[d] != 1 {
			st[d+len(out)-len(in)] = p
		}
		p *= in[d]
	}
	return st
}

// collapseN drops size-1 dims and merges neighbours that stay contiguous
// in every operand.
func collapseN(out tensor.Shape, strides [][]int64) (tensor.Shape, [][]int64) {
	var o tensor.Shape
	cs := make([][]int64, len(strides))
	for i := range out {
		if out[i] == 1 {
			continue
		}
		if k := len(o) - 1; k >= 0 {
			merge := true
			for j := range strides {
				merge = merge && cs[j][k] == strides[j][i]*out[i]
			}
			if merge {
				o[k] *= out[i]
				for j := range strides {
					cs[j][k] = strides[j][i]
				}
				continue
			}
		}
		o = append(o, out[i])
		for j := range strides {
			cs[j] = append(cs[j], strides[j][i])
		}
	}
	return o, cs
}

// selectLaunch runs select_<size> with cond, then and else read through
// per-dim strides over out.
func selectLaunch(k kctx, o, c, t, e *tensor.Tensor, out tensor.Shape, sc, st, se []int64) error {
	n := o.NumElements()
	if n == 0 {
		return nil
	}
	co, cs := collapseN(out, [][]int64{sc, st, se})
	if len(co) > 8 {
		return k.Errorf(status.Unimplemented, "select broadcast of rank %d (more than 8 dims after merging)", len(co))
	}
	meta := make([]int64, 1+4*8)
	meta[0] = int64(len(co))
	for i := range co {
		meta[1+i], meta[9+i], meta[17+i], meta[25+i] = co[i], cs[0][i], cs[1][i], cs[2][i]
	}
	var args cu.Args
	args.Ptr(ptr(o)).Ptr(ptr(c)).Ptr(ptr(t)).Ptr(ptr(e)).I64(n).I64s(meta...)
	return k.launchN(cwiseP, "select_"+sizeName(t.DType), n, &args)
}

// selectV1 is TF's Select: a scalar condition picks a whole input, a
// vector condition with a higher-rank 'then' picks rows, otherwise the
// three have one shape. The condition lives on the device, so a scalar
// one is read by the kernel (stride 0) rather than forwarding an input.
func selectV1(k kctx) error {
	c, t, e := k.Input(0), k.Input(1), k.Input(2)
	if !t.Shape.Equal(e.Shape) {
		return k.Errorf(status.InvalidArgument, "'then' and 'else' must have the same size.  but received: %v vs. %v", t.Shape, e.Shape)
	}
	full := stridesIn(t.Shape, t.Shape)
	sc := make([]int64, len(t.Shape))
	switch {
	case len(c.Shape) == 0:
	case len(c.Shape) == 1 && len(t.Shape) != 1:
		if len(t.Shape) == 0 {
			return k.Errorf(status.InvalidArgument, "'then' must be at least a vector, but saw shape: %v", t.Shape)
		}
		if t.Shape[0] != c.Shape[0] {
			return k.Errorf(status.InvalidArgument, "Number of batches of 'then' must match size of 'cond', but saw: %d vs. %d", t.Shape[0], c.Shape[0])
		}
		sc[0] = 1
	default:
		if !c.Shape.Equal(t.Shape) {
			return k.Errorf(status.InvalidArgument, "Inputs to operation %s of type Select must have the same size and shape.  Input 0: %v != input 1: %v", k.Node.Name, c.Shape, t.Shape)
		}
		sc = full
	}
	o, err := k.Allocate(0, t.Shape)
	if err != nil {
		return err
	}
	return selectLaunch(k, o, c, t, e, t.Shape, sc, full, full)
}

func selectV2(k kctx) error {
	c, t, e := k.Input(0), k.Input(1), k.Input(2)
	te, _, _, ok1 := bcastShapes(t.Shape, e.Shape)
	var out tensor.Shape
	ok2 := false
	if ok1 {
		out, _, _, ok2 = bcastShapes(c.Shape, te)
	}
	if !ok1 || !ok2 {
		return k.Errorf(status.InvalidArgument, "condition %v, then %v, and else %v must be broadcastable", c.Shape, t.Shape, e.Shape)
	}
	o, err := k.Allocate(0, out)
	if err != nil {
		return err
	}
	return selectLaunch(k, o, c, t, e, out, stridesIn(c.Shape, out), stridesIn(t.Shape, out), stridesIn(e.Shape, out))
}

func clip(k kctx) error {
	x, lo, hi := k.Input(0), k.Input(1), k.Input(2)
	okShape := func(s tensor.Shape) bool { return len(s) == 0 || s.Equal(x.Shape) }
	if !okShape(lo.Shape) || !okShape(hi.Shape) {
		return k.Errorf(status.InvalidArgument, "clip_value_min and clip_value_max must be either of the same shape as input, or a scalar. input shape: %vclip_value_min shape: %vclip_value_max shape: %v", x.Shape, lo.Shape, hi.Shape)
	}
	o, err := k.Allocate(0, x.Shape)
	if err != nil {
		return err
	}
	n := o.NumElements()
	if n == 0 {
		return nil
	}
	sl, sh := int32(1), int32(1)
	if len(lo.Shape) == 0 {
		sl = 0
	}
	if len(hi.Shape) == 0 {
		sh = 0
	}
	var args cu.Args
	args.Ptr(ptr(o)).Ptr(ptr(x)).Ptr(ptr(lo)).Ptr(ptr(hi)).I64(n).I32(sl).I32(sh)
	return k.launchN(cwiseP, "clip_"+suffix(x.DType), n, &args)
}

func addN(k kctx) error {
	x0 := k.Input(0)
	for i := 1; i < k.NumInputs(); i++ {
		if !k.Input(i).Shape.Equal(x0.Shape) {
			return k.Errorf(status.InvalidArgument, "Inputs to operation %s of type AddN must have the same size and shape.  Input 0: %v != input %d: %v", k.Node.Name, x0.Shape, i, k.Input(i).Shape)
		}
	}
	if k.NumInputs() == 1 {
		k.SetOutput(0, x0)
		return nil
	}
	o, err := k.Allocate(0, x0.Shape)
	if err != nil {
		return err
	}
	n := o.NumElements()
	if n == 0 {
		return nil
	}
	for lo, acc := 0, int32(0); lo < k.NumInputs(); lo, acc = lo+8, 1 {
		hi := min(lo+8, k.NumInputs())
		p := make([]int64, 8)
		for i := lo; i < hi; i++ {
			p[i-lo] = int64(ptr(k.Input(i)))
		}
		var args cu.Args
		args.Ptr(ptr(o)).I64s(p...).I32(int32(hi - lo)).I32(acc).I64(n)
		if err := k.launchN(cwiseP, "addn_"+suffix(x0.DType), n, &args); err != nil {
			return err
		}
	}
	return nil
}
