package session

import (
	"mstream/graph"
	"mstream/kernels"
	"mstream/lower"
	"mstream/optimize"
	"mstream/proto/tfpb"
	"mstream/status"
	"mstream/tensor"
)

// Options are TF_SessionOptions: the target (only "" and "local" run here)
// and the ConfigProto.
type Options struct {
	Target string
	Config *tfpb.ConfigProto
	// Env, when non-nil, replaces the process environment as the source of
	// the TF_* and MSTREAM_* knobs (tests give each session its own).
	Env map[string]string
	// Getenv, when set and Env is nil, is how the knobs are read when the
	// session is made: capi passes the C environment's getenv, so a host's
	// setenv before TF_NewSession takes effect as it does in TF. Unset,
	// the Go runtime's copy of the environment is read (os.LookupEnv).
	Getenv func(name string) (string, bool)
}

// Feed replaces one output of the graph with a value for one Run.
type Feed struct {
	Output graph.Output
	Tensor *tensor.Tensor
}

// DeviceInfo describes one device as TF_SessionListDevices reports it.
type DeviceInfo struct {
	Name        string // /job:localhost/replica:0/task:0/device:CPU:0
	Type        string // CPU or GPU
	MemoryBytes int64
	Incarnation uint64
}

// Session runs a graph. Its methods are safe to call from many goroutines
// at once; an error in one Run leaves the session usable.
type Session struct {
	g    *graph.Graph
	opts Options
	impl *state
}

// New creates a session over g. The graph may keep growing; each Run sees
// the nodes added before it.
func New(g *graph.Graph, opts *Options) (*Session, error) { return newSession(g, opts) }

// Run feeds, fetches and runs targets. runOpts may be nil; the returned
// RunMetadata is nil unless runOpts asked for tracing. Feeds are read during
// the call only and never kept.
func (s *Session) Run(runOpts *tfpb.RunOptions, feeds []Feed, fetches []graph.Output, targets []*graph.Node) ([]*tensor.Tensor, *tfpb.RunMetadata, error) {
	return s.RunTo(runOpts, feeds, fetches, targets, nil)
}

// RunTo is Run that, with deliver set, hands the fetched tensors to
// deliver instead of returning them: they are valid during that call
// only, and deliver copies what it keeps (the C API copies them into the
// caller's TF_Tensors, so the copy Run makes for the caller is skipped).
// deliver's error is the Run's; RunTo then returns no tensors.
func (s *Session) RunTo(runOpts *tfpb.RunOptions, feeds []Feed, fetches []graph.Output, targets []*graph.Node, deliver func([]*tensor.Tensor) error) ([]*tensor.Tensor, *tfpb.RunMetadata, error) {
	var out []*tensor.Tensor
	var md *tfpb.RunMetadata
	var err error
	if len(fetches) == 0 && len(targets) == 0 {
		// TF's words; a partial run's step may fetch nothing (it feeds).
		err = status.InvalidArg("Must specify at least one target to fetch or execute.")
	} else {
		out, md, err = s.run(runOpts, feeds, fetches, targets, deliver)
	}
	if err != nil && !s.impl.closed.Load() {
		// Every failed Run counts in MS_SessionStats, those rejected before
		// a step starts (bad feeds, unknown outputs, plan errors) too.
		s.impl.failed.Add(1)
	}
	return out, md, err
}

// PRunSetup starts a partial run that will be fed the given outputs and
// fetch the given outputs over several PRun calls; it returns the handle.
func (s *Session) PRunSetup(feeds, fetches []graph.Output, targets []*graph.Node) (string, error) {
	return s.prunSetup(feeds, fetches, targets)
}

// PRun continues a partial run.
func (s *Session) PRun(handle string, feeds []Feed, fetches []graph.Output, targets []*graph.Node) ([]*tensor.Tensor, error) {
	return s.prun(handle, feeds, fetches, targets)
}

// Close releases resources; later Runs fail with FAILED_PRECONDITION... as
// TF does ("Session has been closed.").
func (s *Session) Close() error { return s.close() }

// Devices lists the devices the session runs on.
func (s *Session) Devices() []DeviceInfo { return s.devices() }

// StatsJSON is MS_SessionStats: effective configuration and per-group stats.
func (s *Session) StatsJSON() ([]byte, error) { return s.statsJSON() }

// Stats is MS_SessionStats as a Go value.
func (s *Session) Stats() Stats { return s.stats() }

// WriteTrace is MS_SessionWriteTrace: the Chrome trace of the steps kept so
// far (traced Runs, or every Run with MSTREAM_TRACE) goes to path.
func (s *Session) WriteTrace(path string) error { return s.writeTrace(path) }

// ConfigJSON is MS_SessionConfig: every knob with the value this session
// runs with, whether it was set, and its raw text.
func (s *Session) ConfigJSON() ([]byte, error) { return s.configJSON() }

var _ = status.OK

// optimized is the signature a plan is built from: the user's with its
// function calls inlined and its If/Case/While lowered (package lower,
// always), then package optimize's rewritten copy with the passes the
// ConfigProto asks for (the fusions unless MSTREAM_FUSION=0), if any. The
// caller holds the graph's read lock.
func (s *Session) optimized(feeds, fetches []graph.Output, targets []*graph.Node) ([]graph.Output, []graph.Output, []*graph.Node, error) {
	lw, err := lower.Lower(s.g, feeds, fetches, targets)
	if err != nil {
		return nil, nil, nil, err
	}
	feeds, fetches, targets = lw.Feeds, lw.Fetches, lw.Targets
	st := s.impl
	if st.passes == 0 {
		return feeds, fetches, targets, nil
	}
	devs := []string{kernels.CPU}
	if len(st.devices) > 1 {
		devs = append(devs, kernels.GPU) // nodes may be placed on a GPU too
	}
	opt := optimize.Options{Devices: devs, Passes: st.passes}
	if len(st.env.StreamRules) > 0 {
		opt.Group = st.ruleGroup
	}
	r := optimize.Rewrite(feeds, fetches, targets, opt)
	return r.Feeds, r.Fetches, r.Targets, nil
}
