package bfc

import (
	"fmt"
	"math/rand"
	"sync/atomic"
	"testing"

	"mstream/device"
	"mstream/device/host"
	"mstream/status"
)

// countingStream counts the events recorded on a host stream.
type countingStream struct {
	device.Stream
	records *atomic.Int64
}

func (s countingStream) Record(e device.Event) error {
	s.records.Add(1)
	return s.Stream.Record(e)
}

// TestFreeAllBatches frees random batches (chunks of several streams, a
// dead address among them) from a stream-aware allocator: each batch
// records exactly one event per stream it touches, the dead address is
// the error while every live one is freed, the invariants hold after
// each batch, and reuse across streams still waits (the ordering test of
// single frees, TestStreamAwareOrdering, covers what the events guard).
func TestFreeAllBatches(t *testing.T) {
	d, raw := streams(t, 3)
	var records atomic.Int64
	ss := make([]device.Stream, len(raw))
	for i, s := range raw {
		ss[i] = countingStream{s, &records}
	}
	a, _ := newAlloc(t, Options{Limit: 1 << 20, StreamAware: true, NewEvent: d.NewEvent})
	rng := rand.New(rand.NewSource(rand.Int63()))
	type live struct {
		addr uint64
		s    int
	}
	var lives []live
	for round := 0; round < 300; round++ {
		for k := rng.Intn(12); k > 0; k-- {
			si := rng.Intn(len(ss))
			p, err := a.Allocate(uint64(1+rng.Intn(8<<10)), ss[si])
			if err != nil {
				t.Fatal(err)
			}
			lives = append(lives, live{p, si})
		}
		if len(lives) == 0 {
			continue
		}
		rng.Shuffle(len(lives), func(i, j int) { lives[i], lives[j] = lives[j], lives[i] })
		n := 1 + rng.Intn(len(lives))
		batch := make([]uint64, 0, n+1)
		touched := map[int]bool{}
		for _, l := range lives[:n] {
			batch = append(batch, l.addr)
			touched[l.s] = true
		}
		dead := rng.Intn(3) == 0
		if dead {
			batch = append(batch, batch[0]+1) // inside a live chunk: not an allocation
		}
		before, inUse := records.Load(), a.Stats().LiveAllocations
		err := a.FreeAll(batch)
		if dead != (err != nil) {
			t.Fatalf("round %d: dead address %v, error %v", round, dead, err)
		}
		if got := records.Load() - before; got != int64(len(touched)) {
			t.Fatalf("round %d: %d events recorded for a batch over %d streams", round, got, len(touched))
		}
		if got := a.Stats().LiveAllocations; got != inUse-n {
			t.Fatalf("round %d: %d live allocations after freeing %d of %d", round, got, n, inUse)
		}
		lives = lives[n:]
		mustCheck(t, a, "after a batch")
	}
	last, err := a.Allocate(1000, ss[0])
	if err != nil {
		t.Fatal(err)
	}
	lives = append(lives, live{last, 0})
	for _, l := range lives {
		if err := a.Free(l.addr); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.FreeAll([]uint64{last}); err == nil {
		t.Fatal("a second free of a freed address succeeded")
	}
	mustCheck(t, a, "end")
	if a.Stats().BytesInUse != 0 {
		t.Fatalf("%d bytes in use at the end", a.Stats().BytesInUse)
	}
	for _, s := range raw {
		s.Synchronize()
	}
}

// BenchmarkStreamAwareFree allocates and frees a step's 32 buffers on a
// host stream: one by one, as one FreeAll batch, and one by one with
// Options.StreamCache (the stream groups' setting), in which the stream's
// next step takes its own cached frees back without the mutex or an
// event. On a host stream an event record is a queue push; on a GPU it is
// a cuEventRecord, so the batched and cached forms save more there.
func BenchmarkStreamAwareFree(b *testing.B) {
	for _, tc := range []struct {
		name  string
		all   int
		cache bool
	}{{"one_by_one", 0, false}, {"free_all", 1, false}, {"stream_cache", 0, true}} {
		b.Run(tc.name, func(b *testing.B) {
			d := host.New()
			s, _ := d.NewStream(0)
			defer s.Close()
			a, err := New(&nullBackend{}, Options{Limit: 1 << 30, StreamAware: true, NewEvent: d.NewEvent, AllowGrowth: true, StreamCache: tc.cache})
			if err != nil {
				b.Fatal(err)
			}
			addrs := make([]uint64, 32)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				for k := range addrs {
					if addrs[k], err = a.Allocate(uint64(4096+k*256), s); err != nil {
						b.Fatal(err)
					}
				}
				if tc.all == 1 {
					a.FreeAll(addrs)
				} else {
					for _, p := range addrs {
						a.Free(p)
					}
				}
				if i%64 == 0 {
					s.Synchronize()
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/32, "ns/buffer")
		})
	}
}

// TestStreamCacheEvents: a stream's steps of 32 buffers of random sizes
// record one event per free without stream caches, and with them at most
// one per step for drains (a step's first miss of its cache drains the
// previous step's frees under one event) plus a mark per markEvery frees;
// the stream takes its own cached frees back first, and the invariants
// hold.
func TestStreamCacheEvents(t *testing.T) {
	for _, cache := range []bool{false, true} {
		d, raw := streams(t, 1)
		var records atomic.Int64
		s := countingStream{raw[0], &records}
		a, _ := newAlloc(t, Options{Limit: 8 << 20, AllowGrowth: true, StreamAware: true, NewEvent: d.NewEvent, StreamCache: cache})
		addrs := make([]uint64, 32)
		rng := rand.New(rand.NewSource(rand.Int63()))
		for step := 0; step < 20; step++ {
			for k := range addrs {
				var err error
				if addrs[k], err = a.Allocate(uint64(256+rng.Intn(8<<10)), s); err != nil {
					t.Fatal(err)
				}
			}
			for _, p := range addrs {
				if err := a.Free(p); err != nil {
					t.Fatal(err)
				}
			}
			mustCheck(t, a, fmt.Sprintf("cache %v step %d", cache, step))
			if st := a.Stats(); st.BytesInUse != 0 || st.LiveAllocations != 0 {
				t.Fatalf("cache %v step %d: %d bytes in %d allocations after freeing all", cache, step, st.BytesInUse, st.LiveAllocations)
			}
		}
		want := int64(20 * 32)
		if cache {
			want = 20 + 20*32/markEvery
		}
		if got := records.Load(); got > want {
			t.Errorf("StreamCache %v: %d events recorded for 20 steps of 32 frees, want at most %d", cache, got, want)
		}
		if st := a.Stats(); st.CrossStreamWaits != 0 {
			t.Errorf("one stream waited %d times on itself", st.CrossStreamWaits)
		}
		t.Logf("StreamCache %v: %d events for 640 frees", cache, records.Load())
		raw[0].Synchronize()
	}
}

// TestLiveIndexLargeRegion: the live index over a region of a whole
// 64 GiB device (no growth: TF's default), addresses only. Chunks at
// both ends and in between are found (ChunkSize, RequestedSize), a Free
// inside a chunk, past the region, before it, or a second Free fails
// with INVALID_ARGUMENT and changes nothing, and the index made only the
// parts where chunks start.
func TestLiveIndexLargeRegion(t *testing.T) {
	const limit = 64 << 30
	be := &nullBackend{next: 1 << 40}
	a, err := New(be, Options{Name: "big", Limit: limit})
	if err != nil {
		t.Fatal(err)
	}
	sizes := []uint64{1, 300, 4 << 20, 1 << 30, 7<<30 + 5, 256}
	var addrs []uint64
	for _, n := range sizes {
		p, err := a.Allocate(n, nil)
		if err != nil {
			t.Fatal(err)
		}
		addrs = append(addrs, p)
	}
	// The rest of the device in one chunk: its end is the region's end.
	st := a.Stats()
	last, err := a.Allocate(limit-st.BytesInUse, nil)
	if err != nil {
		t.Fatal(err)
	}
	addrs, sizes = append(addrs, last), append(sizes, limit-st.BytesInUse)
	mustCheck(t, a, "allocated")
	for i, p := range addrs {
		if got := a.RequestedSize(p); got != sizes[i] {
			t.Errorf("RequestedSize(%#x) = %d, want %d", p, got, sizes[i])
		}
		if got := a.ChunkSize(p); got != roundUp(sizes[i]) {
			t.Errorf("ChunkSize(%#x) = %d, want %d", p, got, roundUp(sizes[i]))
		}
	}
	base := a.regions[0].base
	for _, bad := range []uint64{addrs[3] + MinAlloc, addrs[3] + 1, base - MinAlloc, base + limit, last + 1<<20, 0} {
		if err := a.Free(bad); status.CodeOf(err) != status.InvalidArgument {
			t.Errorf("Free(%#x) inside or outside the chunks: %v", bad, err)
		}
	}
	mustCheck(t, a, "bad frees")
	for _, k := range []int{3, 0, 6, 5, 1, 4, 2} {
		if err := a.Free(addrs[k]); err != nil {
			t.Fatal(err)
		}
		if err := a.Free(addrs[k]); status.CodeOf(err) != status.InvalidArgument {
			t.Errorf("second Free(%#x): %v", addrs[k], err)
		}
		mustCheck(t, a, fmt.Sprint("free ", k))
	}
	if st := a.Stats(); st.BytesInUse != 0 || st.LiveAllocations != 0 || st.Allocations != int64(len(addrs)) {
		t.Fatalf("%+v", st)
	}
	mids, leaves := 0, 0
	for i := range a.regions[0].mids {
		if m := a.regions[0].mids[i].Load(); m != nil {
			mids++
			for j := range m {
				if m[j].Load() != nil {
					leaves++
				}
			}
		}
	}
	// Seven chunk starts: at most seven mids and leaves of the 8192 mids a
	// 64 GiB region has room for.
	if len(a.regions[0].mids) != 8192 || mids > len(addrs) || leaves > len(addrs) {
		t.Fatalf("%d mids (%d made), %d leaves for %d chunks", len(a.regions[0].mids), mids, leaves, len(addrs))
	}
}
