package cpu

import (
	"testing"

	"mstream/graph"
	"mstream/kernels"
	"mstream/tensor"
)

func benchKernel(b *testing.B, n *graph.Node, bytes int64, in ...*tensor.Tensor) {
	def, err := kernels.Lookup(n, kernels.CPU)
	if err != nil {
		b.Fatal(err)
	}
	k, err := def.Factory(n)
	if err != nil {
		b.Fatal(err)
	}
	ctx := &kernels.Context{Node: n, Inputs: in, Outputs: make([]*tensor.Tensor, len(n.OutTypes))}
	b.SetBytes(bytes)
	for i := 0; i < b.N; i++ {
		if err := k.Compute(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAddF32 measures the same-shape binary path (serial, no pool).
func BenchmarkAddF32(b *testing.B) {
	r := newRand(b)
	x, _ := randTensor(r, f32, tensor.Shape{1 << 20})
	y, _ := randTensor(r, f32, tensor.Shape{1 << 20})
	benchKernel(b, node("AddV2", nil, []tensor.DType{f32, f32}, f32), 12<<20, x, y)
}

// BenchmarkBiasAddF32 measures the row-broadcast path.
func BenchmarkBiasAddF32(b *testing.B) {
	r := newRand(b)
	x, _ := randTensor(r, f32, tensor.Shape{1024, 1024})
	y, _ := randTensor(r, f32, tensor.Shape{1024})
	benchKernel(b, node("BiasAdd", nil, []tensor.DType{f32, f32}, f32), 8<<20, x, y)
}
