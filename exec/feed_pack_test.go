package exec

import (
	"context"
	"math/rand"
	"sync/atomic"
	"testing"
	"time"

	"mstream/device"
	"mstream/device/host"
	"mstream/graph"
	"mstream/kernels"
	"mstream/status"
	"mstream/tensor"
)

func init() {
	fail := func(n *graph.Node) (kernels.Kernel, error) {
		return kernels.KernelFunc(func(ctx *kernels.Context) error {
			return status.Errorf(status.InvalidArgument, "node '%s' fails on purpose", n.Name)
		}), nil
	}
	kernels.Register(kernels.Def{Op: "ExecTestGFail", Device: kernels.CPU, Factory: fail})
	kernels.Register(kernels.Def{Op: "ExecTestGFail", Device: kernels.GPU, Factory: fail})
}

// countingDevice is the emulated device whose streams count their
// host-to-device copies.
type countingDevice struct {
	*host.Device
	h2d *atomic.Int64
}

func (d countingDevice) NewStream(ctx int) (device.Stream, error) {
	s, err := d.Device.NewStream(ctx)
	if err != nil {
		return nil, err
	}
	return countingStream{emuStream{s.(*host.Stream)}, d.h2d}, nil
}

type countingStream struct {
	emuStream
	h2d *atomic.Int64
}

func (s countingStream) CopyH2D(dst uint64, src []byte) error {
	s.h2d.Add(1)
	return s.emuStream.CopyH2D(dst, src)
}

// TestFeedsOneCopy runs device steps with three feeds of different sizes
// (one element, a few, more than a 256-byte chunk) on the emulated device:
// each step makes exactly one host-to-device copy, every value is right,
// and the shared feed block comes back when the step is done.
func TestFeedsOneCopy(t *testing.T) {
	r := rand.New(rand.NewSource(rand.Int63()))
	rp := emuPlan(t, r, 3, 30)
	var h2d atomic.Int64
	d := host.New()
	d.MemBytes = 64 << 20
	d.Jitter = 50 * time.Microsecond
	set := emuSetOn(t, countingDevice{d, &h2d}, 1)
	sr := &Runtime{Streams: true, Groups: set.Groups(), ReduceWaits: true, Holder: &set.Holder, Intra: kernels.Serial{}}
	sizes := []int{1, 5, 70}
	for it := 0; it < 20; it++ {
		vals := make([]float32, 3)
		feeds := make([]*tensor.Tensor, 3)
		for k := range feeds {
			v := make([]float32, sizes[(k+it)%3])
			for i := range v {
				v[i] = float32(r.Intn(100))
			}
			vals[k] = v[0]
			feeds[k] = tensor.FromF32(tensor.Shape{int64(len(v))}, v)
		}
		before := h2d.Load()
		got, _, err := rp.plan.Run(context.Background(), sr, feeds, Options{})
		if err == nil {
			err = check(got, rp.want(vals))
		}
		if err != nil {
			t.Fatalf("step %d: %v", it, err)
		}
		if n := h2d.Load() - before; n != 1 {
			t.Fatalf("step %d: %d host-to-device copies for 3 feeds, want 1", it, n)
		}
	}
	set.Holder.Drain()
	g := set.Groups()[0]
	for _, s := range g.Streams() {
		s.Synchronize()
	}
	if n := g.Alloc.Stats().BytesInUse; n != 0 {
		t.Errorf("%d device bytes in use after the steps", n)
	}
}

// TestFeedsOneCopyFailedStep: a step whose packed feeds are still held
// when a node fails frees the feed block once (a double free would be an
// INTERNAL error in place of the node's, or a later step's buffers freed
// under it), and the next step runs right.
func TestFeedsOneCopyFailedStep(t *testing.T) {
	f0, f1 := node("f0", "ExecTestGAdd", 0), node("f1", "ExecTestGAdd", 0)
	// bad fails first; late, the last reader of f1, comes after a chain,
	// so the block is still held when the step stops.
	bad := node("bad", "ExecTestGFail", 0, f0)
	sum := node("sum", "ExecTestGAdd", 1, node("c2", "ExecTestGAdd", 0, node("c1", "ExecTestGAdd", 0, f0)), f0)
	late := node("late", "ExecTestGAdd", 0, sum, f1)
	feeds := []graph.Output{{Node: f0}, {Node: f1}}
	failing, err := build(nil, feeds, []graph.Output{{Node: bad}, {Node: late}}, nil, Placement{GPUs: 1})
	if err != nil {
		t.Fatal(err)
	}
	good, err := build(nil, feeds, []graph.Output{{Node: late}}, nil, Placement{GPUs: 1})
	if err != nil {
		t.Fatal(err)
	}
	d := host.New()
	d.MemBytes = 64 << 20
	set := emuSetOn(t, emuDevice{d}, 1)
	sr := &Runtime{Streams: true, Groups: set.Groups(), ReduceWaits: true, Holder: &set.Holder, Intra: kernels.Serial{}}
	g := set.Groups()[0]
	for it := 0; it < 5; it++ {
		_, _, err := failing.Run(context.Background(), sr, scalars([]float32{1, 2}), Options{})
		if status.CodeOf(err) != status.InvalidArgument {
			t.Fatalf("step %d: %v; want the failing node's INVALID_ARGUMENT", it, err)
		}
		got, _, err := good.Run(context.Background(), sr, scalars([]float32{3, 4}), Options{})
		if err == nil {
			err = check(got, []float32{3 + 3 + 1 + 4})
		}
		if err != nil {
			t.Fatalf("step %d after the failure: %v", it, err)
		}
		set.Holder.Drain()
		for _, s := range g.Streams() {
			s.Synchronize()
		}
		if err := g.Alloc.Check(); err != nil {
			t.Fatal(err)
		}
		if n := g.Alloc.Stats().BytesInUse; n != 0 {
			t.Fatalf("step %d: %d device bytes in use after the steps", it, n)
		}
	}
}
