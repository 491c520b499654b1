package session

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"mstream/device"
	"mstream/envcfg"
	"mstream/exec"
	"mstream/groups"
	"mstream/status"
)

// gpuReserve is the device memory left to the driver, cuBLAS workspaces and
// other processes when no limit is configured.
const gpuReserve = 512 << 20

// listGPUs is device.OpenGPUs (the GPUs of the device package a program
// links in, device/cuda through capi); tests replace it.
var listGPUs = device.OpenGPUs

// noGPULogged makes the "running on the CPU" line appear once per process.
var noGPULogged sync.Once

// logf writes one log line to stderr as TF's logging does, unless
// TF_CPP_MIN_LOG_LEVEL hides its level (0 info, 1 warning, 2 error).
func (st *state) logf(level int, format string, args ...any) {
	if level < st.env.MinLogLevel {
		return
	}
	fmt.Fprintf(os.Stderr, "mstream %c %s\n", "IWEF"[min(level, 3)], fmt.Sprintf(format, args...))
}

// shortReason is the head of a CUDA load error, for the one-line notice:
// "cuda: no CUDA driver library: none of libcuda.so.1, ... found in ..."
// becomes "no CUDA driver library"; the whole error is MSTREAM_DEVICE=gpu's.
func shortReason(err error) string {
	msg := err.Error()
	for strings.HasPrefix(msg, "cuda: ") {
		msg = strings.TrimPrefix(msg, "cuda: ")
	}
	if i := strings.Index(msg, ": "); i > 0 {
		msg = msg[:i]
	}
	return msg
}

// openGPUs returns the GPUs the session runs on, per MSTREAM_DEVICE: cpu
// none; gpu every visible GPU or an error; unset (auto) the GPUs if CUDA
// loads, else none, with one log line saying why.
func (st *state) openGPUs() ([]device.GPU, error) {
	switch {
	case st.env.Device == "cpu":
		st.logCPUKernels(nil)
		return nil, nil
	}
	devs, err := listGPUs()
	if err == nil && len(devs) == 0 {
		err = status.Errorf(status.Unavailable, "cuda: no GPU is visible (check CUDA_VISIBLE_DEVICES)")
	}
	if err != nil {
		if st.env.Device == "gpu" {
			return nil, status.Wrap(err, "MSTREAM_DEVICE=gpu, but no GPU can be used")
		}
		noGPULogged.Do(func() {
			// One notice line for a CPU process: the CPU kernels' summary
			// joins it, and the hint too while the line stays short.
			hint := "; MSTREAM_DEVICE=gpu says why in full"
			joined := st.logCPUKernels(func(summary string) string {
				msg := fmt.Sprintf("no GPU (%s): running on the CPU, %s", shortReason(err), summary)
				if len(msg)+len(hint) <= 110 {
					msg += hint
				}
				return msg
			})
			if !joined { // an MSTREAM_DEVICE=cpu session logged the kernels
				st.logf(0, "no GPU (%s): running on the CPU%s", shortReason(err), hint)
			}
		})
		return nil, nil
	}
	for _, d := range devs {
		// Contexts are the process's: a session asking for fewer uses the
		// first ones.
		if n := st.env.ContextCount; n > d.Contexts() {
			if err := d.SetContexts(n); err != nil {
				return nil, status.Wrap(err, "TF_GPU_CONTEXT_COUNT=%d (the process's GPU contexts are fixed by its first session)", n)
			}
		}
		if g, ok := d.(device.SmallGEMMSetter); ok {
			if err := g.SetSmallGEMM(st.env.SmallGEMM); err != nil {
				return nil, status.Wrap(err, "MSTREAM_GPU_SMALL_GEMM=%s", st.env.SmallGEMM)
			}
		}
		if st.env.Device == "gpu" {
			// Surface a broken device now rather than at the first Run.
			if _, _, err := d.MemInfo(); err != nil {
				return nil, status.Wrap(err, "MSTREAM_DEVICE=gpu: %s", d.Name())
			}
		}
	}
	return devs, nil
}

// gpuLimitMB is the memory limit of a GPU when the ConfigProto sets none:
// its free memory now, less a reserve. Allocators are per session here
// (TF's are per process), so a session must not take memory another
// session of the process already holds.
func gpuLimitMB(d device.GPU) float64 {
	free, _, err := d.MemInfo()
	if err != nil || free <= gpuReserve {
		return 0
	}
	return float64(free-gpuReserve) / (1 << 20)
}

// deviceCounts is the number of stream groups of each device of a session
// with n GPUs: the host device (0) gets one, for plans with no GPU node,
// or in node-level mode TF_GPU_STREAM_GROUP_COUNT's first count (such
// plans then run on the host's groups as the file assigns them); GPU i
// (device 1+i) gets the list's i-th count, the last one past its end.
func deviceCounts(env *envcfg.Config, n int) []int {
	counts := []int{1}
	if env.NodeLevel {
		counts[0] = env.GroupCount(0)
	}
	for i := 0; i < n; i++ {
		counts = append(counts, env.GroupCount(i))
	}
	return counts
}

// deviceLimitsMB is the memory limit of each device of a session with n
// GPUs, in MiB (0: none, the groups package's rules apply): none for the
// host; for GPU i virtual_devices[i]'s limit when set, else, when no
// memory fraction is set either, free(i), the GPU's free memory less a
// reserve.
func deviceLimitsMB(virtual []float64, fraction float64, n int, free func(i int) float64) []float64 {
	out := []float64{0}
	for i := 0; i < n; i++ {
		l := 0.0
		if i < len(virtual) {
			l = virtual[i]
		}
		if l == 0 && fraction == 0 {
			l = free(i)
		}
		out = append(out, l)
	}
	return out
}

// gpuDevices appends the GPUs to the device list; the host device stays
// device 0, GPU i is device 1+i.
func gpuDevices(host device.Device, gpus []device.GPU) []device.Device {
	out := []device.Device{host}
	for _, g := range gpus {
		out = append(out, g)
	}
	return out
}

// placement is how plans are placed: on the session's GPUs when it has
// any (each plan on one of them, exec.Plan.GPU), on the host otherwise.
func (st *state) placement() exec.Placement {
	if st.gpu < 0 {
		return exec.Placement{AllowSoft: st.softPlacement, Strict: true, Resources: st.resources}
	}
	return exec.Placement{GPUs: len(st.devices) - 1, AllowSoft: st.softPlacement, Strict: true, Resources: st.resources,
		HostState: st.gpuPool != nil, Log: func(format string, args ...any) { st.logf(0, format, args...) }}
}

// gpuSummary is the log line's list of GPUs and their stream groups.
// smallGEMMSummary says in the GPU log line which GEMM implementation
// MSTREAM_GPU_SMALL_GEMM picks (kernels/cuda's doc gives the rule).
var smallGEMMSummary = map[string]string{
	"auto": "small-batch kernel up to 16 rows (in CUDA graphs where it is faster), cuBLAS/cuBLASLt beyond (MSTREAM_GPU_SMALL_GEMM=auto)",
	"0":    "cuBLAS/cuBLASLt (MSTREAM_GPU_SMALL_GEMM=0)",
	"1":    "small-batch kernel for float, half and bfloat16 (MSTREAM_GPU_SMALL_GEMM=1)",
}

func gpuSummary(gpus []device.GPU, counts []int) string {
	var b strings.Builder
	for i, g := range gpus {
		if i > 0 {
			b.WriteString("; ")
		}
		fmt.Fprintf(&b, "GPU:%d %s, %d stream group(s)", g.Ordinal(), g.Desc(), counts[i])
	}
	return b.String()
}

// gpuGroups is stepGroups for a plan with GPU nodes. Graph-level mode: a
// step on one GPU (device st.gpu+plan.GPU()) on the group Pick chooses
// there (replaying captured CUDA graphs when MSTREAM_CUDA_GRAPH is on), a
// step over several GPUs on the group Pick chooses on each, the home
// GPU's first, every node on its GPU's group. With the GPU pool the
// plan's unpinned nodes run on the GPU of the group the pool's Spread
// picks over every GPU, and that group serves them. Node-level mode: every node
// on the group TF_STREAM_FROM_FILE assigns it among the groups of its GPU
// (host nodes and constants: the home GPU's), group 0 of the home GPU
// being home.
func (s *Session) gpuGroups(plan *exec.Plan) (*exec.Runtime, []*groups.Group, error) {
	st := s.impl
	if st.nodeLevel {
		return s.gpuNodeGroups(plan)
	}
	gpus, ng := plan.GPUs(), []int(nil)
	var picked *groups.Group
	if st.gpuPool != nil && plan.Floating() && !(plan.Deadness() && plan.Pinned()) {
		// The GPU pool: the unpinned nodes go where the least-loaded
		// group of any GPU is (not for a plan with frames and pinned
		// nodes, which could land on two GPUs: a step with frames runs
		// on one).
		picked = st.gpuPool.Pick()
		gpus, ng = plan.PlaceOn(picked.DeviceIndex - st.gpu)
	}
	if len(gpus) == 1 {
		g := picked
		if g == nil {
			g = st.set.Pick(st.gpu + plan.GPU())
		}
		return &exec.Runtime{Groups: []*groups.Group{g}, ReduceWaits: st.env.ReduceStreamWait,
			Holder: &st.set.Holder, Intra: g.Intra, Graphs: st.graphs, Jitter: st.jitter()}, []*groups.Group{g}, nil
	}
	gs := make([]*groups.Group, len(gpus))
	slot := map[int]int{}
	for k, gi := range gpus {
		if picked != nil && st.gpu+gi == picked.DeviceIndex {
			gs[k], slot[gi] = picked, k
			continue
		}
		gs[k], slot[gi] = st.set.Pick(st.gpu+gi), k
	}
	if ng == nil {
		ng = plan.NodeGPUs()
	}
	assign := make([]int, len(ng))
	for i, gi := range ng {
		assign[i] = slot[gi]
	}
	return &exec.Runtime{Groups: gs, Assign: assign, ReduceWaits: st.env.ReduceStreamWait,
		Holder: &st.set.Holder, Intra: gs[0].Intra, Jitter: st.jitter()}, gs, nil
}

// gpuNodeGroups is gpuGroups in node-level mode.
func (s *Session) gpuNodeGroups(plan *exec.Plan) (*exec.Runtime, []*groups.Group, error) {
	st := s.impl
	var gs []*groups.Group
	first := map[int]int{} // GPU -> index in gs of its group 0
	for _, gi := range plan.GPUs() {
		first[gi] = len(gs)
		gs = append(gs, st.set.OnDevice(st.gpu+gi)...)
	}
	e, ok := st.nodeGroups.Load(plan)
	if !ok {
		ne, err := s.nodeGroupsOf(plan, first)
		if err != nil {
			return nil, nil, err
		}
		e, _ = st.nodeGroups.LoadOrStore(plan, ne)
	}
	ne := e.(nodeGroupsEntry)
	used := make([]*groups.Group, len(ne.idx))
	for j, k := range ne.idx {
		gs[k].Begin()
		used[j] = gs[k]
	}
	return &exec.Runtime{Groups: gs, Assign: ne.assign, ReduceWaits: st.env.ReduceStreamWait,
		Holder: &st.set.Holder, Intra: gs[0].Intra, Jitter: st.jitter()}, used, nil
}

// nodeGroupsEntry is a plan's node-level assignment over the session's
// GPU groups (an index in gpuNodeGroups' gs per plan node) and the
// groups it uses, the home group first: fixed for the plan, worked out
// on its first Run (a map lookup per node was ~25 us of every Run of
// the 415-node training step) and shared, read-only, by its Runtimes.
type nodeGroupsEntry struct {
	assign, idx []int
}

// nodeGroupsOf works out plan's nodeGroupsEntry; first gives the index
// in gs of each GPU's group 0.
func (s *Session) nodeGroupsOf(plan *exec.Plan, first map[int]int) (nodeGroupsEntry, error) {
	st := s.impl
	fewest := 0
	for _, gi := range plan.GPUs() {
		if k := len(st.set.OnDevice(st.gpu + gi)); fewest == 0 || k < fewest {
			fewest = k
		}
	}
	file, _ := st.assignment(plan, fewest)
	ng := plan.NodeGPUs()
	assign := make([]int, len(file))
	idx := []int{0}
	seen := map[int]bool{0: true}
	nodes := plan.Nodes()
	for i, gi := range file {
		n := len(st.set.OnDevice(st.gpu + ng[i]))
		if gi >= n {
			return nodeGroupsEntry{}, status.InvalidArg("TF_STREAM_FROM_FILE=%q assigns node '%s' to stream group %d, but it runs on GPU:%d, which has %d stream groups (TF_GPU_STREAM_GROUP_COUNT=%s)",
				st.env.StreamFromFile, nodes[i].Name, gi, ng[i], n, st.env.Values()["TF_GPU_STREAM_GROUP_COUNT"])
		}
		assign[i] = first[ng[i]] + gi
		if !seen[assign[i]] {
			seen[assign[i]] = true
			idx = append(idx, assign[i])
		}
	}
	return nodeGroupsEntry{assign: assign, idx: idx}, nil
}

// jitter is the stream sanitizer's longest delay for a GPU step
// (MSTREAM_STREAM_JITTER), 0 when it is off.
func (st *state) jitter() time.Duration {
	if !st.env.StreamJitter {
		return 0
	}
	return jitter
}
