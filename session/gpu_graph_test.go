package session

import (
	"fmt"
	"math/rand"
	"testing"
	"time"

	"mstream/device/cuda"
	"mstream/graph"
	"mstream/tensor"
)

// CUDA graph tests (MSTREAM_CUDA_GRAPH=1): every result is checked against
// the CPU run of the same feeds and against the GPU run without graphs,
// and the stats must show that graphs were captured and replayed (or, for
// an ineligible plan, that none was).

// graphEnv is env with the GPU and graphs on (or off).
func graphEnv(env map[string]string, on bool) map[string]string {
	out := map[string]string{"MSTREAM_DEVICE": "gpu", "MSTREAM_CUDA_GRAPH": "0"}
	if on {
		out["MSTREAM_CUDA_GRAPH"] = "1"
	}
	for k, v := range env {
		out[k] = v
	}
	return out
}

// gpuMLP is a 4-layer MLP (MatMul+BiasAdd+Relu, then Sigmoid) with a
// [batch, 64] feed, the shape of bench/gpu's MLP at small width.
func gpuMLP(t *testing.T) (*graph.Graph, graph.Output, []graph.Output) {
	b := newGB(t)
	x := b.placeholder("x", tensor.Unknown)
	r := rand.New(rand.NewSource(11))
	h := x
	dims := []int64{64, 256, 128, 32, 4}
	for i := 0; i+1 < len(dims); i++ {
		wv := make([]float32, dims[i]*dims[i+1])
		for j := range wv {
			wv[j] = (r.Float32() - 0.5) / 4
		}
		bv := make([]float32, dims[i+1])
		for j := range bv {
			bv[j] = r.Float32() - 0.5
		}
		w := b.constant(fmt.Sprintf("w%d", i), tensor.FromF32(tensor.Shape{dims[i], dims[i+1]}, wv))
		bias := b.constant(fmt.Sprintf("b%d", i), tensor.FromF32(tensor.Shape{dims[i+1]}, bv))
		h = b.op("BiasAdd", fmt.Sprintf("ba%d", i), nil, b.matmul(fmt.Sprintf("mm%d", i), h, w), bias)
		if i+2 < len(dims) {
			h = b.relu(fmt.Sprintf("relu%d", i), h)
		}
	}
	y := b.op("Sigmoid", "y", nil, h)
	return b.g, x, []graph.Output{y, h}
}

func mlpFeed(r *rand.Rand, x graph.Output, batch int) []Feed {
	v := make([]float32, batch*64)
	for i := range v {
		v[i] = r.Float32()*2 - 1
	}
	return []Feed{{x, tensor.FromF32(tensor.Shape{int64(batch), 64}, v)}}
}

// graphStatsOf returns the session's graph counters; it fails the test
// when graphs are off.
func graphStatsOf(t *testing.T, s *Session) (replays, captures, failures int64, live, ineligible int) {
	t.Helper()
	st := s.Stats().CUDAGraph
	if st == nil {
		t.Fatal("MS_SessionStats has no cuda_graph section with MSTREAM_CUDA_GRAPH=1")
	}
	return st.Replays, st.Captures, st.Failures, st.Live, st.Ineligible
}

// closeGraphsQuiescent releases the session's graphs and checks that every
// device and pinned buffer came back (only constants stay in use).
func closeGraphsQuiescent(t *testing.T, s *Session) {
	t.Helper()
	s.impl.closeGraphs()
	if _, _, _, live, _ := graphStatsOf(t, s); live != 0 {
		t.Fatalf("%d graph instances live after the cache closed", live)
	}
	checkQuiescent(t, s)
}

// TestGPUGraphModel runs the bundled model with graphs on and off under
// several group configurations, at batches that change between runs, and
// compares every output with the CPU's and the graph-less GPU run's.
func TestGPUGraphModel(t *testing.T) {
	wantGPU(t)
	m := loadModel(t)
	ref := cpuReference(t, m.g)
	r := rand.New(rand.NewSource(17))
	batches := []int{1, 8, 1, 8, 64, 1, 8, 64, 3, 1}
	for _, env := range []map[string]string{
		{"TF_GPU_STREAM_GROUP_COUNT": "1"},
		{"TF_GPU_STREAM_GROUP_COUNT": "2", "TF_GPU_STREAM_MERGE": "true"},
		{"TF_GPU_STREAM_GROUP_COUNT": "2", "TF_GPU_STREAM_AWARE_BFC": "true"},
		{"TF_GPU_STREAM_GROUP_COUNT": "2", "TF_PER_STREAM_HOST_ALLOCATOR": "true", "TF_SEGMENT_OWN_CONST": "true"},
		// Groups in two CUDA contexts: each group captures and replays in
		// its own context.
		{"TF_GPU_STREAM_GROUP_COUNT": "2", "TF_GPU_CONTEXT_COUNT": "2"},
		{"TF_GPU_STREAM_GROUP_COUNT": "3", "TF_GPU_CONTEXT_COUNT": "2", "TF_GPU_STREAM_AWARE_BFC": "true"},
	} {
		t.Run(fmt.Sprint(env), func(t *testing.T) {
			on := openSession(t, m.g, graphEnv(env, true))
			off := openSession(t, m.g, graphEnv(env, false))
			if off.Stats().CUDAGraph != nil {
				t.Error("MSTREAM_CUDA_GRAPH=0 session reports graph stats")
			}
			for rep := 0; rep < 3; rep++ {
				for i, batch := range batches {
					f := m.feeds(r, batch)
					want, _, err := ref.Run(nil, f, m.outputs, nil)
					if err != nil {
						t.Fatal(err)
					}
					got, _, err := on.Run(nil, f, m.outputs, nil)
					if err != nil {
						t.Fatalf("graphs on, run %d batch %d: %v", i, batch, err)
					}
					plain, _, err := off.Run(nil, f, m.outputs, nil)
					if err != nil {
						t.Fatalf("graphs off, run %d batch %d: %v", i, batch, err)
					}
					if err := closeTensors(got, want); err != nil {
						t.Errorf("graphs on vs CPU, rep %d run %d batch %d: %v", rep, i, batch, err)
					}
					if err := closeTensors(got, plain); err != nil {
						t.Errorf("graphs on vs off, rep %d run %d batch %d: %v", rep, i, batch, err)
					}
				}
			}
			replays, captures, failures, live, inel := graphStatsOf(t, on)
			if replays == 0 || captures == 0 || failures != 0 || live == 0 || inel != 0 {
				t.Errorf("stats: %d replays, %d captures, %d failures, %d live, %d ineligible plans; want replays, captures and live instances, no failure",
					replays, captures, failures, live, inel)
			}
			closeGraphsQuiescent(t, on)
			// The session goes on without graphs after they are released.
			f := m.feeds(r, 5)
			want, _, _ := ref.Run(nil, f, m.outputs, nil)
			got, _, err := on.Run(nil, f, m.outputs, nil)
			if err != nil {
				t.Fatal(err)
			}
			if err := closeTensors(got, want); err != nil {
				t.Errorf("after releasing the graphs: %v", err)
			}
		})
	}
}

// TestGPUGraphShapes feeds an MLP more batch sizes than a plan keeps graphs
// for on a group, so keys are evicted and captured again; every output
// must match the CPU's.
func TestGPUGraphShapes(t *testing.T) {
	wantGPU(t)
	g, x, fetches := gpuMLP(t)
	ref := cpuReference(t, g)
	s := openSession(t, g, graphEnv(nil, true))
	r := rand.New(rand.NewSource(19))
	for rep := 0; rep < 4; rep++ {
		for _, batch := range []int{1, 2, 3, 5, 8, 13, 1, 2} {
			f := mlpFeed(r, x, batch)
			want, _, err := ref.Run(nil, f, fetches, nil)
			if err != nil {
				t.Fatal(err)
			}
			for k := 0; k < 3; k++ {
				got, _, err := s.Run(nil, f, fetches, nil)
				if err != nil {
					t.Fatalf("batch %d: %v", batch, err)
				}
				if err := closeTensors(got, want); err != nil {
					t.Fatalf("rep %d batch %d run %d: %v", rep, batch, k, err)
				}
			}
		}
	}
	replays, captures, failures, live, _ := graphStatsOf(t, s)
	if replays == 0 || captures <= 4 || failures != 0 || live > 4 {
		t.Errorf("stats: %d replays, %d captures, %d failures, %d live; want replays, more than 4 captures (6 shapes, 4 kept), no failure, at most 4 live (one per kept key: the runs are sequential)",
			replays, captures, failures, live)
	}
	closeGraphsQuiescent(t, s)
}

// TestGPUGraphConcurrent runs 8 goroutines on 2 groups at once, each with
// its own feeds and a mix of batches, so instances of one key are used
// concurrently (each replay must see its own feeds).
func TestGPUGraphConcurrent(t *testing.T) {
	wantGPU(t)
	g, x, fetches := gpuMLP(t)
	ref := cpuReference(t, g)
	s := openSession(t, g, graphEnv(map[string]string{"TF_GPU_STREAM_GROUP_COUNT": "2"}, true))
	const workers, runs = 8, 40
	r := rand.New(rand.NewSource(23))
	jobs := makeJobs(t, ref, fetches, workers*runs, func() []Feed { return mlpFeed(r, x, []int{1, 4, 16}[r.Intn(3)]) })
	runJobs(t, s, fetches, jobs, workers, closeTensors)
	replays, captures, failures, _, _ := graphStatsOf(t, s)
	if replays == 0 || captures == 0 || failures != 0 {
		t.Errorf("stats: %d replays, %d captures, %d failures; want replays and captures, no failure", replays, captures, failures)
	}
	var served int64
	for _, gs := range s.Stats().Groups {
		served += gs.RunsCompleted
	}
	if served != workers*runs {
		t.Errorf("groups completed %d runs, want %d", served, workers*runs)
	}
	closeGraphsQuiescent(t, s)
}

// TestGPUGraphHostFallback: a plan with a node pinned to the CPU between
// GPU nodes cannot be replayed from a graph (the host reads a value that
// depends on the feeds); it must run correctly the ordinary way, and the
// stats must say it was ineligible.
func TestGPUGraphHostFallback(t *testing.T) {
	wantGPU(t)
	b := newGB(t)
	x := b.placeholder("x", tensor.Unknown)
	r := rand.New(rand.NewSource(29))
	wv := make([]float32, 64*32)
	for i := range wv {
		wv[i] = r.Float32() - 0.5
	}
	mm := b.matmul("mm", x, b.constant("w", tensor.FromF32(tensor.Shape{64, 32}, wv)))
	nb := b.g.NewBuilder("Relu", "cpu_relu")
	nb.AddInput(mm)
	nb.SetDevice("/device:CPU:0")
	n, err := nb.Finish()
	if err != nil {
		t.Fatal(err)
	}
	relu := n.Output(0)
	sum := b.add("sum", b.op("Sigmoid", "sig", nil, relu), relu)
	fetches := []graph.Output{sum, mm}
	ref := cpuReference(t, b.g)
	s := openSession(t, b.g, graphEnv(nil, true))
	i := 0
	jobs := makeJobs(t, ref, fetches, 6, func() []Feed {
		i++
		return mlpFeed(r, x, 1+(i-1)%3)
	})
	runJobs(t, s, fetches, jobs, 1, closeTensors)
	replays, captures, failures, live, inel := graphStatsOf(t, s)
	if replays != 0 || captures != 0 || failures != 0 || live != 0 || inel != 1 {
		t.Errorf("stats: %d replays, %d captures, %d failures, %d live, %d ineligible; want one ineligible plan and nothing else",
			replays, captures, failures, live, inel)
	}
	checkQuiescent(t, s)
}

// TestGPUDataShaped: Where and Unique pinned to the GPU (so placement must
// find their GPU kernels: strict placement fails without one) read their
// counts back mid-step. Their outputs must equal the CPU's at batches that
// change the counts, with graphs off and on; with graphs on, the plan is
// ineligible (a graph would freeze the count) and nothing is captured.
func TestGPUDataShaped(t *testing.T) {
	wantGPU(t)
	// The CPU reference runs the same graph without the pins (a CPU-only
	// session refuses a node pinned to a missing GPU, as TF's does).
	build := func(dev string) (*graph.Graph, graph.Output, []graph.Output) {
		b := newGB(t)
		x := b.placeholder("x", tensor.Unknown)
		// Exact ops only before Where and Unique (no TF32 GEMM), so the
		// devices agree on every value they select.
		xs := b.op("Mul", "xs", nil, x, b.constant("four", tensor.FromF32(tensor.Shape{}, []float32{4})))
		where := b.opOn("Where", "where", dev, b.relu("relu", xs))
		flat := b.op("Reshape", "flat", nil, b.op("Floor", "floor", nil, xs), b.constant("m1", tensor.FromI32(tensor.Shape{1}, []int32{-1})))
		uq := b.opOn("Unique", "unique", dev, flat)
		return b.g, x, []graph.Output{where, uq, {Node: uq.Node, Index: 1}}
	}
	g, x, fetches := build("/device:GPU:0")
	rg, rx, rfetches := build("")
	ref := cpuReference(t, rg)
	r := rand.New(rand.NewSource(37))
	for _, on := range []bool{false, true} {
		s := openSession(t, g, graphEnv(nil, on))
		for i := 0; i < 6; i++ {
			f := mlpFeed(r, x, 1+i%3*40)
			want, _, err := ref.Run(nil, []Feed{{rx, f[0].Tensor}}, rfetches, nil)
			if err != nil {
				t.Fatal(err)
			}
			got, _, err := s.Run(nil, f, fetches, nil)
			if err != nil {
				t.Fatalf("graphs %v, run %d: %v", on, i, err)
			}
			if err := closeTensors(got, want); err != nil {
				t.Errorf("graphs %v, run %d: %v", on, i, err)
			}
		}
		if on {
			replays, captures, failures, live, inel := graphStatsOf(t, s)
			if replays != 0 || captures != 0 || failures != 0 || live != 0 || inel != 1 {
				t.Errorf("stats: %d replays, %d captures, %d failures, %d live, %d ineligible; want one ineligible plan and nothing else",
					replays, captures, failures, live, inel)
			}
		}
		checkQuiescent(t, s)
	}
}

// TestGPUGraphCloseReleasesMemory: closing a session that holds graphs
// gives back the device memory they held (the graphs' buffers, the capture
// streams and their cuBLAS workspaces), as the driver counts it. A first
// session warms what stays loaded for the process (modules, cuBLAS).
func TestGPUGraphCloseReleasesMemory(t *testing.T) {
	wantGPU(t)
	g, x, fetches := gpuMLP(t)
	r := rand.New(rand.NewSource(31))
	lib, err := cuda.Load()
	if err != nil {
		t.Fatal(err)
	}
	devs, _ := lib.Devices()
	c, err := devs[0].Primary()
	if err != nil {
		t.Fatal(err)
	}
	session := func() {
		s, err := New(g, &Options{Env: graphEnv(map[string]string{"TF_GPU_STREAM_GROUP_COUNT": "2"}, true)})
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 20; i++ {
			if _, _, err := s.Run(nil, mlpFeed(r, x, 1+i%4), fetches, nil); err != nil {
				t.Fatal(err)
			}
		}
		if replays, _, _, live, _ := graphStatsOf(t, s); replays == 0 || live == 0 {
			t.Fatalf("no graph was replayed or held (%d replays, %d live)", replays, live)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		if live := s.impl.graphs.Stats().Live; live != 0 {
			t.Errorf("%d graph instances live after Close", live)
		}
	}
	session()
	free0, _, err := c.MemInfo()
	if err != nil {
		t.Fatal(err)
	}
	session()
	free1, _, err := c.MemInfo()
	if err != nil {
		t.Fatal(err)
	}
	// A leaked capture stream alone keeps a 32 MiB cuBLAS workspace.
	if free1+16<<20 < free0 {
		t.Errorf("device free memory %d MiB after the second session, %d MiB before it: graphs leaked memory",
			free1>>20, free0>>20)
	}
}

// TestCUDAGraphKnobNoGPU: with MSTREAM_CUDA_GRAPH=1 on the CPU the knob is
// accepted, reported, and changes nothing (no graph stats, same results).
func TestCUDAGraphKnobNoGPU(t *testing.T) {
	g, x, fetches := gpuMLP(t)
	ref := cpuReference(t, g)
	s := openSession(t, g, map[string]string{"MSTREAM_DEVICE": "cpu", "MSTREAM_CUDA_GRAPH": "1"})
	r := rand.New(rand.NewSource(37))
	for i := 0; i < 3; i++ {
		f := mlpFeed(r, x, 2)
		want, _, err := ref.Run(nil, f, fetches, nil)
		if err != nil {
			t.Fatal(err)
		}
		got, _, err := s.Run(nil, f, fetches, nil)
		if err != nil {
			t.Fatal(err)
		}
		for k := range got {
			if string(got[k].Buf) != string(want[k].Buf) {
				t.Fatalf("run %d output %d differs from the run without the knob", i, k)
			}
		}
	}
	st := s.Stats()
	if st.CUDAGraph != nil || st.Knobs["MSTREAM_CUDA_GRAPH"] != "true" {
		t.Errorf("stats: cuda_graph %+v, knob %q; want no graph section and the knob shown as true", st.CUDAGraph, st.Knobs["MSTREAM_CUDA_GRAPH"])
	}
	if _, err := New(g, &Options{Env: map[string]string{"MSTREAM_DEVICE": "cpu", "MSTREAM_CUDA_GRAPH": "maybe"}}); err == nil {
		t.Error("MSTREAM_CUDA_GRAPH=maybe accepted")
	}
}

// TestGPUGraphLaunchCost reports (it asserts no time) the time per Run
// from one thread at batch 1 with graphs off and on, for the bundled model
// and the MLP: the launch-bound case graphs are for. Outputs of the two
// sessions must agree.
func TestGPUGraphLaunchCost(t *testing.T) {
	wantGPU(t)
	m := loadModel(t)
	g, x, fetches := gpuMLP(t)
	r := rand.New(rand.NewSource(41))
	for _, tc := range []struct {
		name    string
		g       *graph.Graph
		feeds   []Feed
		fetches []graph.Output
	}{
		{"model_test", m.g, m.feeds(r, 1), m.outputs},
		{"mlp", g, mlpFeed(r, x, 1), fetches},
	} {
		var outs [2][]*tensor.Tensor
		var per [2]time.Duration
		for i, on := range []bool{false, true} {
			s := openSession(t, tc.g, graphEnv(nil, on))
			for k := 0; k < 50; k++ {
				if _, _, err := s.Run(nil, tc.feeds, tc.fetches, nil); err != nil {
					t.Fatal(err)
				}
			}
			const runs = 1000
			start := time.Now()
			for k := 0; k < runs; k++ {
				out, _, err := s.Run(nil, tc.feeds, tc.fetches, nil)
				if err != nil {
					t.Fatal(err)
				}
				outs[i] = out
			}
			per[i] = time.Since(start) / runs
			if on {
				if replays, _, _, _, _ := graphStatsOf(t, s); replays < runs {
					t.Errorf("%s: %d replays in %d runs", tc.name, replays, runs)
				}
			}
			s.Close()
		}
		if err := closeTensors(outs[1], outs[0]); err != nil {
			t.Errorf("%s: graphs on vs off: %v", tc.name, err)
		}
		t.Logf("%s batch 1, one thread: %.1f us/Run without graphs, %.1f us/Run with (x%.2f)",
			tc.name, float64(per[0].Nanoseconds())/1e3, float64(per[1].Nanoseconds())/1e3,
			float64(per[0])/float64(per[1]))
	}
}

// TestGPUGraphDroppedWithPlan: a graph that grows between Runs makes the
// session drop the plans of its older versions, and with them their CUDA
// graphs: the instances live stay those of the newest plan (two keys
// here, the batch sizes, one instance each from one client), however
// often it grows, and every buffer comes back at the end. Before, each
// dropped plan kept its graphs and their buffers until Close.
func TestGPUGraphDroppedWithPlan(t *testing.T) {
	wantGPU(t)
	g, x, fetches := gpuMLP(t)
	r := rand.New(rand.NewSource(37))
	s, err := New(g, &Options{Env: graphEnv(nil, true)})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for v := 0; v < 6; v++ {
		for i := 0; i < 6; i++ {
			if _, _, err := s.Run(nil, mlpFeed(r, x, 1+i%2), fetches, nil); err != nil {
				t.Fatal(err)
			}
		}
		replays, _, failures, live, _ := graphStatsOf(t, s)
		if replays == 0 || failures != 0 || live == 0 || live > 2 {
			t.Fatalf("version %d: %d replays, %d failures, %d instances live; want replays and the newest plan's instances only", v, replays, failures, live)
		}
		if n := s.Stats().CachedPlans; n != 1 {
			t.Fatalf("version %d: %d plans cached, want 1", v, n)
		}
		nb := g.NewBuilder("NoOp", fmt.Sprintf("grow%d", v)) // the graph grows
		if _, err := nb.Finish(); err != nil {
			t.Fatal(err)
		}
	}
	closeGraphsQuiescent(t, s)
}
