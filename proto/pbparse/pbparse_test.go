package pbparse

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"mstream/proto/tfpb"
	"mstream/status"
)

// textCase is a text proto and what TF's parser says of it: accepted, or
// rejected at line:col. TestTextMatchesTF checks these records against TF's
// own parser when build/venv has TensorFlow.
type textCase struct {
	Kind      string `json:"kind"`
	Text      string `json:"text"`
	OK        bool   `json:"ok"`
	Line, Col int
}

var textCases = []textCase{
	{Kind: "GraphDef", Text: "", OK: true},
	{Kind: "GraphDef", Text: "garbage text", Line: 1, Col: 1},
	{Kind: "GraphDef", Text: "nodes {", Line: 1, Col: 1},
	{Kind: "GraphDef", Text: "node { name: \"a\" op: \"NoOp\" }\n  nodes { }", Line: 2, Col: 3},
	{Kind: "GraphDef", Text: `node { name: "a" op: 3 }`, Line: 1, Col: 22},
	{Kind: "GraphDef", Text: `node { name: "a" }}`, Line: 1, Col: 19},
	{Kind: "GraphDef", Text: "node { name: \"a\" op: \"NoOp\"\n  future_field: 3 }", Line: 2, Col: 3},
	{Kind: "GraphDef", Text: "# RUN: tf-mlir-translate %s\n# CHECK: x\nnode { name: 'a' op: 'NoOp' } # trailing\n", OK: true},
	{Kind: "GraphDef", Text: `node < name: "a" attr { key: "T" value { type: DT_FLOAT } } > versions { producer: 1 }`, OK: true},
	{Kind: "GraphDef", Text: `node { name: "a" attr { key: "T" value { type: DT_FLOT } } }`, Line: 1, Col: 48},
	{Kind: "GraphDef", Text: `node { name: "a" attr { key: "s" value { list { i: [1, 2, 3] } } } }`, OK: true},
	{Kind: "ConfigProto", Text: "intra_op_paralelism_threads: 2", Line: 1, Col: 1},
	{Kind: "ConfigProto", Text: "intra_op_parallelism_threads: 2\ngpu_options { allow_growth: true per_process_gpu_memory_fraction: 0.5 }", OK: true},
	{Kind: "ConfigProto", Text: "gpu_options {\n  allow_grwth: true\n}", Line: 2, Col: 3},
	{Kind: "ConfigProto", Text: "intra_op_parallelism_threads: two", Line: 1, Col: 31},
	{Kind: "RunOptions", Text: "trace_level: FULL_TRACE timeout_in_ms: 100", OK: true},
	{Kind: "RunOptions", Text: "trace_level: FULL", Line: 1, Col: 14},
	{Kind: "RunOptions", Text: "timeout_ms: 100", Line: 1, Col: 1},
}

func newMessage(t *testing.T, kind string) proto.Message {
	switch kind {
	case "GraphDef":
		return &tfpb.GraphDef{}
	case "ConfigProto":
		return &tfpb.ConfigProto{}
	case "RunOptions":
		return &tfpb.RunOptions{}
	}
	t.Fatalf("no message %q", kind)
	return nil
}

// TestText checks each case: accepted, or INVALID_ARGUMENT naming the message
// and TF's line and column.
func TestText(t *testing.T) {
	for _, c := range textCases {
		err := Text(c.Kind, "", []byte(c.Text), newMessage(t, c.Kind))
		if c.OK {
			if err != nil {
				t.Errorf("%s %q: %v", c.Kind, c.Text, err)
			}
			continue
		}
		want := "Invalid text " + c.Kind + ": line " + itoa(c.Line) + ", column " + itoa(c.Col) + ": "
		if status.CodeOf(err) != status.InvalidArgument || !strings.HasPrefix(errString(err), want) {
			t.Errorf("%s %q: got %v (%v), want INVALID_ARGUMENT %q...", c.Kind, c.Text, status.CodeOf(err), err, want)
		}
	}
	err := Text("GraphDef", "model.pbtxt", []byte("x: 1"), &tfpb.GraphDef{})
	if !strings.Contains(errString(err), "Invalid text GraphDef in model.pbtxt: line 1, column 1") {
		t.Errorf("source not named: %v", err)
	}
}

// TestTextMatchesTF runs every case through TF's own text parser (the
// protobuf runtime TF 2.15 ships, with TF's generated messages) and checks
// that the records above are what it says.
func TestTextMatchesTF(t *testing.T) {
	py, err := filepath.Abs("../../build/venv/bin/python")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(filepath.Dir(py)), ".tf-ok")); err != nil {
		t.Skip("skipped: no TensorFlow in build/venv (scripts/setup.sh installs it)")
	}
	in, _ := json.Marshal(textCases)
	cmd := exec.Command(py, "-c", tfParse)
	cmd.Stdin = strings.NewReader(string(in))
	cmd.Env = append(os.Environ(), "TF_CPP_MIN_LOG_LEVEL=3")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("TF's parser: %v\n%s", err, out)
	}
	var got []textCase
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	for i, c := range textCases {
		g := got[i]
		if g.OK != c.OK || (!c.OK && (g.Line != c.Line || g.Col != c.Col)) {
			t.Errorf("%s %q: TF says ok=%v at %d:%d, the table ok=%v at %d:%d", c.Kind, c.Text, g.OK, g.Line, g.Col, c.OK, c.Line, c.Col)
		}
	}
}

const tfParse = `
import json, sys
from google.protobuf import text_format
from tensorflow.core.framework import graph_pb2
from tensorflow.core.protobuf import config_pb2
kinds = {"GraphDef": graph_pb2.GraphDef, "ConfigProto": config_pb2.ConfigProto, "RunOptions": config_pb2.RunOptions}
out = []
for c in json.load(sys.stdin):
    r = {"kind": c["kind"], "text": c["text"], "ok": True, "Line": 0, "Col": 0}
    try:
        text_format.Parse(c["text"], kinds[c["kind"]]())
    except text_format.ParseError as e:
        r.update(ok=False, Line=e.GetLine(), Col=e.GetColumn())
    out.append(r)
json.dump(out, sys.stdout)
`

// TestBinary: unknown fields survive, and a failure names the source, the
// size and the offset of the bad field.
func TestBinary(t *testing.T) {
	gd := &tfpb.GraphDef{Node: []*tfpb.NodeDef{{Name: "a", Op: "NoOp"}}}
	b, _ := proto.Marshal(gd)
	b = append(b, 0xa0, 0x06, 0x07) // field 100, varint 7: unknown to GraphDef
	var back tfpb.GraphDef
	if err := Binary("Invalid GraphDef", "x", b, &back); err != nil {
		t.Fatal(err)
	}
	if again, _ := proto.Marshal(&back); string(again) != string(b) {
		t.Errorf("unknown field lost: % x != % x", again, b)
	}
	bad := append(append([]byte{}, b...), 0x0a, 0x09, 0x01) // field 1, length 9, 1 byte
	err := Binary("Invalid GraphDef", "TF_GraphImportGraphDef's graph_def buffer", bad, &tfpb.GraphDef{})
	want := "Invalid GraphDef in TF_GraphImportGraphDef's graph_def buffer (" + itoa(len(bad)) + " bytes, the field at byte " + itoa(len(b)) + "): "
	if status.CodeOf(err) != status.InvalidArgument || !strings.HasPrefix(errString(err), want) {
		t.Errorf("got %v, want %q...", err, want)
	}
}

// FuzzText: any text parses or fails with INVALID_ARGUMENT, never a panic,
// and what parses marshals to binary that parses again.
func FuzzText(f *testing.F) {
	for _, c := range textCases {
		f.Add(c.Text)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, kind := range []string{"GraphDef", "ConfigProto", "RunOptions"} {
			m := newMessage(t, kind)
			err := Text(kind, "", []byte(s), m)
			if err != nil {
				if status.CodeOf(err) != status.InvalidArgument {
					t.Fatalf("%s: code %v: %v", kind, status.CodeOf(err), err)
				}
				continue
			}
			b, _ := proto.MarshalOptions{Deterministic: true}.Marshal(m)
			m2 := newMessage(t, kind)
			if err := Binary("x", "", b, m2); err != nil {
				t.Fatalf("%s: a parsed message does not round-trip: %v", kind, err)
			}
		}
	})
}

func errString(err error) string {
	if err == nil {
		return "<nil>"
	}
	return err.Error()
}

func itoa(i int) string { return strconv.Itoa(i) }

// TestTextReasonSpaces: the runtime's message is spaced with a plain or a
// no-break space depending on the build; both are rewritten.
func TestTextReasonSpaces(t *testing.T) {
	for _, sp := range []string{" ", "\u00a0"} {
		for _, in := range []string{"proto:" + sp + "(line 2:3): unknown field: x", "proto:" + sp + "syntax error (line 2:3): unknown field: x"} {
			got := textReason(errors.New(in))
			if !strings.HasPrefix(got, "line 2, column 3: ") || !strings.HasSuffix(got, "unknown field: x") {
				t.Errorf("%q -> %q", in, got)
			}
		}
	}
}
