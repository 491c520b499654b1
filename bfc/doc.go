// Package bfc is a best-fit-with-coalescing allocator over device address
// ranges, after the design of TensorFlow's BFC allocator, with the stream
// awareness of NVIDIA's Multiple Stream TensorFlow.
//
// # Overview
//
// The allocator never touches the memory it manages. It asks a Backend for
// regions (cuMemAlloc on a GPU, hostmem on the host device, see
// HostBackend), and hands out addresses inside them as uint64s, so the same
// code serves device memory that Go cannot point at.
//
// Every region is tiled by chunks: contiguous ranges, each either in use or
// free, linked to their address neighbours. Sizes are rounded up to
// MinAlloc (256 bytes), which is also the alignment of every chunk, so a
// chunk boundary is always a valid start for any dtype and for vectorised
// device loads.
//
// Free chunks sit in bins by size class: bin i holds sizes in
// [256<<i, 256<<(i+1)), and each bin is ordered by (size, address). An
// allocation searches from the bin of its rounded size upward and takes the
// first chunk that is large enough: the smallest fit, lowest address on
// ties, which keeps the low end of regions dense. When the chunk is at
// least twice the request, or the remainder reaches MaxInternalFrag
// (128 MiB unless set; TF's fragmentation_fraction of the limit), it is split
// and the tail goes back to a bin; otherwise the slack stays inside the
// chunk (TF's rule: splitting small remainders buys fragments nobody can
// use). A freed chunk merges with free neighbours at once, so free space is
// always as large as it can be. The record of a chunk merged away waits in
// a short list (spare) for the next split, so a steady allocate/free
// cycle allocates no Go memory.
//
// # Growth
//
// With AllowGrowth the first region is 2 MiB; each later growth is twice
// the last (TF's curr_region_allocation_bytes), or the doubling that first
// fits the request, never more than what remains of Limit. ExtendLimit
// (TF_BFC_EXTEND_LIMIT_MB) caps a single growth, so a long-running process
// takes memory in steps of bounded size rather than grabbing half the
// device at once; a request larger than the cap gets a region of its own
// size. When the backend refuses, the allocator retries at nine tenths of
// the size until the request no longer fits. Without AllowGrowth the first
// allocation takes the whole Limit as one region, as TF does. Regions are
// never returned before Close: freeing device memory synchronises the
// device.
//
// # Streams
//
// In stream-aware mode (TF_GPU_STREAM_AWARE_BFC) one allocator serves all
// stream groups of a device. Memory freed by stream A may still be read by
// work queued on A; handing it to stream B is safe only if B's later work
// runs after A's. So Free records a fresh event on the stream that
// allocated the chunk, and the free chunk keeps (stream, event). Allocate
// with stream S looks, in order, for
//
//  1. a free chunk last used by S, or never used: no wait needed, since
//     S's own order covers its earlier work;
//  2. a free chunk of another stream whose free event has already
//     completed: before growing, the allocator queries the events of free
//     chunks (Event.Query never blocks) and clears the stream of every
//     chunk whose last use is over, coalescing it with its neighbours
//     (Stats.Retired counts them); such space needs no wait;
//  3. new space from a region growth;
//  4. any free chunk: S then Waits on the chunk's event (a device-side
//     wait: neither the host nor the device is synchronised) and the wait
//     is counted in Stats.CrossStreamWaits.
//  5. when even that fails: the host waits, with the mutex released, for
//     the events of all free chunks, retires them (they coalesce), and
//     the search runs once more before the allocation fails as OOM. Only
//     an allocation that would otherwise fail blocks the host.
//
// Coalescing across streams: two free neighbours merge only when they were
// last used by the same stream, or neither needs a wait (never used, or
// retired). Two chunks of
// one stream merge into a chunk that keeps the event of the later free;
// since both events are in the same stream, the later one completing
// implies the earlier did. Chunks of different streams are never merged,
// because the result would need to carry two events (and any user would
// wait on both); keeping them apart costs some fragmentation under heavy
// cross-stream churn, but keeps every free chunk's ordering exact in one
// event. When such chunks are reused, each waits on its own event. A split
// remainder inherits the stream and event of the chunk it came from. Free
// space that needs no wait never merges into a stream's chunk: it would
// then wait behind that stream's pending work, and other streams would
// grow rather than use it (before this rule, a freed tensor next to a
// fresh region's untouched tail fenced the whole tail, and the H100
// benchmark's stream-aware allocator held 16-32 GiB of regions for 2.7 GiB
// in use).
//
// # Stream caches
//
// With Options.StreamCache (every group allocator sets it),
// the stream-aware allocator is as fast as one allocator per stream for a
// stream that reuses its own memory, which a step's buffers do step after
// step. Free puts the chunk in its stream's cache: a list of that
// stream's freed chunks, ordered by (size, address), with its own small
// mutex and no event per free; the chunk leaves BytesInUse and LiveAllocations at
// once (Stats.CachedBytes counts it, within FreeBytes) but stays out of
// the bins. Allocate on stream S first takes the best fit from S's cache
// (the smallest chunk of at least the request and under twice it; a
// cached chunk is not split), again without the shared mutex and without
// an event, since S's own order covers its earlier work. Neither takes
// Allocator.mu, so four groups stepping at once meet only on their own
// streams' caches. Each takes one lock, its stream cache's, and no hash
// lookup: the allocator's per-stream records (cache and record mutex) are
// a short copy-on-write list scanned without a lock, and a live chunk
// points at its stream's cache, so a Free finds its chunk in the live
// index (below) and learns there where it goes; FreeAll puts a run of one
// stream's chunks in its cache under one lock. That is what a per-group
// allocator costs (its mutex per Allocate and Free), minus the search of
// the bins, splitting and merging.
//
// Only when S's cache has no fit does the allocation take the mutex and
// search as above; when step 1 finds nothing, S's own cache, then every
// stream's, is drained to the bins, and step 1 runs again before steps
// 2-5. A drained chunk needs an event after its stream's last use of it:
// every markEvery (32) frees, a cache records its mark, one event of its
// own, on its stream (outside Allocator.mu and outside the cache's mutex:
// the Free that is due takes the cache's spare event under the mutex,
// records it after releasing it, and then makes it the mark, the old mark
// becoming the spare; the stream's other threads free and allocate
// meanwhile), and a drain gives the mark to the chunks freed before it
// was recorded (the cache takes another event for its next mark) and one
// event recorded at the drain to the rest. Either is correct however long
// ago a chunk was freed, since each was freed after its stream's last use
// of it was enqueued; the mark, recorded earlier, has more often completed
// when another stream looks, so that memory is retired (step 2) rather
// than grown around or waited for. A step of 40 frees thus costs about
// one record per stream, outside the shared mutex, and none under it in
// the steady state; and since the caches are drained before the
// allocator retires, grows, waits or fails, cached memory never causes
// growth or an OOM that the bins alone would not (the last resort waits
// for the drained chunks' events too). Cross-stream reuse goes through
// the bins only, so a chunk freed on A reaches B either after A's event
// completed (retired, step 2) or with B waiting on it (step 4). While a
// drain frees chunks under two events, each holds a reference, so that
// merges with a neighbour under the later event never return the other
// to the pool while more chunks are to take it.
// A cache has no bound of its own: what it holds is what its stream freed
// and has not taken back, at most the stream's working set, which
// per-group allocators would hold as well.
//
// Without stream awareness (a group's own allocator) the cache is that of
// the stream an allocation names, nil included (the host's pool step
// names none), and it works the same way but for the events: a cached
// chunk is free memory at once, so no mark is recorded and a drain
// releases the chunks to the bins as a Free would. The pool step's
// buffers above bfc.MinAlloc so come back in the sizes the next step
// asks for without the search, split and merge (the bundled model at a
// batch of one spent about 12% of its CPU per Run in Allocate and Free).
//
// Such an allocator keeps several caches per stream, its shards
// (AllocateShard, Shard; at most eight): concurrent Runs on the host all
// allocate for the nil stream, and through one cache they met on its
// mutex at every Allocate and Free (the bundled model at two client
// threads spent a quarter of its CPU there, most of it spinning). Each
// step state of a plan takes a shard when it is made (NextShard, round
// robin over shards 1-7; shard 0 is plain Allocate's: constants, feed and
// fetch packs) and keeps it, so up to seven Runs in flight at once, each
// on a state of its own, use different caches; more, or the states of
// several plans, wrap onto shared ones (still correct: a cache is locked). A chunk goes back to the cache it was
// allocated for (chunk.sc), whichever thread frees it; an allocation that
// misses drains its own shard's cache first, then every cache, as above,
// so memory cached by one shard serves another before anything grows.
// Finding a cache reads only the copy-on-write list, which holds each
// cache's key, and each cache counts its own chunks: a cached Allocate
// or Free writes no line another shard's thread writes, but for
// BytesInUse and the live index's slots. A stream-aware allocator
// ignores the shard: its record mutex, one per stream, orders the
// stream's events.
//
// Without stream caches, FreeAll frees a batch (a step's buffers) with one
// event per stream the chunks belong to and one acquisition of the mutex
// for the whole batch, instead of an event and an acquisition per buffer;
// its chunks of one stream share the event (evRefs counts each) and the
// sequence number.
//
// # The live index
//
// Every live allocation is in the live index, through which Free finds
// its chunk (and a second Free of it fails) without a lock: TF's region
// handles, one slot per MinAlloc bytes of each region holding the live
// chunk that starts there, made in leaves of 512 slots (128 KiB of
// address space), reached through mids of 64 leaves (8 MiB), both made
// only where a chunk was allocated, so at most 8 bytes per 256 of regions
// and usually far less; they stay until Close. Regions are found by a
// binary search of a copy-on-write list. A slot changes
// (atomically) only under Allocator.mu or under the chunk's stream
// cache's mutex, which also guard the allocation counts (the allocator's
// and each cache's, summed by Stats); BytesInUse and PeakBytesInUse are
// atomics. A chunk is at every moment exactly one of: live (in the
// index), cached (in its stream's cache, pending), on its way to the bins
// (freeing: out of the index, its event being recorded outside the mutex
// by a stream-aware Free without caches), or free (in a bin); Check, which
// takes every one of those locks, recounts all four.
//
// Without stream awareness, free chunks carry no stream and merge freely;
// the caller (tensorholder) is then responsible for freeing memory only
// when no stream can still touch it, as in stock TF.
//
// # Invariants
//
// These hold whenever no lock is held (Check takes Allocator.mu and every
// cache's, and verifies all of them by recount; the property tests call
// it after every operation):
//
//   - chunks tile each region exactly, in address order, with consistent
//     links; so no two live chunks overlap and all lie within regions;
//   - every free chunk is in exactly one bin, the bin of its size, and no
//     live chunk is in a bin; bins are ordered by (size, address);
//   - no two adjacent free chunks are mergeable (same stream, or both never
//     used): coalescing is complete;
//   - every chunk in a stream's cache is in use for the chunk structure,
//     pending, of that stream, and in no other cache or bin; caches are
//     ordered by (size, address); the live index holds exactly the live
//     chunks, each under its own address;
//   - BytesInUse, LiveAllocations, Regions and RegionBytes equal a recount;
//     RegionBytes never exceeds Limit.
//
// # Errors
//
// Out of memory is a status.ResourceExhausted error naming the size asked,
// the rounded size, the allocator, and its state: bytes and allocations in
// use, limit, largest free chunk, free bytes and regions. The executor
// prefixes the node name. The allocator stays usable.
//
// # Locking
//
// Allocator.mu guards the chunk structure, the bins, the regions, the
// event pool and the rest of the stats; functions named fooLocked expect
// it held (streamCache.takeLocked and putLocked expect the cache's mutex).
// The lock order is Allocator.mu, then a stream cache's mutex, then a
// stream's record mutex, then the backend's and streams' own locks; none
// of those may call back into the allocator. The stream-cache paths of
// Allocate and Free take only a cache's mutex, and every markEvery frees
// a Free records the cache's next mark under the stream's record mutex
// alone. While holding Allocator.mu the allocator calls Backend.Alloc and
// Backend.Free, Event.Query (retiring), which never blocks, and
// Stream.Record when it drains the caches (an allocation that missed its
// cache: rare in the steady state), which only enqueues.
// A stream-aware Free without caches makes and records its event outside
// mu (the chunk is freeing meanwhile), under a mutex of the chunk's
// stream (its record's recMu) that gives the stream's frees sequence
// numbers in the order of their records (only one stream's chunks ever
// merge, so only their order matters, and streams record in parallel); Stream.Record
// only enqueues (or, on a host device's inline stream view, completes
// the event at once). Stream.Wait for a reused chunk is called after the
// mutex is released and before Allocate returns: on an inline view it
// blocks the running stream item until the other stream gets there, and
// that stream may need the mutex (a free) to do so. Nothing under the
// mutex blocks on a device.
package bfc
