package groups

import (
	"fmt"
	"math/rand"
	"runtime"
	"strings"
	"sync"
	"testing"

	"mstream/bfc"
	"mstream/device"
	"mstream/device/host"
	"mstream/kernels"
)

type testPool struct {
	n      int
	closed bool
}

func (p *testPool) Submit(f func()) { go f() }
func (p *testPool) Size() int       { return p.n }
func (p *testPool) Close()          { p.closed = true }

func baseConfig(devs ...device.Device) Config {
	counts := make([]int, len(devs))
	for i := range counts {
		counts[i] = 1
	}
	return Config{
		Devices: devs, Counts: counts, GlobalPool: &testPool{n: 3}, GlobalIntra: kernels.Serial{},
		NewPool:  func(n int) Pool { return &testPool{n: n} },
		NewIntra: func(n int) kernels.Parallelizer { return kernels.Serial{} },
	}
}

func hostDev(mb int64) *host.Device {
	d := host.New()
	d.MemBytes = mb << 20
	d.NumContexts = 8
	return d
}

func mustNew(t *testing.T, cfg Config) *Set {
	t.Helper()
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// TestPickRoundRobin: sequential runs rotate over every group; concurrent
// runs go to the group with the fewest in flight.
func TestPickRoundRobin(t *testing.T) {
	cfg := baseConfig(hostDev(64))
	cfg.Counts = []int{4}
	s := mustNew(t, cfg)
	var seq []int
	for i := 0; i < 8; i++ {
		g := s.Pick(0)
		seq = append(seq, g.Index)
		g.Done(true)
	}
	for i, v := range seq {
		if v != i%4 {
			t.Fatalf("sequential picks %v, want 0 1 2 3 0 1 2 3", seq)
		}
	}
	// Hold three runs: the fourth must go to the idle group.
	a, b, c := s.Pick(0), s.Pick(0), s.Pick(0)
	d := s.Pick(0)
	if seen := map[int]bool{a.Index: true, b.Index: true, c.Index: true, d.Index: true}; len(seen) != 4 {
		t.Fatalf("four concurrent runs on groups %d %d %d %d", a.Index, b.Index, c.Index, d.Index)
	}
	// Everything busy once; finishing b makes b the only least-loaded group.
	b.Done(true)
	if e := s.Pick(0); e != b {
		t.Fatalf("picked group %d with %d in flight over idle group %d", e.Index, e.InFlight(), b.Index)
	}
	for _, g := range []*Group{a, b, c, d} {
		g.Done(false)
	}
	var wg sync.WaitGroup
	for i := 0; i < 64; i++ {
		wg.Add(1)
		go func() { defer wg.Done(); g := s.Pick(0); g.Done(true) }()
	}
	wg.Wait()
	var total int64
	for _, g := range s.Groups() {
		if g.InFlight() != 0 {
			t.Fatalf("group %d: %d in flight after all runs", g.Index, g.InFlight())
		}
		total += g.Completed()
	}
	if total != 8+64+1 {
		t.Fatalf("%d completed runs counted", total)
	}
}

func TestStreamsAndContexts(t *testing.T) {
	for _, merge := range []bool{false, true} {
		cfg := baseConfig(hostDev(64))
		cfg.Counts, cfg.Merge, cfg.Contexts = []int{4}, merge, 2
		s := mustNew(t, cfg)
		ids := map[device.StreamID]bool{}
		for _, g := range s.Groups() {
			st := g.Stats()
			want := 4
			if merge {
				want = 1
			}
			if st.StreamCount != want || len(g.Streams()) != want {
				t.Fatalf("merge=%v: %d streams", merge, st.StreamCount)
			}
			if g.Context != g.Index%2 {
				t.Fatalf("group %d in context %d", g.Index, g.Context)
			}
			if g.Compute.(*host.Stream).Context() != g.Context {
				t.Fatal("stream not in the group's context")
			}
			for _, x := range g.Streams() {
				if ids[x.ID()] {
					t.Fatal("a stream shared between groups")
				}
				ids[x.ID()] = true
			}
		}
	}
}

func TestAllocatorModes(t *testing.T) {
	const mb = 1 << 20
	for _, tc := range []struct {
		name      string
		set       func(c *Config)
		limit     uint64 // per group allocator
		sharedBFC bool
	}{
		{"split", func(c *Config) {}, 16 * mb, false},
		{"fraction", func(c *Config) { c.MemoryFraction = 0.5 }, 8 * mb, false},
		{"virtual", func(c *Config) { c.MemoryLimitMB = []float64{32} }, 8 * mb, false},
		{"share", func(c *Config) { c.ShareMemPool = true }, 64 * mb, false},
		{"aware", func(c *Config) { c.StreamAware = true }, 64 * mb, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := baseConfig(hostDev(64))
			cfg.Counts = []int{4}
			tc.set(&cfg)
			s := mustNew(t, cfg)
			allocs := map[*bfc.Allocator]bool{}
			for _, g := range s.Groups() {
				st := g.Stats()
				if st.Allocator.Limit != tc.limit || st.AllocatorShared != tc.sharedBFC {
					t.Fatalf("group %d: limit %d shared %v, want %d %v", g.Index, st.Allocator.Limit, st.AllocatorShared, tc.limit, tc.sharedBFC)
				}
				allocs[g.Alloc] = true
			}
			if want := 4; tc.sharedBFC {
				if len(allocs) != 1 {
					t.Fatalf("%d allocators, want one shared", len(allocs))
				}
			} else if len(allocs) != want {
				t.Fatalf("%d allocators, want %d", len(allocs), want)
			}
		})
	}
}

// TestSharedPoolBudget: with a shared pool one group may take most of the
// device, but all groups together never pass the limit.
func TestSharedPoolBudget(t *testing.T) {
	cfg := baseConfig(hostDev(16))
	cfg.Counts, cfg.ShareMemPool = []int{2}, true
	s := mustNew(t, cfg)
	g0, g1 := s.Groups()[0], s.Groups()[1]
	// Growth doubles from 2 MiB: 5 MiB takes an 8 MiB region, 6 MiB the
	// other 8; then the budget is spent.
	if _, err := g0.Alloc.Allocate(5<<20, nil); err != nil {
		t.Fatalf("group 0: %v", err)
	}
	if _, err := g1.Alloc.Allocate(6<<20, nil); err != nil {
		t.Fatalf("group 1 could not take what is left: %v", err)
	}
	if _, err := g1.Alloc.Allocate(3<<20, nil); err == nil {
		t.Fatal("the second group passed the shared limit")
	}
	if r := g0.Alloc.Stats().RegionBytes + g1.Alloc.Stats().RegionBytes; r > 16<<20 {
		t.Fatalf("regions %d over the shared limit", r)
	}
	s1 := mustNew(t, cfg)
	if _, err := s1.Groups()[1].Alloc.Allocate(12<<20, nil); err != nil {
		t.Fatalf("one group could not take 12 of 16 MiB of a shared pool: %v", err)
	}
	// Split evenly instead: 12 MiB does not fit in half of 16.
	cfg.ShareMemPool = false
	s2 := mustNew(t, cfg)
	if _, err := s2.Groups()[0].Alloc.Allocate(12<<20, nil); err == nil {
		t.Fatal("a split allocator took more than its half")
	}
}

func TestThreadModes(t *testing.T) {
	p0, p1 := &testPool{n: 5}, &testPool{n: 7}
	for _, tc := range []struct {
		mode  ThreadMode
		pools []Pool
		want  []PoolDesc
	}{
		{ThreadGlobal, nil, []PoolDesc{{"inter_op", 0, 3}, {"inter_op", 0, 3}, {"inter_op", 0, 3}}},
		{ThreadGlobal, []Pool{p0, p1}, []PoolDesc{{"session_pool", 0, 5}, {"session_pool", 1, 7}, {"session_pool", 0, 5}}},
		{ThreadGPUPrivate, nil, []PoolDesc{{"gpu_private", 0, 4}, {"gpu_private", 1, 4}, {"gpu_private", 2, 4}}},
		{ThreadGPUShared, nil, []PoolDesc{{"gpu_shared", 0, 4}, {"gpu_shared", 0, 4}, {"gpu_shared", 0, 4}}},
	} {
		cfg := baseConfig(hostDev(64))
		cfg.Counts, cfg.ThreadMode, cfg.ThreadCount, cfg.SessionPools = []int{3}, tc.mode, 4, tc.pools
		s, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		launch := map[Pool]bool{}
		for i, g := range s.Groups() {
			if g.PoolDesc != tc.want[i] {
				t.Errorf("%s pools %d: group %d %+v, want %+v", tc.mode, len(tc.pools), i, g.PoolDesc, tc.want[i])
			}
			launch[g.Launch] = true
		}
		if tc.mode == ThreadGPUPrivate && len(launch) != 3 || tc.mode == ThreadGPUShared && len(launch) != 1 {
			t.Errorf("%s: %d distinct pools", tc.mode, len(launch))
		}
		s.Close()
		for p := range launch {
			owned := tc.mode != ThreadGlobal
			if p.(*testPool).closed != owned {
				t.Errorf("%s: pool closed=%v, owned=%v", tc.mode, p.(*testPool).closed, owned)
			}
		}
	}
}

func TestHostAllocatorsAndConsts(t *testing.T) {
	for _, per := range []bool{false, true} {
		cfg := baseConfig(hostDev(64))
		cfg.Counts, cfg.PerGroupHostAlloc, cfg.SegmentOwnConst = []int{3}, per, per
		s := mustNew(t, cfg)
		hosts, stores := map[*bfc.Allocator]bool{}, map[*ConstStore]bool{}
		for _, g := range s.Groups() {
			hosts[g.HostAlloc] = true
			stores[g.Consts] = true
		}
		if per && len(hosts) != 3 || !per && len(hosts) != 1 {
			t.Errorf("per-group host allocators=%v: %d allocators", per, len(hosts))
		}
		if per && len(stores) != 1 || !per && len(stores) != 3 {
			t.Errorf("segment-own-const=%v: %d const stores", per, len(stores))
		}
		calls := 0
		for _, g := range s.Groups() {
			c, err := g.Consts.Get("k", func() (*Const, error) { calls++; return &Const{Bytes: 256}, nil })
			if err != nil || c.Bytes != 256 {
				t.Fatal(err)
			}
		}
		if per && calls != 1 || !per && calls != 3 {
			t.Errorf("shared=%v: materialised %d times", per, calls)
		}
		if b := s.DeviceConstBytes()[0]; b != int64(256*calls) {
			t.Errorf("device const bytes %d", b)
		}
	}
}

// TestSpreadPick: the GPU pool's pick over the groups of several devices
// (3 and 2 groups here, devices 1 and 2 of three; device 0 is the host's
// and never picked): sequential runs alternate between the devices, group
// j of each in turn; concurrent runs go to the group of any device with
// the fewest in flight; 8 goroutines spread over all five groups.
func TestSpreadPick(t *testing.T) {
	cfg := baseConfig(hostDev(64), hostDev(64), hostDev(64))
	cfg.Counts = []int{1, 3, 2}
	s := mustNew(t, cfg)
	pool := s.Spread([]int{1, 2})
	name := func(g *Group) string { return fmt.Sprintf("%d.%d", g.DeviceIndex, g.Index) }
	var seq []string
	for i := 0; i < 10; i++ {
		g := pool.Pick()
		seq = append(seq, name(g))
		g.Done(true)
	}
	if got, want := strings.Join(seq, " "), "1.0 2.0 1.1 2.1 1.2 1.0 2.0 1.1 2.1 1.2"; got != want {
		t.Fatalf("sequential picks %s, want %s", got, want)
	}
	// Five held runs take all five groups; with GPU 2's group 1 done,
	// it is the only least-loaded group and takes the next run.
	held := map[string]*Group{}
	for i := 0; i < 5; i++ {
		g := pool.Pick()
		held[name(g)] = g
	}
	if len(held) != 5 {
		t.Fatalf("five concurrent runs on groups %v, want all five", held)
	}
	held["2.1"].Done(true)
	if g := pool.Pick(); g != held["2.1"] {
		t.Fatalf("picked %s with %d in flight over idle 2.1", name(g), g.InFlight())
	}
	for _, g := range held {
		g.Done(true)
	}
	if s.Group(0).InFlight() != 0 || s.Group(0).Completed() != 0 {
		t.Errorf("the host's group served the pool")
	}

	// 8 goroutines: every group serves runs, nothing stays in flight.
	var wg sync.WaitGroup
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func(seed int64) {
			defer wg.Done()
			r := rand.New(rand.NewSource(seed))
			for i := 0; i < 200; i++ {
				g := pool.Pick()
				if g.DeviceIndex == 0 || g.InFlight() < 1 {
					t.Errorf("picked %s with %d in flight", name(g), g.InFlight())
				}
				for k := r.Intn(4); k > 0; k-- {
					runtime.Gosched()
				}
				g.Done(true)
			}
		}(int64(w))
	}
	wg.Wait()
	for _, st := range s.Stats()[1:] {
		if st.RunsInFlight != 0 || st.RunsCompleted < 100 {
			t.Errorf("device %d group %d: %d in flight, %d completed of 1610", st.DeviceIndex, st.Index, st.RunsInFlight, st.RunsCompleted)
		}
	}
}
