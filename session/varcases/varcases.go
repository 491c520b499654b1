// Package varcases reads test/variables/cases.json, the variable cases
// that test/variables/gen.py records with TF 2.15 (TF1 graphs with ref and
// resource variables, lookup tables, a Saver and an MLP; a sequence of
// runs on one session and TF's result or error for each), for the session
// tests that replay them: session's against TF, and session/pooltest's on
// a fake GPU against a CPU session. Only tests import it.
package varcases

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"mstream/graph"
	"mstream/tensor"
)

// Case is one graph and the runs made on one session of it.
type Case struct {
	Name  string `json:"name"`
	Graph string `json:"graph"` // a text GraphDef beside cases.json
	Runs  []Run  `json:"runs"`
}

// Run is one Session.Run: feeds by placeholder name, fetches ("node:i")
// and targets, and TF's outputs or its error.
type Run struct {
	Feeds   map[string]Value `json:"feeds"`
	Fetches []string         `json:"fetches"`
	Targets []string         `json:"targets"`
	Want    []Value          `json:"want"`
	Error   *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// Value is a tensor as gen.py writes it: numbers as float64 values,
// strings (checkpoint paths) with __TMP__ for the run's temporary folder
// and __DIR__ for test/variables.
type Value struct {
	DType   string    `json:"dtype"`
	Shape   []int64   `json:"shape"`
	Values  []float64 `json:"values"`
	Strings []string  `json:"strings"`
}

// Read reads the cases of dir/cases.json (dir is test/variables); a
// missing, malformed or empty file fails t.
func Read(t testing.TB, dir string) []Case {
	t.Helper()
	path := filepath.Join(dir, "cases.json")
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Cases []Case `json:"cases"`
	}
	if err := json.Unmarshal(raw, &f); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if len(f.Cases) == 0 {
		t.Fatalf("%s: no cases", path)
	}
	return f.Cases
}

// Tensor is v as a tensor; dir replaces __DIR__ and tmp __TMP__ in
// strings. A dtype it does not know fails t.
func (v Value) Tensor(t testing.TB, dir, tmp string) *tensor.Tensor {
	t.Helper()
	x, err := v.tensor(dir, tmp)
	if err != nil {
		t.Fatal(err)
	}
	return x
}

func (v Value) tensor(dir, tmp string) (*tensor.Tensor, error) {
	s := tensor.Shape(v.Shape)
	switch v.DType {
	case "string":
		out := make([]string, len(v.Strings))
		for i, x := range v.Strings {
			out[i] = strings.ReplaceAll(strings.ReplaceAll(x, "__TMP__", tmp), "__DIR__", dir)
		}
		return tensor.FromStrings(s, out), nil
	case "float32":
		return tensor.FromF32(s, convert[float32](v.Values)), nil
	case "int32":
		return tensor.FromI32(s, convert[int32](v.Values)), nil
	case "int64":
		return tensor.FromI64(s, convert[int64](v.Values)), nil
	case "bool":
		b := make([]bool, len(v.Values))
		for i, x := range v.Values {
			b[i] = x != 0
		}
		return tensor.FromBool(s, b), nil
	}
	return nil, fmt.Errorf("dtype %s not handled", v.DType)
}

func convert[T float32 | int32 | int64](v []float64) []T {
	out := make([]T, len(v))
	for i, x := range v {
		out[i] = T(x)
	}
	return out
}

// Graph imports the text GraphDef at path into a new graph; an error
// fails t.
func Graph(t testing.TB, path string) *graph.Graph {
	t.Helper()
	text, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	gd, err := graph.ParseTextGraphDef(text)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	g := graph.New()
	if _, err := g.Import(gd, &graph.ImportOptions{}); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return g
}

// Output is g's output "node:i" (":0" when the index is left out); an
// unknown node or a malformed index fails t.
func Output(t testing.TB, g *graph.Graph, name string) graph.Output {
	t.Helper()
	n, idx, _ := strings.Cut(name, ":")
	i := 0
	if idx != "" {
		var err error
		if i, err = strconv.Atoi(idx); err != nil {
			t.Fatalf("output %q: %v", name, err)
		}
	}
	node := g.Lookup(n)
	if node == nil {
		t.Fatalf("no node %q", n)
	}
	return graph.Output{Node: node, Index: i}
}
