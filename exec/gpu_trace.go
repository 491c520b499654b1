package exec

import (
	"sync"
	"time"

	cu "mstream/device/cuda"
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

type anchor struct {
	mu   sync.Mutex
	ev   *cu.Event
	host time.Time
}

var anchors sync.Map // *cu.Context -> *anchor

// devMark is one traced piece of device work: the events before and
// after it on its stream.
type devMark struct {
	name, op, kind, role string
	st                   *cu.Stream
	a, b                 *cu.Event
	bytes                int64
}

// traceAnchor returns the context's anchor, making a new one (a host
// synchronise on st, traced steps only) when there is none or it is old:
// ElapsedMs is a float32 of milliseconds, which loses microseconds after
// a few minutes.
func traceAnchor(st *cu.Stream) (*cu.Event, time.Time, error) {
	v, _ := anchors.LoadOrStore(st.Context(), &anchor{})
	an := v.(*anchor)
	an.mu.Lock()
	defer an.mu.Unlock()
	if an.ev != nil && time.Since(an.host) < anchorEvery {
		return an.ev, an.host, nil
	}
	ev, err := st.Context().NewTimingEvent()
	if err != nil {
		return nil, time.Time{}, err
	}
	st.Record(ev)
	if err := ev.Sync(); err != nil {
		ev.Destroy()
		return nil, time.Time{}, err
	}
	// The old anchor stays valid for steps that already measure against
	// it; it is not destroyed (one event per anchorEvery of tracing).
	an.ev, an.host = ev, time.Now()
	return an.ev, an.host, nil
}

// mark records a timing event on st for a traced step; nil when the event
// cannot be made (the slice is then left out, the step goes on).
func (s *gstep) mark(st *cu.Stream) *cu.Event {
	if !s.trace || s.anchor == nil {
		return nil
	}
	ev, err := st.Context().NewTimingEvent()
	if err != nil {
		return nil
	}
	st.Record(ev)
	s.timing = append(s.timing, ev)
	return ev
}

// devSlice keeps the work between events a and b on st for the trace.
func (s *gstep) devSlice(name, op, kind, role string, st *cu.Stream, a, b *cu.Event, bytes int64) {
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
			e.Destroy()
		}
		s.marks, s.timing = nil, nil
	}()
	if !ok || s.anchor == nil {
		return
	}
	at := func(e *cu.Event) (time.Time, bool) {
		ms, err := cu.ElapsedMs(s.anchor, e)
		if err != nil {
			return time.Time{}, false
		}
		return s.anchorHost.Add(time.Duration(float64(ms) * 1e6)), true
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

var traceLocks sync.Map // *cu.Stream -> *sync.Mutex

// lockTrace takes st's trace lock for a traced step and returns its
// unlock; untraced steps take nothing.
func (s *gstep) lockTrace(st *cu.Stream) func() {
	if !s.trace || s.anchor == nil {
		return func() {}
	}
	v, _ := traceLocks.LoadOrStore(st, &sync.Mutex{})
	m := v.(*sync.Mutex)
	m.Lock()
	return m.Unlock
}
