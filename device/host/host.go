// Package host is the host (CPU) device: every stream is an ordered queue
// served by its own goroutine, and an event is a marker in such a queue. It
// lets the whole multi-stream machinery run and be tested without a GPU.
//
// With Jitter set, each stream sleeps a random short time before each item,
// so a missing cross-stream wait turns into a wrong answer a test can see.
package host

import (
	"math/rand"
	"sync"
	"time"

	"mstream/device"
)

// Name is the host device's TF name.
const Name = "/job:localhost/replica:0/task:0/device:CPU:0"

// Device is the host device.
type Device struct {
	// Jitter, when non-zero, is the largest random delay before each
	// stream item.
	Jitter time.Duration
	// Memory is what MemoryBytes reports (TF reports 256 MiB for CPU:0).
	Memory int64

	mu      sync.Mutex
	streams int
}

// New returns a host device.
func New() *Device { return &Device{Memory: 256 << 20} }

func (d *Device) Name() string       { return Name }
func (d *Device) Type() string       { return "CPU" }
func (d *Device) MemoryBytes() int64 { return d.Memory }

// NewStream starts a stream goroutine.
func (d *Device) NewStream() (device.Stream, error) {
	d.mu.Lock()
	id := d.streams
	d.streams++
	d.mu.Unlock()
	s := &Stream{id: device.StreamID(id), jitter: d.Jitter}
	s.cond = sync.NewCond(&s.mu)
	if d.Jitter > 0 {
		s.rng = rand.New(rand.NewSource(time.Now().UnixNano() + int64(id)))
	}
	go s.loop()
	return s, nil
}

// NewEvent returns an event that was never recorded.
func (d *Device) NewEvent() (device.Event, error) { return &Event{}, nil }

// Stream is one host stream.
type Stream struct {
	id     device.StreamID
	jitter time.Duration
	rng    *rand.Rand

	mu     sync.Mutex
	cond   *sync.Cond
	queue  []func()
	closed bool
}

func (s *Stream) ID() device.StreamID { return s.id }

// Enqueue adds fn to the end of the queue.
func (s *Stream) Enqueue(fn func()) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		panic("host: Enqueue on a closed stream")
	}
	s.queue = append(s.queue, fn)
	s.mu.Unlock()
	s.cond.Signal()
}

// Record arms e with a new marker that completes when the stream reaches
// this point.
func (s *Stream) Record(e device.Event) {
	m := e.(*Event).arm()
	s.Enqueue(func() { close(m) })
}

// Wait makes later items wait for e's marker as of now.
func (s *Stream) Wait(e device.Event) {
	m := e.(*Event).marker()
	if m == nil {
		return
	}
	s.Enqueue(func() { <-m })
}

// Synchronize blocks until everything enqueued so far has run.
func (s *Stream) Synchronize() {
	done := make(chan struct{})
	s.Enqueue(func() { close(done) })
	<-done
}

// Close lets the goroutine exit after the queued work.
func (s *Stream) Close() {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	s.cond.Signal()
}

func (s *Stream) loop() {
	for {
		s.mu.Lock()
		for len(s.queue) == 0 && !s.closed {
			s.cond.Wait()
		}
		if len(s.queue) == 0 {
			s.mu.Unlock()
			return
		}
		fn := s.queue[0]
		s.queue[0] = nil
		s.queue = s.queue[1:]
		s.mu.Unlock()
		if s.rng != nil {
			time.Sleep(time.Duration(s.rng.Int63n(int64(s.jitter))))
		}
		fn()
	}
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
func (e *Event) Synchronize() {
	if m := e.marker(); m != nil {
		<-m
	}
}

var _ device.Device = (*Device)(nil)
