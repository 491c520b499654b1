package graph

import (
	"container/heap"
	"fmt"
	"strconv"
	"strings"

	"google.golang.org/protobuf/proto"

	"mstream/proto/pbparse"
	"mstream/proto/tfpb"
	"mstream/status"
	"mstream/tensor"
)

func parseGraphDef(b []byte) (*tfpb.GraphDef, error) {
	gd := &tfpb.GraphDef{}
	if err := pbparse.Binary("Invalid GraphDef", "", b, gd); err != nil {
		return nil, err
	}
	return gd, nil
}

func parseTextGraphDef(text []byte) (*tfpb.GraphDef, error) {
	gd := &tfpb.GraphDef{}
	if err := pbparse.Text("GraphDef", "", text, gd); err != nil {
		return nil, err
	}
	return gd, nil
}

// ParseTensorID splits a NodeDef input string: "n" -> (n,0), "n:2" -> (n,2),
// "^n" -> (n,-1).
func ParseTensorID(s string) (TensorID, error) {
	if strings.HasPrefix(s, "^") {
		if len(s) == 1 {
			return TensorID{}, fmt.Errorf("empty control input")
		}
		return TensorID{s[1:], -1}, nil
	}
	if i := strings.LastIndexByte(s, ':'); i >= 0 {
		k, err := strconv.Atoi(s[i+1:])
		if err != nil || k < 0 || i == 0 {
			return TensorID{}, fmt.Errorf("malformed input '%s'", s)
		}
		return TensorID{s[:i], k}, nil
	}
	if s == "" {
		return TensorID{}, fmt.Errorf("empty input")
	}
	return TensorID{s, 0}, nil
}

func (t TensorID) String() string {
	if t.Index < 0 {
		return "^" + t.Name
	}
	if t.Index == 0 {
		return t.Name
	}
	return fmt.Sprintf("%s:%d", t.Name, t.Index)
}

type pending struct {
	def     *tfpb.NodeDef
	node    *Node
	inputs  []TensorID // data inputs
	ctrls   []string
	deps    int // unresolved in-import predecessors
	outs    []int
	done    bool
	visited bool
}

func (g *Graph) importGraphDef(gd *tfpb.GraphDef, opts *ImportOptions) (*ImportResults, error) {
	if opts == nil {
		opts = &ImportOptions{}
	}
	if v := gd.GetVersions(); v != nil {
		if v.Producer < 0 {
			return nil, status.InvalidArg("GraphDef producer version %d below min producer 0", v.Producer)
		}
		if v.MinConsumer > DefaultProducer {
			return nil, status.InvalidArg("GraphDef min consumer version %d above current version %d for TensorFlow", v.MinConsumer, DefaultProducer)
		}
		for _, b := range v.BadConsumers {
			if b == DefaultProducer {
				return nil, status.InvalidArg("GraphDef disallows consumer version %d", b)
			}
		}
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.importGraphDefLocked(gd, opts)
}

// importGraphDefLocked is importGraphDef once the GraphDef's versions are
// checked; the caller holds mu for writing.
func (g *Graph) importGraphDefLocked(gd *tfpb.GraphDef, opts *ImportOptions) (*ImportResults, error) {
	prefix := opts.Prefix
	if prefix != "" && !strings.HasSuffix(prefix, "/") {
		prefix += "/"
	}
	if prefix != "" && !validNodeName.MatchString(strings.TrimSuffix(prefix, "/")) {
		return nil, status.InvalidArg("Imported node name prefix '%s' would lead to invalid node names", prefix)
	}
	if prefix != "" && opts.UniquifyPrefix {
		base := strings.TrimSuffix(prefix, "/")
		p := base
		for k := 1; g.prefixUsedLocked(p); k++ {
			p = fmt.Sprintf("%s_%d", base, k)
		}
		prefix = p + "/"
	}

	// The library comes first, as in TF's importer: the GraphDef's nodes
	// may call its functions. It is staged on a copy and committed with
	// the nodes, so a failed import leaves the library as it was too.
	lib := g.lib.clone()
	if err := lib.addLibrary(gd.GetLibrary()); err != nil {
		return nil, err
	}

	ps := make([]*pending, len(gd.Node))
	byName := make(map[string]int, len(gd.Node))
	newNames := map[string]bool{}
	for i, nd := range gd.Node {
		if nd == nil {
			return nil, status.InvalidArg("GraphDef has an empty NodeDef at %d", i)
		}
		if !validNodeName.MatchString(nd.Name) {
			return nil, status.InvalidArg("Node '%s': Node name contains invalid characters", nd.Name)
		}
		if _, dup := byName[nd.Name]; dup {
			return nil, status.InvalidArg("Node '%s' is not unique", nd.Name)
		}
		byName[nd.Name] = i
		def := lib.opDef(nd.Op)
		if def == nil {
			return nil, status.Errorf(status.NotFound, "Op type not registered '%s' in binary (node '%s')", nd.Op, nd.Name)
		}
		if dep := def.Deprecation; dep != nil && gd.GetVersions().GetProducer() >= dep.Version {
			return nil, status.Errorf(status.Unimplemented, "Node '%s': Op %s is not available in GraphDef version %d. It has been removed in version %d.", nd.Name, nd.Op, gd.GetVersions().GetProducer(), dep.Version)
		}
		name := prefix + nd.Name
		if opts.UniquifyNames {
			base := name
			for k := 1; g.byName[name] != nil || newNames[name]; k++ {
				name = fmt.Sprintf("%s_%d", base, k)
			}
		} else if g.byName[name] != nil {
			return nil, status.InvalidArg("Node name '%s' already exists in the Graph", name)
		}
		newNames[name] = true
		dev := nd.Device
		if dev == "" {
			dev = opts.DefaultDevice
		}
		attrs := make(map[string]*tfpb.AttrValue, len(nd.Attr))
		for k, v := range nd.Attr {
			if v == nil {
				v = &tfpb.AttrValue{}
			}
			attrs[k] = proto.Clone(v).(*tfpb.AttrValue)
		}
		if l := attrs["_class"].GetList(); l != nil && prefix != "" {
			for j, c := range l.S {
				if strings.HasPrefix(string(c), "loc:@") {
					l.S[j] = []byte("loc:@" + prefix + string(c[5:]))
				}
			}
		}
		p := &pending{def: nd, node: &Node{Name: name, Op: nd.Op, Def: def, Device: dev, Attrs: attrs}}
		seenCtrl := false
		for _, s := range nd.Input {
			id, err := ParseTensorID(s)
			if err != nil {
				return nil, status.InvalidArg("Node '%s': %v", nd.Name, err)
			}
			if id.Index < 0 {
				p.ctrls = append(p.ctrls, id.Name)
				seenCtrl = true
				continue
			}
			if seenCtrl {
				return nil, status.InvalidArg("Node '%s': Control dependencies must come after regular dependencies", nd.Name)
			}
			p.inputs = append(p.inputs, id)
		}
		ps[i] = p
	}

	// Edges inside the import, then a topological order (Kahn).
	used := map[TensorID]bool{}
	internal := func(id TensorID) (int, bool, error) {
		if id.Index >= 0 {
			if _, ok := opts.InputMap[id]; ok {
				used[id] = true
				return 0, false, nil
			}
		} else if controlRemap(opts, id.Name) != nil {
			return 0, false, nil
		}
		j, ok := byName[id.Name]
		if !ok {
			return 0, false, fmt.Errorf("unknown input node '%s'", id)
		}
		return j, true, nil
	}
	for i, p := range ps {
		for _, id := range p.inputs {
			j, in, err := internal(id)
			if err != nil {
				return nil, status.InvalidArg("Node '%s': %v", p.def.Name, err)
			}
			if in && IsNextIteration(ps[j].def.Op) {
				// A back edge of a v1 while loop: TF's graph_constructor
				// orders a Merge before the NextIteration that feeds it,
				// and so do we. A cycle through any other node is still
				// an error.
				continue
			}
			if in {
				p.deps++
				ps[j].outs = append(ps[j].outs, i)
			}
		}
		for _, c := range p.ctrls {
			j, in, err := internal(TensorID{c, -1})
			if err != nil {
				return nil, status.InvalidArg("Node '%s': %v", p.def.Name, err)
			}
			if in {
				p.deps++
				ps[j].outs = append(ps[j].outs, i)
			}
		}
	}
	// As TF's graph_constructor, the ready node earliest in the GraphDef goes
	// first, so a GraphDef already in topological order keeps its node order
	// (and TF_GraphNextOperation sees that order).
	var order []int
	ready := &indexHeap{}
	for i, p := range ps {
		if p.deps == 0 {
			heap.Push(ready, i)
		}
	}
	for ready.Len() > 0 {
		i := heap.Pop(ready).(int)
		order = append(order, i)
		for _, j := range ps[i].outs {
			if ps[j].deps--; ps[j].deps == 0 {
				heap.Push(ready, j)
			}
		}
	}
	if len(order) < len(ps) {
		var cyc []string
		for _, p := range ps {
			if p.deps > 0 {
				cyc = append(cyc, p.def.Name)
			}
		}
		if len(cyc) > 8 {
			cyc = append(cyc[:8], "...")
		}
		return nil, status.InvalidArg("GraphDef contains a cycle: nodes %s cannot be ordered", strings.Join(cyc, ", "))
	}

	// Build every node in order, reading only finished predecessors.
	for _, i := range order {
		p := ps[i]
		n := p.node
		hasInternal := false
		flat := make([]Output, len(p.inputs))
		for k, id := range p.inputs {
			if o, ok := opts.InputMap[id]; ok {
				if err := g.checkOwnLocked(o.Node, n.Name); err != nil || o.Index < 0 || o.Index >= len(o.Node.OutTypes) {
					return nil, status.InvalidArg("Node '%s': input map entry for '%s' names an invalid output", p.def.Name, id)
				}
				flat[k] = o
				continue
			}
			src := ps[byName[id.Name]].node
			hasInternal = true
			if src.OutTypes == nil && IsNextIteration(src.Op) {
				// The back edge's source is built later; its one
				// output has the type of its attr T. Its shape stays
				// unknown here, as in TF's shape refiner, so a loop's
				// Merge has an unknown shape.
				src.OutTypes = []tensor.DType{tensor.DType(src.Attrs["T"].GetType())}
			}
			if id.Index >= len(src.OutTypes) {
				return nil, status.InvalidArg("Node '%s': Connecting to invalid output %d of source node %s which has %d outputs", p.def.Name, id.Index, id.Name, len(src.OutTypes))
			}
			flat[k] = Output{src, id.Index}
		}
		for _, c := range p.ctrls {
			if r := controlRemap(opts, c); r != nil {
				if err := g.checkOwnLocked(r, n.Name); err != nil {
					return nil, err
				}
				n.Controls = append(n.Controls, r)
				continue
			}
			hasInternal = true
			n.Controls = append(n.Controls, ps[byName[c]].node)
		}
		if !hasInternal {
			for _, c := range opts.ControlDependencies {
				if err := g.checkOwnLocked(c, n.Name); err != nil {
					return nil, err
				}
				n.Controls = append(n.Controls, c)
			}
		}
		// A GraphDef's node carries every attr its op has no default for,
		// as TF's importer requires (TF_NewOperation infers type attrs
		// from the inputs; a GraphDef does not get that help).
		for _, ad := range n.Def.Attr {
			if _, ok := n.Attrs[ad.Name]; !ok && ad.DefaultValue == nil {
				return nil, status.InvalidArg("NodeDef missing attr '%s' from Op<name=%s>; NodeDef: {{node %s}}", ad.Name, n.Op, n.Name)
			}
		}
		sizes, err := argSizes(n)
		if err != nil {
			return nil, err
		}
		total := 0
		for _, s := range sizes {
			total += s
		}
		if total != len(flat) {
			return nil, status.InvalidArg("Node '%s' (op %s): expected %d inputs, got %d", n.Name, n.Op, total, len(flat))
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
		var declared []tensor.PartialShape
		if l := n.Attrs["_output_shapes"].GetList(); l != nil && len(l.Shape) == len(n.OutTypes) {
			for _, s := range l.Shape {
				declared = append(declared, tensor.ShapeFromProto(s))
			}
		}
		if err := inferNode(n, declared); err != nil {
			return nil, err
		}
		lib.refineCall(n, nil)
	}

	res := &ImportResults{}
	for _, id := range opts.ReturnOutputs {
		if o, ok := opts.InputMap[id]; ok {
			res.ReturnOutputs = append(res.ReturnOutputs, o)
			continue
		}
		j, ok := byName[id.Name]
		if !ok || id.Index < 0 || id.Index >= len(ps[j].node.OutTypes) {
			return nil, status.InvalidArg("Requested return tensor '%s' not found in graph def", id)
		}
		res.ReturnOutputs = append(res.ReturnOutputs, Output{ps[j].node, id.Index})
	}
	for _, name := range opts.ReturnOperations {
		j, ok := byName[name]
		if !ok {
			return nil, status.InvalidArg("Requested return node '%s' not found in graph def", name)
		}
		res.ReturnOperations = append(res.ReturnOperations, ps[j].node)
	}
	for _, id := range sortedInputMap(opts.InputMap) {
		if !used[id] {
			if _, ok := byName[id.Name]; !ok {
				res.MissingUnusedInputMappings = append(res.MissingUnusedInputMappings, id)
			}
		}
	}
	if lib.changed(&g.lib) {
		g.lib = lib
		g.version.Add(1)
	}
	for _, i := range order {
		g.addLocked(ps[i].node)
	}
	g.publishLocked()
	// As TF's UpdateVersionDef does when importing into a graph: the oldest
	// producer and the strictest consumer requirement win.
	v := gd.GetVersions()
	g.producer = min(g.producer, v.GetProducer())
	g.minConsumer = max(g.minConsumer, v.GetMinConsumer())
	return res, nil
}

func (g *Graph) prefixUsedLocked(p string) bool {
	if g.byName[p] != nil {
		return true
	}
	for name := range g.byName {
		if strings.HasPrefix(name, p+"/") {
			return true
		}
	}
	return false
}

func sortedInputMap(m map[TensorID]Output) []TensorID {
	ids := make([]TensorID, 0, len(m))
	for id := range m {
		ids = append(ids, id)
	}
	for i := 1; i < len(ids); i++ {
		for j := i; j > 0 && (ids[j].Name < ids[j-1].Name || ids[j].Name == ids[j-1].Name && ids[j].Index < ids[j-1].Index); j-- {
			ids[j], ids[j-1] = ids[j-1], ids[j]
		}
	}
	return ids
}

func (g *Graph) toGraphDef() *tfpb.GraphDef {
	g.mu.RLock()
	defer g.mu.RUnlock()
	gd := &tfpb.GraphDef{Versions: &tfpb.VersionDef{Producer: g.producer, MinConsumer: g.minConsumer}, Library: g.lib.toProto()}
	for _, n := range g.nodes {
		gd.Node = append(gd.Node, n.nodeDefLocked())
	}
	return gd
}

func (n *Node) nodeDef() *tfpb.NodeDef { return n.nodeDefLocked() }

// nodeDefLocked reads only fields fixed at creation, so any lock (or none) will do.
func (n *Node) nodeDefLocked() *tfpb.NodeDef {
	nd := &tfpb.NodeDef{Name: n.Name, Op: n.Op, Device: n.Device, Attr: make(map[string]*tfpb.AttrValue, len(n.Attrs))}
	for _, in := range n.Inputs {
		nd.Input = append(nd.Input, in.String())
	}
	for _, c := range n.Controls {
		nd.Input = append(nd.Input, "^"+c.Name)
	}
	for k, v := range n.Attrs {
		nd.Attr[k] = proto.Clone(v).(*tfpb.AttrValue)
	}
	return nd
}

// controlRemap finds the existing node that replaces control input "^name"
// of the GraphDef; the map may be keyed by "name" or by "^name".
func controlRemap(opts *ImportOptions, name string) *Node {
	if n := opts.ControlRemap[name]; n != nil {
		return n
	}
	return opts.ControlRemap["^"+name]
}

// indexHeap is a min-heap of GraphDef node indexes.
type indexHeap []int

func (h indexHeap) Len() int           { return len(h) }
func (h indexHeap) Less(i, j int) bool { return h[i] < h[j] }
func (h indexHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *indexHeap) Push(x any)        { *h = append(*h, x.(int)) }
func (h *indexHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// IsNextIteration reports whether op is NextIteration or RefNextIteration,
// whose out-edges are the back edges of TF's v1 while loops: the only
// edges a graph may have on a cycle.
func IsNextIteration(op string) bool {
	return op == "NextIteration" || op == "RefNextIteration"
}
