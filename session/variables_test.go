package session

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"mstream/graph"
	"mstream/status"
	"mstream/tensor"
)

// varCases is test/variables/cases.json: TF1 graphs with ref and resource
// variables, a Saver and an MLP, written by TF 2.15
// (test/variables/gen.py), with a sequence of steps on one session and
// TF's result for each.
type varCases struct {
	Cases []struct {
		Name  string `json:"name"`
		Graph string `json:"graph"`
		Runs  []struct {
			Feeds   map[string]varValue `json:"feeds"`
			Fetches []string            `json:"fetches"`
			Targets []string            `json:"targets"`
			Want    []varValue          `json:"want"`
			Error   *struct {
				Code    int    `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
		} `json:"runs"`
	} `json:"cases"`
}

type varValue struct {
	DType   string    `json:"dtype"`
	Shape   []int64   `json:"shape"`
	Values  []float64 `json:"values"`
	Strings []string  `json:"strings"`
}

func (v varValue) tensor(t *testing.T, tmp string) *tensor.Tensor {
	if v.DType == "string" {
		s := make([]string, len(v.Strings))
		for i, x := range v.Strings {
			s[i] = strings.ReplaceAll(strings.ReplaceAll(x, "__TMP__", tmp), "__DIR__", "../test/variables")
		}
		return tensor.FromStrings(tensor.Shape(v.Shape), s)
	}
	if v.DType == "int64" {
		n := make([]int64, len(v.Values))
		for i, x := range v.Values {
			n[i] = int64(x)
		}
		return tensor.FromI64(tensor.Shape(v.Shape), n)
	}
	return cfValue{DType: v.DType, Shape: v.Shape, Values: v.Values}.tensor(t)
}

func loadGraph(t *testing.T, path string) *graph.Graph {
	t.Helper()
	text, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	gd, err := graph.ParseTextGraphDef(text)
	if err != nil {
		t.Fatal(err)
	}
	g := graph.New()
	if _, err := g.Import(gd, &graph.ImportOptions{}); err != nil {
		t.Fatal(err)
	}
	return g
}

func outputOf(t *testing.T, g *graph.Graph, name string) graph.Output {
	t.Helper()
	n, idx, _ := strings.Cut(name, ":")
	i, _ := strconv.Atoi(idx)
	node := g.Lookup(n)
	if node == nil {
		t.Fatalf("no node %q", n)
	}
	return graph.Output{Node: node, Index: i}
}

// TestVariablesAgainstTF replays each case's steps (lookup tables included)
// on one session, on the pool executor and on two stream groups, and
// compares every fetched value and every error (code and TF's message)
// with TF's.
func TestVariablesAgainstTF(t *testing.T) {
	runVarCases(t, []map[string]string{nil, {"TF_GPU_STREAM_GROUP_COUNT": "2"}}, 0)
}

// TestVariablesOnGPU is the same on a GPU session, one and two stream
// groups: resource and ref variables live in GPU memory (tables on the
// host, their values crossing to the GPU kernels that read them).
// Floats agree with TF's CPU results to the GPU's TF32 tolerance; an
// index out of range is no error on the GPU, as in TF's GPU kernels.
func TestVariablesOnGPU(t *testing.T) {
	wantGPU(t)
	runVarCases(t, []map[string]string{{"MSTREAM_DEVICE": "gpu"}, {"MSTREAM_DEVICE": "gpu", "TF_GPU_STREAM_GROUP_COUNT": "2"}}, 2e-3)
}

func runVarCases(t *testing.T, envs []map[string]string, tol float64) {
	dir := "../test/variables"
	raw, err := os.ReadFile(filepath.Join(dir, "cases.json"))
	if err != nil {
		t.Fatal(err)
	}
	var cs varCases
	if err := json.Unmarshal(raw, &cs); err != nil {
		t.Fatal(err)
	}
	if len(cs.Cases) == 0 {
		t.Fatal("no cases")
	}
	for _, c := range cs.Cases {
		for _, env := range envs {
			t.Run(c.Name+"/"+env["MSTREAM_DEVICE"]+"/groups="+env["TF_GPU_STREAM_GROUP_COUNT"], func(t *testing.T) {
				g := loadGraph(t, filepath.Join(dir, c.Graph))
				s := openSession(t, g, env)
				tmp := t.TempDir()
				for k, r := range c.Runs {
					var feeds []Feed
					for name, v := range r.Feeds {
						feeds = append(feeds, Feed{outputOf(t, g, name+":0"), v.tensor(t, tmp)})
					}
					var fetches []graph.Output
					for _, f := range r.Fetches {
						fetches = append(fetches, outputOf(t, g, f))
					}
					var targets []*graph.Node
					for _, n := range r.Targets {
						targets = append(targets, g.Lookup(n))
					}
					got, _, err := s.Run(nil, feeds, fetches, targets)
					if r.Error != nil {
						if err == nil && env["MSTREAM_DEVICE"] == "gpu" && strings.Contains(r.Error.Message, " is not in [0, ") {
							// An index out of range: TF's GPU kernels of
							// ResourceGather and ResourceScatter* skip it (the
							// indices are in device memory), as ours do; TF's
							// answer here is its CPU kernels'.
							continue
						}
						if err == nil || int(status.CodeOf(err)) != r.Error.Code || !strings.Contains(err.Error(), r.Error.Message) {
							t.Errorf("run %d: %v; TF fails with code %d: %s", k, err, r.Error.Code, r.Error.Message)
						}
						continue
					}
					if err != nil {
						t.Fatalf("run %d: %v", k, err)
					}
					for j, w := range r.Want {
						checkVar(t, k, r.Fetches[j], got[j], w, tol)
					}
				}
			})
		}
	}
}

func checkVar(t *testing.T, run int, name string, got *tensor.Tensor, want varValue, tol float64) {
	t.Helper()
	if want.DType == "string" {
		if got.DType != tensor.String || len(got.Strs) != len(want.Strings) {
			t.Errorf("run %d %s: %v, TF %v", run, name, got, want.Strings)
		}
		return
	}
	if got.DType == tensor.Int64 {
		if !got.Shape.Equal(tensor.Shape(want.Shape)) {
			t.Errorf("run %d %s: shape %v, TF %v", run, name, got.Shape, want.Shape)
			return
		}
		for i, x := range got.I64() {
			if float64(x) != want.Values[i] {
				t.Errorf("run %d %s[%d] = %v, TF %v", run, name, i, x, want.Values[i])
			}
		}
		return
	}
	if got.DType == tensor.Bool {
		if !got.Shape.Equal(tensor.Shape(want.Shape)) {
			t.Errorf("run %d %s: shape %v, TF %v", run, name, got.Shape, want.Shape)
			return
		}
		for i, b := range got.Bools() {
			if b != (want.Values[i] != 0) {
				t.Errorf("run %d %s[%d] = %v, TF %v", run, name, i, b, want.Values[i])
			}
		}
		return
	}
	if tol > 0 && got.DType == tensor.Float && got.Shape.Equal(tensor.Shape(want.Shape)) {
		for i, w := range want.Values {
			if d := math.Abs(float64(got.F32()[i]) - w); d > tol*math.Max(1, math.Abs(w)) {
				t.Errorf("run %d %s[%d] = %v, TF %v", run, name, i, got.F32()[i], w)
			}
		}
		return
	}
	checkCF(t, run, name, got, cfValue{DType: want.DType, Shape: want.Shape, Values: want.Values})
}

// TestVariableReadsNeverTorn runs 32 readers of a resource variable while
// another goroutine assigns it whole tensors whose elements are all equal:
// every value read must have all elements equal and be one that was
// assigned (a torn read would mix two). Run it with -race.
func TestVariableReadsNeverTorn(t *testing.T) {
	g := loadGraph(t, "../test/variables/resource_vars.pbtxt")
	s := openSession(t, g, nil)
	x := outputOf(t, g, "x:0")
	assign := g.Lookup("assign")
	read := outputOf(t, g, "value:0")
	set := func(v float32) {
		f := make([]float32, 10)
		for i := range f {
			f[i] = v
		}
		if _, _, err := s.Run(nil, []Feed{{x, tensor.FromF32(tensor.Shape{5, 2}, f)}}, nil, []*graph.Node{assign}); err != nil {
			t.Error(err)
		}
	}
	set(0)
	const writes = 200
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for r := 0; r < 32; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			last := float32(-1)
			for {
				select {
				case <-stop:
					return
				default:
				}
				out, _, err := s.Run(nil, nil, []graph.Output{read}, nil)
				if err != nil {
					t.Error(err)
					return
				}
				f := out[0].F32()
				for _, v := range f {
					if v != f[0] || v < 0 || v >= writes || v != float32(math.Trunc(float64(v))) {
						t.Errorf("torn or unassigned read: %v", f)
						return
					}
				}
				// Assigns are 0, 1, 2, ... in order: a later Run never
				// sees an older value.
				if f[0] < last {
					t.Errorf("read %v after %v", f[0], last)
					return
				}
				last = f[0]
			}
		}()
	}
	for i := 1; i < writes; i++ {
		set(float32(i))
	}
	close(stop)
	wg.Wait()
	out, _, err := s.Run(nil, nil, []graph.Output{read}, nil)
	if err != nil || out[0].F32()[0] != writes-1 {
		t.Fatalf("after the writes: %v %v", out, err)
	}
}
