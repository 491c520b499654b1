package grad

import (
	"google.golang.org/protobuf/proto"

	"mstream/graph"
	"mstream/proto/tfpb"
)

// The gradient of a function call, as TF's PartitionedCallGrad
// (cc/gradients/functional_grad.cc) makes it: a SymbolicGradient of the
// call's function over the call's inputs and its outputs' gradients, one
// output per input, f carrying every attr of the call as TF's does.
// Package lower expands the SymbolicGradient when a plan is built, with
// this package's gradients of the body's ops.
func init() {
	register(func(b *Builder, n *graph.Node, dy []graph.Output) []graph.Output {
		f := proto.Clone(n.Attrs["f"].GetFunc()).(*tfpb.NameAttrList)
		if f.Attr == nil {
			f.Attr = map[string]*tfpb.AttrValue{}
		}
		for k, v := range n.Attrs {
			f.Attr[k] = v
		}
		ins := append(append(make([]graph.Output, 0, len(n.Inputs)+len(dy)), n.Inputs...), dy...)
		sg := b.node("SymbolicGradient", A{"Tout": graph.AttrTypeList(n.InTypes), "f": {Value: &tfpb.AttrValue_Func{Func: f}}}, ins)
		out := make([]graph.Output, len(n.Inputs))
		for i := range out {
			out[i] = sg.Output(i)
		}
		return out
	}, "PartitionedCall", "StatefulPartitionedCall")
}
