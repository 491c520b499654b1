// Package tensorholder keeps buffers alive until every stream that used them
// is done, then returns them to their allocator.
//
// A buffer allocated for stream A and read by stream B cannot be freed when
// the host finishes enqueuing B's work: B may not have run yet, and the
// allocator would hand the memory to someone else while B still reads it.
// Stock TF solves this with its TensorReferenceHolder; here the executor
// records an event on every using stream after its last use and calls Hold
// with the buffer's free function and those events. The holder calls free
// as soon as all events have completed, never before.
//
// Two ways to wait are offered. Hold takes events and waits for them off the
// caller's goroutine (one goroutine per hold blocks in Event.Synchronize,
// which on CUDA is a blocking event wait, not a device sync). HoldOn takes
// streams instead and enqueues a host callback on each (cuLaunchHostFunc on
// CUDA, a queue item on the host device); the last callback to run frees
// the buffer, so no goroutine waits at all.
//
// Invariants: free is called exactly once per hold, after every event (or
// stream position) it was given; Live counts holds whose free has not yet
// returned, so it reaches 0 as soon as all streams have passed their
// positions. Drain blocks until Live is 0.
//
// Locking: Holder.mu guards only the drain condition; free is called
// without it held, so free may take the allocator's lock.
package tensorholder
