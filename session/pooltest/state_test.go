package pooltest

import (
	"fmt"
	"math"
	"math/rand"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"mstream/device"
	"mstream/graph"
	"mstream/hostmem"
	"mstream/kernels"
	"mstream/kernels/cpu"
	"mstream/proto/tfpb"
	"mstream/resource"
	"mstream/session"
	"mstream/session/varcases"
	"mstream/status"
	"mstream/tensor"
)

// Variables in (fake) GPU memory, at the session level: the ops of
// kernels/cuda/state.go get fake GPU kernels that keep each variable's
// value in the fake GPU's memory through the same machinery as the CUDA
// kernels (kernels.VarsOnDevice, AssignOnDevice, resource.DeviceValue,
// the executor's kernels.Persist), and compute with the CPU kernel on
// host copies taken in stream order. A read or write that misses a wait
// for another group's use of the variable reads or writes at the wrong
// time, which the host streams' jitter turns into wrong values.

// stateOps are the ops with GPU kernels that keep variables on the GPU.
var stateOps = []string{"ReadVariableOp", "AssignVariableOp", "AssignAddVariableOp", "AssignSubVariableOp",
	"ResourceGather", "ResourceScatterUpdate", "ResourceScatterAdd", "ResourceScatterSub",
	"ResourceApplyGradientDescent", "ResourceApplyMomentum", "ResourceApplyAdam", "ResourceApplyAdagrad",
	"ResourceApplyRMSProp", "ResourceApplyCenteredRMSProp", "ResourceApplyFtrl", "ResourceApplyFtrlV2",
	"ResourceSparseApplyAdagrad", "ResourceSparseApplyMomentum", "ResourceSparseApplyRMSProp",
	"ResourceSparseApplyCenteredRMSProp", "ResourceSparseApplyFtrl", "ResourceSparseApplyFtrlV2"}

// stateHost are the inputs that stay in host memory (as kernels/cuda's).
var stateHost = []string{"resource", "var", "accum", "m", "v", "ms", "mom", "mg", "linear",
	"lr", "l1", "l2", "lr_power", "l2_shrinkage", "rho", "momentum", "epsilon", "alpha", "beta1_power",
	"beta2_power", "beta1", "beta2"}

func init() {
	for _, op := range stateOps {
		kernels.Register(kernels.Def{Op: op, Device: kernels.GPU, HostMemory: stateHost, DeviceState: true,
			Factory: func(n *graph.Node) (kernels.Kernel, error) { return fakeState{n: n}, nil }})
	}
}

// fakeCopier copies on the fake GPU's stream.
type fakeCopier struct{ st device.Stream }

func (c fakeCopier) CopyIn(dst *tensor.Tensor, src []byte) error {
	return c.st.CopyH2D(addrOf(dst), append([]byte(nil), src...))
}

func (c fakeCopier) Copy(dst, src *tensor.Tensor) error {
	if len(src.Buf) == 0 {
		return nil
	}
	return c.st.CopyD2D(addrOf(dst), addrOf(src), uint64(len(src.Buf)))
}

func addrOf(t *tensor.Tensor) uint64 { return hostmem.DeviceAddr(t.Buf) }

// fakeState is a state op's fake GPU kernel.
type fakeState struct {
	n  *graph.Node
	rm *resource.Manager
}

func (k fakeState) Bind(b kernels.Binding) (kernels.Kernel, error) {
	k.rm = b.Resources
	return k, nil
}

// stateRuns counts the fake state kernels' calls, so the tests know the
// variables' ops ran on the fake GPU.
var stateRuns atomic.Int64

func (k fakeState) Compute(ctx *kernels.Context) error {
	stateRuns.Add(1)
	if k.rm == nil {
		return ctx.Errorf(status.FailedPrecondition, "unbound")
	}
	if _, ok := ctx.Stream.(fakeStream); !ok {
		return status.Errorf(status.Internal, "node '%s': fake GPU kernel on %T", k.n.Name, ctx.Stream)
	}
	cp := fakeCopier{ctx.Stream}
	n := k.n
	switch n.Op {
	case "AssignVariableOp":
		h, err := resource.FromTensor(ctx.Input(0))
		if err != nil {
			return ctx.Errorf(status.InvalidArgument, "%v", err)
		}
		dt := tensor.DType(n.Attrs["dtype"].GetType())
		v := k.rm.LookupOrCreate(h.Container, h.Name, resource.VarKind, func() resource.Resource { return resource.NewVar(dt, h.Name) }).(*resource.Var)
		return kernels.AssignOnDevice(ctx, cp, v, ctx.Input(1), func(old *tensor.Tensor) error {
			return cpu.CheckAssign(ctx, v, dt, n.Attrs["validate_shape"].GetB(), old, ctx.Input(1))
		})
	case "ReadVariableOp":
		v, err := cpu.ReadableVar(ctx, k.rm)
		if err != nil {
			return err
		}
		return kernels.VarsOnDevice(ctx, cp, []*resource.Var{v}, false, func(vals []*tensor.Tensor) error {
			o, err := ctx.Allocate(0, vals[0].Shape)
			if err != nil {
				return err
			}
			return cp.Copy(o, vals[0])
		})
	}
	// Every other op: the CPU kernel on host copies of the variables,
	// taken once the stream (which already waits for the variables'
	// other uses) has reached the kernel; the new values are written back
	// in stream order.
	var vs []*resource.Var
	var slots []int
	for i, in := range n.Inputs {
		if in.Node.OutTypes[in.Index] != tensor.Resource {
			continue
		}
		h, err := resource.FromTensor(ctx.Input(i))
		if err != nil {
			return ctx.Errorf(status.InvalidArgument, "%v", err)
		}
		r, err := k.rm.Lookup(h.Container, h.Name, resource.VarKind)
		if err != nil {
			return k.onHost(ctx, nil, nil) // the CPU kernel's error
		}
		vs = append(vs, r.(*resource.Var))
		slots = append(slots, i)
	}
	return kernels.VarsOnDevice(ctx, cp, vs, n.Op != "ResourceGather", func(vals []*tensor.Tensor) error {
		if err := ctx.Stream.Synchronize(); err != nil {
			return err
		}
		return k.onHost(ctx, vs, vals)
	})
}

// onHost runs the CPU kernel on host copies of the variables' device
// values vals (nil when one is missing: the CPU kernel reports it).
func (k fakeState) onHost(ctx *kernels.Context, vs []*resource.Var, vals []*tensor.Tensor) error {
	n := k.n
	rm := resource.NewManager()
	host := *ctx
	host.Alloc, host.Stream, host.Persist = nil, nil, nil
	host.Outputs = make([]*tensor.Tensor, len(ctx.Outputs))
	host.Inputs = append([]*tensor.Tensor(nil), ctx.Inputs...)
	scratch := make([]*resource.Var, len(vs))
	for i, v := range vs {
		h := resource.Handle{Name: fmt.Sprintf("slot%d", i), Kind: resource.VarKind, DType: v.DType}
		sv := rm.LookupOrCreate("", h.Name, resource.VarKind, func() resource.Resource { return resource.NewVar(v.DType, h.Name) }).(*resource.Var)
		if vals[i] != nil {
			c := vals[i].Clone()
			sv.Update(func(*tensor.Tensor) (*tensor.Tensor, error) { return c, nil })
		}
		scratch[i] = sv
	}
	j := 0
	for i, in := range n.Inputs {
		if in.Node.OutTypes[in.Index] == tensor.Resource && j < len(vs) {
			host.Inputs[i] = resource.Handle{Name: fmt.Sprintf("slot%d", j), Kind: resource.VarKind, DType: vs[j].DType}.Tensor()
			j++
		}
	}
	def, err := kernels.Lookup(n, kernels.CPU)
	if err != nil {
		return err
	}
	kk, err := def.Factory(n)
	if err != nil {
		return err
	}
	if kk, err = kk.(kernels.Stateful).Bind(kernels.Binding{Resources: rm, ReadByValue: []bool{true}}); err != nil {
		return err
	}
	if vs == nil {
		// The variable is missing: the CPU kernel against the session's
		// own resources fails as it should.
		kk, _ = def.Factory(n)
		if kk, err = kk.(kernels.Stateful).Bind(kernels.Binding{Resources: k.rm, ReadByValue: []bool{true}}); err != nil {
			return err
		}
		host.Inputs = ctx.Inputs
	}
	if err := kk.Compute(&host); err != nil {
		return err
	}
	for i, sv := range scratch {
		nv := sv.Value()
		dst := vals[i]
		if nv == nil || dst == nil || len(nv.Buf) != len(dst.Buf) {
			continue
		}
		if err := device.Enqueue(ctx.Stream, func() { copy(dst.Buf, nv.Buf) }); err != nil {
			return err
		}
	}
	for i, o := range host.Outputs {
		if o == nil {
			continue
		}
		dev, err := ctx.Allocate(i, o.Shape)
		if err != nil {
			return err
		}
		if err := device.Enqueue(ctx.Stream, func() { copy(dev.Buf, o.Buf) }); err != nil {
			return err
		}
	}
	return nil
}

// closeTo compares two runs' outputs (float to 1e-5 relative, the rest
// exactly).
func closeTo(got, want []*tensor.Tensor) error {
	if len(got) != len(want) {
		return fmt.Errorf("%d outputs, want %d", len(got), len(want))
	}
	for i := range got {
		g, w := got[i], want[i]
		if g.DType != w.DType || !g.Shape.Equal(w.Shape) {
			return fmt.Errorf("output %d is %v%v, want %v%v", i, g.DType, g.Shape, w.DType, w.Shape)
		}
		switch w.DType {
		case tensor.Float:
			gv, wv := g.F32(), w.F32()
			for j := range wv {
				if d := math.Abs(float64(gv[j] - wv[j])); d > 1e-5*math.Max(1, math.Abs(float64(wv[j]))) {
					return fmt.Errorf("output %d element %d: %v, want %v", i, j, gv[j], wv[j])
				}
			}
		case tensor.String:
			for j := range w.Strs {
				if string(g.Strs[j]) != string(w.Strs[j]) {
					return fmt.Errorf("output %d element %d: %q, want %q", i, j, g.Strs[j], w.Strs[j])
				}
			}
		default:
			if string(g.Buf) != string(w.Buf) {
				return fmt.Errorf("output %d: %v, want %v", i, g.Buf, w.Buf)
			}
		}
	}
	return nil
}

// TestVariablesOnFakeGPU replays test/variables' TF-made programs
// (assigns, reads, gathers, scatters, every optimizer, dense and sparse,
// checkpoints; resource and TF1 ref variables) on one fake GPU whose
// state ops keep the variables in its memory, with 1 group and with 4 groups under the stream sanitizer
// (consecutive Runs take different groups, so each reads what another
// group's streams wrote), and compares every fetch and every error code
// with a CPU session's (which TestVariablesAgainstTF compares with TF).
func TestVariablesOnFakeGPU(t *testing.T) {
	fakeGPUs(t, 1)
	dir := "../../test/variables"
	cases := varcases.Read(t, dir)
	before, refBefore := stateRuns.Load(), refRuns.Load()
	defer func() {
		if stateRuns.Load() == before {
			t.Error("no variable op ran on the fake GPU")
		}
		if refRuns.Load() == refBefore {
			t.Error("no ref variable's value was in the fake GPU's memory")
		}
		t.Logf("%d ref kernel calls used a value in the fake GPU's memory", refRuns.Load()-refBefore)
	}()
	for _, c := range cases {
		for _, groups := range []string{"1", "4"} {
			t.Run(c.Name+"/groups="+groups, func(t *testing.T) {
				g := varcases.Graph(t, filepath.Join(dir, c.Graph))
				env := map[string]string{"MSTREAM_DEVICE": "gpu", "TF_GPU_STREAM_GROUP_COUNT": groups}
				if groups != "1" {
					env["MSTREAM_STREAM_JITTER"] = "true"
				}
				ref, s := open(t, g, map[string]string{"MSTREAM_DEVICE": "cpu"}), open(t, g, env)
				tmpRef, tmp := t.TempDir(), t.TempDir()
				for k, r := range c.Runs {
					run := func(s *session.Session, tmp string) ([]*tensor.Tensor, error) {
						var feeds []session.Feed
						for name, v := range r.Feeds {
							feeds = append(feeds, session.Feed{Output: varcases.Output(t, g, name+":0"), Tensor: v.Tensor(t, dir, tmp)})
						}
						var fetches []graph.Output
						for _, f := range r.Fetches {
							fetches = append(fetches, varcases.Output(t, g, f))
						}
						var targets []*graph.Node
						for _, n := range r.Targets {
							targets = append(targets, g.Lookup(n))
						}
						out, _, err := s.Run(nil, feeds, fetches, targets)
						for _, o := range out {
							for j, b := range o.Strs { // a checkpoint's path: each session has its own folder
								o.Strs[j] = []byte(strings.ReplaceAll(string(b), tmp, "__TMP__"))
							}
						}
						return out, err
					}
					want, werr := run(ref, tmpRef)
					got, gerr := run(s, tmp)
					if werr != nil || gerr != nil {
						if werr == nil || gerr == nil || status.CodeOf(werr) != status.CodeOf(gerr) {
							t.Fatalf("run %d: error %v, the CPU session's %v", k, gerr, werr)
						}
						continue
					}
					if err := closeTo(got, want); err != nil {
						t.Fatalf("run %d: %v", k, err)
					}
				}
			})
		}
	}
}

// TestTrainingOnFakeGPU trains the bundled training example's model
// (examples/data/training.pbtxt: four towers of embeddings and MLPs,
// Adagrad, sparse for the embeddings) for a few steps on one fake GPU
// whose state ops keep the variables in its memory, with 1 group and
// node-level with 4 groups (a tower per group, from the example's
// stream file), and compares every step's loss with a CPU session's.
func TestTrainingOnFakeGPU(t *testing.T) {
	fakeGPUs(t, 1)
	g := varcases.Graph(t, "../../examples/data/training.pbtxt")
	r := rand.New(rand.NewSource(7))
	// The init feeds: every "<variable>_init_value" placeholder.
	var initFeeds []func() session.Feed
	for _, n := range g.Nodes() {
		if n.Op != "Placeholder" || !strings.HasSuffix(n.Name, "_init_value") {
			continue
		}
		shape := tensor.Shape(tensor.ShapeFromProto(n.Attrs["shape"].GetShape()).Dims)
		v := randF32(r, shape)
		out := graph.Output{Node: n}
		initFeeds = append(initFeeds, func() session.Feed { return session.Feed{Output: out, Tensor: v} })
	}
	vocab := []int64{1000, 5000, 2000, 500}
	const batch, steps = 64, 4
	var stepFeeds [][]session.Feed
	for s := 0; s < steps; s++ {
		var fs []session.Feed
		for tw, v := range vocab {
			ids := make([]int64, batch)
			for i := range ids {
				ids[i] = r.Int63n(v)
			}
			fs = append(fs, session.Feed{Output: varcases.Output(t, g, fmt.Sprintf("tower%d/ids", tw)), Tensor: tensor.FromI64(tensor.Shape{batch}, ids)})
		}
		lab := make([]float32, batch)
		for i := range lab {
			lab[i] = float32(r.Intn(2))
		}
		fs = append(fs, session.Feed{Output: varcases.Output(t, g, "head/label"), Tensor: tensor.FromF32(tensor.Shape{batch, 1}, lab)})
		stepFeeds = append(stepFeeds, fs)
	}
	losses := func(s *session.Session) []float32 {
		var feeds []session.Feed
		for _, f := range initFeeds {
			feeds = append(feeds, f())
		}
		if _, _, err := s.Run(nil, feeds, nil, []*graph.Node{g.Lookup("init")}); err != nil {
			t.Fatalf("init: %v", err)
		}
		var out []float32
		for k, fs := range stepFeeds {
			got, _, err := s.Run(nil, fs, []graph.Output{varcases.Output(t, g, "loss:0")}, []*graph.Node{g.Lookup("train")})
			if err != nil {
				t.Fatalf("step %d: %v", k, err)
			}
			out = append(out, got[0].F32()[0])
		}
		return out
	}
	want := losses(open(t, g, map[string]string{"MSTREAM_DEVICE": "cpu"}))
	before := stateRuns.Load()
	for _, env := range []map[string]string{
		{"MSTREAM_DEVICE": "gpu"},
		{"MSTREAM_DEVICE": "gpu", "TF_NODE_LEVEL_MULTISTREAM": "true", "TF_GPU_STREAM_GROUP_COUNT": "4",
			"TF_STREAM_FROM_FILE": "../../examples/data/training_streams.txt", "MSTREAM_STREAM_JITTER": "true"},
	} {
		got := losses(open(t, g, env))
		for k := range want {
			if d := math.Abs(float64(got[k] - want[k])); d > 1e-5*math.Max(1, math.Abs(float64(want[k]))) {
				t.Errorf("%v: step %d loss %v, the CPU session's %v", env, k, got[k], want[k])
			}
		}
	}
	if stateRuns.Load() == before {
		t.Error("no variable op ran on the fake GPU")
	}
}

// TestVariableNeverTornOnFakeGPU: on one fake GPU with 4 groups and the
// stream sanitizer, one goroutine adds ones to a variable of 64k floats
// (AssignAddVariableOp, in place on the device) while four others read it
// (ReadVariableOp), each Run on whichever group is free: a read ordered
// after no write would copy a buffer being written and see a mix. Every
// read must be some value the writer made (all elements equal), and each
// reader's values never go back.
func TestVariableNeverTornOnFakeGPU(t *testing.T) {
	fakeGPUs(t, 1)
	b := builder{t, graph.New()}
	f32 := map[string]*tfpb.AttrValue{"dtype": graph.AttrType(tensor.Float)}
	const n = 1 << 20
	h := b.op("VarHandleOp", "v", "", map[string]*tfpb.AttrValue{"dtype": graph.AttrType(tensor.Float),
		"shape": graph.AttrShape(tensor.KnownShape(tensor.Shape{n})), "shared_name": graph.AttrString("v")})
	init := b.op("Placeholder", "init_value", "", f32)
	b.op("AssignVariableOp", "assign", "", f32, h, init)
	ones := make([]float32, n)
	for i := range ones {
		ones[i] = 1
	}
	b.op("AssignAddVariableOp", "inc", "", f32, h, b.constant("ones", tensor.FromF32(tensor.Shape{n}, ones)))
	read := b.op("ReadVariableOp", "read", "", f32, h)
	s := open(t, b.g, map[string]string{"MSTREAM_DEVICE": "gpu", "TF_GPU_STREAM_GROUP_COUNT": "4", "MSTREAM_STREAM_JITTER": "true"})
	before := stateRuns.Load()
	if _, _, err := s.Run(nil, []session.Feed{{Output: init, Tensor: tensor.FromF32(tensor.Shape{n}, make([]float32, n))}}, nil, []*graph.Node{b.g.Lookup("assign")}); err != nil {
		t.Fatal(err)
	}
	const writes, reads = 60, 40
	errs := make(chan error, 5)
	go func() {
		for i := 0; i < writes; i++ {
			if _, _, err := s.Run(nil, nil, nil, []*graph.Node{b.g.Lookup("inc")}); err != nil {
				errs <- err
				return
			}
		}
		errs <- nil
	}()
	for r := 0; r < 4; r++ {
		go func() {
			last := float32(-1)
			for i := 0; i < reads; i++ {
				out, _, err := s.Run(nil, nil, []graph.Output{read}, nil)
				if err != nil {
					errs <- err
					return
				}
				v := out[0].F32()
				for j := range v {
					if v[j] != v[0] {
						errs <- fmt.Errorf("read %d: element %d is %v, element 0 %v: a torn read", i, j, v[j], v[0])
						return
					}
				}
				if v[0] < last || v[0] > writes {
					errs <- fmt.Errorf("read %d: %v after %v (the writer adds 1 up to %d times)", i, v[0], last, writes)
					return
				}
				last = v[0]
			}
			errs <- nil
		}()
	}
	for i := 0; i < 5; i++ {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	out, _, err := s.Run(nil, nil, []graph.Output{read}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if v := out[0].F32()[n-1]; v != writes {
		t.Errorf("final value %v, want %d", v, writes)
	}
	if stateRuns.Load() == before {
		t.Error("no variable op ran on the fake GPU")
	}
}
