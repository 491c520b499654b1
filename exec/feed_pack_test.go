package exec

import (
	"context"
	"maps"
	"math/rand"
	"slices"
	"sync"
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

// opsDevice is the emulated device whose streams count, per stream, the
// events recorded, the waits and the copies each way.
type opsDevice struct {
	*host.Device
	ops *streamOps
}

type streamOps struct {
	mu sync.Mutex
	n  map[streamOp]int
}

type streamOp struct {
	op     string // "record", "wait", "h2d", "d2h"
	stream device.StreamID
}

func (o *streamOps) add(op string, id device.StreamID) {
	o.mu.Lock()
	o.n[streamOp{op, id}]++
	o.mu.Unlock()
}

// take returns the counts so far and starts again.
func (o *streamOps) take() map[streamOp]int {
	o.mu.Lock()
	defer o.mu.Unlock()
	n := o.n
	o.n = map[streamOp]int{}
	return n
}

func (d opsDevice) NewStream(ctx int) (device.Stream, error) {
	s, err := d.Device.NewStream(ctx)
	if err != nil {
		return nil, err
	}
	return opsStream{emuStream{s.(*host.Stream)}, d.ops}, nil
}

type opsStream struct {
	emuStream
	ops *streamOps
}

func (s opsStream) Record(e device.Event) error {
	s.ops.add("record", s.ID())
	return s.emuStream.Record(e)
}

func (s opsStream) Wait(e device.Event) error {
	s.ops.add("wait", s.ID())
	return s.emuStream.Wait(e)
}

func (s opsStream) CopyH2D(dst uint64, src []byte) error {
	s.ops.add("h2d", s.ID())
	return s.emuStream.CopyH2D(dst, src)
}

func (s opsStream) Pack(blocks []device.PackBlock) error {
	s.ops.add("pack", s.ID())
	return s.emuStream.Pack(blocks)
}

func (s opsStream) CopyD2H(dst []byte, src uint64) error {
	s.ops.add("d2h", s.ID())
	return s.emuStream.CopyD2H(dst, src)
}

// TestDeviceStepCopyStreams: a one-group device step copies its feeds in
// on the compute stream (the H2D stream would wait for compute and
// compute for it: the same order for two events and two waits), its
// fetches out there too as they are small (three a copy each, five
// packed into one copy: fetch_pack.go), and records one event, the final
// one, with no stream wait at all; fetches of more than fetchOnCompute bytes go out on the
// D2H stream after one wait for compute, the final event there. Values
// are right either way.
func TestDeviceStepCopyStreams(t *testing.T) {
	ops := &streamOps{n: map[streamOp]int{}}
	set := emuSetOn(t, opsDevice{emuHost(20 * time.Microsecond), ops}, 1)
	g := set.Groups()[0]
	c, d := g.Compute.ID(), g.D2H.ID()
	if c == d || g.H2D.ID() == c {
		t.Fatalf("streams compute %d, h2d %d, d2h %d: want separate ones", c, g.H2D.ID(), d)
	}
	sr := &Runtime{Groups: set.Groups(), Holder: &set.Holder}

	r := rand.New(rand.NewSource(3))
	rp := emuPlan(t, r, 3, 20) // three fetches of nodes and one of a feed
	// The same nodes and five fetches of nodes: packMin or more.
	more := &randomPlan{feeds: rp.feeds, nodes: rp.nodes,
		fetches: append(slices.Clone(rp.fetches), out(rp.nodes[10]), out(rp.nodes[12]))}
	var fo []graph.Output
	for _, f := range rp.feeds {
		fo = append(fo, out(f))
	}
	var err error
	if more.plan, err = build(nil, fo, more.fetches, nil, Placement{GPUs: 1}); err != nil {
		t.Fatal(err)
	}
	vals := []float32{1, 2, 3}
	ops.take() // constants and the like
	for it := 0; it < 6; it++ {
		p, want := rp, map[streamOp]int{{"h2d", c}: 1, {"d2h", c}: 3, {"record", c}: 1}
		if it%2 == 1 {
			p, want = more, map[streamOp]int{{"h2d", c}: 1, {"pack", c}: 1, {"d2h", c}: 1, {"record", c}: 1}
		}
		got, _, err := p.plan.Run(context.Background(), sr, scalars(vals), Options{})
		if err == nil {
			err = check(got, p.want(vals))
		}
		if err != nil {
			t.Fatal(err)
		}
		if got := ops.take(); !maps.Equal(got, want) {
			t.Errorf("small fetches, step %d (%d fetches): stream operations %v, want %v (compute %d, D2H %d)", it, len(p.fetches), got, want, c, d)
		}
	}

	// ExecTestGWide's output is its first input's shape: 20000 floats,
	// more than fetchOnCompute.
	x := node("x", "ExecTestGWide", 0)
	y := node("y", "ExecTestGWide", 1, x)
	p, err := build(nil, []graph.Output{{Node: x}}, []graph.Output{{Node: y}}, nil, Placement{GPUs: 1})
	if err != nil {
		t.Fatal(err)
	}
	big := tensor.New(tensor.Float, tensor.Shape{fetchOnCompute/4 + 1})
	big.F32()[0] = 2
	for it := 0; it < 2; it++ {
		got, _, err := p.Run(context.Background(), sr, []*tensor.Tensor{big}, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if v := got[0].F32()[0]; v != 3 {
			t.Fatalf("big fetch: y[0] = %v, want 3", v)
		}
		want := map[streamOp]int{{"h2d", c}: 1, {"record", c}: 1, {"wait", d}: 1, {"d2h", d}: 1, {"record", d}: 1}
		if got := ops.take(); !maps.Equal(got, want) {
			t.Errorf("big fetch, step %d: stream operations %v, want %v (compute %d, D2H %d)", it, got, want, c, d)
		}
	}
	set.Holder.Drain()
}
