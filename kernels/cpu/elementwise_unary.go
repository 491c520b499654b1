package cpu

import (
	"math"

	"mstream/graph"
	"mstream/kernels"
	"mstream/status"
	"mstream/tensor"
)

// Unary elementwise ops. Float math is done in float64 per element and
// rounded once to the dtype (half and bfloat16 through float32), which is
// at least as accurate as TF's Eigen float paths; float32 inputs of the
// common ops take the vectorised loops of package vec instead (vec.go).
// Integer variants are exact and wrap where TF's do (Neg and Abs of the
// lowest value, Square).

// unarySpec is one op: its float function and, when TF registers integer
// kernels, its integer function.
type unarySpec struct {
	f     func(float64) float64
	i     func(int64) int64 // nil: floats only
	types []tensor.DType
}

// unsignedFns replace a spec's integer function for unsigned dtypes, whose
// large values are negative as int64.
var unsignedFns = map[string]func(int64) int64{
	"Relu6": func(x int64) int64 {
		if uint64(x) > 6 {
			return 6
		}
		return x
	},
}

var (
	signedInts   = []tensor.DType{tensor.Int8, tensor.Int16, tensor.Int32, tensor.Int64}
	unsignedInts = []tensor.DType{tensor.Uint8, tensor.Uint16, tensor.Uint32, tensor.Uint64}
	floatSigned  = concatTypes(floatTypes, signedInts)
	realTypes    = concatTypes(floatTypes, signedInts, unsignedInts)
)

func concatTypes(sets ...[]tensor.DType) []tensor.DType {
	var out []tensor.DType
	for _, s := range sets {
		out = append(out, s...)
	}
	return out
}

// SELU's scale, and scale*alpha (alpha 1.6732632423543772848170429916717)
// rounded once, TF's constant: the product of the two rounded doubles is
// one ulp lower, and SeluGrad's y + scale*alpha cancels for y near
// -scale*alpha, which magnifies that ulp.
const (
	seluScale      = 1.0507009873554804934193349852946
	seluScaleAlpha = 1.7580993408473768599402175208123
)

var unarySpecs = map[string]unarySpec{
	"Abs":        {math.Abs, func(x int64) int64 { return iabs(x) }, floatSigned},
	"Neg":        {func(x float64) float64 { return -x }, func(x int64) int64 { return -x }, floatSigned},
	"Sign":       {fsign, isign, floatSigned},
	"Square":     {func(x float64) float64 { return x * x }, func(x int64) int64 { return x * x }, realTypes},
	"Reciprocal": {func(x float64) float64 { return 1 / x }, nil, floatTypes},
	"Inv":        {func(x float64) float64 { return 1 / x }, nil, floatTypes},
	"Sqrt":       {math.Sqrt, nil, floatTypes},
	"Rsqrt":      {func(x float64) float64 { return 1 / math.Sqrt(x) }, nil, floatTypes},
	"Exp":        {math.Exp, nil, floatTypes},
	"Expm1":      {math.Expm1, nil, floatTypes},
	"Log":        {math.Log, nil, floatTypes},
	"Log1p":      {math.Log1p, nil, floatTypes},
	"Sin":        {math.Sin, nil, floatTypes},
	"Cos":        {math.Cos, nil, floatTypes},
	"Tan":        {math.Tan, nil, floatTypes},
	"Asin":       {math.Asin, nil, floatTypes},
	"Acos":       {math.Acos, nil, floatTypes},
	"Atan":       {math.Atan, nil, floatTypes},
	"Sinh":       {math.Sinh, nil, floatTypes},
	"Cosh":       {math.Cosh, nil, floatTypes},
	"Asinh":      {math.Asinh, nil, floatTypes},
	"Acosh":      {math.Acosh, nil, floatTypes},
	"Atanh":      {math.Atanh, nil, floatTypes},
	"Erf":        {math.Erf, nil, floatTypes},
	"Floor":      {math.Floor, nil, floatTypes},
	"Ceil":       {math.Ceil, nil, floatTypes},
	"Round":      {math.RoundToEven, func(x int64) int64 { return x }, concatTypes(floatTypes, []tensor.DType{tensor.Int32, tensor.Int64})},
	"Relu6":      {relu6, func(x int64) int64 { return min(max(x, 0), 6) }, realTypes},
	"Elu":        {elu, nil, floatTypes},
	"Selu":       {selu, nil, floatTypes},
	"Softsign":   {func(x float64) float64 { return x / (1 + math.Abs(x)) }, nil, floatTypes},
}

func iabs(x int64) int64 {
	if x < 0 {
		return -x
	}
	return x
}

func fsign(x float64) float64 {
	switch {
	case x > 0:
		return 1
	case x < 0:
		return -1
	case x == 0:
		return 0 // -0 too: TF's Sign(-0) is +0 (test/capidiff found it)
	}
	return x // NaN stays (TF 2.x: sign(NaN) is NaN)
}

func isign(x int64) int64 {
	switch {
	case x > 0:
		return 1
	case x < 0:
		return -1
	}
	return 0
}

// relu6 keeps NaN, as Relu does.
func relu6(x float64) float64 {
	if x != x {
		return x
	}
	return math.Min(math.Max(x, 0), 6)
}

func elu(x float64) float64 {
	if x < 0 {
		return math.Expm1(x)
	}
	return x
}

func selu(x float64) float64 {
	if x < 0 {
		return seluScaleAlpha * math.Expm1(x)
	}
	return seluScale * x
}

// softplus returns log(1 + e^x) with TF's cut-offs, which depend on the
// dtype's epsilon: x itself above -(log(eps) + 2), e^x below log(eps) + 2.
// They keep e^x from overflowing, and TF's results (coarse for bfloat16)
// come from them.
func softplus(dt tensor.DType) func(float64) float64 {
	eps := map[tensor.DType]float64{tensor.Float: 0x1p-23, tensor.Double: 0x1p-52, tensor.Half: 0x1p-10, tensor.Bfloat16: 0x1p-7}[dt]
	threshold := math.Log(eps) + 2
	return func(x float64) float64 {
		switch {
		case x > -threshold:
			return x
		case x < threshold:
			return math.Exp(x)
		}
		return math.Log1p(math.Exp(x))
	}
}

func init() {
	for name, s := range unarySpecs {
		s, name := s, name
		reg(name, s.types, nil, fn(func(ctx *kernels.Context) error { return unaryMap(ctx, name, s) }))
	}
	reg("Softplus", floatTypes, nil, func(n *graph.Node) (kernels.Kernel, error) {
		f := softplus(attrType(n, "T"))
		return kernels.KernelFunc(func(ctx *kernels.Context) error { return unaryMap(ctx, "Softplus", unarySpec{f: f}) }), nil
	})
	reg("LeakyRelu", realTypes, nil, func(n *graph.Node) (kernels.Kernel, error) {
		alpha := 0.2
		if a := n.Attrs["alpha"]; a != nil {
			alpha = float64(a.GetF())
		}
		return kernels.KernelFunc(func(ctx *kernels.Context) error { return leakyRelu(ctx, alpha) }), nil
	})
	for name, f := range map[string]func(float64) bool{"IsNan": math.IsNaN, "IsFinite": isFinite, "IsInf": func(x float64) bool { return math.IsInf(x, 0) }} {
		f := f
		reg(name, floatTypes, nil, fn(func(ctx *kernels.Context) error { return floatPredicate(ctx, f) }))
	}
	reg("LogicalNot", nil, nil, fn(logicalNot))
	reg("ZerosLike", append(append([]tensor.DType{}, numericTypes...), tensor.Bool, tensor.String), nil, fn(func(ctx *kernels.Context) error { return fillLike(ctx, 0) }))
	reg("OnesLike", append(append([]tensor.DType{}, numericTypes...), tensor.Bool), nil, fn(func(ctx *kernels.Context) error { return fillLike(ctx, 1) }))
}

func unsignedFn(name string, s unarySpec) func(int64) int64 {
	if f := unsignedFns[name]; f != nil {
		return f
	}
	return s.i
}

func isFinite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }

func unaryMap(ctx *kernels.Context, name string, s unarySpec) error {
	in := ctx.Input(0)
	o, err := ctx.Allocate(0, in.Shape)
	if err != nil {
		return err
	}
	n := int(in.NumElements())
	if n == 0 {
		return nil
	}
	switch in.DType {
	case tensor.Float:
		if vecUnary(ctx, name, in.F32(), o.F32()) {
			return nil
		}
		mapFloat(ctx, s.f, in.F32(), o.F32())
	case tensor.Double:
		mapFloat(ctx, s.f, in.F64(), o.F64())
	case tensor.Half, tensor.Bfloat16:
		x := toF32(in)
		if !vecUnary(ctx, name, x, x) {
			mapFloat(ctx, s.f, x, x)
		}
		storeF32(o, x)
	case tensor.Int32:
		mapInt(ctx, s.i, in.I32(), o.I32())
	case tensor.Int64:
		mapInt(ctx, s.i, in.I64(), o.I64())
	case tensor.Int16:
		mapInt(ctx, s.i, in.I16(), o.I16())
	case tensor.Int8:
		mapInt(ctx, s.i, in.I8(), o.I8())
	case tensor.Uint8:
		mapInt(ctx, unsignedFn(name, s), in.U8(), o.U8())
	case tensor.Uint16:
		mapInt(ctx, unsignedFn(name, s), in.U16(), o.U16())
	case tensor.Uint32:
		mapInt(ctx, unsignedFn(name, s), in.U32(), o.U32())
	case tensor.Uint64:
		mapInt(ctx, unsignedFn(name, s), in.U64(), o.U64())
	default:
		return ctx.Errorf(status.Unimplemented, "dtype %v", in.DType)
	}
	return nil
}

// mapFloat applies f in float64 over the pool.
func mapFloat[T float32 | float64](ctx *kernels.Context, f func(float64) float64, x, o []T) {
	ctx.For(len(x), 8, kernels.StartLoop, func(lo, hi int) {
		xs, os := x[lo:hi], o[lo:hi]
		os = os[:len(xs)]
		for i, v := range xs {
			os[i] = T(f(float64(v)))
		}
	})
}

// mapInt applies f through int64; the conversion back wraps, which is what
// TF's arithmetic in the dtype gives for Neg, Abs and Square.
func mapInt[T num](ctx *kernels.Context, f func(int64) int64, x, o []T) {
	ctx.For(len(x), 2, kernels.StartLoop, func(lo, hi int) {
		xs, os := x[lo:hi], o[lo:hi]
		os = os[:len(xs)]
		for i, v := range xs {
			os[i] = T(f(int64(v)))
		}
	})
}

func leakyRelu(ctx *kernels.Context, alpha float64) error {
	in := ctx.Input(0)
	o, err := ctx.Allocate(0, in.Shape)
	if err != nil {
		return err
	}
	if in.NumElements() == 0 {
		return nil
	}
	switch in.DType {
	case tensor.Float:
		leakyLoop(ctx, float32(alpha), in.F32(), o.F32())
	case tensor.Double:
		leakyLoop(ctx, alpha, in.F64(), o.F64())
	case tensor.Half, tensor.Bfloat16:
		// alpha is rounded to the dtype first, as static_cast<T>(alpha).
		at := tensor.New(in.DType, tensor.Shape{})
		storeF32(at, []float32{float32(alpha)})
		x := toF32(in)
		leakyLoop(ctx, toF32(at)[0], x, x)
		storeF32(o, x)
	case tensor.Int32:
		leakyLoop(ctx, int32(alpha), in.I32(), o.I32())
	case tensor.Int64:
		leakyLoop(ctx, int64(alpha), in.I64(), o.I64())
	case tensor.Int16:
		leakyLoop(ctx, int16(alpha), in.I16(), o.I16())
	case tensor.Int8:
		leakyLoop(ctx, int8(alpha), in.I8(), o.I8())
	case tensor.Uint8:
		leakyLoop(ctx, uint8(alpha), in.U8(), o.U8())
	case tensor.Uint16:
		leakyLoop(ctx, uint16(alpha), in.U16(), o.U16())
	case tensor.Uint32:
		leakyLoop(ctx, uint32(alpha), in.U32(), o.U32())
	case tensor.Uint64:
		leakyLoop(ctx, uint64(alpha), in.U64(), o.U64())
	default:
		return ctx.Errorf(status.Unimplemented, "dtype %v", in.DType)
	}
	return nil
}

// leakyLoop is x > 0 ? x : x*alpha with alpha already in the dtype (an
// integer alpha truncates, as TF's static_cast does).
func leakyLoop[T num](ctx *kernels.Context, alpha T, x, o []T) {
	ctx.For(len(x), 1, kernels.StartLoop, func(lo, hi int) {
		xs, os := x[lo:hi], o[lo:hi]
		os = os[:len(xs)]
		for i, v := range xs {
			if v > 0 {
				os[i] = v
			} else {
				os[i] = v * alpha
			}
		}
	})
}

func floatPredicate(ctx *kernels.Context, f func(float64) bool) error {
	in := ctx.Input(0)
	o, err := ctx.Allocate(0, in.Shape)
	if err != nil {
		return err
	}
	b := o.Bools()
	for i := range b {
		b[i] = f(in.ElementF64(i))
	}
	return nil
}

func logicalNot(ctx *kernels.Context) error {
	in := ctx.Input(0)
	o, err := ctx.Allocate(0, in.Shape)
	if err != nil {
		return err
	}
	x, b := in.Bools(), o.Bools()
	for i, v := range x {
		b[i] = !v
	}
	return nil
}

// fillLike writes v (0 or 1) into a tensor shaped like the input; zeros of
// strings are empty strings.
func fillLike(ctx *kernels.Context, v float64) error {
	in := ctx.Input(0)
	o, err := ctx.Allocate(0, in.Shape)
	if err != nil {
		return err
	}
	if o.DType == tensor.String {
		return nil // strings start empty
	}
	if v == 0 {
		// An allocator may hand out a used buffer.
		clear(o.Buf)
		return nil
	}
	n := int(o.NumElements())
	switch o.DType {
	case tensor.Float:
		fillVal(o.F32(), 1)
	case tensor.Double:
		fillVal(o.F64(), 1)
	case tensor.Half:
		fillVal(o.U16(), tensor.F32ToHalf(1))
	case tensor.Bfloat16:
		fillVal(o.U16(), tensor.F32ToBfloat16(1))
	case tensor.Bool:
		fillBool(o.Bools(), true)
	default:
		for i := 0; i < n; i++ {
			copy(o.Buf[i*o.DType.Size():], oneBytes(o.DType))
		}
	}
	return nil
}

func fillVal[T any](s []T, v T) {
	for i := range s {
		s[i] = v
	}
}

// oneBytes is the little-endian encoding of integer 1 in dt.
func oneBytes(dt tensor.DType) []byte {
	b := make([]byte, dt.Size())
	b[0] = 1
	return b
}
