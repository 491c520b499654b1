package cuda

import (
	"math/rand"
	"testing"
)

// TestPlanCacheLRU drives the bounded cache with random keys against a
// model that keeps keys in recency order: the cache holds exactly the
// model's newest max keys, and every value it drops is evicted once.
func TestPlanCacheLRU(t *testing.T) {
	r := rand.New(rand.NewSource(rand.Int63()))
	for _, max := range []int{1, 3, 16} {
		evicted := map[int]int{}
		c := newPlanCache[int, int](max, func(v int) { evicted[v]++ })
		var order []int // most recent last
		touch := func(k int) {
			for i, x := range order {
				if x == k {
					order = append(order[:i], order[i+1:]...)
					break
				}
			}
			order = append(order, k)
		}
		live := map[int]bool{}
		for step := 0; step < 2000; step++ {
			k := r.Intn(3 * max)
			if v, ok := c.get(k); ok {
				if !live[k] || v != k {
					t.Fatalf("max %d: get(%d) = %d, live %v", max, k, v, live[k])
				}
				touch(k)
				continue
			}
			if live[k] {
				t.Fatalf("max %d: key %d was dropped while among the %d most recent", max, k, max)
			}
			c.put(k, k)
			touch(k)
			live[k] = true
			if len(order) > max {
				old := order[0]
				order = order[1:]
				delete(live, old)
				if evicted[old] != 1 {
					t.Fatalf("max %d: least recent key %d evicted %d times", max, old, evicted[old])
				}
				evicted[old] = 0
			}
			if c.len() != len(live) {
				t.Fatalf("max %d: %d entries, want %d", max, c.len(), len(live))
			}
		}
		c.clear()
		for k := range live {
			if evicted[k] != 1 {
				t.Fatalf("max %d: clear evicted key %d %d times", max, k, evicted[k])
			}
		}
		if c.len() != 0 {
			t.Fatalf("max %d: %d entries after clear", max, c.len())
		}
	}
}
