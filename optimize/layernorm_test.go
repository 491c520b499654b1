package optimize_test

import (
	"math/rand"
	"os"
	"strings"
	"testing"

	"mstream/graph"
	"mstream/optimize"
	"mstream/optimize/fusiontest"
	"mstream/proto/tfpb"
	"mstream/tensor"
)

// loadLayerNorm reads one of the TF-exported LayerNormalization graphs of
// testdata (layernorm_gen.py writes them).
func loadLayerNorm(t *testing.T, name string) *tfpb.GraphDef {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name + ".pbtxt")
	if err != nil {
		t.Fatal(err)
	}
	gd, err := graph.ParseTextGraphDef(b)
	if err != nil {
		t.Fatal(err)
	}
	return gd
}

// nodeDef returns the node of gd whose name ends with suffix.
func nodeDef(t *testing.T, gd *tfpb.GraphDef, suffix string) *tfpb.NodeDef {
	t.Helper()
	for _, n := range gd.Node {
		if strings.HasSuffix(n.Name, suffix) {
			return n
		}
	}
	t.Fatalf("no node named *%s", suffix)
	return nil
}

func setValue(n *tfpb.NodeDef, v *tensor.Tensor) { n.Attr["value"] = graph.AttrTensor(v) }

// TestLayerNorm: Keras' LayerNormalization, in both forms TF 2.15 exports
// (the FusedBatchNormV3 one and the moments chain), becomes one
// _MstreamLayerNorm exactly when every check holds, and the outputs agree
// with the unrewritten graph's either way. Each must-not-fire case breaks
// one thing the fusion relies on while the graph still runs.
func TestLayerNorm(t *testing.T) {
	i32 := func(v ...int32) *tensor.Tensor { return int32s(v...) }
	f32 := func(v float32) *tensor.Tensor { return tensor.ScalarF32(v) }
	for _, c := range []struct {
		name, file string
		mutate     func(t *testing.T, gd *tfpb.GraphDef)
		fetches    []string // besides output
		fuse       bool
		residual   bool         // fused with the residual Add before it (_MstreamAddLayerNorm)
		shape      tensor.Shape // x's, when not the file's
	}{
		{name: "moments rank 3, residual x + x^2", file: "layernorm_moments_rank3", fuse: true, residual: true, mutate: residual(false)},
		{name: "moments rank 2, residual x + row", file: "layernorm_moments_rank2", fuse: true, residual: true, mutate: residual(true)},
		{name: "fused rank 3, residual x + x^2", file: "layernorm_fused_rank3", fuse: true, residual: true, mutate: residual(false)},
		{name: "fused rank 2, residual x + row", file: "layernorm_fused_rank2", fuse: true, residual: true, mutate: residual(true)},
		{name: "moments, residual fetched", file: "layernorm_moments_rank3", fuse: true, mutate: residual(false), fetches: []string{"residual"}},
		{name: "fused, residual read by another node", file: "layernorm_fused_rank3", fuse: true, fetches: []string{"other"}, mutate: func(t *testing.T, gd *tfpb.GraphDef) {
			residual(false)(t, gd)
			gd.Node = append(gd.Node, &tfpb.NodeDef{Name: "other", Op: "Neg", Input: []string{"residual"}, Attr: map[string]*tfpb.AttrValue{"T": graph.AttrType(tensor.Float)}})
		}},
		{name: "fused rank 3", file: "layernorm_fused_rank3", fuse: true},
		{name: "fused rank 2", file: "layernorm_fused_rank2", fuse: true},
		{name: "moments rank 3", file: "layernorm_moments_rank3", fuse: true},
		{name: "moments rank 2", file: "layernorm_moments_rank2", fuse: true},
		{name: "fused, rows of the last two axes", file: "layernorm_fused_rank3", fuse: true, mutate: func(t *testing.T, gd *tfpb.GraphDef) {
			setValue(nodeDef(t, gd, "/strided_slice/stack_1"), i32(1))
			setValue(nodeDef(t, gd, "/strided_slice_1/stack"), i32(1))
		}},
		{name: "moments over a middle axis", file: "layernorm_moments_rank3", fuse: true, mutate: func(t *testing.T, gd *tfpb.GraphDef) {
			setValue(nodeDef(t, gd, "moments/mean/reduction_indices"), i32(1))
			setValue(nodeDef(t, gd, "moments/variance/reduction_indices"), i32(1))
		}},
		{name: "fused, scale not ones", file: "layernorm_fused_rank3", mutate: func(t *testing.T, gd *tfpb.GraphDef) {
			setValue(nodeDef(t, gd, "/ones/Const"), f32(2))
		}},
		{name: "fused, offset not zeros", file: "layernorm_fused_rank2", mutate: func(t *testing.T, gd *tfpb.GraphDef) {
			setValue(nodeDef(t, gd, "/zeros/Const"), f32(0.5))
		}},
		{name: "fused, batch norm fetched", file: "layernorm_fused_rank3", fetches: []string{"FusedBatchNormV3"}},
		{name: "fused, reshape back fetched", file: "layernorm_fused_rank3", fetches: []string{"Reshape_1"}},
		{name: "fused, gamma product fetched", file: "layernorm_fused_rank2", fetches: []string{"layer_normalization_1/mul"}},
		{name: "moments, variance over another axis", file: "layernorm_moments_rank3", mutate: func(t *testing.T, gd *tfpb.GraphDef) {
			setValue(nodeDef(t, gd, "moments/variance/reduction_indices"), i32(1))
		}},
		{name: "moments, sub reversed", file: "layernorm_moments_rank2", mutate: func(t *testing.T, gd *tfpb.GraphDef) {
			s := nodeDef(t, gd, "batchnorm/sub")
			s.Input[0], s.Input[1] = s.Input[1], s.Input[0]
		}},
		{name: "moments, x * m reads the mean", file: "layernorm_moments_rank2", mutate: func(t *testing.T, gd *tfpb.GraphDef) {
			m := nodeDef(t, gd, "batchnorm/mul_1")
			m.Input[0] = nodeDef(t, gd, "moments/mean").Name
		}},
		{name: "moments, mean fetched", file: "layernorm_moments_rank3", fetches: []string{"moments/mean"}},
		// x [5,1] with gamma and beta of 3: TF broadcasts each row to 3
		// columns, which the fused kernel would refuse.
		{name: "moments, gamma and beta broadcast a row of one", file: "layernorm_moments_rank2", shape: tensor.Shape{5, 1}, mutate: func(t *testing.T, gd *tfpb.GraphDef) {
			nodeDef(t, gd, "x").Attr["shape"] = &tfpb.AttrValue{Value: &tfpb.AttrValue_Shape{Shape: &tfpb.TensorShapeProto{Dim: []*tfpb.TensorShapeProto_Dim{{Size: -1}, {Size: 1}}}}}
			three := tensor.New(tensor.Float, tensor.Shape{3})
			copy(three.F32(), []float32{0.5, 2, -1})
			setValue(nodeDef(t, gd, "batchnorm/mul/ReadVariableOp/resource"), three)
			setValue(nodeDef(t, gd, "batchnorm/ReadVariableOp/resource"), three)
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			gd := loadLayerNorm(t, c.file)
			if c.mutate != nil {
				c.mutate(t, gd)
			}
			g := graph.New()
			if _, err := g.Import(gd, nil); err != nil {
				t.Fatal(err)
			}
			fetches := []string{"output"}
			for _, f := range c.fetches {
				fetches = append(fetches, nodeDef(t, gd, f).Name)
			}
			shape := tensor.Shape{3, 4, 8}
			if strings.HasSuffix(c.file, "rank2") {
				shape = tensor.Shape{5, 8}
			}
			if c.shape != nil {
				shape = c.shape
			}
			r := rand.New(rand.NewSource(5))
			x := fusiontest.Random(r, tensor.Float, shape)
			for i, v := range x.F32() {
				x.F32()[i] = 3*v + 10 // an offset the mean must take out
			}
			var res optimize.Result
			func() {
				g.RLock()
				defer g.RUnlock()
				res = optimize.Rewrite(outputs(t, g, "x"), outputs(t, g, fetches...), nil, optimize.Options{Devices: []string{"CPU"}, Passes: optimize.Remap})
			}()
			lns, adds := 0, 0
			op := map[bool]string{false: "_MstreamLayerNorm", true: "_MstreamAddLayerNorm"}[c.residual]
			for _, n := range fusedOps(res) {
				switch n.Op {
				case op:
					lns++
				case "AddV2":
					adds += strings.Count(n.Name, "residual")
				}
			}
			if want := map[bool]int{true: 1}[c.fuse]; lns != want || res.Fused != want {
				t.Fatalf("%d %s nodes, %d fusions; want %d", lns, op, res.Fused, want)
			}
			if c.residual && adds != 0 {
				t.Errorf("the residual AddV2 still runs beside %s", op)
			}
			if n := fusiontest.Compare(t, g, map[string]*tensor.Tensor{"x": x}, fetches, 1e-5); (n > 0) != c.fuse {
				t.Errorf("the session's plan has %d fusions, want fusion %v", n, c.fuse)
			}
		})
	}
}

// residual puts a residual connection before the normalisation: x + x^2
// (operands of one shape) or, with row, x + a Const row of x's last
// dimension (broadcast), as AddV2 "residual" read where x was.
func residual(row bool) func(t *testing.T, gd *tfpb.GraphDef) {
	return func(t *testing.T, gd *tfpb.GraphDef) {
		for _, n := range gd.Node {
			for i, in := range n.Input {
				if in == "x" || in == "x:0" {
					n.Input[i] = "residual"
				}
			}
		}
		tT := map[string]*tfpb.AttrValue{"T": graph.AttrType(tensor.Float)}
		y := &tfpb.NodeDef{Name: "y", Op: "Square", Input: []string{"x"}, Attr: tT}
		if row {
			v := tensor.New(tensor.Float, tensor.Shape{8})
			for i := range v.F32() {
				v.F32()[i] = float32(i) - 2.5
			}
			y = &tfpb.NodeDef{Name: "y", Op: "Const", Attr: map[string]*tfpb.AttrValue{"dtype": graph.AttrType(tensor.Float), "value": graph.AttrTensor(v)}}
		}
		gd.Node = append(gd.Node, y, &tfpb.NodeDef{Name: "residual", Op: "AddV2", Input: []string{"x", "y"}, Attr: tT})
	}
}

// TestLayerNormCPUOnly: _MstreamLayerNorm has a CPU kernel only, so where
// a plan may place nodes on another device (the GPU), the graph is left
// as exported.
func TestLayerNormCPUOnly(t *testing.T) {
	for _, file := range []string{"layernorm_fused_rank3", "layernorm_moments_rank3"} {
		g := graph.New()
		if _, err := g.Import(loadLayerNorm(t, file), nil); err != nil {
			t.Fatal(err)
		}
		g.RLock()
		res := optimize.Rewrite(outputs(t, g, "x"), outputs(t, g, "output"), nil, optimize.Options{Devices: []string{"CPU", testDevice}, Passes: optimize.Remap})
		g.RUnlock()
		if res.Fused != 0 {
			t.Errorf("%s: %d fusions with a device that has no _MstreamLayerNorm kernel", file, res.Fused)
		}
	}
}
