package graph

// This file fixes the graph API that capi/ and session/ program against.
// The bodies live in build.go, import.go and shape.go; doc.go says what
// the package guarantees.

import (
	"mstream/proto/tfpb"
	"mstream/status"
	"mstream/tensor"
)

// LookupOpDef returns TF 2.15's OpDef for an op name (from ops.pbtxt), or nil.
func LookupOpDef(op string) *tfpb.OpDef { return lookupOpDef(op) }

// AllOpDefs returns every registered OpDef, sorted by name (TF_GetAllOpList).
func AllOpDefs() *tfpb.OpList { return allOpDefs() }

// Builder builds one node for TF_NewOperation ... TF_FinishOperation.
// Inputs are added in OpDef order; AddInput appends to the next single-tensor
// arg, AddInputList fills the next list arg.
type Builder struct {
	g        *Graph
	name, op string
	def      *tfpb.OpDef
	device   string
	attrs    map[string]*tfpb.AttrValue
	args     [][]Output // one entry per OpDef input arg, as added
	isList   []bool
	controls []*Node
	colocate []string
	err      error // first error from a setter; reported by Finish
}

// NewBuilder starts a node named name of type op in g. An op TF does not
// know is reported by Finish as NOT_FOUND.
func (g *Graph) NewBuilder(op, name string) *Builder { return newBuilder(g, op, name) }

func (b *Builder) AddInput(o Output)                      { b.addInput(o) }
func (b *Builder) AddInputList(os []Output)               { b.addInputList(os) }
func (b *Builder) AddControlInput(n *Node)                { b.controls = append(b.controls, n) }
func (b *Builder) SetDevice(d string)                     { b.device = d }
func (b *Builder) SetAttr(name string, v *tfpb.AttrValue) { b.attrs[name] = v }

// ColocateWith adds the "_class" attr entry "loc:@<node>", as TF does.
func (b *Builder) ColocateWith(n *Node) { b.colocate = append(b.colocate, "loc:@"+n.Name) }

// Finish validates the node against its OpDef (input count and types, type
// attrs inferred from inputs, allowed values, defaults filled), infers its
// output shapes and adds it. On error the graph is unchanged.
func (b *Builder) Finish() (*Node, error) { return b.finish() }

// ImportOptions are TF_ImportGraphDefOptions.
type ImportOptions struct {
	Prefix              string
	UniquifyNames       bool
	UniquifyPrefix      bool
	DefaultDevice       string
	InputMap            map[TensorID]Output // (src name, index) in the GraphDef -> existing output
	ControlRemap        map[string]*Node    // control input "^src" of the GraphDef -> existing node; keyed "src" or "^src"
	ControlDependencies []*Node             // added to every imported node without inputs from the import
	ReturnOutputs       []TensorID
	ReturnOperations    []string
	ValidateColocation  bool
}

// TensorID names an output by node name and index, as a GraphDef input
// string "name:index" does (TF's TensorId).
type TensorID struct {
	Name  string
	Index int
}

// ImportResults are TF_ImportGraphDefResults.
type ImportResults struct {
	ReturnOutputs              []Output
	ReturnOperations           []*Node
	MissingUnusedInputMappings []TensorID
}

// Import adds the nodes of gd to g atomically: on any error (malformed input,
// unknown op -> NOT_FOUND, name clash, a cycle, a bad attr) g is unchanged.
func (g *Graph) Import(gd *tfpb.GraphDef, opts *ImportOptions) (*ImportResults, error) {
	return g.importGraphDef(gd, opts)
}

// ToGraphDef writes the graph as a GraphDef, nodes in ID order.
func (g *Graph) ToGraphDef() *tfpb.GraphDef { return g.toGraphDef() }

// NodeDef returns the NodeDef of one node (TF_OperationToNodeDef).
func (n *Node) NodeDef() *tfpb.NodeDef { return n.nodeDef() }

// SetTensorShape refines the static shape of an output
// (TF_GraphSetTensorShape): it must be compatible with what is known, and
// the refinement propagates to consumers.
func (g *Graph) SetTensorShape(o Output, s tensor.PartialShape) error { return g.setTensorShape(o, s) }

// TensorShape returns the static shape of an output (TF_GraphGetTensorShape).
func (g *Graph) TensorShape(o Output) tensor.PartialShape {
	g.mu.RLock()
	defer g.mu.RUnlock()
	return o.Node.OutShapes[o.Index]
}

// ParseTextGraphDef parses a text-format GraphDef as strictly as TF does:
// an unknown field or garbage is INVALID_ARGUMENT naming the line and column.
func ParseTextGraphDef(text []byte) (*tfpb.GraphDef, error) { return parseTextGraphDef(text) }

// ParseGraphDef parses a binary GraphDef, INVALID_ARGUMENT on bad bytes.
func ParseGraphDef(b []byte) (*tfpb.GraphDef, error) { return parseGraphDef(b) }

var _ = status.OK
