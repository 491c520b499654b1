package groups

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"mstream/bfc"
	"mstream/device"
	"mstream/kernels"
	"mstream/status"
	"mstream/tensorholder"
)

// GroupID identifies a group within its Set, over all devices.
type GroupID int

// ThreadMode is how groups get their threads (TF_GPU_THREAD_MODE).
type ThreadMode string

const (
	ThreadGlobal     ThreadMode = "global"
	ThreadGPUPrivate ThreadMode = "gpu_private"
	ThreadGPUShared  ThreadMode = "gpu_shared"
)

// Pool is a thread pool (exec.Pool): tasks submitted never block the
// submitter.
type Pool interface {
	Submit(f func())
	Size() int
	Close()
}

// Config is the typed configuration of a Set; the session fills it from
// envcfg and the ConfigProto.
type Config struct {
	Devices []device.Device
	// Counts gives the number of groups of each device (len(Devices)
	// entries, each at least 1).
	Counts []int
	// Merge puts compute and the three copy roles on one stream.
	Merge bool
	// Contexts spreads each device's groups over this many contexts.
	Contexts int
	// PerGroupHostAlloc gives each group its own host allocator.
	PerGroupHostAlloc bool
	// SegmentOwnConst shares constants between the groups of a device.
	SegmentOwnConst bool
	// ShareMemPool makes the groups of a device draw from one budget.
	ShareMemPool bool
	// StreamAware makes one stream-aware allocator serve every group of
	// a device.
	StreamAware bool
	// ExtendLimit caps one region growth, in bytes (0: no cap).
	ExtendLimit uint64
	// AllowGrowth grows regions on demand.
	AllowGrowth bool
	// MemoryFraction is per_process_gpu_memory_fraction (0: unset).
	MemoryFraction float64
	// MemoryLimitMB is virtual_devices[d].memory_limit_mb[0] for device d
	// (missing or 0: unset).
	MemoryLimitMB []float64
	// InternalFragFraction is TF's internal_fragmentation_fraction (0:
	// bfc's default).
	InternalFragFraction float64
	// HostMemLimit bounds each host allocator, in bytes (0: 64 GiB).
	HostMemLimit uint64

	ThreadMode  ThreadMode
	ThreadCount int
	// SessionPools are the ConfigProto's session_inter_op_thread_pool
	// pools; GlobalPool is used when there are none. The Set does not own
	// them.
	SessionPools []Pool
	GlobalPool   Pool
	GlobalIntra  kernels.Parallelizer
	// NewPool and NewIntra make the threads of gpu_private and gpu_shared
	// groups, which the Set owns (and closes, an intra-op pool that has a
	// Close method included).
	NewPool  func(n int) Pool
	NewIntra func(n int) kernels.Parallelizer
}

// Set is every group of every device of one session.
type Set struct {
	cfg       Config
	groups    []*Group
	perDevice [][]*Group
	shared    []*ConstStore // per device, with SegmentOwnConst
	// Holder keeps buffers used on a second stream until that stream has
	// passed its last use; shared by every group.
	Holder tensorholder.Holder

	mu     sync.Mutex
	cursor []int // per device: where the round-robin resumes

	ownedPools []Pool
	ownedIntra []kernels.Parallelizer
	streams    []device.Stream
	staging    []device.Staging
}

// Group is one stream group. Its fields never change after New.
type Group struct {
	ID          GroupID
	Index       int // within its device
	Device      device.Device
	DeviceIndex int
	Context     int

	Compute, H2D, D2H, D2D device.Stream

	// Alloc serves device buffers; AllocShared says other groups use it
	// too (stream-aware mode).
	Alloc       *bfc.Allocator
	AllocShared bool
	// StreamAware says Alloc is stream-aware: every allocation names the
	// stream that will use the memory.
	StreamAware bool
	// HostAlloc serves staging buffers for copies; HostShared says other
	// groups use it too.
	HostAlloc  *bfc.Allocator
	HostShared bool
	// Staging is a GPU group's own pinned staging for its streams' copies
	// of pageable memory (TF_PER_STREAM_HOST_ALLOCATOR); nil: the device's.
	Staging device.Staging

	// Launch runs the host side of steps (the executor); Intra splits
	// kernels into parallel chunks.
	Launch   Pool
	PoolDesc PoolDesc
	Intra    kernels.Parallelizer
	// CallerLaunches says a device step that only enqueues work (no host
	// kernel) may launch from the goroutine of the Run: with
	// TF_GPU_THREAD_MODE global, Launch is the session's inter-op pool,
	// whose threads a Run shares with its caller's as TF's executor runs a
	// cheap op (a launch) on the thread that made it ready, and handing the
	// step to a pool worker and back cost ~10 us of the host's time a step
	// on the H100 (TestGPULaunchCost). gpu_private and gpu_shared name
	// threads of their own, which launch every step.
	CallerLaunches bool

	// Consts is where this group's constants live: its own store, or the
	// device's shared one.
	Consts *ConstStore

	// The counters every run writes sit apart from the fields above,
	// which runs only read: on their cache lines, concurrent runs made
	// each other's reads miss (128 bytes: a core may fetch lines in
	// pairs).
	_            [128]byte
	inFlight     atomic.Int64
	completed    atomic.Int64
	failed       atomic.Int64
	waits        atomic.Int64
	waitsSkipped atomic.Int64
	// Host time spent launching device steps (not their final wait), the
	// device nodes they launched and the steps (CountLaunch).
	launchNs, launchNodes, launchSteps atomic.Int64
	launchNodeNs                       atomic.Int64
	// traceLocks holds a mutex per stream of the group (TraceLock).
	traceLocks sync.Map
}

// TraceLock is stream st's trace lock: a traced device step holds it
// while it brackets its own work on st with timing events, so that the
// brackets of concurrent steps on one stream do not interleave.
func (g *Group) TraceLock(st device.Stream) *sync.Mutex {
	v, _ := g.traceLocks.LoadOrStore(st, &sync.Mutex{})
	return v.(*sync.Mutex)
}

// PoolDesc says which threads a group uses.
type PoolDesc struct {
	// Kind is "inter_op" (the session's pool), "session_pool" (a
	// session_inter_op_thread_pool entry), "gpu_private" or "gpu_shared".
	Kind    string `json:"kind"`
	Index   int    `json:"index"`
	Threads int    `json:"threads"`
}

const defaultHostMemLimit = 64 << 30

// New creates the groups, their streams, allocators and pools. On error
// everything created so far is released.
func New(cfg Config) (set *Set, err error) {
	if len(cfg.Devices) == 0 || len(cfg.Counts) != len(cfg.Devices) {
		return nil, status.Errorf(status.Internal, "groups: %d devices, %d counts", len(cfg.Devices), len(cfg.Counts))
	}
	if cfg.Contexts < 1 {
		cfg.Contexts = 1
	}
	if cfg.ThreadCount < 1 {
		cfg.ThreadCount = 2
	}
	if cfg.HostMemLimit == 0 {
		cfg.HostMemLimit = defaultHostMemLimit
	}
	s := &Set{cfg: cfg, cursor: make([]int, len(cfg.Devices))}
	defer func() {
		if err != nil {
			s.Close()
			set = nil
		}
	}()
	var sharedPool Pool
	var sharedIntra kernels.Parallelizer
	if cfg.ThreadMode == ThreadGPUShared {
		sharedPool = cfg.NewPool(cfg.ThreadCount)
		sharedIntra = cfg.NewIntra(cfg.ThreadCount)
		s.ownedPools = append(s.ownedPools, sharedPool)
		s.ownedIntra = append(s.ownedIntra, sharedIntra)
	}
	for d, dev := range cfg.Devices {
		n := cfg.Counts[d]
		if n < 1 {
			return nil, status.InvalidArg("device %s: %d stream groups", dev.Name(), n)
		}
		limit := deviceLimit(dev, cfg, d)
		ctxs := min(cfg.Contexts, n, dev.Contexts())
		allocs, shared, err := s.deviceAllocators(dev, d, n, ctxs, limit)
		if err != nil {
			return nil, err
		}
		var hostShared *bfc.Allocator
		if !cfg.PerGroupHostAlloc {
			if hostShared, err = hostAllocator(dev, fmt.Sprintf("%s_host", shortName(dev, d)), cfg.HostMemLimit); err != nil {
				return nil, err
			}
		}
		var devConsts *ConstStore
		if cfg.SegmentOwnConst {
			devConsts = &ConstStore{Shared: true, Name: shortName(dev, d) + "_consts"}
		}
		s.shared = append(s.shared, devConsts)
		var row []*Group
		for j := 0; j < n; j++ {
			g := &Group{ID: GroupID(len(s.groups)), Index: j, Device: dev, DeviceIndex: d, Context: j % ctxs,
				Alloc: allocs[j], AllocShared: shared, StreamAware: cfg.StreamAware}
			if err := s.makeStreams(g); err != nil {
				return nil, err
			}
			if hostShared != nil {
				g.HostAlloc, g.HostShared = hostShared, n > 1
			} else if g.HostAlloc, err = hostAllocator(dev, fmt.Sprintf("%s_group%d_host", shortName(dev, d), j), cfg.HostMemLimit); err != nil {
				return nil, err
			}
			switch cfg.ThreadMode {
			case ThreadGPUPrivate:
				g.Launch = cfg.NewPool(cfg.ThreadCount)
				g.Intra = cfg.NewIntra(cfg.ThreadCount)
				g.PoolDesc = PoolDesc{Kind: "gpu_private", Index: int(g.ID), Threads: cfg.ThreadCount}
				s.ownedPools = append(s.ownedPools, g.Launch)
				s.ownedIntra = append(s.ownedIntra, g.Intra)
			case ThreadGPUShared:
				g.Launch, g.Intra = sharedPool, sharedIntra
				g.PoolDesc = PoolDesc{Kind: "gpu_shared", Threads: cfg.ThreadCount}
			default:
				g.Intra = cfg.GlobalIntra
				if k := len(cfg.SessionPools); k > 0 {
					i := int(g.ID) % k
					g.Launch = cfg.SessionPools[i]
					g.PoolDesc = PoolDesc{Kind: "session_pool", Index: i, Threads: g.Launch.Size()}
				} else {
					g.Launch = cfg.GlobalPool
					g.PoolDesc = PoolDesc{Kind: "inter_op", Threads: g.Launch.Size()}
				}
				g.CallerLaunches = true
			}
			if devConsts != nil {
				g.Consts = devConsts
			} else {
				g.Consts = &ConstStore{Name: fmt.Sprintf("%s_group%d_consts", shortName(dev, d), j)}
			}
			row = append(row, g)
			s.groups = append(s.groups, g)
		}
		s.perDevice = append(s.perDevice, row)
	}
	return s, nil
}

// shortName is how allocators of device d are named: "CPU_0", "GPU_1",
// with the device's own ordinal (the last field of its name) when it has
// one, so GPU:0 is GPU_0 whatever its place in the session's device list.
func shortName(dev device.Device, d int) string {
	name := dev.Name()
	if i := strings.LastIndexByte(name, ':'); i >= 0 {
		if n, err := strconv.Atoi(name[i+1:]); err == nil {
			d = n
		}
	}
	return fmt.Sprintf("%s_%d", dev.Type(), d)
}

// deviceLimit is the memory all of device d's allocators may hold.
func deviceLimit(dev device.Device, cfg Config, d int) uint64 {
	base := uint64(max(dev.MemoryBytes(), 0))
	if d < len(cfg.MemoryLimitMB) && cfg.MemoryLimitMB[d] > 0 {
		return uint64(cfg.MemoryLimitMB[d] * (1 << 20))
	}
	if cfg.MemoryFraction > 0 {
		return uint64(cfg.MemoryFraction * float64(base))
	}
	return base
}

// deviceAllocators makes the n group allocators of a device (in
// stream-aware mode one per context, shared by that context's groups).
// Group j's memory comes from its context, j % ctxs.
func (s *Set) deviceAllocators(dev device.Device, d, n, ctxs int, limit uint64) ([]*bfc.Allocator, bool, error) {
	cfg := s.cfg
	frag := func(l uint64) uint64 {
		if cfg.InternalFragFraction > 0 {
			return max(uint64(cfg.InternalFragFraction*float64(l)), bfc.MinAlloc)
		}
		return 0
	}
	out := make([]*bfc.Allocator, n)
	if _, ok := dev.(interface{ MemoryOf(int) device.Memory }); !ok {
		ctxs = 1 // one memory however many contexts (the host device)
	}
	if cfg.StreamAware {
		name, per := shortName(dev, d)+"_bfc", limit
		if ctxs > 1 {
			per = limit / uint64(ctxs)
		}
		for c := 0; c < ctxs; c++ {
			if ctxs > 1 {
				name = fmt.Sprintf("%s_ctx%d_bfc", shortName(dev, d), c)
			}
			newEvent := dev.NewEvent
			if e, ok := dev.(interface {
				NewEventIn(int) (device.Event, error)
			}); ok {
				c := c
				newEvent = func() (device.Event, error) { return e.NewEventIn(c) }
			}
			a, err := bfc.New(memoryOf(dev, c), bfc.Options{
				Name: name, Limit: per, AllowGrowth: cfg.AllowGrowth,
				ExtendLimit: cfg.ExtendLimit, StreamAware: true, NewEvent: newEvent, MaxInternalFrag: frag(per),
				// One allocator serves every group of the device: a
				// stream reuses its own frees from its cache, without
				// the shared mutex or an event (a mutex and an event per
				// free made g4a ~0.55x of per-group allocators on
				// DLRM-small, issue 18).
				StreamCache: true,
			})
			if err != nil {
				return nil, false, err
			}
			for j := c; j < n; j += ctxs {
				out[j] = a
			}
		}
		return out, n > ctxs, nil
	}
	per, growth := limit/uint64(n), cfg.AllowGrowth
	var b *budget
	if cfg.ShareMemPool && n > 1 {
		b = &budget{limit: limit}
		per, growth = limit, true
	}
	for j := range out {
		backend := memoryOf(dev, j%ctxs)
		if b != nil {
			backend = &budgetMemory{Memory: backend, b: b, sizes: map[uint64]uint64{}}
		}
		a, err := bfc.New(backend, bfc.Options{
			Name: fmt.Sprintf("%s_group%d_bfc", shortName(dev, d), j), Limit: per, AllowGrowth: growth,
			ExtendLimit: cfg.ExtendLimit, MaxInternalFrag: frag(per),
			// A step's buffers come back in the sizes the next step
			// asks for: from the cache they cost a small lock and no
			// search of the bins, split or merge (the bundled model
			// spent ~12% of its CPU per Run in Allocate and Free).
			StreamCache: true,
		})
		if err != nil {
			return nil, false, err
		}
		out[j] = a
	}
	return out, false, nil
}

// memoryOf is the memory of context ctx of dev: a device with several
// contexts (CUDA) hands out memory per context; others have one memory.
func memoryOf(dev device.Device, ctx int) device.Memory {
	if m, ok := dev.(interface{ MemoryOf(int) device.Memory }); ok {
		return m.MemoryOf(ctx)
	}
	return dev.Memory()
}

// hostAllocator is a growing bfc over the device's host (staging) memory.
func hostAllocator(dev device.Device, name string, limit uint64) (*bfc.Allocator, error) {
	return bfc.New(dev.HostMemory(), bfc.Options{Name: name, Limit: limit, AllowGrowth: true})
}

func (s *Set) makeStreams(g *Group) error {
	mk := func() (device.Stream, error) {
		st, err := s.newStream(g)
		if err != nil {
			return nil, status.Wrap(err, "group %d of %s: stream", g.Index, g.Device.Name())
		}
		s.streams = append(s.streams, st)
		return st, nil
	}
	var err error
	if g.Compute, err = mk(); err != nil {
		return err
	}
	if s.cfg.Merge {
		g.H2D, g.D2H, g.D2D = g.Compute, g.Compute, g.Compute
		return nil
	}
	if g.H2D, err = mk(); err != nil {
		return err
	}
	if g.D2H, err = mk(); err != nil {
		return err
	}
	g.D2D, err = mk()
	return err
}

// Groups lists every group, by ID.
func (s *Set) Groups() []*Group { return s.groups }

// Group returns group id.
func (s *Set) Group(id GroupID) *Group { return s.groups[id] }

// OnDevice lists device d's groups, by index.
func (s *Set) OnDevice(d int) []*Group { return s.perDevice[d] }

// Pick chooses the group of device d that serves a run: fewest runs in
// flight, ties round-robin. The caller must call Done on it exactly once.
func (s *Set) Pick(d int) *Group {
	if row := s.perDevice[d]; len(row) == 1 {
		// The one group (the CPU's default): nothing to choose, and no
		// lock that concurrent Runs would write.
		row[0].inFlight.Add(1)
		return row[0]
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	row := s.perDevice[d]
	start := s.cursor[d]
	best := row[start%len(row)]
	for k := 1; k < len(row); k++ {
		g := row[(start+k)%len(row)]
		if g.inFlight.Load() < best.inFlight.Load() {
			best = g
		}
	}
	s.cursor[d] = (best.Index + 1) % len(row)
	best.inFlight.Add(1)
	return best
}

// Spread is a pick over the groups of several devices (the session's
// GPU pool), made once by Set.Spread.
type Spread struct {
	s      *Set
	groups []*Group // group 0 of each device, then group 1 of each, ...
	cursor int      // where the round-robin resumes; guarded by s.mu
}

// Spread makes the pick over every group of devices devs: Pick on a
// Spread chooses among all of them as Set.Pick does on one device.
func (s *Set) Spread(devs []int) *Spread {
	sp := &Spread{s: s}
	for j := 0; ; j++ {
		more := false
		for _, d := range devs {
			if row := s.perDevice[d]; j < len(row) {
				sp.groups = append(sp.groups, row[j])
				more = true
			}
		}
		if !more {
			return sp
		}
	}
}

// Pick chooses the group that serves a run among the Spread's: fewest
// runs in flight, ties round-robin over the groups taken in turn from each
// device (group 0 of each, then group 1 of each, ...), so sequential and
// lightly concurrent runs alternate between the devices. The caller must
// call Done on it exactly once.
func (sp *Spread) Pick() *Group {
	sp.s.mu.Lock()
	defer sp.s.mu.Unlock()
	row := sp.groups
	at := sp.cursor % len(row)
	best := row[at]
	for k := 1; k < len(row); k++ {
		i := (sp.cursor + k) % len(row)
		if g := row[i]; g.inFlight.Load() < best.inFlight.Load() {
			best, at = g, i
		}
	}
	sp.cursor = (at + 1) % len(row)
	best.inFlight.Add(1)
	return best
}

// Groups lists the Spread's groups in its round-robin order.
func (sp *Spread) Groups() []*Group { return sp.groups }

// Begin counts a run on g that was not chosen by Pick (node-level mode
// runs on several groups at once).
func (g *Group) Begin() { g.inFlight.Add(1) }

// Done ends a run begun by Pick or Begin.
func (g *Group) Done(ok bool) {
	g.inFlight.Add(-1)
	if ok {
		g.completed.Add(1)
	} else {
		g.failed.Add(1)
	}
}

// InFlight is the number of runs on g now.
func (g *Group) InFlight() int64 { return g.inFlight.Load() }

// Completed is the number of runs g finished without error.
func (g *Group) Completed() int64 { return g.completed.Load() }

// CountWaits adds cross-stream waits a step inserted on g's streams, and
// those TF_REDUCE_STREAM_WAIT found implied by earlier ones.
func (g *Group) CountWaits(inserted, skipped int) {
	if inserted > 0 {
		g.waits.Add(int64(inserted))
	}
	if skipped > 0 {
		g.waitsSkipped.Add(int64(skipped))
	}
}

// CountLaunch adds one device step's launch: the host time it took to
// enqueue (feeds, kernels, fetches; not the final wait) and the device
// nodes it launched, for the launch-cost measurement of bench/gpu.
func (g *Group) CountLaunch(d time.Duration, nodes int) {
	g.launchNs.Add(int64(d))
	g.launchNodes.Add(int64(nodes))
	g.launchSteps.Add(1)
}

// CountNodeLaunch adds, of a step's launch, the host time spent launching
// its nodes (not the feeds, the fetches or the final event), so the
// per-node cost and the per-step cost are told apart (Stats.LaunchNodeNs).
func (g *Group) CountNodeLaunch(d time.Duration) { g.launchNodeNs.Add(int64(d)) }

// Streams lists the group's distinct streams: compute, h2d, d2h, d2d, or
// one when merged.
func (g *Group) Streams() []device.Stream {
	if g.H2D == g.Compute {
		return []device.Stream{g.Compute}
	}
	return []device.Stream{g.Compute, g.H2D, g.D2H, g.D2D}
}

// Close waits for every stream to drain, stops them and the pools the Set
// owns, and returns every allocator's regions.
func (s *Set) Close() {
	for _, st := range s.streams {
		st.Synchronize()
	}
	s.Holder.Drain()
	for _, st := range s.streams {
		st.Close()
	}
	for _, p := range s.ownedPools {
		p.Close()
	}
	for _, p := range s.ownedIntra {
		if c, ok := p.(interface{ Close() }); ok {
			c.Close()
		}
	}
	for _, h := range s.staging {
		h.Close()
	}
	closed := map[*bfc.Allocator]bool{}
	for _, g := range s.groups {
		for _, a := range []*bfc.Allocator{g.Alloc, g.HostAlloc} {
			if a != nil && !closed[a] {
				closed[a] = true
				a.Close()
			}
		}
	}
}

// budget is a memory limit shared by several allocators.
type budget struct {
	mu          sync.Mutex
	used, limit uint64
}

// budgetMemory is device memory drawn against a shared budget: an
// allocator's region growth is refused when the device's groups together
// would pass the limit (bfc then retries smaller).
type budgetMemory struct {
	device.Memory
	b     *budget
	mu    sync.Mutex
	sizes map[uint64]uint64
}

func (m *budgetMemory) Alloc(size uint64) (uint64, error) {
	m.b.mu.Lock()
	if m.b.used+size > m.b.limit {
		used, limit := m.b.used, m.b.limit
		m.b.mu.Unlock()
		return 0, status.Errorf(status.ResourceExhausted, "shared pool: %d bytes more would pass the limit %d (%d in regions)", size, limit, used)
	}
	m.b.used += size
	m.b.mu.Unlock()
	base, err := m.Memory.Alloc(size)
	if err != nil {
		m.b.mu.Lock()
		m.b.used -= size
		m.b.mu.Unlock()
		return 0, err
	}
	m.mu.Lock()
	m.sizes[base] = size
	m.mu.Unlock()
	return base, nil
}

func (m *budgetMemory) Free(base uint64) {
	m.mu.Lock()
	size := m.sizes[base]
	delete(m.sizes, base)
	m.mu.Unlock()
	m.Memory.Free(base)
	m.b.mu.Lock()
	m.b.used -= size
	m.b.mu.Unlock()
}
