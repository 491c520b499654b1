package session

import (
	"fmt"
	"math/rand"
	"sync"
	"testing"

	"mstream/graph"
	"mstream/session/varcases"
	"mstream/tensor"
)

// TestTemporaryVariablesConcurrentRuns runs test/variables' TF-made
// accumulate_n chain (TemporaryVariable "acc", Assign, three AssignAdds,
// DestroyTemporaryVariable) from 16 goroutines at once, with one stream
// group and two: each Run has its own "acc" (the step's), so every sum is
// its own three inputs', never another Run's and never ALREADY_EXISTS.
// The inputs are small integers, so the float sums are exact in any order.
func TestTemporaryVariablesConcurrentRuns(t *testing.T) {
	for _, groups := range []string{"1", "2"} {
		t.Run("groups="+groups, func(t *testing.T) {
			g := varcases.Graph(t, "../test/variables/temporary_vars.pbtxt")
			s := openSession(t, g, map[string]string{"TF_GPU_STREAM_GROUP_COUNT": groups})
			in := []graph.Output{varcases.Output(t, g, "x:0"), varcases.Output(t, g, "y:0"), varcases.Output(t, g, "z:0")}
			sum := varcases.Output(t, g, "sum:0")
			var wg sync.WaitGroup
			errs := make(chan error, 16)
			for w := range 16 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					r := rand.New(rand.NewSource(int64(w)))
					for it := range 20 {
						want := make([]float32, 6)
						var feeds []Feed
						for _, o := range in {
							v := make([]float32, 6)
							for i := range v {
								v[i] = float32(r.Intn(1000) - 500)
								want[i] += v[i]
							}
							feeds = append(feeds, Feed{o, tensor.FromF32(tensor.Shape{2, 3}, v)})
						}
						got, _, err := s.Run(nil, feeds, []graph.Output{sum}, nil)
						if err != nil {
							errs <- fmt.Errorf("worker %d run %d: %w", w, it, err)
							return
						}
						for i, x := range got[0].F32() {
							if x != want[i] {
								errs <- fmt.Errorf("worker %d run %d: sum[%d] = %v, want %v", w, it, i, x, want[i])
								return
							}
						}
					}
				}()
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Error(err)
			}
		})
	}
}
