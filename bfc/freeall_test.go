package bfc

import (
	"fmt"
	"math/rand"
	"sync/atomic"
	"testing"

	"mstream/device"
	"mstream/device/host"
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
// Options.BatchFrees = 8 (the stream groups' setting), in which the
// stream's next step takes its own listed frees back. On a host stream an
// event record is a queue push; on a GPU it is a cuEventRecord, so the
// batched forms save more there.
func BenchmarkStreamAwareFree(b *testing.B) {
	for _, tc := range []struct {
		name       string
		all, batch int
	}{{"one_by_one", 0, 0}, {"free_all", 1, 0}, {"listed_8", 0, 8}} {
		b.Run(tc.name, func(b *testing.B) {
			d := host.New()
			s, _ := d.NewStream(0)
			defer s.Close()
			a, err := New(&nullBackend{}, Options{Limit: 1 << 30, StreamAware: true, NewEvent: d.NewEvent, AllowGrowth: true, BatchFrees: tc.batch})
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

// TestBatchFreesEvents: a stream's steps of 32 buffers record one event
// per 8 frees with Options.BatchFrees = 8 (and one per free without), take
// their own listed frees back first, and leave the invariants whole.
func TestBatchFreesEvents(t *testing.T) {
	for _, batch := range []int{0, 8} {
		d, raw := streams(t, 1)
		var records atomic.Int64
		s := countingStream{raw[0], &records}
		a, _ := newAlloc(t, Options{Limit: 8 << 20, AllowGrowth: true, StreamAware: true, NewEvent: d.NewEvent, BatchFrees: batch})
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
			mustCheck(t, a, fmt.Sprintf("batch %d step %d", batch, step))
			if st := a.Stats(); st.BytesInUse != 0 || st.LiveAllocations != 0 {
				t.Fatalf("batch %d step %d: %d bytes in %d allocations after freeing all", batch, step, st.BytesInUse, st.LiveAllocations)
			}
		}
		want := int64(20 * 32)
		if batch > 0 {
			want = 20 * 32 / int64(batch)
		}
		if got := records.Load(); got > want {
			t.Errorf("BatchFrees %d: %d events recorded for 20 steps of 32 frees, want at most %d", batch, got, want)
		}
		t.Logf("BatchFrees %d: %d events for 640 frees", batch, records.Load())
		raw[0].Synchronize()
	}
}
