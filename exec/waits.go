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

// The static layout of a step's streams: one walk for both strategies.
// A step whose items are known before it starts (a plan without frames)
// is laid out once per plan and runtime by layWaits: the items in launch
// order, each on a stream, and for each the waits on other streams that
// the reduction keeps. The host streams run that layout (driveStreams:
// a kept wait is a pending edge between two stream ops), the device
// launches it (launchLanes: an event recorded after each producer that
// someone waits for, a device wait per kept wait); each adds its own
// copies (host: a feed or fetch copy is an item on the H2D or D2H
// stream; device: the feeds' copies are one item on the home compute
// stream, the fetches go out after the join). Both take their nodes in
// laneOrder, so over one assignment the waits between nodes are the
// same on both (TestHostDeviceLayoutsAgree).

// layItem is one item of a step laid out by layWaits. stream is the
// stream it runs or launches on (-1: none, a constant, whose value is
// there before the step, or a string feed); tick says it is a point of
// that stream (its work is on the stream, so an item of another stream
// can wait for it): a host kernel between a device's launches is on its
// lane's stream, which waits for what it reads, but launches nothing
// there. prods are the items it runs after (data and control).
type layItem struct {
	stream int32
	tick   bool
	prods  []int32
}

// waitLayout is layWaits' answer: per item, the producers its stream
// waits for (waits, in the order the item names them) and whether some
// item waits for it (rec: it records an event or has waiters); per
// stream, the waits kept and those left out as implied by earlier ones.
// clk, at and snap are the clocks after the walk, for a join.
type waitLayout struct {
	waits         [][]int32
	rec           []bool
	kept, skipped []int
	reduce        bool
	clk           *clocks
	at            []point
}

// layWaits lays out items (in launch order, each after its prods) over
// n streams. An item on a stream waits for each producer that is a
// point of another stream unless the reduction (reduce) finds the
// stream already follows a later point of it. A producer that is no
// point (a constant, a host kernel between launches) stands for the
// points it ran after, at most the latest one of each stream (via): an
// item that is a point waits for those; one that is not passes them on
// to its own successors (it reads nothing of theirs, and what it
// produces is ordered after them through it).
func layWaits(items []layItem, n int, reduce bool) *waitLayout {
	w := &waitLayout{waits: make([][]int32, len(items)), rec: make([]bool, len(items)),
		kept: make([]int, n), skipped: make([]int, n), reduce: reduce, clk: newClocks(n), at: make([]point, len(items))}
	clk := w.clk
	snaps := make([]int, len(items)*n) // item i's clock after it: snaps[i*n:][:n]
	snap := func(i int32) []int { return snaps[int(i)*n:][:n] }
	via := make([][]int32, len(items))
	for i := range items {
		it := &items[i]
		a := int(it.stream)
		wait := func(pr int32) {
			pt := w.at[pr]
			if a < 0 || pt.seq == 0 || pt.stream == a {
				return
			}
			if reduce && clk.covers(a, pt) {
				w.skipped[a]++
				return
			}
			w.waits[i] = append(w.waits[i], pr)
			w.rec[pr] = true
			w.kept[a]++
			clk.learn(a, snap(pr))
		}
		for _, pr := range it.prods {
			if items[pr].tick {
				wait(pr)
				if !it.tick {
					via[i] = latest(via[i], pr, w.at)
				}
				continue
			}
			for _, d := range via[pr] {
				if it.tick {
					wait(d)
				} else {
					via[i] = latest(via[i], d, w.at)
				}
			}
		}
		if it.tick {
			w.at[i] = clk.tick(a)
			clk.snapshotTo(a, snap(int32(i)))
		}
	}
	return w
}

// join makes stream f wait for every other stream's last point, unless
// f already follows it, for a step's end; it returns the streams f
// waits for.
func (w *waitLayout) join(f int) []int {
	var join []int
	for b, seq := range w.clk.seq {
		if b == f || seq == 0 {
			continue
		}
		if w.reduce && w.clk.covers(f, point{b, seq}) {
			w.skipped[f]++
			continue
		}
		join = append(join, b)
		w.kept[f]++
		w.clk.waited(f, b)
	}
	return join
}

// latest adds point item d to ds, a list of at most one item per
// stream, unless ds holds a later one of d's stream; it replaces an
// earlier one.
func latest(ds []int32, d int32, at []point) []int32 {
	for j, e := range ds {
		if at[e].stream == at[d].stream {
			if at[d].seq > at[e].seq {
				ds[j] = d
			}
			return ds
		}
	}
	return append(ds, d)
}
