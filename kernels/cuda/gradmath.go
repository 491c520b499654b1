package cuda

import (
	cu "mstream/device/cuda"
	"mstream/graph"
	"mstream/kernels"
	"mstream/status"
)

// The activation gradients on the GPU (src/math.cu's g_* kernels), for
// the dtypes the CPU registers them (float, double, half, bfloat16).

func init() {
	for op, g := range map[string]struct {
		name      string
		sameShape bool // the ReluGrad family checks shapes; SimpleBinaryOp only sizes
	}{
		"ReluGrad": {"relu", true}, "Relu6Grad": {"relu6", true}, "EluGrad": {"elu", true}, "SeluGrad": {"selu", true},
		"SoftplusGrad": {"softplus", true}, "SigmoidGrad": {"sigmoid", false}, "TanhGrad": {"tanh", false},
		"SqrtGrad": {"sqrt", false}, "RsqrtGrad": {"rsqrt", false}, "ReciprocalGrad": {"recip", false},
	} {
		g := g
		reg(op, "T", gpuFloats, nil, fn(func(k kctx) error { return gradBinary(k, g.name, g.sameShape, 0) }))
	}
	reg("LeakyReluGrad", "T", gpuFloats, nil, func(n *graph.Node) (kernels.Kernel, error) {
		alpha := 0.2
		if a := n.Attrs["alpha"]; a != nil {
			alpha = float64(a.GetF())
		}
		return fn(func(k kctx) error { return gradBinary(k, "leaky", true, alpha) })(n)
	})
}

func gradBinary(k kctx, name string, sameShape bool, p float64) error {
	a, b := k.Input(0), k.Input(1)
	if sameShape && !a.Shape.Equal(b.Shape) {
		return k.Errorf(status.InvalidArgument, "g and x must be the same shape, got %v and %v", a.Shape, b.Shape)
	}
	if a.NumElements() != b.NumElements() {
		return k.Errorf(status.InvalidArgument, "The two arguments to a cwise op must have same number of elements, got %d and %d", a.NumElements(), b.NumElements())
	}
	o, err := k.Allocate(0, a.Shape)
	if err != nil {
		return err
	}
	n := o.NumElements()
	if n == 0 {
		return nil
	}
	var args cu.Args
	args.Ptr(ptr(o)).Ptr(ptr(a)).Ptr(ptr(b)).I64(n).F64(p)
	return k.launchN(maths, "g_"+name+"_"+suffix(a.DType), n, &args)
}
