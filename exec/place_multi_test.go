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
// first, and host nodes and constants belong to the home GPU.
func TestPlaceGPUs(t *testing.T) {
	for _, c := range []struct {
		name       string
		gpus       int
		devA, devB string // devices of nodes a and b (b reads a)
		constDev   string // device of the constant both read
		soft       bool
		want       string // "a b" GPUs ("cpu" for a host node), then the plan's GPUs
		code       status.Code
		errHas     []string
	}{
		{name: "unannotated", gpus: 2, want: "0 0 [0]"},
		{name: "b on GPU:1", gpus: 2, devB: "/device:GPU:1", want: "0 1 [0 1]"},
		{name: "a on GPU:1", gpus: 2, devA: "/job:localhost/replica:0/task:0/device:GPU:1", want: "1 0 [1 0]"},
		{name: "both on /gpu:1", gpus: 3, devA: "/gpu:1", devB: "/gpu:1", want: "1 1 [1]"},
		{name: "CPU and GPU:1", gpus: 2, devA: "/device:CPU:0", devB: "/device:GPU:1", want: "cpu 1 [1]"},
		{name: "two GPUs", gpus: 2, devA: "/device:GPU:1", devB: "/device:GPU:0", want: "1 0 [1 0]"},
		{name: "missing GPU", gpus: 2, devA: "/device:GPU:2", code: status.InvalidArgument, errHas: []string{"'a'", "GPU:2"}},
		{name: "missing GPU soft", gpus: 2, devA: "/device:GPU:2", devB: "/device:GPU:1", soft: true, want: "0 1 [0 1]"},
		{name: "const elsewhere", gpus: 2, devA: "/device:GPU:1", devB: "/device:GPU:1", constDev: "/device:GPU:0", want: "1 1 [1]"},
		{name: "wildcard", gpus: 2, devA: "/device:GPU:*", devB: "/device:GPU:1", want: "0 1 [0 1]"},
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
		ng := p.NodeGPUs()
		where := map[string]string{}
		for i, n := range p.Nodes() {
			where[n.Name] = fmt.Sprint(ng[i])
			if p.PlacedOn()[i] == "CPU" {
				where[n.Name] = "cpu"
			}
		}
		if got := fmt.Sprintf("%s %s %v", where["a"], where["b"], p.GPUs()); got != c.want {
			t.Errorf("%s: placed %q, want %q", c.name, got, c.want)
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
