package blas

import (
	"fmt"
	"testing"

	"mstream/kernels/cpu/vec"
)

// BenchmarkSgemmPacked compares, on one thread, OpenBLAS's sgemm (and
// package vec's GEMV for one row) with package vec's packed GEMM (B packed
// once, outside the loop) at the shapes of the bench models' layers (m x k
// x n).
func BenchmarkSgemmPacked(b *testing.B) {
	SetThreads(1)
	for _, s := range [][3]int{{1, 512, 1024}, {1, 1024, 1024}, {2, 1024, 1024}, {4, 512, 1024}, {16, 512, 1024}, {16, 1024, 1024}, {16, 1024, 512}, {64, 128, 128}, {64, 128, 512}, {64, 512, 128},
		{1024, 128, 128}, {1024, 128, 512}, {1024, 512, 128}, {256, 512, 1024}, {256, 1024, 1024}} {
		m, k, n := s[0], s[1], s[2]
		a, w, c := benchOperands(m, k, n)
		b.Run(fmt.Sprintf("openblas/%dx%dx%d", m, k, n), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				Sgemm(false, false, m, n, k, 1, a, k, w, n, 0, c, n)
			}
			b.ReportMetric(2*float64(m*n*k)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
		if m == 1 {
			b.Run(fmt.Sprintf("gemv/%dx%dx%d", m, k, n), func(b *testing.B) {
				for i := 0; i < b.N; i++ {
					vec.Gemv(a, k, w, n, n, 1, 0, c)
				}
				b.ReportMetric(2*float64(m*n*k)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			})
		}
		p := vec.PackB(false, k, n, w, n)
		b.Run(fmt.Sprintf("packed/%dx%dx%d", m, k, n), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				vec.GemmPacked(m, a, k, p, c, n, nil, false, -1, 0, m, 0, p.Panels())
			}
			b.ReportMetric(2*float64(m*n*k)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
}
