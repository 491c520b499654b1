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

// BenchmarkGemmPackedAct times the packed GEMM at the transformer's FFN
// input layer (rows x 128 x 512) with no activation, Relu and the exact
// GELU in its epilogue, in ns per element of C: what the epilogue adds
// over the product. "64rows" is one unit of gemmUnits, C in L2;
// "16384rows" is the layer at B=256 run four panels a call as gemmUnits
// does, C (32 MB) stored to memory.
func BenchmarkGemmPackedAct(b *testing.B) {
	if CurrentLevel() < AVX512 {
		b.Skip("the packed GEMM needs AVX-512")
	}
	const k, n = 128, 512
	w, bias := make([]float32, k*n), make([]float32, n)
	for i := range w {
		w[i] = float32(i%89)/890 - 0.05
	}
	p := PackB(false, k, n, w, n)
	for _, m := range []int{64, 16384} {
		a, c := make([]float32, m*k), make([]float32, m*n)
		for i := range a {
			a[i] = float32(i%97)/97 - 0.5
		}
		for _, act := range []struct {
			name string
			act  Unary
		}{{"none", -1}, {"Relu", Relu}, {"GeluErf", GeluErf}} {
			b.Run(fmt.Sprintf("%drows/%s", m, act.name), func(b *testing.B) {
				for i := 0; i < b.N; i++ {
					for p0 := 0; p0 < p.Panels(); p0 += 4 {
						GemmPacked(m, a, k, p, c, n, bias, false, act.act, 0, m, p0, min(p0+4, p.Panels()))
					}
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*m*n), "ns/elem")
			})
		}
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
