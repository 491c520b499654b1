package cpu

import (
	"fmt"

	"mstream/graph"
	"mstream/kernels"
	"mstream/tensor"
)

// _MstreamGatherN is package optimize's merge of sibling GatherV2 nodes
// (DLRM's 26 embedding lookups): output i is GatherV2(params i, indices
// i, axis 0, batch_dims 0). The host kernel runs GatherV2's kernel per
// pair under the member node GatherNMembers gives, so a bad index fails
// with exactly the error of the GatherV2 the user wrote.
func init() {
	reg("_MstreamGatherN", nil, nil, func(n *graph.Node) (kernels.Kernel, error) {
		members, err := GatherNMembers(n)
		if err != nil {
			return nil, err
		}
		axis := tensor.New(tensor.Int32, tensor.Shape{})
		return kernels.KernelFunc(func(ctx *kernels.Context) error {
			return GatherNEach(ctx, members, func(sub *kernels.Context) error { return gather(sub, 0) }, axis)
		}), nil
	})
}

// GatherNMembers returns, for _MstreamGatherN node n, a GatherV2 node per
// pair that stands for the node the pair replaced: its name (from the
// fused-from attr; n's own where n was not made by a fusion), op and
// output dtype, which is all a kernel's errors and allocations read.
func GatherNMembers(n *graph.Node) ([]*graph.Node, error) {
	k := len(n.OutTypes)
	if k == 0 || len(n.Inputs) != 2*k {
		return nil, fmt.Errorf("_MstreamGatherN node '%s' has %d inputs and %d outputs, want 2N and N", n.Name, len(n.Inputs), k)
	}
	names := n.Attr(fusedFromAttr).GetList().GetS()
	members := make([]*graph.Node, k)
	for i := range members {
		name := n.Name
		if len(names) == k {
			name = string(names[i])
		}
		members[i] = &graph.Node{ID: n.ID, Name: name, Op: "GatherV2", Device: n.Device, Attrs: n.Attrs,
			InTypes: []tensor.DType{n.InTypes[i], n.InTypes[k+i], tensor.Int32}, OutTypes: n.OutTypes[i : i+1]}
	}
	return members, nil
}

// GatherNEach runs one GatherV2 kernel per pair of ctx's _MstreamGatherN
// inputs: a context whose node is the pair's member, whose inputs are
// params i, indices i and axis (a host scalar 0), and whose only output
// is output i.
//
// One context and one input list serve every pair (each pair's context is
// made afresh from ctx in them): a context escapes to the heap through
// one, and a batch-of-one DLRM's step spent its allocations on them.
func GatherNEach(ctx *kernels.Context, members []*graph.Node, one func(*kernels.Context) error, axis *tensor.Tensor) error {
	k := len(members)
	sub := new(kernels.Context)
	ins := make([]*tensor.Tensor, 3)
	for i, m := range members {
		*sub = *ctx
		sub.Node = m
		ins[0], ins[1], ins[2] = ctx.Inputs[i], ctx.Inputs[k+i], axis
		sub.Inputs = ins
		sub.Outputs = ctx.Outputs[i : i+1]
		if err := one(sub); err != nil {
			return err
		}
	}
	return nil
}
