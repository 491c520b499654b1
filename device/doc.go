// Package device defines what the runtime needs from a device: streams
// (ordered work queues), events (markers in a stream that other streams and
// the host can wait on), asynchronous copies, and raw memory regions for the
// allocators. device/host implements it with goroutines; device/cuda with
// the CUDA driver.
//
// Semantics follow CUDA's: work enqueued on one stream runs in order; a
// Wait(e) on a stream delays the work enqueued after it until e has
// completed, without blocking the caller; waiting on an event that was never
// recorded is a no-op; Record captures the stream's position at the time of
// the call, and recording again re-arms the event for later waiters only.
// Copies are stream work like any other: a copy enqueued on a stream reads
// its source and writes its destination when the stream reaches it, so the
// caller keeps host buffers untouched until an event after the copy has
// completed.
//
// Every Stream and Event call returns its error; a stream keeps no error
// state for later calls. What only some devices can do is an optional
// interface (optional.go) that callers assert to: host functions
// (HostFuncs), pooled events, peer copies, timing, graph capture, per-group
// staging, per-context memory; a GPU device also registers how to list
// its GPUs (RegisterGPUs), so the layers above never import it. Kernel
// launch is not among them: a device's kernels know its stream type.
//
// Memory is handed out as opaque uint64 addresses (device pointers on a
// GPU); only a device whose memory the host can address (HostAddressable)
// turns them into []byte.
package device
