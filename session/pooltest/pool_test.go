// Package pooltest checks the session's GPU pool (MSTREAM_GPU_POOL) on the
// CPU: host devices stand in for GPUs, seen as asynchronous devices (their
// streams have an event pool, so steps take the device launcher, as on a
// GPU), and a few ops get "GPU" kernels that are their CPU kernels run in
// stream order. It is a package of its own because the session's tests
// link the CUDA kernels, which these fake GPUs cannot run. A fake kernel
// reads its inputs when its stream has reached its launch and writes its
// outputs in stream order, as a GPU kernel does, so a missing wait or an
// early reuse of a buffer gives a wrong value here too (exec's
// TestDeviceStepEmulated and its sanitizer tests hunt those on purpose).
package pooltest

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"mstream/device"
	"mstream/device/host"
	"mstream/graph"
	"mstream/hostmem"
	"mstream/kernels"
	_ "mstream/kernels/cpu"
	"mstream/proto/tfpb"
	"mstream/session"
	"mstream/status"
	"mstream/tensor"
)

// fakeGPU is a host device that calls itself GPU:ord.
type fakeGPU struct {
	*host.Device
	ord int
}

func (d *fakeGPU) Name() string {
	return fmt.Sprintf("/job:localhost/replica:0/task:0/device:GPU:%d", d.ord)
}
func (d *fakeGPU) Type() string { return "GPU" }
func (d *fakeGPU) Ordinal() int { return d.ord }
func (d *fakeGPU) Desc() string { return "fake GPU on host memory" }
func (d *fakeGPU) SetContexts(n int) error {
	d.NumContexts = n
	return nil
}
func (d *fakeGPU) MemInfo() (free, total int64, err error) { return d.MemBytes, d.MemBytes, nil }

func (d *fakeGPU) NewStream(ctx int) (device.Stream, error) {
	s, err := d.Device.NewStream(ctx)
	if err != nil {
		return nil, err
	}
	return fakeStream{s.(*host.Stream)}, nil
}

// fakeStream is a host stream with an event pool and peer copies (all
// memory is the host's).
type fakeStream struct{ *host.Stream }

type pooled struct{ *host.Event }

func (pooled) Release() {}

func (s fakeStream) PooledEvent() (device.PooledEvent, error) { return pooled{&host.Event{}}, nil }

func unwrap(e device.Event) device.Event {
	if p, ok := e.(pooled); ok {
		return p.Event
	}
	return e
}

func (s fakeStream) Record(e device.Event) error { return s.Stream.Record(unwrap(e)) }
func (s fakeStream) Wait(e device.Event) error   { return s.Stream.Wait(unwrap(e)) }
func (s fakeStream) CopyPeer(dst, src uint64, _ device.Stream, size uint64) error {
	return s.Enqueue(func() { copy(hostmem.DeviceBytes(dst, int(size)), hostmem.DeviceBytes(src, int(size))) })
}

// gpuOps get fake GPU kernels: at launch, once the stream has reached it
// (so its inputs, copied or computed in stream order, are there), the CPU
// kernel computes into host tensors of its own; the outputs the executor
// sees are allocated on the device at launch, as a GPU kernel's are, and
// filled by a copy in stream order, so an output buffer whose previous
// user has work still queued (a fetch's copy-out) is written only after it.
var gpuOps = []string{"MatMul", "_FusedMatMul", "BiasAdd", "Relu", "Tanh", "Sigmoid", "AddV2", "Mul"}

func init() {
	for _, op := range gpuOps {
		kernels.Register(kernels.Def{Op: op, Device: kernels.GPU, Factory: func(n *graph.Node) (kernels.Kernel, error) {
			k, err := kernels.Make(n, kernels.CPU)
			if err != nil {
				return nil, err
			}
			return kernels.KernelFunc(func(ctx *kernels.Context) error {
				if _, ok := ctx.Stream.(fakeStream); !ok {
					return status.Errorf(status.Internal, "node '%s': fake GPU kernel on %T", n.Name, ctx.Stream)
				}
				if err := ctx.Stream.Synchronize(); err != nil {
					return err
				}
				host := *ctx
				host.Alloc, host.Stream = nil, nil
				host.Outputs = make([]*tensor.Tensor, len(ctx.Outputs))
				if err := k.Compute(&host); err != nil {
					return err
				}
				for i, o := range host.Outputs {
					dev, err := ctx.Allocate(i, o.Shape)
					if err != nil {
						return err
					}
					if err := device.Enqueue(ctx.Stream, func() { copy(dev.Buf, o.Buf) }); err != nil {
						return err
					}
				}
				return nil
			}), nil
		}})
	}
}

// fakeGPUs makes the sessions opened after it see n fake GPUs.
func fakeGPUs(t *testing.T, n int) {
	device.RegisterGPUs(func() ([]device.GPU, error) {
		var out []device.GPU
		for i := 0; i < n; i++ {
			d := host.New()
			d.MemBytes = 256 << 20
			out = append(out, &fakeGPU{Device: d, ord: i})
		}
		return out, nil
	})
	t.Cleanup(func() { device.RegisterGPUs(nil) })
}

// open opens a session with the knobs env; the plain CPU session a test
// compares with allows soft placement, as a TF user's must for a graph
// with nodes pinned to GPUs.
func open(t *testing.T, g *graph.Graph, env map[string]string) *session.Session {
	t.Helper()
	env["TF_CPP_MIN_LOG_LEVEL"] = "1"
	cfg := &tfpb.ConfigProto{AllowSoftPlacement: env["MSTREAM_DEVICE"] == "cpu"}
	s, err := session.New(g, &session.Options{Env: env, Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// builder makes graph nodes; any error fails the test.
type builder struct {
	t *testing.T
	g *graph.Graph
}

func (b builder) op(op, name, dev string, attrs map[string]*tfpb.AttrValue, ins ...graph.Output) graph.Output {
	b.t.Helper()
	nb := b.g.NewBuilder(op, name)
	for _, in := range ins {
		nb.AddInput(in)
	}
	for k, v := range attrs {
		nb.SetAttr(k, v)
	}
	nb.SetDevice(dev)
	n, err := nb.Finish()
	if err != nil {
		b.t.Fatalf("node %s: %v", name, err)
	}
	return n.Output(0)
}

func (b builder) constant(name string, v *tensor.Tensor) graph.Output {
	return b.op("Const", name, "", map[string]*tfpb.AttrValue{"dtype": graph.AttrType(v.DType), "value": graph.AttrTensor(v)})
}

func randF32(r *rand.Rand, shape tensor.Shape) *tensor.Tensor {
	v := make([]float32, shape.NumElements())
	for i := range v {
		v[i] = r.Float32()*2 - 1
	}
	return tensor.FromF32(shape, v)
}

// same compares outputs with a plain session's: the fake GPU kernels are
// the CPU's, so only the threads' split of a sum may differ.
func same(got, want []*tensor.Tensor) error {
	if len(got) != len(want) {
		return fmt.Errorf("%d outputs, want %d", len(got), len(want))
	}
	for i := range got {
		g, w := got[i], want[i]
		if g.DType != w.DType || !g.Shape.Equal(w.Shape) {
			return fmt.Errorf("output %d is %v%v, want %v%v", i, g.DType, g.Shape, w.DType, w.Shape)
		}
		gv, wv := g.F32(), w.F32()
		for j := range wv {
			if d := math.Abs(float64(gv[j] - wv[j])); d > 1e-5*math.Max(1, math.Abs(float64(wv[j]))) {
				return fmt.Errorf("output %d element %d: %v, want %v", i, j, gv[j], wv[j])
			}
		}
	}
	return nil
}

const gpu0, gpu1 = "/job:localhost/replica:0/task:0/device:GPU:0", "/job:localhost/replica:0/task:0/device:GPU:1"

// runsBy sums, per device, the runs its groups completed, and lists them
// per group.
func runsBy(st session.Stats) (perDev map[string]int64, perGroup map[string][]int64) {
	perDev, perGroup = map[string]int64{}, map[string][]int64{}
	for _, g := range st.Groups {
		perDev[g.Device] += g.RunsCompleted
		perGroup[g.Device] = append(perGroup[g.Device], g.RunsCompleted)
	}
	return perDev, perGroup
}

// mlp is a small model with constants and one node pinned to GPU:1.
type mlp struct {
	g      *graph.Graph
	x      graph.Output
	y      graph.Output // unpinned
	pinned graph.Output // Sigmoid on GPU:1, reading the unpinned part
	consts int64        // bytes of constants the unpinned part reads
}

func newMLP(t *testing.T, r *rand.Rand) *mlp {
	b := builder{t, graph.New()}
	m := &mlp{g: b.g}
	m.x = b.op("Placeholder", "x", "", map[string]*tfpb.AttrValue{"dtype": graph.AttrType(tensor.Float)})
	w1, w2, bias := randF32(r, tensor.Shape{16, 32}), randF32(r, tensor.Shape{32, 8}), randF32(r, tensor.Shape{8})
	h := b.op("Relu", "h", "", nil, b.op("MatMul", "mm1", "", nil, m.x, b.constant("w1", w1)))
	m.y = b.op("Tanh", "y", "", nil, b.op("BiasAdd", "ba", "", nil, b.op("MatMul", "mm2", "", nil, h, b.constant("w2", w2)), b.constant("b", bias)))
	m.pinned = b.op("Sigmoid", "p", "/device:GPU:1", nil, h)
	m.consts = int64(len(w1.Buf) + len(w2.Buf) + len(bias.Buf))
	return m
}

// TestPoolSpreads: with MSTREAM_GPU_POOL on two fake GPUs of 4,4 and 3,2
// stream groups, sequential Runs take every group of both GPUs in turn,
// 8 goroutines' Runs spread over both GPUs, every output equals a plain
// CPU session's, each GPU holds the constants once (TF_SEGMENT_OWN_CONST),
// a node pinned to GPU:1 runs there whichever GPU the rest takes (the
// trace shows it), and MS_SessionStats and the trace show which GPU and
// group served each Run.
func TestPoolSpreads(t *testing.T) {
	fakeGPUs(t, 2)
	r := rand.New(rand.NewSource(5))
	m := newMLP(t, r)
	ref := open(t, m.g, map[string]string{"MSTREAM_DEVICE": "cpu"})
	feeds := func(r *rand.Rand) []session.Feed {
		return []session.Feed{{Output: m.x, Tensor: randF32(r, tensor.Shape{int64(1 + r.Intn(40)), 16})}}
	}
	check := func(s *session.Session, r *rand.Rand, opts *tfpb.RunOptions, fetches ...graph.Output) (*tfpb.RunMetadata, error) {
		f := feeds(r)
		want, _, err := ref.Run(nil, f, fetches, nil)
		if err != nil {
			return nil, err
		}
		got, md, err := s.Run(opts, f, fetches, nil)
		if err != nil {
			return nil, err
		}
		return md, same(got, want)
	}
	for _, c := range []struct {
		counts string
		n0, n1 int
	}{{"4,4", 4, 4}, {"3,2", 3, 2}} {
		t.Run(c.counts, func(t *testing.T) {
			s := open(t, m.g, map[string]string{"MSTREAM_DEVICE": "gpu", "MSTREAM_GPU_POOL": "true",
				"TF_GPU_STREAM_GROUP_COUNT": c.counts, "TF_SEGMENT_OWN_CONST": "true"})
			// Sequential Runs: group j of each GPU in turn, so one round
			// gives every group exactly one.
			for i := 0; i < c.n0+c.n1; i++ {
				if _, err := check(s, r, nil, m.y); err != nil {
					t.Fatalf("run %d: %v", i, err)
				}
			}
			_, per := runsBy(s.Stats())
			if got, want := fmt.Sprint(per[gpu0], per[gpu1]), fmt.Sprint(ones(c.n0), ones(c.n1)); got != want {
				t.Fatalf("sequential runs per group (GPU:0 GPU:1): %s, want %s", got, want)
			}

			// 8 goroutines.
			const workers, each = 8, 12
			var wg sync.WaitGroup
			errs := make(chan error, workers)
			for w := 0; w < workers; w++ {
				wg.Add(1)
				go func(seed int64) {
					defer wg.Done()
					r := rand.New(rand.NewSource(seed))
					for k := 0; k < each; k++ {
						if _, err := check(s, r, nil, m.y); err != nil {
							errs <- err
							return
						}
					}
				}(int64(w) + 100)
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Fatal(err)
			}
			st := s.Stats()
			dev, _ := runsBy(st)
			if dev[gpu0]+dev[gpu1] != int64(c.n0+c.n1+workers*each) || dev[gpu0] == 0 || dev[gpu1] == 0 || dev[session.CPUDeviceName] != 0 {
				t.Errorf("runs per device %v: want all %d on the two GPUs, both serving", dev, c.n0+c.n1+workers*each)
			}
			// Constants: once per GPU (the three the unpinned part reads),
			// shared by its groups.
			if len(st.ConstBytes) != 3 || st.ConstBytes[1] < m.consts || st.ConstBytes[2] < m.consts {
				t.Errorf("constant bytes per device %v, want at least %d on each GPU", st.ConstBytes, m.consts)
			}
			for _, g := range st.Groups[1:] {
				if !g.ConstsShared || g.Consts != fmt.Sprintf("GPU_%d_consts", g.DeviceIndex-1) || g.ConstCount != 3 {
					t.Errorf("group %d of %s: %d constants in %q (shared %v), want 3 in GPU_%d_consts", g.Index, g.Device, g.ConstCount, g.Consts, g.ConstsShared, g.DeviceIndex-1)
				}
			}
			if st.Pool == nil || fmt.Sprint(st.Pool.Devices) != fmt.Sprint([]string{gpu0, gpu1}) {
				t.Errorf("stats pool %+v, want both GPUs", st.Pool)
			}
			if st.Pool != nil && st.Pool.Runs[gpu0]+st.Pool.Runs[gpu1] != dev[gpu0]+dev[gpu1] {
				t.Errorf("stats pool runs %v, groups' %v", st.Pool.Runs, dev)
			}

			// The pinned node stays on GPU:1 while the unpinned part moves:
			// every Run touches GPU:1, some GPU:0 too; the traced Runs'
			// step stats show p's kernel on GPU:1 only, h's on both.
			before, _ := runsBy(s.Stats())
			const pinnedRuns = 6
			gpuOf := map[string]map[string]bool{"p": {}, "h": {}}
			for i := 0; i < pinnedRuns; i++ {
				md, err := check(s, r, &tfpb.RunOptions{TraceLevel: tfpb.RunOptions_FULL_TRACE}, m.pinned, m.y)
				if err != nil {
					t.Fatal(err)
				}
				for _, ds := range md.GetStepStats().GetDevStats() {
					dev, _, _ := strings.Cut(ds.Device, "/stream:")
					for _, ns := range ds.NodeStats {
						if w := gpuOf[ns.NodeName]; w != nil && strings.Contains(ns.TimelineLabel, "= ") {
							w[dev] = true
						}
					}
				}
			}
			after, _ := runsBy(s.Stats())
			if d0, d1 := after[gpu0]-before[gpu0], after[gpu1]-before[gpu1]; d1 != pinnedRuns || d0 == 0 || d0 == pinnedRuns {
				t.Errorf("runs with a node pinned to GPU:1: GPU:0 took part in %d, GPU:1 in %d of %d; want GPU:1 in all, GPU:0 in some", d0, d1, pinnedRuns)
			}
			if fmt.Sprint(gpuOf["p"]) != fmt.Sprint(map[string]bool{gpu1: true}) || !gpuOf["h"][gpu0] || !gpuOf["h"][gpu1] {
				t.Errorf("traced Runs: pinned p ran on %v, unpinned h on %v; want p on GPU:1 only, h on both", gpuOf["p"], gpuOf["h"])
			}
			// The Chrome trace has a process per group, named with its GPU.
			path := filepath.Join(t.TempDir(), "trace.json")
			if err := s.WriteTrace(path); err != nil {
				t.Fatal(err)
			}
			var tr struct {
				TraceEvents []struct {
					Name string         `json:"name"`
					Args map[string]any `json:"args"`
				} `json:"traceEvents"`
			}
			if b, err := os.ReadFile(path); err != nil || json.Unmarshal(b, &tr) != nil {
				t.Fatalf("reading the trace: %v", err)
			}
			procs := map[string]bool{}
			for _, e := range tr.TraceEvents {
				if e.Name == "process_name" {
					name := fmt.Sprint(e.Args["name"])
					procs[name[strings.LastIndex(name, "device:")+len("device:"):]] = true
				}
			}
			if !procs["GPU:0)"] || !procs["GPU:1)"] {
				t.Errorf("trace processes %v: want groups of GPU:0 and GPU:1", procs)
			}
		})
	}
}

func ones(n int) []int64 {
	out := make([]int64, n)
	for i := range out {
		out[i] = 1
	}
	return out
}

// TestPoolOffIsTF: without the knob, or with one GPU, an unpinned graph
// runs on GPU:0 only, as TF places it.
func TestPoolOffIsTF(t *testing.T) {
	r := rand.New(rand.NewSource(7))
	m := newMLP(t, r)
	for _, c := range []struct {
		gpus int
		env  map[string]string
	}{
		{2, map[string]string{"TF_GPU_STREAM_GROUP_COUNT": "2"}},
		{2, map[string]string{"TF_GPU_STREAM_GROUP_COUNT": "2", "MSTREAM_GPU_POOL": "false"}},
		{1, map[string]string{"TF_GPU_STREAM_GROUP_COUNT": "2", "MSTREAM_GPU_POOL": "true"}},
	} {
		fakeGPUs(t, c.gpus)
		c.env["MSTREAM_DEVICE"] = "gpu"
		s := open(t, m.g, c.env)
		for i := 0; i < 4; i++ {
			if _, _, err := s.Run(nil, []session.Feed{{Output: m.x, Tensor: randF32(r, tensor.Shape{3, 16})}}, []graph.Output{m.y}, nil); err != nil {
				t.Fatal(err)
			}
		}
		dev, per := runsBy(s.Stats())
		if dev[gpu0] != 4 || dev[gpu1] != 0 || fmt.Sprint(per[gpu0]) != "[2 2]" {
			t.Errorf("%d GPU(s), %v: runs per device %v, per GPU:0 group %v; want all on GPU:0, round-robin", c.gpus, c.env, dev, per[gpu0])
		}
		if (s.Stats().Pool != nil) != (c.env["MSTREAM_GPU_POOL"] == "true") {
			t.Errorf("%d GPU(s), %v: stats pool %+v", c.gpus, c.env, s.Stats().Pool)
		}
	}
}

// TestPoolVariables: variables stay one copy in host memory, which every
// GPU of the pool reads, so TF's rule holds: a Run that starts after an
// assign sees it, whichever GPU it lands on; the values equal those of a
// plain CPU session running the same Runs.
func TestPoolVariables(t *testing.T) {
	fakeGPUs(t, 2)
	r := rand.New(rand.NewSource(9))
	b := builder{t, graph.New()}
	f32 := map[string]*tfpb.AttrValue{"dtype": graph.AttrType(tensor.Float)}
	x := b.op("Placeholder", "x", "", f32)
	delta := b.op("Placeholder", "delta", "", f32)
	v := b.op("VarHandleOp", "v", "", map[string]*tfpb.AttrValue{"dtype": graph.AttrType(tensor.Float),
		"shape": graph.AttrShape(tensor.KnownShape(tensor.Shape{16, 8})), "shared_name": graph.AttrString("v")})
	init := b.op("AssignVariableOp", "init", "", f32, v, b.constant("v0", randF32(r, tensor.Shape{16, 8})))
	add := b.op("AssignAddVariableOp", "add", "", f32, v, delta)
	y := b.op("Relu", "y", "", nil, b.op("MatMul", "mm", "", nil, x, b.op("ReadVariableOp", "read", "", f32, v)))
	ref := open(t, b.g, map[string]string{"MSTREAM_DEVICE": "cpu"})
	s := open(t, b.g, map[string]string{"MSTREAM_DEVICE": "gpu", "MSTREAM_GPU_POOL": "true", "TF_GPU_STREAM_GROUP_COUNT": "2,2"})
	both := func(feeds []session.Feed, fetches []graph.Output, targets ...graph.Output) {
		t.Helper()
		var nodes []*graph.Node
		for _, o := range targets {
			nodes = append(nodes, o.Node)
		}
		want, _, err := ref.Run(nil, feeds, fetches, nodes)
		if err != nil {
			t.Fatal(err)
		}
		got, _, err := s.Run(nil, feeds, fetches, nodes)
		if err != nil {
			t.Fatal(err)
		}
		if err := same(got, want); err != nil {
			t.Fatal(err)
		}
	}
	both(nil, nil, init)
	before, _ := runsBy(s.Stats())
	const steps = 8
	for i := 0; i < steps; i++ {
		both([]session.Feed{{Output: delta, Tensor: randF32(r, tensor.Shape{16, 8})}}, nil, add)
		// The next Run reads the assign, on the other GPU half the time.
		both([]session.Feed{{Output: x, Tensor: randF32(r, tensor.Shape{int64(1 + r.Intn(9)), 16})}}, []graph.Output{y})
	}
	after, _ := runsBy(s.Stats())
	if d0, d1 := after[gpu0]-before[gpu0], after[gpu1]-before[gpu1]; d0 == 0 || d1 == 0 || d0+d1 != steps {
		t.Errorf("reads after assigns: GPU:0 served %d, GPU:1 %d of %d; want both", d0, d1, steps)
	}
	// Readers on both GPUs at once, and an assign between two rounds.
	for round := 0; round < 2; round++ {
		xs := randF32(r, tensor.Shape{5, 16})
		want, _, err := ref.Run(nil, []session.Feed{{Output: x, Tensor: xs}}, []graph.Output{y}, nil)
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		for w := 0; w < 8; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				got, _, err := s.Run(nil, []session.Feed{{Output: x, Tensor: xs}}, []graph.Output{y}, nil)
				if err == nil {
					err = same(got, want)
				}
				if err != nil {
					t.Error(err)
				}
			}()
		}
		wg.Wait()
		both([]session.Feed{{Output: delta, Tensor: randF32(r, tensor.Shape{16, 8})}}, nil, add)
	}
}

// TestMultiGPUSteps is TestGPUMultiDevice's graph on two fake GPUs: nodes
// pinned to GPU:0 and GPU:1, a chain GPU:0 -> GPU:1 -> CPU -> GPU:0 ->
// GPU:1 with a fetch from each leg, values copied between the GPUs, from 3
// goroutines under the knobs that change streams, memory, contexts and
// threads, with the pool off (TF's placement) and on, and in node-level
// mode (which ignores the pool); every output equals the plain CPU
// session's.
func TestMultiGPUSteps(t *testing.T) {
	fakeGPUs(t, 2)
	r := rand.New(rand.NewSource(13))
	b := builder{t, graph.New()}
	x := b.op("Placeholder", "x", "", map[string]*tfpb.AttrValue{"dtype": graph.AttrType(tensor.Float)})
	a0 := b.op("MatMul", "a0", "/device:GPU:0", nil, x, b.constant("w0", randF32(r, tensor.Shape{64, 48})))
	a1 := b.op("Relu", "a1", "/device:GPU:0", nil, a0)
	b1 := b.op("Sigmoid", "b1", "/device:GPU:1", nil, b.op("MatMul", "b0", "/job:localhost/replica:0/task:0/device:GPU:1", nil, x, b.constant("w1", randF32(r, tensor.Shape{64, 40}))))
	u := b.op("Tanh", "u", "", nil, x)
	c0 := b.op("Tanh", "c0", "/device:GPU:0", nil, a0)
	c1 := b.op("MatMul", "c1", "/device:GPU:1", nil, c0, b.constant("wc", randF32(r, tensor.Shape{48, 48})))
	c2 := b.op("Sigmoid", "c2", "/device:CPU:0", nil, c1)
	c3 := b.op("AddV2", "c3", "/device:GPU:0", nil, c2, c0)
	c4 := b.op("Relu", "c4", "/device:GPU:1", nil, c3)
	free := b.op("AddV2", "free", "", nil, b.op("Mul", "fm", "", nil, c4, c4), c1) // unpinned, reads both GPUs
	ref := open(t, b.g, map[string]string{"MSTREAM_DEVICE": "cpu"})
	fetchSets := [][]graph.Output{{a1, a0}, {b1}, {u}, {a1, b1, a0}, {c4, c1, c3, c2}, {free, u, c2}}
	rules := t.TempDir() + "/rules.txt"
	if err := writeFile(rules, "1:b.*,c[14]\n"); err != nil {
		t.Fatal(err)
	}
	for _, env := range []map[string]string{
		{"TF_GPU_STREAM_GROUP_COUNT": "3,2", "TF_SEGMENT_OWN_CONST": "true"},
		{"TF_GPU_STREAM_GROUP_COUNT": "3,2", "MSTREAM_GPU_POOL": "true"},
		{"TF_GPU_STREAM_GROUP_COUNT": "2", "TF_GPU_STREAM_MERGE": "true", "TF_REDUCE_STREAM_WAIT": "false", "MSTREAM_GPU_POOL": "true"},
		{"TF_GPU_STREAM_GROUP_COUNT": "2", "TF_GPU_STREAM_AWARE_BFC": "true", "TF_PER_STREAM_HOST_ALLOCATOR": "true", "MSTREAM_GPU_POOL": "true"},
		{"TF_GPU_STREAM_GROUP_COUNT": "3", "TF_GPU_STREAM_GROUP_SHARE_MEM_POOL": "true", "MSTREAM_STREAM_JITTER": "true", "MSTREAM_GPU_POOL": "true"},
		{"TF_GPU_STREAM_GROUP_COUNT": "4,4", "TF_GPU_CONTEXT_COUNT": "2", "TF_GPU_THREAD_MODE": "gpu_private", "TF_GPU_THREAD_COUNT": "1", "MSTREAM_GPU_POOL": "true"},
		{"TF_GPU_STREAM_GROUP_COUNT": "2", "TF_NODE_LEVEL_MULTISTREAM": "true", "TF_STREAM_FROM_FILE": rules, "MSTREAM_GPU_POOL": "true"},
	} {
		env["MSTREAM_DEVICE"] = "gpu"
		t.Run(fmt.Sprint(env), func(t *testing.T) {
			s := open(t, b.g, env)
			var wg sync.WaitGroup
			for w := 0; w < 3; w++ {
				wg.Add(1)
				go func(seed int64) {
					defer wg.Done()
					r := rand.New(rand.NewSource(seed))
					for k := 0; k < 3; k++ {
						for _, fetches := range fetchSets {
							f := []session.Feed{{Output: x, Tensor: randF32(r, tensor.Shape{int64(1 + r.Intn(60)), 64})}}
							want, _, err := ref.Run(nil, f, fetches, nil)
							if err != nil {
								t.Error(err)
								return
							}
							got, _, err := s.Run(nil, f, fetches, nil)
							if err == nil {
								err = same(got, want)
							}
							if err != nil {
								t.Errorf("fetches %v: %v", fetches, err)
								return
							}
						}
					}
				}(int64(w))
			}
			wg.Wait()
			dev, _ := runsBy(s.Stats())
			if dev[gpu0] == 0 || dev[gpu1] == 0 {
				t.Errorf("runs per device %v: want both GPUs", dev)
			}
		})
	}
}

func writeFile(path, text string) error { return os.WriteFile(path, []byte(text), 0o644) }

// TestPoolHammer: random graphs of fake-GPU ops, each node unpinned or
// pinned to GPU:0, GPU:1 or the CPU, under random pool knobs (group
// counts, merged streams, stream-aware BFC, the sanitizer's jitter), run
// by 8 goroutines fetching random subsets; every output equals the plain
// CPU session's, and every Run is counted by a group.
func TestPoolHammer(t *testing.T) {
	fakeGPUs(t, 2)
	r := rand.New(rand.NewSource(17))
	devs := []string{"", "", "", "/device:GPU:0", "/device:GPU:1", "/device:CPU:0"}
	for trial := 0; trial < 4; trial++ {
		b := builder{t, graph.New()}
		x := b.op("Placeholder", "x", "", map[string]*tfpb.AttrValue{"dtype": graph.AttrType(tensor.Float)})
		vals := []graph.Output{x, b.constant("c", randF32(r, tensor.Shape{8}))}
		for i := 0; i < 24; i++ {
			name, dev := fmt.Sprintf("n%d", i), devs[r.Intn(len(devs))]
			a := vals[r.Intn(len(vals))]
			if r.Intn(2) == 0 {
				vals = append(vals, b.op([]string{"Relu", "Tanh", "Sigmoid"}[r.Intn(3)], name, dev, nil, a))
			} else {
				vals = append(vals, b.op([]string{"AddV2", "Mul"}[r.Intn(2)], name, dev, nil, a, vals[r.Intn(len(vals))]))
			}
		}
		env := map[string]string{"MSTREAM_DEVICE": "gpu", "MSTREAM_GPU_POOL": "true",
			"TF_GPU_STREAM_GROUP_COUNT": []string{"4,4", "3,2", "1,2", "2"}[r.Intn(4)],
			"TF_GPU_STREAM_MERGE":       fmt.Sprint(r.Intn(2) == 0), "TF_GPU_STREAM_AWARE_BFC": fmt.Sprint(r.Intn(3) == 0),
			"MSTREAM_STREAM_JITTER": fmt.Sprint(r.Intn(2) == 0), "TF_SEGMENT_OWN_CONST": fmt.Sprint(r.Intn(2) == 0)}
		t.Run(fmt.Sprint(trial, env), func(t *testing.T) {
			ref := open(t, b.g, map[string]string{"MSTREAM_DEVICE": "cpu"})
			s := open(t, b.g, env)
			const workers, each = 8, 6
			var wg sync.WaitGroup
			for w := 0; w < workers; w++ {
				wg.Add(1)
				go func(seed int64) {
					defer wg.Done()
					r := rand.New(rand.NewSource(seed))
					for k := 0; k < each; k++ {
						var fetches []graph.Output
						for _, v := range vals[2:] {
							if r.Intn(5) == 0 {
								fetches = append(fetches, v)
							}
						}
						if len(fetches) == 0 {
							fetches = vals[len(vals)-1:]
						}
						f := []session.Feed{{Output: x, Tensor: randF32(r, tensor.Shape{int64(1 + r.Intn(20)), 8})}}
						want, _, err := ref.Run(nil, f, fetches, nil)
						if err != nil {
							t.Error(err)
							return
						}
						got, _, err := s.Run(nil, f, fetches, nil)
						if err == nil {
							err = same(got, want)
						}
						if err != nil {
							t.Errorf("fetches %v: %v", fetches, err)
							return
						}
					}
				}(int64(trial*100 + w))
			}
			wg.Wait()
			st := s.Stats()
			var runs int64
			for _, g := range st.Groups {
				runs += g.RunsCompleted
				if g.RunsInFlight != 0 {
					t.Errorf("group %d of %s: %d runs in flight at the end", g.Index, g.Device, g.RunsInFlight)
				}
			}
			if st.RunsCompleted != workers*each || runs < workers*each {
				t.Errorf("%d Runs completed, groups counted %d; want %d, each counted by at least one group", st.RunsCompleted, runs, workers*each)
			}
		})
	}
}
