package bfc

import (
	"sort"
	"sync"

	"mstream/hostmem"
	"mstream/status"
)

// HostBackend backs regions with Go memory from hostmem.Alloc, so the
// allocator runs on the host device, and turns an allocation's address back
// into a []byte. Regions stay reachable from the backend until Free.
type HostBackend struct {
	mu      sync.Mutex
	regions []hostRegion // ordered by base
	// Max, when non-zero, makes Alloc fail for regions larger than Max
	// bytes, to simulate a device that cannot give what the limit allows.
	Max uint64
}

type hostRegion struct {
	base uint64
	buf  []byte
}

// Alloc allocates a zeroed region aligned to MinAlloc.
func (h *HostBackend) Alloc(size uint64) (uint64, error) {
	if h.Max > 0 && size > h.Max {
		return 0, status.Errorf(status.ResourceExhausted, "host backend: region of %d bytes over %d", size, h.Max)
	}
	raw := hostmem.Alloc(int(size) + MinAlloc)
	off := (MinAlloc - uint64(hostmem.Addr(raw))%MinAlloc) % MinAlloc
	buf := raw[off : off+size : off+size]
	base := uint64(hostmem.Addr(raw)) + off
	h.mu.Lock()
	defer h.mu.Unlock()
	i := sort.Search(len(h.regions), func(i int) bool { return h.regions[i].base > base })
	h.regions = append(h.regions, hostRegion{})
	copy(h.regions[i+1:], h.regions[i:])
	h.regions[i] = hostRegion{base: base, buf: buf}
	return base, nil
}

// Free drops the region at base.
func (h *HostBackend) Free(base uint64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for i, r := range h.regions {
		if r.base == base {
			h.regions = append(h.regions[:i], h.regions[i+1:]...)
			return
		}
	}
}

// Bytes returns the memory [addr, addr+size), which must lie inside one
// region; nil otherwise.
func (h *HostBackend) Bytes(addr, size uint64) []byte {
	h.mu.Lock()
	defer h.mu.Unlock()
	i := sort.Search(len(h.regions), func(i int) bool { return h.regions[i].base > addr }) - 1
	if i < 0 {
		return nil
	}
	r := h.regions[i]
	if addr+size > r.base+uint64(len(r.buf)) {
		return nil
	}
	off := addr - r.base
	return r.buf[off : off+size : off+size]
}
