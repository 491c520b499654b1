package graph

import (
	"fmt"
	"sort"
	"strings"

	"google.golang.org/protobuf/proto"

	"mstream/proto/tfpb"
	"mstream/status"
	"mstream/tensor"
)

// FunctionSpec says which part of a graph becomes a function
// (TF_GraphToFunctionWithControlOutputs).
type FunctionSpec struct {
	Name string
	// Body lists the nodes of the body; nil with AllNodes takes every node
	// but those of Inputs (which must then have one output each).
	Body     []*Node
	AllNodes bool
	Inputs   []Output
	Outputs  []Output
	// OutputNames name the outputs (nil: from the nodes' names).
	OutputNames        []string
	ControlOutputs     []*Node
	ControlOutputNames []string // nil: the nodes' names
	Description        string
	// AppendHash names the function Name + "_" + TF's hash of its
	// FunctionDef (TF_GraphToFunction's append_hash_to_fn_name).
	AppendHash bool
}

// ToFunctionDef builds a FunctionDef from part of g as TF's
// GraphToFunctionDef does for the C API (stateful from its nodes,
// placeholder attrs copied): output names first, then input names (both
// normalized: lower case, '_' for other characters), then body node names
// made unique against them; an input becomes an arg, every other tensor
// "node:out_arg:index"; an input's "_" attrs and declared shape become its
// arg_attr. Errors are TF's.
func (g *Graph) ToFunctionDef(spec *FunctionSpec) (*tfpb.FunctionDef, error) {
	g.mu.RLock()
	defer g.mu.RUnlock()
	fn := spec.Name
	inputNodes := map[*Node][]int{}
	for i, in := range spec.Inputs {
		if err := g.validOutputLocked(in); err != nil {
			return nil, status.Errorf(status.CodeOf(err), "%v\n\tEncountered while processing input %d into function '%s'", err, i, fn)
		}
		for _, k := range inputNodes[in.Node] {
			if k == in.Index {
				return nil, status.InvalidArg("TF_Output %s:%d appears more than once in the input list", in.Node.Name, in.Index)
			}
		}
		inputNodes[in.Node] = append(inputNodes[in.Node], in.Index)
	}
	for i, out := range spec.Outputs {
		if err := g.validOutputLocked(out); err != nil {
			return nil, status.Errorf(status.CodeOf(err), "%v\n\tEncountered while processing output %d from function '%s'", err, i, fn)
		}
	}
	body := spec.Body
	if spec.AllNodes {
		body = nil
		for _, n := range g.nodes {
			if _, ok := inputNodes[n]; !ok {
				body = append(body, n)
			} else if n.NumOutputs() != 1 {
				return nil, status.InvalidArg("When `num_opers` is set to -1, nodes referenced in `inputs` must have a single output. Node %s has %d outputs. Encountered while creating function '%s'", n.Name, n.NumOutputs(), fn)
			}
		}
	}
	for _, n := range body {
		if err := g.checkOwnLocked(n, fn); err != nil {
			return nil, err
		}
	}

	fd := &tfpb.FunctionDef{Signature: &tfpb.OpDef{Description: spec.Description}}
	sig := fd.Signature
	names := newFuncNames()
	for i, out := range spec.Outputs {
		arg := &tfpb.OpDef_ArgDef{Type: tfpb.DataType(out.DType())}
		if spec.OutputNames != nil {
			if names.used[spec.OutputNames[i]] {
				return nil, status.InvalidArg("Cannot have duplicate output names. Name '%s' appears more than once in 'output_names' array.", spec.OutputNames[i])
			}
			names.used[spec.OutputNames[i]] = true
			arg.Name = spec.OutputNames[i]
		} else {
			arg.Name = names.unique(normalizeName(out.Node.Name))
		}
		sig.OutputArg = append(sig.OutputArg, arg)
	}
	renamed := map[string]string{}
	for i, in := range spec.Inputs {
		name := names.unique(normalizeName(in.Node.Name))
		names.mapping[in.Node.Name] = name
		sig.InputArg = append(sig.InputArg, &tfpb.OpDef_ArgDef{Name: name, Type: tfpb.DataType(in.DType())})
		attrs := map[string]*tfpb.AttrValue{}
		uniqueID := int64(-1)
		for k, v := range in.Node.Attrs {
			switch {
			case strings.HasPrefix(k, "_"):
				attrs[k] = proto.Clone(v).(*tfpb.AttrValue)
			case k == "shape" && in.DType() != tensor.Resource:
				attrs["_output_shapes"] = AttrList(&tfpb.AttrValue_ListValue{Shape: []*tfpb.TensorShapeProto{proto.Clone(v.GetShape()).(*tfpb.TensorShapeProto)}})
			case k == "value" && in.Node.Op == "Const":
				attrs["_output_shapes"] = AttrList(&tfpb.AttrValue_ListValue{Shape: []*tfpb.TensorShapeProto{proto.Clone(v.GetTensor().GetTensorShape()).(*tfpb.TensorShapeProto)}})
			}
			if k == "_resource_arg_unique_id" {
				uniqueID = v.GetI()
			}
		}
		if len(attrs) > 0 {
			if fd.ArgAttr == nil {
				fd.ArgAttr = map[uint32]*tfpb.FunctionDef_ArgAttrs{}
			}
			fd.ArgAttr[uint32(i)] = &tfpb.FunctionDef_ArgAttrs{Attr: attrs}
		}
		if uniqueID >= 0 {
			if fd.ResourceArgUniqueId == nil {
				fd.ResourceArgUniqueId = map[uint32]uint32{}
			}
			fd.ResourceArgUniqueId[uint32(in.Index)] = uint32(uniqueID)
		}
		renamed[fmt.Sprintf("%s:%d", in.Node.Name, in.Index)] = name
	}
	for _, n := range body {
		name := names.unique(n.Name)
		names.mapping[n.Name] = name
		for arg, r := range n.OutArgs {
			for i := r[0]; i < r[1]; i++ {
				key := fmt.Sprintf("%s:%d", n.Name, i)
				if _, ok := renamed[key]; !ok {
					renamed[key] = fmt.Sprintf("%s:%s:%d", name, arg, i-r[0])
				}
			}
		}
	}

	sigAttrs := map[string]bool{}
	for _, n := range body {
		nd := n.nodeDefLocked()
		nd.Name = names.mapping[n.Name]
		nd.Input = nil
		for i, in := range n.Inputs {
			key := fmt.Sprintf("%s:%d", in.Node.Name, in.Index)
			r, ok := renamed[key]
			if !ok {
				return nil, status.InvalidArg("Input %d, '%s', of node '%s' in function '%s' is not available. You might need to include it in inputs or include its source node in the body", i, key, n.Name, fn)
			}
			nd.Input = append(nd.Input, r)
		}
		ctrls := append([]*Node(nil), n.Controls...)
		sort.Slice(ctrls, func(a, b int) bool { return ctrls[a].Name < ctrls[b].Name })
		for _, c := range ctrls {
			r, ok := names.mapping[c.Name]
			if !ok {
				return nil, status.InvalidArg("The source of control edge [id=0 %s:-1 -> %s:-1] is not in the body. Encountered while creating function '%s'", c.Name, n.Name, fn)
			}
			nd.Input = append(nd.Input, "^"+r)
		}
		if n.Def.IsStateful {
			sig.IsStateful = true
		}
		for k, v := range n.Attrs {
			ph := v.GetPlaceholder()
			if ph == "" || sigAttrs[ph] {
				continue
			}
			ad := attrDef(n.Def, k)
			if ad == nil {
				return nil, status.Errorf(status.Unimplemented, "Placeholder value is not supported for attributes not in OpDef. Attribute: %s", k)
			}
			sig.Attr = append(sig.Attr, &tfpb.OpDef_AttrDef{Name: ph, Type: ad.Type})
			sigAttrs[ph] = true
		}
		fd.NodeDef = append(fd.NodeDef, nd)
	}
	for i, arg := range sig.OutputArg {
		out := spec.Outputs[i]
		key := fmt.Sprintf("%s:%d", out.Node.Name, out.Index)
		r, ok := renamed[key]
		if !ok {
			return nil, status.InvalidArg("TF_Output %s is neither in the function body nor among function inputs. Encountered while creating function '%s'", key, fn)
		}
		if fd.Ret == nil {
			fd.Ret = map[string]string{}
		}
		fd.Ret[arg.Name] = r
	}
	if spec.AppendHash {
		// TF hashes the FunctionDef as it stands here: no name yet, no
		// control outputs.
		sig.Name = HashedFunctionName(fn, fd)
	} else {
		sig.Name = fn
	}

	if spec.ControlOutputNames != nil && len(spec.ControlOutputNames) != len(spec.ControlOutputs) {
		return nil, status.InvalidArg("Expected number of control outputs (%d) and the number of control output names (%d) to match but they do not.", len(spec.ControlOutputs), len(spec.ControlOutputNames))
	}
	seen := map[string]bool{}
	for i, c := range spec.ControlOutputs {
		name := c.Name
		if spec.ControlOutputNames != nil {
			name = spec.ControlOutputNames[i]
		}
		if name == "" {
			return nil, status.InvalidArg("Control output name must be not empty")
		}
		if seen[name] {
			return nil, status.InvalidArg("Repeated control output name: %s", name)
		}
		seen[name] = true
		node := names.mapping[c.Name]
		if node == "" {
			return nil, status.InvalidArg("Control output node name must be not empty")
		}
		if fd.ControlRet == nil {
			fd.ControlRet = map[string]string{}
		}
		fd.ControlRet[name] = node
	}
	for name := range seen {
		sig.ControlOutput = append(sig.ControlOutput, name)
	}
	sort.Strings(sig.ControlOutput)
	return fd, nil
}

// validOutputLocked is TF's Graph::IsValidOutputTensor.
func (g *Graph) validOutputLocked(o Output) error {
	if o.Node == nil {
		return status.InvalidArg("Node is null")
	}
	if err := g.checkOwnLocked(o.Node, o.Node.Name); err != nil {
		return err
	}
	if o.Index < 0 || o.Index >= o.Node.NumOutputs() {
		return status.Errorf(status.OutOfRange, "Node '%s' (type: '%s', num of outputs: %d) does not have output %d", o.Node.Name, o.Node.Op, o.Node.NumOutputs(), o.Index)
	}
	return nil
}

// funcNames is TF's NodeNameMapping.
type funcNames struct {
	used    map[string]bool
	next    map[string]int
	mapping map[string]string // graph node name -> its name in the function
}

func newFuncNames() *funcNames {
	return &funcNames{used: map[string]bool{}, next: map[string]int{}, mapping: map[string]string{}}
}

// unique is NodeNameMapping::UniquifyHelper: name, else name_0, name_1, ...
func (f *funcNames) unique(name string) string {
	if !f.used[name] {
		f.used[name] = true
		return name
	}
	for {
		c := fmt.Sprintf("%s_%d", name, f.next[name])
		f.next[name]++
		if !f.used[c] {
			f.used[c] = true
			return c
		}
	}
}

// normalizeName is NodeNameMapping::Normalize: lower case, '_' for every
// character but letters and digits, leading non-letters dropped.
func normalizeName(name string) string {
	b := []byte(name)
	for i, c := range b {
		switch {
		case c >= 'A' && c <= 'Z':
			b[i] = c - 'A' + 'a'
		case c >= 'a' && c <= 'z' || c >= '0' && c <= '9':
		default:
			b[i] = '_'
		}
	}
	for i, c := range b {
		if c >= 'a' && c <= 'z' {
			return string(b[i:])
		}
	}
	return "unknown"
}
