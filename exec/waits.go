package exec

// Wait reduction (TF_REDUCE_STREAM_WAIT), one implementation for every
// scheduler that orders streams: by events on a device, by pending edges
// between stream ops on host streams (streams.go).
//
// Each stream a step uses has a vector clock: seq[a] counts the points of
// stream a that a consumer may wait for (one per op or batch of work
// launched on it), known[a][b] is how far stream a is known to follow
// stream b, directly or through others. A wait of a for point pt of b is
// left out when known[a][b] >= pt.seq already: an earlier wait covered it.
// A scheduler whose wait is for the point right after a producer (an
// event recorded then, or an edge from the producer op) keeps the producer
// stream's clock at that moment (snapshot) and merges it into the
// waiter's (learn); one that records at the time of the wait merges the
// producer stream's current clock (waited). Stream a's row (seq[a],
// known[a]) is written only by the launcher of stream a, so a device
// step's lanes tick, learn and test their own rows at once without a
// lock (device_frames.go).

// clocks are the vector clocks of a step's streams.
type clocks struct {
	seq   []int
	known [][]int
}

func newClocks(n int) *clocks {
	c := &clocks{seq: make([]int, n), known: make([][]int, n)}
	for a := range c.known {
		c.known[a] = make([]int, n)
	}
	return c
}

// point is a position on a stream: the work launched there up to seq
// (seq 0: nothing, which every stream follows).
type point struct{ stream, seq int }

// tick marks new work on stream a and returns its point.
func (c *clocks) tick(a int) point {
	c.seq[a]++
	return point{a, c.seq[a]}
}

// covers says whether stream a already follows pt.
func (c *clocks) covers(a int, pt point) bool {
	return pt.seq == 0 || pt.stream == a || c.known[a][pt.stream] >= pt.seq
}

// snapshot is stream a's clock now: what an event recorded on a now
// stands for.
func (c *clocks) snapshot(a int) []int {
	return c.snapshotTo(a, make([]int, len(c.seq)))
}

// snapshotTo is snapshot into s (len(seq) long), for a caller that
// keeps many.
func (c *clocks) snapshotTo(a int, s []int) []int {
	copy(s, c.known[a])
	s[a] = c.seq[a]
	return s
}

// learn records that stream a now waits for an event whose clock is snap.
func (c *clocks) learn(a int, snap []int) {
	k := c.known[a]
	for x, n := range snap {
		k[x] = max(k[x], n)
	}
}

// waited records that stream a now waits for everything launched on
// stream b so far, and so for what b was known to follow.
func (c *clocks) waited(a, b int) {
	k := c.known[a]
	k[b] = max(k[b], c.seq[b])
	for x, n := range c.known[b] {
		k[x] = max(k[x], n)
	}
}
