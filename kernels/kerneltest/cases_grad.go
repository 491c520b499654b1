package kerneltest

import (
	"fmt"
	"math"
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
	"SeluGrad":       "np.where(a1 < 0, a0.astype(np.float64) * (a1.astype(np.float64) + 1.7580993408473768599402175208123), a0.astype(np.float64) * 1.0507009873554804934193349852946)",
	"SoftplusGrad":   "a0.astype(np.float64) / (np.exp(-a1.astype(np.float64)) + 1)",
	"SoftsignGrad":   "a0.astype(np.float64) / np.square(1 + np.abs(a1.astype(np.float64)))",
	"LeakyReluGrad":  "np.where(a1 > 0, a0, a0.astype(np.float64) * %g)",
	"SigmoidGrad":    "a1.astype(np.float64) * a0 * (1 - a0.astype(np.float64))",
	"TanhGrad":       "a1.astype(np.float64) * (1 - a0.astype(np.float64) * a0)",
	"SqrtGrad":       "np.where(a1 == 0, 0, 0.5 * a1.astype(np.float64) / a0)",
	"RsqrtGrad":      "np.where(a1 == 0, 0, -0.5 * (a1.astype(np.float64) * a0) * (a0.astype(np.float64) * a0))",
	"ReciprocalGrad": "np.where(a1 == 0, 0, -a1.astype(np.float64) * a0 * a0)",
}

// gradNumPy32 are those of gradNumPy that TF evaluates in float32 step by
// step for float inputs (mstream too): NumPy's float32 arithmetic rounds
// each step the same way.
var gradNumPy32 = map[string]string{
	"EluGrad":        "np.where(a1 < 0, a0 * (a1 + np.float32(1)), a0)",
	"SigmoidGrad":    "a1 * a0 * (np.float32(1) - a0)",
	"TanhGrad":       "a1 * (np.float32(1) - a0 * a0)",
	"SqrtGrad":       "np.where(a1 == 0, np.float32(0), np.float32(0.5) * a1 / a0)",
	"RsqrtGrad":      "np.where(a1 == 0, np.float32(0), np.float32(-0.5) * (a1 * a0) * (a0 * a0))",
	"ReciprocalGrad": "np.where(a1 == 0, np.float32(0), -a0 * a0 * a1)",
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

// gradScale gives, for the gradients whose formula subtracts nearly equal
// values, the magnitude of the operands (a0, a1 in input order) that
// their rounding error scales with (Case.Scale): computed step by step or
// with the steps fused (a GPU's FMA), TanhGrad's dy*(1-y*y) differs by
// about eps*|dy|*(1+y*y), which for |y| near 1 and a large dy is far
// more than eps times the result (an H100 run: -16.8359 against
// -16.8371 with dy = 60000). SigmoidGrad's dy*y*(1-y) cancels near
// y = 1 and EluGrad's dy*(y+1) near y = -1 in the same way. The others
// multiply and divide only (SqrtGrad, RsqrtGrad, ReciprocalGrad),
// select (Relu6Grad, ReluGrad, LeakyReluGrad), or add positive terms
// (SoftplusGrad, SoftsignGrad; SeluGrad forms its sum in double with
// the one constant the kernels use, scale*alpha rounded once), so
// their error stays relative to the result.
var gradScale = map[string]func(a0, a1 float64) float64{
	"TanhGrad":    func(y, dy float64) float64 { return math.Abs(dy) * (1 + y*y) },
	"SigmoidGrad": func(y, dy float64) float64 { return math.Abs(dy*y) * (1 + math.Abs(y)) },
	"EluGrad":     func(dy, y float64) float64 { return math.Abs(dy) * (1 + math.Abs(y)) },
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
			if e, ok := gradNumPy32[op]; ok && dt == tensor.Float {
				expr = e
			}
			if op == "LeakyReluGrad" {
				alpha := []float32{0.2, 0.01, 0.5}[r.Intn(3)]
				attrs["alpha"] = AFloat(alpha)
				expr = fmt.Sprintf(expr, float64(alpha))
			}
			tol := 0.0
			if dt == tensor.Half {
				tol = 4e-3 // several roundings to half inside TF's formula
			}
			var scale []float64
			if f := gradScale[op]; f != nil {
				av, bv := F64s(a), F64s(b)
				scale = make([]float64, len(av))
				for i := range av {
					scale[i] = f(av[i], bv[i])
				}
			}
			cs = append(cs, Case{Name: fmt.Sprintf("%s %v %v", op, dt, sh), Node: NodeFor(op, attrs, ins(a, b), nil), Inputs: ins(a, b), NumPy: expr, Tol: tol, Scale: scale})
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
				tol := 4 * Tol(dt)
				if dt == tensor.Half || dt == tensor.Bfloat16 {
					// TF sums in the 16-bit type: its error grows with
					// the number of terms per channel.
					tol = Tol(dt) * float64(max(4, sh.NumElements()/max(1, sh[len(sh)-1])))
				}
				cs = append(cs, Case{Name: fmt.Sprintf("BiasAddGrad %v %v %s", dt, sh, f), Node: NodeFor("BiasAddGrad", Attrs{"data_format": AStr(f)}, ins(g), nil), Inputs: ins(g),
					NumPy: "a0.astype(np.float64).sum(axis=" + axes + ")", Tol: tol})
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
			// {4, 1000}: rows longer than a GPU block's 256 threads.
			for _, sh := range []tensor.Shape{{3, 5}, {1, 1}, {0, 4}, {16, 100}, {5, 2}, {4, 1000}} {
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
	// A label out of range is an error on the host; TF's GPU kernel
	// gives its row NaNs instead (HostErr; kernels/cuda checks those).
	bad(&cs, "SparseSoftmaxCrossEntropyWithLogits", nil, ins(x, IntVec(tensor.Int32, 0, 4, 1)), nil, status.InvalidArgument)
	cs[len(cs)-1].HostErr = true
	bad(&cs, "SparseSoftmaxCrossEntropyWithLogits", nil, ins(x, IntVec(tensor.Int64, 0, -1, 1)), nil, status.InvalidArgument)
	cs[len(cs)-1].HostErr = true
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

func init() {
	Add("Conv2DBackpropFilter", convBackpropFilterCases)
	Add("MaxPoolGrad", func(r *rand.Rand) []Case { return poolGradCases(r, "MaxPoolGrad") })
	Add("AvgPoolGrad", func(r *rand.Rand) []Case { return poolGradCases(r, "AvgPoolGrad") })
	Add("UnsortedSegmentSum", unsortedSegmentSumCases)
	Add("StridedSliceGrad", stridedSliceGradCases)
}

// refConvBackpropFilter: df[a, b, c, o] += x[n, y, x, c] * dy[n, i, j, o]
// over every tap of every window.
func refConvBackpropFilter(s convSpec, x, dy []float64) []float64 {
	oh, pt := window(s.h, s.kh, s.dh, s.sh, s.padding, [2]int{s.pads[0], s.pads[1]})
	ow, pl := window(s.w, s.kw, s.dw, s.sw, s.padding, [2]int{s.pads[2], s.pads[3]})
	df := make([]float64, s.kh*s.kw*s.c*s.o)
	for n := 0; n < s.n; n++ {
		for i := 0; i < oh; i++ {
			for j := 0; j < ow; j++ {
				for a := 0; a < s.kh; a++ {
					for b := 0; b < s.kw; b++ {
						y, xx := i*s.sh-pt+a*s.dh, j*s.sw-pl+b*s.dw
						if y < 0 || y >= s.h || xx < 0 || xx >= s.w {
							continue
						}
						for c := 0; c < s.c; c++ {
							for o := 0; o < s.o; o++ {
								df[((a*s.kw+b)*s.c+c)*s.o+o] += x[((n*s.h+y)*s.w+xx)*s.c+c] * dy[((n*oh+i)*ow+j)*s.o+o]
							}
						}
					}
				}
			}
		}
	}
	return df
}

// gradConvTol is convTol for sums of k products where TF rounds the half
// types along the way: their error grows with the square root of k.
func gradConvTol(dt tensor.DType, k int) float64 {
	if dt == tensor.Half || dt == tensor.Bfloat16 {
		return convTol(dt, k) * math.Sqrt(float64(max(k, 16))/16)
	}
	return convTol(dt, k)
}

func convBackpropFilterCases(r *rand.Rand) []Case {
	var cs []Case
	for _, dt := range FloatTypes {
		for i := 0; i < 20; i++ {
			s := randConvSpec(r)
			s.dh, s.dw = 1, 1 // TF's CPU kernel has no dilations (an error case below)
			oh, _ := window(s.h, s.kh, s.dh, s.sh, s.padding, [2]int{s.pads[0], s.pads[1]})
			ow, _ := window(s.w, s.kw, s.dw, s.sw, s.padding, [2]int{s.pads[2], s.pads[3]})
			if oh <= 0 || ow <= 0 {
				// An empty out_backprop: TF 2.15 leaves the filter
				// gradient uninitialised (or aborts), so it cannot judge.
				continue
			}
			x := RandRange(r, dt, tensor.Shape{int64(s.n), int64(s.h), int64(s.w), int64(s.c)}, -1, 1)
			dy := RandRange(r, dt, tensor.Shape{int64(s.n), int64(oh), int64(ow), int64(s.o)}, -1, 1)
			sizes := IntVec(tensor.Int32, int64(s.kh), int64(s.kw), int64(s.c), int64(s.o))
			want := refConvBackpropFilter(s, F64s(x), F64s(dy))
			cs = append(cs, Case{Name: fmt.Sprintf("Conv2DBackpropFilter %v %+v", dt, s), Node: NodeFor("Conv2DBackpropFilter", s.attrs(), ins(x, sizes, dy), nil), Inputs: ins(x, sizes, dy),
				Want: ins(FromF64(dt, tensor.Shape{int64(s.kh), int64(s.kw), int64(s.c), int64(s.o)}, want)), Tol: gradConvTol(dt, s.n*oh*ow)})
		}
	}
	x, dy := Rand(r, tensor.Float, tensor.Shape{1, 5, 5, 3}), Rand(r, tensor.Float, tensor.Shape{1, 4, 4, 4})
	a := Attrs{"strides": AInts(1, 1, 1, 1), "padding": AStr("VALID")}
	bad(&cs, "Conv2DBackpropFilter", a, ins(x, IntVec(tensor.Int32, 2, 2, 3, 5), dy), nil, status.InvalidArgument)
	bad(&cs, "Conv2DBackpropFilter", a, ins(x, IntVec(tensor.Int32, 3, 3, 3, 4), dy), nil, status.InvalidArgument)
	bad(&cs, "Conv2DBackpropFilter", a, ins(x, IntVec(tensor.Int32, 2, 2, 3), dy), nil, status.InvalidArgument)
	bad(&cs, "Conv2DBackpropFilter", Attrs{"strides": AInts(1, 1, 1, 1), "padding": AStr("VALID"), "dilations": AInts(1, 2, 2, 1)}, ins(Rand(r, tensor.Float, tensor.Shape{1, 6, 6, 3}), IntVec(tensor.Int32, 2, 2, 3, 4), dy), nil, status.InvalidArgument)
	return cs
}

// refPoolGrad routes (max: to the first maximum of each window) or spreads
// (average: over the window's in-bounds elements) each output gradient.
func refPoolGrad(op string, x, g []float64, n, h, w, c int, k, st [4]int, padding string) []float64 {
	oh, pt := window(h, k[1], 1, st[1], padding, [2]int{})
	ow, pl := window(w, k[2], 1, st[2], padding, [2]int{})
	dx := make([]float64, n*h*w*c)
	for b := 0; b < n; b++ {
		for i := 0; i < oh; i++ {
			for j := 0; j < ow; j++ {
				for d := 0; d < c; d++ {
					gv := g[((b*oh+i)*ow+j)*c+d]
					var pos []int
					best := -1
					for y := i*st[1] - pt; y < i*st[1]-pt+k[1]; y++ {
						for xx := j*st[2] - pl; xx < j*st[2]-pl+k[2]; xx++ {
							if y < 0 || y >= h || xx < 0 || xx >= w {
								continue
							}
							p := ((b*h+y)*w+xx)*c + d
							pos = append(pos, p)
							if best < 0 || x[p] > x[best] {
								best = p
							}
						}
					}
					if op == "MaxPoolGrad" {
						if best >= 0 {
							dx[best] += gv
						}
						continue
					}
					for _, p := range pos {
						dx[p] += gv / float64(len(pos))
					}
				}
			}
		}
	}
	return dx
}

func poolGradCases(r *rand.Rand, op string) []Case {
	var cs []Case
	for _, dt := range FloatTypes {
		for i := 0; i < 12; i++ {
			n, h, w, c := 1+r.Intn(2), 1+r.Intn(7), 1+r.Intn(7), 1+r.Intn(3)
			k := [4]int{1, 1 + r.Intn(3), 1 + r.Intn(3), 1}
			st := [4]int{1, 1 + r.Intn(3), 1 + r.Intn(3), 1}
			padding := pick(r, []string{"SAME", "VALID"})
			oh, _ := window(h, k[1], 1, st[1], padding, [2]int{})
			ow, _ := window(w, k[2], 1, st[2], padding, [2]int{})
			if oh <= 0 || ow <= 0 {
				continue
			}
			// Distinct values, so that the maximum of a window is unique
			// in every dtype.
			x := tensor.New(dt, tensor.Shape{int64(n), int64(h), int64(w), int64(c)})
			for j, p := range r.Perm(int(x.NumElements())) {
				SetF64(x, j, float64(p)/4-8)
			}
			g := RandRange(r, dt, tensor.Shape{int64(n), int64(oh), int64(ow), int64(c)}, -1, 1)
			want := refPoolGrad(op, F64s(x), F64s(g), n, h, w, c, k, st, padding)
			a := Attrs{"ksize": AInts(1, int64(k[1]), int64(k[2]), 1), "strides": AInts(1, int64(st[1]), int64(st[2]), 1), "padding": AStr(padding)}
			var in []*tensor.Tensor
			if op == "MaxPoolGrad" {
				y, _ := refPool("MaxPool", F64s(x), n, h, w, c, k, st, padding, [4]int{})
				in = ins(x, FromF64(dt, g.Shape, y), g)
			} else {
				in = ins(IntVec(tensor.Int32, x.Shape...), g)
			}
			cs = append(cs, Case{Name: fmt.Sprintf("%s %v x%v k%v s%v %s", op, dt, x.Shape, k, st, padding), Node: NodeFor(op, a, in, nil), Inputs: in,
				Want: ins(FromF64(dt, x.Shape, want)), Tol: 2 * Tol(dt)})
		}
	}
	x := Rand(r, tensor.Float, tensor.Shape{1, 4, 4, 1})
	g := Rand(r, tensor.Float, tensor.Shape{1, 2, 2, 1})
	a := Attrs{"ksize": AInts(1, 2, 2, 1), "strides": AInts(1, 1, 1, 1), "padding": AStr("VALID")}
	if op == "MaxPoolGrad" {
		bad(&cs, op, a, ins(x, g, g), nil, status.InvalidArgument)
	} else {
		// (TF does not check out_backprop's shape against the pooling's;
		// mstream refuses a mismatch rather than read out of bounds.)
		bad(&cs, op, a, ins(IntVec(tensor.Int32, 1, 4, 4), g), nil, status.InvalidArgument)
	}
	return cs
}

func unsortedSegmentSumCases(r *rand.Rand) []Case {
	var cs []Case
	types := []tensor.DType{tensor.Float, tensor.Double, tensor.Half, tensor.Bfloat16, tensor.Int32, tensor.Int64}
	for _, dt := range types {
		for _, it := range indexTypes {
			for _, sh := range []tensor.Shape{{5}, {6, 3}, {2, 3, 4}, {0, 2}} {
				data := RandRange(r, dt, sh, -3, 3)
				num := int64(1 + r.Intn(5))
				ids := tensor.New(it, sh[:1])
				for i := 0; i < int(sh[0]); i++ {
					SetF64(ids, i, float64(r.Int63n(num+1)-1)) // -1 drops the row
				}
				ns := tensor.New(it, tensor.Shape{})
				SetF64(ns, 0, float64(num))
				cs = append(cs, Case{Name: fmt.Sprintf("UnsortedSegmentSum %v %v %v", dt, it, sh), Node: NodeFor("UnsortedSegmentSum", nil, ins(data, ids, ns), nil), Inputs: ins(data, ids, ns),
					NumPy: fmt.Sprintf("(lambda z: (np.add.at(z, a1[a1 >= 0], a0[a1 >= 0].astype(np.float64)), z)[1])(np.zeros((%d,) + a0.shape[1:]))", num), Tol: 2 * Tol(dt)})
			}
		}
	}
	data := Rand(r, tensor.Float, tensor.Shape{3, 2})
	bad(&cs, "UnsortedSegmentSum", nil, ins(data, IntVec(tensor.Int32, 0, 3, 1), tensor.ScalarI32(3)), nil, status.InvalidArgument)
	cs[len(cs)-1].HostErr = true // TF's GPU kernel drops the row of an id >= num_segments
	bad(&cs, "UnsortedSegmentSum", nil, ins(data, IntVec(tensor.Int32, 0, 1), tensor.ScalarI32(3)), nil, status.InvalidArgument)
	return cs
}

func stridedSliceGradCases(r *rand.Rand) []Case {
	var cs []Case
	specs := []struct {
		shape               []int64
		begin, end, strides []int64
		bm, em, sm          int64
		py                  string
	}{
		{[]int64{6}, []int64{1}, []int64{5}, []int64{2}, 0, 0, 0, "1:5:2"},
		{[]int64{4, 5}, []int64{0, 1}, []int64{3, 5}, []int64{1, 1}, 0, 0, 0, "0:3, 1:5"},
		{[]int64{4, 5}, []int64{3, 4}, []int64{0, 0}, []int64{-1, -2}, 0, 0, 0, "3:0:-1, 4:0:-2"},
		{[]int64{3, 4, 2}, []int64{1, 0, 0}, []int64{2, 4, 2}, []int64{1, 1, 1}, 0, 0, 1, "1, 0:4, 0:2"},
		{[]int64{5, 3}, []int64{2, 0}, []int64{0, 0}, []int64{1, 1}, 2, 3, 0, "2:, :"},
	}
	for _, dt := range []tensor.DType{tensor.Float, tensor.Double, tensor.Int32} {
		for _, s := range specs {
			a := Attrs{"begin_mask": AInt(s.bm), "end_mask": AInt(s.em), "shrink_axis_mask": AInt(s.sm)}
			shp := sliceShape(s.shape, s.begin, s.end, s.strides, s.bm, s.em, s.sm)
			dy := RandRange(r, dt, shp, -3, 3)
			in := ins(IntVec(tensor.Int32, s.shape...), IntVec(tensor.Int32, s.begin...), IntVec(tensor.Int32, s.end...), IntVec(tensor.Int32, s.strides...), dy)
			cs = append(cs, Case{Name: fmt.Sprintf("StridedSliceGrad %v %v[%s]", dt, s.shape, s.py), Node: NodeFor("StridedSliceGrad", a, in, nil), Inputs: in,
				NumPy: fmt.Sprintf("(lambda z: (z.__setitem__(np.s_[%s], a4), z)[1])(np.zeros(%s, a4.dtype))", s.py, pyInts(s.shape))})
		}
	}
	dy := Rand(r, tensor.Float, tensor.Shape{3})
	bad(&cs, "StridedSliceGrad", nil, ins(IntVec(tensor.Int32, 6), IntVec(tensor.Int32, 0), IntVec(tensor.Int32, 4), IntVec(tensor.Int32, 1), dy), nil, status.InvalidArgument)
	return cs
}

// sliceShape is the shape of x[begin:end:strides] for the simple specs
// above (begin/end masks and shrinks, no ellipsis or new axes), computed
// as Python slicing does.
func sliceShape(shape, begin, end, strides []int64, bm, em, sm int64) tensor.Shape {
	var out tensor.Shape
	for i, d := range shape {
		if sm&(1<<i) != 0 {
			continue
		}
		b, e, s := begin[i], end[i], strides[i]
		if bm&(1<<i) != 0 {
			b = 0
			if s < 0 {
				b = d - 1
			}
		}
		if em&(1<<i) != 0 {
			e = d
			if s < 0 {
				e = -1
			}
		}
		n := int64(0)
		if s > 0 && e > b {
			n = (e - b + s - 1) / s
		} else if s < 0 && b > e {
			n = (b - e - s - 1) / -s
		}
		out = append(out, n)
	}
	return out
}

func init() {
	for _, op := range []string{"FusedBatchNormGrad", "FusedBatchNormGradV2", "FusedBatchNormGradV3"} {
		op := op
		Add(op, func(r *rand.Rand) []Case { return batchNormGradCases(r, op) })
	}
}

// refBatchNormGrad is the batch-norm backward pass from its definition:
// in training the mean and variance depend on x, otherwise they are
// constants.
func refBatchNormGrad(dy, x []float64, shape tensor.Shape, ax int, scale, mean, variance []float64, eps float64, training bool) [3][]float64 {
	c := int(shape[ax])
	inner := 1
	for _, d := range shape[ax+1:] {
		inner *= int(d)
	}
	ch := func(i int) int { return i / inner % c }
	n := float64(len(x) / c)
	sdy, sdyxc := make([]float64, c), make([]float64, c)
	for i := range x {
		sdy[ch(i)] += dy[i]
		sdyxc[ch(i)] += dy[i] * (x[i] - mean[ch(i)])
	}
	dx := make([]float64, len(x))
	for i := range x {
		k := ch(i)
		sd := math.Sqrt(variance[k] + eps)
		if training {
			dx[i] = scale[k] / sd * (dy[i] - sdy[k]/n - (x[i]-mean[k])*sdyxc[k]/n/(variance[k]+eps))
		} else {
			dx[i] = dy[i] * scale[k] / sd
		}
	}
	ds := make([]float64, c)
	for k := range ds {
		ds[k] = sdyxc[k] / math.Sqrt(variance[k]+eps)
	}
	return [3][]float64{dx, ds, sdy}
}

func batchNormGradCases(r *rand.Rand, op string) []Case {
	var cs []Case
	types := []tensor.DType{tensor.Float, tensor.Half, tensor.Bfloat16}
	if op == "FusedBatchNormGrad" {
		types = types[:1]
	}
	for _, dt := range types {
		for i := 0; i < 8; i++ {
			nchw := i%4 == 3
			n, h, w, c := 1+r.Intn(3), 1+r.Intn(4), 1+r.Intn(4), 1+r.Intn(4)
			shape := tensor.Shape{int64(n), int64(h), int64(w), int64(c)}
			ax := 3
			if nchw {
				shape, ax = tensor.Shape{int64(n), int64(c), int64(h), int64(w)}, 1
			}
			training := i%2 == 0 || nchw // TF's CPU kernel: NCHW in training only (an error case below)
			x := RandRange(r, dt, shape, -2, 2)
			dy := RandRange(r, dt, shape, -1, 1)
			scale := RandRange(r, tensor.Float, tensor.Shape{int64(c)}, 0.5, 1.5)
			xs := F64s(x)
			mean, variance := make([]float64, c), make([]float64, c)
			if training { // the batch statistics the forward op saved
				st := refBatchNorm(xs, shape, ax, make([]float64, c), make([]float64, c), make([]float64, c), make([]float64, c), 0, 1, true)
				mean, variance = st[3], st[4]
			} else {
				for k := range mean {
					mean[k], variance[k] = r.Float64()-0.5, 0.5+r.Float64()
				}
			}
			eps := float32(0.001)
			// The reserve spaces hold float32 values; the reference uses
			// those values, rounded as the kernel sees them.
			mt, vt := FromF64(tensor.Float, tensor.Shape{int64(c)}, mean), FromF64(tensor.Float, tensor.Shape{int64(c)}, variance)
			ref := refBatchNormGrad(F64s(dy), xs, shape, ax, F64s(scale), F64s(mt), F64s(vt), float64(eps), training)
			in := ins(dy, x, scale, mt, vt)
			if op == "FusedBatchNormGradV3" {
				in = append(in, tensor.New(tensor.Float, tensor.Shape{}))
			}
			df := "NHWC"
			if nchw {
				df = "NCHW"
			}
			a := Attrs{"epsilon": AFloat(eps), "is_training": ABool(training), "data_format": AStr(df)}
			cs = append(cs, Case{Name: fmt.Sprintf("%s %v %v %s training=%v", op, dt, shape, df, training), Node: NodeFor(op, a, in, nil), Inputs: in,
				Want: []*tensor.Tensor{FromF64(dt, shape, ref[0]), FromF64(tensor.Float, tensor.Shape{int64(c)}, ref[1]), FromF64(tensor.Float, tensor.Shape{int64(c)}, ref[2]), nil, nil},
				Tol:  8 * Tol(dt)})
		}
	}
	x := Rand(r, tensor.Float, tensor.Shape{2, 2, 2, 3})
	s3 := Rand(r, tensor.Float, tensor.Shape{3})
	in := ins(x, Rand(r, tensor.Float, tensor.Shape{2, 2, 2, 2}), s3, s3, s3)
	if op == "FusedBatchNormGradV3" {
		in = append(in, tensor.New(tensor.Float, tensor.Shape{}))
	}
	bad(&cs, op, nil, in, nil, status.InvalidArgument)
	in = ins(x, x, s3, s3, s3)
	if op == "FusedBatchNormGradV3" {
		in = append(in, tensor.New(tensor.Float, tensor.Shape{}))
	}
	bad(&cs, op, Attrs{"is_training": ABool(false), "data_format": AStr("NCHW")}, in, nil, status.InvalidArgument)
	return cs
}

func init() {
	Add("DepthwiseConv2dNativeBackpropInput", func(r *rand.Rand) []Case { return depthwiseBackpropCases(r, false) })
	Add("DepthwiseConv2dNativeBackpropFilter", func(r *rand.Rand) []Case { return depthwiseBackpropCases(r, true) })
}

// refDepthwiseBackprop scatters dy through the depthwise windows: output
// channel c*M+m reads input channel c through f[a, b, c, m].
func refDepthwiseBackprop(s convSpec, mult int, x, f, dy []float64, filter bool) []float64 {
	oh, pt := window(s.h, s.kh, 1, s.sh, s.padding, [2]int{s.pads[0], s.pads[1]})
	ow, pl := window(s.w, s.kw, 1, s.sw, s.padding, [2]int{s.pads[2], s.pads[3]})
	var out []float64
	if filter {
		out = make([]float64, s.kh*s.kw*s.c*mult)
	} else {
		out = make([]float64, s.n*s.h*s.w*s.c)
	}
	for n := 0; n < s.n; n++ {
		for i := 0; i < oh; i++ {
			for j := 0; j < ow; j++ {
				for a := 0; a < s.kh; a++ {
					for b := 0; b < s.kw; b++ {
						y, xx := i*s.sh-pt+a, j*s.sw-pl+b
						if y < 0 || y >= s.h || xx < 0 || xx >= s.w {
							continue
						}
						for c := 0; c < s.c; c++ {
							for m := 0; m < mult; m++ {
								g := dy[((n*oh+i)*ow+j)*s.c*mult+c*mult+m]
								fi, xi := ((a*s.kw+b)*s.c+c)*mult+m, ((n*s.h+y)*s.w+xx)*s.c+c
								if filter {
									out[fi] += x[xi] * g
								} else {
									out[xi] += f[fi] * g
								}
							}
						}
					}
				}
			}
		}
	}
	return out
}

func depthwiseBackpropCases(r *rand.Rand, filter bool) []Case {
	op := "DepthwiseConv2dNativeBackpropInput"
	if filter {
		op = "DepthwiseConv2dNativeBackpropFilter"
	}
	var cs []Case
	for _, dt := range FloatTypes {
		for i := 0; i < 13; i++ {
			s := randConvSpec(r)
			s.sw, s.dh, s.dw = s.sh, 1, 1
			mult := 1 + r.Intn(3)
			if i == 12 {
				// A batch of positions several GPU blocks long: the
				// filter's gradient sums over 4*14*14 of them. Not in
				// half types, which TF sums in the dtype (the oracle
				// strays from the float64 reference by more than
				// gradConvTol over 784 terms).
				if dt == tensor.Half || dt == tensor.Bfloat16 {
					continue
				}
				s = convSpec{n: 4, h: 14, w: 14, c: 3, kh: 3, kw: 3, sh: 1, sw: 1, dh: 1, dw: 1, padding: "SAME"}
			}
			oh, _ := window(s.h, s.kh, 1, s.sh, s.padding, [2]int{s.pads[0], s.pads[1]})
			ow, _ := window(s.w, s.kw, 1, s.sw, s.padding, [2]int{s.pads[2], s.pads[3]})
			if oh <= 0 || ow <= 0 {
				continue
			}
			xs := tensor.Shape{int64(s.n), int64(s.h), int64(s.w), int64(s.c)}
			fs := tensor.Shape{int64(s.kh), int64(s.kw), int64(s.c), int64(mult)}
			x, f := RandRange(r, dt, xs, -1, 1), RandRange(r, dt, fs, -1, 1)
			dy := RandRange(r, dt, tensor.Shape{int64(s.n), int64(oh), int64(ow), int64(s.c * mult)}, -1, 1)
			want := refDepthwiseBackprop(s, mult, F64s(x), F64s(f), F64s(dy), filter)
			in, ws, k := ins(IntVec(tensor.Int32, xs...), f, dy), xs, s.kh*s.kw*mult
			if filter {
				in, ws, k = ins(x, IntVec(tensor.Int32, fs...), dy), fs, s.n*oh*ow
			}
			cs = append(cs, Case{Name: fmt.Sprintf("%s %v %+v x%d", op, dt, s, mult), Node: NodeFor(op, s.attrs(), in, nil), Inputs: in,
				Want: ins(FromF64(dt, ws, want)), Tol: gradConvTol(dt, k)})
		}
	}
	x, f, dy := Rand(r, tensor.Float, tensor.Shape{1, 4, 4, 3}), Rand(r, tensor.Float, tensor.Shape{2, 2, 3, 1}), Rand(r, tensor.Float, tensor.Shape{1, 3, 3, 2})
	a := Attrs{"strides": AInts(1, 1, 1, 1), "padding": AStr("VALID")}
	if filter {
		bad(&cs, op, a, ins(x, IntVec(tensor.Int32, 2, 2, 3, 1), dy), nil, status.InvalidArgument)
	} else {
		bad(&cs, op, a, ins(IntVec(tensor.Int32, 1, 4, 4, 3), f, dy), nil, status.InvalidArgument)
	}
	return cs
}
