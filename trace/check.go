package trace

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
)

// ChromeSummary is what CheckChrome found in a Chrome trace.
type ChromeSummary struct {
	// Processes maps pid to its process_name; Tracks maps each (pid, tid)
	// to its thread_name.
	Processes map[int]string
	Tracks    map[[2]int]string
	// Slices counts "X" events per category (kernel, h2d, d2h); Flows
	// counts complete "s"/"f" pairs.
	Slices map[string]int
	Flows  int
	Steps  int
}

// chromeEvent is an event as CheckChrome reads it back.
type chromeEvent struct {
	Name string          `json:"name"`
	Cat  string          `json:"cat"`
	Ph   string          `json:"ph"`
	Ts   *float64        `json:"ts"`
	Dur  *float64        `json:"dur"`
	Pid  *int            `json:"pid"`
	Tid  *int            `json:"tid"`
	ID   int             `json:"id"`
	Bp   string          `json:"bp"`
	Args json.RawMessage `json:"args"`
}

// CheckChrome reads a Chrome trace as WriteChrome writes it and checks its
// structure: a traceEvents array; every event has a phase, pid and tid;
// every track is named and belongs to a named process; slices ("X") have
// a start and a non-negative duration on a named track; slices on one
// stream's track do not overlap (a stream runs one item at a time; a
// pool lane is exempt); every flow
// start ("s") has exactly one end ("f") with the same id, the start lies
// inside a slice of its track and the end at the start of a slice of
// another track, no earlier than the start.
func CheckChrome(r io.Reader) (*ChromeSummary, error) {
	var doc struct {
		TraceEvents []chromeEvent `json:"traceEvents"`
		OtherData   struct {
			Steps int `json:"steps"`
		} `json:"otherData"`
	}
	if err := json.NewDecoder(r).Decode(&doc); err != nil {
		return nil, fmt.Errorf("not a JSON trace object: %v", err)
	}
	if doc.TraceEvents == nil {
		return nil, fmt.Errorf("no traceEvents array")
	}
	sum := &ChromeSummary{Processes: map[int]string{}, Tracks: map[[2]int]string{}, Slices: map[string]int{}, Steps: doc.OtherData.Steps}
	type span struct{ start, end float64 }
	slices := map[[2]int][]span{}
	type flowEnd struct {
		track [2]int
		ts    float64
	}
	starts, ends := map[int]flowEnd{}, map[int]flowEnd{}
	for i, e := range doc.TraceEvents {
		if e.Ph == "" || e.Pid == nil {
			return nil, fmt.Errorf("event %d (%q) has no phase or pid", i, e.Name)
		}
		if e.Ph == "M" {
			var args struct {
				Name string `json:"name"`
			}
			json.Unmarshal(e.Args, &args)
			switch e.Name {
			case "process_name":
				sum.Processes[*e.Pid] = args.Name
			case "thread_name":
				if e.Tid == nil {
					return nil, fmt.Errorf("event %d: thread_name without tid", i)
				}
				sum.Tracks[[2]int{*e.Pid, *e.Tid}] = args.Name
			}
			continue
		}
		if e.Tid == nil || e.Ts == nil {
			return nil, fmt.Errorf("event %d (%q, ph %s) has no tid or ts", i, e.Name, e.Ph)
		}
		k := [2]int{*e.Pid, *e.Tid}
		switch e.Ph {
		case "X":
			if e.Dur == nil || *e.Dur < 0 {
				return nil, fmt.Errorf("slice %d (%q) has no or a negative duration", i, e.Name)
			}
			sum.Slices[e.Cat]++
			slices[k] = append(slices[k], span{*e.Ts, *e.Ts + *e.Dur})
		case "s", "f":
			m := starts
			if e.Ph == "f" {
				m = ends
				if e.Bp != "e" {
					return nil, fmt.Errorf("flow end %d does not bind to its enclosing slice (bp %q)", e.ID, e.Bp)
				}
			}
			if _, dup := m[e.ID]; dup || e.ID == 0 {
				return nil, fmt.Errorf("flow id %d: duplicate or missing %q event", e.ID, e.Ph)
			}
			m[e.ID] = flowEnd{k, *e.Ts}
		default:
			return nil, fmt.Errorf("event %d has unexpected phase %q", i, e.Ph)
		}
	}
	for k := range slices {
		if _, ok := sum.Tracks[k]; !ok {
			return nil, fmt.Errorf("slices on track %v, which has no thread_name", k)
		}
	}
	for k := range sum.Tracks {
		if _, ok := sum.Processes[k[0]]; !ok {
			return nil, fmt.Errorf("track %v in process %d, which has no process_name", k, k[0])
		}
	}
	// A tiny tolerance: times are microseconds with nanosecond fractions.
	const eps = 1e-3
	for k, ss := range slices {
		if !strings.Contains(sum.Tracks[k], "(stream ") {
			continue // a pool lane runs kernels side by side
		}
		for i := range ss {
			for j := i + 1; j < len(ss); j++ {
				a, b := ss[i], ss[j]
				if a.start < b.end-eps && b.start < a.end-eps {
					return nil, fmt.Errorf("track %q: slices [%v,%v] and [%v,%v] overlap", sum.Tracks[k], a.start, a.end, b.start, b.end)
				}
			}
		}
	}
	inside := func(k [2]int, ts float64, atStart bool) bool {
		for _, s := range slices[k] {
			if atStart && s.start > ts-eps && s.start < ts+eps {
				return true
			}
			if !atStart && ts >= s.start-eps && ts <= s.end+eps {
				return true
			}
		}
		return false
	}
	for id, s := range starts {
		f, ok := ends[id]
		if !ok {
			return nil, fmt.Errorf("flow %d starts but never ends", id)
		}
		if s.track == f.track {
			return nil, fmt.Errorf("flow %d stays on track %q: a wait crosses streams", id, sum.Tracks[s.track])
		}
		if !inside(s.track, s.ts, false) || !inside(f.track, f.ts, true) {
			return nil, fmt.Errorf("flow %d is not bound to a producer slice and a consumer slice start", id)
		}
		if f.ts < s.ts-eps {
			return nil, fmt.Errorf("flow %d ends (%v) before it starts (%v)", id, f.ts, s.ts)
		}
		sum.Flows++
	}
	if len(ends) != len(starts) {
		return nil, fmt.Errorf("%d flow ends for %d starts", len(ends), len(starts))
	}
	return sum, nil
}
