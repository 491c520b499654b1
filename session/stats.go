package session

import (
	"encoding/json"

	"mstream/bfc"
	"mstream/exec"
	"mstream/groups"
	"mstream/hostmem"
)

// Stats is what MS_SessionStats returns, as JSON.
type Stats struct {
	Version        string            `json:"version"`
	Mode           string            `json:"mode"` // "pool" or "streams"
	NodeLevel      bool              `json:"node_level"`
	Devices        []DeviceInfo      `json:"devices"`
	InterOpPools   []int             `json:"inter_op_pools"`
	IntraOpThreads int               `json:"intra_op_threads"`
	CachedPlans    int               `json:"cached_plans"`
	Closed         bool              `json:"closed"`
	RunsCompleted  int64             `json:"runs_completed"`
	RunsFailed     int64             `json:"runs_failed"`
	RunsInFlight   int64             `json:"runs_in_flight"`
	Knobs          map[string]string `json:"knobs"`
	// ConstBytes is, per device, the bytes of constants in device memory.
	ConstBytes []int64 `json:"const_bytes"`
	// Allocators lists each distinct device allocator once (a shared one
	// appears in several groups).
	Allocators []bfc.Stats    `json:"allocators"`
	Groups     []groups.Stats `json:"groups"`
	// DeviceGroups is, per device name, how many stream groups it has
	// (each GPU its own count from TF_GPU_STREAM_GROUP_COUNT).
	DeviceGroups map[string]int `json:"device_groups"`
	Holder       HolderStats    `json:"tensor_holder"`
	Trace        TraceStats     `json:"trace"`
	// Pool is the GPU pool (MSTREAM_GPU_POOL): its GPUs and the Runs each
	// took part in; nil without it.
	Pool *PoolStats `json:"gpu_pool,omitempty"`
	// CUDAGraph counts graph captures and replays (MSTREAM_CUDA_GRAPH on
	// and a GPU present).
	CUDAGraph *exec.GraphStats `json:"cuda_graph,omitempty"`
	// LoopModes counts the host steps by how they ran their kernels'
	// loops on the intra-op pool (exec/gate.go: eager, split, whole,
	// each plan's choice by timing); nil where the pool has one thread.
	LoopModes *exec.LoopModeStats `json:"intra_op_loop_modes,omitempty"`
	// CPUKernels names the libraries behind the CPU's heavy kernels, their
	// versions, the core they run and the CPU's ISA.
	CPUKernels CPUKernels `json:"cpu_kernels"`
	// GCHeadroom is the least allocation between two Go garbage
	// collections that MSTREAM_GC_HEADROOM_MB reserved, or why none was.
	GCHeadroom hostmem.GCHeadroom `json:"gc_headroom"`
}

// PoolStats is the GPU pool in MS_SessionStats.
type PoolStats struct {
	// Devices names the pool's GPUs.
	Devices []string `json:"devices"`
	// Runs is, per GPU, the Runs its groups completed (a Run whose
	// pinned nodes put it on two GPUs counts on both); Groups lists
	// them per group, by index.
	Runs   map[string]int64   `json:"runs"`
	Groups map[string][]int64 `json:"group_runs"`
}

// HolderStats counts buffers waiting for a second stream.
type HolderStats struct {
	Live  int   `json:"live"`
	Freed int64 `json:"freed"`
}

// TraceStats says how many steps the Chrome trace holds.
type TraceStats struct {
	Steps   int  `json:"steps"`
	Dropped int  `json:"dropped"`
	All     bool `json:"all_steps"` // MSTREAM_TRACE records every step
}

func (s *Session) stats() Stats {
	st := s.impl
	var poolSizes []int
	for _, p := range st.pools {
		poolSizes = append(poolSizes, p.Size())
	}
	if st.global != nil {
		poolSizes = append(poolSizes, st.global.Size())
	}
	nplans := 0
	if plans := st.plans.Load(); plans != nil {
		nplans = len(*plans)
	}
	mode := "pool"
	if st.streams {
		mode = "streams"
	}
	out := Stats{
		Version: Version, Mode: mode, NodeLevel: st.nodeLevel, Devices: s.devices(),
		InterOpPools: poolSizes, IntraOpThreads: st.intraN, CachedPlans: nplans, Closed: st.closed.Load(),
		RunsCompleted: st.done.Load(), RunsFailed: st.failed.Load(), RunsInFlight: st.inflight.Load(),
		Knobs: st.env.Values(), ConstBytes: st.set.DeviceConstBytes(), Groups: st.set.Stats(),
		Holder:    HolderStats{Live: st.set.Holder.Live(), Freed: st.set.Holder.Freed()},
		CUDAGraph: st.graphStats(), CPUKernels: st.cpuKernels.now(),
		GCHeadroom: st.gcHeadroom,
	}
	if st.intra != nil && st.intra.Threads() > 1 {
		lm := st.intra.LoopModes()
		out.LoopModes = &lm
	}
	out.DeviceGroups = map[string]int{}
	for _, g := range st.set.Groups() {
		out.DeviceGroups[g.Device.Name()]++
	}
	if st.gpuPool != nil {
		p := &PoolStats{Runs: map[string]int64{}, Groups: map[string][]int64{}}
		for d := st.gpu; d < len(st.devices); d++ {
			name := st.devices[d].Name()
			p.Devices = append(p.Devices, name)
			for _, g := range st.set.OnDevice(d) {
				n := g.Completed()
				p.Runs[name] += n
				p.Groups[name] = append(p.Groups[name], n)
			}
		}
		out.Pool = p
	}
	seen := map[*bfc.Allocator]bool{}
	for _, g := range st.set.Groups() {
		if !seen[g.Alloc] {
			seen[g.Alloc] = true
			out.Allocators = append(out.Allocators, g.Alloc.Stats())
		}
	}
	steps, dropped := st.rec.Steps()
	out.Trace = TraceStats{Steps: len(steps), Dropped: dropped, All: st.recordAll}
	return out
}

func (s *Session) statsJSON() ([]byte, error) { return json.Marshal(s.stats()) }

func (s *Session) configJSON() ([]byte, error) {
	return json.Marshal(map[string]any{"knobs": s.impl.env.Effective()})
}
