package session

import (
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"mstream/proto/tfpb"
	"mstream/trace"
)

// TestChromeTraceOfEveryCase traces concurrent runs of the bundled model
// in every multi-stream configuration and checks the Chrome trace that
// MS_SessionWriteTrace writes: named tracks, a slice per kernel and copy,
// no two slices overlapping on one stream, and flow arrows for the
// cross-stream waits; with FULL_TRACE, RunMetadata names every lane.
func TestChromeTraceOfEveryCase(t *testing.T) {
	m := loadModel(t)
	dir := t.TempDir()
	for i, env := range multiStreamCases(t) {
		t.Run(fmt.Sprint(env), func(t *testing.T) {
			s := openSession(t, m.g, env)
			const workers, runs = 3, 2
			runTraced(t, s, m, workers, runs, 4, func(w, k int, md *tfpb.RunMetadata) {
				for _, ds := range md.GetStepStats().GetDevStats() {
					if !strings.Contains(ds.Device, "/stream:") || !strings.HasPrefix(ds.ThreadNames[0], "group") {
						t.Errorf("lane %q (%q) does not name its stream and group", ds.Device, ds.ThreadNames[0])
					}
				}
			})
			sum := writeAndCheckTrace(t, s, filepath.Join(dir, fmt.Sprintf("trace%d.json", i)))
			steps := workers * runs
			if sum.Steps != steps || sum.Slices[trace.H2D] != 5*steps || sum.Slices[trace.D2H] != 2*steps || sum.Slices[trace.Kernel] == 0 {
				t.Errorf("summary %+v; want %d steps, each with 5 feed copies and 2 fetch copies", sum, steps)
			}
			merged := env["TF_GPU_STREAM_MERGE"] == "true"
			if merged != (sum.Flows == 0) {
				t.Errorf("%d flow arrows (merged streams: %v)", sum.Flows, merged)
			}
		})
	}
}

// runTraced runs m with FULL_TRACE from workers goroutines, runs each, at
// batch batch (goroutine w draws its feeds from seed w), and hands each
// Run's metadata to check. A failed Run ends its goroutine.
func runTraced(t *testing.T, s *Session, m *model, workers, runs, batch int, check func(w, k int, md *tfpb.RunMetadata)) {
	t.Helper()
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			r := rand.New(rand.NewSource(int64(w)))
			for k := 0; k < runs; k++ {
				_, md, err := s.Run(&tfpb.RunOptions{TraceLevel: tfpb.RunOptions_FULL_TRACE}, m.feeds(r, batch), m.outputs, nil)
				if err != nil {
					t.Error(err)
					return
				}
				check(w, k, md)
			}
		}(w)
	}
	wg.Wait()
}

// writeAndCheckTrace writes the session's Chrome trace to path
// (MS_SessionWriteTrace) and checks it with trace.CheckChrome.
func writeAndCheckTrace(t *testing.T, s *Session, path string) *trace.ChromeSummary {
	t.Helper()
	if err := s.WriteTrace(path); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sum, err := trace.CheckChrome(f)
	if err != nil {
		t.Fatal(err)
	}
	return sum
}
