package exec

import (
	"fmt"
	"strings"
	"testing"

	"mstream/graph"
	"mstream/status"
)

// TestPlaceGPUs: a GPU node runs on the existing GPU its annotation names,
// else on GPU 0 as with TF's default placer (soft placement sends a node
// asking for a missing GPU there too); the plan's GPUs are listed home
// first, and host nodes and constants belong to the home GPU. With the
// unpinned nodes sent to GPU 1 (PlaceOn, the session's GPU pool), pinned
// nodes stay where they are.
func TestPlaceGPUs(t *testing.T) {
	for _, c := range []struct {
		name       string
		gpus       int
		devA, devB string // devices of nodes a and b (b reads a)
		constDev   string // device of the constant both read
		soft       bool
		want       string // "a b" GPUs ("cpu" for a host node), then the plan's GPUs
		float1     string // the same with the unpinned GPU nodes on GPU 1
		code       status.Code
		errHas     []string
	}{
		{name: "unannotated", gpus: 2, want: "0 0 [0]", float1: "1 1 [1]"},
		{name: "b on GPU:1", gpus: 2, devB: "/device:GPU:1", want: "0 1 [0 1]", float1: "1 1 [1]"},
		{name: "b on GPU:0", gpus: 2, devB: "/device:GPU:0", want: "0 0 [0]", float1: "1 0 [1 0]"},
		{name: "a on GPU:1", gpus: 2, devA: "/job:localhost/replica:0/task:0/device:GPU:1", want: "1 0 [1 0]", float1: "1 1 [1]"},
		{name: "both on /gpu:1", gpus: 3, devA: "/gpu:1", devB: "/gpu:1", want: "1 1 [1]", float1: "1 1 [1]"},
		{name: "CPU and GPU:1", gpus: 2, devA: "/device:CPU:0", devB: "/device:GPU:1", want: "cpu 1 [1]", float1: "cpu 1 [1]"},
		{name: "two GPUs", gpus: 2, devA: "/device:GPU:1", devB: "/device:GPU:0", want: "1 0 [1 0]", float1: "1 0 [1 0]"},
		{name: "missing GPU", gpus: 2, devA: "/device:GPU:2", code: status.InvalidArgument, errHas: []string{"'a'", "GPU:2"}},
		{name: "missing GPU soft", gpus: 2, devA: "/device:GPU:2", devB: "/device:GPU:1", soft: true, want: "0 1 [0 1]", float1: "1 1 [1]"},
		{name: "const elsewhere", gpus: 2, devA: "/device:GPU:1", devB: "/device:GPU:1", constDev: "/device:GPU:0", want: "1 1 [1]", float1: "1 1 [1]"},
		{name: "wildcard", gpus: 2, devA: "/device:GPU:*", devB: "/device:GPU:1", want: "0 1 [0 1]", float1: "1 1 [1]"},
	} {
		x := constNode("x")
		x.Device = c.constDev
		a := gnode("a", "ExecTestG", c.devA, x)
		b := gnode("b", "ExecTestG", c.devB, a, x)
		p, err := build(nil, nil, []graph.Output{{Node: b}}, nil, Placement{GPUs: c.gpus, AllowSoft: c.soft})
		if c.code != status.OK {
			if err == nil || status.CodeOf(err) != c.code {
				t.Errorf("%s: error %v, want code %v", c.name, err, c.code)
				continue
			}
			for _, h := range c.errHas {
				if !strings.Contains(err.Error(), h) {
					t.Errorf("%s: error %q does not name %s", c.name, err, h)
				}
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		placed := func(gpus, ng []int) (string, map[string]string) {
			where := map[string]string{}
			for i, n := range p.Nodes() {
				where[n.Name] = fmt.Sprint(ng[i])
				if p.PlacedOn()[i] == "CPU" {
					where[n.Name] = "cpu"
				}
			}
			return fmt.Sprintf("%s %s %v", where["a"], where["b"], gpus), where
		}
		got, where := placed(p.GPUs(), p.NodeGPUs())
		if got != c.want {
			t.Errorf("%s: placed %q, want %q", c.name, got, c.want)
		}
		gpus1, ng1 := p.PlaceOn(1)
		if got, w := placed(gpus1, ng1); got != c.float1 || w["x"] != fmt.Sprint(gpus1[0]) {
			t.Errorf("%s: unpinned nodes on GPU 1: placed %q (constant on %s), want %q, the constant on the first GPU", c.name, got, w["x"], c.float1)
		}
		// Exactly the plans whose placement moves have unpinned GPU nodes.
		if p.Floating() != (c.float1 != c.want) {
			t.Errorf("%s: Floating() = %v", c.name, p.Floating())
		}
		// Every case but the unannotated one pins b or a to an existing GPU.
		if p.Pinned() != (c.devA+c.devB != "") {
			t.Errorf("%s: Pinned() = %v", c.name, p.Pinned())
		}
		if p.GPU() != p.GPUs()[0] || where["x"] != fmt.Sprint(p.GPU()) {
			t.Errorf("%s: home GPU %d, GPUs %v, constant on %s", c.name, p.GPU(), p.GPUs(), where["x"])
		}
	}
	// Without GPUs nothing is on a GPU.
	a := gnode("a", "ExecTestG", "/device:GPU:1", constNode("x"))
	p, err := build(nil, nil, []graph.Output{{Node: a}}, nil, Placement{})
	if err != nil || p.GPU() != 0 || len(p.GPUs()) != 0 || p.OnGPU() {
		t.Errorf("host-only plan: GPU %d, GPUs %v, OnGPU %v, err %v", p.GPU(), p.GPUs(), p.OnGPU(), err)
	}
}
