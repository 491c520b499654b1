package cpu

import (
	"math"

	"mstream/graph"
	"mstream/kernels"
	"mstream/status"
	"mstream/tensor"
)

// Binary elementwise ops beyond the arithmetic of binary.go: Pow,
// SquaredDifference, the division family and DivNoNan. All broadcast as
// NumPy does through applyBinary.
//
// Integer division semantics are TF's (cwise_ops.h): Div and TruncateDiv
// truncate toward zero, FloorDiv rounds toward -inf, FloorMod takes the
// sign of the divisor, TruncateMod and Mod the sign of the dividend, the
// lowest value divided by -1 wraps to itself instead of trapping. A zero
// integer divisor fails the op: INVALID_ARGUMENT "Integer division by
// zero" for Div, FloorDiv, FloorMod and Mod, and INTERNAL for TruncateDiv
// and TruncateMod, which is the code TF 2.15 reports for those two (its
// error hook only names the others). Integer Pow with a negative exponent
// is INVALID_ARGUMENT, as in TF.

type integer interface {
	~int8 | ~int16 | ~int32 | ~int64 | ~uint8 | ~uint16 | ~uint32 | ~uint64
}

type divKind int

const (
	dPow divKind = iota
	dSqDiff
	dDiv      // Div: true division for floats, truncating for integers
	dFloorDiv // FloorDiv
	dFloorMod // FloorMod
	dTruncDiv // TruncateDiv
	dTruncMod // TruncateMod, Mod
	dDivNoNan // DivNoNan
	dAtan2    // Atan2 (floats only)
)

var divOps = []struct {
	name  string
	kind  divKind
	types []tensor.DType
}{
	{"Pow", dPow, floatSigned},
	{"SquaredDifference", dSqDiff, concatTypes(floatTypes, []tensor.DType{tensor.Int32, tensor.Int64})},
	{"Div", dDiv, realTypes},
	{"FloorDiv", dFloorDiv, realTypes},
	{"FloorMod", dFloorMod, realTypes},
	{"TruncateDiv", dTruncDiv, realTypes},
	{"TruncateMod", dTruncMod, []tensor.DType{tensor.Float, tensor.Double, tensor.Int32, tensor.Int64}},
	{"Mod", dTruncMod, []tensor.DType{tensor.Float, tensor.Double, tensor.Int32, tensor.Int64}},
	{"DivNoNan", dDivNoNan, floatTypes},
	{"Atan2", dAtan2, floatTypes},
}

func init() {
	for _, d := range divOps {
		d := d
		reg(d.name, d.types, nil, func(*graph.Node) (kernels.Kernel, error) {
			return kernels.KernelFunc(func(ctx *kernels.Context) error { return divOp(ctx, d.name, d.kind) }), nil
		})
	}
}

// applyBinary runs row over the broadcast of a and b into o, split over
// the pool: whole ranges when the shapes are equal or one side is a
// scalar, runs along the last output dim otherwise. row computes
// o[i] = a[i*sa] op b[i*sb] with sa, sb in {0, 1}.
func applyBinary[T, U any](ctx *kernels.Context, bc bcast, a, b []T, o []U, cost float64, row func(o []U, a, b []T, sa, sb int)) {
	n := len(o)
	switch {
	case n == 0:
	case len(a) == n && len(b) == n:
		ctx.For(n, cost, kernels.StartLoop, func(lo, hi int) { row(o[lo:hi], a[lo:hi], b[lo:hi], 1, 1) })
	case len(a) == 1 && len(b) == n:
		ctx.For(n, cost, kernels.StartLoop, func(lo, hi int) { row(o[lo:hi], a, b[lo:hi], 0, 1) })
	case len(b) == 1 && len(a) == n:
		ctx.For(n, cost, kernels.StartLoop, func(lo, hi int) { row(o[lo:hi], a[lo:hi], b, 1, 0) })
	default:
		cols := bc.out[len(bc.out)-1]
		ctx.For(int(int64(n)/cols), cost*float64(cols), kernels.StartLoop, func(lo, hi int) {
			forRows(bc, int64(lo), int64(hi), func(oo, ao, bo, m, sa, sb int64) {
				row(o[oo:oo+m], a[ao:], b[bo:], int(sa), int(sb))
			})
		})
	}
}

// rowOf lifts an element function into a row function.
func rowOf[T, U any](f func(x, y T) U) func(o []U, a, b []T, sa, sb int) {
	return func(o []U, a, b []T, sa, sb int) {
		for i := range o {
			o[i] = f(a[i*sa], b[i*sb])
		}
	}
}

func divOp(ctx *kernels.Context, name string, kind divKind) error {
	a, b := ctx.Input(0), ctx.Input(1)
	bc, ok := broadcastShapes(a.Shape, b.Shape)
	if !ok {
		return ctx.Errorf(status.InvalidArgument, "Incompatible shapes: %v vs. %v", a.Shape, b.Shape)
	}
	o, err := ctx.Allocate(0, bc.out)
	if err != nil {
		return err
	}
	if o.NumElements() == 0 {
		return nil
	}
	switch a.DType {
	case tensor.Float:
		if kind == dSqDiff && vecBinary(ctx, "SquaredDifference", bc, a.F32(), b.F32(), o.F32()) {
			return nil
		}
		applyBinary(ctx, bc, a.F32(), b.F32(), o.F32(), 4, rowOf(floatDivFn[float32](kind)))
	case tensor.Double:
		applyBinary(ctx, bc, a.F64(), b.F64(), o.F64(), 4, rowOf(floatDivFn[float64](kind)))
	case tensor.Half, tensor.Bfloat16:
		f := floatDivFn[float32](kind)
		if kind == dFloorDiv || kind == dTruncDiv {
			// TF rounds the quotient to the dtype before flooring; a
			// float32 quotient just below an integer may round up to it.
			rnd, g := roundTo16(a.DType), math.Floor
			if kind == dTruncDiv {
				g = math.Trunc
			}
			f = func(x, y float32) float32 { return float32(g(float64(rnd(x / y)))) }
		}
		out, err := kernels.Scratch[float32](ctx, o.NumElements())
		if err != nil {
			return err
		}
		applyBinary(ctx, bc, toF32(a), toF32(b), out, 4, rowOf(f))
		storeF32(o, out)
	case tensor.Int32:
		return intDiv(ctx, name, kind, bc, a.I32(), b.I32(), o.I32())
	case tensor.Int64:
		return intDiv(ctx, name, kind, bc, a.I64(), b.I64(), o.I64())
	case tensor.Int16:
		return intDiv(ctx, name, kind, bc, a.I16(), b.I16(), o.I16())
	case tensor.Int8:
		return intDiv(ctx, name, kind, bc, a.I8(), b.I8(), o.I8())
	case tensor.Uint8:
		return intDiv(ctx, name, kind, bc, a.U8(), b.U8(), o.U8())
	case tensor.Uint16:
		return intDiv(ctx, name, kind, bc, a.U16(), b.U16(), o.U16())
	case tensor.Uint32:
		return intDiv(ctx, name, kind, bc, a.U32(), b.U32(), o.U32())
	case tensor.Uint64:
		return intDiv(ctx, name, kind, bc, a.U64(), b.U64(), o.U64())
	default:
		return ctx.Errorf(status.Unimplemented, "dtype %v", a.DType)
	}
	return nil
}

// floatDivFn computes in float64 and rounds once to T.
func floatDivFn[T float32 | float64](kind divKind) func(x, y T) T {
	switch kind {
	case dPow:
		return func(x, y T) T { return T(math.Pow(float64(x), float64(y))) }
	case dSqDiff:
		return func(x, y T) T { d := x - y; return d * d }
	case dFloorDiv:
		return func(x, y T) T { return T(math.Floor(float64(x / y))) }
	case dFloorMod:
		return func(x, y T) T {
			m := T(math.Mod(float64(x), float64(y)))
			if m != 0 && (y < 0) != (m < 0) {
				m += y
			}
			return m
		}
	case dTruncDiv:
		return func(x, y T) T { return T(math.Trunc(float64(x / y))) }
	case dTruncMod:
		return func(x, y T) T { return T(math.Mod(float64(x), float64(y))) }
	case dDivNoNan:
		return func(x, y T) T {
			if y == 0 {
				return 0
			}
			return x / y
		}
	case dAtan2:
		return func(x, y T) T { return T(math.Atan2(float64(x), float64(y))) }
	}
	return func(x, y T) T { return x / y }
}

func intDiv[T integer](ctx *kernels.Context, name string, kind divKind, bc bcast, a, b, o []T) error {
	switch kind {
	case dPow:
		for _, y := range b {
			if y < 0 {
				return ctx.Errorf(status.InvalidArgument, "Integers to negative integer powers are not allowed")
			}
		}
		applyBinary(ctx, bc, a, b, o, 8, rowOf(ipow[T]))
		return nil
	case dSqDiff:
		applyBinary(ctx, bc, a, b, o, 1, rowOf(func(x, y T) T { d := x - y; return d * d }))
		return nil
	}
	// Every element of b is read when the output is non-empty, so a zero
	// anywhere in b is a zero divisor.
	for _, y := range b {
		if y == 0 {
			code := status.InvalidArgument
			if name == "TruncateDiv" || name == "TruncateMod" {
				code = status.Internal
			}
			return ctx.Errorf(code, "Integer division by zero")
		}
	}
	var f func(x, y T) T
	switch kind {
	case dDiv, dTruncDiv:
		f = func(x, y T) T { return x / y } // Go wraps lowest/-1 as TF does
	case dFloorDiv:
		f = func(x, y T) T {
			q := x / y
			if q*y != x && (x < 0) != (y < 0) {
				q--
			}
			return q
		}
	case dFloorMod:
		f = func(x, y T) T {
			m := x % y
			if m != 0 && (y < 0) != (m < 0) {
				m += y
			}
			return m
		}
	case dTruncMod:
		f = func(x, y T) T { return x % y }
	default:
		return ctx.Errorf(status.Unimplemented, "%s on integers", name)
	}
	applyBinary(ctx, bc, a, b, o, 4, rowOf(f))
	return nil
}

// ipow is exponentiation by squaring in T (wrapping), y >= 0.
func ipow[T integer](x, y T) T {
	r := T(1)
	for y > 0 {
		if y&1 == 1 {
			r *= x
		}
		x *= x
		y >>= 1
	}
	return r
}

// roundTo16 rounds a float32 to the nearest half or bfloat16 value.
func roundTo16(dt tensor.DType) func(float32) float32 {
	if dt == tensor.Half {
		return func(x float32) float32 { return tensor.HalfToF32(tensor.F32ToHalf(x)) }
	}
	return func(x float32) float32 { return tensor.Bfloat16ToF32(tensor.F32ToBfloat16(x)) }
}
