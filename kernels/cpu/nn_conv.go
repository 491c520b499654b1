package cpu

import (
	"sync"

	"mstream/graph"
	"mstream/kernels"
	"mstream/kernels/cpu/blas"
	"mstream/kernels/cpu/dnnl"
	"mstream/status"
	"mstream/tensor"
)

// Convolutions: Conv2D (im2col + the MatMul GEMM), DepthwiseConv2dNative
// (direct loop) and Conv2DBackpropInput (GEMM + col2im). All are NHWC with
// HWIO filters, as TF's CPU kernels are; NCHW fails as TF's CPU kernels do.

func init() {
	reg("Conv2D", []tensor.DType{tensor.Float, tensor.Double, tensor.Half, tensor.Bfloat16, tensor.Int32}, nil, func(n *graph.Node) (kernels.Kernel, error) {
		a, err := ParseConv2DAttrs(n)
		if err != nil {
			return nil, err
		}
		prims := &dnnl.ConvCache{Node: n.Name}
		return kernels.WithClose(func(ctx *kernels.Context) error { return conv2D(ctx, a, prims) }, prims), nil
	})
	reg("DepthwiseConv2dNative", floatTypes, nil, func(n *graph.Node) (kernels.Kernel, error) {
		a, err := ParseDepthwiseAttrs(n)
		if err != nil {
			return nil, err
		}
		return kernels.KernelFunc(func(ctx *kernels.Context) error { return depthwiseConv(ctx, a) }), nil
	})
	reg("Conv2DBackpropInput", []tensor.DType{tensor.Float, tensor.Double, tensor.Half, tensor.Bfloat16, tensor.Int32}, []string{"input_sizes"}, func(n *graph.Node) (kernels.Kernel, error) {
		a, err := ParseConv2DBackpropInputAttrs(n)
		if err != nil {
			return nil, err
		}
		return kernels.KernelFunc(func(ctx *kernels.Context) error { return conv2DBackpropInput(ctx, a) }), nil
	})
}

// ParseDepthwiseAttrs is ParseConv2DAttrs plus DepthwiseConv2dNative's
// own limits (equal row and column strides, no dilation); the CPU and GPU
// kernels both parse through it.
func ParseDepthwiseAttrs(n *graph.Node) (Conv2DAttrs, error) {
	a, err := ParseConv2DAttrs(n)
	if err != nil {
		return a, err
	}
	if a.Strides[1] != a.Strides[2] {
		return a, nodeErr(n, status.InvalidArgument, "Current implementation only supports equal length strides in the row and column dimensions.")
	}
	for _, d := range a.Dilations {
		if d != 1 {
			return a, nodeErr(n, status.Unimplemented, "Current kernel implementation does not support dilations, received %v", a.Dilations)
		}
	}
	return a, nil
}

// ParseConv2DBackpropInputAttrs is ParseConv2DAttrs plus
// Conv2DBackpropInput's limits (NHWC, no dilation); the CPU and GPU
// kernels both parse through it.
func ParseConv2DBackpropInputAttrs(n *graph.Node) (Conv2DAttrs, error) {
	a, err := ParseConv2DAttrs(n)
	if err != nil {
		return a, err
	}
	if a.NCHW {
		return a, nodeErr(n, status.InvalidArgument, "Conv2DBackpropInputOp [CPU or GPU(int32)] only supports NHWC data format.")
	}
	if a.Dilations[1] != 1 || a.Dilations[2] != 1 {
		return a, nodeErr(n, status.InvalidArgument, "Current CPU implementations do not yet support dilation rates larger than 1.")
	}
	return a, nil
}

// Conv2DAttrs are the attrs of Conv2D-like nodes (Conv2D, the fused
// Conv2D+BiasAdd(+Relu) kernel, DepthwiseConv2dNative), validated as TF's
// InitConv2DParameters does. Strides, Dilations and ExplicitPaddings are
// in the node's data format.
type Conv2DAttrs struct {
	Strides, Dilations []int64
	Padding            string // "SAME", "VALID" or "EXPLICIT"
	ExplicitPaddings   []int64
	NCHW               bool
}

// ParseConv2DAttrs reads and validates a Conv2D-like node's attrs; the
// error is TF's (INVALID_ARGUMENT or UNIMPLEMENTED) and names the node.
func ParseConv2DAttrs(n *graph.Node) (Conv2DAttrs, error) {
	a := Conv2DAttrs{
		Strides:          attrInts(n, "strides"),
		Dilations:        attrInts(n, "dilations"),
		Padding:          attrString(n, "padding", ""),
		ExplicitPaddings: attrInts(n, "explicit_paddings"),
	}
	switch df := attrString(n, "data_format", "NHWC"); df {
	case "NHWC":
	case "NCHW":
		a.NCHW = true
	default:
		return a, nodeErr(n, status.InvalidArgument, "Invalid data format %q", df)
	}
	if a.Dilations == nil {
		a.Dilations = []int64{1, 1, 1, 1}
	}
	if len(a.Dilations) != 4 {
		return a, nodeErr(n, status.InvalidArgument, "Sliding window dilations field must specify 4 dimensions")
	}
	if len(a.Strides) != 4 {
		return a, nodeErr(n, status.InvalidArgument, "Sliding window strides field must specify 4 dimensions")
	}
	h, w, c := 1, 2, 3
	if a.NCHW {
		h, w, c = 2, 3, 1
	}
	if a.Strides[0] != 1 || a.Strides[c] != 1 {
		return a, nodeErr(n, status.Unimplemented, "Current implementation does not yet support strides in the batch and depth dimensions.")
	}
	if a.Strides[h] <= 0 || a.Strides[w] <= 0 {
		return a, nodeErr(n, status.InvalidArgument, "Row and column strides should be larger than 0.")
	}
	if a.Dilations[0] != 1 || a.Dilations[c] != 1 {
		return a, nodeErr(n, status.Unimplemented, "Current implementation does not yet support dilations in the batch and depth dimensions.")
	}
	if a.Dilations[h] <= 0 || a.Dilations[w] <= 0 {
		return a, nodeErr(n, status.InvalidArgument, "Dilated rates should be larger than 0.")
	}
	if err := checkPadding(a.Padding, a.ExplicitPaddings, c); err != nil {
		return a, nodeErr(n, status.InvalidArgument, "%v", err)
	}
	// Keep everything in NHWC order from here on.
	if a.NCHW {
		perm := func(v []int64) []int64 { return []int64{v[0], v[2], v[3], v[1]} }
		a.Strides, a.Dilations = perm(a.Strides), perm(a.Dilations)
		if len(a.ExplicitPaddings) == 8 {
			p := a.ExplicitPaddings
			a.ExplicitPaddings = []int64{p[0], p[1], p[4], p[5], p[6], p[7], p[2], p[3]}
		}
	}
	return a, nil
}

// checkPadding is TF's CheckValidPadding for 4-D tensors with the channel
// dim at index c.
func checkPadding(padding string, explicit []int64, c int) error {
	switch padding {
	case "SAME", "VALID":
		if len(explicit) != 0 {
			return status.Errorf(status.InvalidArgument, "explicit_paddings attribute must be empty if the padding attribute is not EXPLICIT")
		}
	case "EXPLICIT":
		if len(explicit) != 8 {
			return status.Errorf(status.InvalidArgument, "explicit_paddings attribute must contain 8 values, but got: %d", len(explicit))
		}
		for _, p := range explicit {
			if p < 0 {
				return status.Errorf(status.InvalidArgument, "All elements of explicit_paddings must be nonnegative")
			}
		}
		if explicit[0] != 0 || explicit[1] != 0 || explicit[2*c] != 0 || explicit[2*c+1] != 0 {
			return status.Errorf(status.InvalidArgument, "Nonzero explicit padding in the batch or depth dimensions is not supported")
		}
	default:
		return status.Errorf(status.InvalidArgument, "padding must be SAME, VALID or EXPLICIT, not %q", padding)
	}
	return nil
}

// windowOut is TF's GetWindowedOutputSizeVerbose: the output size of a
// sliding window and the padding before it (SAME computes it; EXPLICIT
// takes the given one).
func windowOut(in, k, dil, stride int64, padding string, before, after int64) (out, padBefore, padAfter int64, err error) {
	if stride <= 0 {
		return 0, 0, 0, status.Errorf(status.InvalidArgument, "Stride must be > 0, but got %d", stride)
	}
	if dil < 1 {
		return 0, 0, 0, status.Errorf(status.InvalidArgument, "Dilation rate must be >= 1, but got %d", dil)
	}
	eff := (k-1)*dil + 1
	switch padding {
	case "VALID":
		out = (in - eff + stride) / stride
	case "EXPLICIT":
		out = (in + before + after - eff + stride) / stride
		padBefore, padAfter = before, after
	default: // SAME
		out = (in + stride - 1) / stride
		need := max(0, (out-1)*stride+eff-in)
		padBefore, padAfter = need/2, need-need/2
	}
	if out < 0 {
		return 0, 0, 0, status.Errorf(status.InvalidArgument, "Computed output size would be negative: %d [input_size: %d, effective_filter_size: %d, stride: %d]", out, in, eff, stride)
	}
	return out, padBefore, padAfter, nil
}

// ConvParams is one 2-D convolution of an NHWC input with an HWIO filter
// [KH, KW, C/Groups, O] into an NHWC output [N, OutH, OutW, O].
type ConvParams struct {
	N, H, W, C       int
	KH, KW, O        int
	Groups           int
	StrideH, StrideW int
	DilH, DilW       int
	PadTop, PadLeft  int
	OutH, OutW       int
}

// Params validates an NHWC input shape and an HWIO filter shape against the
// attrs as TF's ComputeConv2DDimension does (grouped convolution when the
// input depth is a multiple of the filter's) and returns the convolution.
// The error has TF's code and message, without the node's name.
func (a Conv2DAttrs) Params(in, filter tensor.Shape) (ConvParams, error) {
	var p ConvParams
	if len(in) != 4 {
		return p, status.Errorf(status.InvalidArgument, "convolution input must be 4-dimensional: %v", in)
	}
	if len(filter) != 4 {
		return p, status.Errorf(status.InvalidArgument, "convolution filter must be 4-dimensional: %v", filter)
	}
	for _, d := range filter {
		if d > 1<<31-1 {
			return p, status.Errorf(status.InvalidArgument, "filter too large")
		}
	}
	for _, d := range in {
		if d > 1<<31-1 {
			return p, status.Errorf(status.InvalidArgument, "Input dimension %v too large", in)
		}
	}
	c, pd := in[3], filter[2]
	if pd <= 0 {
		return p, status.Errorf(status.InvalidArgument, "filter depth must be stricly positive, got %d", pd)
	}
	if c%pd != 0 {
		return p, status.Errorf(status.InvalidArgument, "input depth must be evenly divisible by filter depth: %d vs %d", c, pd)
	}
	o := filter[3]
	groups := c / pd // 0 for an empty input depth: the output is zeros
	var pads [4]int64
	if a.Padding == "EXPLICIT" {
		copy(pads[:], a.ExplicitPaddings[2:6])
	}
	oh, pt, _, err := windowOut(in[1], filter[0], a.Dilations[1], a.Strides[1], a.Padding, pads[0], pads[1])
	if err != nil {
		return p, err
	}
	ow, pl, _, err := windowOut(in[2], filter[1], a.Dilations[2], a.Strides[2], a.Padding, pads[2], pads[3])
	if err != nil {
		return p, err
	}
	p = ConvParams{N: int(in[0]), H: int(in[1]), W: int(in[2]), C: int(c),
		KH: int(filter[0]), KW: int(filter[1]), O: int(o), Groups: int(max(groups, 1)),
		StrideH: int(a.Strides[1]), StrideW: int(a.Strides[2]), DilH: int(a.Dilations[1]), DilW: int(a.Dilations[2]),
		PadTop: int(pt), PadLeft: int(pl), OutH: int(oh), OutW: int(ow)}
	if err := (tensor.Shape{in[0], oh, ow, o}).Validate(); err != nil {
		return p, status.Errorf(status.InvalidArgument, "output shape: %v", err)
	}
	return p, nil
}

// OutShape is the NHWC output shape.
func (p ConvParams) OutShape() tensor.Shape {
	return tensor.Shape{int64(p.N), int64(p.OutH), int64(p.OutW), int64(p.O)}
}

// Pointwise says the input is already the convolution's column matrix
// [N*H*W, C]: a 1x1 filter at stride 1 with no padding on any side (the
// output as large as the input; EXPLICIT padding below or right alone
// would make it larger), so the convolution is a single GEMM.
func (p ConvParams) Pointwise() bool {
	return p.KH == 1 && p.KW == 1 && p.StrideH == 1 && p.StrideW == 1 && p.PadTop == 0 && p.PadLeft == 0 &&
		p.OutH == p.H && p.OutW == p.W
}

// Conv2DArgs checks Conv2D's input and filter shapes against the attrs
// and returns the convolution (in NHWC terms) and the output shape (in
// the node's format). What Conv2DLimits checks comes after TF's early
// exits for an empty output or input; the CPU and GPU kernels both
// validate through the two.
func Conv2DArgs(ctx *kernels.Context, a Conv2DAttrs) (p ConvParams, out tensor.Shape, err error) {
	ishape := ctx.Input(0).Shape
	if a.NCHW && len(ishape) == 4 {
		ishape = tensor.Shape{ishape[0], ishape[2], ishape[3], ishape[1]}
	}
	if p, err = a.Params(ishape, ctx.Input(1).Shape); err != nil {
		return ConvParams{}, nil, ctx.Errorf(status.CodeOf(err), "%v", err)
	}
	out = p.OutShape()
	if a.NCHW {
		out = tensor.Shape{out[0], out[3], out[1], out[2]}
	}
	return p, out, nil
}

// Conv2DLimits checks the restrictions of TF's CPU Conv2D kernel, which
// apply once there is something to compute: NHWC only, a filter with
// elements, an output depth that the groups divide.
func Conv2DLimits(ctx *kernels.Context, a Conv2DAttrs, p ConvParams) error {
	if a.NCHW {
		return ctx.Errorf(status.Unimplemented, "The Conv2D op currently only supports the NHWC tensor format on the CPU. The op was given the format: NCHW")
	}
	if ctx.Input(1).NumElements() == 0 {
		return ctx.Errorf(status.InvalidArgument, "filter must not have zero elements (i.e. all dimensions must be non-zero)")
	}
	if p.O%p.Groups != 0 || p.O < p.Groups {
		return ctx.Errorf(status.InvalidArgument, "output depth must be evenly divisible by number of groups: %d vs %d", p.O, p.Groups)
	}
	return nil
}

func conv2D(ctx *kernels.Context, a Conv2DAttrs, prims *dnnl.ConvCache) error {
	in, f := ctx.Input(0), ctx.Input(1)
	p, oshape, err := Conv2DArgs(ctx, a)
	if err != nil {
		return err
	}
	o, err := ctx.Allocate(0, oshape)
	if err != nil {
		return err
	}
	// TF's order: nothing to compute, then an empty input (all padding),
	// then the CPU kernel's own restrictions.
	if o.NumElements() == 0 {
		return nil
	}
	if in.NumElements() == 0 {
		clear(o.Buf)
		return nil
	}
	if err := Conv2DLimits(ctx, a, p); err != nil {
		return err
	}
	if in.DType == tensor.Float {
		if done, err := convDNNL(ctx, prims, p, in.F32(), f.F32(), nil, false, false, o.F32()); done {
			return err
		}
	}
	return Conv2DTensor(ctx, p, in, f, o)
}

// Conv2DTensor computes the convolution p of in with filter into out (all
// of one dtype: float, double, half, bfloat16 or int32; out allocated with
// p.OutShape(); in and filter not empty; p.O a multiple of p.Groups).
// It is the entry point for fused kernels
// (Conv2D+BiasAdd+activation), which add their epilogue to out afterwards.
// The error is the limit check of half-precision scratch.
func Conv2DTensor(ctx *kernels.Context, p ConvParams, in, filter, out *tensor.Tensor) error {
	if out.NumElements() == 0 {
		return nil
	}
	switch in.DType {
	case tensor.Float:
		Conv2DInto(ctx, p, in.F32(), filter.F32(), out.F32())
	case tensor.Double:
		convGemm(ctx, p, in.F64(), filter.F64(), out.F64(), dgemmNN)
	case tensor.Half, tensor.Bfloat16:
		o, err := kernels.Scratch[float32](ctx, out.NumElements())
		if err != nil {
			return err
		}
		Conv2DInto(ctx, p, toF32(in), toF32(filter), o)
		storeF32(out, o)
	case tensor.Int32:
		convGemm(ctx, p, in.I32(), filter.I32(), out.I32(), intGemmNN[int32])
	}
	return nil
}

// Conv2DInto computes the float32 convolution p: in is NHWC [N,H,W,C],
// filter HWIO [KH,KW,C/Groups,O], out NHWC [N,OutH,OutW,O] (overwritten).
// A 1x1 stride-1 unpadded convolution is a single GEMM over the input; any
// other is im2col over tiles of output pixels, each tile one GEMM per group
// with the filter as the right operand. The GEMM is blas.Sgemm, the one
// MatMul uses, so OpenBLAS threads it; im2col runs on ctx's pool.
func Conv2DInto(ctx *kernels.Context, p ConvParams, in, filter, out []float32) {
	convGemm(ctx, p, in, filter, out, sgemmNN)
}

type gemmNN[T any] func(m, n, k int, a []T, lda int, b []T, ldb int, c []T, ldc int)

func sgemmNN(m, n, k int, a []float32, lda int, b []float32, ldb int, c []float32, ldc int) {
	blas.Sgemm(false, false, m, n, k, 1, a, lda, b, ldb, 0, c, ldc)
}

func dgemmNN(m, n, k int, a []float64, lda int, b []float64, ldb int, c []float64, ldc int) {
	blas.Dgemm(false, false, m, n, k, 1, a, lda, b, ldb, 0, c, ldc)
}

// intGemmNN is C = A*B for integers (no BLAS for them), i-k-j order so the
// inner loop runs along rows of B and C.
func intGemmNN[T int32 | int64](m, n, k int, a []T, lda int, b []T, ldb int, c []T, ldc int) {
	for i := 0; i < m; i++ {
		ci := c[i*ldc : i*ldc+n]
		for j := range ci {
			ci[j] = 0
		}
		for p := 0; p < k; p++ {
			x := a[i*lda+p]
			if x == 0 {
				continue
			}
			bp := b[p*ldb : p*ldb+n]
			for j, y := range bp {
				ci[j] += x * y
			}
		}
	}
}

// colBudget bounds one im2col tile (elements), so a large image does not
// need a column buffer of its full size.
const colBudget = 1 << 20

var colPool32, colPool64 sync.Pool

func getCol[T any](n int) []T {
	var pool *sync.Pool
	switch any(*new(T)).(type) {
	case float32:
		pool = &colPool32
	case float64:
		pool = &colPool64
	default:
		return make([]T, n)
	}
	if b, ok := pool.Get().(*[]T); ok && cap(*b) >= n {
		return (*b)[:n]
	}
	return make([]T, n)
}

func putCol[T any](b []T) {
	switch any(*new(T)).(type) {
	case float32:
		colPool32.Put(&b)
	case float64:
		colPool64.Put(&b)
	}
}

func convGemm[T float32 | float64 | int32](ctx *kernels.Context, p ConvParams, in, filter, out []T, gemm gemmNN[T]) {
	rows := p.N * p.OutH * p.OutW
	cg, og := p.C/p.Groups, p.O/p.Groups
	if p.Pointwise() {
		// The input is already the column matrix [rows, C].
		for g := 0; g < p.Groups; g++ {
			gemm(rows, og, cg, in[g*cg:], p.C, filter[g*og:], p.O, out[g*og:], p.O)
		}
		return
	}
	k := p.KH * p.KW * cg
	tile := max(1, min(rows, colBudget/max(k, 1)))
	col := getCol[T](tile * k)
	defer putCol(col)
	for r0 := 0; r0 < rows; r0 += tile {
		m := min(tile, rows-r0)
		for g := 0; g < p.Groups; g++ {
			ctx.For(m, float64(k), kernels.StartLoop, func(lo, hi int) { im2col(p, in, col, r0, lo, hi, g) })
			gemm(m, og, k, col, k, filter[g*og:], p.O, out[r0*p.O+g*og:], p.O)
		}
	}
}

// im2col writes rows [lo, hi) of the tile starting at output pixel r0:
// row i holds the receptive field of output pixel r0+i for group g, in
// (kh, kw, c) order to match the HWIO filter viewed as [KH*KW*Cg, O].
func im2col[T any](p ConvParams, in, col []T, r0, lo, hi, g int) {
	cg := p.C / p.Groups
	k := p.KH * p.KW * cg
	var zero T
	for i := lo; i < hi; i++ {
		r := r0 + i
		ow := r % p.OutW
		oh := (r / p.OutW) % p.OutH
		n := r / (p.OutW * p.OutH)
		dst := col[i*k : (i+1)*k]
		ih0 := oh*p.StrideH - p.PadTop
		iw0 := ow*p.StrideW - p.PadLeft
		// With one group and no column dilation, a filter row's taps that
		// lie inside the image are one contiguous run of the input.
		rowRun := p.Groups == 1 && p.DilW == 1 && iw0 >= 0 && iw0+p.KW <= p.W
		for kh := 0; kh < p.KH; kh++ {
			ih := ih0 + kh*p.DilH
			if rowRun && ih >= 0 && ih < p.H {
				src := ((n*p.H+ih)*p.W + iw0) * p.C
				copy(dst[kh*p.KW*cg:(kh+1)*p.KW*cg], in[src:src+p.KW*p.C])
				continue
			}
			for kw := 0; kw < p.KW; kw++ {
				iw := iw0 + kw*p.DilW
				seg := dst[(kh*p.KW+kw)*cg : (kh*p.KW+kw+1)*cg]
				if ih < 0 || ih >= p.H || iw < 0 || iw >= p.W {
					for j := range seg {
						seg[j] = zero
					}
					continue
				}
				src := ((n*p.H+ih)*p.W+iw)*p.C + g*cg
				copy(seg, in[src:src+cg])
			}
		}
	}
}

// DepthwiseArgs checks DepthwiseConv2dNative's input and filter [KH, KW,
// C, M] and returns the convolution as a grouped one (a group per input
// channel, the filter viewed as [KH, KW, 1, C*M]), the multiplier M and
// the output shape; the CPU and GPU kernels both validate through it.
func DepthwiseArgs(ctx *kernels.Context, a Conv2DAttrs) (p ConvParams, mult int64, out tensor.Shape, err error) {
	in, f := ctx.Input(0), ctx.Input(1)
	if len(in.Shape) != 4 {
		return p, 0, nil, ctx.Errorf(status.InvalidArgument, "input must be 4-dimensional%v", in.Shape)
	}
	if len(f.Shape) != 4 {
		return p, 0, nil, ctx.Errorf(status.InvalidArgument, "filter must be 4-dimensional: %v", f.Shape)
	}
	c := in.Shape[3]
	if a.NCHW {
		c = in.Shape[1]
	}
	if c != f.Shape[2] {
		return p, 0, nil, ctx.Errorf(status.InvalidArgument, "input and filter must have the same depth: %d vs %d", c, f.Shape[2])
	}
	if a.NCHW {
		return p, 0, nil, ctx.Errorf(status.Unimplemented, "Depthwise convolution on CPU is only supported for NHWC format")
	}
	mult = f.Shape[3]
	if p, err = a.Params(in.Shape, tensor.Shape{f.Shape[0], f.Shape[1], 1, c * mult}); err != nil {
		return p, 0, nil, ctx.Errorf(status.CodeOf(err), "%v", err)
	}
	if c == 0 {
		p.Groups = 1
	}
	return p, mult, tensor.Shape{in.Shape[0], int64(p.OutH), int64(p.OutW), c * mult}, nil
}

// depthwiseConv is DepthwiseConv2dNative: filter [KH, KW, C, M], output
// channel c*M+m sums input channel c against filter[..., c, m].
func depthwiseConv(ctx *kernels.Context, a Conv2DAttrs) error {
	in, f := ctx.Input(0), ctx.Input(1)
	p, mult, out, err := DepthwiseArgs(ctx, a)
	if err != nil {
		return err
	}
	o, err := ctx.Allocate(0, out)
	if err != nil {
		return err
	}
	if o.NumElements() == 0 {
		return nil
	}
	switch in.DType {
	case tensor.Float:
		depthwise(ctx, p, int(mult), in.F32(), f.F32(), o.F32())
	case tensor.Double:
		depthwise(ctx, p, int(mult), in.F64(), f.F64(), o.F64())
	default:
		out, err := kernels.Scratch[float32](ctx, o.NumElements())
		if err != nil {
			return err
		}
		depthwise(ctx, p, int(mult), toF32(in), toF32(f), out)
		storeF32(o, out)
	}
	return nil
}

func depthwise[T float32 | float64](ctx *kernels.Context, p ConvParams, mult int, in, f, out []T) {
	oc := p.C * mult
	ctx.For(p.N*p.OutH, float64(p.OutW*p.KH*p.KW*oc), kernels.StartLoop, func(lo, hi int) {
		for r := lo; r < hi; r++ {
			n, oh := r/p.OutH, r%p.OutH
			for ow := 0; ow < p.OutW; ow++ {
				acc := out[((n*p.OutH+oh)*p.OutW+ow)*oc:][:oc]
				for j := range acc {
					acc[j] = 0
				}
				for kh := 0; kh < p.KH; kh++ {
					ih := oh*p.StrideH - p.PadTop + kh
					if ih < 0 || ih >= p.H {
						continue
					}
					for kw := 0; kw < p.KW; kw++ {
						iw := ow*p.StrideW - p.PadLeft + kw
						if iw < 0 || iw >= p.W {
							continue
						}
						x := in[((n*p.H+ih)*p.W+iw)*p.C:][:p.C]
						fr := f[(kh*p.KW+kw)*oc:][:oc]
						if mult == 1 {
							for c, v := range x {
								acc[c] += v * fr[c]
							}
							continue
						}
						for c, v := range x {
							a, w := acc[c*mult:(c+1)*mult], fr[c*mult:(c+1)*mult]
							for m := range a {
								a[m] += v * w[m]
							}
						}
					}
				}
			}
		}
	})
}

// Conv2DBackpropInputArgs checks Conv2DBackpropInput's input_sizes (4
// values, or 2 spatial ones), filter and out_backprop as TF's CPU kernel
// does and returns the input gradient's shape and the convolution's
// parameters; the CPU and GPU kernels both validate through it.
func Conv2DBackpropInputArgs(ctx *kernels.Context, a Conv2DAttrs) (inShape tensor.Shape, p ConvParams, err error) {
	sizesT, f, dy := ctx.Input(0), ctx.Input(1), ctx.Input(2)
	if len(dy.Shape) != 4 {
		return nil, ConvParams{}, ctx.Errorf(status.InvalidArgument, "input_sizes must be 4-dimensional, got: %d", len(dy.Shape))
	}
	sizes, err := hostInts(ctx, 0, "input_sizes")
	if err != nil {
		return nil, ConvParams{}, err
	}
	if len(sizesT.Shape) != 1 {
		return nil, ConvParams{}, ctx.Errorf(status.InvalidArgument, "Conv2DBackpropInput: input_sizes input must be 1-dim, not %d", len(sizesT.Shape))
	}
	switch len(sizes) {
	case 4:
		inShape = tensor.Shape(sizes)
	case 2:
		if sizes[0] < 0 || sizes[1] < 0 {
			return nil, ConvParams{}, ctx.Errorf(status.InvalidArgument, "Conv2DBackpropInput: elements of input_sizes must be >= 0, not %dx%d", sizes[0], sizes[1])
		}
		if len(f.Shape) != 4 {
			return nil, ConvParams{}, ctx.Errorf(status.InvalidArgument, "Conv2DBackpropInput: filter must be 4-dimensional")
		}
		inShape = tensor.Shape{dy.Shape[0], sizes[0], sizes[1], f.Shape[2]}
	default:
		return nil, ConvParams{}, ctx.Errorf(status.InvalidArgument, "Conv2DBackpropInput requires input_sizes to contain 4 values or 2 values, but got: %d", len(sizes))
	}
	if err := inShape.Validate(); err != nil {
		return nil, ConvParams{}, ctx.Errorf(status.InvalidArgument, "input_sizes: %v", err)
	}
	if len(f.Shape) != 4 {
		return nil, ConvParams{}, ctx.Errorf(status.InvalidArgument, "Conv2DCustomBackpropInput: filter must be 4-dimensional")
	}
	if inShape[0] != dy.Shape[0] {
		return nil, ConvParams{}, ctx.Errorf(status.InvalidArgument, "Conv2DCustomBackpropInput: input and out_backprop must have the same batch size. Input batch: %d, outbackprop batch: %d, batch_dim: 0", inShape[0], dy.Shape[0])
	}
	if f.Shape[2] <= 0 {
		return nil, ConvParams{}, ctx.Errorf(status.InvalidArgument, "Conv2DCustomBackpropInput: filter depth must be strictly greated than zero")
	}
	if inShape[3] != f.Shape[2] {
		if inShape[3]%f.Shape[2] != 0 {
			return nil, ConvParams{}, ctx.Errorf(status.InvalidArgument, "Conv2DCustomBackpropInput: input depth must be evenly divisible by filter depth")
		}
		return nil, ConvParams{}, ctx.Errorf(status.InvalidArgument, "Gradients for grouped convolutions are not supported on CPU. Please file a feature request if you run into this issue. Computed input depth %d doesn't match filter input depth %d", inShape[3], f.Shape[2])
	}
	if f.Shape[3] != dy.Shape[3] {
		return nil, ConvParams{}, ctx.Errorf(status.InvalidArgument, "Conv2DCustomBackpropInput: filter and out_backprop must have the same out_depth")
	}
	p, err = a.Params(inShape, f.Shape)
	if err != nil {
		return nil, ConvParams{}, ctx.Errorf(status.CodeOf(err), "Conv2DCustomBackpropInput: %v", err)
	}
	if int64(p.OutH) != dy.Shape[1] || int64(p.OutW) != dy.Shape[2] {
		return nil, ConvParams{}, ctx.Errorf(status.InvalidArgument, "Conv2DCustomBackpropInput: Size of out_backprop doesn't match computed: actual = %v, computed = %v", dy.Shape, p.OutShape())
	}
	return inShape, p, nil
}

// conv2DBackpropInput is the gradient of Conv2D with respect to its input
// (the transposed convolution): columns = dy [rows, O] x filter^T, then
// col2im adds each column back into the input positions it came from.
func conv2DBackpropInput(ctx *kernels.Context, a Conv2DAttrs) error {
	dy, f := ctx.Input(2), ctx.Input(1)
	inShape, p, err := Conv2DBackpropInputArgs(ctx, a)
	if err != nil {
		return err
	}
	o, err := ctx.Allocate(0, inShape)
	if err != nil {
		return err
	}
	if o.NumElements() == 0 || dy.NumElements() == 0 {
		clear(o.Buf)
		return nil
	}
	switch o.DType {
	case tensor.Float:
		convBackInput(p, dy.F32(), f.F32(), o.F32(), sgemmNT)
	case tensor.Double:
		convBackInput(p, dy.F64(), f.F64(), o.F64(), dgemmNT)
	case tensor.Half, tensor.Bfloat16:
		out, err := kernels.Scratch[float32](ctx, o.NumElements())
		if err != nil {
			return err
		}
		convBackInput(p, toF32(dy), toF32(f), out, sgemmNT)
		storeF32(o, out)
	case tensor.Int32:
		convBackInput(p, dy.I32(), f.I32(), o.I32(), intGemmNT[int32])
	}
	return nil
}

type gemmNT[T any] func(m, n, k int, a []T, lda int, b []T, ldb int, c []T, ldc int)

func sgemmNT(m, n, k int, a []float32, lda int, b []float32, ldb int, c []float32, ldc int) {
	blas.Sgemm(false, true, m, n, k, 1, a, lda, b, ldb, 0, c, ldc)
}

func dgemmNT(m, n, k int, a []float64, lda int, b []float64, ldb int, c []float64, ldc int) {
	blas.Dgemm(false, true, m, n, k, 1, a, lda, b, ldb, 0, c, ldc)
}

// intGemmNT is C = A*B^T for integers.
func intGemmNT[T int32 | int64](m, n, k int, a []T, lda int, b []T, ldb int, c []T, ldc int) {
	for i := 0; i < m; i++ {
		for j := 0; j < n; j++ {
			var s T
			ai, bj := a[i*lda:i*lda+k], b[j*ldb:j*ldb+k]
			for q, x := range ai {
				s += x * bj[q]
			}
			c[i*ldc+j] = s
		}
	}
}

func convBackInput[T float32 | float64 | int32](p ConvParams, dy, filter, dx []T, gemm gemmNT[T]) {
	clear(dx) // col2im accumulates; buffers may be recycled
	rows := p.N * p.OutH * p.OutW
	k := p.KH * p.KW * p.C
	tile := max(1, min(rows, colBudget/max(k, 1)))
	col := make([]T, tile*k) //mstream:bounded colBudget elements, or one filter's worth (k) when a filter is larger
	for r0 := 0; r0 < rows; r0 += tile {
		m := min(tile, rows-r0)
		// col [m, K] = dy [m, O] x W^T where W is [K, O].
		gemm(m, k, p.O, dy[r0*p.O:], p.O, filter, p.O, col, k)
		for i := 0; i < m; i++ {
			r := r0 + i
			ow := r % p.OutW
			oh := (r / p.OutW) % p.OutH
			n := r / (p.OutW * p.OutH)
			src := col[i*k : (i+1)*k]
			for kh := 0; kh < p.KH; kh++ {
				ih := oh*p.StrideH - p.PadTop + kh*p.DilH
				if ih < 0 || ih >= p.H {
					continue
				}
				for kw := 0; kw < p.KW; kw++ {
					iw := ow*p.StrideW - p.PadLeft + kw*p.DilW
					if iw < 0 || iw >= p.W {
						continue
					}
					d := dx[((n*p.H+ih)*p.W+iw)*p.C:][:p.C]
					s := src[(kh*p.KW+kw)*p.C:][:p.C]
					for c, v := range s {
						d[c] += v
					}
				}
			}
		}
	}
}
