package graph

import (
	"fmt"
	"strconv"
	"strings"

	"google.golang.org/protobuf/proto"

	"mstream/proto/tfpb"
	"mstream/status"
	"mstream/tensor"
)

// Instance is a FunctionDef instantiated with the attrs of one call site:
// its signature's attrs bound, its body's nodes in an order where every
// node comes after the nodes it reads. Shape inference through calls and
// package lower's inlining both walk a body through it.
type Instance struct {
	Def  *tfpb.FunctionDef
	Bind map[string]*tfpb.AttrValue // signature attr -> value at the call site
	// Order is the body's node_def in dependency order.
	Order []*tfpb.NodeDef
	// InTypes and OutTypes are the dtypes of the flattened inputs and
	// outputs; InArgs maps each input arg to its range of InTypes.
	InTypes  []tensor.DType
	OutTypes []tensor.DType
	InArgs   map[string][2]int
	OutArgs  map[string][2]int // each output arg's range of OutTypes
}

// Instantiate binds fd's signature attrs from attrs (an attr missing there
// takes the signature's default) and orders its body. Errors are
// INVALID_ARGUMENT naming the function.
func Instantiate(fd *tfpb.FunctionDef, attrs map[string]*tfpb.AttrValue) (*Instance, error) {
	sig := fd.GetSignature()
	bad := func(format string, a ...any) error {
		return status.InvalidArg("function '%s': %s", sig.GetName(), fmt.Sprintf(format, a...))
	}
	fi := &Instance{Def: fd, Bind: map[string]*tfpb.AttrValue{}, InArgs: map[string][2]int{}}
	for _, ad := range sig.GetAttr() {
		v := attrs[ad.Name]
		if v == nil {
			v = ad.DefaultValue
		}
		if v == nil {
			return nil, bad("attr '%s' is not bound at the call site", ad.Name)
		}
		fi.Bind[ad.Name] = v
	}
	var err error
	n := &Node{Attrs: fi.Bind}
	if fi.InTypes, fi.InArgs, err = argTypes(n, sig.GetInputArg()); err != nil {
		return nil, bad("%v", err)
	}
	if fi.OutTypes, fi.OutArgs, err = argTypes(n, sig.GetOutputArg()); err != nil {
		return nil, bad("%v", err)
	}
	// Kahn over the body by node name, earliest node_def first.
	idx := map[string]int{}
	for i, nd := range fd.GetNodeDef() {
		if _, dup := idx[nd.Name]; dup {
			return nil, bad("two body nodes are named '%s'", nd.Name)
		}
		if _, isArg := fi.InArgs[nd.Name]; isArg {
			return nil, bad("body node '%s' has the name of an argument", nd.Name)
		}
		idx[nd.Name] = i
	}
	deps := make([]int, len(fd.GetNodeDef()))
	outs := make([][]int, len(fd.GetNodeDef()))
	for i, nd := range fd.GetNodeDef() {
		for _, s := range nd.Input {
			src := strings.SplitN(strings.TrimPrefix(s, "^"), ":", 2)[0]
			if _, isArg := fi.InArgs[src]; isArg && !strings.HasPrefix(s, "^") {
				continue
			}
			j, ok := idx[src]
			if !ok {
				return nil, bad("node '%s': input '%s' names no argument and no body node", nd.Name, s)
			}
			deps[i]++
			outs[j] = append(outs[j], i)
		}
	}
	ready := &indexHeap{}
	for i, d := range deps {
		if d == 0 {
			*ready = append(*ready, i)
		}
	}
	for ready.Len() > 0 {
		i := popMin(ready)
		fi.Order = append(fi.Order, fd.NodeDef[i])
		for _, j := range outs[i] {
			if deps[j]--; deps[j] == 0 {
				*ready = append(*ready, j)
			}
		}
	}
	if len(fi.Order) != len(fd.GetNodeDef()) {
		var cyc []string
		for i, d := range deps {
			if d > 0 {
				cyc = append(cyc, fd.NodeDef[i].Name)
			}
		}
		return nil, bad("body nodes %s form a cycle", strings.Join(cyc, ", "))
	}
	return fi, nil
}

func popMin(h *indexHeap) int {
	m := 0
	for i, v := range *h {
		if v < (*h)[m] {
			m = i
		}
	}
	v := (*h)[m]
	*h = append((*h)[:m], (*h)[m+1:]...)
	return v
}

// NodeAttrs returns nd's attrs with the placeholders ($T, also inside func
// attrs) replaced by the bound values.
func (fi *Instance) NodeAttrs(nd *tfpb.NodeDef) (map[string]*tfpb.AttrValue, error) {
	out := make(map[string]*tfpb.AttrValue, len(nd.Attr))
	for k, v := range nd.Attr {
		r, err := fi.substitute(v)
		if err != nil {
			return nil, status.InvalidArg("function '%s': node '%s' attr '%s': %v", fi.Def.GetSignature().GetName(), nd.Name, k, err)
		}
		out[k] = r
	}
	return out, nil
}

func (fi *Instance) substitute(v *tfpb.AttrValue) (*tfpb.AttrValue, error) {
	if p := v.GetPlaceholder(); p != "" {
		b := fi.Bind[p]
		if b == nil {
			return nil, fmt.Errorf("placeholder '$%s' is not an attr of the function", p)
		}
		return b, nil
	}
	if f := v.GetFunc(); f != nil {
		changed := false
		attrs := make(map[string]*tfpb.AttrValue, len(f.Attr))
		for k, a := range f.Attr {
			r, err := fi.substitute(a)
			if err != nil {
				return nil, err
			}
			changed = changed || r != a
			attrs[k] = r
		}
		if changed {
			return &tfpb.AttrValue{Value: &tfpb.AttrValue_Func{Func: &tfpb.NameAttrList{Name: f.Name, Attr: attrs}}}, nil
		}
	}
	return v, nil
}

// IsArgRef reports whether input string s of a body node reads an
// argument of the function.
func (fi *Instance) IsArgRef(s string) bool {
	_, ok := fi.InArgs[strings.SplitN(s, ":", 2)[0]]
	return ok && !strings.HasPrefix(s, "^")
}

// Refs resolves a FunctionDef input or ret string against the arguments
// (args: the flattened inputs) and the body nodes built so far, as TF's
// instantiation does (function.cc's name index): "arg" names every element
// of an argument (one tensor unless the argument is a list), "arg:i"
// element i; "node:out_arg" every element of a body node's output arg,
// "node:out_arg:i" element i; GraphDef-style "node" and "node:i" one
// output.
func (fi *Instance) Refs(s string, args []Output, body map[string]*Node) ([]Output, error) {
	parts := strings.Split(s, ":")
	if r, ok := fi.InArgs[parts[0]]; ok && len(parts) <= 2 {
		if len(parts) == 1 {
			return args[r[0]:r[1]], nil
		}
		i, err := strconv.Atoi(parts[1])
		if err != nil {
			return nil, fmt.Errorf("malformed input '%s'", s)
		}
		if i < 0 || r[0]+i >= r[1] {
			return nil, fmt.Errorf("input '%s' is out of range of its argument", s)
		}
		return args[r[0]+i : r[0]+i+1], nil
	}
	b := body[parts[0]]
	if b == nil {
		return nil, fmt.Errorf("input '%s' names no argument and no body node", s)
	}
	lo, hi := 0, 1
	switch len(parts) {
	case 1:
	case 2:
		if r, ok := b.OutArgs[parts[1]]; ok {
			lo, hi = r[0], r[1]
			break
		}
		k, err := strconv.Atoi(parts[1])
		if err != nil {
			return nil, fmt.Errorf("input '%s' names no output of '%s' (op %s)", s, parts[0], b.Op)
		}
		lo, hi = k, k+1
	case 3:
		r, ok := b.OutArgs[parts[1]]
		k, err := strconv.Atoi(parts[2])
		if !ok || err != nil || k < 0 || r[0]+k >= r[1] {
			return nil, fmt.Errorf("input '%s' names no output of '%s' (op %s)", s, parts[0], b.Op)
		}
		lo, hi = r[0]+k, r[0]+k+1
	default:
		return nil, fmt.Errorf("malformed input '%s'", s)
	}
	if lo < 0 || hi > len(b.OutTypes) {
		return nil, fmt.Errorf("input '%s': '%s' has %d outputs", s, parts[0], len(b.OutTypes))
	}
	outs := make([]Output, 0, hi-lo)
	for i := lo; i < hi; i++ {
		outs = append(outs, Output{b, i})
	}
	return outs, nil
}

// Returns resolves the function's outputs in signature order, flattened:
// an output arg that is a list (N*T, a type list) takes its ret entry's
// whole list ("node:out_arg", a list argument), whose dtypes must be the
// arg's, as TF's AddReturnNode requires.
func (fi *Instance) Returns(args []Output, body map[string]*Node) ([]Output, error) {
	sig := fi.Def.GetSignature()
	var outs []Output
	for _, a := range sig.GetOutputArg() {
		r, ok := fi.Def.GetRet()[a.Name]
		if !ok {
			return nil, status.InvalidArg("function '%s': Return %s missing.", sig.GetName(), a.Name)
		}
		got, err := fi.Refs(r, args, body)
		if err != nil {
			return nil, status.InvalidArg("function '%s': Return %s -> %s is not found: %v", sig.GetName(), a.Name, r, err)
		}
		span := fi.OutArgs[a.Name]
		bad := len(got) != span[1]-span[0]
		for i := 0; !bad && i < len(got); i++ {
			bad = got[i].DType() != fi.OutTypes[span[0]+i]
		}
		if bad {
			have := make([]tensor.DType, len(got))
			for i, o := range got {
				have[i] = o.DType()
			}
			return nil, status.InvalidArg("function '%s': Invalid ret types %s : %v vs. %v", sig.GetName(), a.Name, have, fi.OutTypes[span[0]:span[1]])
		}
		outs = append(outs, got...)
	}
	return outs, nil
}

// CallTarget returns the function a call node calls and the attrs it is
// instantiated with: attr "f" of PartitionedCall and
// StatefulPartitionedCall, or the op itself with the node's attrs for a
// call by function name. ok is false for any other node.
func CallTarget(n *Node, isFunction func(string) bool) (name string, attrs map[string]*tfpb.AttrValue, ok bool) {
	switch n.Op {
	case "PartitionedCall", "StatefulPartitionedCall":
		f := n.Attrs["f"].GetFunc()
		return f.GetName(), f.GetAttr(), true
	}
	if lookupOpDef(n.Op) == nil && isFunction(n.Op) {
		return n.Op, n.Attrs, true
	}
	return "", nil, false
}

// callShapes is one top-level refineCall's walk through the library: the
// functions being inferred (a recursive call is left unknown rather than
// followed) and the shapes already found per instantiation (function,
// attrs, input shapes), so a function called many times, or a chain of
// functions each calling the next twice, is inferred once per distinct
// instantiation rather than once per path.
type callShapes struct {
	active map[string]bool
	memo   map[string][]tensor.PartialShape
}

// refineCall refines a call node's output shapes from its function's body,
// as TF's shape refiner does for function calls when it has the graph's
// library (the C API's graphs do): the body is instantiated with the
// call's attrs, its arguments take the call's input shapes, and the shapes
// of its returns become the call's. A body that cannot be instantiated
// leaves the shapes as they are.
func (l *library) refineCall(n *Node, cs *callShapes) {
	name, attrs, ok := CallTarget(n, func(op string) bool { return l.funcs[op] != nil })
	fd := l.funcs[name]
	if !ok || fd == nil {
		return
	}
	if cs == nil {
		cs = &callShapes{active: map[string]bool{}, memo: map[string][]tensor.PartialShape{}}
	}
	if cs.active[name] {
		return
	}
	in := inputShapes(n)
	key := instanceKey(name, attrs, in)
	shapes, seen := cs.memo[key]
	if !seen {
		cs.active[name] = true
		var err error
		shapes, err = l.bodyShapes(fd, attrs, in, cs)
		delete(cs.active, name)
		if err != nil {
			shapes = nil
		}
		cs.memo[key] = shapes
	}
	if len(shapes) != len(n.OutShapes) {
		return
	}
	for i, s := range shapes {
		if m, ok := MergeShapes(n.OutShapes[i], s); ok {
			n.OutShapes[i] = m
		}
	}
}

// instanceKey names one instantiation of a function for callShapes' memo.
func instanceKey(name string, attrs map[string]*tfpb.AttrValue, in []tensor.PartialShape) string {
	var b strings.Builder
	b.WriteString(name)
	for _, k := range sortedKeys(attrs) {
		v, _ := proto.MarshalOptions{Deterministic: true}.Marshal(attrs[k])
		fmt.Fprintf(&b, "|%s=%x", k, v)
	}
	for _, s := range in {
		fmt.Fprintf(&b, "|%v", s)
	}
	return b.String()
}

func (l *library) bodyShapes(fd *tfpb.FunctionDef, attrs map[string]*tfpb.AttrValue, in []tensor.PartialShape, cs *callShapes) ([]tensor.PartialShape, error) {
	fi, err := Instantiate(fd, attrs)
	if err != nil {
		return nil, err
	}
	if len(in) != len(fi.InTypes) {
		return nil, fmt.Errorf("%d inputs for %d arguments", len(in), len(fi.InTypes))
	}
	args := make([]Output, len(in))
	for i, t := range fi.InTypes {
		a := &Node{Name: "_arg" + strconv.Itoa(i), Op: "_Arg", OutTypes: []tensor.DType{t}, OutShapes: []tensor.PartialShape{in[i]}}
		args[i] = Output{a, 0}
	}
	body := map[string]*Node{}
	for _, nd := range fi.Order {
		attrs, err := fi.NodeAttrs(nd)
		if err != nil {
			return nil, err
		}
		var flat []Output
		for _, s := range nd.Input {
			if strings.HasPrefix(s, "^") {
				continue
			}
			o, err := fi.Refs(s, args, body)
			if err != nil {
				return nil, err
			}
			flat = append(flat, o...)
		}
		def := l.opDef(nd.Op)
		if def == nil {
			return nil, fmt.Errorf("op '%s' unknown", nd.Op)
		}
		b, err := NewDetachedFlat(0, def, nd.Op, nd.Name, "", flat, nil, attrs)
		if err != nil {
			return nil, err
		}
		l.refineCall(b, cs)
		body[nd.Name] = b
	}
	rets, err := fi.Returns(args, body)
	if err != nil {
		return nil, err
	}
	out := make([]tensor.PartialShape, len(rets))
	for i, o := range rets {
		out[i] = o.Node.OutShapes[o.Index]
	}
	return out, nil
}

// AddBody adds the body of fd, instantiated with attrs, to g as ordinary
// nodes named prefix + the body node's name, with args (flattened) as its
// arguments, and returns the values of its outputs. A body node that calls
// a function of g's library (PartitionedCall, StatefulPartitionedCall, a
// call by name) is expanded the same way under prefix + its name + "/",
// so the result holds no call; a recursive call is INVALID_ARGUMENT.
// Package lower builds a function's gradient on such a copy
// (SymbolicGradient); the nodes are validated and shape-inferred as
// TF_FinishOperation's are.
func (g *Graph) AddBody(fd *tfpb.FunctionDef, attrs map[string]*tfpb.AttrValue, args []Output, prefix string) ([]Output, error) {
	return g.addBody(fd, attrs, args, prefix, map[string]bool{})
}

func (g *Graph) addBody(fd *tfpb.FunctionDef, attrs map[string]*tfpb.AttrValue, args []Output, prefix string, active map[string]bool) ([]Output, error) {
	name := fd.GetSignature().GetName()
	if active[name] {
		return nil, status.InvalidArg("function '%s' calls itself", name)
	}
	active[name] = true
	defer delete(active, name)
	fi, err := Instantiate(fd, attrs)
	if err != nil {
		return nil, err
	}
	if len(args) != len(fi.InTypes) {
		return nil, status.InvalidArg("function '%s' takes %d inputs, given %d", name, len(fi.InTypes), len(args))
	}
	body := map[string]*Node{}
	// expanded maps the stand-in of an expanded call (a detached node
	// that only resolves references) to the call's outputs.
	expanded := map[*Node][]Output{}
	resolve := func(o Output) Output {
		if outs, ok := expanded[o.Node]; ok {
			return outs[o.Index]
		}
		return o
	}
	for _, nd := range fi.Order {
		nattrs, err := fi.NodeAttrs(nd)
		if err != nil {
			return nil, err
		}
		var flat []Output
		var ctrls []*Node
		for _, s := range nd.Input {
			if strings.HasPrefix(s, "^") {
				c := body[s[1:]]
				if outs, ok := expanded[c]; ok {
					for _, o := range outs {
						ctrls = append(ctrls, o.Node)
					}
				} else if c != nil {
					ctrls = append(ctrls, c)
				}
				continue
			}
			os, err := fi.Refs(s, args, body)
			if err != nil {
				return nil, status.InvalidArg("function '%s': node '%s': %v", name, nd.Name, err)
			}
			for _, o := range os {
				flat = append(flat, resolve(o))
			}
		}
		def := g.OpDef(nd.Op)
		if def == nil {
			return nil, status.Errorf(status.NotFound, "Op type not registered '%s' in binary (node '%s')", nd.Op, nd.Name)
		}
		probe, err := NewDetachedFlat(0, def, nd.Op, nd.Name, "", flat, nil, nattrs)
		if err != nil {
			return nil, err
		}
		if fn, fattrs, ok := CallTarget(probe, func(op string) bool { return g.Function(op) != nil }); ok {
			if cfd := g.Function(fn); cfd != nil {
				outs, err := g.addBody(cfd, fattrs, flat, prefix+nd.Name+"/", active)
				if err != nil {
					return nil, err
				}
				expanded[probe] = outs
				body[nd.Name] = probe
				continue
			}
		}
		sizes, err := argSizes(probe)
		if err != nil {
			return nil, err
		}
		b := g.NewBuilder(nd.Op, prefix+nd.Name)
		at := 0
		for i, a := range def.InputArg {
			if a.NumberAttr != "" || a.TypeListAttr != "" {
				b.AddInputList(flat[at : at+sizes[i]])
			} else {
				b.AddInput(flat[at])
			}
			at += sizes[i]
		}
		for _, c := range ctrls {
			b.AddControlInput(c)
		}
		for k, v := range nattrs {
			b.SetAttr(k, v)
		}
		b.SetDevice(nd.Device)
		n, err := b.Finish()
		if err != nil {
			return nil, err
		}
		body[nd.Name] = n
	}
	rets, err := fi.Returns(args, body)
	if err != nil {
		return nil, err
	}
	for i, o := range rets {
		rets[i] = resolve(o)
	}
	return rets, nil
}
