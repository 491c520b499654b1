package cpu

import (
	"mstream/kernels"
	"mstream/status"
	"mstream/tensor"
)

// Select, SelectV2, ClipByValue and AddN.
//
// Select moves whole elements, so every fixed-size dtype is handled through
// an unsigned integer view of its width (strings through their slices).

func init() {
	selTypes := concatTypes(realTypes, []tensor.DType{tensor.Bool, tensor.String, tensor.Complex64, tensor.Complex128})
	reg("Select", selTypes, nil, fn(selectOp))
	reg("SelectV2", selTypes, nil, fn(selectV2Op))
	reg("ClipByValue", concatTypes(floatSigned, []tensor.DType{tensor.Uint8, tensor.Uint16}), nil, fn(clipOp))
	reg("AddN", realTypes, nil, fn(addN))
}

// selectOp is TF's Select: a scalar condition picks a whole input; a vector
// condition with a higher-rank 'then' picks rows; otherwise all three have
// one shape.
func selectOp(ctx *kernels.Context) error {
	c, t, e := ctx.Input(0), ctx.Input(1), ctx.Input(2)
	if !t.Shape.Equal(e.Shape) {
		return ctx.Errorf(status.InvalidArgument, "'then' and 'else' must have the same size.  but received: %v vs. %v", t.Shape, e.Shape)
	}
	cv := c.Bools()
	switch {
	case len(c.Shape) == 0:
		if cv[0] {
			ctx.SetOutput(0, t)
		} else {
			ctx.SetOutput(0, e)
		}
		return nil
	case len(c.Shape) == 1 && len(t.Shape) != 1:
		if len(t.Shape) == 0 {
			return ctx.Errorf(status.InvalidArgument, "'then' must be at least a vector, but saw shape: %v", t.Shape)
		}
		if t.Shape[0] != c.Shape[0] {
			return ctx.Errorf(status.InvalidArgument, "Number of batches of 'then' must match size of 'cond', but saw: %d vs. %d", t.Shape[0], c.Shape[0])
		}
		o, err := ctx.Allocate(0, t.Shape)
		if err != nil {
			return err
		}
		if o.NumElements() == 0 {
			return nil
		}
		row := int(t.NumElements() / t.Shape[0])
		for i, pick := range cv {
			src := e
			if pick {
				src = t
			}
			copyElems(o, i*row, src, i*row, row)
		}
		return nil
	}
	if !c.Shape.Equal(t.Shape) {
		return ctx.Errorf(status.InvalidArgument, "Inputs to operation %s of type Select must have the same size and shape.  Input 0: %v != input 1: %v", ctx.Node.Name, c.Shape, t.Shape)
	}
	o, err := ctx.Allocate(0, t.Shape)
	if err != nil {
		return err
	}
	return selectElems(ctx, o, c, t, e)
}

// selectV2Op broadcasts condition, then and else together.
func selectV2Op(ctx *kernels.Context) error {
	c, t, e := ctx.Input(0), ctx.Input(1), ctx.Input(2)
	te, ok1 := broadcastShapes(t.Shape, e.Shape)
	all, ok2 := broadcastShapes(c.Shape, te.out)
	if !ok1 || !ok2 {
		return ctx.Errorf(status.InvalidArgument, "condition %v, then %v, and else %v must be broadcastable", c.Shape, t.Shape, e.Shape)
	}
	o, err := ctx.Allocate(0, all.out)
	if err != nil {
		return err
	}
	if o.NumElements() == 0 {
		return nil
	}
	if c.Shape.Equal(o.Shape) && t.Shape.Equal(o.Shape) && e.Shape.Equal(o.Shape) {
		return selectElems(ctx, o, c, t, e)
	}
	// General broadcast: expand each input to the output by index walk.
	ci, ti, ei := bcastIndex(c.Shape, o.Shape), bcastIndex(t.Shape, o.Shape), bcastIndex(e.Shape, o.Shape)
	cv := c.Bools()
	for i := range ci {
		if cv[ci[i]] {
			copyElems(o, i, t, int(ti[i]), 1)
		} else {
			copyElems(o, i, e, int(ei[i]), 1)
		}
	}
	return nil
}

// bcastIndex lists, for each element of out, the flat index of the
// broadcast input of shape in that it reads.
func bcastIndex(in, out tensor.Shape) []int64 {
	n := out.NumElements()
	idx := make([]int64, n)
	st := make([]int64, len(out))
	p := int64(1)
	for d := len(in) - 1; d >= 0; d-- {
		k := d + len(out) - len(in)
		if in[d] != 1 {
			st[k] = p
		}
		p *= in[d]
	}
	pos := make([]int64, len(out))
	var off int64
	for i := int64(0); i < n; i++ {
		idx[i] = off
		for d := len(out) - 1; d >= 0; d-- {
			pos[d]++
			off += st[d]
			if pos[d] < out[d] {
				break
			}
			off -= st[d] * pos[d]
			pos[d] = 0
		}
	}
	return idx
}

// selectElems is o[i] = c[i] ? t[i] : e[i] over equal shapes.
func selectElems(ctx *kernels.Context, o, c, t, e *tensor.Tensor) error {
	cv := c.Bools()
	switch o.DType.Size() {
	case 1:
		selLoop(ctx, cv, t.U8(), e.U8(), o.U8())
	case 2:
		selLoop(ctx, cv, t.U16(), e.U16(), o.U16())
	case 4:
		selLoop(ctx, cv, t.U32(), e.U32(), o.U32())
	case 8:
		selLoop(ctx, cv, t.U64(), e.U64(), o.U64())
	default:
		for i, pick := range cv {
			src := e
			if pick {
				src = t
			}
			copyElems(o, i, src, i, 1)
		}
	}
	return nil
}

func selLoop[T any](ctx *kernels.Context, c []bool, t, e, o []T) {
	ctx.For(len(o), 1, kernels.StartLoop, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			if c[i] {
				o[i] = t[i]
			} else {
				o[i] = e[i]
			}
		}
	})
}

// clipOp is TF's ClipByValue: max(min(x, hi), lo) with std::min/max
// semantics (a NaN x stays NaN; a NaN bound leaves x alone), bounds either
// scalars or shaped like x.
func clipOp(ctx *kernels.Context) error {
	x, lo, hi := ctx.Input(0), ctx.Input(1), ctx.Input(2)
	okShape := func(s tensor.Shape) bool { return len(s) == 0 || s.Equal(x.Shape) }
	if !okShape(lo.Shape) || !okShape(hi.Shape) {
		return ctx.Errorf(status.InvalidArgument, "clip_value_min and clip_value_max must be either of the same shape as input, or a scalar. input shape: %vclip_value_min shape: %vclip_value_max shape: %v", x.Shape, lo.Shape, hi.Shape)
	}
	o, err := ctx.Allocate(0, x.Shape)
	if err != nil {
		return err
	}
	if o.NumElements() == 0 {
		return nil
	}
	sl, sh := 1, 1
	if len(lo.Shape) == 0 {
		sl = 0
	}
	if len(hi.Shape) == 0 {
		sh = 0
	}
	switch x.DType {
	case tensor.Float:
		clipLoop(ctx, x.F32(), lo.F32(), hi.F32(), o.F32(), sl, sh)
	case tensor.Double:
		clipLoop(ctx, x.F64(), lo.F64(), hi.F64(), o.F64(), sl, sh)
	case tensor.Half, tensor.Bfloat16:
		out, err := kernels.Scratch[float32](ctx, o.NumElements())
		if err != nil {
			return err
		}
		clipLoop(ctx, toF32(x), toF32(lo), toF32(hi), out, sl, sh)
		storeF32(o, out)
	case tensor.Int32:
		clipLoop(ctx, x.I32(), lo.I32(), hi.I32(), o.I32(), sl, sh)
	case tensor.Int64:
		clipLoop(ctx, x.I64(), lo.I64(), hi.I64(), o.I64(), sl, sh)
	case tensor.Int16:
		clipLoop(ctx, x.I16(), lo.I16(), hi.I16(), o.I16(), sl, sh)
	case tensor.Int8:
		clipLoop(ctx, x.I8(), lo.I8(), hi.I8(), o.I8(), sl, sh)
	case tensor.Uint8:
		clipLoop(ctx, x.U8(), lo.U8(), hi.U8(), o.U8(), sl, sh)
	case tensor.Uint16:
		clipLoop(ctx, x.U16(), lo.U16(), hi.U16(), o.U16(), sl, sh)
	default:
		return ctx.Errorf(status.Unimplemented, "dtype %v", x.DType)
	}
	return nil
}

func clipLoop[T num](ctx *kernels.Context, x, lo, hi, o []T, sl, sh int) {
	ctx.For(len(o), 1, kernels.StartLoop, func(a, b int) {
		for i := a; i < b; i++ {
			m := x[i]
			if h := hi[i*sh]; h < m {
				m = h
			}
			if l := lo[i*sl]; m < l {
				m = l
			}
			o[i] = m
		}
	})
}

// addN sums N same-shaped inputs in the dtype, left to right (half and
// bfloat16 in float32, rounded once).
func addN(ctx *kernels.Context) error {
	x0 := ctx.Input(0)
	for i := 1; i < ctx.NumInputs(); i++ {
		if !ctx.Input(i).Shape.Equal(x0.Shape) {
			return ctx.Errorf(status.InvalidArgument, "Inputs to operation %s of type AddN must have the same size and shape.  Input 0: %v != input %d: %v", ctx.Node.Name, x0.Shape, i, ctx.Input(i).Shape)
		}
	}
	if ctx.NumInputs() == 1 {
		ctx.SetOutput(0, x0)
		return nil
	}
	o, err := ctx.Allocate(0, x0.Shape)
	if err != nil {
		return err
	}
	if o.NumElements() == 0 {
		return nil
	}
	switch x0.DType {
	case tensor.Float:
		addNLoop(ctx, o.F32(), func(i int) []float32 { return ctx.Input(i).F32() })
	case tensor.Double:
		addNLoop(ctx, o.F64(), func(i int) []float64 { return ctx.Input(i).F64() })
	case tensor.Half, tensor.Bfloat16:
		// Each partial sum is rounded to the dtype, as TF adds in it.
		out := toF32(x0)
		rnd := roundTo16(x0.DType)
		for i := 1; i < ctx.NumInputs(); i++ {
			for j, v := range toF32(ctx.Input(i)) {
				out[j] = rnd(out[j] + v)
			}
		}
		storeF32(o, out)
	case tensor.Int32:
		addNLoop(ctx, o.I32(), func(i int) []int32 { return ctx.Input(i).I32() })
	case tensor.Int64:
		addNLoop(ctx, o.I64(), func(i int) []int64 { return ctx.Input(i).I64() })
	case tensor.Int16:
		addNLoop(ctx, o.I16(), func(i int) []int16 { return ctx.Input(i).I16() })
	case tensor.Int8:
		addNLoop(ctx, o.I8(), func(i int) []int8 { return ctx.Input(i).I8() })
	case tensor.Uint8:
		addNLoop(ctx, o.U8(), func(i int) []uint8 { return ctx.Input(i).U8() })
	case tensor.Uint16:
		addNLoop(ctx, o.U16(), func(i int) []uint16 { return ctx.Input(i).U16() })
	case tensor.Uint32:
		addNLoop(ctx, o.U32(), func(i int) []uint32 { return ctx.Input(i).U32() })
	case tensor.Uint64:
		addNLoop(ctx, o.U64(), func(i int) []uint64 { return ctx.Input(i).U64() })
	default:
		return ctx.Errorf(status.Unimplemented, "dtype %v", x0.DType)
	}
	return nil
}

func addNLoop[T num](ctx *kernels.Context, o []T, in func(i int) []T) {
	k := ctx.NumInputs()
	srcs := make([][]T, k)
	for i := range srcs {
		srcs[i] = in(i)
	}
	ctx.For(len(o), float64(k), kernels.StartLoop, func(lo, hi int) {
		dst := o[lo:hi]
		copy(dst, srcs[0][lo:hi])
		for _, s := range srcs[1:] {
			s = s[lo:hi]
			s = s[:len(dst)]
			for j, v := range s {
				dst[j] += v
			}
		}
	})
}
