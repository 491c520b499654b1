package session

import (
	"math"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"mstream/graph"
	"mstream/session/varcases"
	"mstream/status"
	"mstream/tensor"
)

// TestVariablesAgainstTF replays each case's steps (lookup tables included)
// on one session, on the pool executor and on two stream groups, and
// compares every fetched value and every error (code and TF's message)
// with TF's.
func TestVariablesAgainstTF(t *testing.T) {
	runVarCases(t, []map[string]string{nil, {"TF_GPU_STREAM_GROUP_COUNT": "2"}}, 0)
}

// TestVariablesOnGPU is the same on a GPU session, one and two stream
// groups: resource and ref variables live in GPU memory (tables on the
// host, their values crossing to the GPU kernels that read them).
// Floats agree with TF's CPU results to the GPU's TF32 tolerance; an
// index out of range is no error on the GPU, as in TF's GPU kernels.
func TestVariablesOnGPU(t *testing.T) {
	wantGPU(t)
	runVarCases(t, []map[string]string{{"MSTREAM_DEVICE": "gpu"}, {"MSTREAM_DEVICE": "gpu", "TF_GPU_STREAM_GROUP_COUNT": "2"}}, 2e-3)
}

func runVarCases(t *testing.T, envs []map[string]string, tol float64) {
	dir := "../test/variables"
	for _, c := range varcases.Read(t, dir) {
		for _, env := range envs {
			t.Run(c.Name+"/"+env["MSTREAM_DEVICE"]+"/groups="+env["TF_GPU_STREAM_GROUP_COUNT"], func(t *testing.T) {
				g := varcases.Graph(t, filepath.Join(dir, c.Graph))
				s := openSession(t, g, env)
				tmp := t.TempDir()
				for k, r := range c.Runs {
					var feeds []Feed
					for name, v := range r.Feeds {
						feeds = append(feeds, Feed{varcases.Output(t, g, name+":0"), v.Tensor(t, dir, tmp)})
					}
					var fetches []graph.Output
					for _, f := range r.Fetches {
						fetches = append(fetches, varcases.Output(t, g, f))
					}
					var targets []*graph.Node
					for _, n := range r.Targets {
						targets = append(targets, g.Lookup(n))
					}
					got, _, err := s.Run(nil, feeds, fetches, targets)
					if r.Error != nil {
						if err == nil && env["MSTREAM_DEVICE"] == "gpu" && strings.Contains(r.Error.Message, " is not in [0, ") {
							// An index out of range: TF's GPU kernels of
							// ResourceGather and ResourceScatter* skip it (the
							// indices are in device memory), as ours do; TF's
							// answer here is its CPU kernels'.
							continue
						}
						if err == nil || int(status.CodeOf(err)) != r.Error.Code || !strings.Contains(err.Error(), r.Error.Message) {
							t.Errorf("run %d: %v; TF fails with code %d: %s", k, err, r.Error.Code, r.Error.Message)
						}
						continue
					}
					if err != nil {
						t.Fatalf("run %d: %v", k, err)
					}
					for j, w := range r.Want {
						checkVar(t, k, r.Fetches[j], got[j], w, tol)
					}
				}
			})
		}
	}
}

func checkVar(t *testing.T, run int, name string, got *tensor.Tensor, want varcases.Value, tol float64) {
	t.Helper()
	if want.DType == "string" {
		if got.DType != tensor.String || len(got.Strs) != len(want.Strings) {
			t.Errorf("run %d %s: %v, TF %v", run, name, got, want.Strings)
		}
		return
	}
	if got.DType == tensor.Int64 {
		if !got.Shape.Equal(tensor.Shape(want.Shape)) {
			t.Errorf("run %d %s: shape %v, TF %v", run, name, got.Shape, want.Shape)
			return
		}
		for i, x := range got.I64() {
			if float64(x) != want.Values[i] {
				t.Errorf("run %d %s[%d] = %v, TF %v", run, name, i, x, want.Values[i])
			}
		}
		return
	}
	if got.DType == tensor.Bool {
		if !got.Shape.Equal(tensor.Shape(want.Shape)) {
			t.Errorf("run %d %s: shape %v, TF %v", run, name, got.Shape, want.Shape)
			return
		}
		for i, b := range got.Bools() {
			if b != (want.Values[i] != 0) {
				t.Errorf("run %d %s[%d] = %v, TF %v", run, name, i, b, want.Values[i])
			}
		}
		return
	}
	if tol > 0 && got.DType == tensor.Float && got.Shape.Equal(tensor.Shape(want.Shape)) {
		for i, w := range want.Values {
			if d := math.Abs(float64(got.F32()[i]) - w); d > tol*math.Max(1, math.Abs(w)) {
				t.Errorf("run %d %s[%d] = %v, TF %v", run, name, i, got.F32()[i], w)
			}
		}
		return
	}
	checkCF(t, run, name, got, cfValue{DType: want.DType, Shape: want.Shape, Values: want.Values})
}

// TestVariableReadsNeverTorn runs 32 readers of a resource variable while
// another goroutine assigns it whole tensors whose elements are all equal:
// every value read must have all elements equal and be one that was
// assigned (a torn read would mix two). Run it with -race.
func TestVariableReadsNeverTorn(t *testing.T) {
	g := varcases.Graph(t, "../test/variables/resource_vars.pbtxt")
	s := openSession(t, g, nil)
	x := varcases.Output(t, g, "x:0")
	assign := g.Lookup("assign")
	read := varcases.Output(t, g, "value:0")
	set := func(v float32) {
		f := make([]float32, 10)
		for i := range f {
			f[i] = v
		}
		if _, _, err := s.Run(nil, []Feed{{x, tensor.FromF32(tensor.Shape{5, 2}, f)}}, nil, []*graph.Node{assign}); err != nil {
			t.Error(err)
		}
	}
	set(0)
	const writes = 200
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for r := 0; r < 32; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			last := float32(-1)
			for {
				select {
				case <-stop:
					return
				default:
				}
				out, _, err := s.Run(nil, nil, []graph.Output{read}, nil)
				if err != nil {
					t.Error(err)
					return
				}
				f := out[0].F32()
				for _, v := range f {
					if v != f[0] || v < 0 || v >= writes || v != float32(math.Trunc(float64(v))) {
						t.Errorf("torn or unassigned read: %v", f)
						return
					}
				}
				// Assigns are 0, 1, 2, ... in order: a later Run never
				// sees an older value.
				if f[0] < last {
					t.Errorf("read %v after %v", f[0], last)
					return
				}
				last = f[0]
			}
		}()
	}
	for i := 1; i < writes; i++ {
		set(float32(i))
	}
	close(stop)
	wg.Wait()
	out, _, err := s.Run(nil, nil, []graph.Output{read}, nil)
	if err != nil || out[0].F32()[0] != writes-1 {
		t.Fatalf("after the writes: %v %v", out, err)
	}
}
