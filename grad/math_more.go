package grad

import (
	"math"

	"mstream/graph"
	"mstream/tensor"
)

// The rest of TF's C++ math gradients (cc/gradients/math_grad.cc): the
// trigonometric and hyperbolic functions, Erf, Expm1, Log1p, Sign, Atan2,
// DivNoNan, the Prod/Max/Min reductions, Cumsum, Select, SelectV2,
// ClipByValue and UnsortedSegmentSum, each with TF's formula.

// unaryGrad registers op's gradient as dy * dydx(x, y) for y = op(x).
func unaryGrad(op string, dydx func(b *Builder, n *graph.Node, x, y graph.Output) graph.Output) {
	register(func(b *Builder, n *graph.Node, dy []graph.Output) []graph.Output {
		return []graph.Output{b.Op("Mul", nil, dy[0], dydx(b, n, in(n, 0), n.Output(0)))}
	}, op)
}

// one is TF's Cast(Const(1.0), dtype of x).
func one(b *Builder, x graph.Output) graph.Output { return b.Scalar(x.DType(), 1) }

// exactScalar is Cast(Const(v)) through a double constant, for the
// constants (2/sqrt(pi)) a float32 constant would round.
func (b *Builder) exactScalar(dt tensor.DType, v float64) graph.Output {
	t := tensor.New(tensor.Double, nil)
	t.F64()[0] = v
	return b.Op("Cast", A{"DstT": graph.AttrType(dt)}, b.Const(t))
}

func init() {
	noGradient("ApproximateEqual")
	unaryGrad("Sin", func(b *Builder, n *graph.Node, x, _ graph.Output) graph.Output { return b.Op("Cos", nil, x) })
	unaryGrad("Cos", func(b *Builder, n *graph.Node, x, _ graph.Output) graph.Output {
		return b.Op("Neg", nil, b.Op("Sin", nil, x))
	})
	unaryGrad("Tan", func(b *Builder, n *graph.Node, x, _ graph.Output) graph.Output {
		return b.Op("Square", nil, b.Op("Reciprocal", nil, b.Op("Cos", nil, x)))
	})
	unaryGrad("Asin", func(b *Builder, n *graph.Node, x, _ graph.Output) graph.Output {
		return b.Op("Reciprocal", nil, b.Op("Sqrt", nil, b.Op("Sub", nil, one(b, x), b.Op("Square", nil, x))))
	})
	unaryGrad("Acos", func(b *Builder, n *graph.Node, x, _ graph.Output) graph.Output {
		return b.Op("Neg", nil, b.Op("Reciprocal", nil, b.Op("Sqrt", nil, b.Op("Sub", nil, one(b, x), b.Op("Square", nil, x)))))
	})
	unaryGrad("Atan", func(b *Builder, n *graph.Node, x, _ graph.Output) graph.Output {
		return b.Op("Reciprocal", nil, b.Op("AddV2", nil, one(b, x), b.Op("Square", nil, x)))
	})
	unaryGrad("Sinh", func(b *Builder, n *graph.Node, x, _ graph.Output) graph.Output { return b.Op("Cosh", nil, x) })
	unaryGrad("Cosh", func(b *Builder, n *graph.Node, x, _ graph.Output) graph.Output { return b.Op("Sinh", nil, x) })
	unaryGrad("Asinh", func(b *Builder, n *graph.Node, _, y graph.Output) graph.Output {
		return b.Op("Reciprocal", nil, b.Op("Cosh", nil, y))
	})
	unaryGrad("Acosh", func(b *Builder, n *graph.Node, _, y graph.Output) graph.Output {
		return b.Op("Reciprocal", nil, b.Op("Sinh", nil, y))
	})
	unaryGrad("Atanh", func(b *Builder, n *graph.Node, x, _ graph.Output) graph.Output {
		return b.Op("Reciprocal", nil, b.Op("Sub", nil, one(b, x), b.Op("Square", nil, x)))
	})
	unaryGrad("Erf", func(b *Builder, n *graph.Node, x, _ graph.Output) graph.Output {
		c := b.exactScalar(x.DType(), 2/math.Sqrt(math.Pi))
		return b.Op("Mul", nil, c, b.Op("Exp", nil, b.Op("Neg", nil, b.Op("Square", nil, x))))
	})
	unaryGrad("Expm1", func(b *Builder, n *graph.Node, x, _ graph.Output) graph.Output { return b.Op("Exp", nil, x) })
	unaryGrad("Log1p", func(b *Builder, n *graph.Node, x, _ graph.Output) graph.Output {
		return b.Op("Reciprocal", nil, b.Op("AddV2", nil, one(b, x), x))
	})
	register(func(b *Builder, n *graph.Node, dy []graph.Output) []graph.Output {
		// Zeros of x's shape (TF's SignGrad).
		x := in(n, 0)
		return []graph.Output{b.Op("Fill", nil, b.Op("Shape", nil, x), b.Scalar(x.DType(), 0))}
	}, "Sign")
	register(func(b *Builder, n *graph.Node, dy []graph.Output) []graph.Output {
		// d atan2(y, x) = (x dy, -y dx) / (x^2 + y^2), reduced over the
		// broadcast dims (TF's C++ leaves them; equal shapes agree).
		y, x := in(n, 0), in(n, 1)
		inv := b.Op("RealDiv", nil, dy[0], b.Op("AddV2", nil, b.Op("Square", nil, x), b.Op("Square", nil, y)))
		return reduceBoth(b, n, b.Op("Mul", nil, x, inv), b.Op("Mul", nil, b.Op("Neg", nil, y), inv))
	}, "Atan2")
	register(func(b *Builder, n *graph.Node, dy []graph.Output) []graph.Output {
		x, y := in(n, 0), in(n, 1)
		gx := b.Op("DivNoNan", nil, dy[0], y)
		gy := b.Op("Mul", nil, dy[0], b.Op("DivNoNan", nil, b.Op("DivNoNan", nil, b.Op("Neg", nil, x), y), y))
		return reduceBoth(b, n, gx, gy)
	}, "DivNoNan")
	register(minMaxGrad, "Max", "Min")
	register(prodGrad, "Prod")
	register(func(b *Builder, n *graph.Node, dy []graph.Output) []graph.Output {
		a := A{"exclusive": graph.AttrBool(boolAttr(n, "exclusive")), "reverse": graph.AttrBool(!boolAttr(n, "reverse"))}
		return []graph.Output{b.Op("Cumsum", a, dy[0], in(n, 1)), none}
	}, "Cumsum")
	register(func(b *Builder, n *graph.Node, dy []graph.Output) []graph.Output {
		c := in(n, 0)
		zeros := b.Op("ZerosLike", nil, in(n, 1))
		return []graph.Output{none, b.Op("Select", nil, c, dy[0], zeros), b.Op("Select", nil, c, zeros, dy[0])}
	}, "Select")
	register(selectV2Grad, "SelectV2")
	register(clipGrad, "ClipByValue")
	register(func(b *Builder, n *graph.Node, dy []graph.Output) []graph.Output {
		// dy gathered at the segment ids, zero where an id is negative
		// (TF's GatherDropNegatives).
		ids := in(n, 1)
		clipped := b.Op("Maximum", nil, ids, b.Op("ZerosLike", nil, ids))
		pos := b.Op("GreaterEqual", nil, ids, b.Op("ZerosLike", nil, ids))
		ones := b.Op("Tile", nil, b.I32(1), b.Op("Sub", nil, b.Op("Rank", nil, dy[0]), b.I32(1)))
		pos = b.Op("Reshape", nil, pos, b.Op("ConcatV2", nil, []graph.Output{b.Op("Shape", nil, pos), ones}, b.ScalarI32(0)))
		pos = b.Op("LogicalAnd", nil, pos, b.Op("OnesLike", nil, pos))
		gathered := b.Op("GatherV2", nil, dy[0], clipped, b.ScalarI32(0))
		return []graph.Output{b.Op("SelectV2", nil, pos, gathered, b.Op("ZerosLike", nil, gathered)), none, none}
	}, "UnsortedSegmentSum")
}

// minMaxGrad shares dy equally among the elements equal to the extremum
// (TF's MinOrMaxGrad).
func minMaxGrad(b *Builder, n *graph.Node, dy []graph.Output) []graph.Output {
	x, axes := in(n, 0), in(n, 1)
	kept := keptShape(b, x, axes)
	y := b.Op("Reshape", nil, n.Output(0), kept)
	g := b.Op("Reshape", nil, dy[0], kept)
	ind := b.Op("Cast", A{"DstT": graph.AttrType(dy[0].DType())}, b.Op("Equal", nil, y, x))
	num := b.Op("Reshape", nil, b.Op("Sum", nil, ind, axes), kept)
	return []graph.Output{b.Op("Mul", nil, b.Op("Div", nil, ind, num), g), none}
}

// prodGrad is TF's ProdGrad: the product of all other elements of each
// reduced group, as exclusive cumulative products from both ends. TF
// computes the permutation that brings the reduced axes first with
// SetDiff1D; here it is built from the input's rank and the axes, which
// must be known when the gradient is built.
func prodGrad(b *Builder, n *graph.Node, dy []graph.Output) []graph.Output {
	x, axes := in(n, 0), in(n, 1)
	shape := b.g.TensorShape(x)
	av, ok := constInts(axes)
	if !ok || !shape.Known {
		panic(buildError{unimplemented("the gradient of Prod '%s' is built only for constant axes over an input of known rank", n.Name)})
	}
	rank := int64(shape.Rank())
	isReduced := make([]bool, rank)
	var reduced, other []int32
	for _, a := range av {
		if a < 0 {
			a += rank
		}
		if a >= 0 && a < rank && !isReduced[a] {
			isReduced[a] = true
			reduced = append(reduced, int32(a))
		}
	}
	for i := int64(0); i < rank; i++ {
		if !isReduced[i] {
			other = append(other, int32(i))
		}
	}
	sx := b.Op("Shape", nil, x)
	kept := keptShape(b, x, axes)
	tiles := b.Op("FloorDiv", nil, sx, b.Op("Maximum", nil, kept, b.ScalarI32(1)))
	tiled := b.Op("Tile", nil, b.Op("Reshape", nil, dy[0], kept), tiles)
	perm := b.I32(append(append([]int32{}, reduced...), other...)...)
	count := func(dims []int32) graph.Output {
		return b.Op("Prod", nil, b.Op("GatherV2", nil, sx, b.I32(dims...), b.ScalarI32(0)), b.ScalarI32(0))
	}
	permuted := b.Op("Transpose", nil, x, perm)
	flat := b.Op("Reshape", nil, permuted, b.Op("Pack", nil, []graph.Output{count(reduced), count(other)}))
	left := b.Op("Cumprod", A{"exclusive": graph.AttrBool(true)}, flat, b.ScalarI32(0))
	right := b.Op("Cumprod", A{"exclusive": graph.AttrBool(true), "reverse": graph.AttrBool(true)}, flat, b.ScalarI32(0))
	y := b.Op("Reshape", nil, b.Op("Mul", nil, left, right), b.Op("Shape", nil, permuted))
	out := b.Op("Mul", nil, tiled, b.Op("Transpose", nil, y, b.Op("InvertPermutation", nil, perm)))
	return []graph.Output{b.Op("Reshape", nil, out, sx), none}
}

// selectV2Grad sends dy to x where c holds and to y elsewhere, each summed
// over the dims it was broadcast along.
func selectV2Grad(b *Builder, n *graph.Node, dy []graph.Output) []graph.Output {
	c, x, y := in(n, 0), in(n, 1), in(n, 2)
	zeros := b.Op("ZerosLike", nil, dy[0])
	so := b.Op("Shape", nil, n.Output(0))
	side := func(g, v graph.Output) graph.Output {
		sv := b.Op("Shape", nil, v)
		r := b.node("BroadcastGradientArgs", nil, sv, so)
		return b.Op("Reshape", nil, b.Op("Sum", A{"keep_dims": graph.AttrBool(true)}, g, r.Output(0)), sv)
	}
	return []graph.Output{none, side(b.Op("SelectV2", nil, c, dy[0], zeros), x), side(b.Op("SelectV2", nil, c, zeros, dy[0]), y)}
}

// clipGrad passes dy to x inside [min, max] and to the bound it was
// clipped to outside (TF's ClipByValueGrad).
func clipGrad(b *Builder, n *graph.Node, dy []graph.Output) []graph.Output {
	x, lo, hi := in(n, 0), in(n, 1), in(n, 2)
	sx, slo, shi := b.Op("Shape", nil, x), b.Op("Shape", nil, lo), b.Op("Shape", nil, hi)
	loMask, hiMask := b.Op("Less", nil, x, lo), b.Op("Greater", nil, x, hi)
	rlo := b.node("BroadcastGradientArgs", nil, sx, slo)
	rhi := b.node("BroadcastGradientArgs", nil, sx, shi)
	zeros := b.Op("ZerosLike", nil, dy[0])
	gx := b.Op("Select", nil, b.Op("LogicalOr", nil, loMask, hiMask), zeros, dy[0])
	glo := b.Op("Reshape", nil, b.Op("Sum", nil, b.Op("Select", nil, loMask, dy[0], zeros), rlo.Output(1)), slo)
	ghi := b.Op("Reshape", nil, b.Op("Sum", nil, b.Op("Select", nil, hiMask, dy[0], zeros), rhi.Output(1)), shi)
	return []graph.Output{gx, glo, ghi}
}
