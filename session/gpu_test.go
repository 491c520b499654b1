package session

import (
	"errors"
	"fmt"
	"math"
	"math/rand"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"mstream/device"
	"mstream/device/cuda"
	"mstream/graph"
	"mstream/proto/tfpb"
	"mstream/status"
	"mstream/tensor"

	// The GPU kernels register with the kernel registry, which placement
	// consults (capi links them into the library); registering needs no
	// GPU.
	_ "mstream/kernels/cuda"
)

// TestNoGPU: without a usable GPU, MSTREAM_DEVICE=gpu fails TF_NewSession
// with a status that says so and why; auto runs on the CPU and lists only
// the CPU; cpu never looks.
func TestNoGPU(t *testing.T) {
	old := listGPUs
	t.Cleanup(func() { listGPUs = old })
	calls := 0
	listGPUs = func() ([]device.GPU, error) {
		calls++
		return nil, status.Wrap(&status.Error{Code: status.Unavailable, Msg: "cuda: libcuda.so.1 not found", Inner: cuda.ErrNoCUDA}, "cuda")
	}
	g := newGB(t).g
	_, err := New(g, &Options{Env: map[string]string{"MSTREAM_DEVICE": "gpu"}})
	if err == nil || status.CodeOf(err) != status.Unavailable || !strings.Contains(err.Error(), "MSTREAM_DEVICE=gpu") ||
		!strings.Contains(err.Error(), "libcuda.so.1 not found") {
		t.Fatalf("MSTREAM_DEVICE=gpu without a GPU: %v; want UNAVAILABLE naming the variable and the cause", err)
	}
	for _, env := range []map[string]string{{}, {"MSTREAM_DEVICE": "cpu"}} {
		s, err := New(g, &Options{Env: env}) // not openSession, which pins the CPU
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		if d := s.Devices(); len(d) != 1 || d[0].Type != "CPU" || d[0].Name != CPUDeviceName {
			t.Errorf("%v: devices %+v, want the CPU only", env, d)
		}
	}
	if calls != 2 {
		t.Errorf("the loader ran %d times, want 2 (gpu and auto; cpu never looks)", calls)
	}
}

// cpuReference opens the host-only session a GPU test compares with. It
// allows soft placement, as TF's CPU-only sessions must for a graph whose
// nodes are pinned to GPUs: without it placement is strict and refuses them.
func cpuReference(t testing.TB, g *graph.Graph) *Session {
	t.Helper()
	s, err := New(g, &Options{Config: &tfpb.ConfigProto{AllowSoftPlacement: true},
		Env: hostEnv(map[string]string{"MSTREAM_DEVICE": "cpu"})})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// TestShortReason: the no-GPU notice keeps one short line, the head of the
// loader's error.
func TestShortReason(t *testing.T) {
	for in, want := range map[string]string{
		"cuda: no CUDA driver library: none of libcuda.so.1, libcuda.so found on the loader's path": "no CUDA driver library",
		"cuda: cuda: libcuda.so.1 not found":                   "libcuda.so.1 not found",
		"cuda: no GPU is visible (check CUDA_VISIBLE_DEVICES)": "no GPU is visible (check CUDA_VISIBLE_DEVICES)",
	} {
		if got := shortReason(errors.New(in)); got != want {
			t.Errorf("%q -> %q, want %q", in, got, want)
		}
	}
}

// wantGPU skips a test without a GPU, unless MSTREAM_DEVICE=gpu asks for
// one (then its absence fails).
func wantGPU(t *testing.T) {
	t.Helper()
	if _, err := cuda.Load(); err != nil {
		if errors.Is(err, cuda.ErrNoCUDA) && os.Getenv("MSTREAM_DEVICE") != "gpu" {
			t.Skipf("no GPU: %v", err)
		}
		t.Fatal(err)
	}
}

// closeTensors compares a GPU result with the CPU's: GEMMs use TF32 on the
// GPU (as TF allows by default), so floats agree to about 1e-3 of the
// output's scale; other dtypes exactly.
func closeTensors(got, want []*tensor.Tensor) error {
	if len(got) != len(want) {
		return fmt.Errorf("%d outputs, want %d", len(got), len(want))
	}
	for i := range got {
		g, w := got[i], want[i]
		if g.DType != w.DType || !g.Shape.Equal(w.Shape) {
			return fmt.Errorf("output %d is %v%v, want %v%v", i, g.DType, g.Shape, w.DType, w.Shape)
		}
		if w.DType != tensor.Float {
			if string(g.Buf) != string(w.Buf) {
				return fmt.Errorf("output %d differs", i)
			}
			continue
		}
		gv, wv := g.F32(), w.F32()
		scale := 1e-6
		for _, x := range wv {
			scale = math.Max(scale, math.Abs(float64(x)))
		}
		for j := range wv {
			if d := math.Abs(float64(gv[j]) - float64(wv[j])); !(d <= 5e-3*scale) {
				return fmt.Errorf("output %d element %d: %v, want %v (scale %v)", i, j, gv[j], wv[j], scale)
			}
		}
	}
	return nil
}

// gpuCases are the knobs every GPU multi-stream test runs with.
func gpuCases() []map[string]string {
	return []map[string]string{
		{"TF_GPU_STREAM_GROUP_COUNT": "1"},
		{"TF_GPU_STREAM_GROUP_COUNT": "4"},
		{"TF_GPU_STREAM_GROUP_COUNT": "4", "TF_GPU_STREAM_MERGE": "true"},
		{"TF_GPU_STREAM_GROUP_COUNT": "3", "TF_GPU_STREAM_AWARE_BFC": "true"},
		{"TF_GPU_STREAM_GROUP_COUNT": "3", "TF_GPU_STREAM_GROUP_SHARE_MEM_POOL": "true", "TF_BFC_EXTEND_LIMIT_MB": "1"},
		{"TF_GPU_STREAM_GROUP_COUNT": "2", "TF_PER_STREAM_HOST_ALLOCATOR": "true", "TF_SEGMENT_OWN_CONST": "true"},
		{"TF_GPU_STREAM_GROUP_COUNT": "4", "TF_GPU_THREAD_MODE": "gpu_private", "TF_GPU_THREAD_COUNT": "1"},
		{"TF_GPU_STREAM_GROUP_COUNT": "2", "TF_GPU_THREAD_MODE": "gpu_shared", "TF_GPU_THREAD_COUNT": "3", "TF_REDUCE_STREAM_WAIT": "false"},
		// Contexts last: the process keeps the contexts its sessions asked for.
		{"TF_GPU_STREAM_GROUP_COUNT": "4", "TF_GPU_CONTEXT_COUNT": "2"},
		{"TF_GPU_STREAM_GROUP_COUNT": "4", "TF_GPU_CONTEXT_COUNT": "2", "TF_GPU_STREAM_AWARE_BFC": "true", "TF_SEGMENT_OWN_CONST": "false"},
		// Constants held once per device, read by groups of two contexts
		// (unified addressing; device/cuda's cross-context probe).
		{"TF_GPU_STREAM_GROUP_COUNT": "4", "TF_GPU_CONTEXT_COUNT": "2", "TF_SEGMENT_OWN_CONST": "true"},
	}
}

// TestGPUModel runs the bundled model on the GPU under every knob, from
// several goroutines at once, and compares each output with the CPU run
// of the same feeds; then checks that the runs were served by GPU groups
// and that every buffer came back.
func TestGPUModel(t *testing.T) {
	wantGPU(t)
	m := loadModel(t)
	ref := cpuReference(t, m.g)
	const workers, runs = 4, 6
	r := rand.New(rand.NewSource(7))
	jobs := makeJobs(t, ref, m.outputs, workers*runs, func() []Feed { return m.feeds(r, 1+r.Intn(64)) })
	for _, env := range gpuCases() {
		env["MSTREAM_DEVICE"] = "gpu"
		t.Run(fmt.Sprint(env), func(t *testing.T) {
			s := openSession(t, m.g, env)
			devs := s.Devices()
			if len(devs) < 2 || devs[1].Name != "/job:localhost/replica:0/task:0/device:GPU:0" || devs[1].Type != "GPU" || devs[1].MemoryBytes <= 0 {
				t.Fatalf("devices %+v: want the CPU and GPU:0 with its memory", devs)
			}
			runJobs(t, s, m.outputs, jobs, workers, closeTensors)
			var served int64
			for _, g := range s.Stats().Groups {
				if g.Device == devs[1].Name {
					served += g.RunsCompleted
				} else if g.RunsCompleted != 0 {
					t.Errorf("group %d on %s served %d runs; the GPU should serve all", g.ID, g.Device, g.RunsCompleted)
				}
			}
			if served != workers*runs {
				t.Errorf("GPU groups served %d runs, want %d", served, workers*runs)
			}
			checkQuiescent(t, s)
		})
	}
}

// TestGPUHostEdges runs a chain with a node pinned to the CPU in the middle
// and a fetch of a host value, so values cross GPU->host->GPU, and an
// unknown-kernel fallback: outputs must equal the CPU's.
func TestGPUHostEdges(t *testing.T) {
	wantGPU(t)
	b := newGB(t)
	x := b.placeholder("x", tensor.Unknown)
	r := rand.New(rand.NewSource(3))
	wv := make([]float32, 64*32)
	for i := range wv {
		wv[i] = r.Float32() - 0.5
	}
	w := b.constant("w", tensor.FromF32(tensor.Shape{64, 32}, wv))
	mm := b.matmul("mm", x, w)
	nb := b.g.NewBuilder("Relu", "cpu_relu")
	nb.AddInput(mm)
	nb.SetDevice("/device:CPU:0")
	n, err := nb.Finish()
	if err != nil {
		t.Fatal(err)
	}
	relu := n.Output(0)
	y := b.op("Sigmoid", "sig", nil, relu)
	sum := b.add("sum", y, relu)
	fetches := []graph.Output{sum, relu, mm}
	ref := cpuReference(t, b.g)
	for _, env := range []map[string]string{{"TF_GPU_STREAM_GROUP_COUNT": "2"}, {"TF_GPU_STREAM_MERGE": "true"}} {
		env["MSTREAM_DEVICE"] = "gpu"
		s := openSession(t, b.g, env)
		for _, batch := range []int{1, 7, 300} {
			xv := make([]float32, batch*64)
			for i := range xv {
				xv[i] = r.Float32()*2 - 1
			}
			feeds := []Feed{{x, tensor.FromF32(tensor.Shape{int64(batch), 64}, xv)}}
			want, _, err := ref.Run(nil, feeds, fetches, nil)
			if err != nil {
				t.Fatal(err)
			}
			got, _, err := s.Run(nil, feeds, fetches, nil)
			if err != nil {
				t.Fatalf("%v batch %d: %v", env, batch, err)
			}
			if err := closeTensors(got, want); err != nil {
				t.Errorf("%v batch %d: %v", env, batch, err)
			}
		}
		checkQuiescent(t, s)
	}
}

// TestGPUOutOfMemory: a feed larger than the GPU limit is RESOURCE_EXHAUSTED
// naming the feed, the size and the allocator, and the session still runs
// the next request.
func TestGPUOutOfMemory(t *testing.T) {
	wantGPU(t)
	b := newGB(t)
	x := b.placeholder("x", tensor.Unknown)
	y := b.relu("y", x)
	cfg := &tfpb.ConfigProto{GpuOptions: &tfpb.GPUOptions{Experimental: &tfpb.GPUOptions_Experimental{
		VirtualDevices: []*tfpb.GPUOptions_Experimental_VirtualDevices{{MemoryLimitMb: []float32{4}}}}}}
	s, err := New(b.g, &Options{Config: cfg, Env: map[string]string{"MSTREAM_DEVICE": "gpu"}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	big := tensor.New(tensor.Float, tensor.Shape{2 << 20})
	_, _, err = s.Run(nil, []Feed{{x, big}}, []graph.Output{y}, nil)
	if status.CodeOf(err) != status.ResourceExhausted || !strings.Contains(err.Error(), "feed 'x'") ||
		!strings.Contains(err.Error(), "8388608") || !strings.Contains(err.Error(), "GPU_0_group0_bfc") {
		t.Fatalf("oversized feed: %v; want RESOURCE_EXHAUSTED naming the feed, the size and the allocator", err)
	}
	small := tensor.FromF32(tensor.Shape{3}, []float32{-1, 0.5, 2})
	got, _, err := s.Run(nil, []Feed{{x, small}}, []graph.Output{y}, nil)
	if err != nil {
		t.Fatalf("the run after the OOM: %v", err)
	}
	if v := got[0].F32(); v[0] != 0 || v[1] != 0.5 || v[2] != 2 {
		t.Fatalf("relu after OOM: %v", v)
	}
	checkQuiescent(t, s)
}

// TestGPULaunchCost reports (it asserts no time) the host time the runtime
// spends per launched GPU node and per step, on a 5-layer MLP at batch 1
// from one thread, next to the driver's own launch in the same process
// (bareLaunch: cuLaunchKernel of an empty kernel in a C loop, batches
// interleaved with the Runs so drift in the machine's speed affects both
// alike) and the end-to-end time per Run. Per node: the step's launch
// window over its GPU nodes (the measure, feeds and fetches
// spread over the nodes) and the node launches alone, each less the
// driver's launch; per step: the launch window, its part outside node
// launches (the feeds' and fetches' copies and the step's events), and
// what a Run costs outside the window (the session, the final wait).
// MSTREAM_LAUNCH_COST_RUNS sets the number of Runs (default 2000), e.g.
// for a profile.
func TestGPULaunchCost(t *testing.T) {
	wantGPU(t)
	b := newGB(t)
	x := b.placeholder("x", tensor.Unknown)
	r := rand.New(rand.NewSource(5))
	h := x
	dims := []int64{512, 1024, 1024, 512, 256, 1}
	for i := 0; i+1 < len(dims); i++ {
		wv := make([]float32, dims[i]*dims[i+1])
		for j := range wv {
			wv[j] = (r.Float32() - 0.5) / 16
		}
		w := b.constant(fmt.Sprintf("w%d", i), tensor.FromF32(tensor.Shape{dims[i], dims[i+1]}, wv))
		bias := b.constant(fmt.Sprintf("b%d", i), tensor.FromF32(tensor.Shape{dims[i+1]}, make([]float32, dims[i+1])))
		h = b.op("BiasAdd", fmt.Sprintf("ba%d", i), nil, b.matmul(fmt.Sprintf("mm%d", i), h, w), bias)
		if i+2 < len(dims) {
			h = b.relu(fmt.Sprintf("relu%d", i), h)
		}
	}
	y := b.op("Sigmoid", "y", nil, h)
	// Node by node: the replayed graph's cost is TestGPUGraphLaunchCost's.
	s := openSession(t, b.g, map[string]string{"MSTREAM_DEVICE": "gpu", "MSTREAM_CUDA_GRAPH": "0"})
	feeds := []Feed{{x, tensor.FromF32(tensor.Shape{1, 512}, make([]float32, 512))}}
	for i := 0; i < 200; i++ { // warm up: modules, plans, constants
		if _, _, err := s.Run(nil, feeds, []graph.Output{y}, nil); err != nil {
			t.Fatal(err)
		}
	}
	bare := newBareLaunch(t, s)
	runs := 2000
	if v, err := strconv.Atoi(os.Getenv("MSTREAM_LAUNCH_COST_RUNS")); err == nil && v > 0 {
		runs = v
	}
	const chunks = 10
	runs = (runs + chunks - 1) / chunks * chunks
	before := launchStats(s)
	var wall time.Duration
	var driver []float64
	for c := 0; c < chunks; c++ {
		start := time.Now()
		for i := 0; i < runs/chunks; i++ {
			if _, _, err := s.Run(nil, feeds, []graph.Output{y}, nil); err != nil {
				t.Fatal(err)
			}
		}
		wall += time.Since(start)
		driver = append(driver, bare.perLaunch(t))
	}
	d := launchStats(s).minus(before)
	if d.steps != int64(runs) || d.nodes == 0 {
		t.Fatalf("%d GPU steps launching %d GPU nodes, want %d steps", d.steps, d.nodes, runs)
	}
	sort.Float64s(driver)
	drv := int64(driver[len(driver)/2])
	perNode, nodeOnly := d.ns/d.nodes, d.nodeNs/d.nodes
	perStep, e2e := d.ns/int64(runs), wall.Nanoseconds()/int64(runs)
	line := fmt.Sprintf("GPU launch cost (MLP 512-1024-1024-512-256-1, batch 1, one thread, %d Runs, %d GPU nodes a step): "+
		"driver's bare launch %d ns; per GPU node %d ns in the launch window (+%d on top of the driver's), "+
		"%d ns in node launches alone (+%d); per step: launch window %d ns, of which %d outside node launches "+
		"(feeds, fetches, events); Run end to end %d ns, %d outside the launch window (session, final wait)",
		runs, d.nodes/int64(runs), drv, perNode, perNode-drv, nodeOnly, nodeOnly-drv,
		perStep, (d.ns-d.nodeNs)/int64(runs), e2e, e2e-perStep)
	t.Log(line)
	benchOut(line)
}

// TestGPUFetchCost reports (it asserts no time) what a Run's fetches cost
// the host: 16 small GPU nodes (x + c_i) run every step, of which 1, 4
// or 16 are fetched (the rest are targets, so the launches stay the
// same), each of 16 floats (64 bytes) or 4096 (16 KiB: 16 of them are
// more than the 64 KiB copied on the compute stream, so they go out on
// the D2H stream); per configuration the Run's end-to-end time and its
// launch window per step, and per extra fetch the difference to one
// fetch over the extra fetches. The configurations alternate in rounds,
// so drift affects them alike. The fetched values are checked.
func TestGPUFetchCost(t *testing.T) {
	wantGPU(t)
	const nodes = 16
	for _, elems := range []int64{16, 4096} {
		b := newGB(t)
		x := b.placeholder("x", tensor.Unknown)
		var ys []graph.Output
		for i := 0; i < nodes; i++ {
			c := b.constant(fmt.Sprintf("c%d", i), tensor.FromF32(tensor.Shape{}, []float32{float32(i + 1)}))
			ys = append(ys, b.add(fmt.Sprintf("y%d", i), x, c))
		}
		s := openSession(t, b.g, map[string]string{"MSTREAM_DEVICE": "gpu", "MSTREAM_CUDA_GRAPH": "0"})
		xv := make([]float32, elems)
		for i := range xv {
			xv[i] = float32(i % 7)
		}
		feeds := []Feed{{x, tensor.FromF32(tensor.Shape{1, elems}, xv)}}
		counts := []int{1, 4, 16}
		run := func(k int) {
			var targets []*graph.Node
			for _, y := range ys[k:] {
				targets = append(targets, y.Node)
			}
			got, _, err := s.Run(nil, feeds, ys[:k], targets)
			if err != nil {
				t.Fatal(err)
			}
			for i, g := range got {
				if v := g.F32(); len(v) != int(elems) || v[len(v)-1] != xv[len(v)-1]+float32(i+1) {
					t.Fatalf("%d fetches of %d floats: fetch %d is wrong", k, elems, i)
				}
			}
		}
		for _, k := range counts { // warm up: plans, modules, constants
			for i := 0; i < 100; i++ {
				run(k)
			}
		}
		const rounds, runs = 4, 500
		wall := map[int]time.Duration{}
		window := map[int]int64{}
		for r := 0; r < rounds; r++ {
			for _, k := range counts {
				before := launchStats(s)
				start := time.Now()
				for i := 0; i < runs; i++ {
					run(k)
				}
				wall[k] += time.Since(start)
				window[k] += launchStats(s).minus(before).ns
			}
		}
		n := int64(rounds * runs)
		line := fmt.Sprintf("fetch cost (%d GPU nodes a step, fetches of %d bytes, %d Runs each):", nodes, elems*4, n)
		for _, k := range counts {
			e2e, win := wall[k].Nanoseconds()/n, window[k]/n
			line += fmt.Sprintf(" %d fetches: Run %d ns, launch window %d ns", k, e2e, win)
			if k > 1 {
				line += fmt.Sprintf(" (+%d / +%d ns per extra fetch)", (e2e-wall[1].Nanoseconds()/n)/int64(k-1), (win-window[1]/n)/int64(k-1))
			}
			line += ";"
		}
		t.Log(line)
		benchOut(line)
	}
}

// launchCounts are the groups' launch statistics summed (groups.Stats).
type launchCounts struct{ ns, nodeNs, nodes, steps int64 }

func launchStats(s *Session) (c launchCounts) {
	for _, g := range s.impl.set.Stats() {
		c.ns += g.LaunchNs
		c.nodeNs += g.LaunchNodeNs
		c.nodes += g.LaunchedNodes
		c.steps += g.LaunchSteps
	}
	return c
}

func (c launchCounts) minus(o launchCounts) launchCounts {
	return launchCounts{c.ns - o.ns, c.nodeNs - o.nodeNs, c.nodes - o.nodes, c.steps - o.steps}
}

// bareLaunch times the driver's own launch on the session's GPU: an
// empty kernel launched from a C loop (cuda.Stream.RawLaunchLoop) on a
// stream of its own in the context of the session's first GPU group.
type bareLaunch struct {
	st *cuda.Stream
	f  *cuda.Function
}

func newBareLaunch(t *testing.T, s *Session) *bareLaunch {
	var cs *cuda.Stream
	for _, g := range s.impl.set.Groups() { // the host's group comes first
		if c, ok := g.Compute.(*cuda.Stream); ok {
			cs = c
			break
		}
	}
	if cs == nil {
		t.Fatal("no group of the session has a CUDA stream")
	}
	st, err := cs.Context().NewStream()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	m, err := cs.Context().Module(&cuda.Program{Name: "bare_launch.cu", Source: `extern "C" __global__ void ms_bare() {}`})
	if err != nil {
		t.Fatal(err)
	}
	f, err := m.Function("ms_bare")
	if err != nil {
		t.Fatal(err)
	}
	return &bareLaunch{st, f}
}

// perLaunch is the driver's time per launch over a batch of 256 (well
// inside the driver's queue, so no launch blocks).
func (b *bareLaunch) perLaunch(t *testing.T) float64 {
	const batch = 256
	if err := b.st.Sync(); err != nil {
		t.Fatal(err)
	}
	d, err := b.st.RawLaunchLoop(b.f, batch)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.st.Sync(); err != nil {
		t.Fatal(err)
	}
	return float64(d.Nanoseconds()) / batch
}

// benchOut appends line to MSTREAM_BENCH_OUT when it is set (bench/gpu's
// results).
func benchOut(line string) {
	if out := os.Getenv("MSTREAM_BENCH_OUT"); out != "" {
		if f, err := os.OpenFile(out, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644); err == nil {
			fmt.Fprintln(f, line)
			f.Close()
		}
	}
}

// TestGPUIdentityN: IdentityN forwards device values on the GPU (its GPU
// kernel is the host's forwarding kernel, for type lists the GPU holds):
// its outputs feed GPU nodes and fetches, against the CPU.
func TestGPUIdentityN(t *testing.T) {
	wantGPU(t)
	b := newGB(t)
	x := b.placeholder("x", tensor.Unknown)
	relu := b.relu("relu", x)
	nb := b.g.NewBuilder("IdentityN", "idn")
	nb.AddInputList([]graph.Output{relu, x})
	n, err := nb.Finish()
	if err != nil {
		t.Fatal(err)
	}
	fetches := []graph.Output{b.add("sum", n.Output(0), n.Output(1)), n.Output(0), n.Output(1)}
	g := b.g
	ref := cpuReference(t, g)
	s := openSession(t, g, map[string]string{"MSTREAM_DEVICE": "gpu", "TF_GPU_STREAM_GROUP_COUNT": "2"})
	r := rand.New(rand.NewSource(41))
	batch := 0
	jobs := makeJobs(t, ref, fetches, 4, func() []Feed {
		batch++
		return []Feed{{x, randF32(r, tensor.Shape{int64(batch), 5}, 1)}}
	})
	runJobs(t, s, fetches, jobs, 1, sameTensors)
	checkQuiescent(t, s)
}
