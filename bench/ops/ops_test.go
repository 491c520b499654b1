package ops

import (
	"fmt"
	"math/rand"
	"os"
	"strings"
	"testing"

	"mstream/exec"
	"mstream/graph"
	"mstream/kernels"
	_ "mstream/kernels/cpu"
	"mstream/kernels/cpu/vec"
	"mstream/kernels/kerneltest"
	"mstream/tensor"
)

// A case is one kernel call: an op, its float32 inputs, and the bytes it
// moves (inputs read plus output written), which give the GB/s.
type benchCase struct {
	name   string
	op     string
	attrs  kerneltest.Attrs
	inputs func(r *rand.Rand) []*tensor.Tensor
}

func f32(r *rand.Rand, lo, hi float64, dims ...int64) *tensor.Tensor {
	return kerneltest.RandRange(r, tensor.Float, tensor.Shape(dims), lo, hi)
}

func axes(v ...int64) *tensor.Tensor { return tensor.FromI32(tensor.Shape{int64(len(v))}, toI32(v)) }

func toI32(v []int64) []int32 {
	o := make([]int32, len(v))
	for i, x := range v {
		o[i] = int32(x)
	}
	return o
}

const n = 1 << 20 // 4 MiB of float32 per operand: past L2, inside L3 on most machines

// Cases mirror numpy_peer.py row for row (same names, shapes, value ranges).
var cases = []benchCase{
	{"AddV2 [1M]+[1M]", "AddV2", nil, func(r *rand.Rand) []*tensor.Tensor { return []*tensor.Tensor{f32(r, -3, 3, n), f32(r, -3, 3, n)} }},
	{"Mul [1M]*scalar", "Mul", nil, func(r *rand.Rand) []*tensor.Tensor { return []*tensor.Tensor{f32(r, -3, 3, n), f32(r, -3, 3)} }},
	{"Maximum [1M],[1M]", "Maximum", nil, func(r *rand.Rand) []*tensor.Tensor { return []*tensor.Tensor{f32(r, -3, 3, n), f32(r, -3, 3, n)} }},
	{"BiasAdd [4096,256]+[256]", "BiasAdd", nil, func(r *rand.Rand) []*tensor.Tensor {
		return []*tensor.Tensor{f32(r, -3, 3, 4096, 256), f32(r, -3, 3, 256)}
	}},
	{"AddV2 [1024,1024]+[1024,1]", "AddV2", nil, func(r *rand.Rand) []*tensor.Tensor {
		return []*tensor.Tensor{f32(r, -3, 3, 1024, 1024), f32(r, -3, 3, 1024, 1)}
	}},
	{"Relu [1M]", "Relu", nil, func(r *rand.Rand) []*tensor.Tensor { return []*tensor.Tensor{f32(r, -3, 3, n)} }},
	{"Sigmoid [1M]", "Sigmoid", nil, func(r *rand.Rand) []*tensor.Tensor { return []*tensor.Tensor{f32(r, -8, 8, n)} }},
	{"Tanh [1M]", "Tanh", nil, func(r *rand.Rand) []*tensor.Tensor { return []*tensor.Tensor{f32(r, -8, 8, n)} }},
	{"Exp [1M]", "Exp", nil, func(r *rand.Rand) []*tensor.Tensor { return []*tensor.Tensor{f32(r, -8, 8, n)} }},
	{"Log [1M]", "Log", nil, func(r *rand.Rand) []*tensor.Tensor { return []*tensor.Tensor{f32(r, 0.01, 100, n)} }},
	{"Sqrt [1M]", "Sqrt", nil, func(r *rand.Rand) []*tensor.Tensor { return []*tensor.Tensor{f32(r, 0, 100, n)} }},
	{"Sum all [1M]", "Sum", nil, func(r *rand.Rand) []*tensor.Tensor { return []*tensor.Tensor{f32(r, -3, 3, n), axes(0)} }},
	{"Sum axis -1 [1024,1024]", "Sum", nil, func(r *rand.Rand) []*tensor.Tensor { return []*tensor.Tensor{f32(r, -3, 3, 1024, 1024), axes(-1)} }},
	{"Sum axis 0 [1024,1024]", "Sum", nil, func(r *rand.Rand) []*tensor.Tensor { return []*tensor.Tensor{f32(r, -3, 3, 1024, 1024), axes(0)} }},
	{"Mean axes 1,2 [16,32,32,64]", "Mean", nil, func(r *rand.Rand) []*tensor.Tensor {
		return []*tensor.Tensor{f32(r, -3, 3, 16, 32, 32, 64), axes(1, 2)}
	}},
	{"Max axis -1 [1024,1024]", "Max", nil, func(r *rand.Rand) []*tensor.Tensor { return []*tensor.Tensor{f32(r, -3, 3, 1024, 1024), axes(-1)} }},
	{"ArgMax axis -1 [1024,1000]", "ArgMax", kerneltest.Attrs{"output_type": kerneltest.AType(tensor.Int64)}, func(r *rand.Rand) []*tensor.Tensor {
		return []*tensor.Tensor{f32(r, -3, 3, 1024, 1000), tensor.ScalarI32(-1)}
	}},
	{"Softmax [4096,256]", "Softmax", nil, func(r *rand.Rand) []*tensor.Tensor { return []*tensor.Tensor{f32(r, -8, 8, 4096, 256)} }},
}

// BenchmarkOps runs every case serially and on an intra-op pool of all
// CPUs, at every vec level the CPU has. b.SetBytes makes `go test -bench`
// print MB/s.
func BenchmarkOps(b *testing.B) {
	best := vec.SetLevel(vec.AVX512)
	defer vec.SetLevel(best)
	pools := []struct {
		name string
		p    kernels.Parallelizer
	}{{"serial", kernels.Serial{}}, {"pool", exec.NewIntra(0)}}
	filter := os.Getenv("OPS")
	for _, c := range cases {
		if filter != "" && !strings.Contains(c.name, filter) {
			continue
		}
		r := rand.New(rand.NewSource(1))
		in := c.inputs(r)
		node := kerneltest.NodeFor(c.op, c.attrs, in, nil)
		k := build(b, node)
		for lvl := vec.Base; lvl <= best; lvl++ {
			for _, p := range pools {
				name := fmt.Sprintf("%s/%s/%s", c.name, lvl, p.name)
				b.Run(strings.ReplaceAll(name, " ", "_"), func(b *testing.B) {
					vec.SetLevel(lvl)
					ctx := &kernels.Context{Node: node, Inputs: in, Outputs: make([]*tensor.Tensor, len(node.OutTypes)), Pool: p.p, Alloc: recycler()}
					if err := k.Compute(ctx); err != nil {
						b.Fatal(err)
					}
					var bytes int64
					for _, t := range in {
						bytes += t.ByteSize()
					}
					for _, o := range ctx.Outputs {
						bytes += o.ByteSize()
					}
					b.SetBytes(bytes)
					b.ResetTimer()
					for i := 0; i < b.N; i++ {
						if err := k.Compute(ctx); err != nil {
							b.Fatal(err)
						}
					}
				})
			}
		}
	}
}

func build(b *testing.B, n *graph.Node) kernels.Kernel {
	k, err := kernels.Make(n, kernels.CPU)
	if err != nil {
		b.Fatal(err)
	}
	return k
}

// recycler models the session's allocator once warm: an output buffer of
// the same size comes back from the previous call, not cleared (the kernel
// writes every element, as TF's kernels do into uninitialised memory; the
// executor's clearing is its own cost, not the kernel's). Allocating afresh
// each call would measure Go's allocator and GC instead.
func recycler() func(dt tensor.DType, shape tensor.Shape) (*tensor.Tensor, error) {
	free := map[int64]*tensor.Tensor{}
	return func(dt tensor.DType, shape tensor.Shape) (*tensor.Tensor, error) {
		size := shape.NumElements() * int64(dt.Size())
		t := free[size]
		if t == nil {
			t = tensor.New(dt, shape)
			free[size] = t
		}
		return &tensor.Tensor{DType: dt, Shape: shape.Clone(), Buf: t.Buf}, nil
	}
}
