package cuda

/*
#include <stdlib.h>
#include "shim.h"
*/
import "C"

import (
	"fmt"
	"runtime/cgo"
	"sync"
	"sync/atomic"
	"unsafe"

	"mstream/device"
	"mstream/status"
)

const (
	streamNonBlocking   = 1 // CU_STREAM_NON_BLOCKING
	eventDisableTiming  = 2 // CU_EVENT_DISABLE_TIMING
	eventDefault        = 0
	argBufBytes         = 4096
	maxArgs             = 32
	defaultStagingLimit = 1 << 30
)

// Stream is a non-blocking CUDA stream: it never synchronises with the
// legacy default stream. It implements device.Stream and the optional
// interfaces of package device a GPU offers (host functions, pooled
// events, peer copies, timing, graph capture). Every call reports its own
// failure; the one error kept is a host function's panic, which the next
// Sync (or Err) returns once.
//
// A Stream may be used from several goroutines; its own mutex orders the
// calls that enqueue work, so work is enqueued in the order the calls
// acquire it, except kernel launches: Launch packs its parameters into
// one of the stream's argument slots, taken without a lock, so goroutines
// launching on one stream (the Runs of several threads on one group) do
// not wait for each other's driver call; the driver orders them.
type Stream struct {
	ctx *Context
	s   C.CUstream
	id  device.StreamID

	mu      sync.Mutex
	args    *C.char               // argBufBytes of C memory for kernel parameters, under mu
	offs    *C.uint16_t           // maxArgs offsets into args, under mu
	slots   *C.char               // argSlots parameter buffers of slotBytes each (Launch)
	free    atomic.Uint32         // a set bit per slot not in use
	hostErr atomic.Pointer[error] // a host function's panic, taken by the next Sync or Err

	staging *HostAllocator
	pending []pendingStage // staging buffers in flight, oldest first
	seq     uint64         // of the last pendingStage
	evFree  []C.CUevent    // events for pending, reused

	blas *blasState

	// capturing is set between BeginCapture and EndCapture (graph.go):
	// work a CUDA graph cannot hold is refused meanwhile. begun mirrors
	// it for CaptureBegun, which kernels ask per launch, without mu.
	capturing bool
	begun     atomic.Bool
	// captureErr is the first call refused or failed while capturing:
	// the graph would lack its work, so EndCapture fails with it.
	captureErr error
}

type pendingStage struct {
	ev   C.CUevent
	addr uint64
	seq  uint64
}

// StreamOptions configure a stream.
type StreamOptions struct {
	// Staging is the pinned allocator for copies from or to pageable
	// memory; nil uses the device's shared one (1 GiB limit).
	Staging *HostAllocator
}

// NewStream creates a non-blocking stream with the device's shared
// staging allocator.
func (c *Context) NewStream() (*Stream, error) { return c.NewStreamWith(StreamOptions{}) }

// NewStreamWith creates a non-blocking stream.
func (c *Context) NewStreamWith(opts StreamOptions) (*Stream, error) {
	if opts.Staging == nil {
		st, err := c.sharedStaging()
		if err != nil {
			return nil, err
		}
		opts.Staging = st
	}
	s := &Stream{ctx: c, id: device.StreamID(c.dev.streamIDs.Add(1) - 1), staging: opts.Staging}
	if err := c.check("cuStreamCreate", C.ms_stream_create(c.dev.lib.l, c.c, &s.s, streamNonBlocking)); err != nil {
		return nil, err
	}
	s.args = (*C.char)(C.malloc(argBufBytes))
	s.offs = (*C.uint16_t)(C.malloc(2 * maxArgs))
	s.slots = (*C.char)(C.malloc(C.size_t(argSlots * slotBytes)))
	s.free.Store(1<<argSlots - 1)
	return s, nil
}

func (c *Context) sharedStaging() (*HostAllocator, error) {
	d := c.dev
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.staging != nil {
		return d.staging, nil
	}
	d.staging = d.NewHostAllocator(fmt.Sprintf("GPU_%d_pinned_staging", d.ordinal), defaultStagingLimit)
	return d.staging, nil
}

// ID identifies the stream within its device.
func (s *Stream) ID() device.StreamID { return s.id }

// Context is the stream's context.
func (s *Stream) Context() *Context { return s.ctx }

// Handle is the CUstream, for tools and tests (as a number).
func (s *Stream) Handle() uintptr { return uintptr(unsafe.Pointer(s.s)) }

func (s *Stream) lib() *C.ms_lib { return s.ctx.dev.lib.l }

// Err returns, and forgets, the panic of a host function that ran since
// the last Err or Sync; else the context's sticky error (nothing runs
// after one), else nil.
func (s *Stream) Err() error {
	if err := s.hostErr.Swap(nil); err != nil {
		return *err
	}
	return s.ctx.Err()
}

func (s *Stream) check(call string, r C.int) error {
	if r == 0 {
		return nil
	}
	return s.ctx.check(call, r)
}

// hostJob is what a host function runs.
type hostJob struct {
	s  *Stream
	fn func()
}

//export msGoHostFn
func msGoHostFn(h C.uintptr_t) {
	hd := cgo.Handle(h)
	job := hd.Value().(hostJob)
	hd.Delete()
	defer func() {
		if r := recover(); r != nil {
			err := status.Errorf(status.Internal, "cuda: host function on stream %d panicked: %v", job.s.id, r)
			job.s.hostErr.CompareAndSwap(nil, &err)
		}
	}()
	job.fn()
}

// Enqueue runs fn on a driver thread when the stream reaches this point;
// later work on the stream waits for fn to return. fn must not call into
// CUDA (the driver forbids it in host functions) and should be short.
func (s *Stream) Enqueue(fn func()) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.enqueueLocked(fn)
}

func (s *Stream) enqueueLocked(fn func()) error {
	if s.capturing {
		return s.notCapturableLocked("a host function")
	}
	h := cgo.NewHandle(hostJob{s, fn})
	if err := s.check("cuLaunchHostFunc", C.ms_launch_host(s.lib(), s.ctx.c, s.s, C.uintptr_t(h))); err != nil {
		h.Delete()
		return err
	}
	return nil
}

// Record implements device.Stream.
func (s *Stream) Record(e device.Event) error {
	ce, ok := e.(*Event)
	if !ok {
		return status.Errorf(status.Internal, "cuda: stream %d cannot record a %T", s.id, e)
	}
	return s.RecordEvent(ce)
}

// Wait implements device.Stream.
func (s *Stream) Wait(e device.Event) error {
	ce, ok := e.(*Event)
	if !ok {
		return status.Errorf(status.Internal, "cuda: stream %d cannot wait for a %T", s.id, e)
	}
	return s.WaitEvent(ce)
}

// Synchronize implements device.Stream.
func (s *Stream) Synchronize() error { return s.Sync() }

// RecordEvent marks the current end of the stream in e.
func (s *Stream) RecordEvent(e *Event) error {
	return s.check("cuEventRecord", C.ms_event_record(s.lib(), s.ctx.c, e.e, s.s))
}

// WaitEvent makes work enqueued later wait for e's last recorded
// position, on the device: the caller does not block. e may come from any
// context of the device.
func (s *Stream) WaitEvent(e *Event) error {
	return s.check("cuStreamWaitEvent", C.ms_stream_wait(s.lib(), s.ctx.c, s.s, e.e))
}

// Sync blocks until all work enqueued so far has run, then releases the
// staging buffers of finished copies.
func (s *Stream) Sync() error {
	s.mu.Lock()
	upto, capturing := s.seq, s.capturing
	if capturing {
		defer s.mu.Unlock()
		return s.notCapturableLocked("a stream synchronisation")
	}
	s.mu.Unlock()
	if err := s.check("cuStreamSynchronize", C.ms_stream_sync(s.lib(), s.ctx.c, s.s)); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reclaimLocked(upto)
	if err := s.hostErr.Swap(nil); err != nil {
		return *err
	}
	return nil
}

// Close waits for the stream's work, then destroys it and its cuBLAS
// handles. The stream must not be used afterwards.
func (s *Stream) Close() error {
	err := s.Sync()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reclaimLocked(s.seq)
	for _, e := range s.evFree {
		C.ms_event_destroy(s.lib(), s.ctx.c, e)
	}
	s.evFree = nil
	s.closeBlasLocked()
	C.ms_stream_destroy(s.lib(), s.ctx.c, s.s)
	C.free(unsafe.Pointer(s.args))
	C.free(unsafe.Pointer(s.offs))
	C.free(unsafe.Pointer(s.slots))
	s.args, s.offs, s.slots = nil, nil, nil
	return err
}

// Copies. Device addresses are plain uint64s (bfc's addresses, or Ptr of
// a device tensor's Buf).

// CopyH2D implements device.Stream (H2D).
func (s *Stream) CopyH2D(dst uint64, src []byte) error { return s.H2D(dst, src) }

// CopyD2H implements device.Stream (D2H).
func (s *Stream) CopyD2H(dst []byte, src uint64) error { return s.D2H(dst, src) }

// CopyD2D implements device.Stream (D2D).
func (s *Stream) CopyD2D(dst, src, size uint64) error { return s.D2D(dst, src, size) }

// H2D copies len(src) bytes of host memory to dst. Pinned src (from
// HostAlloc or HostMemory) is copied directly by the DMA engine and must
// stay untouched until the copy has completed; pageable src is first copied
// into a pinned staging buffer inside the same call (a pageable source
// would make the driver synchronise the stream), so it may be reused as
// soon as H2D returns. The device copy itself is asynchronous.
func (s *Stream) H2D(dst uint64, src []byte) error {
	n := len(src)
	if n == 0 {
		return nil
	}
	if IsPinned(src) {
		return s.check("cuMemcpyHtoDAsync_v2", C.ms_h2d(s.lib(), s.ctx.c, C.CUdeviceptr(dst),
			unsafe.Pointer(unsafe.SliceData(src)), C.size_t(n), s.s))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.capturing {
		return s.notCapturableLocked("a copy from pageable host memory")
	}
	s.reclaimLocked(0)
	st, err := s.staging.alloc(n)
	if err != nil {
		return err
	}
	r := C.ms_h2d_staged(s.lib(), s.ctx.c, C.CUdeviceptr(dst), hostPtr(st),
		unsafe.Pointer(unsafe.SliceData(src)), C.size_t(n), s.s)
	if err := s.check("cuMemcpyHtoDAsync_v2", r); err != nil {
		s.staging.free(st)
		return err
	}
	return s.retireLocked(st)
}

// D2H copies len(dst) bytes from device address src into dst when the
// stream reaches this point. Pinned dst is written by the DMA engine
// directly; pageable dst is filled from a staging buffer by a host function
// queued behind the copy (a pageable destination would make the driver copy
// synchronously). Either way dst holds the data once a later event on the
// stream has completed (or Sync returned); until then dst must stay
// untouched.
func (s *Stream) D2H(dst []byte, src uint64) error {
	n := len(dst)
	if n == 0 {
		return nil
	}
	if IsPinned(dst) {
		return s.check("cuMemcpyDtoHAsync_v2", C.ms_d2h(s.lib(), s.ctx.c, unsafe.Pointer(unsafe.SliceData(dst)),
			C.CUdeviceptr(src), C.size_t(n), s.s))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.capturing {
		return s.notCapturableLocked("a copy to pageable host memory")
	}
	s.reclaimLocked(0)
	st, err := s.staging.alloc(n)
	if err != nil {
		return err
	}
	staging := s.staging
	h := cgo.NewHandle(hostJob{s, func() {
		copy(dst, hostBytes(st, n))
		staging.free(st)
	}})
	var stage C.int
	r := C.ms_d2h_host(s.lib(), s.ctx.c, hostPtr(st), C.CUdeviceptr(src), C.size_t(n), s.s,
		C.uintptr_t(h), &stage)
	if r != 0 {
		call := "cuMemcpyDtoHAsync_v2"
		if stage == 1 {
			call = "cuLaunchHostFunc"
		} else {
			staging.free(st)
		}
		h.Delete()
		return s.check(call, r)
	}
	return nil
}

// D2D copies n bytes between device addresses of this context.
func (s *Stream) D2D(dst, src, n uint64) error {
	if n == 0 {
		return nil
	}
	return s.check("cuMemcpyDtoDAsync_v2", C.ms_d2d(s.lib(), s.ctx.c, C.CUdeviceptr(dst), C.CUdeviceptr(src),
		C.size_t(n), s.s))
}

// Peer copies n bytes from src in context from to dst in this stream's
// context (contexts of one device, or peer devices).
func (s *Stream) Peer(dst uint64, src uint64, from *Context, n int) error {
	if n == 0 {
		return nil
	}
	return s.check("cuMemcpyPeerAsync", C.ms_peer(s.lib(), s.ctx.c, C.CUdeviceptr(dst), s.ctx.c,
		C.CUdeviceptr(src), from.c, C.size_t(n), s.s))
}

// Memset sets n bytes at dst to v, asynchronously (tests poison outputs
// with it; kernels that must zero an output use it too).
func (s *Stream) Memset(dst uint64, v byte, n int) error {
	if n == 0 {
		return nil
	}
	return s.check("cuMemsetD8Async", C.ms_memset8(s.lib(), s.ctx.c, C.CUdeviceptr(dst), C.uchar(v), C.size_t(n), s.s))
}

// retireLocked records an event after a staged copy and queues the
// staging buffer for release once the event completes.
func (s *Stream) retireLocked(addr uint64) error {
	var ev C.CUevent
	if k := len(s.evFree); k > 0 {
		ev = s.evFree[k-1]
		s.evFree = s.evFree[:k-1]
	} else if err := s.check("cuEventCreate", C.ms_event_create(s.lib(), s.ctx.c, &ev, eventDisableTiming)); err != nil {
		// Without an event the buffer can only be released after a sync.
		if serr := s.check("cuStreamSynchronize", C.ms_stream_sync(s.lib(), s.ctx.c, s.s)); serr == nil {
			s.staging.free(addr)
		}
		return err
	}
	if err := s.check("cuEventRecord", C.ms_event_record(s.lib(), s.ctx.c, ev, s.s)); err != nil {
		s.evFree = append(s.evFree, ev)
		return err
	}
	s.seq++
	s.pending = append(s.pending, pendingStage{ev, addr, s.seq})
	return nil
}

// reclaimLocked releases the staging buffers whose copies have finished:
// those whose event has completed, and those up to sequence number synced,
// which a completed stream synchronisation covers.
func (s *Stream) reclaimLocked(synced uint64) {
	k := 0
	for ; k < len(s.pending); k++ {
		p := s.pending[k]
		if p.seq > synced && C.ms_event_query(s.lib(), s.ctx.c, p.ev) != 0 {
			break // not ready (or failed: kept until a sync)
		}
		s.staging.free(p.addr)
		s.evFree = append(s.evFree, p.ev)
	}
	if k > 0 {
		s.pending = append(s.pending[:0], s.pending[k:]...)
	}
}

// Event is a CUDA event created without timing (cheaper to record and
// wait on). It implements device.Event.
type Event struct {
	ctx *Context
	e   C.CUevent
}

// NewEvent creates a timing-free event.
func (c *Context) NewEvent() (*Event, error) { return c.newEvent(eventDisableTiming) }

// NewTimingEvent creates an event that ElapsedMs can measure between
// (benchmarks only).
func (c *Context) NewTimingEvent() (*Event, error) { return c.newEvent(eventDefault) }

func (c *Context) newEvent(flags C.uint) (*Event, error) {
	e := &Event{ctx: c}
	if err := c.check("cuEventCreate", C.ms_event_create(c.dev.lib.l, c.c, &e.e, flags)); err != nil {
		return nil, err
	}
	return e, nil
}

// Query reports whether the last recorded position has been reached
// (true if never recorded). An error counts as reached, so nothing waits
// forever on a broken context; the error is the context's sticky error.
func (e *Event) Query() bool {
	r := C.ms_event_query(e.ctx.dev.lib.l, e.ctx.c, e.e)
	if r == 600 { // CUDA_ERROR_NOT_READY
		return false
	}
	if r != 0 {
		e.ctx.check("cuEventQuery", r)
	}
	return true
}

// Synchronize blocks until the event's position has been reached.
func (e *Event) Synchronize() error { return e.Sync() }

// Sync is Synchronize with the error.
func (e *Event) Sync() error {
	return e.ctx.check("cuEventSynchronize", C.ms_event_sync(e.ctx.dev.lib.l, e.ctx.c, e.e))
}

// Destroy releases the event.
func (e *Event) Destroy() error {
	return e.ctx.check("cuEventDestroy_v2", C.ms_event_destroy(e.ctx.dev.lib.l, e.ctx.c, e.e))
}

// ElapsedMs is the device time between two recorded timing events.
func ElapsedMs(start, end *Event) (float32, error) {
	var ms C.float
	err := start.ctx.check("cuEventElapsedTime", C.ms_event_elapsed(start.ctx.dev.lib.l, start.ctx.c, &ms, start.e, end.e))
	return float32(ms), err
}

var (
	_ device.Stream = (*Stream)(nil)
	_ device.Event  = (*Event)(nil)
)
