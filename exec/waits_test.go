package exec

import (
	"math/rand"
	"testing"
)

// TestClocksCovers checks the node-level GPU step's wait reduction (which
// runs without a GPU): after random ticks and waits on a few streams,
// covers(a, pt) must say exactly whether a chain of waits orders stream a
// after point pt, as a brute-force walk over the history finds.
func TestClocksCovers(t *testing.T) {
	type ev struct {
		wait bool
		a, b int // tick on a; or a waits for b
	}
	r := rand.New(rand.NewSource(5))
	for trial := 0; trial < 200; trial++ {
		n := 2 + r.Intn(3)
		c := newClocks(n)
		var hist []ev
		seqAt := func(a, t int) int { // ticks on a among the first t events
			k := 0
			for _, e := range hist[:t] {
				if !e.wait && e.a == a {
					k++
				}
			}
			return k
		}
		// follows says whether stream a, after the first t events, is
		// ordered after pt.
		var follows func(a, t int, pt point) bool
		follows = func(a, t int, pt point) bool {
			if pt.stream == a && seqAt(a, t) >= pt.seq {
				return true
			}
			for i := t - 1; i >= 0; i-- {
				if e := hist[i]; e.wait && e.a == a && follows(e.b, i, pt) {
					return true
				}
			}
			return false
		}
		for step := 0; step < 12; step++ {
			if r.Intn(2) == 0 {
				a := r.Intn(n)
				if pt := c.tick(a); pt.stream != a || pt.seq != seqAt(a, len(hist))+1 {
					t.Fatalf("tick(%d) = %+v", a, pt)
				}
				hist = append(hist, ev{a: a})
			} else {
				a, b := r.Intn(n), r.Intn(n)
				if a == b {
					continue
				}
				c.waited(a, b)
				hist = append(hist, ev{wait: true, a: a, b: b})
			}
			for a := 0; a < n; a++ {
				if !c.covers(a, point{}) {
					t.Fatalf("stream %d does not cover the empty point", a)
				}
				for b := 0; b < n; b++ {
					for s := 1; s <= c.seq[b]; s++ {
						pt := point{b, s}
						if got, want := c.covers(a, pt), follows(a, len(hist), pt); got != want {
							t.Fatalf("trial %d, history %+v: covers(%d, %+v) = %v, want %v", trial, hist, a, pt, got, want)
						}
					}
				}
			}
		}
	}
}
