package cpu

import (
	"fmt"
	"sync"

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
		g, err := NewGatherN(n)
		if err != nil {
			return nil, err
		}
		return kernels.KernelFunc(func(ctx *kernels.Context) error {
			return g.Each(ctx, func(sub *kernels.Context) error { return gather(sub, 0) })
		}), nil
	})
}

// GatherN is what a _MstreamGatherN kernel keeps: a GatherV2 node per
// pair (GatherNMembers), the axis input every pair shares, and the
// contexts its calls run the pairs under.
type GatherN struct {
	members []*graph.Node
	axis    *tensor.Tensor
}

// gatherNSubs holds *gatherNSub for GatherN.Each: a context escapes to
// the heap through the call of one, so each call takes one here rather
// than making one (concurrent Runs each take their own). One pool for
// every kernel, which owns nothing: a pool field of GatherN kept the
// kernel, and through its members its plan's graph and constants, alive
// a collection past its plan, as the runtime drops a pool only at the
// next collection but one after its last Put.
var gatherNSubs = sync.Pool{New: func() any { return new(gatherNSub) }}

type gatherNSub struct {
	ctx kernels.Context
	ins [3]*tensor.Tensor
}

// NewGatherN readies _MstreamGatherN node n's pairs.
func NewGatherN(n *graph.Node) (*GatherN, error) {
	members, err := GatherNMembers(n)
	if err != nil {
		return nil, err
	}
	return &GatherN{members: members, axis: tensor.New(tensor.Int32, tensor.Shape{})}, nil
}

// Len is the number of pairs.
func (g *GatherN) Len() int { return len(g.members) }

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

// Each runs one GatherV2 kernel per pair of ctx's _MstreamGatherN
// inputs: a context whose node is the pair's member, whose inputs are
// params i, indices i and axis (a host scalar 0), and whose only output
// is output i.
//
// One context and one input list serve every pair (each pair's context is
// made afresh from ctx in them), taken from a pool: a batch-of-one
// DLRM's step spent its allocations on them.
func (g *GatherN) Each(ctx *kernels.Context, one func(*kernels.Context) error) error {
	k := len(g.members)
	sc := gatherNSubs.Get().(*gatherNSub)
	sub := &sc.ctx
	var err error
	for i, m := range g.members {
		*sub = *ctx
		sub.Node = m
		sc.ins = [3]*tensor.Tensor{ctx.Inputs[i], ctx.Inputs[k+i], g.axis}
		sub.Inputs = sc.ins[:]
		sub.Outputs = ctx.Outputs[i : i+1]
		if err = one(sub); err != nil {
			break
		}
	}
	*sc = gatherNSub{}
	gatherNSubs.Put(sc)
	return err
}
