package session

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"mstream/envcfg"
	"mstream/exec"
	"mstream/graph"
	"mstream/proto/tfpb"
	"mstream/status"
	"mstream/tensor"
)

// Version is mstream's own version, reported by MS_Version.
const Version = "0.1.0"

// CPUDeviceName is the host device's TF name.
const CPUDeviceName = "/job:localhost/replica:0/task:0/device:CPU:0"

// cpuMemoryBytes is what TF reports as the CPU device's memory limit.
const cpuMemoryBytes = 268435456

const maxCachedPlans = 1024

type state struct {
	env      *envcfg.Config
	closed   atomic.Bool
	pools    []*exec.Pool
	intra    *exec.Intra
	interN   int
	intraN   int
	planMu   sync.Mutex
	plans    map[string]*exec.Plan
	inflight atomic.Int64
	done     atomic.Int64
	failed   atomic.Int64

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
	if o.Env != nil {
		lookup = envcfg.LookupMap(o.Env)
	}
	env, err := envcfg.Load(lookup)
	if err != nil {
		return nil, err
	}
	st := &state{env: env, plans: map[string]*exec.Plan{}, pruns: map[string]*partialRun{}}
	st.interN = int(cfg.GetInterOpParallelismThreads())
	if st.interN <= 0 {
		st.interN = runtime.NumCPU()
	}
	st.intraN = int(cfg.GetIntraOpParallelismThreads())
	if st.intraN <= 0 {
		st.intraN = runtime.NumCPU()
	}
	if ps := cfg.GetSessionInterOpThreadPool(); len(ps) > 0 {
		for i, p := range ps {
			n := int(p.GetNumThreads())
			if n < 0 {
				return nil, status.InvalidArg("ConfigProto session_inter_op_thread_pool[%d].num_threads = %d is negative", i, n)
			}
			st.pools = append(st.pools, exec.NewPool(n))
		}
	} else {
		st.pools = []*exec.Pool{exec.NewPool(st.interN)}
	}
	st.intra = exec.NewIntra(st.intraN)
	return &Session{g: g, opts: o, impl: st}, nil
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
	var key strings.Builder
	fmt.Fprintf(&key, "%d|", s.g.Version())
	for _, f := range feeds {
		fmt.Fprintf(&key, "%d:%d,", f.Node.ID, f.Index)
	}
	key.WriteByte('|')
	for _, f := range fetches {
		fmt.Fprintf(&key, "%d:%d,", f.Node.ID, f.Index)
	}
	key.WriteByte('|')
	for _, t := range targets {
		fmt.Fprintf(&key, "%d,", t.ID)
	}
	k := key.String()
	st := s.impl
	st.planMu.Lock()
	p := st.plans[k]
	st.planMu.Unlock()
	if p != nil {
		return p, nil
	}
	s.g.RLock()
	p, err := exec.Build(s.g, feeds, fetches, targets)
	s.g.RUnlock()
	if err != nil {
		return nil, err
	}
	st.planMu.Lock()
	if len(st.plans) >= maxCachedPlans {
		st.plans = map[string]*exec.Plan{}
	}
	st.plans[k] = p
	st.planMu.Unlock()
	return p, nil
}

func (s *Session) run(runOpts *tfpb.RunOptions, feeds []Feed, fetches []graph.Output, targets []*graph.Node) ([]*tensor.Tensor, *tfpb.RunMetadata, error) {
	if err := s.checkOpen(); err != nil {
		return nil, nil, err
	}
	if err := s.checkNodes(feedOutputs(feeds), fetches, targets); err != nil {
		return nil, nil, err
	}
	st := s.impl
	pool := st.pools[0]
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
	plan, err := s.planFor(feedOutputs(feeds), fetches, targets)
	if err != nil {
		return nil, nil, err
	}
	vals := make([]*tensor.Tensor, len(feeds))
	for i, f := range feeds {
		if err := checkFeed(f, plan.FeedShapes[i]); err != nil {
			return nil, nil, err
		}
		vals[i] = f.Tensor
	}
	trace := runOpts != nil && runOpts.TraceLevel != tfpb.RunOptions_NO_TRACE
	st.inflight.Add(1)
	out, stats, err := plan.Run(ctx, &exec.Runtime{Inter: pool, Intra: st.intra}, vals, exec.Options{Trace: trace})
	st.inflight.Add(-1)
	if err != nil {
		st.failed.Add(1)
		if ctx.Err() == context.DeadlineExceeded {
			err = status.Errorf(status.DeadlineExceeded, "Timed out after %d ms: %v", runOpts.TimeoutInMs, err)
		}
		return nil, nil, err
	}
	st.done.Add(1)
	var md *tfpb.RunMetadata
	if trace {
		md = stepStats(stats)
	}
	return out, md, nil
}

func feedOutputs(feeds []Feed) []graph.Output {
	out := make([]graph.Output, len(feeds))
	for i, f := range feeds {
		out[i] = f.Output
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

func checkFeed(f Feed, want tensor.PartialShape) error {
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
	if !want.Compatible(t.Shape) {
		return status.InvalidArg("feed '%s:%d' has shape %v but the graph expects %v", f.Output.Node.Name, f.Output.Index, t.Shape, want)
	}
	return nil
}

func stepStats(stats []exec.NodeStat) *tfpb.RunMetadata {
	ds := &tfpb.DeviceStepStats{Device: CPUDeviceName}
	for _, s := range stats {
		start := s.Start.UnixMicro()
		end := s.End.UnixMicro()
		ds.NodeStats = append(ds.NodeStats, &tfpb.NodeExecStats{
			NodeName:         s.Node,
			TimelineLabel:    s.Node + " = " + s.Op + "()",
			AllStartMicros:   start,
			OpStartRelMicros: 0,
			OpEndRelMicros:   end - start,
			AllEndRelMicros:  end - start,
			AllStartNanos:    s.Start.UnixNano(),
			OpEndRelNanos:    s.End.Sub(s.Start).Nanoseconds(),
			AllEndRelNanos:   s.End.Sub(s.Start).Nanoseconds(),
			ThreadId:         0,
		})
	}
	return &tfpb.RunMetadata{StepStats: &tfpb.StepStats{DevStats: []*tfpb.DeviceStepStats{ds}}}
}

func (s *Session) close() error {
	if s.impl.closed.Swap(true) {
		return nil
	}
	for _, p := range s.impl.pools {
		p.Close()
	}
	return nil
}

func (s *Session) devices() []DeviceInfo {
	return []DeviceInfo{{Name: CPUDeviceName, Type: "CPU", MemoryBytes: cpuMemoryBytes, Incarnation: 1}}
}

func (s *Session) statsJSON() ([]byte, error) {
	st := s.impl
	poolSizes := make([]int, len(st.pools))
	for i, p := range st.pools {
		poolSizes[i] = p.Size()
	}
	st.planMu.Lock()
	nplans := len(st.plans)
	st.planMu.Unlock()
	return json.Marshal(map[string]any{
		"version":          Version,
		"devices":          s.devices(),
		"inter_op_pools":   poolSizes,
		"intra_op_threads": st.intraN,
		"cached_plans":     nplans,
		"closed":           st.closed.Load(),
		"groups": []map[string]any{{
			"id":             0,
			"device":         CPUDeviceName,
			"runs_completed": st.done.Load(),
			"runs_failed":    st.failed.Load(),
			"runs_in_flight": st.inflight.Load(),
		}},
	})
}

func (s *Session) configJSON() ([]byte, error) {
	return json.Marshal(map[string]any{"knobs": s.impl.env.Effective()})
}
