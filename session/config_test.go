package session

import (
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"mstream/graph"
	"mstream/proto/tfpb"
	"mstream/status"
	"mstream/tensor"
)

// TestBadKnobsFailNewSession: every unparsable knob fails New with
// INVALID_ARGUMENT naming the variable, the value and what is accepted.
func TestBadKnobsFailNewSession(t *testing.T) {
	dir := t.TempDir()
	badLine := filepath.Join(dir, "badline.txt")
	os.WriteFile(badLine, []byte("0:a\nno colon here\n"), 0o644)
	badRe := filepath.Join(dir, "badre.txt")
	os.WriteFile(badRe, []byte("1:ok,x[\n"), 0o644)
	b := newGB(t)
	b.placeholder("x", tensor.Unknown)
	for _, tc := range []struct{ name, value, accepted string }{
		{"TF_GPU_STREAM_GROUP_COUNT", "abc", "comma list"},
		{"TF_GPU_STREAM_GROUP_COUNT", "0", "from 1 to 1024"},
		{"TF_GPU_STREAM_GROUP_COUNT", "-2", "from 1 to 1024"},
		{"TF_GPU_THREAD_MODE", "gpu_everything", "global, gpu_private, gpu_shared"},
		{"TF_STREAM_FROM_FILE", filepath.Join(dir, "missing.txt"), "cannot read"},
		{"TF_STREAM_FROM_FILE", badLine, "line 2"},
		{"TF_STREAM_FROM_FILE", badRe, "bad regex"},
		{"TF_GPU_STREAM_AWARE_BFC", "maybe", "true, false, 1, 0"},
		{"MSTREAM_GPU_SMALL_GEMM", "always", "auto, 0, 1"},
		{"MSTREAM_CCALL", "fast", "direct, cgo"},
	} {
		s, err := New(b.g, &Options{Env: map[string]string{tc.name: tc.value}})
		if s != nil || status.CodeOf(err) != status.InvalidArgument {
			t.Errorf("%s=%q: session %v, err %v; want INVALID_ARGUMENT", tc.name, tc.value, s, err)
			continue
		}
		if msg := err.Error(); !strings.Contains(msg, tc.name) || !strings.Contains(msg, tc.value) || !strings.Contains(msg, tc.accepted) {
			t.Errorf("%s=%q: %q must name the variable, the value and %q", tc.name, tc.value, msg, tc.accepted)
		}
	}
}

func TestConfigJSON(t *testing.T) {
	b := newGB(t)
	b.placeholder("x", tensor.Unknown)
	s, err := New(b.g, &Options{Env: map[string]string{"TF_GPU_STREAM_GROUP_COUNT": "3", "TF_GPU_STREAM_MERGE": "1"}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	js, err := s.ConfigJSON()
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Knobs []struct {
			Name, Value, Raw string
			Set              bool
		}
	}
	if err := json.Unmarshal(js, &doc); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, k := range doc.Knobs {
		got[k.Name] = k.Value
		if k.Name == "TF_GPU_STREAM_MERGE" && (!k.Set || k.Raw != "1") {
			t.Errorf("merge knob: %+v", k)
		}
	}
	if got["TF_GPU_STREAM_GROUP_COUNT"] != "3" || got["TF_GPU_STREAM_MERGE"] != "true" || got["TF_REDUCE_STREAM_WAIT"] != "true" {
		t.Fatalf("effective values wrong: %v", got)
	}
}

// TestCloseStopsIntraThreads: the session's intra-op pool, sized by
// intra_op_parallelism_threads, runs a kernel's chunks on its workers
// (outputs checked) and Close leaves none of its goroutines behind.
func TestCloseStopsIntraThreads(t *testing.T) {
	const n = 1 << 18 // AddV2's chunks: about 13 of 20000 elements
	b := newGB(t)
	x := b.placeholder("x", tensor.Unknown)
	y := b.relu("y", b.add("sum", x, x))
	xv := tensor.New(tensor.Float, tensor.Shape{n})
	in := xv.F32()
	for i := range in {
		in[i] = float32(i%1001) - 500.25
	}
	before := runtime.NumGoroutine()
	s, err := New(b.g, &Options{Env: hostEnv(nil),
		Config: &tfpb.ConfigProto{IntraOpParallelismThreads: 4, InterOpParallelismThreads: 1}})
	if err != nil {
		t.Fatal(err)
	}
	if during := runtime.NumGoroutine(); during < before+3 {
		t.Errorf("%d goroutines with the session open, %d before: not 3 intra-op workers", during, before)
	}
	for r := 0; r < 3; r++ {
		outs, _, err := s.Run(nil, []Feed{{x, xv}}, []graph.Output{y}, nil)
		if err != nil {
			t.Fatal(err)
		}
		for i, v := range outs[0].F32() {
			if want := max(in[i]+in[i], 0); v != want {
				t.Fatalf("run %d: y[%d] = %v, want %v", r, i, v, want)
			}
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// The inter-op pool's workers leave on their own after Close; the
	// intra-op workers are gone when Close returns.
	left := runtime.NumGoroutine()
	for i := 0; i < 500 && left > before; i++ {
		time.Sleep(10 * time.Millisecond)
		left = runtime.NumGoroutine()
	}
	if left > before {
		t.Errorf("%d goroutines after Close, %d before New", left, before)
	}
}
