package cuda

/*
#include "shim.h"
*/
import "C"

import (
	"fmt"
	"sort"
	"sync"
	"unsafe"

	"math/bits"

	"mstream/device"
	"mstream/status"
)

// DeviceMemory is device.Memory (which bfc.Backend matches) over cuMemAlloc in one
// context: the allocator asks it for large regions, rarely, and never frees
// them before Close, so neither cuMemAlloc nor cuMemFree is on the hot path.
type DeviceMemory struct {
	dev *Device
	ctx int
}

// Memory returns the context's device memory.
func (c *Context) Memory() *DeviceMemory { return &DeviceMemory{dev: c.dev, ctx: c.id} }

// Alloc obtains a region of size bytes (cuMemAlloc aligns to 256 bytes or
// more, which bfc.MinAlloc needs).
func (m *DeviceMemory) Alloc(size uint64) (uint64, error) {
	c, err := m.dev.Context(m.ctx)
	if err != nil {
		return 0, err
	}
	var p C.CUdeviceptr
	if err := c.check("cuMemAlloc_v2", C.ms_mem_alloc(c.dev.lib.l, c.c, &p, C.size_t(size))); err != nil {
		return 0, status.Wrap(err, "device region of %d bytes", size)
	}
	return uint64(p), nil
}

// Free returns a region (bfc calls it from Close only).
func (m *DeviceMemory) Free(base uint64) {
	if c, err := m.dev.Context(m.ctx); err == nil {
		C.ms_mem_free(c.dev.lib.l, c.c, C.CUdeviceptr(base))
	}
}

var _ device.Memory = (*DeviceMemory)(nil)

// DeviceBytes returns a []byte of length n that stands for n bytes of
// device memory at addr, so a device tensor can be a tensor.Tensor whose
// Buf is device memory, as TF's GPU tensors are. The slice must never be
// read or written by host code (that faults): only its address and length
// are used, through Ptr. A zero-length slice has no address.
func DeviceBytes(addr uint64, n int) []byte {
	if n == 0 || addr == 0 {
		return []byte{}
	}
	return unsafe.Slice((*byte)(hostPtr(addr)), n)
}

// Ptr is the address of b's first element (device or host), 0 when b is
// empty.
func Ptr(b []byte) uint64 {
	if len(b) == 0 {
		return 0
	}
	return uint64(uintptr(unsafe.Pointer(unsafe.SliceData(b))))
}

// Pinned host memory. Regions come from cuMemHostAlloc with the PORTABLE
// flag (usable from every context) and are recorded here, so copies can
// tell pinned memory (copied directly, asynchronously) from pageable Go
// memory (staged).

const memHostAllocPortable = 1

var pinned struct {
	mu      sync.RWMutex
	regions []pinnedRegion // ordered by base
}

type pinnedRegion struct{ base, size uint64 }

func addPinned(base, size uint64) {
	pinned.mu.Lock()
	defer pinned.mu.Unlock()
	i := sort.Search(len(pinned.regions), func(i int) bool { return pinned.regions[i].base > base })
	pinned.regions = append(pinned.regions, pinnedRegion{})
	copy(pinned.regions[i+1:], pinned.regions[i:])
	pinned.regions[i] = pinnedRegion{base, size}
}

func removePinned(base uint64) {
	pinned.mu.Lock()
	defer pinned.mu.Unlock()
	for i, r := range pinned.regions {
		if r.base == base {
			pinned.regions = append(pinned.regions[:i], pinned.regions[i+1:]...)
			return
		}
	}
}

// IsPinned reports whether b lies inside one pinned region.
func IsPinned(b []byte) bool {
	if len(b) == 0 {
		return false
	}
	a := Ptr(b)
	pinned.mu.RLock()
	defer pinned.mu.RUnlock()
	i := sort.Search(len(pinned.regions), func(i int) bool { return pinned.regions[i].base > a }) - 1
	return i >= 0 && a+uint64(len(b)) <= pinned.regions[i].base+pinned.regions[i].size
}

// HostAlloc returns n bytes of pinned host memory; free it with HostFree.
// Memory from here can be a host tensor's Buf (a feed or fetch buffer):
// copies to and from it need no staging.
func (c *Context) HostAlloc(n int) ([]byte, error) {
	if n == 0 {
		return []byte{}, nil
	}
	var p unsafe.Pointer
	r := C.ms_host_alloc(c.dev.lib.l, c.c, &p, C.size_t(n), memHostAllocPortable)
	if err := c.check("cuMemHostAlloc", r); err != nil {
		return nil, status.Wrap(err, "pinned host buffer of %d bytes", n)
	}
	addPinned(uint64(uintptr(p)), uint64(n))
	return unsafe.Slice((*byte)(p), n), nil
}

// HostFree releases memory from HostAlloc. No copy may still use it.
func (c *Context) HostFree(b []byte) error {
	if len(b) == 0 {
		return nil
	}
	removePinned(Ptr(b))
	return c.check("cuMemFreeHost", C.ms_host_free(c.dev.lib.l, c.c, unsafe.Pointer(unsafe.SliceData(b))))
}

// PinnedMemory is device.HostAddressable over cuMemHostAlloc: pinned,
// portable host regions (usable from every context of the process), which
// the DMA engines read and write without staging.
type PinnedMemory struct {
	dev *Device
	mu  sync.Mutex
	buf map[uint64][]byte
}

// Alloc returns a pinned region of size bytes.
func (p *PinnedMemory) Alloc(size uint64) (uint64, error) {
	c, err := p.dev.Primary()
	if err != nil {
		return 0, err
	}
	b, err := c.HostAlloc(int(size))
	if err != nil {
		return 0, err
	}
	p.mu.Lock()
	if p.buf == nil {
		p.buf = map[uint64][]byte{}
	}
	p.buf[Ptr(b)] = b
	p.mu.Unlock()
	return Ptr(b), nil
}

// Free releases a region from Alloc.
func (p *PinnedMemory) Free(base uint64) {
	p.mu.Lock()
	b := p.buf[base]
	delete(p.buf, base)
	p.mu.Unlock()
	if c, err := p.dev.Primary(); err == nil && b != nil {
		c.HostFree(b)
	}
}

// Bytes returns [addr, addr+size) of a pinned region; nil when the range is
// not inside one region of this device.
func (p *PinnedMemory) Bytes(addr, size uint64) []byte {
	p.mu.Lock()
	defer p.mu.Unlock()
	for base, b := range p.buf {
		if addr >= base && addr+size <= base+uint64(len(b)) {
			return b[addr-base : addr-base+size : addr-base+size]
		}
	}
	return nil
}

var _ device.HostAddressable = (*PinnedMemory)(nil)

// HostAllocator hands out pinned staging buffers for copies between device
// memory and pageable host memory. One may serve all streams of a device,
// or one per stream group (TF_PER_STREAM_HOST_ALLOCATOR). Buffers come in
// power-of-two sizes (4 KiB and up) from pinned regions obtained on demand
// and kept for reuse until Close, so a steady load allocates no pinned
// memory: staging is transient and a free list per size class is all it
// needs.
type HostAllocator struct {
	name  string
	mem   *PinnedMemory
	limit uint64

	mu    sync.Mutex
	used  uint64           // bytes of all buffers ever obtained
	idle  map[int][]uint64 // size class -> free buffers
	class map[uint64]int   // every buffer's size class
	live  int
}

const minStagingClass = 12 // 4 KiB

// NewHostAllocator makes a pinned staging allocator of at most limit
// bytes; name appears in out-of-memory errors.
func (d *Device) NewHostAllocator(name string, limit uint64) *HostAllocator {
	return &HostAllocator{name: name, mem: d.pinned, limit: limit, idle: map[int][]uint64{}, class: map[uint64]int{}}
}

func (h *HostAllocator) alloc(n int) (uint64, error) {
	c := max(minStagingClass, bits.Len64(uint64(n)-1))
	h.mu.Lock()
	defer h.mu.Unlock()
	if f := h.idle[c]; len(f) > 0 {
		addr := f[len(f)-1]
		h.idle[c] = f[:len(f)-1]
		h.live++
		return addr, nil
	}
	size := uint64(1) << c
	if h.used+size > h.limit {
		return 0, status.Errorf(status.ResourceExhausted,
			"cuda: pinned staging %q: %d more bytes would pass its limit of %d (%d in use)", h.name, size, h.limit, h.used)
	}
	addr, err := h.mem.Alloc(size)
	if err != nil {
		return 0, status.Wrap(err, "pinned staging %q", h.name)
	}
	h.used += size
	h.class[addr] = c
	h.live++
	return addr, nil
}

func (h *HostAllocator) free(addr uint64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	c, ok := h.class[addr]
	if !ok {
		panic(fmt.Sprintf("cuda: staging free of %#x, not a staging buffer", addr)) // a bookkeeping bug
	}
	h.idle[c] = append(h.idle[c], addr)
	h.live--
}

// Live is the number of staging buffers in use (copies not yet retired).
func (h *HostAllocator) Live() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.live
}

// Bytes is the pinned memory the allocator holds.
func (h *HostAllocator) Bytes() uint64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.used
}

// Close frees the pinned buffers; no copy may still use them.
func (h *HostAllocator) Close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for addr := range h.class {
		h.mem.Free(addr)
	}
	h.class, h.idle, h.used = map[uint64]int{}, map[int][]uint64{}, 0
}

// hostBytes views pinned staging memory at addr.
func hostBytes(addr uint64, n int) []byte { return unsafe.Slice((*byte)(hostPtr(addr)), n) }

// hostPtr turns an address of C memory into a pointer (written so that
// vet's uintptr rule, meant for Go memory, does not apply).
func hostPtr(addr uint64) unsafe.Pointer { return *(*unsafe.Pointer)(unsafe.Pointer(&addr)) }
