package kerneltest

import (
	"fmt"
	"math/rand"

	"mstream/status"
	"mstream/tensor"
)

// Families for the gradient kernels TF's gradient functions emit: the
// activation gradients, BiasAddGrad, BroadcastGradientArgs, the softmax
// cross-entropies, L2Loss and ConcatOffset. The references are NumPy
// expressions written from TF's formulas (with KERNELTEST_TF real TF is the
// reference instead).

// gradNumPy is each elementwise gradient over (a0, a1) in op input order.
var gradNumPy = map[string]string{
	"ReluGrad":       "a0 * (a1 > 0).astype(a0.dtype)",
	"Relu6Grad":      "a0 * ((a1 > 0) & (a1 < 6)).astype(a0.dtype)",
	"EluGrad":        "np.where(a1 < 0, a0 * (a1 + 1), a0)",
	"SeluGrad":       "np.where(a1 < 0, a0.astype(np.float64) * (a1.astype(np.float64) + 1.0507009873554804934193349852946 * 1.6732632423543772848170429916717), a0.astype(np.float64) * 1.0507009873554804934193349852946)",
	"SoftplusGrad":   "a0.astype(np.float64) / (np.exp(-a1.astype(np.float64)) + 1)",
	"LeakyReluGrad":  "np.where(a1 > 0, a0, a0.astype(np.float64) * %g)",
	"SigmoidGrad":    "a1.astype(np.float64) * a0 * (1 - a0.astype(np.float64))",
	"TanhGrad":       "a1.astype(np.float64) * (1 - a0.astype(np.float64) * a0)",
	"SqrtGrad":       "np.where(a1 == 0, 0, 0.5 * a1.astype(np.float64) / a0)",
	"RsqrtGrad":      "np.where(a1 == 0, 0, -0.5 * (a1.astype(np.float64) * a0) * (a0.astype(np.float64) * a0))",
	"ReciprocalGrad": "np.where(a1 == 0, 0, -a1.astype(np.float64) * a0 * a0)",
}

func init() {
	for op := range gradNumPy {
		op := op
		Add(op, func(r *rand.Rand) []Case { return elementGradCases(r, op) })
	}
	Add("BiasAddGrad", biasAddGradCases)
	Add("BroadcastGradientArgs", broadcastGradientArgsCases)
	Add("SoftmaxCrossEntropyWithLogits", xentCases)
	Add("SparseSoftmaxCrossEntropyWithLogits", sparseXentCases)
	Add("L2Loss", l2LossCases)
	Add("ConcatOffset", concatOffsetCases)
}

func elementGradCases(r *rand.Rand, op string) []Case {
	var cs []Case
	for _, dt := range FloatTypes {
		for _, sh := range append(append([]tensor.Shape{}, EdgeShapes...), tensor.Shape{3, 1111}) {
			a, b := RandRange(r, dt, sh, -3, 3), RandRange(r, dt, sh, -3, 3)
			if dt == tensor.Float || dt == tensor.Double {
				// IEEE specials; the half types round every Eigen
				// step, so an overflow mid-formula is TF's own.
				WithSpecials(r, a)
				WithSpecials(r, b)
			}
			attrs := Attrs{}
			expr := gradNumPy[op]
			if op == "LeakyReluGrad" {
				alpha := []float32{0.2, 0.01, 0.5}[r.Intn(3)]
				attrs["alpha"] = AFloat(alpha)
				expr = fmt.Sprintf(expr, float64(alpha))
			}
			tol := 0.0
			if dt == tensor.Half {
				tol = 4e-3 // several roundings to half inside TF's formula
			}
			cs = append(cs, Case{Name: fmt.Sprintf("%s %v %v", op, dt, sh), Node: NodeFor(op, attrs, ins(a, b), nil), Inputs: ins(a, b), NumPy: expr, Tol: tol})
		}
	}
	a, b := Rand(r, tensor.Float, tensor.Shape{3, 4}), Rand(r, tensor.Float, tensor.Shape{4, 4})
	bad(&cs, op, nil, ins(a, b), nil, status.InvalidArgument)
	return cs
}

func biasAddGradCases(r *rand.Rand) []Case {
	var cs []Case
	types := []tensor.DType{tensor.Float, tensor.Double, tensor.Half, tensor.Bfloat16, tensor.Int32, tensor.Int64, tensor.Int8, tensor.Int16, tensor.Uint8, tensor.Uint16, tensor.Uint32, tensor.Uint64}
	shapes := []tensor.Shape{{3, 4}, {2, 3, 5}, {2, 4, 3, 5}, {1, 2, 3, 4, 2}, {0, 3}, {3, 0}, {64, 33}}
	for _, dt := range Allowed("BiasAddGrad", types) {
		for _, sh := range shapes {
			for _, f := range []string{"NHWC", "NCHW"} {
				if f == "NCHW" && len(sh) < 3 {
					continue // TF's shape function wants rank >= 3 for NCHW
				}
				g := RandRange(r, dt, sh, -3, 3)
				axes := "tuple(i for i in range(a0.ndim) if i != a0.ndim - 1)"
				if f == "NCHW" {
					axes = "tuple(i for i in range(a0.ndim) if i != 1)"
				}
				cs = append(cs, Case{Name: fmt.Sprintf("BiasAddGrad %v %v %s", dt, sh, f), Node: NodeFor("BiasAddGrad", Attrs{"data_format": AStr(f)}, ins(g), nil), Inputs: ins(g),
					NumPy: "a0.astype(np.float64).sum(axis=" + axes + ")", Tol: 4 * Tol(dt)})
			}
		}
	}
	bad(&cs, "BiasAddGrad", nil, ins(Rand(r, tensor.Float, tensor.Shape{5})), nil, status.InvalidArgument)
	return cs
}

func broadcastGradientArgsCases(r *rand.Rand) []Case {
	var cs []Case
	pairs := append(append([][2]tensor.Shape{}, BroadcastPairs...), [2]tensor.Shape{{1, 1}, {1}}, [2]tensor.Shape{{2, 1, 1}, {1, 3}}, [2]tensor.Shape{{1}, {}})
	for _, dt := range indexTypes {
		for _, p := range pairs {
			a, b := IntVec(dt, p[0]...), IntVec(dt, p[1]...)
			// NumPy has no BCast: the expected indices are TF's rule,
			// written out independently of the kernel.
			ra, rb := refGradReduce(p[0], p[1])
			cs = append(cs, Case{Name: fmt.Sprintf("BroadcastGradientArgs %v %v %v", dt, p[0], p[1]), Node: NodeFor("BroadcastGradientArgs", nil, ins(a, b), nil), Inputs: ins(a, b),
				Want: ins(IntVec(dt, ra...), IntVec(dt, rb...))})
		}
	}
	for _, p := range IncompatiblePairs {
		a, b := IntVec(tensor.Int32, p[0]...), IntVec(tensor.Int32, p[1]...)
		bad(&cs, "BroadcastGradientArgs", nil, ins(a, b), nil, status.InvalidArgument)
	}
	return cs
}

// refGradReduce: align right, extend with ones; a dim is summed for a side
// where that side is 1 (for both where both are); equal shapes sum nothing.
func refGradReduce(a, b tensor.Shape) (ra, rb []int64) {
	if a.Equal(b) {
		return nil, nil
	}
	n := max(len(a), len(b))
	at := func(s tensor.Shape, i int) int64 {
		if j := i - (n - len(s)); j >= 0 {
			return s[j]
		}
		return 1
	}
	for i := 0; i < n; i++ {
		if at(a, i) == 1 {
			ra = append(ra, int64(i))
		}
		if at(b, i) == 1 {
			rb = append(rb, int64(i))
		}
	}
	return ra, rb
}

const xentNumPy = `(lambda x, l: (lambda m: (lambda lse: ((l * (lse - m)).sum(axis=1), np.exp(m) / np.exp(m).sum(axis=1, keepdims=True) - l))(np.log(np.exp(m).sum(axis=1, keepdims=True))))(x - x.max(axis=1, keepdims=True)))(*np.broadcast_arrays(a0.astype(np.float64), a1.astype(np.float64)))`

func xentCases(r *rand.Rand) []Case {
	var cs []Case
	for _, dt := range FloatTypes {
		for _, p := range [][2]tensor.Shape{{{3, 5}, {3, 5}}, {{1, 7}, {1, 7}}, {{4, 1}, {4, 1}}, {{0, 3}, {0, 3}}, {{16, 100}, {16, 100}}, {{1, 6}, {4, 6}}, {{4, 6}, {6}}, {{4, 1}, {4, 3}}} {
			x := RandRange(r, dt, p[0], -4, 4)
			l := RandRange(r, dt, p[1], 0, 1)
			cs = append(cs, Case{Name: fmt.Sprintf("SoftmaxCrossEntropyWithLogits %v %v %v", dt, p[0], p[1]), Node: NodeFor("SoftmaxCrossEntropyWithLogits", nil, ins(x, l), nil), Inputs: ins(x, l),
				NumPy: xentNumPy, Tol: 2 * Tol(dt)})
		}
	}
	bad(&cs, "SoftmaxCrossEntropyWithLogits", nil, ins(Rand(r, tensor.Float, tensor.Shape{2, 3, 4}), Rand(r, tensor.Float, tensor.Shape{2, 3, 4})), nil, status.InvalidArgument)
	bad(&cs, "SoftmaxCrossEntropyWithLogits", nil, ins(Rand(r, tensor.Float, tensor.Shape{2, 3}), Rand(r, tensor.Float, tensor.Shape{2, 4})), nil, status.InvalidArgument)
	return cs
}

func sparseXentCases(r *rand.Rand) []Case {
	var cs []Case
	for _, dt := range FloatTypes {
		for _, it := range indexTypes {
			for _, sh := range []tensor.Shape{{3, 5}, {1, 1}, {0, 4}, {16, 100}, {5, 2}} {
				x := RandRange(r, dt, sh, -4, 4)
				lab := tensor.New(it, tensor.Shape{sh[0]})
				for i := 0; i < int(sh[0]); i++ {
					SetF64(lab, i, float64(r.Intn(int(sh[1]))))
				}
				expr := fmt.Sprintf("(lambda a1: %s)(np.eye(%d)[a1.astype(np.int64)].reshape(a0.shape))", xentNumPy, sh[1])
				cs = append(cs, Case{Name: fmt.Sprintf("SparseSoftmaxCrossEntropyWithLogits %v %v %v", dt, it, sh), Node: NodeFor("SparseSoftmaxCrossEntropyWithLogits", nil, ins(x, lab), nil), Inputs: ins(x, lab),
					NumPy: expr, Tol: 2 * Tol(dt)})
			}
		}
	}
	x := Rand(r, tensor.Float, tensor.Shape{3, 4})
	bad(&cs, "SparseSoftmaxCrossEntropyWithLogits", nil, ins(x, IntVec(tensor.Int32, 0, 4, 1)), nil, status.InvalidArgument)
	bad(&cs, "SparseSoftmaxCrossEntropyWithLogits", nil, ins(x, IntVec(tensor.Int64, 0, -1, 1)), nil, status.InvalidArgument)
	bad(&cs, "SparseSoftmaxCrossEntropyWithLogits", nil, ins(x, IntVec(tensor.Int32, 0, 1)), nil, status.InvalidArgument)
	bad(&cs, "SparseSoftmaxCrossEntropyWithLogits", nil, ins(Rand(r, tensor.Float, tensor.Shape{3}), IntVec(tensor.Int32, 0, 1, 1)), nil, status.InvalidArgument)
	return cs
}

func l2LossCases(r *rand.Rand) []Case {
	var cs []Case
	for _, dt := range FloatTypes {
		for _, sh := range append(append([]tensor.Shape{}, EdgeShapes...), tensor.Shape{3, 1111}) {
			x := RandRange(r, dt, sh, -2, 2)
			tol := 0.0
			if dt == tensor.Half || dt == tensor.Bfloat16 {
				tol = 5 * Tol(dt) // TF sums in the half type
			}
			cs = append(cs, Case{Node: NodeFor("L2Loss", nil, ins(x), nil), Inputs: ins(x), NumPy: "(a0.astype(np.float64) ** 2).sum() / 2", Tol: tol})
		}
	}
	return cs
}

func concatOffsetCases(r *rand.Rand) []Case {
	var cs []Case
	for _, dt := range indexTypes {
		for k := 2; k <= 4; k++ {
			rank := 1 + r.Intn(4)
			axis := r.Intn(rank)
			base := make([]int64, rank)
			for i := range base {
				base[i] = int64(1 + r.Intn(4))
			}
			in := []*tensor.Tensor{tensor.ScalarI32(int32(axis - rank*r.Intn(2)))}
			var want []*tensor.Tensor
			off := int64(0)
			for i := 0; i < k; i++ {
				s := append([]int64{}, base...)
				s[axis] = int64(r.Intn(4))
				in = append(in, IntVec(dt, s...))
				o := make([]int64, rank)
				o[axis] = off
				want = append(want, IntVec(dt, o...))
				off += s[axis]
			}
			cs = append(cs, Case{Node: NodeFor("ConcatOffset", nil, in, map[int]int{1: k}), Inputs: in, Want: want})
		}
	}
	bad(&cs, "ConcatOffset", nil, ins(tensor.ScalarI32(0), IntVec(tensor.Int32, 2, 3), IntVec(tensor.Int32, 2, 4)), map[int]int{1: 2}, status.InvalidArgument)
	bad(&cs, "ConcatOffset", nil, ins(tensor.ScalarI32(2), IntVec(tensor.Int32, 2, 3), IntVec(tensor.Int32, 2, 3)), map[int]int{1: 2}, status.InvalidArgument)
	return cs
}
