package exec

import (
	"context"
	"fmt"
	"math/rand"
	"sync"
	"testing"
	"time"

	"mstream/groups"
	"mstream/kernels"
)

// TestStreamAwareDeviceSteps runs a random device plan on the emulated
// device with one stream-aware allocator for every group (the g4a
// configuration, whose frees wait in per-stream caches: bfc.Options.StreamCache),
// one group and three (node-level assignment at random), three clients at
// once, under jitter. Every value must be right (a buffer handed to
// another stream before its last reader ran would be overwritten), the
// allocator's invariants must hold and every byte must come back.
func TestStreamAwareDeviceSteps(t *testing.T) {
	r := rand.New(rand.NewSource(rand.Int63()))
	rp := emuPlan(t, r, 3, 60)
	for _, groupsN := range []int{1, 3} {
		t.Run(fmt.Sprint("groups=", groupsN), func(t *testing.T) {
			set := emuGroups(t, emuDevice{emuHost(100 * time.Microsecond)}, groups.Config{Counts: []int{groupsN}, StreamAware: true})
			g := set.Groups()[0]
			sr := &Runtime{Streams: true, Groups: set.Groups(), ReduceWaits: true, Holder: &set.Holder, Intra: kernels.Serial{}}
			if groupsN > 1 {
				sr.Assign = make([]int, len(rp.plan.nodes))
				for i := range sr.Assign {
					sr.Assign[i] = r.Intn(groupsN)
				}
			}
			var wg sync.WaitGroup
			errs := make(chan error, 8)
			for w := 0; w < 3; w++ {
				wg.Add(1)
				go func(seed int64) {
					defer wg.Done()
					rr := rand.New(rand.NewSource(seed))
					for it := 0; it < 10; it++ {
						vals := []float32{float32(rr.Intn(100)), float32(rr.Intn(100)), float32(rr.Intn(100))}
						got, _, err := rp.plan.Run(context.Background(), sr, scalars(vals), Options{})
						if err == nil {
							err = check(got, rp.want(vals))
						}
						if err != nil {
							errs <- fmt.Errorf("step %d: %w", it, err)
							return
						}
					}
				}(r.Int63())
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Error(err)
			}
			set.Holder.Drain()
			for _, s := range g.Streams() {
				s.Synchronize()
			}
			if err := g.Alloc.Check(); err != nil {
				t.Fatal(err)
			}
			if n := g.Alloc.Stats().BytesInUse; n != 0 {
				t.Errorf("%d bytes still allocated after the steps", n)
			}
		})
	}
}
