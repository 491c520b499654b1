package session

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"mstream/proto/tfpb"
)

// TestGPUTraceDeviceTimes traces concurrent GPU runs of the bundled model
// and checks that the Chrome trace carries the device's own times: each
// kernel and copy is a slice on its stream's track (not only the host's
// launch lane), slices of one stream never overlap across runs, every
// device slice lies inside the window of the Run that made it, and the
// waits between streams are flow arrows (none when the streams are
// merged).
func TestGPUTraceDeviceTimes(t *testing.T) {
	wantGPU(t)
	m := loadModel(t)
	dir := t.TempDir()
	for i, env := range []map[string]string{
		{"TF_GPU_STREAM_GROUP_COUNT": "2"},
		{"TF_GPU_STREAM_GROUP_COUNT": "2", "TF_GPU_STREAM_MERGE": "true"},
	} {
		env["MSTREAM_DEVICE"] = "gpu"
		t.Run(fmt.Sprint(env), func(t *testing.T) {
			s := openSession(t, m.g, env)
			const workers, runs = 3, 3
			runTraced(t, s, m, workers, runs, 8, func(w, k int, md *tfpb.RunMetadata) {
				// RunMetadata: device lanes of this run lie inside
				// the run's launch window, give or take the
				// anchor's wake-up (1 ms is generous).
				var lo, hi int64 = 1 << 62, 0
				devNodes := 0
				for _, ds := range md.GetStepStats().GetDevStats() {
					for _, ns := range ds.NodeStats {
						st, end := ns.AllStartMicros, ns.AllStartMicros+ns.AllEndRelMicros
						if strings.Contains(ds.Device, "/stream:") {
							devNodes++
							continue
						}
						lo, hi = min(lo, st), max(hi, end)
					}
				}
				if devNodes == 0 {
					t.Errorf("run %d/%d: no slices on the GPU's stream lanes", w, k)
					return
				}
				for _, ds := range md.GetStepStats().GetDevStats() {
					if !strings.Contains(ds.Device, "/stream:") {
						continue
					}
					for _, ns := range ds.NodeStats {
						if ns.AllStartMicros < lo-1000 || ns.AllStartMicros+ns.AllEndRelMicros > hi+20000 {
							t.Errorf("device slice %s on %s at [%d,+%d] us is outside the run's window [%d,%d]",
								ns.NodeName, ds.Device, ns.AllStartMicros, ns.AllEndRelMicros, lo, hi)
						}
					}
				}
			})
			sum := writeAndCheckTrace(t, s, filepath.Join(dir, fmt.Sprintf("trace%d.json", i)))
			streamTracks := 0
			for _, name := range sum.Tracks {
				if strings.Contains(name, "(stream ") {
					streamTracks++
				}
			}
			merged := env["TF_GPU_STREAM_MERGE"] == "true"
			if merged && streamTracks < 1 || !merged && streamTracks < 3 {
				t.Errorf("%d stream tracks (%v); want the device streams' own", streamTracks, sum.Tracks)
			}
			if merged != (sum.Flows == 0) {
				t.Errorf("%d flow arrows (merged streams: %v)", sum.Flows, merged)
			}
			if steps := workers * runs; sum.Steps != steps {
				t.Errorf("%d steps in the trace, want %d", sum.Steps, steps)
			}
		})
	}
}
