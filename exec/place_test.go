package exec

import (
	"fmt"
	"strings"
	"testing"

	"mstream/graph"
	"mstream/kernels"
	_ "mstream/kernels/cpu" // Const
	"mstream/proto/tfpb"
	"mstream/status"
	"mstream/tensor"
)

// ExecTestG has a CPU and a GPU kernel; its GPU kernel keeps input arg "y"
// (the second input) in host memory, as TF's HostMemory rule does for
// shapes and axes. ExecTestAdd (exec_test.go) has a CPU kernel only.
func init() {
	k := func(n *graph.Node) (kernels.Kernel, error) {
		return kernels.KernelFunc(func(ctx *kernels.Context) error { return nil }), nil
	}
	kernels.Register(kernels.Def{Op: "ExecTestG", Device: kernels.CPU, Factory: k})
	kernels.Register(kernels.Def{Op: "ExecTestG", Device: kernels.GPU, HostMemory: []string{"y"}, Factory: k})
	kernels.Register(kernels.Def{Op: "ExecTestSync", Device: kernels.CPU, Factory: k})
	kernels.Register(kernels.Def{Op: "ExecTestSync", Device: kernels.GPU, SyncsHost: true, Factory: k})
	kernels.Register(kernels.Def{Op: "ExecTestGBad", Device: kernels.CPU, Factory: k})
	kernels.Register(kernels.Def{Op: "ExecTestGBad", Device: kernels.GPU, Factory: func(n *graph.Node) (kernels.Kernel, error) {
		return nil, status.Errorf(status.Unimplemented, "this dtype mix has no GPU kernel")
	}})
}

func gnode(name, op, dev string, ins ...*graph.Node) *graph.Node {
	n := node(name, op, 0, ins...)
	n.Device = dev
	if op == "ExecTestG" && len(ins) == 2 {
		n.InArgs = map[string][2]int{"x": {0, 1}, "y": {1, 2}}
	}
	return n
}

func constNode(name string) *graph.Node {
	n := node(name, "Const", 0)
	n.Attrs = map[string]*tfpb.AttrValue{
		"dtype": {Value: &tfpb.AttrValue_Type{Type: tfpb.DataType(tensor.Float)}},
		"value": {Value: &tfpb.AttrValue_Tensor{Tensor: &tfpb.TensorProto{Dtype: tfpb.DataType(tensor.Float), TensorShape: &tfpb.TensorShapeProto{}, FloatVal: []float32{2}}}},
	}
	return n
}

func placed(t *testing.T, p *Plan) map[string]string {
	t.Helper()
	m := map[string]string{}
	for i, d := range p.PlacedOn() {
		m[p.nodes[i].node.Name] = d
	}
	return m
}

func TestRequestedDevice(t *testing.T) {
	for _, c := range []struct {
		in  string
		typ string
		idx int
	}{
		{"", "", -1}, {"/device:GPU:0", "GPU", 0}, {"/device:gpu:1", "GPU", 1}, {"/gpu:2", "GPU", 2},
		{"/cpu:0", "CPU", 0}, {"/job:localhost/replica:0/task:0/device:CPU:0", "CPU", 0},
		{"/job:localhost/replica:0/task:0/device:GPU:3", "GPU", 3}, {"/device:GPU:*", "GPU", -1},
		{"/job:localhost", "", -1}, {"/device:TPU:0", "TPU", 0},
	} {
		typ, idx := requested(c.in)
		if typ != c.typ || idx != c.idx {
			t.Errorf("requested(%q) = %q, %d; want %q, %d", c.in, typ, idx, c.typ, c.idx)
		}
	}
}

// TestPlacement checks where nodes go and which inputs stay on the host:
// GPU when a GPU kernel exists, host otherwise, annotations honoured.
func TestPlacement(t *testing.T) {
	x := constNode("x")
	gpu := gnode("gpu", "ExecTestG", "", x, x)
	host := gnode("host", "ExecTestAdd", "", gpu)
	forced := gnode("forced", "ExecTestG", "/device:CPU:0", host)
	bad := gnode("bad", "ExecTestGBad", "", forced)
	after := gnode("after", "ExecTestG", "/job:localhost/replica:0/task:0/device:GPU:0", bad)
	var g *graph.Graph
	var logged []string
	fallbackLogged.Delete("ExecTestAdd")
	fallbackLogged.Delete("ExecTestGBad")
	p, err := build(g, nil, []graph.Output{{Node: after}}, nil, Placement{GPUs: 1,
		Log: func(f string, a ...any) { logged = append(logged, fmt.Sprintf(f, a...)) }})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"x": "Const", "gpu": "GPU", "host": "CPU", "forced": "CPU", "bad": "CPU", "after": "GPU"}
	if got := placed(t, p); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("placement %v, want %v", got, want)
	}
	if !p.OnGPU() {
		t.Error("OnGPU() false with GPU nodes")
	}
	for i := range p.nodes {
		if p.nodes[i].node == gpu {
			if h := p.HostInputs(i); fmt.Sprint(h) != "[false true]" {
				t.Errorf("gpu node host inputs %v, want [false true] (y is HostMemory)", h)
			}
		}
	}
	if len(logged) != 2 || !strings.Contains(logged[0], "ExecTestAdd") || !strings.Contains(logged[1], "this dtype mix") {
		t.Errorf("fallback log %q: want one line per op type, with the reason", logged)
	}
	// Copies at host<->GPU edges: gpu -> host comes back, forced (host)
	// -> bad (host) needs none, bad (host) -> after (GPU) goes in; the
	// constant is uploaded from the store, not listed.
	var tr []string
	for _, c := range p.Transfers() {
		tr = append(tr, fmt.Sprintf("%s->%s:%d h2d=%v", c.From, c.To, c.Input, c.H2D))
	}
	if got, want := strings.Join(tr, " "), "gpu:0->host:0 h2d=false bad:0->after:0 h2d=true"; got != want {
		t.Errorf("transfers %q, want %q", got, want)
	}

	// A second plan logs nothing new: once per op type.
	logged = nil
	if _, err := build(g, nil, []graph.Output{{Node: host}}, nil, Placement{GPUs: 1,
		Log: func(f string, a ...any) { logged = append(logged, fmt.Sprintf(f, a...)) }}); err != nil {
		t.Fatal(err)
	}
	if len(logged) != 0 {
		t.Errorf("second plan logged %q", logged)
	}

	// Without a GPU every node is placed on the host, as Build does.
	p, err = build(g, nil, []graph.Output{{Node: after}}, nil, Placement{})
	if err != nil {
		t.Fatal(err)
	}
	for name, d := range placed(t, p) {
		if d != "CPU" {
			t.Errorf("host-only plan put %s on %s", name, d)
		}
	}
	if p.OnGPU() || len(p.Transfers()) != 0 {
		t.Errorf("host-only plan: OnGPU %v, transfers %v", p.OnGPU(), p.Transfers())
	}
}

// TestPlacementExplicitGPU: an explicit GPU device that cannot be honoured
// fails the plan naming the node, unless allow_soft_placement.
func TestPlacementExplicitGPU(t *testing.T) {
	x := constNode("x")
	for _, c := range []struct {
		op, dev string
		soft    bool
		want    string // placement, or the error's text
	}{
		{"ExecTestAdd", "/device:GPU:0", false, "no supported kernel for GPU devices"},
		{"ExecTestAdd", "/device:GPU:0", true, "CPU"},
		{"ExecTestGBad", "/gpu:0", false, "this dtype mix"},
		{"ExecTestG", "/device:GPU:3", false, "no devices matching that specification"},
		{"ExecTestG", "/device:GPU:3", true, "GPU"},
		{"ExecTestG", "/device:GPU:0", false, "GPU"},
		{"ExecTestG", "/device:CPU:0", false, "CPU"},
		{"ExecTestAdd", "/device:CPU:0", false, "CPU"},
		// int32 arithmetic over host values goes to the host (place_shape.go)
		// only where the node could have run on the GPU.
		{"ExecTestI32", "/device:GPU:0", false, "CPU"},
		{"ExecTestI32", "/device:GPU:3", false, "no devices matching that specification"},
		{"ExecTestI32", "/device:GPU:3", true, "CPU"},
		{"ExecTestAddI32", "/device:GPU:0", false, "no supported kernel for GPU devices"},
		{"ExecTestAddI32", "/device:GPU:0", true, "CPU"},
	} {
		op := strings.TrimSuffix(c.op, "I32")
		if c.op == "ExecTestI32" {
			op = c.op
		}
		n := gnode("n", op, c.dev, x)
		if strings.HasSuffix(c.op, "I32") {
			n.OutTypes = []tensor.DType{tensor.Int32}
		}
		p, err := build(nil, nil, []graph.Output{{Node: n}}, nil, Placement{GPUs: 1, AllowSoft: c.soft})
		name := fmt.Sprintf("%s on %q soft=%v", c.op, c.dev, c.soft)
		if err != nil {
			if status.CodeOf(err) != status.InvalidArgument || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "'n'") {
				t.Errorf("%s: error %v, want INVALID_ARGUMENT naming 'n' and %q", name, err, c.want)
			}
			continue
		}
		if got := placed(t, p)["n"]; got != c.want {
			t.Errorf("%s: placed on %s, want %s", name, got, c.want)
		}
	}
}

// TestFeedDevice: a feed goes to the GPU only when a GPU kernel reads it
// from device memory; a HostMemory input or a host kernel keeps it home.
func TestFeedDevice(t *testing.T) {
	f1, f2, f3 := node("f1", "Placeholder", 0), node("f2", "Placeholder", 0), node("f3", "Placeholder", 0)
	gpu := gnode("gpu", "ExecTestG", "", f1, f2)
	host := gnode("host", "ExecTestAdd", "", f3, gpu)
	var g *graph.Graph
	feeds := []graph.Output{{Node: f1}, {Node: f2}, {Node: f3}}
	p, err := build(g, feeds, []graph.Output{{Node: host}}, nil, Placement{GPUs: 1})
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(p.feedDev) != "[true false false]" {
		t.Errorf("feedDev %v, want [true false false]", p.feedDev)
	}
}
