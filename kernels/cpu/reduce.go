package cpu

import (
	"mstream/graph"
	"mstream/kernels"
	"mstream/status"
	"mstream/tensor"
)

func init() {
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
		v, err := kernels.Scratch[float32](ctx, o.NumElements())
		if err != nil {
			return err
		}
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
		v, err := kernels.Scratch[float64](ctx, o.NumElements())
		if err != nil {
			return err
		}
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
