package graph

import (
	"strings"
	"testing"

	"mstream/proto/tfpb"
	"mstream/status"
	"mstream/tensor"
)

func mustPlaceholder(t *testing.T, g *Graph, name string, dt tensor.DType, s tensor.PartialShape) *Node {
	t.Helper()
	b := g.NewBuilder("Placeholder", name)
	b.SetAttr("dtype", AttrType(dt))
	b.SetAttr("shape", AttrShape(s))
	n, err := b.Finish()
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func mustConst(t *testing.T, g *Graph, name string, v *tensor.Tensor) *Node {
	t.Helper()
	b := g.NewBuilder("Const", name)
	b.SetAttr("dtype", AttrType(v.DType))
	b.SetAttr("value", AttrTensor(v))
	n, err := b.Finish()
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestOpRegistry(t *testing.T) {
	all := AllOpDefs().Op
	if len(all) < 1400 {
		t.Fatalf("only %d ops", len(all))
	}
	for i := 1; i < len(all); i++ {
		if all[i-1].Name >= all[i].Name {
			t.Fatalf("ops not sorted: %s, %s", all[i-1].Name, all[i].Name)
		}
	}
	for _, op := range all {
		if op.Summary != "" || op.Description != "" {
			t.Fatalf("op %s keeps TF prose", op.Name)
		}
	}
	if d := LookupOpDef("MatMul"); d == nil || AttrValueType(d, "transpose_a") != "bool" {
		t.Fatal("MatMul OpDef missing or wrong")
	}
	if LookupOpDef("NoSuchOp") != nil {
		t.Fatal("unknown op found")
	}
}

func TestBuilder(t *testing.T) {
	g := New()
	x := mustPlaceholder(t, g, "x", tensor.Float, known(-1, 3))
	w := mustConst(t, g, "w", tensor.FromF32(tensor.Shape{3, 4}, make([]float32, 12)))
	i := mustPlaceholder(t, g, "i", tensor.Int32, known(2))
	tests := []struct {
		name  string
		op    string
		node  string
		build func(b *Builder)
		code  status.Code // OK for success
		want  string      // substring of the error
		check func(t *testing.T, n *Node)
	}{
		{name: "matmul", op: "MatMul", node: "mm", build: func(b *Builder) {
			b.AddInput(x.Output(0))
			b.AddInput(w.Output(0))
		}, check: func(t *testing.T, n *Node) {
			if n.Attrs["T"].GetType() != tfpb.DataType_DT_FLOAT || n.Attrs["transpose_a"] == nil {
				t.Errorf("attrs not inferred/defaulted: %v", n.Attrs)
			}
			if n.OutShapes[0].String() != "[?,4]" {
				t.Errorf("shape %v", n.OutShapes[0])
			}
		}},
		{name: "unknown op", op: "NoSuchOp", node: "u", build: func(b *Builder) {}, code: status.InvalidArgument, want: "NoSuchOp"},
		{name: "duplicate name", op: "NoOp", node: "x", build: func(b *Builder) {}, code: status.InvalidArgument, want: "'x'"},
		// TF's C API takes any name when building (test/capidiff's node_names
		// compares the rule with TF's); an import checks TF's node-name rule.
		{name: "any name when building", op: "NoOp", node: "const/0/[1 2 3 4]", build: func(b *Builder) {}},
		{name: "too few inputs", op: "MatMul", node: "mm2", build: func(b *Builder) { b.AddInput(x.Output(0)) },
			code: status.InvalidArgument, want: "mm2"},
		{name: "dtype mismatch", op: "MatMul", node: "mm3", build: func(b *Builder) {
			b.AddInput(x.Output(0))
			b.AddInput(i.Output(0))
		}, code: status.InvalidArgument, want: "mm3"},
		{name: "type not allowed", op: "MatMul", node: "mm4", build: func(b *Builder) {
			b.AddInput(x.Output(0))
			b.AddInput(w.Output(0))
			b.SetAttr("T", AttrType(tensor.String))
		}, code: status.InvalidArgument, want: "mm4"},
		{name: "attr wrong kind", op: "MatMul", node: "mm5", build: func(b *Builder) {
			b.AddInput(x.Output(0))
			b.AddInput(w.Output(0))
			b.SetAttr("transpose_a", AttrInt(1))
		}, code: status.InvalidArgument, want: "transpose_a"},
		{name: "unknown attr kept, as TF 2.15 ignores it", op: "MatMul", node: "mm6", build: func(b *Builder) {
			b.AddInput(x.Output(0))
			b.AddInput(w.Output(0))
			b.SetAttr("bogus", AttrInt(7))
		}, check: func(t *testing.T, n *Node) {
			if v := n.Attrs["bogus"]; v == nil || v.GetI() != 7 {
				t.Fatalf("attr bogus = %v, want 7 kept", v)
			}
		}},
		{name: "missing required attr", op: "Placeholder", node: "p2", build: func(b *Builder) {},
			code: status.InvalidArgument, want: "dtype"},
		{name: "shape mismatch", op: "MatMul", node: "mm7", build: func(b *Builder) {
			b.AddInput(w.Output(0))
			b.AddInput(w.Output(0))
		}, code: status.InvalidArgument, want: "mm7"},
		{name: "list input", op: "ConcatV2", node: "cat", build: func(b *Builder) {
			b.AddInputList([]Output{x.Output(0), x.Output(0)})
			b.AddInput(mustConst(t, g, "axis", tensor.ScalarI32(1)).Output(0))
		}, check: func(t *testing.T, n *Node) {
			if n.Attrs["N"].GetI() != 2 || len(n.InTypes) != 3 || n.InArgs["values"] != [2]int{0, 2} {
				t.Errorf("N=%v InTypes=%v InArgs=%v", n.Attrs["N"], n.InTypes, n.InArgs)
			}
			if n.OutShapes[0].String() != "[?,6]" {
				t.Errorf("shape %v", n.OutShapes[0])
			}
		}},
		{name: "single for list", op: "ConcatV2", node: "cat2", build: func(b *Builder) {
			b.AddInput(x.Output(0))
			b.AddInput(x.Output(0))
		}, code: status.InvalidArgument, want: "cat2"},
		{name: "list minimum", op: "ConcatV2", node: "cat3", build: func(b *Builder) {
			b.AddInputList([]Output{x.Output(0)})
			b.AddInput(g.Lookup("axis").Output(0))
		}, code: status.InvalidArgument, want: "cat3"},
		{name: "type list", op: "IdentityN", node: "idn", build: func(b *Builder) {
			b.AddInputList([]Output{x.Output(0), i.Output(0)})
		}, check: func(t *testing.T, n *Node) {
			if len(n.OutTypes) != 2 || n.OutTypes[1] != tensor.Int32 || n.OutShapes[1].String() != "[2]" {
				t.Errorf("OutTypes %v shapes %v", n.OutTypes, n.OutShapes)
			}
		}},
		{name: "colocate and control", op: "Identity", node: "id", build: func(b *Builder) {
			b.AddInput(x.Output(0))
			b.ColocateWith(x)
			b.AddControlInput(w)
			b.SetDevice("/device:CPU:0")
		}, check: func(t *testing.T, n *Node) {
			cls := n.Attrs["_class"].GetList().GetS()
			if len(cls) != 1 || string(cls[0]) != "loc:@x" || n.Device != "/device:CPU:0" || len(n.Controls) != 1 {
				t.Errorf("_class %q device %q controls %v", cls, n.Device, n.Controls)
			}
			if len(g.ControlOutputs(w)) == 0 || len(g.Consumers(x.Output(0))) == 0 {
				t.Error("edges not recorded")
			}
		}},
		{name: "string allowed values", op: "BiasAdd", node: "ba", build: func(b *Builder) {
			b.AddInput(x.Output(0))
			b.AddInput(x.Output(0))
			b.SetAttr("data_format", AttrString("NXYZ"))
		}, code: status.InvalidArgument, want: "data_format"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := g.NumNodes()
			b := g.NewBuilder(tc.op, tc.node)
			tc.build(b)
			before = g.NumNodes() // build may add helper nodes
			n, err := b.Finish()
			if tc.code == status.OK {
				if err != nil {
					t.Fatal(err)
				}
				if tc.check != nil {
					tc.check(t, n)
				}
				return
			}
			if err == nil {
				t.Fatalf("no error, want %v", tc.code)
			}
			if status.CodeOf(err) != tc.code || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v (%v), want %v naming %q", status.CodeOf(err), err, tc.code, tc.want)
			}
			if g.NumNodes() != before {
				t.Fatal("graph changed on error")
			}
		})
	}
}
