package session

import (
	"fmt"
	"math/rand"
	"testing"

	"mstream/graph"
	"mstream/tensor"
)

// TestGPUPool: with MSTREAM_GPU_POOL on two GPUs (4,4 and 3,2 stream
// groups), the bundled model's Runs from 8 goroutines spread over both
// GPUs and every output equals the CPU's; each GPU holds the constants
// (once, with TF_SEGMENT_OWN_CONST); a node pinned to GPU:0 stays there
// while an unpinned one runs on both. TestPoolSpreads (session/pooltest)
// checks the same scheduling on fake GPUs in every make test.
func TestGPUPool(t *testing.T) {
	want2GPUs(t)
	m := loadModel(t)
	ref := cpuReference(t, m.g)
	r := rand.New(rand.NewSource(29))
	const workers, each = 8, 6
	jobs := makeJobs(t, ref, m.outputs, workers*each, func() []Feed { return m.feeds(r, 1+r.Intn(64)) })
	// CUDA graphs replay a key (plan, group, shapes) from its third Run:
	// two batch sizes make keys that repeat.
	fixed := makeJobs(t, ref, m.outputs, workers*each, func() []Feed { return m.feeds(r, 8+24*r.Intn(2)) })
	for _, env := range []map[string]string{
		{"TF_GPU_STREAM_GROUP_COUNT": "4,4", "TF_SEGMENT_OWN_CONST": "true"},
		{"TF_GPU_STREAM_GROUP_COUNT": "3,2", "TF_SEGMENT_OWN_CONST": "true"},
		{"TF_GPU_STREAM_GROUP_COUNT": "4,4", "MSTREAM_CUDA_GRAPH": "true"},
		{"TF_GPU_STREAM_GROUP_COUNT": "3,2", "TF_GPU_STREAM_MERGE": "true", "TF_GPU_STREAM_AWARE_BFC": "true"},
	} {
		env["MSTREAM_DEVICE"] = "gpu"
		env["MSTREAM_GPU_POOL"] = "true"
		t.Run(fmt.Sprint(env), func(t *testing.T) {
			s := openSession(t, m.g, env)
			jobs := jobs
			if env["MSTREAM_CUDA_GRAPH"] == "true" {
				jobs = fixed
			}
			for round := 0; round < 2; round++ {
				runJobs(t, s, m.outputs, jobs, workers, closeTensors)
			}
			st := s.Stats()
			if st.Pool == nil || len(st.Pool.Devices) != 2 {
				t.Fatalf("stats gpu_pool %+v, want both GPUs", st.Pool)
			}
			for _, d := range st.Pool.Devices {
				if st.Pool.Runs[d] == 0 {
					t.Errorf("%s served no Run of %d (per group %v)", d, 2*len(jobs), st.Pool.Groups)
				}
			}
			if st.Pool.Runs[gpu0]+st.Pool.Runs[gpu1] != int64(2*len(jobs)) {
				t.Errorf("pool runs %v, want %d in all", st.Pool.Runs, 2*len(jobs))
			}
			if st.ConstBytes[1] == 0 || st.ConstBytes[2] == 0 {
				t.Errorf("constant bytes per device %v: want the constants on both GPUs", st.ConstBytes)
			}
			if env["MSTREAM_CUDA_GRAPH"] == "true" {
				if g := st.CUDAGraph; g == nil || g.Replays == 0 {
					t.Errorf("cuda_graph %+v: want replays on the pool", g)
				}
				closeGraphsQuiescent(t, s) // the graphs hold their memory until released
				return
			}
			checkQuiescent(t, s)
		})
	}

	// Pinned nodes stay: a0 on GPU:0 whatever the pool picks for u.
	b := newGB(t)
	x := b.placeholder("x", tensor.Unknown)
	w := b.constant("w", randF32(r, tensor.Shape{32, 16}, 0.3))
	a0 := b.opOn("MatMul", "a0", "/device:GPU:0", x, w)
	u := b.op("Tanh", "u", nil, b.matmul("um", x, w))
	both := b.add("both", a0, u)
	ref = cpuReference(t, b.g)
	s := openSession(t, b.g, map[string]string{"MSTREAM_DEVICE": "gpu", "MSTREAM_GPU_POOL": "true", "TF_GPU_STREAM_GROUP_COUNT": "2,2"})
	for i := 0; i < 8; i++ {
		for _, fetch := range [][]graph.Output{{a0}, {u}, {both, u, a0}} {
			f := []Feed{{x, randF32(r, tensor.Shape{int64(1 + r.Intn(30)), 32}, 1)}}
			want, _, err := ref.Run(nil, f, fetch, nil)
			if err != nil {
				t.Fatal(err)
			}
			got, _, err := s.Run(nil, f, fetch, nil)
			if err != nil {
				t.Fatal(err)
			}
			if err := closeTensors(got, want); err != nil {
				t.Errorf("fetches %v: %v", fetch, err)
			}
		}
	}
	// Sequential picks alternate GPU:0, GPU:1, ...: u's Runs (even picks)
	// land on GPU:0, the mixed ones (odd picks) put u and both on GPU:1
	// and keep a0 on GPU:0. So GPU:0 takes part in all 24 Runs, GPU:1 in
	// the 8 mixed ones.
	st := s.Stats()
	if st.Pool == nil {
		t.Fatal("stats: no gpu_pool")
	}
	if r0, r1 := st.Pool.Runs[gpu0], st.Pool.Runs[gpu1]; r0 != 24 || r1 != 8 {
		t.Errorf("runs GPU:0 %d, GPU:1 %d: want 24 and 8", r0, r1)
	}
	checkQuiescent(t, s)
}

// TestGPUPoolVariables replays test/variables' TF sequences (assigns,
// reads, optimizer steps, tables) on a pool of two GPUs with 2,2 groups:
// consecutive Runs land on different GPUs, and every value must still be
// TF's (a Run that starts after an assign sees it), to the GPU's TF32
// tolerance.
func TestGPUPoolVariables(t *testing.T) {
	want2GPUs(t)
	runVarCases(t, []map[string]string{{"MSTREAM_DEVICE": "gpu", "MSTREAM_GPU_POOL": "true", "TF_GPU_STREAM_GROUP_COUNT": "2,2"}}, 2e-3)
}
