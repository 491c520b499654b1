package fifo

import "testing"

// TestQueue: order through pushes interleaved with pops (across the
// compaction of the taken front), no allocation once an array is held,
// no unbounded growth for a queue that never drains, and Keep.
func TestQueue(t *testing.T) {
	var q Queue[int]
	next, want := 0, 0
	for round := range 50 {
		for range 7 + round%5 {
			q.Push(next)
			next++
		}
		for range 5 {
			v, ok := q.Pop()
			if !ok || v != want {
				t.Fatalf("round %d: pop gave %d, %v; want %d", round, v, ok, want)
			}
			want++
		}
	}
	if q.Cap() > 4*q.Len()+2*compactAt {
		t.Errorf("a queue holding %d items kept an array of %d", q.Len(), q.Cap())
	}
	for q.Len() > 0 {
		if v, _ := q.Pop(); v != want {
			t.Fatalf("drain: pop gave %d, want %d", v, want)
		}
		want++
	}
	if _, ok := q.Pop(); ok {
		t.Fatal("pop of an empty queue reported an item")
	}
	if n := testing.AllocsPerRun(20, func() {
		for i := range 100 {
			q.Push(i)
		}
		for q.Len() > 0 {
			q.Pop()
		}
	}); n != 0 {
		t.Errorf("refilling a drained queue: %v allocations, want none", n)
	}
	q.Keep = 16
	for i := range 100 {
		q.Push(i)
	}
	for q.Len() > 0 {
		q.Pop()
	}
	if q.Cap() != 0 {
		t.Errorf("Keep 16: a drained queue kept an array of %d", q.Cap())
	}
}
