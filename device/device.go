package device

// StreamID identifies a stream within its device.
type StreamID int

// Stream is an ordered queue of device work. Every method that enqueues or
// waits reports its failure; a stream keeps no error for later calls.
type Stream interface {
	ID() StreamID
	// Record marks the current end of the stream in e.
	Record(e Event) error
	// Wait makes work enqueued after this call wait for e.
	Wait(e Event) error
	// CopyH2D copies len(src) bytes of host memory to device address dst.
	CopyH2D(dst uint64, src []byte) error
	// CopyD2H copies len(dst) bytes from device address src to host memory.
	CopyD2H(dst []byte, src uint64) error
	// CopyD2D copies size bytes between device addresses.
	CopyD2D(dst, src, size uint64) error
	// Synchronize blocks the caller until all work enqueued so far is done.
	Synchronize() error
	// Close stops the stream after its queued work.
	Close() error
}

// Event is a marker recorded in a stream.
type Event interface {
	// Query reports whether the last recorded position has been reached
	// (true if never recorded).
	Query() bool
	// Synchronize blocks the caller until Query would return true.
	Synchronize() error
}

// Memory hands out device memory in regions, which an allocator (bfc)
// carves up. Alloc and Free may be slow and, on a GPU, Free may
// synchronise the device: allocators keep regions until they close.
type Memory interface {
	// Alloc returns the base address of a new region of size bytes,
	// aligned to at least 256 bytes.
	Alloc(size uint64) (base uint64, err error)
	// Free returns a region obtained from Alloc.
	Free(base uint64)
}

// HostAddressable is Memory the host can read and write directly (the host
// device's memory, or pinned host memory).
type HostAddressable interface {
	Memory
	// Bytes returns [addr, addr+size), which must lie inside one region;
	// nil otherwise.
	Bytes(addr, size uint64) []byte
}

// Device is one compute device.
type Device interface {
	// Name is TF's full name, e.g. /job:localhost/replica:0/task:0/device:CPU:0.
	Name() string
	// Type is "CPU" or "GPU".
	Type() string
	// NewStream creates a stream in the device's context ctx (0 unless the
	// device offers several, see Contexts).
	NewStream(ctx int) (Stream, error)
	NewEvent() (Event, error)
	// Contexts is how many contexts streams can be spread over (CUDA
	// contexts on a GPU; 1 on the host).
	Contexts() int
	// MemoryBytes is the memory the device offers to allocators.
	MemoryBytes() int64
	// Memory is the device's memory, for the allocators.
	Memory() Memory
	// HostMemory is the host memory copies stage through (pinned on a GPU).
	HostMemory() HostAddressable
}
