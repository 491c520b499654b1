package graph

import (
	"fmt"
	"regexp"
	"sort"

	"google.golang.org/protobuf/proto"

	"mstream/proto/tfpb"
	"mstream/status"
	"mstream/tensor"
)

// validNodeName is TF's rule for the names of imported nodes
// (graph_constructor.cc's IsValidNodeName without internal ops): pieces
// joined by '>', each starting with a letter, digit or dot. TF checks it only
// at import: TF_NewOperation takes any name, as TF's C API does (the official
// Go bindings name a node "const/0/[1 2 3 4]").
var validNodeName = regexp.MustCompile(`^[A-Za-z0-9.][A-Za-z0-9_./-]*(>[A-Za-z0-9.][A-Za-z0-9_./-]*)*$`)

func newBuilder(g *Graph, op, name string) *Builder {
	return &Builder{g: g, op: op, name: name, def: g.OpDef(op), attrs: map[string]*tfpb.AttrValue{}}
}

func (b *Builder) addInput(o Output) {
	if o.Node == nil && b.err == nil {
		b.err = status.InvalidArg("Node '%s': nil input %d", b.name, len(b.args))
	}
	b.args = append(b.args, []Output{o})
	b.isList = append(b.isList, false)
}

func (b *Builder) addInputList(os []Output) {
	for _, o := range os {
		if o.Node == nil && b.err == nil {
			b.err = status.InvalidArg("Node '%s': nil input in list %d", b.name, len(b.args))
		}
	}
	b.args = append(b.args, append([]Output(nil), os...))
	b.isList = append(b.isList, true)
}

func (b *Builder) finish() (*Node, error) {
	if b.err != nil {
		return nil, b.err
	}
	if b.def == nil {
		// INVALID_ARGUMENT, as TF's NodeBuilder gives it; an import says NOT_FOUND.
		return nil, status.Errorf(status.InvalidArgument, "Op type not registered '%s' in binary (node '%s')", b.op, b.name)
	}
	g := b.g
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.byName[b.name] != nil {
		return nil, status.InvalidArg("Duplicate node name in graph: '%s' (op %s)", b.name, b.op)
	}
	if len(b.args) != len(b.def.InputArg) {
		return nil, status.InvalidArg("Node '%s' (op %s): expected %d inputs, got %d", b.name, b.op, len(b.def.InputArg), len(b.args))
	}
	for i, a := range b.def.InputArg {
		list := a.NumberAttr != "" || a.TypeListAttr != ""
		if list != b.isList[i] {
			what := "Single tensor passed to '%s', expected list"
			if !list {
				what = "List of tensors passed to '%s', expected a single tensor"
			}
			return nil, status.InvalidArg("Node '%s' (op %s): "+what, b.name, b.op, a.Name)
		}
		for _, in := range b.args[i] {
			if err := g.checkOwnLocked(in.Node, b.name); err != nil {
				return nil, err
			}
			if in.Index < 0 || in.Index >= len(in.Node.OutTypes) {
				return nil, status.Errorf(status.OutOfRange, "Node '%s' (op %s): input '%s' names output %d of '%s', which has %d outputs", b.name, b.op, a.Name, in.Index, in.Node.Name, len(in.Node.OutTypes))
			}
		}
	}
	for _, c := range b.controls {
		if err := g.checkOwnLocked(c, b.name); err != nil {
			return nil, err
		}
	}
	attrs := make(map[string]*tfpb.AttrValue, len(b.attrs)+1)
	for k, v := range b.attrs {
		attrs[k] = proto.Clone(v).(*tfpb.AttrValue)
	}
	if len(b.colocate) > 0 {
		var cls []string
		for _, s := range attrs["_class"].GetList().GetS() {
			cls = append(cls, string(s))
		}
		cls = append(cls, b.colocate...)
		attrs["_class"] = AttrStringList(cls)
	}
	n := &Node{Name: b.name, Op: b.op, Def: b.def, Device: b.device, Attrs: attrs,
		Controls: append([]*Node(nil), b.controls...)}
	if err := resolveNode(n, b.args); err != nil {
		return nil, err
	}
	if err := inferNode(n, nil); err != nil {
		return nil, err
	}
	g.lib.refineCall(n, nil)
	g.addLocked(n)
	g.publishLocked()
	return n, nil
}

func (g *Graph) checkOwnLocked(n *Node, user string) error {
	if g.backEdges[n] {
		return nil
	}
	if n == nil || n.ID < 0 || n.ID >= len(g.nodes) || g.nodes[n.ID] != n {
		return status.InvalidArg("Node '%s': an input or control input is not a node of this graph", user)
	}
	return nil
}

// resolveNode checks n's inputs (grouped by OpDef input arg) and attrs against
// n.Def, infers type and length attrs from the inputs, fills defaults, and
// sets Inputs, InTypes, OutTypes, InArgs and OutArgs. It names the node and
// op in every error.
func resolveNode(n *Node, args [][]Output) error {
	def := n.Def
	bad := func(format string, a ...any) error {
		return status.InvalidArg("Node '%s' (op %s): %s", n.Name, n.Op, fmt.Sprintf(format, a...))
	}
	setOrCheckType := func(attr string, t tensor.DType, arg string, from Output) error {
		if v, ok := n.Attrs[attr]; ok {
			vt, isType := v.Value.(*tfpb.AttrValue_Type)
			if !isType {
				return bad("attr '%s' expects a type", attr)
			}
			if tensor.DType(vt.Type) != t {
				return bad("input '%s' was passed %s from %s incompatible with expected %s", arg, t, from, tensor.DType(vt.Type))
			}
			return nil
		}
		n.Attrs[attr] = AttrType(t)
		return nil
	}
	n.InArgs = map[string][2]int{}
	for i, a := range def.InputArg {
		ins := args[i]
		lo := len(n.Inputs)
		for j, in := range ins {
			t := in.Node.OutTypes[in.Index].Base()
			switch {
			case a.TypeListAttr != "":
				continue
			case a.TypeAttr != "":
				if err := setOrCheckType(a.TypeAttr, t, a.Name, in); err != nil {
					return err
				}
			default:
				if tensor.DType(a.Type) != t {
					return bad("input %d ('%s') was passed %s from %s incompatible with expected %s", lo+j, a.Name, t, in, tensor.DType(a.Type))
				}
			}
		}
		if a.NumberAttr != "" {
			if v, ok := n.Attrs[a.NumberAttr]; ok {
				if x, isInt := v.Value.(*tfpb.AttrValue_I); !isInt || x.I != int64(len(ins)) {
					return bad("attr '%s' is %v but input list '%s' has %d tensors", a.NumberAttr, v.GetI(), a.Name, len(ins))
				}
			} else {
				n.Attrs[a.NumberAttr] = AttrInt(int64(len(ins)))
			}
		}
		if a.TypeListAttr != "" {
			ts := make([]tensor.DType, len(ins))
			for j, in := range ins {
				ts[j] = in.Node.OutTypes[in.Index].Base()
			}
			if v, ok := n.Attrs[a.TypeListAttr]; ok {
				l := v.GetList()
				if l == nil || len(l.Type) != len(ts) {
					return bad("attr '%s' does not match the %d inputs of '%s'", a.TypeListAttr, len(ts), a.Name)
				}
				for j, t := range l.Type {
					if tensor.DType(t) != ts[j] {
						return bad("input '%s' %d was passed %s from %s incompatible with expected %s", a.Name, j, ts[j], ins[j], tensor.DType(t))
					}
				}
			} else {
				n.Attrs[a.TypeListAttr] = AttrTypeList(ts)
			}
		}
		n.Inputs = append(n.Inputs, ins...)
		n.InArgs[a.Name] = [2]int{lo, len(n.Inputs)}
	}
	// An attr the OpDef does not declare is kept and ignored, as TF 2.15's
	// ValidateNodeDef does (it logs them: a GraphDef from a newer TF may
	// carry attrs this op set lacks). Nothing reads it but the attr getters.
	for _, ad := range def.Attr {
		v, ok := n.Attrs[ad.Name]
		if !ok {
			if ad.DefaultValue == nil {
				return bad("missing attr '%s'", ad.Name)
			}
			v = proto.Clone(ad.DefaultValue).(*tfpb.AttrValue)
			n.Attrs[ad.Name] = v
		}
		if err := checkAttrValue(ad, v); err != nil {
			return bad("%v", err)
		}
	}
	var err error
	if n.InTypes, _, err = argTypes(n, def.InputArg); err != nil {
		return bad("%v", err)
	}
	if n.OutTypes, n.OutArgs, err = argTypes(n, def.OutputArg); err != nil {
		return bad("%v", err)
	}
	return nil
}

// argTypes expands arg defs into one dtype per tensor, from the node's attrs.
func argTypes(n *Node, args []*tfpb.OpDef_ArgDef) ([]tensor.DType, map[string][2]int, error) {
	var ts []tensor.DType
	idx := make(map[string][2]int, len(args))
	for _, a := range args {
		lo := len(ts)
		switch {
		case a.TypeListAttr != "":
			for _, t := range n.Attrs[a.TypeListAttr].GetList().GetType() {
				ts = append(ts, tensor.DType(t))
			}
		default:
			t := tensor.DType(a.Type)
			if a.TypeAttr != "" {
				t = tensor.DType(n.Attrs[a.TypeAttr].GetType())
			}
			cnt := int64(1)
			if a.NumberAttr != "" {
				cnt = n.Attrs[a.NumberAttr].GetI()
				if cnt < 0 || cnt > 1<<20 {
					return nil, nil, fmt.Errorf("attr '%s' = %d is not a valid length", a.NumberAttr, cnt)
				}
			}
			for i := int64(0); i < cnt; i++ {
				ts = append(ts, t)
			}
		}
		idx[a.Name] = [2]int{lo, len(ts)}
	}
	for _, t := range ts {
		if !t.Valid() {
			return nil, nil, fmt.Errorf("invalid dtype %d", int(t))
		}
	}
	return ts, idx, nil
}

// argSizes returns how many tensors each input arg of n takes, from its attrs
// (used by import, where inputs arrive flat).
func argSizes(n *Node) ([]int, error) {
	sizes := make([]int, len(n.Def.InputArg))
	for i, a := range n.Def.InputArg {
		sizes[i] = 1
		attr := a.NumberAttr
		if attr == "" {
			attr = a.TypeListAttr
		}
		if attr == "" {
			continue
		}
		v, ok := n.Attrs[attr]
		if !ok {
			if ad := attrDef(n.Def, attr); ad != nil && ad.DefaultValue != nil {
				v = ad.DefaultValue
			} else {
				return nil, status.InvalidArg("Node '%s' (op %s): missing attr '%s'", n.Name, n.Op, attr)
			}
		}
		if a.NumberAttr != "" {
			sizes[i] = int(v.GetI())
		} else {
			sizes[i] = len(v.GetList().GetType())
		}
		if sizes[i] < 0 {
			return nil, status.InvalidArg("Node '%s' (op %s): attr '%s' is negative", n.Name, n.Op, attr)
		}
	}
	return sizes, nil
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}
