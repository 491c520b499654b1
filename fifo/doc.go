// Package fifo owns the first-in-first-out queue of the runtime's worker
// loops: exec's inter-op pool and the host device's streams, each a
// goroutine (or several) taking funcs queued under its own mutex.
//
// Invariants: a Queue reuses one array from drain to drain, so a loop
// whose queue empties between bursts allocates nothing; the taken front
// is moved out once it is at least as long as what is still queued (and
// 64 items), so a queue that never drains does not grow without bound;
// a drained array larger than Keep items is let go, so that one burst
// does not pin its array for the queue's life. A Queue is not safe for
// concurrent use: its owner's mutex guards it.
package fifo
