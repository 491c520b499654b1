package savedmodel

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

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
func smCases(t *testing.T) []smCase {
	raw, err := os.ReadFile(filepath.Join(dir, "cases.json"))
	if err != nil {
		t.Fatal(err)
	}
	var cs struct {
		Cases []smCase `json:"cases"`
	}
	if err := json.Unmarshal(raw, &cs); err != nil {
		t.Fatal(err)
	}
	if len(cs.Cases) == 0 {
		t.Fatal("no cases")
	}
	return cs.Cases
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
	case "string":
		v := make([]string, n)
		for i := range v {
			dec(i, &v[i])
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
// the asset path it was fed.
func TestLoadLikeTF(t *testing.T) {
	for _, c := range smCases(t) {
		t.Run(c.Name+"/"+c.Signature, func(t *testing.T) {
			g := graph.New()
			s, mg, err := Load(filepath.Join(dir, c.Name), c.Tags, g, env(), nil)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
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
