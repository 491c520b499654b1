package exec

// bufIndex is the tracker's index of its buffers by key (the address of
// the memory a tensor views): open addressing with linear probing over a
// power-of-two table at most half full, deletion by shifting the entries
// after a hole back (no tombstones), so a step's lookups, inserts and
// removals cost a multiply and a probe or two, and the table, emptied at
// a step's end, keeps its room for the next. A map did the same at
// several times the cost: its inserts, lookups, deletes and the
// iteration and clear of a drain were about 5% of dlrm_small's CPU at
// a batch of one (some sixty buffers a step).
type bufIndex struct {
	slots []bufSlot // len is 0 or a power of two; b nil: empty
	n     int
	shift uint // 64 - log2(len(slots))
}

type bufSlot struct {
	k uintptr
	b *buffer
}

// home is k's first slot: Fibonacci hashing, whose top bits mix every
// bit of k (keys are chunk addresses, multiples of 256 or of 64).
func (x *bufIndex) home(k uintptr) int {
	return int((uint64(k) * 0x9e3779b97f4a7c15) >> x.shift)
}

// get is the buffer under k, or nil.
func (x *bufIndex) get(k uintptr) *buffer {
	if x.n == 0 {
		return nil
	}
	m := len(x.slots) - 1
	for i := x.home(k); ; i = (i + 1) & m {
		s := &x.slots[i]
		if s.b == nil {
			return nil
		}
		if s.k == k {
			return s.b
		}
	}
}

// put files b under k, replacing what was there.
func (x *bufIndex) put(k uintptr, b *buffer) {
	if 2*(x.n+1) > len(x.slots) {
		x.grow()
	}
	m := len(x.slots) - 1
	for i := x.home(k); ; i = (i + 1) & m {
		s := &x.slots[i]
		if s.b == nil {
			s.k, s.b = k, b
			x.n++
			return
		}
		if s.k == k {
			s.b = b
			return
		}
	}
}

// del removes what is under k, if anything: the entries after it in its
// run move back into the hole where their home allows, so that every
// entry stays reachable from its home without a gap.
func (x *bufIndex) del(k uintptr) {
	if x.n == 0 {
		return
	}
	m := len(x.slots) - 1
	i := x.home(k)
	for ; ; i = (i + 1) & m {
		s := &x.slots[i]
		if s.b == nil {
			return
		}
		if s.k == k {
			break
		}
	}
	for j := (i + 1) & m; x.slots[j].b != nil; j = (j + 1) & m {
		// The entry at j may fill the hole at i when i lies on its
		// probe path, from its home up to j.
		if (j-x.home(x.slots[j].k))&m >= (j-i)&m {
			x.slots[i] = x.slots[j]
			i = j
		}
	}
	x.slots[i] = bufSlot{}
	x.n--
}

// reset empties the index, keeping its room.
func (x *bufIndex) reset() {
	if x.n > 0 {
		clear(x.slots)
		x.n = 0
	}
}

// grow doubles the table (16 slots at first) and files every entry again.
func (x *bufIndex) grow() {
	old := x.slots
	size := max(16, 2*len(old))
	x.slots = make([]bufSlot, size)
	x.shift = 64
	for s := size; s > 1; s >>= 1 {
		x.shift--
	}
	x.n = 0
	for _, s := range old {
		if s.b != nil {
			x.put(s.k, s.b)
		}
	}
}
