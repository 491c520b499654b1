package exec

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"mstream/kernels"
	"mstream/tensor"
)

// devLoop is loopPlan's while loop on one emulated GPU, its accumulator
// a chain of chain ExecTestGAdds, and an assignment over n groups: the
// counter and the loop condition on the home group, the accumulator's
// k-th add on group 1+k%(n-1) (with one group, all on it).
func devLoop(t testing.TB, n, chain int, counter, acc string, par int64) (*Plan, []int) {
	p, _, _ := loopPlanOn(t, Placement{GPUs: 1}, counter, acc, chain, par, true)
	if !p.OnGPU() || !p.Deadness() {
		t.Fatalf("plan on the device %v, with control flow %v", p.OnGPU(), p.Deadness())
	}
	if n == 1 {
		return p, nil
	}
	assign := make([]int, len(p.nodes))
	for i := range p.nodes {
		name := p.nodes[i].node.Name
		k := -1
		switch {
		case name == "acc_plus_1":
			k = 0
		case strings.HasPrefix(name, "acc_plus_1_"):
			fmt.Sscan(strings.TrimPrefix(name, "acc_plus_1_"), &k)
		}
		if k >= 0 {
			assign[i] = 1 + k%(n-1)
		}
	}
	return p, assign
}

// BenchmarkDeviceFrameStep times one device step of a while loop of 100
// iterations (a counter and an accumulator of three adds, 13 nodes an
// iteration, four of them kernels) on the emulated GPU: one group, and
// two and four with the accumulator's adds on the other groups (each
// iteration's values cross groups: an event and a wait per crossing).
//
//	go test ./exec -run '^$' -bench DeviceFrameStep -benchmem
func BenchmarkDeviceFrameStep(b *testing.B) {
	const iters = 100
	for _, n := range []int{1, 2, 4} {
		b.Run(fmt.Sprintf("groups=%d", n), func(b *testing.B) {
			p, assign := devLoop(b, n, 3, "ExecTestGAdd", "ExecTestGAdd", 10)
			set := emuSet(b, n, false, 0)
			sr := &Runtime{Streams: true, Groups: set.Groups(), Assign: assign, ReduceWaits: true, Holder: &set.Holder, Intra: kernels.Serial{}}
			feeds := []*tensor.Tensor{tensor.ScalarF32(3), tensor.ScalarF32(iters)}
			run := func() {
				out, _, err := p.Run(context.Background(), sr, feeds, Options{})
				if err != nil {
					b.Fatal(err)
				}
				if got := out[0].F32()[0]; got != 3+3*iters {
					b.Fatalf("got %v, want %v", got, 3+3*iters)
				}
			}
			for i := 0; i < 5; i++ {
				run()
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				run()
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/iters/1000, "us/iter")
			b.StopTimer()
			set.Holder.Drain()
		})
	}
}
