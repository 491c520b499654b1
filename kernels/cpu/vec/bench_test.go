package vec

import (
	"fmt"
	"testing"
)

// BenchmarkUnary times the transcendental maps over 64K elements (a
// transformer's FFN activation at B=1 is 32K), in ns per element.
func BenchmarkUnary(b *testing.B) {
	x, y := make([]float32, 1<<16), make([]float32, 1<<16)
	for i := range x {
		x[i] = float32(i%2001)/250 - 4
	}
	for _, op := range []struct {
		name string
		op   Unary
	}{{"Erf", Erf}, {"GeluErf", GeluErf}, {"GeluTanh", GeluTanh}, {"Exp", Exp}, {"Tanh", Tanh}, {"Sigmoid", Sigmoid}} {
		b.Run(fmt.Sprintf("%s/%s", op.name, CurrentLevel()), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				MapUnary(op.op, x, y)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(x)), "ns/elem")
		})
	}
}

// BenchmarkGemmPackedHead times the packed GEMM at the models' narrow
// heads (rows x k x n: model_test's 128 x 1, the MLP's 256 x 1, the
// CNN's 2048 x 10), in ns per call.
func BenchmarkGemmPackedHead(b *testing.B) {
	if CurrentLevel() < AVX512 {
		b.Skip("the packed GEMM needs AVX-512")
	}
	for _, s := range []struct{ m, k, n int }{{256, 128, 1}, {256, 256, 1}, {256, 2048, 10}, {16, 2048, 10}, {1, 2048, 10}} {
		a, w, c, bias := make([]float32, s.m*s.k), make([]float32, s.k*s.n), make([]float32, s.m*s.n), make([]float32, s.n)
		for i := range a {
			a[i] = float32(i%97)/97 - 0.5
		}
		for i := range w {
			w[i] = float32(i%89)/890 - 0.05
		}
		p := PackB(false, s.k, s.n, w, s.n)
		b.Run(fmt.Sprintf("%dx%dx%d", s.m, s.k, s.n), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				GemmPacked(s.m, a, s.k, p, c, s.n, bias, false, Relu, 0, s.m, 0, p.Panels())
			}
		})
	}
}
