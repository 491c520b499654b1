package exec

import (
	"sync"
	"testing"
)

// TestStash: a stash gives back what was put (each value once), keeps at
// most stashSlots values, and survives concurrent use (under -race).
func TestStash(t *testing.T) {
	var s stash[int]
	if v := s.get(); v != nil {
		t.Fatalf("empty stash gave %v", *v)
	}
	vals := make([]int, stashSlots+3)
	for i := range vals {
		vals[i] = i
		s.put(&vals[i])
	}
	seen := map[*int]bool{}
	for v := s.get(); v != nil; v = s.get() {
		if seen[v] {
			t.Fatalf("value %d given twice", *v)
		}
		seen[v] = true
	}
	if len(seen) != stashSlots {
		t.Fatalf("kept %d values, want %d", len(seen), stashSlots)
	}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			mine := g
			for range 1000 {
				v := s.get()
				if v == nil {
					v = &mine
				}
				s.put(v)
			}
		}()
	}
	wg.Wait()
	n := 0
	for s.get() != nil {
		n++
	}
	if n == 0 || n > stashSlots {
		t.Fatalf("after concurrent use the stash held %d values", n)
	}
}
