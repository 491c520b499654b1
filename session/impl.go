package session

import (
	"context"
	"encoding/binary"
	"errors"
	"os"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"mstream/device"
	"mstream/device/host"
	"mstream/envcfg"
	"mstream/exec"
	"mstream/graph"
	"mstream/groups"
	"mstream/hostmem"
	"mstream/kernels"
	"mstream/optimize"
	"mstream/proto/tfpb"
	"mstream/resource"
	"mstream/status"
	"mstream/tensor"
	"mstream/trace"
)

// Version is mstream's own version, reported by MS_Version.
const Version = "0.1.0"

// CPUDeviceName is the host device's TF name.
const CPUDeviceName = host.Name

const maxCachedPlans = 1024

// jitter is the largest random delay the stream sanitizer puts before each
// host stream item, and before items of a GPU step (a spin kernel).
const jitter = 150 * time.Microsecond

type state struct {
	env     *envcfg.Config
	closed  atomic.Bool
	pools   []*exec.Pool // session_inter_op_thread_pool entries
	global  *exec.Pool   // the inter-op pool when there are no entries
	intra   *exec.Intra
	interN  int
	intraN  int
	devices []device.Device
	set     *groups.Set
	// hostRT is, per group of device 0 (by Index), the Runtime of a
	// graph-level step on it: made once, as a step only reads it, so a
	// Run allocates none.
	hostRT []*exec.Runtime
	// gpuPool picks over every GPU's groups (MSTREAM_GPU_POOL in
	// graph-level mode with a GPU): each Run's unpinned GPU nodes go to
	// the least-loaded group of any GPU; nil without the pool.
	gpuPool *groups.Spread
	// gpu is the index in devices of the first GPU (a plan on GPU k uses
	// device gpu+k), -1 on the CPU; softPlacement is ConfigProto
	// allow_soft_placement.
	gpu           int
	softPlacement bool
	// passes are the plan-time rewrites the ConfigProto asks for (as TF's
	// graph optimizers), less the fusions when MSTREAM_FUSION=0.
	passes optimize.Pass
	// streams says whether Runs execute on the groups' streams (more than
	// one group, node-level mode, or MSTREAM_HOST_STREAMS) or, as stock
	// TF's CPU device does, on the inter-op pool.
	streams   bool
	nodeLevel bool
	rec       trace.Recorder
	recordAll bool // MSTREAM_TRACE: every step goes to rec
	// graphs replays GPU steps as CUDA graphs (MSTREAM_CUDA_GRAPH).
	graphs *exec.GraphCache
	// cpuKernels is what loadCPUKernels found, for MS_SessionStats.
	cpuKernels CPUKernels
	// gcHeadroom is the process's reserve against the Go collector
	// (MSTREAM_GC_HEADROOM_MB), as this session's creation left it.
	gcHeadroom hostmem.GCHeadroom

	// resources holds the session's variables and tables; every plan's
	// stateful kernels share it (resource/doc.go).
	resources *resource.Manager

	// plans is the plan cache, read by every Run without a lock; planMu
	// serialises its writers, which store a new map (at most
	// maxCachedPlans entries, one per signature).
	planMu  sync.Mutex
	plans   atomic.Pointer[map[string]*exec.Plan]
	assigns sync.Map // *exec.Plan -> []int (node-level group per plan node)
	// nodeGroups keeps, per plan, gpuNodeGroups' assignment over the
	// session's GPU groups and the groups it uses (nodeGroupsEntry).
	nodeGroups sync.Map

	// What every Run writes sits on cache lines of its own: beside the
	// fields above, which Runs only read, concurrent Runs made each
	// other's reads miss (128 bytes: a core may fetch lines in pairs).
	_        [128]byte
	runMu    sync.RWMutex // runs hold it shared; Close takes it exclusively
	inflight atomic.Int64
	done     atomic.Int64
	failed   atomic.Int64
	runSeq   atomic.Int64
	_        [128]byte

	prunMu  sync.Mutex
	pruns   map[string]*partialRun
	prunSeq atomic.Int64
}

func newSession(g *graph.Graph, opts *Options) (*Session, error) {
	if g == nil {
		return nil, status.InvalidArg("session needs a graph")
	}
	o := Options{}
	if opts != nil {
		o = *opts
	}
	switch o.Target {
	case "", "local", "direct":
	default:
		return nil, status.Errorf(status.NotFound,
			"no session factory registered for target %q: only in-process sessions (target \"\" or \"local\") are supported", o.Target)
	}
	cfg := o.Config
	if cfg == nil {
		cfg = &tfpb.ConfigProto{}
	}
	// The knobs are read once, here: a bad value fails TF_NewSession, and a
	// session never sees the environment change under it.
	lookup := os.LookupEnv
	switch {
	case o.Env != nil:
		lookup = envcfg.LookupMap(o.Env)
	case o.Getenv != nil:
		lookup = o.Getenv
	}
	env, err := envcfg.Load(lookup)
	if err != nil {
		return nil, err
	}
	st := &state{env: env, resources: resource.NewManager(), pruns: map[string]*partialRun{}, gpu: -1,
		softPlacement: cfg.GetAllowSoftPlacement(), passes: optimize.PassesFor(cfg)}
	if !env.Fusion {
		st.passes &^= optimize.Remap
	}
	st.interN = int(cfg.GetInterOpParallelismThreads())
	if st.interN <= 0 {
		st.interN = runtime.NumCPU()
	}
	st.intraN = int(cfg.GetIntraOpParallelismThreads())
	if st.intraN <= 0 {
		st.intraN = runtime.NumCPU()
	}
	if err := st.checkConfig(cfg); err != nil {
		return nil, err
	}
	if err := st.loadCPUKernels(); err != nil {
		return nil, err
	}
	st.gcHeadroom = hostmem.ReserveGCHeadroom(env.GCHeadroomMB << 20)
	if ps := cfg.GetSessionInterOpThreadPool(); len(ps) > 0 {
		for _, p := range ps {
			st.pools = append(st.pools, exec.NewPool(int(p.GetNumThreads())))
		}
	} else {
		st.global = exec.NewPool(st.interN)
	}
	st.intra = exec.NewIntra(st.intraN)
	if err := st.makeGroups(cfg); err != nil {
		st.closePools()
		return nil, err
	}
	st.recordAll = env.Trace != ""
	st.openGraphs()
	for _, g := range st.set.OnDevice(0) {
		st.hostRT = append(st.hostRT, &exec.Runtime{Groups: []*groups.Group{g}, Streams: st.streams, Inter: g.Launch,
			ReduceWaits: st.env.ReduceStreamWait, Holder: &st.set.Holder, Intra: g.Intra})
	}
	return &Session{g: g, opts: o, impl: st}, nil
}

// checkConfig rejects what the ConfigProto asks that cannot be honoured.
func (st *state) checkConfig(cfg *tfpb.ConfigProto) error {
	for i, p := range cfg.GetSessionInterOpThreadPool() {
		if n := p.GetNumThreads(); n < 0 {
			return status.InvalidArg("ConfigProto session_inter_op_thread_pool[%d].num_threads = %d is negative", i, n)
		}
	}
	gpu := cfg.GetGpuOptions()
	if f := gpu.GetPerProcessGpuMemoryFraction(); f < 0 {
		return status.InvalidArg("ConfigProto gpu_options.per_process_gpu_memory_fraction = %v is negative", f)
	}
	for d, vd := range gpu.GetExperimental().GetVirtualDevices() {
		if l := vd.GetMemoryLimitMb(); len(l) > 1 {
			return status.InvalidArg("ConfigProto gpu_options.experimental.virtual_devices[%d] asks for %d virtual devices: one per device is supported", d, len(l))
		} else if len(l) == 1 && l[0] < 0 {
			return status.InvalidArg("ConfigProto gpu_options.experimental.virtual_devices[%d].memory_limit_mb = %v is negative", d, l[0])
		}
	}
	if f := gpu.GetExperimental().GetInternalFragmentationFraction(); f < 0 || f > 1 {
		return status.InvalidArg("ConfigProto gpu_options.experimental.internal_fragmentation_fraction = %v is outside [0, 1]", f)
	}
	return nil
}

// makeGroups creates the devices (the host device; CUDA plugs in here) and
// their stream groups from the knobs and the ConfigProto.
func (st *state) makeGroups(cfg *tfpb.ConfigProto) error {
	env := st.env
	d := host.New()
	// TF's CPU device has no memory cap. Unless the user sets one, the
	// host device's "memory" is the machine's, which bounds what one
	// allocation may ask for (a hostile size fails with RESOURCE_EXHAUSTED
	// instead of aborting the process) and what the group split divides.
	d.MemBytes = hostmem.Physical()
	if env.HostMemoryMB > 0 {
		d.MemBytes = env.HostMemoryMB << 20
	}
	d.NumContexts = env.ContextCount
	if env.StreamJitter {
		d.Jitter = jitter
	}
	st.devices = []device.Device{d}
	gpus, err := st.openGPUs()
	if err != nil {
		return err
	}
	if len(gpus) > 0 {
		st.logCPUKernels(nil) // host nodes run on them too
	}
	counts := make([]int, len(st.devices))
	for i := range counts {
		counts[i] = env.GroupCount(i)
	}
	gpu := cfg.GetGpuOptions()
	growth := gpu.GetAllowGrowth()
	if env.IsSet("TF_FORCE_GPU_ALLOW_GROWTH") {
		// TF lets the variable override the ConfigProto either way.
		growth = env.ForceGPUAllowGrowth
	}
	if env.HostMemoryMB == 0 {
		// Without a cap the limit is the machine's memory: taking it all
		// at the first allocation (TF's GPU behaviour, which a set cap
		// emulates) would claim the machine, so regions grow on demand.
		growth = true
	}
	var limits []float64
	for _, vd := range gpu.GetExperimental().GetVirtualDevices() {
		l := 0.0
		if ml := vd.GetMemoryLimitMb(); len(ml) == 1 {
			l = float64(ml[0])
		}
		limits = append(limits, l)
	}
	if len(gpus) > 0 {
		// The host device (0) runs plans with no GPU node. GPU i is
		// device 1+i with TF_GPU_STREAM_GROUP_COUNT's i-th count, and
		// virtual_devices[i] applies to it. Its regions
		// grow on demand (allocators are per session, not per process as
		// in TF, so one session must not take the whole GPU up front),
		// within the configured limit or, when none is, the memory free
		// now less a reserve.
		st.devices = gpuDevices(d, gpus)
		st.gpu = 1
		counts = deviceCounts(env, len(gpus))
		limits = deviceLimitsMB(limits, gpu.GetPerProcessGpuMemoryFraction(), len(gpus), func(i int) float64 { return gpuLimitMB(gpus[i]) })
		growth = true
		st.logf(0, "running on %d GPU(s): %s; GEMMs: %s", len(gpus), gpuSummary(gpus, counts[1:]), smallGEMMSummary[env.SmallGEMM])
	}
	gc := groups.Config{
		Devices: st.devices, Counts: counts, Merge: env.StreamMerge, Contexts: env.ContextCount,
		PerGroupHostAlloc: env.PerStreamHostAlloc, SegmentOwnConst: env.SegmentOwnConst,
		ShareMemPool: env.ShareMemPool, StreamAware: env.StreamAwareBFC,
		ExtendLimit: uint64(env.BFCExtendLimitMB) << 20, AllowGrowth: growth,
		MemoryFraction: gpu.GetPerProcessGpuMemoryFraction(), MemoryLimitMB: limits,
		InternalFragFraction: gpu.GetExperimental().GetInternalFragmentationFraction(),
		HostMemLimit:         uint64(float64(gpu.GetExperimental().GetGpuHostMemLimitInMb()) * (1 << 20)),
		ThreadMode:           groups.ThreadMode(env.ThreadMode), ThreadCount: env.ThreadCount,
		GlobalIntra: st.intra,
		NewPool:     func(n int) groups.Pool { return exec.NewPool(n) },
		NewIntra:    func(n int) kernels.Parallelizer { return exec.NewIntra(n) },
	}
	for _, p := range st.pools {
		gc.SessionPools = append(gc.SessionPools, p)
	}
	if st.global != nil {
		gc.GlobalPool = st.global
	}
	if env.NodeLevel {
		for _, r := range env.StreamRules {
			if n := counts[0]; r.Group >= n {
				return status.InvalidArg("TF_STREAM_FROM_FILE=%q assigns nodes to stream group %d, but TF_GPU_STREAM_GROUP_COUNT gives %d groups (0 to %d)",
					env.StreamFromFile, r.Group, n, n-1)
			}
		}
	}
	set, err := groups.New(gc)
	if err != nil {
		return err
	}
	st.set = set
	st.nodeLevel = env.NodeLevel
	switch {
	case env.GPUPool && env.NodeLevel && len(gpus) > 0:
		st.logf(1, "MSTREAM_GPU_POOL is for graph-level mode: node-level mode (TF_NODE_LEVEL_MULTISTREAM) places nodes as TF does, unpinned ones on GPU:0")
	case env.GPUPool && len(gpus) > 0:
		var devs []int
		for i := range gpus {
			devs = append(devs, st.gpu+i)
		}
		st.gpuPool = set.Spread(devs)
		st.logf(0, "GPU pool: each Run's unpinned nodes run on the least-loaded of %d stream group(s) over %d GPU(s)", len(set.Groups())-1, len(gpus))
	}
	st.streams = counts[0] > 1 || env.NodeLevel || env.HostStreams
	return nil
}

func (st *state) closePools() {
	for _, p := range st.pools {
		p.Close()
	}
	if st.global != nil {
		st.global.Close()
	}
	if st.intra != nil {
		st.intra.Close()
	}
}

func (s *Session) checkOpen() error {
	if s.impl.closed.Load() {
		return status.New(status.Cancelled, "Session has been closed.")
	}
	return nil
}

// planFor returns the cached plan for a signature, building it when the
// graph has changed since.
func (s *Session) planFor(feeds, fetches []graph.Output, targets []*graph.Node) (*exec.Plan, error) {
	// Nodes are only ever added and a node's inputs never change, so a plan
	// stays right as the graph grows; the version in the key picks up
	// refined static shapes (TF_GraphSetTensorShape) for the feed checks.
	// The key is built in a stack buffer and looked up without a string:
	// fmt and a new string per Run were a tenth of a small Run's cost.
	var buf [256]byte
	key := planKey(buf[:0], s.g.Version(), feeds, fetches, targets)
	st := s.impl
	if plans := st.plans.Load(); plans != nil {
		if p := (*plans)[string(key)]; p != nil { // no allocation for a lookup
			return p, nil
		}
	}
	// The plan may keep the lists it is built from: copies, since a Run's
	// fed outputs live on its stack.
	return s.buildPlan(string(key), slices.Clone(feeds), slices.Clone(fetches), slices.Clone(targets))
}

// buildPlan builds the plan of a signature planFor did not find and
// caches it under k.
func (s *Session) buildPlan(k string, feeds, fetches []graph.Output, targets []*graph.Node) (*exec.Plan, error) {
	st := s.impl
	s.g.RLock()
	if err := s.g.CheckNamesLocked(); err != nil {
		s.g.RUnlock()
		return nil, err
	}
	feeds, fetches, targets, err := s.optimized(feeds, fetches, targets)
	if err != nil {
		s.g.RUnlock()
		return nil, err
	}
	p, err := exec.BuildPlaced(s.g, feeds, fetches, targets, st.placement())
	if err == nil && p.Deadness() && len(p.GPUs()) > 1 {
		// A step with frames runs on one GPU's groups (its values are not
		// copied between GPUs): such a plan spread over several GPUs runs
		// on the host, whatever its nodes ask.
		st.logf(1, "a plan with v1 control flow (Switch/Merge) placed on %d GPUs runs on the CPU: a step with frames runs on one GPU", len(p.GPUs()))
		p, err = exec.BuildPlaced(s.g, feeds, fetches, targets, exec.Placement{AllowSoft: true, Strict: true, Resources: st.resources})
	}
	s.g.RUnlock()
	if err != nil {
		return nil, err
	}
	st.planMu.Lock()
	old := st.plans.Load()
	if old != nil {
		if q := (*old)[k]; q != nil {
			// Another Run built it meanwhile: keep one.
			st.planMu.Unlock()
			p.Close()
			return q, nil
		}
	}
	plans := map[string]*exec.Plan{}
	var evicted []*exec.Plan
	if old != nil {
		// A plan keyed to an older version of the graph is never looked
		// up again (planFor keys by the graph's version now, which only
		// grows), so it goes when the first plan of a newer version is
		// made rather than when the cache is full. A full cache starts
		// over.
		v, full := keyVersion(k), len(*old) >= maxCachedPlans
		for key, q := range *old {
			if full || keyVersion(key) < v {
				evicted = append(evicted, q)
			} else {
				plans[key] = q
			}
		}
	}
	plans[k] = p
	st.plans.Store(&plans)
	st.planMu.Unlock()
	// Their kernels' resources go when the Runs still on them end.
	for _, q := range evicted {
		st.assigns.Delete(q) // keyed by plan: it would keep the plan alive
		st.nodeGroups.Delete(q)
		q.Close()
		if st.graphs != nil {
			st.graphs.Drop(q) // its CUDA graphs and their buffers
		}
	}
	return p, nil
}

// closePlans drops every cached plan, closing the kernels that hold
// resources outside the Go heap (oneDNN primitives); Close calls it once
// no Run is in flight.
func (st *state) closePlans() {
	st.planMu.Lock()
	old := st.plans.Swap(nil)
	st.planMu.Unlock()
	if old != nil {
		for _, p := range *old {
			p.Close()
		}
	}
}

func (s *Session) run(runOpts *tfpb.RunOptions, feeds []Feed, fetches []graph.Output, targets []*graph.Node, deliver func([]*tensor.Tensor) error) ([]*tensor.Tensor, *tfpb.RunMetadata, error) {
	st := s.impl
	st.runMu.RLock()
	defer st.runMu.RUnlock()
	if err := s.checkOpen(); err != nil {
		return nil, nil, err
	}
	var fo [8]graph.Output // a Run's fed outputs, without an allocation up to 8
	feedOuts := feedOutputs(fo[:0], feeds)
	if err := s.checkNodes(feedOuts, fetches, targets); err != nil {
		return nil, nil, err
	}
	if err := checkFedFetched(feeds, fetches); err != nil {
		return nil, nil, err
	}
	var pool exec.Submitter
	if runOpts != nil && runOpts.InterOpThreadPool != 0 {
		i := int(runOpts.InterOpThreadPool)
		if i < 0 || i >= len(st.pools) {
			return nil, nil, status.InvalidArg("Invalid inter_op_thread_pool: %d (the session has %d pools)", i, len(st.pools))
		}
		pool = st.pools[i]
	}
	ctx := context.Background()
	if runOpts != nil && runOpts.TimeoutInMs > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, time.Duration(runOpts.TimeoutInMs)*time.Millisecond)
		defer cancel()
	}
	plan, err := s.planFor(feedOuts, fetches, targets)
	if err != nil {
		return nil, nil, err
	}
	vals := make([]*tensor.Tensor, len(feeds))
	for i, f := range feeds {
		if err := checkFeed(f); err != nil {
			return nil, nil, err
		}
		vals[i] = f.Tensor
	}
	traced := runOpts != nil && runOpts.TraceLevel != tfpb.RunOptions_NO_TRACE
	opts := exec.Options{Trace: traced || st.recordAll, Run: st.runSeq.Add(1), Deliver: deliver}
	out, step, err := s.execute(ctx, plan, vals, opts, pool)
	for errors.Is(err, exec.ErrClosed) {
		// Evicted between the lookup and its step, the plan ran
		// nothing: the Run takes the signature's new plan.
		if plan, err = s.planFor(feedOuts, fetches, targets); err != nil {
			return nil, nil, err
		}
		out, step, err = s.execute(ctx, plan, vals, opts, pool)
	}
	if step != nil && (traced || st.recordAll) {
		st.rec.Add(*step)
	}
	if err != nil {
		if ctx.Err() == context.DeadlineExceeded {
			err = status.Errorf(status.DeadlineExceeded, "Timed out after %d ms: %v", runOpts.TimeoutInMs, err)
		}
		return nil, nil, err
	}
	st.done.Add(1)
	var md *tfpb.RunMetadata
	if traced && step != nil {
		md = trace.RunMetadata(*step)
	}
	return out, md, nil
}

// execute runs one step: stepGroups picks the groups and the assignment,
// and the plan runs once on them (exec's one Run, whatever the device
// and mode).
func (s *Session) execute(ctx context.Context, plan *exec.Plan, vals []*tensor.Tensor, opts exec.Options, pool exec.Submitter) ([]*tensor.Tensor, *trace.Step, error) {
	// Counted with a defer: a panic that escapes the step (capi turns it
	// into TF_INTERNAL) must not leave the Run in flight for ever.
	s.impl.inflight.Add(1)
	defer s.impl.inflight.Add(-1)
	rt, used, err := s.stepGroups(plan)
	if err != nil {
		return nil, nil, err
	}
	if pool != nil {
		r := *rt // stepGroups' may be the session's, shared by every Run
		r.Inter = pool
		rt = &r
	}
	out, step, err := plan.Run(ctx, rt, vals, opts)
	for _, g := range used {
		g.Done(err == nil)
	}
	return out, step, err
}

// stepGroups picks what a step of plan runs on and begins a run on each
// group it uses (the caller calls Done on every one of used). Graph-level
// mode: the group Pick chooses on the plan's device (for a plan placed on
// several GPUs, one on each, every node on its GPU's); node-level mode:
// the groups of the plan's device(s), each node on the one
// TF_STREAM_FROM_FILE assigns it. One host group without streams runs on
// its launch pool (the inter-op pool), unless the Run names another.
func (s *Session) stepGroups(plan *exec.Plan) (rt *exec.Runtime, used []*groups.Group, err error) {
	st := s.impl
	if st.gpu >= 0 && plan.OnGPU() {
		return s.gpuGroups(plan)
	}
	if st.nodeLevel {
		gs := st.set.OnDevice(0)
		assign, idx := st.assignment(plan, len(gs))
		for _, gi := range idx {
			gs[gi].Begin()
			used = append(used, gs[gi])
		}
		return &exec.Runtime{Groups: gs, Assign: assign, ReduceWaits: st.env.ReduceStreamWait,
			Holder: &st.set.Holder, Intra: gs[0].Intra}, used, nil
	}
	rt = st.hostRT[st.set.Pick(0).Index]
	return rt, rt.Groups, nil
}

// planKey appends the plan cache's key of a signature to b: the graph's
// version, then each feed's and fetch's node ID and index and each
// target's ID, as varints, with a count before each list so that no two
// signatures share a key.
func planKey(b []byte, version uint64, feeds, fetches []graph.Output, targets []*graph.Node) []byte {
	b = binary.AppendUvarint(b, version)
	for _, l := range [2][]graph.Output{feeds, fetches} {
		b = binary.AppendUvarint(b, uint64(len(l)))
		for _, o := range l {
			b = binary.AppendUvarint(b, uint64(o.Node.ID))
			b = binary.AppendUvarint(b, uint64(o.Index))
		}
	}
	b = binary.AppendUvarint(b, uint64(len(targets)))
	for _, t := range targets {
		b = binary.AppendUvarint(b, uint64(t.ID))
	}
	return b
}

// keyVersion is the graph version a plan key begins with (planKey).
func keyVersion(k string) uint64 {
	v, _ := binary.Uvarint([]byte(k[:min(len(k), binary.MaxVarintLen64)]))
	return v
}

// feedOutputs appends the fed outputs to out.
func feedOutputs(out []graph.Output, feeds []Feed) []graph.Output {
	for _, f := range feeds {
		out = append(out, f.Output)
	}
	return out
}

// checkNodes makes sure every named output exists in this session's graph.
func (s *Session) checkNodes(feeds, fetches []graph.Output, targets []*graph.Node) error {
	check := func(what string, o graph.Output) error {
		if o.Node == nil || s.g.NodeByID(o.Node.ID) != o.Node {
			return status.InvalidArg("%s refers to an operation that is not in the session's graph", what)
		}
		if o.Index < 0 || o.Index >= o.Node.NumOutputs() {
			return status.Errorf(status.OutOfRange, "%s '%s:%d': node '%s' has %d outputs", what, o.Node.Name, o.Index, o.Node.Name, o.Node.NumOutputs())
		}
		return nil
	}
	for _, f := range feeds {
		if err := check("feed", f); err != nil {
			return err
		}
	}
	for _, f := range fetches {
		if err := check("fetch", f); err != nil {
			return err
		}
	}
	for _, t := range targets {
		if t == nil || s.g.NodeByID(t.ID) != t {
			return status.InvalidArg("target refers to an operation that is not in the session's graph")
		}
	}
	return nil
}

// checkFedFetched refuses a fetch that is also fed, as TF does (in its
// words); a plan itself could return the fed value.
func checkFedFetched(feeds []Feed, fetches []graph.Output) error {
	for _, f := range feeds {
		for _, o := range fetches {
			if o == f.Output {
				return status.InvalidArg("%s:%d is both fed and fetched.", o.Node.Name, o.Index)
			}
		}
	}
	return nil
}

func checkFeed(f Feed) error {
	t := f.Tensor
	if t == nil {
		return status.InvalidArg("feed '%s:%d' has no tensor", f.Output.Node.Name, f.Output.Index)
	}
	if dt := f.Output.DType(); t.DType != dt {
		return status.InvalidArg("feed '%s:%d' has dtype %v but the graph expects %v", f.Output.Node.Name, f.Output.Index, t.DType, dt)
	}
	if err := t.Check(); err != nil {
		return status.InvalidArg("feed '%s:%d': %v", f.Output.Node.Name, f.Output.Index, err)
	}
	// No shape check: TF's C API runs a feed of any shape, even one its
	// Placeholder's shape attr rejects (only Python's Session.run checks it),
	// and kernels check the shapes they read.
	return nil
}

func (s *Session) close() error {
	st := s.impl
	if st.closed.Swap(true) {
		return nil
	}
	// Wait for runs in progress, then tear down.
	st.runMu.Lock()
	defer st.runMu.Unlock()
	st.closePlans()
	st.closeGraphs()
	st.set.Close()
	st.closePools()
	st.resources.Close() // stops iterators' prefetch goroutines
	if st.env.Trace != "" {
		if err := st.rec.WriteFile(st.env.Trace); err != nil {
			return status.Errorf(status.Internal, "MSTREAM_TRACE=%q: writing the trace: %v", st.env.Trace, err)
		}
	}
	return nil
}

// writeTrace is MS_SessionWriteTrace.
func (s *Session) writeTrace(path string) error {
	if path == "" {
		return status.InvalidArg("trace path is empty")
	}
	if err := s.impl.rec.WriteFile(path); err != nil {
		return status.Errorf(status.InvalidArgument, "writing the trace to %q: %v", path, err)
	}
	return nil
}

func (s *Session) devices() []DeviceInfo {
	var out []DeviceInfo
	for _, d := range s.impl.devices {
		out = append(out, DeviceInfo{Name: d.Name(), Type: d.Type(), MemoryBytes: d.MemoryBytes(), Incarnation: 1})
	}
	return out
}
