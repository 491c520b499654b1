package cuda

import (
	"strings"

	"mstream/graph"
	"mstream/kernels"
	"mstream/status"
)

// _FusedMatMul, what package optimize (or TF's grappler) puts in place of
// MatMul+BiasAdd(+Relu), runs as FusedMatMul: one cuBLASLt call with a bias
// or bias+ReLU epilogue. Other epilogues (Relu6, Elu, LeakyRelu, ...) have
// no GPU kernel here: the factory refuses them, so placement runs such a
// node on the host and says so once.
func init() {
	reg("_FusedMatMul", "T", floatTypes, nil, func(n *graph.Node) (kernels.Kernel, error) {
		var ops []string
		if a := n.Attrs["fused_ops"]; a != nil {
			for _, s := range a.GetList().GetS() {
				ops = append(ops, string(s))
			}
		}
		relu := false
		switch strings.Join(ops, ",") {
		case "BiasAdd":
		case "BiasAdd,Relu":
			relu = true
		default:
			return nil, status.Errorf(status.Unimplemented, "node '%s': _FusedMatMul with fused_ops %q has no GPU kernel (BiasAdd and BiasAdd,Relu have)", n.Name, ops)
		}
		if a := n.Attrs["num_args"]; a != nil && a.GetI() != 1 {
			return nil, status.Errorf(status.Unimplemented, "node '%s': _FusedMatMul with num_args %d has no GPU kernel", n.Name, a.GetI())
		}
		ta, tb := boolAttr(n, "transpose_a"), boolAttr(n, "transpose_b")
		k := FusedMatMul(ta, tb, relu)
		return kernels.KernelFunc(func(ctx *kernels.Context) error {
			// The CPU kernel's checks and messages, on shapes only.
			if len(ctx.Inputs) != 3 {
				return ctx.Errorf(status.InvalidArgument, "expected 3 inputs (a, b, bias), got %d", len(ctx.Inputs))
			}
			a, b, bias := ctx.Input(0), ctx.Input(1), ctx.Input(2)
			if len(a.Shape) == 2 && len(b.Shape) == 2 {
				c := b.Shape[1]
				if tb {
					c = b.Shape[0]
				}
				if len(bias.Shape) != 1 {
					return ctx.Errorf(status.InvalidArgument, "bias must be 1-dimensional, got %v", bias.Shape)
				}
				if bias.Shape[0] != c {
					return ctx.Errorf(status.InvalidArgument, "bias has %d elements but the output has %d channels", bias.Shape[0], c)
				}
			}
			return k.Compute(ctx)
		}), nil
	})
}
