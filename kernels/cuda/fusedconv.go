package cuda

import (
	"fmt"
	"strings"

	cu "mstream/device/cuda"
	"mstream/graph"
	"mstream/kernels"
	"mstream/kernels/cpu"
	"mstream/status"
	"mstream/tensor"
)

// _FusedConv2D on the GPU: what package optimize (or TF's grappler) puts
// in place of Conv2D + BiasAdd or FusedBatchNorm + activation, so fused
// CNN layers stay on the device. The convolution is conv2DGPU's (im2col +
// GEMM, or the direct kernel), then one in-place pass of nn.cu's
// conv_epi. Validation is the CPU kernel's (TF's
// InitializeFusedComputation): what it refuses with UNIMPLEMENTED (other
// fusions, host args) placement runs on the host.

type convEpilogue struct {
	bn    bool
	eps   float64
	act   int32
	alpha float64
}

var convActs = map[string]int32{"": 0, "Relu": 1, "Relu6": 2, "Elu": 3, "LeakyRelu": 4, "Tanh": 5, "Sigmoid": 6}

func init() {
	reg("_FusedConv2D", "T", []tensor.DType{tensor.Float, tensor.Half, tensor.Double}, nil, func(n *graph.Node) (kernels.Kernel, error) {
		nerr := func(code status.Code, format string, args ...any) error {
			return kernels.NodeError(code, n, fmt.Sprintf(format, args...))
		}
		var ops []string
		if a := n.Attrs["fused_ops"]; a != nil && a.GetList() != nil {
			for _, s := range a.GetList().GetS() {
				ops = append(ops, string(s))
			}
		}
		if len(ops) == 0 {
			return nil, nerr(status.InvalidArgument, "Fused Conv2D must have at least one fused op.")
		}
		intAttr := func(name string) int64 {
			if a := n.Attrs[name]; a != nil {
				return a.GetI()
			}
			return 0
		}
		if h := intAttr("num_host_args"); h != 0 {
			return nil, nerr(status.Unimplemented, "Fused Conv2D with host args (num_host_args = %d) is not supported", h)
		}
		var ep convEpilogue
		ok := len(ops) <= 2 && (ops[0] == "BiasAdd" || ops[0] == "FusedBatchNorm")
		if ok && len(ops) == 2 {
			act, known := convActs[ops[1]]
			ok = known && ops[1] != "" && !(ops[0] == "FusedBatchNorm" && (ops[1] == "Tanh" || ops[1] == "Sigmoid"))
			ep.act = act
		}
		if !ok {
			return nil, nerr(status.Unimplemented, "Fusion is not implemented: [%s]", strings.Join(ops, ","))
		}
		ep.bn = ops[0] == "FusedBatchNorm"
		numArgs := intAttr("num_args")
		if ep.bn && numArgs != 4 {
			return nil, nerr(status.InvalidArgument, "Fused Conv2D with FusedBatchNorm must have four extra arguments: scale, offset, mean, variance.")
		}
		if !ep.bn && numArgs != 1 {
			return nil, nerr(status.InvalidArgument, "Fused Conv2D with BiasAdd must have one extra argument: bias.")
		}
		if a := n.Attrs["epsilon"]; a != nil {
			ep.eps = float64(a.GetF())
		}
		if a := n.Attrs["leakyrelu_alpha"]; a != nil {
			ep.alpha = float64(a.GetF())
			if typeAttr(n, "T") == tensor.Float || typeAttr(n, "T") == tensor.Half {
				ep.alpha = float64(float32(ep.alpha))
			}
		}
		if f := strAttr(n, "filter_format", "HWIO"); f != "HWIO" {
			return nil, nerr(status.Unimplemented, "filter_format %s is not supported: HWIO only", f)
		}
		for i, t := range n.InTypes[2:] {
			if t != n.InTypes[0] {
				return nil, nerr(status.InvalidArgument, "Fused Conv2D argument %d has type %v; it must be the input type %v", i, t, n.InTypes[0])
			}
		}
		a, err := cpu.ParseConv2DAttrs(n)
		if err != nil {
			return nil, err
		}
		return fn(func(k kctx) error { return fusedConvGPU(k, a, ep) })(n)
	})
}

func fusedConvGPU(k kctx, a cpu.Conv2DAttrs, ep convEpilogue) error {
	in, f := k.Input(0), k.Input(1)
	if a.NCHW {
		return k.Errorf(status.Unimplemented, "_FusedConv2D supports only the NHWC data format on the CPU (and on this GPU kernel); the op was given NCHW")
	}
	p, err := a.Params(in.Shape, f.Shape)
	if err != nil {
		return k.Errorf(status.CodeOf(err), "%v", err)
	}
	names := []string{"bias"}
	if ep.bn {
		names = []string{"scale", "offset", "estimated_mean", "estimated_variance"}
	}
	if k.NumInputs() != 2+len(names) {
		return k.Errorf(status.InvalidArgument, "expected %d extra arguments, got %d", len(names), k.NumInputs()-2)
	}
	var args [4]uint64
	for i, name := range names {
		t := k.Input(2 + i)
		if len(t.Shape) != 1 {
			return k.Errorf(status.InvalidArgument, "%s must be 1-dimensional, got %v", name, t.Shape)
		}
		if t.Shape[0] != int64(p.O) {
			return k.Errorf(status.InvalidArgument, "%s has %d elements but the output has %d channels", name, t.Shape[0], p.O)
		}
		args[i] = ptr(t)
	}
	o, err := k.Allocate(0, p.OutShape())
	if err != nil {
		return err
	}
	n := o.NumElements()
	if n == 0 {
		return nil
	}
	if f.NumElements() == 0 {
		return k.Errorf(status.InvalidArgument, "filter must not have zero elements (i.e. all dimensions must be non-zero)")
	}
	if p.O%p.Groups != 0 || p.O < p.Groups {
		return k.Errorf(status.InvalidArgument, "output depth must be evenly divisible by number of groups: %d vs %d", p.O, p.Groups)
	}
	switch {
	case in.NumElements() == 0:
		// All padding: the convolution is zeros, the epilogue still applies.
		if err := k.memset(ptr(o), 0, len(o.Buf)); err != nil {
			return err
		}
	case p.Groups == 1 && (in.DType == tensor.Float || in.DType == tensor.Double):
		if err := convGemm(k, p, in, f, o); err != nil {
			return err
		}
	default:
		if err := convDirect(k, p, in, f, o); err != nil {
			return err
		}
	}
	bn := int32(0)
	if ep.bn {
		bn = 1
	}
	var ea cu.Args
	ea.Ptr(ptr(o)).Ptr(args[0]).Ptr(args[1]).Ptr(args[2]).Ptr(args[3]).I64(n).I64(int64(p.O)).I32(bn).F64(ep.eps).I32(ep.act).F64(ep.alpha)
	return k.launchN(nns, "conv_epi_"+suffix(o.DType), n, &ea)
}
