package session

import (
	"errors"
	"math/rand"
	"slices"
	"testing"

	"mstream/graph"
	"mstream/tensor"
)

// TestRunToDelivers checks RunTo's deliver (the C API's way to its
// TF_Tensors) against Run on each host path: deliver sees what Run
// returns (a kernel's output, one read again downstream, a constant), the
// tensors are valid during the call, and deliver's error is the Run's,
// which leaves the session usable.
func TestRunToDelivers(t *testing.T) {
	for _, env := range []map[string]string{
		nil, // the pool step
		{"MSTREAM_HOST_STREAMS": "1"},
		{"TF_GPU_STREAM_GROUP_COUNT": "2"},
	} {
		b := newGB(t)
		x := b.placeholder("x", tensor.PartialShape{Known: true, Dims: []int64{5}})
		c := b.constant("c", tensor.FromF32(tensor.Shape{5}, []float32{1, -2, 3, -4, 5}))
		y := b.add("y", x, c)
		z := b.relu("z", y)
		s, err := New(b.g, &Options{Env: hostEnv(env)})
		if err != nil {
			t.Fatal(err)
		}
		rng := rand.New(rand.NewSource(int64(len(env))))
		fetches := []graph.Output{z, y, c}
		for round := range 3 {
			in := make([]float32, 5)
			for i := range in {
				in[i] = rng.Float32()*8 - 4
			}
			feeds := []Feed{{x, tensor.FromF32(tensor.Shape{5}, in)}}
			want, _, err := s.Run(nil, feeds, fetches, nil)
			if err != nil {
				t.Fatalf("env %v round %d: Run: %v", env, round, err)
			}
			var got [][]float32
			out, _, err := s.RunTo(nil, feeds, fetches, nil, func(ts []*tensor.Tensor) error {
				for _, t := range ts {
					got = append(got, slices.Clone(t.F32()))
				}
				return nil
			})
			if err != nil || out != nil {
				t.Fatalf("env %v round %d: RunTo: %v, %d tensors returned", env, round, err, len(out))
			}
			if len(got) != len(want) {
				t.Fatalf("env %v: delivered %d tensors, Run returned %d", env, len(got), len(want))
			}
			for i := range want {
				if !slices.Equal(got[i], want[i].F32()) {
					t.Errorf("env %v round %d fetch %d: delivered %v, Run returned %v", env, round, i, got[i], want[i].F32())
				}
			}
			bad := errors.New("the caller's copy failed")
			if _, _, err := s.RunTo(nil, feeds, fetches, nil, func([]*tensor.Tensor) error { return bad }); !errors.Is(err, bad) {
				t.Errorf("env %v: deliver's error came back as %v", env, err)
			}
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
}
