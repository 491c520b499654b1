package envcfg

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"mstream/status"
)

func env(kv ...string) func(string) (string, bool) {
	m := map[string]string{}
	for i := 0; i < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func TestDefaults(t *testing.T) {
	c, err := Load(env())
	if err != nil {
		t.Fatal(err)
	}
	if c.GroupCount(0) != 1 || c.GroupCount(3) != 1 || c.ThreadMode != ThreadGlobal || c.ThreadCount != 2 ||
		!c.ReduceStreamWait || c.StreamMerge || c.ContextCount != 1 || c.BFCExtendLimitMB != 0 || !c.Fusion || !c.CUDAGraph || c.CCall != "direct" {
		t.Fatalf("defaults wrong: %+v", c)
	}
}

func TestGood(t *testing.T) {
	dir := t.TempDir()
	f := filepath.Join(dir, "streams.txt")
	os.WriteFile(f, []byte("# comment\n1:dense_.*,embed\n\n2: top/.*\n"), 0o644)
	c, err := Load(env(
		"TF_GPU_STREAM_GROUP_COUNT", "2,4",
		"TF_GPU_STREAM_MERGE", "TRUE",
		"TF_REDUCE_STREAM_WAIT", "0",
		"TF_GPU_THREAD_MODE", "gpu_private",
		"TF_GPU_THREAD_COUNT", "3",
		"TF_BFC_EXTEND_LIMIT_MB", "64",
		"TF_GPU_STREAM_GROUP_SHARE_MEMORY_LIMIT", "true",
		"TF_STREAM_FROM_FILE", f,
		"TF_CPP_MIN_LOG_LEVEL", "2",
		"MSTREAM_FUSION", "0",
		"MSTREAM_CUDA_GRAPH", "0",
		"MSTREAM_GPU_SMALL_GEMM", "0",
		"MSTREAM_CCALL", "CGO",
	))
	if err != nil {
		t.Fatal(err)
	}
	if c.GroupCount(0) != 2 || c.GroupCount(1) != 4 || c.GroupCount(5) != 4 || !c.StreamMerge || c.ReduceStreamWait ||
		c.ThreadMode != ThreadGPUPrivate || c.ThreadCount != 3 || c.BFCExtendLimitMB != 64 || !c.ShareMemPool || c.MinLogLevel != 2 || c.Fusion || c.CUDAGraph || c.SmallGEMM != "0" || c.CCall != "cgo" {
		t.Fatalf("parsed wrong: %+v", c)
	}
	if len(c.StreamRules) != 2 || c.StreamRules[0].Group != 1 || len(c.StreamRules[0].Patterns) != 2 ||
		!c.StreamRules[0].Patterns[0].MatchString("dense_3") || c.StreamRules[0].Patterns[1].MatchString("embedding") ||
		!c.StreamRules[1].Patterns[0].MatchString("top/x") {
		t.Fatalf("rules wrong: %+v", c.StreamRules)
	}
}

func TestBad(t *testing.T) {
	dir := t.TempDir()
	badLine := filepath.Join(dir, "badline.txt")
	os.WriteFile(badLine, []byte("1:ok\nnot a rule\n"), 0o644)
	badRe := filepath.Join(dir, "badre.txt")
	os.WriteFile(badRe, []byte("0:a(b\n"), 0o644)
	badGroup := filepath.Join(dir, "badgroup.txt")
	os.WriteFile(badGroup, []byte("x:a\n"), 0o644)
	for _, tc := range []struct{ name, value, want string }{
		{"TF_GPU_STREAM_GROUP_COUNT", "abc", "comma list"},
		{"TF_GPU_STREAM_GROUP_COUNT", "0", "from 1"},
		{"TF_GPU_STREAM_GROUP_COUNT", "-2", "from 1"},
		{"TF_GPU_STREAM_GROUP_COUNT", "2,,3", "comma list"},
		{"TF_GPU_STREAM_MERGE", "yes", "true, false, 1, 0"},
		{"TF_GPU_THREAD_MODE", "private", "global, gpu_private, gpu_shared"},
		{"TF_GPU_THREAD_COUNT", "0", "from 1"},
		{"TF_GPU_CONTEXT_COUNT", "2.5", "from 1"},
		{"TF_BFC_EXTEND_LIMIT_MB", "-1", "MiB"},
		{"TF_CPP_MIN_LOG_LEVEL", "4", "0, 1, 2, 3"},
		{"TF_STREAM_FROM_FILE", filepath.Join(dir, "missing.txt"), "cannot read"},
		{"TF_STREAM_FROM_FILE", badLine, "line 2"},
		{"TF_STREAM_FROM_FILE", badRe, "bad regex"},
		{"TF_STREAM_FROM_FILE", badGroup, "group"},
		{"MSTREAM_DEVICE", "tpu", "cpu, gpu"},
		{"MSTREAM_CUDA_GRAPH", "on", "true, false, 1, 0"},
		{"MSTREAM_GPU_SMALL_GEMM", "always", "auto, 0, 1"},
		{"MSTREAM_CCALL", "fast", "direct, cgo"},
	} {
		_, err := Load(env(tc.name, tc.value))
		if status.CodeOf(err) != status.InvalidArgument {
			t.Errorf("%s=%q: got %v, want INVALID_ARGUMENT", tc.name, tc.value, err)
			continue
		}
		msg := err.Error()
		if !strings.Contains(msg, tc.name) || !strings.Contains(msg, tc.value) || !strings.Contains(msg, tc.want) {
			t.Errorf("%s=%q: message %q must name the variable, the value and %q", tc.name, tc.value, msg, tc.want)
		}
	}
}

func TestTableComplete(t *testing.T) {
	seen := map[string]bool{}
	for _, k := range Knobs {
		if seen[k.Name] || k.set == nil || k.Doc == "" || k.Type == "" {
			t.Errorf("knob %s is duplicated or incomplete", k.Name)
		}
		seen[k.Name] = true
	}
	if !strings.Contains(MarkdownTable(), "TF_GPU_STREAM_AWARE_BFC") {
		t.Error("markdown table misses a knob")
	}
}

func FuzzStreamRules(f *testing.F) {
	for _, s := range []string{"1:a,b\n2:c", "x", "0:(", "#c\n\n3: .*x.* , y", "1:", ":a", "99999999999:a"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		rules, err := ParseStreamRules([]byte(s))
		if err == nil {
			for _, r := range rules {
				if r.Group < 0 || len(r.Patterns) == 0 {
					t.Fatalf("accepted a bad rule %+v from %q", r, s)
				}
			}
		}
	})
}

func FuzzLoad(f *testing.F) {
	for _, s := range []string{"1", "2,3", "true", "gpu_shared", "-1", "x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		for _, k := range Knobs {
			if k.Type == "path" {
				continue
			}
			_, err := Load(env(k.Name, v))
			if err != nil && status.CodeOf(err) != status.InvalidArgument {
				t.Fatalf("%s=%q: code %v", k.Name, v, status.CodeOf(err))
			}
		}
	})
}

func TestEffective(t *testing.T) {
	c, err := Load(env("TF_GPU_STREAM_GROUP_COUNT", " 3 ", "TF_GPU_THREAD_MODE", "GPU_SHARED", "MSTREAM_HOST_MEMORY_MB", "64"))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]Effective{}
	for _, e := range c.Effective() {
		got[e.Name] = e
	}
	if len(got) != len(Knobs) {
		t.Fatalf("%d effective entries for %d knobs", len(got), len(Knobs))
	}
	for _, tc := range []struct {
		name, value string
		set         bool
	}{
		{"TF_GPU_STREAM_GROUP_COUNT", "3", true},
		{"TF_GPU_THREAD_MODE", "gpu_shared", true},
		{"MSTREAM_HOST_MEMORY_MB", "64", true},
		{"TF_REDUCE_STREAM_WAIT", "true", false},
		{"TF_GPU_THREAD_COUNT", "2", false},
	} {
		e := got[tc.name]
		if e.Value != tc.value || e.Set != tc.set {
			t.Errorf("%s: got %+v, want value %q set %v", tc.name, e, tc.value, tc.set)
		}
	}
	if got["TF_GPU_STREAM_GROUP_COUNT"].Raw != " 3 " || c.Values()["MSTREAM_HOST_MEMORY_MB"] != "64" || c.HostMemoryMB != 64 {
		t.Errorf("raw or values wrong: %+v", got["TF_GPU_STREAM_GROUP_COUNT"])
	}
}

func TestAliasAgreement(t *testing.T) {
	if c, err := Load(env("TF_GPU_STREAM_GROUP_SHARE_MEM_POOL", "true", "TF_GPU_STREAM_GROUP_SHARE_MEMORY_LIMIT", "1")); err != nil || !c.ShareMemPool {
		t.Fatalf("agreeing alias: %v", err)
	}
	_, err := Load(env("TF_GPU_STREAM_GROUP_SHARE_MEM_POOL", "true", "TF_GPU_STREAM_GROUP_SHARE_MEMORY_LIMIT", "false"))
	if status.CodeOf(err) != status.InvalidArgument || !strings.Contains(err.Error(), "TF_GPU_STREAM_GROUP_SHARE_MEMORY_LIMIT") {
		t.Fatalf("disagreeing alias: %v", err)
	}
	for _, v := range []string{"0", "x", "2000000"} {
		if _, err := Load(env("MSTREAM_HOST_MEMORY_MB", v)); status.CodeOf(err) != status.InvalidArgument {
			t.Errorf("MSTREAM_HOST_MEMORY_MB=%s: %v", v, err)
		}
	}
}
