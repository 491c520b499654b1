package dataset_test

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"mstream/dataset"
	"mstream/device/cuda"
	"mstream/graph"
	_ "mstream/kernels/cpu"
	"mstream/session"
	"mstream/status"
	"mstream/tensor"
)

type jsonTensor struct {
	DType  string            `json:"dtype"`
	Shape  []int64           `json:"shape"`
	Values []json.RawMessage `json:"values"`
}

type tfCase struct {
	Name  string                `json:"name"`
	Init  string                `json:"init"`
	Feeds map[string]jsonTensor `json:"feeds"`
	Next  []string              `json:"next"`
	// Shapes are TF's static shapes of Next: dims (nil unknown), nil for
	// an unknown rank.
	Shapes [][]*int64 `json:"shapes"`
	// A TF2 function's graph: Fetch run once per Results entry.
	Fetch   []string       `json:"fetch"`
	Results [][]jsonTensor `json:"results"`
	Passes  []struct {
		// Elements are each a list of components or {"error": tfError}.
		Elements []json.RawMessage `json:"elements"`
		End      tfError           `json:"end"`
	} `json:"passes"`
}

type tfError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

// checkErr checks that err is TF's error: its code, and the start of its
// message (firstWords).
func checkErr(t *testing.T, what string, err error, want tfError) {
	t.Helper()
	code := status.CodeOf(err)
	if int(code) != want.Code || !strings.Contains(err.Error(), firstWords(want.Message)) {
		t.Errorf("%s: got %v (code %d), TF code %d %q", what, err, code, want.Code, want.Message)
	}
}

var dtypes = map[string]tensor.DType{"int64": tensor.Int64, "int32": tensor.Int32, "float32": tensor.Float,
	"float64": tensor.Double, "bool": tensor.Bool, "string": tensor.String}

func fromJSON(t *testing.T, j jsonTensor) *tensor.Tensor {
	t.Helper()
	dt, ok := dtypes[j.DType]
	if !ok {
		t.Fatalf("dtype %s", j.DType)
	}
	x := tensor.New(dt, tensor.Shape(j.Shape))
	for i, v := range j.Values {
		var err error
		switch dt {
		case tensor.String:
			var s string
			if err = json.Unmarshal(v, &s); err == nil {
				x.Strs[i], err = hex.DecodeString(s)
			}
		case tensor.Int64:
			err = json.Unmarshal(v, &x.I64()[i])
		case tensor.Int32:
			err = json.Unmarshal(v, &x.I32()[i])
		case tensor.Float:
			err = json.Unmarshal(v, &x.F32()[i])
		case tensor.Double:
			err = json.Unmarshal(v, &x.F64()[i])
		case tensor.Bool:
			var b int
			err = json.Unmarshal(v, &b)
			x.Bools()[i] = b != 0
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	return x
}

// same says whether two tensors are equal: dtype, shape and every element,
// bit for bit but for floats, which may differ by rounding where a map
// function or a consumer sums (a MatMul's BLAS against TF's Eigen).
func same(a, b *tensor.Tensor) bool {
	if a.DType != b.DType || !a.Shape.Equal(b.Shape) {
		return false
	}
	if a.DType == tensor.Float || a.DType == tensor.Double {
		for i := range int(a.NumElements()) {
			x, y := a.ElementF64(i), b.ElementF64(i)
			if math.Abs(x-y) > 1e-5*max(1, math.Abs(y)) {
				return false
			}
		}
		return true
	}
	if a.DType == tensor.String {
		for i := range a.Strs {
			if string(a.Strs[i]) != string(b.Strs[i]) {
				return false
			}
		}
		return true
	}
	return string(a.Buf) == string(b.Buf)
}

// casesDir is where the TF cases are: written afresh by gen.py (fresh
// random inputs and seeds) when TensorFlow is installed, else the copy
// checked in beside gen.py.
func casesDir(t *testing.T) string {
	root, _ := filepath.Abs("..")
	py := filepath.Join(root, "build", "venv", "bin", "python")
	if _, err := os.Stat(filepath.Join(root, "build", "venv", ".tf-ok")); err != nil {
		t.Logf("no TensorFlow (build/venv/.tf-ok missing): the checked-in cases")
		return filepath.Join(root, "test", "datasets")
	}
	dir := t.TempDir()
	cmd := exec.Command(py, filepath.Join(root, "test", "datasets", "gen.py"), dir)
	cmd.Env = append(os.Environ(), "TF_CPP_MIN_LOG_LEVEL=3", "CUDA_VISIBLE_DEVICES=")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("gen.py: %v\n%s", err, out)
	}
	return dir
}

// TestPipelinesAgainstTF runs the tf.data graphs TF 2.15 built
// (test/datasets/gen.py) through a session and checks that the elements,
// in order, and the error that ends each pass are TF's; an initializable
// iterator runs two passes, initialized again between them. Sessions on the
// inter-op pool, on host streams with jitter, and with two stream groups.
func TestPipelinesAgainstTF(t *testing.T) {
	dir := casesDir(t)
	for _, env := range []map[string]string{
		{"MSTREAM_DEVICE": "cpu"},
		{"MSTREAM_DEVICE": "cpu", "MSTREAM_HOST_STREAMS": "1", "MSTREAM_HOST_STREAM_JITTER": "1"},
		{"MSTREAM_DEVICE": "cpu", "TF_GPU_STREAM_GROUP_COUNT": "2"},
	} {
		runCases(t, dir, env)
	}
}

// TestPipelinesGPU runs the same cases in GPU sessions (one group, and
// two groups with host streams): the pipelines run on the host and feed
// GPU kernels (batch_matmul_step's MatMul and Relu).
func TestPipelinesGPU(t *testing.T) {
	if _, err := cuda.Load(); err != nil {
		if errors.Is(err, cuda.ErrNoCUDA) && os.Getenv("MSTREAM_DEVICE") != "gpu" {
			t.Skipf("no GPU: %v", err)
		}
		t.Fatal(err)
	}
	dir := casesDir(t)
	runCases(t, dir, map[string]string{"MSTREAM_DEVICE": "gpu"})
	runCases(t, dir, map[string]string{"MSTREAM_DEVICE": "gpu", "TF_GPU_STREAM_GROUP_COUNT": "2"})
}

func runCases(t *testing.T, dir string, env map[string]string) {
	raw, err := os.ReadFile(filepath.Join(dir, "cases.json"))
	if err != nil {
		t.Fatal(err)
	}
	var cases []tfCase
	if err := json.Unmarshal(raw, &cases); err != nil {
		t.Fatal(err)
	}
	if len(cases) < 21 {
		t.Fatalf("%d cases", len(cases))
	}
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			g := loadCase(t, dir, c.Name)
			live := dataset.LiveFuncs()
			s, err := session.New(g, &session.Options{Env: env})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			// The session's plans close the function plans of their
			// dataset kernels, and its iterators theirs.
			defer func() {
				if err := s.Close(); err != nil {
					t.Fatal(err)
				}
				if n := dataset.LiveFuncs(); n != live {
					t.Errorf("session closed: %d function plans open, %d before it opened", n, live)
				}
			}()
			if len(c.Fetch) > 0 {
				runFetches(t, s, g, c)
				return
			}
			var next []graph.Output
			for _, name := range c.Next {
				id, err := graph.ParseTensorID(name)
				if err != nil {
					t.Fatal(err)
				}
				next = append(next, g.Lookup(id.Name).Output(id.Index))
			}
			for i, o := range next {
				if i >= len(c.Shapes) {
					break
				}
				got, want := g.TensorShape(o), c.Shapes[i]
				ok := got.Known == (want != nil) && len(got.Dims) == len(want)
				for d := 0; ok && d < len(want); d++ {
					w := int64(-1)
					if want[d] != nil {
						w = *want[d]
					}
					ok = got.Dims[d] == w
				}
				if !ok {
					t.Errorf("static shape of %s: %v, TF's %v", c.Next[i], got, want)
				}
			}
			var feeds []session.Feed
			for name, v := range c.Feeds {
				x := fromJSON(t, v)
				if name == "files" { // paths relative to the cases' directory
					for i, f := range x.Strs {
						x.Strs[i] = []byte(filepath.Join(dir, string(f)))
					}
				}
				feeds = append(feeds, session.Feed{Output: g.Lookup(name).Output(0), Tensor: x})
			}
			for p, pass := range c.Passes {
				if c.Init != "" {
					if _, _, err := s.Run(nil, feeds, nil, []*graph.Node{g.Lookup(c.Init)}); err != nil {
						t.Fatalf("pass %d: init: %v", p, err)
					}
				}
				for i, raw := range pass.Elements {
					got, _, err := s.Run(nil, nil, next, nil)
					var failed struct {
						Error *tfError `json:"error"`
					}
					if json.Unmarshal(raw, &failed) == nil && failed.Error != nil {
						checkErr(t, fmt.Sprintf("pass %d element %d", p, i), err, *failed.Error)
						continue
					}
					if err != nil {
						t.Fatalf("pass %d element %d: %v", p, i, err)
					}
					var want []jsonTensor
					if err := json.Unmarshal(raw, &want); err != nil {
						t.Fatal(err)
					}
					for j, w := range want {
						if wt := fromJSON(t, w); !same(got[j], wt) {
							t.Fatalf("pass %d element %d component %d: got %s, TF %s", p, i, j, show(got[j]), show(wt))
						}
					}
				}
				_, _, err := s.Run(nil, nil, next, nil)
				checkErr(t, fmt.Sprintf("pass %d end", p), err, pass.End)
			}
		})
	}
}

// loadCase imports case name's GraphDef (dir/name.pbtxt) into a new graph.
func loadCase(t *testing.T, dir, name string) *graph.Graph {
	t.Helper()
	g, err := graph.ImportTextFile(filepath.Join(dir, name+".pbtxt"), nil)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func outputs(t *testing.T, g *graph.Graph, names []string) []graph.Output {
	t.Helper()
	var outs []graph.Output
	for _, name := range names {
		id, err := graph.ParseTensorID(name)
		if err != nil {
			t.Fatal(err)
		}
		outs = append(outs, g.Lookup(id.Name).Output(id.Index))
	}
	return outs
}

// runFetches runs a TF2 case: each Run makes its own anonymous iterator,
// so every Run gives TF's first elements again.
func runFetches(t *testing.T, s *session.Session, g *graph.Graph, c tfCase) {
	fetch := outputs(t, g, c.Fetch)
	for r, want := range c.Results {
		got, _, err := s.Run(nil, nil, fetch, nil)
		if err != nil {
			t.Fatalf("run %d: %v", r, err)
		}
		for j, w := range want {
			if wt := fromJSON(t, w); !same(got[j], wt) {
				t.Fatalf("run %d output %d: got %s, TF %s", r, j, show(got[j]), show(wt))
			}
		}
	}
}

// firstWords is the start of TF's message that mstream's must contain (the
// message's details, such as a file's path, differ).
func firstWords(msg string) string {
	if i := strings.IndexAny(msg, ";:0123456789/"); i > 0 {
		return strings.TrimSpace(msg[:i])
	}
	return msg
}

func show(x *tensor.Tensor) string {
	switch x.DType {
	case tensor.Int64:
		return fmt.Sprint(x.Shape, x.I64())
	case tensor.Int32:
		return fmt.Sprint(x.Shape, x.I32())
	case tensor.Float:
		return fmt.Sprint(x.Shape, x.F32())
	case tensor.Double:
		return fmt.Sprint(x.Shape, x.F64())
	}
	return fmt.Sprint(x)
}
