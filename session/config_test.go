package session

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

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
