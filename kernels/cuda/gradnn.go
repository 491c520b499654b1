package cuda

import (
	_ "embed"
	"fmt"

	cu "mstream/device/cuda"
	"mstream/graph"
	"mstream/kernels"
	"mstream/kernels/cpu"
	"mstream/status"
	"mstream/tensor"
)

// The backward kernels of the NN ops on the GPU (src/gradnn.cu), float and
// double: SoftsignGrad, BiasAddGrad, L2Loss, SoftmaxCrossEntropyWithLogits,
// MaxPoolGrad, AvgPoolGrad and Conv2DBackpropFilter, and FusedBatchNormGrad
// (V2, V3) in float, and StridedSliceGrad (any dtype of 1, 2, 4 or 8 bytes), each checking its arguments through the CPU
// kernel's exported checks (kernels/cpu), so that errors match, and
// summing in double in the CPU kernel's order.

//go:embed src/gradnn.cu
var gradnnSrc string

var gradnn = &cu.Program{Name: "gradnn.cu", Source: commonSrc + typesSrc + gradnnSrc}

var gradnnTypes = []tensor.DType{tensor.Float, tensor.Double}

func init() {
	reg("SoftsignGrad", "T", gradnnTypes, nil, fn(softsignGradGPU))
	reg("BiasAddGrad", "T", gradnnTypes, nil, func(n *graph.Node) (kernels.Kernel, error) {
		nchw := string(n.Attrs["data_format"].GetS()) == "NCHW"
		return fn(func(k kctx) error { return biasAddGradGPU(k, nchw) })(n)
	})
	reg("L2Loss", "T", gradnnTypes, nil, fn(l2LossGPU))
	reg("SoftmaxCrossEntropyWithLogits", "T", gradnnTypes, nil, fn(softmaxXentGPU))
	reg("MaxPoolGrad", "T", gradnnTypes, nil, func(n *graph.Node) (kernels.Kernel, error) {
		pa, err := cpu.ParsePoolAttrs(n, "MaxPoolingOp", true)
		if err != nil {
			return nil, err
		}
		return fn(func(k kctx) error { return maxPoolGradGPU(k, pa) })(n)
	})
	reg("AvgPoolGrad", "T", gradnnTypes, []string{"orig_input_shape"}, func(n *graph.Node) (kernels.Kernel, error) {
		pa, err := cpu.ParsePoolAttrs(n, "AvgPoolingOp", false)
		if err != nil {
			return nil, err
		}
		return fn(func(k kctx) error { return avgPoolGradGPU(k, pa) })(n)
	})
	for _, op := range []string{"FusedBatchNormGrad", "FusedBatchNormGradV2", "FusedBatchNormGradV3"} {
		reg(op, "T", []tensor.DType{tensor.Float}, nil, func(n *graph.Node) (kernels.Kernel, error) {
			eps := 1e-4
			if a := n.Attrs["epsilon"]; a != nil {
				eps = float64(a.GetF())
			}
			training := n.Attrs["is_training"] == nil || n.Attrs["is_training"].GetB()
			var nchw bool
			switch df := string(n.Attrs["data_format"].GetS()); df {
			case "", "NHWC":
			case "NCHW":
				nchw = true
			default:
				return nil, status.Errorf(status.InvalidArgument, "Invalid data format %q (node '%s')", df, n.Name)
			}
			if nchw && !training {
				return nil, status.Errorf(status.InvalidArgument, "The implementation of FusedBatchNormGrad with is_training=False only support NHWC tensor format for now. (node '%s')", n.Name)
			}
			return fn(func(k kctx) error { return batchNormGradGPU(k, eps, training, nchw) })(n)
		})
	}
	var sliceTypes []tensor.DType
	for _, dt := range fixedTypes {
		if sz := dt.Size(); sz == 1 || sz == 2 || sz == 4 || sz == 8 {
			sliceTypes = append(sliceTypes, dt)
		}
	}
	reg("StridedSliceGrad", "T", sliceTypes, []string{"shape", "begin", "end", "strides"}, func(n *graph.Node) (kernels.Kernel, error) {
		m := cpu.ParseStridedSliceMasks(n)
		return fn(func(k kctx) error { return stridedSliceGradGPU(k, m) })(n)
	})
	reg("Conv2DBackpropFilter", "T", gradnnTypes, []string{"filter_sizes"}, func(n *graph.Node) (kernels.Kernel, error) {
		a, err := cpu.ParseConv2DAttrs(n)
		if err != nil {
			return nil, err
		}
		// The CPU kernel's limits, so that both devices refuse alike.
		if a.NCHW {
			return nil, status.Errorf(status.InvalidArgument, "Conv2DBackpropFilterOp only supports NHWC data format on the CPU. (node '%s')", n.Name)
		}
		if a.Dilations[1] != 1 || a.Dilations[2] != 1 {
			return nil, status.Errorf(status.InvalidArgument, "Current CPU implementations do not yet support dilation rates larger than 1. (node '%s')", n.Name)
		}
		return fn(func(k kctx) error { return convBackFilterGPU(k, a) })(n)
	})
}

func softsignGradGPU(k kctx) error {
	dy, x := k.Input(0), k.Input(1)
	if !dy.Shape.Equal(x.Shape) {
		return k.Errorf(status.InvalidArgument, "g and x must be the same shape, got %v and %v", dy.Shape, x.Shape)
	}
	o, err := k.Allocate(0, x.Shape)
	if err != nil {
		return err
	}
	var args cu.Args
	args.Ptr(ptr(o)).Ptr(ptr(dy)).Ptr(ptr(x)).I64(o.NumElements())
	return k.launchN(gradnn, "softsign_grad_"+suffix(x.DType), o.NumElements(), &args)
}

func biasAddGradGPU(k kctx, nchw bool) error {
	g := k.Input(0)
	outer, c, inner, err := cpu.BiasAddGradArgs(k.Context, g, nchw)
	if err != nil {
		return err
	}
	o, err := k.Allocate(0, tensor.Shape{c})
	if err != nil {
		return err
	}
	if c == 0 {
		return nil
	}
	var args cu.Args
	args.Ptr(ptr(o)).Ptr(ptr(g)).I64(outer).I64(c).I64(inner)
	return k.launchN(gradnn, "bias_add_grad_"+suffix(g.DType), c, &args)
}

func l2LossGPU(k kctx) error {
	x := k.Input(0)
	o, err := k.Allocate(0, tensor.Shape{})
	if err != nil {
		return err
	}
	var args cu.Args
	args.Ptr(ptr(o)).Ptr(ptr(x)).I64(x.NumElements())
	return k.launch(gradnn, "l2_loss_"+suffix(x.DType), 1, threads, 0, &args)
}

func poolMeta(g cpu.PoolGeom) []int64 {
	return []int64{int64(g.N), int64(g.H), int64(g.W), int64(g.C), int64(g.KH), int64(g.KW), int64(g.SH), int64(g.SW),
		int64(g.PT), int64(g.PL), int64(g.OH), int64(g.OW)}
}

func maxPoolGradGPU(k kctx, pa cpu.PoolAttrs) error {
	x, y, dy := k.Input(0), k.Input(1), k.Input(2)
	g, err := cpu.PoolParams(k.Context, pa, x.Shape, true)
	if err != nil {
		return err
	}
	if g.KD != 1 {
		return k.Errorf(status.Unimplemented, "MaxPoolGrad across depth is not supported on the CPU")
	}
	want := tensor.Shape{int64(g.N), int64(g.OH), int64(g.OW), int64(g.C)}
	if !y.Shape.Equal(want) || !dy.Shape.Equal(want) {
		return k.Errorf(status.InvalidArgument, "Expected orig_output and grad shapes %v, got %v and %v", want, y.Shape, dy.Shape)
	}
	o, err := k.Allocate(0, x.Shape)
	if err != nil {
		return err
	}
	n := o.NumElements()
	var args cu.Args
	args.Ptr(ptr(o)).Ptr(ptr(x)).Ptr(ptr(dy)).I64(n).I64s(poolMeta(g)...)
	return k.launchN(gradnn, "max_pool_grad_"+suffix(x.DType), n, &args)
}

func avgPoolGradGPU(k kctx, pa cpu.PoolAttrs) error {
	st, dy := k.Input(0), k.Input(1)
	if len(st.Shape) != 1 || st.NumElements() != 4 {
		return k.Errorf(status.InvalidArgument, "orig_input_shape must be 1-dimensional and 4 elements")
	}
	if len(dy.Shape) != 4 {
		return k.Errorf(status.InvalidArgument, "out_backprop must be 4-dimensional")
	}
	dims, err := st.Int64s()
	if err != nil {
		return k.Errorf(status.InvalidArgument, "orig_input_shape: %v", err)
	}
	in := tensor.Shape(dims)
	if err := in.Validate(); err != nil {
		return k.Errorf(status.InvalidArgument, "orig_input_shape: %v", err)
	}
	g, err := cpu.PoolParams(k.Context, pa, in, false)
	if err != nil {
		return err
	}
	want := tensor.Shape{int64(g.N), int64(g.OH), int64(g.OW), int64(g.C)}
	if !dy.Shape.Equal(want) {
		return k.Errorf(status.InvalidArgument, "out_backprop has shape %v, expected %v", dy.Shape, want)
	}
	o, err := k.Allocate(0, in)
	if err != nil {
		return err
	}
	n := o.NumElements()
	var args cu.Args
	args.Ptr(ptr(o)).Ptr(ptr(dy)).I64(n).I64s(poolMeta(g)...)
	return k.launchN(gradnn, "avg_pool_grad_"+suffix(dy.DType), n, &args)
}

func convBackFilterGPU(k kctx, a cpu.Conv2DAttrs) error {
	fShape, p, err := cpu.Conv2DBackpropFilterArgs(k.Context, a)
	if err != nil {
		return err
	}
	o, err := k.Allocate(0, fShape)
	if err != nil {
		return err
	}
	n := o.NumElements()
	meta := []int64{int64(p.N), int64(p.H), int64(p.W), int64(p.C), int64(p.KH), int64(p.KW), int64(p.O),
		int64(p.StrideH), int64(p.StrideW), int64(p.DilH), int64(p.DilW), int64(p.PadTop), int64(p.PadLeft),
		int64(p.OutH), int64(p.OutW)}
	var args cu.Args
	args.Ptr(ptr(o)).Ptr(ptr(k.Input(0))).Ptr(ptr(k.Input(2))).I64(n).I64s(meta...)
	return k.launchN(gradnn, "conv_backprop_filter_"+suffix(o.DType), n, &args)
}

// bcast2 broadcasts a and b as the CPU's SoftmaxCrossEntropyWithLogits
// does: numpy rules, to a rank-2 result; it returns the result and each
// side's element strides (0 along a dim it repeats).
func bcast2(a, b tensor.Shape) (out [2]int64, sa, sb [2]int64, compatible, rank2 bool) {
	r := max(len(a), len(b))
	dim := func(s tensor.Shape, i int) int64 { // i counts from the end
		if i < len(s) {
			return s[len(s)-1-i]
		}
		return 1
	}
	for i := 0; i < r; i++ {
		da, db := dim(a, i), dim(b, i)
		if da != db && da != 1 && db != 1 {
			return out, sa, sb, false, false
		}
	}
	if r != 2 {
		return out, sa, sb, true, false
	}
	pa, pb := int64(1), int64(1)
	for i := 0; i < 2; i++ {
		da, db := dim(a, i), dim(b, i)
		out[1-i] = max(da, db)
		if da != 1 || out[1-i] == 1 {
			sa[1-i] = pa
		}
		if db != 1 || out[1-i] == 1 {
			sb[1-i] = pb
		}
		pa *= da
		pb *= db
	}
	return out, sa, sb, true, true
}

func softmaxXentGPU(k kctx) error {
	x, l := k.Input(0), k.Input(1)
	out, sx, sl, compatible, rank2 := bcast2(x.Shape, l.Shape)
	if !compatible {
		return k.Errorf(status.InvalidArgument, "logits and labels must be broadcastable: logits_size=%v labels_size=%v", x.Shape, l.Shape)
	}
	if !rank2 {
		return k.Errorf(status.InvalidArgument, "logits and labels must be either 2-dimensional, or broadcasted to be 2-dimensional")
	}
	loss, err := k.Allocate(0, tensor.Shape{out[0]})
	if err != nil {
		return err
	}
	back, err := k.Allocate(1, tensor.Shape{out[0], out[1]})
	if err != nil {
		return err
	}
	if out[0] == 0 {
		return nil
	}
	var args cu.Args
	args.Ptr(ptr(loss)).Ptr(ptr(back)).Ptr(ptr(x)).Ptr(ptr(l)).I64(out[0]).I64(out[1]).I64(sx[0]).I64(sx[1]).I64(sl[0]).I64(sl[1])
	return k.launchN(gradnn, "softmax_xent_"+suffix(x.DType), out[0], &args)
}

// batchNormGradGPU is the CPU's batchNormGrad (its checks and formulas) in
// two kernels: the per-channel sums, then x's gradient.
func batchNormGradGPU(k kctx, eps float64, training, nchw bool) error {
	dy, x := k.Input(0), k.Input(1)
	if len(dy.Shape) != 4 || len(x.Shape) != 4 {
		return k.Errorf(status.InvalidArgument, "input must be 4-dimensional, got y_backprop %v and x %v", dy.Shape, x.Shape)
	}
	if !dy.Shape.Equal(x.Shape) {
		return k.Errorf(status.InvalidArgument, "x and y_backprop must have same shape, but x has shape %v and y_backprop has shape %v", x.Shape, dy.Shape)
	}
	ax := 3
	if nchw {
		ax = 1
	}
	c := x.Shape[ax]
	for i, what := range []string{"scale", "reserve_space_1", "reserve_space_2"} {
		if t := k.Input(2 + i); len(t.Shape) != 1 || t.Shape[0] != c {
			return k.Errorf(status.InvalidArgument, "%s must be 1-dimensional with %d elements, got %v", what, c, t.Shape)
		}
	}
	outer, inner := int64(1), int64(1)
	for _, d := range x.Shape[:ax] {
		outer *= d
	}
	for _, d := range x.Shape[ax+1:] {
		inner *= d
	}
	dx, err := k.Allocate(0, x.Shape)
	if err != nil {
		return err
	}
	var outs [4]*tensor.Tensor
	for i := 1; i < len(k.Outputs) && i <= 4; i++ {
		shape := tensor.Shape{c}
		if i >= 3 {
			shape = tensor.Shape{0} // reserve_space_4 and _5: unused, as on the CPU
		}
		if outs[i-1], err = k.Allocate(i, shape); err != nil {
			return err
		}
	}
	if c == 0 {
		return nil
	}
	sums, err := k.Alloc(tensor.Double, tensor.Shape{2 * c})
	if err != nil {
		return err
	}
	opt := func(t *tensor.Tensor) uint64 {
		if t == nil {
			return 0
		}
		return ptr(t)
	}
	scale, mean, variance := k.Input(2), k.Input(3), k.Input(4)
	var a1 cu.Args
	a1.Ptr(ptr(sums)).Ptr(opt(outs[0])).Ptr(opt(outs[1])).Ptr(ptr(dy)).Ptr(ptr(x)).Ptr(ptr(mean)).Ptr(ptr(variance)).
		I64(outer).I64(c).I64(inner).F64(eps)
	if err := k.launchN(gradnn, "bn_grad_sums_f32", c, &a1); err != nil {
		return err
	}
	n := x.NumElements()
	tr := int32(0)
	if training {
		tr = 1
	}
	var a2 cu.Args
	a2.Ptr(ptr(dx)).Ptr(ptr(sums)).Ptr(ptr(dy)).Ptr(ptr(x)).Ptr(ptr(scale)).Ptr(ptr(mean)).Ptr(ptr(variance)).
		I64(n).I64(c).I64(inner).F64(eps).I32(tr)
	return k.launchN(gradnn, "bn_grad_dx_f32", n, &a2)
}

// stridedSliceGradGPU zeroes dx and scatters dy into the slice.
func stridedSliceGradGPU(k kctx, m cpu.StridedSliceMasks) error {
	shape, spec, err := cpu.StridedSliceGradArgs(k.Context, m)
	if err != nil {
		return err
	}
	dy := k.Input(4)
	o, err := k.Allocate(0, shape)
	if err != nil {
		return err
	}
	if o.NumElements() == 0 {
		return nil
	}
	if err := k.memset(ptr(o), 0, int(o.NumElements())*o.DType.Size()); err != nil {
		return err
	}
	n := dy.NumElements()
	if n == 0 {
		return nil
	}
	r := len(spec.Size)
	if r > 8 {
		return k.Errorf(status.Unimplemented, "StridedSliceGrad over %d dims (at most 8 on the GPU)", r)
	}
	meta := make([]int64, 1+4*8)
	meta[0] = int64(r)
	st := rowStrides(shape)
	for d := 0; d < r; d++ {
		meta[1+d], meta[9+d], meta[17+d], meta[25+d] = spec.Size[d], spec.Begin[d], spec.Stride[d], st[d]
	}
	var args cu.Args
	args.Ptr(ptr(o)).Ptr(ptr(dy)).I64(n).I64s(meta...)
	return k.launchN(gradnn, fmt.Sprintf("slice_grad_%d", o.DType.Size()), n, &args)
}
