package grad

import (
	"mstream/graph"
	"mstream/tensor"
)

// Gradients of the elementwise and reduction math ops, after TF's
// cc/gradients/math_grad.cc (and python/ops/math_grad.py where the C++
// has none).

// copyAttrs picks the named attrs of n that are set.
func copyAttrs(n *graph.Node, names ...string) A {
	a := A{}
	for _, k := range names {
		if v := n.Attrs[k]; v != nil {
			a[k] = v
		}
	}
	return a
}

func in(n *graph.Node, i int) graph.Output { return n.Inputs[i] }

// none is NoGradient.
var none = graph.Output{}

// reduceBoth sums gx and gy over the dims broadcasting added to x and y
// and reshapes them to x's and y's shapes: TF's BinaryGradCommon.
func reduceBoth(b *Builder, n *graph.Node, gx, gy graph.Output) []graph.Output {
	sx, sy := b.Op("Shape", nil, in(n, 0)), b.Op("Shape", nil, in(n, 1))
	r := b.node("BroadcastGradientArgs", nil, sx, sy)
	dx := b.Op("Reshape", nil, b.Op("Sum", nil, gx, r.Output(0)), sx)
	dy := b.Op("Reshape", nil, b.Op("Sum", nil, gy, r.Output(1)), sy)
	return []graph.Output{dx, dy}
}

func init() {
	noGradient("Const", "Shape", "ShapeN", "Size", "Rank", "ZerosLike", "OnesLike", "StopGradient",
		"Floor", "Ceil", "Round", "Rint", "ArgMax", "ArgMin", "Equal", "NotEqual", "Less",
		"LessEqual", "Greater", "GreaterEqual", "LogicalAnd", "LogicalOr", "LogicalNot",
		"BroadcastGradientArgs", "OneHot", "RandomUniform", "RandomStandardNormal",
		"TruncatedNormal", "RandomUniformInt", "Range", "Where", "IsNan", "IsInf", "IsFinite",
		"FloorDiv", "FloorMod", "TruncateDiv", "Placeholder", "InvertPermutation", "ConcatOffset")

	register(func(b *Builder, n *graph.Node, dy []graph.Output) []graph.Output {
		return reduceBoth(b, n, dy[0], dy[0])
	}, "Add", "AddV2")
	register(func(b *Builder, n *graph.Node, dy []graph.Output) []graph.Output {
		return reduceBoth(b, n, dy[0], b.Op("Neg", nil, dy[0]))
	}, "Sub")
	register(func(b *Builder, n *graph.Node, dy []graph.Output) []graph.Output {
		return reduceBoth(b, n, b.Op("Mul", nil, dy[0], in(n, 1)), b.Op("Mul", nil, in(n, 0), dy[0]))
	}, "Mul")
	register(func(b *Builder, n *graph.Node, dy []graph.Output) []graph.Output {
		x, y := in(n, 0), in(n, 1)
		gx := b.Op("RealDiv", nil, dy[0], y)
		gy := b.Op("Mul", nil, dy[0], b.Op("RealDiv", nil, b.Op("RealDiv", nil, b.Op("Neg", nil, x), y), y))
		return reduceBoth(b, n, gx, gy)
	}, "RealDiv", "Div")
	register(func(b *Builder, n *graph.Node, dy []graph.Output) []graph.Output {
		return maxMin(b, n, dy[0], "GreaterEqual")
	}, "Maximum")
	register(func(b *Builder, n *graph.Node, dy []graph.Output) []graph.Output {
		return maxMin(b, n, dy[0], "LessEqual")
	}, "Minimum")
	register(func(b *Builder, n *graph.Node, dy []graph.Output) []graph.Output {
		two := b.Scalar(n.InTypes[0], 2)
		gx := b.Op("Mul", nil, dy[0], b.Op("Mul", nil, two, b.Op("Sub", nil, in(n, 0), in(n, 1))))
		return reduceBoth(b, n, gx, b.Op("Neg", nil, gx))
	}, "SquaredDifference")
	register(func(b *Builder, n *graph.Node, dy []graph.Output) []graph.Output {
		// dx = dy * y * x^(y-1); dy = dy * x^y * log(x), log taken as 0
		// where x <= 0 (TF's PowGrad).
		x, y, z := in(n, 0), in(n, 1), n.Output(0)
		one := b.Scalar(n.InTypes[0], 1)
		gx := b.Op("Mul", nil, dy[0], b.Op("Mul", nil, y, b.Op("Pow", nil, x, b.Op("Sub", nil, y, one))))
		zeros := b.Op("ZerosLike", nil, x)
		logx := b.Op("Select", nil, b.Op("Greater", nil, x, zeros), b.Op("Log", nil, x), zeros)
		gy := b.Op("Mul", nil, dy[0], b.Op("Mul", nil, z, logx))
		return reduceBoth(b, n, gx, gy)
	}, "Pow")

	register(func(b *Builder, n *graph.Node, dy []graph.Output) []graph.Output {
		return []graph.Output{b.Op("Neg", nil, dy[0])}
	}, "Neg")
	register(func(b *Builder, n *graph.Node, dy []graph.Output) []graph.Output {
		two := b.Scalar(n.InTypes[0], 2)
		return []graph.Output{b.Op("Mul", nil, dy[0], b.Op("Mul", nil, two, in(n, 0)))}
	}, "Square")
	register(func(b *Builder, n *graph.Node, dy []graph.Output) []graph.Output {
		return []graph.Output{b.Op("SqrtGrad", nil, n.Output(0), dy[0])}
	}, "Sqrt")
	register(func(b *Builder, n *graph.Node, dy []graph.Output) []graph.Output {
		return []graph.Output{b.Op("RsqrtGrad", nil, n.Output(0), dy[0])}
	}, "Rsqrt")
	register(func(b *Builder, n *graph.Node, dy []graph.Output) []graph.Output {
		return []graph.Output{b.Op("ReciprocalGrad", nil, n.Output(0), dy[0])}
	}, "Reciprocal", "Inv")
	register(func(b *Builder, n *graph.Node, dy []graph.Output) []graph.Output {
		return []graph.Output{b.Op("Mul", nil, dy[0], n.Output(0))}
	}, "Exp")
	register(func(b *Builder, n *graph.Node, dy []graph.Output) []graph.Output {
		return []graph.Output{b.Op("Mul", nil, dy[0], b.Op("Reciprocal", nil, in(n, 0)))}
	}, "Log")
	register(func(b *Builder, n *graph.Node, dy []graph.Output) []graph.Output {
		return []graph.Output{b.Op("TanhGrad", nil, n.Output(0), dy[0])}
	}, "Tanh")
	register(func(b *Builder, n *graph.Node, dy []graph.Output) []graph.Output {
		return []graph.Output{b.Op("SigmoidGrad", nil, n.Output(0), dy[0])}
	}, "Sigmoid")
	register(func(b *Builder, n *graph.Node, dy []graph.Output) []graph.Output {
		// d|x| = dy * sign(x)
		return []graph.Output{b.Op("Mul", nil, dy[0], b.Op("Sign", nil, in(n, 0)))}
	}, "Abs")

	register(func(b *Builder, n *graph.Node, dy []graph.Output) []graph.Output {
		out := make([]graph.Output, len(n.Inputs))
		for i := range out {
			out[i] = dy[0]
		}
		return out
	}, "AddN")
	register(func(b *Builder, n *graph.Node, dy []graph.Output) []graph.Output {
		return []graph.Output{dy[0]}
	}, "Identity", "Snapshot", "PreventGradient", "EnsureShape", "CheckNumerics")
	register(func(b *Builder, n *graph.Node, dy []graph.Output) []graph.Output {
		return dy
	}, "IdentityN")
	register(func(b *Builder, n *graph.Node, dy []graph.Output) []graph.Output {
		src, dst := n.InTypes[0], n.OutTypes[0]
		if !castable(src) || !castable(dst) {
			return []graph.Output{none}
		}
		return []graph.Output{b.Op("Cast", A{"DstT": graph.AttrType(src)}, dy[0])}
	}, "Cast")

	register(matMulGrad, "MatMul")
	register(batchMatMulGrad, "BatchMatMulV2", "BatchMatMulV3", "BatchMatMul")
	register(func(b *Builder, n *graph.Node, dy []graph.Output) []graph.Output {
		return []graph.Output{sumGrad(b, n, dy[0]), none}
	}, "Sum")
	register(meanGrad, "Mean")
}

// castable are the dtypes TF's CastGrad passes gradients between.
func castable(dt tensor.DType) bool {
	return dt.IsFloat() || dt.IsComplex()
}

// maxMin is TF's MaximumMinimumGradCommon: the gradient goes to x where
// cmp(x, y) holds, to y elsewhere.
func maxMin(b *Builder, n *graph.Node, dy graph.Output, cmp string) []graph.Output {
	x, y := in(n, 0), in(n, 1)
	c := b.Op(cmp, nil, x, y)
	zeros := b.Op("ZerosLike", nil, dy)
	return reduceBoth(b, n, b.Op("Select", nil, c, dy, zeros), b.Op("Select", nil, c, zeros, dy))
}

func boolAttr(n *graph.Node, name string) bool {
	v := n.Attrs[name]
	return v != nil && v.GetB()
}

// matMulPair is TF's MatMulGradHelper: the two products for (x0, x1) with
// their transposes or adjoints named by attr.
func matMulPair(b *Builder, op, attrA, attrB string, x0 graph.Output, a0 bool, x1 graph.Output, a1 bool) graph.Output {
	return b.Op(op, A{attrA: graph.AttrBool(a0), attrB: graph.AttrBool(a1)}, x0, x1)
}

func matMulGrads(b *Builder, op, attrA, attrB string, a, bb, dy graph.Output, ta, tb bool) (graph.Output, graph.Output) {
	switch {
	case !ta && !tb:
		return matMulPair(b, op, attrA, attrB, dy, false, bb, true), matMulPair(b, op, attrA, attrB, a, true, dy, false)
	case !ta && tb:
		return matMulPair(b, op, attrA, attrB, dy, false, bb, false), matMulPair(b, op, attrA, attrB, dy, true, a, false)
	case ta && !tb:
		return matMulPair(b, op, attrA, attrB, bb, false, dy, true), matMulPair(b, op, attrA, attrB, a, false, dy, false)
	}
	return matMulPair(b, op, attrA, attrB, bb, true, dy, true), matMulPair(b, op, attrA, attrB, dy, true, a, true)
}

func matMulGrad(b *Builder, n *graph.Node, dy []graph.Output) []graph.Output {
	da, db := matMulGrads(b, "MatMul", "transpose_a", "transpose_b", in(n, 0), in(n, 1), dy[0], boolAttr(n, "transpose_a"), boolAttr(n, "transpose_b"))
	return []graph.Output{da, db}
}

// batchMatMulGrad is MatMul's with adjoints, then each side summed over
// the batch dims it was broadcast along (python's _BatchMatMulV2).
func batchMatMulGrad(b *Builder, n *graph.Node, dy []graph.Output) []graph.Output {
	x, y := in(n, 0), in(n, 1)
	op := "BatchMatMulV2"
	dx, dyy := matMulGrads(b, op, "adj_x", "adj_y", x, y, dy[0], boolAttr(n, "adj_x"), boolAttr(n, "adj_y"))
	if n.Op == "BatchMatMul" {
		return []graph.Output{dx, dyy}
	}
	sx, sy := b.Op("Shape", nil, x), b.Op("Shape", nil, y)
	bx := b.Op("StridedSlice", nil, sx, b.I32(0), b.I32(-2), b.I32(1))
	by := b.Op("StridedSlice", nil, sy, b.I32(0), b.I32(-2), b.I32(1))
	r := b.node("BroadcastGradientArgs", nil, bx, by)
	dx = b.Op("Reshape", nil, b.Op("Sum", nil, dx, r.Output(0)), sx)
	dyy = b.Op("Reshape", nil, b.Op("Sum", nil, dyy, r.Output(1)), sy)
	return []graph.Output{dx, dyy}
}

// keptShape is the shape of x with the reduced axes set to 1: a constant
// when x's shape and the axes are known, else TF's reduced_shape
// (DynamicStitch of range(rank) and the axes).
func keptShape(b *Builder, x, axes graph.Output) graph.Output {
	shape := b.g.TensorShape(x)
	if av, ok := constInts(axes); ok && shape.FullyDefined() {
		dims := append([]int64(nil), shape.Dims...)
		for _, a := range av {
			if a < 0 {
				a += int64(len(dims))
			}
			if a >= 0 && a < int64(len(dims)) {
				dims[a] = 1
			}
		}
		v := make([]int32, len(dims))
		for i, d := range dims {
			v[i] = int32(d)
		}
		return b.I32(v...)
	}
	sx := b.Op("Shape", nil, x)
	rank := b.Op("Size", nil, sx)
	ax := b.Op("Cast", A{"DstT": graph.AttrType(tensor.Int32)}, axes)
	ax = b.Op("FloorMod", nil, b.Op("AddV2", nil, ax, rank), rank)
	ones := b.Op("Fill", nil, b.Op("Shape", nil, ax), b.ScalarI32(1))
	rng := b.Op("Range", nil, b.ScalarI32(0), rank, b.ScalarI32(1))
	return b.Op("DynamicStitch", nil, []graph.Output{rng, ax}, []graph.Output{sx, ones})
}

// constInts reads an int Const's values.
func constInts(o graph.Output) ([]int64, bool) {
	if o.Node.Op != "Const" {
		return nil, false
	}
	t, err := tensor.FromProto(o.Node.Attrs["value"].GetTensor())
	if err != nil {
		return nil, false
	}
	v, err := t.Int64s()
	return v, err == nil
}

// sumGrad broadcasts dy back over the reduced axes of Sum's input.
func sumGrad(b *Builder, n *graph.Node, dy graph.Output) graph.Output {
	x := in(n, 0)
	g := dy
	if !boolAttr(n, "keep_dims") {
		g = b.Op("Reshape", nil, dy, keptShape(b, x, in(n, 1)))
	}
	return b.Op("BroadcastTo", nil, g, b.Op("Shape", nil, x))
}

// meanGrad is Sum's gradient divided by the number of elements averaged.
func meanGrad(b *Builder, n *graph.Node, dy []graph.Output) []graph.Output {
	x := in(n, 0)
	g := sumGrad(b, n, dy[0])
	xs, ys := b.g.TensorShape(x), b.g.TensorShape(n.Output(0))
	var factor graph.Output
	if xs.FullyDefined() && ys.FullyDefined() {
		num, den := int64(1), int64(1)
		for _, d := range xs.Dims {
			num *= d
		}
		for _, d := range ys.Dims {
			den *= d
		}
		f := float64(0)
		if den != 0 {
			f = float64(num / den)
		}
		factor = b.Scalar(n.OutTypes[0], f)
	} else {
		p := func(o graph.Output) graph.Output {
			return b.Op("Prod", nil, b.Op("Shape", nil, o), b.I32(0))
		}
		q := b.Op("Maximum", nil, p(n.Output(0)), b.ScalarI32(1))
		factor = b.Op("Cast", A{"DstT": graph.AttrType(n.OutTypes[0])}, b.Op("FloorDiv", nil, p(x), q))
	}
	return []graph.Output{b.Op("RealDiv", nil, g, factor), none}
}
