package session

import (
	"math/rand"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"mstream/graph"
	"mstream/tensor"
)

// TestLoadProfile runs the binary GraphDef at MSTREAM_PROFILE_MODEL (e.g.
// bench/gpu/gen's dlrm_small.pb) closed-loop from MSTREAM_PROFILE_THREADS
// goroutines (default 8) at batch MSTREAM_PROFILE_BATCH (default 16) for
// MSTREAM_PROFILE_SECONDS (default 3), as bench/gpu/loadgen does (every
// Placeholder fed, the first unknown dim the batch, integer ids below
// 100000, fetch "output"), under the session knobs of the environment,
// and logs the QPS and the device allocators' regions and peak bytes in
// use. Run with -test.cpuprofile to see where the host's
// time goes under load (bench/gpu/README compares g4 with g4a this way).
// It skips without MSTREAM_PROFILE_MODEL and asserts nothing about time.
func TestLoadProfile(t *testing.T) {
	path := os.Getenv("MSTREAM_PROFILE_MODEL")
	if path == "" {
		t.Skip("set MSTREAM_PROFILE_MODEL to a binary GraphDef")
	}
	num := func(k string, def int) int {
		if v, err := strconv.Atoi(os.Getenv(k)); err == nil && v > 0 {
			return v
		}
		return def
	}
	threads, batch, secs := num("MSTREAM_PROFILE_THREADS", 8), num("MSTREAM_PROFILE_BATCH", 16), num("MSTREAM_PROFILE_SECONDS", 3)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	gd, err := graph.ParseGraphDef(b)
	if err != nil {
		t.Fatal(err)
	}
	g := graph.New()
	if _, err := g.Import(gd, &graph.ImportOptions{}); err != nil {
		t.Fatal(err)
	}
	var ins []graph.Output
	for _, n := range g.Nodes() {
		if n.Op == "Placeholder" {
			ins = append(ins, n.Output(0))
		}
	}
	out := g.Lookup("output")
	if out == nil || len(ins) == 0 {
		t.Fatal("the model needs placeholders and an 'output' node")
	}
	feeds := func(r *rand.Rand) []Feed {
		var fs []Feed
		for _, in := range ins {
			var shape tensor.Shape
			for _, d := range in.Node.OutShapes[0].Dims {
				if d < 0 {
					d = int64(batch)
				}
				shape = append(shape, d)
			}
			v := tensor.New(in.DType(), shape)
			for i := 0; i < int(v.NumElements()); i++ {
				switch v.DType {
				case tensor.Float:
					v.F32()[i] = r.Float32()*2 - 1
				case tensor.Int32:
					v.I32()[i] = int32(r.Intn(100000))
				case tensor.Int64:
					v.I64()[i] = int64(r.Intn(100000))
				}
			}
			fs = append(fs, Feed{in, v})
		}
		return fs
	}
	s, err := New(g, &Options{}) // knobs from the process environment
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	fetch := []graph.Output{out.Output(0)}
	// Warm every group: sequential runs go round robin over idle groups.
	r := rand.New(rand.NewSource(1))
	for i := 0; i < 2*len(s.Stats().Groups)+2; i++ {
		if _, _, err := s.Run(nil, feeds(r), fetch, nil); err != nil {
			t.Fatal(err)
		}
	}
	var runs atomic.Int64
	deadline := time.Now().Add(time.Duration(secs) * time.Second)
	var wg sync.WaitGroup
	for w := 0; w < threads; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			f := feeds(rand.New(rand.NewSource(int64(w))))
			for time.Now().Before(deadline) {
				if _, _, err := s.Run(nil, f, fetch, nil); err != nil {
					t.Error(err)
					return
				}
				runs.Add(1)
			}
		}(w)
	}
	wg.Wait()
	// The device allocators' regions and peak in use, for comparing
	// per-group with stream-aware allocators (TF_GPU_STREAM_AWARE_BFC).
	var regions, peak uint64
	for _, a := range s.Stats().Allocators {
		regions += a.RegionBytes
		peak += a.PeakBytesInUse
	}
	t.Logf("%s: %d threads, batch %d: %.0f runs/s; device allocators: %.1f MiB of regions, peaks in use %.1f MiB",
		path, threads, batch, float64(runs.Load())/float64(secs), float64(regions)/(1<<20), float64(peak)/(1<<20))
}

// TestTrainingProfile trains the training example's graph
// (examples/data/training.pbtxt) for MSTREAM_PROFILE_SECONDS (default 3)
// at batch MSTREAM_PROFILE_BATCH (default 256) under the session knobs of
// the environment (TF_NODE_LEVEL_MULTISTREAM, TF_GPU_STREAM_GROUP_COUNT,
// TF_STREAM_FROM_FILE, ...), as bench/gpu/training.sh does, and logs the
// steps/s and the launch time per step. Set MSTREAM_PROFILE_TRAINING=1 to
// run it; with -test.cpuprofile, -test.mutexprofile or -test.blockprofile
// it shows where a step's host time goes with one group and with four.
// It asserts nothing about time.
func TestTrainingProfile(t *testing.T) {
	if os.Getenv("MSTREAM_PROFILE_TRAINING") == "" {
		t.Skip("set MSTREAM_PROFILE_TRAINING=1")
	}
	batch, secs := 256, 3
	if v, err := strconv.Atoi(os.Getenv("MSTREAM_PROFILE_BATCH")); err == nil && v > 0 {
		batch = v
	}
	if v, err := strconv.Atoi(os.Getenv("MSTREAM_PROFILE_SECONDS")); err == nil && v > 0 {
		secs = v
	}
	m := loadTrainingModel(t)
	s, err := New(m.g, &Options{}) // knobs from the process environment
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	r := rand.New(rand.NewSource(7))
	if _, _, err := s.Run(nil, m.initFeeds(r), nil, []*graph.Node{m.init}); err != nil {
		t.Fatalf("init: %v", err)
	}
	feeds := m.batch(r, batch)
	step := func() {
		if _, _, err := s.Run(nil, feeds, nil, []*graph.Node{m.train}); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < 20; i++ { // warm up: modules, plans, constants
		step()
	}
	launch := func() (ns, steps int64) {
		for _, g := range s.impl.set.Stats() {
			ns, steps = ns+g.LaunchNs, steps+g.LaunchSteps
		}
		return
	}
	ns0, st0 := launch()
	n := 0
	start := time.Now()
	for deadline := start.Add(time.Duration(secs) * time.Second); time.Now().Before(deadline); n++ {
		step()
	}
	wall := time.Since(start)
	if _, _, err := s.Run(nil, feeds, []graph.Output{m.loss}, nil); err != nil {
		t.Fatal(err)
	}
	ns1, st1 := launch()
	per := int64(0)
	if st1 > st0 {
		per = (ns1 - ns0) / int64(n)
	}
	t.Logf("training, batch %d: %.1f steps/s, %d us a step, runtime launch CPU %d us a step (%d launch steps)",
		batch, float64(n)/wall.Seconds(), wall.Microseconds()/int64(n), per/1000, st1-st0)
}
