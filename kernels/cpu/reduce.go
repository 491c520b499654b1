package cpu

import (
	"math"

	"mstream/graph"
	"mstream/kernels"
	"mstream/status"
	"mstream/tensor"
)

func init() {
	for _, op := range []string{"Sum", "Mean"} {
		mean := op == "Mean"
		reg(op, numericTypes, []string{"reduction_indices"}, func(n *graph.Node) (kernels.Kernel, error) {
			keep := attrBool(n, "keep_dims")
			return kernels.KernelFunc(func(ctx *kernels.Context) error { return reduce(ctx, mean, keep) }), nil
		})
	}
	castTypes := append(append([]tensor.DType{}, numericTypes...), tensor.Bool)
	reg("Cast", nil, nil, func(n *graph.Node) (kernels.Kernel, error) {
		src, dst := attrType(n, "SrcT"), attrType(n, "DstT")
		ok := func(d tensor.DType) bool {
			for _, t := range castTypes {
				if t == d {
					return true
				}
			}
			return false
		}
		if src == dst && (src == tensor.String || ok(src)) {
			return kernels.KernelFunc(func(ctx *kernels.Context) error { ctx.SetOutput(0, ctx.Input(0)); return nil }), nil
		}
		if !ok(src) || !ok(dst) {
			return nil, status.Errorf(status.Unimplemented, "Cast %v to %v is not supported (node '%s')", src, dst, n.Name)
		}
		return kernels.KernelFunc(castKernel), nil
	})
}

// reduce sums (or averages) over the axes in input 1. It views the input as
// [outer, reduced, inner] groups through an odometer over the kept dims, so
// any axis set works; the accumulator is float64 for floats and the
// element type for integers (wrapping as TF's does).
func reduce(ctx *kernels.Context, mean, keep bool) error {
	in := ctx.Input(0)
	axes, err := hostInts(ctx, 1, "reduction_indices")
	if err != nil {
		return err
	}
	r := len(in.Shape)
	red := make([]bool, r)
	for _, a := range axes {
		if a < -int64(r) || a >= int64(r) {
			return ctx.Errorf(status.InvalidArgument, "Invalid reduction dimension (%d for input with %d dimension(s)", a, r)
		}
		if a < 0 {
			a += int64(r)
		}
		red[a] = true
	}
	var out, kept tensor.Shape
	var redShape tensor.Shape
	for i, d := range in.Shape {
		if red[i] {
			redShape = append(redShape, d)
			if keep {
				out = append(out, 1)
			}
		} else {
			kept = append(kept, d)
			out = append(out, d)
		}
	}
	o, err := ctx.Allocate(0, out)
	if err != nil {
		return err
	}
	// Per kept and reduced dim, the input stride.
	st := strides(in.Shape)
	var kst, rst []int64
	for i := range in.Shape {
		if red[i] {
			rst = append(rst, st[i])
		} else {
			kst = append(kst, st[i])
		}
	}
	count := redShape.NumElements()
	nOut := int(o.NumElements())
	switch in.DType {
	case tensor.Float:
		reduceF(ctx, in.F32(), o.F32(), kept, kst, redShape, rst, count, mean)
	case tensor.Double:
		reduceF(ctx, in.F64(), o.F64(), kept, kst, redShape, rst, count, mean)
	case tensor.Half, tensor.Bfloat16:
		res := make([]float32, nOut)
		reduceF(ctx, toF32(in), res, kept, kst, redShape, rst, count, mean)
		storeF32(o, res)
	case tensor.Int32:
		reduceI(ctx, in.I32(), o.I32(), kept, kst, redShape, rst, count, mean)
	case tensor.Int64:
		reduceI(ctx, in.I64(), o.I64(), kept, kst, redShape, rst, count, mean)
	case tensor.Int16:
		reduceI(ctx, in.I16(), o.I16(), kept, kst, redShape, rst, count, mean)
	case tensor.Int8:
		reduceI(ctx, in.I8(), o.I8(), kept, kst, redShape, rst, count, mean)
	case tensor.Uint8:
		reduceI(ctx, in.U8(), o.U8(), kept, kst, redShape, rst, count, mean)
	case tensor.Uint16:
		reduceI(ctx, in.U16(), o.U16(), kept, kst, redShape, rst, count, mean)
	case tensor.Uint32:
		reduceI(ctx, in.U32(), o.U32(), kept, kst, redShape, rst, count, mean)
	case tensor.Uint64:
		reduceI(ctx, in.U64(), o.U64(), kept, kst, redShape, rst, count, mean)
	}
	return nil
}

// offsets lists the flat offsets of every index of shape under strides.
func offsets(shape tensor.Shape, st []int64) []int64 {
	n := shape.NumElements()
	offs := make([]int64, 0, n)
	if n == 0 {
		return offs
	}
	idx := make([]int64, len(shape))
	var off int64
	for k := int64(0); k < n; k++ {
		offs = append(offs, off)
		for d := len(shape) - 1; d >= 0; d-- {
			idx[d]++
			off += st[d]
			if idx[d] < shape[d] {
				break
			}
			off -= st[d] * idx[d]
			idx[d] = 0
		}
	}
	return offs
}

func reduceF[T float32 | float64](ctx *kernels.Context, x, o []T, kept tensor.Shape, kst []int64, rs tensor.Shape, rst []int64, count int64, mean bool) {
	outOff := offsets(kept, kst)
	inOff := offsets(rs, rst)
	contiguous := len(rst) > 0 && rst[len(rst)-1] == 1 && int64(len(inOff)) == count && count > 0 && inOff[count-1] == count-1
	ctx.For(len(o), float64(count)+1, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			base := outOff[i]
			var s float64
			if contiguous {
				for _, v := range x[base : base+count] {
					s += float64(v)
				}
			} else {
				for _, off := range inOff {
					s += float64(x[base+off])
				}
			}
			if mean {
				if count == 0 {
					s = math.NaN()
				} else {
					s /= float64(count)
				}
			}
			o[i] = T(s)
		}
	})
}

func reduceI[T num](ctx *kernels.Context, x, o []T, kept tensor.Shape, kst []int64, rs tensor.Shape, rst []int64, count int64, mean bool) {
	outOff := offsets(kept, kst)
	inOff := offsets(rs, rst)
	ctx.For(len(o), float64(count)+1, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			base := outOff[i]
			var s T
			for _, off := range inOff {
				s += x[base+off]
			}
			if mean && count > 0 {
				s /= T(count)
			}
			o[i] = s
		}
	})
}

func castKernel(ctx *kernels.Context) error {
	in := ctx.Input(0)
	o, err := ctx.Allocate(0, in.Shape)
	if err != nil {
		return err
	}
	switch o.DType {
	case tensor.Float:
		castTo(o.F32(), in)
	case tensor.Double:
		castTo(o.F64(), in)
	case tensor.Half, tensor.Bfloat16:
		v := make([]float32, o.NumElements())
		castTo(v, in)
		storeF32(o, v)
	case tensor.Int32:
		castTo(o.I32(), in)
	case tensor.Int64:
		castTo(o.I64(), in)
	case tensor.Int16:
		castTo(o.I16(), in)
	case tensor.Int8:
		castTo(o.I8(), in)
	case tensor.Uint8:
		castTo(o.U8(), in)
	case tensor.Uint16:
		castTo(o.U16(), in)
	case tensor.Uint32:
		castTo(o.U32(), in)
	case tensor.Uint64:
		castTo(o.U64(), in)
	case tensor.Bool:
		v := make([]float64, o.NumElements())
		castTo(v, in)
		b := o.Bools()
		for i, x := range v {
			b[i] = x != 0
		}
	}
	return nil
}

func castTo[D num](d []D, in *tensor.Tensor) {
	switch in.DType {
	case tensor.Float:
		conv(d, in.F32())
	case tensor.Double:
		conv(d, in.F64())
	case tensor.Half, tensor.Bfloat16:
		conv(d, toF32(in))
	case tensor.Int32:
		conv(d, in.I32())
	case tensor.Int64:
		conv(d, in.I64())
	case tensor.Int16:
		conv(d, in.I16())
	case tensor.Int8:
		conv(d, in.I8())
	case tensor.Uint8, tensor.Bool:
		conv(d, in.U8())
	case tensor.Uint16:
		conv(d, in.U16())
	case tensor.Uint32:
		conv(d, in.U32())
	case tensor.Uint64:
		conv(d, in.U64())
	}
}

// conv converts with Go's conversion rules, which match C++ static_cast for
// every value C++ defines (float to int truncates toward zero).
func conv[D, S num](d []D, s []S) {
	d = d[:len(s)]
	for i, v := range s {
		d[i] = D(v)
	}
}
