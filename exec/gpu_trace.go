package exec

import (
	"errors"
	"time"

	"mstream/device"
	"mstream/trace"
)

// Device times of traced GPU steps.
//
// A traced step records a pair of timing events around each kernel and
// copy it enqueues, on the stream that runs it. After the step's final
// event, each pair becomes a slice on that stream's track, placed on the
// host clock through the context's anchor: a timing event recorded once
// (and again every anchorEvery) whose host time was read right after
// synchronising on it. All steps of a context share the anchor, so slices
// of one stream keep the device's order across steps and never overlap.
// The anchor's host time is late by the wake-up after the synchronise
// (microseconds), the same for every slice measured against it.
// Untraced steps create no timing events.
//
// Several steps of a group may launch onto one stream at once (the
// group's launch pool has several goroutines); a traced step holds the
// stream's trace lock from its first mark to its second, so the pair
// brackets only its own work and the slices of one stream do not
// overlap. An untraced step's work can still fall inside a bracket (a
// FULL_TRACE Run next to plain ones): the slice then shows the stream
// busy for longer, never a wrong order.

const anchorEvery = 10 * time.Second

// devMark is one traced piece of device work: the events before and
// after it on its stream.
type devMark struct {
	name, op, kind, role string
	st                   device.Stream
	a, b                 device.Event
	bytes                int64
}

// timingEvent is a timing event and the stream whose device destroys it.
type timingEvent struct {
	t  device.Timer
	ev device.Event
}

// traceAnchor returns the anchor of st's context (device.Timer.Anchor), or
// an error when st's device cannot time its work.
func traceAnchor(st device.Stream) (device.Event, time.Time, error) {
	t, ok := st.(device.Timer)
	if !ok {
		return nil, time.Time{}, errNoTimer
	}
	return t.Anchor(anchorEvery)
}

// mark records a timing event on st for a traced step; nil when the event
// cannot be made (the slice is then left out, the step goes on).
func (s *gstep) mark(st device.Stream) device.Event {
	if !s.trace || s.anchor == nil {
		return nil
	}
	t, ok := st.(device.Timer)
	if !ok {
		return nil
	}
	ev, err := t.TimingEvent()
	if err != nil {
		return nil
	}
	s.timing = append(s.timing, timingEvent{t, ev})
	if st.Record(ev) != nil {
		return nil
	}
	return ev
}

// devSlice keeps the work between events a and b on st for the trace.
func (s *gstep) devSlice(name, op, kind, role string, st device.Stream, a, b device.Event, bytes int64) {
	if a == nil || b == nil {
		return
	}
	s.marks = append(s.marks, devMark{name: name, op: op, kind: kind, role: role, st: st, a: a, b: b, bytes: bytes})
}

// deviceSlices turns the step's marks into slices on the device streams'
// tracks, with flow arrows for the waits between them: the compute stream
// waits for the feeds' copy, the D2H stream for the kernels before the
// fetches. Called once every event has completed; it destroys every
// timing event the step made, used or not (a failed launch leaves some).
func (s *gstep) deviceSlices(ok bool) {
	defer func() {
		for _, e := range s.timing {
			e.t.DestroyEvent(e.ev)
		}
		s.marks, s.timing = nil, nil
	}()
	t, timed := s.c.(device.Timer)
	if !ok || s.anchor == nil || !timed {
		return
	}
	at := func(e device.Event) (time.Time, bool) {
		d, err := t.Elapsed(s.anchor, e)
		if err != nil {
			return time.Time{}, false
		}
		return s.anchorHost.Add(d), true
	}
	s.tr.mu.Lock()
	defer s.tr.mu.Unlock()
	lastCompute, feeds := -1, -1
	for _, m := range s.marks {
		start, ok1 := at(m.a)
		end, ok2 := at(m.b)
		if !ok1 || !ok2 {
			continue
		}
		if end.Before(start) {
			end = start
		}
		id := len(s.tr.slices)
		s.tr.slices = append(s.tr.slices, trace.Slice{ID: id, Name: m.name, Op: m.op, Kind: m.kind,
			Device: s.g.Device.Name(), Group: int(s.g.ID), Stream: int(m.st.ID()), Role: m.role,
			Start: start, End: end, Bytes: m.bytes, Allocator: s.g.Alloc.Name()})
		switch {
		case m.st == s.h && m.st != s.c:
			feeds = id
		case m.st == s.c:
			if feeds >= 0 {
				s.tr.flows = append(s.tr.flows, trace.Flow{From: feeds, To: id})
				feeds = -1
			}
			lastCompute = id
		case m.st == s.d && lastCompute >= 0:
			s.tr.flows = append(s.tr.flows, trace.Flow{From: lastCompute, To: id})
			lastCompute = -1
		}
	}
}

// lockTrace takes st's trace lock for a traced step and returns its
// unlock; untraced steps take nothing.
func (s *gstep) lockTrace(st device.Stream) func() {
	if !s.trace || s.anchor == nil {
		return func() {}
	}
	m := s.g.TraceLock(st)
	m.Lock()
	return m.Unlock
}

var errNoTimer = errors.New("the device cannot time its streams' work")
