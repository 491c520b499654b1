package optimize

import (
	"strings"

	"mstream/graph"
	"mstream/proto/tfpb"
	"mstream/tensor"
)

// Sibling GatherV2 nodes, as DLRM's 26 embedding lookups (one per table,
// each reading a column of the sparse ids), become one _MstreamGatherN
// with N params, N indices and N outputs, output i exactly GatherV2 i's:
// a GPU gathers every pair in one launch instead of one launch each (the
// host's launch count is what DLRM costs without CUDA graphs).
//
// A GatherV2 joins when its axis is a Const 0 (through Identity; a scalar
// or a vector of one), its batch_dims 0, nothing of it can be observed but
// its output's data edges (not fed, fetched or a target, no control edge
// out) and it is not part of another fusion. Members agree on Tparams,
// Tindices, requested device and, where the session's rules assign nodes
// to stream groups by name (Options.Group), on that group. The merged
// node takes the name and ID of the member with the largest ID, so it can
// only stand where every member's consumers come after that ID, and no
// member may depend on another (merging them would make a cycle): a
// GatherV2 that breaks either starts a new group. Indices are int32 or
// int64, as _MstreamGatherN's Tindices allow (not GatherV2's int16). A plan with v1 control
// flow (a Switch: a tf.cond's branches, whose nodes are dead or alive
// apart) is left as it is.

// gatherable says whether n may join a merge of sibling GatherV2s.
func (r *rewriter) gatherable(n *graph.Node) bool {
	if n.Op != "GatherV2" || len(n.Inputs) != 3 || r.taken[n] != nil || r.target[n] || r.ctrlOut[n] > 0 {
		return false
	}
	if o := n.Output(0); r.fed[o] || r.fetched[o] || len(r.uses[o]) == 0 {
		return false
	}
	// _MstreamGatherN's Tindices are int32 and int64 (its GPU kernel's);
	// GatherV2's int16 ones stay GatherV2s.
	if it := dtypeOf(n, "Tindices"); it != tensor.Int32 && it != tensor.Int64 {
		return false
	}
	if a := n.Attrs["batch_dims"]; a != nil && a.GetI() != 0 {
		return false
	}
	v := r.constThrough(n.Inputs[2])
	if v == nil || v.NumElements() != 1 || len(v.Shape) > 1 {
		return false
	}
	switch v.DType {
	case tensor.Int32:
		return v.I32()[0] == 0
	case tensor.Int64:
		return v.I64()[0] == 0
	}
	return false
}

// gatherKey is what the members of one merge agree on.
type gatherKey struct {
	params, indices tensor.DType
	device          string
	group           int
	ruled           bool
}

// matchGathers groups the gatherable GatherV2s, in ID order, into merges
// of two or more.
func (r *rewriter) matchGathers() {
	for _, n := range r.order {
		switch n.Op {
		case "Switch", "RefSwitch", "_SwitchN", "Enter", "RefEnter":
			// Members in different branches of a cond (or frames) may
			// differ in deadness, which one merged node cannot.
			return
		}
	}
	open := map[gatherKey][]*graph.Node{}
	var keys []gatherKey // in the order first seen, so fusions are found deterministically
	flush := func(k gatherKey) {
		if ms := open[k]; len(ms) >= 2 {
			r.add(&fusion{nodes: ms, build: buildGatherN, outs: true})
		}
		open[k] = nil
	}
	for _, n := range r.order {
		if !r.gatherable(n) {
			continue
		}
		k := gatherKey{params: dtypeOf(n, "Tparams"), indices: dtypeOf(n, "Tindices"), device: n.Device}
		if r.opt.Group != nil {
			k.group, k.ruled = r.opt.Group(n)
		}
		ms, seen := open[k]
		if !seen {
			keys = append(keys, k)
		}
		if len(ms) > 0 && !r.joins(ms, n) {
			flush(k)
			ms = nil
		}
		open[k] = append(ms, n)
	}
	for _, k := range keys {
		flush(k)
	}
}

// joins says whether n, whose ID is larger than every member's, may join
// ms: every member's consumers come after n, and n depends on no member.
func (r *rewriter) joins(ms []*graph.Node, n *graph.Node) bool {
	member := map[*graph.Node]bool{}
	for _, m := range ms {
		member[m] = true
		for _, u := range r.uses[m.Output(0)] {
			if u.ID <= n.ID {
				return false
			}
		}
	}
	// n's ancestors from the first member's ID on (an earlier node cannot
	// depend on a member: IDs are a topological order).
	lo := ms[0].ID
	seen := map[*graph.Node]bool{}
	stack := []*graph.Node{n}
	for len(stack) > 0 {
		c := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		visit := func(p *graph.Node) bool {
			if member[p] {
				return false
			}
			if p.ID >= lo && !seen[p] {
				seen[p] = true
				stack = append(stack, p)
			}
			return true
		}
		for _, in := range c.Inputs {
			if !r.fed[in] && !visit(in.Node) {
				return false
			}
		}
		for _, p := range c.Controls {
			if !visit(p) {
				return false
			}
		}
	}
	return true
}

// buildGatherN builds the merged node: params then indices in the
// members' ID order, the control inputs of all, and the attrs the last
// member carries for the runtime (those beginning with "_", such as the
// call sites a function's inlined nodes remember, which node-level
// stream rules read).
func buildGatherN(r *rewriter, f *fusion) (*graph.Node, error) {
	res := f.result()
	k := len(f.nodes)
	args := [][]graph.Output{make([]graph.Output, k), make([]graph.Output, k)}
	for i, m := range f.nodes {
		args[0][i], args[1][i] = r.remap(m.Inputs[0]), r.remap(m.Inputs[1])
	}
	attrs := map[string]*tfpb.AttrValue{"N": intAttr(int64(k)), "Tparams": res.Attrs["Tparams"], "Tindices": res.Attrs["Tindices"]}
	for name, v := range res.Attrs {
		if strings.HasPrefix(name, "_") && name != FusedFromAttr {
			attrs[name] = v
		}
	}
	return graph.NewDetached(res.ID, "_MstreamGatherN", res.Name, res.Device, args, r.remapControls(f.nodes...), attrs)
}
