package blas

import (
	"fmt"
	"testing"

	"mstream/kernels/cpu/vec"
)

// BenchmarkGemvRow compares OpenBLAS's GEMV (cblas_sgemv, what SgemmOn
// called for one row before) with package vec's, which SgemmOn now uses,
// on one thread over the MLP's layer shapes (k x n); B's bytes read per
// second are reported as GB/s.
func BenchmarkGemvRow(b *testing.B) {
	SetThreads(1)
	for _, s := range [][2]int{{512, 1024}, {1024, 1024}, {1024, 512}, {512, 256}, {256, 1}} {
		k, n := s[0], s[1]
		x, w, y := make([]float32, k), make([]float32, k*n), make([]float32, n)
		for i := range w {
			w[i] = float32(i%7) - 3
		}
		for i := range x {
			x[i] = float32(i%5) - 2
		}
		b.Run(fmt.Sprintf("openblas/%dx%d", k, n), func(b *testing.B) {
			if !Available() {
				b.Skip("no OpenBLAS")
			}
			for i := 0; i < b.N; i++ {
				sgemv(false, n, k, 1, x, 1, w, n, 0, y)
			}
			b.ReportMetric(float64(4*k*n)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GB/s")
		})
		b.Run(fmt.Sprintf("vec/%dx%d", k, n), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				vec.Gemv(x, k, w, n, n, 1, 0, y)
			}
			b.ReportMetric(float64(4*k*n)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GB/s")
		})
	}
}
