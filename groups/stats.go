package groups

import "mstream/bfc"

// Stats is one group as MS_SessionStats reports it.
type Stats struct {
	ID          GroupID `json:"id"`
	Device      string  `json:"device"`
	DeviceIndex int     `json:"device_index"`
	Index       int     `json:"index"`
	Context     int     `json:"context"`
	// Streams maps each role (compute, h2d, d2h, d2d) to its stream's ID;
	// merged groups map all four to one.
	Streams     map[string]int `json:"streams"`
	StreamCount int            `json:"stream_count"`

	RunsCompleted int64 `json:"runs_completed"`
	RunsFailed    int64 `json:"runs_failed"`
	RunsInFlight  int64 `json:"runs_in_flight"`
	// StreamWaits counts cross-stream event waits the executor inserted
	// on this group's streams; StreamWaitsSkipped those it left out as
	// implied by earlier ones (TF_REDUCE_STREAM_WAIT).
	StreamWaits        int64 `json:"stream_waits"`
	StreamWaitsSkipped int64 `json:"stream_waits_skipped"`
	// LaunchNs is the host time device steps spent launching on this
	// group (not their final wait), LaunchedNodes the device nodes and
	// LaunchSteps the steps (CountLaunch; zero on the host device).
	LaunchNs      int64 `json:"launch_ns"`
	LaunchedNodes int64 `json:"launched_nodes"`
	LaunchSteps   int64 `json:"launch_steps"`
	// LaunchNodeNs is the part of LaunchNs spent launching nodes, less
	// the feeds' and fetches' copies and the step's events
	// (CountNodeLaunch; counted by one-group steps launched node by node,
	// not by lanes or frames).
	LaunchNodeNs int64 `json:"launch_node_ns"`

	Allocator       bfc.Stats `json:"allocator"`
	AllocatorShared bool      `json:"allocator_shared"`
	HostAllocator   bfc.Stats `json:"host_allocator"`
	HostShared      bool      `json:"host_allocator_shared"`

	// Consts names the store the group's constants live in; ConstBytes
	// and ConstCount are that store's (shared stores repeat in every
	// group of the device).
	Consts       string `json:"consts"`
	ConstsShared bool   `json:"consts_shared"`
	ConstCount   int    `json:"const_count"`
	ConstBytes   int64  `json:"const_bytes"`

	Pool PoolDesc `json:"pool"`
}

// Stats snapshots group g.
func (g *Group) Stats() Stats {
	st := Stats{
		ID: g.ID, Device: g.Device.Name(), DeviceIndex: g.DeviceIndex, Index: g.Index, Context: g.Context,
		Streams: map[string]int{"compute": int(g.Compute.ID()), "h2d": int(g.H2D.ID()),
			"d2h": int(g.D2H.ID()), "d2d": int(g.D2D.ID())},
		StreamCount:        len(g.Streams()),
		RunsCompleted:      g.completed.Load(),
		RunsFailed:         g.failed.Load(),
		RunsInFlight:       g.inFlight.Load(),
		StreamWaits:        g.waits.Load(),
		StreamWaitsSkipped: g.waitsSkipped.Load(),
		LaunchNs:           g.launchNs.Load(),
		LaunchedNodes:      g.launchNodes.Load(),
		LaunchSteps:        g.launchSteps.Load(),
		LaunchNodeNs:       g.launchNodeNs.Load(),
		Allocator:          g.Alloc.Stats(),
		AllocatorShared:    g.AllocShared,
		HostAllocator:      g.HostAlloc.Stats(),
		HostShared:         g.HostShared,
		Consts:             g.Consts.Name,
		ConstsShared:       g.Consts.Shared,
		Pool:               g.PoolDesc,
	}
	st.ConstCount, st.ConstBytes = g.Consts.Stats()
	return st
}

// Stats snapshots every group, by ID.
func (s *Set) Stats() []Stats {
	out := make([]Stats, len(s.groups))
	for i, g := range s.groups {
		out[i] = g.Stats()
	}
	return out
}

// DeviceConstBytes is, per device, the bytes of constants materialised on
// it: the shared store's, or the sum over the groups' own stores.
func (s *Set) DeviceConstBytes() []int64 {
	out := make([]int64, len(s.perDevice))
	for d, row := range s.perDevice {
		if sh := s.shared[d]; sh != nil {
			_, out[d] = sh.Stats()
			continue
		}
		for _, g := range row {
			_, b := g.Consts.Stats()
			out[d] += b
		}
	}
	return out
}
