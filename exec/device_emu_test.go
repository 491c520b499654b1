package exec

import (
	"context"
	"fmt"
	"math/rand"
	"sync"
	"testing"
	"time"

	"mstream/device"
	"mstream/device/host"
	"mstream/graph"
	"mstream/groups"
	"mstream/kernels"
)

// The device launcher (runDevice) on the CPU: emuDevice is the host device
// seen as an asynchronous one (its streams have an event pool, which is
// what sends RunStreams to the device launcher), and ExecTestGAdd's GPU
// kernel enqueues its work on the stream it is given, as a CUDA kernel
// does. With the host streams' jitter, a launch that misses a wait reads
// a value before it is written and the sums come out wrong, so one-group
// and multi-group device steps are checked without a GPU.

func init() {
	add := func(n *graph.Node, async bool) (kernels.Kernel, error) {
		c := float32(n.Attrs["c"].GetF())
		return kernels.KernelFunc(func(ctx *kernels.Context) error {
			t, err := ctx.Allocate(0, nil)
			if err != nil {
				return err
			}
			ins := ctx.Inputs
			work := func() {
				sum := c
				for _, in := range ins {
					sum += in.F32()[0]
				}
				t.F32()[0] = sum
			}
			if !async {
				work()
				return nil
			}
			return device.Enqueue(ctx.Stream, work)
		}), nil
	}
	kernels.Register(kernels.Def{Op: "ExecTestGAdd", Device: kernels.CPU, Factory: func(n *graph.Node) (kernels.Kernel, error) { return add(n, false) }})
	kernels.Register(kernels.Def{Op: "ExecTestGAdd", Device: kernels.GPU, Factory: func(n *graph.Node) (kernels.Kernel, error) { return add(n, true) }})
}

type emuDevice struct{ *host.Device }

func (d emuDevice) NewStream(ctx int) (device.Stream, error) {
	s, err := d.Device.NewStream(ctx)
	if err != nil {
		return nil, err
	}
	return emuStream{s.(*host.Stream)}, nil
}

// emuStream is a host stream with an event pool; its events are host
// events, unwrapped where the host stream records or waits for them.
type emuStream struct{ *host.Stream }

type emuEvent struct{ *host.Event }

func (emuEvent) Release() {}

func (s emuStream) PooledEvent() (device.PooledEvent, error) { return emuEvent{&host.Event{}}, nil }

func unwrap(e device.Event) device.Event {
	if pe, ok := e.(emuEvent); ok {
		return pe.Event
	}
	return e
}

func (s emuStream) Record(e device.Event) error { return s.Stream.Record(unwrap(e)) }
func (s emuStream) Wait(e device.Event) error   { return s.Stream.Wait(unwrap(e)) }

func emuSet(t testing.TB, n int, merge bool, jitter time.Duration) *groups.Set {
	d := host.New()
	d.MemBytes = 64 << 20
	d.Jitter = jitter
	p := NewPool(2)
	t.Cleanup(p.Close)
	cfg := groups.Config{Counts: []int{n}, Merge: merge, AllowGrowth: true,
		GlobalPool: p, GlobalIntra: kernels.Serial{},
		NewPool:  func(n int) groups.Pool { return NewPool(n) },
		NewIntra: func(n int) kernels.Parallelizer { return NewIntra(n) }}
	cfg.Devices = append(cfg.Devices, emuDevice{d})
	set, err := groups.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(set.Close)
	return set
}

// emuPlan is makeRandomPlan's DAG with ExecTestGAdd nodes, placed as on
// one GPU: every node on the device, the feeds copied in.
func emuPlan(t testing.TB, r *rand.Rand, nf, nn int) *randomPlan {
	rp := makeRandomPlan(t, r, nf, nn)
	for _, n := range rp.nodes {
		n.Op = "ExecTestGAdd"
	}
	var fo []graph.Output
	for _, f := range rp.feeds {
		fo = append(fo, graph.Output{Node: f})
	}
	p, err := build(nil, fo, rp.fetches, nil, Placement{GPUs: 1})
	if err != nil {
		t.Fatal(err)
	}
	if !p.OnGPU() {
		t.Fatal("the plan has no device node")
	}
	rp.plan = p
	return rp
}

// TestDeviceStepEmulated runs random device plans through RunStreams on
// the emulated device: one group and several (random node-level
// assignment), merged streams or not, wait reduction on and off, several
// steps at once, under jitter; every value must be right, and every
// buffer must come back.
func TestDeviceStepEmulated(t *testing.T) {
	r := rand.New(rand.NewSource(11))
	rp := emuPlan(t, r, 3, 60)
	for _, tc := range []struct {
		groups        int
		merge, reduce bool
	}{{1, false, true}, {1, true, true}, {3, false, true}, {3, false, false}, {2, true, true}} {
		t.Run(fmt.Sprintf("groups=%d,merge=%v,reduce=%v", tc.groups, tc.merge, tc.reduce), func(t *testing.T) {
			set := emuSet(t, tc.groups, tc.merge, 100*time.Microsecond)
			sr := &StreamRuntime{Groups: set.Groups(), ReduceWaits: tc.reduce, Holder: &set.Holder, Intra: kernels.Serial{}}
			if tc.groups > 1 {
				sr.Assign = make([]int, len(rp.plan.nodes))
				for i := range sr.Assign {
					sr.Assign[i] = r.Intn(tc.groups)
				}
			}
			var wg sync.WaitGroup
			errs := make(chan error, 8)
			for w := 0; w < 3; w++ {
				wg.Add(1)
				go func(seed int64) {
					defer wg.Done()
					rr := rand.New(rand.NewSource(seed))
					for it := 0; it < 10; it++ {
						vals := []float32{float32(rr.Intn(100)), float32(rr.Intn(100)), float32(rr.Intn(100))}
						got, _, err := rp.plan.RunStreams(context.Background(), sr, scalars(vals), Options{Trace: it == 0})
						if err == nil {
							err = check(got, rp.want(vals))
						}
						if err != nil {
							errs <- fmt.Errorf("step %d: %w", it, err)
							return
						}
					}
				}(int64(w))
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Error(err)
			}
			set.Holder.Drain()
			for _, g := range set.Groups() {
				if n := g.Alloc.Stats().BytesInUse; n != 0 {
					t.Errorf("group %d: %d bytes still allocated after the steps", g.ID, n)
				}
			}
		})
	}
}
