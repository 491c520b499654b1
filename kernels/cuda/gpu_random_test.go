package cuda

import (
	"fmt"
	"math"
	"os"
	"runtime/debug"
	"testing"

	cu "mstream/device/cuda"
	"mstream/graph"
	"mstream/kernels"
	"mstream/kernels/kerneltest"
	"mstream/status"
	"mstream/tensor"
)

// The GPU random kernels draw from the same Philox blocks as the CPU
// kernels (random.go), so the GPU's output for a seed is the CPU's: exact
// for uniforms and integers, within the last bits of the normals' double
// math (random.cu) rounded to the dtype.

// randTol is the comparison tolerance of a random op's dtype.
func randTol(op string, dt tensor.DType) float64 {
	if op == "RandomUniform" || op == "RandomUniformInt" {
		return math.SmallestNonzeroFloat64 // bit for bit
	}
	switch dt {
	case tensor.Double:
		return 1e-14
	case tensor.Float:
		return 1e-6
	case tensor.Half:
		return 1e-3
	}
	return 8e-3 // bfloat16
}

func randNode(op string, dt tensor.DType, seed, seed2 int64, in []*tensor.Tensor) *graph.Node {
	a := kerneltest.Attrs{"seed": kerneltest.AInt(seed), "seed2": kerneltest.AInt(seed2)}
	if op != "RandomUniformInt" {
		a["dtype"] = kerneltest.AType(dt)
	}
	return kerneltest.NodeFor(op, a, in, nil)
}

func randInputs(op string, dt tensor.DType, st tensor.DType, shape []int64, lo, hi int64) []*tensor.Tensor {
	in := []*tensor.Tensor{kerneltest.IntVec(st, shape...)}
	if op == "RandomUniformInt" {
		in = append(in, kerneltest.IntScalar(dt, lo), kerneltest.IntScalar(dt, hi))
	}
	return in
}

type randCase struct {
	op string
	dt tensor.DType
}

func randCases() []randCase {
	var cs []randCase
	for _, op := range []string{"RandomUniform", "RandomStandardNormal", "TruncatedNormal"} {
		for _, dt := range []tensor.DType{tensor.Float, tensor.Double, tensor.Half, tensor.Bfloat16} {
			cs = append(cs, randCase{op, dt})
		}
	}
	return append(cs, randCase{"RandomUniformInt", tensor.Int32}, randCase{"RandomUniformInt", tensor.Int64})
}

// TestRandom compares a fresh GPU kernel's first call with a fresh CPU
// kernel's, over sizes that end mid-block and one that needs the grid's
// stride loop, and the errors of bad shapes and ranges.
func TestRandom(t *testing.T) {
	r := newRand(t)
	for _, c := range randCases() {
		shapes := [][]int64{{}, {0}, {1}, {3}, {7}, {2, 3, 5}, {1001}}
		if c.op != "TruncatedNormal" {
			shapes = append(shapes, []int64{(1 << 21) + 3}) // more blocks than the launch has threads
		} else {
			shapes = append(shapes, []int64{1 << 16})
		}
		for _, s := range shapes {
			seed, seed2 := r.Int63n(1<<40)+1, r.Int63()-r.Int63()
			lo, hi := int64(-r.Intn(1000)), int64(1+r.Intn(1<<20))
			if c.dt == tensor.Int64 && r.Intn(2) == 0 {
				lo, hi = -1<<50-r.Int63n(1<<40), 1<<45+r.Int63n(1<<40)
			}
			st := tensor.Int32
			if r.Intn(2) == 0 {
				st = tensor.Int64
			}
			in := randInputs(c.op, c.dt, st, s, lo, hi)
			check(t, randNode(c.op, c.dt, seed, seed2, in), in, randTol(c.op, c.dt))
		}
		// A bad shape, and for integers an empty range: the CPU's errors.
		bad := []*tensor.Tensor{tensor.FromI32(tensor.Shape{1, 2}, []int32{2, 2})}
		if c.op == "RandomUniformInt" {
			bad = append(bad, kerneltest.IntScalar(c.dt, 0), kerneltest.IntScalar(c.dt, 1))
			check(t, kerneltest.NodeForUnknown(c.op, nil, bad, nil), bad, 0)
			bad = randInputs(c.op, c.dt, tensor.Int32, []int64{4}, 5, 5)
		}
		a := kerneltest.Attrs{"seed": kerneltest.AInt(1)}
		if c.op != "RandomUniformInt" {
			a["dtype"] = kerneltest.AType(c.dt)
		}
		check(t, kerneltest.NodeForUnknown(c.op, a, bad, nil), bad, 0)
	}
}

// TestRandomSequence runs one GPU kernel and one CPU kernel of the same
// node several times: each GPU call must return the CPU's call of the
// same rank, so the GPU kernel advances the stream as the CPU does.
func TestRandomSequence(t *testing.T) {
	r := newRand(t)
	for _, c := range randCases() {
		seed, seed2 := r.Int63n(1000)+1, r.Int63n(1000)
		shape := []int64{int64(1 + r.Intn(3000))}
		in := randInputs(c.op, c.dt, tensor.Int32, shape, -7, 1000)
		n := randNode(c.op, c.dt, seed, seed2, in)
		run, err := persistentGPU(t, n)
		if err != nil {
			t.Fatalf("%s %v: %v", c.op, c.dt, err)
		}
		if run == nil {
			return // dry run: no values
		}
		ck, err := kernels.Make(n, kernels.CPU)
		if err != nil {
			t.Fatal(err)
		}
		var prev *tensor.Tensor
		for call := 0; call < 3; call++ {
			want, werr := cpuRun(n, in, ck)
			got, gerr := run(in)
			if werr != nil || gerr != nil {
				t.Fatalf("%s %v call %d: CPU %v, GPU %v", c.op, c.dt, call, werr, gerr)
			}
			compare(t, fmt.Sprintf("%s %v call %d", c.op, c.dt, call), got, want, randTol(c.op, c.dt))
			if prev != nil && kerneltest.Compare(got[0], prev, math.SmallestNonzeroFloat64) == nil {
				t.Errorf("%s %v: call %d repeated call %d's values", c.op, c.dt, call, call-1)
			}
			prev = got[0]
		}
	}
}

// persistentGPU builds n's GPU kernel once and returns a function that
// calls it (on the GPU, or on the emulator under MSTREAM_GPU_EMU=1); nil
// under the dry run, which computes no values.
func persistentGPU(t *testing.T, n *graph.Node) (func([]*tensor.Tensor) ([]*tensor.Tensor, error), error) {
	def, err := kernels.Lookup(n, kernels.GPU)
	if err != nil {
		return nil, err
	}
	k, err := def.Factory(n)
	if err != nil {
		return nil, err
	}
	switch {
	case os.Getenv("MSTREAM_GPU_DRYRUN") == "1":
		return nil, nil
	case os.Getenv("MSTREAM_GPU_EMU") == "1":
		e, err := getEmu()
		if err != nil {
			t.Skipf("emulator: %v", err)
		}
		return func(in []*tensor.Tensor) ([]*tensor.Tensor, error) { return emuRunKernel(e, n, in, k) }, nil
	}
	e := env(t)
	return func(in []*tensor.Tensor) ([]*tensor.Tensor, error) { return e.run(n, in, k, def) }, nil
}

// emuRunKernel is emuRun with a kernel the caller keeps across calls.
func emuRunKernel(e *emulator, n *graph.Node, in []*tensor.Tensor, k kernels.Kernel) (outs []*tensor.Tensor, err error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.bufs, e.err = nil, nil
	ins := make([]*tensor.Tensor, len(in))
	for i, t := range in {
		ins[i] = t.Clone()
		e.register(ins[i])
	}
	dryRun = &dryDevice{launch: e.launch, copy: e.copy, fill: e.fill, gemm: e.gemm}
	defer func() { dryRun = nil }()
	var stream *cu.Stream
	ctx := &kernels.Context{Node: n, Inputs: ins, Outputs: make([]*tensor.Tensor, len(n.OutTypes)), Stream: stream,
		Alloc: func(dt tensor.DType, s tensor.Shape) (*tensor.Tensor, error) {
			t := tensor.New(dt, s)
			for i := range t.Buf {
				t.Buf[i] = 0xff
			}
			e.register(t)
			return t, nil
		}}
	defer func() {
		if r := recover(); r != nil {
			err = status.Errorf(status.Internal, "panic: %v\n%s", r, debug.Stack())
		}
	}()
	if err := k.Compute(ctx); err != nil {
		return nil, err
	}
	if e.err != nil {
		return nil, e.err
	}
	for i, o := range ctx.Outputs {
		if o == nil {
			return nil, fmt.Errorf("output %d not set", i)
		}
		ctx.Outputs[i] = o.Clone()
	}
	return ctx.Outputs, nil
}
