package session

import (
	"fmt"
	"math/rand"
	"os"
	osexec "os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"mstream/device/cuda"
	"mstream/envcfg"
	"mstream/graph"
	"mstream/groups"
	"mstream/proto/tfpb"
	"mstream/status"
	"mstream/tensor"
	"mstream/trace"
)

// want2GPUs skips a test that needs two GPUs on a machine with fewer.
func want2GPUs(t *testing.T) []*cuda.Device {
	t.Helper()
	wantGPU(t)
	lib, err := cuda.Load()
	if err != nil {
		t.Fatal(err)
	}
	devs, err := lib.Devices()
	if err != nil {
		t.Fatal(err)
	}
	if len(devs) < 2 {
		t.Skipf("needs 2 GPUs, %d visible: run it on a machine with two (CUDA_VISIBLE_DEVICES unset)", len(devs))
	}
	return devs
}

// opOn adds a node pinned to device dev.
func (b *gb) opOn(op, name, dev string, ins ...graph.Output) graph.Output {
	b.t.Helper()
	nb := b.g.NewBuilder(op, name)
	for _, in := range ins {
		nb.AddInput(in)
	}
	nb.SetDevice(dev)
	n, err := nb.Finish()
	if err != nil {
		b.t.Fatalf("node %s: %v", name, err)
	}
	return n.Output(0)
}

func randF32(r *rand.Rand, shape tensor.Shape, scale float32) *tensor.Tensor {
	v := make([]float32, shape.NumElements())
	for i := range v {
		v[i] = (r.Float32()*2 - 1) * scale
	}
	return tensor.FromF32(shape, v)
}

// groupsByDevice maps each device name to its groups in the stats.
func groupsByDevice(st Stats) map[string][]groups.Stats {
	out := map[string][]groups.Stats{}
	for _, g := range st.Groups {
		out[g.Device] = append(out[g.Device], g)
	}
	return out
}

const gpu0, gpu1 = "/job:localhost/replica:0/task:0/device:GPU:0", "/job:localhost/replica:0/task:0/device:GPU:1"

// TestGPUMultiDevice: with two GPUs each gets its own stream groups (a
// comma list in TF_GPU_STREAM_GROUP_COUNT gives one count per GPU), its
// own memory limit (virtual_devices[1]) and its own constants; nodes
// annotated /device:GPU:1 run on GPU:1's groups, unannotated ones on
// GPU:0's; a step over both GPUs copies values between them, also from
// several goroutines under the knobs; node-level mode puts each node on
// the group the file names among its GPU's; every output equals the CPU's.
func TestGPUMultiDevice(t *testing.T) {
	want2GPUs(t)
	b := newGB(t)
	r := rand.New(rand.NewSource(11))
	x := b.placeholder("x", tensor.Unknown)
	w0 := b.constant("w0", randF32(r, tensor.Shape{64, 48}, 0.25))
	w1 := b.constant("w1", randF32(r, tensor.Shape{64, 40}, 0.25))
	a0 := b.opOn("MatMul", "a0", "/device:GPU:0", x, w0)
	a1 := b.opOn("Relu", "a1", "/device:GPU:0", a0)
	b0 := b.opOn("MatMul", "b0", "/job:localhost/replica:0/task:0/device:GPU:1", x, w1)
	b1 := b.opOn("Sigmoid", "b1", "/device:GPU:1", b0)
	u := b.op("Tanh", "u", nil, x)
	ref := cpuReference(t, b.g)
	feedsFor := func(batch int) []Feed {
		return []Feed{{x, randF32(r, tensor.Shape{int64(batch), 64}, 1)}}
	}
	check := func(s *Session, fetches []graph.Output, batch int) {
		t.Helper()
		f := feedsFor(batch)
		want, _, err := ref.Run(nil, f, fetches, nil)
		if err != nil {
			t.Fatal(err)
		}
		got, _, err := s.Run(nil, f, fetches, nil)
		if err != nil {
			t.Fatalf("fetches %v: %v", fetches, err)
		}
		if err := closeTensors(got, want); err != nil {
			t.Errorf("fetches %v batch %d: %v", fetches, batch, err)
		}
	}

	cfg := &tfpb.ConfigProto{GpuOptions: &tfpb.GPUOptions{Experimental: &tfpb.GPUOptions_Experimental{
		VirtualDevices: []*tfpb.GPUOptions_Experimental_VirtualDevices{{}, {MemoryLimitMb: []float32{256}}}}}}
	env := map[string]string{"MSTREAM_DEVICE": "gpu", "TF_GPU_STREAM_GROUP_COUNT": "3,2", "TF_SEGMENT_OWN_CONST": "true"}
	s, err := New(b.g, &Options{Config: cfg, Env: env})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	devs := s.Devices()
	if len(devs) < 3 || devs[1].Name != gpu0 || devs[2].Name != gpu1 {
		t.Fatalf("devices %+v: want the CPU, GPU:0, GPU:1", devs)
	}
	const runs = 6
	for i := 0; i < runs; i++ {
		check(s, []graph.Output{a1, a0}, 1+r.Intn(50))
		check(s, []graph.Output{b1}, 1+r.Intn(50))
		check(s, []graph.Output{u}, 1+r.Intn(50)) // unannotated: GPU:0
	}
	stats := s.Stats()
	by := groupsByDevice(stats)
	if n0, n1 := len(by[gpu0]), len(by[gpu1]); n0 != 3 || n1 != 2 {
		t.Fatalf("groups: %d on GPU:0, %d on GPU:1; want 3 and 2 (TF_GPU_STREAM_GROUP_COUNT=3,2)", n0, n1)
	}
	if dg := stats.DeviceGroups; dg[gpu0] != 3 || dg[gpu1] != 2 || dg[CPUDeviceName] != 1 {
		t.Errorf("stats device_groups %v: want GPU:0 3, GPU:1 2, the CPU 1", dg)
	}
	served := func(dev string) (sum int64) {
		for _, g := range by[dev] {
			sum += g.RunsCompleted
		}
		return sum
	}
	if a, b := served(gpu0), served(gpu1); a != 2*runs || b != runs {
		t.Errorf("runs served: GPU:0 %d, GPU:1 %d; want %d and %d", a, b, 2*runs, runs)
	}
	for _, g := range by[gpu1] {
		if g.RunsCompleted == 0 {
			t.Errorf("GPU:1 group %d served no run: sequential runs go round-robin over a GPU's groups", g.Index)
		}
		if !strings.HasPrefix(g.Allocator.Name, "GPU_1_") || g.Allocator.Limit != 128<<20 {
			t.Errorf("GPU:1 group %d allocator %s limit %d; want GPU_1_* with 128 MiB (virtual_devices[1] = 256 MiB over 2 groups)",
				g.Index, g.Allocator.Name, g.Allocator.Limit)
		}
		if g.Consts != "GPU_1_consts" || !g.ConstsShared || g.ConstBytes <= 0 {
			t.Errorf("GPU:1 group %d constants %q shared %v bytes %d; want GPU_1_consts, shared, holding w1",
				g.Index, g.Consts, g.ConstsShared, g.ConstBytes)
		}
	}
	for _, g := range by[gpu0] {
		if !strings.HasPrefix(g.Allocator.Name, "GPU_0_") || g.Consts != "GPU_0_consts" {
			t.Errorf("GPU:0 group %d: allocator %s, constants %s", g.Index, g.Allocator.Name, g.Consts)
		}
	}
	checkQuiescent(t, s)

	// One step over both GPUs: values cross them (GPU:1's b1 fetched
	// through GPU:0, the home GPU), one group of each serves the step.
	before0, before1 := served(gpu0), served(gpu1)
	for _, batch := range []int{1, 33, 257} {
		check(s, []graph.Output{a1, b1, a0}, batch)
	}
	by = groupsByDevice(s.Stats())
	if d0, d1 := served(gpu0)-before0, served(gpu1)-before1; d0 != 3 || d1 != 3 {
		t.Errorf("steps over both GPUs: GPU:0 groups took part in %d, GPU:1 groups in %d; want 3 each", d0, d1)
	}
	checkQuiescent(t, s)

	// A chain that goes GPU:0 -> GPU:1 -> host -> GPU:0 -> GPU:1, with a
	// fetch from each leg, under the knobs that change streams and memory.
	c0 := b.opOn("Tanh", "c0", "/device:GPU:0", a0)
	c1 := b.opOn("MatMul", "c1", "/device:GPU:1", c0, b.constant("wc", randF32(r, tensor.Shape{48, 48}, 0.2)))
	c2 := b.opOn("Sigmoid", "c2", "/device:CPU:0", c1)
	c3 := b.opOn("AddV2", "c3", "/device:GPU:0", c2, c0)
	c4 := b.opOn("Relu", "c4", "/device:GPU:1", c3)
	chain := []graph.Output{c4, c1, c3, c2}
	for _, env := range []map[string]string{
		{"TF_GPU_STREAM_GROUP_COUNT": "2,3"},
		{"TF_GPU_STREAM_GROUP_COUNT": "2", "TF_GPU_STREAM_MERGE": "true", "TF_REDUCE_STREAM_WAIT": "false"},
		{"TF_GPU_STREAM_GROUP_COUNT": "2", "TF_GPU_STREAM_AWARE_BFC": "true", "TF_PER_STREAM_HOST_ALLOCATOR": "true"},
		{"TF_GPU_STREAM_GROUP_COUNT": "3", "TF_GPU_STREAM_GROUP_SHARE_MEM_POOL": "true", "TF_SEGMENT_OWN_CONST": "true"},
	} {
		env["MSTREAM_DEVICE"] = "gpu"
		s := openSession(t, b.g, env)
		var wg sync.WaitGroup
		for w := 0; w < 3; w++ {
			wg.Add(1)
			go func(seed int64) {
				defer wg.Done()
				r := rand.New(rand.NewSource(seed))
				for k := 0; k < 4; k++ {
					f := []Feed{{x, randF32(r, tensor.Shape{int64(1 + r.Intn(80)), 64}, 1)}}
					want, _, err := ref.Run(nil, f, chain, nil)
					if err != nil {
						t.Error(err)
						return
					}
					got, _, err := s.Run(nil, f, chain, nil)
					if err != nil {
						t.Errorf("%v: %v", env, err)
						return
					}
					if err := closeTensors(got, want); err != nil {
						t.Errorf("%v: %v", env, err)
					}
				}
			}(int64(w))
		}
		wg.Wait()
		checkQuiescent(t, s)
	}

	// Node-level mode: each node on the group the file names among its
	// GPU's groups; a step over both GPUs copies between them too.
	rules := filepath.Join(t.TempDir(), "rules.txt")
	if err := os.WriteFile(rules, []byte("1:b.*,c[14]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	nl := openSession(t, b.g, map[string]string{"MSTREAM_DEVICE": "gpu", "TF_NODE_LEVEL_MULTISTREAM": "true",
		"TF_GPU_STREAM_GROUP_COUNT": "2", "TF_STREAM_FROM_FILE": rules})
	check(nl, []graph.Output{b1}, 5) // GPU:1's groups only
	by = groupsByDevice(nl.Stats())
	if served(gpu0) != 0 || by[gpu1][0].RunsCompleted != 1 || by[gpu1][1].RunsCompleted != 1 {
		t.Errorf("node-level run of GPU:1 nodes: GPU:0 groups %d runs, GPU:1 groups %+v", served(gpu0), by[gpu1])
	}
	for _, batch := range []int{2, 70} {
		check(nl, append([]graph.Output{a1, b1}, chain...), batch)
	}
	// a*, c0, c2, c3 and the constants are on GPU:0's group 0 (home),
	// b* and c1, c4 on GPU:1's group 1: with the first run, GPU:0 took
	// part in [2 0] steps per group and GPU:1 in [1 3].
	by = groupsByDevice(nl.Stats())
	want := map[string][]int64{gpu0: {2, 0}, gpu1: {1, 3}}
	for dev, w := range want {
		for _, g := range by[dev] {
			if g.RunsCompleted != w[g.Index] {
				t.Errorf("node-level over both GPUs: %s group %d took part in %d steps, want %d", dev, g.Index, g.RunsCompleted, w[g.Index])
			}
		}
	}
	checkQuiescent(t, nl)
}

// TestGPUVisibleDevices: with CUDA_VISIBLE_DEVICES naming its second GPU
// a process sees one GPU, named GPU:0, which is that GPU (same PCI bus
// id), and runs on it, also as a GPU pool of one (MSTREAM_GPU_POOL). The check runs in a child process, since the driver reads
// the variable once.
func TestGPUVisibleDevices(t *testing.T) {
	devs := want2GPUs(t)
	pci := pciBusID(devs[1].Desc())
	if pci == "" {
		t.Fatalf("no pci bus id in %q", devs[1].Desc())
	}
	// The child sees only this process's second GPU: "1", or the second
	// entry when this process has a list of its own.
	second := "1"
	if v := os.Getenv("CUDA_VISIBLE_DEVICES"); v != "" {
		second = strings.TrimSpace(strings.Split(v, ",")[1])
	}
	cmd := osexec.Command(os.Args[0], "-test.run=^TestGPUVisibleDevicesChild$", "-test.v")
	cmd.Env = append(os.Environ(), "CUDA_VISIBLE_DEVICES="+second, "MSTREAM_TEST_WANT_PCI="+pci)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: TestGPUVisibleDevicesChild") {
		t.Fatalf("child with CUDA_VISIBLE_DEVICES=1: %v\n%s", err, out)
	}
}

// TestGPUVisibleDevicesChild is TestGPUVisibleDevices' child process.
func TestGPUVisibleDevicesChild(t *testing.T) {
	want := os.Getenv("MSTREAM_TEST_WANT_PCI")
	if want == "" {
		t.Skip("runs as TestGPUVisibleDevices' child only")
	}
	wantGPU(t)
	lib, err := cuda.Load()
	if err != nil {
		t.Fatal(err)
	}
	devs, err := lib.Devices()
	if err != nil {
		t.Fatal(err)
	}
	if len(devs) != 1 {
		t.Fatalf("CUDA_VISIBLE_DEVICES=1: %d GPUs visible, want 1", len(devs))
	}
	if pciBusID(devs[0].Desc()) != want || devs[0].Name() != gpu0 {
		t.Fatalf("CUDA_VISIBLE_DEVICES=1: the GPU is %s (%s); want GPU:0 at pci %s", devs[0].Name(), devs[0].Desc(), want)
	}
	b := newGB(t)
	x := b.placeholder("x", tensor.Unknown)
	y := b.opOn("Relu", "y", "/device:GPU:0", x)
	s := openSession(t, b.g, map[string]string{"MSTREAM_DEVICE": "gpu", "TF_GPU_STREAM_GROUP_COUNT": "2"})
	got, _, err := s.Run(nil, []Feed{{x, tensor.FromF32(tensor.Shape{3}, []float32{-1, 0.5, 2})}}, []graph.Output{y}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if v := got[0].F32(); v[0] != 0 || v[1] != 0.5 || v[2] != 2 {
		t.Fatalf("relu: %v", v)
	}
	if d := s.Devices(); len(d) != 2 || d[1].Name != gpu0 {
		t.Fatalf("devices %+v: want the CPU and GPU:0", d)
	}
	// The GPU pool over the one visible GPU: a pool of one.
	z := b.relu("z", x)
	p := openSession(t, b.g, map[string]string{"MSTREAM_DEVICE": "gpu", "MSTREAM_GPU_POOL": "true", "TF_GPU_STREAM_GROUP_COUNT": "2"})
	for i := 0; i < 4; i++ {
		if _, _, err := p.Run(nil, []Feed{{x, tensor.FromF32(tensor.Shape{2}, []float32{-1, 3})}}, []graph.Output{z}, nil); err != nil {
			t.Fatal(err)
		}
	}
	if st := p.Stats(); st.Pool == nil || fmt.Sprint(st.Pool.Devices) != "["+gpu0+"]" || fmt.Sprint(st.Pool.Groups[gpu0]) != "[2 2]" {
		t.Fatalf("pool over CUDA_VISIBLE_DEVICES=1: %+v; want GPU:0 alone, its two groups 2 Runs each", st.Pool)
	}
}

func pciBusID(desc string) string {
	m := regexp.MustCompile(`pci bus id: ([^,]+)`).FindStringSubmatch(desc)
	if m == nil {
		return ""
	}
	return m[1]
}

// nodeLevelRules writes TF_STREAM_FROM_FILE files for the bundled model.
func nodeLevelRules(t *testing.T) (rules, fwd string) {
	dir := t.TempDir()
	rules = filepath.Join(dir, "streams.txt")
	if err := os.WriteFile(rules, []byte("1:embedding_[01]/.*,mlp/layer_1/.*\n2:embedding_[23]/.*,mlp/layer_2/.*\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	fwd = filepath.Join(dir, "fwd.txt")
	if err := os.WriteFile(fwd, []byte("1:embedding_0/lookup\n2:mlp/layer_0/matmul\n3:embedding_3/.*\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return rules, fwd
}

// gpuGroupIDs maps a GPU's group index to its session-wide ID.
func gpuGroupIDs(st Stats, dev string) map[int]int {
	out := map[int]int{}
	for _, g := range st.Groups {
		if g.Device == dev {
			out[g.Index] = int(g.ID)
		}
	}
	return out
}

// TestGPUNodeLevelModel runs the bundled model in node-level mode on the
// GPU, nodes assigned to 3 or 4 groups by a TF_STREAM_FROM_FILE file, from
// several goroutines, and compares every output with the CPU run. The
// stats show runs on several GPU groups and cross-group waits; a traced
// step shows each kernel on the group its rule names.
func TestGPUNodeLevelModel(t *testing.T) {
	wantGPU(t)
	m := loadModel(t)
	rules, fwd := nodeLevelRules(t)
	ref := cpuReference(t, m.g)
	const workers, runs = 3, 5
	r := rand.New(rand.NewSource(17))
	jobs := makeJobs(t, ref, m.outputs, workers*runs, func() []Feed { return m.feeds(r, 1+r.Intn(64)) })
	ruleRE := []*regexp.Regexp{
		regexp.MustCompile(`^(?:embedding_[01]/.*|mlp/layer_1/.*)$`),
		regexp.MustCompile(`^(?:embedding_[23]/.*|mlp/layer_2/.*)$`),
	}
	for _, c := range []struct {
		env   map[string]string
		exact bool // every kernel's group is the one its rule names
	}{
		{map[string]string{"TF_GPU_STREAM_GROUP_COUNT": "3", "TF_STREAM_FROM_FILE": rules}, true},
		{map[string]string{"TF_GPU_STREAM_GROUP_COUNT": "3", "TF_STREAM_FROM_FILE": rules, "TF_GPU_STREAM_MERGE": "true"}, true},
		{map[string]string{"TF_GPU_STREAM_GROUP_COUNT": "3", "TF_STREAM_FROM_FILE": rules, "TF_GPU_STREAM_AWARE_BFC": "true"}, true},
		{map[string]string{"TF_GPU_STREAM_GROUP_COUNT": "3", "TF_STREAM_FROM_FILE": rules, "TF_REDUCE_STREAM_WAIT": "false",
			"TF_PER_STREAM_HOST_ALLOCATOR": "true", "TF_SEGMENT_OWN_CONST": "true"}, true},
		{map[string]string{"TF_GPU_STREAM_GROUP_COUNT": "3", "TF_STREAM_FROM_FILE": rules, "TF_GPU_STREAM_GROUP_SHARE_MEM_POOL": "true",
			"TF_GPU_THREAD_MODE": "gpu_private", "TF_GPU_THREAD_COUNT": "1"}, true},
		{map[string]string{"TF_GPU_STREAM_GROUP_COUNT": "4", "TF_STREAM_FROM_FILE": fwd,
			"TF_MULTI_STREAM_ALLOW_FORWARD_PROPAGATION": "true"}, false},
		// Groups in two CUDA contexts: values, events and waits cross
		// contexts (last: the process keeps the contexts it made).
		{map[string]string{"TF_GPU_STREAM_GROUP_COUNT": "4", "TF_STREAM_FROM_FILE": rules, "TF_GPU_CONTEXT_COUNT": "2"}, true},
		{map[string]string{"TF_GPU_STREAM_GROUP_COUNT": "3", "TF_STREAM_FROM_FILE": rules, "TF_GPU_CONTEXT_COUNT": "2",
			"TF_GPU_STREAM_AWARE_BFC": "true"}, true},
	} {
		env := c.env
		env["MSTREAM_DEVICE"] = "gpu"
		env["TF_NODE_LEVEL_MULTISTREAM"] = "true"
		t.Run(fmt.Sprint(env), func(t *testing.T) {
			s := openSession(t, m.g, env)
			runJobs(t, s, m.outputs, jobs, workers, closeTensors)
			st := s.Stats()
			if !st.NodeLevel {
				t.Error("stats: node_level false")
			}
			busy, waits := 0, int64(0)
			for _, g := range groupsByDevice(st)[gpu0] {
				if g.RunsCompleted > 0 {
					busy++
				}
				waits += g.StreamWaits
			}
			if busy < 2 || waits == 0 {
				t.Errorf("GPU:0 groups running steps: %d, cross-group waits %d; want several groups and waits", busy, waits)
			}
			// One traced step: kernels on the groups the rules name.
			j := jobs[0]
			got, _, err := s.Run(&tfpb.RunOptions{TraceLevel: tfpb.RunOptions_FULL_TRACE}, j.feeds, m.outputs, nil)
			if err != nil {
				t.Fatal(err)
			}
			if err := closeTensors(got, j.want); err != nil {
				t.Errorf("traced run: %v", err)
			}
			steps, _ := s.impl.rec.Steps()
			if len(steps) == 0 {
				t.Fatal("no traced step")
			}
			ids := gpuGroupIDs(st, gpu0)
			seen := map[int]bool{}
			for _, sl := range steps[len(steps)-1].Slices {
				if sl.Kind != trace.Kernel || sl.Device != gpu0 {
					continue
				}
				seen[sl.Group] = true
				if !c.exact {
					continue
				}
				want := ids[0]
				for k, re := range ruleRE {
					if re.MatchString(sl.Name) {
						want = ids[k+1]
						break
					}
				}
				if sl.Group != want {
					t.Errorf("kernel %s ran on group %d, want %d", sl.Name, sl.Group, want)
				}
			}
			if len(seen) < 2 {
				t.Errorf("traced step: kernels on groups %v; want more than one", seen)
			}
			checkQuiescent(t, s)
		})
	}
}

// TestGPUNodeLevelChain: two branches of a forward chain on groups 1 and
// 2, a node pinned to the CPU on group 3 between them, joined on group 0,
// with intermediate fetches; outputs equal the CPU's in node-level mode on
// 4 GPU groups, and nodes ran on all four.
func TestGPUNodeLevelChain(t *testing.T) {
	wantGPU(t)
	b := newGB(t)
	r := rand.New(rand.NewSource(23))
	x := b.placeholder("x", tensor.Unknown)
	h1, h2 := x, x
	for i := 0; i < 3; i++ {
		w1 := b.constant(fmt.Sprintf("b1_w%d", i), randF32(r, tensor.Shape{32, 32}, 0.3))
		w2 := b.constant(fmt.Sprintf("b2_w%d", i), randF32(r, tensor.Shape{32, 32}, 0.3))
		h1 = b.relu(fmt.Sprintf("b1_relu%d", i), b.matmul(fmt.Sprintf("b1_mm%d", i), h1, w1))
		h2 = b.op("Tanh", fmt.Sprintf("b2_tanh%d", i), nil, b.matmul(fmt.Sprintf("b2_mm%d", i), h2, w2))
	}
	host := b.opOn("Sigmoid", "c3_host", "/device:CPU:0", h2)
	mix := b.add("c3_mix", host, h1)
	out := b.add("join", b.matmul("join_mm", mix, b.constant("join_w", randF32(r, tensor.Shape{32, 8}, 0.3))), b.constant("join_b", randF32(r, tensor.Shape{8}, 1)))
	fetches := []graph.Output{out, h1, host}
	rules := filepath.Join(t.TempDir(), "chain.txt")
	if err := os.WriteFile(rules, []byte("1:b1_.*\n2:b2_.*\n3:c3_.*\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ref := cpuReference(t, b.g)
	for _, extra := range []map[string]string{{}, {"TF_GPU_STREAM_MERGE": "true"}, {"TF_REDUCE_STREAM_WAIT": "false"}} {
		env := map[string]string{"MSTREAM_DEVICE": "gpu", "TF_NODE_LEVEL_MULTISTREAM": "true", "TF_GPU_STREAM_GROUP_COUNT": "4",
			"TF_STREAM_FROM_FILE": rules}
		for k, v := range extra {
			env[k] = v
		}
		s := openSession(t, b.g, env)
		for _, batch := range []int{1, 5, 200} {
			feeds := []Feed{{x, randF32(r, tensor.Shape{int64(batch), 32}, 1)}}
			want, _, err := ref.Run(nil, feeds, fetches, nil)
			if err != nil {
				t.Fatal(err)
			}
			got, _, err := s.Run(nil, feeds, fetches, nil)
			if err != nil {
				t.Fatalf("%v batch %d: %v", extra, batch, err)
			}
			if err := closeTensors(got, want); err != nil {
				t.Errorf("%v batch %d: %v", extra, batch, err)
			}
		}
		for _, g := range groupsByDevice(s.Stats())[gpu0] {
			if g.RunsCompleted != 3 {
				t.Errorf("%v: GPU:0 group %d took part in %d steps, want 3", extra, g.Index, g.RunsCompleted)
			}
		}
		checkQuiescent(t, s)
	}
}

// TestNodeLevelContextsNoGPU: node-level mode with groups in several CUDA
// contexts is accepted; without a GPU (auto) it runs on the CPU, with one
// on the GPU (TestGPUNodeLevelModel checks its values there).
func TestNodeLevelContextsNoGPU(t *testing.T) {
	b := newGB(t)
	x := b.placeholder("x", tensor.Unknown)
	y := b.relu("y", x)
	env := map[string]string{"TF_NODE_LEVEL_MULTISTREAM": "true", "TF_GPU_CONTEXT_COUNT": "2", "TF_GPU_STREAM_GROUP_COUNT": "2"}
	s, err := New(b.g, &Options{Env: env})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	_, cerr := cuda.Load()
	if d := s.Devices(); (cerr != nil) != (len(d) == 1 && d[0].Type == "CPU") {
		t.Fatalf("auto, node level, 2 contexts: devices %+v (CUDA: %v)", d, cerr)
	}
	got, _, err := s.Run(nil, []Feed{{x, tensor.FromF32(tensor.Shape{2}, []float32{-3, 4})}}, []graph.Output{y}, nil)
	if err != nil || got[0].F32()[0] != 0 || got[0].F32()[1] != 4 {
		t.Fatalf("relu: %v, %v", got, err)
	}
}

// TestDeviceCountsAndLimits: with n GPUs, GPU i gets the i-th count of
// TF_GPU_STREAM_GROUP_COUNT (the last past the list's end; MS_SessionStats'
// device_groups says so) and
// virtual_devices[i]'s limit (else its free memory, unless a memory
// fraction is set); the host gets one group, or the first count in
// node-level mode.
func TestDeviceCountsAndLimits(t *testing.T) {
	for _, c := range []struct {
		env  map[string]string
		n    int
		want []int
	}{
		{map[string]string{}, 2, []int{1, 1, 1}},
		{map[string]string{"TF_GPU_STREAM_GROUP_COUNT": "4"}, 3, []int{1, 4, 4, 4}},
		{map[string]string{"TF_GPU_STREAM_GROUP_COUNT": "3,2"}, 2, []int{1, 3, 2}},
		{map[string]string{"TF_GPU_STREAM_GROUP_COUNT": "3,2"}, 4, []int{1, 3, 2, 2, 2}},
		{map[string]string{"TF_GPU_STREAM_GROUP_COUNT": "2,5,7"}, 1, []int{1, 2}},
		{map[string]string{"TF_GPU_STREAM_GROUP_COUNT": "3,2", "TF_NODE_LEVEL_MULTISTREAM": "true"}, 2, []int{3, 3, 2}},
	} {
		env, err := envcfg.Load(envcfg.LookupMap(c.env))
		if err != nil {
			t.Fatal(err)
		}
		if got := deviceCounts(env, c.n); fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("%v with %d GPUs: counts %v, want %v", c.env, c.n, got, c.want)
		}
	}
	// On the CPU the host device has the first count, in the stats too.
	s := openSession(t, newGB(t).g, map[string]string{"TF_GPU_STREAM_GROUP_COUNT": "3,2"})
	if dg := s.Stats().DeviceGroups; len(dg) != 1 || dg[CPUDeviceName] != 3 {
		t.Errorf("CPU session device_groups %v, want the CPU with 3", dg)
	}
	free := func(i int) float64 { return float64(1000 * (i + 1)) }
	for _, c := range []struct {
		virtual  []float64
		fraction float64
		n        int
		want     []float64
	}{
		{nil, 0, 2, []float64{0, 1000, 2000}},
		{[]float64{0, 256}, 0, 3, []float64{0, 1000, 256, 3000}},
		{[]float64{512}, 0.5, 2, []float64{0, 512, 0}},
		{nil, 0.25, 1, []float64{0, 0}},
	} {
		if got := deviceLimitsMB(c.virtual, c.fraction, c.n, free); fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("virtual %v fraction %v, %d GPUs: limits %v, want %v", c.virtual, c.fraction, c.n, got, c.want)
		}
	}
}

// TestCPUReferencePinned runs without a GPU: the reference session of the
// multi-GPU tests must run a graph pinned to two GPUs on the host (soft
// placement), and the same graph must still be refused by a strict one,
// as TF refuses it.
func TestCPUReferencePinned(t *testing.T) {
	b := newGB(t)
	r := rand.New(rand.NewSource(3))
	x := b.placeholder("x", tensor.Unknown)
	w := b.constant("w", randF32(r, tensor.Shape{8, 4}, 0.5))
	a := b.opOn("MatMul", "a", "/device:GPU:0", x, w)
	y := b.opOn("Relu", "y", "/device:GPU:1", a)
	ref := cpuReference(t, b.g)
	xv := randF32(r, tensor.Shape{3, 8}, 1)
	got, _, err := ref.Run(nil, []Feed{{x, xv}}, []graph.Output{y}, nil)
	if err != nil {
		t.Fatalf("soft placement on the host: %v", err)
	}
	if !got[0].Shape.Equal(tensor.Shape{3, 4}) {
		t.Fatalf("shape %v, want [3 4]", got[0].Shape)
	}
	strict, err := New(b.g, &Options{Env: hostEnv(map[string]string{"MSTREAM_DEVICE": "cpu"})})
	if err == nil {
		defer strict.Close()
		_, _, err = strict.Run(nil, []Feed{{x, xv}}, []graph.Output{y}, nil)
	}
	if status.CodeOf(err) != status.InvalidArgument {
		t.Fatalf("strict placement of a GPU-pinned graph on the host: %v, want INVALID_ARGUMENT", err)
	}
}
