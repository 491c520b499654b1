package session

import (
	"math/rand"
	"testing"

	"mstream/graph"
	"mstream/proto/tfpb"
	"mstream/tensor"
)

// TestRunAllocs counts the Go allocations of one warm Run of the bundled
// model (B=1, intra- and inter-op 2 as bench/cpu/vs_tf.sh runs it): its
// per-Run cost on the CPU is mostly fixed costs of this kind (issue 22).
// What is left: the fetch's copy, a few per kernel (MatMul's, the
// activations', a reshape's view), the Run's own lists. (Before the
// session kept a Runtime per group, the gathers read their indices in
// place and an output's shape lived in its buffer's record, a Run cost
// 61; before int32 indices and shapes were widened on the stack, the
// merged gathers' contexts pooled and a view's shape made with it, 35;
// before kernels.Context.Allocate copied the shape it hands the
// allocator, so that an output's shape stays on its kernel's stack,
// gathers read their indices in place and ConcatV2 its axis, 22.)
func TestRunAllocs(t *testing.T) {
	m := loadModel(t)
	cfg := &tfpb.ConfigProto{IntraOpParallelismThreads: 2, InterOpParallelismThreads: 2}
	s, err := New(m.g, &Options{Config: cfg, Env: hostEnv(nil)})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	feeds := m.feeds(rand.New(rand.NewSource(1)), 1)
	fetches := []graph.Output{m.outputs[0]}
	run := func() {
		if _, _, err := s.Run(nil, feeds, fetches, nil); err != nil {
			t.Fatal(err)
		}
	}
	for range 200 {
		run() // the plan is built and the cost estimates settle
	}
	allocs := testing.AllocsPerRun(100, run)
	t.Logf("%.1f allocations per Run", allocs)
	// Under the race detector the plan's pool drops step states at
	// random, each laid out again at a few allocations per node.
	if want := 13.0; allocs > want && !raceEnabled {
		t.Errorf("%.1f allocations per Run, want at most %v", allocs, want)
	}
	// TF_SessionRun's way: the fetches handed to deliver, which the C API
	// copies into TF_Tensors, rather than copied for the caller (a
	// tensor, its shape and bytes per fetch, and the list).
	deliver := func([]*tensor.Tensor) error { return nil }
	allocs = testing.AllocsPerRun(100, func() {
		if _, _, err := s.RunTo(nil, feeds, fetches, nil, deliver); err != nil {
			t.Fatal(err)
		}
	})
	t.Logf("%.1f allocations per RunTo", allocs)
	if want := 10.0; allocs > want && !raceEnabled {
		t.Errorf("%.1f allocations per RunTo, want at most %v", allocs, want)
	}
}
