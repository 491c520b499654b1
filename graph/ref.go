package graph

// IsRefInput reports whether data input j of n is a ref input of its OpDef
// (Assign's ref, ScatterAdd's ref): the kernel updates the variable behind
// it rather than reading its value.
func (n *Node) IsRefInput(j int) bool {
	if n.Def == nil {
		return false
	}
	for _, a := range n.Def.InputArg {
		if r, ok := n.InArgs[a.Name]; ok && j >= r[0] && j < r[1] {
			return a.IsRef
		}
	}
	return false
}

// IsRefOutput reports whether output k of n is a ref output of its OpDef
// (VariableV2's, Assign's).
func (n *Node) IsRefOutput(k int) bool {
	if n.Def == nil {
		return false
	}
	for _, a := range n.Def.OutputArg {
		if r, ok := n.OutArgs[a.Name]; ok && k >= r[0] && k < r[1] {
			return a.IsRef
		}
	}
	return false
}
