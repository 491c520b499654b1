package cuda

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"math"
	"math/rand"
	"os"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"mstream/bfc"
	cu "mstream/device/cuda"
	"mstream/graph"
	"mstream/kernels"
	_ "mstream/kernels/cpu" // the references, and the metadata kernels the GPU reuses
	"mstream/kernels/kerneltest"
	"mstream/resource"
	"mstream/status"
	"mstream/tensor"
)

// Every GPU kernel is checked against the CPU kernel of the same node on
// fresh random inputs. The GPU tests skip when no GPU is usable, except
// under MSTREAM_DEVICE=gpu, where that is a failure.

type gpuEnv struct {
	ctx   *cu.Context
	s     *cu.Stream
	alloc *bfc.Allocator
	mu    sync.Mutex // one kernel call at a time on the shared stream
}

var (
	envOnce sync.Once
	envVal  *gpuEnv
	envErr  error
)

// envSmallGEMM is the GEMM mode the test process was started with
// (MSTREAM_GPU_SMALL_GEMM, auto when unset), which tests that force a mode
// restore.
func envSmallGEMM() string { return cmp.Or(os.Getenv("MSTREAM_GPU_SMALL_GEMM"), "auto") }

func env(t testing.TB) *gpuEnv {
	t.Helper()
	envOnce.Do(func() {
		lib, err := cu.Load()
		if err != nil {
			envErr = err
			return
		}
		devs, _ := lib.Devices()
		c, err := devs[0].Primary()
		if err != nil {
			envErr = err
			return
		}
		s, err := c.NewStream()
		if err != nil {
			envErr = err
			return
		}
		a, err := bfc.New(c.Memory(), bfc.Options{Name: "kernels_test", Limit: 8 << 30, AllowGrowth: true})
		if err != nil {
			envErr = err
			return
		}
		// MSTREAM_GPU_SMALL_GEMM as a session reads it, so the GPU run
		// can force the GEMMs' choice each way (gputest.sh).
		if envErr = devs[0].SetSmallGEMM(envSmallGEMM()); envErr != nil {
			return
		}
		envVal = &gpuEnv{ctx: c, s: s, alloc: a}
	})
	if envErr != nil {
		if errors.Is(envErr, cu.ErrNoCUDA) && os.Getenv("MSTREAM_DEVICE") != "gpu" {
			t.Skipf("no GPU: %v", envErr)
		}
		t.Fatal(envErr)
	}
	return envVal
}

// hostArgs lists the input indices a kernel keeps in host memory.
func hostArgs(n *graph.Node, def *kernels.Def) map[int]bool {
	h := map[int]bool{}
	for _, name := range def.HostMemory {
		if r, ok := n.InArgs[name]; ok {
			for i := r[0]; i < r[1]; i++ {
				h[i] = true
			}
		}
	}
	return h
}

// run runs n's GPU kernel: inputs are uploaded (except host-memory args),
// outputs are poisoned with 0xff bytes when allocated, so an element a
// kernel forgets to write shows up, and downloaded after the stream syncs.
func (e *gpuEnv) run(n *graph.Node, in []*tensor.Tensor, k kernels.Kernel, def *kernels.Def) ([]*tensor.Tensor, error) {
	return e.runWith(n, in, k, def, nil)
}

// runWith is run with device memory that outlives the call (a stateful
// case's variables; nil: none).
func (e *gpuEnv) runWith(n *graph.Node, in []*tensor.Tensor, k kernels.Kernel, def *kernels.Def, persist kernels.Persist) ([]*tensor.Tensor, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	var live []uint64
	defer func() {
		for _, a := range live {
			e.alloc.Free(a)
		}
	}()
	devAlloc := func(dt tensor.DType, shape tensor.Shape) (*tensor.Tensor, error) {
		nb := int(shape.NumElements()) * dt.Size()
		addr, err := e.alloc.Allocate(uint64(nb), nil)
		if err != nil {
			return nil, err
		}
		live = append(live, addr)
		if err := e.s.Memset(addr, 0xff, nb); err != nil {
			return nil, err
		}
		return &tensor.Tensor{DType: dt, Shape: shape.Clone(), Buf: cu.DeviceBytes(addr, nb)}, nil
	}
	if k == nil {
		var err error
		if def, err = kernels.Lookup(n, kernels.GPU); err != nil {
			return nil, err
		}
		if k, err = def.Factory(n); err != nil {
			return nil, err
		}
	}
	host := map[int]bool{}
	if def != nil {
		host = hostArgs(n, def)
	}
	dins := make([]*tensor.Tensor, len(in))
	for i, t := range in {
		if host[i] || t.DType == tensor.String {
			dins[i] = t
			continue
		}
		d, err := devAlloc(t.DType, t.Shape)
		if err != nil {
			return nil, err
		}
		if err := e.s.H2D(cu.Ptr(d.Buf), t.Buf); err != nil {
			return nil, err
		}
		dins[i] = d
	}
	ctx := &kernels.Context{Node: n, Inputs: dins, Outputs: make([]*tensor.Tensor, len(n.OutTypes)),
		Stream: e.s, Alloc: devAlloc, Persist: persist}
	if err := k.Compute(ctx); err != nil {
		return nil, err
	}
	outs := make([]*tensor.Tensor, len(ctx.Outputs))
	for i, o := range ctx.Outputs {
		if o == nil {
			return nil, fmt.Errorf("output %d not set", i)
		}
		h := tensor.New(o.DType, o.Shape)
		if err := e.s.D2H(h.Buf, cu.Ptr(o.Buf)); err != nil {
			return nil, err
		}
		outs[i] = h
	}
	if err := e.s.Sync(); err != nil {
		return nil, err
	}
	return outs, nil
}

// gpuState is the resources one stateful conformance case's calls share
// (the runners' Fresh): variables' device values in the test's allocator.
type gpuState struct {
	rm *resource.Manager
	e  *gpuEnv
}

// Owner implements kernels.Persist.
func (s *gpuState) Owner() any { return s.e.ctx }

// Keep implements kernels.Persist.
func (s *gpuState) Keep(dt tensor.DType, shape tensor.Shape) (*tensor.Tensor, func(), error) {
	nb := int(shape.NumElements()) * dt.Size()
	addr, err := s.e.alloc.Allocate(uint64(max(nb, 1)), nil)
	if err != nil {
		return nil, nil, err
	}
	return &tensor.Tensor{DType: dt, Shape: shape.Clone(), Buf: cu.DeviceBytes(addr, nb)}, func() { s.e.alloc.Free(addr) }, nil
}

// bound is k bound to rm when it is a stateful kernel (every output read
// by value, as a plan binds them).
func bound(n *graph.Node, k kernels.Kernel, rm *resource.Manager) (kernels.Kernel, error) {
	sk, ok := k.(kernels.Stateful)
	if !ok || rm == nil {
		return k, nil
	}
	byValue := make([]bool, len(n.OutTypes))
	for i := range byValue {
		byValue[i] = true
	}
	return sk.Bind(kernels.Binding{Resources: rm, ReadByValue: byValue})
}

// cpuRunBound is the CPU kernel of n bound to rm (nil: unbound).
func cpuRunBound(n *graph.Node, in []*tensor.Tensor, rm *resource.Manager) ([]*tensor.Tensor, error) {
	k, err := kernels.Make(n, kernels.CPU)
	if err != nil {
		return nil, err
	}
	if k, err = bound(n, k, rm); err != nil {
		return nil, err
	}
	return cpuRun(n, in, k)
}

func cpuRun(n *graph.Node, in []*tensor.Tensor, k kernels.Kernel) ([]*tensor.Tensor, error) {
	if k == nil {
		def, err := kernels.Lookup(n, kernels.CPU)
		if err != nil {
			return nil, err
		}
		if k, err = def.Factory(n); err != nil {
			return nil, err
		}
	}
	ctx := &kernels.Context{Node: n, Inputs: in, Outputs: make([]*tensor.Tensor, len(n.OutTypes))}
	if err := k.Compute(ctx); err != nil {
		return nil, err
	}
	return ctx.Outputs, nil
}

// tolFor is the per-element tolerance (relative to max(1, |want|)).
func tolFor(dt tensor.DType) float64 {
	switch dt {
	case tensor.Float:
		return 2e-5
	case tensor.Double:
		return 1e-12
	}
	return 0
}

var (
	opsMu  sync.Mutex
	opsRun = map[string]int{}
)

// check runs n on both devices and compares.
func check(t *testing.T, n *graph.Node, in []*tensor.Tensor, tol float64) {
	t.Helper()
	switch {
	case os.Getenv("MSTREAM_GPU_DRYRUN") == "1":
		dryCheck(t, n, in) // no GPU: the Go side only (dryrun_test.go)
		return
	case os.Getenv("MSTREAM_GPU_EMU") == "1":
		emuCheck(t, n, in, tol) // no GPU: the programs on the CPU (emu_test.go)
		return
	}
	e := env(t)
	want, werr := cpuRun(n, in, nil)
	got, gerr := e.run(n, in, nil, nil)
	desc := fmt.Sprintf("%s(%s)", n.Op, shapes(in))
	if werr != nil || gerr != nil {
		if werr == nil || gerr == nil || status.CodeOf(werr) != status.CodeOf(gerr) {
			t.Errorf("%s: CPU error %v, GPU error %v", desc, werr, gerr)
		}
		return
	}
	opsMu.Lock()
	opsRun[n.Op]++
	opsMu.Unlock()
	compare(t, desc, got, want, tol)
}

func compare(t *testing.T, desc string, got, want []*tensor.Tensor, tol float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d outputs, want %d", desc, len(got), len(want))
	}
	for i := range want {
		if want[i].DType.IsComplex() {
			// Compare reads complex elements as NaN; data movement is exact.
			if got[i].DType != want[i].DType || !got[i].Shape.Equal(want[i].Shape) || !bytes.Equal(got[i].Buf, want[i].Buf) {
				t.Errorf("%s: output %d: complex %v%v differs from %v%v", desc, i, got[i].DType, got[i].Shape, want[i].DType, want[i].Shape)
			}
			continue
		}
		tl := tol
		if tl == 0 {
			tl = tolFor(want[i].DType)
		}
		if err := kerneltest.Compare(got[i], want[i], tl); err != nil {
			t.Errorf("%s: output %d: %v", desc, i, err)
		}
	}
}

// randAny is RandRange that also fills complex tensors (random parts).
func randAny(r *rand.Rand, dt tensor.DType, s tensor.Shape, lo, hi float64) *tensor.Tensor {
	switch dt {
	case tensor.Complex64, tensor.Complex128:
		part := tensor.Float
		if dt == tensor.Complex128 {
			part = tensor.Double
		}
		f := kerneltest.RandRange(r, part, tensor.Shape{2 * s.NumElements()}, lo, hi)
		return &tensor.Tensor{DType: dt, Shape: s.Clone(), Buf: f.Buf}
	}
	return kerneltest.RandRange(r, dt, s, lo, hi)
}

func shapes(in []*tensor.Tensor) string {
	var s []string
	for _, t := range in {
		s = append(s, t.String())
	}
	return strings.Join(s, ", ")
}

func newRand(t *testing.T) *rand.Rand {
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	return rand.New(rand.NewSource(seed))
}

func node(op string, attrs kerneltest.Attrs, in ...*tensor.Tensor) *graph.Node {
	return kerneltest.NodeFor(op, attrs, in, nil)
}

// randT draws values in [lo, hi); floats get a few NaN and infinities when
// specials is set.
func randT(r *rand.Rand, dt tensor.DType, s tensor.Shape, lo, hi float64, specials bool) *tensor.Tensor {
	t := kerneltest.RandRange(r, dt, s, lo, hi)
	if specials && dt.IsFloat() && t.NumElements() > 4 {
		t = kerneltest.WithSpecials(r, t)
	}
	return t
}

func TestBinary(t *testing.T) {
	r := newRand(t)
	pairs := [][2]tensor.Shape{
		{{3, 5, 7}, {3, 5, 7}}, {{}, {4, 6}}, {{4, 6}, {}}, {{4, 1, 6}, {5, 1}}, {{2, 3, 4, 5}, {3, 1, 5}},
		{{1}, {7}}, {{0, 3}, {3}}, {{1 << 20}, {1 << 20}}, {{64, 512}, {512}}, {{2, 1, 3, 1, 2}, {1, 4, 1, 5, 1}},
		{{300}, {7, 300}}, {{5, 1, 64}, {1, 64}}, {{4, 5, 1}, {4, 5, 6}},
	}
	for _, op := range []string{"Add", "AddV2", "Sub", "Mul", "RealDiv", "Maximum", "Minimum"} {
		types := numTypes
		if op == "RealDiv" {
			types = floatTypes
		}
		for _, dt := range types {
			for _, p := range pairs {
				a := randT(r, dt, p[0], -100, 100, true)
				b := randT(r, dt, p[1], -100, 100, true)
				if op == "RealDiv" {
					b = randT(r, dt, p[1], 0.5, 3, false)
				}
				check(t, node(op, nil, a, b), []*tensor.Tensor{a, b}, 0)
			}
		}
	}
	// Incompatible shapes: the same error on both devices.
	a, b := tensor.New(tensor.Float, tensor.Shape{3}), tensor.New(tensor.Float, tensor.Shape{4})
	_, err := env(t).run(kerneltest.NodeForUnknown("Add", nil, []*tensor.Tensor{a, b}, nil), []*tensor.Tensor{a, b}, nil, nil)
	if status.CodeOf(err) != status.InvalidArgument || !strings.Contains(err.Error(), "Incompatible shapes") {
		t.Errorf("incompatible shapes: %v", err)
	}
}

func TestUnary(t *testing.T) {
	r := newRand(t)
	for _, op := range []string{"Relu", "Sigmoid", "Tanh"} {
		types := floatTypes
		if op == "Relu" {
			types = numTypes
		}
		for _, dt := range types {
			for _, s := range []tensor.Shape{{}, {0}, {17}, {3, 300}, {1 << 20}} {
				x := randT(r, dt, s, -20, 20, true)
				check(t, node(op, nil, x), []*tensor.Tensor{x}, 0)
			}
		}
	}
}

func TestBiasAdd(t *testing.T) {
	r := newRand(t)
	for _, dt := range numTypes {
		for _, tc := range []struct {
			s      tensor.Shape
			format string
		}{{tensor.Shape{5, 7}, "NHWC"}, {tensor.Shape{2, 3, 4, 6}, "NHWC"}, {tensor.Shape{2, 6, 3, 4}, "NCHW"}, {tensor.Shape{0, 3}, "NHWC"}} {
			c := tc.s[len(tc.s)-1]
			if tc.format == "NCHW" {
				c = tc.s[1]
			}
			x, b := randT(r, dt, tc.s, -10, 10, false), randT(r, dt, tensor.Shape{c}, -10, 10, false)
			check(t, node("BiasAdd", kerneltest.Attrs{"data_format": kerneltest.AStr(tc.format)}, x, b), []*tensor.Tensor{x, b}, 0)
		}
	}
}

func TestSoftmax(t *testing.T) {
	r := newRand(t)
	for _, dt := range floatTypes {
		for _, s := range []tensor.Shape{{5, 10}, {3, 1000}, {1, 3000}, {7}, {2, 3, 17}, {4, 1}} {
			x := randT(r, dt, s, -10, 10, false)
			check(t, node("Softmax", nil, x), []*tensor.Tensor{x}, 0)
		}
	}
}

func TestCast(t *testing.T) {
	r := newRand(t)
	for _, src := range castTypes {
		for _, dst := range castTypes {
			// Values every destination holds (0..100, integral or not),
			// plus negatives where both sides are signed.
			lo := 0.0
			if (src.IsFloat() || signedInt(src)) && (dst.IsFloat() || signedInt(dst) || dst == tensor.Bool) {
				lo = -100
			}
			x := kerneltest.RandRange(r, src, tensor.Shape{3, 257}, lo, 100)
			check(t, node("Cast", kerneltest.Attrs{"DstT": kerneltest.AType(dst)}, x), []*tensor.Tensor{x}, 0)
		}
	}
}

func signedInt(dt tensor.DType) bool {
	switch dt {
	case tensor.Int8, tensor.Int16, tensor.Int32, tensor.Int64:
		return true
	}
	return false
}

func TestFill(t *testing.T) {
	r := newRand(t)
	for _, dt := range []tensor.DType{tensor.Float, tensor.Double, tensor.Int64, tensor.Bool, tensor.Uint8, tensor.Half, tensor.Complex128} {
		for _, dims := range [][]int64{{3, 4}, {0}, {}, {1000, 33}} {
			d := kerneltest.IntVec(tensor.Int32, dims...)
			v := randAny(r, dt, tensor.Shape{}, 1, 50)
			check(t, node("Fill", nil, d, v), []*tensor.Tensor{d, v}, 0)
		}
	}
}

func TestReduce(t *testing.T) {
	r := newRand(t)
	cases := []struct {
		s    tensor.Shape
		axes []int64
	}{
		{tensor.Shape{6, 7}, []int64{1}}, {tensor.Shape{6, 7}, []int64{0}}, {tensor.Shape{6, 7}, []int64{0, 1}},
		{tensor.Shape{3, 4, 5}, []int64{1}}, {tensor.Shape{3, 4, 5}, []int64{0, 2}}, {tensor.Shape{3, 4, 5}, []int64{-1}},
		{tensor.Shape{3, 4, 5}, []int64{}}, {tensor.Shape{2, 3, 4, 5}, []int64{1, 3}}, {tensor.Shape{2, 1, 4}, []int64{1}},
		{tensor.Shape{2, 0, 3}, []int64{1}}, {tensor.Shape{1 << 20}, []int64{0}}, {tensor.Shape{4, 5000}, []int64{1}},
		{tensor.Shape{700, 3}, []int64{0}}, {tensor.Shape{}, []int64{}}, {tensor.Shape{2, 3, 2, 3, 2}, []int64{0, 2, 4}},
		{tensor.Shape{300, 64}, []int64{0}}, {tensor.Shape{3, 100, 40}, []int64{1}}, {tensor.Shape{2, 33, 1000}, []int64{-2}},
	}
	for _, op := range []string{"Sum", "Mean"} {
		for _, dt := range numTypes {
			for _, tc := range cases {
				for _, keep := range []bool{false, true} {
					x := kerneltest.RandRange(r, dt, tc.s, -3, 3)
					if !dt.IsFloat() {
						x = kerneltest.RandRange(r, dt, tc.s, -1000, 1000)
					}
					ax := kerneltest.IntVec(tensor.Int32, tc.axes...)
					// Accumulation in another order than the CPU's (and, for
					// float, in float as TF's GPU kernels): the rounding
					// error grows with the count, and a sum that cancels
					// (1M values of +-3 summing to -9.6) has it all in
					// its last digits, so the tolerance scales as for float.
					tol := 0.0
					switch dt {
					case tensor.Float:
						tol = 1e-5 * math.Max(1, math.Sqrt(float64(tc.s.NumElements())))
					case tensor.Double:
						tol = 1e-12 * math.Max(1, math.Sqrt(float64(tc.s.NumElements())))
					}
					check(t, node(op, kerneltest.Attrs{"keep_dims": kerneltest.ABool(keep)}, x, ax), []*tensor.Tensor{x, ax}, tol)
				}
			}
		}
	}
}

func TestGather(t *testing.T) {
	r := newRand(t)
	for _, dt := range []tensor.DType{tensor.Float, tensor.Double, tensor.Int64, tensor.Bool, tensor.Half, tensor.Complex128} {
		for _, it := range []tensor.DType{tensor.Int32, tensor.Int64} {
			for _, tc := range []struct {
				p, i      tensor.Shape
				axis, bd  int64
				indexSize int64
			}{
				{tensor.Shape{10, 4}, tensor.Shape{5}, 0, 0, 10},
				{tensor.Shape{10, 4}, tensor.Shape{2, 3}, 1, 0, 4},
				{tensor.Shape{20000, 64}, tensor.Shape{256}, 0, 0, 20000},
				{tensor.Shape{3, 5, 2}, tensor.Shape{3, 4}, 1, 1, 5},
				{tensor.Shape{4, 6}, tensor.Shape{0}, 0, 0, 4},
				{tensor.Shape{7}, tensor.Shape{}, 0, 0, 7},
			} {
				p := randAny(r, dt, tc.p, -50, 50)
				idx := kerneltest.RandIndex(r, it, tc.i, tc.indexSize)
				ax := kerneltest.IntScalar(tensor.Int32, tc.axis)
				check(t, node("GatherV2", kerneltest.Attrs{"batch_dims": kerneltest.AInt(tc.bd)}, p, idx, ax), []*tensor.Tensor{p, idx, ax}, 0)
			}
		}
	}
}

// TestGatherOutOfRange: the GPU kernel writes zeros for an index outside
// the table, as TF's GPU kernel does (the CPU kernel fails instead).
func TestGatherOutOfRange(t *testing.T) {
	e := env(t)
	p := tensor.FromF32(tensor.Shape{3, 2}, []float32{1, 2, 3, 4, 5, 6})
	idx := tensor.FromI32(tensor.Shape{3}, []int32{2, 7, -1})
	ax := kerneltest.IntScalar(tensor.Int32, 0)
	out, err := e.run(node("GatherV2", nil, p, idx, ax), []*tensor.Tensor{p, idx, ax}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []float32{5, 6, 0, 0, 0, 0}
	for i, v := range out[0].F32() {
		if v != want[i] {
			t.Fatalf("got %v, want %v", out[0].F32(), want)
		}
	}
}

func TestConcat(t *testing.T) {
	r := newRand(t)
	for _, dt := range []tensor.DType{tensor.Float, tensor.Int64, tensor.Bool, tensor.Half, tensor.Complex128} {
		for _, tc := range []struct {
			shapes []tensor.Shape
			axis   int64
		}{
			{[]tensor.Shape{{2, 3}, {4, 3}}, 0},
			{[]tensor.Shape{{2, 3}, {2, 5}, {2, 1}}, 1},
			{[]tensor.Shape{{2, 3, 4}, {2, 0, 4}, {2, 7, 4}}, -2},
			{[]tensor.Shape{{64, 13}, {64, 351}}, 1},
		} {
			var in []*tensor.Tensor
			for _, s := range tc.shapes {
				in = append(in, randAny(r, dt, s, -9, 9))
			}
			ax := kerneltest.IntScalar(tensor.Int32, tc.axis)
			n := kerneltest.NodeFor("ConcatV2", nil, append(append([]*tensor.Tensor{}, in...), ax), map[int]int{0: len(in)})
			check(t, n, append(in, ax), 0)
		}
	}
}

func TestTranspose(t *testing.T) {
	r := newRand(t)
	for _, dt := range []tensor.DType{tensor.Float, tensor.Double, tensor.Uint8, tensor.Half, tensor.Complex128} {
		for rank := 1; rank <= 5; rank++ {
			for rep := 0; rep < 3; rep++ {
				s := make(tensor.Shape, rank)
				for i := range s {
					s[i] = int64(1 + r.Intn(6))
				}
				perm := r.Perm(rank)
				p := make([]int64, rank)
				for i, v := range perm {
					p[i] = int64(v)
				}
				x := randAny(r, dt, s, -9, 9)
				pv := kerneltest.IntVec(tensor.Int32, p...)
				check(t, node("Transpose", nil, x, pv), []*tensor.Tensor{x, pv}, 0)
			}
		}
	}
}

func TestMetadataOps(t *testing.T) {
	r := newRand(t)
	x := kerneltest.RandRange(r, tensor.Float, tensor.Shape{2, 1, 6}, -1, 1)
	check(t, node("Identity", nil, x), []*tensor.Tensor{x}, 0)
	h := kerneltest.RandRange(r, tensor.Half, tensor.Shape{3}, -1, 1)
	idn := kerneltest.NodeFor("IdentityN", kerneltest.Attrs{"T": kerneltest.ATypes(tensor.Float, tensor.Half)}, []*tensor.Tensor{x, h}, map[int]int{0: 2})
	if _, err := kernels.Lookup(idn, kernels.GPU); err != nil {
		t.Errorf("IdentityN of float and half: %v", err)
	}
	check(t, idn, []*tensor.Tensor{x, h}, 0)
	str := kerneltest.NodeFor("IdentityN", kerneltest.Attrs{"T": kerneltest.ATypes(tensor.Float, tensor.String)},
		[]*tensor.Tensor{x, kerneltest.RandStrings(r, tensor.Shape{2})}, map[int]int{0: 2})
	if _, err := kernels.Lookup(str, kernels.GPU); err == nil {
		t.Error("IdentityN with a string input found a GPU kernel")
	}
	sh := kerneltest.IntVec(tensor.Int32, 3, -1)
	check(t, node("Reshape", nil, x, sh), []*tensor.Tensor{x, sh}, 0)
	d := kerneltest.IntScalar(tensor.Int32, -1)
	check(t, node("ExpandDims", nil, x, d), []*tensor.Tensor{x, d}, 0)
	check(t, node("Squeeze", nil, x), []*tensor.Tensor{x}, 0)
}

func TestMatMul(t *testing.T) {
	r := newRand(t)
	for _, tf32 := range []bool{false, true} {
		SetTF32(tf32)
		for _, dt := range floatTypes {
			for _, tc := range []struct {
				m, k, n int64
				ta, tb  bool
			}{{1, 1, 1, false, false}, {7, 13, 5, true, false}, {64, 512, 1024, false, false}, {33, 65, 17, false, true},
				{5, 0, 3, false, false}, {0, 4, 3, true, true}, {256, 1024, 1, false, false}} {
				as, bs := tensor.Shape{tc.m, tc.k}, tensor.Shape{tc.k, tc.n}
				if tc.ta {
					as = tensor.Shape{tc.k, tc.m}
				}
				if tc.tb {
					bs = tensor.Shape{tc.n, tc.k}
				}
				a, b := kerneltest.RandRange(r, dt, as, -1, 1), kerneltest.RandRange(r, dt, bs, -1, 1)
				tol := 0.0
				if dt == tensor.Float {
					tol = 1e-5 * math.Max(1, math.Sqrt(float64(tc.k)))
					if tf32 {
						tol = 3e-3 * math.Max(1, math.Sqrt(float64(tc.k)))
					}
				}
				n := node("MatMul", kerneltest.Attrs{"transpose_a": kerneltest.ABool(tc.ta), "transpose_b": kerneltest.ABool(tc.tb)}, a, b)
				check(t, n, []*tensor.Tensor{a, b}, tol)
			}
			for _, tc := range []struct {
				x, y     tensor.Shape
				adx, ady bool
			}{
				{tensor.Shape{2, 3, 4}, tensor.Shape{2, 4, 5}, false, false},
				{tensor.Shape{3, 4}, tensor.Shape{2, 4, 5}, false, false},
				{tensor.Shape{2, 1, 3, 4}, tensor.Shape{1, 3, 4, 2}, false, false},
				{tensor.Shape{5, 4, 3}, tensor.Shape{5, 6, 4}, true, true},
				{tensor.Shape{16, 27, 64}, tensor.Shape{16, 27, 64}, false, true},
			} {
				x, y := kerneltest.RandRange(r, dt, tc.x, -1, 1), kerneltest.RandRange(r, dt, tc.y, -1, 1)
				tol := 0.0
				if dt == tensor.Float {
					tol = 1e-4
					if tf32 {
						tol = 2e-2
					}
				}
				n := node("BatchMatMulV2", kerneltest.Attrs{"adj_x": kerneltest.ABool(tc.adx), "adj_y": kerneltest.ABool(tc.ady)}, x, y)
				check(t, n, []*tensor.Tensor{x, y}, tol)
			}
		}
	}
	SetTF32(true)
}

// TestFusedMatMul checks MatMul+BiasAdd(+Relu) through cuBLASLt (float32,
// MSTREAM_GPU_SMALL_GEMM=0), the small-batch kernel (=1) and the
// GEMM+bias fallback (float64) against the CPU chain.
func TestFusedMatMul(t *testing.T) {
	e := env(t)
	r := newRand(t)
	defer SetTF32(true)
	dev := e.s.Context().Device()
	defer dev.SetSmallGEMM(envSmallGEMM())
	for i := 0; i < 4; i++ {
		tf32, mode := i%2 == 1, []string{"0", "1"}[i/2]
		SetTF32(tf32)
		if err := dev.SetSmallGEMM(mode); err != nil {
			t.Fatal(err)
		}
		for _, dt := range floatTypes {
			for _, tc := range []struct {
				m, k, n int64
				ta, tb  bool
				relu    bool
			}{{16, 512, 256, false, false, true}, {1, 13, 512, false, false, true}, {64, 256, 1, false, true, false},
				{7, 9, 11, true, false, true}, {4, 0, 3, false, false, true}} {
				as, bs := tensor.Shape{tc.m, tc.k}, tensor.Shape{tc.k, tc.n}
				if tc.ta {
					as = tensor.Shape{tc.k, tc.m}
				}
				if tc.tb {
					bs = tensor.Shape{tc.n, tc.k}
				}
				a, b := kerneltest.RandRange(r, dt, as, -1, 1), kerneltest.RandRange(r, dt, bs, -1, 1)
				bias := kerneltest.RandRange(r, dt, tensor.Shape{tc.n}, -1, 1)
				mm := node("MatMul", kerneltest.Attrs{"transpose_a": kerneltest.ABool(tc.ta), "transpose_b": kerneltest.ABool(tc.tb)}, a, b)
				got, err := e.run(mm, []*tensor.Tensor{a, b, bias}, FusedMatMul(tc.ta, tc.tb, map[bool]string{true: "Relu"}[tc.relu], 0), nil)
				if err != nil {
					t.Fatalf("%+v: %v", tc, err)
				}
				want, err := cpuRun(mm, []*tensor.Tensor{a, b}, nil)
				if err != nil {
					t.Fatal(err)
				}
				want, err = cpuRun(node("BiasAdd", nil, want[0], bias), []*tensor.Tensor{want[0], bias}, nil)
				if err != nil {
					t.Fatal(err)
				}
				if tc.relu {
					if want, err = cpuRun(node("Relu", nil, want[0]), want, nil); err != nil {
						t.Fatal(err)
					}
				}
				tol := 0.0
				if dt == tensor.Float {
					tol = 1e-5 * math.Max(1, math.Sqrt(float64(tc.k)))
					if tf32 {
						tol = 3e-3 * math.Max(1, math.Sqrt(float64(tc.k)))
					}
				}
				compare(t, fmt.Sprintf("FusedMatMul %v %+v tf32=%v MSTREAM_GPU_SMALL_GEMM=%s", dt, tc, tf32, mode), got, want, tol)
			}
		}
	}
}

// TestKernelCPUCost measures the CPU time of one Compute call of some GPU
// kernels (shape checks, module lookup, argument packing, the launch or
// cuBLAS call) with outputs allocated once, in batches of 256 calls between
// synchronisations, and logs the medians. It asserts nothing about time.
func TestKernelCPUCost(t *testing.T) {
	e := env(t)
	r := newRand(t)
	type job struct {
		name string
		n    *graph.Node
		in   []*tensor.Tensor
		k    kernels.Kernel
		mode string // MSTREAM_GPU_SMALL_GEMM for the GEMMs ("": auto)
	}
	f32 := func(s ...int64) *tensor.Tensor { return kerneltest.RandRange(r, tensor.Float, s, -1, 1) }
	x, w, bias := f32(64, 512), f32(512, 1024), f32(1024)
	mm := node("MatMul", nil, x, w)
	x16 := f32(16, 512)
	mm16 := node("MatMul", nil, x16, w)
	idx := kerneltest.RandIndex(r, tensor.Int32, tensor.Shape{64}, 100000)
	table := f32(100000, 64)
	ax0, ax1 := kerneltest.IntScalar(tensor.Int32, 0), kerneltest.IntVec(tensor.Int32, 1)
	y := f32(512)
	jobs := []job{
		{"Relu [256]", node("Relu", nil, f32(256)), []*tensor.Tensor{f32(256)}, nil, ""},
		{"AddV2 [64,512]+[512]", node("AddV2", nil, x, y), []*tensor.Tensor{x, y}, nil, ""},
		{"Sum [64,512] axis 1", node("Sum", nil, x, ax1), []*tensor.Tensor{x, ax1}, nil, ""},
		{"GatherV2 [100000,64] by [64]", node("GatherV2", nil, table, idx, ax0), []*tensor.Tensor{table, idx, ax0}, nil, ""},
		{"MatMul 64x512x1024 (cuBLASLt plan)", mm, []*tensor.Tensor{x, w}, nil, "0"},
		{"MatMul+BiasAdd+Relu 64x512x1024 (cuBLASLt)", mm, []*tensor.Tensor{x, w, bias}, FusedMatMul(false, false, "Relu", 0), "0"},
		{"MatMul 16x512x1024 (cuBLASLt plan)", mm16, []*tensor.Tensor{x16, w}, nil, "0"},
		{"MatMul 16x512x1024 (small-batch kernel)", mm16, []*tensor.Tensor{x16, w}, nil, "1"},
		{"MatMul+BiasAdd+Relu 16x512x1024 (cuBLASLt)", mm16, []*tensor.Tensor{x16, w, bias}, FusedMatMul(false, false, "Relu", 0), "0"},
		{"MatMul+BiasAdd+Relu 16x512x1024 (small-batch kernel)", mm16, []*tensor.Tensor{x16, w, bias}, FusedMatMul(false, false, "Relu", 0), "1"},
	}
	dev := e.s.Context().Device()
	defer dev.SetSmallGEMM(envSmallGEMM())
	var lines []string
	for _, j := range jobs {
		if err := dev.SetSmallGEMM(cmp.Or(j.mode, "auto")); err != nil {
			t.Fatal(err)
		}
		run := prep(t, e, j.n, j.in, j.k)
		const batch, reps = 256, 30
		var per []float64
		for rep := 0; rep < reps; rep++ {
			if err := e.s.Sync(); err != nil {
				t.Fatal(err)
			}
			t0 := time.Now()
			for i := 0; i < batch; i++ {
				if err := run(); err != nil {
					t.Fatal(err)
				}
			}
			per = append(per, float64(time.Since(t0).Nanoseconds())/batch)
		}
		if err := e.s.Sync(); err != nil {
			t.Fatal(err)
		}
		sort.Float64s(per)
		lines = append(lines, fmt.Sprintf("kernel CPU time per call, %s: %.0f ns (median of %d batches of %d)", j.name, per[len(per)/2], reps, batch))
	}
	benchReport(t, lines)
}

// prep uploads a kernel's inputs once and returns a call of its Compute
// that reuses one output buffer, for the timing tests.
func prep(t *testing.T, e *gpuEnv, n *graph.Node, in []*tensor.Tensor, k kernels.Kernel) func() error {
	t.Helper()
	var def *kernels.Def
	if k == nil {
		var err error
		if def, err = kernels.Lookup(n, kernels.GPU); err != nil {
			t.Fatal(err)
		}
		if k, err = def.Factory(n); err != nil {
			t.Fatal(err)
		}
	}
	host := map[int]bool{}
	if def != nil {
		host = hostArgs(n, def)
	}
	var ins []*tensor.Tensor
	for i, h := range in {
		if host[i] {
			ins = append(ins, h)
			continue
		}
		addr, err := e.alloc.Allocate(uint64(len(h.Buf)), nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := e.s.H2D(addr, h.Buf); err != nil {
			t.Fatal(err)
		}
		ins = append(ins, &tensor.Tensor{DType: h.DType, Shape: h.Shape, Buf: cu.DeviceBytes(addr, len(h.Buf))})
	}
	// The k-th allocation of a call gets the same buffer on every call
	// (outputs and scratch: the shapes repeat from call to call).
	var bufs []*tensor.Tensor
	next := 0
	alloc := func(dt tensor.DType, shape tensor.Shape) (*tensor.Tensor, error) {
		if next < len(bufs) {
			b := bufs[next]
			next++
			return &tensor.Tensor{DType: dt, Shape: shape.Clone(), Buf: b.Buf}, nil
		}
		nb := int(shape.NumElements()) * dt.Size()
		addr, err := e.alloc.Allocate(uint64(max(nb, 1)), nil)
		if err != nil {
			return nil, err
		}
		b := &tensor.Tensor{DType: dt, Shape: shape.Clone(), Buf: cu.DeviceBytes(addr, nb)}
		bufs = append(bufs, b)
		next++
		return b, nil
	}
	run := func() error {
		next = 0
		ctx := &kernels.Context{Node: n, Inputs: ins, Outputs: make([]*tensor.Tensor, len(n.OutTypes)), Stream: e.s, Alloc: alloc}
		return k.Compute(ctx)
	}
	if err := run(); err != nil { // warm-up: compile, plans, handles
		t.Fatal(err)
	}
	if err := e.s.Sync(); err != nil {
		t.Fatal(err)
	}
	return run
}

// TestThroughput times some kernels on large inputs with device events
// and logs the achieved bandwidth or arithmetic rate (H100: about 3 TB/s
// and, for TF32 GEMM, several hundred TFLOP/s). It asserts nothing about
// time.
func TestThroughput(t *testing.T) {
	e := env(t)
	r := newRand(t)
	const m = 4096
	big := kerneltest.RandRange(r, tensor.Float, tensor.Shape{m, m}, -1, 1)
	big2 := kerneltest.RandRange(r, tensor.Float, tensor.Shape{m, m}, -1, 1)
	flat := &tensor.Tensor{DType: tensor.Float, Shape: tensor.Shape{m * m}, Buf: big.Buf}
	flat2 := &tensor.Tensor{DType: tensor.Float, Shape: tensor.Shape{m * m}, Buf: big2.Buf}
	row := kerneltest.RandRange(r, tensor.Float, tensor.Shape{m}, -1, 1)
	ax0, ax1 := kerneltest.IntVec(tensor.Int32, 0), kerneltest.IntVec(tensor.Int32, 1)
	perm := kerneltest.IntVec(tensor.Int32, 1, 0)
	table := kerneltest.RandRange(r, tensor.Float, tensor.Shape{1 << 18, 64}, -1, 1)
	idx := kerneltest.RandIndex(r, tensor.Int32, tensor.Shape{1 << 16}, 1<<18)
	gax := kerneltest.IntScalar(tensor.Int32, 0)
	mm := node("MatMul", nil, big, big2)
	const mb = float64(m * m * 4)
	// Where over [16M] with about half the elements true; Unique over 4M
	// int64 ids drawn from 100k; Einsum summing a label of one operand.
	half := kerneltest.Map(flat, tensor.Float, func(v float64) float64 { return max(v, 0) })
	ids := kerneltest.RandRange(r, tensor.Int64, tensor.Shape{1 << 22}, 0, 100000)
	e3 := kerneltest.RandRange(r, tensor.Float, tensor.Shape{64, 4096, 64}, -1, 1)
	jobs := []struct {
		name  string
		n     *graph.Node
		in    []*tensor.Tensor
		k     kernels.Kernel
		bytes float64 // moved at least once; 0 for GEMMs
		flops float64
		tf32  bool
	}{
		{"AddV2 [16M]+[16M] f32", node("AddV2", nil, flat, flat2), []*tensor.Tensor{flat, flat2}, nil, 3 * mb, 0, false},
		{"AddV2 [4096,4096]+[4096] f32", node("AddV2", nil, big, row), []*tensor.Tensor{big, row}, nil, 2 * mb, 0, false},
		{"Relu [16M] f32", node("Relu", nil, flat), []*tensor.Tensor{flat}, nil, 2 * mb, 0, false},
		{"Sum [4096,4096] axis 1", node("Sum", nil, big, ax1), []*tensor.Tensor{big, ax1}, nil, mb, 0, false},
		{"Sum [4096,4096] axis 0", node("Sum", nil, big, ax0), []*tensor.Tensor{big, ax0}, nil, mb, 0, false},
		{"Softmax [4096,4096]", node("Softmax", nil, big), []*tensor.Tensor{big}, nil, 2 * mb, 0, false},
		{"Transpose [4096,4096]", node("Transpose", nil, big, perm), []*tensor.Tensor{big, perm}, nil, 2 * mb, 0, false},
		{"GatherV2 [262144,64] by [65536]", node("GatherV2", nil, table, idx, gax), []*tensor.Tensor{table, idx, gax}, nil, 2 * 65536 * 64 * 4, 0, false},
		{"Where [16M] f32, half true", node("Where", kerneltest.Attrs{"T": kerneltest.AType(tensor.Float)}, half), []*tensor.Tensor{half}, nil, mb + 0.5*m*m*8, 0, false},
		{"Unique [4M] int64 of 100k", node("Unique", kerneltest.Attrs{"T": kerneltest.AType(tensor.Int64), "out_idx": kerneltest.AType(tensor.Int32)}, ids),
			[]*tensor.Tensor{ids}, nil, (8 + 4) << 22, 0, false},
		{"Einsum ijk->j [64,4096,64] f32", kerneltest.NodeFor("Einsum", kerneltest.Attrs{"equation": kerneltest.AStr("ijk->j")}, []*tensor.Tensor{e3}, map[int]int{0: 1}),
			[]*tensor.Tensor{e3}, nil, 64 * 4096 * 64 * 4, 0, false},
		{"MatMul 4096^3 f32 TF32", mm, []*tensor.Tensor{big, big2}, nil, 0, 2 * m * m * m, true},
		{"MatMul 4096^3 f32 no TF32", mm, []*tensor.Tensor{big, big2}, nil, 0, 2 * m * m * m, false},
		{"MatMul+BiasAdd+Relu 4096^3 TF32 (cuBLASLt)", mm, []*tensor.Tensor{big, big2, row}, FusedMatMul(false, false, "Relu", 0), 0, 2 * m * m * m, true},
	}
	start, err := e.ctx.NewTimingEvent()
	if err != nil {
		t.Fatal(err)
	}
	end, _ := e.ctx.NewTimingEvent()
	defer SetTF32(true)
	var lines []string
	for _, j := range jobs {
		SetTF32(j.tf32)
		run := prep(t, e, j.n, j.in, j.k)
		const reps = 20
		per := float64(timeCalls(t, e, start, end, reps, run)) / reps
		if j.flops > 0 {
			lines = append(lines, fmt.Sprintf("GPU time %s: %.3f ms, %.0f TFLOP/s", j.name, per, j.flops/per/1e9))
		} else {
			lines = append(lines, fmt.Sprintf("GPU time %s: %.3f ms, %.0f GB/s", j.name, per, j.bytes/per/1e6))
		}
	}
	benchReport(t, lines)
}

// TestNoStream: a GPU kernel run like a host kernel fails cleanly.
func TestNoStream(t *testing.T) {
	x := tensor.FromF32(tensor.Shape{2}, []float32{1, -1})
	n := node("Relu", nil, x)
	k, err := kernels.Make(n, kernels.GPU)
	if err != nil {
		t.Fatal(err)
	}
	err = k.Compute(&kernels.Context{Node: n, Inputs: []*tensor.Tensor{x}, Outputs: make([]*tensor.Tensor, 1)})
	if status.CodeOf(err) != status.FailedPrecondition || !strings.Contains(err.Error(), n.Name) {
		t.Errorf("Compute without a stream: %v", err)
	}
}

// TestRegistered: every GPU kernel has a CPU kernel to be checked against,
// and every GPU op is exercised by a test above (run on a GPU).
func TestRegistered(t *testing.T) {
	var gpuOps []string
	for _, key := range kernels.Registered() {
		op, dev, _ := strings.Cut(key, "/")
		if dev != kernels.GPU {
			continue
		}
		gpuOps = append(gpuOps, op)
		found := false
		for _, k2 := range kernels.Registered() {
			if k2 == op+"/"+kernels.CPU {
				found = true
			}
		}
		if !found {
			t.Errorf("GPU op %s has no CPU kernel to compare with", op)
		}
	}
	if len(gpuOps) < 25 {
		t.Errorf("only %d GPU ops registered: %v", len(gpuOps), gpuOps)
	}
	t.Logf("%d GPU ops: %s", len(gpuOps), strings.Join(gpuOps, " "))
}

// TestProgramsCompile compiles every program with NVRTC for the device
// (and so checks the kernel sources), then loads them.
func TestProgramsCompile(t *testing.T) {
	e := env(t)
	for _, p := range Programs() {
		if _, err := e.ctx.Module(p); err != nil {
			t.Errorf("%s: %v", p.Name, err)
		}
	}
}

// TestZZCoverage runs last (by name) and checks that each GPU op went
// through check at least once in this process (when the whole package
// ran, on a GPU).
func TestZZCoverage(t *testing.T) {
	env(t)
	if testing.Short() || os.Getenv("MSTREAM_GPU_COVERAGE") != "1" {
		t.Skip("set MSTREAM_GPU_COVERAGE=1 when running the whole package on a GPU")
	}
	opsMu.Lock()
	defer opsMu.Unlock()
	for _, key := range kernels.Registered() {
		op, dev, _ := strings.Cut(key, "/")
		if dev == kernels.GPU && opsRun[op] == 0 && op != "StopGradient" && op != "BatchMatMulV3" {
			t.Errorf("GPU op %s was never compared with the CPU", op)
		}
	}
}

// benchReport logs lines and appends them to $MSTREAM_BENCH_OUT (the GPU
// run's summary) when it is set.
func benchReport(t *testing.T, lines []string) {
	for _, l := range lines {
		t.Log(l)
	}
	if out := os.Getenv("MSTREAM_BENCH_OUT"); out != "" {
		if f, err := os.OpenFile(out, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644); err == nil {
			fmt.Fprintln(f, strings.Join(lines, "\n"))
			f.Close()
		}
	}
}
