package cpu

import (
	"mstream/graph"
	"mstream/hostmem"
	"mstream/kernels"
	"mstream/tensor"
)

func init() { graph.RegisterConstFolder(fold) }

// fold runs n's CPU kernel on constant inputs for graph's shape inference,
// as TF's shape refiner runs a constant subgraph when a shape function asks
// for an input's value. Any failure (no kernel, a kernel error, a panic, a
// size beyond limit) is "not known", as TF suppresses errors there too.
func fold(n *graph.Node, in []*tensor.Tensor, limit hostmem.Limit) (out []*tensor.Tensor) {
	defer func() {
		if recover() != nil {
			out = nil
		}
	}()
	def, err := kernels.Lookup(n, kernels.CPU)
	if err != nil {
		return nil
	}
	k, err := def.Factory(n)
	if err != nil {
		return nil
	}
	ctx := &kernels.Context{Node: n, Inputs: in, Outputs: make([]*tensor.Tensor, len(n.OutTypes)), Limit: limit}
	if err := k.Compute(ctx); err != nil {
		return nil
	}
	for _, o := range ctx.Outputs {
		if o == nil || o.Check() != nil {
			return nil
		}
	}
	return ctx.Outputs
}
