package bfc

import (
	"math/rand"
	"sort"
	"testing"
	"time"

	"mstream/device"
	"mstream/status"
)

// model is what a property test knows from outside the allocator: the
// live allocations it was given and what it asked for.
type modelAlloc struct {
	addr, size uint64
}

// checkProperties checks, from the outside, what any correct allocator
// state satisfies: live allocations lie inside the regions and never
// overlap; the stats agree with the model's count and with each other.
func checkProperties(t *testing.T, a *Allocator, lives []modelAlloc, what string) {
	t.Helper()
	st := a.Stats()
	sorted := append([]modelAlloc(nil), lives...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].addr < sorted[j].addr })
	var asked uint64
	for i, l := range sorted {
		asked += l.size
		if i > 0 {
			if p := sorted[i-1]; p.addr+p.size > l.addr {
				t.Fatalf("%s: allocations %#x+%d and %#x+%d overlap", what, p.addr, p.size, l.addr, l.size)
			}
		}
		if cs := a.ChunkSize(l.addr); cs < l.size {
			t.Fatalf("%s: allocation %#x of %d bytes has a chunk of %d", what, l.addr, l.size, cs)
		}
	}
	switch {
	case st.LiveAllocations != len(lives):
		t.Fatalf("%s: %d live allocations in the stats, %d in the model", what, st.LiveAllocations, len(lives))
	case st.BytesInUse < asked:
		t.Fatalf("%s: %d bytes in use for %d asked", what, st.BytesInUse, asked)
	case st.BytesInUse+st.FreeBytes != st.RegionBytes:
		t.Fatalf("%s: in use %d + free %d != regions %d", what, st.BytesInUse, st.FreeBytes, st.RegionBytes)
	case st.RegionBytes > st.Limit:
		t.Fatalf("%s: regions %d over the limit %d", what, st.RegionBytes, st.Limit)
	case st.LargestFreeChunk > st.FreeBytes:
		t.Fatalf("%s: largest free chunk %d over free bytes %d", what, st.LargestFreeChunk, st.FreeBytes)
	case st.PeakBytesInUse < st.BytesInUse:
		t.Fatalf("%s: peak %d below in use %d", what, st.PeakBytesInUse, st.BytesInUse)
	case st.FreeBytes > 0 && !near(st.Fragmentation, 1-float64(st.LargestFreeChunk)/float64(st.FreeBytes)):
		t.Fatalf("%s: fragmentation %v, want 1 - %d/%d", what, st.Fragmentation, st.LargestFreeChunk, st.FreeBytes)
	case st.Regions < 0 || (st.Regions == 0) != (st.RegionBytes == 0):
		t.Fatalf("%s: %d regions of %d bytes", what, st.Regions, st.RegionBytes)
	}
	if err := a.Check(); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

func near(x, y float64) bool { return x-y < 1e-9 && y-x < 1e-9 }

// TestProperties drives allocators (growth or not, extend caps, internal
// fragmentation bounds, stream-aware over jittered host streams) with
// random allocate/free traces. After every operation: no two live
// allocations overlap, every one is inside a chunk at least its size, and
// the stats agree with the model and each other. After every allocation
// is freed: coalescing is complete, so the free space of each region is
// one chunk (largest free chunk = the largest region, free = regions); in
// stream-aware mode no two neighbouring free chunks could merge.
func TestProperties(t *testing.T) {
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewSource(seed))
	for trial := 0; trial < 24; trial++ {
		opts := Options{Limit: uint64(1+rng.Intn(8)) << 20, AllowGrowth: rng.Intn(2) == 0}
		if rng.Intn(2) == 0 {
			opts.ExtendLimit = uint64(1+rng.Intn(2)) << 20
		}
		if rng.Intn(3) == 0 {
			opts.MaxInternalFrag = MinAlloc
		}
		var ss []device.Stream
		if trial%3 == 2 {
			d, s := streams(t, 3)
			ss = s
			opts.StreamAware, opts.NewEvent = true, d.NewEvent
		}
		a, be := newAlloc(t, opts)
		var lives []modelAlloc
		streamOf := map[uint64]device.Stream{}
		ops := 300
		if opts.StreamAware {
			ops = 120 // each cross-stream reuse waits on a jittered stream
		}
		for op := 0; op < ops; op++ {
			if len(lives) > 0 && rng.Intn(5) < 2 {
				i := rng.Intn(len(lives))
				if err := a.Free(lives[i].addr); err != nil {
					t.Fatalf("seed %d: %v", seed, err)
				}
				if err := a.Free(lives[i].addr); err == nil {
					t.Fatalf("seed %d: double free of %#x accepted", seed, lives[i].addr)
				}
				lives[i] = lives[len(lives)-1]
				lives = lives[:len(lives)-1]
			} else {
				size := uint64(1 + rng.Intn(1<<uint(6+rng.Intn(14))))
				var s device.Stream
				if ss != nil {
					s = ss[rng.Intn(len(ss))]
				}
				addr, err := a.Allocate(size, s)
				if err != nil {
					if status.CodeOf(err) != status.ResourceExhausted {
						t.Fatalf("seed %d: %v", seed, err)
					}
				} else {
					if be.Bytes(addr, size) == nil {
						t.Fatalf("seed %d: %#x+%d outside every region", seed, addr, size)
					}
					lives = append(lives, modelAlloc{addr, size})
					streamOf[addr] = s
				}
			}
			checkProperties(t, a, lives, "after an operation")
		}
		for _, l := range lives {
			if err := a.Free(l.addr); err != nil {
				t.Fatal(err)
			}
		}
		checkProperties(t, a, nil, "drained")
		st := a.Stats()
		if st.BytesInUse != 0 || st.FreeBytes != st.RegionBytes {
			t.Fatalf("seed %d trial %d: not everything free after draining: %+v", seed, trial, st)
		}
		if !opts.StreamAware {
			// One free chunk per region: the largest is the largest region.
			var largest uint64
			for _, r := range a.regions {
				largest = max(largest, r.size)
			}
			if st.LargestFreeChunk != largest {
				t.Fatalf("seed %d trial %d: coalescing incomplete: largest free chunk %d, largest region %d", seed, trial, st.LargestFreeChunk, largest)
			}
		}
		if n := freeChunks(a); !opts.StreamAware && n != len(a.regions) {
			t.Fatalf("seed %d trial %d: %d free chunks in %d regions after draining", seed, trial, n, len(a.regions))
		}
		// Stream-aware chunks of different streams stay apart (each keeps
		// its own event); Check has verified that no two adjacent free
		// chunks could merge.
	}
}

// freeChunks counts the free chunks in a's bins.
func freeChunks(a *Allocator) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	n := 0
	for _, b := range a.bins {
		n += len(b)
	}
	return n
}
