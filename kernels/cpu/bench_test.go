package cpu

import (
	"testing"

	"mstream/graph"
	"mstream/kernels"
	"mstream/proto/tfpb"
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

// BenchmarkEinsumAttention measures Keras MultiHeadAttention's score
// einsum at B=16, 4 heads of 32, 64 tokens: operands read in place through
// strides, the output written transposed.
func BenchmarkEinsumAttention(b *testing.B) {
	r := newRand(b)
	q, _ := randTensor(r, f32, tensor.Shape{16, 64, 4, 32})
	k, _ := randTensor(r, f32, tensor.Shape{16, 64, 4, 32})
	n := node("Einsum", map[string]*tfpb.AttrValue{"equation": {Value: &tfpb.AttrValue_S{S: []byte("aecd,abcd->acbe")}}, "N": aInt(2)}, []tensor.DType{f32, f32}, f32)
	benchKernel(b, n, 0, k, q)
}
