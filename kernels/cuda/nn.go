package cuda

import (
	"math"

	cu "mstream/device/cuda"
	"mstream/graph"
	"mstream/kernels"
	"mstream/kernels/cpu"
	"mstream/status"
	"mstream/tensor"
)

// NN ops (src/nn.cu), NHWC as the CPU kernels: Conv2D as im2col plus a
// cuBLAS GEMM for float and double (a 1x1 stride-1 unpadded convolution
// is the GEMM alone), a direct kernel for grouped convolutions, half,
// bfloat16 and int32, and DepthwiseConv2dNative (the grouped convolution
// with one group per input channel); MaxPool, MaxPoolV2, AvgPool;
// FusedBatchNorm, V2 and V3 (inference and training). Attribute and shape
// validation is the CPU kernels' (kernels/cpu's exported Conv2D and
// pooling parsers and geometry), so errors match.
//
// im2col needs scratch memory: it comes from Context.Alloc, which the
// executor frees after the kernel in stream order (an allocation that is
// not an output), at most 256 MiB at a time (images are processed in
// chunks).

const im2colLimit = 256 << 20

func init() {
	reg("Conv2D", "T", []tensor.DType{tensor.Float, tensor.Double, tensor.Half, tensor.Bfloat16, tensor.Int32}, nil, func(n *graph.Node) (kernels.Kernel, error) {
		a, err := cpu.ParseConv2DAttrs(n)
		if err != nil {
			return nil, err
		}
		return fn(func(k kctx) error { return conv2DGPU(k, a) })(n)
	})
	reg("DepthwiseConv2dNative", "T", gpuFloats, nil, func(n *graph.Node) (kernels.Kernel, error) {
		a, err := cpu.ParseDepthwiseAttrs(n)
		if err != nil {
			return nil, err
		}
		return fn(func(k kctx) error { return depthwiseGPU(k, a) })(n)
	})
	reg("Conv2DBackpropInput", "T", []tensor.DType{tensor.Float, tensor.Double, tensor.Half, tensor.Bfloat16, tensor.Int32}, []string{"input_sizes"}, func(n *graph.Node) (kernels.Kernel, error) {
		a, err := cpu.ParseConv2DBackpropInputAttrs(n)
		if err != nil {
			return nil, err
		}
		return fn(func(k kctx) error { return convBackInputGPU(k, a) })(n)
	})
	reg("LRN", "T", []tensor.DType{tensor.Float, tensor.Half, tensor.Bfloat16}, nil, func(n *graph.Node) (kernels.Kernel, error) {
		l, err := cpu.ParseLRNAttrs(n)
		if err != nil {
			return nil, err
		}
		return fn(func(k kctx) error { return lrnGPU(k, l) })(n)
	})
	maxTypes := []tensor.DType{tensor.Float, tensor.Double, tensor.Half, tensor.Bfloat16, tensor.Int32, tensor.Int64,
		tensor.Uint8, tensor.Int16, tensor.Int8, tensor.Uint16}
	reg("MaxPool", "T", maxTypes, nil, func(n *graph.Node) (kernels.Kernel, error) {
		pa, err := cpu.ParsePoolAttrs(n, "MaxPoolingOp", true)
		if err != nil {
			return nil, err
		}
		return fn(func(k kctx) error { return poolGPU(k, pa, true) })(n)
	})
	reg("MaxPoolV2", "T", maxTypes, []string{"ksize", "strides"}, func(n *graph.Node) (kernels.Kernel, error) {
		padding, err := cpu.ParseMaxPoolV2Attrs(n)
		if err != nil {
			return nil, err
		}
		return fn(func(k kctx) error {
			pa, err := cpu.MaxPoolV2Args(k.Context, padding)
			if err != nil {
				return err
			}
			return poolGPU(k, pa, true)
		})(n)
	})
	reg("AvgPool", "T", gpuFloats, nil, func(n *graph.Node) (kernels.Kernel, error) {
		pa, err := cpu.ParsePoolAttrs(n, "AvgPoolingOp", false)
		if err != nil {
			return nil, err
		}
		return fn(func(k kctx) error { return poolGPU(k, pa, false) })(n)
	})
	for _, op := range []string{"FusedBatchNorm", "FusedBatchNormV2", "FusedBatchNormV3"} {
		types := []tensor.DType{tensor.Float, tensor.Half, tensor.Bfloat16}
		if op == "FusedBatchNorm" {
			types = []tensor.DType{tensor.Float}
		}
		reg(op, "T", types, nil, func(n *graph.Node) (kernels.Kernel, error) {
			bn, err := cpu.ParseBatchNormAttrs(n)
			if err != nil {
				return nil, err
			}
			return fn(func(k kctx) error { return batchNormGPU(k, bn) })(n)
		})
	}
}

func strAttr(n *graph.Node, name, def string) string {
	if a := n.Attrs[name]; a != nil {
		return string(a.GetS())
	}
	return def
}

// gemm runs a cuBLAS GEMM on the kernel's stream (nothing in a dry run).
func (k kctx) gemm(g cu.GemmArgs) error {
	if dryRun != nil {
		if dryRun.gemm != nil {
			dryRun.gemm(g)
		}
		return nil
	}
	return k.wrap(k.s.Gemm(g))
}

// gemmEx is gemm for the operand types of cublasGemmEx (gemmex.go).
func (k kctx) gemmEx(g cu.GemmArgs, t cu.GemmType) error {
	if dryRun != nil {
		if dryRun.gemmEx != nil {
			dryRun.gemmEx(g, t)
		}
		return nil
	}
	return k.wrap(k.s.GemmEx(g, t))
}

// convMeta packs the Conv struct of nn.cu.
func convMeta(p cpu.ConvParams) []int64 {
	return []int64{int64(p.N), int64(p.H), int64(p.W), int64(p.C), int64(p.KH), int64(p.KW), int64(p.O), int64(p.Groups),
		int64(p.StrideH), int64(p.StrideW), int64(p.DilH), int64(p.DilW), int64(p.PadTop), int64(p.PadLeft),
		int64(p.OutH), int64(p.OutW), 0, 0, 0, 0}
}

func conv2DGPU(k kctx, a cpu.Conv2DAttrs) error {
	in, f := k.Input(0), k.Input(1)
	p, oshape, err := cpu.Conv2DArgs(k.Context, a)
	if err != nil {
		return err
	}
	o, err := k.Allocate(0, oshape)
	if err != nil {
		return err
	}
	// The CPU kernel's order: nothing to compute, an empty input (all
	// padding), then its restrictions.
	if o.NumElements() == 0 {
		return nil
	}
	if in.NumElements() == 0 {
		return k.memset(ptr(o), 0, len(o.Buf))
	}
	if err := cpu.Conv2DLimits(k.Context, a, p); err != nil {
		return err
	}
	if p.Groups == 1 && (in.DType == tensor.Float || in.DType == tensor.Double) {
		return convGemm(k, p, in, f, o)
	}
	return convDirect(k, p, in, f, o)
}

func convDirect(k kctx, p cpu.ConvParams, in, f, o *tensor.Tensor) error {
	n := o.NumElements()
	var args cu.Args
	args.Ptr(ptr(o)).Ptr(ptr(in)).Ptr(ptr(f)).I64(n).I64s(convMeta(p)...)
	return k.launchN(nns, "convd_"+suffix(in.DType), n, &args)
}

// convGemm is out[M, O] = col[M, K] x filter[K, O], M = images x OH x OW,
// K = KH x KW x C, with col from im2col (or the input itself for a 1x1
// stride-1 unpadded convolution).
func convGemm(k kctx, p cpu.ConvParams, in, f, o *tensor.Tensor) error {
	kd := int64(p.KH * p.KW * p.C)
	es := int64(in.DType.Size())
	g := cu.GemmArgs{Double: in.DType == tensor.Double, TF32: allowTF32.Load(), N: p.O, B: ptr(f)}
	if kd > math.MaxInt32 || int64(p.O) > math.MaxInt32 {
		return k.Errorf(status.Unimplemented, "convolution GEMM of K=%d, N=%d (more than 2^31-1)", kd, p.O)
	}
	per := int64(p.OutH * p.OutW) // rows per image
	if p.Pointwise() {
		if m := int64(p.N) * per; m <= math.MaxInt32 {
			g.M, g.K, g.A, g.C = int(m), int(kd), ptr(in), ptr(o)
			return k.gemm(g)
		}
	}
	nb := max(1, min(int64(p.N), im2colLimit/max(1, per*kd*es), math.MaxInt32/max(1, per)))
	col, err := k.Alloc(in.DType, tensor.Shape{nb * per, kd})
	if err != nil {
		return k.Errorf(status.CodeOf(err), "im2col scratch of %d x %d: %v", nb*per, kd, err)
	}
	meta := convMeta(p)
	for n0 := int64(0); n0 < int64(p.N); n0 += nb {
		cnt := min(nb, int64(p.N)-n0)
		total := cnt * per * kd
		var args cu.Args
		args.Ptr(ptr(col)).Ptr(ptr(in)).I64(n0).I64(total).I64s(meta...)
		if err := k.launchN(nns, "im2col_"+suffix(in.DType), total, &args); err != nil {
			return err
		}
		g.M, g.K, g.A, g.C = int(cnt*per), int(kd), ptr(col), ptr(o)+uint64(n0*per*int64(p.O)*es)
		if err := k.gemm(g); err != nil {
			return err
		}
	}
	return nil
}

func depthwiseGPU(k kctx, a cpu.Conv2DAttrs) error {
	in, f := k.Input(0), k.Input(1)
	p, _, out, err := cpu.DepthwiseArgs(k.Context, a)
	if err != nil {
		return err
	}
	o, err := k.Allocate(0, out)
	if err != nil {
		return err
	}
	if o.NumElements() == 0 {
		return nil
	}
	return convDirect(k, p, in, f, o)
}

// poolGPU is MaxPool, MaxPoolV2 and AvgPool over the geometry the CPU's
// checks (cpu.PoolParams) return, one output element per thread.
func poolGPU(k kctx, pa cpu.PoolAttrs, isMax bool) error {
	in := k.Input(0)
	g, err := cpu.PoolParams(k.Context, pa, in.Shape, isMax)
	if err != nil {
		return err
	}
	o, err := k.Allocate(0, tensor.Shape{int64(g.N), int64(g.OH), int64(g.OW), int64(g.OD)})
	if err != nil {
		return err
	}
	n := o.NumElements()
	if n == 0 {
		return nil
	}
	meta := []int64{int64(g.N), int64(g.H), int64(g.W), int64(g.C), int64(g.KH), int64(g.KW), int64(g.OD), 1,
		int64(g.SH), int64(g.SW), 1, 1, int64(g.PT), int64(g.PL), int64(g.OH), int64(g.OW), 0, 0, 0, 0}
	var args cu.Args
	args.Ptr(ptr(o)).Ptr(ptr(in)).I64(n).I64s(meta...)
	if isMax {
		args.I64(int64(g.KD))
		return k.launchN(nns, "maxpool_"+suffix(in.DType), n, &args)
	}
	return k.launchN(nns, "avgpool_"+suffix(in.DType), n, &args)
}

func batchNormGPU(k kctx, bn cpu.BatchNormAttrs) error {
	x := k.Input(0)
	ax, c, err := cpu.BatchNormArgs(k.Context, bn)
	if err != nil {
		return err
	}
	y, err := k.Allocate(0, x.Shape)
	if err != nil {
		return err
	}
	stats := make([]*tensor.Tensor, 4)
	for i := range stats {
		if stats[i], err = k.Allocate(i+1, tensor.Shape{k.Input(1).Shape[0]}); err != nil {
			return err
		}
	}
	fill := func(t *tensor.Tensor, v float32) error {
		if t.NumElements() == 0 {
			return nil
		}
		var args cu.Args
		args.Ptr(ptr(t)).F32(v).I64(t.NumElements())
		return k.launchN(nns, "fill_f32v", t.NumElements(), &args)
	}
	if len(k.Node.OutTypes) == 6 {
		r3, err := k.Allocate(5, tensor.Shape{})
		if err != nil {
			return err
		}
		if err := fill(r3, 0); err != nil {
			return err
		}
	}
	if x.NumElements() == 0 {
		// NaN statistics for an empty batch, as TF reports.
		for _, s := range stats {
			if err := fill(s, float32(math.NaN())); err != nil {
				return err
			}
		}
		return nil
	}
	outer, inner := int64(1), int64(1)
	for _, d := range x.Shape[:ax] {
		outer *= d
	}
	for _, d := range x.Shape[ax+1:] {
		inner *= d
	}
	suf := suffix(x.DType)
	m, v := k.Input(3), k.Input(4)
	if bn.Training {
		if c > math.MaxInt32 {
			return k.Errorf(status.Unimplemented, "batch norm over %d channels", c)
		}
		var args cu.Args
		args.Ptr(ptr(x)).I64(outer).I64(c).I64(inner).Ptr(ptr(m)).Ptr(ptr(v)).F64(bn.Factor).
			Ptr(ptr(stats[0])).Ptr(ptr(stats[1])).Ptr(ptr(stats[2])).Ptr(ptr(stats[3]))
		if err := k.launch(nns, "bn_stats_"+suf, int(c), threads, 0, &args); err != nil {
			return err
		}
		m, v = stats[2], stats[3]
	} else {
		// The reserve spaces and batch statistics get the statistics used,
		// as the CPU kernel writes them.
		bytes := uint64(c * 4)
		for _, s := range stats {
			src := k.Input(3)
			if s == stats[1] || s == stats[3] {
				src = k.Input(4)
			}
			if err := k.d2d(ptr(s), ptr(src), bytes); err != nil {
				return err
			}
		}
	}
	coef, err := k.Alloc(tensor.Float, tensor.Shape{2 * c})
	if err != nil {
		return k.Errorf(status.CodeOf(err), "batch norm coefficients: %v", err)
	}
	mul, add := ptr(coef), ptr(coef)+uint64(c*4)
	var ca cu.Args
	ca.Ptr(mul).Ptr(add).Ptr(ptr(k.Input(1))).Ptr(ptr(k.Input(2))).Ptr(ptr(m)).Ptr(ptr(v)).I64(c).F64(bn.Eps)
	if err := k.launchN(nns, "bn_coef", c, &ca); err != nil {
		return err
	}
	n := x.NumElements()
	var args cu.Args
	args.Ptr(ptr(y)).Ptr(ptr(x)).Ptr(mul).Ptr(add).I64(n).I64(c).I64(inner)
	return k.launchN(nns, "bn_apply_"+suf, n, &args)
}

// convBackInputGPU is Conv2DBackpropInput (validated by the CPU's checks),
// gathered per input-gradient element by convbi.
func convBackInputGPU(k kctx, a cpu.Conv2DAttrs) error {
	f, dy := k.Input(1), k.Input(2)
	inShape, p, err := cpu.Conv2DBackpropInputArgs(k.Context, a)
	if err != nil {
		return err
	}
	o, err := k.Allocate(0, inShape)
	if err != nil {
		return err
	}
	n := o.NumElements()
	if n == 0 {
		return nil
	}
	if dy.NumElements() == 0 {
		return k.memset(ptr(o), 0, len(o.Buf))
	}
	var args cu.Args
	args.Ptr(ptr(o)).Ptr(ptr(dy)).Ptr(ptr(f)).I64(n).I64s(convMeta(p)...)
	return k.launchN(nns, "convbi_"+suffix(o.DType), n, &args)
}

func lrnGPU(k kctx, l cpu.LRNAttrs) error {
	x := k.Input(0)
	if err := cpu.LRNArgs(k.Context); err != nil {
		return err
	}
	o, err := k.Allocate(0, x.Shape)
	if err != nil {
		return err
	}
	n := o.NumElements()
	if n == 0 {
		return nil
	}
	var args cu.Args
	args.Ptr(ptr(o)).Ptr(ptr(x)).I64(n).I64(x.Shape[3]).I64(l.Radius).F64(float64(l.Bias)).F64(float64(l.Alpha)).F64(float64(l.Beta))
	return k.launchN(nns, "lrn_"+suffix(x.DType), n, &args)
}
