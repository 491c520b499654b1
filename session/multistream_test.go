package session

import (
	"fmt"
	"math"
	"math/rand"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"mstream/bfc"
	"mstream/graph"
	"mstream/tensor"
)

// model is the bundled recommender model (examples/data), with a way to
// make random feeds for it.
type model struct {
	g       *graph.Graph
	inputs  []graph.Output
	outputs []graph.Output
}

func loadModel(t testing.TB) *model {
	t.Helper()
	g, err := graph.ImportTextFile("../examples/data/model_test.pbtxt", &graph.ImportOptions{})
	if err != nil {
		t.Fatal(err)
	}
	m := &model{g: g}
	for _, n := range []string{"dense", "ids_0", "ids_1", "ids_2", "ids_3"} {
		m.inputs = append(m.inputs, graph.Output{Node: g.Lookup(n)})
	}
	m.outputs = []graph.Output{{Node: g.Lookup("output")}, {Node: g.Lookup("concat")}}
	return m
}

func (m *model) feeds(r *rand.Rand, batch int) []Feed {
	b := int64(batch)
	dense := make([]float32, batch*13)
	for i := range dense {
		dense[i] = r.Float32()*2 - 1
	}
	ids := func(n, rows int) []int64 {
		v := make([]int64, n)
		for i := range v {
			v[i] = int64(r.Intn(rows))
		}
		return v
	}
	i32 := func(v []int64) []int32 {
		out := make([]int32, len(v))
		for i, x := range v {
			out[i] = int32(x)
		}
		return out
	}
	return []Feed{
		{m.inputs[0], tensor.FromF32(tensor.Shape{b, 13}, dense)},
		{m.inputs[1], tensor.FromI32(tensor.Shape{b}, i32(ids(batch, 1000)))},
		{m.inputs[2], tensor.FromI64(tensor.Shape{b}, ids(batch, 1000))},
		{m.inputs[3], tensor.FromI32(tensor.Shape{b, 1}, i32(ids(batch, 500)))},
		{m.inputs[4], tensor.FromI64(tensor.Shape{b, 1}, ids(batch, 200))},
	}
}

// sameTensors compares results bit for bit: every mode runs the same
// kernels in the same order on the same values.
func sameTensors(got, want []*tensor.Tensor) error {
	if len(got) != len(want) {
		return fmt.Errorf("%d outputs, want %d", len(got), len(want))
	}
	for i := range got {
		g, w := got[i], want[i]
		if g.DType != w.DType || !g.Shape.Equal(w.Shape) {
			return fmt.Errorf("output %d is %v, want %v", i, g, w)
		}
		if w.DType == tensor.Float {
			gv, wv := g.F32(), w.F32()
			for j := range wv {
				if math.Float32bits(gv[j]) != math.Float32bits(wv[j]) {
					return fmt.Errorf("output %d element %d: %v, want %v", i, j, gv[j], wv[j])
				}
			}
			continue
		}
		if string(g.Buf) != string(w.Buf) {
			return fmt.Errorf("output %d differs", i)
		}
	}
	return nil
}

// openSession opens a session on the host device: these tests are about
// the host device's streams (and compare bit for bit), so on a GPU machine
// MSTREAM_DEVICE=cpu keeps them there unless the case sets it.
func openSession(t testing.TB, g *graph.Graph, env map[string]string) *Session {
	t.Helper()
	s, err := New(g, &Options{Env: hostEnv(env)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// multiStreamCases are the configurations every multi-stream test runs;
// each must give exactly the single-group results.
func multiStreamCases(t testing.TB) []map[string]string {
	dir := t.TempDir()
	rules := filepath.Join(dir, "streams.txt")
	os.WriteFile(rules, []byte("1:embedding_[01]/.*,mlp/layer_1/.*\n2:embedding_[23]/.*\n"), 0o644)
	fwd := filepath.Join(dir, "fwd.txt")
	os.WriteFile(fwd, []byte("1:embedding_0/lookup\n2:mlp/layer_0/matmul\n"), 0o644)
	return []map[string]string{
		{"TF_GPU_STREAM_GROUP_COUNT": "1", "MSTREAM_HOST_STREAMS": "1"},
		{"TF_GPU_STREAM_GROUP_COUNT": "4"},
		{"TF_GPU_STREAM_GROUP_COUNT": "4", "TF_GPU_STREAM_MERGE": "true"},
		{"TF_GPU_STREAM_GROUP_COUNT": "2", "TF_REDUCE_STREAM_WAIT": "false"},
		{"TF_GPU_STREAM_GROUP_COUNT": "3", "TF_GPU_STREAM_AWARE_BFC": "true", "TF_FORCE_GPU_ALLOW_GROWTH": "true"},
		{"TF_GPU_STREAM_GROUP_COUNT": "3", "TF_GPU_STREAM_GROUP_SHARE_MEM_POOL": "true", "TF_BFC_EXTEND_LIMIT_MB": "1"},
		{"TF_GPU_STREAM_GROUP_COUNT": "2", "TF_PER_STREAM_HOST_ALLOCATOR": "true", "TF_SEGMENT_OWN_CONST": "true"},
		{"TF_GPU_STREAM_GROUP_COUNT": "4", "TF_GPU_THREAD_MODE": "gpu_private", "TF_GPU_THREAD_COUNT": "1", "TF_GPU_CONTEXT_COUNT": "2"},
		{"TF_GPU_STREAM_GROUP_COUNT": "2", "TF_GPU_THREAD_MODE": "gpu_shared", "TF_GPU_THREAD_COUNT": "3"},
		{"TF_GPU_STREAM_GROUP_COUNT": "3", "TF_NODE_LEVEL_MULTISTREAM": "true", "TF_STREAM_FROM_FILE": rules},
		{"TF_GPU_STREAM_GROUP_COUNT": "3", "TF_NODE_LEVEL_MULTISTREAM": "true", "TF_STREAM_FROM_FILE": fwd,
			"TF_MULTI_STREAM_ALLOW_FORWARD_PROPAGATION": "true", "TF_REDUCE_STREAM_WAIT": "false"},
		{"TF_GPU_STREAM_GROUP_COUNT": "3", "TF_NODE_LEVEL_MULTISTREAM": "true", "TF_STREAM_FROM_FILE": rules,
			"TF_GPU_STREAM_AWARE_BFC": "true"},
		{"TF_GPU_STREAM_GROUP_COUNT": "4", "TF_NODE_LEVEL_MULTISTREAM": "true", "MSTREAM_STREAM_ASSIGN": "auto"},
		{"TF_GPU_STREAM_GROUP_COUNT": "3", "TF_NODE_LEVEL_MULTISTREAM": "true", "TF_STREAM_FROM_FILE": fwd,
			"MSTREAM_STREAM_ASSIGN": "auto"},
	}
}

// job is one Run's feeds and the outputs a reference session gave for them.
type job struct {
	feeds []Feed
	want  []*tensor.Tensor
}

// makeJobs runs n feeds drawn by feed on the reference session ref and
// keeps each with its outputs.
func makeJobs(t *testing.T, ref *Session, fetches []graph.Output, n int, feed func() []Feed) []job {
	t.Helper()
	jobs := make([]job, 0, n)
	for i := 0; i < n; i++ {
		f := feed()
		want, _, err := ref.Run(nil, f, fetches, nil)
		if err != nil {
			t.Fatalf("reference run %d: %v", i, err)
		}
		jobs = append(jobs, job{f, want})
	}
	return jobs
}

// runJobs runs jobs on s from workers goroutines at once (goroutine w
// takes the w-th equal share, in order) and checks every run's outputs
// against its job's with same (sameTensors, or closeTensors where the
// devices round differently). A failed Run ends its goroutine.
func runJobs(t *testing.T, s *Session, fetches []graph.Output, jobs []job, workers int, same func(got, want []*tensor.Tensor) error) {
	t.Helper()
	per := (len(jobs) + workers - 1) / workers
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for k := w * per; k < min(len(jobs), (w+1)*per); k++ {
				got, _, err := s.Run(nil, jobs[k].feeds, fetches, nil)
				if err != nil {
					t.Errorf("run %d: %v", k, err)
					return
				}
				if err := same(got, jobs[k].want); err != nil {
					t.Errorf("run %d: %v", k, err)
				}
			}
		}(w)
	}
	wg.Wait()
}

// TestModelUnderSanitizer runs the bundled model in every multi-stream
// configuration with the host streams jittered, from several goroutines,
// and compares every output with the single-group pool run.
func TestModelUnderSanitizer(t *testing.T) {
	m := loadModel(t)
	ref := openSession(t, m.g, map[string]string{})
	const workers, runs = 3, 4
	r := rand.New(rand.NewSource(1))
	jobs := makeJobs(t, ref, m.outputs, workers*runs, func() []Feed { return m.feeds(r, 1+r.Intn(24)) })
	for _, env := range multiStreamCases(t) {
		env["MSTREAM_HOST_STREAM_JITTER"] = "1"
		t.Run(fmt.Sprint(env), func(t *testing.T) {
			s := openSession(t, m.g, env)
			runJobs(t, s, m.outputs, jobs, workers, sameTensors)
			checkQuiescent(t, s)
		})
	}
}

// checkQuiescent: with no run in flight, every step buffer is back, no
// hold is left once the streams drain, and the allocators are consistent.
func checkQuiescent(t testing.TB, s *Session) {
	t.Helper()
	st := s.impl
	for _, g := range st.set.Groups() {
		for _, x := range g.Streams() {
			x.Synchronize()
		}
	}
	st.set.Holder.Drain()
	if n := st.set.Holder.Live(); n != 0 {
		t.Fatalf("%d holds live after the streams drained", n)
	}
	var consts uint64
	seen := map[any]bool{}
	for _, g := range st.set.Groups() {
		if !seen[g.Consts] {
			seen[g.Consts] = true
			_, b := g.Consts.Stats()
			consts += uint64(b)
		}
	}
	var inUse uint64
	seen = map[any]bool{}
	for _, g := range st.set.Groups() {
		if seen[g.Alloc] {
			continue
		}
		seen[g.Alloc] = true
		if err := g.Alloc.Check(); err != nil {
			t.Fatal(err)
		}
		// CUDA graphs (on by default on a GPU) keep their buffers until
		// the cache evicts them or closes: those are not a leak.
		inUse += g.Alloc.Stats().BytesInUse - graphHeld(st, g.Alloc)
		if h := g.HostAlloc.Stats(); h.BytesInUse != graphHeld(st, g.HostAlloc) && !seen[g.HostAlloc] {
			t.Fatalf("host allocator %s: %d bytes still in use, CUDA graphs hold %d", h.Name, h.BytesInUse, graphHeld(st, g.HostAlloc))
		}
		seen[g.HostAlloc] = true
	}
	if inUse != consts {
		t.Fatalf("%d bytes in use with nothing running, constants hold %d", inUse, consts)
	}
}

// graphHeld is what the session's CUDA graphs hold of a.
func graphHeld(st *state, a *bfc.Allocator) uint64 {
	if st.graphs == nil {
		return 0
	}
	return st.graphs.Held(a)
}

// hostEnv returns env with MSTREAM_DEVICE=cpu added when env does not set
// it, and the process's MSTREAM_CUDA_GRAPH when env does not set that.
func hostEnv(env map[string]string) map[string]string {
	out := map[string]string{"MSTREAM_DEVICE": "cpu"}
	// The process's MSTREAM_CUDA_GRAPH reaches every test session that
	// does not set it, so the GPU suite runs with graphs on (the default)
	// and off (bench/gpu/gputest.sh runs it both ways).
	if v, ok := os.LookupEnv("MSTREAM_CUDA_GRAPH"); ok {
		out["MSTREAM_CUDA_GRAPH"] = v
	}
	if _, ok := env["MSTREAM_DEVICE"]; ok {
		delete(out, "MSTREAM_DEVICE")
	}
	for k, v := range env {
		out[k] = v
	}
	return out
}
