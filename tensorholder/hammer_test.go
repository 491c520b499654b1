package tensorholder

import (
	"math/rand"
	"sync"
	"sync/atomic"
	"testing"

	"mstream/device"
)

// TestHammer: 64 goroutines hold buffers used on random subsets of four
// jittered streams, by events and by streams, at once. Every free must see
// every use of its buffer done, run exactly once, and once the streams
// have drained nothing may still be held.
func TestHammer(t *testing.T) {
	d, ss := jitterStreams(t, 4)
	var h Holder
	const goroutines, each = 64, 30
	var early, frees atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < goroutines; w++ {
		wg.Add(1)
		go func(seed int64) {
			defer wg.Done()
			r := rand.New(rand.NewSource(seed))
			for i := 0; i < each; i++ {
				var users []device.Stream
				for _, s := range ss {
					if r.Intn(2) == 0 || len(users) == 0 {
						users = append(users, s)
					}
				}
				var finished, freed atomic.Int32
				for _, s := range users {
					device.Enqueue(s, func() { finished.Add(1) })
				}
				n := int32(len(users))
				free := func() {
					if finished.Load() != n {
						early.Add(1)
					}
					if freed.Add(1) != 1 {
						t.Error("a buffer freed twice")
					}
					frees.Add(1)
				}
				if r.Intn(2) == 0 {
					h.HoldOn(free, users)
					continue
				}
				var evs []device.Event
				for _, s := range users {
					e, err := d.NewEvent()
					if err != nil {
						t.Error(err)
						return
					}
					s.Record(e)
					evs = append(evs, e)
				}
				h.Hold(free, evs)
			}
		}(int64(w))
	}
	wg.Wait()
	for _, s := range ss {
		s.Synchronize()
	}
	h.Drain()
	if early.Load() != 0 {
		t.Fatalf("%d buffers freed before their last use", early.Load())
	}
	if h.Live() != 0 || frees.Load() != goroutines*each || h.Freed() != goroutines*each {
		t.Fatalf("live %d, %d frees seen, %d counted; want 0 and %d", h.Live(), frees.Load(), h.Freed(), goroutines*each)
	}
}
