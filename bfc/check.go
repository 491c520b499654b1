package bfc

import "fmt"

// Check recounts the allocator from its regions and returns the first
// broken invariant, or nil. Tests call it after every operation; it takes
// time linear in the number of chunks.
func (a *Allocator) Check() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	var caches []*streamCache
	a.eachCache(func(sc *streamCache) { caches = append(caches, sc) })
	for _, sc := range caches {
		sc.mu.Lock()
		defer sc.mu.Unlock()
	}
	inBin := map[*chunk]int{}
	for b := range a.bins {
		for i, c := range a.bins[b] {
			if binOf(c.size) != b {
				return fmt.Errorf("chunk %#x+%d in bin %d, belongs in %d", c.addr, c.size, b, binOf(c.size))
			}
			if i > 0 && !less(a.bins[b][i-1], c) {
				return fmt.Errorf("bin %d out of order at %d", b, i)
			}
			if c.inUse {
				return fmt.Errorf("chunk %#x in use but in bin %d", c.addr, b)
			}
			inBin[c]++
		}
	}
	listed := map[*chunk]int{}
	nListed := 0
	for _, sc := range caches {
		for i, c := range sc.chunks {
			if c.stream != sc.s || !c.pending || !c.inUse || c.sc.Load() != sc || c.slot == nil || c.slot.Load() != nil {
				return fmt.Errorf("chunk %#x in a stream's cache: its stream differs, pending %v, in use %v", c.addr, c.pending, c.inUse)
			}
			if i > 0 && !less(sc.chunks[i-1], c) {
				return fmt.Errorf("stream cache out of order at %d", i)
			}
			listed[c]++
			nListed++
		}
	}
	if n := a.cachedChunks(); int64(nListed) != n {
		return fmt.Errorf("%d chunks in the streams' caches, counted %d", nListed, n)
	}
	nLive := 0
	if l := a.live.Load(); l == nil && len(a.regions) > 0 || l != nil && len(*l) != len(a.regions) {
		return fmt.Errorf("live index: regions differ")
	}
	var inUse, regionBytes uint64
	live, n := 0, 0
	for _, r := range a.regions {
		regionBytes += r.size
		c := a.chunks[r.base]
		if c == nil || c.prev != nil {
			return fmt.Errorf("region %#x has no first chunk", r.base)
		}
		if len(r.mids) != numMids(r.size) {
			return fmt.Errorf("region %#x+%d: %d mids in the live index", r.base, r.size, len(r.mids))
		}
		end := r.base
		for ; c != nil; c = c.next {
			n++
			if c.region != r || c.addr != end || c.size == 0 || c.size%MinAlloc != 0 || c.addr%MinAlloc != 0 {
				return fmt.Errorf("chunk %#x+%d does not tile region %#x at %#x", c.addr, c.size, r.base, end)
			}
			if a.chunks[c.addr] != c {
				return fmt.Errorf("chunk %#x missing from the address map", c.addr)
			}
			if c.next != nil && c.next.prev != c {
				return fmt.Errorf("chunk %#x: broken back link", c.addr)
			}
			end += c.size
			if c.pending != (listed[c] == 1) || listed[c] > 1 {
				return fmt.Errorf("chunk %#x: pending %v, in %d lists", c.addr, c.pending, listed[c])
			}
			// The live index: a chunk's slot holds it exactly while it is
			// live. (Slots inside chunks are not scanned, which would make
			// Check cost 8 bytes of loads per 256 of regions: a chunk
			// leaves the index before it can merge.)
			var indexed *chunk
			if p := a.liveSlot(c.addr); p != nil {
				indexed = p.Load()
			}
			if live := c.inUse && !c.pending && !c.freeing; live != (indexed == c) || !live && indexed != nil ||
				live && (c.slot != a.liveSlot(c.addr) || a.opts.StreamCache && (c.sc.Load() == nil || c.sc.Load().s != c.stream)) {
				return fmt.Errorf("live index: chunk %#x (in use %v, pending %v, freeing %v) indexed as %p", c.addr, c.inUse, c.pending, c.freeing, indexed)
			} else if live {
				nLive++
			}
			if c.inUse && (c.pending || c.freeing) {
				continue // freed, waiting in its stream's cache or for its event
			}
			if c.inUse {
				inUse += c.size
				live++
				if inBin[c] != 0 {
					return fmt.Errorf("live chunk %#x in a bin", c.addr)
				}
				continue
			}
			if inBin[c] != 1 {
				return fmt.Errorf("free chunk %#x+%d in %d bins", c.addr, c.size, inBin[c])
			}
			if p := c.prev; p != nil && !p.inUse && a.mergeable(p, c) {
				return fmt.Errorf("free chunks %#x and %#x should have merged", p.addr, c.addr)
			}
		}
		if end != r.base+r.size {
			return fmt.Errorf("region %#x+%d: chunks end at %#x", r.base, r.size, end)
		}
	}
	if n != len(a.chunks) {
		return fmt.Errorf("%d chunks in regions, %d in the address map", n, len(a.chunks))
	}
	st := a.st // statsLocked would lock the caches, held here
	st.BytesInUse, st.PeakBytesInUse = a.inUse.Load(), a.peak.Load()
	st.LiveAllocations = int(a.nLive)
	for _, sc := range caches {
		st.LiveAllocations += int(sc.live)
	}
	if inUse != st.BytesInUse || live != st.LiveAllocations || live != nLive || regionBytes != st.RegionBytes || len(a.regions) != st.Regions {
		return fmt.Errorf("stats %+v disagree with recount: in use %d, live %d (%d indexed), regions %d of %d bytes",
			st, inUse, live, nLive, len(a.regions), regionBytes)
	}
	if regionBytes > a.opts.Limit || st.PeakBytesInUse < inUse {
		return fmt.Errorf("regions %d over limit %d or peak %d under in use %d", regionBytes, a.opts.Limit, st.PeakBytesInUse, inUse)
	}
	return nil
}
