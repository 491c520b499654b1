// Package host is the host (CPU) device: every stream is an ordered queue
// served by its own goroutine, and an event is a marker in such a queue. It
// lets the whole multi-stream machinery run and be tested without a GPU.
//
// Device memory is Go memory (hostmem), handed out in regions by Memory and
// addressed by the regions' real addresses, so a bfc allocator over it gives
// buffers the kernels read and write as []byte. Because it stays Go memory,
// the race detector sees every access: two streams touching one buffer
// without an event between them is a reported race under -race.
//
// With Jitter set (MSTREAM_HOST_STREAM_JITTER), each stream delays each
// item at random (a few yields, or now and then a sleep of up to Jitter),
// so a missing cross-stream wait turns into a wrong answer a test can see:
// the stream sanitizer.
//
// Inline views: code running inside an item of stream S (a kernel on the
// host device, which allocates while it runs) sometimes has to act "on S at
// this point" — make S wait for an event, or record S's position. Enqueuing
// would act at the end of S's queue, after work the caller already
// enqueued. Stream.Inline returns a view whose Wait blocks the running item
// until the event completes (which stalls S exactly as a device-side wait
// would, and never the host thread that launched the work) and whose Record
// marks the event complete at once (everything before this point on S has
// run). An inline view must only be used from inside an item of its stream.
//
// Locking: Stream.mu guards the queue; Event.mu the marker; Memory.mu the
// region list. No lock is held while an item runs.
package host

import (
	"math/rand"
	"runtime"
	"sort"
	"sync"
	"time"

	"mstream/device"
	"mstream/fifo"
	"mstream/hostmem"
	"mstream/status"
)

// Name is the host device's TF name.
const Name = "/job:localhost/replica:0/task:0/device:CPU:0"

// Device is the host device.
type Device struct {
	// Jitter, when non-zero, is the largest random delay before each
	// stream item.
	Jitter time.Duration
	// Memory is what MemoryBytes reports (TF reports 256 MiB for CPU:0).
	MemBytes int64
	// NumContexts is how many contexts streams may name; the host device
	// has no real contexts, so this only labels streams.
	NumContexts int

	mu      sync.Mutex
	streams int
	mem     *Memory
	hostMem *Memory
}

// New returns a host device.
func New() *Device {
	return &Device{MemBytes: 256 << 20, NumContexts: 1, mem: &Memory{}, hostMem: &Memory{}}
}

func (d *Device) Name() string                       { return Name }
func (d *Device) Type() string                       { return "CPU" }
func (d *Device) MemoryBytes() int64                 { return d.MemBytes }
func (d *Device) Contexts() int                      { return max(d.NumContexts, 1) }
func (d *Device) Memory() device.Memory              { return d.mem }
func (d *Device) HostMemory() device.HostAddressable { return d.hostMem }

// DeviceMemory is Memory with its concrete type, for code that needs
// Bytes on the host device's own memory.
func (d *Device) DeviceMemory() *Memory { return d.mem }

// NewStream starts a stream goroutine.
func (d *Device) NewStream(ctx int) (device.Stream, error) {
	if ctx < 0 || ctx >= d.Contexts() {
		return nil, status.InvalidArg("host device: context %d out of range [0, %d)", ctx, d.Contexts())
	}
	d.mu.Lock()
	id := d.streams
	d.streams++
	d.mu.Unlock()
	s := &Stream{id: device.StreamID(id), ctx: ctx, jitter: d.Jitter, mem: d.mem, exited: make(chan struct{})}
	s.queue.Keep = keepQueue
	s.cond = sync.NewCond(&s.mu)
	s.inline = &inlineStream{s: s}
	if d.Jitter > 0 {
		s.rng = rand.New(rand.NewSource(time.Now().UnixNano() + int64(id)*7919))
	}
	go s.loop()
	return s, nil
}

// NewEvent returns an event that was never recorded.
func (d *Device) NewEvent() (device.Event, error) { return &Event{}, nil }

// Stream is one host stream.
type Stream struct {
	id     device.StreamID
	ctx    int
	jitter time.Duration
	rng    *rand.Rand
	mem    *Memory
	inline *inlineStream

	mu   sync.Mutex
	cond *sync.Cond
	// queue is the work not yet taken (a fifo.Queue: one array reused
	// from step to step, where slicing the front off made appends
	// reallocate about 45 times in a 200-node stream step; a drained
	// array larger than keepQueue goes).
	queue  fifo.Queue[func()]
	closed bool
	exited chan struct{}
}

func (s *Stream) ID() device.StreamID { return s.id }

// Context is the context index the stream was created in.
func (s *Stream) Context() int { return s.ctx }

// Enqueue adds fn to the end of the queue.
func (s *Stream) Enqueue(fn func()) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return status.Errorf(status.FailedPrecondition, "host: stream %d is closed", s.id)
	}
	s.queue.Push(fn)
	s.mu.Unlock()
	s.cond.Signal()
	return nil
}

// Record arms e with a new marker that completes when the stream reaches
// this point.
func (s *Stream) Record(e device.Event) error {
	he, ok := e.(*Event)
	if !ok {
		return status.Errorf(status.Internal, "host: stream %d cannot record a %T", s.id, e)
	}
	m := he.arm()
	if err := s.Enqueue(func() { close(m) }); err != nil {
		close(m)
		return err
	}
	return nil
}

// Wait makes later items wait for e's marker as of now.
func (s *Stream) Wait(e device.Event) error {
	he, ok := e.(*Event)
	if !ok {
		return status.Errorf(status.Internal, "host: stream %d cannot wait for a %T", s.id, e)
	}
	m := he.marker()
	if m == nil {
		return nil
	}
	return s.Enqueue(func() { <-m })
}

// CopyH2D enqueues copy(dst, src); dst must be this device's memory.
func (s *Stream) CopyH2D(dst uint64, src []byte) error {
	d, err := s.mem.rangeBytes(dst, uint64(len(src)))
	if err != nil {
		return err
	}
	return s.Enqueue(func() { copy(d, src) })
}

// CopyD2H enqueues copy(dst, src); src must be this device's memory.
func (s *Stream) CopyD2H(dst []byte, src uint64) error {
	b, err := s.mem.rangeBytes(src, uint64(len(dst)))
	if err != nil {
		return err
	}
	return s.Enqueue(func() { copy(dst, b) })
}

// CopyD2D enqueues a copy between two ranges of this device's memory.
func (s *Stream) CopyD2D(dst, src, size uint64) error {
	d, err := s.mem.rangeBytes(dst, size)
	if err != nil {
		return err
	}
	b, err := s.mem.rangeBytes(src, size)
	if err != nil {
		return err
	}
	return s.Enqueue(func() { copy(d, b) })
}

// Synchronize blocks until everything enqueued so far has run.
func (s *Stream) Synchronize() error {
	done := make(chan struct{})
	if err := s.Enqueue(func() { close(done) }); err != nil {
		return err
	}
	<-done
	return nil
}

// Close lets the goroutine exit after the queued work.
func (s *Stream) Close() error {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	s.cond.Signal()
	return nil
}

// Exited is closed when the stream's goroutine has returned after Close.
func (s *Stream) Exited() <-chan struct{} { return s.exited }

// Inline returns the view of s for code running inside one of s's items;
// see the package documentation. The same view is returned every time, so
// it can serve as s's identity where streams are compared (bfc).
func (s *Stream) Inline() device.Stream { return s.inline }

// keepQueue is the largest queue array (in items) a drained stream
// keeps for reuse: more than a step's items on one stream of the models
// served (a 200-node step queues about 400), 32 KiB of func values.
const keepQueue = 4096

func (s *Stream) loop() {
	defer close(s.exited)
	for {
		s.mu.Lock()
		for s.queue.Len() == 0 && !s.closed {
			s.cond.Wait()
		}
		fn, ok := s.queue.Pop()
		if !ok {
			s.mu.Unlock()
			return
		}
		s.mu.Unlock()
		if s.rng != nil {
			s.delay()
		}
		fn()
	}
}

// delay is the sanitizer's pause before an item: usually a few yields
// (cheap, and enough to let other streams' goroutines run first), one time
// in eight a sleep of up to Jitter (a timer sleep costs tens of
// microseconds at least, so sleeping before every item would make long
// steps crawl).
func (s *Stream) delay() {
	if s.rng.Intn(8) == 0 {
		time.Sleep(time.Duration(s.rng.Int63n(int64(s.jitter))))
		return
	}
	for n := s.rng.Intn(4); n > 0; n-- {
		runtime.Gosched()
	}
}

// inlineStream is Stream.Inline's view.
type inlineStream struct{ s *Stream }

func (v *inlineStream) ID() device.StreamID     { return v.s.id }
func (v *inlineStream) Enqueue(fn func()) error { return v.s.Enqueue(fn) }

// Record completes e at once: the caller runs inside an item of the
// stream, so all earlier work of the stream is done.
func (v *inlineStream) Record(e device.Event) error {
	he, ok := e.(*Event)
	if !ok {
		return status.Errorf(status.Internal, "host: stream %d cannot record a %T", v.s.id, e)
	}
	close(he.arm())
	return nil
}

// Wait stalls the running item, and so the stream, until e completes.
func (v *inlineStream) Wait(e device.Event) error { return e.Synchronize() }

func (v *inlineStream) CopyH2D(dst uint64, src []byte) error {
	d, err := v.s.mem.rangeBytes(dst, uint64(len(src)))
	if err != nil {
		return err
	}
	copy(d, src)
	return nil
}

func (v *inlineStream) CopyD2H(dst []byte, src uint64) error {
	b, err := v.s.mem.rangeBytes(src, uint64(len(dst)))
	if err != nil {
		return err
	}
	copy(dst, b)
	return nil
}

func (v *inlineStream) CopyD2D(dst, src, size uint64) error {
	d, err := v.s.mem.rangeBytes(dst, size)
	if err != nil {
		return err
	}
	b, err := v.s.mem.rangeBytes(src, size)
	if err != nil {
		return err
	}
	copy(d, b)
	return nil
}

// Synchronize from inside one of the stream's own items would wait for
// itself forever.
func (v *inlineStream) Synchronize() error {
	return status.Errorf(status.Internal, "host: Synchronize on the inline view of stream %d (it would wait for itself)", v.s.id)
}

func (v *inlineStream) Close() error {
	return status.Errorf(status.Internal, "host: Close on the inline view of stream %d", v.s.id)
}

// Event is a host event: the channel of the last recorded marker.
type Event struct {
	mu sync.Mutex
	m  chan struct{}
}

func (e *Event) arm() chan struct{} {
	m := make(chan struct{})
	e.mu.Lock()
	e.m = m
	e.mu.Unlock()
	return m
}

func (e *Event) marker() chan struct{} {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.m
}

// Query reports whether the last recorded marker has been reached.
func (e *Event) Query() bool {
	m := e.marker()
	if m == nil {
		return true
	}
	select {
	case <-m:
		return true
	default:
		return false
	}
}

// Synchronize blocks until the last recorded marker has been reached.
func (e *Event) Synchronize() error {
	if m := e.marker(); m != nil {
		<-m
	}
	return nil
}

// Memory is host memory handed out in regions, addressed by the regions'
// real addresses. The zero value is ready.
type Memory struct {
	mu      sync.Mutex
	regions []region // ordered by base
	bytes   uint64
	// Max, when non-zero, makes Alloc fail for regions larger than Max
	// bytes, to simulate a device that cannot give what a limit allows.
	Max uint64
}

type region struct {
	base uint64
	buf  []byte
}

const regionAlign = 256

// hugeRegion is the size from which a region asks for transparent huge
// pages: an allocator's regions live as long as it does and hold what a
// Run reads at random, above all the constants (DLRM's 26 embedding
// tables of 25 MiB each), whose every lookup otherwise misses the TLB.
const hugeRegion = 8 << 20

// Alloc allocates a zeroed region aligned to 256 bytes.
func (m *Memory) Alloc(size uint64) (uint64, error) {
	if m.Max > 0 && size > m.Max {
		return 0, status.Errorf(status.ResourceExhausted, "host memory: region of %d bytes over %d", size, m.Max)
	}
	if size == 0 || size > 1<<40 {
		return 0, status.InvalidArg("host memory: bad region size %d", size)
	}
	raw := hostmem.Alloc(int(size) + regionAlign)
	addr := uint64(hostmem.Addr(raw))
	off := (regionAlign - addr%regionAlign) % regionAlign
	buf := raw[off : off+size : off+size]
	if size >= hugeRegion {
		hostmem.AdviseHuge(buf)
	}
	base := addr + off
	m.mu.Lock()
	defer m.mu.Unlock()
	i := sort.Search(len(m.regions), func(i int) bool { return m.regions[i].base > base })
	m.regions = append(m.regions, region{})
	copy(m.regions[i+1:], m.regions[i:])
	m.regions[i] = region{base: base, buf: buf}
	m.bytes += size
	return base, nil
}

// Free drops the region at base.
func (m *Memory) Free(base uint64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for i, r := range m.regions {
		if r.base == base {
			m.bytes -= uint64(len(r.buf))
			m.regions = append(m.regions[:i], m.regions[i+1:]...)
			return
		}
	}
}

// Bytes returns [addr, addr+size) inside one region, nil otherwise.
func (m *Memory) Bytes(addr, size uint64) []byte {
	m.mu.Lock()
	defer m.mu.Unlock()
	i := sort.Search(len(m.regions), func(i int) bool { return m.regions[i].base > addr }) - 1
	if i < 0 {
		return nil
	}
	r := m.regions[i]
	if addr+size > r.base+uint64(len(r.buf)) {
		return nil
	}
	off := addr - r.base
	return r.buf[off : off+size : off+size]
}

// RegionBytes is the total size of the live regions.
func (m *Memory) RegionBytes() uint64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.bytes
}

func (m *Memory) rangeBytes(addr, size uint64) ([]byte, error) {
	b := m.Bytes(addr, size)
	if b == nil && size > 0 {
		return nil, status.Errorf(status.InvalidArgument, "host: address range %#x+%d is not host device memory", addr, size)
	}
	return b, nil
}

var (
	_ device.Device          = (*Device)(nil)
	_ device.HostAddressable = (*Memory)(nil)
)
