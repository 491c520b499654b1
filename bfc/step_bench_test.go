package bfc

import (
	"fmt"
	"math/rand"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"mstream/device"
)

// fakeGPU models what the allocator sees of a GPU's streams without one:
// a stream is busy until some time (each launched node adds its device
// time), an event recorded on it completes when the stream gets there,
// and the driver calls cost host time as on the H100 (cuEventRecord
// ~2 us, cuStreamWaitEvent ~1 us, cuEventQuery ~0.5 us, measured by
// TestGPULaunchCost's neighbours in bench/gpu).
type fakeGPU struct {
	record, wait, query time.Duration
	records, waits      atomic.Int64
	queries             atomic.Int64
}

func spin(d time.Duration) {
	for end := time.Now().Add(d); time.Now().Before(end); {
	}
}

type fakeStream struct {
	g         *fakeGPU
	id        device.StreamID
	busyUntil atomic.Int64 // unix ns at which the stream's queued work ends
}

type fakeEvent struct {
	g      *fakeGPU
	doneAt atomic.Int64
}

func (g *fakeGPU) NewEvent() (device.Event, error) { return &fakeEvent{g: g}, nil }

func (e *fakeEvent) Query() bool {
	e.g.queries.Add(1)
	spin(e.g.query)
	return time.Now().UnixNano() >= e.doneAt.Load()
}

func (e *fakeEvent) Synchronize() error {
	if d := time.Duration(e.doneAt.Load() - time.Now().UnixNano()); d > 0 {
		time.Sleep(d)
	}
	return nil
}

// launch queues d of device work on s.
func (s *fakeStream) launch(d time.Duration) {
	now := time.Now().UnixNano()
	for {
		old := s.busyUntil.Load()
		if s.busyUntil.CompareAndSwap(old, max(old, now)+int64(d)) {
			return
		}
	}
}

func (s *fakeStream) ID() device.StreamID { return s.id }
func (s *fakeStream) Record(e device.Event) error {
	s.g.records.Add(1)
	spin(s.g.record)
	e.(*fakeEvent).doneAt.Store(s.busyUntil.Load())
	return nil
}
func (s *fakeStream) Wait(e device.Event) error {
	s.g.waits.Add(1)
	spin(s.g.wait)
	at := e.(*fakeEvent).doneAt.Load()
	for {
		old := s.busyUntil.Load()
		if old >= at || s.busyUntil.CompareAndSwap(old, at) {
			return nil
		}
	}
}
func (s *fakeStream) CopyH2D(uint64, []byte) error         { return nil }
func (s *fakeStream) CopyD2H([]byte, uint64) error         { return nil }
func (s *fakeStream) CopyD2D(uint64, uint64, uint64) error { return nil }
func (s *fakeStream) Synchronize() error {
	if d := time.Duration(s.busyUntil.Load() - time.Now().UnixNano()); d > 0 {
		time.Sleep(d)
	}
	return nil
}
func (s *fakeStream) Close() error { return nil }

// dlrmStep is the allocation pattern of one DLRM-small step on a group:
// 40 nodes, each allocating its output (sizes from 256 B to 512 KiB, the
// same sequence every step, as a fixed batch gives), inputs freed two
// nodes later, every sixth output kept to the end of the step (fetches,
// the interaction's operands).
type dlrmStep struct{ sizes []uint64 }

func newDLRMStep(seed int64) dlrmStep {
	rng := rand.New(rand.NewSource(seed))
	s := dlrmStep{sizes: make([]uint64, 40)}
	for i := range s.sizes {
		s.sizes[i] = 256 << rng.Intn(12) // 256 B .. 512 KiB
		s.sizes[i] += uint64(rng.Intn(int(s.sizes[i])))
	}
	return s
}

// run runs one step on s: allocate, launch node work, free.
func (st dlrmStep) run(a *Allocator, s *fakeStream, node time.Duration, addrs []uint64) error {
	var keep []uint64
	for i, size := range st.sizes {
		p, err := a.Allocate(size, s)
		if err != nil {
			return err
		}
		addrs[i] = p
		if node > 0 {
			s.launch(node)
		}
		if i >= 2 {
			if (i-2)%6 == 0 {
				keep = append(keep, addrs[i-2])
			} else if err := a.Free(addrs[i-2]); err != nil {
				return err
			}
		}
	}
	n := len(st.sizes)
	for _, p := range append(keep, addrs[n-2], addrs[n-1]) {
		if err := a.Free(p); err != nil {
			return err
		}
	}
	return nil
}

// BenchmarkDLRMStep runs DLRM-like steps on 4 groups at once (4
// goroutines, one compute stream each) against per-group allocators and
// against one stream-aware allocator shared by the four, as the stream
// groups configure them (g4 and g4a of bench/gpu). ns/op is one step of
// each of the 4 groups; records/step, waits/step and queries/step count
// driver calls of the fake GPU per group step, cpu-ns/op the process's
// CPU time per round (the fake's spins included). Reproduce with
//
//	go test ./bfc -run '^$' -bench DLRMStep -benchtime 2000x -mutexprofile mu.out -cpuprofile cpu.out
func BenchmarkDLRMStep(b *testing.B) {
	const groups = 4
	for _, shared := range []bool{false, true} {
		name := "per_group"
		if shared {
			name = "shared_aware"
		}
		b.Run(name, func(b *testing.B) {
			g := &fakeGPU{record: 2 * time.Microsecond, wait: time.Microsecond, query: 500 * time.Nanosecond}
			allocs := groupAllocators(b, g, groups, shared)
			cpu := parallelSteps(b, groups, func(i int) error {
				s := &fakeStream{g: g, id: device.StreamID(i)}
				step := newDLRMStep(1)
				addrs := make([]uint64, len(step.sizes))
				for n := 0; n < b.N; n++ {
					if err := step.run(allocs[i], s, 5*time.Microsecond, addrs); err != nil {
						return err
					}
				}
				return nil
			})
			steps := float64(b.N * groups)
			// The process's CPU time per round of 4 steps, which a loaded
			// machine's run queue inflates less than the wall time.
			b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/op")
			b.ReportMetric(float64(g.records.Load())/steps, "records/step")
			b.ReportMetric(float64(g.waits.Load())/steps, "waits/step")
			b.ReportMetric(float64(g.queries.Load())/steps, "queries/step")
			var region uint64
			for i, a := range allocs {
				if shared && i > 0 {
					break
				}
				region += a.Stats().RegionBytes
			}
			b.ReportMetric(float64(region)/(1<<20), "region-MiB")
		})
	}
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// lockedNullBackend is nullBackend for allocators used from several
// goroutines.
type lockedNullBackend struct {
	mu sync.Mutex
	nullBackend
}

func (n *lockedNullBackend) Alloc(size uint64) (uint64, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.nullBackend.Alloc(size)
}

// BenchmarkDLRMParallel is the allocator's share of bench/gpu's
// DLRM-small load without graphs (8 client threads on 4 stream groups):
// 4 streams, each driven by 2 goroutines at once, every goroutine running
// DLRM-like steps (dlrmStep) with no device time, so that only the
// allocator's own cost and its contention are measured. per_group gives
// each stream its own allocator (g4ng), shared_aware one stream-aware
// allocator with stream caches for all four (g4ang). ns/op is one round:
// a step of each of the 8 goroutines; cpu-ns/op the process's CPU time
// per round. Reproduce with
//
//	go test ./bfc -run '^$' -bench DLRMParallel -benchtime 4000x -count 4
func BenchmarkDLRMParallel(b *testing.B) {
	const streams, threads = 4, 2
	for _, shared := range []bool{false, true} {
		name := "per_group"
		if shared {
			name = "shared_aware"
		}
		b.Run(name, func(b *testing.B) {
			g := &fakeGPU{record: 2 * time.Microsecond, wait: time.Microsecond, query: 500 * time.Nanosecond}
			allocs := groupAllocators(b, g, streams, shared)
			ss := make([]*fakeStream, streams)
			for i := range ss {
				ss[i] = &fakeStream{g: g, id: device.StreamID(i)}
			}
			cpu := parallelSteps(b, streams*threads, func(i int) error {
				step := newDLRMStep(int64(1 + i%threads))
				addrs := make([]uint64, len(step.sizes))
				for n := 0; n < b.N; n++ {
					if err := step.run(allocs[i%streams], ss[i%streams], 0, addrs); err != nil {
						return err
					}
				}
				return nil
			})
			b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/op")
			b.ReportMetric(float64(g.records.Load())/float64(b.N*streams*threads), "records/step")
			var region uint64
			for i, a := range allocs {
				if shared && i > 0 {
					break
				}
				region += a.Stats().RegionBytes
			}
			b.ReportMetric(float64(region)/(1<<20), "region-MiB")
		})
	}
}

// groupAllocators makes n groups' allocators over g: one each, or with
// shared one stream-aware allocator (with its stream caches) for all.
func groupAllocators(b *testing.B, g *fakeGPU, n int, shared bool) []*Allocator {
	allocs := make([]*Allocator, n)
	for i := range allocs {
		if shared && i > 0 {
			allocs[i] = allocs[0]
			continue
		}
		opts := Options{Name: fmt.Sprint("g", i), Limit: 4 << 30, AllowGrowth: true}
		if shared {
			opts.StreamAware, opts.NewEvent, opts.StreamCache = true, g.NewEvent, true
		}
		a, err := New(&lockedNullBackend{}, opts)
		if err != nil {
			b.Fatal(err)
		}
		allocs[i] = a
	}
	return allocs
}

// parallelSteps runs body(i) for i < n on n goroutines with the timer
// reset, stops it, fails b on the first error, and returns the
// process's CPU time over the run.
func parallelSteps(b *testing.B, n int, body func(i int) error) time.Duration {
	var wg sync.WaitGroup
	var failed atomic.Value
	b.ResetTimer()
	cpu0 := cpuTime()
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			if err := body(i); err != nil {
				failed.Store(err)
			}
		}(i)
	}
	wg.Wait()
	cpu := cpuTime() - cpu0
	b.StopTimer()
	if err, _ := failed.Load().(error); err != nil {
		b.Fatal(err)
	}
	return cpu
}
