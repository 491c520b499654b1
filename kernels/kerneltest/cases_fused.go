package kerneltest

import (
	"fmt"
	"math"
	"math/rand"
	"sort"

	"mstream/proto/tfpb"
	"mstream/status"
	"mstream/tensor"
)

// The fused ops that plan-time fusion (package optimize) and TF's grappler
// produce: _FusedMatMul and _FusedConv2D with their BiasAdd/FusedBatchNorm
// and activation epilogues, and mstream's _MstreamUnaryChain,
// _MstreamLayerNorm, _MstreamAddLayerNorm, _MstreamAttention,
// _MstreamEinsumBias and _MstreamConv2DMaxPool. References are float64
// loops: the GEMM or convolution (refConv), then the epilogue exactly as
// the unfused nodes define it (then the pool, refPool).

func init() {
	Add("_FusedMatMul", fusedMatMulCases)
	Add("_FusedConv2D", fusedConv2DCases)
	Add("_MstreamConv2DMaxPool", convMaxPoolCases)
	Add("_MstreamUnaryChain", unaryChainCases)
	Add("_MstreamLayerNorm", casesOf("_MstreamLayerNorm", layerNormCases))
	Add("_MstreamAddLayerNorm", casesOf("_MstreamAddLayerNorm", layerNormCases))
	Add("_MstreamAttention", attentionCases)
	Add("_MstreamEinsumBias", einsumBiasCases)
}

// casesOf keeps gen's cases of op: one generator draws both
// normalisations' cases from the same shapes.
func casesOf(op string, gen Gen) Gen {
	return func(r *rand.Rand) []Case {
		var cs []Case
		for _, c := range gen(r) {
			if c.Node.Op == op {
				cs = append(cs, c)
			}
		}
		return cs
	}
}

func aStrs(v ...string) *tfpb.AttrValue {
	b := make([][]byte, len(v))
	for i, s := range v {
		b[i] = []byte(s)
	}
	return &tfpb.AttrValue{Value: &tfpb.AttrValue_List{List: &tfpb.AttrValue_ListValue{S: b}}}
}

// refAct is the activation of a fused epilogue in float64.
func refAct(act string, alpha, v float64) float64 {
	switch act {
	case "Relu":
		return math.Max(v, 0)
	case "Relu6":
		return math.Min(math.Max(v, 0), 6)
	case "Elu":
		if v < 0 {
			return math.Expm1(v)
		}
	case "LeakyRelu":
		if v < 0 {
			return alpha * v
		}
	case "Tanh":
		return math.Tanh(v)
	case "Sigmoid":
		return 1 / (1 + math.Exp(-v))
	case "GeluExact":
		return 0.5 * v * (1 + math.Erf(v/math.Sqrt2))
	case "GeluApproximate":
		return 0.5 * v * (1 + math.Tanh(math.Sqrt(2/math.Pi)*(v+0.044715*v*v*v)))
	}
	return v
}

// randGEMM makes the operands of op(a)·op(b) with m rows, k inner and n
// columns (transposed as ta and tb say), values in [-1, 1], and the
// product in float64.
func randGEMM(r *rand.Rand, dt tensor.DType, ta, tb bool, m, n, k int) (a, b *tensor.Tensor, want []float64) {
	as, bs := tensor.Shape{int64(m), int64(k)}, tensor.Shape{int64(k), int64(n)}
	if ta {
		as = tensor.Shape{int64(k), int64(m)}
	}
	if tb {
		bs = tensor.Shape{int64(n), int64(k)}
	}
	a, b = RandRange(r, dt, as, -1, 1), RandRange(r, dt, bs, -1, 1)
	return a, b, refMatMul(ta, tb, m, n, k, F64s(a), F64s(b))
}

func refMatMul(ta, tb bool, m, n, k int, a, b []float64) []float64 {
	out := make([]float64, m*n)
	for i := 0; i < m; i++ {
		for j := 0; j < n; j++ {
			s := 0.0
			for p := 0; p < k; p++ {
				x, y := a[i*k+p], b[p*n+j]
				if ta {
					x = a[p*m+i]
				}
				if tb {
					y = b[j*k+p]
				}
				s += x * y
			}
			out[i*n+j] = s
		}
	}
	return out
}

var fusedActList = []string{"", "Relu", "Relu6", "Elu", "LeakyRelu", "Tanh", "Sigmoid"}

func fusedOps(first, act string) *tfpb.AttrValue {
	if act == "" {
		return aStrs(first)
	}
	return aStrs(first, act)
}

func fusedMatMulCases(r *rand.Rand) []Case {
	var cs []Case
	for _, dt := range []tensor.DType{tensor.Float, tensor.Half, tensor.Bfloat16} {
		for i := 0; i < 24; i++ {
			m, n, k := r.Intn(9), 1+r.Intn(70), r.Intn(40)
			if i == 0 {
				m, n, k = 33, 130, 67 // several GEMM blocks, vectorised epilogue rows
			}
			ta, tb := r.Intn(2) == 1, r.Intn(2) == 1
			act := pick(r, append(fusedActList, "GeluExact", "GeluApproximate"))
			a, b, want := randGEMM(r, dt, ta, tb, m, n, k)
			bias := RandRange(r, dt, tensor.Shape{int64(n)}, -1, 1)
			alpha := float32(0.1 + r.Float64())
			bv := F64s(bias)
			for j := range want {
				want[j] = refAct(act, float64(alpha), want[j]+bv[j%n])
			}
			attrs := Attrs{"transpose_a": ABool(ta), "transpose_b": ABool(tb), "fused_ops": fusedOps("BiasAdd", act), "leakyrelu_alpha": AFloat(alpha)}
			cs = append(cs, Case{Name: fmt.Sprintf("_FusedMatMul %v m%d n%d k%d ta=%v tb=%v %s", dt, m, n, k, ta, tb, act),
				Node: NodeFor("_FusedMatMul", attrs, ins(a, b, bias), map[int]int{2: 1}), Inputs: ins(a, b, bias),
				Want: ins(FromF64(dt, tensor.Shape{int64(m), int64(n)}, want)), Tol: convTol(dt, k+1)})
		}
	}
	a, b := Rand(r, tensor.Float, tensor.Shape{3, 4}), Rand(r, tensor.Float, tensor.Shape{4, 5})
	bias := Rand(r, tensor.Float, tensor.Shape{5})
	node := func(ops *tfpb.AttrValue, args ...*tensor.Tensor) *Case {
		in := append(ins(a, b), args...)
		return &Case{Node: NodeForUnknown("_FusedMatMul", Attrs{"fused_ops": ops}, in, map[int]int{2: len(args)}), Inputs: in}
	}
	for _, e := range []struct {
		ops  *tfpb.AttrValue
		args []*tensor.Tensor
		code status.Code
		msg  string
	}{
		{aStrs(), ins(bias), status.InvalidArgument, "at least one fused op"},
		{aStrs("Relu"), ins(bias), status.Unimplemented, "Fusion is not implemented: [Relu]"},
		{aStrs("BiasAdd", "Softmax"), ins(bias), status.Unimplemented, "[BiasAdd,Softmax]"},
		{aStrs("BiasAdd"), ins(bias, bias), status.InvalidArgument, "one extra argument"},
		{aStrs("BiasAdd"), ins(Rand(r, tensor.Float, tensor.Shape{4})), status.InvalidArgument, "4 elements"},
		{aStrs("BiasAdd"), ins(Rand(r, tensor.Float, tensor.Shape{1, 5})), status.InvalidArgument, "1-dimensional"},
	} {
		c := node(e.ops, e.args...)
		c.Err, c.ErrMsg = e.code, e.msg
		cs = append(cs, *c)
	}
	c := node(aStrs("BiasAdd"), bias)
	c.Inputs = ins(Rand(r, tensor.Float, tensor.Shape{3, 3}), b, bias)
	c.Err, c.ErrMsg = status.InvalidArgument, "Matrix size-incompatible"
	cs = append(cs, *c)
	return cs
}

func fusedConv2DCases(r *rand.Rand) []Case {
	var cs []Case
	for _, dt := range []tensor.DType{tensor.Float, tensor.Half, tensor.Double} {
		for i := 0; i < 24; i++ {
			s := randConvSpec(r)
			if i == 0 { // a 1x1 stride-1 convolution: the single-GEMM path
				s.kh, s.kw, s.sh, s.sw, s.dh, s.dw, s.padding = 1, 1, 1, 1, 1, 1, "VALID"
			}
			if i == 1 { // enough channels for the vectorised epilogue
				s.o = 40
			}
			if !s.valid() {
				continue
			}
			bn := r.Intn(2) == 1
			act := fusedActList[r.Intn(len(fusedActList))]
			if bn && (act == "Tanh" || act == "Sigmoid") {
				act = "Relu"
			}
			x := RandRange(r, dt, tensor.Shape{int64(s.n), int64(s.h), int64(s.w), int64(s.c)}, -1, 1)
			f := RandRange(r, dt, tensor.Shape{int64(s.kh), int64(s.kw), int64(s.c), int64(s.o)}, -1, 1)
			conv, shape := refConv(s, F64s(x), F64s(f))
			eps := float32(1e-3 * (1 + r.Float64()))
			alpha := float32(0.1 + r.Float64())
			first, args := convEpilogue(r, dt, conv, s.o, bn, act, eps, alpha)
			attrs := s.attrs()
			attrs["fused_ops"] = fusedOps(first, act)
			attrs["num_args"] = AInt(int64(len(args)))
			attrs["epsilon"] = AFloat(eps)
			attrs["leakyrelu_alpha"] = AFloat(alpha)
			in := append(ins(x, f), args...)
			cs = append(cs, Case{Name: fmt.Sprintf("_FusedConv2D %v %+v %s %s", dt, s, first, act),
				Node: NodeFor("_FusedConv2D", attrs, in, map[int]int{2: len(args), 3: 0}), Inputs: in,
				Want: ins(FromF64(dt, shape, conv)), Tol: 2 * convTol(dt, s.kh*s.kw*s.c+4)})
		}
	}
	// Errors, as TF's fused kernels report them (plus a bias of the wrong
	// length, which TF's CPU kernel reads past instead of rejecting).
	x, f := Rand(r, tensor.Float, tensor.Shape{1, 5, 5, 3}), Rand(r, tensor.Float, tensor.Shape{2, 2, 3, 4})
	bias := Rand(r, tensor.Float, tensor.Shape{4})
	for _, e := range []struct {
		ops  *tfpb.AttrValue
		args []*tensor.Tensor
		df   string
		code status.Code
		msg  string
	}{
		{aStrs(), ins(bias), "NHWC", status.InvalidArgument, "at least one fused op"},
		{aStrs("Relu", "BiasAdd"), ins(bias), "NHWC", status.Unimplemented, "Fusion is not implemented"},
		{aStrs("FusedBatchNorm"), ins(bias), "NHWC", status.InvalidArgument, "four extra arguments"},
		{aStrs("BiasAdd"), ins(Rand(r, tensor.Float, tensor.Shape{3})), "NHWC", status.InvalidArgument, "4 channels"},
		{aStrs("FusedBatchNorm", "Relu"), ins(bias, bias, bias, Rand(r, tensor.Float, tensor.Shape{2, 2})), "NHWC", status.InvalidArgument, "estimated_variance must be 1-dimensional"},
		{aStrs("BiasAdd"), ins(bias), "NCHW", status.Unimplemented, "NHWC"},
		{aStrs("BiasAdd", "GeluExact"), ins(bias), "NHWC", status.Unimplemented, "[BiasAdd,GeluExact]"},
	} {
		in := append(ins(x, f), e.args...)
		a := Attrs{"strides": AInts(1, 1, 1, 1), "padding": AStr("VALID"), "fused_ops": e.ops, "num_args": AInt(int64(len(e.args))), "data_format": AStr(e.df)}
		cs = append(cs, Case{Node: NodeForUnknown("_FusedConv2D", a, in, map[int]int{2: len(e.args), 3: 0}), Inputs: in, Err: e.code, ErrMsg: e.msg})
	}
	return cs
}

// convEpilogue draws a fused convolution's epilogue arguments for o
// channels (a bias, or with bn FusedBatchNorm's four) and applies them
// and act to the float64 convolution conv in place, as the unfused nodes
// define them; it returns the first fused op and the arguments.
func convEpilogue(r *rand.Rand, dt tensor.DType, conv []float64, o int, bn bool, act string, eps, alpha float32) (string, []*tensor.Tensor) {
	n := int64(o)
	scale, offset := make([]float64, o), make([]float64, o)
	first := "BiasAdd"
	var args []*tensor.Tensor
	if bn {
		first = "FusedBatchNorm"
		sc, off := RandRange(r, dt, tensor.Shape{n}, 0.5, 2), RandRange(r, dt, tensor.Shape{n}, -1, 1)
		mean, vr := RandRange(r, dt, tensor.Shape{n}, -1, 1), RandRange(r, dt, tensor.Shape{n}, 0.1, 2)
		args = ins(sc, off, mean, vr)
		scv, offv, mv, vv := F64s(sc), F64s(off), F64s(mean), F64s(vr)
		for c := range scale {
			scale[c] = scv[c] / math.Sqrt(vv[c]+float64(eps))
			offset[c] = offv[c] - mv[c]*scale[c]
		}
	} else {
		bias := RandRange(r, dt, tensor.Shape{n}, -1, 1)
		args = ins(bias)
		copy(offset, F64s(bias))
		for c := range scale {
			scale[c] = 1
		}
	}
	for j := range conv {
		c := j % o
		conv[j] = refAct(act, float64(alpha), conv[j]*scale[c]+offset[c])
	}
	return first, args
}

// convMaxPoolCases: _MstreamConv2DMaxPool, a _FusedConv2D (bias or
// batch norm, an activation) whose output a MaxPool reads, against the
// float64 convolution, epilogue and pool; batches of one and several,
// SAME and VALID pools (a VALID remainder leaves the convolution's last
// rows unread), the epilogues oneDNN's primitive takes (a bias, Relu) and
// those it does not.
func convMaxPoolCases(r *rand.Rand) []Case {
	var cs []Case
	acts := []string{"", "Relu", "Relu", "Elu"}
	for i := 0; i < 24; i++ {
		s := randConvSpec(r)
		s.n, s.h, s.w, s.o = 1+2*r.Intn(2), 4+r.Intn(12), 3+r.Intn(8), 1+r.Intn(20)
		if !s.valid() {
			continue
		}
		x := RandRange(r, tensor.Float, tensor.Shape{int64(s.n), int64(s.h), int64(s.w), int64(s.c)}, -1, 1)
		f := RandRange(r, tensor.Float, tensor.Shape{int64(s.kh), int64(s.kw), int64(s.c), int64(s.o)}, -1, 1)
		conv, shape := refConv(s, F64s(x), F64s(f))
		act := acts[i%len(acts)]
		first, args := convEpilogue(r, tensor.Float, conv, s.o, i%5 == 4, act, 1e-3, 0.2)
		k := [4]int{1, 1 + r.Intn(3), 1 + r.Intn(3), 1}
		st := [4]int{1, 1 + r.Intn(3), 1 + r.Intn(2), 1}
		padding := pick(r, []string{"SAME", "VALID"})
		ch, cw := int(shape[1]), int(shape[2])
		if oh, _ := window(ch, k[1], 1, st[1], padding, [2]int{}); oh <= 0 {
			continue
		}
		if ow, _ := window(cw, k[2], 1, st[2], padding, [2]int{}); ow <= 0 {
			continue
		}
		want, wshape := refPool("MaxPool", conv, s.n, ch, cw, s.o, k, st, padding, [4]int{})
		attrs := s.attrs()
		attrs["fused_ops"] = fusedOps(first, act)
		attrs["num_args"] = AInt(int64(len(args)))
		attrs["epsilon"] = AFloat(1e-3)
		attrs["pool_ksize"] = AInts(1, int64(k[1]), int64(k[2]), 1)
		attrs["pool_strides"] = AInts(1, int64(st[1]), int64(st[2]), 1)
		attrs["pool_padding"] = AStr(padding)
		in := append(ins(x, f), args...)
		cs = append(cs, Case{Name: fmt.Sprintf("_MstreamConv2DMaxPool %+v %s %s pool %v %v %s", s, first, act, k, st, padding),
			Node: NodeFor("_MstreamConv2DMaxPool", attrs, in, map[int]int{2: len(args), 3: 0}), Inputs: in,
			Want: ins(FromF64(tensor.Float, wshape, want)), Tol: 2 * convTol(tensor.Float, s.kh*s.kw*s.c+4)})
	}
	// A pool across depth is not fused.
	x, f := Rand(r, tensor.Float, tensor.Shape{1, 5, 5, 3}), Rand(r, tensor.Float, tensor.Shape{2, 2, 3, 4})
	in := ins(x, f, Rand(r, tensor.Float, tensor.Shape{4}))
	a := Attrs{"strides": AInts(1, 1, 1, 1), "padding": AStr("VALID"), "fused_ops": aStrs("BiasAdd"), "num_args": AInt(1),
		"pool_ksize": AInts(1, 1, 1, 2), "pool_strides": AInts(1, 1, 1, 2), "pool_padding": AStr("VALID")}
	cs = append(cs, Case{Node: NodeForUnknown("_MstreamConv2DMaxPool", a, in, map[int]int{2: 1, 3: 0}), Inputs: in, Err: status.Unimplemented, ErrMsg: "spatial window"})
	return cs
}

// chainable are the unary float32 ops a chain may hold, with float64
// references (the conformance tolerance absorbs vec's few-ulp error).
var chainable = map[string]func(float64) float64{
	"Neg": func(v float64) float64 { return -v }, "Abs": math.Abs, "Square": func(v float64) float64 { return v * v },
	"Exp": math.Exp, "Tanh": math.Tanh, "Sigmoid": func(v float64) float64 { return 1 / (1 + math.Exp(-v)) },
	"Relu":  func(v float64) float64 { return math.Max(v, 0) },
	"Relu6": func(v float64) float64 { return math.Min(math.Max(v, 0), 6) },
	"Elu": func(v float64) float64 {
		if v < 0 {
			return math.Expm1(v)
		}
		return v
	},
	"Floor": math.Floor, "Ceil": math.Ceil, "Softsign": func(v float64) float64 { return v / (1 + math.Abs(v)) },
}

// chainCond is, for the chainable ops that magnify a relative error in
// their input, that factor |v f'(v) / f(v)| at v; the others pass one
// on at most (steps, clamps and the odd functions' slopes below 1).
var chainCond = map[string]func(float64) float64{
	"Exp": math.Abs, "Square": func(float64) float64 { return 2 },
	"Sigmoid": func(v float64) float64 { return math.Abs(v) / (1 + math.Exp(v)) },
}

// chainOpErr is the relative error one op of a float32 chain may add (8
// float32 epsilons: a vectorised Exp or Tanh is a few ulps off); a chain
// passes each op's on, magnified by the ops after it (chainCond), so
// that [Exp Exp Exp] of 1.3 is good to about 400 of them, 5e-5.
const chainOpErr = 8.0 / (1 << 23)

// stepOps are the chainable ops whose result jumps at integers.
var stepOps = map[string]bool{"Floor": true, "Ceil": true}

func unaryChainCases(r *rand.Rand) []Case {
	names := make([]string, 0, len(chainable))
	for k := range chainable {
		names = append(names, k)
	}
	sort.Strings(names)
	var cs []Case
	for i := 0; i < 30; i++ {
		shape := randShape(r, 1+r.Intn(3), 1, 9)
		if i == 0 {
			shape = tensor.Shape{3, 3001} // several blocks, a ragged last one
		}
		if i == 1 {
			shape = tensor.Shape{0, 4}
		}
		n := 1 + r.Intn(4)
		ops := make([]string, n)
		for j := range ops {
			ops[j] = names[r.Intn(len(names))]
			// A step (Floor, Ceil) only first: after an op whose float32
			// result may differ from float64's in the last bit (Exp on
			// the GPU), a value near an integer flips by a whole unit.
			for j > 0 && stepOps[ops[j]] {
				ops[j] = names[r.Intn(len(names))]
			}
		}
		x := RandRange(r, tensor.Float, shape, -3, 3)
		const tol = 1e-5
		var scale []float64
		want := Map(x, tensor.Float, func(v float64) float64 {
			errs := 0.0 // the result's relative error, in chainOpErr
			for _, op := range ops {
				k := 1.0
				if f := chainCond[op]; f != nil {
					k = max(1, f(v))
				}
				errs = errs*k + 1
				v = float64(float32(chainable[op](v)))
			}
			scale = append(scale, math.Abs(v)*errs*chainOpErr/tol)
			return v
		})
		cs = append(cs, Case{Name: fmt.Sprintf("_MstreamUnaryChain %v %v", ops, shape), Node: NodeFor("_MstreamUnaryChain", Attrs{"ops": aStrs(ops...)}, ins(x), nil),
			Inputs: ins(x), Want: ins(want), Tol: tol, Scale: scale})
	}
	x := Rand(r, tensor.Float, tensor.Shape{4})
	cs = append(cs, Case{Node: NodeFor("_MstreamUnaryChain", Attrs{"ops": aStrs("Relu", "Softmax")}, ins(x), nil), Inputs: ins(x), Err: status.InvalidArgument, ErrMsg: "Softmax"})
	return cs
}

// layerNormCases: _MstreamLayerNorm (and _MstreamAddLayerNorm, of a sum)
// against a float64 layer normalisation
// (the rows from begin_norm_axis on, gamma and beta along the last
// dimension, broadcast from one element when they have one), including
// rows longer than the last dimension, an offset the mean must remove,
// empty inputs, and the errors of a bad axis or parameter shape.
func layerNormCases(r *rand.Rand) []Case {
	var cs []Case
	for i := 0; i < 24; i++ {
		shape := randShape(r, 1+r.Intn(3), 1, 9)
		switch i {
		case 0:
			shape = tensor.Shape{3, 4, 300} // vectorised rows with a ragged tail
		case 1:
			shape = tensor.Shape{0, 5}
		case 2:
			shape = tensor.Shape{3, 5, 4}
		}
		rank := int64(len(shape))
		axis := rank - 1
		if i%3 == 1 && rank > 1 {
			axis = r.Int63n(rank) // rows of several dimensions
		}
		single := i%4 == 3 // the moments form: dimension axis alone
		if i == 2 {
			axis, single = 1, true // a middle axis alone: strided
		}
		attrAxis := axis
		if i%2 == 0 {
			attrAxis = axis - rank // negative, counted from the end
		}
		d := shape[rank-1]
		gl, bl := d, d
		if i%5 == 2 {
			gl = 1
		}
		if i%7 == 3 {
			bl = 1
		}
		x := RandRange(r, tensor.Float, shape, -3, 5)
		g, b := RandRange(r, tensor.Float, tensor.Shape{gl}, 0.5, 2), RandRange(r, tensor.Float, tensor.Shape{bl}, -1, 1)
		eps := []float32{1e-3, 1e-5, 0.5}[i%3]
		gv, bv := F64s(g), F64s(b)
		attrs := Attrs{"epsilon": AFloat(eps), "begin_norm_axis": AInt(attrAxis), "single_axis": ABool(single)}
		want, scale := refLayerNorm(F64s(x), shape, int(axis), single, gv, bv, float64(eps))
		cs = append(cs, Case{Name: fmt.Sprintf("_MstreamLayerNorm %v axis %d single %v gamma %d beta %d", shape, attrAxis, single, gl, bl),
			Node: NodeFor("_MstreamLayerNorm", attrs, ins(x, g, b), nil), Inputs: ins(x, g, b),
			Want: ins(FromF64(tensor.Float, shape, want)), Tol: 2e-5, Scale: scale})
		// _MstreamAddLayerNorm: the same of x + y, y of x's shape or
		// (every third) of its last dimension, broadcast as AddV2 does;
		// the sum rounded to float32 as AddV2 stores it.
		yShape := shape
		if i%3 == 2 {
			yShape = tensor.Shape{d}
		}
		y := RandRange(r, tensor.Float, yShape, -2, 2)
		sum := make([]float64, len(F64s(x)))
		for j, e := range x.F32() {
			sum[j] = float64(e + y.F32()[j%len(y.F32())])
		}
		want, scale = refLayerNorm(sum, shape, int(axis), single, gv, bv, float64(eps))
		cs = append(cs, Case{Name: fmt.Sprintf("_MstreamAddLayerNorm %v + %v axis %d single %v gamma %d beta %d", shape, yShape, attrAxis, single, gl, bl),
			Node: NodeFor("_MstreamAddLayerNorm", attrs, ins(x, y, g, b), nil), Inputs: ins(x, y, g, b),
			Want: ins(FromF64(tensor.Float, shape, want)), Tol: 2e-5, Scale: scale})
	}
	x := Rand(r, tensor.Float, tensor.Shape{2, 4})
	g4, g3 := Rand(r, tensor.Float, tensor.Shape{4}), Rand(r, tensor.Float, tensor.Shape{3})
	for _, c := range []struct {
		axis int64
		g, b *tensor.Tensor
		msg  string
	}{
		{2, g4, g4, "begin_norm_axis"},
		{-3, g4, g4, "begin_norm_axis"},
		{-1, g3, g4, "Incompatible shapes"},
		{-1, g4, g3, "Incompatible shapes"},
		{-1, Rand(r, tensor.Float, tensor.Shape{1, 4}), g4, "Incompatible shapes"},
	} {
		cs = append(cs, Case{Name: fmt.Sprintf("_MstreamLayerNorm error %s axis %d", c.msg, c.axis),
			Node:   NodeFor("_MstreamLayerNorm", Attrs{"begin_norm_axis": AInt(c.axis)}, ins(x, c.g, c.b), nil),
			Inputs: ins(x, c.g, c.b), Err: status.InvalidArgument, ErrMsg: c.msg})
		cs = append(cs, Case{Name: fmt.Sprintf("_MstreamAddLayerNorm error %s axis %d", c.msg, c.axis),
			Node:   NodeFor("_MstreamAddLayerNorm", Attrs{"begin_norm_axis": AInt(c.axis)}, ins(x, x, c.g, c.b), nil),
			Inputs: ins(x, x, c.g, c.b), Err: status.InvalidArgument, ErrMsg: c.msg})
	}
	// Operands that do not broadcast: the AddV2's error, from the kernel.
	cs = append(cs, Case{Name: "_MstreamAddLayerNorm error operands [2,4] + [3]",
		Node:   NodeForUnknown("_MstreamAddLayerNorm", nil, ins(x, g3, g4, g4), nil),
		Inputs: ins(x, g3, g4, g4), Err: status.InvalidArgument, ErrMsg: "Incompatible shapes: [2,4] vs. [3]"})
	return cs
}

// refLayerNorm normalises x (of shape) as _MstreamLayerNorm does: the rows
// from dimension axis on, or with single that dimension alone. scale is
// what each element's float32 rounding error scales with (Case.Scale):
// the row's largest |x| (an ulp of it in the mean and in x - mean) times
// |gamma| / sqrt(var + eps), which a row of nearly equal elements makes
// large (two elements 3e-3 apart at eps 1e-5: 2e-5 relative from float32's
// mean alone).
func refLayerNorm(xv []float64, shape tensor.Shape, axis int, single bool, gv, bv []float64, eps float64) (want, scale []float64) {
	rank, d := len(shape), int(shape[len(shape)-1])
	if single && axis != rank-1 {
		return refLayerNormAxis(xv, shape, axis, gv, bv, eps)
	}
	n := int(shape[axis:].NumElements())
	want, scale = make([]float64, len(xv)), make([]float64, len(xv))
	for r0 := 0; r0+n <= len(xv) && n > 0; r0 += n {
		var m, v, amax float64
		for _, e := range xv[r0 : r0+n] {
			m += e
			amax = max(amax, math.Abs(e))
		}
		m /= float64(n)
		for _, e := range xv[r0 : r0+n] {
			v += (e - m) * (e - m)
		}
		v /= float64(n)
		for j := 0; j < n; j++ {
			k := j % d
			want[r0+j] = (xv[r0+j]-m)/math.Sqrt(v+eps)*gv[k%len(gv)] + bv[k%len(bv)]
			scale[r0+j] = amax * math.Abs(gv[k%len(gv)]) / math.Sqrt(v+eps)
		}
	}
	return want, scale
}

// refLayerNormAxis normalises x (of shape) over dimension axis alone, gamma
// and beta along the last dimension.
func refLayerNormAxis(x []float64, shape tensor.Shape, axis int, g, b []float64, eps float64) (out, scale []float64) {
	d, inner := int(shape[axis]), int(shape[axis+1:].NumElements())
	last := int(shape[len(shape)-1])
	out, scale = make([]float64, len(x)), make([]float64, len(x))
	for o := 0; o*d*inner < len(x); o++ {
		for i := 0; i < inner; i++ {
			var m, v, amax float64
			for k := 0; k < d; k++ {
				m += x[o*d*inner+k*inner+i]
				amax = max(amax, math.Abs(x[o*d*inner+k*inner+i]))
			}
			m /= float64(d)
			for k := 0; k < d; k++ {
				e := x[o*d*inner+k*inner+i] - m
				v += e * e
			}
			v /= float64(d)
			for k := 0; k < d; k++ {
				j := o*d*inner + k*inner + i
				out[j] = (x[j]-m)/math.Sqrt(v+eps)*g[(j%last)%len(g)] + b[(j%last)%len(b)]
				scale[j] = amax * math.Abs(g[(j%last)%len(g)]) / math.Sqrt(v+eps)
			}
		}
	}
	return out, scale
}

// attentionCases: _MstreamAttention against float64 attention per batch
// and head (scale on the scores or on q, batch and heads broadcast from 1
// with broadcast), including one query, a key of length 0, an empty batch,
// rows past one vector, and the errors of operands that disagree.
func attentionCases(r *rand.Rand) []Case {
	var cs []Case
	for i := 0; i < 16; i++ {
		b, sq, sk, h, d, dv := 1+r.Intn(3), 1+r.Intn(6), 1+r.Intn(6), 1+r.Intn(3), 1+r.Intn(5), 1+r.Intn(5)
		switch i {
		case 0:
			sq, sk, d, dv = 40, 33, 20, 17 // vectorised rows with ragged tails
		case 1:
			sk = 0
		case 2:
			b = 0
		case 3:
			sq = 1
		case 4, 6:
			sk, dv = sq, d // q, k and v alike: a packed case too
		case 7:
			sq, sk, h, d, dv = 17, 17, 3, 20, 20
		}
		bc := i%3 == 2
		qb, kb, vb, qh, kh, vh := b, b, b, h, h, h
		if bc {
			kb, vh = 1, 1
			if i%2 == 0 {
				qb, kb, kh = 1, b, 1
			}
		}
		q := RandRange(r, tensor.Float, tensor.Shape{int64(qb), int64(sq), int64(qh), int64(d)}, -2, 2)
		k := RandRange(r, tensor.Float, tensor.Shape{int64(kb), int64(sk), int64(kh), int64(d)}, -2, 2)
		v := RandRange(r, tensor.Float, tensor.Shape{int64(vb), int64(sk), int64(vh), int64(dv)}, -2, 2)
		scale, scaleQ := []float32{1, 0.35, 2}[i%3], i%4 == 1
		qv, kv, vv := F64s(q), F64s(k), F64s(v)
		at := func(x []float64, nb, s, nh, dep, bi, si, hi, di int) float64 {
			if nb == 1 {
				bi = 0
			}
			if nh == 1 {
				hi = 0
			}
			return x[((bi*s+si)*nh+hi)*dep+di]
		}
		want := make([]float64, b*sq*h*dv)
		for bi := 0; bi < b; bi++ {
			for hi := 0; hi < h; hi++ {
				for i := 0; i < sq; i++ {
					sc := make([]float64, sk)
					mx := math.Inf(-1)
					for j := range sc {
						for e := 0; e < d; e++ {
							sc[j] += at(qv, qb, sq, qh, d, bi, i, hi, e) * at(kv, kb, sk, kh, d, bi, j, hi, e)
						}
						sc[j] *= float64(scale)
						mx = math.Max(mx, sc[j])
					}
					var sum float64
					for j := range sc {
						sc[j] = math.Exp(sc[j] - mx)
						sum += sc[j]
					}
					for e := 0; e < dv; e++ {
						var o float64
						for j := range sc {
							o += sc[j] / sum * at(vv, vb, sk, vh, dv, bi, j, hi, e)
						}
						want[((bi*sq+i)*h+hi)*dv+e] = o
					}
				}
			}
		}
		attrs := Attrs{"scale": AFloat(scale), "scale_q": ABool(scaleQ), "broadcast": ABool(bc)}
		cs = append(cs, Case{Name: fmt.Sprintf("_MstreamAttention q %v k %v v %v scale %v on q %v", q.Shape, k.Shape, v.Shape, scale, scaleQ),
			Node: NodeFor("_MstreamAttention", attrs, ins(q, k, v), nil), Inputs: ins(q, k, v),
			Want: ins(FromF64(tensor.Float, tensor.Shape{int64(b), int64(sq), int64(h), int64(dv)}, want)), Tol: 2e-5})
		if bc || sq != sk || d != dv {
			continue
		}
		// packed: the same q, k and v side by side along the heads of one
		// tensor [b, s, 3h, d], as one merged projection makes them.
		qkv := tensor.New(tensor.Float, tensor.Shape{int64(b), int64(sq), int64(3 * h), int64(d)})
		for row := 0; row < b*sq; row++ {
			for j, t := range []*tensor.Tensor{q, k, v} {
				copy(qkv.F32()[(row*3+j)*h*d:(row*3+j+1)*h*d], t.F32()[row*h*d:(row+1)*h*d])
			}
		}
		attrs["packed"] = ABool(true)
		cs = append(cs, Case{Name: fmt.Sprintf("_MstreamAttention packed %v scale %v on q %v", qkv.Shape, scale, scaleQ),
			Node: NodeFor("_MstreamAttention", attrs, ins(qkv, qkv, qkv), nil), Inputs: ins(qkv, qkv, qkv),
			Want: ins(FromF64(tensor.Float, tensor.Shape{int64(b), int64(sq), int64(h), int64(dv)}, want)), Tol: 2e-5})
	}
	sh := func(v ...int64) *tensor.Tensor { return Rand(r, tensor.Float, tensor.Shape(v)) }
	for _, c := range []struct {
		name      string
		q, k, v   *tensor.Tensor
		broadcast bool
	}{
		{"rank 3", sh(2, 3, 4), sh(2, 3, 4), sh(2, 3, 4), false},
		{"depths", sh(2, 3, 2, 4), sh(2, 3, 2, 5), sh(2, 3, 2, 4), false},
		{"key and value lengths", sh(2, 3, 2, 4), sh(2, 3, 2, 4), sh(2, 4, 2, 4), false},
		{"batches", sh(2, 3, 2, 4), sh(3, 3, 2, 4), sh(3, 3, 2, 4), true},
		{"a batch of 1 without broadcast", sh(2, 3, 2, 4), sh(1, 3, 2, 4), sh(2, 3, 2, 4), false},
		{"heads", sh(2, 3, 2, 4), sh(2, 3, 3, 4), sh(2, 3, 3, 4), true},
	} {
		cs = append(cs, Case{Name: "_MstreamAttention error " + c.name,
			Node:   NodeForUnknown("_MstreamAttention", Attrs{"broadcast": ABool(c.broadcast)}, ins(c.q, c.k, c.v), nil),
			Inputs: ins(c.q, c.k, c.v), Err: status.InvalidArgument, ErrMsg: "attention"})
	}
	for _, c := range []struct {
		name    string
		q, k, v *tensor.Tensor
	}{
		{"heads not a multiple of 3", sh(2, 3, 4, 2), sh(2, 3, 4, 2), sh(2, 3, 4, 2)},
		{"inputs of other shapes", sh(2, 3, 6, 2), sh(2, 3, 6, 2), sh(2, 4, 6, 2)},
	} {
		cs = append(cs, Case{Name: "_MstreamAttention packed error " + c.name,
			Node:   NodeForUnknown("_MstreamAttention", Attrs{"packed": ABool(true)}, ins(c.q, c.k, c.v), nil),
			Inputs: ins(c.q, c.k, c.v), Err: status.InvalidArgument, ErrMsg: "packed attention"})
	}
	return cs
}

// einsumBiasCases: _MstreamEinsumBias against a float64 product plus the
// bias over the trailing dimensions, with the weights marked constant
// (the packed kernel, bias in its epilogue) or not, one row and no rows
// (Einsum's own product, then the bias), and a bias of the wrong shape.
func einsumBiasCases(r *rand.Rand) []Case {
	var cs []Case
	for i, c := range []struct {
		eq      string
		x, w, b tensor.Shape
	}{
		{"abc,cde->abde", tensor.Shape{3, 5, 8}, tensor.Shape{8, 2, 4}, tensor.Shape{2, 4}},
		{"abcd,cde->abe", tensor.Shape{2, 5, 2, 4}, tensor.Shape{2, 4, 6}, tensor.Shape{6}},
		{"ab,bc->ac", tensor.Shape{40, 33}, tensor.Shape{33, 70}, tensor.Shape{70}},
		{"ab,bc->ac", tensor.Shape{1, 7}, tensor.Shape{7, 5}, tensor.Shape{5}},
		{"abc,cd->abd", tensor.Shape{0, 3, 4}, tensor.Shape{4, 5}, tensor.Shape{5}},
	} {
		x := RandRange(r, tensor.Float, c.x, -2, 2)
		w := RandRange(r, tensor.Float, c.w, -2, 2)
		b := RandRange(r, tensor.Float, c.b, -2, 2)
		n := int(c.b.NumElements())
		k := int(c.w.NumElements()) / n
		m := int(c.x.NumElements()) / k
		xv, wv, bv := F64s(x), F64s(w), F64s(b)
		want := make([]float64, m*n)
		for i := 0; i < m; i++ {
			for j := 0; j < n; j++ {
				o := bv[j]
				for l := 0; l < k; l++ {
					o += xv[i*k+l] * wv[l*n+j]
				}
				want[i*n+j] = o
			}
		}
		out := append(append(tensor.Shape{}, c.x[:len(c.x)-(len(c.w)-len(c.b))]...), c.b...)
		for _, constW := range []bool{false, true} {
			attrs := Attrs{"equation": AStr(c.eq)}
			if constW {
				attrs["_mstream_const_weights"] = ABool(true)
			}
			cs = append(cs, Case{Name: fmt.Sprintf("_MstreamEinsumBias %s %v %v const %v (%d)", c.eq, c.x, c.w, constW, i),
				Node: NodeFor("_MstreamEinsumBias", attrs, ins(x, w, b), nil), Inputs: ins(x, w, b),
				Want: ins(FromF64(tensor.Float, out, want)), Tol: 2e-5})
		}
	}
	x, w := Rand(r, tensor.Float, tensor.Shape{3, 4}), Rand(r, tensor.Float, tensor.Shape{4, 5})
	for _, b := range []*tensor.Tensor{Rand(r, tensor.Float, tensor.Shape{4}), Rand(r, tensor.Float, tensor.Shape{2, 5})} {
		cs = append(cs, Case{Name: fmt.Sprintf("_MstreamEinsumBias error bias %v", b.Shape),
			Node:   NodeForUnknown("_MstreamEinsumBias", Attrs{"equation": AStr("ab,bc->ac")}, ins(x, w, b), nil),
			Inputs: ins(x, w, b), Err: status.InvalidArgument, ErrMsg: "bias"})
	}
	return cs
}
