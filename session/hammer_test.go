package session

import (
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"mstream/graph"
	"mstream/tensor"
)

// randGraph is a random DAG over a fed x [rows, 4] float: MatMuls by
// [4,4] constants, element-wise binary ops between earlier nodes, unary
// activations; a few nodes are fetched.
type randGraph struct {
	g       *graph.Graph
	x       graph.Output
	fetches []graph.Output
	names   []string
}

func makeRandGraph(t testing.TB, r *rand.Rand, n int) *randGraph {
	b := newGB(t)
	rg := &randGraph{g: b.g}
	rg.x = b.placeholder("x", tensor.PartialShape{Known: true, Dims: []int64{-1, 4}})
	outs := []graph.Output{rg.x}
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("n%d", i)
		pick := func() graph.Output { return outs[len(outs)-1-r.Intn(min(len(outs), 4))] }
		var o graph.Output
		switch k := r.Intn(6); k {
		case 0:
			w := make([]float32, 16)
			for j := range w {
				w[j] = float32(r.Intn(9)-4) / 4
			}
			c := b.constant(name+"/w", tensor.FromF32(tensor.Shape{4, 4}, w))
			o = b.matmul(name, pick(), c)
		case 1:
			o = b.add(name, pick(), pick())
		case 2:
			o = b.op("Mul", name, nil, pick(), pick())
		case 3:
			o = b.op("Sub", name, nil, pick(), pick())
		case 4:
			o = b.relu(name, pick())
		default:
			o = b.op("Tanh", name, nil, pick())
		}
		outs = append(outs, o)
		rg.names = append(rg.names, name)
	}
	// The last node and up to two others.
	rg.fetches = []graph.Output{outs[len(outs)-1]}
	for k := 0; k < r.Intn(3); k++ {
		rg.fetches = append(rg.fetches, outs[1+r.Intn(len(outs)-1)])
	}
	return rg
}

func (rg *randGraph) feed(r *rand.Rand) []Feed {
	rows := 1 + r.Intn(8)
	v := make([]float32, rows*4)
	for i := range v {
		v[i] = r.Float32()*2 - 1
	}
	return []Feed{{rg.x, tensor.FromF32(tensor.Shape{int64(rows), 4}, v)}}
}

// randomKnobs draws a knob setting: any combination of the multi-stream
// knobs, node-level mode with a random assignment file included.
func randomKnobs(t testing.TB, r *rand.Rand, dir string, i int) map[string]string {
	b := func() string { return fmt.Sprint(r.Intn(2) == 0) }
	env := map[string]string{
		"TF_GPU_STREAM_GROUP_COUNT":          fmt.Sprint(1 + r.Intn(4)),
		"TF_GPU_STREAM_MERGE":                b(),
		"TF_GPU_STREAM_AWARE_BFC":            b(),
		"TF_GPU_STREAM_GROUP_SHARE_MEM_POOL": b(),
		"TF_PER_STREAM_HOST_ALLOCATOR":       b(),
		"TF_SEGMENT_OWN_CONST":               b(),
		"TF_REDUCE_STREAM_WAIT":              b(),
		"TF_FORCE_GPU_ALLOW_GROWTH":          b(),
		"TF_GPU_CONTEXT_COUNT":               fmt.Sprint(1 + r.Intn(2)),
		"TF_BFC_EXTEND_LIMIT_MB":             fmt.Sprint(r.Intn(3)),
		"TF_GPU_THREAD_MODE":                 []string{"global", "gpu_private", "gpu_shared"}[r.Intn(3)],
		"TF_GPU_THREAD_COUNT":                fmt.Sprint(1 + r.Intn(3)),
		"MSTREAM_HOST_STREAMS":               b(),
		"MSTREAM_HOST_STREAM_JITTER":         fmt.Sprint(r.Intn(4) == 0),
		// Small device memory: without growth an allocator takes its
		// whole limit at once, and zeroing 256 MiB of reused Go heap per
		// session made the test crawl.
		"MSTREAM_HOST_MEMORY_MB": fmt.Sprint(16 << r.Intn(2)),
	}
	if r.Intn(3) == 0 {
		n := 1 + r.Intn(4)
		env["TF_GPU_STREAM_GROUP_COUNT"] = fmt.Sprint(n)
		env["TF_NODE_LEVEL_MULTISTREAM"] = "true"
		env["TF_MULTI_STREAM_ALLOW_FORWARD_PROPAGATION"] = b()
		env["MSTREAM_STREAM_ASSIGN"] = []string{"file", "auto"}[r.Intn(2)]
		var rules string
		for g := 0; g < n; g++ {
			rules += fmt.Sprintf("%d:n[0-9]*%d\n", g, r.Intn(10))
		}
		path := filepath.Join(dir, fmt.Sprintf("rules%d.txt", i))
		if err := os.WriteFile(path, []byte(rules), 0o644); err != nil {
			t.Fatal(err)
		}
		env["TF_STREAM_FROM_FILE"] = path
	}
	return env
}

// TestHammer: 64 goroutines run random graphs on sessions with random
// knob settings at once; every output must equal the single-group run of
// the same graph and feed, and every session ends quiescent (no hold
// left, every buffer back, allocators consistent).
func TestHammer(t *testing.T) {
	const (
		graphs     = 5
		knobSets   = 8
		goroutines = 64
		runsEach   = 12
		feedsEach  = 8
	)
	r := rand.New(rand.NewSource(11))
	dir := t.TempDir()
	rgs := make([]*randGraph, graphs)
	jobs := make([][]job, graphs)
	for gi := range rgs {
		rgs[gi] = makeRandGraph(t, r, 6+r.Intn(14))
		ref := openSession(t, rgs[gi].g, map[string]string{"MSTREAM_HOST_MEMORY_MB": "16"})
		for k := 0; k < feedsEach; k++ {
			f := rgs[gi].feed(r)
			want, _, err := ref.Run(nil, f, rgs[gi].fetches, nil)
			if err != nil {
				t.Fatalf("graph %d: reference run: %v", gi, err)
			}
			jobs[gi] = append(jobs[gi], job{f, want})
		}
	}
	type sess struct {
		s   *Session
		gi  int
		env map[string]string
	}
	var ss []sess
	for k := 0; k < knobSets; k++ {
		env := randomKnobs(t, r, dir, k)
		for gi := range rgs {
			ss = append(ss, sess{openSession(t, rgs[gi].g, env), gi, env})
		}
	}
	var wg sync.WaitGroup
	for w := 0; w < goroutines; w++ {
		wg.Add(1)
		go func(seed int64) {
			defer wg.Done()
			r := rand.New(rand.NewSource(seed))
			for k := 0; k < runsEach; k++ {
				s := ss[r.Intn(len(ss))]
				j := jobs[s.gi][r.Intn(feedsEach)]
				got, _, err := s.s.Run(nil, j.feeds, rgs[s.gi].fetches, nil)
				if err != nil {
					t.Errorf("graph %d, knobs %v: %v", s.gi, s.env, err)
					return
				}
				if err := sameTensors(got, j.want); err != nil {
					t.Errorf("graph %d, knobs %v: %v", s.gi, s.env, err)
				}
			}
		}(int64(w))
	}
	wg.Wait()
	var runs int64
	for _, s := range ss {
		checkQuiescent(t, s.s)
		st := s.s.Stats()
		if st.RunsFailed != 0 || st.RunsInFlight != 0 {
			t.Errorf("knobs %v: %d failed, %d in flight", s.env, st.RunsFailed, st.RunsInFlight)
		}
		var byGroup int64
		for _, g := range st.Groups {
			byGroup += g.RunsCompleted
		}
		if !st.NodeLevel && byGroup != st.RunsCompleted {
			t.Errorf("knobs %v: groups served %d runs, the session %d", s.env, byGroup, st.RunsCompleted)
		}
		runs += st.RunsCompleted
	}
	if runs != goroutines*runsEach {
		t.Errorf("%d runs completed, want %d", runs, goroutines*runsEach)
	}
}
