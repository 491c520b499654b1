package cuda

import (
	"time"

	"mstream/device"
	"mstream/status"
)

// What the stream groups and the executor need beyond package device's
// core interfaces, as the optional interfaces package device defines:
// per-context memory, streams with a group's own staging allocator,
// pooled events, peer copies, timing and graph capture.

var (
	_ device.StagedDevice  = (*Device)(nil)
	_ device.ContextMemory = (*Device)(nil)
	_ device.HostFuncs     = (*Stream)(nil)
	_ device.EventPool     = (*Stream)(nil)
	_ device.PeerCopier    = (*Stream)(nil)
	_ device.Timer         = (*Stream)(nil)
	_ device.Capturer      = (*Stream)(nil)
	_ device.PooledEvent   = (*Event)(nil)
	_ device.Staging       = (*HostAllocator)(nil)
)

// MemoryOf is context ctx's device memory as a device.Memory: with several
// contexts (TF_GPU_CONTEXT_COUNT) each group's allocator takes its regions
// from the context of its streams.
func (d *Device) MemoryOf(ctx int) device.Memory { return d.ContextMemory(ctx) }

// NewStaging makes a pinned staging allocator of its own for streams
// (TF_PER_STREAM_HOST_ALLOCATOR).
func (d *Device) NewStaging(name string, limit uint64) device.Staging {
	return d.NewHostAllocator(name, limit)
}

// NewStreamStaged creates a non-blocking stream in context ctx whose
// copies from and to pageable memory stage through staging (nil: the
// device's shared staging allocator). Groups with their own host allocator
// (TF_PER_STREAM_HOST_ALLOCATOR) pass theirs.
func (d *Device) NewStreamStaged(ctx int, staging device.Staging) (device.Stream, error) {
	c, err := d.Context(ctx)
	if err != nil {
		return nil, err
	}
	var h *HostAllocator
	if staging != nil {
		var ok bool
		if h, ok = staging.(*HostAllocator); !ok {
			return nil, status.Errorf(status.Internal, "cuda: staging of type %T", staging)
		}
	}
	return c.NewStreamWith(StreamOptions{Staging: h})
}

// NewEventIn creates a timing-free event in context ctx, for streams of
// that context to record (a stream-aware allocator of one context records
// its free events on that context's streams).
func (d *Device) NewEventIn(ctx int) (device.Event, error) {
	c, err := d.Context(ctx)
	if err != nil {
		return nil, err
	}
	return c.NewEvent()
}

// PooledEvent returns a timing-free event of the stream's context from the
// context's pool (cuEventCreate and cuEventDestroy cost microseconds).
func (s *Stream) PooledEvent() (device.PooledEvent, error) {
	c := s.ctx
	c.evMu.Lock()
	if n := len(c.evFree); n > 0 {
		e := c.evFree[n-1]
		c.evFree = c.evFree[:n-1]
		c.evMu.Unlock()
		return e, nil
	}
	c.evMu.Unlock()
	return c.NewEvent()
}

// Release gives a completed event back to its context's pool.
func (e *Event) Release() {
	c := e.ctx
	c.evMu.Lock()
	c.evFree = append(c.evFree, e)
	c.evMu.Unlock()
}

// CopyPeer copies size bytes from src, memory of from's context, to dst in
// this stream's context (contexts of one device, or peer devices).
func (s *Stream) CopyPeer(dst, src uint64, from device.Stream, size uint64) error {
	fs, ok := from.(*Stream)
	if !ok {
		return status.Errorf(status.Internal, "cuda: peer copy from a %T", from)
	}
	return s.Peer(dst, src, fs.ctx, int(size))
}

// TimingEvent creates a timing event of the stream's context.
func (s *Stream) TimingEvent() (device.Event, error) { return s.ctx.NewTimingEvent() }

// DestroyEvent destroys an event of this package.
func (s *Stream) DestroyEvent(e device.Event) error {
	ce, ok := e.(*Event)
	if !ok {
		return status.Errorf(status.Internal, "cuda: destroying a %T", e)
	}
	return ce.Destroy()
}

// Anchor returns the context's timing anchor, recording and synchronising
// a new one on s when there is none or it is older than maxAge: Elapsed
// is a float32 of milliseconds, which loses microseconds after a few
// minutes. An old anchor is not destroyed, since steps may still measure
// against it (one event per maxAge of tracing).
func (s *Stream) Anchor(maxAge time.Duration) (device.Event, time.Time, error) {
	c := s.ctx
	c.anchorMu.Lock()
	defer c.anchorMu.Unlock()
	if c.anchor != nil && time.Since(c.anchorAt) < maxAge {
		return c.anchor, c.anchorAt, nil
	}
	ev, err := c.NewTimingEvent()
	if err != nil {
		return nil, time.Time{}, err
	}
	if err := s.RecordEvent(ev); err != nil {
		ev.Destroy()
		return nil, time.Time{}, err
	}
	if err := ev.Sync(); err != nil {
		ev.Destroy()
		return nil, time.Time{}, err
	}
	c.anchor, c.anchorAt = ev, time.Now()
	return c.anchor, c.anchorAt, nil
}

// Elapsed is the device time between two recorded timing events.
func (s *Stream) Elapsed(a, b device.Event) (time.Duration, error) {
	ca, ok1 := a.(*Event)
	cb, ok2 := b.(*Event)
	if !ok1 || !ok2 {
		return 0, status.Errorf(status.Internal, "cuda: elapsed time between a %T and a %T", a, b)
	}
	ms, err := ElapsedMs(ca, cb)
	return time.Duration(float64(ms) * 1e6), err
}

// NewCaptureStream makes a private stream of s's context with s's staging
// allocator, prepared for capture (PrepareCapture).
func (s *Stream) NewCaptureStream() (device.Stream, error) {
	cs, err := s.ctx.NewStreamWith(StreamOptions{Staging: s.staging})
	if err != nil {
		return nil, err
	}
	if err := cs.PrepareCapture(); err != nil {
		cs.Close()
		return nil, err
	}
	return cs, nil
}

func init() { device.RegisterGPUs(openGPUs) }

// openGPUs loads the driver and lists its devices (device.OpenGPUs).
func openGPUs() ([]device.GPU, error) {
	lib, err := Load()
	if err != nil {
		return nil, err
	}
	devs, err := lib.Devices()
	if err != nil {
		return nil, err
	}
	out := make([]device.GPU, len(devs))
	for i, d := range devs {
		out[i] = d
	}
	return out, nil
}

// MemInfo is the free and total memory of the GPU, asked in its primary
// context.
func (d *Device) MemInfo() (free, total int64, err error) {
	c, err := d.Primary()
	if err != nil {
		return 0, 0, err
	}
	return c.MemInfo()
}
