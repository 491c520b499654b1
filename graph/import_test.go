package graph

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"mstream/proto/tfpb"
	"mstream/status"
	"mstream/tensor"
)

const (
	phF    = `op: "Placeholder" attr { key: "dtype" value { type: DT_FLOAT } } attr { key: "shape" value { shape { dim { size: -1 } dim { size: 3 } } } }`
	phI    = `op: "Placeholder" attr { key: "dtype" value { type: DT_INT32 } }`
	constW = `op: "Const" attr { key: "dtype" value { type: DT_FLOAT } } attr { key: "value" value { tensor { dtype: DT_FLOAT tensor_shape { dim { size: 3 } dim { size: 4 } } float_val: 0.5 } } }`
	tF     = `attr { key: "T" value { type: DT_FLOAT } }`
)

// mlpText is a small model with its nodes out of order.
const mlpText = `
node { name: "y" op: "Relu" input: "mm" ` + tF + ` }
node { name: "mm" op: "MatMul" input: "x" input: "w" ` + tF + ` }
node { name: "x" ` + phF + ` }
node { name: "w" ` + constW + ` }
node { name: "init" op: "NoOp" input: "^w" }
versions { producer: 1200 min_consumer: 12 }
`

func mustParse(t *testing.T, text string) *tfpb.GraphDef {
	t.Helper()
	gd, err := ParseTextGraphDef([]byte(text))
	if err != nil {
		t.Fatal(err)
	}
	return gd
}

func TestImport(t *testing.T) {
	tests := []struct {
		name  string
		pre   string // imported first, without options
		text  string
		opts  func(g *Graph) *ImportOptions
		code  status.Code
		want  string
		check func(t *testing.T, g *Graph, r *ImportResults)
	}{
		{name: "out of order", text: mlpText, check: func(t *testing.T, g *Graph, r *ImportResults) {
			// TF's order: the ready node earliest in the GraphDef first.
			y := g.Lookup("y")
			if y == nil || y.ID != 3 || g.Lookup("init").ID != 4 || g.Lookup("x").ID != 0 {
				t.Fatalf("order: %v", names(g))
			}
			if s := g.TensorShape(y.Output(0)); s.String() != "[?,4]" {
				t.Errorf("shape %v", s)
			}
			if gd := g.ToGraphDef(); gd.Versions.Producer != 1200 || gd.Versions.MinConsumer != 12 {
				t.Errorf("versions %v", gd.Versions)
			}
		}},
		{name: "prefix and return outputs", text: mlpText, opts: func(g *Graph) *ImportOptions {
			return &ImportOptions{Prefix: "net", ReturnOutputs: []TensorID{{"y", 0}}, ReturnOperations: []string{"init"}}
		}, check: func(t *testing.T, g *Graph, r *ImportResults) {
			if r.ReturnOutputs[0].Node.Name != "net/y" || r.ReturnOperations[0].Name != "net/init" {
				t.Errorf("returns %v %v", r.ReturnOutputs, r.ReturnOperations)
			}
			if g.Lookup("net/mm").Inputs[0].Node.Name != "net/x" || g.Lookup("net/init").Controls[0].Name != "net/w" {
				t.Error("inputs not prefixed")
			}
		}},
		{name: "input map", pre: `node { name: "feed" ` + phF + ` }`, text: mlpText, opts: func(g *Graph) *ImportOptions {
			return &ImportOptions{Prefix: "i", InputMap: map[TensorID]Output{
				{"x", 0}: g.Lookup("feed").Output(0), {"nothere", 1}: g.Lookup("feed").Output(0)}}
		}, check: func(t *testing.T, g *Graph, r *ImportResults) {
			if g.Lookup("i/mm").Inputs[0].Node.Name != "feed" {
				t.Error("input not remapped")
			}
			if len(r.MissingUnusedInputMappings) != 1 || r.MissingUnusedInputMappings[0] != (TensorID{"nothere", 1}) {
				t.Errorf("missing %v", r.MissingUnusedInputMappings)
			}
		}},
		{name: "control deps and device", pre: `node { name: "dep" op: "NoOp" }`, text: mlpText, opts: func(g *Graph) *ImportOptions {
			return &ImportOptions{Prefix: "c", DefaultDevice: "/device:CPU:0", ControlDependencies: []*Node{g.Lookup("dep")}}
		}, check: func(t *testing.T, g *Graph, r *ImportResults) {
			for _, name := range []string{"c/x", "c/w"} {
				if n := g.Lookup(name); len(n.Controls) != 1 || n.Controls[0].Name != "dep" {
					t.Errorf("%s controls %v", name, n.Controls)
				}
			}
			if n := g.Lookup("c/mm"); len(n.Controls) != 0 || n.Device != "/device:CPU:0" {
				t.Errorf("c/mm controls %v device %q", n.Controls, n.Device)
			}
		}},
		{name: "uniquify", pre: mlpText, text: mlpText, opts: func(g *Graph) *ImportOptions {
			return &ImportOptions{UniquifyNames: true}
		}, check: func(t *testing.T, g *Graph, r *ImportResults) {
			if n := g.Lookup("mm_1"); n == nil || n.Inputs[0].Node.Name != "x_1" {
				t.Errorf("not uniquified: %v", names(g))
			}
		}},
		{name: "defaults and underscore attrs", text: `node { name: "x" ` + phF + ` attr { key: "_output_shapes" value { list { shape { dim { size: 7 } dim { size: 3 } } } } } }`,
			check: func(t *testing.T, g *Graph, r *ImportResults) {
				x := g.Lookup("x")
				if x.Attrs["_output_shapes"] == nil || g.TensorShape(x.Output(0)).String() != "[7,3]" {
					t.Errorf("attrs %v shape %v", x.Attrs, x.OutShapes)
				}
			}},
		{name: "cycle", text: `node { name: "a" op: "Identity" input: "b" ` + tF + ` } node { name: "b" op: "Identity" input: "a" ` + tF + ` }`,
			code: status.InvalidArgument, want: "cycle"},
		{name: "loop back edge", text: `node { name: "x" ` + phF + ` } node { name: "m" op: "Merge" input: "x" input: "n" ` + tF + ` attr { key: "N" value { i: 2 } } } node { name: "b" op: "Identity" input: "m" ` + tF + ` } node { name: "n" op: "NextIteration" input: "b" ` + tF + ` }`,
			check: func(t *testing.T, g *Graph, r *ImportResults) {
				// TF's shape refiner sees the back edge as unknown: the
				// loop's Merge has an unknown shape.
				if m := g.Lookup("m"); m == nil || m.OutShapes[0].Known || len(g.Consumers(g.Lookup("n").Output(0))) != 1 {
					t.Errorf("merge %v", m)
				}
			}},
		{name: "cycle beside a back edge", text: `node { name: "x" ` + phF + ` } node { name: "m" op: "Merge" input: "x" input: "n" ` + tF + ` attr { key: "N" value { i: 2 } } } node { name: "b" op: "Identity" input: "m" input: "^c" ` + tF + ` } node { name: "c" op: "Identity" input: "b" ` + tF + ` } node { name: "n" op: "NextIteration" input: "b" ` + tF + ` }`,
			code: status.InvalidArgument, want: "cycle: nodes b, c"},
		{name: "unknown op", text: `node { name: "x" ` + phF + ` } node { name: "z" op: "Frobnicate" input: "x" }`,
			code: status.NotFound, want: "Frobnicate"},
		{name: "library function", text: `node { name: "f" op: "MyFn" } library { function { signature { name: "MyFn" } } }`,
			check: func(t *testing.T, g *Graph, r *ImportResults) {
				if f := g.Lookup("f"); f == nil || f.Def != g.Function("MyFn").Signature {
					t.Errorf("call node %v", f)
				}
			}},
		{name: "function unknown", text: `node { name: "f" op: "MyFn" } library { function { signature { name: "Other" } } }`,
			code: status.NotFound, want: "MyFn"},
		{name: "duplicate in graphdef", text: `node { name: "x" op: "NoOp" } node { name: "x" op: "NoOp" }`,
			code: status.InvalidArgument, want: "'x'"},
		{name: "clash with graph", pre: `node { name: "x" op: "NoOp" }`, text: `node { name: "x" op: "NoOp" }`,
			code: status.InvalidArgument, want: "'x'"},
		{name: "bad input index", text: `node { name: "x" ` + phF + ` } node { name: "y" op: "Identity" input: "x:3" ` + tF + ` }`,
			code: status.InvalidArgument, want: "y"},
		{name: "unknown input node", text: `node { name: "y" op: "Identity" input: "ghost" ` + tF + ` }`,
			code: status.InvalidArgument, want: "ghost"},
		{name: "dtype mismatch", text: `node { name: "x" ` + phI + ` } node { name: "y" op: "Identity" input: "x" ` + tF + ` }`,
			code: status.InvalidArgument, want: "y"},
		{name: "unknown attr kept, as TF 2.15 ignores it", text: `node { name: "x" op: "NoOp" attr { key: "zz" value { i: 1 } } }`,
			check: func(t *testing.T, g *Graph, r *ImportResults) {
				if n := g.Lookup("x"); n == nil || n.Attrs["zz"].GetI() != 1 {
					t.Fatalf("node x or its attr zz missing after import")
				}
			}},
		{name: "missing attr", text: `node { name: "x" op: "Placeholder" }`,
			code: status.InvalidArgument, want: "dtype"},
		{name: "min consumer", text: `node { name: "x" op: "NoOp" } versions { producer: 1 min_consumer: 99999 }`,
			code: status.InvalidArgument, want: "consumer"},
		{name: "missing return output", text: mlpText, opts: func(g *Graph) *ImportOptions {
			return &ImportOptions{ReturnOutputs: []TensorID{{"nope", 0}}}
		}, code: status.InvalidArgument, want: "nope"},
		{name: "deprecated op", text: `node { name: "d" op: "BatchNormWithGlobalNormalization" } versions { producer: 100 }`,
			code: status.Unimplemented, want: "BatchNormWithGlobalNormalization"},
		{name: "control remap", pre: `node { name: "dep" op: "NoOp" }`, text: mlpText, opts: func(g *Graph) *ImportOptions {
			return &ImportOptions{Prefix: "r", ControlRemap: map[string]*Node{"w": g.Lookup("dep")}}
		}, check: func(t *testing.T, g *Graph, r *ImportResults) {
			if c := g.Lookup("r/init").Controls; len(c) != 1 || c[0].Name != "dep" {
				t.Errorf("controls %v", c)
			}
		}},
		{name: "shape error", text: `node { name: "w" ` + constW + ` } node { name: "mm" op: "MatMul" input: "w" input: "w" ` + tF + ` }`,
			code: status.InvalidArgument, want: "mm"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := New()
			if tc.pre != "" {
				if _, err := g.Import(mustParse(t, tc.pre), nil); err != nil {
					t.Fatal(err)
				}
			}
			before, version := g.NumNodes(), g.Version()
			var opts *ImportOptions
			if tc.opts != nil {
				opts = tc.opts(g)
			}
			r, err := g.Import(mustParse(t, tc.text), opts)
			if tc.code == status.OK {
				if err != nil {
					t.Fatal(err)
				}
				if tc.check != nil {
					tc.check(t, g, r)
				}
				return
			}
			if err == nil || status.CodeOf(err) != tc.code || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v (%v), want %v naming %q", status.CodeOf(err), err, tc.code, tc.want)
			}
			if g.NumNodes() != before || g.Version() != version {
				t.Fatal("graph changed on error")
			}
		})
	}
}

func names(g *Graph) []string {
	var s []string
	for _, n := range g.Nodes() {
		s = append(s, n.Name)
	}
	return s
}

func TestRoundTrip(t *testing.T) {
	g := New()
	if _, err := g.Import(mustParse(t, mlpText), nil); err != nil {
		t.Fatal(err)
	}
	x := g.Lookup("x")
	b := g.NewBuilder("IdentityN", "idn")
	b.AddInputList([]Output{x.Output(0), g.Lookup("y").Output(0)})
	b.AddControlInput(g.Lookup("init"))
	b.ColocateWith(x)
	b.SetDevice("/device:CPU:0")
	if _, err := b.Finish(); err != nil {
		t.Fatal(err)
	}
	gd := g.ToGraphDef()
	bin, err := proto.Marshal(gd)
	if err != nil {
		t.Fatal(err)
	}
	gd2, err := ParseGraphDef(bin)
	if err != nil {
		t.Fatal(err)
	}
	g2 := New()
	if _, err := g2.Import(gd2, nil); err != nil {
		t.Fatal(err)
	}
	if !proto.Equal(gd, g2.ToGraphDef()) {
		t.Fatalf("round trip differs:\n%v\n%v", gd, g2.ToGraphDef())
	}
	for _, n := range g.Nodes() {
		n2 := g2.Lookup(n.Name)
		if n2 == nil || n2.ID != n.ID || !proto.Equal(n.NodeDef(), n2.NodeDef()) {
			t.Fatalf("node %s differs", n.Name)
		}
		for i := range n.OutShapes {
			if n.OutShapes[i].String() != n2.OutShapes[i].String() {
				t.Fatalf("node %s shape %d: %v vs %v", n.Name, i, n.OutShapes[i], n2.OutShapes[i])
			}
		}
	}
	if in := g.Lookup("idn").NodeDef().Input; strings.Join(in, ",") != "x,y,^init" {
		t.Fatalf("inputs %v", in)
	}
}

func TestParseErrors(t *testing.T) {
	if _, err := ParseGraphDef([]byte{0x0a, 0xff, 0x01}); status.CodeOf(err) != status.InvalidArgument || !strings.Contains(err.Error(), "Invalid GraphDef") {
		t.Fatalf("truncated bytes: %v", err)
	}
	_, err := ParseTextGraphDef([]byte("node { name: \"x\"\n op: }"))
	if status.CodeOf(err) != status.InvalidArgument || !strings.Contains(err.Error(), "line 2, column 6") {
		t.Fatalf("bad text: %v", err)
	}
	// Unknown fields are rejected in text, as TF's parser does (proto/pbparse
	// checks the cases against it), and kept in binary.
	_, err = ParseTextGraphDef([]byte(`node { name: "x" op: "NoOp" future_field: 3 }`))
	if status.CodeOf(err) != status.InvalidArgument || !strings.Contains(err.Error(), "line 1, column 29: unknown field: future_field") {
		t.Fatalf("unknown text field: %v", err)
	}
	if _, err := ParseGraphDef(append([]byte{0xf8, 0x3f, 0x01}, mustBin(t)...)); err != nil {
		t.Fatal(err)
	}
}

func mustBin(t *testing.T) []byte {
	b, err := proto.Marshal(mustParse(t, mlpText))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

var _ = tensor.Float

// TestImportTextFile: a text GraphDef file imports into a new graph; a
// missing file, or text that does not parse, is an error naming the file.
func TestImportTextFile(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.pbtxt")
	os.WriteFile(good, []byte(`node { name: "c" op: "Const" attr { key: "dtype" value { type: DT_FLOAT } } attr { key: "value" value { tensor { dtype: DT_FLOAT tensor_shape {} float_val: 1 } } } }`), 0o644)
	g, err := ImportTextFile(good, nil)
	if err != nil || g.Lookup("c") == nil {
		t.Fatalf("good file: graph %v, err %v", g, err)
	}
	bad := filepath.Join(dir, "bad.pbtxt")
	os.WriteFile(bad, []byte("node { nme: \"x\" }"), 0o644)
	for _, path := range []string{bad, filepath.Join(dir, "missing.pbtxt")} {
		if _, err := ImportTextFile(path, nil); err == nil || !strings.Contains(err.Error(), path) {
			t.Errorf("%s: err %v, want one naming the file", path, err)
		}
	}
	if _, err := ImportTextFile(bad, nil); status.CodeOf(err) != status.InvalidArgument {
		t.Errorf("unparsable text: %v, want INVALID_ARGUMENT", err)
	}
}
