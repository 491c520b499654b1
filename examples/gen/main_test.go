package main

import (
	"os"
	"path/filepath"
	"testing"

	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"

	"mstream/graph/opdefs"
	"mstream/proto/tfpb"
)

// TestModelMatchesOpDefs checks every node against TF's OpDef: the op exists,
// every attr without a default is set, and the number of inputs fits.
func TestModelMatchesOpDefs(t *testing.T) {
	if opdefs.Lookup("MatMul") == nil {
		t.Skip("op registry not generated yet")
	}
	g := newModel().graphDef()
	for _, n := range g.Node {
		def := opdefs.Lookup(n.Op)
		if def == nil {
			t.Errorf("%s: op %s unknown to TF", n.Name, n.Op)
			continue
		}
		for _, a := range def.Attr {
			if _, ok := n.Attr[a.Name]; !ok && a.DefaultValue == nil {
				t.Errorf("%s (%s): required attr %q missing", n.Name, n.Op, a.Name)
			}
		}
		want := 0
		for _, arg := range def.InputArg {
			switch {
			case arg.NumberAttr != "":
				want += int(n.Attr[arg.NumberAttr].GetI())
			default:
				want++
			}
		}
		if len(n.Input) != want {
			t.Errorf("%s (%s): %d inputs, OpDef wants %d", n.Name, n.Op, len(n.Input), want)
		}
	}
}

// TestCommittedFilesAreCurrent regenerates the data and compares it with the
// committed files (the model by content, since prototext varies whitespace).
func TestCommittedFilesAreCurrent(t *testing.T) {
	m := newModel()
	data := filepath.Join("..", "data")
	text, err := os.ReadFile(filepath.Join(data, "model_test.pbtxt"))
	if err != nil {
		t.Fatal(err)
	}
	var committed tfpb.GraphDef
	if err := prototext.Unmarshal(text, &committed); err != nil {
		t.Fatal(err)
	}
	if !proto.Equal(&committed, m.graphDef()) {
		t.Error("examples/data/model_test.pbtxt is stale: run go run ./examples/gen")
	}
	in := m.inputs()
	exp, err := os.ReadFile(filepath.Join(data, "model_test.expected.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if string(exp) != m.expectedText(in, m.forward(in)) {
		t.Error("examples/data/model_test.expected.txt is stale: run go run ./examples/gen")
	}
	cfg, err := os.ReadFile(filepath.Join(data, "config_proto"))
	if err != nil {
		t.Fatal(err)
	}
	if string(cfg) != configText {
		t.Error("examples/data/config_proto is stale: run go run ./examples/gen")
	}
}
