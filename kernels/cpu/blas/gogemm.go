package blas

import (
	"runtime"
	"sync"
)

type float interface{ ~float32 | ~float64 }

const (
	blockK = 256
	blockN = 512
)

// goGemm is a blocked GEMM: B is packed once into row-major k x n (so the
// inner loop is a contiguous axpy over a row of C), rows of C are split
// over GOMAXPROCS goroutines when the product is large.
func goGemm[T float](transA, transB bool, m, n, k int, alpha T, a []T, lda int, b []T, ldb int, beta T, c []T, ldc int) {
	for i := 0; i < m; i++ {
		row := c[i*ldc : i*ldc+n]
		if beta == 0 {
			clear(row)
		} else if beta != 1 {
			for j := range row {
				row[j] *= beta
			}
		}
	}
	if k == 0 || alpha == 0 {
		return
	}
	// Pack op(B) as k x n row-major.
	var bp []T
	if !transB && ldb == n {
		bp = b[:k*n]
	} else {
		bp = make([]T, k*n)
		for p := 0; p < k; p++ {
			for j := 0; j < n; j++ {
				if transB {
					bp[p*n+j] = b[j*ldb+p]
				} else {
					bp[p*n+j] = b[p*ldb+j]
				}
			}
		}
	}
	work := func(lo, hi int) {
		for j0 := 0; j0 < n; j0 += blockN {
			j1 := min(j0+blockN, n)
			for p0 := 0; p0 < k; p0 += blockK {
				p1 := min(p0+blockK, k)
				for i := lo; i < hi; i++ {
					crow := c[i*ldc+j0 : i*ldc+j1]
					p := p0
					for ; p+4 <= p1; p += 4 {
						var a0, a1, a2, a3 T
						if transA {
							a0, a1, a2, a3 = a[p*lda+i], a[(p+1)*lda+i], a[(p+2)*lda+i], a[(p+3)*lda+i]
						} else {
							ar := a[i*lda+p : i*lda+p+4]
							a0, a1, a2, a3 = ar[0], ar[1], ar[2], ar[3]
						}
						a0, a1, a2, a3 = a0*alpha, a1*alpha, a2*alpha, a3*alpha
						b0 := bp[p*n+j0 : p*n+j1]
						b1 := bp[(p+1)*n+j0 : (p+1)*n+j1]
						b2 := bp[(p+2)*n+j0 : (p+2)*n+j1]
						b3 := bp[(p+3)*n+j0 : (p+3)*n+j1]
						b1, b2, b3 = b1[:len(crow)], b2[:len(crow)], b3[:len(crow)]
						b0 = b0[:len(crow)]
						for j := range crow {
							crow[j] += a0*b0[j] + a1*b1[j] + a2*b2[j] + a3*b3[j]
						}
					}
					for ; p < p1; p++ {
						var av T
						if transA {
							av = a[p*lda+i]
						} else {
							av = a[i*lda+p]
						}
						av *= alpha
						br := bp[p*n+j0 : p*n+j1]
						br = br[:len(crow)]
						for j := range crow {
							crow[j] += av * br[j]
						}
					}
				}
			}
		}
	}
	workers := runtime.GOMAXPROCS(0)
	if m*n*k < 1<<18 || workers == 1 || m < 2 {
		work(0, m)
		return
	}
	workers = min(workers, m)
	var wg sync.WaitGroup
	chunk := (m + workers - 1) / workers
	for lo := 0; lo < m; lo += chunk {
		hi := min(lo+chunk, m)
		wg.Add(1)
		go func() { defer wg.Done(); work(lo, hi) }()
	}
	wg.Wait()
}
