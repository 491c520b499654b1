package cuda

import "mstream/device"

// What the stream groups and the executor need beyond package device's
// interfaces: per-context memory, streams with a group's own staging
// allocator, and errors taken back so one failed step does not fail the
// next.

// MemoryOf is context ctx's device memory as a device.Memory: with several
// contexts (TF_GPU_CONTEXT_COUNT) each group's allocator takes its regions
// from the context of its streams.
func (d *Device) MemoryOf(ctx int) device.Memory { return d.ContextMemory(ctx) }

// NewStreamStaged creates a non-blocking stream in context ctx whose
// copies from and to pageable memory stage through staging (nil: the
// device's shared staging allocator). Groups with their own host allocator
// (TF_PER_STREAM_HOST_ALLOCATOR) pass theirs.
func (d *Device) NewStreamStaged(ctx int, staging *HostAllocator) (device.Stream, error) {
	c, err := d.Context(ctx)
	if err != nil {
		return nil, err
	}
	return c.NewStreamWith(StreamOptions{Staging: staging})
}

// TakeErr returns the error kept by a call that could not report it
// (device.Stream's methods, a failed host function) and forgets it, so the
// next step on the stream starts clean; a sticky error of the context is
// returned every time, since nothing can run after it.
func (s *Stream) TakeErr() error {
	s.mu.Lock()
	err := s.err
	s.err = nil
	s.mu.Unlock()
	if err != nil {
		return err
	}
	return s.ctx.Err()
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
