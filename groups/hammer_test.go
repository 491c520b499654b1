package groups

import (
	"math/rand"
	"runtime"
	"sync"
	"testing"
)

// TestHammerPick: 64 goroutines pick groups, hold them a random while and
// finish them, on a device with 4 groups. Runs in flight never go below
// one for a picked group, every run is counted once (completed or
// failed), every group serves a fair share, and nothing is in flight at
// the end.
func TestHammerPick(t *testing.T) {
	cfg := baseConfig(hostDev(64))
	cfg.Counts = []int{4}
	s := mustNew(t, cfg)
	const goroutines, each = 64, 100
	var wg sync.WaitGroup
	for w := 0; w < goroutines; w++ {
		wg.Add(1)
		go func(seed int64) {
			defer wg.Done()
			r := rand.New(rand.NewSource(seed))
			for i := 0; i < each; i++ {
				g := s.Pick(0)
				if g.InFlight() < 1 {
					t.Errorf("group %d picked with %d in flight", g.Index, g.InFlight())
				}
				for k := r.Intn(4); k > 0; k-- {
					runtime.Gosched()
				}
				g.Done(r.Intn(10) != 0)
			}
		}(int64(w))
	}
	wg.Wait()
	var total int64
	for _, st := range s.Stats() {
		if st.RunsInFlight != 0 {
			t.Errorf("group %d: %d in flight at the end", st.Index, st.RunsInFlight)
		}
		n := st.RunsCompleted + st.RunsFailed
		if n < goroutines*each/4/2 {
			t.Errorf("group %d served %d of %d runs: fewest-in-flight picking is not spreading", st.Index, n, goroutines*each)
		}
		total += n
	}
	if total != goroutines*each {
		t.Fatalf("%d runs counted, want %d", total, goroutines*each)
	}
}
