package cpu

import (
	"fmt"
	"testing"

	"mstream/exec"
	"mstream/kernels"
	"mstream/kernels/cpu/dnnl"
	"mstream/tensor"
)

// startPool is the intra-op pool of two threads with every For's start
// replaced by start (its caller's own where start is negative), for
// BenchmarkGrain.
type startPool struct {
	*exec.Intra
	start float64
}

func (p startPool) For(n int, cost, start float64, fn func(lo, hi int)) {
	if p.start >= 0 {
		start = p.start
	}
	p.Intra.For(n, cost, start, fn)
}

// BenchmarkGrain measures how the cut of a parallel kernel over a real
// intra-op pool of two threads (exec.Intra) suits it: each kernel with
// the start its call site gives For ("own"), with none (0: as many
// chunks as grains allow, up to 4 a thread), with a oneDNN part's
// (kernels.StartCall) and with one past any loop (the fewest chunks, 2 a
// thread),
// in wall and CPU time per call; the bench models' packed GEMMs (mlp's
// 1024 x 1024 layer at B=1 and 16, the transformer's q, k, v projection
// at B=16) and cnn's second convolution at B=1 (oneDNN parts of rows):
// go test ./kernels/cpu -run '^$' -bench Grain -count 5. Variants
// alternate within each count.
func BenchmarkGrain(b *testing.B) {
	r := newRand(b)
	pool := exec.NewIntra(2)
	defer pool.Close()
	type bench struct {
		name string
		call func(ctx *kernels.Context) error
	}
	var benches []bench
	for _, s := range []struct{ m, k, n int64 }{{1, 1024, 1024}, {16, 1024, 1024}, {1024, 128, 384}} {
		x, _ := randTensor(r, f32, tensor.Shape{s.m, s.k})
		w, _ := randTensor(r, f32, tensor.Shape{s.k, s.n})
		bias, _ := randTensor(r, f32, tensor.Shape{s.n})
		n := fusedMatMulNode("Relu", false)
		k := cpuKernel(b, n)
		o := tensor.New(f32, tensor.Shape{s.m, s.n})
		benches = append(benches, bench{fmt.Sprintf("gemm%dx%dx%d", s.m, s.k, s.n), func(ctx *kernels.Context) error {
			ctx.Node, ctx.Inputs, ctx.Outputs = n, []*tensor.Tensor{x, w, bias}, make([]*tensor.Tensor, 1)
			ctx.Alloc = func(tensor.DType, tensor.Shape) (*tensor.Tensor, error) { return o, nil }
			return k.Compute(ctx)
		}})
	}
	if dnnl.Available() {
		x, _ := randTensor(r, f32, tensor.Shape{1, 16, 16, 32})
		w, _ := randTensor(r, f32, tensor.Shape{3, 3, 32, 64})
		bias, _ := randTensor(r, f32, tensor.Shape{64})
		out := make([]float32, 16*16*64)
		p := ConvParams{N: 1, H: 16, W: 16, C: 32, O: 64, KH: 3, KW: 3, StrideH: 1, StrideW: 1, DilH: 1, DilW: 1,
			PadTop: 1, PadLeft: 1, OutH: 16, OutW: 16, Groups: 1}
		prims := &dnnl.ConvCache{Node: "bench"}
		benches = append(benches, bench{"conv1x16x16x32-64", func(ctx *kernels.Context) error {
			if done, err := convDNNL(ctx, prims, p, x.F32(), w.F32(), bias.F32(), true, true, out); !done || err != nil {
				return fmt.Errorf("oneDNN ran it: %v (%v)", done, err)
			}
			return nil
		}})
	}
	for _, bn := range benches {
		for _, v := range []struct {
			name  string
			start float64
		}{{"own", -1}, {"0", 0}, {"call", kernels.StartCall}, {"fewest", 1e12}} {
			b.Run(bn.name+"/start="+v.name, func(b *testing.B) {
				ctx := &kernels.Context{Pool: startPool{pool, v.start}}
				if err := bn.call(ctx); err != nil { // packed, primitives made
					b.Fatal(err)
				}
				b.ResetTimer()
				cpu0 := cpuTime()
				for i := 0; i < b.N; i++ {
					if err := bn.call(ctx); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64((cpuTime()-cpu0).Nanoseconds())/1e3/float64(b.N), "cpu-us/op")
			})
		}
	}
}
