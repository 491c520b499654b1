package cpu

import (
	"bytes"

	"mstream/graph"
	"mstream/kernels"
	"mstream/status"
	"mstream/tensor"
)

// Comparisons and logical binary ops: bool outputs, NumPy broadcasting.
// Equal and NotEqual honour incompatible_shape_error: when it is false and
// the shapes do not broadcast, the result is the scalar false (Equal) or
// true (NotEqual), as TF's BinaryOpState gives. NaN compares unequal to
// everything, itself included.

type cmpKind int

const (
	cEq cmpKind = iota
	cNe
	cLt
	cLe
	cGt
	cGe
	cAnd
	cOr
)

func init() {
	eqTypes := concatTypes(realTypes, []tensor.DType{tensor.Bool, tensor.String})
	for name, k := range map[string]cmpKind{"Equal": cEq, "NotEqual": cNe} {
		k := k
		reg(name, eqTypes, nil, func(n *graph.Node) (kernels.Kernel, error) {
			strict := true
			if a := n.Attrs["incompatible_shape_error"]; a != nil {
				strict = a.GetB()
			}
			return kernels.KernelFunc(func(ctx *kernels.Context) error { return compareOp(ctx, k, strict) }), nil
		})
	}
	for name, k := range map[string]cmpKind{"Less": cLt, "LessEqual": cLe, "Greater": cGt, "GreaterEqual": cGe} {
		k := k
		reg(name, realTypes, nil, fn(func(ctx *kernels.Context) error { return compareOp(ctx, k, true) }))
	}
	for name, k := range map[string]cmpKind{"LogicalAnd": cAnd, "LogicalOr": cOr} {
		k := k
		reg(name, nil, nil, fn(func(ctx *kernels.Context) error { return compareOp(ctx, k, true) }))
	}
}

func compareOp(ctx *kernels.Context, k cmpKind, strict bool) error {
	a, b := ctx.Input(0), ctx.Input(1)
	bc, ok := broadcastShapes(a.Shape, b.Shape)
	if !ok {
		if !strict {
			o, err := ctx.Allocate(0, tensor.Shape{})
			if err != nil {
				return err
			}
			o.Bools()[0] = k == cNe
			return nil
		}
		return ctx.Errorf(status.InvalidArgument, "Incompatible shapes: %v vs. %v", a.Shape, b.Shape)
	}
	o, err := ctx.Allocate(0, bc.out)
	if err != nil {
		return err
	}
	if o.NumElements() == 0 {
		return nil
	}
	out := o.Bools()
	switch a.DType {
	case tensor.Float:
		applyBinary(ctx, bc, a.F32(), b.F32(), out, 1, cmpRow[float32](k))
	case tensor.Double:
		applyBinary(ctx, bc, a.F64(), b.F64(), out, 1, cmpRow[float64](k))
	case tensor.Half, tensor.Bfloat16:
		applyBinary(ctx, bc, toF32(a), toF32(b), out, 1, cmpRow[float32](k))
	case tensor.Int32:
		applyBinary(ctx, bc, a.I32(), b.I32(), out, 1, cmpRow[int32](k))
	case tensor.Int64:
		applyBinary(ctx, bc, a.I64(), b.I64(), out, 1, cmpRow[int64](k))
	case tensor.Int16:
		applyBinary(ctx, bc, a.I16(), b.I16(), out, 1, cmpRow[int16](k))
	case tensor.Int8:
		applyBinary(ctx, bc, a.I8(), b.I8(), out, 1, cmpRow[int8](k))
	case tensor.Uint8:
		applyBinary(ctx, bc, a.U8(), b.U8(), out, 1, cmpRow[uint8](k))
	case tensor.Uint16:
		applyBinary(ctx, bc, a.U16(), b.U16(), out, 1, cmpRow[uint16](k))
	case tensor.Uint32:
		applyBinary(ctx, bc, a.U32(), b.U32(), out, 1, cmpRow[uint32](k))
	case tensor.Uint64:
		applyBinary(ctx, bc, a.U64(), b.U64(), out, 1, cmpRow[uint64](k))
	case tensor.Bool:
		applyBinary(ctx, bc, a.Bools(), b.Bools(), out, 1, boolRow(k))
	case tensor.String:
		eq := k == cEq
		applyBinary(ctx, bc, a.Strs, b.Strs, out, 8, rowOf(func(x, y []byte) bool { return bytes.Equal(x, y) == eq }))
	default:
		return ctx.Errorf(status.Unimplemented, "dtype %v", a.DType)
	}
	return nil
}

// cmpRow has the comparison switch outside the loops.
func cmpRow[T num](k cmpKind) func(o []bool, a, b []T, sa, sb int) {
	return func(o []bool, a, b []T, sa, sb int) {
		switch k {
		case cEq:
			for i := range o {
				o[i] = a[i*sa] == b[i*sb]
			}
		case cNe:
			for i := range o {
				o[i] = a[i*sa] != b[i*sb]
			}
		case cLt:
			for i := range o {
				o[i] = a[i*sa] < b[i*sb]
			}
		case cLe:
			for i := range o {
				o[i] = a[i*sa] <= b[i*sb]
			}
		case cGt:
			for i := range o {
				o[i] = a[i*sa] > b[i*sb]
			}
		case cGe:
			for i := range o {
				o[i] = a[i*sa] >= b[i*sb]
			}
		}
	}
}

func boolRow(k cmpKind) func(o []bool, a, b []bool, sa, sb int) {
	return func(o []bool, a, b []bool, sa, sb int) {
		switch k {
		case cEq:
			for i := range o {
				o[i] = a[i*sa] == b[i*sb]
			}
		case cNe:
			for i := range o {
				o[i] = a[i*sa] != b[i*sb]
			}
		case cAnd:
			for i := range o {
				o[i] = a[i*sa] && b[i*sb]
			}
		case cOr:
			for i := range o {
				o[i] = a[i*sa] || b[i*sb]
			}
		}
	}
}
