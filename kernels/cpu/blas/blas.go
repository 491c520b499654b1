package blas

/*
#cgo CFLAGS: -O2
#cgo LDFLAGS: -ldl
#include "dl.h"
*/
import "C"

import (
	"fmt"
	"os"
	"sync"
)

var (
	openOnce sync.Once
	haveLib  bool
)

// Available reports whether an OpenBLAS-compatible cblas was loaded. Setting
// MSTREAM_NO_BLAS=1 in the environment forces the pure-Go path (tests and
// benchmarks compare the two with it).
func Available() bool {
	openOnce.Do(func() {
		if os.Getenv("MSTREAM_NO_BLAS") == "1" {
			return
		}
		haveLib = C.mstream_blas_open() == 1
	})
	return haveLib
}

// SetThreads caps OpenBLAS's own thread count (no-op without it).
func SetThreads(n int) {
	if Available() {
		C.mstream_blas_set_threads(C.int(n))
	}
}

func b2i(b bool) C.int {
	if b {
		return 1
	}
	return 0
}

// check panics when a GEMM's operands do not hold the matrices their
// dimensions and leading dimensions describe: a programming error in the
// caller, caught before C can read or write out of range.
func check(transA, transB bool, m, n, k, lda, ldb, ldc, la, lb, lc int) {
	ra, ca := m, k
	if transA {
		ra, ca = k, m
	}
	rb, cb := k, n
	if transB {
		rb, cb = n, k
	}
	bad := m < 0 || n < 0 || k < 0 || lda < max(1, ca) || ldb < max(1, cb) || ldc < max(1, n) ||
		(ra > 0 && ca > 0 && la < (ra-1)*lda+ca) || (rb > 0 && cb > 0 && lb < (rb-1)*ldb+cb) ||
		(m > 0 && n > 0 && lc < (m-1)*ldc+n)
	if bad {
		panic(fmt.Sprintf("blas: bad gemm operands m=%d n=%d k=%d lda=%d ldb=%d ldc=%d lens=%d,%d,%d", m, n, k, lda, ldb, ldc, la, lb, lc))
	}
}

// Sgemm computes C = alpha*op(A)*op(B) + beta*C for row-major matrices,
// op(A) m x k, op(B) k x n, C m x n.
func Sgemm(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	check(transA, transB, m, n, k, lda, ldb, ldc, len(a), len(b), len(c))
	if m == 0 || n == 0 {
		return
	}
	if k == 0 || Available() == false {
		goGemm(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
		return
	}
	C.mstream_sgemm(b2i(transA), b2i(transB), C.int(m), C.int(n), C.int(k), C.float(alpha),
		(*C.float)(&a[0]), C.int(lda), (*C.float)(&b[0]), C.int(ldb), C.float(beta), (*C.float)(&c[0]), C.int(ldc))
}

// Dgemm is Sgemm for float64.
func Dgemm(transA, transB bool, m, n, k int, alpha float64, a []float64, lda int, b []float64, ldb int, beta float64, c []float64, ldc int) {
	check(transA, transB, m, n, k, lda, ldb, ldc, len(a), len(b), len(c))
	if m == 0 || n == 0 {
		return
	}
	if k == 0 || !Available() {
		goGemm(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
		return
	}
	C.mstream_dgemm(b2i(transA), b2i(transB), C.int(m), C.int(n), C.int(k), C.double(alpha),
		(*C.double)(&a[0]), C.int(lda), (*C.double)(&b[0]), C.int(ldb), C.double(beta), (*C.double)(&c[0]), C.int(ldc))
}

// GoSgemm and GoDgemm always use the pure-Go GEMM (benchmarks, tests).
func GoSgemm(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	check(transA, transB, m, n, k, lda, ldb, ldc, len(a), len(b), len(c))
	goGemm(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
}

// GoDgemm: see GoSgemm.
func GoDgemm(transA, transB bool, m, n, k int, alpha float64, a []float64, lda int, b []float64, ldb int, beta float64, c []float64, ldc int) {
	check(transA, transB, m, n, k, lda, ldb, ldc, len(a), len(b), len(c))
	goGemm(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
}
