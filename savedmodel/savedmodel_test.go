package savedmodel

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"mstream/checkpoint"
	"mstream/graph"
	_ "mstream/kernels/cpu"
	"mstream/session"
	"mstream/status"
	"mstream/tensor"
)

// smTensor is one input or output of a signature in cases.json.
type smTensor struct {
	Name   string            `json:"name"`
	Tensor string            `json:"tensor"`
	DType  string            `json:"dtype"`
	Shape  []int64           `json:"shape"`
	Values []json.RawMessage `json:"values"`
}

// smCase is one signature run by TF 2.15's loader on one model.
type smCase struct {
	Name       string     `json:"name"`
	Tags       []string   `json:"tags"`
	Signature  string     `json:"signature"`
	Inputs     []smTensor `json:"inputs"`
	Outputs    []smTensor `json:"outputs"`
	Count      *float32   `json:"count"`
	SeenSuffix string     `json:"seen_suffix"`
}

// smCases reads test/savedmodel/cases.json: SavedModels written by TF
// 2.15 (tf.compat.v1.saved_model.Builder, tf.saved_model.save and Keras's
// model.export, by test/savedmodel/gen.py) and, per signature, what TF's
// loader computed with them.
func smCases(t *testing.T) []smCase { return readCases(t).Cases }

// tfFailed is a model of TF's test data that TF's C API cannot load, or
// one of whose signatures it cannot run, with TF's error.
type tfFailed struct {
	Name      string     `json:"name"`
	Tags      []string   `json:"tags"`
	Signature string     `json:"signature"`
	Code      int        `json:"code"`
	Message   string     `json:"message"`
	Inputs    []smTensor `json:"inputs"`
}

type casesFile struct {
	// Checkpoints are the variables/ bundles' contents as TF reads them.
	Checkpoints map[string][]smTensor `json:"checkpoints"`
	Cases       []smCase              `json:"cases"`
	TFFailed    []tfFailed            `json:"tf_failed"`
	TFTestdata  string                `json:"tf_testdata"`
}

func readCases(t *testing.T) casesFile {
	raw, err := os.ReadFile(filepath.Join(dir, "cases.json"))
	if err != nil {
		t.Fatal(err)
	}
	var cs casesFile
	if err := json.Unmarshal(raw, &cs); err != nil {
		t.Fatal(err)
	}
	if len(cs.Cases) == 0 {
		t.Fatal("no cases")
	}
	return cs
}

// value makes the tensor cases.json describes.
func (j smTensor) value() (*tensor.Tensor, error) {
	n := len(j.Values)
	var err error
	dec := func(i int, v any) {
		if e := json.Unmarshal(j.Values[i], v); e != nil && err == nil {
			err = fmt.Errorf("%s[%d]: %w", j.Name, i, e)
		}
	}
	var t *tensor.Tensor
	switch j.DType {
	case "float32":
		v := make([]float32, n)
		for i := range v {
			dec(i, &v[i])
		}
		t = tensor.FromF32(j.Shape, v)
	case "int64":
		v := make([]int64, n)
		for i := range v {
			dec(i, &v[i])
		}
		t = tensor.FromI64(j.Shape, v)
	case "int32":
		v := make([]int32, n)
		for i := range v {
			dec(i, &v[i])
		}
		t = tensor.FromI32(j.Shape, v)
	case "bool":
		v := make([]bool, n)
		for i := range v {
			dec(i, &v[i])
		}
		t = tensor.FromBool(j.Shape, v)
	case "float64":
		v := make([]float64, n)
		for i := range v {
			dec(i, &v[i])
		}
		t = tensor.FromF64(j.Shape, v)
	case "string":
		// Latin-1 text: one rune per byte (a serialized Example's too).
		v := make([]string, n)
		for i := range v {
			var s string
			dec(i, &s)
			b := make([]byte, 0, len(s))
			for _, r := range s {
				b = append(b, byte(r))
			}
			v[i] = string(b)
		}
		t = tensor.FromStrings(j.Shape, v)
	default:
		return nil, fmt.Errorf("%s: dtype %s", j.Name, j.DType)
	}
	return t, err
}

// compare says how got differs from TF's output want: float32 to 1e-5
// (TF's CPU kernels and ours sum in different orders), the rest exactly.
func compare(got *tensor.Tensor, want smTensor) error {
	w, err := want.value()
	if err != nil {
		return err
	}
	if got.DType != w.DType || !got.Shape.Equal(w.Shape) {
		return fmt.Errorf("%s: %v %v, TF %v %v", want.Name, got.DType, got.Shape, w.DType, w.Shape)
	}
	for i := 0; i < int(w.Shape.NumElements()); i++ {
		switch w.DType {
		case tensor.Float:
			g, x := float64(got.F32()[i]), float64(w.F32()[i])
			if math.Abs(g-x) > 1e-5+1e-5*math.Abs(x) {
				return fmt.Errorf("%s[%d] = %v, TF %v", want.Name, i, g, x)
			}
		case tensor.Double:
			g, x := got.F64()[i], w.F64()[i]
			if math.Abs(g-x) > 1e-12+1e-12*math.Abs(x) {
				return fmt.Errorf("%s[%d] = %v, TF %v", want.Name, i, g, x)
			}
		case tensor.Int64:
			if got.I64()[i] != w.I64()[i] {
				return fmt.Errorf("%s[%d] = %v, TF %v", want.Name, i, got.I64()[i], w.I64()[i])
			}
		case tensor.Int32:
			if got.I32()[i] != w.I32()[i] {
				return fmt.Errorf("%s[%d] = %v, TF %v", want.Name, i, got.I32()[i], w.I32()[i])
			}
		case tensor.Bool:
			if got.Bools()[i] != w.Bools()[i] {
				return fmt.Errorf("%s[%d] = %v, TF %v", want.Name, i, got.Bools()[i], w.Bools()[i])
			}
		case tensor.String:
			if string(got.Strs[i]) != string(w.Strs[i]) {
				return fmt.Errorf("%s[%d] = %q, TF %q", want.Name, i, got.Strs[i], w.Strs[i])
			}
		}
	}
	return nil
}

const dir = "../test/savedmodel"

// env keeps the tests on the host, where outputs equal TF's CPU results
// to 1e-5; session's TestVariablesOnGPU covers variables on a GPU.
func env() *session.Options {
	return &session.Options{Env: map[string]string{"MSTREAM_DEVICE": "cpu"}}
}

// TestLoadLikeTF loads each SavedModel, runs each signature TF ran and
// compares every output with TF's, then the legacy init op's effect and
// the asset path it was fed; with one stream group and with two (nodes
// spread over the host's streams, variables and tables shared).
func TestLoadLikeTF(t *testing.T) {
	for _, c := range smCases(t) {
		for _, groups := range []string{"1", "2"} {
			t.Run(c.Name+"/"+c.Signature+"/groups="+groups, func(t *testing.T) {
				opts := env()
				opts.Env["TF_GPU_STREAM_GROUP_COUNT"] = groups
				loadLikeTF(t, c, opts)
			})
		}
	}
}

func loadLikeTF(t *testing.T, c smCase, opts *session.Options) {
	g := graph.New()
	s, mg, err := Load(filepath.Join(dir, c.Name), c.Tags, g, opts, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if c.Signature == "" {
		return // a model without signatures (TF's test data): it loads
	}
	sig := mg.GetSignatureDef()[c.Signature]
	var feeds []session.Feed
	for _, in := range c.Inputs {
		if got := sig.GetInputs()[in.Name].GetName(); got != in.Tensor {
			t.Fatalf("input %s is %q; TF's %q", in.Name, got, in.Tensor)
		}
		o, err := output(g, in.Tensor)
		if err != nil {
			t.Fatal(err)
		}
		v, err := in.value()
		if err != nil {
			t.Fatal(err)
		}
		feeds = append(feeds, session.Feed{Output: o, Tensor: v})
	}
	var fetches []graph.Output
	for _, out := range c.Outputs {
		if got := sig.GetOutputs()[out.Name].GetName(); got != out.Tensor {
			t.Fatalf("output %s is %q; TF's %q", out.Name, got, out.Tensor)
		}
		o, err := output(g, out.Tensor)
		if err != nil {
			t.Fatal(err)
		}
		fetches = append(fetches, o)
	}
	got, _, err := s.Run(nil, feeds, fetches, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range c.Outputs {
		if err := compare(got[i], want); err != nil {
			t.Error(err)
		}
	}
	if c.Count != nil {
		cnt, _ := output(g, "count_out:0")
		seen, _ := output(g, "seen_out:0")
		v, _, err := s.Run(nil, nil, []graph.Output{cnt, seen}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if v[0].F32()[0] != *c.Count {
			t.Errorf("count %v after the init op, TF %v", v[0].F32()[0], *c.Count)
		}
		want := filepath.Join(dir, c.Name, "assets", c.SeenSuffix)
		if string(v[1].Strs[0]) != want {
			t.Errorf("asset fed as %q, want %q", v[1].Strs[0], want)
		}
	}
}

// TestTFTestdataFailures loads the models of TF's own test data that TF's
// C API refuses (tf_failed in cases.json; gen.py copies only the models TF
// loads, so these are read from the TF 2.15.0 module in the Go module
// cache): each must fail here too, with TF's code. TF's fuzzer-made
// models fail to load; bert1 and bert2 (no variables/ directory) load
// and fail on their first variable read.
func TestTFTestdataFailures(t *testing.T) {
	cs := readCases(t)
	if len(cs.TFFailed) == 0 {
		t.Fatal("no TF failures listed")
	}
	src := filepath.Join(modCache(t), cs.TFTestdata)
	for _, c := range cs.TFFailed {
		t.Run(c.Name+"/"+c.Signature, func(t *testing.T) {
			g := graph.New()
			s, mg, err := Load(filepath.Join(src, c.Name), c.Tags, g, env(), nil)
			if c.Signature == "" {
				if err == nil {
					s.Close()
					t.Fatalf("loaded; TF fails with code %d: %s", c.Code, c.Message)
				}
				if int(status.CodeOf(err)) != c.Code || !strings.Contains(err.Error(), strings.SplitN(c.Message, "\n", 2)[0]) {
					t.Errorf("%v; TF fails with code %d: %s", err, c.Code, c.Message)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			sig := mg.GetSignatureDef()[c.Signature]
			var feeds []session.Feed
			for _, in := range c.Inputs {
				o, err := output(g, sig.GetInputs()[in.Name].GetName())
				if err != nil {
					t.Fatal(err)
				}
				v, err := in.value()
				if err != nil {
					t.Fatal(err)
				}
				feeds = append(feeds, session.Feed{Output: o, Tensor: v})
			}
			var fetches []graph.Output
			for _, o := range sig.GetOutputs() {
				f, err := output(g, o.GetName())
				if err != nil {
					t.Fatal(err)
				}
				fetches = append(fetches, f)
			}
			_, _, err = s.Run(nil, feeds, fetches, nil)
			// Which missing variable a Run trips on first depends on the
			// order its nodes run in, in TF as here: ReadVariableOp's
			// FAILED_PRECONDITION and a resource lookup's NOT_FOUND are
			// both TF's errors for one.
			code := status.CodeOf(err)
			if err == nil || (int(code) != c.Code && code != status.FailedPrecondition) {
				t.Errorf("%v; TF fails with code %d: %s", err, c.Code, c.Message)
			}
		})
	}
}

// modCache is the Go module cache, with the TF 2.15.0 module downloaded
// into it when it is not there yet (as test/tfheaders does).
func modCache(t *testing.T) string {
	out, err := exec.Command("go", "env", "GOMODCACHE").Output()
	if err != nil {
		t.Fatalf("go env GOMODCACHE: %v", err)
	}
	dir := strings.TrimSpace(string(out))
	if _, err := os.Stat(filepath.Join(dir, tfModule)); err != nil {
		if out, err := exec.Command("go", "mod", "download", tfModule).CombinedOutput(); err != nil {
			t.Fatalf("go mod download %s: %v\n%s", tfModule, err, out)
		}
	}
	return dir
}

const tfModule = "github.com/tensorflow/tensorflow@v2.15.0+incompatible"

// TestCheckpointsLikeTF reads every model's variables/ bundle with
// package checkpoint and compares each tensor with what TF's reader gives,
// TF's test data's snappy-compressed one (OptimizerSlotVariableModule)
// included.
func TestCheckpointsLikeTF(t *testing.T) {
	cs := readCases(t)
	if len(cs.Checkpoints) == 0 {
		t.Fatal("no checkpoints")
	}
	for name, want := range cs.Checkpoints {
		t.Run(name, func(t *testing.T) {
			r, err := checkpoint.Open(filepath.Join(dir, name, "variables", "variables"))
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			for _, w := range want {
				got, err := r.Lookup(w.Name)
				if err != nil {
					t.Errorf("%s: %v", w.Name, err)
					continue
				}
				if err := compare(got, w); err != nil {
					t.Error(err)
				}
			}
		})
	}
}

func TestLoadErrors(t *testing.T) {
	_, _, err := Load(filepath.Join(dir, "no_such_model"), []string{"serve"}, graph.New(), env(), nil)
	if status.CodeOf(err) != status.NotFound || !strings.Contains(err.Error(), "no_such_model") {
		t.Errorf("missing directory: %v; want NOT_FOUND naming it", err)
	}
	_, _, err = Load(filepath.Join(dir, "mlp_resource"), []string{"serve"}, graph.New(), env(), nil)
	if status.CodeOf(err) != status.NotFound || !strings.Contains(err.Error(), "Could not find meta graph def matching supplied tags: { serve }") ||
		!strings.Contains(err.Error(), "{ gpu serve }") {
		t.Errorf("wrong tags: %v; want NOT_FOUND listing { gpu serve }", err)
	}
}
