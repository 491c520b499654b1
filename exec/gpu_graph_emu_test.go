package exec

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"sync"
	"testing"
	"time"

	"mstream/device"
	"mstream/device/host"
	"mstream/groups"
	"mstream/kernels"
	"mstream/status"
	"mstream/tensor"
)

// CUDA graph capture and replay on the CPU: emuCapDevice's streams are
// emulated device streams (emuStream) that can also capture, as a CUDA
// stream does: between BeginCapture and EndCapture every item enqueued
// (a kernel's work, a copy, an event record or wait) is recorded instead
// of run, a synchronisation is refused, and a launch of the instantiated
// graph enqueues the recorded items, in order, on the launch stream. The
// items address the same memory on every launch, as a graph's nodes do,
// so a replay that reads a buffer the cache did not keep, or a feed that
// was not copied in, gives wrong sums.

type emuCapDevice struct{ *host.Device }

func (d emuCapDevice) NewStream(ctx int) (device.Stream, error) {
	s, err := d.Device.NewStream(ctx)
	if err != nil {
		return nil, err
	}
	return &emuCapStream{emuStream: emuStream{s.(*host.Stream)}, dev: d}, nil
}

type emuCapStream struct {
	emuStream
	dev emuCapDevice

	mu        sync.Mutex
	capturing bool
	items     []func(device.Stream) error
}

var _ device.Capturer = (*emuCapStream)(nil)

// capture records item when the stream captures; false when it runs now.
func (s *emuCapStream) capture(item func(device.Stream) error) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.capturing {
		s.items = append(s.items, item)
	}
	return s.capturing
}

func (s *emuCapStream) Enqueue(fn func()) error {
	if s.capture(func(t device.Stream) error { return device.Enqueue(t, fn) }) {
		return nil
	}
	return s.emuStream.Enqueue(fn)
}

func (s *emuCapStream) Record(e device.Event) error {
	if s.capture(func(t device.Stream) error { return t.Record(e) }) {
		return nil
	}
	return s.emuStream.Record(e)
}

func (s *emuCapStream) Wait(e device.Event) error {
	if s.capture(func(t device.Stream) error { return t.Wait(e) }) {
		return nil
	}
	return s.emuStream.Wait(e)
}

func (s *emuCapStream) CopyH2D(dst uint64, src []byte) error {
	if s.capture(func(t device.Stream) error { return t.CopyH2D(dst, src) }) {
		return nil
	}
	return s.emuStream.CopyH2D(dst, src)
}

func (s *emuCapStream) CopyD2H(dst []byte, src uint64) error {
	if s.capture(func(t device.Stream) error { return t.CopyD2H(dst, src) }) {
		return nil
	}
	return s.emuStream.CopyD2H(dst, src)
}

func (s *emuCapStream) CopyD2D(dst, src, size uint64) error {
	if s.capture(func(t device.Stream) error { return t.CopyD2D(dst, src, size) }) {
		return nil
	}
	return s.emuStream.CopyD2D(dst, src, size)
}

func (s *emuCapStream) Synchronize() error {
	s.mu.Lock()
	c := s.capturing
	s.mu.Unlock()
	if c {
		return fmt.Errorf("emulated stream %d: synchronise while capturing: %w", s.ID(), device.ErrNotCapturable)
	}
	return s.emuStream.Synchronize()
}

// Delay holds the stream up outside a capture; a capture records none
// (the step adds no jitter while it captures).
func (s *emuCapStream) Delay(d time.Duration) error {
	if s.capture(func(device.Stream) error { return nil }) {
		return nil
	}
	return s.emuStream.Delay(d)
}

func (s *emuCapStream) NewCaptureStream() (device.Stream, error) { return s.dev.NewStream(s.Context()) }

func (s *emuCapStream) BeginCapture() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.capturing {
		return status.Errorf(status.Internal, "emulated stream %d is already capturing", s.ID())
	}
	s.capturing, s.items = true, nil
	return nil
}

func (s *emuCapStream) EndCapture() (device.Graph, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	g := &emuGraph{items: s.items}
	s.capturing, s.items = false, nil
	return g, nil
}

type emuGraph struct{ items []func(device.Stream) error }

func (g *emuGraph) Instantiate() (device.GraphExec, error) { return g, nil }
func (g *emuGraph) Destroy() error                         { return nil }

// Launch enqueues the recorded items on s; the emulated streams are
// wrappers, so the items go to the host stream underneath.
func (g *emuGraph) Launch(s device.Stream) error {
	if c, ok := s.(*emuCapStream); ok {
		s = c.emuStream
	}
	for _, it := range g.items {
		if err := it(s); err != nil {
			return err
		}
	}
	return nil
}

func emuCapSet(t testing.TB, jitter time.Duration) *groups.Set {
	return emuSetOn(t, emuCapDevice{emuHost(jitter)}, 1)
}

// emuSetOn is emuSet's one-device set of n groups over any wrapper of
// the host device.
func emuSetOn(t testing.TB, dev device.Device, n int) *groups.Set {
	return emuGroups(t, dev, groups.Config{Counts: []int{n}})
}

// TestGraphReplayEmulated runs a random device plan through a GraphCache
// on the emulated capturing device: three clients at once, feeds of
// graphKeysPerGroup+2 shapes in turn (so keys are captured, replayed and
// evicted), under jitter. Every fetched value must equal the plan's
// arithmetic, graphs must have been captured and replayed, what they hold
// must be what the allocators count beyond the idle state, and after the
// cache closes every buffer must come back.
func TestGraphReplayEmulated(t *testing.T) {
	r := rand.New(rand.NewSource(rand.Int63()))
	rp, set, gc, sr := emuGraphRun(t, r, 50*time.Microsecond)
	if sr.graphs() == nil {
		t.Fatal("the emulated group cannot replay graphs")
	}
	shapes := []tensor.Shape{nil, {1}, {1, 1}, {1, 1, 1}, {1, 1, 1, 1}, {1, 1, 1, 1, 1}}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for w := 0; w < 3; w++ {
		wg.Add(1)
		go func(seed int64) {
			defer wg.Done()
			rr := rand.New(rand.NewSource(seed))
			for it := 0; it < 60; it++ {
				sh := shapes[(it/6)%len(shapes)]
				vals := []float32{float32(rr.Intn(100)), float32(rr.Intn(100)), float32(rr.Intn(100))}
				feeds := make([]*tensor.Tensor, len(vals))
				for k, v := range vals {
					feeds[k] = tensor.FromF32(sh.Clone(), []float32{v})
				}
				got, _, err := rp.plan.Run(context.Background(), sr, feeds, Options{})
				if err == nil {
					err = check(got, rp.want(vals))
				}
				if err != nil {
					errs <- fmt.Errorf("step %d (feed shape %v): %w", it, sh, err)
					return
				}
			}
		}(r.Int63())
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	st := gc.Stats()
	if st.Captures == 0 || st.Replays == 0 || st.Failures != 0 || st.Ineligible != 0 {
		t.Errorf("graph stats %+v: want captures and replays, no failure", st)
	}
	g := set.Groups()[0]
	set.Holder.Drain()
	for _, s := range g.Streams() {
		s.Synchronize()
	}
	if st.Live == 0 || st.DeviceBytes == 0 || st.PinnedBytes == 0 {
		t.Errorf("graph stats %+v: want live instances holding device and pinned memory", st)
	}
	if held, inUse := gc.Held(g.Alloc), g.Alloc.Stats().BytesInUse; held != st.DeviceBytes || inUse != held {
		t.Errorf("device: graphs hold %d (stats say %d), allocator has %d in use", held, st.DeviceBytes, inUse)
	}
	if held, inUse := gc.Held(g.HostAlloc), g.HostAlloc.Stats().BytesInUse; held != st.PinnedBytes || inUse != held {
		t.Errorf("pinned: graphs hold %d (stats say %d), allocator has %d in use", held, st.PinnedBytes, inUse)
	}
	if err := gc.Close(); err != nil {
		t.Fatal(err)
	}
	checkNothingInUse(t, set, "after the cache closed")
}

// emuGraphRun is a random device plan of 3 feeds and 40 nodes, a group of
// the emulated capturing device (streams delayed up to jitter) and a
// GraphCache, with the runtime that runs the plan through them.
func emuGraphRun(t *testing.T, r *rand.Rand, jitter time.Duration) (*randomPlan, *groups.Set, *GraphCache, *Runtime) {
	rp := emuPlan(t, r, 3, 40)
	set := emuCapSet(t, jitter)
	gc := NewGraphCache(t.Logf)
	return rp, set, gc, &Runtime{Streams: true, Groups: set.Groups(), ReduceWaits: true, Holder: &set.Holder, Intra: kernels.Serial{}, Graphs: gc}
}

// checkNothingInUse checks, once the holds are drained and the streams
// idle, that the group's device and pinned allocators have no byte in use.
func checkNothingInUse(t *testing.T, set *groups.Set, when string) {
	t.Helper()
	g := set.Groups()[0]
	set.Holder.Drain()
	for _, s := range g.Streams() {
		s.Synchronize()
	}
	if n := g.Alloc.Stats().BytesInUse; n != 0 {
		t.Errorf("%d device bytes in use %s", n, when)
	}
	if n := g.HostAlloc.Stats().BytesInUse; n != 0 {
		t.Errorf("%d pinned bytes in use %s", n, when)
	}
}

// TestGraphCacheDropEmulated: a plan its session drops (the cache's
// eviction: Close, then GraphCache.Drop) gives back its graphs and every
// buffer they hold, while three clients still run it: an idle instance at
// Drop, one being replayed or captured when its step ends, and a step of
// the closed plan that looks for a graph afterwards captures none. Before
// Drop, a dropped plan's graphs stayed until the session closed.
func TestGraphCacheDropEmulated(t *testing.T) {
	r := rand.New(rand.NewSource(rand.Int63()))
	rp, set, gc, sr := emuGraphRun(t, r, 20*time.Microsecond)
	var wg sync.WaitGroup
	errs := make(chan error, 3)
	steps := make(chan struct{}, 1000)
	for w := 0; w < 3; w++ {
		wg.Add(1)
		go func(seed int64) {
			defer wg.Done()
			rr := rand.New(rand.NewSource(seed))
			for {
				vals := []float32{float32(rr.Intn(100)), float32(rr.Intn(100)), float32(rr.Intn(100))}
				feeds := make([]*tensor.Tensor, len(vals))
				for k, v := range vals {
					feeds[k] = tensor.FromF32(tensor.Shape{1}, []float32{v})
				}
				got, _, err := rp.plan.Run(context.Background(), sr, feeds, Options{})
				if errors.Is(err, ErrClosed) {
					return
				}
				if err == nil {
					err = check(got, rp.want(vals))
				}
				if err != nil {
					errs <- err
					return
				}
				steps <- struct{}{}
			}
		}(r.Int63())
	}
	for n := 0; n < 30; n++ { // replays under way before the drop
		<-steps
	}
	if st := gc.Stats(); st.Live == 0 || st.Replays == 0 {
		t.Errorf("graph stats %+v before the drop: want live instances and replays", st)
	}
	rp.plan.Close()
	gc.Drop(rp.plan)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if st := gc.Stats(); st.Live != 0 || st.DeviceBytes != 0 || st.PinnedBytes != 0 {
		t.Errorf("graph stats %+v after the drop: want nothing held", st)
	}
	checkNothingInUse(t, set, "after the plan was dropped")
	if err := gc.Close(); err != nil {
		t.Fatal(err)
	}
}
