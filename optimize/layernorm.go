package optimize

import (
	"math"

	"mstream/graph"
	"mstream/proto/tfpb"
	"mstream/tensor"
)

// Keras' LayerNormalization, as TF 2.15 exports it, in its two forms, each
// fused into one _MstreamLayerNorm(x, gamma, beta) that makes one pass per
// row instead of ten to fifteen nodes' passes over the tensor:
//
//   - fused (epsilon >= 1.001e-5): x -> Reshape to NCHW [1, rows, cols, 1]
//     (cols the product of x's dimensions from the normalised axis on,
//     from Shape(x) through StridedSlice and Prod) -> FusedBatchNorm with
//     is_training, scale a Fill of ones and offset a Fill of zeros ->
//     Reshape back to Shape(x) -> Mul gamma -> Add(V2) beta.
//   - moments (a smaller epsilon, or tf.nn.moments and
//     tf.nn.batch_normalization written by hand): mean = Mean(x, axis),
//     variance = Mean(SquaredDifference(x, [StopGradient] mean), axis),
//     m = Rsqrt(variance + epsilon) * gamma, then x * m + (beta - mean * m).
//
// gamma and beta must be 1-D float32 Consts (through Identity), as a
// frozen model has them; the kernel broadcasts them along x's last
// dimension as the Mul and Add did.

// matchLayerNorms finds both forms.
func (r *rewriter) matchLayerNorms() {
	for _, n := range r.order {
		if r.taken[n] != nil {
			continue
		}
		switch n.Op {
		case "FusedBatchNorm", "FusedBatchNormV2", "FusedBatchNormV3":
			r.matchLayerNormFused(n)
		case "Mean":
			r.matchLayerNormMoments(n)
		}
	}
}

// layerNorm is a matched LayerNormalization: its nodes, x, gamma, beta,
// epsilon and the axis the rows begin at (single: that axis alone, which
// must then be x's last).
type layerNorm struct {
	x, gamma, beta graph.Output
	eps            float32
	axis           int64
	single         bool
}

// sole returns the one data consumer of n's output 0 when nothing else of
// n can be observed (hidden), it asks for n's device, belongs to no
// fusion and reads n once.
func (r *rewriter) sole(n *graph.Node) *graph.Node {
	if !r.hidden(n, 1) {
		return nil
	}
	c := r.uses[n.Output(0)][0]
	if c.Device != n.Device || r.taken[c] != nil {
		return nil
	}
	seen := 0
	for _, in := range c.Inputs {
		if in == n.Output(0) {
			seen++
		}
	}
	if seen != 1 {
		return nil
	}
	return c
}

// otherInput returns the input of the binary node n that is not o, when
// the other one is o.
func otherInput(n *graph.Node, o graph.Output) (graph.Output, bool) {
	if len(n.Inputs) != 2 {
		return graph.Output{}, false
	}
	switch o {
	case n.Inputs[0]:
		return n.Inputs[1], true
	case n.Inputs[1]:
		return n.Inputs[0], true
	}
	return graph.Output{}, false
}

// vectorFor says whether o is a float32 Const (through Identity) of rank
// 1 as long as x's last dimension, known at plan time: a gamma or beta of
// another length would broadcast x's rows in TF (x [N,1], gamma [c]),
// which the fused kernel does not.
func (r *rewriter) vectorFor(o, x graph.Output) bool {
	v := r.constThrough(o)
	if v == nil || v.DType != tensor.Float || len(v.Shape) != 1 || x.Index >= len(x.Node.OutShapes) {
		return false
	}
	s := x.Node.OutShapes[x.Index]
	return s.Known && len(s.Dims) > 0 && s.Dims[len(s.Dims)-1] == v.Shape[0]
}

// intConst returns the one integer of a Const (through Identity) of one
// element, scalar or vector as vector says.
func (r *rewriter) intConst(o graph.Output, vector bool) (int64, bool) {
	v := r.constThrough(o)
	if v == nil || v.NumElements() != 1 || (len(v.Shape) == 1) != vector || len(v.Shape) > 1 {
		return 0, false
	}
	switch v.DType {
	case tensor.Int32:
		return int64(v.I32()[0]), true
	case tensor.Int64:
		return v.I64()[0], true
	}
	return 0, false
}

func isFloat(ns ...*graph.Node) bool {
	for _, n := range ns {
		if dtypeOf(n, "T") != tensor.Float {
			return false
		}
	}
	return true
}

// isShapeOf says whether o is the output of a Shape of x.
func (r *rewriter) isShapeOf(o graph.Output, x graph.Output) bool {
	return o.Node.Op == "Shape" && len(o.Node.Inputs) == 1 && o.Node.Inputs[0] == x && !r.fed[o]
}

// tailProduct returns b when o is Prod(StridedSlice(Shape(x), [b], _, [1])
// with end_mask 1 and no other mask, over axis 0): the product of x's
// dimensions from b on.
func (r *rewriter) tailProduct(o graph.Output, x graph.Output) (int64, bool) {
	p := o.Node
	if p.Op != "Prod" || r.fed[o] || len(p.Inputs) != 2 || p.Attrs["keep_dims"].GetB() {
		return 0, false
	}
	if ax, ok := r.intConst(p.Inputs[1], true); !ok || ax != 0 {
		if ax, ok := r.intConst(p.Inputs[1], false); !ok || ax != 0 {
			return 0, false
		}
	}
	s := p.Inputs[0].Node
	if s.Op != "StridedSlice" || r.fed[p.Inputs[0]] || len(s.Inputs) != 4 || !r.isShapeOf(s.Inputs[0], x) {
		return 0, false
	}
	for k, want := range map[string]int64{"begin_mask": 0, "end_mask": 1, "ellipsis_mask": 0, "new_axis_mask": 0, "shrink_axis_mask": 0} {
		if s.Attrs[k].GetI() != want {
			return 0, false
		}
	}
	b, ok := r.intConst(s.Inputs[1], true)
	if st, ok2 := r.intConst(s.Inputs[3], true); !ok || !ok2 || st != 1 {
		return 0, false
	}
	return b, true
}

// fillOf says whether o is Fill(dims, c) of a float32 scalar Const c equal
// to want, with dims a Pack of the one output count.
func (r *rewriter) fillOf(o graph.Output, count graph.Output, want float64) bool {
	f := o.Node
	if f.Op != "Fill" || r.fed[o] || len(f.Inputs) != 2 || !r.scalar(r.throughIdentity(f.Inputs[1]), want) {
		return false
	}
	d := r.throughIdentity(f.Inputs[0]).Node
	return d.Op == "Pack" && len(d.Inputs) == 1 && d.Inputs[0] == count
}

// matchLayerNormFused matches Keras' fused form around bn.
func (r *rewriter) matchLayerNormFused(bn *graph.Node) {
	if !bn.Attrs["is_training"].GetB() || nhwc(bn) || string(bn.Attrs["data_format"].GetS()) != "NCHW" || !isFloat(bn) {
		return
	}
	if u := dtypeOf(bn, "U"); u != 0 && u != tensor.Float {
		return
	}
	in := bn.Inputs[0]
	rs0 := in.Node
	if rs0.Op != "Reshape" || in.Index != 0 || r.fed[in] || rs0.Device != bn.Device || !r.hidden(rs0, 1) || len(bn.Inputs) < 3 {
		return
	}
	x := rs0.Inputs[0]
	pack := r.throughIdentity(rs0.Inputs[1]).Node
	if pack.Op != "Pack" || len(pack.Inputs) != 4 || pack.Attrs["axis"].GetI() != 0 {
		return
	}
	for _, i := range []int{0, 3} {
		if v, ok := r.intConst(pack.Inputs[i], false); !ok || v != 1 {
			return
		}
	}
	axis, ok := r.tailProduct(pack.Inputs[2], x)
	if !ok || !r.fillOf(bn.Inputs[1], pack.Inputs[1], 1) || !r.fillOf(bn.Inputs[2], pack.Inputs[1], 0) {
		return
	}
	rs1 := r.sole(bn)
	if rs1 == nil || rs1.Op != "Reshape" || rs1.Inputs[0] != bn.Output(0) || !r.isShapeOf(rs1.Inputs[1], x) {
		return
	}
	mul := r.sole(rs1)
	if mul == nil || mul.Op != "Mul" || !isFloat(mul) {
		return
	}
	gamma, ok := otherInput(mul, rs1.Output(0))
	if !ok || !r.vectorFor(gamma, x) {
		return
	}
	add := r.sole(mul)
	if add == nil || (add.Op != "AddV2" && add.Op != "Add") || !isFloat(add) {
		return
	}
	beta, ok := otherInput(add, mul.Output(0))
	if !ok || !r.vectorFor(beta, x) {
		return
	}
	r.addLayerNorm([]*graph.Node{rs0, bn, rs1, mul, add},
		layerNorm{x: x, gamma: gamma, beta: beta, eps: bn.Attrs["epsilon"].GetF(), axis: axis})
}

// matchLayerNormMoments matches the moments form from its first Mean.
func (r *rewriter) matchLayerNormMoments(mean *graph.Node) {
	if !mean.Attrs["keep_dims"].GetB() || !isFloat(mean) || len(mean.Inputs) != 2 {
		return
	}
	x := mean.Inputs[0]
	axis, ok := r.intConst(mean.Inputs[1], true)
	if !ok || !r.hidden(mean, 2) {
		return
	}
	// The mean's two readers: the SquaredDifference (maybe through a
	// StopGradient) and mean * m.
	var sq, sg, m2 *graph.Node
	for _, u := range r.uses[mean.Output(0)] {
		switch {
		case u.Op == "StopGradient" && sg == nil:
			sg = u
		case u.Op == "SquaredDifference" && sq == nil:
			sq = u
		case u.Op == "Mul" && m2 == nil:
			m2 = u
		}
	}
	nodes := []*graph.Node{mean}
	if sg != nil {
		if sq != nil || r.sole(sg) == nil {
			return
		}
		sq = r.sole(sg)
		nodes = append(nodes, sg)
	}
	centre := mean.Output(0)
	if sg != nil {
		centre = sg.Output(0)
	}
	if sq == nil || m2 == nil || sq.Op != "SquaredDifference" || len(sq.Inputs) != 2 || sq.Inputs[0] != x || sq.Inputs[1] != centre {
		return
	}
	variance := r.sole(sq)
	if variance == nil || variance.Op != "Mean" || !variance.Attrs["keep_dims"].GetB() || variance.Inputs[0] != sq.Output(0) {
		return
	}
	if a, ok := r.intConst(variance.Inputs[1], true); !ok || a != axis {
		return
	}
	addEps := r.sole(variance)
	if addEps == nil || (addEps.Op != "AddV2" && addEps.Op != "Add") {
		return
	}
	epsIn, ok := otherInput(addEps, variance.Output(0))
	ev := r.constThrough(epsIn)
	if !ok || ev == nil || ev.DType != tensor.Float || ev.NumElements() != 1 || len(ev.Shape) != 0 {
		return
	}
	rsqrt := r.sole(addEps)
	if rsqrt == nil || rsqrt.Op != "Rsqrt" {
		return
	}
	mulG := r.sole(rsqrt)
	if mulG == nil || mulG.Op != "Mul" || !r.hidden(mulG, 2) {
		return
	}
	gamma, ok := otherInput(mulG, rsqrt.Output(0))
	if !ok || !r.vectorFor(gamma, x) {
		return
	}
	// mulG's readers: x * m and mean * m.
	var m1 *graph.Node
	for _, u := range r.uses[mulG.Output(0)] {
		if o, ok := otherInput(u, mulG.Output(0)); ok && u.Op == "Mul" && o == x && u != m2 {
			m1 = u
		}
	}
	if o, ok := otherInput(m2, mulG.Output(0)); !ok || o != mean.Output(0) || m1 == nil {
		return
	}
	sub := r.sole(m2)
	if sub == nil || sub.Op != "Sub" || sub.Inputs[1] != m2.Output(0) || !r.vectorFor(sub.Inputs[0], x) {
		return
	}
	out := r.sole(sub)
	if out == nil || (out.Op != "AddV2" && out.Op != "Add") || r.sole(m1) != out {
		return
	}
	if o, ok := otherInput(out, sub.Output(0)); !ok || o != m1.Output(0) {
		return
	}
	nodes = append(nodes, sq, variance, addEps, rsqrt, mulG, m1, m2, sub, out)
	for _, n := range nodes {
		if n.Device != mean.Device || r.taken[n] != nil || !isFloat(n) {
			return
		}
	}
	r.addLayerNorm(nodes, layerNorm{x: x, gamma: gamma, beta: sub.Inputs[0], eps: ev.F32()[0], axis: axis, single: true})
}

// addLayerNorm adds the fusion when its result (the last node, the one
// every other leads to) has the largest ID, as copyNodes needs.
func (r *rewriter) addLayerNorm(nodes []*graph.Node, ln layerNorm) {
	res := nodes[len(nodes)-1]
	for _, n := range nodes {
		if n.ID > res.ID {
			return
		}
	}
	if math.IsNaN(float64(ln.eps)) || ln.eps < 0 {
		return
	}
	r.add(&fusion{nodes: nodes, build: func(r *rewriter, f *fusion) (*graph.Node, error) {
		res := f.result()
		op, args, controls := "_MstreamLayerNorm", [][]graph.Output{{r.remap(ln.x)}}, r.remapControls(f.nodes...)
		if add := r.residual(ln.x, f); add != nil {
			op, args = "_MstreamAddLayerNorm", [][]graph.Output{{r.remap(add.Inputs[0])}, {r.remap(add.Inputs[1])}}
			controls = r.remapControls(append([]*graph.Node{add}, f.nodes...)...)
		}
		return graph.NewDetached(res.ID, op, res.Name, res.Device, append(args, []graph.Output{r.remap(ln.gamma)}, []graph.Output{r.remap(ln.beta)}), controls,
			map[string]*tfpb.AttrValue{"T": typeAttr(tensor.Float), "epsilon": {Value: &tfpb.AttrValue_F{F: ln.eps}},
				"begin_norm_axis": intAttr(ln.axis), "single_axis": {Value: &tfpb.AttrValue_B{B: ln.single}}})
	}})
}

// residual returns the float32 Add(V2) whose output is x, the input of
// the layer normalisation f, when f may read its two operands instead
// (_MstreamAddLayerNorm, which sums each row in the row's own pass): a
// transformer's residual connection. Every reader of x must be a node of
// f or a Shape (the fused form's, which the fusion leaves without
// readers), so that the Add has nothing left to compute for; it belongs
// to no fusion (asked once matching is done, as f is built), nothing of
// it is observed, and it asks for f's device. The Add is not absorbed:
// a Shape of it that something else still needs keeps it running, which
// costs that pass but changes no result; its control inputs pass to the
// fused node.
func (r *rewriter) residual(x graph.Output, f *fusion) *graph.Node {
	add := x.Node
	if (add.Op != "AddV2" && add.Op != "Add") || x.Index != 0 || len(add.Inputs) != 2 || !isFloat(add) ||
		add.Device != f.result().Device || r.taken[add] != nil || r.observed(add) || r.ctrlOut[add] > 0 {
		return nil
	}
	for _, u := range r.uses[x] {
		if r.taken[u] != f && u.Op != "Shape" {
			return nil
		}
	}
	return add
}
