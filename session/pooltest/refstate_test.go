package pooltest

import (
	"strings"
	"sync/atomic"
	"testing"

	"mstream/device"
	"mstream/graph"
	"mstream/kernels"
	"mstream/kernels/cpu"
	"mstream/kernels/kerneltest"
	"mstream/proto/tfpb"
	"mstream/resource"
	"mstream/session"
	"mstream/status"
	"mstream/tensor"
)

// TF1 ref variables in (fake) GPU memory: fake GPU kernels for the ref
// ops that kernels/cuda/refstate.go runs on the GPU, with its rules (the
// variable found from the graph, its value copied into the step's device
// memory as the output; a TemporaryVariable's or a
// CPU-pinned variable's ops left on the host), through the same device
// values as the resource variables' fakes. The updates compute with the
// CPU kernel on a host copy taken in stream order.

var refOps = []string{"VariableV2", "Variable", "Assign", "AssignAdd", "AssignSub", "ScatterUpdate", "ScatterAdd", "ScatterSub"}

// refRuns counts the fake ref kernels' calls that found or left the
// variable's value in the fake GPU's memory.
var refRuns atomic.Int64

func init() {
	for _, op := range refOps {
		attr := "T"
		if strings.HasPrefix(op, "Variable") {
			attr = "dtype"
		}
		kernels.Register(kernels.Def{Op: op, Device: kernels.GPU, TypeAttr: attr, DeviceState: true,
			Types: []tensor.DType{tensor.Float, tensor.Double, tensor.Int32, tensor.Int64},
			Factory: func(n *graph.Node) (kernels.Kernel, error) {
				src := n
				if !strings.HasPrefix(n.Op, "Variable") {
					var err error
					if src, err = cpu.RefSource(n, 0); err != nil {
						return nil, err
					}
				}
				if src.Op == "TemporaryVariable" || strings.Contains(strings.ToUpper(src.Device), "CPU") {
					return nil, status.Errorf(status.Unimplemented, "variable '%s' stays on the host", src.Name)
				}
				return fakeRef{n: n, src: src}, nil
			}})
	}
}

// fakeRef is a ref op's fake GPU kernel.
type fakeRef struct {
	n, src  *graph.Node
	v       *resource.Var
	byValue bool
}

func (k fakeRef) Bind(b kernels.Binding) (kernels.Kernel, error) {
	k.v = cpu.RefVariable(k.src, b)
	k.byValue = len(b.ReadByValue) > 0 && b.ReadByValue[0]
	return k, nil
}

func (k fakeRef) Compute(ctx *kernels.Context) error {
	if k.v == nil {
		return ctx.Errorf(status.FailedPrecondition, "unbound")
	}
	if _, ok := ctx.Stream.(fakeStream); !ok {
		return status.Errorf(status.Internal, "node '%s': fake GPU kernel on %T", k.n.Name, ctx.Stream)
	}
	cp := fakeCopier{ctx.Stream}
	switch k.n.Op {
	case "VariableV2", "Variable":
	case "Assign":
		value := ctx.Input(1)
		err := kernels.AssignOnDevice(ctx, cp, k.v, value, func(old *tensor.Tensor) error {
			if k.n.Attrs["validate_shape"].GetB() && old != nil && !old.Shape.Equal(value.Shape) {
				return ctx.Errorf(status.InvalidArgument, "Assign requires shapes of both tensors to match. lhs shape= %v rhs shape= %v", old.Shape, value.Shape)
			}
			return nil
		})
		if err != nil {
			return err
		}
	default:
		err := kernels.VarsOnDevice(ctx, cp, []*resource.Var{k.v}, true, func(vals []*tensor.Tensor) error {
			if err := ctx.Stream.Synchronize(); err != nil {
				return err
			}
			return k.onHost(ctx, vals[0])
		})
		if err != nil {
			return err
		}
	}
	return kernels.VarsOnDevice(ctx, cp, []*resource.Var{k.v}, false, func(vals []*tensor.Tensor) error {
		if vals[0] == nil {
			if !k.byValue {
				_, err := ctx.Allocate(0, tensor.Shape{0})
				return err
			}
			return ctx.Errorf(status.FailedPrecondition, "Attempting to use uninitialized value %s", k.v.Name)
		}
		refRuns.Add(1)
		o, err := ctx.Allocate(0, vals[0].Shape)
		if err != nil {
			return err
		}
		return cp.Copy(o, vals[0])
	})
}

// onHost runs the CPU kernel on a host copy of the variable's device
// value val (nil when uninitialised: the CPU kernel reports it) and
// writes the new value back in stream order.
func (k fakeRef) onHost(ctx *kernels.Context, val *tensor.Tensor) error {
	rm := resource.NewManager()
	sv := cpu.RefVariable(k.src, kernels.Binding{Resources: rm})
	if val != nil {
		c := val.Clone()
		sv.Update(func(*tensor.Tensor) (*tensor.Tensor, error) { return c, nil })
	}
	host := *ctx
	host.Alloc, host.Stream, host.Persist = nil, nil, nil
	host.Outputs = make([]*tensor.Tensor, len(ctx.Outputs))
	kk, err := kernels.Make(k.n, kernels.CPU)
	if err != nil {
		return err
	}
	if kk, err = kk.(kernels.Stateful).Bind(kernels.Binding{Resources: rm, ReadByValue: []bool{true}}); err != nil {
		return err
	}
	if err := kk.Compute(&host); err != nil {
		return err
	}
	nv := sv.Value()
	if nv == nil || val == nil || len(nv.Buf) != len(val.Buf) {
		return ctx.Errorf(status.Internal, "the CPU kernel left variable %s as %v", k.v.Name, nv)
	}
	refRuns.Add(1)
	return device.Enqueue(ctx.Stream, func() { copy(val.Buf, nv.Buf) })
}

// TestRefThroughSwitchOnFakeGPU reads a ref variable by value through a
// RefSwitch (so the VariableV2's own consumers are all ref inputs) after
// an Assign on the fake GPU, on 1 and 4 groups, against a CPU session.
func TestRefThroughSwitchOnFakeGPU(t *testing.T) {
	fakeGPUs(t, 1)
	g := graph.New()
	node := func(op, name string, attrs map[string]*tfpb.AttrValue, ins ...graph.Output) *graph.Node {
		b := g.NewBuilder(op, name)
		for k, v := range attrs {
			b.SetAttr(k, v)
		}
		for _, in := range ins {
			b.AddInput(in)
		}
		n, err := b.Finish()
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	s := tensor.Shape{3}
	v := node("VariableV2", "v", map[string]*tfpb.AttrValue{"dtype": kerneltest.AType(tensor.Float), "shape": kerneltest.AShape(s)})
	c := node("Const", "c", map[string]*tfpb.AttrValue{"dtype": kerneltest.AType(tensor.Float), "value": kerneltest.ATensor(tensor.FromF32(s, []float32{1, 2, 3}))})
	d := node("Const", "d", map[string]*tfpb.AttrValue{"dtype": kerneltest.AType(tensor.Float), "value": kerneltest.ATensor(tensor.FromF32(s, []float32{0.5, 0.5, 0.5}))})
	assign := node("Assign", "assign", map[string]*tfpb.AttrValue{"T": kerneltest.AType(tensor.Float)}, v.Output(0), c.Output(0))
	add := node("AssignAdd", "add", map[string]*tfpb.AttrValue{"T": kerneltest.AType(tensor.Float)}, v.Output(0), d.Output(0))
	pred := node("Placeholder", "pred", map[string]*tfpb.AttrValue{"dtype": kerneltest.AType(tensor.Bool)})
	sw := node("RefSwitch", "sw", map[string]*tfpb.AttrValue{"T": kerneltest.AType(tensor.Float)}, v.Output(0), pred.Output(0))
	read := node("Identity", "read", map[string]*tfpb.AttrValue{"T": kerneltest.AType(tensor.Float)}, sw.Output(1))
	before := refRuns.Load()
	for _, groups := range []string{"1", "4"} {
		env := map[string]string{"MSTREAM_DEVICE": "gpu", "TF_GPU_STREAM_GROUP_COUNT": groups}
		ref, gpu := open(t, g, map[string]string{"MSTREAM_DEVICE": "cpu"}), open(t, g, env)
		feeds := []session.Feed{{Output: pred.Output(0), Tensor: tensor.FromBool(tensor.Shape{}, []bool{true})}}
		for i, targets := range [][]*graph.Node{{assign}, nil, {add}, nil, {add}, nil} {
			var fetches []graph.Output
			if targets == nil {
				fetches = []graph.Output{read.Output(0)}
			}
			want, _, werr := ref.Run(nil, feeds, fetches, targets)
			got, _, gerr := gpu.Run(nil, feeds, fetches, targets)
			if werr != nil || gerr != nil {
				t.Fatalf("groups=%s run %d: %v, the CPU session's %v", groups, i, gerr, werr)
			}
			if err := closeTo(got, want); err != nil {
				t.Fatalf("groups=%s run %d: %v", groups, i, err)
			}
		}
	}
	if refRuns.Load() == before {
		t.Error("no ref variable's value was in the fake GPU's memory")
	}
}
