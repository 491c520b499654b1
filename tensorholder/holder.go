package tensorholder

import (
	"sync"
	"sync/atomic"

	"mstream/device"
)

// Holder tracks buffers waiting for streams. The zero value is ready.
type Holder struct {
	mu    sync.Mutex
	cond  *sync.Cond
	live  int
	freed atomic.Int64
}

func (h *Holder) add() {
	h.mu.Lock()
	h.live++
	h.mu.Unlock()
}

func (h *Holder) done(free func()) {
	free()
	h.freed.Add(1)
	h.mu.Lock()
	h.live--
	if h.live == 0 && h.cond != nil {
		h.cond.Broadcast()
	}
	h.mu.Unlock()
}

// Hold calls free once every event in events has completed. Events must
// already be recorded after the last use on their streams. With no events
// (or all complete) free runs before Hold returns.
func (h *Holder) Hold(free func(), events []device.Event) {
	var pending []device.Event // a copy: the caller's slice may be its stack's
	for _, e := range events {
		if e != nil && !e.Query() {
			pending = append(pending, e)
		}
	}
	h.add()
	if len(pending) == 0 {
		h.done(free)
		return
	}
	go func() {
		for _, e := range pending {
			e.Synchronize()
		}
		h.done(free)
	}()
}

// HoldOn calls free once every stream in streams has run all work enqueued
// on it before the call: a callback is enqueued on each, and the last one
// to run frees. free then runs on a stream's goroutine, so it must not
// block on a stream.
func (h *Holder) HoldOn(free func(), streams []device.Stream) {
	h.add()
	if len(streams) == 0 {
		h.done(free)
		return
	}
	var left atomic.Int32
	left.Store(int32(len(streams)))
	for _, s := range streams {
		last := func() {
			if left.Add(-1) == 0 {
				h.done(free)
			}
		}
		if device.Enqueue(s, last) != nil {
			// A stream without host functions (or a failed enqueue): its
			// own synchronisation, off the caller's goroutine.
			go func() {
				s.Synchronize()
				last()
			}()
		}
	}
}

// Live returns the number of holds whose buffer has not been freed yet.
func (h *Holder) Live() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.live
}

// Freed returns how many buffers the holder has returned so far.
func (h *Holder) Freed() int64 { return h.freed.Load() }

// Drain blocks until every held buffer has been freed, for shutdown or the
// end of a step.
func (h *Holder) Drain() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.cond == nil {
		h.cond = sync.NewCond(&h.mu)
	}
	for h.live > 0 {
		h.cond.Wait()
	}
}
