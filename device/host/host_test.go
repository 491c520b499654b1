package host

import (
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"mstream/device"
)

// TestCrossStreamWait checks that a Wait orders work across streams even
// when the producer stream is delayed at random.
func TestCrossStreamWait(t *testing.T) {
	d := New()
	d.Jitter = 200 * time.Microsecond
	for iter := 0; iter < 50; iter++ {
		a, _ := d.NewStream(0)
		b, _ := d.NewStream(0)
		e, _ := d.NewEvent()
		var x atomic.Int64
		device.Enqueue(a, func() { x.Store(41) })
		device.Enqueue(a, func() { x.Add(1) })
		a.Record(e)
		b.Wait(e)
		var seen int64
		device.Enqueue(b, func() { seen = x.Load() })
		b.Synchronize()
		if seen != 42 {
			t.Fatalf("iteration %d: consumer saw %d before the producer finished", iter, seen)
		}
		a.Close()
		b.Close()
	}
}

func TestEventSemantics(t *testing.T) {
	d := New()
	s, _ := d.NewStream(0)
	defer s.Close()
	e, _ := d.NewEvent()
	if !e.Query() {
		t.Fatal("a never-recorded event must read as complete")
	}
	gate := make(chan struct{})
	device.Enqueue(s, func() { <-gate })
	s.Record(e)
	if e.Query() {
		t.Fatal("event completed before the stream reached it")
	}
	other, _ := d.NewStream(0)
	defer other.Close()
	other.Wait(e) // captured now: waits for this record only
	s.Record(e)   // re-armed for later waiters
	done := make(chan struct{})
	device.Enqueue(other, func() { close(done) })
	select {
	case <-done:
		t.Fatal("wait did not hold the waiting stream")
	case <-time.After(20 * time.Millisecond):
	}
	close(gate)
	<-done
	e.Synchronize()
	if !e.Query() {
		t.Fatal("event not complete after Synchronize")
	}
}

func TestOrder(t *testing.T) {
	s, _ := New().NewStream(0)
	defer s.Close()
	var got []int
	for i := 0; i < 1000; i++ {
		i := i
		device.Enqueue(s, func() { got = append(got, i) })
	}
	s.Synchronize()
	for i, v := range got {
		if v != i {
			t.Fatalf("item %d ran as %d", i, v)
		}
	}
}

func TestCopiesAndMemory(t *testing.T) {
	d := New()
	d.Jitter = 100 * time.Microsecond
	m := d.Memory()
	base, err := m.Alloc(4096)
	if err != nil || base%256 != 0 {
		t.Fatalf("alloc: %#x %v", base, err)
	}
	h2d, _ := d.NewStream(0)
	d2h, _ := d.NewStream(0)
	defer h2d.Close()
	defer d2h.Close()
	src := []byte("stream copies are ordered by events")
	h2d.CopyH2D(base+256, src)
	h2d.CopyD2D(base+1024, base+256, uint64(len(src)))
	e, _ := d.NewEvent()
	h2d.Record(e)
	d2h.Wait(e)
	dst := make([]byte, len(src))
	d2h.CopyD2H(dst, base+1024)
	d2h.Synchronize()
	if string(dst) != string(src) {
		t.Fatalf("round trip gave %q", dst)
	}
	if d.DeviceMemory().Bytes(base+4000, 200) != nil {
		t.Fatal("a range past the region must not be addressable")
	}
	m.Free(base)
	if d.DeviceMemory().RegionBytes() != 0 || d.DeviceMemory().Bytes(base, 1) != nil {
		t.Fatal("freed region still addressable")
	}
	if _, err := d.NewStream(1); err == nil {
		t.Fatal("context 1 of a one-context device accepted")
	}
}

// TestInline: an inline Wait stalls the running item (and so the stream);
// an inline Record completes at once.
func TestInline(t *testing.T) {
	d := New()
	a, _ := d.NewStream(0)
	b, _ := d.NewStream(0)
	defer a.Close()
	defer b.Close()
	e, _ := d.NewEvent()
	gate := make(chan struct{})
	device.Enqueue(a, func() { <-gate })
	a.Record(e)
	var order []string
	var mu sync.Mutex
	note := func(s string) { mu.Lock(); order = append(order, s); mu.Unlock() }
	rec, _ := d.NewEvent()
	device.Enqueue(b, func() {
		v := b.(*Stream).Inline()
		v.Wait(e)
		note("b waited")
		v.Record(rec)
		if !rec.Query() {
			t.Error("inline record did not complete at once")
		}
	})
	time.Sleep(10 * time.Millisecond)
	note("gate")
	close(gate)
	b.Synchronize()
	if len(order) != 2 || order[0] != "gate" {
		t.Fatalf("order %v: the inline wait did not stall the item", order)
	}
}

// TestQueueBusyKeepsOrder: a stream whose queue never drains (each of
// the first items queues one more from inside, so a thousand are always
// waiting) runs every item in the order queued, through the compaction
// of the queue's taken front.
func TestQueueBusyKeepsOrder(t *testing.T) {
	s, _ := New().NewStream(0)
	defer s.Close()
	const first, total = 1000, 5000
	var got []int // appended by the stream's items only
	var ran atomic.Int32
	var item func(i int) func()
	item = func(i int) func() {
		return func() {
			got = append(got, i)
			ran.Add(1)
			if j := i + first; j < total {
				device.Enqueue(s, item(j))
			}
		}
	}
	gate := make(chan struct{})
	device.Enqueue(s, func() { <-gate })
	for i := 0; i < first; i++ {
		device.Enqueue(s, item(i))
	}
	close(gate)
	for ran.Load() < total {
		s.Synchronize()
	}
	s.Synchronize() // the last item has returned
	for i, v := range got {
		if v != i {
			t.Fatalf("item %d ran as %d", i, v)
		}
	}
}

// TestQueueReusesArray: once a stream's queue has drained, queueing as
// many items again reuses its array rather than allocating (taking the
// front by slicing it off made appends reallocate, about 45 times a
// step in a 200-node stream step).
func TestQueueReusesArray(t *testing.T) {
	s, _ := New().NewStream(0)
	defer s.Close()
	var wg sync.WaitGroup
	gate := make(chan struct{}, 1)
	block := func() { <-gate; wg.Done() }
	nop := func() { wg.Done() }
	fill := func() {
		wg.Add(101)
		device.Enqueue(s, block) // the 100 after it queue up behind it
		for i := 0; i < 100; i++ {
			device.Enqueue(s, nop)
		}
		gate <- struct{}{}
		wg.Wait()
	}
	fill()
	if n := testing.AllocsPerRun(20, fill); n >= 1 {
		t.Errorf("queueing 101 items on a drained stream: %v allocations, want none", n)
	}
}

// TestQueueDropsLargeArray: a drained stream keeps an array of a step's
// size for reuse, but not the array of a burst larger than keepQueue:
// before, it kept its largest array for the stream's life.
func TestQueueDropsLargeArray(t *testing.T) {
	ds, _ := New().NewStream(0)
	defer ds.Close()
	s := ds.(*Stream)
	for _, tc := range []struct {
		items int
		kept  bool
	}{{100, true}, {1000, true}, {4 * keepQueue, false}} {
		gate := make(chan struct{})
		device.Enqueue(s, func() { <-gate }) // the rest queue up behind it
		for i := 1; i < tc.items; i++ {
			device.Enqueue(s, func() {})
		}
		close(gate)
		s.Synchronize()
		s.mu.Lock()
		c := s.queue.Cap()
		s.mu.Unlock()
		if kept := c >= tc.items; kept != tc.kept || c > keepQueue {
			t.Errorf("after %d items drained the stream keeps an array of %d items; want it kept: %v, and never above %d", tc.items, c, tc.kept, keepQueue)
		}
	}
}

// TestQueueConcurrentFIFO: producers enqueue from outside while the
// stream runs (the queue drains, refills and compacts at random points,
// under jitter): each producer's items run in the order queued, none
// lost.
func TestQueueConcurrentFIFO(t *testing.T) {
	d := New()
	d.Jitter = 20 * time.Microsecond
	s, _ := d.NewStream(0)
	defer s.Close()
	const producers, each = 4, 3000
	last := make([]int, producers) // written by the stream's items only
	for i := range last {
		last[i] = -1
	}
	var bad atomic.Int32
	var wg sync.WaitGroup
	for p := 0; p < producers; p++ {
		wg.Add(1)
		go func(p int) {
			defer wg.Done()
			for i := 0; i < each; i++ {
				device.Enqueue(s, func() {
					if last[p] != i-1 {
						bad.Add(1)
					}
					last[p] = i
				})
				if i%97 == 0 {
					time.Sleep(time.Duration(i%5) * 10 * time.Microsecond)
				}
			}
		}(p)
	}
	wg.Wait()
	s.Synchronize()
	if bad.Load() != 0 {
		t.Fatalf("%d items ran out of order", bad.Load())
	}
	for p, l := range last {
		if l != each-1 {
			t.Fatalf("producer %d: last item run %d, want %d", p, l, each-1)
		}
	}
}

// TestQueueReleasesTaken: an item that has run is not kept alive by the
// queue's array while the queue stays busy (its taken front not yet
// dropped).
func TestQueueReleasesTaken(t *testing.T) {
	s, _ := New().NewStream(0)
	defer s.Close()
	var freed atomic.Bool
	big := new([1 << 20]byte)
	runtime.SetFinalizer(big, func(*[1 << 20]byte) { freed.Store(true) })
	ran := make(chan struct{})
	gate := make(chan struct{})
	func(b *[1 << 20]byte) {
		device.Enqueue(s, func() { b[0]++; close(ran) })
	}(big)
	big = nil
	device.Enqueue(s, func() { <-gate }) // keeps the queue from draining
	for i := 0; i < 10; i++ {
		device.Enqueue(s, func() {})
	}
	<-ran
	for i := 0; i < 20 && !freed.Load(); i++ {
		runtime.GC()
		time.Sleep(time.Millisecond)
	}
	close(gate)
	if !freed.Load() {
		t.Fatal("a run item's closure is still reachable from the busy queue")
	}
}
