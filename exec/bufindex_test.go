package exec

import (
	"math/rand"
	"testing"
)

// TestBufIndex drives the tracker's index and a map with the same random
// inserts, replacements, deletes and resets, keys drawn from a few
// hundred chunk addresses (so runs collide and wrap), and checks that
// they agree on every key and on the count after every operation.
func TestBufIndex(t *testing.T) {
	for seed := int64(1); seed <= 20; seed++ {
		rng := rand.New(rand.NewSource(seed))
		var x bufIndex
		want := map[uintptr]*buffer{}
		keys := make([]uintptr, 50+rng.Intn(400))
		for i := range keys {
			keys[i] = uintptr(0x7f0000000000 + rng.Intn(1<<20)*256)
		}
		keys[0] = 0 // a key of no memory is a key like any other
		recs := make([]buffer, 8)
		for op := 0; op < 5000; op++ {
			k := keys[rng.Intn(len(keys))]
			switch r := rng.Intn(100); {
			case r < 50:
				b := &recs[rng.Intn(len(recs))]
				x.put(k, b)
				want[k] = b
			case r < 95:
				x.del(k)
				delete(want, k)
			case r < 96:
				x.reset()
				clear(want)
			}
			if x.n != len(want) {
				t.Fatalf("seed %d op %d: %d entries, want %d", seed, op, x.n, len(want))
			}
			if op%97 == 0 || op > 4900 {
				for _, k := range keys {
					if got := x.get(k); got != want[k] {
						t.Fatalf("seed %d op %d: key %#x gives %p, want %p", seed, op, k, got, want[k])
					}
				}
				seen := 0
				for _, s := range x.slots {
					if s.b != nil {
						seen++
						if want[s.k] != s.b {
							t.Fatalf("seed %d op %d: slot of %#x holds %p, want %p", seed, op, s.k, s.b, want[s.k])
						}
					}
				}
				if seen != len(want) {
					t.Fatalf("seed %d op %d: %d slots filled, want %d", seed, op, seen, len(want))
				}
			}
		}
	}
}
