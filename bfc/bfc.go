package bfc

import (
	"fmt"
	"sort"
	"sync"
	"sync/atomic"

	"mstream/device"
	"mstream/status"
)

// MinAlloc is the granularity and alignment of every chunk, in bytes.
const MinAlloc = 256

// numBins is the number of size-class bins: bin i holds free chunks of size
// [MinAlloc<<i, MinAlloc<<(i+1)); the last bin holds everything larger.
const numBins = 21

// maxInternalFrag is the largest remainder a chunk may keep unsplit.
const maxInternalFrag = 128 << 20

// growthStart is the first region size when AllowGrowth is set (TF's 2 MiB).
const growthStart = 2 << 20

// Backend provides the regions the allocator carves up: device memory on a
// GPU, Go memory on the host. Addresses are opaque to the allocator except
// for arithmetic inside a region.
type Backend interface {
	// Alloc returns the base address of a new region of size bytes,
	// aligned to at least MinAlloc.
	Alloc(size uint64) (base uint64, err error)
	// Free returns a region obtained from Alloc.
	Free(base uint64)
}

// Options configure an Allocator.
type Options struct {
	// Name appears in error messages and stats ("GPU_0_bfc", "group1").
	Name string
	// Limit is the most bytes all regions together may hold. The session
	// computes it from per_process_gpu_memory_fraction,
	// virtual_devices.memory_limit_mb and the split between groups.
	Limit uint64
	// AllowGrowth grows regions on demand, starting at 2 MiB and doubling.
	// When false the first allocation obtains the whole Limit as one
	// region, as TF does.
	AllowGrowth bool
	// ExtendLimit caps a single region growth in bytes
	// (TF_BFC_EXTEND_LIMIT_MB << 20); 0 means no cap. A request larger than
	// the cap still gets a region of its own size.
	ExtendLimit uint64
	// StreamAware turns on TF_GPU_STREAM_AWARE_BFC: free chunks remember
	// the stream that freed them, and reuse on another stream waits on an
	// event. NewEvent must then be set.
	StreamAware bool
	// NewEvent makes the events recorded at free time (stream-aware mode).
	NewEvent func() (device.Event, error)
	// StreamCache keeps each stream's freed chunks in a cache of that
	// stream, in front of the shared mutex: the stream takes them back
	// without the mutex and without an event (its own order covers its
	// earlier work), and they reach the bins, in stream-aware mode under
	// the cache's mark (an event recorded every 32 frees) or one event
	// recorded then, only when an allocation finds nothing of its own
	// (see the package documentation, "Stream caches"). Without stream
	// awareness the cache is that of the stream an allocation names (nil
	// included: the host's pool step) and is drained without events.
	StreamCache bool
	// MaxInternalFrag is the largest slack an allocation may keep unsplit
	// when its chunk is less than twice the request (TF's
	// fragmentation_fraction times the limit); 0 means TF's default of
	// 128 MiB. MinAlloc splits every chunk that has room.
	MaxInternalFrag uint64
}

// Stats are the allocator's counters; byte counts are chunk sizes (requests
// rounded up to MinAlloc, plus unsplit slack).
type Stats struct {
	Name           string `json:"name"`
	BytesInUse     uint64 `json:"bytes_in_use"`
	PeakBytesInUse uint64 `json:"peak_bytes_in_use"`
	Limit          uint64 `json:"limit"`
	// Regions and RegionBytes are what the backend has given.
	Regions     int    `json:"regions"`
	RegionBytes uint64 `json:"region_bytes"`
	// Extends counts region growths; LargestExtend is the biggest one.
	Extends       int    `json:"extends"`
	LargestExtend uint64 `json:"largest_extend"`
	// Allocations counts successful Allocate calls ever;
	// LiveAllocations those not yet freed.
	Allocations     int64 `json:"allocations"`
	LiveAllocations int   `json:"live_allocations"`
	// CrossStreamWaits counts reuses of another stream's chunk, each of
	// which made the new stream wait on the old one's event.
	CrossStreamWaits int64 `json:"cross_stream_waits"`
	// Retired counts free chunks of a stream whose last use had completed
	// when an allocation looked, and which became free for every stream
	// without a wait.
	Retired int64 `json:"retired"`
	// LargestFreeChunk and FreeBytes are over all regions, the streams'
	// caches included (CachedBytes, Options.StreamCache: freed, and
	// reusable at once by their stream); Fragmentation is
	// 1 - LargestFreeChunk/FreeBytes (0 with nothing free).
	LargestFreeChunk  uint64  `json:"largest_free_chunk"`
	FreeBytes         uint64  `json:"free_bytes"`
	CachedBytes       uint64  `json:"cached_bytes"`
	Fragmentation     float64 `json:"fragmentation"`
	FailedAllocations int64   `json:"failed_allocations"`
}

// chunk is a contiguous range inside one region, free or in use.
type chunk struct {
	addr, size uint64
	requested  uint64 // bytes asked for; 0 when free
	inUse      bool
	prev, next *chunk // address neighbours in the same region
	region     *region

	// stream last used the chunk (allocated it, or freed it); nil for
	// space never handed out. ev was recorded on stream when it was freed;
	// seq orders frees so that a merge keeps the later event.
	stream device.Stream
	ev     device.Event
	seq    uint64
	// freeing: a stream-aware Free without caches has taken the chunk
	// out of the live index and records its event outside mu; it stays
	// inUse for the chunk structure until it reaches the bins. Set and
	// cleared under mu.
	freeing bool
	// freeNo numbers the chunk's free among its stream cache's (which
	// mark covers it).
	freeNo uint64
	// pending: freed, waiting in its stream's cache (Options.StreamCache).
	// It stays inUse for the chunk structure (not in a bin, never merged)
	// but no longer counts in BytesInUse or LiveAllocations. Guarded by
	// the cache's mutex while the chunk is in the cache.
	pending bool
	// sc is, while the chunk is live or cached (Options.StreamCache), its
	// stream's cache, where its Free puts it. slot is, while it is live
	// or cached, its live index slot. sc is atomic because a second Free
	// of the same address (a caller's bug, refused when it is seen) may
	// read it without the lock under which the chunk's release clears it.
	sc   atomic.Pointer[streamCache]
	slot *atomic.Pointer[chunk]
}

type region struct {
	base, size uint64
	// mids are the region's part of the live index, by
	// (addr-base)/MinAlloc/leafSlots/midSlots; each, and each of its
	// leaves, nil until a chunk is allocated in its range.
	mids []atomic.Pointer[mid]
}

// Allocator is a best-fit-with-coalescing allocator. See the package
// documentation for its design and invariants.
type Allocator struct {
	opts    Options
	backend Backend

	mu         sync.Mutex
	bins       [numBins][]*chunk // free chunks ordered by (size, addr)
	chunks     map[uint64]*chunk // every chunk by address
	regions    []*region         // ordered by base
	nextRegion uint64            // size of the next growth (TF's curr_region_allocation_bytes)
	freeSeq    uint64
	st         Stats
	// Stream-aware mode: evRefs counts, per event, the free chunks that
	// carry it (splits share their parent's) plus a waiter between
	// allocateLocked and its Wait; an event nobody refers to goes back to
	// evPool and is recorded again by a later Free, so steady state
	// creates no events (cuEventCreate is a driver call, and events were
	// never destroyed).
	evRefs map[device.Event]int
	evPool []device.Event
	// streams lists, per stream (and shard) the allocator has seen, its
	// record mutex and (Options.StreamCache) its cache: a copy-on-write
	// slice, replaced under mu when a stream is first seen and read
	// without a lock, so that finding a stream's cache costs a short
	// scan rather than a sync.Map lookup (a hash of the interface and an
	// atomic load per Allocate and Free: 0.9 s of 35 s of CPU in the
	// H100 profile of DLRM-small on 4 groups). recSeq numbers the
	// records of every stream (see record). Each cache counts its own
	// chunks (streamCache.n), so that an allocation knows without a
	// lock whether a flush can help and a cached Allocate or Free
	// writes no counter another cache's thread writes too.
	streams atomic.Pointer[[]cacheRef]
	// live is the regions in address order, each with the live index of
	// its chunk starts (see liveSlot): a copy of regions, replaced under
	// mu when a region is added, read without a lock. It and streams,
	// which every Allocate and Free reads, share their cache line with
	// nothing that changes more often than they do.
	live atomic.Pointer[[]*region]
	_    [64]byte
	// shardSeq hands out shards (NextShard).
	recSeq   atomic.Uint64
	shardSeq atomic.Uint32
	// nLive and nAllocs count, under mu, the live allocations and the
	// allocations made under mu; the stream caches count those made and
	// freed under their own mutexes, and Stats adds them up. inUse and
	// peak change with every allocation and free, outside mu, each on a
	// cache line of its own (peak is mostly read).
	nLive   int64
	nAllocs int64
	_       [64]byte
	inUse   atomic.Uint64
	_       [56]byte
	peak    atomic.Uint64
	_       [56]byte
	// spare keeps the records of chunks merged away for the next split,
	// so a step's allocate/free cycle allocates no chunk records once
	// warm (a split per allocation and a merge per free was half of a
	// GPU node's heap allocations).
	spare []*chunk
}

// maxSpare bounds the chunk records an allocator keeps.
const maxSpare = 256

// The live index is TF's region handles with lazily made pages: per
// region, one slot per MinAlloc bytes of address space, holding the live
// chunk that starts there (or nil), in leaves of leafSlots slots made
// when a chunk is first allocated in their range, reached through mids
// of midSlots leaves, also made on first use (so a region of the whole
// device costs the collector 8 bytes per 8 MiB until it is used). A Free
// finds its chunk with a binary search of the regions and three loads,
// no lock or hash (a map of 32 address shards under their own mutexes,
// which all the groups of a device wrote, was 3.6 of 35 s of CPU in the
// H100 profile of DLRM-small on 4 stream-aware groups); a slot's cache
// line is touched only by the users of the chunks it indexes, rarely
// another group's. Mids and leaves are kept until Close: at most 8 bytes
// per MinAlloc bytes of regions, TF's cost for its handles, made only
// where chunks start.
const (
	leafBits  = 9
	leafSlots = 1 << leafBits
	midBits   = 6
	midSlots  = 1 << midBits
)

type (
	leaf [leafSlots]atomic.Pointer[chunk]
	mid  [midSlots]atomic.Pointer[leaf]
)

// numMids is how many mids a region of size bytes has.
func numMids(size uint64) int {
	const span = MinAlloc * leafSlots * midSlots
	return int((size + span - 1) / span)
}

// liveSlot is the live index's slot of addr, nil when no chunk was ever
// allocated in its leaf (addr is then not live) or addr is in no region.
func (a *Allocator) liveSlot(addr uint64) *atomic.Pointer[chunk] {
	l := a.live.Load()
	if l == nil || addr%MinAlloc != 0 {
		return nil
	}
	rs := *l
	lo, hi := 0, len(rs) // the first region with base > addr
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if rs[m].base <= addr {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo == 0 {
		return nil
	}
	r := rs[lo-1]
	off := (addr - r.base) / MinAlloc
	if off >= r.size/MinAlloc {
		return nil
	}
	m := r.mids[off>>(leafBits+midBits)].Load()
	if m == nil {
		return nil
	}
	lf := m[(off>>leafBits)&(midSlots-1)].Load()
	if lf == nil {
		return nil
	}
	return &lf[off&(leafSlots-1)]
}

// liveSlotLocked is liveSlot for a chunk of a region (mu is held), its
// leaf made if needed.
func (a *Allocator) liveSlotLocked(c *chunk) *atomic.Pointer[chunk] {
	r := c.region
	off := (c.addr - r.base) / MinAlloc
	mp := &r.mids[off>>(leafBits+midBits)]
	m := mp.Load()
	if m == nil {
		m = new(mid)
		mp.Store(m)
	}
	lp := &m[(off>>leafBits)&(midSlots-1)]
	lf := lp.Load()
	if lf == nil {
		lf = new(leaf)
		lp.Store(lf)
	}
	return &lf[off&(leafSlots-1)]
}

// streamCache is what the allocator keeps per stream: the mutex that
// orders a stream-aware free's event record with its sequence number, and
// (Options.StreamCache) the stream's freed chunks, ordered by (size,
// address). Every live chunk of a stream with a cache points at it
// (chunk.sc), so a Free finds it in the chunk it looks up anyway. Lock
// order: Allocator.mu, then a cache's mu, then recMu.
type streamCache struct {
	s      device.Stream
	mu     sync.Mutex
	chunks []*chunk
	// n is len(chunks), stored under mu and read without it
	// (cachedChunks: whether a drain can help).
	n atomic.Int64
	// frees numbers the chunks put in the cache (chunk.freeNo). mark, when
	// not nil, was last recorded on the stream (sequence number markSeq)
	// after the frees numbered up to markAt: the cache's own event, which
	// a drain hands to the chunks it covers. spare is an event for the
	// next mark, given by a drain from the allocator's pool.
	frees, markAt, markSeq uint64
	mark, spare            device.Event
	// allocs counts the allocations made from the cache, live those
	// made and freed under its mutex (negative when the stream frees
	// more than its cache gave: the rest were allocated under
	// Allocator.mu). Stats adds them to the allocator's.
	allocs, live int64
	// marking: a Free is recording the next mark outside the mutex
	// (startMarkLocked, mark); nobody else starts one meanwhile.
	marking bool
	// recMu orders the stream's event records with their sequence
	// numbers (record), outside Allocator.mu: cuEventRecord is a driver
	// call, and under mu it held up every group's allocations. Two
	// records of one stream thus get sequence numbers in their order,
	// which is what a merge's "later event" needs; sequence numbers are
	// compared only within a stream (only one stream's chunks merge), so
	// streams record in parallel.
	recMu sync.Mutex
	_     [64]byte // cache lines of its own: streams run on different threads
}

// markEvery is how many frees a stream cache gathers before it records
// its mark again: about one record per step of a DLRM-like model, so
// that memory a drain hands to other streams carries an event that has
// often completed already (and is retired, step 2) rather than one
// recorded at the drain, at the end of the stream's queued work.
const markEvery = 32

// Shard names one of the caches of a stream in an allocator without
// stream awareness (the host's): concurrent steps that allocate for the
// same stream (nil, on the host) each take a shard of their own
// (NextShard), so that their Allocates and Frees meet on no mutex and no
// cache line of a shared cache. A stream-aware allocator keeps one
// cache per stream, whose record mutex orders the stream's events, and
// ignores the shard.
type Shard uint32

// numShards bounds the caches of one stream: as many steps as run at
// once on a host with that many cores; more would only spread the
// memory cached for the same sizes thinner.
const numShards = 8

// NextShard hands out shards 1 to numShards-1 round-robin, for a step
// state to allocate from for as long as it lives; shard 0 is every plain
// Allocate's (constants, feed and fetch packs), so up to numShards-1
// steps in flight share no cache with each other or with those.
func (a *Allocator) NextShard() Shard {
	return Shard(1 + a.shardSeq.Add(1)%(numShards-1))
}

// cacheRef is an entry of the allocator's list of caches: the key is
// copied into the list, so that finding a cache reads no other cache's
// record, whose mutex and chunks another thread writes.
type cacheRef struct {
	s  device.Stream
	sh Shard
	sc *streamCache
}

// findCache is the record of s's shard sh, or nil before its first use.
func (a *Allocator) findCache(s device.Stream, sh Shard) *streamCache {
	if l := a.streams.Load(); l != nil {
		for i := range *l {
			if r := &(*l)[i]; r.s == s && r.sh == sh {
				return r.sc
			}
		}
	}
	return nil
}

// shardOf is the shard an allocation for sh uses: sh, but 0 in
// stream-aware mode (Shard).
func (a *Allocator) shardOf(sh Shard) Shard {
	if a.opts.StreamAware {
		return 0
	}
	return sh % numShards
}

// cacheLocked returns the record of s's shard sh (its cache, its record
// mutex), made on first use under mu (held), so that Check, which holds
// mu, sees every cache it must lock.
func (a *Allocator) cacheLocked(s device.Stream, sh Shard) *streamCache {
	if sc := a.findCache(s, sh); sc != nil {
		return sc
	}
	var l []cacheRef
	if old := a.streams.Load(); old != nil {
		l = append(l, *old...)
	}
	sc := &streamCache{s: s}
	l = append(l, cacheRef{s: s, sh: sh, sc: sc})
	a.streams.Store(&l)
	return sc
}

// eachCache calls f on every stream's record, in the order they were
// made.
func (a *Allocator) eachCache(f func(*streamCache)) {
	if l := a.streams.Load(); l != nil {
		for _, r := range *l {
			f(r.sc)
		}
	}
}

// cachedChunks is the number of chunks in the caches, read without their
// locks (exact when they are held).
func (a *Allocator) cachedChunks() int64 {
	var n int64
	a.eachCache(func(sc *streamCache) { n += sc.n.Load() })
	return n
}

// takeLocked removes and returns the best fit for rounded bytes: the
// smallest cached chunk of at least rounded bytes and less than twice that
// (a cached chunk is not split), with slack under maxFrag; or nil.
func (sc *streamCache) takeLocked(rounded, maxFrag uint64) *chunk {
	l := sc.chunks
	i := sort.Search(len(l), func(i int) bool { return l[i].size >= rounded })
	if i == len(l) || l[i].size >= 2*rounded || l[i].size-rounded >= maxFrag {
		return nil
	}
	c := l[i]
	copy(l[i:], l[i+1:])
	l[len(l)-1] = nil
	sc.chunks = l[:len(l)-1]
	sc.n.Store(int64(len(sc.chunks)))
	return c
}

func (sc *streamCache) putLocked(c *chunk) {
	l := sc.chunks
	i := sort.Search(len(l), func(i int) bool { return !less(l[i], c) })
	l = append(l, nil)
	copy(l[i+1:], l[i:])
	l[i] = c
	sc.chunks = l
	sc.n.Store(int64(len(l)))
}

// insertLive enters c, just allocated, in the live index (at slot p,
// its address's) and counts its bytes. The caller holds mu or, for a
// chunk taken from a stream cache, that cache's mutex, and counts the
// allocation under it.
func (a *Allocator) insertLive(c *chunk, p *atomic.Pointer[chunk]) {
	p.Store(c)
	n := a.inUse.Add(c.size)
	for pk := a.peak.Load(); n > pk && !a.peak.CompareAndSwap(pk, n); pk = a.peak.Load() {
	}
}

// claim takes the live allocation at addr out of the live index and the
// byte count; nil if addr is not live. The caller holds mu or, with
// stream caches, the chunk's cache's mutex (so Check, which takes all of
// them, sees the index and the counts agree), and counts the free under
// it.
func (a *Allocator) claim(addr uint64) *chunk {
	p := a.liveSlot(addr)
	if p == nil {
		return nil
	}
	return a.claimAt(p, p.Load())
}

// claimAt is claim of c at its slot p: nil unless c is still there.
func (a *Allocator) claimAt(p *atomic.Pointer[chunk], c *chunk) *chunk {
	if c == nil || !p.CompareAndSwap(c, nil) {
		return nil
	}
	a.inUse.Add(-c.size)
	c.requested = 0
	return c
}

// fromCache is the stream cache's side of Allocate: the best fit in s's
// cache of shard sh, taken without mu and without an event.
func (a *Allocator) fromCache(size uint64, s device.Stream, sh Shard) (uint64, bool) {
	sc := a.findCache(s, sh)
	if sc == nil {
		return 0, false
	}
	sc.mu.Lock()
	defer sc.mu.Unlock()
	c := sc.takeLocked(roundUp(size), a.opts.MaxInternalFrag)
	if c == nil {
		return 0, false
	}
	c.pending, c.requested = false, size
	sc.allocs++
	sc.live++
	a.insertLive(c, c.slot)
	return c.addr, true
}

// toCache is the stream cache's side of Free: each live chunk of addrs
// joins its stream's cache, without mu and without an event, the chunks
// of one stream under one acquisition of its cache's mutex. The chunk,
// found in the live index without a lock, says which cache it goes to;
// it is claimed from the index under that cache's mutex, so a concurrent
// Free of the same address fails.
func (a *Allocator) toCache(addrs []uint64) error {
	var first error
	var held *streamCache
	var mbuf [1]markJob
	marks := mbuf[:0]
	for _, addr := range addrs {
		var c *chunk
		p := a.liveSlot(addr)
		if p != nil {
			c = p.Load()
		}
		if c != nil {
			// c.sc is nil only if c was freed meanwhile (by a second
			// Free of the same address) and drained to the bins.
			if sc := c.sc.Load(); sc != nil && sc != held {
				if held != nil {
					held.mu.Unlock()
				}
				held = sc
				sc.mu.Lock()
			}
			if sc := c.sc.Load(); sc == nil || sc != held || a.claimAt(p, c) == nil {
				c = nil // freed meanwhile
			}
		}
		if c == nil {
			if first == nil {
				first = status.InvalidArg("bfc %q: free of %#x, which is not a live allocation", a.opts.Name, addr)
			}
			continue
		}
		sc := held
		sc.live--
		c.pending = true
		sc.frees++
		c.freeNo = sc.frees
		sc.putLocked(c)
		if sc.frees-sc.markAt >= markEvery && !sc.marking && a.opts.StreamAware {
			marks = append(marks, sc.startMarkLocked())
		}
	}
	if held != nil {
		held.mu.Unlock()
	}
	for _, j := range marks {
		a.mark(j)
	}
	return first
}

// markJob is a mark a Free records after releasing the cache's mutex:
// ev, which nobody else refers to, recorded after the frees up to at.
type markJob struct {
	sc *streamCache
	ev device.Event
	at uint64
}

// startMarkLocked begins recording sc's next mark, after every free so far
// (sc.mu is held); the caller passes the job to mark once it has released
// the mutex. The cache's other thread keeps freeing into and allocating
// from the cache meanwhile (cuEventRecord under the cache's mutex held it
// up for microseconds every markEvery frees).
func (sc *streamCache) startMarkLocked() markJob {
	sc.marking = true
	j := markJob{sc: sc, ev: sc.spare, at: sc.frees}
	sc.spare = nil
	return j
}

// mark records j's event on its stream and makes it the cache's mark; the
// old mark, which the cache alone refers to while it is the mark, becomes
// the spare for the next one. Without an event, or when the record fails,
// the cache keeps its old mark (a drain records an event for the chunks
// no mark covers).
func (a *Allocator) mark(j markJob) {
	sc := j.sc
	ev, err := j.ev, error(nil)
	if ev == nil {
		ev, err = a.opts.NewEvent()
	}
	var seq uint64
	if err == nil {
		seq, err = a.record(sc, ev)
		// On failure ev's position is unknown: it is never handed out.
	}
	sc.mu.Lock()
	defer sc.mu.Unlock()
	sc.marking = false
	if err != nil {
		return
	}
	sc.spare, sc.mark = sc.mark, ev
	sc.markAt, sc.markSeq = j.at, seq
}

// flushLocked moves the chunks of the stream caches (only, or every
// cache when only is nil) to the bins. Chunks freed before the cache's
// mark was last recorded take the mark (the cache then makes a new one);
// the others take one event recorded now: either is after every use of
// the chunks it covers, since each was freed after its stream's last use
// of it was enqueued. A stream whose record fails keeps those chunks in
// its cache (they are not known to be free in its order). It reports
// whether any chunk moved.
func (a *Allocator) flushLocked(only *streamCache) bool {
	moved := false
	a.eachCache(func(sc *streamCache) {
		if only != nil && sc != only {
			return
		}
		sc.mu.Lock()
		l := sc.chunks
		sc.chunks = nil
		sc.n.Store(0)
		if !a.opts.StreamAware {
			// Free memory at once: no mark, no event.
			sc.mu.Unlock()
			for _, c := range l {
				a.freeSeq++
				a.releaseLocked(c, nil, a.freeSeq)
			}
			moved = moved || len(l) > 0
			return
		}
		mark, markSeq, markAt := sc.mark, sc.markSeq, sc.markAt
		covered := 0
		if mark != nil {
			for _, c := range l {
				if c.freeNo <= markAt {
					covered++
				}
			}
		}
		if covered > 0 {
			// The mark goes with its chunks; the next one is another
			// event, from the pool where it has one.
			sc.mark = nil
			if sc.spare == nil && !sc.marking {
				// (A mark being recorded leaves the old one as
				// the spare, or none: it is nil when that ends.)
				if n := len(a.evPool); n > 0 {
					sc.spare, a.evPool = a.evPool[n-1], a.evPool[:n-1]
				}
			}
		}
		sc.mu.Unlock()
		if len(l) == 0 {
			return
		}
		var ev device.Event
		var seq uint64
		if covered < len(l) {
			var err error
			if ev, seq, err = a.recordLocked(sc); err != nil {
				sc.mu.Lock()
				kept := 0
				for _, c := range l {
					if covered == 0 || c.freeNo > markAt {
						sc.putLocked(c)
						kept++
					}
				}
				sc.mu.Unlock()
				if covered == 0 {
					return
				}
				moved = true
				a.releaseMarkedLocked(l, mark, markSeq, markAt, true, nil, 0)
				return
			}
		}
		a.releaseMarkedLocked(l, mark, markSeq, markAt, covered > 0, ev, seq)
		moved = true
		return
	})
	return moved
}

// releaseLocked frees the chunks of l, drained from a stream cache:
// those its mark covers (when useMark) with the mark, the others with ev
// (all of them when ev is nil, in which case only covered chunks are
// freed). Both events hold a reference meanwhile: a chunk that merges
// with a neighbour freed under the other, later event drops its own, and
// the mark must not reach the pool while more chunks are to take it.
func (a *Allocator) releaseMarkedLocked(l []*chunk, mark device.Event, markSeq, markAt uint64, useMark bool, ev device.Event, seq uint64) {
	if useMark {
		a.evRefs[mark]++
	}
	if ev != nil {
		a.evRefs[ev]++
	}
	for _, c := range l {
		switch {
		case useMark && c.freeNo <= markAt:
			a.evRefs[mark]++
			a.releaseLocked(c, mark, markSeq)
		case ev != nil:
			a.evRefs[ev]++
			a.releaseLocked(c, ev, seq)
		}
	}
	if useMark {
		a.unrefLocked(mark)
	}
	a.unrefLocked(ev)
}

// recordLocked records a free event on s, from the pool when it has one,
// with the sequence number that orders it among s's frees. Stream.Record
// only enqueues, so it is made under mu only where an allocation found
// nothing of its own (a flush), never per free.
func (a *Allocator) recordLocked(sc *streamCache) (device.Event, uint64, error) {
	var ev device.Event
	if n := len(a.evPool); n > 0 {
		ev, a.evPool = a.evPool[n-1], a.evPool[:n-1]
	} else {
		var err error
		if ev, err = a.opts.NewEvent(); err != nil {
			return nil, 0, err
		}
	}
	seq, err := a.record(sc, ev)
	if err != nil {
		a.evPool = append(a.evPool, ev)
		return nil, 0, err
	}
	return ev, seq, nil
}

// record records ev on sc's stream under its record mutex and returns
// its sequence number.
func (a *Allocator) record(sc *streamCache, ev device.Event) (uint64, error) {
	sc.recMu.Lock()
	defer sc.recMu.Unlock()
	seq := a.recSeq.Add(1)
	return seq, sc.s.Record(ev)
}

// New returns an allocator over backend. It obtains no memory until the
// first allocation.
func New(backend Backend, opts Options) (*Allocator, error) {
	if opts.StreamAware && opts.NewEvent == nil {
		return nil, status.InvalidArg("bfc %q: stream-aware mode needs NewEvent", opts.Name)
	}
	opts.Limit = opts.Limit / MinAlloc * MinAlloc
	if opts.MaxInternalFrag == 0 {
		opts.MaxInternalFrag = maxInternalFrag
	}
	a := &Allocator{opts: opts, backend: backend, chunks: map[uint64]*chunk{}, evRefs: map[device.Event]int{}}
	if opts.AllowGrowth {
		a.nextRegion = growthStart
	} else {
		a.nextRegion = opts.Limit
	}
	a.st.Name = opts.Name
	a.st.Limit = opts.Limit
	return a, nil
}

func roundUp(n uint64) uint64 {
	if n < MinAlloc {
		return MinAlloc
	}
	return (n + MinAlloc - 1) / MinAlloc * MinAlloc
}

func binOf(size uint64) int {
	b := 0
	for s := size / MinAlloc; s > 1 && b < numBins-1; s >>= 1 {
		b++
	}
	return b
}

func less(x, y *chunk) bool {
	if x.size != y.size {
		return x.size < y.size
	}
	return x.addr < y.addr
}

func (a *Allocator) insertFreeLocked(c *chunk) {
	b := &a.bins[binOf(c.size)]
	i := sort.Search(len(*b), func(i int) bool { return !less((*b)[i], c) })
	*b = append(*b, nil)
	copy((*b)[i+1:], (*b)[i:])
	(*b)[i] = c
}

func (a *Allocator) removeFreeLocked(c *chunk) {
	b := &a.bins[binOf(c.size)]
	i := sort.Search(len(*b), func(i int) bool { return !less((*b)[i], c) })
	if i == len(*b) || (*b)[i] != c {
		panic(fmt.Sprintf("bfc: free chunk %#x+%d not in its bin", c.addr, c.size))
	}
	*b = append((*b)[:i], (*b)[i+1:]...)
}

// Allocate returns the address of at least size bytes, aligned to MinAlloc;
// a size of 0 gets MinAlloc bytes, so every live allocation has its own
// address.
// In stream-aware mode s is the stream that will use the memory and must
// not be nil; otherwise s is recorded for stats only and may be nil.
func (a *Allocator) Allocate(size uint64, s device.Stream) (uint64, error) {
	return a.AllocateShard(size, s, 0)
}

// AllocateShard is Allocate through shard sh of s's cache (Shard): the
// chunk goes back to that cache when it is freed.
func (a *Allocator) AllocateShard(size uint64, s device.Stream, sh Shard) (uint64, error) {
	sh = a.shardOf(sh)
	if a.opts.StreamCache && (s != nil || !a.opts.StreamAware) {
		if addr, ok := a.fromCache(size, s, sh); ok {
			return addr, nil
		}
	}
	a.mu.Lock()
	addr, ev, err := a.allocateLocked(size, s, sh, !a.opts.StreamAware)
	if err == errNoFit {
		// Last resort before OOM (stream-aware): free space may be cut
		// into pieces of different streams that cannot merge while
		// their work is pending. Wait, on the host and without the lock,
		// for every free chunk's event, then retire them all (they merge
		// into space any stream can use) and try once more.
		pending := a.pendingLocked()
		a.mu.Unlock()
		for _, e := range pending {
			e.Synchronize()
		}
		a.mu.Lock()
		for _, e := range pending {
			a.unrefLocked(e)
		}
		a.retireLocked()
		addr, ev, err = a.allocateLocked(size, s, sh, true)
	}
	a.mu.Unlock()
	if ev != nil {
		// The wait is issued after the lock is released: on the host
		// device's inline views it blocks until the other stream reaches
		// the event, and that stream may need this lock to get there.
		// The caller uses the memory only after Allocate returns, so the
		// wait still comes first on s.
		if werr := s.Wait(ev); werr != nil {
			// Without the device-side wait, the host waits instead.
			if serr := ev.Synchronize(); serr != nil && err == nil {
				err = status.Wrap(serr, "bfc %q: waiting for the previous user of %#x", a.opts.Name, addr)
			}
		}
		a.mu.Lock()
		a.unrefLocked(ev)
		a.mu.Unlock()
	}
	return addr, err
}

// unrefLocked drops one reference to ev; the last one returns it to the
// pool. Re-recording a pooled event is safe: a wait already issued keeps
// the position it was issued against (device package semantics).
func (a *Allocator) unrefLocked(ev device.Event) {
	if ev == nil {
		return
	}
	if a.evRefs[ev]--; a.evRefs[ev] <= 0 {
		delete(a.evRefs, ev)
		a.evPool = append(a.evPool, ev)
	}
}

// PooledEvents is the number of events waiting in the pool for reuse
// (for tests).
func (a *Allocator) PooledEvents() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.evPool)
}

// errNoFit is allocateLocked's answer, when not final, for a request
// nothing could serve.
var errNoFit = status.Errorf(status.ResourceExhausted, "bfc: no fit")

// pendingLocked returns the distinct events of free chunks, each with a
// reference taken so it is not re-recorded from the pool while the caller
// waits on it without the lock.
func (a *Allocator) pendingLocked() []device.Event {
	var evs []device.Event
	seen := map[device.Event]bool{}
	for _, bin := range a.bins {
		for _, c := range bin {
			if c.ev != nil && !seen[c.ev] {
				seen[c.ev] = true
				a.evRefs[c.ev]++
				evs = append(evs, c.ev)
			}
		}
	}
	return evs
}

// allocateLocked finds or makes space for size bytes on s, for its cache
// of shard sh. When nothing fits, a final call counts the failure and
// returns the OOM error; a non-final one returns errNoFit, so the caller
// can try harder first.
func (a *Allocator) allocateLocked(size uint64, s device.Stream, sh Shard, final bool) (uint64, device.Event, error) {
	rounded := roundUp(size)
	if a.opts.StreamAware && s == nil {
		return 0, nil, status.InvalidArg("bfc %q: stream-aware allocation without a stream", a.opts.Name)
	}
	mine := func(c *chunk) bool { return c.stream == nil || c.stream == s }
	// 1. a chunk of this stream, or space never used.
	c := a.findLocked(rounded, func(c *chunk) bool {
		return !a.opts.StreamAware || mine(c)
	})
	if c == nil && a.cachedChunks() > 0 {
		// 1a. this stream's cache (of this shard), then every one,
		// goes to the bins under one event per stream before anything
		// grows or waits: the stream's own cached chunks may coalesce
		// into a fit, and memory cached by other streams or shards is
		// retired or waited for rather than grown around (so peak
		// memory and OOM are those of the bins alone).
		if own := a.findCache(s, sh); own != nil && a.flushLocked(own) {
			c = a.findLocked(rounded, mine)
		}
		if c == nil && a.flushLocked(nil) {
			c = a.findLocked(rounded, mine)
		}
	}
	if c == nil && a.opts.StreamAware && a.retireLocked() > 0 {
		// 1b. other streams' chunks whose last use has completed are
		// everybody's again: no wait, and no growth needed for them.
		c = a.findLocked(rounded, mine)
	}
	if c == nil {
		// 2. new space.
		if a.extendLocked(rounded) {
			c = a.findLocked(rounded, mine)
		}
	}
	if c == nil && a.opts.StreamAware {
		// 3. another stream's chunk, ordered after its last use.
		c = a.findLocked(rounded, func(*chunk) bool { return true })
	}
	if c == nil {
		if !final {
			return 0, nil, errNoFit
		}
		a.st.FailedAllocations++
		return 0, nil, status.Errorf(status.ResourceExhausted,
			"OOM when allocating %d bytes (rounded to %d) from allocator %q: %s",
			size, rounded, a.opts.Name, a.stateLocked())
	}
	a.removeFreeLocked(c)
	var wait device.Event
	if a.opts.StreamAware && c.stream != nil && c.stream != s && c.ev != nil {
		wait = c.ev
		a.st.CrossStreamWaits++
	}
	a.splitLocked(c, rounded)
	c.inUse = true
	c.requested = size
	c.stream = s
	if a.opts.StreamCache {
		c.sc.Store(a.cacheLocked(s, sh))
	}
	if wait == nil {
		// A waiter keeps the chunk's reference until its Wait is issued.
		a.unrefLocked(c.ev)
	}
	c.ev = nil
	c.slot = a.liveSlotLocked(c)
	a.nAllocs++
	a.nLive++
	a.insertLive(c, c.slot)
	return c.addr, wait, nil
}

// retireLocked turns every free chunk whose free event has completed into
// space no stream needs to wait for (stream and event cleared, as for space
// never used) and coalesces it with its free neighbours. It returns how
// many chunks it retired. It runs only when an allocation found nothing of
// its own stream: without it, memory freed by busy groups would stay
// fenced per stream long after its work finished, and the allocator would
// grow instead (the GPU benchmark's DLRM peak was three times the
// per-group allocators' before this). Event.Query does not block.
func (a *Allocator) retireLocked() int {
	var done []*chunk
	known := map[device.Event]bool{}
	for _, bin := range a.bins {
		for _, c := range bin {
			if c.stream == nil || c.ev == nil {
				continue
			}
			ok, seen := known[c.ev]
			if !seen {
				ok = c.ev.Query()
				known[c.ev] = ok
			}
			if ok {
				done = append(done, c)
			}
		}
	}
	n := 0
	for _, c := range done {
		// An earlier retirement in this loop may have merged c away.
		if a.chunks[c.addr] != c || c.inUse || c.stream == nil {
			continue
		}
		a.removeFreeLocked(c)
		a.unrefLocked(c.ev)
		c.stream, c.ev = nil, nil
		if nx := c.next; nx != nil && !nx.inUse && a.mergeable(c, nx) {
			a.removeFreeLocked(nx)
			a.mergeLocked(c, nx)
		}
		if p := c.prev; p != nil && !p.inUse && a.mergeable(p, c) {
			a.removeFreeLocked(p)
			a.mergeLocked(p, c)
			c = p
		}
		a.insertFreeLocked(c)
		n++
	}
	a.st.Retired += int64(n)
	return n
}

// findLocked is best fit: the smallest chunk (lowest address on ties) of
// at least size bytes that ok accepts.
func (a *Allocator) findLocked(size uint64, ok func(*chunk) bool) *chunk {
	for b := binOf(size); b < numBins; b++ {
		bin := a.bins[b]
		i := sort.Search(len(bin), func(i int) bool { return bin[i].size >= size })
		for ; i < len(bin); i++ {
			if ok(bin[i]) {
				return bin[i]
			}
		}
	}
	return nil
}

// splitLocked trims c (not in a bin) to size when the remainder is worth
// keeping: at least as large as what is kept, or at least
// MaxInternalFrag, as TF does. The remainder is free and inherits c's stream and event.
func (a *Allocator) splitLocked(c *chunk, size uint64) {
	if c.size < 2*size && c.size-size < a.opts.MaxInternalFrag {
		return
	}
	var r *chunk
	if n := len(a.spare); n > 0 {
		r, a.spare[n-1], a.spare = a.spare[n-1], nil, a.spare[:n-1]
	} else {
		r = new(chunk)
	}
	*r = chunk{addr: c.addr + size, size: c.size - size, region: c.region,
		prev: c, next: c.next, stream: c.stream, ev: c.ev, seq: c.seq}
	if c.ev != nil {
		a.evRefs[c.ev]++
	}
	if c.next != nil {
		c.next.prev = r
	}
	c.next = r
	c.size = size
	a.chunks[r.addr] = r
	a.insertFreeLocked(r)
}

// extendLocked adds a region big enough for size bytes; false when the
// limit or the backend says no.
func (a *Allocator) extendLocked(size uint64) bool {
	avail := a.opts.Limit - a.st.RegionBytes
	if size > avail {
		return false
	}
	grew := false
	for a.nextRegion < size {
		a.nextRegion *= 2
		grew = true
	}
	bytes := min(a.nextRegion, avail)
	if a.opts.ExtendLimit > 0 && bytes > a.opts.ExtendLimit {
		bytes = max(roundUp(a.opts.ExtendLimit), size)
	}
	base, err := a.backend.Alloc(bytes)
	for err != nil {
		// Back off by a tenth until the request no longer fits, as TF does.
		bytes = roundUp(bytes / 10 * 9)
		if bytes < size {
			return false
		}
		base, err = a.backend.Alloc(bytes)
	}
	if !grew {
		a.nextRegion *= 2
	}
	r := &region{base: base, size: bytes,
		mids: make([]atomic.Pointer[mid], numMids(bytes))}
	i := sort.Search(len(a.regions), func(i int) bool { return a.regions[i].base > base })
	a.regions = append(a.regions, nil)
	copy(a.regions[i+1:], a.regions[i:])
	a.regions[i] = r
	live := append([]*region(nil), a.regions...)
	a.live.Store(&live)
	a.st.Regions++
	a.st.RegionBytes += bytes
	a.st.Extends++
	a.st.LargestExtend = max(a.st.LargestExtend, bytes)
	c := &chunk{addr: base, size: bytes, region: r}
	a.chunks[base] = c
	a.insertFreeLocked(c)
	return true
}

// Free returns the allocation at addr. In stream-aware mode an event is
// recorded on the stream that allocated it, so a later user on another
// stream can wait for this stream's work on the memory to finish.
func (a *Allocator) Free(addr uint64) error {
	one := [1]uint64{addr}
	return a.FreeAll(one[:])
}

// FreeAll returns several allocations at once. With stream caches each
// chunk joins its stream's cache, without the mutex and without an event
// (a run of chunks of one stream under one lock of its cache). Otherwise
// the mutex is taken once for the whole batch (twice in stream-aware
// mode, where one event is recorded per stream the chunks belong to,
// outside the mutex). Every live address is freed; the first that is
// not live is the error.
func (a *Allocator) FreeAll(addrs []uint64) error {
	var first error
	notLive := func(addr uint64) {
		if first == nil {
			first = status.InvalidArg("bfc %q: free of %#x, which is not a live allocation", a.opts.Name, addr)
		}
	}
	if a.opts.StreamCache {
		return a.toCache(addrs)
	}
	var buf [16]*chunk
	cs := buf[:0]
	a.mu.Lock()
	for _, addr := range addrs {
		c := a.claim(addr)
		if c == nil {
			notLive(addr)
			continue
		}
		a.nLive--
		// The chunk stays in use (for the chunk structure) while its
		// event is recorded outside the mutex; a second Free of it fails
		// meanwhile.
		c.freeing = true
		cs = append(cs, c)
	}
	if len(cs) == 0 {
		a.mu.Unlock()
		return first
	}
	if !a.opts.StreamAware {
		for _, c := range cs {
			a.freeSeq++
			a.releaseLocked(c, nil, a.freeSeq)
		}
		a.mu.Unlock()
		return first
	}
	// One event per stream, from the pool where it has one.
	type rec struct {
		sc  *streamCache
		ev  device.Event
		seq uint64
		err error
	}
	var rbuf [2]rec
	recs := rbuf[:0]
	var wbuf [16]int
	which := wbuf[:0]
	for _, c := range cs {
		k := 0
		for k < len(recs) && recs[k].sc.s != c.stream {
			k++
		}
		if k == len(recs) {
			r := rec{sc: a.cacheLocked(c.stream, 0)}
			if n := len(a.evPool); n > 0 {
				r.ev, a.evPool = a.evPool[n-1], a.evPool[:n-1]
			}
			recs = append(recs, r)
		}
		which = append(which, k)
	}
	a.mu.Unlock()
	for k := range recs {
		r := &recs[k]
		if r.ev == nil {
			var err error
			if r.ev, err = a.opts.NewEvent(); err != nil {
				r.err = status.Wrap(err, "bfc %q: event for a free", a.opts.Name)
				continue
			}
		}
		var rerr error
		if r.seq, rerr = a.record(r.sc, r.ev); rerr != nil {
			// The chunks are not known to be free in any stream's order
			// until the stream is done with them.
			if serr := r.sc.s.Synchronize(); serr != nil {
				r.err = status.Wrap(rerr, "bfc %q: event for a free", a.opts.Name)
			}
		}
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	// Each recorded event holds a reference through the loop: a chunk
	// that merges with a neighbour freed meanwhile under a later event of
	// its stream drops its own, which must not reach the pool while more
	// chunks are to take it.
	for k := range recs {
		if r := &recs[k]; r.err == nil {
			a.evRefs[r.ev]++
		}
	}
	for i, c := range cs {
		r := &recs[which[i]]
		if r.err != nil {
			// Still in use: the caller may free it again.
			c.freeing = false
			a.nLive++ // not a new allocation
			a.insertLive(c, c.slot)
			if first == nil {
				first = status.Wrap(r.err, "free of %#x", c.addr)
			}
			continue
		}
		a.evRefs[r.ev]++
		a.releaseLocked(c, r.ev, r.seq)
	}
	for k := range recs {
		r := &recs[k]
		if r.err == nil {
			a.unrefLocked(r.ev)
		} else if r.ev != nil {
			a.evPool = append(a.evPool, r.ev) // never recorded: reusable
		}
	}
	return first
}

// releaseLocked makes in-use chunk c free, with its free event ev (nil
// without stream awareness) and sequence number, and merges it with its
// free neighbours.
func (a *Allocator) releaseLocked(c *chunk, ev device.Event, seq uint64) {
	c.freeing = false
	c.ev = ev
	c.seq = seq
	c.inUse = false
	c.requested = 0
	c.pending = false // counted out when it left the live index
	c.sc.Store(nil)
	c.slot = nil
	if !a.opts.StreamAware {
		c.stream = nil
	}
	if n := c.next; n != nil && !n.inUse && a.mergeable(c, n) {
		a.removeFreeLocked(n)
		a.mergeLocked(c, n)
	}
	if p := c.prev; p != nil && !p.inUse && a.mergeable(p, c) {
		a.removeFreeLocked(p)
		a.mergeLocked(p, c)
		c = p
	}
	a.insertFreeLocked(c)
}

// mergeable says whether two free neighbours may become one chunk: space
// of the same stream, whose later event covers both, or space no stream
// needs to wait for (never used, or retired). Free space never joins a
// stream's chunk: that would fence it behind the stream's pending work
// (a freed tensor next to a fresh region's untouched tail would take the
// whole tail, and every other stream would grow instead of using it).
// Without stream awareness every chunk's stream is nil, so all merge.
func (a *Allocator) mergeable(x, y *chunk) bool {
	return x.stream == y.stream
}

// mergeLocked absorbs y (x's next, not in a bin) into x.
func (a *Allocator) mergeLocked(x, y *chunk) {
	x.size += y.size
	x.next = y.next
	if y.next != nil {
		y.next.prev = x
	}
	if x.stream == nil || (y.stream != nil && y.seq > x.seq) {
		a.unrefLocked(x.ev)
		x.stream, x.ev, x.seq = y.stream, y.ev, y.seq
	} else {
		a.unrefLocked(y.ev)
	}
	delete(a.chunks, y.addr)
	if len(a.spare) < maxSpare {
		*y = chunk{}
		a.spare = append(a.spare, y)
	}
}

// Name is the allocator's name from its Options.
func (a *Allocator) Name() string { return a.opts.Name }

// Limit is the most bytes the allocator's regions may hold together (fixed
// at New): the bound that allocations sized by user data are checked
// against before anyone asks for memory.
func (a *Allocator) Limit() uint64 { return a.opts.Limit }

// RequestedSize returns the size asked for the allocation at addr, and
// ChunkSize what it occupies; both 0 when addr is not live.
func (a *Allocator) RequestedSize(addr uint64) uint64 {
	if c := a.liveChunk(addr); c != nil {
		return c.requested
	}
	return 0
}

// ChunkSize returns the bytes the allocation at addr occupies (a multiple
// of MinAlloc), 0 when addr is not live.
func (a *Allocator) ChunkSize(addr uint64) uint64 {
	if c := a.liveChunk(addr); c != nil {
		return c.size
	}
	return 0
}

// liveChunk is the live chunk at addr, or nil.
func (a *Allocator) liveChunk(addr uint64) *chunk {
	if p := a.liveSlot(addr); p != nil {
		return p.Load()
	}
	return nil
}

// Stats returns a snapshot of the counters.
func (a *Allocator) Stats() Stats {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.statsLocked()
}

func (a *Allocator) statsLocked() Stats {
	st := a.st
	st.BytesInUse, st.PeakBytesInUse = a.inUse.Load(), a.peak.Load()
	st.Allocations, st.LiveAllocations = a.nAllocs, int(a.nLive)
	for b := range a.bins {
		for _, c := range a.bins[b] {
			st.FreeBytes += c.size
			st.LargestFreeChunk = max(st.LargestFreeChunk, c.size)
		}
	}
	a.eachCache(func(sc *streamCache) {
		sc.mu.Lock()
		st.Allocations += sc.allocs
		st.LiveAllocations += int(sc.live)
		for _, c := range sc.chunks {
			st.CachedBytes += c.size
			st.LargestFreeChunk = max(st.LargestFreeChunk, c.size)
		}
		sc.mu.Unlock()
	})
	st.FreeBytes += st.CachedBytes
	if st.FreeBytes > 0 {
		st.Fragmentation = 1 - float64(st.LargestFreeChunk)/float64(st.FreeBytes)
	}
	return st
}

func (a *Allocator) stateLocked() string {
	st := a.statsLocked()
	return fmt.Sprintf("in use %d bytes in %d allocations, limit %d, largest free chunk %d, free %d, %d regions of %d bytes",
		st.BytesInUse, st.LiveAllocations, st.Limit, st.LargestFreeChunk, st.FreeBytes, st.Regions, st.RegionBytes)
}

// Close returns every region to the backend. Allocations still live are
// lost; the allocator must not be used afterwards.
func (a *Allocator) Close() {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, r := range a.regions {
		a.backend.Free(r.base)
	}
	a.regions = nil
	a.chunks = map[uint64]*chunk{}
	a.bins = [numBins][]*chunk{}
	a.streams.Store(nil)
	a.live.Store(nil)
}
