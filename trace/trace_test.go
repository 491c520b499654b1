package trace

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func at(us int) time.Time { return t0.Add(time.Duration(us) * time.Microsecond) }

const dev = "/job:localhost/replica:0/task:0/device:CPU:0"

// twoGroupSteps is what two steps on two groups look like: feed copy on
// h2d, two kernels on compute, fetch copy on d2h, with the waits between.
func twoGroupSteps() []Step {
	mk := func(run int64, g, base, off int) Step {
		sl := []Slice{
			{ID: 0, Name: "x", Op: "MEMCPYHtoD", Kind: H2D, Device: dev, Group: g, Stream: base + 1, Role: "h2d", Start: at(off), End: at(off + 5), Bytes: 64},
			{ID: 1, Name: "mm", Op: "MatMul", Kind: Kernel, Device: dev, Group: g, Stream: base, Role: "compute", Start: at(off + 6), End: at(off + 20), Bytes: 128, Allocator: "bfc"},
			{ID: 2, Name: "relu", Op: "Relu", Kind: Kernel, Device: dev, Group: g, Stream: base, Role: "compute", Start: at(off + 20), End: at(off + 25), Bytes: 128, Allocator: "bfc"},
			{ID: 3, Name: "relu:0", Op: "MEMCPYDtoH", Kind: D2H, Device: dev, Group: g, Stream: base + 2, Role: "d2h", Start: at(off + 26), End: at(off + 30), Bytes: 128},
		}
		return Step{Run: run, Group: g, Slices: sl, Flows: []Flow{{From: 0, To: 1}, {From: 2, To: 3}}}
	}
	// The two groups overlap in time, as concurrent runs do.
	return []Step{mk(1, 0, 0, 0), mk(2, 1, 4, 10)}
}

func TestStepStats(t *testing.T) {
	md := RunMetadata(twoGroupSteps()...)
	ds := md.GetStepStats().GetDevStats()
	if len(ds) != 6 {
		t.Fatalf("%d DeviceStepStats, want one per stream (6)", len(ds))
	}
	nodes := map[string]int{}
	for _, d := range ds {
		if !strings.HasPrefix(d.Device, dev+"/stream:") {
			t.Errorf("device %q does not name its stream", d.Device)
		}
		if tn := d.ThreadNames[0]; !strings.HasPrefix(tn, "group") {
			t.Errorf("thread name %q does not name the group", tn)
		}
		for _, n := range d.NodeStats {
			nodes[n.NodeName]++
			if n.AllStartMicros != n.AllStartNanos/1000 || n.AllEndRelNanos < 0 || n.OpEndRelMicros != n.AllEndRelNanos/1000 {
				t.Errorf("%s: inconsistent times %+v", n.NodeName, n)
			}
			switch n.NodeName {
			case "mm", "relu":
				if len(n.Memory) != 1 || n.Memory[0].TotalBytes != 128 || n.Memory[0].AllocatorName != "bfc" {
					t.Errorf("%s: memory %v, want 128 bytes from bfc", n.NodeName, n.Memory)
				}
			case "x":
				if n.TimelineLabel != "MEMCPYHtoD x (64 bytes)" {
					t.Errorf("copy label %q", n.TimelineLabel)
				}
			}
		}
	}
	for _, n := range []string{"x", "mm", "relu", "relu:0"} {
		if nodes[n] != 2 {
			t.Errorf("node %s appears %d times, want 2", n, nodes[n])
		}
	}
	// mm of the first step: 14 us from t0+6us.
	for _, d := range ds {
		for _, n := range d.NodeStats {
			if n.NodeName == "mm" && d.Device == dev+"/stream:0" {
				if n.AllStartNanos != at(6).UnixNano() || n.AllEndRelNanos != 14000 {
					t.Errorf("mm: start %d rel end %d", n.AllStartNanos, n.AllEndRelNanos)
				}
			}
		}
	}
}

func TestChromeStructure(t *testing.T) {
	var b bytes.Buffer
	if err := WriteChrome(&b, twoGroupSteps(), 3); err != nil {
		t.Fatal(err)
	}
	sum, err := CheckChrome(bytes.NewReader(b.Bytes()))
	if err != nil {
		t.Fatalf("%v\n%s", err, b.String())
	}
	if len(sum.Processes) != 2 || len(sum.Tracks) != 6 {
		t.Errorf("%d processes, %d tracks; want one per group (2), one per stream (6)", len(sum.Processes), len(sum.Tracks))
	}
	if sum.Slices[Kernel] != 4 || sum.Slices[H2D] != 2 || sum.Slices[D2H] != 2 || sum.Flows != 4 || sum.Steps != 2 {
		t.Errorf("summary %+v", sum)
	}
	for k, name := range sum.Tracks {
		if !strings.HasPrefix(name, "group") || !strings.Contains(sum.Processes[k[0]], "group") {
			t.Errorf("track %v named %q in process %q", k, name, sum.Processes[k[0]])
		}
	}
	var doc map[string]any
	json.Unmarshal(b.Bytes(), &doc)
	if od := doc["otherData"].(map[string]any); od["dropped_steps"].(float64) != 3 {
		t.Errorf("otherData %v", od)
	}
}

// TestCheckChromeRejects makes sure the checker is not a rubber stamp:
// each broken trace is refused.
func TestCheckChromeRejects(t *testing.T) {
	steps := twoGroupSteps()
	var good bytes.Buffer
	WriteChrome(&good, steps, 0)
	var doc map[string]any
	json.Unmarshal(good.Bytes(), &doc)
	mutate := map[string]func(evs []any) []any{
		"negative duration": func(evs []any) []any {
			for _, e := range evs {
				if m := e.(map[string]any); m["ph"] == "X" {
					m["dur"] = -1.0
					break
				}
			}
			return evs
		},
		"flow without end": func(evs []any) []any {
			for i, e := range evs {
				if e.(map[string]any)["ph"] == "f" {
					return append(evs[:i:i], evs[i+1:]...)
				}
			}
			return evs
		},
		"unnamed track": func(evs []any) []any {
			for i, e := range evs {
				if e.(map[string]any)["name"] == "thread_name" {
					return append(evs[:i:i], evs[i+1:]...)
				}
			}
			return evs
		},
		"overlapping slices on a stream": func(evs []any) []any {
			for _, e := range evs {
				if m := e.(map[string]any); m["ph"] == "X" && m["name"] == "relu" {
					m["ts"] = m["ts"].(float64) - 3
				}
			}
			return evs
		},
		"flow ending mid-slice": func(evs []any) []any {
			for _, e := range evs {
				if m := e.(map[string]any); m["ph"] == "f" {
					m["ts"] = m["ts"].(float64) + 1
				}
			}
			return evs
		},
	}
	for name, f := range mutate {
		var d map[string]any
		json.Unmarshal(good.Bytes(), &d)
		d["traceEvents"] = f(d["traceEvents"].([]any))
		b, _ := json.Marshal(d)
		if _, err := CheckChrome(bytes.NewReader(b)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if _, err := CheckChrome(strings.NewReader(`{"x": 1}`)); err == nil {
		t.Error("a trace without traceEvents accepted")
	}
}

func TestRecorderBounded(t *testing.T) {
	r := Recorder{Max: 3}
	for i := 0; i < 5; i++ {
		r.Add(Step{Run: int64(i)})
	}
	steps, dropped := r.Steps()
	if len(steps) != 3 || dropped != 2 || steps[0].Run != 2 || steps[2].Run != 4 {
		t.Fatalf("kept %v, dropped %d; want runs 2..4 and 2 dropped", steps, dropped)
	}
	path := t.TempDir() + "/t.json"
	if err := r.WriteFile(path); err != nil {
		t.Fatal(err)
	}
	if err := r.WriteFile(t.TempDir() + "/missing/t.json"); err == nil {
		t.Error("writing into a missing directory succeeded")
	}
}
