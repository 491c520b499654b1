package exec

import (
	"math/rand"
	"testing"

	"mstream/bfc"
	"mstream/device"
	"mstream/groups"
	"mstream/kernels"
	"mstream/tensor"
)

// TestTrackerLookups: the tracker finds a buffer by any tensor that views
// it only while the buffer is live: not once it is freed (its record
// then reused for other allocations), nor while a small one waits in the
// kept list, and again once that one is handed out. Lookups go through
// the cache of buffers found (seen) as well as the map, so a cache entry
// outliving its buffer fails here.
func TestTrackerLookups(t *testing.T) {
	g := testSet(t, 1, false, 0, false).Pick(0)
	view := g.Device.Memory().(device.HostAddressable)
	tr := newTracker(nil, nil)
	tr.recycle = true
	newBuf := func(size uint64, small bool) *tensor.Tensor {
		addr, err := g.Alloc.Allocate(size, nil)
		if err != nil {
			t.Fatal(err)
		}
		b := tr.newBuffer(addr, g.Alloc, view.Bytes(addr, size), small)
		t := b.t.Set(tensor.Uint8, tensor.Shape{int64(size)}, b.chunk)
		b.refs = 1
		return t
	}
	var live []*tensor.Tensor
	for round := 0; round < 500; round++ {
		small := rand.Intn(3) == 0
		size := uint64(bfc.MinAlloc)
		if !small {
			size *= uint64(2 + rand.Intn(6))
		}
		tt := newBuf(size, small)
		copied := *tt // another tensor viewing the same buffer
		if !tr.has(tt) || !tr.has(&copied) {
			t.Fatalf("round %d: a live buffer is not found", round)
		}
		live = append(live, tt)
		if len(live) < 4 && rand.Intn(4) != 0 {
			continue
		}
		k := rand.Intn(len(live))
		gone := *live[k]
		live[k] = live[len(live)-1]
		live = live[:len(live)-1]
		tr.unref(&gone, -1)
		if tr.has(&gone) {
			t.Fatalf("round %d: a buffer given back is still found", round)
		}
		if b := tr.takeSmall(g.Alloc); b != nil {
			b.refs = 1
			if !tr.has(b.t.Tensor()) {
				t.Fatalf("round %d: a kept small buffer handed out again is not found", round)
			}
			live = append(live, b.t.Tensor())
		}
		for _, o := range live {
			if !tr.has(o) {
				t.Fatalf("round %d: a live buffer is lost", round)
			}
		}
	}
	tr.drain()
	if n := tr.live(); n != 0 {
		t.Errorf("%d buffers held after drain", n)
	}
	if b := g.Alloc.Stats().BytesInUse; b != 0 {
		t.Errorf("%d bytes still allocated after drain", b)
	}
}

// TestStepStateShards checks that step states of a plan bound to one host
// group allocate from shards of their own in its allocator, kept from
// step to step, so that concurrent Runs, each on its own state, meet on
// no allocator cache (bfc.Shard).
func TestStepStateShards(t *testing.T) {
	set := testSet(t, 1, false, 0, false)
	g := set.Pick(0)
	rp := makeRandomPlan(t, rand.New(rand.NewSource(1)), 2, 8)
	rt := &Runtime{Groups: []*groups.Group{g}, Inter: g.Launch, Intra: kernels.Serial{}}
	bind := func(s *step) bfc.Shard {
		t.Helper()
		s.rt = rt
		if err := s.bind(g); err != nil {
			t.Fatal(err)
		}
		sh := s.env.shard
		s.reset()
		return sh
	}
	s1, s2 := rp.plan.newPoolStep(), rp.plan.newPoolStep()
	a, b := bind(s1), bind(s2)
	if a == b {
		t.Fatalf("two step states share shard %d", a)
	}
	if again := bind(s1); again != a {
		t.Fatalf("a step state moved from shard %d to %d", a, again)
	}
}
