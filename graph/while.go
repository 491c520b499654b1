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
	if g.whileFrames[w.Name] {
		return nil, status.InvalidArg("WhileContext with frame name '%s' already exists", w.Name)
	}
	exits := make([]TensorID, n)
	for i := range n {
		node(opName("Exit", i), "Exit", []string{opName("Switch", i)}, dtypes[i], nil)
		exits[i] = TensorID{opName("Exit", i), 0}
	}
	res, err := g.importGraphDefLocked(gd, &ImportOptions{InputMap: inputMap, ReturnOutputs: exits})
	if err != nil {
		return nil, err
	}
	if g.whileFrames == nil {
		g.whileFrames = map[string]bool{}
	}
	g.whileFrames[w.Name] = true
	return res.ReturnOutputs, nil
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
