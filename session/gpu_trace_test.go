package session

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"mstream/graph"
	"mstream/proto/tfpb"
	"mstream/tensor"
)

// TestGPUTraceDeviceTimes traces concurrent GPU runs of the bundled model
// and checks that the Chrome trace carries the device's own times: each
// kernel and copy is a slice on its stream's track (not only the host's
// launch lane), slices of one stream never overlap across runs, and every
// device slice lies inside the window of the Run that made it. A Run of
// one group copies its feeds and (small) fetches on its compute stream,
// so no stream waits for another and the trace has no flow arrows;
// fetches of more than 64 KiB go out on the D2H stream after a wait for
// compute, which is a flow arrow from compute (the last sub-test).
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
			if streamTracks < 1 {
				t.Errorf("%d stream tracks (%v); want the device streams' own", streamTracks, sum.Tracks)
			}
			if sum.Flows != 0 {
				t.Errorf("%d flow arrows; want none: a one-group step with small fetches waits for no other stream", sum.Flows)
			}
			if steps := workers * runs; sum.Steps != steps {
				t.Errorf("%d steps in the trace, want %d", sum.Steps, steps)
			}
		})
	}
	t.Run("big fetch", func(t *testing.T) {
		b := newGB(t)
		x := b.placeholder("x", tensor.Unknown)
		y := b.relu("y", x)
		s := openSession(t, b.g, map[string]string{"MSTREAM_DEVICE": "gpu", "MSTREAM_CUDA_GRAPH": "0"})
		in := tensor.New(tensor.Float, tensor.Shape{256, 256}) // 256 KiB
		in.F32()[7] = 3
		for i := 0; i < 2; i++ {
			got, _, err := s.Run(&tfpb.RunOptions{TraceLevel: tfpb.RunOptions_FULL_TRACE}, []Feed{{x, in}}, []graph.Output{y}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if v := got[0].F32(); v[7] != 3 || v[8] != 0 {
				t.Fatalf("relu: %v", v[:9])
			}
		}
		sum := writeAndCheckTrace(t, s, filepath.Join(dir, "trace_big.json"))
		streamTracks := 0
		for _, name := range sum.Tracks {
			if strings.Contains(name, "(stream ") {
				streamTracks++
			}
		}
		if streamTracks < 2 || sum.Flows < 2 {
			t.Errorf("%d stream tracks (%v), %d flow arrows; want compute's and D2H's, and a flow from compute to D2H each step",
				streamTracks, sum.Tracks, sum.Flows)
		}
	})
}
