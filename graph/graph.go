package graph

import (
	"fmt"
	"sync"
	"sync/atomic"

	"mstream/proto/tfpb"
	"mstream/status"
	"mstream/tensor"
)

// Graph is a mutable dataflow graph. Nodes are only ever added (TF's C API has
// no removal), so a *Node stays valid for the graph's life and IDs are dense.
//
// Locking: mu guards every field of Graph and the mutable fields of its
// nodes (OutShapes, consumers, control outputs). Sessions read a graph under
// RLock when they build a plan; Version tells them when to rebuild.
// NodeByID and Version, which every Run calls (a handful of times for each
// feed and fetch), read published copies without the lock: an RLock per
// call made concurrent Runs write one shared cache line.
type Graph struct {
	mu      sync.RWMutex
	nodes   []*Node
	byName  map[string]*Node
	version atomic.Uint64 // written under mu
	// published is nodes as of the last change, for NodeByID: appends only
	// write past a published length, so a reader's copy stays valid.
	published   atomic.Pointer[[]*Node]
	producer    int32 // GraphDef versions.producer
	minConsumer int32
	lib         library // FunctionDefs and gradients (GraphDef.library)
	// whileFrames holds the loops AddWhileLoop built by frame name, as TF's
	// Graph keeps its WhileContexts: one loop per frame name; whileExits
	// finds a loop by one of its Exit nodes (TF's Node::while_ctx).
	whileFrames map[string]*WhileContext
	whileExits  map[*Node]*WhileContext
	// backEdges are the NextIteration nodes BuildLoop has reserved and not
	// added yet: a Merge may read them before they exist.
	backEdges map[*Node]bool
	// badName is the first node whose name breaks TF's node-name rule
	// (TF_NewOperation takes any name; a session refuses to run such a
	// graph, as TF's does when it converts the graph).
	badName *Node
}

// New returns an empty graph.
func New() *Graph {
	return &Graph{byName: map[string]*Node{}, producer: DefaultProducer}
}

// DefaultProducer is the GraphDef producer version written by ToGraphDef,
// TF 2.15's TF_GRAPH_DEF_VERSION.
const DefaultProducer = 1645

// Output names one output of a node: TF_Output.
type Output struct {
	Node  *Node
	Index int
}

// Input names one input slot of a node: TF_Input.
type Input struct {
	Node  *Node
	Index int
}

func (o Output) String() string {
	if o.Node == nil {
		return "<nil>"
	}
	if o.Index == 0 {
		return o.Node.Name
	}
	return fmt.Sprintf("%s:%d", o.Node.Name, o.Index)
}

// DType is the dtype of the output.
func (o Output) DType() tensor.DType { return o.Node.OutTypes[o.Index] }

// Node is one operation. Fields set at creation never change afterwards;
// OutShapes, consumers and controlOuts change under Graph.mu.
type Node struct {
	ID       int
	Name     string
	Op       string
	Def      *tfpb.OpDef
	Device   string                     // requested device, as written in the NodeDef
	Attrs    map[string]*tfpb.AttrValue // every attr of the OpDef, defaults filled
	Inputs   []Output                   // data inputs, flattened in OpDef order
	Controls []*Node                    // control inputs
	InTypes  []tensor.DType             // dtype of each data input (ref types stripped)
	OutTypes []tensor.DType             // dtype of each output
	// ArgIndex maps each OpDef output arg name to its range [lo, hi) in
	// OutTypes; InArgIndex does the same for inputs.
	OutArgs map[string][2]int
	InArgs  map[string][2]int

	OutShapes   []tensor.PartialShape // inferred, refined by SetTensorShape
	consumers   [][]Input             // per output
	controlOuts []*Node
}

// NumOutputs is the number of outputs.
func (n *Node) NumOutputs() int { return len(n.OutTypes) }

// Output returns output i of n.
func (n *Node) Output(i int) Output { return Output{n, i} }

// Attr returns the attr value, or nil.
func (n *Node) Attr(name string) *tfpb.AttrValue { return n.Attrs[name] }

// Lock and RLock expose the graph's lock to sessions and the C API, which
// read several fields at once.
func (g *Graph) RLock()   { g.mu.RLock() }
func (g *Graph) RUnlock() { g.mu.RUnlock() }

// CheckNamesLocked is TF's check of node names when a session takes the
// graph: INVALID_ARGUMENT naming the first node whose name an import would
// refuse. The caller holds RLock.
func (g *Graph) CheckNamesLocked() error {
	if g.badName == nil {
		return nil
	}
	return status.InvalidArg("Node '%s': Node name contains invalid characters", g.badName.Name)
}

// Version increases with every change to the graph; plans built from an
// older version are rebuilt.
func (g *Graph) Version() uint64 { return g.version.Load() }

// Lookup finds a node by name.
func (g *Graph) Lookup(name string) *Node {
	g.mu.RLock()
	defer g.mu.RUnlock()
	return g.byName[name]
}

// Nodes returns the nodes in creation order (a snapshot).
func (g *Graph) Nodes() []*Node {
	g.mu.RLock()
	defer g.mu.RUnlock()
	return append([]*Node(nil), g.nodes...)
}

// NodeByID returns the node with the given ID, or nil. TF_GraphNextOperation
// iterates with it.
// It takes no lock (a Run looks up every feed and fetch).
func (g *Graph) NodeByID(id int) *Node {
	nodes := g.published.Load()
	if nodes == nil || id < 0 || id >= len(*nodes) {
		return nil
	}
	return (*nodes)[id]
}

// NumNodes is the number of nodes.
func (g *Graph) NumNodes() int {
	g.mu.RLock()
	defer g.mu.RUnlock()
	return len(g.nodes)
}

// Consumers returns the inputs fed by output o.
func (g *Graph) Consumers(o Output) []Input {
	g.mu.RLock()
	defer g.mu.RUnlock()
	return append([]Input(nil), o.Node.consumers[o.Index]...)
}

// ControlOutputs returns the nodes that have n as a control input.
func (g *Graph) ControlOutputs(n *Node) []*Node {
	g.mu.RLock()
	defer g.mu.RUnlock()
	return append([]*Node(nil), n.controlOuts...)
}

// publishLocked makes the nodes added so far visible to NodeByID; a writer
// calls it once its nodes are all added, so that a reader sees all or none
// of them. The caller holds mu for writing.
func (g *Graph) publishLocked() {
	nodes := g.nodes
	g.published.Store(&nodes)
}

// addLocked links a fully built node into the graph; publishLocked makes it
// visible to NodeByID. The caller holds mu for writing and has checked the
// name is free.
func (g *Graph) addLocked(n *Node) {
	n.ID = len(g.nodes)
	// A loop's NextIteration is added after the Merge that reads it, and
	// so may already have consumers.
	n.consumers = growConsumers(n.consumers, len(n.OutTypes))
	if n.OutShapes == nil {
		n.OutShapes = make([]tensor.PartialShape, len(n.OutTypes))
	}
	g.nodes = append(g.nodes, n)
	g.byName[n.Name] = n
	if g.badName == nil && !validNodeName.MatchString(n.Name) {
		g.badName = n
	}
	for i, in := range n.Inputs {
		in.Node.consumers = growConsumers(in.Node.consumers, len(in.Node.OutTypes))
		in.Node.consumers[in.Index] = append(in.Node.consumers[in.Index], Input{n, i})
	}
	for _, c := range n.Controls {
		c.controlOuts = append(c.controlOuts, n)
	}
	g.version.Add(1)
}

func growConsumers(c [][]Input, n int) [][]Input {
	if len(c) < n {
		c = append(c, make([][]Input, n-len(c))...)
	}
	return c
}
