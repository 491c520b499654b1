// Package device defines what the runtime needs from a device: streams
// (ordered work queues), events (markers in a stream that other streams and
// the host can wait on) and raw memory. device/host implements it with
// goroutines; device/cuda (a later issue) with the CUDA driver.
//
// Semantics follow CUDA's: work enqueued on one stream runs in order; a
// Wait(e) on a stream delays the work enqueued after it until e has
// completed, without blocking the caller; waiting on an event that was never
// recorded is a no-op; Record captures the stream's position at the time of
// the call, and recording again re-arms the event for later waiters only.
package device

// StreamID identifies a stream within its device.
type StreamID int

// Stream is an ordered queue of device work.
type Stream interface {
	ID() StreamID
	// Enqueue adds host-side work (a kernel launch on the host device).
	Enqueue(fn func())
	// Record marks the current end of the stream in e.
	Record(e Event)
	// Wait makes work enqueued after this call wait for e.
	Wait(e Event)
	// Synchronize blocks the caller until all work enqueued so far is done.
	Synchronize()
	// Close stops the stream after its queued work.
	Close()
}

// Event is a marker recorded in a stream.
type Event interface {
	// Query reports whether the last recorded position has been reached
	// (true if never recorded).
	Query() bool
	// Synchronize blocks the caller until Query would return true.
	Synchronize()
}

// Device is one compute device.
type Device interface {
	// Name is TF's full name, e.g. /job:localhost/replica:0/task:0/device:CPU:0.
	Name() string
	// Type is "CPU" or "GPU".
	Type() string
	NewStream() (Stream, error)
	NewEvent() (Event, error)
	// MemoryBytes is the memory the device offers to allocators.
	MemoryBytes() int64
}
