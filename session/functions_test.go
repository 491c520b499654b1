package session

import (
	"encoding/json"
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

// TestFunctions runs TF 2.15's tf.function graphs (test/functions: nested
// calls, a polymorphic function, tf.cond, tf.while_loop and
// tf.switch_case in TF2 form, If and While whose bodies call functions, a
// missing function) with their function libraries, inlined and lowered
// at plan time, on the pool executor, host streams, two groups and
// node-level mode, and compares every output, error and static shape with
// TF's.
func TestFunctions(t *testing.T) {
	runTFCases(t, "../test/functions", "cases.json", hostControlFlowEnvs)
}

// TestFunctionsGPU runs the same cases in GPU sessions (one group, several,
// node-level, CUDA graphs on), and checks that inlined bodies and lowered
// loops are placed on the GPU. The TensorList, TensorArray and stack ops of
// the tensor_array* and dynamic_rnn cases run on the host there, their
// handles and lists never leaving host memory.
func TestFunctionsGPU(t *testing.T) {
	wantGPU(t)
	runTFCases(t, "../test/functions", "cases.json", gpuControlFlowEnvs)
	for _, c := range []struct{ graph, feed1, feed2, fetch string }{
		{"nested_calls", "x", "y", "Identity"},
		{"while_cond", "x", "w", "Identity"},
	} {
		g := importFile(t, "../test/functions/"+c.graph+".pbtxt")
		s := openSession(t, g, map[string]string{"MSTREAM_DEVICE": "gpu"})
		plan, err := s.planFor([]graph.Output{g.Lookup(c.feed1).Output(0), g.Lookup(c.feed2).Output(0)},
			[]graph.Output{g.Lookup(c.fetch).Output(0)}, nil)
		if err != nil || !plan.OnGPU() {
			t.Errorf("%s plan: on GPU %v, %v", c.graph, err == nil && plan.OnGPU(), err)
		}
	}
}

// TestFunctionRecursion: a function that calls itself is refused with
// INVALID_ARGUMENT naming the function and the call, and the session
// keeps working. (TF 2.15 itself dies of a stack overflow on this graph,
// so there is no TF answer to compare with.)
func TestFunctionRecursion(t *testing.T) {
	g := importFile(t, "../test/functions/recursive.pbtxt")
	s := openSession(t, g, nil)
	x := g.Lookup("x").Output(0)
	feeds := []Feed{{x, tensor.FromF32(tensor.Shape{2}, []float32{1, 2})}}
	_, _, err := s.Run(nil, feeds, []graph.Output{g.Lookup("r").Output(0)}, nil)
	if status.CodeOf(err) != status.InvalidArgument || !strings.Contains(err.Error(), "'Loop1' calls itself") || !strings.Contains(err.Error(), "'r/again'") {
		t.Errorf("recursive call: %v", err)
	}
	b := g.NewBuilder("Neg", "neg")
	b.AddInput(x)
	neg, err := b.Finish()
	if err != nil {
		t.Fatal(err)
	}
	got, _, err := s.Run(nil, feeds, []graph.Output{neg.Output(0)}, nil)
	if err != nil || got[0].F32()[1] != -2 {
		t.Errorf("the session after the failed Run: %v %v", got, err)
	}
}

// TestFunctionNodeLevel: in node-level mode, inlined body nodes are
// matched by TF_STREAM_FROM_FILE under their inlined names
// (<call>/<body node>), and a body node no rule names takes the group of
// its innermost call that a rule names, not the default group. The run
// gives TF's values.
func TestFunctionNodeLevel(t *testing.T) {
	g := importFile(t, "../test/functions/nested_calls.pbtxt")
	rules := filepath.Join(t.TempDir(), "streams.txt")
	if err := os.WriteFile(rules, []byte("1:PartitionedCall_2\n2:PartitionedCall/PartitionedCall_1/mul\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s := openSession(t, g, map[string]string{"TF_GPU_STREAM_GROUP_COUNT": "3", "TF_STREAM_FROM_FILE": rules})
	x, y := g.Lookup("x").Output(0), g.Lookup("y").Output(0)
	fetches := []graph.Output{g.Lookup("Identity").Output(0), g.Lookup("Identity_1").Output(0)}
	plan, err := s.planFor([]graph.Output{x, y}, fetches, nil)
	if err != nil {
		t.Fatal(err)
	}
	assign, _ := s.impl.assignment(plan, 3)
	want := func(name string) int {
		switch {
		case name == "PartitionedCall_2" || strings.HasPrefix(name, "PartitionedCall_2/"):
			return 1
		case name == "PartitionedCall/PartitionedCall_1/mul":
			return 2
		}
		return 0
	}
	seen := map[int]int{}
	for i, n := range plan.Nodes() {
		seen[assign[i]]++
		if assign[i] != want(n.Name) {
			t.Errorf("%s (op %s) on group %d, want %d", n.Name, n.Op, assign[i], want(n.Name))
		}
	}
	if seen[1] < 3 || seen[2] != 1 {
		t.Errorf("groups used %v", seen)
	}
	ref := openSession(t, g, nil)
	feeds := []Feed{{x, tensor.FromF32(tensor.Shape{3}, []float32{0.5, -1, 2})}, {y, tensor.FromF32(tensor.Shape{3}, []float32{1, 0.25, -3})}}
	got, _, err := s.Run(nil, feeds, fetches, nil)
	want1, _, err1 := ref.Run(nil, feeds, fetches, nil)
	if err != nil || err1 != nil {
		t.Fatal(err, err1)
	}
	for i := range got {
		if !slices.Equal(got[i].F32(), want1[i].F32()) {
			t.Errorf("fetch %d: %v on three groups, %v on one", i, got[i].F32(), want1[i].F32())
		}
	}
}

func importFile(t *testing.T, path string) *graph.Graph {
	t.Helper()
	g, err := graph.ImportTextFile(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// TestFunctionSideEffects: a stateful op (SaveV2) in one branch of a TF2
// tf.cond runs exactly when TF 2.15 runs it: the checkpoint is written
// when the branch is taken and not when it is not, and the output equals
// TF's (test/functions/cond_save.json).
func TestFunctionSideEffects(t *testing.T) {
	raw, err := os.ReadFile("../test/functions/cond_save.json")
	if err != nil {
		t.Fatal(err)
	}
	var c struct {
		Graph string `json:"graph"`
		Runs  []struct {
			cfRun
			WroteIndex bool `json:"wrote_index"`
		} `json:"runs"`
	}
	if err := json.Unmarshal(raw, &c); err != nil || len(c.Runs) != 2 {
		t.Fatalf("cond_save.json: %v", err)
	}
	g := importFile(t, filepath.Join("../test/functions", c.Graph))
	s := openSession(t, g, nil)
	dir := t.TempDir()
	for k, r := range c.Runs {
		prefix := filepath.Join(dir, "ckpt"+strconv.Itoa(k))
		feeds := []Feed{{g.Lookup("prefix").Output(0), tensor.FromStrings(tensor.Shape{}, []string{prefix})}}
		for name, v := range r.Feeds {
			feeds = append(feeds, Feed{g.Lookup(name).Output(0), v.tensor(t)})
		}
		fetch := []graph.Output{g.Lookup(strings.TrimSuffix(r.Fetches[0], ":0")).Output(0)}
		got, _, err := s.Run(nil, feeds, fetch, nil)
		if err != nil {
			t.Fatalf("run %d: %v", k, err)
		}
		checkCF(t, k, r.Fetches[0], got[0], r.Want[0])
		_, statErr := os.Stat(prefix + ".index")
		if wrote := statErr == nil; wrote != r.WroteIndex {
			t.Errorf("run %d (p=%v): checkpoint written %v, TF %v", k, r.Feeds["p"].Values, wrote, r.WroteIndex)
		}
	}
}
