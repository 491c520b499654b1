package envcfg

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"mstream/status"
)

// ThreadMode is TF_GPU_THREAD_MODE.
type ThreadMode string

const (
	ThreadGlobal     ThreadMode = "global"
	ThreadGPUPrivate ThreadMode = "gpu_private"
	ThreadGPUShared  ThreadMode = "gpu_shared"
)

// StreamRule is one line of TF_STREAM_FROM_FILE: nodes whose name matches
// any of the patterns run on stream group Group.
type StreamRule struct {
	Group    int
	Patterns []*regexp.Regexp
}

// Config is the parsed environment.
type Config struct {
	GroupCounts         []int // TF_GPU_STREAM_GROUP_COUNT: one per GPU, or one for all
	NodeLevel           bool
	StreamMerge         bool
	ContextCount        int
	PerStreamHostAlloc  bool
	SegmentOwnConst     bool
	ThreadMode          ThreadMode
	ThreadCount         int
	ShareMemPool        bool
	StreamAwareBFC      bool
	BFCExtendLimitMB    int64
	ReduceStreamWait    bool
	ForwardPropagation  bool
	StreamFromFile      string
	StreamRules         []StreamRule
	StreamAssign        string // MSTREAM_STREAM_ASSIGN: "file" or "auto"
	ForceGPUAllowGrowth bool
	MinLogLevel         int
	Trace               string // MSTREAM_TRACE: Chrome trace output path
	StreamJitter        bool   // MSTREAM_STREAM_JITTER (alias MSTREAM_HOST_STREAM_JITTER)
	Device              string // MSTREAM_DEVICE: "", "cpu" or "gpu"
	HostMemoryMB        int64  // MSTREAM_HOST_MEMORY_MB: the host device's "device memory"; 0 when unset (physical memory, no cap)
	GCHeadroomMB        int64  // MSTREAM_GC_HEADROOM_MB: the least allocation between two Go garbage collections; 0 none
	HostStreams         bool   // MSTREAM_HOST_STREAMS: streams on the host device even with one group
	Fusion              bool   // MSTREAM_FUSION: plan-time fusion of MatMul/Conv2D epilogues, BatchNorm and unary chains
	CUDAGraph           bool   // MSTREAM_CUDA_GRAPH: replay eligible GPU steps as captured CUDA graphs (on by default)
	GPUPool             bool   // MSTREAM_GPU_POOL: every GPU serves graph-level Runs, as one pool of groups
	SmallGEMM           string // MSTREAM_GPU_SMALL_GEMM: "auto", "0" (cuBLAS always) or "1" (the small-batch kernel wherever it can)
	BLAS                string // MSTREAM_BLAS: the cblas library for CPU GEMMs ("" system, "go" pure Go)
	DNNL                string // MSTREAM_DNNL: oneDNN for the CPU's NN kernels ("" system, "off" none)
	CCall               string // MSTREAM_CCALL: how the CPU kernels' C functions are called ("direct" or "cgo")
	// Set holds the raw value of every variable that was set (non-empty),
	// keyed by name.
	Set map[string]string
}

// parseEnum sets *dst to v, trimmed and in lower case, when it is one of
// accepted; else its error lists them (an empty one, "" when unset, is
// accepted but not listed).
func parseEnum(v string, dst *string, accepted ...string) error {
	m := strings.ToLower(strings.TrimSpace(v))
	if slices.Contains(accepted, m) {
		*dst = m
		return nil
	}
	return fmt.Errorf("accepted values are %s", strings.Join(slices.DeleteFunc(slices.Clone(accepted), func(a string) bool { return a == "" }), ", "))
}

// parseMiB sets *dst to v, a whole number of MiB in [lo, hi].
func parseMiB(v string, lo, hi int64, dst *int64) error {
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	if err != nil || n < lo || n > hi {
		return fmt.Errorf("accepted values are whole numbers of MiB from %d to %d", lo, hi)
	}
	*dst = n
	return nil
}

// GroupCount returns the number of stream groups for device i.
func (c *Config) GroupCount(i int) int {
	if len(c.GroupCounts) == 0 {
		return 1
	}
	if i < len(c.GroupCounts) {
		return c.GroupCounts[i]
	}
	return c.GroupCounts[len(c.GroupCounts)-1]
}

// Knob declares one variable.
type Knob struct {
	Name    string
	Type    string // bool, int, ints, enum, path, level, string
	Default string
	Doc     string
	// AliasOf names the knob this one is an older spelling of.
	AliasOf string
	set     func(c *Config, v string) error
}

// Knobs is the table of every variable, in documentation order.
var Knobs = []Knob{
	{Name: "TF_GPU_STREAM_GROUP_COUNT", Type: "ints", Default: "1", Doc: "stream groups per GPU: N, or a comma list with one count per GPU; 1 = stock TF",
		set: func(c *Config, v string) (err error) { c.GroupCounts, err = parseCounts(v); return }},
	{Name: "TF_NODE_LEVEL_MULTISTREAM", Type: "bool", Default: "false", Doc: "node-level (training) mode instead of graph-level",
		set: func(c *Config, v string) (err error) { c.NodeLevel, err = parseBool(v); return }},
	{Name: "TF_GPU_STREAM_MERGE", Type: "bool", Default: "false", Doc: "one stream per group for compute and both copy directions",
		set: func(c *Config, v string) (err error) { c.StreamMerge, err = parseBool(v); return }},
	{Name: "TF_GPU_CONTEXT_COUNT", Type: "int", Default: "1", Doc: "spread the groups over N CUDA contexts",
		set: func(c *Config, v string) (err error) { c.ContextCount, err = parsePositive(v); return }},
	{Name: "TF_PER_STREAM_HOST_ALLOCATOR", Type: "bool", Default: "false", Doc: "a pinned host allocator per group",
		set: func(c *Config, v string) (err error) { c.PerStreamHostAlloc, err = parseBool(v); return }},
	{Name: "TF_SEGMENT_OWN_CONST", Type: "bool", Default: "false", Doc: "constants held once per device and shared by groups",
		set: func(c *Config, v string) (err error) { c.SegmentOwnConst, err = parseBool(v); return }},
	{Name: "TF_GPU_THREAD_MODE", Type: "enum", Default: "global", Doc: "global, gpu_private (TF_GPU_THREAD_COUNT threads per group) or gpu_shared",
		set: func(c *Config, v string) error {
			return parseEnum(v, (*string)(&c.ThreadMode), string(ThreadGlobal), string(ThreadGPUPrivate), string(ThreadGPUShared))
		}},
	{Name: "TF_GPU_THREAD_COUNT", Type: "int", Default: "2", Doc: "threads per group in gpu_private mode (or shared, in gpu_shared)",
		set: func(c *Config, v string) (err error) { c.ThreadCount, err = parsePositive(v); return }},
	{Name: "TF_GPU_STREAM_GROUP_SHARE_MEM_POOL", Type: "bool", Default: "false", Doc: "group allocators share one memory limit",
		set: func(c *Config, v string) (err error) { c.ShareMemPool, err = parseBool(v); return }},
	{Name: "TF_GPU_STREAM_GROUP_SHARE_MEMORY_LIMIT", Type: "bool", Default: "false", AliasOf: "TF_GPU_STREAM_GROUP_SHARE_MEM_POOL", Doc: "older NVIDIA spelling of TF_GPU_STREAM_GROUP_SHARE_MEM_POOL",
		set: func(c *Config, v string) (err error) { c.ShareMemPool, err = parseBool(v); return }},
	{Name: "TF_GPU_STREAM_AWARE_BFC", Type: "bool", Default: "false", Doc: "one stream-aware BFC allocator shared by all groups",
		set: func(c *Config, v string) (err error) { c.StreamAwareBFC, err = parseBool(v); return }},
	{Name: "TF_BFC_EXTEND_LIMIT_MB", Type: "int", Default: "0", Doc: "largest single region growth of a BFC allocator, in MiB; 0 = no cap",
		set: func(c *Config, v string) error { return parseMiB(v, 0, 1<<30, &c.BFCExtendLimitMB) }},
	{Name: "TF_REDUCE_STREAM_WAIT", Type: "bool", Default: "true", Doc: "drop cross-stream waits implied by others",
		set: func(c *Config, v string) (err error) { c.ReduceStreamWait, err = parseBool(v); return }},
	{Name: "TF_MULTI_STREAM_ALLOW_FORWARD_PROPAGATION", Type: "bool", Default: "false", Doc: "unassigned successors inherit a node's group (node-level mode)",
		set: func(c *Config, v string) (err error) { c.ForwardPropagation, err = parseBool(v); return }},
	{Name: "TF_STREAM_FROM_FILE", Type: "path", Default: "", Doc: "file of `group:regex,regex` lines assigning nodes to groups (node-level mode)",
		set: func(c *Config, v string) error {
			rules, err := ReadStreamFile(v)
			if err != nil {
				return err
			}
			c.StreamFromFile, c.StreamRules = v, rules
			return nil
		}},
	{Name: "MSTREAM_STREAM_ASSIGN", Type: "enum", Default: "file", Doc: "node-level mode: file puts each node on the group TF_STREAM_FROM_FILE names (group 0 if none, as NVIDIA's build); auto assigns the nodes no file rule names by analysing the graph (critical-path list scheduling over the groups, package partition), so independent branches run on different groups",
		set: func(c *Config, v string) error { return parseEnum(v, &c.StreamAssign, "file", "auto") }},
	{Name: "TF_FORCE_GPU_ALLOW_GROWTH", Type: "bool", Default: "false", Doc: "grow device memory on demand",
		set: func(c *Config, v string) (err error) { c.ForceGPUAllowGrowth, err = parseBool(v); return }},
	{Name: "TF_CPP_MIN_LOG_LEVEL", Type: "level", Default: "0", Doc: "0 info, 1 warning, 2 error, 3 fatal only",
		set: func(c *Config, v string) error {
			n, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil || n < 0 || n > 3 {
				return fmt.Errorf("accepted values are 0, 1, 2, 3")
			}
			c.MinLogLevel = n
			return nil
		}},
	{Name: "MSTREAM_TRACE", Type: "path", Default: "", Doc: "write a Chrome trace of every step to this JSON file",
		set: func(c *Config, v string) error { c.Trace = v; return nil }},
	{Name: "MSTREAM_STREAM_JITTER", Type: "bool", Default: "false", Doc: "delay stream work at random on every device (stream sanitizer): the host device's streams pause before each item, a GPU step puts a spin kernel of random length before items on its streams",
		set: func(c *Config, v string) (err error) { c.StreamJitter, err = parseBool(v); return }},
	{Name: "MSTREAM_HOST_STREAM_JITTER", Type: "bool", Default: "false", AliasOf: "MSTREAM_STREAM_JITTER", Doc: "older spelling of MSTREAM_STREAM_JITTER",
		set: func(c *Config, v string) (err error) { c.StreamJitter, err = parseBool(v); return }},
	{Name: "MSTREAM_DEVICE", Type: "enum", Default: "", Doc: "cpu forces the host device; gpu makes a missing GPU an error",
		set: func(c *Config, v string) error { return parseEnum(v, &c.Device, "cpu", "gpu", "") }},
	{Name: "MSTREAM_HOST_MEMORY_MB", Type: "int", Default: "", Doc: "cap the host device's memory at this many MiB (the base that memory fractions and group splits divide; its allocator then takes the whole cap at its first allocation, as TF does on a GPU); unset: no cap, as in TF: the machine's physical memory (sysinfo) bounds each allocation and regions grow on demand",
		set: func(c *Config, v string) error { return parseMiB(v, 1, 1<<20, &c.HostMemoryMB) }},
	{Name: "MSTREAM_GC_HEADROOM_MB", Type: "int", Default: "64", Doc: "the least a process allocates between two Go garbage collections, in MiB: a reserve of address space, neither touched nor scanned, that raises the collector's goal (a Run's tensors are Go memory; at Go's default goal a CNN at batch 1 collected every 17 Runs, a sixth of its CPU time); the process's largest value holds; 0 adds none, and none is added when GOGC or GOMEMLIMIT is set",
		set: func(c *Config, v string) error { return parseMiB(v, 0, 1<<20, &c.GCHeadroomMB) }},
	{Name: "MSTREAM_HOST_STREAMS", Type: "bool", Default: "false", Doc: "run the host device on its stream groups' streams even with one group (as a GPU would); more than one group or node-level mode always does",
		set: func(c *Config, v string) (err error) { c.HostStreams, err = parseBool(v); return }},
	{Name: "MSTREAM_FUSION", Type: "bool", Default: "true", Doc: "fuse at plan time where TF's grappler would (MatMul/Conv2D+BiasAdd(+Relu), inference BatchNorm folded into a constant Conv2D filter, chains of unary float32 ops), a MaxPool after such a convolution (bias, at most Relu) into it, Keras' LayerNormalization and a transformer's attention core (the two products and the softmax between them, in the Transpose/BatchMatMul or Keras' Einsum form) and Keras' EinsumDense with its bias each into one node (CPU only) and sibling embedding lookups (GatherV2 along axis 0) into one node, one GPU launch; 0 turns the fusions off. The other rewrites TF makes by default (constant folding, arithmetic push-down, dependency pruning, common subexpressions) follow the ConfigProto as in TF: `rewrite_options`, `opt_level: L0`, `disable_meta_optimizer`",
		set: func(c *Config, v string) (err error) { c.Fusion, err = parseBool(v); return }},
	{Name: "MSTREAM_CUDA_GRAPH", Type: "bool", Default: "true", Doc: "capture a one-group GPU step that runs wholly on the GPU (no host-synchronising op, no v1 control flow, no stateful op, no host value that depends on the feeds) as a CUDA graph, once per plan, group and feed shapes after one normal run, and replay it: one graph launch instead of a launch per node. Graphs are kept per group and plan for the 4 most recently used feed shapes (their buffers count in the allocators' bytes_in_use and in MS_SessionStats' cuda_graph); other steps, traced ones and CPU sessions run node by node; 0 turns graphs off",
		set: func(c *Config, v string) (err error) { c.CUDAGraph, err = parseBool(v); return }},
	{Name: "MSTREAM_GPU_POOL", Type: "bool", Default: "false", Doc: "every visible GPU serves graph-level Runs as one pool: the graph's unpinned GPU nodes run on whichever GPU holds the least-loaded stream group of all GPUs (constants materialised once per GPU, shared by its groups with TF_SEGMENT_OWN_CONST), nodes pinned to a device stay there, variables stay one copy in host memory; off, as in TF, unpinned nodes run on GPU:0. Off by default, the defaults being TF's: it changes where nodes run and takes memory and constants on every visible GPU, which processes sharing a host's GPUs without CUDA_VISIBLE_DEVICES do not expect; node-level mode ignores it",
		set: func(c *Config, v string) (err error) { c.GPUPool, err = parseBool(v); return }},
	{Name: "MSTREAM_GPU_SMALL_GEMM", Type: "enum", Default: "auto", Doc: "GPU GEMMs (MatMul, BatchMatMul, _FusedMatMul, Einsum's contraction) of float, half or bfloat16 whose left operand has at most 16 rows run mstream's own small-batch kernel (one launch, the epilogue fused) instead of a cuBLAS/cuBLASLt call when launched node by node, and inside a captured CUDA graph only at the sizes where its device time is the smaller (auto); 0 always takes cuBLAS/cuBLASLt; 1 takes the small-batch kernel at every size its dtypes allow. Process-wide: the most recent session's value holds",
		set: func(c *Config, v string) error { return parseEnum(v, &c.SmallGEMM, "auto", "0", "1") }},
	{Name: "MSTREAM_BLAS", Type: "path", Default: "", Doc: "the cblas library the CPU's GEMMs load (once per process, by the first session): a path such as the scipy-openblas32 wheel's libscipy_openblas.so (scripts/venv.sh sets it); unset tries libopenblas.so.0, libopenblas.so, libblas.so.3; go takes the pure-Go GEMM",
		set: func(c *Config, v string) error { c.BLAS = strings.TrimSpace(v); return nil }},
	{Name: "MSTREAM_DNNL", Type: "path", Default: "", Doc: "oneDNN 3.x (libdnnl.so.3) for the CPU's float32 convolutions, pooling, softmax and normalisations, loaded once per process by the first session: a path such as the onednn-cpu-gomp wheel's build/venv/lib/libdnnl.so.3 (scripts/venv.sh sets it); unset tries libdnnl.so.3; off runs mstream's own kernels",
		set: func(c *Config, v string) error { c.DNNL = strings.TrimSpace(v); return nil }},
	{Name: "MSTREAM_CCALL", Type: "enum", Default: "direct", Doc: "how the CPU kernels' C functions (mstream's loops and GEMMs, oneDNN's primitives, the BLAS) are called, set once per process by the first session: direct runs each one expected to take up to 4 ms on its thread's system stack and keeps the thread's P, without the Go scheduler's hand-off of a cgo call (kernels/cpu/ccall says why); cgo makes them all plain cgo calls, as a Go CPU profile that should see the kernels' callers, or a host's crash handler that should see a fault in one, needs",
		set: func(c *Config, v string) error { return parseEnum(v, &c.CCall, "direct", "cgo") }},
}

// value renders the effective value of knob name in c, in the form the
// variable accepts.
func (c *Config) value(name string) string {
	b := strconv.FormatBool
	switch name {
	case "TF_GPU_STREAM_GROUP_COUNT":
		if len(c.GroupCounts) == 0 {
			return "1"
		}
		parts := make([]string, len(c.GroupCounts))
		for i, n := range c.GroupCounts {
			parts[i] = strconv.Itoa(n)
		}
		return strings.Join(parts, ",")
	case "TF_NODE_LEVEL_MULTISTREAM":
		return b(c.NodeLevel)
	case "TF_GPU_STREAM_MERGE":
		return b(c.StreamMerge)
	case "TF_GPU_CONTEXT_COUNT":
		return strconv.Itoa(c.ContextCount)
	case "TF_PER_STREAM_HOST_ALLOCATOR":
		return b(c.PerStreamHostAlloc)
	case "TF_SEGMENT_OWN_CONST":
		return b(c.SegmentOwnConst)
	case "TF_GPU_THREAD_MODE":
		return string(c.ThreadMode)
	case "TF_GPU_THREAD_COUNT":
		return strconv.Itoa(c.ThreadCount)
	case "TF_GPU_STREAM_GROUP_SHARE_MEM_POOL", "TF_GPU_STREAM_GROUP_SHARE_MEMORY_LIMIT":
		return b(c.ShareMemPool)
	case "TF_GPU_STREAM_AWARE_BFC":
		return b(c.StreamAwareBFC)
	case "TF_BFC_EXTEND_LIMIT_MB":
		return strconv.FormatInt(c.BFCExtendLimitMB, 10)
	case "TF_REDUCE_STREAM_WAIT":
		return b(c.ReduceStreamWait)
	case "TF_MULTI_STREAM_ALLOW_FORWARD_PROPAGATION":
		return b(c.ForwardPropagation)
	case "TF_STREAM_FROM_FILE":
		return c.StreamFromFile
	case "MSTREAM_STREAM_ASSIGN":
		return c.StreamAssign
	case "TF_FORCE_GPU_ALLOW_GROWTH":
		return b(c.ForceGPUAllowGrowth)
	case "TF_CPP_MIN_LOG_LEVEL":
		return strconv.Itoa(c.MinLogLevel)
	case "MSTREAM_TRACE":
		return c.Trace
	case "MSTREAM_STREAM_JITTER", "MSTREAM_HOST_STREAM_JITTER":
		return b(c.StreamJitter)
	case "MSTREAM_DEVICE":
		return c.Device
	case "MSTREAM_HOST_MEMORY_MB":
		if c.HostMemoryMB == 0 {
			return ""
		}
		return strconv.FormatInt(c.HostMemoryMB, 10)
	case "MSTREAM_GC_HEADROOM_MB":
		return strconv.FormatInt(c.GCHeadroomMB, 10)
	case "MSTREAM_HOST_STREAMS":
		return b(c.HostStreams)
	case "MSTREAM_FUSION":
		return b(c.Fusion)
	case "MSTREAM_CUDA_GRAPH":
		return b(c.CUDAGraph)
	case "MSTREAM_GPU_POOL":
		return b(c.GPUPool)
	case "MSTREAM_GPU_SMALL_GEMM":
		return c.SmallGEMM
	case "MSTREAM_BLAS":
		return c.BLAS
	case "MSTREAM_DNNL":
		return c.DNNL
	case "MSTREAM_CCALL":
		return c.CCall
	}
	return ""
}

// Effective is one knob as a session sees it, for MS_SessionConfig.
type Effective struct {
	Name    string `json:"name"`
	Value   string `json:"value"`
	Default string `json:"default"`
	// Raw is the variable's text when it was set; Set says whether it was.
	Raw     string `json:"raw,omitempty"`
	Set     bool   `json:"set"`
	AliasOf string `json:"alias_of,omitempty"`
	Doc     string `json:"doc"`
}

// Effective lists every knob with its effective value, in table order.
func (c *Config) Effective() []Effective {
	out := make([]Effective, 0, len(Knobs))
	for _, k := range Knobs {
		raw, set := c.Set[k.Name]
		out = append(out, Effective{Name: k.Name, Value: c.value(k.Name), Default: k.Default,
			Raw: raw, Set: set, AliasOf: k.AliasOf, Doc: k.Doc})
	}
	return out
}

// Values maps every knob name to its effective value, for stats.
func (c *Config) Values() map[string]string {
	m := make(map[string]string, len(Knobs))
	for _, k := range Knobs {
		m[k.Name] = c.value(k.Name)
	}
	return m
}

// IsSet reports whether the variable name was set (non-empty).
func (c *Config) IsSet(name string) bool { _, ok := c.Set[name]; return ok }

// LookupMap returns a lookup function over m, for sessions whose
// environment is given explicitly (tests, MS_ options) rather than read
// from the process.
func LookupMap(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

// Defaults returns the configuration with no variable set.
func Defaults() *Config {
	c := &Config{Set: map[string]string{}}
	for _, k := range Knobs {
		if k.Default != "" {
			if err := k.set(c, k.Default); err != nil {
				panic("envcfg: bad default for " + k.Name)
			}
		}
	}
	return c
}

// Load parses the environment through lookup (os.LookupEnv in production).
// An empty value counts as unset, as TF's ReadBoolFromEnvVar treats it.
func Load(lookup func(string) (string, bool)) (*Config, error) {
	c := Defaults()
	for _, k := range Knobs {
		v, ok := lookup(k.Name)
		if !ok || v == "" {
			continue
		}
		if err := k.set(c, v); err != nil {
			return nil, status.InvalidArg("environment variable %s=%q is invalid: %v", k.Name, v, err)
		}
		c.Set[k.Name] = v
	}
	// An alias and its knob both set must agree: a disagreement is an
	// error rather than a silent choice of one.
	for _, k := range Knobs {
		if k.AliasOf == "" {
			continue
		}
		av, aset := c.Set[k.Name]
		pv, pset := c.Set[k.AliasOf]
		if aset && pset {
			x, y := Defaults(), Defaults()
			_ = k.set(x, av)
			for _, p := range Knobs {
				if p.Name == k.AliasOf {
					_ = p.set(y, pv)
				}
			}
			if x.value(k.Name) != y.value(k.AliasOf) {
				return nil, status.InvalidArg("environment variables %s=%q and %s=%q disagree: %s is an older spelling of %s; set one, or both to the same value",
					k.AliasOf, pv, k.Name, av, k.Name, k.AliasOf)
			}
		}
	}
	return c, nil
}

// FromEnv is Load(os.LookupEnv).
func FromEnv() (*Config, error) { return Load(os.LookupEnv) }

func parseBool(v string) (bool, error) {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "true", "1":
		return true, nil
	case "false", "0":
		return false, nil
	}
	return false, fmt.Errorf("accepted values are true, false, 1, 0 (any case)")
}

func parsePositive(v string) (int, error) {
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || n < 1 || n > 1024 {
		return 0, fmt.Errorf("accepted values are whole numbers from 1 to 1024")
	}
	return n, nil
}

func parseCounts(v string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(v, ",") {
		n, err := parsePositive(f)
		if err != nil {
			return nil, fmt.Errorf("accepted values are a count from 1 to 1024, or a comma list of such counts, one per GPU")
		}
		out = append(out, n)
	}
	return out, nil
}

// ReadStreamFile reads a TF_STREAM_FROM_FILE file: each non-empty line that
// does not start with '#' is `group:regex[,regex...]`, group >= 0.
func ReadStreamFile(path string) ([]StreamRule, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("cannot read the file: %v", err)
	}
	return ParseStreamRules(b)
}

// ParseStreamRules parses the contents of a TF_STREAM_FROM_FILE file.
func ParseStreamRules(b []byte) ([]StreamRule, error) {
	var rules []StreamRule
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for line := 1; sc.Scan(); line++ {
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		g, pats, ok := strings.Cut(text, ":")
		if !ok {
			return nil, fmt.Errorf("line %d %q: expected group:regex[,regex...]", line, text)
		}
		gi, err := strconv.Atoi(strings.TrimSpace(g))
		if err != nil || gi < 0 || gi > 1023 {
			return nil, fmt.Errorf("line %d %q: group %q is not a number from 0 to 1023", line, text, g)
		}
		r := StreamRule{Group: gi}
		for _, p := range strings.Split(pats, ",") {
			p = strings.TrimSpace(p)
			if p == "" {
				return nil, fmt.Errorf("line %d %q: empty regex", line, text)
			}
			re, err := regexp.Compile("^(?:" + p + ")$")
			if err != nil {
				return nil, fmt.Errorf("line %d: bad regex %q: %v", line, p, err)
			}
			r.Patterns = append(r.Patterns, re)
		}
		rules = append(rules, r)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return rules, nil
}

// MarkdownTable renders the knob table for the README.
func MarkdownTable() string {
	var b strings.Builder
	b.WriteString("| Variable | Meaning | Default |\n| --- | --- | --- |\n")
	for _, k := range Knobs {
		d := k.Default
		if d == "" {
			d = "unset"
		}
		fmt.Fprintf(&b, "| %s | %s | %s |\n", k.Name, k.Doc, d)
	}
	return b.String()
}
