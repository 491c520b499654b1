package exec

import (
	"strings"
	"testing"

	"mstream/graph"
	"mstream/status"
)

// TestPickGPU: a plan's GPU nodes run on one GPU, the first existing GPU
// an annotation names (GPU 0 when none does); a second GPU fails the plan
// with UNIMPLEMENTED naming both nodes, unless allow_soft_placement.
func TestPickGPU(t *testing.T) {
	for _, c := range []struct {
		name       string
		gpus       int
		devA, devB string // devices of nodes a and b (b reads a)
		constDev   string // device of the constant both read
		soft       bool
		want       int // the plan's GPU, when no error
		code       status.Code
		errHas     []string
		logs       int
	}{
		{name: "unannotated", gpus: 2, want: 0},
		{name: "one annotated GPU:1", gpus: 2, devB: "/device:GPU:1", want: 1},
		{name: "full name GPU:1", gpus: 2, devA: "/job:localhost/replica:0/task:0/device:GPU:1", want: 1},
		{name: "lower case /gpu:1", gpus: 3, devA: "/gpu:1", devB: "/gpu:1", want: 1},
		{name: "CPU and GPU:1", gpus: 2, devA: "/device:CPU:0", devB: "/device:GPU:1", want: 1},
		{name: "two GPUs", gpus: 2, devA: "/device:GPU:1", devB: "/device:GPU:0", code: status.Unimplemented,
			errHas: []string{"'a'", "'b'", "GPU:1", "GPU:0", "allow_soft_placement"}},
		{name: "two GPUs soft", gpus: 2, devA: "/device:GPU:1", devB: "/device:GPU:0", soft: true, want: 1, logs: 1},
		{name: "missing GPU", gpus: 2, devA: "/device:GPU:2", code: status.InvalidArgument, errHas: []string{"'a'", "GPU:2"}},
		{name: "missing GPU soft", gpus: 2, devA: "/device:GPU:2", devB: "/device:GPU:1", soft: true, want: 1},
		{name: "const elsewhere", gpus: 2, devA: "/device:GPU:1", constDev: "/device:GPU:0", want: 1},
		{name: "wildcard", gpus: 2, devA: "/device:GPU:*", want: 0},
	} {
		x := constNode("x")
		x.Device = c.constDev
		a := gnode("a", "ExecTestG", c.devA, x)
		b := gnode("b", "ExecTestG", c.devB, a, x)
		logs := 0
		p, err := build(nil, nil, []graph.Output{{Node: b}}, nil, Placement{GPUs: c.gpus, AllowSoft: c.soft,
			Log: func(string, ...any) { logs++ }})
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
		if p.GPU() != c.want {
			t.Errorf("%s: plan on GPU %d, want %d", c.name, p.GPU(), c.want)
		}
		wantA := "GPU"
		if strings.Contains(c.devA, "CPU") {
			wantA = "CPU"
		}
		if got := placed(t, p); got["a"] != wantA || got["b"] != "GPU" {
			t.Errorf("%s: placement %v, want a on %s and b on the GPU", c.name, got, wantA)
		}
		if logs != c.logs {
			t.Errorf("%s: %d log lines, want %d", c.name, logs, c.logs)
		}
	}
	// Without GPUs the plan's GPU is 0 and nothing is checked.
	a := gnode("a", "ExecTestG", "/device:GPU:1", constNode("x"))
	p, err := build(nil, nil, []graph.Output{{Node: a}}, nil, Placement{})
	if err != nil || p.GPU() != 0 || p.OnGPU() {
		t.Errorf("host-only plan: GPU %d, OnGPU %v, err %v", p.GPU(), p.OnGPU(), err)
	}
}
