package optimize

import (
	"strings"

	"mstream/graph"
	"mstream/proto/tfpb"
	"mstream/tensor"
)

// A float32 Einsum of two operands whose second is a Const the plan does
// not feed (Keras' EinsumDense kernel) is marked ConstWeightsAttr, as a
// _FusedMatMul's B is: its CPU kernel packs that operand once for the
// product, where it packed it again in every block of every Run. When the
// equation is a plain product (x's labels the output's leading ones then
// the contracted ones, the weights' the contracted ones then the output's
// trailing ones, as EinsumDense writes it) and its one reader adds a
// Const bias of exactly the trailing dimensions (AddV2, Add, or a BiasAdd
// over one trailing dimension), both become one _MstreamEinsumBias whose
// CPU kernel adds the bias in the packed GEMM's epilogue (CPU only: a plan
// that may use the GPU keeps the Add, and the mark).

// matchEinsum matches an Einsum n with constant weights.
func (r *rewriter) matchEinsum(n *graph.Node) {
	if len(n.Inputs) != 2 || dtypeOf(n, "T") != tensor.Float || n.Attrs[ConstWeightsAttr].GetB() {
		return
	}
	w := r.constThrough(n.Inputs[1])
	if w == nil {
		return
	}
	nodes := []*graph.Node{n}
	bias := graph.Output{}
	if g := plainProduct(string(n.Attrs["equation"].GetS())); g > 0 && g <= len(w.Shape) {
		if a := r.sole(n); a != nil && isFloat(a) {
			b, ok := otherInput(a, n.Output(0))
			v := r.constThrough(b)
			trailing := w.Shape[len(w.Shape)-g:]
			switch {
			case !ok || v == nil || v.DType != tensor.Float:
			case (a.Op == "AddV2" || a.Op == "Add") && v.Shape.Equal(trailing),
				a.Op == "BiasAdd" && nhwc(a) && a.Inputs[0] == n.Output(0) && g == 1 && v.Shape.Equal(trailing):
				nodes, bias = append(nodes, a), b
			}
		}
	}
	r.add(&fusion{nodes: nodes, plain: len(nodes) == 1, kind: Remap, build: func(r *rewriter, f *fusion) (*graph.Node, error) {
		x, wo := r.remap(n.Inputs[0]), r.remap(n.Inputs[1])
		if len(f.nodes) == 1 {
			return graph.NewDetached(n.ID, n.Op, n.Name, n.Device, [][]graph.Output{{x, wo}}, r.remapControls(n), constWeightsAttrs(n))
		}
		return r.einsumBias(n, f.result(), x, wo, r.remap(bias), f.nodes)
	}})
}

// constWeightsAttrs is a copy of the Einsum e's attrs with its second
// operand marked constant (ConstWeightsAttr).
func constWeightsAttrs(e *graph.Node) map[string]*tfpb.AttrValue {
	attrs := make(map[string]*tfpb.AttrValue, len(e.Attrs)+1)
	for k, v := range e.Attrs {
		attrs[k] = v
	}
	attrs[ConstWeightsAttr] = &tfpb.AttrValue{Value: &tfpb.AttrValue_B{B: true}}
	return attrs
}

// einsumBias makes the _MstreamEinsumBias that stands for the nodes
// from (the Einsum e, its bias Add and whatever else the fusion took):
// x times the constant weights w by e's equation, plus b. It takes res's
// ID, name and device, and the control inputs of every node of from.
func (r *rewriter) einsumBias(e, res *graph.Node, x, w, b graph.Output, from []*graph.Node) (*graph.Node, error) {
	attrs := constWeightsAttrs(e)
	delete(attrs, "N")
	return graph.NewDetached(res.ID, "_MstreamEinsumBias", res.Name, res.Device, [][]graph.Output{{x}, {w}, {b}},
		r.remapControls(from...), attrs)
}

// plainProduct returns how many trailing output labels the second
// operand contributes when eq is x's free labels then the contracted
// ones, times the contracted ones then the weights' free labels, giving
// the free labels of x then those of the weights ("abc,cde->abde": 2,
// "abcd,cde->abe": 1); 0 for any other equation.
func plainProduct(eq string) int {
	lhs, out, ok := strings.Cut(eq, "->")
	x, w, ok2 := strings.Cut(lhs, ",")
	if !ok || !ok2 || strings.ContainsAny(eq, ". ") {
		return 0
	}
	// The contracted labels: w's that the output lacks, a prefix of w.
	c := 0
	for c < len(w) && !strings.ContainsRune(out, rune(w[c])) {
		c++
	}
	g := len(w) - c
	if c == 0 || g == 0 || c > len(x) || x[len(x)-c:] != w[:c] || out != x[:len(x)-c]+w[c:] {
		return 0
	}
	seen := map[rune]bool{}
	for _, l := range x + w[c:] {
		if seen[l] || !(l >= 'a' && l <= 'z' || l >= 'A' && l <= 'Z') {
			return 0
		}
		seen[l] = true
	}
	return g
}
