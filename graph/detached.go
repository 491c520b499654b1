package graph

import (
	"google.golang.org/protobuf/proto"

	"mstream/proto/tfpb"
	"mstream/status"
	"mstream/tensor"
)

// Detached nodes belong to no graph. Plan-time rewrites (package optimize)
// build them so that a session can run a rewritten copy of the part of a
// graph a Run needs while the user's graph stays exactly as built: they
// are never linked into a Graph's node list, byName or consumers, so no
// graph invariant changes. Their inputs may be nodes of a graph (read under
// that graph's read lock, which the caller holds) or other detached nodes.

func init() {
	RegisterShapeFn("_FusedMatMul", matMulShape)
	RegisterShapeFn("_FusedConv2D", convShape)
	RegisterShapeFn("_MstreamConv2DMaxPool", convMaxPoolShape)
	RegisterShapeFn("_MstreamUnaryChain", unchangedShape)
	RegisterShapeFn("_MstreamLayerNorm", unchangedShape)
	RegisterShapeFn("_MstreamAddLayerNorm", binaryShape)
	RegisterShapeFn("_MstreamAttention", attentionShape)
	RegisterShapeFn("_MstreamEinsumBias", einsumBiasShape)
	RegisterShapeFn("_MstreamGatherN", gatherNShape)
}

// NewDetached builds a node of op named name with the inputs args (grouped
// by the OpDef's input args, one slice per arg), validated against its OpDef
// exactly as Builder.Finish validates (attr defaults filled, dtypes
// checked), with its output shapes inferred from its inputs. id is the
// node's place in a plan's deterministic order; attrs are cloned.
func NewDetached(id int, op, name, device string, args [][]Output, controls []*Node, attrs map[string]*tfpb.AttrValue) (*Node, error) {
	def := lookupOpDef(op)
	if def == nil {
		return nil, status.Errorf(status.NotFound, "Op type not registered '%s' in binary (node '%s')", op, name)
	}
	a := make(map[string]*tfpb.AttrValue, len(attrs))
	for k, v := range attrs {
		a[k] = proto.Clone(v).(*tfpb.AttrValue)
	}
	n := &Node{ID: id, Name: name, Op: op, Def: def, Device: device, Attrs: a,
		Controls: append([]*Node(nil), controls...)}
	if err := resolveNode(n, args); err != nil {
		return nil, err
	}
	if err := inferNode(n, nil); err != nil {
		return nil, err
	}
	return n, nil
}

// Rewired returns a detached copy of n that reads inputs and runs after
// controls instead of n's own. Everything else (ID, name, op, attrs, types,
// static shapes) is n's; attrs are shared, not copied, since a node's attrs
// never change. The caller holds the read lock of n's graph.
func (n *Node) Rewired(inputs []Output, controls []*Node) *Node {
	c := &Node{ID: n.ID, Name: n.Name, Op: n.Op, Def: n.Def, Device: n.Device, Attrs: n.Attrs,
		Inputs: inputs, Controls: controls, InTypes: n.InTypes, OutTypes: n.OutTypes,
		OutArgs: n.OutArgs, InArgs: n.InArgs}
	c.OutShapes = make([]tensor.PartialShape, len(n.OutShapes))
	for i, s := range n.OutShapes {
		c.OutShapes[i] = tensor.PartialShape{Known: s.Known, Dims: append([]int64(nil), s.Dims...)}
	}
	return c
}

// NewDetachedFlat is NewDetached for a node whose inputs come flat, as a
// NodeDef lists them (a function body's node_def): they are grouped by the
// OpDef's input args from the attrs, as Import groups a GraphDef's inputs.
// def is the node's OpDef: a registered op's or a function's signature (a
// call by function name).
func NewDetachedFlat(id int, def *tfpb.OpDef, op, name, device string, flat []Output, controls []*Node, attrs map[string]*tfpb.AttrValue) (*Node, error) {
	a := make(map[string]*tfpb.AttrValue, len(attrs))
	for k, v := range attrs {
		a[k] = proto.Clone(v).(*tfpb.AttrValue)
	}
	n := &Node{ID: id, Name: name, Op: op, Def: def, Device: device, Attrs: a,
		Controls: append([]*Node(nil), controls...)}
	sizes, err := argSizes(n)
	if err != nil {
		return nil, err
	}
	total := 0
	for _, s := range sizes {
		total += s
	}
	if total != len(flat) {
		return nil, status.InvalidArg("Node '%s' (op %s): expected %d inputs, got %d", name, op, total, len(flat))
	}
	args := make([][]Output, len(sizes))
	off := 0
	for k, s := range sizes {
		args[k] = flat[off : off+s]
		off += s
	}
	if err := resolveNode(n, args); err != nil {
		return nil, err
	}
	if err := inferNode(n, nil); err != nil {
		return nil, err
	}
	return n, nil
}
