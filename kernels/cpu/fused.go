package cpu

import (
	"io"
	"math"
	"strings"

	"mstream/graph"
	"mstream/kernels"
	"mstream/kernels/cpu/blas"
	"mstream/kernels/cpu/dnnl"
	"mstream/kernels/cpu/vec"
	"mstream/status"
	"mstream/tensor"
)

// Fused kernels: what package optimize (or TF's grappler, in a GraphDef it
// rewrote) puts in place of MatMul/Conv2D + BiasAdd or FusedBatchNorm +
// activation, and of chains of unary float32 ops. They compute what the
// unfused nodes compute, in fewer passes over memory: _FusedMatMul writes
// the bias into the GEMM's output before the GEMM accumulates into it
// (beta = 1) and applies the activation in one pass; _FusedConv2D runs the
// Conv2D entry point and then one pass of per-channel scale/offset and
// activation; _MstreamUnaryChain applies every op to one cache-sized block
// before moving to the next.

func init() {
	reg("_FusedMatMul", []tensor.DType{tensor.Float, tensor.Half, tensor.Bfloat16}, nil, func(n *graph.Node) (kernels.Kernel, error) {
		ep, err := parseEpilogue(n, "MatMul", false)
		if err != nil {
			return nil, err
		}
		ta, tb := attrBool(n, "transpose_a"), attrBool(n, "transpose_b")
		// A constant B (a layer's weights, which package optimize marks
		// when this plan does not feed them) is packed once and runs on
		// vec.GemmPacked, which reads it without packing it again and
		// applies bias and activation per tile while the tile is in
		// registers. On one thread, BenchmarkSgemmPacked (GFLOP/s,
		// OpenBLAS / packed, m x k x n, load 4): 4x512x1024 30 / 93-98,
		// 16x512x1024 65 / 112, 16x1024x1024 66 / 108-112, 64x128x512
		// 64-90 / 107, 64x512x128 73-95 / 115, 1024x128x512 101 / 110,
		// 256x1024x1024 101 / 114; one row streams the panels a group
		// at a time (usePacked says what it gained over vec.Gemv). Any other B goes to
		// OpenBLAS, not oneDNN's matmul. With OpenBLAS on one thread and
		// the GEMM split over the intra-op pool, as a session runs it,
		// BenchmarkDNNL put OpenBLAS ahead in CPU us per call (oneDNN /
		// OpenBLAS, 2026-11-26, two runs at load 2): 16x512x1024 755 /
		// 590-672, 16x1024x1024 1098-1165 / 913-1028, 16x256x1 30 /
		// 16-19, 64x128x128 183-194 / 137-161, 256x512x1024 8715-8736 /
		// 5089-5225, 256x1024x1024 15978-16652 / 10072-10655 (at load
		// 13-22, mean of 4 runs, 16x512x1024 803 / 632); level at
		// 1x512x1024, 256x512x256, 1024x128x512 and
		// 16384x{128x512,512x128}. oneDNN was ahead only with m >= 1024
		// and n = 128 (1024x128x128 896-1027 / 1140-1409, 1024x512x128
		// 2536-2577 / 2895-3077, 16384x128x128 13422-13644 /
		// 18132-18725), the transformer's projections at B >= 16, but
		// sending those to oneDNN gained the transformer nothing
		// measurable (BASE=... MODELS=transformer ROUNDS=3
		// bench/cpu/vs_base.sh at load 2-4: B=16 48-52 QPS both ways,
		// CPU per request 28-33 ms both ways), and oneDNN's OpenMP
		// threads sit outside the pool. Before, oneDNN took m <= 16,
		// chosen by a benchmark whose OpenBLAS ran on its own spinning
		// threads. fusedMatMul keeps the oneDNN path for that benchmark
		// and for TestFusedMatMulDNNL, which holds the two equal.
		var w *packedWeights
		if !ta {
			w = packedFor(n)
		}
		return fusedKernel(n, func(ctx *kernels.Context) error { return fusedMatMul(ctx, ta, tb, ep, w, nil, nil) }), nil
	})
	reg("_FusedConv2D", []tensor.DType{tensor.Float, tensor.Half, tensor.Double}, nil, func(n *graph.Node) (kernels.Kernel, error) {
		a, ep, err := parseFusedConv2D(n)
		if err != nil {
			return nil, err
		}
		prims := &dnnl.ConvCache{Node: n.Name}
		constFilter := n.Attr(constWeightsAttr).GetB()
		return fusedKernel(n, func(ctx *kernels.Context) error { return fusedConv2D(ctx, a, ep, prims, constFilter) }, prims), nil
	})
	reg("_MstreamConv2DMaxPool", []tensor.DType{tensor.Float}, nil, func(n *graph.Node) (kernels.Kernel, error) {
		a, ep, err := parseFusedConv2D(n)
		if err != nil {
			return nil, err
		}
		pa := PoolAttrs{Ksize: attrInts(n, "pool_ksize"), Strides: attrInts(n, "pool_strides"), Padding: attrString(n, "pool_padding", "")}
		if err := pa.check(); err != nil {
			return nil, nodeErr(n, status.CodeOf(err), "%v", err)
		}
		if pa.Padding == "EXPLICIT" || pa.Ksize[3] != 1 || pa.Strides[3] != 1 {
			return nil, nodeErr(n, status.Unimplemented, "_MstreamConv2DMaxPool pools a spatial window with SAME or VALID padding; got ksize %v, strides %v, padding %s", pa.Ksize, pa.Strides, pa.Padding)
		}
		cp := &convPool{conv: &dnnl.ConvCache{Node: n.Name}, pool: &dnnl.Cache[dnnl.PoolDesc]{Node: n.Name}}
		constFilter := n.Attr(constWeightsAttr).GetB()
		return fusedKernel(n, func(ctx *kernels.Context) error { return fusedConv2DMaxPool(ctx, a, ep, pa, cp, constFilter) }, cp.conv, cp.pool), nil
	})
	reg("_MstreamUnaryChain", []tensor.DType{tensor.Float}, nil, func(n *graph.Node) (kernels.Kernel, error) {
		names := n.Attr("ops").GetList().GetS()
		if len(names) == 0 {
			return nil, nodeErr(n, status.InvalidArgument, "a unary chain needs at least one op")
		}
		ops := make([]vec.Unary, len(names))
		cost := 0.0
		for i, s := range names {
			op, ok := vecUnaryOps[string(s)]
			if !ok {
				return nil, nodeErr(n, status.InvalidArgument, "op %q cannot be chained (chainable: the float32 unary ops of package vec)", s)
			}
			ops[i] = op
			c := vecCost
			if v, ok := vecUnaryCost[op]; ok {
				c = v
			}
			cost += c
		}
		return fusedKernel(n, func(ctx *kernels.Context) error { return unaryChain(ctx, ops, cost) }), nil
	})
}

// fusedFromAttr is optimize.FusedFromAttr (kernels may not import
// optimize): the names of the nodes a fused node replaces.
const fusedFromAttr = "_mstream_fused_from"

// constWeightsAttr is optimize.ConstWeightsAttr: the weights (a
// _FusedMatMul's B, a _FusedConv2D's filter, an Einsum's second operand)
// are a Const the plan does not feed, the same on every Run.
const constWeightsAttr = "_mstream_const_weights"

// packedFor returns where node n's kernel keeps its constant weights
// packed once (vec.GemmPacked), when package optimize marked them
// (constWeightsAttr); nil otherwise.
func packedFor(n *graph.Node) *packedWeights {
	if n.Attr(constWeightsAttr).GetB() {
		return new(packedWeights)
	}
	return nil
}

// fusedKernel wraps a fused kernel so that its errors also name the nodes
// the fusion replaced, which are the ones the user knows; cs are the
// primitive caches it owns, which its Close closes (kernels.WithClose).
func fusedKernel(n *graph.Node, f func(ctx *kernels.Context) error, cs ...io.Closer) kernels.Kernel {
	var names []string
	for _, b := range n.Attr(fusedFromAttr).GetList().GetS() {
		names = append(names, string(b))
	}
	k := kernels.KernelFunc(f)
	if len(names) > 0 {
		from := strings.Join(names, ", ")
		k = func(ctx *kernels.Context) error {
			if err := f(ctx); err != nil {
				return status.Errorf(status.CodeOf(err), "%v (fused from %s)", err, from)
			}
			return nil
		}
	}
	if len(cs) == 0 {
		return k
	}
	return kernels.WithClose(k, cs...)
}

// epilogue is the fused computation after the GEMM or convolution:
// per-channel x*scale + offset (BiasAdd: offset only), then an activation.
type epilogue struct {
	batchNorm bool // args are scale, offset, mean, variance; else one bias
	eps       float64
	act       string // "" or Relu, Relu6, Elu, LeakyRelu, Tanh, Sigmoid
	alpha     float64
}

var fusedActs = map[string]bool{"Relu": true, "Relu6": true, "Elu": true, "LeakyRelu": true, "Tanh": true, "Sigmoid": true,
	"GeluExact": true, "GeluApproximate": true}

// actOps maps a fused activation to its vec op (LeakyRelu has none: it takes
// alpha, and is a Go loop).
var actOps = map[string]vec.Unary{"Relu": vec.Relu, "Relu6": vec.Relu6, "Elu": vec.Elu, "Tanh": vec.Tanh,
	"Sigmoid": vec.Sigmoid, "GeluExact": vec.GeluErf, "GeluApproximate": vec.GeluTanh}

// parseEpilogue validates fused_ops and num_args as TF's
// InitializeFusedComputation does, with TF's codes and messages.
func parseEpilogue(n *graph.Node, kind string, allowBN bool) (epilogue, error) {
	var ep epilogue
	var ops []string
	for _, s := range n.Attr("fused_ops").GetList().GetS() {
		ops = append(ops, string(s))
	}
	if len(ops) == 0 {
		return ep, nodeErr(n, status.InvalidArgument, "Fused %s must have at least one fused op.", kind)
	}
	numArgs := attrInt(n, "num_args", 0)
	if h := attrInt(n, "num_host_args", 0); h != 0 {
		return ep, nodeErr(n, status.Unimplemented, "Fused %s with host args (num_host_args = %d) is not supported on the CPU", kind, h)
	}
	ok := len(ops) <= 2 && (ops[0] == "BiasAdd" || (allowBN && ops[0] == "FusedBatchNorm"))
	if ok && len(ops) == 2 {
		// TF's patterns: GELU after a MatMul's BiasAdd only; Tanh and
		// Sigmoid after BiasAdd only.
		gelu := ops[1] == "GeluExact" || ops[1] == "GeluApproximate"
		ok = fusedActs[ops[1]] && !(ops[0] == "FusedBatchNorm" && (ops[1] == "Tanh" || ops[1] == "Sigmoid")) && !(gelu && kind != "MatMul")
		ep.act = ops[1]
	}
	if !ok {
		return ep, nodeErr(n, status.Unimplemented, "Fusion is not implemented: [%s]", strings.Join(ops, ","))
	}
	ep.batchNorm = ops[0] == "FusedBatchNorm"
	if ep.batchNorm && numArgs != 4 {
		return ep, nodeErr(n, status.InvalidArgument, "Fused %s with FusedBatchNorm must have four extra arguments: scale, offset, mean, variance.", kind)
	}
	if !ep.batchNorm && numArgs != 1 {
		return ep, nodeErr(n, status.InvalidArgument, "Fused %s with BiasAdd must have one extra argument: bias.", kind)
	}
	ep.eps = float64(n.Attr("epsilon").GetF())
	ep.alpha = float64(n.Attr("leakyrelu_alpha").GetF())
	return ep, nil
}

// channelParams checks the extra arguments against the channel count c and
// returns them as float64 per-channel scale (nil for BiasAdd) and offset.
func (ep epilogue) channelParams(ctx *kernels.Context, c int64) (scale, offset []float64, err error) {
	names := []string{"bias"}
	if ep.batchNorm {
		names = []string{"scale", "offset", "estimated_mean", "estimated_variance"}
	}
	vals := make([][]float64, len(names))
	for i, name := range names {
		t := ctx.Input(2 + i)
		if len(t.Shape) != 1 {
			return nil, nil, ctx.Errorf(status.InvalidArgument, "%s must be 1-dimensional, got %v", name, t.Shape)
		}
		if t.Shape[0] != c {
			return nil, nil, ctx.Errorf(status.InvalidArgument, "%s has %d elements but the output has %d channels", name, t.Shape[0], c)
		}
		vals[i] = floatsF64(t)
	}
	if !ep.batchNorm {
		return nil, vals[0], nil
	}
	scale, offset = make([]float64, c), make([]float64, c)
	for i := range scale {
		// TF's FusedBatchNormOutputKernel: (x - mean) * scale * rsqrt(var + eps) + offset.
		s := vals[0][i] / math.Sqrt(vals[3][i]+ep.eps)
		scale[i], offset[i] = s, vals[1][i]-vals[2][i]*s
	}
	return scale, offset, nil
}

// biasF32 is channelParams for a BiasAdd epilogue, as float32: a float
// bias is used as it is, not copied to float64 and back on every Run (the
// MLP at B=1 made three such slices per layer per Run).
func (ep epilogue) biasF32(ctx *kernels.Context, c int64) ([]float32, error) {
	if t := ctx.Input(2); !ep.batchNorm && t.DType == tensor.Float && len(t.Shape) == 1 && t.Shape[0] == c {
		return t.F32(), nil
	}
	_, bias, err := ep.channelParams(ctx, c)
	return f32s(bias), err
}

// floatsF64 returns a float, double, half or bfloat16 tensor as float64.
func floatsF64(t *tensor.Tensor) []float64 {
	if t.DType == tensor.Double {
		return t.F64()
	}
	src := toF32(t)
	out := make([]float64, len(src))
	for i, v := range src {
		out[i] = float64(v)
	}
	return out
}

func f32s(v []float64) []float32 {
	if v == nil {
		return nil
	}
	out := make([]float32, len(v))
	for i, x := range v {
		out[i] = float32(x)
	}
	return out
}

// fusedMatMul is _FusedMatMul: on the packed GEMM when w holds the
// node's constant B (float32, a CPU with the kernel);
// on oneDNN when prims is set, it is loaded and onDNNL picks it for the
// shape; else OpenBLAS and the epilogue.
func fusedMatMul(ctx *kernels.Context, ta, tb bool, ep epilogue, w *packedWeights, prims *dnnl.Cache[dnnl.MatMulDesc], onDNNL func(m, n, k int) bool) error {
	a, b := ctx.Input(0), ctx.Input(1)
	if len(a.Shape) != 2 || len(b.Shape) != 2 {
		return ctx.Errorf(status.InvalidArgument, "In[0] and In[1] must be 2-dimensional, got %v and %v", a.Shape, b.Shape)
	}
	m, k := a.Shape[0], a.Shape[1]
	if ta {
		m, k = k, m
	}
	k2, n := b.Shape[0], b.Shape[1]
	if tb {
		k2, n = n, k2
	}
	if k != k2 {
		return ctx.Errorf(status.InvalidArgument, "Matrix size-incompatible: In[0]: %v, In[1]: %v", a.Shape, b.Shape)
	}
	bs, err := ep.biasF32(ctx, n)
	if err != nil {
		return err
	}
	o, err := ctx.Allocate(0, tensor.Shape{m, n})
	if err != nil {
		return err
	}
	if o.NumElements() == 0 {
		return nil
	}
	M, N, K := int(m), int(n), int(k)
	if w != nil && o.DType == tensor.Float && usePacked(ta, true, M, K, 1, 0) {
		act := vec.Unary(-1)
		if op, ok := actOps[ep.act]; ok {
			act = op
		}
		ldb := N
		if tb {
			ldb = K
		}
		gemmPacked(ctx, M, a.F32(), K, w.get(tb, K, N, b.F32(), ldb), o.F32(), bs, act)
		if act < 0 {
			activateF32(ctx, ep, o.F32()) // LeakyRelu
		}
		return nil
	}
	if o.DType == tensor.Float && prims != nil && onDNNL(M, N, K) && dnnl.Available() {
		act, inPrim := dnnlActs[ep.act]
		d := dnnl.MatMulDesc{M: M, K: K, N: N, TA: ta, TB: tb, Bias: true, Act: act, Alpha: float32(ep.alpha)}
		if ok, err := runPrim(ctx, prims, d, a.F32(), b.F32(), o.F32(), ctx.Input(2).F32()); ok {
			if err == nil && !inPrim {
				activateF32(ctx, ep, o.F32())
			}
			return err
		}
	}
	A, B := toF32(a), toF32(b)
	O := o.F32()
	if o.DType != tensor.Float {
		var err error
		if O, err = kernels.Scratch[float32](ctx, o.NumElements()); err != nil {
			return err
		}
	}
	// The bias goes into C first and the GEMM accumulates onto it, so the
	// bias costs no pass of its own.
	for r := 0; r < M; r++ {
		copy(O[r*N:(r+1)*N], bs)
	}
	lda, ldb := K, N
	if ta {
		lda = M
	}
	if tb {
		ldb = K
	}
	blas.SgemmOn(ctx, ta, tb, M, N, K, 1, A, max(lda, 1), B, max(ldb, 1), 1, O, N)
	activateF32(ctx, ep, O)
	if o.DType != tensor.Float {
		storeF32(o, O)
	}
	return nil
}

// parseFusedConv2D reads and checks the convolution and epilogue attrs
// of a _FusedConv2D or _MstreamConv2DMaxPool.
func parseFusedConv2D(n *graph.Node) (Conv2DAttrs, epilogue, error) {
	ep, err := parseEpilogue(n, "Conv2D", true)
	if err != nil {
		return Conv2DAttrs{}, ep, err
	}
	if f := attrString(n, "filter_format", "HWIO"); f != "HWIO" {
		return Conv2DAttrs{}, ep, nodeErr(n, status.Unimplemented, "filter_format %s is not supported on the CPU: HWIO only", f)
	}
	for i, t := range n.InTypes[2:] {
		if t != n.InTypes[0] {
			return Conv2DAttrs{}, ep, nodeErr(n, status.InvalidArgument, "Fused Conv2D argument %d has type %v; it must be the input type %v", i, t, n.InTypes[0])
		}
	}
	a, err := ParseConv2DAttrs(n)
	return a, ep, err
}

// fusedConvCall is one call of a fused convolution: its shape, checked
// against the inputs, and its epilogue's per-channel parameters: bias, a
// float BiasAdd's own tensor (biasF32: not copied to float64 and back on
// every Run, 4 KB a Run of the CNNs at B=1), or else scale and offset in
// float64.
type fusedConvCall struct {
	p             ConvParams
	ep            epilogue
	bias          []float32
	scale, offset []float64
}

func newFusedConvCall(ctx *kernels.Context, a Conv2DAttrs, ep epilogue) (fusedConvCall, error) {
	in, f := ctx.Input(0), ctx.Input(1)
	if a.NCHW {
		return fusedConvCall{}, ctx.Errorf(status.Unimplemented, "_FusedConv2D supports only the NHWC data format on the CPU; the op was given NCHW")
	}
	p, err := a.Params(in.Shape, f.Shape)
	if err != nil {
		return fusedConvCall{}, ctx.Errorf(status.CodeOf(err), "%v", err)
	}
	c := fusedConvCall{p: p, ep: ep}
	if in.DType == tensor.Float && !ep.batchNorm {
		c.bias, err = ep.biasF32(ctx, int64(p.O))
		return c, err
	}
	c.scale, c.offset, err = ep.channelParams(ctx, int64(p.O))
	return c, err
}

// offsetF32 is the epilogue's per-channel offset (the bias) as float32.
func (c fusedConvCall) offsetF32() []float32 {
	if c.bias != nil {
		return c.bias
	}
	return f32s(c.offset)
}

// check reports what makes the call's filter or groups invalid (on an
// output with elements: an empty output needs nothing of them).
func (c fusedConvCall) check(ctx *kernels.Context) error {
	if ctx.Input(1).NumElements() == 0 {
		return ctx.Errorf(status.InvalidArgument, "filter must not have zero elements (i.e. all dimensions must be non-zero)")
	}
	if p := c.p; p.O%p.Groups != 0 || p.O < p.Groups {
		return ctx.Errorf(status.InvalidArgument, "output depth must be evenly divisible by number of groups: %d vs %d", p.O, p.Groups)
	}
	return nil
}

// inPrim says whether oneDNN's primitive runs the whole epilogue: a
// bias and, at most, a Relu (any other runs after it, in package cpu).
func (c fusedConvCall) inPrim() bool {
	return !c.ep.batchNorm && (c.ep.act == "" || c.ep.act == "Relu")
}

func fusedConv2D(ctx *kernels.Context, a Conv2DAttrs, ep epilogue, prims *dnnl.ConvCache, constFilter bool) error {
	c, err := newFusedConvCall(ctx, a, ep)
	if err != nil {
		return err
	}
	o, err := ctx.Allocate(0, c.p.OutShape())
	if err != nil || o.NumElements() == 0 {
		return err
	}
	return c.run(ctx, prims, constFilter, o)
}

// run computes the call into o (its output shape).
func (c fusedConvCall) run(ctx *kernels.Context, prims *dnnl.ConvCache, constFilter bool, o *tensor.Tensor) error {
	in, f := ctx.Input(0), ctx.Input(1)
	p, ep, scale, offset := c.p, c.ep, c.scale, c.offset
	if err := c.check(ctx); err != nil {
		return err
	}
	if in.NumElements() == 0 {
		clear(o.Buf) // all padding: the convolution is zeros, the epilogue still applies
	} else if o.DType == tensor.Float {
		// oneDNN takes BiasAdd and Relu as the primitive's own bias and
		// post-op; any other epilogue runs after it, below.
		inPrim := c.inPrim()
		var bias []float32
		if inPrim {
			bias = c.offsetF32()
		}
		done, err := convDNNL(ctx, prims, p, in.F32(), f.F32(), bias, inPrim && ep.act == "Relu", constFilter, o.F32())
		if err != nil {
			return err
		}
		if done && inPrim {
			return nil
		}
		if !done {
			if err := Conv2DTensor(ctx, p, in, f, o); err != nil {
				return err
			}
		}
	} else if err := Conv2DTensor(ctx, p, in, f, o); err != nil {
		return err
	}
	switch o.DType {
	case tensor.Double:
		channelEpilogue(ctx, ep, o.F64(), scale, offset)
	case tensor.Float:
		channelEpilogueF32(ctx, ep, o.F32(), f32s(scale), c.offsetF32())
	default:
		v := toF32(o)
		channelEpilogueF32(ctx, ep, v, f32s(scale), c.offsetF32())
		storeF32(o, v)
	}
	return nil
}

// channelEpilogueF32 applies x*scale+offset (scale nil: x+offset) per
// channel (the last dimension, of len(offset)) and the activation, in one
// pass: vec.ChannelAffine does a block of rows per call, so the cgo cost is
// not paid per row; the pool splits the rows into such calls.
func channelEpilogueF32(ctx *kernels.Context, ep epilogue, o, scale, offset []float32) {
	c := len(offset)
	rows := len(o) / c
	act := vec.Unary(-1)
	if op, ok := actOps[ep.act]; ok {
		act = op
	}
	ctx.For(rows, float64(c)*2, kernels.StartLoop, func(lo, hi int) {
		x := o[lo*c : hi*c]
		vec.ChannelAffine(x, scale, offset, act)
		if ep.act == "LeakyRelu" {
			activateRowF32(ep, x)
		}
	})
}

// dnnlActs are the activations a oneDNN matmul applies as its post-op.
// Not GELU: oneDNN 3.2's gelu_erf and gelu_tanh are off by up to 2e-4
// relative (in the negative tail; Tanh 7e-8, Sigmoid 2e-7, Elu 3e-6), so
// package vec's run after the matmul.
var dnnlActs = map[string]int{"": dnnl.ActNone, "Relu": dnnl.ActRelu, "Relu6": dnnl.ActRelu6, "Elu": dnnl.ActElu,
	"LeakyRelu": dnnl.ActLeakyRelu, "Tanh": dnnl.ActTanh, "Sigmoid": dnnl.ActSigmoid}

// activateF32 applies the activation to all of o, split over the pool.
func activateF32(ctx *kernels.Context, ep epilogue, o []float32) {
	if ep.act == "" {
		return
	}
	ctx.For(len(o), 2, kernels.StartLoop, func(lo, hi int) { activateRowF32(ep, o[lo:hi]) })
}

func activateRowF32(ep epilogue, x []float32) {
	switch ep.act {
	case "":
	case "LeakyRelu":
		a := float32(ep.alpha)
		for i, v := range x {
			if v < 0 {
				x[i] = v * a
			}
		}
	default:
		vec.MapUnary(actOps[ep.act], x, x)
	}
}

// channelEpilogue is the float64 epilogue, in Go.
func channelEpilogue(ctx *kernels.Context, ep epilogue, o, scale, offset []float64) {
	c := len(offset)
	ctx.For(len(o)/c, float64(c)*4, kernels.StartLoop, func(lo, hi int) {
		for r := lo; r < hi; r++ {
			row := o[r*c : (r+1)*c]
			for i, v := range row {
				if scale != nil {
					v *= scale[i]
				}
				row[i] = activate64(ep, v+offset[i])
			}
		}
	})
}

func activate64(ep epilogue, v float64) float64 {
	switch ep.act {
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
			return v * ep.alpha
		}
	case "Tanh":
		return math.Tanh(v)
	case "Sigmoid":
		return 1 / (1 + math.Exp(-v))
	}
	return v
}

// chainBlock is the number of elements every op of a unary chain maps
// before the chain moves on: small enough to stay in L1 between ops.
const chainBlock = 2048

func unaryChain(ctx *kernels.Context, ops []vec.Unary, cost float64) error {
	x := ctx.Input(0)
	o, err := ctx.Allocate(0, x.Shape)
	if err != nil {
		return err
	}
	X, O := x.F32(), o.F32()
	blocks := (len(X) + chainBlock - 1) / chainBlock
	ctx.For(blocks, cost*chainBlock, kernels.StartLoop, func(lo, hi int) {
		for b := lo; b < hi; b++ {
			s, e := b*chainBlock, min((b+1)*chainBlock, len(X))
			vec.MapUnary(ops[0], X[s:e], O[s:e])
			for _, op := range ops[1:] {
				vec.MapUnary(op, O[s:e], O[s:e])
			}
		}
	})
	return nil
}
