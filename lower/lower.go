package lower

import (
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"

	"mstream/graph"
	"mstream/proto/tfpb"
	"mstream/status"
	"mstream/tensor"
)

// Result is the lowered signature: the same feeds, fetches and targets,
// pointing into the lowered copy where a node was replaced or copied.
type Result struct {
	Feeds   []graph.Output
	Fetches []graph.Output
	Targets []*graph.Node
	// Calls counts the function bodies inlined (a lowered If or While
	// counts its branches or cond and body).
	Calls int
}

// Functional reports whether a node of op is inlined or lowered here: a
// call op, a functional control-flow op, or a call by function name (g's
// library has op).
func Functional(g *graph.Graph, op string) bool {
	switch op {
	case "PartitionedCall", "StatefulPartitionedCall", "If", "StatelessIf", "Case", "StatelessCase", "While", "StatelessWhile", "For", "SymbolicGradient":
		return true
	}
	return graph.LookupOpDef(op) == nil && g.FunctionLocked(op) != nil
}

// Lower inlines every function call and lowers every If, Case and While
// among the nodes that (feeds, fetches, targets) needs, and returns the
// signature over the lowered copy. Without such a node it returns its
// arguments. The caller holds g's read lock.
func Lower(g *graph.Graph, feeds, fetches []graph.Output, targets []*graph.Node) (Result, error) {
	return lower(g, feeds, fetches, targets, MaxNodes)
}

func lower(g *graph.Graph, feeds, fetches []graph.Output, targets []*graph.Node, maxNodes int) (Result, error) {
	same := Result{Feeds: feeds, Fetches: fetches, Targets: targets}
	order := needed(feeds, fetches, targets)
	any := false
	for _, n := range order {
		if Functional(g, n.Op) {
			any = true
			break
		}
	}
	if !any {
		return same, nil
	}
	res, again, err := lowerOnce(g, order, feeds, fetches, targets, false, maxNodes)
	if again {
		res, _, err = lowerOnce(g, order, feeds, fetches, targets, true, maxNodes)
	}
	return res, err
}

// needed returns the nodes the Run needs, found as exec.Build prunes (back
// from the fetches and targets, stopping at fed outputs), by ID.
func needed(feeds, fetches []graph.Output, targets []*graph.Node) []*graph.Node {
	fed := map[graph.Output]bool{}
	for _, f := range feeds {
		fed[f] = true
	}
	seen := map[*graph.Node]bool{}
	var stack, order []*graph.Node
	push := func(n *graph.Node) {
		if !seen[n] {
			seen[n] = true
			stack = append(stack, n)
			order = append(order, n)
		}
	}
	for _, f := range fetches {
		if !fed[f] {
			push(f.Node)
		}
	}
	for _, t := range targets {
		push(t)
	}
	for len(stack) > 0 {
		n := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for _, in := range n.Inputs {
			if !fed[in] {
				push(in.Node)
			}
		}
		for _, c := range n.Controls {
			push(c)
		}
	}
	sort.Slice(order, func(i, j int) bool { return order[i].ID < order[j].ID })
	return order
}

// lowerer holds one Lower's state. Every node it makes is detached (see
// graph.NewDetached) with an ID above the graph's, in creation order.
type lowerer struct {
	g        *graph.Graph
	maxNodes int
	nextID   int
	names    map[string]bool // names given to new nodes
	// outs and done say what replaced an expanded node: its outputs and
	// the node a control edge on it now waits for. Copies of ordinary
	// nodes are in copied.
	outs   map[graph.Output]graph.Output
	done   map[*graph.Node]*graph.Node
	copied map[*graph.Node]*graph.Node
	made   []*graph.Node // every new node, for the back-edge fix-up
	stack  []string      // the functions being inlined, outermost first
	sites  []string      // the functional nodes being expanded, outermost first
	calls  int
}

// InlinedFromAttr is the attr of a node made by lowering that lists the
// functional nodes it was expanded from, outermost first (a body node of
// call c inside If i: [i, c]). The OpDefs do not declare it (an undeclared
// attr is kept and ignored, as in TF); node-level stream assignment reads
// it so that a node no TF_STREAM_FROM_FILE rule names follows its call.
const InlinedFromAttr = "_mstream_inlined_from"

// lowerOnce rewrites order. Without copyAll it copies only the nodes
// whose inputs changed; if a loop's back edge then points from an
// uncopied Merge to a copied NextIteration it reports again, and the
// caller reruns with copyAll, which copies every node and patches the
// back edges after.
func lowerOnce(g *graph.Graph, order []*graph.Node, feeds, fetches []graph.Output, targets []*graph.Node, copyAll bool, maxNodes int) (Result, bool, error) {
	l := &lowerer{g: g, maxNodes: maxNodes, names: map[string]bool{}, outs: map[graph.Output]graph.Output{},
		done: map[*graph.Node]*graph.Node{}, copied: map[*graph.Node]*graph.Node{}}
	v1 := false
	for _, n := range order {
		l.nextID = max(l.nextID, n.ID+1)
		switch n.Op {
		case "Switch", "RefSwitch", "Enter", "RefEnter":
			v1 = true
		}
	}
	for _, n := range order {
		ins := make([]graph.Output, len(n.Inputs))
		changed := copyAll
		for i, in := range n.Inputs {
			ins[i] = l.out(in)
			changed = changed || ins[i] != in
		}
		ctrls := make([]*graph.Node, len(n.Controls))
		for i, c := range n.Controls {
			ctrls[i] = l.ctrl(c)
			changed = changed || ctrls[i] != c
		}
		if Functional(g, n.Op) {
			var src []*graph.Node
			if v1 && len(ins) > 0 {
				// The call may sit in a v1 loop or branch: its body's
				// nodes without inputs must run in the frame and
				// deadness of its inputs, as TF's inliner makes them
				// wait on an input control node.
				var err error
				if src, err = l.inputControl(n, ins); err != nil {
					return Result{}, false, err
				}
			}
			outs, done, err := l.expand(n, ins, ctrls, src)
			if err != nil {
				return Result{}, false, err
			}
			for i, o := range outs {
				l.outs[n.Output(i)] = o
			}
			l.done[n] = done
			continue
		}
		if changed {
			c := n.Rewired(ins, ctrls)
			l.copied[n] = c
			l.made = append(l.made, c)
		}
	}
	// Back edges: a Merge built before the NextIteration that feeds it.
	for _, n := range order {
		if l.copied[n] != nil || l.done[n] != nil {
			continue
		}
		for _, in := range n.Inputs {
			if l.out(in) != in {
				return Result{}, true, nil
			}
		}
	}
	for _, c := range l.made {
		for i, in := range c.Inputs {
			c.Inputs[i] = l.out(in)
		}
	}
	res := Result{Feeds: make([]graph.Output, len(feeds)), Fetches: make([]graph.Output, len(fetches)),
		Targets: make([]*graph.Node, len(targets)), Calls: l.calls}
	for i, f := range feeds {
		res.Feeds[i] = l.out(f)
	}
	for i, f := range fetches {
		res.Fetches[i] = l.out(f)
	}
	for i, t := range targets {
		res.Targets[i] = l.ctrl(t)
	}
	return res, false, nil
}

// inputControl makes <n>/input_control_node, a NoOp after every node n
// reads from.
func (l *lowerer) inputControl(n *graph.Node, ins []graph.Output) ([]*graph.Node, error) {
	var preds []*graph.Node
	for _, in := range ins {
		if !slices.Contains(preds, in.Node) {
			preds = append(preds, in.Node)
		}
	}
	c, err := l.node("NoOp", l.name(n.Name+"/input_control_node"), n.Device, nil, preds, nil, nil)
	if err != nil {
		return nil, err
	}
	return []*graph.Node{c}, nil
}

// out maps an output to what replaced it.
func (l *lowerer) out(o graph.Output) graph.Output {
	if r, ok := l.outs[o]; ok {
		return r
	}
	if c := l.copied[o.Node]; c != nil {
		return graph.Output{Node: c, Index: o.Index}
	}
	return o
}

// ctrl maps a control input to what replaced it.
func (l *lowerer) ctrl(n *graph.Node) *graph.Node {
	if d := l.done[n]; d != nil {
		return d
	}
	if c := l.copied[n]; c != nil {
		return c
	}
	return n
}

// name returns want, or want_1, want_2, ... if a node of the graph or of
// this lowering has it already.
func (l *lowerer) name(want string) string {
	n := want
	for k := 1; l.names[n] || l.g.LookupLocked(n) != nil; k++ {
		n = want + "_" + strconv.Itoa(k)
	}
	l.names[n] = true
	return n
}

// MaxNodes bounds the nodes one Lower makes. Inlining copies a body per
// call, so a library of functions each calling the next twice grows
// exponentially; TF would exhaust memory on it, here the plan fails with
// RESOURCE_EXHAUSTED naming the call instead. Real models stay far below.
const MaxNodes = 1 << 20

// node makes a detached node. srcCtrl is added to its controls when it
// has no data input, so a node with no inputs (a Const in a branch or a
// loop body) runs in the frame and deadness of the place it was put.
func (l *lowerer) node(op, name, device string, ins []graph.Output, ctrls, srcCtrl []*graph.Node, attrs map[string]*tfpb.AttrValue) (*graph.Node, error) {
	def := graph.LookupOpDef(op)
	if def == nil {
		def = l.g.FunctionLocked(op).GetSignature()
	}
	if def == nil {
		return nil, status.Errorf(status.NotFound, "Op type not registered '%s' in binary (node '%s')", op, name)
	}
	if len(ins) == 0 {
		ctrls = append(append([]*graph.Node(nil), ctrls...), srcCtrl...)
	}
	if len(l.sites) > 0 {
		attrs = maps.Clone(attrs)
		if attrs == nil {
			attrs = map[string]*tfpb.AttrValue{}
		}
		attrs[InlinedFromAttr] = graph.AttrStringList(l.sites)
	}
	if len(l.made) >= l.maxNodes {
		site := name
		if len(l.sites) > 0 {
			site = l.sites[0]
		}
		return nil, status.Errorf(status.ResourceExhausted, "Node '%s': inlining its functions makes more than %d nodes", site, l.maxNodes)
	}
	n, err := graph.NewDetachedFlat(l.nextID, def, op, name, device, ins, ctrls, attrs)
	if err != nil {
		return nil, err
	}
	l.nextID++
	l.made = append(l.made, n)
	return n, nil
}

// expand replaces the functional node n (its inputs and controls already
// mapped) by its inlined or lowered form and returns the outputs that
// stand for n's and the node that stands for n in control edges.
func (l *lowerer) expand(n *graph.Node, ins []graph.Output, ctrls, srcCtrl []*graph.Node) ([]graph.Output, *graph.Node, error) {
	l.sites = append(l.sites, n.Name)
	defer func() { l.sites = l.sites[:len(l.sites)-1] }()
	switch n.Op {
	case "PartitionedCall", "StatefulPartitionedCall":
		f := n.Attrs["f"].GetFunc()
		return l.call(n, f.GetName(), f.GetAttr(), ins, ctrls, srcCtrl)
	case "If", "StatelessIf":
		return l.lowerIf(n, ins, ctrls, srcCtrl)
	case "Case", "StatelessCase":
		return l.lowerCase(n, ins, ctrls, srcCtrl)
	case "While", "StatelessWhile":
		return l.lowerWhile(n, ins, ctrls, srcCtrl)
	case "For":
		return l.lowerFor(n, ins, ctrls, srcCtrl)
	case "SymbolicGradient":
		return l.lowerSymbolicGradient(n, ins, ctrls, srcCtrl)
	}
	return l.call(n, n.Op, n.Attrs, ins, ctrls, srcCtrl)
}

// call inlines function fn, instantiated with attrs, in place of n: the
// body's nodes are named <n>/<body node>, and an IdentityN named n (a
// NoOp when fn has no outputs) stands for n, after fn's control outputs.
func (l *lowerer) call(n *graph.Node, fn string, attrs map[string]*tfpb.AttrValue, ins []graph.Output, ctrls, srcCtrl []*graph.Node) ([]graph.Output, *graph.Node, error) {
	rets, ctrlRets, err := l.inline(n.Name, n.Name, n.Device, fn, attrs, ins, ctrls, srcCtrl)
	if err != nil {
		return nil, nil, err
	}
	return l.callOuts(n, fn, rets, ctrlRets, ctrls, srcCtrl)
}

// callOuts checks an inlined function's outputs against call n's and
// makes n's stand-in.
func (l *lowerer) callOuts(n *graph.Node, fn string, rets []graph.Output, ctrlRets, ctrls, srcCtrl []*graph.Node) ([]graph.Output, *graph.Node, error) {
	if len(rets) != n.NumOutputs() {
		return nil, nil, status.InvalidArg("Node '%s': function '%s' returns %d outputs, the call has %d", n.Name, fn, len(rets), n.NumOutputs())
	}
	for i, o := range rets {
		if o.DType() != n.OutTypes[i] {
			return nil, nil, status.InvalidArg("Node '%s': function '%s': output %d is %v, the call wants %v", n.Name, fn, i, o.DType(), n.OutTypes[i])
		}
	}
	return l.standIn(n.Name, n.Device, rets, ctrlRets, append(append([]*graph.Node(nil), ctrls...), srcCtrl...))
}

// standIn makes the node named name that a lowered node's consumers read:
// an IdentityN of outs after ctrls, or a NoOp after ctrls (ifNone when
// ctrls is empty) when there are no outputs. name is the replaced node's
// own or one reserved by l.name, so it is used as is.
func (l *lowerer) standIn(name, device string, outs []graph.Output, ctrls, ifNone []*graph.Node) ([]graph.Output, *graph.Node, error) {
	if len(outs) == 0 {
		if len(ctrls) == 0 {
			ctrls = ifNone
		}
		d, err := l.node("NoOp", name, device, nil, ctrls, nil, nil)
		return nil, d, err
	}
	types := make([]tensor.DType, len(outs))
	for i, o := range outs {
		types[i] = o.DType()
	}
	d, err := l.node("IdentityN", name, device, outs, ctrls, nil, map[string]*tfpb.AttrValue{"T": graph.AttrTypeList(types)})
	if err != nil {
		return nil, nil, err
	}
	res := make([]graph.Output, len(outs))
	for i := range outs {
		res[i] = d.Output(i)
	}
	return res, d, nil
}

// inline expands the body of fn with ins as its arguments. Body nodes are
// named prefix/<node name> and ask for their own device, else device.
// ctrls (the call's control inputs) go to every body node that reads an
// argument or has no input; srcCtrl to every node without a data input.
// It returns the values of fn's outputs and its control outputs. site
// names the call in errors.
func (l *lowerer) inline(site, prefix, device, fn string, attrs map[string]*tfpb.AttrValue, ins []graph.Output, ctrls, srcCtrl []*graph.Node) ([]graph.Output, []*graph.Node, error) {
	fd := l.g.FunctionLocked(fn)
	if fd == nil {
		// TF's message, from its function runtime.
		return nil, nil, status.InvalidArg("Node '%s': Failed to find function \"%s\" in function library: the graph's library has no such function", site, fn)
	}
	return l.inlineDef(site, prefix, device, fd, attrs, ins, ctrls, srcCtrl)
}

// inlineDef is inline of a FunctionDef that need not be in the library (a
// gradient function built at plan time).
func (l *lowerer) inlineDef(site, prefix, device string, fd *tfpb.FunctionDef, attrs map[string]*tfpb.AttrValue, ins []graph.Output, ctrls, srcCtrl []*graph.Node) ([]graph.Output, []*graph.Node, error) {
	fn := fd.GetSignature().GetName()
	for i, f := range l.stack {
		if f == fn {
			return nil, nil, status.InvalidArg("Node '%s': function '%s' calls itself (%s -> %s): recursive functions cannot be inlined",
				site, fn, strings.Join(l.stack[i:], " -> "), fn)
		}
	}
	l.stack = append(l.stack, fn)
	defer func() { l.stack = l.stack[:len(l.stack)-1] }()
	l.calls++
	wrap := func(err error) error {
		return status.Errorf(status.CodeOf(err), "Node '%s': %s", site, err.Error())
	}
	fi, err := graph.Instantiate(fd, attrs)
	if err != nil {
		return nil, nil, wrap(err)
	}
	if len(ins) != len(fi.InTypes) {
		return nil, nil, status.InvalidArg("Node '%s': function '%s' takes %d inputs, given %d", site, fn, len(fi.InTypes), len(ins))
	}
	for i, in := range ins {
		if in.DType() != fi.InTypes[i] {
			return nil, nil, status.InvalidArg("Node '%s': function '%s': input %d is %v, the signature wants %v", site, fn, i, in.DType(), fi.InTypes[i])
		}
	}

	body := map[string]*graph.Node{}  // body node name -> its node (a call site for a functional one)
	stand := map[string]*graph.Node{} // a functional body node's control stand-in
	for _, nd := range fi.Order {
		var flat []graph.Output
		var nctrls []*graph.Node
		readsArg := false
		for _, s := range nd.Input {
			if strings.HasPrefix(s, "^") {
				b := body[s[1:]]
				if d := stand[s[1:]]; d != nil {
					b = d
				}
				nctrls = append(nctrls, b)
				continue
			}
			os, err := fi.Refs(s, ins, body)
			if err != nil {
				return nil, nil, status.InvalidArg("Node '%s': function '%s': node '%s': %v", site, fn, nd.Name, err)
			}
			readsArg = readsArg || fi.IsArgRef(s)
			for _, o := range os {
				flat = append(flat, l.out(o))
			}
		}
		if readsArg || len(flat) == 0 && len(nctrls) == 0 {
			nctrls = append(nctrls, ctrls...)
		}
		nattrs, err := fi.NodeAttrs(nd)
		if err != nil {
			return nil, nil, wrap(err)
		}
		dev := nd.Device
		if dev == "" {
			dev = device
		}
		var src []*graph.Node
		if len(flat) == 0 && len(nctrls) == 0 {
			src = srcCtrl
		}
		b, err := l.node(nd.Op, l.name(prefix+"/"+nd.Name), dev, flat, nctrls, src, nattrs)
		if err != nil {
			return nil, nil, status.Errorf(status.CodeOf(err), "Node '%s': function '%s': %s", site, fn, err.Error())
		}
		if Functional(l.g, nd.Op) {
			// A call or control flow inside the body: b is only the
			// validated call site, expanded in its place. srcCtrl goes
			// on to the nested body's nodes without inputs, whether or
			// not the call has data inputs.
			l.made = l.made[:len(l.made)-1]
			outs, d, err := l.expand(b, flat, nctrls, srcCtrl)
			if err != nil {
				return nil, nil, err
			}
			for i, o := range outs {
				l.outs[b.Output(i)] = o
			}
			stand[nd.Name] = d
		}
		body[nd.Name] = b
	}

	rets, err := fi.Returns(ins, body)
	if err != nil {
		return nil, nil, wrap(err)
	}
	for i, o := range rets {
		rets[i] = l.out(o)
	}
	var ctrlRets []*graph.Node
	for _, name := range sortedKeys(fd.GetControlRet()) {
		nn := fd.GetControlRet()[name]
		b := body[nn]
		if d := stand[nn]; d != nil {
			b = d
		}
		if b == nil {
			return nil, nil, status.InvalidArg("Node '%s': function '%s': control output '%s' names '%s', which is not a body node", site, fn, name, nn)
		}
		ctrlRets = append(ctrlRets, b)
	}
	return rets, ctrlRets, nil
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}
