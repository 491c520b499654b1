package session

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"mstream/graph"
	"mstream/status"
	"mstream/tensor"
)

// cfCases is a cases.json of test/controlflow (v1 control-flow graphs) or
// test/functions (tf.function graphs with libraries), written by TF 2.15
// (the directory's gen.py) with TF's outputs or error for each feed set.
type cfCases struct {
	Cases []struct {
		Name   string             `json:"name"`
		Graph  string             `json:"graph"`
		Shapes map[string][]int64 `json:"shapes"` // TF's static shapes; null: unknown rank
		Runs   []cfRun            `json:"runs"`
		// Needs lists ops whose kernels may be missing yet: a run that
		// fails naming one of them is logged as an expected failure.
		Needs []string `json:"needs"`
	} `json:"cases"`
}

// cfRun is one feed set of a case and what TF gave for it.
type cfRun struct {
	Feeds   map[string]cfValue `json:"feeds"`
	Fetches []string           `json:"fetches"`
	Want    []cfValue          `json:"want"`
	Error   *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

type cfValue struct {
	DType  string    `json:"dtype"`
	Shape  []int64   `json:"shape"`
	Values []float64 `json:"values"`
}

func (v cfValue) tensor(t *testing.T) *tensor.Tensor {
	shape := tensor.Shape(v.Shape)
	switch v.DType {
	case "float32":
		f := make([]float32, len(v.Values))
		for i, x := range v.Values {
			f[i] = float32(x)
		}
		return tensor.FromF32(shape, f)
	case "bool":
		b := make([]bool, len(v.Values))
		for i, x := range v.Values {
			b[i] = x != 0
		}
		return tensor.FromBool(shape, b)
	case "int32":
		n := make([]int32, len(v.Values))
		for i, x := range v.Values {
			n[i] = int32(x)
		}
		return tensor.FromI32(shape, n)
	}
	t.Fatalf("dtype %s not handled", v.DType)
	return nil
}

// TestControlFlowV1 runs TF's v1 conditionals (Switch/Merge, nested cond,
// control edges into branches, dead fetches) and while loops, and
// compares every output and error, and the static shapes of Switch and
// Merge outputs, with what TF 2.15 gave for the same graph and feeds, on
// the pool executor and on the stream scheduler: host streams with one
// group (and the jitter sanitizer), two groups, and node-level mode with
// nodes spread over three groups inside and outside the loops.
func TestControlFlowV1(t *testing.T) {
	runTFCases(t, "../test/controlflow", "cases.json", hostControlFlowEnvs)
}

// hostControlFlowEnvs are the host sessions control-flow cases run on.
func hostControlFlowEnvs(rules string) []map[string]string {
	return []map[string]string{
		nil,
		{"MSTREAM_HOST_STREAMS": "1", "MSTREAM_HOST_STREAM_JITTER": "1"},
		{"TF_GPU_STREAM_GROUP_COUNT": "2"},
		{"TF_GPU_STREAM_GROUP_COUNT": "3", "TF_NODE_LEVEL_MULTISTREAM": "true", "TF_STREAM_FROM_FILE": rules,
			"MSTREAM_HOST_STREAM_JITTER": "1"},
	}
}

// TestTensorListsLikeTF runs TensorList programs built and run by TF 2.15
// (test/controlflow/gen.py lists): every list op on lists made from a
// fed tensor, reserved lists with unset elements, scatters, a v1 while
// loop carrying a list, an out-of-range index; outputs and errors must be
// TF's in every host mode.
func TestTensorListsLikeTF(t *testing.T) {
	runTFCases(t, "../test/controlflow", "lists.json", hostControlFlowEnvs)
}

// TestTensorListsGPU runs the same list programs in GPU sessions (one
// group, several, node-level, CUDA graphs on): the list ops run on the
// host, their element values cross to and from the GPU.
func TestTensorListsGPU(t *testing.T) {
	wantGPU(t)
	runTFCases(t, "../test/controlflow", "lists.json", gpuControlFlowEnvs)
}

// TestGPUControlFlowV1 is TestControlFlowV1 on a GPU: the device step's
// frames (loop bodies on the GPU, predicates read back), one group and
// several, node-level mode, with CUDA graphs on (a plan with control flow
// must run node by node, and the stats must say it is ineligible).
func TestGPUControlFlowV1(t *testing.T) {
	wantGPU(t)
	runTFCases(t, "../test/controlflow", "cases.json", gpuControlFlowEnvs)
}

// gpuControlFlowEnvs are the GPU sessions control-flow cases run on.
func gpuControlFlowEnvs(rules string) []map[string]string {
	return []map[string]string{
		{"MSTREAM_DEVICE": "gpu"},
		{"MSTREAM_DEVICE": "gpu", "TF_GPU_STREAM_GROUP_COUNT": "2", "TF_GPU_STREAM_MERGE": "true"},
		{"MSTREAM_DEVICE": "gpu", "TF_GPU_STREAM_GROUP_COUNT": "3", "TF_NODE_LEVEL_MULTISTREAM": "true",
			"TF_STREAM_FROM_FILE": rules, "MSTREAM_STREAM_JITTER": "1"},
		{"MSTREAM_DEVICE": "gpu", "MSTREAM_CUDA_GRAPH": "1"},
	}
}

// runTFCases runs the cases of dir/file (written by the dir's
// gen.py from TF 2.15) on a session of each environment envs gives
// (rules: a TF_STREAM_FROM_FILE file spreading nodes over groups 0 to 2)
// and compares outputs, errors and static shapes with TF's.
func runTFCases(t *testing.T, dir, file string, envs func(rules string) []map[string]string) {
	raw, err := os.ReadFile(filepath.Join(dir, file))
	if err != nil {
		t.Fatal(err)
	}
	var cs cfCases
	if err := json.Unmarshal(raw, &cs); err != nil {
		t.Fatal(err)
	}
	if len(cs.Cases) == 0 {
		t.Fatal("no cases")
	}
	for _, c := range cs.Cases {
		t.Run(c.Name, func(t *testing.T) {
			g, err := graph.ImportTextFile(filepath.Join(dir, c.Graph), &graph.ImportOptions{})
			if err != nil {
				t.Fatal(err)
			}
			out := func(name string) graph.Output {
				n, idx, _ := strings.Cut(name, ":")
				i, _ := strconv.Atoi(idx)
				node := g.Lookup(n)
				if node == nil {
					t.Fatalf("no node %q", n)
				}
				return graph.Output{Node: node, Index: i}
			}
			for name, want := range c.Shapes {
				o := out(name)
				got := o.Node.OutShapes[o.Index]
				if want == nil && got.Known || want != nil && (!got.Known || !slices.Equal(got.Dims, want)) {
					t.Errorf("shape of %s: %v, TF %v (nil: unknown rank)", name, got, want)
				}
			}
			rules := filepath.Join(t.TempDir(), "streams.txt")
			if err := os.WriteFile(rules, []byte("1:.*[aeiou]\n2:.*[0-9]\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			var sessions []*Session
			for _, env := range envs(rules) {
				sessions = append(sessions, openSession(t, g, env))
			}
			for k, r := range c.Runs {
				var feeds []Feed
				for name, v := range r.Feeds {
					feeds = append(feeds, Feed{out(name), v.tensor(t)})
				}
				var fetches []graph.Output
				for _, f := range r.Fetches {
					fetches = append(fetches, out(f))
				}
				for m, sess := range sessions {
					got, _, err := sess.Run(nil, feeds, fetches, nil)
					if r.Error != nil {
						if err == nil || int(status.CodeOf(err)) != r.Error.Code || !strings.Contains(err.Error(), r.Error.Message) {
							t.Errorf("session %d run %d: %v; TF fails with code %d: %s", m, k, err, r.Error.Code, r.Error.Message)
						}
						continue
					}
					if err != nil && slices.ContainsFunc(c.Needs, func(op string) bool { return strings.Contains(err.Error(), "op "+op+" ") }) {
						t.Logf("session %d run %d: expected failure until the kernel lands: %v", m, k, err)
						continue
					}
					if err != nil {
						t.Fatalf("session %d run %d: %v", m, k, err)
					}
					for j, w := range r.Want {
						checkCF(t, k, r.Fetches[j], got[j], w)
					}
				}
			}
			for m, sess := range sessions {
				if cg := sess.Stats().CUDAGraph; cg != nil && (cg.Captures != 0 || cg.Replays != 0) {
					t.Errorf("session %d: CUDA graph stats %+v: a plan with control flow must never be captured", m, *cg)
				}
			}
		})
	}
}

func checkCF(t *testing.T, run int, name string, got *tensor.Tensor, want cfValue) {
	t.Helper()
	if !got.Shape.Equal(tensor.Shape(want.Shape)) {
		t.Errorf("run %d %s: shape %v, TF %v", run, name, got.Shape, want.Shape)
		return
	}
	var vals []float64
	switch got.DType {
	case tensor.Float:
		for _, x := range got.F32() {
			vals = append(vals, float64(x))
		}
	case tensor.Int32:
		for _, x := range got.I32() {
			vals = append(vals, float64(x))
		}
	default:
		t.Fatalf("run %d %s: dtype %v not handled", run, name, got.DType)
	}
	for i, w := range want.Values {
		if d := math.Abs(vals[i] - w); d > 1e-5*math.Max(1, math.Abs(w)) {
			t.Errorf("run %d %s[%d] = %v, TF %v", run, name, i, vals[i], w)
		}
	}
}
