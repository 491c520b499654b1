package optimize

import (
	"slices"
	"strings"

	"mstream/graph"
	"mstream/kernels"
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
// read by the next node of the pattern alone (r.sole, r.hidden). q, k and
// v projected from one input may become one product (packProjections).

// attention is a matched attention core.
type attention struct {
	q, k, v   graph.Output
	scale     float32
	scaleQ    bool // the scale multiplies q (Keras) rather than the scores
	broadcast bool // BatchMatMul's batch broadcasting
	// packed holds q's, k's and v's projections when they are merged
	// into one GEMM (packProjections).
	packed *[3]projection
}

// projection is q, k or v as a Dense layer over one input makes it: in
// the heads form x [M, K] times a constant W [K, N] plus a constant bias
// [N] (an epilogue fusion, MatMul -> BiasAdd without activation),
// reshaped by a constant shape [.., .., H, D] with H D = N; in Keras' form
// EinsumDense, Einsum "abc,cde->abde"(x, W [C, H, D]) -> Add(V2) of a
// constant bias [H, D]. Either way W, as [K, N] row by row, and the bias,
// as [N], are H heads of D side by side.
type projection struct {
	mm, bias *graph.Node
	split    *graph.Node // the heads form's Reshape
	f        *fusion     // the heads form's epilogue fusion
	w, b     *tensor.Tensor
	dims     []int64      // the heads form's split shape, [.., .., H, D],
	dimsType tensor.DType // as the split's shape operand holds it
}

// projectionOf returns o's projection when o is one that only the
// pattern reads.
func (r *rewriter) projectionOf(o graph.Output, heads bool) (projection, bool) {
	if !heads {
		return r.einsumProjectionOf(o)
	}
	sp := o.Node
	if o.Index != 0 || sp.Op != "Reshape" || len(sp.Inputs) != 2 || !isFloat(sp) || !r.hidden(sp, 1) {
		return projection{}, false
	}
	ba := sp.Inputs[0]
	f := r.fusions[ba.Node]
	if ba.Index != 0 || f == nil || f.act != "" || len(f.nodes) != 2 || f.nodes[0].Op != "MatMul" || f.nodes[1].Op != "BiasAdd" {
		return projection{}, false
	}
	mm, bias := f.nodes[0], f.nodes[1]
	if r.observed(bias) || r.ctrlOut[bias] > 0 || len(r.uses[ba]) != 1 ||
		mm.Attrs["transpose_a"].GetB() || mm.Attrs["transpose_b"].GetB() || !isFloat(mm, bias) {
		return projection{}, false
	}
	p := projection{mm: mm, bias: bias, split: sp, f: f, w: r.constThrough(mm.Inputs[1]), b: r.constThrough(bias.Inputs[1])}
	shape := r.constThrough(sp.Inputs[1])
	if p.w == nil || p.b == nil || shape == nil || p.w.DType != tensor.Float || p.b.DType != tensor.Float || len(p.w.Shape) != 2 ||
		len(p.b.Shape) != 1 || p.b.Shape[0] != p.w.Shape[1] || len(shape.Shape) != 1 {
		return projection{}, false
	}
	var err error
	p.dims, err = shape.Int64s()
	p.dimsType = shape.DType
	if err != nil || len(p.dims) != 4 || p.dims[2] <= 0 || p.dims[3] <= 0 || p.dims[2]*p.dims[3] != p.w.Shape[1] {
		return projection{}, false
	}
	return p, true
}

// einsumProjectionOf is projectionOf for Keras' EinsumDense, whose nodes
// no fusion has taken yet (matchEinsum runs after the attentions).
func (r *rewriter) einsumProjectionOf(o graph.Output) (projection, bool) {
	a := o.Node
	if o.Index != 0 || (a.Op != "AddV2" && a.Op != "Add") || len(a.Inputs) != 2 || !isFloat(a) || !r.hidden(a, 1) {
		return projection{}, false
	}
	for i, in := range a.Inputs {
		e := in.Node
		if in.Index != 0 || e.Op != "Einsum" || len(e.Inputs) != 2 || !isFloat(e) || !r.hidden(e, 1) ||
			canonEquation(string(e.Attrs["equation"].GetS())) != "abc,cde->abde" || e.Attrs[ConstWeightsAttr].GetB() {
			continue
		}
		p := projection{mm: e, bias: a, w: r.constThrough(e.Inputs[1]), b: r.constThrough(a.Inputs[1-i])}
		if p.w == nil || p.b == nil || p.w.DType != tensor.Float || p.b.DType != tensor.Float || len(p.w.Shape) != 3 || !p.b.Shape.Equal(p.w.Shape[1:]) {
			return projection{}, false
		}
		return p, true
	}
	return projection{}, false
}

// packProjections merges the projections of q, k and v, when all three
// are projections of one input with weights of one shape (split alike),
// into one GEMM on their weights side by side, [K, 3N], whose output as
// [.., .., 3H, D] (reshaped, in the heads form) holds q's heads, then
// k's, then v's: one product that the intra-op pool splits where three
// each too small to split ran one after another (a transformer's at one
// row of 64 tokens), read in place by the packed attention kernel. It
// adds the projections' nodes to nodes and, in the heads form, takes
// their epilogue fusions over.
func (r *rewriter) packProjections(at *attention, nodes []*graph.Node, device string, heads bool) []*graph.Node {
	// Should a device refuse the attention, its fusion is dropped, and
	// with it the projections' own: ask before taking them over.
	for _, d := range r.opt.Devices {
		if _, err := kernels.Lookup(&graph.Node{Op: "_MstreamAttention", Attrs: map[string]*tfpb.AttrValue{"T": typeAttr(tensor.Float)}}, d); err != nil {
			return nodes
		}
	}
	var p [3]projection
	for i, o := range []graph.Output{at.q, at.k, at.v} {
		var ok bool
		if p[i], ok = r.projectionOf(o, heads); !ok {
			return nodes
		}
	}
	x := p[0].mm.Inputs[0]
	for i, pi := range p {
		same := pi.split == nil || slices.Equal(pi.dims, p[0].dims) && pi.dimsType == p[0].dimsType && pi.split.Device == device
		if !same || pi.mm.Inputs[0] != x || !pi.w.Shape.Equal(p[0].w.Shape) || pi.mm.Device != device || pi.bias.Device != device ||
			pi.mm == p[(i+1)%3].mm {
			return nodes
		}
	}
	for _, pi := range p {
		nodes = append(nodes, pi.mm, pi.bias)
		if pi.split != nil {
			delete(r.fusions, pi.f.result())
			nodes = append(nodes, pi.split)
		}
	}
	at.packed, at.broadcast = &p, false
	return nodes
}

// buildPacked makes the merged projection of at.packed and returns its
// output as q, k and v packed, [.., .., 3H, D]: in the heads form a
// _FusedMatMul and a Reshape (they take the IDs and names of the last of
// the three BiasAdds and of the splits, which nothing outside the fusion
// can see), in Keras' one _MstreamEinsumBias (the last Add's).
func (r *rewriter) buildPacked(p *[3]projection) (graph.Output, error) {
	// A row of the weights: K may be 0 (a zero-size weight), N is not
	// divided out of the element count.
	k, n := p[0].w.Shape[0], p[0].w.Shape[1:].NumElements()
	wShape, bShape := tensor.Shape{k, 3 * n}, tensor.Shape{3 * n}
	if p[0].split == nil {
		h := p[0].w.Shape[1]
		wShape, bShape = tensor.Shape{k, 3 * h, p[0].w.Shape[2]}, tensor.Shape{3 * h, p[0].w.Shape[2]}
	}
	w, b := tensor.New(tensor.Float, wShape), tensor.New(tensor.Float, bShape)
	last, split := p[0].bias, p[0].split
	var controls []*graph.Node
	var names []string
	for i, pi := range p {
		for row := int64(0); row < k; row++ {
			copy(w.F32()[row*3*n+int64(i)*n:row*3*n+int64(i+1)*n], pi.w.F32()[row*n:(row+1)*n])
		}
		copy(b.F32()[int64(i)*n:], pi.b.F32())
		if pi.bias.ID > last.ID {
			last = pi.bias
		}
		if pi.split != nil && pi.split.ID > split.ID {
			split = pi.split
		}
		controls = append(controls, pi.mm, pi.bias)
		names = append(names, pi.mm.Name, pi.bias.Name)
	}
	mk := func(name string, t *tensor.Tensor) (graph.Output, error) {
		id := r.nextID
		r.nextID++
		c, err := constNode(id, name, last.Device, t)
		if err != nil {
			return graph.Output{}, err
		}
		return c.Output(0), nil
	}
	wo, err := mk(last.Name+"/packed_qkv_weights", w)
	if err != nil {
		return graph.Output{}, err
	}
	bo, err := mk(last.Name+"/packed_qkv_bias", b)
	if err != nil {
		return graph.Output{}, err
	}
	x := r.remap(p[0].mm.Inputs[0])
	if split == nil {
		eb, err := r.einsumBias(p[0].mm, last, x, wo, bo, controls)
		if err != nil {
			return graph.Output{}, err
		}
		eb.Attrs[FusedFromAttr] = strsAttr(names...)
		return eb.Output(0), r.checkKernel(eb)
	}
	dims := slices.Clone(p[0].dims)
	dims[2] *= 3
	shape := tensor.New(p[0].dimsType, tensor.Shape{int64(len(dims))})
	for i, d := range dims {
		if shape.DType == tensor.Int32 {
			shape.I32()[i] = int32(d)
		} else {
			shape.I64()[i] = d
		}
	}
	so, err := mk(split.Name+"/packed_qkv_shape", shape)
	if err != nil {
		return graph.Output{}, err
	}
	for _, pi := range p {
		controls = append(controls, pi.split)
	}
	args := argsFor("_FusedMatMul", x, wo, bo)
	attrs := epilogueAttrs(p[0].f, "_FusedMatMul", "BiasAdd")
	attrs[FusedFromAttr] = strsAttr(names...)
	r.markConstWeights(attrs, args, weightsArg)
	fm, err := graph.NewDetached(last.ID, "_FusedMatMul", last.Name, last.Device, args, r.remapControls(controls...), attrs)
	if err != nil {
		return graph.Output{}, err
	}
	if err := r.checkKernel(fm); err != nil {
		return graph.Output{}, err
	}
	rs, err := graph.NewDetached(split.ID, "Reshape", split.Name, split.Device, [][]graph.Output{{fm.Output(0)}, {so}}, nil, split.Attrs)
	if err != nil {
		return graph.Output{}, err
	}
	return rs.Output(0), r.checkKernel(rs)
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
	// After the checks above: in the heads form the projections' nodes
	// belong to their epilogue fusions, which this one takes over.
	nodes = r.packProjections(&at, nodes, sm.Device, heads)
	r.add(&fusion{nodes: nodes, build: func(r *rewriter, f *fusion) (*graph.Node, error) {
		res := f.result()
		q, k, v := r.remap(at.q), r.remap(at.k), r.remap(at.v)
		if at.packed != nil {
			qkv, err := r.buildPacked(at.packed)
			if err != nil {
				return nil, err
			}
			q, k, v = qkv, qkv, qkv
		}
		return graph.NewDetached(res.ID, "_MstreamAttention", res.Name, res.Device,
			[][]graph.Output{{q}, {k}, {v}}, r.remapControls(f.nodes...),
			map[string]*tfpb.AttrValue{"T": typeAttr(tensor.Float), "scale": {Value: &tfpb.AttrValue_F{F: at.scale}},
				"scale_q": {Value: &tfpb.AttrValue_B{B: at.scaleQ}}, "broadcast": {Value: &tfpb.AttrValue_B{B: at.broadcast}},
				"packed": {Value: &tfpb.AttrValue_B{B: at.packed != nil}}})
	}})
}
