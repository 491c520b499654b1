package kerneltest

import (
	"fmt"
	"math"
	"math/rand"

	"mstream/status"
	"mstream/tensor"
)

// Families of the unary and binary elementwise ops, comparisons, logical
// ops, Select/SelectV2, ClipByValue and AddN.

func init() {
	for _, u := range []UnarySpec{
		{Op: "Abs", Types: FloatAndSigned, NumPy: "np.abs(a0)"},
		{Op: "Neg", Types: FloatAndSigned, NumPy: "-a0"},
		{Op: "Sign", Types: FloatAndSigned, NumPy: "np.sign(a0)"},
		{Op: "Square", Types: RealTypes, NumPy: "np.square(a0)"},
		{Op: "Reciprocal", Types: FloatTypes, NumPy: "np.reciprocal(a0)"},
		{Op: "Inv", Types: FloatTypes, NumPy: "np.reciprocal(a0)"},
		{Op: "Sqrt", Types: FloatTypes, NumPy: "np.sqrt(a0)", Lo: -1, Hi: 30},
		{Op: "Rsqrt", Types: FloatTypes, NumPy: "1 / np.sqrt(a0)", Lo: -1, Hi: 30},
		{Op: "Exp", Types: FloatTypes, NumPy: "np.exp(a0)", Lo: -90, Hi: 90},
		{Op: "Expm1", Types: FloatTypes, NumPy: "np.expm1(a0)", Lo: -3, Hi: 3},
		{Op: "Log", Types: FloatTypes, NumPy: "np.log(a0)", Lo: -1, Hi: 100},
		{Op: "Log1p", Types: FloatTypes, NumPy: "np.log1p(a0)", Lo: -1.5, Hi: 3},
		{Op: "Sin", Types: FloatTypes, NumPy: "np.sin(a0)", Lo: -10, Hi: 10},
		{Op: "Cos", Types: FloatTypes, NumPy: "np.cos(a0)", Lo: -10, Hi: 10},
		{Op: "Tan", Types: FloatTypes, NumPy: "np.tan(a0)", Lo: -1.5, Hi: 1.5},
		{Op: "Asin", Types: FloatTypes, NumPy: "np.arcsin(a0)", Lo: -1.2, Hi: 1.2},
		{Op: "Acos", Types: FloatTypes, NumPy: "np.arccos(a0)", Lo: -1.2, Hi: 1.2},
		{Op: "Atan", Types: FloatTypes, NumPy: "np.arctan(a0)", Lo: -10, Hi: 10},
		{Op: "Sinh", Types: FloatTypes, NumPy: "np.sinh(a0)", Lo: -5, Hi: 5},
		{Op: "Cosh", Types: FloatTypes, NumPy: "np.cosh(a0)", Lo: -5, Hi: 5},
		{Op: "Asinh", Types: FloatTypes, NumPy: "np.arcsinh(a0)", Lo: -10, Hi: 10},
		{Op: "Acosh", Types: FloatTypes, NumPy: "np.arccosh(a0)", Lo: 0.5, Hi: 10},
		{Op: "Atanh", Types: FloatTypes, NumPy: "np.arctanh(a0)", Lo: -1.2, Hi: 1.2},
		{Op: "Erf", Types: FloatTypes, Ref: math.Erf, Lo: -4, Hi: 4},
		{Op: "Floor", Types: FloatTypes, NumPy: "np.floor(a0)", Lo: -50, Hi: 50},
		{Op: "Ceil", Types: FloatTypes, NumPy: "np.ceil(a0)", Lo: -50, Hi: 50},
		{Op: "Round", Types: dtypes(FloatTypes, []tensor.DType{tensor.Int32, tensor.Int64}), NumPy: "np.round(a0)", Lo: -8, Hi: 8},
		{Op: "Relu6", Types: RealTypes, NumPy: "np.minimum(np.maximum(a0, 0), 6)", Lo: -10, Hi: 10},
		{Op: "Elu", Types: FloatTypes, NumPy: "np.where(a0 < 0, np.expm1(a0), a0)"},
		{Op: "Selu", Types: FloatTypes, Ref: func(x float64) float64 {
			if x < 0 {
				return 1.0507009873554804934193349852946 * 1.6732632423543772848170429916717 * math.Expm1(x)
			}
			return 1.0507009873554804934193349852946 * x
		}},
		{Op: "Softsign", Types: FloatTypes, NumPy: "a0 / (1 + np.abs(a0))"},
		{Op: "IsNan", Types: FloatTypes, NumPy: "np.isnan(a0)"},
		{Op: "IsFinite", Types: FloatTypes, NumPy: "np.isfinite(a0)"},
		{Op: "IsInf", Types: FloatTypes, NumPy: "np.isinf(a0)"},
		{Op: "LogicalNot", Types: []tensor.DType{tensor.Bool}, NumPy: "np.logical_not(a0)"},
		{Op: "ZerosLike", Types: dtypes(RealTypes, []tensor.DType{tensor.Bool}), NumPy: "np.zeros_like(a0)"},
		{Op: "OnesLike", Types: dtypes(RealTypes, []tensor.DType{tensor.Bool}), NumPy: "np.ones_like(a0)"},
	} {
		Add(u.Op, UnaryFamily(u))
	}
	Add("ZerosLike", func(r *rand.Rand) []Case {
		a := Rand(r, tensor.String, tensor.Shape{2, 3})
		return []Case{{Node: NodeFor("ZerosLike", nil, []*tensor.Tensor{a}, nil), Inputs: []*tensor.Tensor{a}, Want: []*tensor.Tensor{tensor.New(tensor.String, a.Shape)}}}
	})
	Add("Softplus", softplusCases)
	Add("LeakyRelu", leakyReluCases)
	Add("LogSoftmax", rowwiseFamily("LogSoftmax", logSoftmaxRef))

	floatDiv := map[string]string{
		"Div": "a0 / a1", "FloorDiv": "np.floor(a0 / a1)", "FloorMod": "np.mod(a0, a1)", "TruncateDiv": "np.trunc(a0 / a1)",
		"TruncateMod": "np.fmod(a0, a1)", "Mod": "np.fmod(a0, a1)",
	}
	signedDiv := "(np.abs(a0) // np.abs(a1)) * np.sign(a0) * np.sign(a1)"
	intDiv := map[string]string{
		"Div": signedDiv, "FloorDiv": "a0 // a1", "FloorMod": "np.mod(a0, a1)", "TruncateDiv": signedDiv,
		"TruncateMod": "np.fmod(a0, a1)", "Mod": "np.fmod(a0, a1)",
	}
	bf16Div := map[string]string{
		"FloorDiv":    "np.floor(" + bf16Round + "((a0 / a1).astype(np.float32)))",
		"TruncateDiv": "np.trunc(" + bf16Round + "((a0 / a1).astype(np.float32)))",
	}
	for _, op := range []string{"Div", "FloorDiv", "FloorMod", "TruncateDiv", "TruncateMod", "Mod"} {
		op := op
		floats := FloatTypes
		if op == "Mod" || op == "TruncateMod" {
			floats = []tensor.DType{tensor.Float, tensor.Double} // TF's CPU kernels
		}
		unsignedExpr := "a0 // a1"
		if op == "FloorMod" {
			unsignedExpr = "a0 % a1"
		}
		var nonBf16 []tensor.DType
		for _, dt := range floats {
			if dt != tensor.Bfloat16 || bf16Div[op] == "" {
				nonBf16 = append(nonBf16, dt)
			}
		}
		Add(op, BinaryFamily(BinarySpec{Op: op, Types: nonBf16, NumPy: floatDiv[op]}),
			BinaryFamily(BinarySpec{Op: op, Types: SignedInts, NumPy: intDiv[op], NonZeroB: true}),
			BinaryFamily(BinarySpec{Op: op, Types: UnsignedInts, NumPy: unsignedExpr, NonZeroB: true}),
			divEdgeCases(op))
		if e := bf16Div[op]; e != "" {
			Add(op, BinaryFamily(BinarySpec{Op: op, Types: []tensor.DType{tensor.Bfloat16}, NumPy: e}))
		}
	}
	Add("Atan2", BinaryFamily(BinarySpec{Op: "Atan2", Types: FloatTypes, NumPy: "np.arctan2(a0, a1)"}))
	Add("DivNoNan", BinaryFamily(BinarySpec{Op: "DivNoNan", Types: FloatTypes, NumPy: "np.where(a1 == 0, np.zeros_like(a0), a0 / a1)"}))
	Add("SquaredDifference", BinaryFamily(BinarySpec{Op: "SquaredDifference", Types: dtypes(FloatTypes, []tensor.DType{tensor.Int32, tensor.Int64}), NumPy: "np.square(a0 - a1)"}))
	// Go's and libm's pow differ by a few ulp at extreme magnitudes.
	powTol := func(dt tensor.DType) float64 {
		if dt == tensor.Double {
			return 1e-10
		}
		return 0
	}
	Add("Pow", BinaryFamily(BinarySpec{Op: "Pow", Types: FloatTypes, NumPy: "np.power(a0, a1)", Tol: powTol}),
		BinaryFamily(BinarySpec{Op: "Pow", Types: SignedInts, NumPy: "np.power(a0, a1)", NonNegB: true}), powErrors)

	cmp := map[string]string{"Equal": "a0 == a1", "NotEqual": "a0 != a1", "Less": "a0 < a1", "LessEqual": "a0 <= a1", "Greater": "a0 > a1", "GreaterEqual": "a0 >= a1"}
	for op, e := range cmp {
		types := RealTypes
		if op == "Equal" || op == "NotEqual" {
			types = dtypes(RealTypes, []tensor.DType{tensor.Bool})
		}
		// A narrow integer range makes equal elements common.
		Add(op, BinaryFamily(BinarySpec{Op: op, Types: types, NumPy: e, Lo: -2, Hi: 2}))
	}
	Add("Equal", equalityExtras("Equal"))
	Add("NotEqual", equalityExtras("NotEqual"))
	Add("LogicalAnd", BinaryFamily(BinarySpec{Op: "LogicalAnd", Types: []tensor.DType{tensor.Bool}, NumPy: "np.logical_and(a0, a1)"}))
	Add("LogicalOr", BinaryFamily(BinarySpec{Op: "LogicalOr", Types: []tensor.DType{tensor.Bool}, NumPy: "np.logical_or(a0, a1)"}))

	Add("Select", selectCases)
	Add("SelectV2", selectV2Cases)
	Add("ClipByValue", clipCases)
	Add("AddN", addNCases)
}

// bf16Round is a NumPy function rounding a float32 array to bfloat16
// (nearest even), for references of ops that TF rounds to bfloat16 midway
// (a quotient before flooring, partial sums of AddN).
const bf16Round = "(lambda q: ((q.view(np.uint32) + np.uint32(0x7fff) + ((q.view(np.uint32) >> np.uint32(16)) & np.uint32(1))) & np.uint32(0xffff0000)).view(np.float32))"

// divEdgeCases: a zero integer divisor fails with TF's code (on the host:
// TF's GPU kernels give a value, see HostErr); the lowest value divided by
// -1 wraps instead of trapping.
func divEdgeCases(op string) Gen {
	return func(r *rand.Rand) []Case {
		var cs []Case
		code := status.InvalidArgument
		if op == "TruncateDiv" || op == "TruncateMod" {
			code = status.Internal // TF 2.15's code for these two
		}
		for _, dt := range Allowed(op, dtypes(SignedInts, UnsignedInts)) {
			a, b := Rand(r, dt, tensor.Shape{5}), NonZero(Rand(r, dt, tensor.Shape{5}))
			SetF64(b, 2, 0)
			cs = append(cs, Case{Node: NodeFor(op, nil, []*tensor.Tensor{a, b}, nil), Inputs: []*tensor.Tensor{a, b}, Err: code, HostErr: true})
		}
		for _, dt := range Allowed(op, []tensor.DType{tensor.Int32, tensor.Int64}) {
			lo := wrapInts([]int64{math.MinInt64, math.MinInt64}, dt, tensor.Shape{2})
			if dt == tensor.Int32 {
				lo = wrapInts([]int64{math.MinInt32, math.MinInt32}, dt, tensor.Shape{2})
			}
			m1 := wrapInts([]int64{-1, 1}, dt, tensor.Shape{2})
			low := elementI64(lo, 0)
			want := map[string][]int64{"Div": {low, low}, "FloorDiv": {low, low}, "TruncateDiv": {low, low},
				"FloorMod": {0, 0}, "TruncateMod": {0, 0}, "Mod": {0, 0}}[op]
			cs = append(cs, Case{Node: NodeFor(op, nil, []*tensor.Tensor{lo, m1}, nil), Inputs: []*tensor.Tensor{lo, m1},
				Want: []*tensor.Tensor{wrapInts(want, dt, tensor.Shape{2})}})
		}
		return cs
	}
}

func powErrors(r *rand.Rand) []Case {
	var cs []Case
	for _, dt := range Allowed("Pow", SignedInts) {
		a, b := Rand(r, dt, tensor.Shape{4}), RandRange(r, dt, tensor.Shape{4}, 0, 3)
		SetF64(b, 1, -2)
		cs = append(cs, Case{Node: NodeFor("Pow", nil, []*tensor.Tensor{a, b}, nil), Inputs: []*tensor.Tensor{a, b}, Err: status.InvalidArgument, HostErr: true})
	}
	return cs
}

// equalityExtras: strings (with embedded NULs), and incompatible shapes
// with incompatible_shape_error=false, which give a scalar.
func equalityExtras(op string) Gen {
	return func(r *rand.Rand) []Case {
		var cs []Case
		eq := op == "Equal"
		for _, p := range [][2]tensor.Shape{{{4}, {4}}, {{}, {3}}, {{2, 1}, {1, 3}}, {{0}, {}}} {
			a, b := Rand(r, tensor.String, p[0]), Rand(r, tensor.String, p[1])
			if len(a.Strs) > 0 && len(b.Strs) > 0 {
				a.Strs[0] = []byte("a\x00b")
				b.Strs[0] = []byte("a\x00b")
			}
			out := tensor.New(tensor.Bool, bcastShape(p[0], p[1]))
			forEachBroadcast(p[0], p[1], func(o, i, j int) { out.Bools()[o] = (string(a.Strs[i]) == string(b.Strs[j])) == eq })
			cs = append(cs, Case{Node: NodeFor(op, nil, []*tensor.Tensor{a, b}, nil), Inputs: []*tensor.Tensor{a, b}, Want: []*tensor.Tensor{out}})
		}
		loose := Attrs{"incompatible_shape_error": ABool(false)}
		for _, p := range IncompatiblePairs {
			a, b := Rand(r, tensor.Float, p[0]), Rand(r, tensor.Float, p[1])
			want := tensor.New(tensor.Bool, tensor.Shape{})
			want.Bools()[0] = !eq
			cs = append(cs, Case{Node: NodeForUnknown(op, loose, []*tensor.Tensor{a, b}, nil), Inputs: []*tensor.Tensor{a, b}, Want: []*tensor.Tensor{want}})
		}
		a, b := Rand(r, tensor.Int32, tensor.Shape{3, 1}), Rand(r, tensor.Int32, tensor.Shape{4})
		cs = append(cs, Case{Node: NodeFor(op, loose, []*tensor.Tensor{a, b}, nil), Inputs: []*tensor.Tensor{a, b}, NumPy: map[bool]string{true: "a0 == a1", false: "a0 != a1"}[eq]})
		return cs
	}
}

// softplusCases follow TF's cut-offs, which depend on the dtype's epsilon:
// x itself above -(log(eps) + 2), e^x below log(eps) + 2.
func softplusCases(r *rand.Rand) []Case {
	var cs []Case
	for _, dt := range FloatTypes {
		eps := map[tensor.DType]float64{tensor.Float: 0x1p-23, tensor.Double: 0x1p-52, tensor.Half: 0x1p-10, tensor.Bfloat16: 0x1p-7}[dt]
		th := math.Log(eps) + 2
		ref := func(x float64) float64 {
			switch {
			case x > -th:
				return x
			case x < th:
				return math.Exp(x)
			}
			return math.Max(x, 0) + math.Log1p(math.Exp(-math.Abs(x)))
		}
		for _, s := range append(append([]tensor.Shape{}, EdgeShapes...), tensor.Shape{3, 1111}) {
			a := WithSpecials(r, RandRange(r, dt, s, -40, 40))
			cs = append(cs, Case{Node: NodeFor("Softplus", nil, []*tensor.Tensor{a}, nil), Inputs: []*tensor.Tensor{a}, Want: []*tensor.Tensor{Map(a, dt, ref)}})
		}
	}
	return cs
}

func leakyReluCases(r *rand.Rand) []Case {
	var cs []Case
	for _, dt := range Allowed("LeakyRelu", RealTypes) {
		for _, alpha := range []float32{0.2, 0.01, 1.5, 3} {
			for _, s := range []tensor.Shape{{}, {0}, {7}, {3, 5}, {4, 257}} {
				a := WithSpecials(r, RandRange(r, dt, s, -10, 10))
				var scaled string
				switch dt {
				case tensor.Half:
					scaled = fmt.Sprintf("a0 * np.float16(%v)", alpha)
				case tensor.Bfloat16:
					// alpha is rounded to bfloat16, as static_cast<T> does.
					scaled = fmt.Sprintf("a0 * np.float32(%v)", FromF64(tensor.Bfloat16, nil, []float64{float64(alpha)}).ElementF64(0))
				case tensor.Float:
					scaled = fmt.Sprintf("a0 * np.float32(%v)", alpha)
				case tensor.Double:
					scaled = fmt.Sprintf("a0 * np.float64(np.float32(%v))", alpha)
				default:
					// Integer alpha truncates.
					scaled = fmt.Sprintf("a0 * a0.dtype.type(%d)", int(alpha))
				}
				cs = append(cs, Case{Node: NodeFor("LeakyRelu", Attrs{"alpha": AFloat(alpha)}, []*tensor.Tensor{a}, nil), Inputs: []*tensor.Tensor{a},
					NumPy: "np.where(a0 > 0, a0, " + scaled + ")"})
			}
		}
	}
	return cs
}

// selectTypes are every dtype Select moves, complex included.
var selectTypes = dtypes(RealTypes, []tensor.DType{tensor.Bool, tensor.String, tensor.Complex64, tensor.Complex128})

// randAny draws a tensor of any dtype, complex ones from random bytes.
func randAny(r *rand.Rand, dt tensor.DType, s tensor.Shape) *tensor.Tensor {
	if dt.IsComplex() {
		t := tensor.New(dt, s)
		for i := range t.Buf {
			t.Buf[i] = byte(r.Intn(256))
		}
		return t
	}
	return Rand(r, dt, s)
}

// pick3 builds the expected Select output: element i of the output comes
// from t (cond true) or e, at the flat indices the index maps give.
func pick3(out tensor.Shape, c, t, e *tensor.Tensor, ci, ti, ei func(o int) int) *tensor.Tensor {
	w := tensor.New(t.DType, out)
	for o := 0; o < int(out.NumElements()); o++ {
		src, k := e, ei(o)
		if c.Bools()[ci(o)] {
			src, k = t, ti(o)
		}
		if t.DType == tensor.String {
			w.Strs[o] = src.Strs[k]
			continue
		}
		es := t.DType.Size()
		copy(w.Buf[o*es:(o+1)*es], src.Buf[k*es:(k+1)*es])
	}
	return w
}

func selectCases(r *rand.Rand) []Case {
	var cs []Case
	id := func(o int) int { return o }
	for _, dt := range Allowed("Select", selectTypes) {
		for _, s := range []tensor.Shape{{}, {0}, {5}, {3, 4}, {2, 3, 4}} {
			t, e := randAny(r, dt, s), randAny(r, dt, s)
			// Elementwise.
			c := Rand(r, tensor.Bool, s)
			cs = append(cs, Case{Node: NodeFor("Select", nil, []*tensor.Tensor{c, t, e}, nil), Inputs: []*tensor.Tensor{c, t, e},
				Want: []*tensor.Tensor{pick3(s, c, t, e, id, id, id)}})
			// A scalar condition picks a whole input.
			sc := Rand(r, tensor.Bool, tensor.Shape{})
			cs = append(cs, Case{Node: NodeFor("Select", nil, []*tensor.Tensor{sc, t, e}, nil), Inputs: []*tensor.Tensor{sc, t, e},
				Want: []*tensor.Tensor{pick3(s, sc, t, e, func(int) int { return 0 }, id, id)}})
			// A vector condition picks rows of a higher-rank input.
			if len(s) >= 2 {
				vc := Rand(r, tensor.Bool, tensor.Shape{s[0]})
				row := int(s.NumElements() / s[0])
				cs = append(cs, Case{Node: NodeFor("Select", nil, []*tensor.Tensor{vc, t, e}, nil), Inputs: []*tensor.Tensor{vc, t, e},
					Want: []*tensor.Tensor{pick3(s, vc, t, e, func(o int) int { return o / row }, id, id)}})
			}
		}
	}
	bad := [][3]tensor.Shape{{{3}, {3}, {4}}, {{2}, {3, 2}, {3, 2}}, {{2, 2}, {2, 3}, {2, 3}}}
	for _, b := range bad {
		c, t, e := Rand(r, tensor.Bool, b[0]), Rand(r, tensor.Float, b[1]), Rand(r, tensor.Float, b[2])
		cs = append(cs, Case{Node: NodeForUnknown("Select", nil, []*tensor.Tensor{c, t, e}, nil), Inputs: []*tensor.Tensor{c, t, e}, Err: status.InvalidArgument})
	}
	return cs
}

func selectV2Cases(r *rand.Rand) []Case {
	var cs []Case
	shapes := [][3]tensor.Shape{
		{{}, {}, {}}, {{5}, {5}, {5}}, {{}, {3, 4}, {3, 4}}, {{3, 1}, {1, 4}, {}}, {{2, 1, 4}, {3, 1}, {2, 3, 4}},
		{{0}, {}, {1}}, {{4}, {2, 4}, {1, 4}}, {{2, 3, 4}, {4}, {3, 1}},
	}
	for _, dt := range Allowed("SelectV2", selectTypes) {
		for _, s := range shapes {
			c, t, e := Rand(r, tensor.Bool, s[0]), randAny(r, dt, s[1]), randAny(r, dt, s[2])
			out := bcastShape(bcastShape(s[0], s[1]), s[2])
			at := func(sh tensor.Shape) func(o int) int {
				return func(o int) int { return bcastIndex(unravel(o, out), sh) }
			}
			cs = append(cs, Case{Node: NodeFor("SelectV2", nil, []*tensor.Tensor{c, t, e}, nil), Inputs: []*tensor.Tensor{c, t, e},
				Want: []*tensor.Tensor{pick3(out, c, t, e, at(s[0]), at(s[1]), at(s[2]))}})
		}
	}
	for _, b := range [][3]tensor.Shape{{{3}, {4}, {4}}, {{2}, {3}, {2}}} {
		c, t, e := Rand(r, tensor.Bool, b[0]), Rand(r, tensor.Float, b[1]), Rand(r, tensor.Float, b[2])
		cs = append(cs, Case{Node: NodeForUnknown("SelectV2", nil, []*tensor.Tensor{c, t, e}, nil), Inputs: []*tensor.Tensor{c, t, e}, Err: status.InvalidArgument})
	}
	return cs
}

func clipCases(r *rand.Rand) []Case {
	var cs []Case
	// std::max(std::min(x, hi), lo), NaN in x kept.
	expr := "np.where(np.where(a2 < a0, a2, a0) < a1, a1, np.where(a2 < a0, a2, a0))"
	types := Allowed("ClipByValue", dtypes(FloatAndSigned, []tensor.DType{tensor.Uint8, tensor.Uint16}))
	for _, dt := range types {
		for _, s := range []tensor.Shape{{}, {0}, {7}, {3, 5}, {4, 257}} {
			for _, scalar := range [][2]bool{{true, true}, {false, false}, {true, false}, {false, true}} {
				x := WithSpecials(r, RandRange(r, dt, s, -10, 10))
				bs := func(sc bool, lo, hi float64) *tensor.Tensor {
					if sc {
						return RandRange(r, dt, tensor.Shape{}, lo, hi)
					}
					return RandRange(r, dt, s, lo, hi)
				}
				lo, hi := bs(scalar[0], -6, 1), bs(scalar[1], 0, 6)
				cs = append(cs, Case{Node: NodeFor("ClipByValue", nil, []*tensor.Tensor{x, lo, hi}, nil), Inputs: []*tensor.Tensor{x, lo, hi}, NumPy: expr})
			}
		}
		// Bounds the wrong way round clip everything to the lower one.
		x, lo, hi := Rand(r, dt, tensor.Shape{6}), RandRange(r, dt, tensor.Shape{}, 5, 6), RandRange(r, dt, tensor.Shape{}, 1, 2)
		cs = append(cs, Case{Node: NodeFor("ClipByValue", nil, []*tensor.Tensor{x, lo, hi}, nil), Inputs: []*tensor.Tensor{x, lo, hi}, NumPy: expr})
	}
	x, lo, hi := Rand(r, tensor.Float, tensor.Shape{3, 4}), Rand(r, tensor.Float, tensor.Shape{4}), Rand(r, tensor.Float, tensor.Shape{})
	cs = append(cs, Case{Node: NodeForUnknown("ClipByValue", nil, []*tensor.Tensor{x, lo, hi}, nil), Inputs: []*tensor.Tensor{x, lo, hi}, Err: status.InvalidArgument})
	return cs
}

func addNCases(r *rand.Rand) []Case {
	var cs []Case
	for _, dt := range Allowed("AddN", RealTypes) {
		for _, n := range []int{1, 2, 3, 5} {
			for _, s := range []tensor.Shape{{}, {0}, {7}, {3, 70}} {
				var in []*tensor.Tensor
				expr := ""
				for i := 0; i < n; i++ {
					in = append(in, WithSpecials(r, Rand(r, dt, s)))
					switch {
					case i == 0:
						expr = "a0"
					case dt == tensor.Bfloat16:
						// Each partial sum is rounded to bfloat16.
						expr = fmt.Sprintf("%s((%s + a%d).astype(np.float32))", bf16Round, expr, i)
					default:
						expr += fmt.Sprintf(" + a%d", i)
					}
				}
				cs = append(cs, Case{Node: NodeFor("AddN", nil, in, map[int]int{0: n}), Inputs: in, NumPy: expr})
			}
		}
	}
	a, b := Rand(r, tensor.Float, tensor.Shape{3}), Rand(r, tensor.Float, tensor.Shape{4})
	cs = append(cs, Case{Node: NodeForUnknown("AddN", nil, []*tensor.Tensor{a, b}, map[int]int{0: 2}), Inputs: []*tensor.Tensor{a, b}, Err: status.InvalidArgument})
	return cs
}
