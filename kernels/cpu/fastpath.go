package cpu

import (
	"mstream/kernels"
	"mstream/kernels/cpu/vec"
)

// Float32 fast paths through package vec. Each returns false when it does
// not apply (a small tensor, an op vec does not have), and the caller runs
// its Go loop instead; both give results within the conformance suite's
// float32 tolerance (vec's transcendental functions are a few ulp from the
// correctly rounded float64 results the Go loops give).

// vecMin is the element count below which the cgo call costs more than the
// Go loop it replaces. Only ops whose Go loop gives vec's bits may take it
// (vecSameBits): a row's result must not depend on the batch it came in,
// so an op whose two paths differ by an ulp runs through vec at any size.
const vecMin = 32

// vecSameBits lists the unary ops whose Go loop gives the same bits as
// vec's (exact or correctly rounded in both; a signalling NaN comes out
// quiet from the Go loop and as it was from vec, the one difference); the
// transcendental ones (Exp, Tanh, Sigmoid, ...) and Rsqrt, Softsign
// differ by an ulp or so.
var vecSameBits = map[vec.Unary]bool{
	vec.Neg: true, vec.Abs: true, vec.Square: true, vec.Sqrt: true, vec.Reciprocal: true, vec.Relu: true,
	vec.Relu6: true, vec.Floor: true, vec.Ceil: true, vec.Round: true,
}

// splitRow is the piece of a single long row reduced per task.
const splitRow = 1 << 16

// vecCost is the per-element cost (ns) handed to the intra-op pool for vec
// loops; splitting starts around 16K elements for cheap ops.
const vecCost = 1.0

var vecUnaryOps = map[string]vec.Unary{
	"Neg": vec.Neg, "Abs": vec.Abs, "Square": vec.Square, "Sqrt": vec.Sqrt, "Rsqrt": vec.Rsqrt,
	"Reciprocal": vec.Reciprocal, "Inv": vec.Reciprocal, "Exp": vec.Exp, "Expm1": vec.Expm1, "Log": vec.Log,
	"Sigmoid": vec.Sigmoid, "Tanh": vec.Tanh, "Relu": vec.Relu, "Relu6": vec.Relu6, "Floor": vec.Floor,
	"Ceil": vec.Ceil, "Round": vec.Round, "Elu": vec.Elu, "Selu": vec.Selu, "Softsign": vec.Softsign,
	"Erf": vec.Erf,
}

// vecUnaryCost is the rough ns per element of the transcendental ops, so
// that the pool splits them earlier than the cheap ones.
var vecUnaryCost = map[vec.Unary]float64{vec.Exp: 3, vec.Expm1: 4, vec.Log: 3, vec.Sigmoid: 4, vec.Tanh: 5, vec.Elu: 4, vec.Selu: 4, vec.Erf: 6}

// vecUnary maps x into o (which may be x) with op name.
func vecUnary(ctx *kernels.Context, name string, x, o []float32) bool {
	op, ok := vecUnaryOps[name]
	if !ok || len(x) < vecMin && vecSameBits[op] {
		return false
	}
	mapUnaryVec(ctx, op, x, o)
	return true
}

func mapUnaryVec(ctx *kernels.Context, op vec.Unary, x, o []float32) {
	cost := vecCost
	if c, ok := vecUnaryCost[op]; ok {
		cost = c
	}
	ctx.For(len(x), cost, kernels.StartLoop, func(lo, hi int) { vec.MapUnary(op, x[lo:hi], o[lo:hi]) })
}

var vecBinaryOps = map[string]vec.Binary{
	"Add": vec.Add, "AddV2": vec.Add, "BiasAdd": vec.Add, "Sub": vec.Sub, "Mul": vec.Mul, "RealDiv": vec.Div,
	"Div": vec.Div, "Maximum": vec.Max, "Minimum": vec.Min, "SquaredDifference": vec.SquaredDifference,
}

var binOpVec = map[binOp]vec.Binary{opAdd: vec.Add, opSub: vec.Sub, opMul: vec.Mul, opDiv: vec.Div, opMax: vec.Max, opMin: vec.Min}

// vecBinary computes o = a op b under broadcast bc: in whole chunks for
// equal shapes and scalar operands, else row by row when the rows are long
// enough to amortise the call.
func vecBinary(ctx *kernels.Context, name string, bc bcast, a, b, o []float32) bool {
	op, ok := vecBinaryOps[name]
	if !ok {
		return false
	}
	return vecBinaryOp(ctx, op, bc, a, b, o)
}

func vecBinaryOp(ctx *kernels.Context, op vec.Binary, bc bcast, a, b, o []float32) bool {
	n := len(o)
	if n < vecMin {
		return false
	}
	switch {
	case len(a) == n && len(b) == n:
		ctx.For(n, vecCost, kernels.StartLoop, func(lo, hi int) { vec.MapBinary(op, a[lo:hi], b[lo:hi], o[lo:hi], 1, 1) })
	case len(a) == 1 && len(b) == n:
		ctx.For(n, vecCost, kernels.StartLoop, func(lo, hi int) { vec.MapBinary(op, a, b[lo:hi], o[lo:hi], 0, 1) })
	case len(b) == 1 && len(a) == n:
		ctx.For(n, vecCost, kernels.StartLoop, func(lo, hi int) { vec.MapBinary(op, a[lo:hi], b, o[lo:hi], 1, 0) })
	default:
		if w, tiledA, ok := tiledOperand(bc, len(a), len(b), n); ok {
			// A bias over trailing dimensions ([4, 32] on [B, 64, 4,
			// 32]): rows of w in one call per chunk, where a call per
			// output row (32 elements there) cost more in cgo than the
			// adds (keras_encoder B=16: 250 us an AddV2).
			ctx.For(n/w, vecCost*float64(w), kernels.StartLoop, func(lo, hi int) {
				if tiledA {
					vec.MapBinaryRows(op, a, b[lo*w:hi*w], o[lo*w:hi*w], w, true)
				} else {
					vec.MapBinaryRows(op, a[lo*w:hi*w], b, o[lo*w:hi*w], w, false)
				}
			})
			return true
		}
		cols := int(bc.out[len(bc.out)-1])
		if cols < vecMin {
			return false
		}
		ctx.For(n/cols, vecCost*float64(cols), kernels.StartLoop, func(lo, hi int) {
			forRows(bc, int64(lo), int64(hi), func(oo, ao, bo, m, sa, sb int64) {
				vec.MapBinary(op, a[ao:], b[bo:], o[oo:oo+m], int(sa), int(sb))
			})
		})
	}
	return true
}

// tiledOperand reports whether one operand of bc is a block of the
// output's trailing dimensions repeated over its leading ones (its
// strides 0 on the leading dimensions and the output's own on the
// trailing ones, size-1 dimensions aside) while the other is as long as
// the output: then the output is rows of w = that operand's length, and
// tiledA says the repeated one is a.
func tiledOperand(bc bcast, la, lb, n int) (w int, tiledA, ok bool) {
	tiled := func(s []int64, l int) bool {
		if l == 0 || l >= n || n%l != 0 {
			return false
		}
		st, lead := int64(1), false
		for i := len(bc.out) - 1; i >= 0; i-- {
			switch {
			case bc.out[i] == 1:
			case s[i] == 0:
				lead = true
			case lead || s[i] != st:
				return false
			}
			st *= bc.out[i]
		}
		return true
	}
	switch {
	case la == n && tiled(bc.sb, lb):
		return lb, false, true
	case lb == n && tiled(bc.sa, la):
		return la, true, true
	}
	return 0, false, false
}

// vecReduce runs a contiguous float32 reduction (p.contiguous, p.count >
// 0) of kind Sum, Mean, Max or Min.
func vecReduce(ctx *kernels.Context, kind redKind, p redPlan, x, o []float32) bool {
	var op vec.Reduce
	switch kind {
	case rSum, rMean:
		op = vec.Sum
	case rMax:
		op = vec.RMax
	case rMin:
		op = vec.RMin
	default:
		return false
	}
	if !p.contiguous || p.count == 0 || p.red*p.inner < vecMin {
		return false
	}
	scale := 1.0
	if kind == rMean {
		scale = 1 / float64(p.count)
	}
	n := p.red
	if p.outer == 1 && p.inner == 1 && n >= 2*splitRow {
		// One long row: partial results of its pieces in parallel, then
		// those folded (sums of float64-accurate partials, in float64).
		parts := make([]float32, (n+splitRow-1)/splitRow)
		ctx.For(len(parts), splitRow*vecCost, kernels.StartLoop, func(lo, hi int) {
			for c := lo; c < hi; c++ {
				seg := x[c*splitRow : min((c+1)*splitRow, n)]
				vec.RowReduce(op, seg, len(seg), parts[c:c+1], 1)
			}
		})
		if op != vec.Sum {
			vec.RowReduce(op, parts, len(parts), o[:1], 1)
			return true
		}
		var s float64
		for _, v := range parts {
			s += float64(v)
		}
		o[0] = float32(s * scale)
		return true
	}
	forReduce(ctx, p, func(lo, hi int) {
		vec.RowReduce(op, x[lo*n:hi*n], n, o[lo:hi], scale)
	}, func(oi, jlo, jhi int) {
		block := x[oi*n*p.inner+jlo:]
		out := o[oi*p.inner+jlo : oi*p.inner+jhi]
		if op == vec.Sum {
			acc := make([]float64, jhi-jlo)
			vec.ColSum(block, n, p.inner, acc)
			for j, s := range acc {
				out[j] = float32(s * scale)
			}
			return
		}
		init := lowestOf[float32]()
		if op == vec.RMin {
			init = highestOf[float32]()
		}
		for j := range out {
			out[j] = init
		}
		vec.ColMinMax(op, block, n, p.inner, out)
	})
	return true
}

// vecSoftmax runs row softmax or log-softmax of [rows, d] float32, at any
// size: the Go rows differ from vec's by an ulp, and a row's result must
// not depend on how many rows came with it.
func vecSoftmax(ctx *kernels.Context, x, o []float32, d int, log bool) bool {
	ctx.For(len(x)/d, float64(d)*5, kernels.StartLoop, func(lo, hi int) {
		vec.Softmax(x[lo*d:hi*d], o[lo*d:hi*d], d, log)
	})
	return true
}

// vecArg runs ArgMax/ArgMin over the last axis (inner == 1) of float32.
func vecArg(ctx *kernels.Context, isMax bool, x []float32, idx []int64, n, inner int) bool {
	if inner != 1 || n < vecMin {
		return false
	}
	op := vec.RMin
	if isMax {
		op = vec.RMax
	}
	ctx.For(len(idx), float64(n), kernels.StartLoop, func(lo, hi int) { vec.ArgReduce(op, x[lo*n:hi*n], n, idx[lo:hi]) })
	return true
}
