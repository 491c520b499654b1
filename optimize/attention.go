package optimize

import (
	"slices"
	"strings"

	"mstream/graph"
	"mstream/proto/tfpb"
	"mstream/tensor"
)

// A transformer's attention core without a mask, in the two forms TF 2.15
// models export it, fused into one _MstreamAttention(q, k, v) whose CPU
// kernel runs each (batch, head) from the first product through the
// softmax to the second in cache, reading q, k and v where they lie:
//
//   - heads: q, k and v [B, S, H, D] (the projections reshaped) each
//     Transpose'd by [0, 2, 1, 3] -> BatchMatMulV2/V3(q, k, adj_y) ->
//     optionally Mul by a scalar Const -> Softmax -> BatchMatMul(p, v)
//     -> Transpose [0, 2, 1, 3] back to [B, S, H, Dv];
//   - Keras' MultiHeadAttention: Einsum "aecd,abcd->acbe"(k, q) (or
//     "abcd,aecd->acbe"(q, k)), q optionally a Mul by a scalar Const ->
//     Softmax -> Identity (dropout) -> Einsum "acbe,aecd->abcd"(p, v).
//
// Equations are compared after renaming their labels in order of first
// appearance. Every node but q, k and v is absorbed, so each must be
// read by the next node of the pattern alone (r.sole, r.hidden).

// attention is a matched attention core.
type attention struct {
	q, k, v   graph.Output
	scale     float32
	scaleQ    bool // the scale multiplies q (Keras) rather than the scores
	broadcast bool // BatchMatMul's batch broadcasting
}

func (r *rewriter) matchAttentions() {
	for _, n := range r.order {
		if n.Op == "Softmax" && r.taken[n] == nil && isFloat(n) && n.Inputs[0].Index == 0 {
			r.matchAttention(n)
		}
	}
}

// canonEquation renames an equation's labels a, b, c, ... in order of
// first appearance ("aecd,abcd->acbe" is "abcd,aecd->aceb"); "" when it
// has anything but letters, one comma and an arrow.
func canonEquation(eq string) string {
	names := map[rune]rune{}
	var b strings.Builder
	for _, c := range eq {
		switch {
		case c == ',' || c == '-' || c == '>':
		case c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
			if _, ok := names[c]; !ok {
				names[c] = rune('a' + len(names))
			}
			c = names[c]
		default:
			return ""
		}
		b.WriteRune(c)
	}
	return b.String()
}

// scaledBy returns x and c when n is Mul(x, c) or Mul(c, x) of a float32
// scalar Const c (through Identity) that n alone reads.
func (r *rewriter) scaledBy(n *graph.Node) (graph.Output, float32, bool) {
	if n.Op != "Mul" || len(n.Inputs) != 2 || !isFloat(n) || !r.hidden(n, 1) {
		return graph.Output{}, 0, false
	}
	for i, in := range n.Inputs {
		if v := r.constThrough(in); v != nil && v.DType == tensor.Float && v.NumElements() == 1 && len(v.Shape) == 0 {
			return n.Inputs[1-i], v.F32()[0], true
		}
	}
	return graph.Output{}, 0, false
}

// headsOf returns x when o is Transpose(x, [0, 2, 1, 3]) that only the
// pattern reads, with the Transpose.
func (r *rewriter) headsOf(o graph.Output) (graph.Output, *graph.Node, bool) {
	t := o.Node
	if o.Index != 0 || !r.swapsHeads(t) || !r.hidden(t, 1) {
		return graph.Output{}, nil, false
	}
	return t.Inputs[0], t, true
}

// swapsHeads says whether t is a float32 Transpose by a Const [0, 2, 1,
// 3].
func (r *rewriter) swapsHeads(t *graph.Node) bool {
	if t.Op != "Transpose" || len(t.Inputs) != 2 || !isFloat(t) {
		return false
	}
	p := r.constThrough(t.Inputs[1])
	if p == nil {
		return false
	}
	perm, err := p.Int64s()
	return err == nil && slices.Equal(perm, []int64{0, 2, 1, 3})
}

// plainBatchMatMul says whether n is a float32 BatchMatMulV2/V3 with the
// adjoints given.
func plainBatchMatMul(n *graph.Node, adjX, adjY bool) bool {
	return (n.Op == "BatchMatMulV2" || n.Op == "BatchMatMulV3") && len(n.Inputs) == 2 && isFloat(n) &&
		n.Attrs["adj_x"].GetB() == adjX && n.Attrs["adj_y"].GetB() == adjY &&
		(n.Op == "BatchMatMulV2" || dtypeOf(n, "Ta") == tensor.Float && dtypeOf(n, "Tb") == tensor.Float && dtypeOf(n, "Tout") == tensor.Float)
}

// matchAttention matches either form around its Softmax sm.
func (r *rewriter) matchAttention(sm *graph.Node) {
	at := attention{scale: 1}
	nodes := []*graph.Node{sm}
	s := sm.Inputs[0]
	if x, c, ok := r.scaledBy(s.Node); ok && s.Index == 0 {
		nodes = append(nodes, s.Node)
		at.scale, s = c, x
	}
	sn := s.Node
	if s.Index != 0 || !r.hidden(sn, 1) {
		return
	}
	nodes = append(nodes, sn)
	heads := plainBatchMatMul(sn, false, true)
	switch {
	case heads:
		q, tq, ok1 := r.headsOf(sn.Inputs[0])
		k, tk, ok2 := r.headsOf(sn.Inputs[1])
		if !ok1 || !ok2 || tq == tk {
			return
		}
		at.q, at.k, at.broadcast = q, k, true
		nodes = append(nodes, tq, tk)
	case sn.Op == "Einsum" && len(sn.Inputs) == 2 && isFloat(sn):
		qi := 0
		switch canonEquation(string(sn.Attrs["equation"].GetS())) {
		case "abcd,aecd->acbe":
		case "abcd,aecd->aceb":
			qi = 1
		default:
			return
		}
		at.q, at.k = sn.Inputs[qi], sn.Inputs[1-qi]
		if at.q == at.k {
			return
		}
		if x, c, ok := r.scaledBy(at.q.Node); ok && at.scale == 1 && at.q.Index == 0 {
			nodes = append(nodes, at.q.Node)
			at.q, at.scale, at.scaleQ = x, c, true
		}
	default:
		return
	}
	// The probabilities, through Identities (Keras' dropout at
	// inference), into the second product.
	p := sm
	c := r.sole(sm)
	for c != nil && c.Op == "Identity" {
		nodes = append(nodes, c)
		p, c = c, r.sole(c)
	}
	switch {
	case c == nil || c.Inputs[0] != p.Output(0):
		return
	case heads && plainBatchMatMul(c, false, false):
		v, tv, ok := r.headsOf(c.Inputs[1])
		merge := r.sole(c)
		if !ok || merge == nil || !r.swapsHeads(merge) || merge.Inputs[0] != c.Output(0) {
			return
		}
		at.v = v
		nodes = append(nodes, tv, c, merge)
	case !heads && c.Op == "Einsum" && len(c.Inputs) == 2 && isFloat(c) && canonEquation(string(c.Attrs["equation"].GetS())) == "abcd,adbe->acbe":
		at.v = c.Inputs[1]
		nodes = append(nodes, c)
	default:
		return
	}
	res := nodes[len(nodes)-1]
	for _, n := range nodes {
		if n.ID > res.ID || n.Device != sm.Device || (n != res && r.taken[n] != nil) {
			return
		}
	}
	r.add(&fusion{nodes: nodes, build: func(r *rewriter, f *fusion) (*graph.Node, error) {
		res := f.result()
		return graph.NewDetached(res.ID, "_MstreamAttention", res.Name, res.Device,
			[][]graph.Output{{r.remap(at.q)}, {r.remap(at.k)}, {r.remap(at.v)}}, r.remapControls(f.nodes...),
			map[string]*tfpb.AttrValue{"T": typeAttr(tensor.Float), "scale": {Value: &tfpb.AttrValue_F{F: at.scale}},
				"scale_q": {Value: &tfpb.AttrValue_B{B: at.scaleQ}}, "broadcast": {Value: &tfpb.AttrValue_B{B: at.broadcast}}})
	}})
}
