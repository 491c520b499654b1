// Package fusiontest runs a GraphDef through two sessions, one with every
// plan-time rewrite of package optimize (the default ConfigProto) and one
// with none (TF's optimizers off in the ConfigProto, MSTREAM_FUSION=0), and
// compares their outputs. Tests of optimize and of the benchmark models use
// it; it is not part of the library.
package fusiontest

import (
	"fmt"
	"math"
	"math/rand"
	"strconv"
	"strings"
	"testing"

	"mstream/graph"
	_ "mstream/kernels/cpu" // the kernels the sessions run
	"mstream/optimize"
	"mstream/proto/tfpb"
	"mstream/session"
	"mstream/tensor"

	// GPUs and GPU kernels, as the library links them.
	_ "mstream/kernels/cuda"
)

// Output parses "name" or "name:i" into an output of g.
func Output(g *graph.Graph, name string) (graph.Output, error) {
	idx := 0
	if i := strings.LastIndexByte(name, ':'); i > 0 {
		if n, err := strconv.Atoi(name[i+1:]); err == nil {
			name, idx = name[:i], n
		}
	}
	n := g.Lookup(name)
	if n == nil {
		return graph.Output{}, fmt.Errorf("no node %q", name)
	}
	return n.Output(idx), nil
}

// Random returns a tensor of dt and shape with values a model accepts:
// floats in [-1, 1), integers in [0, 3), random bools.
func Random(r *rand.Rand, dt tensor.DType, shape tensor.Shape) *tensor.Tensor {
	t := tensor.New(dt, shape)
	switch dt {
	case tensor.Float:
		for i := range t.F32() {
			t.F32()[i] = float32(2*r.Float64() - 1)
		}
	case tensor.Double:
		for i := range t.F64() {
			t.F64()[i] = 2*r.Float64() - 1
		}
	case tensor.Int32:
		for i := range t.I32() {
			t.I32()[i] = int32(r.Intn(3))
		}
	case tensor.Int64:
		for i := range t.I64() {
			t.I64()[i] = int64(r.Intn(3))
		}
	case tensor.Bool:
		for i := range t.Buf {
			t.Buf[i] = byte(r.Intn(2))
		}
	default:
		return nil
	}
	return t
}

// Fusions is the number of patterns optimize fuses in the part of gd that
// the fetches need, with the given outputs fed.
func Fusions(g *graph.Graph, feeds, fetches []graph.Output) int {
	g.RLock()
	defer g.RUnlock()
	return optimize.Rewrite(feeds, fetches, nil, optimize.Options{Devices: []string{"CPU"}, Passes: optimize.Remap}).Fused
}

// NoRewrites is a ConfigProto that turns off every rewrite TF would make
// (opt_level L0, no constant folding, no meta-optimizer), and so every
// pass of package optimize.
func NoRewrites() *tfpb.ConfigProto {
	return &tfpb.ConfigProto{GraphOptions: &tfpb.GraphOptions{
		OptimizerOptions: &tfpb.OptimizerOptions{OptLevel: tfpb.OptimizerOptions_L0},
		RewriteOptions:   &tfpb.RewriterConfig{DisableMetaOptimizer: true}}}
}

// Compare runs g with the feeds (output names to values) and fetches in
// a session with every rewrite and one with none, and fails t when an output
// differs by more than tol (relative to max(1, |value|)) or when only one
// of the runs fails. It returns the number of fusions in the plan.
func Compare(t testing.TB, g *graph.Graph, feeds map[string]*tensor.Tensor, fetches []string, tol float64) int {
	t.Helper()
	var fs []session.Feed
	var fo []graph.Output
	for name, v := range feeds {
		o, err := Output(g, name)
		if err != nil {
			t.Fatalf("feed: %v", err)
		}
		fs = append(fs, session.Feed{Output: o, Tensor: v})
		fo = append(fo, o)
	}
	var outs []graph.Output
	for _, name := range fetches {
		o, err := Output(g, name)
		if err != nil {
			t.Fatalf("fetch: %v", err)
		}
		outs = append(outs, o)
	}
	run := func(fusion string, cfg *tfpb.ConfigProto) ([]*tensor.Tensor, error) {
		s, err := session.New(g, &session.Options{Config: cfg, Env: map[string]string{"MSTREAM_FUSION": fusion}})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		out, _, err := s.Run(nil, fs, outs, nil)
		return out, err
	}
	on, errOn := run("1", &tfpb.ConfigProto{})
	off, errOff := run("0", NoRewrites())
	if (errOn == nil) != (errOff == nil) {
		t.Fatalf("rewrites on: %v; rewrites off: %v", errOn, errOff)
	}
	if errOn != nil {
		t.Logf("both runs fail alike: %v", errOn)
		return Fusions(g, fo, outs)
	}
	for i := range on {
		if err := close(on[i], off[i], tol); err != nil {
			t.Errorf("fetch %s: rewritten vs not: %v", fetches[i], err)
		}
	}
	return Fusions(g, fo, outs)
}

func close(a, b *tensor.Tensor, tol float64) error {
	if a.DType != b.DType || !a.Shape.Equal(b.Shape) {
		return fmt.Errorf("%v vs %v", a, b)
	}
	n := int(a.NumElements())
	if a.DType == tensor.String {
		return nil
	}
	for i := 0; i < n; i++ {
		x, y := a.ElementF64(i), b.ElementF64(i)
		if math.IsNaN(x) && math.IsNaN(y) {
			continue
		}
		if math.Abs(x-y) > tol*math.Max(1, math.Abs(y)) || math.IsNaN(x) != math.IsNaN(y) {
			return fmt.Errorf("element %d: %v vs %v", i, x, y)
		}
	}
	return nil
}
