package optimize_test

import (
	"math/rand"
	"testing"

	"mstream/graph"
	"mstream/optimize"
	"mstream/optimize/fusiontest"
	"mstream/proto/tfpb"
	"mstream/tensor"
)

// TestEinsumBias: an Einsum of a plain product with constant weights
// whose one reader adds a Const bias over the output's trailing
// dimensions becomes one _MstreamEinsumBias exactly when every check
// holds (otherwise the Einsum keeps its op, marked when its weights are
// constant), and the outputs agree with the unrewritten graph's either
// way, over rows for the packed kernel and a single row (Einsum's own
// product, then the bias).
func TestEinsumBias(t *testing.T) {
	for _, c := range []struct {
		name, eq  string
		x, w, b   tensor.Shape
		add       string // AddV2, Add or BiasAdd
		biasFirst bool   // the Add reads the bias as its first operand
		fedW      bool
		fetchY    bool
		fuse      bool
	}{
		{name: "projection to heads", eq: "abc,cde->abde", x: tensor.Shape{3, 5, 8}, w: tensor.Shape{8, 2, 4}, b: tensor.Shape{2, 4}, add: "AddV2", fuse: true},
		{name: "one row", eq: "abc,cde->abde", x: tensor.Shape{1, 1, 8}, w: tensor.Shape{8, 2, 4}, b: tensor.Shape{2, 4}, add: "AddV2", fuse: true},
		{name: "heads to output", eq: "abcd,cde->abe", x: tensor.Shape{2, 5, 2, 4}, w: tensor.Shape{2, 4, 6}, b: tensor.Shape{6}, add: "AddV2", biasFirst: true, fuse: true},
		{name: "bias add", eq: "abcd,cde->abe", x: tensor.Shape{2, 5, 2, 4}, w: tensor.Shape{2, 4, 6}, b: tensor.Shape{6}, add: "BiasAdd", fuse: true},
		{name: "add", eq: "ab,bc->ac", x: tensor.Shape{7, 3}, w: tensor.Shape{3, 5}, b: tensor.Shape{5}, add: "Add", fuse: true},
		{name: "bias broadcast over more than the trailing dims", eq: "abc,cde->abde", x: tensor.Shape{3, 5, 8}, w: tensor.Shape{8, 2, 4}, b: tensor.Shape{4}, add: "AddV2"},
		{name: "bias add over two dims", eq: "abc,cde->abde", x: tensor.Shape{3, 5, 8}, w: tensor.Shape{8, 2, 4}, b: tensor.Shape{4}, add: "BiasAdd"},
		{name: "weights' free labels first", eq: "abc,dec->abde", x: tensor.Shape{3, 5, 8}, w: tensor.Shape{2, 4, 8}, b: tensor.Shape{2, 4}, add: "AddV2"},
		{name: "output transposed", eq: "abc,cde->abed", x: tensor.Shape{3, 5, 8}, w: tensor.Shape{8, 2, 4}, b: tensor.Shape{4, 2}, add: "AddV2"},
		{name: "weights fed", eq: "abc,cde->abde", x: tensor.Shape{3, 5, 8}, w: tensor.Shape{8, 2, 4}, b: tensor.Shape{2, 4}, add: "AddV2", fedW: true},
		{name: "product fetched", eq: "abc,cde->abde", x: tensor.Shape{3, 5, 8}, w: tensor.Shape{8, 2, 4}, b: tensor.Shape{2, 4}, add: "AddV2", fetchY: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := &gb{t: t, g: graph.New(), r: rand.New(rand.NewSource(9))}
			x := b.placeholder("x", c.x...)
			w := b.op("Identity", "w/read", nil, b.weights("w", -1, 1, c.w...))
			nb := b.g.NewBuilder("Einsum", "y")
			nb.AddInputList([]graph.Output{x, w})
			nb.SetAttr("equation", graph.AttrString(c.eq))
			y, err := nb.Finish()
			if err != nil {
				t.Fatal(err)
			}
			bias := b.weights("bias", -1, 1, c.b...)
			ins := []graph.Output{y.Output(0), bias}
			if c.biasFirst {
				ins[0], ins[1] = ins[1], ins[0]
			}
			b.op(c.add, "out", nil, ins...)
			feeds := map[string]*tensor.Tensor{"x": fusiontest.Random(b.r, tensor.Float, c.x)}
			names := []string{"x"}
			if c.fedW {
				feeds["w"] = fusiontest.Random(b.r, tensor.Float, c.w)
				names = append(names, "w")
			}
			fetches := []string{"out"}
			if c.fetchY {
				fetches = append(fetches, "y")
			}
			ops := fusedOps(rewrite(b, names, fetches))
			if got := ops["out"].Op == "_MstreamEinsumBias"; got != c.fuse {
				t.Fatalf("out is a %s, want the fusion %v", ops["out"].Op, c.fuse)
			}
			if !c.fuse && !c.fedW && ops["y"].Attrs[optimize.ConstWeightsAttr].GetB() != true {
				t.Errorf("the Einsum left alone is not marked %s", optimize.ConstWeightsAttr)
			}
			fusiontest.Compare(t, b.g, feeds, fetches, 1e-5)
		})
	}
}

// TestEinsumBiasCPUOnly: _MstreamEinsumBias has a CPU kernel only.
func TestEinsumBiasCPUOnly(t *testing.T) {
	b := &gb{t: t, g: graph.New(), r: rand.New(rand.NewSource(9))}
	nb := b.g.NewBuilder("Einsum", "y")
	nb.AddInputList([]graph.Output{b.placeholder("x", 3, 8), b.weights("w", -1, 1, 8, 4)})
	nb.SetAttr("equation", graph.AttrString("ab,bc->ac"))
	y, err := nb.Finish()
	if err != nil {
		t.Fatal(err)
	}
	b.op("AddV2", "out", map[string]*tfpb.AttrValue{}, y.Output(0), b.weights("bias", -1, 1, 4))
	b.g.RLock()
	res := optimize.Rewrite(outputs(t, b.g, "x"), outputs(t, b.g, "out"), nil, optimize.Options{Devices: []string{"CPU", testDevice}, Passes: optimize.Remap})
	b.g.RUnlock()
	if res.Fused != 0 {
		t.Errorf("%d fusions with a device that has no _MstreamEinsumBias kernel", res.Fused)
	}
}
