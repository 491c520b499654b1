package graph

import (
	"fmt"
	"strings"

	"google.golang.org/protobuf/proto"

	"mstream/proto/tfpb"
	"mstream/status"
	"mstream/tensor"
)

// WhileLoop is a v1 while loop for AddWhileLoop (TF_FinishWhile). The caller
// built Cond and Body on Placeholders (CondInputs, BodyInputs) that stand for
// the loop variables; outputs are named by node name and index, as TF's C
// API names them when it copies the two graphs into the parent.
type WhileLoop struct {
	Name        string   // the loop's frame name and name scope
	Inputs      []Output // initial values of the loop variables, in the parent
	Cond        *Graph
	CondInputs  []TensorID // in Cond, one per loop variable
	CondOutput  TensorID   // in Cond: the bool that keeps the loop going
	Body        *Graph
	BodyInputs  []TensorID // in Body, one per loop variable
	BodyOutputs []TensorID // in Body, the next values, one per loop variable
}

// whileInputName names the loop's initial values inside the GraphDef that
// AddWhileLoop imports; the space keeps it apart from every node name.
const whileInputName = "while input"

// AddWhileLoop adds w to g as TF's BuildWhileLoop does: under a fresh name
// scope (w.Name, or w.Name_1, ... when taken) an Enter, Merge, Switch,
// NextIteration and Exit per loop variable and one LoopCond, with the cond
// graph copied under scope/cond and the body under scope/body. The
// Placeholders standing for the loop variables are left out; copied nodes
// that read no other copied node get a control input from the first Merge
// (cond) or Switch (body), so that they run once per iteration inside the
// frame. The node names, order and attrs are TF's, and so is the rule of one
// loop per frame name in a graph; it returns the Exit outputs. On error g is
// unchanged (TF may leave part of the loop behind).
func (g *Graph) AddWhileLoop(w *WhileLoop) ([]Output, error) {
	n := len(w.Inputs)
	if n == 0 || len(w.CondInputs) != n || len(w.BodyInputs) != n || len(w.BodyOutputs) != n {
		return nil, status.InvalidArg("while loop '%s': %d inputs, %d cond inputs, %d body inputs, %d body outputs", w.Name, n, len(w.CondInputs), len(w.BodyInputs), len(w.BodyOutputs))
	}
	condGD, bodyGD := w.Cond.ToGraphDef(), w.Body.ToGraphDef()

	g.mu.Lock()
	defer g.mu.Unlock()
	dtypes := make([]tensor.DType, n)
	for i, in := range w.Inputs {
		if err := g.checkOwnLocked(in.Node, w.Name); err != nil {
			return nil, err
		}
		dtypes[i] = in.DType()
	}
	scope := g.uniqueScopeLocked(w.Name)
	opName := func(op string, i int) string {
		if i == 0 {
			return scope + "/" + op
		}
		return fmt.Sprintf("%s/%s_%d", scope, op, i)
	}
	// The functions the cond and body call come along, as TF's CopyGraph
	// imports their whole GraphDefs.
	gd := &tfpb.GraphDef{Versions: &tfpb.VersionDef{Producer: g.producer, MinConsumer: g.minConsumer}}
	for _, sub := range []*tfpb.GraphDef{condGD, bodyGD} {
		if l := sub.GetLibrary(); l != nil {
			if gd.Library == nil {
				gd.Library = &tfpb.FunctionDefLibrary{}
			}
			gd.Library.Function = append(gd.Library.Function, l.Function...)
			gd.Library.Gradient = append(gd.Library.Gradient, l.Gradient...)
		}
	}
	node := func(name, op string, inputs []string, t tensor.DType, attrs map[string]*tfpb.AttrValue) {
		if attrs == nil {
			attrs = map[string]*tfpb.AttrValue{}
		}
		if t != 0 {
			attrs["T"] = AttrType(t)
		}
		gd.Node = append(gd.Node, &tfpb.NodeDef{Name: name, Op: op, Input: inputs, Attr: attrs})
	}
	inputMap := map[TensorID]Output{}
	for i := range n {
		key := TensorID{whileInputName, i}
		inputMap[key] = w.Inputs[i]
		node(opName("Enter", i), "Enter", []string{key.String()}, dtypes[i],
			map[string]*tfpb.AttrValue{"frame_name": AttrString(w.Name)})
	}
	for i := range n {
		node(opName("Merge", i), "Merge", []string{opName("Enter", i), opName("NextIteration", i)}, dtypes[i],
			map[string]*tfpb.AttrValue{"N": AttrInt(2)})
	}

	condMap := map[TensorID]copiedTensor{}
	for i, id := range w.CondInputs {
		condMap[id] = copiedTensor{opName("Merge", i), dtypes[i]}
	}
	condOut, err := copyLoopGraph(gd, w.Cond, condGD, scope+"/cond/", condMap, opName("Merge", 0), []TensorID{w.CondOutput})
	if err != nil {
		return nil, err
	}
	if t := condOut[0].dtype; t != tensor.Bool {
		return nil, status.InvalidArg("BuildWhileLoop: 'cond' argument must return a boolean output, got %s", t)
	}
	node(scope+"/LoopCond", "LoopCond", []string{condOut[0].ref}, 0, nil)
	for i := range n {
		node(opName("Switch", i), "Switch", []string{opName("Merge", i), scope + "/LoopCond"}, dtypes[i], nil)
	}

	bodyMap := map[TensorID]copiedTensor{}
	for i, id := range w.BodyInputs {
		bodyMap[id] = copiedTensor{opName("Switch", i) + ":1", dtypes[i]}
	}
	bodyOut, err := copyLoopGraph(gd, w.Body, bodyGD, scope+"/body/", bodyMap, opName("Switch", 0), w.BodyOutputs)
	if err != nil {
		return nil, err
	}
	for i := range n {
		node(opName("NextIteration", i), "NextIteration", []string{bodyOut[i].ref}, bodyOut[i].dtype, nil)
	}
	if g.whileFrames[w.Name] != nil {
		return nil, status.InvalidArg("WhileContext with frame name '%s' already exists", w.Name)
	}
	exits := make([]TensorID, n)
	for i := range n {
		node(opName("Exit", i), "Exit", []string{opName("Switch", i)}, dtypes[i], nil)
		exits[i] = TensorID{opName("Exit", i), 0}
	}
	ret := []TensorID{{scope + "/LoopCond", 0}}
	for i := range n {
		ret = append(ret, TensorID{opName("Switch", i), 1})
	}
	for _, o := range bodyOut {
		id, err := ParseTensorID(o.ref)
		if err != nil {
			return nil, err
		}
		ret = append(ret, id)
	}
	var enters []string
	for i := range n {
		enters = append(enters, opName("Enter", i))
	}
	res, err := g.importGraphDefLocked(gd, &ImportOptions{InputMap: inputMap, ReturnOutputs: append(exits, ret...), ReturnOperations: enters})
	if err != nil {
		return nil, err
	}
	r := res.ReturnOutputs
	wc := &WhileContext{Frame: w.Name, Enters: res.ReturnOperations, CondOutput: r[n],
		BodyInputs: r[n+1 : 2*n+1], BodyOutputs: r[2*n+1:]}
	for _, e := range r[:n] {
		wc.Exits = append(wc.Exits, e.Node)
	}
	if g.whileFrames == nil {
		g.whileFrames, g.whileExits = map[string]*WhileContext{}, map[*Node]*WhileContext{}
	}
	g.whileFrames[w.Name] = wc
	for _, e := range wc.Exits {
		g.whileExits[e] = wc
	}
	return r[:n], nil
}

// WhileContext is what a graph keeps of a loop AddWhileLoop built (TF's
// WhileContext): what the loop's gradient needs.
type WhileContext struct {
	Frame       string
	Enters      []*Node // one per loop variable
	Exits       []*Node
	CondOutput  Output   // the LoopCond
	BodyInputs  []Output // the Switch outputs the body reads (Switch:1)
	BodyOutputs []Output // the next values
}

// WhileContextOf is the loop whose Exit n is, or nil: n is no Exit, or its
// loop was imported (TF keeps no WhileContext for those either).
func (g *Graph) WhileContextOf(n *Node) *WhileContext {
	g.mu.RLock()
	defer g.mu.RUnlock()
	return g.whileExits[n]
}

// Loop is a while loop that BuildLoop builds in place, TF's BuildWhileLoop
// with its cond and body callbacks: the callbacks add the cond's and the
// body's nodes to the graph themselves (a node that reads no other must
// take a control input from the first Merge or Switch, to run in the
// loop's frame). Unlike AddWhileLoop's, such a loop is not recorded as a
// WhileContext (TF builds gradient loops so).
type Loop struct {
	Scope  string // name scope of the control-flow nodes, unique already
	Frame  string
	Inputs []Output
	// Cond returns the predicate from the Merge outputs; Body the next
	// values from the Switch:1 outputs, one per loop variable.
	Cond func(merges []Output) (Output, error)
	Body func(ins []Output) ([]Output, error)
}

// BuildLoop adds l to g with TF's names (scope/Enter, scope/Merge_1, ...,
// scope/LoopCond) and returns the Exit outputs and the LoopCond output.
// Each Merge reads its NextIteration before the body exists: the node is
// reserved and added once the body is built. When the cond or body fails,
// the loop closes over its Merge outputs, so that the nodes already added
// still form a valid graph, and the error is returned.
func (g *Graph) BuildLoop(l *Loop) (exits []Output, pred Output, err error) {
	n := len(l.Inputs)
	name := func(op string, i int) string {
		if i == 0 {
			return l.Scope + "/" + op
		}
		return fmt.Sprintf("%s/%s_%d", l.Scope, op, i)
	}
	build := func(op, nm string, attrs map[string]*tfpb.AttrValue, ins ...Output) (*Node, error) {
		b := g.NewBuilder(op, nm)
		for _, in := range ins {
			b.AddInput(in)
		}
		for k, v := range attrs {
			b.SetAttr(k, v)
		}
		return b.Finish()
	}
	merges := make([]Output, n)
	nexts := make([]*Node, n)
	for i, in := range l.Inputs {
		e, err := build("Enter", name("Enter", i), map[string]*tfpb.AttrValue{"frame_name": AttrString(l.Frame)}, in)
		if err != nil {
			return nil, Output{}, err
		}
		merges[i] = e.Output(0) // replaced below
	}
	nextDef := g.OpDef("NextIteration")
	g.mu.Lock()
	if g.backEdges == nil {
		g.backEdges = map[*Node]bool{}
	}
	for i := range n {
		t := merges[i].DType()
		nexts[i] = &Node{ID: -1, Name: name("NextIteration", i), Op: "NextIteration", Def: nextDef,
			Attrs: map[string]*tfpb.AttrValue{}, OutTypes: []tensor.DType{t}}
		g.backEdges[nexts[i]] = true
	}
	g.mu.Unlock()
	for i := range n {
		b := g.NewBuilder("Merge", name("Merge", i))
		b.AddInputList([]Output{merges[i], nexts[i].Output(0)})
		m, err := b.Finish()
		if err != nil {
			g.dropBackEdges(nexts)
			return nil, Output{}, err
		}
		merges[i] = m.Output(0)
	}
	// From here on every reserved NextIteration is added, over the body's
	// output or, when building failed, over its Merge.
	next := append([]Output(nil), merges...)
	defer func() {
		if cerr := g.closeLoop(nexts, next, merges); cerr != nil && err == nil {
			err = cerr
		}
	}()
	c, err := l.Cond(merges)
	if err != nil {
		return nil, Output{}, err
	}
	lc, err := build("LoopCond", name("LoopCond", 0), nil, c)
	if err != nil {
		return nil, Output{}, err
	}
	trues, falses := make([]Output, n), make([]Output, n)
	for i := range n {
		sw, err := build("Switch", name("Switch", i), nil, merges[i], lc.Output(0))
		if err != nil {
			return nil, Output{}, err
		}
		falses[i], trues[i] = sw.Output(0), sw.Output(1)
	}
	outs, err := l.Body(trues)
	if err != nil {
		return nil, Output{}, err
	}
	if len(outs) != n {
		return nil, Output{}, status.InvalidArg("BuildWhileLoop: 'body' argument expected to return %d output(s), got %d", n, len(outs))
	}
	copy(next, outs)
	for i := range n {
		x, err := build("Exit", name("Exit", i), nil, falses[i])
		if err != nil {
			return nil, Output{}, err
		}
		exits = append(exits, x.Output(0))
	}
	return exits, lc.Output(0), nil
}

func (g *Graph) dropBackEdges(nexts []*Node) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, nx := range nexts {
		delete(g.backEdges, nx)
	}
}

// closeLoop adds each reserved NextIteration over its value, or over its
// Merge when the value will not do.
func (g *Graph) closeLoop(nexts []*Node, vals, merges []Output) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	defer g.publishLocked() // on every return, the ones added so far
	var first error
	for i, nx := range nexts {
		delete(g.backEdges, nx)
		v := vals[i]
		err := g.checkOwnLocked(v.Node, nx.Name)
		if err == nil && g.byName[nx.Name] != nil {
			err = status.InvalidArg("Duplicate node name in graph: '%s' (op NextIteration)", nx.Name)
		}
		if err == nil && v.DType() != nx.OutTypes[0] {
			err = status.InvalidArg("Node '%s': the loop's body returns %s for a loop variable of %s", nx.Name, v.DType(), nx.OutTypes[0])
		}
		if err == nil {
			nx.Attrs = map[string]*tfpb.AttrValue{}
			err = resolveNode(nx, [][]Output{{v}})
		}
		if err == nil {
			err = inferNode(nx, nil)
		}
		if err != nil {
			// Keep the graph valid: the Merge's own output comes back.
			if first == nil {
				first = err
			}
			nx.Attrs = map[string]*tfpb.AttrValue{}
			if rerr := resolveNode(nx, [][]Output{{merges[i]}}); rerr != nil {
				return rerr
			}
			_ = inferNode(nx, nil)
		}
		g.addLocked(nx)
	}
	return first
}

// uniqueScopeLocked is TF's Scope::NewSubScope under NewInternalScope: name,
// unless a node or a name scope ('/'-prefix of a node name) already has it,
// then name_1, name_2, ...
func (g *Graph) uniqueScopeLocked(name string) string {
	used := func(s string) bool { return g.byName[s] != nil || g.prefixUsedLocked(s) }
	if !used(name) {
		return name
	}
	for k := 1; ; k++ {
		if s := fmt.Sprintf("%s_%d", name, k); !used(s) {
			return s
		}
	}
}

// copiedTensor is a tensor of a cond or body graph as the loop's GraphDef
// names it, with its dtype.
type copiedTensor struct {
	ref   string
	dtype tensor.DType
}

// copyLoopGraph appends the nodes of src (whose GraphDef is sd) to gd under
// prefix, as TF's CopyGraph imports them: inputs in mapped replaced, nodes
// whose every output is mapped skipped, and a control input from ctrl on
// every copied node that reads no other copied node. It returns the copies
// of the tensors in ret.
func copyLoopGraph(gd *tfpb.GraphDef, src *Graph, sd *tfpb.GraphDef, prefix string, mapped map[TensorID]copiedTensor, ctrl string, ret []TensorID) ([]copiedTensor, error) {
	skipped := map[string]bool{}
	for _, nd := range sd.Node {
		k := src.Lookup(nd.Name).NumOutputs()
		all := k > 0
		for i := 0; i < k && all; i++ {
			_, all = mapped[TensorID{nd.Name, i}]
		}
		skipped[nd.Name] = all
	}
	for _, nd := range sd.Node {
		if skipped[nd.Name] {
			continue
		}
		c := proto.Clone(nd).(*tfpb.NodeDef)
		c.Name = prefix + nd.Name
		c.Input = c.Input[:0]
		inherits := false
		for _, s := range nd.Input {
			id, err := ParseTensorID(s)
			if err != nil {
				return nil, status.InvalidArg("Node '%s': %v", nd.Name, err)
			}
			if m, ok := mapped[id]; ok && id.Index >= 0 {
				c.Input = append(c.Input, m.ref)
				continue
			}
			if skipped[id.Name] {
				return nil, status.InvalidArg("Node '%s' had a back edge, but only Merge nodes can have back edges.", c.Name)
			}
			inherits = true
			c.Input = append(c.Input, TensorID{prefix + id.Name, id.Index}.String())
		}
		if !inherits && !hasControl(c.Input, ctrl) {
			c.Input = append(c.Input, "^"+ctrl)
		}
		if l := c.Attr["_class"].GetList(); l != nil {
			for j, s := range l.S {
				if strings.HasPrefix(string(s), "loc:@") {
					l.S[j] = []byte("loc:@" + prefix + string(s[5:]))
				}
			}
		}
		gd.Node = append(gd.Node, c)
	}
	out := make([]copiedTensor, len(ret))
	for i, id := range ret {
		if m, ok := mapped[id]; ok {
			out[i] = m
			continue
		}
		n := src.Lookup(id.Name)
		if n == nil {
			return nil, status.InvalidArg("Requested return tensor '%s:%d' not found in graph def", id.Name, id.Index)
		}
		if id.Index < 0 || id.Index >= n.NumOutputs() {
			return nil, status.InvalidArg("Invalid return output %d of node '%s', which has %d output(s)", id.Index, id.Name, n.NumOutputs())
		}
		out[i] = copiedTensor{TensorID{prefix + id.Name, id.Index}.String(), n.OutTypes[id.Index]}
	}
	return out, nil
}

// hasControl reports whether inputs already end in control input ^name.
func hasControl(inputs []string, name string) bool {
	for i := len(inputs) - 1; i >= 0 && strings.HasPrefix(inputs[i], "^"); i-- {
		if inputs[i] == "^"+name {
			return true
		}
	}
	return false
}
