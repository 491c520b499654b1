package cpu

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"google.golang.org/protobuf/proto"

	"mstream/graph"
	"mstream/kernels/kerneltest"
	"mstream/proto/tfpb"
	"mstream/status"
	"mstream/tensor"
)

// tfCase is one op call that mstream and real TF both run.
type tfCase struct {
	name  string
	op    string
	attrs kerneltest.Attrs
	in    []*tensor.Tensor
	lists map[int]int // input arg index -> tensors in that list
}

type tfResult struct {
	Out  []string `json:"out"`
	Code int      `json:"code"`
	Msg  string   `json:"msg"`
}

// runTF runs every case in one TF process (testdata/tf_ops.py); it skips
// the test where TensorFlow is not installed.
func runTF(t *testing.T, cases []tfCase) []tfResult {
	t.Helper()
	root, _ := filepath.Abs("../..")
	if _, err := os.Stat(filepath.Join(root, "build", "venv", ".tf-ok")); err != nil {
		t.Skip("skipped: no TensorFlow (build/venv/.tf-ok missing)")
	}
	type jcase struct {
		Op     string            `json:"op"`
		Inputs map[string]any    `json:"inputs"`
		Attrs  map[string]string `json:"attrs"`
	}
	enc := func(m proto.Message) string {
		b, err := proto.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		return base64.StdEncoding.EncodeToString(b)
	}
	var js []jcase
	for _, c := range cases {
		def := graph.LookupOpDef(c.op)
		jc := jcase{Op: c.op, Inputs: map[string]any{}, Attrs: map[string]string{}}
		k := 0
		for i, arg := range def.InputArg {
			if n, ok := c.lists[i]; ok {
				var l []string
				for _, in := range c.in[k : k+n] {
					l = append(l, enc(tensor.ToProto(in)))
				}
				jc.Inputs[arg.Name] = l
				k += n
				continue
			}
			jc.Inputs[arg.Name] = enc(tensor.ToProto(c.in[k]))
			k++
		}
		for name, v := range c.attrs {
			jc.Attrs[name] = enc(v)
		}
		js = append(js, jc)
	}
	path := filepath.Join(t.TempDir(), "cases.json")
	b, _ := json.Marshal(js)
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(filepath.Join(root, "build", "venv", "bin", "python"), "testdata/tf_ops.py", path)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("tf_ops.py: %v\n%s", err, stderr.String())
	}
	var res []tfResult
	if err := json.Unmarshal(out, &res); err != nil || len(res) != len(cases) {
		t.Fatalf("tf_ops.py: %d results for %d cases (%v)", len(res), len(cases), err)
	}
	return res
}

// compareWithTF runs each case in mstream and checks it against TF's
// result: the same outputs bit for bit (NaNs equal), or the same error
// code. It returns how many cases agreed.
func compareWithTF(t *testing.T, cases []tfCase) int {
	t.Helper()
	res := runTF(t, cases)
	ok := 0
	for i, c := range cases {
		name := c.name
		if name == "" {
			name = c.op
		}
		n, err := kerneltest.TryNodeFor(c.op, c.attrs, c.in, c.lists)
		var out []*tensor.Tensor
		if err == nil {
			out, err = cpuRunner{}.Run(n, c.in)
		}
		r := res[i]
		if r.Code != 0 {
			if got := status.CodeOf(err); int(got) != r.Code {
				t.Errorf("%s: mstream %v (%v); TF fails with code %d: %s", name, got, err, r.Code, r.Msg)
				continue
			}
			ok++
			continue
		}
		if err != nil {
			t.Errorf("%s: %v; TF runs it", name, err)
			continue
		}
		if len(out) != len(r.Out) {
			t.Errorf("%s: %d outputs, TF %d", name, len(out), len(r.Out))
			continue
		}
		same := true
		for j, s := range r.Out {
			raw, _ := base64.StdEncoding.DecodeString(s)
			var p tfpb.TensorProto
			if err := proto.Unmarshal(raw, &p); err != nil {
				t.Fatal(err)
			}
			want, err := tensor.FromProto(&p)
			if err != nil {
				t.Fatal(err)
			}
			if !bitEqual(out[j], want) {
				t.Errorf("%s: output %d: mstream %v %s, TF %v %s", name, j, out[j], show(out[j]), want, show(want))
				same = false
			}
		}
		if same {
			ok++
		}
	}
	return ok
}

func bitEqual(a, b *tensor.Tensor) bool {
	if a.DType != b.DType || !a.Shape.Equal(b.Shape) {
		return false
	}
	if a.DType == tensor.String {
		for i := range a.Strs {
			if !bytes.Equal(a.Strs[i], b.Strs[i]) {
				return false
			}
		}
		return len(a.Strs) == len(b.Strs)
	}
	if a.DType == tensor.Float {
		x, y := a.F32(), b.F32()
		for i := range x {
			if x[i] != y[i] && !(math.IsNaN(float64(x[i])) && math.IsNaN(float64(y[i]))) {
				return false
			}
		}
		return true
	}
	return bytes.Equal(a.Buf, b.Buf)
}

func show(t *tensor.Tensor) string {
	const max = 8
	switch t.DType {
	case tensor.String:
		s := t.Strs
		if len(s) > max {
			s = s[:max]
		}
		b, _ := json.Marshal(bytesToStrings(s))
		return string(b)
	case tensor.Int64:
		v := t.I64()
		if len(v) > max {
			v = v[:max]
		}
		b, _ := json.Marshal(v)
		return string(b)
	}
	return ""
}

func bytesToStrings(b [][]byte) []string {
	out := make([]string, len(b))
	for i, x := range b {
		out[i] = string(x)
	}
	return out
}
