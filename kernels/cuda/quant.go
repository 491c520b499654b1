package cuda

import (
	bin "encoding/binary"
	"math"

	cu "mstream/device/cuda"
	"mstream/graph"
	"mstream/kernels"
	"mstream/kernels/cpu"
	"mstream/status"
	"mstream/tensor"
)

// FakeQuantWithMinMaxArgs/Vars/VarsPerChannel and
// BatchNormWithGlobalNormalization on the GPU. The host checks the node
// and nudges the grids with the CPU kernel's code (cpu.FakeQuantArgs;
// min and max stay in host memory, as TF's GPU kernels have them), and
// nn.cu's fake_quant kernels round every element as the CPU does, bit for
// bit. A per-channel node uploads its grids (6 floats per channel) before
// the kernel. BatchNormWithGlobalNormalization (float and half, TF's GPU
// dtypes) is FusedBatchNorm's inference arithmetic: bng_coef per channel
// (the CPU kernel's float32 mul and add), then bn_apply.

func init() {
	host := []string{"min", "max"}
	fq := func(n *graph.Node) (kernels.Kernel, error) {
		a, err := cpu.ParseFakeQuantAttrs(n)
		if err != nil {
			return nil, err
		}
		return fn(func(k kctx) error { return fakeQuantGPU(k, a) })(n)
	}
	kernels.Register(kernels.Def{Op: "FakeQuantWithMinMaxArgs", Device: kernels.GPU, Factory: fq})
	kernels.Register(kernels.Def{Op: "FakeQuantWithMinMaxVars", Device: kernels.GPU, HostMemory: host, Factory: fq})
	kernels.Register(kernels.Def{Op: "FakeQuantWithMinMaxVarsPerChannel", Device: kernels.GPU, HostMemory: host, Factory: fq})
	reg("BatchNormWithGlobalNormalization", "T", []tensor.DType{tensor.Float, tensor.Half}, nil, func(n *graph.Node) (kernels.Kernel, error) {
		a := cpu.ParseBNGlobalAttrs(n)
		return fn(func(k kctx) error { return bnGlobalGPU(k, a) })(n)
	})
}

func fakeQuantGPU(k kctx, at cpu.FakeQuantAttrs) error {
	grids, div, err := cpu.FakeQuantArgs(k.Context, at)
	if err != nil {
		return err
	}
	x := k.Input(0)
	o, err := k.Allocate(0, x.Shape)
	if err != nil {
		return err
	}
	n := o.NumElements()
	if n == 0 {
		return nil
	}
	if len(grids) == 1 {
		g := grids[0]
		if g.Zero {
			return k.memset(ptr(o), 0, int(n)*4)
		}
		var a cu.Args
		a.Ptr(ptr(o)).Ptr(ptr(x)).I64(n).F32(g.Min).F32(g.Max).F32(g.Scale).F32(g.Inv).F32(g.QZero).I32(b32(div))
		return k.launchN(nns, "fake_quant1", n, &a)
	}
	d := int64(len(grids))
	table := make([]byte, 6*4*d) //mstream:bounded one row per quantization channel of an existing tensor
	for c, g := range grids {
		v := [6]float32{g.Min, g.Max, g.Scale, g.Inv, g.QZero, 0}
		if g.Zero {
			v = [6]float32{5: 1}
		}
		for j, f := range v {
			bin.LittleEndian.PutUint32(table[(6*c+j)*4:], math.Float32bits(f))
		}
	}
	gt, err := k.Alloc(tensor.Float, tensor.Shape{6 * d})
	if err != nil {
		return k.Errorf(status.CodeOf(err), "FakeQuant grids for %d channels: %v", d, err)
	}
	if err := k.h2d(ptr(gt), table); err != nil {
		return err
	}
	var a cu.Args
	a.Ptr(ptr(o)).Ptr(ptr(x)).Ptr(ptr(gt)).I64(n).I64(d)
	return k.launchN(nns, "fake_quantc", n, &a)
}

func bnGlobalGPU(k kctx, a cpu.BNGlobalAttrs) error {
	if err := cpu.BNGlobalArgs(k.Context); err != nil {
		return err
	}
	x := k.Input(0)
	y, err := k.Allocate(0, x.Shape)
	if err != nil {
		return err
	}
	n, c := y.NumElements(), x.Shape[3]
	if n == 0 {
		return nil
	}
	coef, err := k.Alloc(tensor.Float, tensor.Shape{2 * c})
	if err != nil {
		return k.Errorf(status.CodeOf(err), "batch norm coefficients: %v", err)
	}
	mul, add := ptr(coef), ptr(coef)+uint64(c*4)
	suf := suffix(x.DType)
	var ca cu.Args
	ca.Ptr(mul).Ptr(add).Ptr(ptr(k.Input(4))).Ptr(ptr(k.Input(3))).Ptr(ptr(k.Input(1))).Ptr(ptr(k.Input(2))).I64(c).F64(a.Eps).I32(b32(a.Scale))
	if err := k.launchN(nns, "bng_coef_"+suf, c, &ca); err != nil {
		return err
	}
	var args cu.Args
	args.Ptr(ptr(y)).Ptr(ptr(x)).Ptr(mul).Ptr(add).I64(n).I64(c).I64(1)
	return k.launchN(nns, "bn_apply_"+suf, n, &args)
}
