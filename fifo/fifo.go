package fifo

// Queue is a FIFO of T (see the package doc). The zero value is empty
// and keeps any array it drains.
type Queue[T any] struct {
	items []T // items[head:] are queued
	head  int
	// Keep is the largest array, in items, a drained queue keeps for
	// reuse; 0 keeps any.
	Keep int
}

// compactAt is the least taken front Pop moves out while items remain.
const compactAt = 64

// Push queues v.
func (q *Queue[T]) Push(v T) { q.items = append(q.items, v) }

// Len is the number of items queued.
func (q *Queue[T]) Len() int { return len(q.items) - q.head }

// Cap is the capacity of the array the queue holds now.
func (q *Queue[T]) Cap() int { return cap(q.items) }

// Pop takes the oldest item; ok is false when the queue is empty.
func (q *Queue[T]) Pop() (v T, ok bool) {
	if q.head == len(q.items) {
		return v, false
	}
	v = q.items[q.head]
	var zero T
	q.items[q.head] = zero
	q.head++
	if n := q.Len(); n == 0 {
		q.items, q.head = q.items[:0], 0
		if q.Keep > 0 && cap(q.items) > q.Keep {
			q.items = nil
		}
	} else if q.head >= compactAt && q.head >= n {
		copy(q.items, q.items[q.head:])
		clear(q.items[n:])
		q.items, q.head = q.items[:n], 0
	}
	return v, true
}
