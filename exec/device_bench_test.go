package exec

import (
	"context"
	"fmt"
	"math/rand"
	"strings"
	"syscall"
	"testing"
	"time"

	"mstream/device"
	"mstream/device/host"
	"mstream/graph"
	"mstream/groups"
	"mstream/kernels"
	"mstream/tensor"
)

// The device launcher's own host cost per node, without a device: the
// streams of syncDevice run each item as it is enqueued and their events
// are complete when recorded, so a step costs what runDevice, the tracker,
// the allocator and a kernel's Go side cost, minus the driver's launch
// (TestGPULaunchCost measures both on a GPU). ExecTestGWide is a GPU
// kernel as the CUDA ones are on the host: it allocates an output the
// shape of its first input and enqueues one item.
//
//	go test ./exec -run '^$' -bench BenchmarkDeviceStep -benchmem
//
// reports ns/node (wall), cpu-ns/node (the process's CPU time, which a
// loaded machine inflates less) and allocs/node per plan: a chain, a
// random DAG of DLRM's shape (27 feeds, 60 nodes, one fetch), and the DAG
// over four groups (waits across streams); and four towers of 16 nodes
// joined at the top, each launch spinning ~5 us of host CPU as the
// driver's does, on one group, two and four (a tower per group): the
// wall time per node shows what the lanes' overlap gains, the CPU time
// what they cost; the same towers without the spin (towers4x16) show
// the lanes' own cost per node alone.

func init() {
	kernels.Register(kernels.Def{Op: "ExecTestGNop", Device: kernels.GPU, Factory: func(n *graph.Node) (kernels.Kernel, error) {
		return kernels.KernelFunc(func(ctx *kernels.Context) error {
			_, err := ctx.Allocate(0, ctx.Inputs[0].Shape)
			return err
		}), nil
	}})
	kernels.Register(kernels.Def{Op: "ExecTestGWide", Device: kernels.GPU, Factory: func(n *graph.Node) (kernels.Kernel, error) {
		c := float32(n.Attrs["c"].GetF())
		return kernels.KernelFunc(func(ctx *kernels.Context) error {
			t, err := ctx.Allocate(0, ctx.Inputs[0].Shape)
			if err != nil {
				return err
			}
			ins := ctx.Inputs
			return device.Enqueue(ctx.Stream, func() {
				sum := c
				for _, in := range ins {
					sum += in.F32()[0]
				}
				t.F32()[0] = sum
			})
		}), nil
	}})
	// ExecTestGSpin is ExecTestGWide whose launch costs the host about
	// 5 us of CPU, as cuLaunchKernel does: with one launching goroutine a
	// step's launches add up, with a lane per group they overlap.
	kernels.Register(kernels.Def{Op: "ExecTestGSpin", Device: kernels.GPU, Factory: func(n *graph.Node) (kernels.Kernel, error) {
		return kernels.KernelFunc(func(ctx *kernels.Context) error {
			t, err := ctx.Allocate(0, ctx.Inputs[0].Shape)
			if err != nil {
				return err
			}
			for start := time.Now(); time.Since(start) < 5*time.Microsecond; {
			}
			ins := ctx.Inputs
			return device.Enqueue(ctx.Stream, func() {
				sum := float32(0)
				for _, in := range ins {
					sum += in.F32()[0]
				}
				t.F32()[0] = sum
			})
		}), nil
	}})
}

// towersPlan is a plan of op's nodes (a GPU kernel: ExecTestGSpin,
// ExecTestGWide) on one GPU: towers chains of depth nodes, each after a
// feed of its own, joined by one node, the fetch (the shape of the
// training example's towers); tower[i] is plan node i's tower (-1: the
// join).
func towersPlan(t testing.TB, op string, towers, depth int) (p *Plan, tower []int, gpu int) {
	var feeds []graph.Output
	var tops []*graph.Node
	for k := 0; k < towers; k++ {
		n := node(fmt.Sprint("t", k, "feed"), op, 0)
		feeds = append(feeds, graph.Output{Node: n})
		for d := 0; d < depth; d++ {
			n = node(fmt.Sprint("t", k, "n", d), op, 0, n)
		}
		tops = append(tops, n)
	}
	join := node("join", op, 0, tops...)
	p, err := build(nil, feeds, []graph.Output{{Node: join}}, nil, Placement{GPUs: 1})
	if err != nil {
		t.Fatal(err)
	}
	tower = make([]int, len(p.nodes))
	for i := range p.nodes {
		tower[i] = -1
		fmt.Sscanf(p.nodes[i].node.Name, "t%d", &tower[i])
		if p.nodes[i].where == onGPU {
			gpu++
		}
	}
	return p, tower, gpu
}

// TestDeviceStepAllocs: a warm one-group device step allocates nothing
// per launched node (its records come from the plan's arena, the
// allocator keeps its chunk records, the kernel lookup and an input's
// error name cost nothing); what is left is per step (feeds, fetches,
// the step's state). ExecTestGNop's kernel allocates its output and
// enqueues nothing, so its own cost is not counted. (Before the arena a
// node cost 15 allocations.)
//
// Over four groups (lanes, a node in four on each, every edge across
// groups: an event and a wait per node) a node costs little more: its
// publication and wait are records of the arena too; per step, the
// lanes and their tables (their goroutines are the plan's crew's).
func TestDeviceStepAllocs(t *testing.T) {
	const n = 200
	p := gnopChain(t, n)
	for _, tc := range []struct {
		groups int
		per    float64
	}{{1, 0.25}, {4, 0.35}} {
		set := syncSet(t, tc.groups)
		sr := &Runtime{Streams: true, Groups: set.Groups(), ReduceWaits: true, Holder: &set.Holder, Intra: kernels.Serial{}}
		if tc.groups > 1 {
			sr.Assign = make([]int, len(p.nodes))
			for i := range sr.Assign {
				sr.Assign[i] = i % tc.groups
			}
		}
		feeds := []*tensor.Tensor{tensor.FromF32(tensor.Shape{16, 64}, make([]float32, 16*64))}
		run := func() {
			if _, _, err := p.Run(context.Background(), sr, feeds, Options{}); err != nil {
				t.Fatal(err)
			}
		}
		for i := 0; i < 5; i++ {
			run()
		}
		per := testing.AllocsPerRun(20, run) / n
		if raceEnabled && tc.groups > 1 {
			// The race detector's sync.Pool drops a quarter of what is
			// put back (holdOn's records, one per node here).
			tc.per += 0.5
		}
		if per > tc.per {
			t.Errorf("groups=%d: a warm device step allocates %.2f objects per node, want at most %.2f (per-step costs only)", tc.groups, per, tc.per)
		}
		t.Logf("groups=%d: %.3f allocations per node", tc.groups, per)
		set.Holder.Drain()
		for _, g := range set.Groups() {
			if b := g.Alloc.Stats().BytesInUse; b != 0 {
				t.Errorf("groups=%d: %d bytes still allocated after the steps", tc.groups, b)
			}
		}
	}
}

// TestDeviceStepAllocsPerStep: a warm one-group step of a short chain
// (the MLP of TestGPULaunchCost has six GPU nodes) allocates what it
// returns (a fetch's tensor, its shape and data, and the list of
// fetches) and a few records more: the step's own (devStep, its
// gstep, tables, streams and value tables are one object or the
// arena's), the tracker's hold and the kernels' allocator bound to it,
// the launch-pool hand-off not at all (the caller launches). 27 a step
// before the arena kept them.
func TestDeviceStepAllocsPerStep(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector's sync.Pool drops what is put back")
	}
	p := gnopChain(t, 6)
	set := syncSet(t, 1)
	sr := &Runtime{Groups: set.Groups(), Holder: &set.Holder, Intra: kernels.Serial{}}
	feeds := []*tensor.Tensor{tensor.FromF32(tensor.Shape{1, 512}, make([]float32, 512))}
	run := func() {
		if _, _, err := p.Run(context.Background(), sr, feeds, Options{}); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < 5; i++ {
		run()
	}
	const most = 12
	if n := testing.AllocsPerRun(100, run); n > most {
		t.Errorf("a warm one-group step of 6 nodes allocates %.1f objects, want at most %d", n, most)
	} else {
		t.Logf("%.1f allocations per step", n)
	}
}

type syncDevice struct{ *host.Device }

func (d syncDevice) NewStream(ctx int) (device.Stream, error) {
	s, err := d.Device.NewStream(ctx)
	if err != nil {
		return nil, err
	}
	hs := s.(*host.Stream)
	return syncStream{hs, hs.Inline()}, nil
}

// syncStream runs its work as it is enqueued: a device with no latency.
type syncStream struct {
	*host.Stream
	v device.Stream // the inline view: copies at once
}

type syncEvent struct{}

func (syncEvent) Query() bool        { return true }
func (syncEvent) Synchronize() error { return nil }
func (syncEvent) Release()           {}

func (s syncStream) Enqueue(fn func()) error                  { fn(); return nil }
func (s syncStream) PooledEvent() (device.PooledEvent, error) { return syncEvent{}, nil }
func (s syncStream) Record(device.Event) error                { return nil }
func (s syncStream) Wait(device.Event) error                  { return nil }
func (s syncStream) Synchronize() error                       { return nil }
func (s syncStream) CopyH2D(dst uint64, src []byte) error     { return s.v.CopyH2D(dst, src) }
func (s syncStream) CopyD2H(dst []byte, src uint64) error     { return s.v.CopyD2H(dst, src) }
func (s syncStream) CopyD2D(dst, src, n uint64) error         { return s.v.CopyD2D(dst, src, n) }

// cpuTime is the process's user and system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func syncSet(t testing.TB, n int) *groups.Set {
	d := host.New()
	d.MemBytes = 256 << 20
	p := NewPool(1)
	t.Cleanup(p.Close)
	cfg := groups.Config{Counts: []int{n}, AllowGrowth: true,
		GlobalPool: p, GlobalIntra: kernels.Serial{},
		NewPool:  func(n int) groups.Pool { return NewPool(n) },
		NewIntra: func(n int) kernels.Parallelizer { return NewIntra(n) }}
	cfg.Devices = append(cfg.Devices, syncDevice{d})
	set, err := groups.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(set.Close)
	return set
}

// benchPlan is a plan of ExecTestGWide nodes on one GPU: a chain of nn
// nodes after one feed, or makeRandomPlan's DAG over nf feeds.
func benchPlan(t testing.TB, chain bool, nf, nn int) (*Plan, int) {
	var feeds, nodes []*graph.Node
	for i := 0; i < nf; i++ {
		feeds = append(feeds, node(fmt.Sprint("feed", i), "ExecTestGWide", 0))
	}
	r := rand.New(rand.NewSource(7))
	all := append([]*graph.Node(nil), feeds...)
	for i := 0; i < nn; i++ {
		var ins []*graph.Node
		if chain {
			ins = append(ins, all[len(all)-1])
		} else {
			for k := 0; k < 1+r.Intn(3); k++ {
				ins = append(ins, all[r.Intn(len(all))])
			}
		}
		n := node(fmt.Sprint("n", i), "ExecTestGWide", float32(r.Intn(7)), ins...)
		nodes = append(nodes, n)
		all = append(all, n)
	}
	var fo []graph.Output
	for _, f := range feeds {
		fo = append(fo, graph.Output{Node: f})
	}
	// The last node reads every node no other reads, and is the one
	// fetch (as DLRM's interaction and top MLP end in one output), so
	// none is pruned.
	read := map[*graph.Node]bool{}
	for _, n := range nodes {
		for _, in := range n.Inputs {
			read[in.Node] = true
		}
	}
	var sinks []*graph.Node
	for _, n := range nodes {
		if !read[n] {
			sinks = append(sinks, n)
		}
	}
	if len(sinks) > 1 {
		last := node("out", "ExecTestGWide", 0, sinks...)
		nodes = append(nodes, last)
		sinks = []*graph.Node{last}
	}
	fetches := []graph.Output{{Node: sinks[0]}}
	p, err := build(nil, fo, fetches, nil, Placement{GPUs: 1})
	if err != nil {
		t.Fatal(err)
	}
	gpu := 0
	for i := range p.nodes {
		if p.nodes[i].where == onGPU {
			gpu++
		}
	}
	return p, gpu
}

func BenchmarkDeviceStep(b *testing.B) {
	for _, bc := range []struct {
		name         string
		chain        bool
		feeds, nodes int
		groups       int
	}{
		{"chain100", true, 1, 100, 1},
		{"dag60x27feeds", false, 27, 60, 1},
		{"dag60x27feeds/groups=4", false, 27, 60, 4},
		{"towers4x16spin/groups=1", false, 4, 16, 1},
		{"towers4x16spin/groups=2", false, 4, 16, 2},
		{"towers4x16spin/groups=4", false, 4, 16, 4},
		{"towers4x16/groups=1", false, 4, 16, 1},
		{"towers4x16/groups=2", false, 4, 16, 2},
		{"towers4x16/groups=4", false, 4, 16, 4},
	} {
		b.Run(bc.name, func(b *testing.B) {
			var p *Plan
			var gpu int
			var tower []int
			if op, ok := strings.CutPrefix(bc.name, "towers4x16"); ok {
				op = map[bool]string{true: "ExecTestGSpin", false: "ExecTestGWide"}[strings.HasPrefix(op, "spin")]
				p, tower, gpu = towersPlan(b, op, bc.feeds, bc.nodes)
			} else {
				p, gpu = benchPlan(b, bc.chain, bc.feeds, bc.nodes)
			}
			set := syncSet(b, bc.groups)
			sr := &Runtime{Streams: true, Groups: set.Groups(), ReduceWaits: true, Holder: &set.Holder, Intra: kernels.Serial{}}
			if bc.groups > 1 {
				sr.Assign = make([]int, len(p.nodes))
				for i := range sr.Assign {
					sr.Assign[i] = i % bc.groups
					if tower != nil {
						sr.Assign[i] = max(tower[i], 0) % bc.groups
					}
				}
			}
			var feeds []*tensor.Tensor
			for i := 0; i < bc.feeds; i++ {
				feeds = append(feeds, tensor.FromF32(tensor.Shape{16, 64}, make([]float32, 16*64)))
			}
			run := func() {
				if _, _, err := p.Run(context.Background(), sr, feeds, Options{}); err != nil {
					b.Fatal(err)
				}
			}
			for i := 0; i < 20; i++ {
				run()
			}
			b.ReportAllocs()
			b.ResetTimer()
			start, cpu0 := time.Now(), cpuTime()
			for i := 0; i < b.N; i++ {
				run()
			}
			el, cpu := time.Since(start), cpuTime()-cpu0
			b.StopTimer()
			nodes := float64(b.N) * float64(gpu)
			b.ReportMetric(float64(el.Nanoseconds())/nodes, "ns/node")
			// The process's CPU time, which a loaded machine's run queue
			// does not inflate as it does the wall time.
			b.ReportMetric(float64(cpu.Nanoseconds())/nodes, "cpu-ns/node")
			b.ReportMetric(float64(testing.AllocsPerRun(20, run))/float64(gpu), "allocs/node")
			set.Holder.Drain()
		})
	}
}
