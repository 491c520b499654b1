package trace

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"sync"
	"time"

	"mstream/proto/tfpb"
)

// Kinds of slices.
const (
	Kernel = "kernel"
	H2D    = "h2d"
	D2H    = "d2h"
)

// Slice is one kernel or copy of a step.
type Slice struct {
	// ID is unique within the step; flows refer to it.
	ID   int
	Name string // node name, or the fed/fetched tensor for copies
	Op   string // op type; "MEMCPYHtoD"/"MEMCPYDtoH" for copies
	Kind string
	// Device is TF's device name; Group the group's ID; Stream the
	// stream's ID on the device, or -1 for the pool lane; Role the
	// stream's role in its group (compute, h2d, d2h, d2d, or inter_op).
	Device string
	Group  int
	Stream int
	Role   string
	// Start and End bound the work on its lane.
	Start, End time.Time
	// Bytes is what the slice allocated (kernels) or moved (copies);
	// Allocator names where kernel bytes came from.
	Bytes     int64
	Allocator string
}

// Flow is a cross-stream wait: slice To waited for slice From.
type Flow struct{ From, To int }

// Step is what one traced Run did.
type Step struct {
	Run    int64 // the session's run number
	Group  int   // the group that served it
	Slices []Slice
	Flows  []Flow
}

// lane identifies a track.
type lane struct {
	device string
	group  int
	stream int
	role   string
}

func (s *Slice) lane() lane { return lane{s.Device, s.Group, s.Stream, s.Role} }

func (l lane) deviceName() string {
	if l.stream < 0 {
		return l.device
	}
	return fmt.Sprintf("%s/stream:%d", l.device, l.stream)
}

func (l lane) threadName() string {
	if l.stream < 0 {
		return fmt.Sprintf("group%d/%s", l.group, l.role)
	}
	return fmt.Sprintf("group%d/%s (stream %d)", l.group, l.role, l.stream)
}

// StepStats converts steps into TF's StepStats: one DeviceStepStats per
// lane, in order of first use.
func StepStats(steps ...Step) *tfpb.StepStats {
	out := &tfpb.StepStats{}
	byLane := map[lane]*tfpb.DeviceStepStats{}
	for _, st := range steps {
		for i := range st.Slices {
			s := &st.Slices[i]
			l := s.lane()
			ds := byLane[l]
			if ds == nil {
				ds = &tfpb.DeviceStepStats{Device: l.deviceName(), ThreadNames: map[uint32]string{0: l.threadName()}}
				byLane[l] = ds
				out.DevStats = append(out.DevStats, ds)
			}
			ds.NodeStats = append(ds.NodeStats, nodeStats(s))
		}
	}
	return out
}

func nodeStats(s *Slice) *tfpb.NodeExecStats {
	dur := s.End.Sub(s.Start)
	ns := &tfpb.NodeExecStats{
		NodeName:        s.Name,
		AllStartMicros:  s.Start.UnixMicro(),
		OpEndRelMicros:  dur.Microseconds(),
		AllEndRelMicros: dur.Microseconds(),
		AllStartNanos:   s.Start.UnixNano(),
		OpEndRelNanos:   dur.Nanoseconds(),
		AllEndRelNanos:  dur.Nanoseconds(),
	}
	switch s.Kind {
	case H2D, D2H:
		ns.TimelineLabel = fmt.Sprintf("%s %s (%d bytes)", s.Op, s.Name, s.Bytes)
	default:
		ns.TimelineLabel = s.Name + " = " + s.Op + "()"
		if s.Bytes > 0 {
			ns.Memory = []*tfpb.AllocatorMemoryUsed{{AllocatorName: s.Allocator, TotalBytes: s.Bytes, PeakBytes: s.Bytes}}
		}
	}
	return ns
}

// RunMetadata wraps StepStats as TF returns it for FULL_TRACE.
func RunMetadata(steps ...Step) *tfpb.RunMetadata {
	return &tfpb.RunMetadata{StepStats: StepStats(steps...)}
}

// Recorder keeps a session's traced steps for a Chrome trace. The zero
// value keeps up to DefaultMax steps.
type Recorder struct {
	// Max bounds the steps kept; 0 means DefaultMax.
	Max int

	mu      sync.Mutex
	steps   []Step
	dropped int
}

// DefaultMax is how many steps a Recorder keeps by default.
const DefaultMax = 10000

// Add keeps st, dropping the oldest step when full.
func (r *Recorder) Add(st Step) {
	r.mu.Lock()
	defer r.mu.Unlock()
	m := r.Max
	if m <= 0 {
		m = DefaultMax
	}
	if len(r.steps) >= m {
		copy(r.steps, r.steps[1:])
		r.steps = r.steps[:len(r.steps)-1]
		r.dropped++
	}
	r.steps = append(r.steps, st)
}

// Steps returns a copy of the kept steps and how many were dropped.
func (r *Recorder) Steps() ([]Step, int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Step(nil), r.steps...), r.dropped
}

// WriteFile writes the kept steps as Chrome trace JSON to path.
func (r *Recorder) WriteFile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	steps, dropped := r.Steps()
	if err := WriteChrome(f, steps, dropped); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// event is one Chrome trace event.
type event struct {
	Name string         `json:"name"`
	Cat  string         `json:"cat,omitempty"`
	Ph   string         `json:"ph"`
	Ts   float64        `json:"ts"`
	Dur  *float64       `json:"dur,omitempty"`
	Pid  int            `json:"pid"`
	Tid  int            `json:"tid"`
	ID   int            `json:"id,omitempty"`
	Bp   string         `json:"bp,omitempty"`
	Args map[string]any `json:"args,omitempty"`
}

// WriteChrome writes steps as a Chrome trace: one process per group, one
// thread per lane, an "X" event per slice and an "s"/"f" pair per flow.
func WriteChrome(w io.Writer, steps []Step, dropped int) error {
	var t0 time.Time
	for _, st := range steps {
		for _, s := range st.Slices {
			if t0.IsZero() || s.Start.Before(t0) {
				t0 = s.Start
			}
		}
	}
	us := func(t time.Time) float64 { return float64(t.Sub(t0).Nanoseconds()) / 1e3 }
	type key struct{ pid, tid int }
	lanes := map[lane]key{}
	var order []lane
	for _, st := range steps {
		for _, s := range st.Slices {
			if _, ok := lanes[s.lane()]; !ok {
				lanes[s.lane()] = key{}
				order = append(order, s.lane())
			}
		}
	}
	sort.SliceStable(order, func(i, j int) bool {
		a, b := order[i], order[j]
		if a.group != b.group {
			return a.group < b.group
		}
		return a.stream < b.stream
	})
	var evs []event
	named := map[int]bool{}
	for i, l := range order {
		k := key{pid: l.group + 1, tid: i + 1}
		lanes[l] = k
		if !named[k.pid] {
			named[k.pid] = true
			evs = append(evs, event{Name: "process_name", Ph: "M", Pid: k.pid,
				Args: map[string]any{"name": fmt.Sprintf("group %d (%s)", l.group, l.device)}},
				event{Name: "process_sort_index", Ph: "M", Pid: k.pid, Args: map[string]any{"sort_index": k.pid}})
		}
		evs = append(evs, event{Name: "thread_name", Ph: "M", Pid: k.pid, Tid: k.tid, Args: map[string]any{"name": l.threadName()}},
			event{Name: "thread_sort_index", Ph: "M", Pid: k.pid, Tid: k.tid, Args: map[string]any{"sort_index": k.tid}})
	}
	flowID := 0
	for _, st := range steps {
		byID := map[int]*Slice{}
		for i := range st.Slices {
			s := &st.Slices[i]
			byID[s.ID] = s
			k := lanes[s.lane()]
			dur := us(s.End) - us(s.Start)
			args := map[string]any{"run": st.Run, "op": s.Op}
			if s.Bytes > 0 {
				args["bytes"] = s.Bytes
			}
			evs = append(evs, event{Name: s.Name, Cat: s.Kind, Ph: "X", Ts: us(s.Start), Dur: &dur, Pid: k.pid, Tid: k.tid, Args: args})
		}
		for _, f := range st.Flows {
			from, to := byID[f.From], byID[f.To]
			if from == nil || to == nil {
				continue
			}
			flowID++
			a, b := lanes[from.lane()], lanes[to.lane()]
			// The start binds to the producer slice (a point inside it),
			// the end to the consumer slice that waited.
			ts := us(from.End)
			if d := ts - us(from.Start); d > 0.002 {
				ts -= 0.001
			}
			evs = append(evs,
				event{Name: "wait", Cat: "stream_wait", Ph: "s", Ts: ts, Pid: a.pid, Tid: a.tid, ID: flowID},
				event{Name: "wait", Cat: "stream_wait", Ph: "f", Bp: "e", Ts: us(to.Start), Pid: b.pid, Tid: b.tid, ID: flowID})
		}
	}
	doc := map[string]any{"traceEvents": evs, "displayTimeUnit": "ns",
		"otherData": map[string]any{"producer": "mstream", "steps": len(steps), "dropped_steps": dropped}}
	enc := json.NewEncoder(w)
	return enc.Encode(doc)
}
