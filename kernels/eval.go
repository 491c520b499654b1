package kernels

import (
	"mstream/graph"
	"mstream/hostmem"
	"mstream/tensor"
)

// EvalCPU runs n's CPU kernel on constant inputs, outside any step: plan-time
// constant folding (package optimize) and shape inference (graph's
// ConstFolder, which kernels/cpu registers) both evaluate nodes this way, as
// TF runs a constant subgraph for each. It returns nil when there is no
// kernel, the kernel fails or panics, or an allocation would pass limit.
func EvalCPU(n *graph.Node, in []*tensor.Tensor, limit hostmem.Limit) (out []*tensor.Tensor) {
	defer func() {
		if recover() != nil { // a kernel bug must not fail graph building
			out = nil
		}
	}()
	k, err := Make(n, CPU)
	if err != nil {
		return nil
	}
	ctx := &Context{Node: n, Inputs: in, Outputs: make([]*tensor.Tensor, len(n.OutTypes)), Pool: Serial{}, Limit: limit}
	if err := k.Compute(ctx); err != nil {
		return nil
	}
	for i, o := range ctx.Outputs {
		if o == nil || o.DType != n.OutTypes[i] || o.Check() != nil {
			return nil
		}
	}
	return ctx.Outputs
}
