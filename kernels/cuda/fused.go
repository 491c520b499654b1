package cuda

import (
	"mstream/graph"
	"mstream/kernels"
	"mstream/status"
)

// _FusedMatMul, what package optimize (or TF's grappler) puts in place of
// MatMul+BiasAdd(+activation), runs as FusedMatMul with every activation
// the CPU kernel fuses (actCodes). Other fused_ops (FusedBatchNorm, no
// BiasAdd) have no GPU kernel here: the factory refuses them, so
// placement runs such a node on the host, where the CPU kernel gives
// TF's error.
func init() {
	reg("_FusedMatMul", "T", gpuFloats, nil, func(n *graph.Node) (kernels.Kernel, error) {
		var ops []string
		if a := n.Attrs["fused_ops"]; a != nil {
			for _, s := range a.GetList().GetS() {
				ops = append(ops, string(s))
			}
		}
		act := ""
		if len(ops) == 2 {
			act = ops[1]
		}
		if _, ok := actCodes[act]; !ok || len(ops) < 1 || len(ops) > 2 || ops[0] != "BiasAdd" {
			return nil, status.Errorf(status.Unimplemented, "node '%s': _FusedMatMul with fused_ops %q has no GPU kernel (BiasAdd and BiasAdd with an activation have)", n.Name, ops)
		}
		alpha := float32(0)
		if a := n.Attrs["leakyrelu_alpha"]; a != nil {
			alpha = a.GetF()
		}
		if a := n.Attrs["num_args"]; a != nil && a.GetI() != 1 {
			return nil, status.Errorf(status.Unimplemented, "node '%s': _FusedMatMul with num_args %d has no GPU kernel", n.Name, a.GetI())
		}
		ta, tb := boolAttr(n, "transpose_a"), boolAttr(n, "transpose_b")
		k := FusedMatMul(ta, tb, act, alpha)
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
