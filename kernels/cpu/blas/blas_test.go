package blas

import (
	"fmt"
	"math"
	"math/rand"
	"testing"
	"time"
)

func refGemm(ta, tb bool, m, n, k int, a []float64, lda int, b []float64, ldb int) []float64 {
	c := make([]float64, m*n)
	for i := 0; i < m; i++ {
		for j := 0; j < n; j++ {
			var s float64
			for p := 0; p < k; p++ {
				var x, y float64
				if ta {
					x = a[p*lda+i]
				} else {
					x = a[i*lda+p]
				}
				if tb {
					y = b[j*ldb+p]
				} else {
					y = b[p*ldb+j]
				}
				s += x * y
			}
			c[i*n+j] = s
		}
	}
	return c
}

func TestGemm(t *testing.T) {
	seed := time.Now().UnixNano()
	r := rand.New(rand.NewSource(seed))
	t.Logf("OpenBLAS available: %v", Available())
	for _, s := range [][3]int{{1, 1, 1}, {7, 5, 3}, {64, 64, 64}, {100, 3, 300}, {3, 200, 517}} {
		for _, ta := range []bool{false, true} {
			for _, tb := range []bool{false, true} {
				m, n, k := s[0], s[1], s[2]
				lda, ldb := k, n
				if ta {
					lda = m
				}
				if tb {
					ldb = k
				}
				a := make([]float64, m*k)
				b := make([]float64, k*n)
				for i := range a {
					a[i] = r.NormFloat64()
				}
				for i := range b {
					b[i] = r.NormFloat64()
				}
				want := refGemm(ta, tb, m, n, k, a, lda, b, ldb)
				a32, b32 := make([]float32, len(a)), make([]float32, len(b))
				for i := range a {
					a32[i] = float32(a[i])
				}
				for i := range b {
					b32[i] = float32(b[i])
				}
				for name, f := range map[string]func() []float64{
					"Sgemm": func() []float64 {
						c := make([]float32, m*n)
						Sgemm(ta, tb, m, n, k, 1, a32, lda, b32, ldb, 0, c, n)
						return f64(c)
					},
					"GoSgemm": func() []float64 {
						c := make([]float32, m*n)
						GoSgemm(ta, tb, m, n, k, 1, a32, lda, b32, ldb, 0, c, n)
						return f64(c)
					},
					"Dgemm": func() []float64 {
						c := make([]float64, m*n)
						Dgemm(ta, tb, m, n, k, 1, a, lda, b, ldb, 0, c, n)
						return c
					},
					"GoDgemm": func() []float64 {
						c := make([]float64, m*n)
						GoDgemm(ta, tb, m, n, k, 1, a, lda, b, ldb, 0, c, n)
						return c
					},
				} {
					got := f()
					for i := range want {
						if math.Abs(got[i]-want[i]) > 1e-4*math.Sqrt(float64(k))*(1+math.Abs(want[i])) {
							t.Fatalf("%s %v ta=%v tb=%v [%d] = %v, want %v (seed %d)", name, s, ta, tb, i, got[i], want[i], seed)
						}
					}
				}
			}
		}
	}
}

func TestBadOperandsPanic(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("short C did not panic")
		}
	}()
	Sgemm(false, false, 2, 2, 2, 1, make([]float32, 4), 2, make([]float32, 4), 2, 0, make([]float32, 3), 2)
}

func f64(s []float32) []float64 {
	o := make([]float64, len(s))
	for i, v := range s {
		o[i] = float64(v)
	}
	return o
}

// BenchmarkSgemm compares OpenBLAS with the pure-Go GEMM; GFLOP/s is
// reported as a custom metric.
func BenchmarkSgemm(b *testing.B) {
	for _, n := range []int{256, 1024} {
		a := make([]float32, n*n)
		bb := make([]float32, n*n)
		c := make([]float32, n*n)
		for i := range a {
			a[i] = float32(i%7) - 3
			bb[i] = float32(i%5) - 2
		}
		impls := map[string]func(bool, bool, int, int, int, float32, []float32, int, []float32, int, float32, []float32, int){"go": GoSgemm}
		if Available() {
			impls["openblas"] = Sgemm
		}
		for name, f := range impls {
			b.Run(fmt.Sprintf("%s/%d", name, n), func(b *testing.B) {
				for i := 0; i < b.N; i++ {
					f(false, false, n, n, n, 1, a, n, bb, n, 0, c, n)
				}
				b.ReportMetric(2*float64(n)*float64(n)*float64(n)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			})
		}
	}
}
