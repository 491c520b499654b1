package exec

import (
	"errors"
	"sync"

	"mstream/bfc"
	"mstream/device"
	"mstream/hostmem"
	"mstream/status"
	"mstream/tensor"
	"mstream/tensorholder"
)

// buffer is one allocation a step owns: a kernel output or a feed's device
// copy (or the one block all the step's feeds share). refs counts the data
// edges and fetches still to read it; users are the step streams (indices)
// that touched it.
type buffer struct {
	k     uintptr   // its key in the tracker
	also  []uintptr // further keys: the views of a shared block
	addr  uint64
	alloc *bfc.Allocator
	refs  int32
	users []int
	u0    [2]int // users' first storage: most buffers have one or two
	// small marks a buffer of at most bfc.MinAlloc bytes that a
	// recycling tracker keeps for the next small output instead of
	// freeing it; chunk views its whole chunk and t is the tensor the
	// allocation handed out, reused with the record.
	small bool
	chunk []byte
	// t is the tensor handed out, its shape held up to rank 4: the shape
	// goes with the tensor, which goes with the buffer, so an output's
	// shape costs no allocation of its own.
	t tensor.Header
	// live says the tracker holds it (in bufs): a node's fresh buffers
	// are checked without a lookup.
	live bool
}

func (b *buffer) use(s int) {
	if s < 0 {
		return
	}
	for _, u := range b.users {
		if u == s {
			return
		}
	}
	if b.users == nil {
		b.users = b.u0[:0]
	}
	b.users = append(b.users, s)
}

// tracker frees a step's buffers when their last reader is done. A buffer
// read on streams other than the one that frees it goes to the holder,
// which frees it once each of those streams has passed its use; a buffer
// touched by one stream only is freed at once, since that stream's own
// order covers the reuse.
type tracker struct {
	mu      sync.Mutex
	bufs    bufIndex
	holder  *tensorholder.Holder
	streams []device.Stream // step streams by index
	err     error           // the first failed free, an internal error
	// hold, when set, replaces holder.HoldOn for a buffer other streams
	// than cur still use (the GPU step holds on events instead of host
	// callbacks); it works out those streams from b.users itself, so a
	// release allocates neither a closure nor a list of streams.
	hold func(b *buffer, cur int)
	// recycle keeps the records of freed buffers in spare for the next
	// ones (the pool step, whose tracker lives from step to step and
	// whose frees are immediate: nothing refers to a record once its
	// buffer is freed).
	recycle bool
	spare   []*buffer
	// small holds, in recycle mode, freed buffers of at most
	// bfc.MinAlloc bytes (the least a chunk holds) with their records
	// and tensors: the next small output takes one without asking the
	// allocator (takeSmall), so a step of scalar ops calls the
	// allocator a few times rather than twice per node. drain gives
	// them back, so nothing is held between steps.
	small []*buffer
	// seen caches, by key, buffers lookups found, so that a value read
	// again (a loop's, handed from slot to slot) costs no index probe: an
	// entry counts only while its buffer is live under that key, which
	// a dropped, freed or reused record is not (lookupLocked). Only in
	// recycle mode, whose records change key and liveness under mu
	// alone (the device step writes its arena's records before it
	// tracks them).
	seen [64]seenBuf
	// drained is drain's list and addrs its chunks' addresses, kept
	// for the next step's drain.
	drained []*buffer
	addrs   []uint64
}

type seenBuf struct {
	k uintptr
	b *buffer
}

// maxSmall bounds the small buffers a tracker keeps: a chain needs two
// and a wide graph one; more would only hold memory the allocator could
// hand elsewhere.
const maxSmall = 64

func newTracker(h *tensorholder.Holder, streams []device.Stream) *tracker {
	return &tracker{holder: h, streams: streams}
}

// key identifies the buffer behind a tensor; 0 when it has none (strings,
// empty views).
func key(t *tensor.Tensor) uintptr {
	if t == nil || t.DType == tensor.String {
		return 0
	}
	return hostmem.Addr(t.Buf)
}

// addShared registers one buffer viewed by several tensors (disjoint
// parts of it): each one's reads count against b.refs, and b is freed
// when the last is done.
func (tr *tracker) addShared(ts []*tensor.Tensor, b *buffer) {
	b.k = key(ts[0])
	b.also = b.also[:0]
	for _, t := range ts[1:] {
		b.also = append(b.also, key(t))
	}
	tr.mu.Lock()
	b.live = true
	tr.bufs.put(b.k, b)
	for _, k := range b.also {
		tr.bufs.put(k, b)
	}
	tr.mu.Unlock()
}

// add registers a new buffer viewed by t.
func (tr *tracker) add(t *tensor.Tensor, b *buffer) {
	b.k = key(t)
	tr.mu.Lock()
	b.live = true
	tr.bufs.put(b.k, b)
	tr.mu.Unlock()
}

// newBuffer registers a new buffer, the chunk at addr of alloc (viewed by
// chunk), its record a spare one where the tracker recycles them.
func (tr *tracker) newBuffer(addr uint64, alloc *bfc.Allocator, chunk []byte, small bool) *buffer {
	k := hostmem.Addr(chunk)
	tr.mu.Lock()
	var b *buffer
	if n := len(tr.spare); n > 0 {
		b = tr.spare[n-1]
		tr.spare = tr.spare[:n-1]
	} else {
		b = new(buffer)
	}
	*b = buffer{k: k, addr: addr, alloc: alloc, chunk: chunk, small: small, live: true}
	tr.bufs.put(k, b)
	tr.mu.Unlock()
	return b
}

// takeSmall returns a kept small buffer of alloc, registered for its new
// tensor, or nil when there is none (or the tracker keeps none).
func (tr *tracker) takeSmall(alloc *bfc.Allocator) *buffer {
	if !tr.recycle {
		return nil
	}
	tr.mu.Lock()
	n := len(tr.small)
	if n == 0 || tr.small[n-1].alloc != alloc {
		tr.mu.Unlock()
		return nil
	}
	b := tr.small[n-1]
	tr.small[n-1] = nil
	tr.small = tr.small[:n-1]
	b.live = true // still under its key (letGoLocked)
	tr.mu.Unlock()
	return b
}

// letGoLocked takes b, its last reference given back, out of use: a
// small one, where there is room, is kept for the next small output
// (takeSmall), still under its key but not live, so that the next use
// costs no index update; any other leaves the index, and the caller frees
// it (true).
func (tr *tracker) letGoLocked(b *buffer) bool {
	if b.small && tr.recycle && len(tr.small) < maxSmall {
		b.live, b.refs, b.users = false, 0, b.users[:0]
		tr.small = append(tr.small, b)
		return false
	}
	tr.dropLocked(b)
	return true
}

// lookupLocked is the live buffer behind t, or nil.
func (tr *tracker) lookupLocked(t *tensor.Tensor) *buffer {
	k := key(t)
	if !tr.recycle {
		if b := tr.bufs.get(k); b != nil && b.live {
			return b
		}
		return nil
	}
	// Chunks are bfc.MinAlloc-aligned: the bits above pick the entry.
	c := &tr.seen[(k/bfc.MinAlloc)%uintptr(len(tr.seen))]
	if c.k == k && c.b != nil && c.b.live && c.b.k == k {
		return c.b
	}
	if b := tr.bufs.get(k); b != nil && b.live {
		if b.k == k {
			c.k, c.b = k, b
		}
		return b
	}
	return nil
}

// retire is the bookkeeping after a node ran on step stream cur (-1: no
// stream): its outputs take their readers' references, its inputs give one
// back each, and what it allocated but did not output goes back.
func (tr *tracker) retire(outs []*tensor.Tensor, uses []int32, ins []*tensor.Tensor, fresh []*buffer, cur int) {
	tr.retireAdopt(outs, uses, ins, fresh, cur, false)
}

// retireAdopt is retire that, with adopt, first registers fresh, whose
// keys are set but which the tracker does not hold yet: the device step
// registers a node's new buffers here, under the lock retire takes
// anyway, rather than each under a lock of its own as it is allocated
// (lanes launching at once contend for the step's one tracker; nothing
// looks a node's new buffers up before it retires).
func (tr *tracker) retireAdopt(outs []*tensor.Tensor, uses []int32, ins []*tensor.Tensor, fresh []*buffer, cur int, adopt bool) {
	var fb [8]*buffer
	free := fb[:0]
	tr.mu.Lock()
	if adopt {
		for _, b := range fresh {
			b.live = true
			tr.bufs.put(b.k, b)
		}
	}
	for j, t := range outs {
		if t == nil {
			continue // dead
		}
		var b *buffer
		if j < len(fresh) && fresh[j].t.Tensor() == t && fresh[j].live {
			// Output j as the allocation handed it out: a kernel
			// allocates its outputs in order.
			b = fresh[j]
		} else {
			b = tr.lookupLocked(t)
		}
		if b != nil {
			b.refs += uses[j]
			b.use(cur)
		}
	}
	for _, t := range ins {
		if t == nil {
			continue // dead
		}
		if b := tr.lookupLocked(t); b != nil {
			b.use(cur)
			if b.refs--; b.refs == 0 && tr.letGoLocked(b) {
				free = append(free, b)
			}
		}
	}
	for _, b := range fresh {
		if b.refs == 0 && b.live && tr.letGoLocked(b) {
			free = append(free, b)
		}
	}
	tr.mu.Unlock()
	for _, b := range free {
		tr.release(b, cur)
	}
}

// unref gives back one reference to t's buffer, read on stream cur.
func (tr *tracker) unref(t *tensor.Tensor, cur int) {
	tr.mu.Lock()
	b := tr.lookupLocked(t)
	var free *buffer
	if b != nil {
		b.use(cur)
		if b.refs--; b.refs == 0 && tr.letGoLocked(b) {
			free = b
		}
	}
	tr.mu.Unlock()
	if free != nil {
		tr.release(free, cur)
	}
}

// ref takes one more reference to t's buffer, if the tracker has it (a
// feed, a constant or a string has none): the frame driver counts its
// references as it hands values on, since how often a value in a loop is
// read is known only as the loop runs.
func (tr *tracker) ref(t *tensor.Tensor) {
	tr.mu.Lock()
	if b := tr.lookupLocked(t); b != nil {
		b.refs++
	}
	tr.mu.Unlock()
}

// has says whether t's buffer is one the tracker holds.
func (tr *tracker) has(t *tensor.Tensor) bool {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return tr.lookupLocked(t) != nil
}

// settle frees what a node allocated (fresh) that no reference holds,
// once its outputs have been handed on, and empties fresh.
func (tr *tracker) settle(fresh *[]*buffer) {
	if len(*fresh) == 0 {
		return // most loop nodes only pass values on
	}
	tr.retire(nil, nil, nil, *fresh, -1)
	emptyFresh(fresh)
}

// emptyFresh empties a node's list of fresh buffers (one or two, as a
// rule) with a loop rather than clear, whose call and write-barrier
// check cost more than the stores.
func emptyFresh(fresh *[]*buffer) {
	f := *fresh
	for k := range f {
		if f[k] != nil {
			f[k] = nil
		}
	}
	*fresh = f[:0]
}

// unrefOn gives back one reference to t's buffer, read on stream user,
// freeing it as seen from stream cur when it was the last (the GPU step
// releases at launch time, in the compute stream's order, while a fetch
// reads on the D2H stream).
func (tr *tracker) unrefOn(t *tensor.Tensor, user, cur int) {
	tr.mu.Lock()
	b := tr.lookupLocked(t)
	var free *buffer
	if b != nil {
		b.use(user)
		if b.refs--; b.refs == 0 {
			free = tr.dropLocked(b)
		}
	}
	tr.mu.Unlock()
	if free != nil {
		tr.release(free, cur)
	}
}

func (tr *tracker) dropLocked(b *buffer) *buffer {
	tr.bufs.del(b.k)
	for _, k := range b.also {
		tr.bufs.del(k)
	}
	b.live = false
	return b
}

// release frees b once every stream other than cur that touched it has
// passed its work so far.
func (tr *tracker) release(b *buffer, cur int) {
	if !tr.shared(b, cur) {
		tr.free(b)
		return
	}
	if tr.hold != nil {
		tr.hold(b, cur)
		return
	}
	var others []device.Stream
	for _, u := range b.users {
		if u != cur && tr.streams[u] != nil {
			others = append(others, tr.streams[u])
		}
	}
	tr.holder.HoldOn(func() { tr.free(b) }, others)
}

// shared says whether a stream other than cur touched b (and the tracker
// holds such buffers).
func (tr *tracker) shared(b *buffer, cur int) bool {
	if tr.holder == nil {
		return false
	}
	for _, u := range b.users {
		if u != cur && tr.streams[u] != nil {
			return true
		}
	}
	return false
}

// freeChunks frees chunks of alloc a hold kept (the device step's: their
// records may be gone by then).
func (tr *tracker) freeChunks(alloc *bfc.Allocator, addrs []uint64) {
	if err := alloc.FreeAll(addrs); err != nil {
		tr.mu.Lock()
		if tr.err == nil {
			tr.err = status.Errorf(status.Internal, "step buffer: %v", err)
		}
		tr.mu.Unlock()
	}
}

func (tr *tracker) free(b *buffer) {
	err := b.alloc.Free(b.addr)
	if err == nil && !tr.recycle {
		return
	}
	tr.mu.Lock()
	if err != nil && tr.err == nil {
		tr.err = status.Errorf(status.Internal, "step buffer: %v", err)
	}
	if tr.recycle {
		*b = buffer{}
		tr.spare = append(tr.spare, b)
	}
	tr.mu.Unlock()
}

// drain frees every buffer still held, after the step's streams have all
// passed its work (the final event) or when there are no streams. The
// tracker is empty afterwards, ready for another step.
func (tr *tracker) drain() {
	tr.mu.Lock()
	bufs := tr.drained[:0]
	tr.drained = nil // this drain's until it ends
	for _, sl := range tr.bufs.slots {
		// A shared block once, under its first view's key; a kept
		// small buffer (not live) with the small ones below.
		if b := sl.b; b != nil && sl.k == b.k && b.live {
			b.live = false
			bufs = append(bufs, b)
		}
	}
	tr.bufs.reset()
	bufs = append(bufs, tr.small...)
	clear(tr.small)
	tr.small = tr.small[:0]
	addrs := tr.addrs[:0]
	tr.addrs = nil
	tr.mu.Unlock()
	// The streams have passed the step's work, so every buffer is
	// free to go at once (the one release rule with no users but the
	// freeing stream's): a run of one allocator's chunks in one
	// FreeAll, which takes their cache's lock once rather than per
	// buffer, and the records back under one lock of mu.
	var err error
	for i, b := range bufs {
		if i > 0 && b.alloc != bufs[i-1].alloc {
			err = errors.Join(err, bufs[i-1].alloc.FreeAll(addrs))
			addrs = addrs[:0]
		}
		b.users = nil
		addrs = append(addrs, b.addr)
	}
	if len(bufs) > 0 {
		err = errors.Join(err, bufs[len(bufs)-1].alloc.FreeAll(addrs))
	}
	tr.mu.Lock()
	if err != nil && tr.err == nil {
		tr.err = status.Errorf(status.Internal, "step buffer: %v", err)
	}
	if tr.recycle {
		for _, b := range bufs {
			*b = buffer{}
			tr.spare = append(tr.spare, b)
		}
	}
	clear(bufs)
	tr.drained, tr.addrs = bufs[:0], addrs[:0]
	tr.mu.Unlock()
}

// live is the number of buffers the step still holds.
func (tr *tracker) live() int {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	n := 0
	for _, sl := range tr.bufs.slots {
		if b := sl.b; b != nil && sl.k == b.k && b.live {
			n++
		}
	}
	return n
}
