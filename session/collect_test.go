package session

import (
	"runtime"
	"runtime/metrics"
	"testing"
	"time"

	"mstream/graph"
	"mstream/tensor"
)

// liveHeap collects and returns the bytes the collection found live.
func liveHeap() uint64 {
	runtime.GC()
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// runAndClose opens a session on a graph of a constant and its negation
// (the constant goes to the host device's allocator, which takes the whole
// MSTREAM_HOST_MEMORY_MB cap as one region at its first allocation), runs
// it fetching each node in turn (a plan each, as the fuzz harness does),
// checks the answer and closes the session.
func runAndClose(t *testing.T, k int) {
	b := newGB(t)
	cv := tensor.New(tensor.Float, tensor.Shape{3})
	copy(cv.F32(), []float32{1, float32(k), 3})
	c := b.constant("c", cv)
	n := b.op("Neg", "n", map[string]any{"T": tensor.Float}, c)
	s, err := New(b.g, &Options{Env: hostEnv(map[string]string{"MSTREAM_HOST_MEMORY_MB": "256"})})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []graph.Output{c, n} {
		outs, _, err := s.Run(nil, nil, []graph.Output{f}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := outs[0].F32(); len(got) != 3 || got[1] != float32(k)*map[bool]float32{true: 1, false: -1}[f == c] {
			t.Fatalf("session %d: %s = %v", k, f.Node.Name, got)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestClosedSessionCollected: what a closed session held (here its 256 MiB
// region of host device memory) is garbage at the next collection once the
// goroutines it stopped have left, however many sessions came before it. A sync.Pool inside each plan kept
// the plan, and through it the session's groups and memory, alive until
// the collection after (the runtime lists every pool put to since the last
// collection): a fuzz run opening a session per input kept every session
// of a cycle, and its live heap grew to the 4 GiB RSS limit.
func TestClosedSessionCollected(t *testing.T) {
	const region = 256 << 20
	base := liveHeap()
	for k := range 4 {
		before := runtime.NumGoroutine()
		runAndClose(t, k)
		// The inter-op pool's workers leave on their own after Close
		// (TestCloseStopsIntraThreads), and one still running may hold
		// the session for a moment.
		for i := 0; i < 500 && runtime.NumGoroutine() > before; i++ {
			time.Sleep(10 * time.Millisecond)
		}
		if live := liveHeap(); live > base+region/2 {
			t.Fatalf("after closing session %d: %d MiB live, %d MiB before the first: its region was kept",
				k, live>>20, base>>20)
		}
	}
}
