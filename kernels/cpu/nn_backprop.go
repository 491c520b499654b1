package cpu

import (
	"math"

	"mstream/graph"
	"mstream/kernels"
	"mstream/status"
	"mstream/tensor"
)

// The backward kernels of convolution and pooling that TF's gradient
// functions emit: Conv2DBackpropFilter, MaxPoolGrad and AvgPoolGrad (NHWC,
// as TF's CPU kernels), plus UnsortedSegmentSum, the dense form of a
// gather's gradient. Each accumulates in float64 and rounds once.

func init() {
	reg("Conv2DBackpropFilter", []tensor.DType{tensor.Float, tensor.Double, tensor.Half, tensor.Bfloat16}, []string{"filter_sizes"}, func(n *graph.Node) (kernels.Kernel, error) {
		a, err := ParseConv2DAttrs(n)
		if err != nil {
			return nil, err
		}
		if a.NCHW {
			return nil, nodeErr(n, status.InvalidArgument, "Conv2DBackpropFilterOp only supports NHWC data format on the CPU.")
		}
		if a.Dilations[1] != 1 || a.Dilations[2] != 1 {
			return nil, nodeErr(n, status.InvalidArgument, "Current CPU implementations do not yet support dilation rates larger than 1.")
		}
		return kernels.KernelFunc(func(ctx *kernels.Context) error { return conv2DBackpropFilter(ctx, a) }), nil
	})
	reg("MaxPoolGrad", floatTypes, nil, func(n *graph.Node) (kernels.Kernel, error) {
		pa, err := ParsePoolAttrs(n, "MaxPoolingOp", true)
		if err != nil {
			return nil, err
		}
		return kernels.KernelFunc(func(ctx *kernels.Context) error { return maxPoolGrad(ctx, pa) }), nil
	})
	reg("AvgPoolGrad", floatTypes, []string{"orig_input_shape"}, func(n *graph.Node) (kernels.Kernel, error) {
		pa, err := ParsePoolAttrs(n, "AvgPoolingOp", false)
		if err != nil {
			return nil, err
		}
		return kernels.KernelFunc(func(ctx *kernels.Context) error { return avgPoolGrad(ctx, pa) }), nil
	})
	reg("UnsortedSegmentSum", append(append([]tensor.DType{}, floatTypes...), tensor.Int32, tensor.Int64), []string{"num_segments"}, fn(unsortedSegmentSum))
}

// Conv2DBackpropFilterArgs checks the input, filter_sizes and out_backprop
// as TF's CPU kernel does and returns the filter's shape and the
// convolution.
func Conv2DBackpropFilterArgs(ctx *kernels.Context, a Conv2DAttrs) (fShape tensor.Shape, p ConvParams, err error) {
	x, dy := ctx.Input(0), ctx.Input(2)
	if len(ctx.Input(1).Shape) != 1 {
		return nil, p, ctx.Errorf(status.InvalidArgument, "Conv2DBackpropFilter: filter_sizes input must be 1-dim, not %d", len(ctx.Input(1).Shape))
	}
	sizes, err := hostInts(ctx, 1, "filter_sizes")
	if err != nil {
		return nil, p, err
	}
	if len(sizes) != 4 {
		return nil, p, ctx.Errorf(status.InvalidArgument, "Conv2DCustomBackpropFilter: filter_sizes must have 4 values, got %d", len(sizes))
	}
	fShape = tensor.Shape(sizes)
	if err := fShape.Validate(); err != nil {
		return nil, p, ctx.Errorf(status.InvalidArgument, "filter_sizes: %v", err)
	}
	if len(x.Shape) != 4 || len(dy.Shape) != 4 {
		return nil, p, ctx.Errorf(status.InvalidArgument, "Conv2DCustomBackpropFilter: input and out_backprop must be 4-dimensional, got %v and %v", x.Shape, dy.Shape)
	}
	if x.Shape[0] != dy.Shape[0] {
		return nil, p, ctx.Errorf(status.InvalidArgument, "Conv2DCustomBackpropFilter: input and out_backprop must have the same batch size. Input batch: %d, outbackprop batch: %d, batch_dim: 0", x.Shape[0], dy.Shape[0])
	}
	if fShape[2] != x.Shape[3] {
		return nil, p, ctx.Errorf(status.InvalidArgument, "Conv2DCustomBackpropFilter: input depth %d and filter depth %d must match (grouped convolution gradients are not supported on the CPU)", x.Shape[3], fShape[2])
	}
	if fShape[3] != dy.Shape[3] {
		return nil, p, ctx.Errorf(status.InvalidArgument, "Conv2DCustomBackpropFilter: filter and out_backprop must have the same out_depth")
	}
	p, err = a.Params(x.Shape, fShape)
	if err != nil {
		return nil, p, ctx.Errorf(status.CodeOf(err), "Conv2DCustomBackpropFilter: %v", err)
	}
	if int64(p.OutH) != dy.Shape[1] || int64(p.OutW) != dy.Shape[2] {
		return nil, p, ctx.Errorf(status.InvalidArgument, "Conv2DCustomBackpropFilter: Size of out_backprop doesn't match computed: actual = %v, computed = %v", dy.Shape, p.OutShape())
	}
	return fShape, p, nil
}

// conv2DBackpropFilter: df[a, b, c, o] = sum over n, i, j of
// x[n, i*sh - pt + a*dh, j*sw - pl + b*dw, c] * dy[n, i, j, o], one filter
// tap (a, b) per task.
func conv2DBackpropFilter(ctx *kernels.Context, a Conv2DAttrs) error {
	fShape, p, err := Conv2DBackpropFilterArgs(ctx, a)
	if err != nil {
		return err
	}
	o, err := ctx.Allocate(0, fShape)
	if err != nil {
		return err
	}
	x, err := loadF64(ctx, ctx.Input(0))
	if err != nil {
		return err
	}
	dy, err := loadF64(ctx, ctx.Input(2))
	if err != nil {
		return err
	}
	df, err := kernels.Scratch[float64](ctx, fShape.NumElements())
	if err != nil {
		return err
	}
	C, O := p.C, p.O
	ctx.For(p.KH*p.KW, float64(p.N*p.OutH*p.OutW*C*O), kernels.StartLoop, func(lo, hi int) {
		for tap := lo; tap < hi; tap++ {
			ka, kb := tap/p.KW, tap%p.KW
			acc := df[tap*C*O : (tap+1)*C*O]
			for n := 0; n < p.N; n++ {
				for i := 0; i < p.OutH; i++ {
					y := i*p.StrideH - p.PadTop + ka*p.DilH
					if y < 0 || y >= p.H {
						continue
					}
					for j := 0; j < p.OutW; j++ {
						xx := j*p.StrideW - p.PadLeft + kb*p.DilW
						if xx < 0 || xx >= p.W {
							continue
						}
						xr := x[((n*p.H+y)*p.W+xx)*C:][:C]
						dr := dy[((n*p.OutH+i)*p.OutW+j)*O:][:O]
						for c, xv := range xr {
							row := acc[c*O : (c+1)*O]
							for k, dv := range dr {
								row[k] += xv * dv
							}
						}
					}
				}
			}
		}
	})
	storeF64(o, df)
	return nil
}

// maxPoolGrad routes each output gradient to the first maximum of its
// window in the original input (row-major scan, NaN taken as the maximum,
// as TF's CPU MaxPoolGrad finds it).
func maxPoolGrad(ctx *kernels.Context, pa PoolAttrs) error {
	xin, yout, g := ctx.Input(0), ctx.Input(1), ctx.Input(2)
	geom, err := PoolParams(ctx, pa, xin.Shape, true)
	if err != nil {
		return err
	}
	if geom.KD != 1 {
		return ctx.Errorf(status.Unimplemented, "MaxPoolGrad across depth is not supported on the CPU")
	}
	want := tensor.Shape{int64(geom.N), int64(geom.OH), int64(geom.OW), int64(geom.C)}
	if !yout.Shape.Equal(want) || !g.Shape.Equal(want) {
		return ctx.Errorf(status.InvalidArgument, "Expected orig_output and grad shapes %v, got %v and %v", want, yout.Shape, g.Shape)
	}
	o, err := ctx.Allocate(0, xin.Shape)
	if err != nil {
		return err
	}
	x, err := loadF64(ctx, xin)
	if err != nil {
		return err
	}
	gv, err := loadF64(ctx, g)
	if err != nil {
		return err
	}
	dx, err := kernels.Scratch[float64](ctx, xin.NumElements())
	if err != nil {
		return err
	}
	// One image per task: windows of different images never overlap.
	ctx.For(geom.N, float64(geom.OH*geom.OW*geom.KH*geom.KW*geom.C), kernels.StartLoop, func(lo, hi int) {
		for n := lo; n < hi; n++ {
			for oh := 0; oh < geom.OH; oh++ {
				for ow := 0; ow < geom.OW; ow++ {
					h0, w0 := oh*geom.SH-geom.PT, ow*geom.SW-geom.PL
					hs, he := max(h0, 0), min(h0+geom.KH, geom.H)
					ws, we := max(w0, 0), min(w0+geom.KW, geom.W)
					for c := 0; c < geom.C; c++ {
						best := -1
						for y := hs; y < he; y++ {
							for xx := ws; xx < we; xx++ {
								k := ((n*geom.H+y)*geom.W+xx)*geom.C + c
								if best < 0 || x[k] > x[best] || (x[k] != x[k] && x[best] == x[best]) {
									best = k
								}
							}
						}
						if best >= 0 {
							dx[best] += gv[((n*geom.OH+oh)*geom.OW+ow)*geom.C+c]
						}
					}
				}
			}
		}
	})
	storeF64(o, dx)
	return nil
}

// avgPoolGrad spreads each output gradient evenly over the in-bounds
// elements of its window (the count AvgPool divided by).
func avgPoolGrad(ctx *kernels.Context, pa PoolAttrs) error {
	st, g := ctx.Input(0), ctx.Input(1)
	if len(st.Shape) != 1 || st.NumElements() != 4 {
		return ctx.Errorf(status.InvalidArgument, "orig_input_shape must be 1-dimensional and 4 elements")
	}
	if len(g.Shape) != 4 {
		return ctx.Errorf(status.InvalidArgument, "out_backprop must be 4-dimensional")
	}
	dims, err := hostInts(ctx, 0, "orig_input_shape")
	if err != nil {
		return err
	}
	inShape := tensor.Shape(dims)
	if err := inShape.Validate(); err != nil {
		return ctx.Errorf(status.InvalidArgument, "orig_input_shape: %v", err)
	}
	geom, err := PoolParams(ctx, pa, inShape, false)
	if err != nil {
		return err
	}
	want := tensor.Shape{int64(geom.N), int64(geom.OH), int64(geom.OW), int64(geom.C)}
	if !g.Shape.Equal(want) {
		return ctx.Errorf(status.InvalidArgument, "out_backprop has shape %v, expected %v", g.Shape, want)
	}
	o, err := ctx.Allocate(0, inShape)
	if err != nil {
		return err
	}
	gv, err := loadF64(ctx, g)
	if err != nil {
		return err
	}
	dx, err := kernels.Scratch[float64](ctx, inShape.NumElements())
	if err != nil {
		return err
	}
	ctx.For(geom.N, float64(geom.OH*geom.OW*geom.KH*geom.KW*geom.C), kernels.StartLoop, func(lo, hi int) {
		for n := lo; n < hi; n++ {
			for oh := 0; oh < geom.OH; oh++ {
				for ow := 0; ow < geom.OW; ow++ {
					h0, w0 := oh*geom.SH-geom.PT, ow*geom.SW-geom.PL
					hs, he := max(h0, 0), min(h0+geom.KH, geom.H)
					ws, we := max(w0, 0), min(w0+geom.KW, geom.W)
					cnt := float64((he - hs) * (we - ws))
					if cnt <= 0 {
						continue
					}
					src := gv[((n*geom.OH+oh)*geom.OW+ow)*geom.C:][:geom.C]
					for y := hs; y < he; y++ {
						for xx := ws; xx < we; xx++ {
							dst := dx[((n*geom.H+y)*geom.W+xx)*geom.C:][:geom.C]
							for c, v := range src {
								dst[c] += v / cnt
							}
						}
					}
				}
			}
		}
	})
	storeF64(o, dx)
	return nil
}

// unsortedSegmentSum sums data's slices into num_segments rows by
// segment_ids; a negative id drops its slice, one >= num_segments is an
// error, as in TF.
// UnsortedSegmentSumArgs checks UnsortedSegmentSum's shapes and its
// num_segments (a host input) as TF does, but not the ids' values, and
// returns num_segments, the elements per segment and the output's shape.
func UnsortedSegmentSumArgs(ctx *kernels.Context) (num, inner int64, out tensor.Shape, err error) {
	data, ids, ns := ctx.Input(0), ctx.Input(1), ctx.Input(2)
	if ns.NumElements() != 1 || len(ns.Shape) != 0 {
		return 0, 0, nil, ctx.Errorf(status.InvalidArgument, "num_segments should be a scalar, not shape %v", ns.Shape)
	}
	nsv, _ := ns.Int64s()
	num = nsv[0]
	if num < 0 {
		return 0, 0, nil, ctx.Errorf(status.InvalidArgument, "Input num_segments == %d must not be negative.", num)
	}
	if len(ids.Shape) > len(data.Shape) || !data.Shape[:len(ids.Shape)].Equal(ids.Shape) {
		return 0, 0, nil, ctx.Errorf(status.InvalidArgument, "data.shape = %v does not start with segment_ids.shape = %v", data.Shape, ids.Shape)
	}
	inner = 1
	for _, d := range data.Shape[len(ids.Shape):] {
		inner *= d
	}
	return num, inner, append(tensor.Shape{num}, data.Shape[len(ids.Shape):]...), nil
}

func unsortedSegmentSum(ctx *kernels.Context) error {
	data, ids := ctx.Input(0), ctx.Input(1)
	num, inner, outShape, err := UnsortedSegmentSumArgs(ctx)
	if err != nil {
		return err
	}
	o, err := ctx.Allocate(0, outShape)
	if err != nil {
		return err
	}
	iv, err := ids.Int64s()
	if err != nil {
		return ctx.Errorf(status.InvalidArgument, "segment_ids: %v", err)
	}
	for i, v := range iv {
		if v >= num {
			return ctx.Errorf(status.InvalidArgument, "segment_ids[%d] = %d is out of range [0, %d)", i, v, num)
		}
	}
	dv, err := loadF64(ctx, data)
	if err != nil {
		return err
	}
	acc, err := kernels.Scratch[float64](ctx, outShape.NumElements())
	if err != nil {
		return err
	}
	for i, seg := range iv {
		if seg < 0 {
			continue
		}
		src := dv[int64(i)*inner : (int64(i)+1)*inner]
		dst := acc[seg*inner : (seg+1)*inner]
		for k, v := range src {
			dst[k] += v
		}
	}
	storeF64(o, acc)
	return nil
}

func init() {
	for _, op := range []string{"FusedBatchNormGrad", "FusedBatchNormGradV2", "FusedBatchNormGradV3"} {
		types := []tensor.DType{tensor.Float, tensor.Half, tensor.Bfloat16}
		if op == "FusedBatchNormGrad" {
			types = types[:1]
		}
		reg(op, types, nil, func(n *graph.Node) (kernels.Kernel, error) {
			eps := 1e-4
			if a := n.Attrs["epsilon"]; a != nil {
				eps = float64(a.GetF())
			}
			training := n.Attrs["is_training"] == nil || n.Attrs["is_training"].GetB()
			var nchw bool
			switch df := attrString(n, "data_format", "NHWC"); df {
			case "NHWC":
			case "NCHW":
				nchw = true
			default:
				return nil, nodeErr(n, status.InvalidArgument, "Invalid data format %q", df)
			}
			if nchw && !training {
				return nil, nodeErr(n, status.InvalidArgument, "The implementation of FusedBatchNormGrad with is_training=False only support NHWC tensor format for now.")
			}
			return kernels.KernelFunc(func(ctx *kernels.Context) error { return batchNormGrad(ctx, eps, training, nchw) }), nil
		})
	}
}

// batchNormGrad is FusedBatchNormGrad(V2, V3) on 4-D input: reserve_space
// 1 and 2 are the batch mean and (biased) variance in training, the
// population ones otherwise, as TF's CPU kernel reads them.
//
//	training:  dx = scale/sqrt(var+eps) * (dy - mean(dy) - xc * mean(dy*xc) / (var+eps))
//	inference: dx = dy * scale / sqrt(var+eps)
//	dscale = sum(dy * xc) / sqrt(var+eps), doffset = sum(dy), xc = x - mean
func batchNormGrad(ctx *kernels.Context, eps float64, training, nchw bool) error {
	dyT, xT := ctx.Input(0), ctx.Input(1)
	if len(dyT.Shape) != 4 || len(xT.Shape) != 4 {
		return ctx.Errorf(status.InvalidArgument, "input must be 4-dimensional, got y_backprop %v and x %v", dyT.Shape, xT.Shape)
	}
	if !dyT.Shape.Equal(xT.Shape) {
		return ctx.Errorf(status.InvalidArgument, "x and y_backprop must have same shape, but x has shape %v and y_backprop has shape %v", xT.Shape, dyT.Shape)
	}
	ax := 3
	if nchw {
		ax = 1
	}
	c := xT.Shape[ax]
	for i, what := range []string{"scale", "reserve_space_1", "reserve_space_2"} {
		if t := ctx.Input(2 + i); len(t.Shape) != 1 || t.Shape[0] != c {
			return ctx.Errorf(status.InvalidArgument, "%s must be 1-dimensional with %d elements, got %v", what, c, t.Shape)
		}
	}
	inner := int64(1)
	for _, d := range xT.Shape[ax+1:] {
		inner *= d
	}
	dx, err := ctx.Allocate(0, xT.Shape)
	if err != nil {
		return err
	}
	var outs [4]*tensor.Tensor
	for i := 1; i < len(ctx.Outputs) && i <= 4; i++ {
		shape := tensor.Shape{c}
		if i >= 3 {
			shape = tensor.Shape{0} // reserve_space_4 and _5: unused on the CPU, as in TF
		}
		if outs[i-1], err = ctx.Allocate(i, shape); err != nil {
			return err
		}
	}
	x, err := loadF64(ctx, xT)
	if err != nil {
		return err
	}
	dy, err := loadF64(ctx, dyT)
	if err != nil {
		return err
	}
	var p [3][]float64 // scale, mean, variance
	for i := range p {
		if p[i], err = loadF64(ctx, ctx.Input(2+i)); err != nil {
			return err
		}
	}
	sums, err := kernels.Scratch[float64](ctx, 2*c)
	if err != nil {
		return err
	}
	sumDy, sumDyXc := sums[:c], sums[c:]
	for i, v := range dy {
		k := (int64(i) / inner) % c
		sumDy[k] += v
		sumDyXc[k] += v * (x[i] - p[1][k])
	}
	out, err := kernels.Scratch[float64](ctx, int64(len(x)))
	if err != nil {
		return err
	}
	cnt := float64(0)
	if c > 0 {
		cnt = float64(int64(len(x)) / c)
	}
	for i, v := range dy {
		k := (int64(i) / inner) % c
		inv := 1 / math.Sqrt(p[2][k]+eps)
		if training {
			xc := x[i] - p[1][k]
			out[i] = p[0][k] * inv * (v - sumDy[k]/cnt - xc*(sumDyXc[k]/cnt)*inv*inv)
		} else {
			out[i] = v * p[0][k] * inv
		}
	}
	storeF64(dx, out)
	ds, err := kernels.Scratch[float64](ctx, c)
	if err != nil {
		return err
	}
	for k := range ds {
		ds[k] = sumDyXc[k] / math.Sqrt(p[2][k]+eps)
	}
	if outs[0] != nil {
		storeF64(outs[0], ds)
	}
	if outs[1] != nil {
		storeF64(outs[1], sumDy)
	}
	return nil
}

func init() {
	for _, op := range []string{"DepthwiseConv2dNativeBackpropInput", "DepthwiseConv2dNativeBackpropFilter"} {
		filter := op == "DepthwiseConv2dNativeBackpropFilter"
		host := []string{"input_sizes"}
		if filter {
			host = []string{"filter_sizes"}
		}
		reg(op, floatTypes, host, func(n *graph.Node) (kernels.Kernel, error) {
			a, err := ParseDepthwiseAttrs(n)
			if err != nil {
				return nil, err
			}
			if a.NCHW {
				return nil, nodeErr(n, status.Unimplemented, "Depthwise convolution on CPU is only supported for NHWC format")
			}
			return kernels.KernelFunc(func(ctx *kernels.Context) error { return depthwiseBackprop(ctx, a, filter) }), nil
		})
	}
}

// DepthwiseBackpropArgs checks DepthwiseConv2dNativeBackpropInput's
// (filter false: inputs input_sizes, filter, out_backprop) or
// ...BackpropFilter's (input, filter_sizes, out_backprop) arguments as TF
// does and returns the forward convolution (p.C input channels), the depth
// multiplier and the gradient's shape; the GPU kernels share it.
func DepthwiseBackpropArgs(ctx *kernels.Context, a Conv2DAttrs, filter bool) (p ConvParams, mult int, outShape tensor.Shape, err error) {
	sizesAt := 0
	if filter {
		sizesAt = 1
	}
	sizes, err := hostInts(ctx, sizesAt, "sizes")
	if err != nil {
		return p, 0, nil, err
	}
	if len(sizes) != 4 {
		return p, 0, nil, ctx.Errorf(status.InvalidArgument, "%s must have 4 values, got %d", []string{"input_sizes", "filter_sizes"}[sizesAt], len(sizes))
	}
	var xShape, fShape tensor.Shape
	if filter {
		xShape, fShape = ctx.Input(0).Shape, tensor.Shape(sizes)
	} else {
		xShape, fShape = tensor.Shape(sizes), ctx.Input(1).Shape
	}
	dyT := ctx.Input(2)
	if len(xShape) != 4 || len(fShape) != 4 || len(dyT.Shape) != 4 {
		return p, 0, nil, ctx.Errorf(status.InvalidArgument, "input, filter and out_backprop must be 4-dimensional, got %v, %v and %v", xShape, fShape, dyT.Shape)
	}
	if err := xShape.Validate(); err != nil {
		return p, 0, nil, ctx.Errorf(status.InvalidArgument, "input_sizes: %v", err)
	}
	if err := fShape.Validate(); err != nil {
		return p, 0, nil, ctx.Errorf(status.InvalidArgument, "filter_sizes: %v", err)
	}
	c, m := xShape[3], fShape[3]
	if fShape[2] != c {
		return p, 0, nil, ctx.Errorf(status.InvalidArgument, "input and filter must have the same depth: %d vs %d", c, fShape[2])
	}
	p, err = a.Params(xShape, tensor.Shape{fShape[0], fShape[1], 1, c * m})
	if err != nil {
		return p, 0, nil, ctx.Errorf(status.CodeOf(err), "%v", err)
	}
	if want := (tensor.Shape{xShape[0], int64(p.OutH), int64(p.OutW), c * m}); !dyT.Shape.Equal(want) {
		return p, 0, nil, ctx.Errorf(status.InvalidArgument, "out_backprop has shape %v, expected %v", dyT.Shape, want)
	}
	if filter {
		return p, int(m), fShape, nil
	}
	return p, int(m), xShape, nil
}

// depthwiseBackprop is DepthwiseConv2dNativeBackpropInput or
// ...BackpropFilter (DepthwiseBackpropArgs): output channel c*M+m of the
// forward op read input channel c through filter[..., c, m].
func depthwiseBackprop(ctx *kernels.Context, a Conv2DAttrs, filter bool) error {
	p, mult, outShape, err := DepthwiseBackpropArgs(ctx, a, filter)
	if err != nil {
		return err
	}
	dyT, other := ctx.Input(2), ctx.Input(1)
	if filter {
		other = ctx.Input(0)
	}
	o, err := ctx.Allocate(0, outShape)
	if err != nil {
		return err
	}
	dy, err := loadF64(ctx, dyT)
	if err != nil {
		return err
	}
	ov, err := loadF64(ctx, other) // the filter (input gradient) or the input (filter gradient)
	if err != nil {
		return err
	}
	acc, err := kernels.Scratch[float64](ctx, outShape.NumElements())
	if err != nil {
		return err
	}
	C, M := p.C, mult
	for n := 0; n < p.N; n++ {
		for i := 0; i < p.OutH; i++ {
			for j := 0; j < p.OutW; j++ {
				dr := dy[((n*p.OutH+i)*p.OutW+j)*C*M:][:C*M]
				for ka := 0; ka < p.KH; ka++ {
					y := i*p.StrideH - p.PadTop + ka
					if y < 0 || y >= p.H {
						continue
					}
					for kb := 0; kb < p.KW; kb++ {
						xx := j*p.StrideW - p.PadLeft + kb
						if xx < 0 || xx >= p.W {
							continue
						}
						xo, fo := ((n*p.H+y)*p.W+xx)*C, (ka*p.KW+kb)*C*M
						for ch := 0; ch < C; ch++ {
							for m := 0; m < M; m++ {
								g := dr[ch*M+m]
								if filter {
									acc[fo+ch*M+m] += ov[xo+ch] * g
								} else {
									acc[xo+ch] += ov[fo+ch*M+m] * g
								}
							}
						}
					}
				}
			}
		}
	}
	storeF64(o, acc)
	return nil
}
