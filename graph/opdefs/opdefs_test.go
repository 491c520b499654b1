package opdefs

import (
	"os"
	"path/filepath"
	"testing"

	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"

	"mstream/proto/tfpb"
)

// TestCurrent checks that ops.binpb holds every op of TF 2.15's ops.pbtxt
// with the same signature, when the TF module is in the module cache.
func TestCurrent(t *testing.T) {
	gopath := os.Getenv("GOPATH")
	if gopath == "" {
		home, _ := os.UserHomeDir()
		gopath = filepath.Join(home, "go")
	}
	text, err := os.ReadFile(filepath.Join(gopath, "pkg/mod/github.com/tensorflow/tensorflow@v2.15.0+incompatible/tensorflow/core/ops/ops.pbtxt"))
	if err != nil {
		t.Skip("TF 2.15 module not in the module cache; run go run ./graph/opdefs/gen")
	}
	var want tfpb.OpList
	if err := (prototext.UnmarshalOptions{DiscardUnknown: true}).Unmarshal(text, &want); err != nil {
		t.Fatal(err)
	}
	if len(want.Op) != len(All().Op) {
		t.Fatalf("%d ops embedded, ops.pbtxt has %d: regenerate", len(All().Op), len(want.Op))
	}
	for _, w := range want.Op {
		got := Lookup(w.Name)
		if got == nil {
			t.Fatalf("op %s missing: regenerate", w.Name)
		}
		if len(got.InputArg) != len(w.InputArg) || len(got.OutputArg) != len(w.OutputArg) || len(got.Attr) != len(w.Attr) {
			t.Fatalf("op %s differs: regenerate", w.Name)
		}
		for i, a := range w.Attr {
			if !proto.Equal(a.DefaultValue, got.Attr[i].DefaultValue) {
				t.Fatalf("op %s attr %s default differs", w.Name, a.Name)
			}
		}
	}
}

// TestInternal checks the internal ops parse, are found by Lookup, stay out
// of All, and carry the attrs fusion and TF's grappler set.
func TestInternal(t *testing.T) {
	for op, attrs := range map[string][]string{
		"_FusedMatMul":          {"transpose_a", "transpose_b", "T", "num_args", "fused_ops", "epsilon", "leakyrelu_alpha"},
		"_FusedConv2D":          {"T", "TArgs", "num_args", "num_host_args", "strides", "padding", "explicit_paddings", "data_format", "filter_format", "dilations", "fused_ops", "epsilon"},
		"_MstreamUnaryChain":    {"T", "ops"},
		"_MstreamConv2DMaxPool": {"T", "TArgs", "num_args", "strides", "padding", "dilations", "fused_ops", "pool_ksize", "pool_strides", "pool_padding"},
	} {
		d := Lookup(op)
		if d == nil {
			t.Fatalf("%s not found", op)
		}
		have := map[string]bool{}
		for _, a := range d.Attr {
			have[a.Name] = true
		}
		for _, a := range attrs {
			if !have[a] {
				t.Errorf("%s lacks attr %s", op, a)
			}
		}
		for _, o := range All().Op {
			if o.Name == op {
				t.Errorf("%s is listed by All, which must stay ops.pbtxt", op)
			}
		}
	}
}
