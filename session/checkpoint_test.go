package session

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"mstream/graph"
	"mstream/proto/tfpb"
	"mstream/status"
	"mstream/tensor"
)

// tfStep is one Run of testdata/tf_saverestore.py and TF's result.
type tfStep struct {
	Fetch   []string `json:"fetch"`
	Targets []string `json:"targets"`
	Out     []struct {
		DType int32           `json:"dtype"`
		Shape []int64         `json:"shape"`
		Data  json.RawMessage `json:"data"`
	} `json:"out"`
	Code int    `json:"code"`
	Msg  string `json:"msg"`
}

// TestSaveRestoreLikeTF runs a graph of SaveV2, RestoreV2 (whole, sliced,
// across a merge, and every error TF reports: missing key, dtype mismatch,
// missing checkpoint, bad and mismatched specs), MergeV2Checkpoints and
// ShardedFilename/Filespec built and run by real TF 2.15, and compares
// mstream's run step by step: the same outputs or the same error code, and
// checkpoint files byte-identical to the ones TF's run wrote.
func TestSaveRestoreLikeTF(t *testing.T) {
	root, _ := filepath.Abs("..")
	if _, err := os.Stat(filepath.Join(root, "build", "venv", ".tf-ok")); err != nil {
		t.Skip("skipped: no TensorFlow (build/venv/.tf-ok missing)")
	}
	dir := t.TempDir()
	cmd := exec.Command(filepath.Join(root, "build", "venv", "bin", "python"), "testdata/tf_saverestore.py", dir)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	b, err := cmd.Output()
	if err != nil {
		t.Fatalf("tf_saverestore.py: %v\n%s", err, stderr.String())
	}
	var tf struct {
		Feeds map[string]string `json:"feeds"`
		Steps []tfStep          `json:"steps"`
	}
	if err := json.Unmarshal(b, &tf); err != nil {
		t.Fatal(err)
	}
	gdb, err := os.ReadFile(filepath.Join(dir, "graph.pb"))
	if err != nil {
		t.Fatal(err)
	}
	var gd tfpb.GraphDef
	if err := proto.Unmarshal(gdb, &gd); err != nil {
		t.Fatal(err)
	}
	g := graph.New()
	if _, err := g.Import(&gd, nil); err != nil {
		t.Fatal(err)
	}
	s, err := New(g, &Options{Env: map[string]string{}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ms := filepath.Join(dir, "ms")
	if err := os.Mkdir(ms, 0o755); err != nil {
		t.Fatal(err)
	}
	var feeds []Feed
	for name, v := range tf.Feeds {
		feeds = append(feeds, Feed{Output: g.Lookup(name).Output(0), Tensor: tensor.FromStrings(nil, []string{strings.ReplaceAll(v, "{dir}", ms)})})
	}
	compared := 0
	for _, st := range tf.Steps {
		var fetches []graph.Output
		for _, f := range st.Fetch {
			name, idx, _ := strings.Cut(f, ":")
			fetches = append(fetches, g.Lookup(name).Output(int(idx[0]-'0')))
		}
		var targets []*graph.Node
		for _, n := range st.Targets {
			targets = append(targets, g.Lookup(n))
		}
		what := strings.Join(append(st.Fetch, st.Targets...), ",")
		out, _, err := s.Run(nil, feeds, fetches, targets)
		if st.Code != 0 {
			if got := status.CodeOf(err); int(got) != st.Code {
				t.Errorf("%s: mstream %v (%v), TF code %d: %s", what, got, err, st.Code, st.Msg)
			} else {
				t.Logf("%s: %v, as TF", what, err)
			}
			compared++
			continue
		}
		if err != nil {
			t.Errorf("%s: %v (TF runs it)", what, err)
			continue
		}
		for i, o := range st.Out {
			want := tensor.New(tensor.DType(o.DType), o.Shape)
			if want.DType == tensor.String {
				var strs []string
				json.Unmarshal(o.Data, &strs)
				for j, x := range strs {
					raw, _ := base64.StdEncoding.DecodeString(x)
					// Paths TF's run made name its own directory.
					want.Strs[j] = bytes.ReplaceAll(raw, []byte(filepath.Join(dir, "tf")), []byte(ms))
				}
			} else {
				var x string
				json.Unmarshal(o.Data, &x)
				raw, _ := base64.StdEncoding.DecodeString(x)
				copy(want.Buf, raw)
			}
			got := out[i]
			same := got.DType == want.DType && got.Shape.Equal(want.Shape)
			if same && want.DType == tensor.String {
				for j := range want.Strs {
					same = same && bytes.Equal(got.Strs[j], want.Strs[j])
				}
			} else if same {
				same = bytes.Equal(got.Buf, want.Buf)
			}
			if !same {
				t.Errorf("%s output %d: mstream %v, TF %v", what, i, got, want)
			}
			compared++
		}
	}
	// The checkpoints TF's run wrote and mstream's are the same bytes.
	tfFiles, _ := filepath.Glob(filepath.Join(dir, "tf", "*"))
	for _, f := range tfFiles {
		if strings.Contains(f, "tempstate") {
			continue // TF leaves the temporary file of its failed save
		}
		a, _ := os.ReadFile(f)
		b, err := os.ReadFile(filepath.Join(ms, filepath.Base(f)))
		if err != nil || !bytes.Equal(a, b) {
			t.Errorf("%s: mstream's file differs from TF's (%v)", filepath.Base(f), err)
		}
		compared++
	}
	if left, _ := filepath.Glob(filepath.Join(ms, "*tempstate*")); len(left) > 0 {
		t.Errorf("mstream left temporary files: %v", left)
	}
	if compared < 30 {
		t.Errorf("only %d comparisons", compared)
	}
	t.Logf("%d outputs, errors and files compared with TF", compared)
}
