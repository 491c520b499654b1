package session

import (
	"mstream/exec"
	"mstream/graph"
	"mstream/lower"
	"mstream/partition"
)

// ruleGroup is the stream group TF_STREAM_FROM_FILE's rules give n by
// its name, and whether a rule names it. A node inlined from a function
// or lowered from If/Case/While that no rule names takes the group of the
// innermost call it came from that a rule names. Package optimize merges
// only nodes that agree on both (optimize.Options.Group).
func (st *state) ruleGroup(n *graph.Node) (int, bool) {
	rule := func(name string) (int, bool) {
		for _, r := range st.env.StreamRules {
			for _, re := range r.Patterns {
				if re.MatchString(name) {
					return r.Group, true
				}
			}
		}
		return 0, false
	}
	if g, ok := rule(n.Name); ok {
		return g, true
	}
	sites := n.Attrs[lower.InlinedFromAttr].GetList().GetS()
	for j := len(sites) - 1; j >= 0; j-- {
		if g, ok := rule(string(sites[j])); ok {
			return g, true
		}
	}
	return 0, false
}

// assignment returns, for node-level mode, the stream group of every node
// of plan (by plan index) and the groups used, computing it once per plan.
//
// A node takes the group of the first TF_STREAM_FROM_FILE rule one of
// whose regexes matches its whole name; a node inlined from a function
// call or lowered from If/Case/While (named <call>/<body node>, see
// package lower) that no rule names takes the group of its innermost call
// node that one does. With
// TF_MULTI_STREAM_ALLOW_FORWARD_PROPAGATION a node no rule names takes the
// group of its first assigned predecessor (in topological order, so a
// group flows down a chain); every other node is on group 0, the default
// group, as NVIDIA's build leaves nodes outside any stream scope. With
// MSTREAM_STREAM_ASSIGN=auto the nodes no rule names are assigned instead
// by package partition's analysis of the plan over n groups (those of the
// plan's device, the fewest of its GPUs'), around the nodes the rules fix.
func (st *state) assignment(plan *exec.Plan, n int) ([]int, []int) {
	type entry struct{ assign, used []int }
	if e, ok := st.assigns.Load(plan); ok {
		return e.(entry).assign, e.(entry).used
	}
	nodes := plan.Nodes()
	assign := make([]int, len(nodes))
	explicit := make([]bool, len(nodes))
	for i, n := range nodes {
		assign[i], explicit[i] = st.ruleGroup(n)
	}
	if st.env.StreamAssign == "auto" {
		d := partition.DAG{Preds: make([][]int, len(nodes)), Topo: plan.Topo(),
			Cost: make([]float64, len(nodes)), Fixed: make([]int, len(nodes))}
		for i, nd := range nodes {
			d.Preds[i] = plan.Preds(i)
			d.Cost[i] = partition.Cost(nd.Op)
			d.Fixed[i] = -1
			if explicit[i] {
				d.Fixed[i] = assign[i]
			}
		}
		assign = partition.Assign(d, n)
	} else if st.env.ForwardPropagation {
		inherited := make([]bool, len(nodes))
		for _, i := range plan.Topo() {
			if explicit[i] {
				continue
			}
			for _, p := range plan.Preds(i) {
				if explicit[p] || inherited[p] {
					assign[i], inherited[i] = assign[p], true
					break
				}
			}
		}
	}
	seen := map[int]bool{0: true}
	used := []int{0}
	for _, g := range assign {
		if !seen[g] {
			seen[g] = true
			used = append(used, g)
		}
	}
	st.assigns.Store(plan, entry{assign, used})
	return assign, used
}
