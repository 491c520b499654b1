package optimize_test

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"mstream/graph"
	"mstream/kernels"
	"mstream/optimize"
	"mstream/optimize/fusiontest"
	"mstream/proto/tfpb"
	"mstream/session"
	"mstream/status"
	"mstream/tensor"
)

type gb struct {
	t *testing.T
	g *graph.Graph
	r *rand.Rand
}

func (b *gb) op(op, name string, attrs map[string]*tfpb.AttrValue, ins ...graph.Output) graph.Output {
	b.t.Helper()
	nb := b.g.NewBuilder(op, name)
	for _, in := range ins {
		nb.AddInput(in)
	}
	for k, v := range attrs {
		nb.SetAttr(k, v)
	}
	n, err := nb.Finish()
	if err != nil {
		b.t.Fatalf("node %s: %v", name, err)
	}
	return n.Output(0)
}

func (b *gb) weights(name string, lo, hi float64, dims ...int64) graph.Output {
	t := tensor.New(tensor.Float, dims)
	for i := range t.F32() {
		t.F32()[i] = float32(lo + (hi-lo)*b.r.Float64())
	}
	return b.op("Const", name, map[string]*tfpb.AttrValue{"dtype": graph.AttrType(tensor.Float), "value": graph.AttrTensor(t)})
}

func (b *gb) placeholder(name string, dims ...int64) graph.Output {
	return b.op("Placeholder", name, map[string]*tfpb.AttrValue{"dtype": graph.AttrType(tensor.Float), "shape": graph.AttrShape(tensor.KnownShape(dims))})
}

func convAttrs() map[string]*tfpb.AttrValue {
	return map[string]*tfpb.AttrValue{"strides": graph.AttrIntList([]int64{1, 1, 1, 1}), "padding": graph.AttrString("SAME")}
}

// model builds every pattern optimize knows: MatMul+BiasAdd+Relu,
// Conv2D+BiasAdd+Relu6, Conv2D+FusedBatchNormV3+Relu (folded), Conv2D +
// FusedBatchNorm (folded, no activation), and a unary chain.
func model(t *testing.T) (*gb, []string) {
	b := &gb{t: t, g: graph.New(), r: rand.New(rand.NewSource(1))}
	x := b.placeholder("image", 2, 6, 6, 3)
	c1 := b.op("Conv2D", "c1/Conv2D", convAttrs(), x, b.weights("c1/kernel", -1, 1, 3, 3, 3, 8))
	c1 = b.op("BiasAdd", "c1/BiasAdd", nil, c1, b.weights("c1/bias", -1, 1, 8))
	c1 = b.op("Relu6", "c1/Relu6", nil, c1)
	bn := func(p string, in graph.Output, op string) graph.Output {
		return b.op(op, p+"/bn", map[string]*tfpb.AttrValue{"is_training": graph.AttrBool(false), "epsilon": graph.AttrFloat(0.01)},
			in, b.weights(p+"/gamma", 0.5, 2, 8), b.weights(p+"/beta", -1, 1, 8), b.weights(p+"/mean", -1, 1, 8), b.weights(p+"/var", 0.1, 2, 8))
	}
	c2 := b.op("Conv2D", "c2/Conv2D", convAttrs(), c1, b.weights("c2/kernel", -1, 1, 3, 3, 8, 8))
	c2 = b.op("Relu", "c2/Relu", nil, bn("c2", c2, "FusedBatchNormV3"))
	c3 := b.op("Conv2D", "c3/Conv2D", convAttrs(), c2, b.weights("c3/kernel", -1, 1, 1, 1, 8, 8))
	c3 = bn("c3", c3, "FusedBatchNorm")
	flat := b.op("Reshape", "flatten", nil, c3, b.op("Const", "flatten/shape", map[string]*tfpb.AttrValue{
		"dtype": graph.AttrType(tensor.Int32), "value": graph.AttrTensor(int32s(2, 288))}))
	d := b.op("MatMul", "dense/MatMul", nil, flat, b.weights("dense/kernel", -0.2, 0.2, 288, 16))
	d = b.op("BiasAdd", "dense/BiasAdd", nil, d, b.weights("dense/bias", -1, 1, 16))
	d = b.op("Relu", "dense/Relu", nil, d)
	e := b.op("Neg", "chain/Neg", nil, d)
	e = b.op("Sigmoid", "chain/Sigmoid", nil, e)
	b.op("Tanh", "chain/Tanh", nil, e)
	return b, []string{"chain/Tanh"}
}

func int32s(v ...int32) *tensor.Tensor {
	t := tensor.New(tensor.Int32, tensor.Shape{int64(len(v))})
	copy(t.I32(), v)
	return t
}

func outputs(t *testing.T, g *graph.Graph, names ...string) []graph.Output {
	var out []graph.Output
	for _, n := range names {
		o, err := fusiontest.Output(g, n)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, o)
	}
	return out
}

// fusedOps walks back from the rewritten fetches and returns node name ->
// op for every node reachable.
func fusedOps(res optimize.Result) map[string]*graph.Node {
	seen := map[string]*graph.Node{}
	var walk func(n *graph.Node)
	walk = func(n *graph.Node) {
		if seen[n.Name] != nil {
			return
		}
		seen[n.Name] = n
		for _, in := range n.Inputs {
			walk(in.Node)
		}
		for _, c := range n.Controls {
			walk(c)
		}
	}
	for _, f := range res.Fetches {
		walk(f.Node)
	}
	for _, n := range res.Targets {
		walk(n)
	}
	return seen
}

func rewrite(b *gb, feeds, fetches []string, targets ...string) optimize.Result {
	var ts []*graph.Node
	for _, n := range targets {
		ts = append(ts, b.g.Lookup(n))
	}
	b.g.RLock()
	defer b.g.RUnlock()
	return optimize.Rewrite(outputs(b.t, b.g, feeds...), outputs(b.t, b.g, fetches...), ts, optimize.Options{Devices: []string{"CPU"}, Passes: optimize.Remap})
}

func TestPatterns(t *testing.T) {
	b, fetches := model(t)
	before := b.g.ToGraphDef()
	res := rewrite(b, []string{"image"}, fetches)
	if res.Fused != 5 {
		t.Errorf("fused %d patterns, want 5", res.Fused)
	}
	nodes := fusedOps(res)
	want := map[string]string{"c1/Relu6": "_FusedConv2D", "c2/Relu": "_FusedConv2D", "c3/bn": "_FusedConv2D",
		"dense/Relu": "_FusedMatMul", "chain/Tanh": "_MstreamUnaryChain", "flatten": "Reshape"}
	for name, op := range want {
		if n := nodes[name]; n == nil || n.Op != op {
			t.Errorf("node %s: got %v, want op %s", name, n, op)
		}
	}
	for _, gone := range []string{"c1/Conv2D", "c1/BiasAdd", "c2/bn", "c2/Conv2D", "c2/kernel", "dense/MatMul", "dense/BiasAdd", "chain/Neg"} {
		if nodes[gone] != nil {
			t.Errorf("node %s is still in the rewritten plan", gone)
		}
	}
	ops := func(n string) string {
		var s []string
		for _, v := range nodes[n].Attrs["fused_ops"].GetList().GetS() {
			s = append(s, string(v))
		}
		return strings.Join(s, ",")
	}
	for name, w := range map[string]string{"c1/Relu6": "BiasAdd,Relu6", "c2/Relu": "BiasAdd,Relu", "c3/bn": "BiasAdd", "dense/Relu": "BiasAdd,Relu"} {
		if got := ops(name); got != w {
			t.Errorf("%s fused_ops = %s, want %s", name, got, w)
		}
	}
	if got := nodes["chain/Tanh"].Attrs["ops"].GetList().GetS(); len(got) != 3 {
		t.Errorf("chain ops %q, want Neg,Sigmoid,Tanh", got)
	}
	if nodes["c2/Conv2D/folded_filter"] == nil || nodes["c2/bn/folded_bias"] == nil {
		t.Errorf("folded constants missing")
	}
	// The user's graph is untouched.
	if after := b.g.ToGraphDef(); len(after.Node) != len(before.Node) || b.g.Lookup("c2/bn").Op != "FusedBatchNormV3" {
		t.Errorf("the user's graph changed: %d nodes before, %d after", len(before.Node), len(after.Node))
	}
	x := fusiontest.Random(b.r, tensor.Float, tensor.Shape{2, 6, 6, 3})
	if n := fusiontest.Compare(t, b.g, map[string]*tensor.Tensor{"image": x}, fetches, 1e-4); n != 5 {
		t.Errorf("Compare saw %d fusions", n)
	}
}

// TestBoundaries: a node the Run can observe (fetched, fed, a target, a
// control source, read twice) is never absorbed, and results still agree.
func TestBoundaries(t *testing.T) {
	for _, c := range []struct {
		name           string
		feeds, fetches []string
		targets        []string
		keep           []string // nodes that must not be absorbed (they may be a fusion's result)
		fused          []string // nodes that must be the result of a fusion
		control        bool     // add a control edge from dense/MatMul
	}{
		{name: "fetch intermediate", feeds: []string{"image"}, fetches: []string{"chain/Tanh", "dense/BiasAdd"},
			keep: []string{"dense/BiasAdd"}, fused: []string{"dense/BiasAdd", "chain/Tanh"}},
		{name: "fetch the matmul", feeds: []string{"image"}, fetches: []string{"chain/Tanh", "dense/MatMul"},
			keep: []string{"dense/MatMul", "dense/BiasAdd"}, fused: []string{"c1/Relu6"}},
		{name: "feed the bias add", feeds: []string{"image", "dense/BiasAdd"}, fetches: []string{"chain/Tanh"},
			fused: []string{"chain/Tanh"}},
		{name: "target", feeds: []string{"image"}, fetches: []string{"chain/Tanh"}, targets: []string{"chain/Sigmoid"},
			keep: []string{"chain/Sigmoid", "chain/Tanh"}},
		{name: "control out", feeds: []string{"image"}, fetches: []string{"chain/Tanh", "after"}, control: true,
			keep: []string{"dense/MatMul"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			b, _ := model(t)
			if c.control {
				nb := b.g.NewBuilder("NoOp", "after")
				nb.AddControlInput(b.g.Lookup("dense/MatMul"))
				if _, err := nb.Finish(); err != nil {
					t.Fatal(err)
				}
				c.fetches = c.fetches[:1]
				c.targets = []string{"after"}
			}
			res := rewrite(b, c.feeds, c.fetches, c.targets...)
			nodes := fusedOps(res)
			for _, k := range c.keep {
				if nodes[k] == nil {
					t.Errorf("%s was absorbed into a fusion", k)
				}
			}
			for _, f := range c.fused {
				if n := nodes[f]; n == nil || !strings.HasPrefix(n.Op, "_") {
					t.Errorf("%s should be a fused node, got %v", f, n)
				}
			}
			feeds := map[string]*tensor.Tensor{}
			for _, f := range c.feeds {
				o := outputs(t, b.g, f)[0]
				s := o.Node.OutShapes[o.Index]
				if !s.Known || len(s.Dims) == 0 || s.Dims[0] < 0 {
					s = tensor.KnownShape(tensor.Shape{2, 16})
				}
				feeds[f] = fusiontest.Random(b.r, tensor.Float, s.Dims)
			}
			fusiontest.Compare(t, b.g, feeds, append(c.fetches, c.targets...)[:len(c.fetches)], 1e-4)
		})
	}
}

func contains(v []string, s string) bool {
	for _, x := range v {
		if x == s {
			return true
		}
	}
	return false
}

// TestFieldModels runs every test/models case that TF runs successfully
// with fusion on and off; the outputs must agree.
func TestFieldModels(t *testing.T) {
	dir := "../test/models"
	raw, err := os.ReadFile(filepath.Join(dir, "models.json"))
	if err != nil {
		t.Fatal(err)
	}
	var spec struct {
		Cases []struct {
			Name, Model string
			Expect      any
			Feeds       []struct {
				Name, Dtype string
				Shape       []int64
			}
			Fetches []struct{ Name string }
		}
	}
	if err := json.Unmarshal(raw, &spec); err != nil {
		t.Fatal(err)
	}
	dtypes := map[string]tensor.DType{"float32": tensor.Float, "int32": tensor.Int32, "int64": tensor.Int64, "bool": tensor.Bool}
	r := rand.New(rand.NewSource(2))
	ran, fused := 0, 0
	for _, c := range spec.Cases {
		if e, ok := c.Expect.(string); c.Expect != nil && (!ok || e != "ok") {
			continue
		}
		t.Run(c.Name, func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join(dir, c.Model))
			if err != nil {
				t.Fatal(err)
			}
			var gd *tfpb.GraphDef
			if strings.HasSuffix(c.Model, ".pbtxt") {
				gd, err = graph.ParseTextGraphDef(b)
			} else {
				gd, err = graph.ParseGraphDef(b)
			}
			if err != nil {
				t.Fatal(err)
			}
			g := graph.New()
			if _, err := g.Import(gd, nil); err != nil {
				t.Skipf("needs import options this test does not give: %v", err)
			}
			feeds := map[string]*tensor.Tensor{}
			for _, f := range c.Feeds {
				dt, ok := dtypes[f.Dtype]
				if !ok {
					t.Skipf("feed dtype %s is not drawn here", f.Dtype)
				}
				feeds[f.Name] = fusiontest.Random(r, dt, f.Shape)
			}
			var fetches []string
			for _, f := range c.Fetches {
				fetches = append(fetches, f.Name)
			}
			fused += fusiontest.Compare(t, g, feeds, fetches, 1e-4)
			ran++
		})
	}
	t.Logf("%d models compared, %d fusions among them", ran, fused)
	if ran < 10 || fused == 0 {
		t.Errorf("%d models compared with %d fusions: the field models should exercise fusion", ran, fused)
	}
}

// TestErrorNamesUserNodes: a run-time error inside a fused kernel names the
// nodes the user built, with the same code as the unfused run.
func TestErrorNamesUserNodes(t *testing.T) {
	b := &gb{t: t, g: graph.New(), r: rand.New(rand.NewSource(4))}
	x := b.op("Placeholder", "x", map[string]*tfpb.AttrValue{"dtype": graph.AttrType(tensor.Float)})
	d := b.op("MatMul", "dense/MatMul", nil, x, b.weights("dense/kernel", -1, 1, 4, 3))
	d = b.op("BiasAdd", "dense/BiasAdd", nil, d, b.weights("dense/bias", -1, 1, 3))
	b.op("Relu", "dense/Relu", nil, d)
	if n := fusiontest.Fusions(b.g, outputs(t, b.g, "x"), outputs(t, b.g, "dense/Relu")); n != 1 {
		t.Fatalf("%d fusions, want 1", n)
	}
	bad := fusiontest.Random(b.r, tensor.Float, tensor.Shape{2, 5})
	for _, fusion := range []string{"1", "0"} {
		s, err := session.New(b.g, &session.Options{Env: map[string]string{"MSTREAM_FUSION": fusion}})
		if err != nil {
			t.Fatal(err)
		}
		_, _, err = s.Run(nil, []session.Feed{{Output: outputs(t, b.g, "x")[0], Tensor: bad}}, outputs(t, b.g, "dense/Relu"), nil)
		s.Close()
		if status.CodeOf(err) != status.InvalidArgument || !strings.Contains(fmt.Sprint(err), "dense/MatMul") {
			t.Errorf("MSTREAM_FUSION=%s: got %v, want INVALID_ARGUMENT naming dense/MatMul", fusion, err)
		}
	}
}

func (b *gb) scalar(name string, v float32) graph.Output {
	t := tensor.New(tensor.Float, tensor.Shape{})
	t.F32()[0] = v
	return b.op("Const", name, map[string]*tfpb.AttrValue{"dtype": graph.AttrType(tensor.Float), "value": graph.AttrTensor(t)})
}

// TestGeluExact: MatMul+BiasAdd and the exact GELU as Keras exports it (in
// both spellings of x/sqrt(2), operands in either order) become one
// _FusedMatMul [BiasAdd, GeluExact]; fetching the BiasAdd too keeps the
// GELU apart. Outputs match the unfused run.
func TestGeluExact(t *testing.T) {
	for _, variant := range []string{"div", "mul"} {
		t.Run(variant, func(t *testing.T) {
			b := &gb{t: t, g: graph.New(), r: rand.New(rand.NewSource(5))}
			x := b.placeholder("x", 3, 16)
			d := b.op("MatMul", "ffn/MatMul", nil, x, b.weights("ffn/kernel", -1, 1, 16, 32))
			d = b.op("BiasAdd", "ffn/BiasAdd", nil, d, b.weights("ffn/bias", -1, 1, 32))
			var s graph.Output
			if variant == "div" {
				s = b.op("RealDiv", "gelu/truediv", nil, d, b.scalar("gelu/sqrt2", float32(math.Sqrt2)))
			} else {
				s = b.op("Mul", "gelu/scale", nil, b.scalar("gelu/rsqrt2", float32(1/math.Sqrt2)), d)
			}
			e := b.op("Erf", "gelu/Erf", nil, s)
			a := b.op("AddV2", "gelu/add", nil, e, b.scalar("gelu/one", 1))
			h := b.op("Mul", "gelu/half", nil, d, b.scalar("gelu/half/y", 0.5))
			b.op("Mul", "gelu/out", nil, a, h)
			res := rewrite(b, []string{"x"}, []string{"gelu/out"})
			n := fusedOps(res)["gelu/out"]
			if res.Fused != 1 || n == nil || n.Op != "_FusedMatMul" || len(n.Attrs["fused_ops"].GetList().GetS()) != 2 ||
				string(n.Attrs["fused_ops"].GetList().GetS()[1]) != "GeluExact" {
				t.Fatalf("got %d fusions, gelu/out = %v", res.Fused, n)
			}
			in := map[string]*tensor.Tensor{"x": fusiontest.Random(b.r, tensor.Float, tensor.Shape{3, 16})}
			fusiontest.Compare(t, b.g, in, []string{"gelu/out"}, 1e-5)
			res = rewrite(b, []string{"x"}, []string{"gelu/out", "ffn/BiasAdd"})
			if n := fusedOps(res)["gelu/out"]; n == nil || n.Op == "_FusedMatMul" {
				t.Errorf("GELU fused although the BiasAdd is fetched: %v", n)
			}
			fusiontest.Compare(t, b.g, in, []string{"gelu/out", "ffn/BiasAdd"}, 1e-5)
		})
	}
}

// testDevice has a _FusedMatMul and _FusedConv2D kernel that take BiasAdd
// alone and refuse any activation, as a GPU kernel may.
const testDevice = "OPTIMIZE_TEST"

func init() {
	for _, op := range []string{"_FusedMatMul", "_FusedConv2D"} {
		kernels.Register(kernels.Def{Op: op, Device: testDevice, Factory: func(n *graph.Node) (kernels.Kernel, error) {
			if len(n.Attrs["fused_ops"].GetList().GetS()) != 1 {
				return nil, status.Errorf(status.Unimplemented, "only BiasAdd")
			}
			return kernels.KernelFunc(func(*kernels.Context) error { return nil }), nil
		}})
	}
}

// TestActivationRefused: where a device refuses the fused activation, the
// GEMM or convolution still fuses with its BiasAdd (or folded BatchNorm),
// and the activation's nodes stay, reading the fused node; a fused op the
// device has no kernel for is not made.
func TestActivationRefused(t *testing.T) {
	b, fetches := model(t)
	var res optimize.Result
	func() {
		b.g.RLock()
		defer b.g.RUnlock()
		res = optimize.Rewrite(outputs(t, b.g, "image"), outputs(t, b.g, fetches...), nil, optimize.Options{Devices: []string{"CPU", testDevice}, Passes: optimize.Remap})
	}()
	nodes := fusedOps(res)
	for name, op := range map[string]string{"c1/BiasAdd": "_FusedConv2D", "c1/Relu6": "Relu6", "c2/bn": "_FusedConv2D",
		"c3/bn": "_FusedConv2D", "dense/BiasAdd": "_FusedMatMul", "chain/Tanh": "Tanh"} {
		if n := nodes[name]; n == nil || n.Op != op {
			t.Errorf("%s: got %v, want op %s", name, n, op)
		}
	}
	if relu := nodes["c1/Relu6"]; relu != nil && relu.Inputs[0].Node != nodes["c1/BiasAdd"] {
		t.Errorf("c1/Relu6 reads %v, not the fused c1/BiasAdd", relu.Inputs[0].Node)
	}
	// The chain has no kernel on the test device, so it is not fused at all.
	if res.Fused != 4 {
		t.Errorf("%d fusions, want 4", res.Fused)
	}
}

// TestConstWeights: the weights of a _FusedMatMul (B), a _FusedConv2D
// (the filter) or an Einsum (its second operand, which keeps its op) are
// marked ConstWeightsAttr when they are a Const the plan
// does not feed, directly or through Identity (a BatchNorm's folded filter
// is one); a fed Const or Identity, or weights computed from a feed, are
// not. Each case then runs three times in a session with rewrites and one
// without, the fed weights new on each Run: a kernel that kept the first
// Run's weights (as one wrongly told its fed weights were constant would)
// differs from the second Run on.
func TestConstWeights(t *testing.T) {
	kinds := []struct {
		op, fused string
		marked    string // the node that carries the mark
		x, w      tensor.Shape
		attrs     map[string]*tfpb.AttrValue
	}{
		{"MatMul", "_FusedMatMul", "out", tensor.Shape{4, 8}, tensor.Shape{8, 8}, nil},
		{"Conv2D", "_FusedConv2D", "out", tensor.Shape{2, 6, 6, 3}, tensor.Shape{3, 3, 3, 8}, convAttrs()},
		// Keras' EinsumDense: 12 rows, the packed kernel's.
		{"Einsum", "Einsum", "y", tensor.Shape{4, 3, 8}, tensor.Shape{8, 2, 5},
			map[string]*tfpb.AttrValue{"equation": graph.AttrString("abc,cde->abde")}},
	}
	cases := []struct {
		name     string
		identity bool   // the op reads w through Identity w/read
		computed bool   // w is a Placeholder and the op reads Neg(w)
		folded   bool   // a FusedBatchNormV3 after the op, folded into its filter
		fed      string // the output fed besides x, with new values each Run
		want     bool
	}{
		{name: "const", want: true},
		{name: "through identity", identity: true, want: true},
		{name: "const fed", fed: "w"},
		{name: "const fed under identity", identity: true, fed: "w"},
		{name: "identity fed", identity: true, fed: "w/read"},
		{name: "computed", computed: true, fed: "w"},
		{name: "folded batchnorm", folded: true, want: true},
	}
	for _, k := range kinds {
		for _, c := range cases {
			if c.folded && k.op != "Conv2D" {
				continue
			}
			t.Run(k.op+"/"+c.name, func(t *testing.T) {
				b := &gb{t: t, g: graph.New(), r: rand.New(rand.NewSource(1))}
				x := b.placeholder("x", k.x...)
				var w graph.Output
				if c.computed {
					w = b.op("Neg", "w/neg", nil, b.placeholder("w", k.w...))
				} else {
					w = b.weights("w", -1, 1, k.w...)
				}
				if c.identity {
					w = b.op("Identity", "w/read", nil, w)
				}
				o := int64(k.w[len(k.w)-1])
				var y graph.Output
				if k.op == "Einsum" {
					nb := b.g.NewBuilder("Einsum", "y")
					nb.AddInputList([]graph.Output{x, w})
					for a, v := range k.attrs {
						nb.SetAttr(a, v)
					}
					n, err := nb.Finish()
					if err != nil {
						t.Fatal(err)
					}
					y = n.Output(0)
				} else {
					y = b.op(k.op, "y", k.attrs, x, w)
				}
				if c.folded {
					b.op("FusedBatchNormV3", "out", map[string]*tfpb.AttrValue{"is_training": graph.AttrBool(false), "epsilon": graph.AttrFloat(0.01)},
						y, b.weights("gamma", 0.5, 2, o), b.weights("beta", -1, 1, o), b.weights("mean", -1, 1, o), b.weights("var", 0.1, 2, o))
				} else {
					b.op("BiasAdd", "out", nil, y, b.weights("bias", -1, 1, o))
				}
				feeds := []string{"x"}
				if c.fed != "" {
					feeds = append(feeds, c.fed)
				}
				n := fusedOps(rewrite(b, feeds, []string{"out"}))[k.marked]
				if n == nil || n.Op != k.fused {
					t.Fatalf("%s is %v, want a %s", k.marked, n, k.fused)
				}
				if got := n.Attrs[optimize.ConstWeightsAttr].GetB(); got != c.want {
					t.Errorf("%s = %v, want %v", optimize.ConstWeightsAttr, got, c.want)
				}

				fo := outputs(t, b.g, feeds...)
				outs := outputs(t, b.g, "out")
				open := func(fusion string, cfg *tfpb.ConfigProto) *session.Session {
					s, err := session.New(b.g, &session.Options{Config: cfg, Env: map[string]string{"MSTREAM_FUSION": fusion}})
					if err != nil {
						t.Fatal(err)
					}
					t.Cleanup(func() { s.Close() })
					return s
				}
				on, off := open("1", &tfpb.ConfigProto{}), open("0", fusiontest.NoRewrites())
				fs := []session.Feed{{Output: fo[0], Tensor: fusiontest.Random(b.r, tensor.Float, k.x)}}
				for run := 0; run < 3; run++ {
					if c.fed != "" {
						fs = append(fs[:1], session.Feed{Output: fo[1], Tensor: fusiontest.Random(b.r, tensor.Float, k.w)})
					}
					got, _, err := on.Run(nil, fs, outs, nil)
					if err != nil {
						t.Fatal(err)
					}
					want, _, err := off.Run(nil, fs, outs, nil)
					if err != nil {
						t.Fatal(err)
					}
					g, wv := got[0].F32(), want[0].F32()
					for i := range wv {
						if math.Abs(float64(g[i]-wv[i])) > 1e-4*math.Max(1, math.Abs(float64(wv[i]))) {
							t.Fatalf("run %d: element %d = %v with rewrites, %v without", run, i, g[i], wv[i])
						}
					}
				}
			})
		}
	}
}

// TestConvMaxPool: a MaxPool (spatial window, SAME or VALID) reading a
// convolution's epilogue of a bias or a folded BatchNorm and at most a
// Relu joins it as _MstreamConv2DMaxPool, named after the pool; after
// another activation, a fetched Relu, or on a device without the fused
// op (which falls back to _FusedConv2D and the MaxPool), the pool stays.
// Results agree with the session without rewrites.
func TestConvMaxPool(t *testing.T) {
	b := &gb{t: t, g: graph.New(), r: rand.New(rand.NewSource(2))}
	x := b.placeholder("image", 2, 12, 10, 3)
	pool := func(name, padding string, in graph.Output, k ...int64) graph.Output {
		return b.op("MaxPool", name, map[string]*tfpb.AttrValue{"ksize": graph.AttrIntList([]int64{1, k[0], k[1], 1}),
			"strides": graph.AttrIntList([]int64{1, k[2], k[3], 1}), "padding": graph.AttrString(padding)}, in)
	}
	bn := func(p string, in graph.Output, c int64) graph.Output {
		return b.op("FusedBatchNormV3", p+"/bn", map[string]*tfpb.AttrValue{"is_training": graph.AttrBool(false), "epsilon": graph.AttrFloat(0.01)},
			in, b.weights(p+"/gamma", 0.5, 2, c), b.weights(p+"/beta", -1, 1, c), b.weights(p+"/mean", -1, 1, c), b.weights(p+"/var", 0.1, 2, c))
	}
	// Keras' block: Conv2D, BatchNormalization, ReLU, MaxPooling2D.
	c1 := b.op("Conv2D", "c1/Conv2D", convAttrs(), x, b.weights("c1/kernel", -1, 1, 3, 3, 3, 8))
	c1 = b.op("Relu", "c1/Relu", nil, bn("c1", c1, 8))
	p1 := pool("c1/pool", "VALID", c1, 2, 2, 2, 2)
	// A bias, no activation, a SAME window of 3 with a remainder.
	c2 := b.op("Conv2D", "c2/Conv2D", convAttrs(), p1, b.weights("c2/kernel", -1, 1, 3, 3, 8, 8))
	c2 = b.op("BiasAdd", "c2/BiasAdd", nil, c2, b.weights("c2/bias", -1, 1, 8))
	p2 := pool("c2/pool", "SAME", c2, 3, 3, 2, 2)
	// Relu6 is not in oneDNN's primitive: the pool stays.
	c3 := b.op("Conv2D", "c3/Conv2D", convAttrs(), p2, b.weights("c3/kernel", -1, 1, 1, 1, 8, 4))
	c3 = b.op("BiasAdd", "c3/BiasAdd", nil, c3, b.weights("c3/bias", -1, 1, 4))
	c3 = b.op("Relu6", "c3/Relu6", nil, c3)
	pool("c3/pool", "VALID", c3, 2, 1, 1, 1)
	// A fetched Relu is not absorbed, nor is the pool after it.
	c4 := b.op("Conv2D", "c4/Conv2D", convAttrs(), p2, b.weights("c4/kernel", -1, 1, 3, 3, 8, 4))
	c4 = b.op("BiasAdd", "c4/BiasAdd", nil, c4, b.weights("c4/bias", -1, 1, 4))
	c4 = b.op("Relu", "c4/Relu", nil, c4)
	pool("c4/pool", "VALID", c4, 2, 2, 2, 2)
	fetches := []string{"c3/pool", "c4/pool", "c4/Relu"}

	res := rewrite(b, []string{"image"}, fetches)
	nodes := fusedOps(res)
	for name, op := range map[string]string{"c1/pool": "_MstreamConv2DMaxPool", "c2/pool": "_MstreamConv2DMaxPool",
		"c3/Relu6": "_FusedConv2D", "c3/pool": "MaxPool", "c4/Relu": "_FusedConv2D", "c4/pool": "MaxPool"} {
		if n := nodes[name]; n == nil || n.Op != op {
			t.Errorf("node %s: got %v, want op %s", name, n, op)
		}
	}
	for _, gone := range []string{"c1/Relu", "c1/bn", "c2/BiasAdd"} {
		if nodes[gone] != nil {
			t.Errorf("node %s is still in the rewritten plan", gone)
		}
	}
	if n := nodes["c2/pool"]; n != nil && (string(n.Attrs["pool_padding"].GetS()) != "SAME" || len(n.Attrs["pool_ksize"].GetList().GetI()) != 4) {
		t.Errorf("c2/pool's pool attrs: %v", n.Attrs)
	}
	in := map[string]*tensor.Tensor{"image": fusiontest.Random(b.r, tensor.Float, tensor.Shape{2, 12, 10, 3})}
	if n := fusiontest.Compare(t, b.g, in, fetches, 1e-4); n != 4 {
		t.Errorf("Compare saw %d fusions, want 4", n)
	}
	// One image: the CPU kernel pools bands of rows.
	in1 := map[string]*tensor.Tensor{"image": fusiontest.Random(b.r, tensor.Float, tensor.Shape{1, 12, 10, 3})}
	fusiontest.Compare(t, b.g, in1, fetches, 1e-4)

	// A device without the fused op: the convolution fuses without its
	// pool.
	var res2 optimize.Result
	func() {
		b.g.RLock()
		defer b.g.RUnlock()
		res2 = optimize.Rewrite(outputs(t, b.g, "image"), outputs(t, b.g, fetches...), nil, optimize.Options{Devices: []string{"CPU", testDevice}, Passes: optimize.Remap})
	}()
	nodes = fusedOps(res2)
	for name, op := range map[string]string{"c1/bn": "_FusedConv2D", "c1/Relu": "Relu", "c1/pool": "MaxPool", "c2/BiasAdd": "_FusedConv2D", "c2/pool": "MaxPool"} {
		if n := nodes[name]; n == nil || n.Op != op {
			t.Errorf("without the fused op on a device, node %s: got %v, want op %s", name, n, op)
		}
	}
}
