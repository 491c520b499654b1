package savedmodel

import (
	"encoding/json"
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

// smCases is test/savedmodel/cases.json: SavedModels written by TF 2.15's
// tf.compat.v1.saved_model.Builder (test/savedmodel/gen.py) and what TF's
// loader computed with them.
type smCases struct {
	Cases []struct {
		Name  string   `json:"name"`
		Tags  []string `json:"tags"`
		Input struct {
			Tensor string    `json:"tensor"`
			Shape  []int64   `json:"shape"`
			Values []float32 `json:"values"`
		} `json:"input"`
		Output struct {
			Tensor string    `json:"tensor"`
			Shape  []int64   `json:"shape"`
			Values []float32 `json:"values"`
		} `json:"output"`
		Count      *float32 `json:"count"`
		SeenSuffix string   `json:"seen_suffix"`
	} `json:"cases"`
}

const dir = "../test/savedmodel"

// env keeps the tests on the host, where outputs equal TF's CPU results
// to 1e-5; session's TestVariablesOnGPU covers variables on a GPU.
func env() *session.Options {
	return &session.Options{Env: map[string]string{"MSTREAM_DEVICE": "cpu"}}
}

// TestLoadLikeTF loads each SavedModel, runs its serving signature and
// compares with TF's outputs, the legacy init op's effect and the asset
// path it was fed.
func TestLoadLikeTF(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(dir, "cases.json"))
	if err != nil {
		t.Fatal(err)
	}
	var cs smCases
	if err := json.Unmarshal(raw, &cs); err != nil {
		t.Fatal(err)
	}
	if len(cs.Cases) == 0 {
		t.Fatal("no cases")
	}
	for _, c := range cs.Cases {
		t.Run(c.Name, func(t *testing.T) {
			g := graph.New()
			s, mg, err := Load(filepath.Join(dir, c.Name), c.Tags, g, env(), nil)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			sig := mg.GetSignatureDef()["serving_default"]
			if sig.GetInputs()["x"].GetName() != c.Input.Tensor || sig.GetOutputs()["y"].GetName() != c.Output.Tensor {
				t.Fatalf("signature %v; TF's names %s, %s", sig, c.Input.Tensor, c.Output.Tensor)
			}
			in, err := output(g, c.Input.Tensor)
			if err != nil {
				t.Fatal(err)
			}
			out, err := output(g, c.Output.Tensor)
			if err != nil {
				t.Fatal(err)
			}
			got, _, err := s.Run(nil, []session.Feed{{Output: in, Tensor: tensor.FromF32(c.Input.Shape, c.Input.Values)}}, []graph.Output{out}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if !got[0].Shape.Equal(c.Output.Shape) {
				t.Fatalf("shape %v, TF %v", got[0].Shape, c.Output.Shape)
			}
			for i, w := range c.Output.Values {
				if d := math.Abs(float64(got[0].F32()[i] - w)); d > 1e-5 {
					t.Errorf("y[%d] = %v, TF %v", i, got[0].F32()[i], w)
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
