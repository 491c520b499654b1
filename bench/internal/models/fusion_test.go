package models

import (
	"math/rand"
	"testing"

	"mstream/graph"
	"mstream/optimize/fusiontest"
	"mstream/proto/tfpb"
	"mstream/tensor"
)

// TestFusionOnOff runs the benchmark models with plan-time fusion and with
// MSTREAM_FUSION=0 on the same random inputs: the outputs must agree, and
// the models must actually contain fusions (the CNN's conv/bn/relu blocks
// and dense head, the transformer's dense layers).
func TestFusionOnOff(t *testing.T) {
	r := rand.New(rand.NewSource(3))
	for _, m := range []struct {
		name    string
		gd      *tfpb.GraphDef
		input   string
		shape   tensor.Shape
		fetch   string
		minFuse int
	}{
		{"cnn", CNN(), "image", tensor.Shape{2, 32, 32, 3}, "output", 3},
		{"transformer", Transformer(), "x", tensor.Shape{2, SeqLen, Model}, "output", 4},
	} {
		t.Run(m.name, func(t *testing.T) {
			g := graph.New()
			if _, err := g.Import(m.gd, nil); err != nil {
				t.Fatal(err)
			}
			x := fusiontest.Random(r, tensor.Float, m.shape)
			n := fusiontest.Compare(t, g, map[string]*tensor.Tensor{m.input: x}, []string{m.fetch}, 1e-4)
			t.Logf("%s: %d fusions", m.name, n)
			if n < m.minFuse {
				t.Errorf("%s: %d fusions, want at least %d", m.name, n, m.minFuse)
			}
		})
	}
}
