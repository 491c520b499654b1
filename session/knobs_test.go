package session

import (
	"encoding/json"
	"math"
	"math/rand"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/prototext"

	"mstream/graph"
	"mstream/hostmem"
	"mstream/proto/tfpb"
	"mstream/tensor"
)

// statsOf runs the bundled model `runs` times (one at a time, so the
// groups take turns) and returns MS_SessionStats decoded from its JSON.
// The host device is capped at 256 MiB unless env says otherwise: the knobs
// that divide or grow device memory are shown against a set cap, as on a
// GPU (with no cap the limit is the machine's memory, TestNoHostCap).
func statsOf(t *testing.T, m *model, env map[string]string, cfg *tfpb.ConfigProto, runs int) Stats {
	t.Helper()
	env = hostEnv(env)
	if _, ok := env["MSTREAM_HOST_MEMORY_MB"]; !ok {
		env["MSTREAM_HOST_MEMORY_MB"] = "256"
	}
	s, err := New(m.g, &Options{Env: env, Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	r := rand.New(rand.NewSource(4))
	for i := 0; i < runs; i++ {
		if _, _, err := s.Run(nil, m.feeds(r, 8), m.outputs, nil); err != nil {
			t.Fatal(err)
		}
	}
	js, err := s.StatsJSON()
	if err != nil {
		t.Fatal(err)
	}
	var st Stats
	if err := json.Unmarshal(js, &st); err != nil {
		t.Fatalf("stats JSON: %v\n%s", err, js)
	}
	return st
}

const mib = 1 << 20

// TestNoHostCap: with MSTREAM_HOST_MEMORY_MB unset the host device has no
// cap of its own, as TF's CPU device has none: its limit is the machine's
// physical memory, split between groups, and regions grow on demand rather
// than claiming the limit at the first allocation.
func TestNoHostCap(t *testing.T) {
	m := loadModel(t)
	for _, n := range []int{1, 2} {
		st := statsOf(t, m, map[string]string{"MSTREAM_HOST_MEMORY_MB": "", "TF_GPU_STREAM_GROUP_COUNT": strconv.Itoa(n)}, nil, 2)
		phys := uint64(hostmem.Physical())
		if got := uint64(st.Devices[0].MemoryBytes); got != phys {
			t.Errorf("%d groups: device memory %d, want the machine's %d", n, got, phys)
		}
		for _, a := range st.Allocators {
			if want := phys / uint64(n); a.Limit > want || a.Limit < want-mib {
				t.Errorf("%d groups: %s limit %d, want %d", n, a.Name, a.Limit, want)
			}
			if a.RegionBytes >= 64*mib || a.RegionBytes < a.PeakBytesInUse {
				t.Errorf("%d groups: %s holds %d region bytes for a peak of %d: regions did not grow on demand", n, a.Name, a.RegionBytes, a.PeakBytesInUse)
			}
		}
	}
}

// TestKnobEffects shows, knob by knob, what each one changes in
// MS_SessionStats: streams created, allocators and their limits, region
// growth, host allocators, pools, constant bytes and stream waits. Each
// row runs the bundled model with the knob set and checks the stats; rows
// that compare with the default run (base) say what differs.
func TestKnobEffects(t *testing.T) {
	m := loadModel(t)
	dir := t.TempDir()
	rules := filepath.Join(dir, "rules.txt")
	os.WriteFile(rules, []byte("1:embedding_[01]/.*\n2:embedding_[23]/.*,mlp/layer_1/.*\n"), 0o644)
	base := statsOf(t, m, map[string]string{}, nil, 4)
	if len(base.Groups) != 1 || base.Mode != "pool" || base.Groups[0].RunsCompleted != 4 {
		t.Fatalf("default: %d groups, mode %s; want stock TF (1 group on the inter-op pool)", len(base.Groups), base.Mode)
	}
	devMem := uint64(base.Devices[0].MemoryBytes)
	distinct := func(st Stats, f func(g int) string) int {
		seen := map[string]bool{}
		for i := range st.Groups {
			seen[f(i)] = true
		}
		return len(seen)
	}
	cases := []struct {
		name  string
		env   map[string]string
		cfg   string // text ConfigProto
		runs  int
		check func(t *testing.T, st Stats)
	}{
		{"TF_GPU_STREAM_GROUP_COUNT=3", map[string]string{"TF_GPU_STREAM_GROUP_COUNT": "3"}, "", 6, func(t *testing.T, st Stats) {
			ids := map[int]bool{}
			for _, g := range st.Groups {
				if g.StreamCount != 4 || g.RunsCompleted != 2 {
					t.Errorf("group %d: %d streams, %d runs; want 4 streams and 2 of the 6 runs", g.ID, g.StreamCount, g.RunsCompleted)
				}
				for _, id := range g.Streams {
					ids[id] = true
				}
				if g.Allocator.Limit != st.Groups[0].Allocator.Limit || g.AllocatorShared {
					t.Errorf("group %d: allocator limit %d, shared %v; want its own, an even split", g.ID, g.Allocator.Limit, g.AllocatorShared)
				}
			}
			if len(st.Groups) != 3 || len(ids) != 12 || st.Mode != "streams" || len(st.Allocators) != 3 {
				t.Errorf("%d groups, %d streams, %d allocators, mode %s; want 3, 12, 3, streams", len(st.Groups), len(ids), len(st.Allocators), st.Mode)
			}
			if l := st.Groups[0].Allocator.Limit; l > devMem/3 || l < devMem/3-mib {
				t.Errorf("each limit %d, want a third of %d", l, devMem)
			}
		}},
		{"TF_GPU_STREAM_MERGE", map[string]string{"TF_GPU_STREAM_GROUP_COUNT": "2", "TF_GPU_STREAM_MERGE": "true"}, "", 2, func(t *testing.T, st Stats) {
			for _, g := range st.Groups {
				if g.StreamCount != 1 || g.Streams["compute"] != g.Streams["h2d"] || g.Streams["h2d"] != g.Streams["d2h"] || g.Streams["d2h"] != g.Streams["d2d"] {
					t.Errorf("group %d: %d streams %v; want one for every role", g.ID, g.StreamCount, g.Streams)
				}
				// One stream: nothing crosses streams.
				if g.StreamWaits != 0 {
					t.Errorf("group %d: %d cross-stream waits on a merged group", g.ID, g.StreamWaits)
				}
			}
		}},
		{"TF_GPU_CONTEXT_COUNT=2", map[string]string{"TF_GPU_STREAM_GROUP_COUNT": "4", "TF_GPU_CONTEXT_COUNT": "2"}, "", 1, func(t *testing.T, st Stats) {
			for i, g := range st.Groups {
				if g.Context != i%2 {
					t.Errorf("group %d in context %d, want %d", i, g.Context, i%2)
				}
			}
		}},
		{"TF_PER_STREAM_HOST_ALLOCATOR", map[string]string{"TF_GPU_STREAM_GROUP_COUNT": "3", "TF_PER_STREAM_HOST_ALLOCATOR": "true"}, "", 3, func(t *testing.T, st Stats) {
			if n := distinct(st, func(i int) string { return st.Groups[i].HostAllocator.Name }); n != 3 || st.Groups[0].HostShared {
				t.Errorf("%d host allocators (shared %v), want one per group", n, st.Groups[0].HostShared)
			}
			for _, g := range st.Groups {
				if g.HostAllocator.Allocations == 0 {
					t.Errorf("group %d's host allocator staged nothing", g.ID)
				}
			}
		}},
		{"host allocator default", map[string]string{"TF_GPU_STREAM_GROUP_COUNT": "3"}, "", 3, func(t *testing.T, st Stats) {
			if n := distinct(st, func(i int) string { return st.Groups[i].HostAllocator.Name }); n != 1 || !st.Groups[0].HostShared {
				t.Errorf("%d host allocators, want one per device", n)
			}
		}},
		{"TF_SEGMENT_OWN_CONST", map[string]string{"TF_GPU_STREAM_GROUP_COUNT": "3", "TF_SEGMENT_OWN_CONST": "true"}, "", 3, func(t *testing.T, st Stats) {
			per := statsOf(t, m, map[string]string{"TF_GPU_STREAM_GROUP_COUNT": "3"}, nil, 3)
			// Bytes are chunk sizes, which can round up by where a chunk
			// landed, so "3x" is up to a few chunks.
			if sh, pg := st.ConstBytes[0], per.ConstBytes[0]; sh <= 0 || pg < 3*sh-3*1024 || pg > 3*sh+3*1024 {
				t.Errorf("constants: %d bytes shared, %d per group in all; want 3x", sh, pg)
			}
			if c0, c1 := st.Groups[0].ConstCount, per.Groups[1].ConstCount; c0 == 0 || c0 != c1 {
				t.Errorf("%d constants in the shared store, %d in group 1's own", c0, c1)
			}
			if n := distinct(st, func(i int) string { return st.Groups[i].Consts }); n != 1 || !st.Groups[0].ConstsShared {
				t.Errorf("%d constant stores, want one shared", n)
			}
			if n := distinct(per, func(i int) string { return per.Groups[i].Consts }); n != 3 {
				t.Errorf("without the knob, %d constant stores, want one per group", n)
			}
		}},
		{"TF_GPU_THREAD_MODE=gpu_private", map[string]string{"TF_GPU_STREAM_GROUP_COUNT": "2", "TF_GPU_THREAD_MODE": "gpu_private", "TF_GPU_THREAD_COUNT": "3"}, "", 2, func(t *testing.T, st Stats) {
			for _, g := range st.Groups {
				if g.Pool.Kind != "gpu_private" || g.Pool.Threads != 3 {
					t.Errorf("group %d pool %+v, want 3 private threads", g.ID, g.Pool)
				}
			}
			if st.Groups[0].Pool == st.Groups[1].Pool {
				t.Errorf("groups share pool %+v", st.Groups[0].Pool)
			}
		}},
		{"TF_GPU_THREAD_MODE=gpu_shared", map[string]string{"TF_GPU_STREAM_GROUP_COUNT": "2", "TF_GPU_THREAD_MODE": "gpu_shared", "TF_GPU_THREAD_COUNT": "5"}, "", 2, func(t *testing.T, st Stats) {
			if p := st.Groups[0].Pool; p.Kind != "gpu_shared" || p.Threads != 5 || p != st.Groups[1].Pool {
				t.Errorf("pools %+v %+v, want one of 5 threads shared", p, st.Groups[1].Pool)
			}
		}},
		{"session_inter_op_thread_pool", map[string]string{"TF_GPU_STREAM_GROUP_COUNT": "3"},
			"session_inter_op_thread_pool { num_threads: 2 } session_inter_op_thread_pool { num_threads: 3 }", 3, func(t *testing.T, st Stats) {
				for i, g := range st.Groups {
					if g.Pool.Kind != "session_pool" || g.Pool.Index != i%2 || g.Pool.Threads != 2+i%2 {
						t.Errorf("group %d pool %+v, want session pool %d", i, g.Pool, i%2)
					}
				}
			}},
		{"TF_GPU_STREAM_GROUP_SHARE_MEM_POOL", map[string]string{"TF_GPU_STREAM_GROUP_COUNT": "3", "TF_GPU_STREAM_GROUP_SHARE_MEM_POOL": "true"}, "", 3, func(t *testing.T, st Stats) {
			var regions uint64
			for _, a := range st.Allocators {
				regions += a.RegionBytes
			}
			if len(st.Allocators) != 3 || st.Groups[0].Allocator.Limit != devMem || regions >= devMem {
				t.Errorf("%d allocators, limit %d, %d bytes in regions; want 3 allocators drawing on demand from one %d-byte limit",
					len(st.Allocators), st.Groups[0].Allocator.Limit, regions, devMem)
			}
		}},
		{"TF_GPU_STREAM_GROUP_SHARE_MEMORY_LIMIT (alias)", map[string]string{"TF_GPU_STREAM_GROUP_COUNT": "3", "TF_GPU_STREAM_GROUP_SHARE_MEMORY_LIMIT": "1"}, "", 1, func(t *testing.T, st Stats) {
			if st.Groups[0].Allocator.Limit != devMem || st.Knobs["TF_GPU_STREAM_GROUP_SHARE_MEM_POOL"] != "true" {
				t.Errorf("limit %d, knob %q; want the shared limit", st.Groups[0].Allocator.Limit, st.Knobs["TF_GPU_STREAM_GROUP_SHARE_MEM_POOL"])
			}
		}},
		{"TF_GPU_STREAM_AWARE_BFC", map[string]string{"TF_GPU_STREAM_GROUP_COUNT": "3", "TF_GPU_STREAM_AWARE_BFC": "true"}, "", 6, func(t *testing.T, st Stats) {
			if len(st.Allocators) != 1 || !st.Groups[0].AllocatorShared || st.Allocators[0].Limit != devMem {
				t.Errorf("%d allocators (shared %v, limit %d), want one stream-aware allocator for all", len(st.Allocators), st.Groups[0].AllocatorShared, st.Allocators[0].Limit)
			}
			// A group reuses memory another group freed only through the
			// stream-aware rules: after waiting on its event, or once the
			// event has completed (retired). With a graph that has no
			// constants, everything the first run (group 0) used is free
			// and owned by group 0's streams afterwards; with 2 MiB tensors
			// in a 6 MiB limit (a run holds two at once), the 2 MiB group 0
			// never touched cannot hold group 1's run, so group 1 must
			// reuse group 0's chunks.
			g := newGB(t)
			const n = 512 << 10
			x := g.placeholder("x", tensor.PartialShape{Known: true, Dims: []int64{n}})
			y := g.op("Tanh", "y", nil, g.relu("r", x))
			s := openSession(t, g.g, map[string]string{"TF_GPU_STREAM_GROUP_COUNT": "3", "TF_GPU_STREAM_AWARE_BFC": "true", "MSTREAM_HOST_MEMORY_MB": "6"})
			for i := 0; i < 2; i++ {
				if _, _, err := s.Run(nil, []Feed{{x, tensor.FromF32(tensor.Shape{n}, make([]float32, n))}}, []graph.Output{y}, nil); err != nil {
					t.Fatal(err)
				}
				// Frees of held buffers finish after Run returns.
				checkQuiescent(t, s)
			}
			if a := s.Stats().Allocators[0]; a.CrossStreamWaits+a.Retired == 0 {
				t.Errorf("group 1 ran without reusing group 0's memory through a wait or a retirement: %+v", a)
			}
		}},
		{"TF_FORCE_GPU_ALLOW_GROWTH", map[string]string{"TF_FORCE_GPU_ALLOW_GROWTH": "true"}, "", 1, func(t *testing.T, st Stats) {
			a, b := st.Allocators[0], base.Allocators[0]
			if b.RegionBytes != b.Limit || b.Extends != 1 {
				t.Errorf("default: %d region bytes in %d extends, want the whole limit %d at once", b.RegionBytes, b.Extends, b.Limit)
			}
			if a.RegionBytes >= a.Limit/4 || a.RegionBytes < a.PeakBytesInUse {
				t.Errorf("growth: %d region bytes for a peak of %d (limit %d)", a.RegionBytes, a.PeakBytesInUse, a.Limit)
			}
		}},
		{"allow_growth (ConfigProto)", nil, "gpu_options { allow_growth: true }", 1, func(t *testing.T, st Stats) {
			if a := st.Allocators[0]; a.RegionBytes >= a.Limit/4 {
				t.Errorf("%d region bytes of %d: regions did not grow on demand", a.RegionBytes, a.Limit)
			}
		}},
		{"TF_BFC_EXTEND_LIMIT_MB=1", map[string]string{"TF_BFC_EXTEND_LIMIT_MB": "1"}, "", 1, func(t *testing.T, st Stats) {
			// Stock TF takes the whole limit in one extend; capped, the
			// allocator grows 1 MiB at a time, as far as the run needs.
			a := st.Allocators[0]
			if a.LargestExtend != mib || a.RegionBytes > uint64(a.Extends)*mib || a.RegionBytes < a.PeakBytesInUse {
				t.Errorf("extends %d, largest %d, regions %d for a peak of %d; want 1 MiB growths", a.Extends, a.LargestExtend, a.RegionBytes, a.PeakBytesInUse)
			}
			if b := base.Allocators[0]; b.LargestExtend != b.Limit {
				t.Errorf("default: largest extend %d, want the whole limit %d", b.LargestExtend, b.Limit)
			}
		}},
		{"per_process_gpu_memory_fraction", nil, "gpu_options { per_process_gpu_memory_fraction: 0.25 }", 1, func(t *testing.T, st Stats) {
			if l := st.Allocators[0].Limit; l > devMem/4 || l < devMem/4-mib {
				t.Errorf("limit %d, want a quarter of %d", l, devMem)
			}
		}},
		{"virtual_devices.memory_limit_mb", map[string]string{"TF_GPU_STREAM_GROUP_COUNT": "2"},
			"gpu_options { experimental { virtual_devices { memory_limit_mb: 64 } } }", 1, func(t *testing.T, st Stats) {
				for _, a := range st.Allocators {
					if a.Limit != 32*mib {
						t.Errorf("%s limit %d, want half of 64 MiB", a.Name, a.Limit)
					}
				}
			}},
		{"MSTREAM_HOST_MEMORY_MB", map[string]string{"MSTREAM_HOST_MEMORY_MB": "48"}, "", 1, func(t *testing.T, st Stats) {
			if st.Devices[0].MemoryBytes != 48*mib || st.Allocators[0].Limit != 48*mib {
				t.Errorf("device %d bytes, limit %d; want 48 MiB", st.Devices[0].MemoryBytes, st.Allocators[0].Limit)
			}
		}},
		{"TF_REDUCE_STREAM_WAIT=false", map[string]string{"TF_GPU_STREAM_GROUP_COUNT": "2", "TF_REDUCE_STREAM_WAIT": "false"}, "", 2, func(t *testing.T, st Stats) {
			red := statsOf(t, m, map[string]string{"TF_GPU_STREAM_GROUP_COUNT": "2"}, nil, 2)
			var w, skip, rw, rskip int64
			for i := range st.Groups {
				w, skip = w+st.Groups[i].StreamWaits, skip+st.Groups[i].StreamWaitsSkipped
				rw, rskip = rw+red.Groups[i].StreamWaits, rskip+red.Groups[i].StreamWaitsSkipped
			}
			if skip != 0 || rskip == 0 || w != rw+rskip {
				t.Errorf("unreduced: %d waits, %d skipped; reduced: %d waits, %d skipped; want every wait kept, and reduced+skipped = unreduced", w, skip, rw, rskip)
			}
		}},
		{"TF_NODE_LEVEL_MULTISTREAM", map[string]string{"TF_GPU_STREAM_GROUP_COUNT": "3", "TF_NODE_LEVEL_MULTISTREAM": "true", "TF_STREAM_FROM_FILE": rules}, "", 2, func(t *testing.T, st Stats) {
			if !st.NodeLevel || st.Mode != "streams" {
				t.Errorf("node level %v, mode %s", st.NodeLevel, st.Mode)
			}
			// Every run uses all three groups' compute streams.
			for _, g := range st.Groups {
				if g.RunsCompleted != 2 {
					t.Errorf("group %d took part in %d runs, want 2", g.ID, g.RunsCompleted)
				}
			}
			if st.Groups[1].StreamWaits == 0 && st.Groups[2].StreamWaits == 0 {
				t.Error("no cross-stream wait into the rule-assigned groups")
			}
		}},
		{"MSTREAM_HOST_STREAMS", map[string]string{"MSTREAM_HOST_STREAMS": "1"}, "", 2, func(t *testing.T, st Stats) {
			if st.Mode != "streams" || len(st.Groups) != 1 || st.Groups[0].StreamWaits == 0 {
				t.Errorf("mode %s, %d groups, %d waits; want one group run on its streams", st.Mode, len(st.Groups), st.Groups[0].StreamWaits)
			}
		}},
		{"MSTREAM_TRACE", map[string]string{"TF_GPU_STREAM_GROUP_COUNT": "2", "MSTREAM_TRACE": filepath.Join(dir, "t.json")}, "", 3, func(t *testing.T, st Stats) {
			if !st.Trace.All || st.Trace.Steps != 3 || base.Trace.Steps != 0 {
				t.Errorf("trace %+v (default %+v), want every step kept", st.Trace, base.Trace)
			}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var cfg *tfpb.ConfigProto
			if c.cfg != "" {
				var err error
				if cfg, err = parseConfigText(c.cfg); err != nil {
					t.Fatal(err)
				}
			}
			st := statsOf(t, m, c.env, cfg, c.runs)
			for k, v := range c.env {
				if got := st.Knobs[k]; got != v && k != "TF_GPU_STREAM_GROUP_SHARE_MEMORY_LIMIT" && !(v == "1" && got == "true") {
					t.Errorf("knob %s = %q in the stats, set %q", k, got, v)
				}
			}
			c.check(t, st)
		})
	}
}

func parseConfigText(text string) (*tfpb.ConfigProto, error) {
	c := &tfpb.ConfigProto{}
	return c, prototext.Unmarshal([]byte(text), c)
}

// TestForwardPropagation shows TF_MULTI_STREAM_ALLOW_FORWARD_PROPAGATION
// through FULL_TRACE step stats: with a rule putting only `a` on group 1,
// a's successors run on group 0 without the knob and on group 1 with it.
func TestForwardPropagation(t *testing.T) {
	b := newGB(t)
	x := b.placeholder("x", tensor.PartialShape{Known: true, Dims: []int64{2}})
	a := b.relu("a", x)
	bb := b.op("Tanh", "b", nil, a)
	c := b.relu("c", bb)
	rules := filepath.Join(t.TempDir(), "rules.txt")
	os.WriteFile(rules, []byte("1:a\n"), 0o644)
	groupOf := func(fwd string) map[string]string {
		s := openSession(t, b.g, map[string]string{"TF_GPU_STREAM_GROUP_COUNT": "2", "TF_NODE_LEVEL_MULTISTREAM": "true",
			"TF_STREAM_FROM_FILE": rules, "TF_MULTI_STREAM_ALLOW_FORWARD_PROPAGATION": fwd,
			// Fusion would merge the unary chain into one node.
			"MSTREAM_FUSION": "false"})
		out, md, err := s.Run(&tfpb.RunOptions{TraceLevel: tfpb.RunOptions_FULL_TRACE},
			[]Feed{{x, tensor.FromF32(tensor.Shape{2}, []float32{-1, 2})}}, []graph.Output{c}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if v := out[0].F32(); v[0] != 0 || v[1] != float32(math.Tanh(2)) {
			t.Errorf("c = %v", v)
		}
		got := map[string]string{}
		for _, ds := range md.GetStepStats().GetDevStats() {
			for _, ns := range ds.NodeStats {
				got[ns.NodeName] = strings.SplitN(ds.ThreadNames[0], "/", 2)[0]
			}
		}
		return got
	}
	if g := groupOf("false"); g["a"] != "group1" || g["b"] != "group0" || g["c"] != "group0" {
		t.Errorf("without propagation: %v; want a on group1, b and c on group0", g)
	}
	if g := groupOf("true"); g["a"] != "group1" || g["b"] != "group1" || g["c"] != "group1" {
		t.Errorf("with propagation: %v; want a, b and c on group1", g)
	}
}
