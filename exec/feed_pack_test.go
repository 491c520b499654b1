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
	"mstream/tensor"
)

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

// TestFeedsOneCopyHeldToStepEnd: a step with v1 control flow holds every
// device buffer to its end (keep), so the packed feed block is released
// by the tracker's drain, which must free it once, not once per feed view
// (on an H100 the session's control-flow tests failed with "free of ...,
// which is not a live allocation" before drain learnt shared blocks). The
// plan reads two fed values in a device kernel, then picks a branch on a
// third; values and memory are checked.
func TestFeedsOneCopyHeldToStepEnd(t *testing.T) {
	x, y := node("x", "ExecTestGAdd", 0), node("y", "ExecTestGAdd", 0)
	p := node("p", "ExecTestGLess", 0)
	p.OutTypes = []tensor.DType{tensor.Bool}
	sum := node("sum", "ExecTestGAdd", 0, x, y)
	sw := flowNode("sw", "Switch", 2, graph.Output{Node: sum}, graph.Output{Node: p})
	then := node("then", "ExecTestGAdd", 1)
	then.Inputs, then.InTypes = []graph.Output{{Node: sw, Index: 1}}, []tensor.DType{tensor.Float}
	els := node("else", "ExecTestGAdd", 2)
	els.Inputs, els.InTypes = []graph.Output{{Node: sw, Index: 0}}, []tensor.DType{tensor.Float}
	m := flowNode("m", "Merge", 2, graph.Output{Node: els}, graph.Output{Node: then})
	m.OutTypes[1] = tensor.Int32
	plan, err := build(nil, []graph.Output{{Node: x}, {Node: y}, {Node: p}}, []graph.Output{{Node: m}}, nil, Placement{GPUs: 1})
	if err != nil {
		t.Fatal(err)
	}
	if !plan.Deadness() {
		t.Fatal("the plan has no v1 control flow")
	}
	var h2d atomic.Int64
	d := host.New()
	d.MemBytes = 64 << 20
	set := emuSetOn(t, countingDevice{d, &h2d}, 1)
	sr := &Runtime{Streams: true, Groups: set.Groups(), ReduceWaits: true, Holder: &set.Holder, Intra: kernels.Serial{}}
	g := set.Groups()[0]
	r := rand.New(rand.NewSource(rand.Int63()))
	for it := 0; it < 10; it++ {
		a, b, pv := float32(r.Intn(100)), float32(r.Intn(100)), r.Intn(2)
		pred := tensor.New(tensor.Bool, nil)
		pred.Buf[0] = byte(pv)
		before := h2d.Load()
		got, _, err := plan.Run(context.Background(), sr, []*tensor.Tensor{tensor.ScalarF32(a), tensor.ScalarF32(b), pred}, Options{})
		if err != nil {
			t.Fatalf("step %d: %v", it, err)
		}
		want := a + b + 2
		if pv == 1 {
			want = a + b + 1
		}
		if v := got[0].F32()[0]; v != want {
			t.Fatalf("step %d: got %v, want %v", it, v, want)
		}
		if it == 0 && h2d.Load()-before != 1 {
			t.Fatalf("%d host-to-device copies for the feeds, want 1 (the test must pack its feeds)", h2d.Load()-before)
		}
	}
	set.Holder.Drain()
	for _, s := range g.Streams() {
		s.Synchronize()
	}
	if err := g.Alloc.Check(); err != nil {
		t.Fatal(err)
	}
	if n := g.Alloc.Stats().BytesInUse; n != 0 {
		t.Fatalf("%d device bytes in use after the steps", n)
	}
}
