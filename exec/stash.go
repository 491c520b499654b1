package exec

import "sync/atomic"

// stashSlots bounds a stash: the idle values one plan keeps, as many as
// Runs of it have overlapped (up to this many; a Run past them makes its
// own and drops it afterwards).
const stashSlots = 16

// stash keeps idle values of one plan (its host steps' state, its device
// steps' arenas) for the plan's next steps, without a lock: a step takes
// one with a Swap and puts it back with a CompareAndSwap into a free
// slot, so a plan run from one thread takes and returns slot 0.
//
// It is what a sync.Pool field of Plan was, without the pool's global
// registration: the runtime lists every pool that was Put to since the
// last collection and empties it only at the start of the next one, so a
// pool inside a Plan kept the whole plan, and through it its session's
// groups, constants and device memory, alive one collection past the
// session's Close. A process that opened sessions quickly (the fuzz
// run: a session per input) kept every session of a collection cycle,
// each with its allocator's region (64 MiB under MSTREAM_HOST_MEMORY_MB
// = 64), so the live heap, and with it the next cycle's goal and the
// sessions it kept, grew without bound (1.2 GB live, 4 GB RSS in 30 s).
// A stash is plain memory of its plan and goes with it. Unlike a pool it
// keeps its values while the plan lives, at most stashSlots of them,
// which the plan's own memory bounds as well.
type stash[T any] struct {
	slots [stashSlots]atomic.Pointer[T]
}

// get returns an idle value, or nil when none is.
func (s *stash[T]) get() *T {
	for i := range s.slots {
		if s.slots[i].Load() != nil {
			if v := s.slots[i].Swap(nil); v != nil {
				return v
			}
		}
	}
	return nil
}

// put keeps v for a later get, unless every slot is taken.
func (s *stash[T]) put(v *T) {
	for i := range s.slots {
		if s.slots[i].Load() == nil && s.slots[i].CompareAndSwap(nil, v) {
			return
		}
	}
}
