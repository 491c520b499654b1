package graph

// This file fixes the graph API that capi/ and session/ program against.
// The bodies live in build.go, import.go and shape.go; doc.go says what
// the package guarantees.

import (
	"os"

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

// ImportTextFile imports the text-format GraphDef in the file at path
// into a new graph (tests' and tools' cases); an error names the file.
func ImportTextFile(path string, opts *ImportOptions) (*Graph, error) {
	text, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	gd, err := ParseTextGraphDef(text)
	if err != nil {
		return nil, status.Errorf(status.CodeOf(err), "%s: %v", path, err)
	}
	g := New()
	if _, err := g.Import(gd, opts); err != nil {
		return nil, status.Errorf(status.CodeOf(err), "%s: %v", path, err)
	}
	return g, nil
}

var _ = status.OK

// OpDef returns the OpDef of op as g sees it: a registered op, else the
// signature of a function in g's library (TF_GraphGetOpDef looks in the
// graph's library too). Nil if neither knows op.
func (g *Graph) OpDef(op string) *tfpb.OpDef {
	g.mu.RLock()
	defer g.mu.RUnlock()
	return g.lib.opDef(op)
}

// AddFunction adds fd to g's function library (TF_GraphCopyFunction). An
// equal FunctionDef already there under the same name is a no-op; a
// different one, or a name a registered op has, is INVALID_ARGUMENT, as
// TF's FunctionLibraryDefinition::AddFunctionDef. fd is copied.
func (g *Graph) AddFunction(fd *tfpb.FunctionDef) error {
	return g.AddLibrary(&tfpb.FunctionDefLibrary{Function: []*tfpb.FunctionDef{fd}})
}

// AddGradient records grad as the gradient function of fn (a GradientDef);
// a different gradient already recorded for fn is INVALID_ARGUMENT.
func (g *Graph) AddGradient(fn, grad string) error {
	return g.AddLibrary(&tfpb.FunctionDefLibrary{Gradient: []*tfpb.GradientDef{{FunctionName: fn, GradientFunc: grad}}})
}

// AddLibrary adds every FunctionDef and GradientDef of lib, or none of
// them (TF's AddLibrary rolls back on error).
func (g *Graph) AddLibrary(lib *tfpb.FunctionDefLibrary) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	l := g.lib.clone()
	if err := l.addLibrary(lib); err != nil {
		return err
	}
	if l.changed(&g.lib) {
		g.lib = l
		g.version.Add(1)
	}
	return nil
}

// Function returns the FunctionDef named name, or nil. The result is
// shared and must not be modified.
func (g *Graph) Function(name string) *tfpb.FunctionDef {
	g.mu.RLock()
	defer g.mu.RUnlock()
	return g.lib.funcs[name]
}

// Functions returns the library's FunctionDefs sorted by name
// (TF_GraphGetFunctions). They are shared and must not be modified.
func (g *Graph) Functions() []*tfpb.FunctionDef {
	g.mu.RLock()
	defer g.mu.RUnlock()
	fs := make([]*tfpb.FunctionDef, 0, len(g.lib.funcs))
	for _, name := range sortedKeys(g.lib.funcs) {
		fs = append(fs, g.lib.funcs[name])
	}
	return fs
}

// NumFunctions is the number of FunctionDefs in the library
// (TF_GraphNumFunctions).
func (g *Graph) NumFunctions() int {
	g.mu.RLock()
	defer g.mu.RUnlock()
	return len(g.lib.funcs)
}

// Gradient returns the name of fn's gradient function, or "".
func (g *Graph) Gradient(fn string) string {
	g.mu.RLock()
	defer g.mu.RUnlock()
	return g.lib.grads[fn]
}

// Library returns a copy of the function library as written to a
// GraphDef (functions and gradients sorted by name), nil when empty.
func (g *Graph) Library() *tfpb.FunctionDefLibrary {
	g.mu.RLock()
	defer g.mu.RUnlock()
	return g.lib.toProto()
}

// FunctionLocked is Function for a caller that holds g's read lock (a
// plan-time pass such as package lower's).
func (g *Graph) FunctionLocked(name string) *tfpb.FunctionDef { return g.lib.funcs[name] }

// LibraryLocked is Library for a caller that holds g's read lock.
func (g *Graph) LibraryLocked() *tfpb.FunctionDefLibrary { return g.lib.toProto() }

// NumFunctionsLocked is NumFunctions for a caller that holds g's read lock.
func (g *Graph) NumFunctionsLocked() int { return len(g.lib.funcs) }

// LookupLocked is Lookup for a caller that holds g's read lock.
func (g *Graph) LookupLocked(name string) *Node { return g.byName[name] }
