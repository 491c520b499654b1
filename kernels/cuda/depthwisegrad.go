package cuda

import (
	_ "embed"
	"fmt"

	cu "mstream/device/cuda"
	"mstream/graph"
	"mstream/kernels"
	"mstream/kernels/cpu"
)

// DepthwiseConv2dNativeBackpropInput and ...BackpropFilter on the GPU
// (src/depthwisegrad.cu), NHWC, float, double, half and bfloat16: the CPU
// kernel's checks (cpu.DepthwiseBackpropArgs) and its sums, in double:
// the input's gradient one element per thread in the CPU's order, the
// filter's a block per element reducing over the batch and the output
// positions (rowBlocks, sparsexent.go).

//go:embed src/depthwisegrad.cu
var depthwiseGradSrc string

var depthwiseGrad = &cu.Program{Name: "depthwisegrad.cu", Source: commonSrc + typesSrc + depthwiseGradSrc}

func init() {
	for _, op := range []string{"DepthwiseConv2dNativeBackpropInput", "DepthwiseConv2dNativeBackpropFilter"} {
		filter := op == "DepthwiseConv2dNativeBackpropFilter"
		host := []string{"input_sizes"}
		if filter {
			host = []string{"filter_sizes"}
		}
		reg(op, "T", gpuFloats, host, func(n *graph.Node) (kernels.Kernel, error) {
			a, err := cpu.ParseDepthwiseAttrs(n)
			if err != nil {
				return nil, err
			}
			if a.NCHW {
				return nil, fmt.Errorf("the GPU kernel of %s takes NHWC only", op)
			}
			return fn(func(k kctx) error { return depthwiseBackpropGPU(k, a, filter) })(n)
		})
	}
}

func depthwiseBackpropGPU(k kctx, a cpu.Conv2DAttrs, filter bool) error {
	p, m, outShape, err := cpu.DepthwiseBackpropArgs(k.Context, a, filter)
	if err != nil {
		return err
	}
	o, err := k.Allocate(0, outShape)
	if err != nil {
		return err
	}
	n := o.NumElements()
	if n == 0 {
		return nil
	}
	dy := k.Input(2)
	if dy.NumElements() == 0 {
		return k.memset(ptr(o), 0, len(o.Buf))
	}
	var args cu.Args
	args.Ptr(ptr(o))
	name := "depthwise_bi_"
	dims := []int{p.H, p.W, p.C, m, p.KH, p.KW}
	if filter {
		args.Ptr(ptr(k.Input(0)))
		name = "depthwise_bf_"
		dims = []int{p.N, p.H, p.W, p.C, m, p.KW}
	} else {
		args.Ptr(ptr(k.Input(1)))
	}
	args.Ptr(ptr(dy)).I64(n)
	for _, d := range append(dims, p.StrideH, p.StrideW, p.PadTop, p.PadLeft, p.OutH, p.OutW) {
		args.I64(int64(d))
	}
	if filter {
		block, grid := rowBlocks(k, n, int64(p.N)*int64(p.OutH)*int64(p.OutW))
		return k.launch(depthwiseGrad, name+suffix(o.DType), grid, block, 0, &args)
	}
	return k.launchN(depthwiseGrad, name+suffix(o.DType), n, &args)
}
