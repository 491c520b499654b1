package vec

/*
#cgo CFLAGS: -O3
#cgo LDFLAGS: -lm
#cgo amd64 CFLAGS: -march=x86-64-v2
#include "vec.h"
#include "calls.h"
*/
import "C"

import (
	"fmt"
	"sync/atomic"
	"unsafe"

	"mstream/kernels/cpu/ccall"
)

// Unary is an elementwise float32 op.
type Unary int

// The unary ops, in the order of vec.h.
const (
	Neg Unary = iota
	Abs
	Square
	Sqrt
	Rsqrt
	Reciprocal
	Exp
	Expm1
	Log
	Sigmoid
	Tanh
	Relu
	Relu6
	Floor
	Ceil
	Round // half to even
	Elu
	Selu
	Softsign
	GeluErf  // 0.5 x (1 + erf(x / sqrt 2))
	GeluTanh // 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
	Erf
	numUnary
)

// Binary is an elementwise float32 op of two operands.
type Binary int

// The binary ops, in the order of vec.h. Max and Min propagate NaN.
const (
	Add Binary = iota
	Sub
	Mul
	Div
	Max
	Min
	SquaredDifference
	numBinary
)

// Reduce is a row or column reduction.
type Reduce int

// The reductions. Max and Min propagate NaN.
const (
	Sum Reduce = iota
	RMax
	RMin
)

// Level is the instruction set the loops run with.
type Level int

// Levels: the baseline C build, AVX2 with FMA, AVX-512 (F, VL, DQ, BW).
const (
	Base   Level = 0
	AVX2   Level = 1
	AVX512 Level = 2
)

// String names the level.
func (l Level) String() string {
	switch l {
	case Base:
		return "base"
	case AVX2:
		return "avx2"
	case AVX512:
		return "avx512"
	}
	return fmt.Sprintf("Level(%d)", int(l))
}

// level mirrors the C side's level, which only SetLevel changes, so that
// CurrentLevel costs no cgo call: the GEMM asks it on every product (2% of
// a small model's Run when it crossed into C each time).
var level atomic.Int32

func init() { level.Store(int32(C.ms_vec_level())) }

// CurrentLevel reports the level in use (the best the CPU has, unless
// lowered by SetLevel).
func CurrentLevel() Level { return Level(level.Load()) }

// SetLevel caps the level (tests run both paths); it returns the level
// now in use, which is never above what the CPU supports. Not safe to call
// while kernels run.
func SetLevel(l Level) Level {
	C.ms_vec_set_level(C.int(l))
	level.Store(int32(C.ms_vec_level()))
	return CurrentLevel()
}

// mapNs is what ccall.Call expects a map of n elements to take: a read
// and a write of each, and a transcendental's 20 flops on it.
func mapNs(n int) float64 { return ccall.Bytes(8*float64(n)) + ccall.Flops(20*float64(n)) }

// MapUnary computes y[i] = op(x[i]); x and y may be the same slice.
func MapUnary(op Unary, x, y []float32) {
	mapUnary(op, x, y, mapNs(len(x)))
}

// mapUnary is MapUnary with ns, ccall.Call's estimate, given (tests make
// a long call direct with it).
func mapUnary(op Unary, x, y []float32, ns float64) {
	if op < 0 || op >= numUnary || len(y) < len(x) {
		panic(fmt.Sprintf("vec: MapUnary(%d) with len(x)=%d len(y)=%d", op, len(x), len(y)))
	}
	if len(x) == 0 {
		return
	}
	args := C.ms_unary_args{op: C.int(op), x: (*C.float)(&x[0]), y: (*C.float)(&y[0]), n: C.long(len(x))}
	ccall.Call(C.ms_unary_call, unsafe.Pointer(&args), ns)
}

// ChannelAffine sets x[r*c+j] = act(x[r*c+j]*scale[j] + offset[j]) in
// place for x viewed as [len(x)/c, c], c = len(offset); scale nil skips the
// multiply, act < 0 the activation. One call covers many rows, so the cgo
// cost is paid once per call rather than once per row.
func ChannelAffine(x, scale, offset []float32, act Unary) {
	c := len(offset)
	if c == 0 || len(x)%c != 0 || (scale != nil && len(scale) != c) || act >= numUnary {
		panic(fmt.Sprintf("vec: ChannelAffine with len(x)=%d len(scale)=%d len(offset)=%d act=%d", len(x), len(scale), c, act))
	}
	if len(x) == 0 {
		return
	}
	var sp *C.float
	if scale != nil {
		sp = (*C.float)(&scale[0])
	}
	args := C.ms_channel_affine_args{x: (*C.float)(&x[0]), rows: C.long(len(x) / c), c: C.long(c), scale: sp, offset: (*C.float)(&offset[0]), act: C.int(act)}
	ccall.Call(C.ms_channel_affine_call, unsafe.Pointer(&args), mapNs(len(x)))
}

// MapBinary computes y[i] = a[i*sa] op b[i*sb] for i < len(y), with sa and
// sb 0 (a scalar operand) or 1.
func MapBinary(op Binary, a, b, y []float32, sa, sb int) {
	n := len(y)
	if op < 0 || op >= numBinary || sa < 0 || sa > 1 || sb < 0 || sb > 1 ||
		(n > 0 && (len(a) < 1+(n-1)*sa || len(b) < 1+(n-1)*sb)) {
		panic(fmt.Sprintf("vec: MapBinary(%d) with len(a)=%d len(b)=%d len(y)=%d sa=%d sb=%d", op, len(a), len(b), n, sa, sb))
	}
	if n == 0 {
		return
	}
	args := C.ms_binary_args{op: C.int(op), a: (*C.float)(&a[0]), b: (*C.float)(&b[0]), y: (*C.float)(&y[0]), n: C.long(n), sa: C.int(sa), sb: C.int(sb)}
	ccall.Call(C.ms_binary_call, unsafe.Pointer(&args), ccall.Bytes(12*float64(n)))
}

// MapBinaryRows computes y = a op b for y viewed as rows of w elements,
// one operand a single row of w repeated over every row (a when tiledA,
// else b; the other as long as y), in one call: a bias over a tensor's
// trailing dimensions, whose rows may be too short to be worth a call
// each.
func MapBinaryRows(op Binary, a, b, y []float32, w int, tiledA bool) {
	n := len(y)
	la, lb := n, w
	if tiledA {
		la, lb = w, n
	}
	if op < 0 || op >= numBinary || w <= 0 || n%w != 0 || len(a) < la || len(b) < lb {
		panic(fmt.Sprintf("vec: MapBinaryRows(%d) with len(a)=%d len(b)=%d len(y)=%d w=%d tiledA=%v", op, len(a), len(b), n, w, tiledA))
	}
	if n == 0 {
		return
	}
	args := C.ms_binary_rows_args{op: C.int(op), a: (*C.float)(&a[0]), b: (*C.float)(&b[0]), y: (*C.float)(&y[0]), rows: C.long(n / w), w: C.long(w), tiled_a: C.int(b2i(tiledA))}
	ccall.Call(C.ms_binary_rows_call, unsafe.Pointer(&args), ccall.Bytes(12*float64(n)))
}

// RowReduce sets out[r] to the reduction of row r of x viewed as
// [len(out), n]; a Sum is multiplied by scale (1 for a sum, 1/n for a
// mean) in float64 before rounding.
func RowReduce(op Reduce, x []float32, n int, out []float32, scale float64) {
	rows := len(out)
	if op < Sum || op > RMin || n < 0 || len(x) < rows*n {
		panic(fmt.Sprintf("vec: RowReduce(%d) with len(x)=%d rows=%d n=%d", op, len(x), rows, n))
	}
	if rows == 0 {
		return
	}
	var p *C.float
	if len(x) > 0 {
		p = (*C.float)(&x[0])
	}
	args := C.ms_rowreduce_args{op: C.int(op), x: p, rows: C.long(rows), n: C.long(n), out: (*C.float)(&out[0]), scale: C.double(scale)}
	ccall.Call(C.ms_rowreduce_call, unsafe.Pointer(&args), ccall.Bytes(4*float64(len(x))))
}

// ColSum adds rows [0, rows) of the block x (row stride ld) into acc,
// columns [0, len(acc)).
func ColSum(x []float32, rows, ld int, acc []float64) {
	cols := len(acc)
	if rows < 0 || ld < cols || short(len(x), rows, cols, ld) {
		panic(fmt.Sprintf("vec: ColSum with len(x)=%d rows=%d ld=%d cols=%d", len(x), rows, ld, cols))
	}
	if rows == 0 || cols == 0 {
		return
	}
	args := C.ms_colsum_args{x: (*C.float)(&x[0]), rows: C.long(rows), cols: C.long(cols), ld: C.long(ld), acc: (*C.double)(&acc[0])}
	ccall.Call(C.ms_colsum_call, unsafe.Pointer(&args), ccall.Bytes(4*float64(rows)*float64(cols)))
}

// ColMinMax folds rows of the block x into acc with Max or Min (RMax or
// RMin), NaN sticking.
func ColMinMax(op Reduce, x []float32, rows, ld int, acc []float32) {
	cols := len(acc)
	if (op != RMax && op != RMin) || rows < 0 || ld < cols || short(len(x), rows, cols, ld) {
		panic(fmt.Sprintf("vec: ColMinMax(%d) with len(x)=%d rows=%d ld=%d cols=%d", op, len(x), rows, ld, cols))
	}
	if rows == 0 || cols == 0 {
		return
	}
	args := C.ms_colminmax_args{op: C.int(op), x: (*C.float)(&x[0]), rows: C.long(rows), cols: C.long(cols), ld: C.long(ld), acc: (*C.float)(&acc[0])}
	ccall.Call(C.ms_colminmax_call, unsafe.Pointer(&args), ccall.Bytes(4*float64(rows)*float64(cols)))
}

// Softmax writes the softmax (log-softmax when log) of each row of x,
// viewed as [len(x)/n, n], into y. x and y must not overlap.
func Softmax(x, y []float32, n int, log bool) {
	if n <= 0 || len(x)%n != 0 || len(y) < len(x) {
		panic(fmt.Sprintf("vec: Softmax with len(x)=%d len(y)=%d n=%d", len(x), len(y), n))
	}
	if len(x) == 0 {
		return
	}
	l := 0
	if log {
		l = 1
	}
	args := C.ms_softmax_args{x: (*C.float)(&x[0]), y: (*C.float)(&y[0]), rows: C.long(len(x) / n), n: C.long(n), log: C.int(l)}
	ccall.Call(C.ms_softmax_call, unsafe.Pointer(&args), mapNs(len(x)))
}

// LayerNorm writes the layer normalisation of each row of x, viewed as
// [len(x)/n, n], into y: (x - mean) / sqrt(var + eps) * gamma + beta with
// the row's mean and biased variance (summed in float64), gamma and beta
// of one length c that divides n, repeated along the row. With res (nil,
// or as long as x) each row of x + res is normalised: the sum is stored
// into y as a float32 Add would, then normalised there while the row is
// in cache (a transformer's residual Add before its LayerNormalization).
// x and res must not overlap y.
func LayerNorm(x, res, y []float32, n int, gamma, beta []float32, eps float64) {
	c := len(gamma)
	if n <= 0 || len(x)%n != 0 || len(y) < len(x) || c == 0 || len(beta) != c || n%c != 0 || res != nil && len(res) != len(x) {
		panic(fmt.Sprintf("vec: LayerNorm with len(x)=%d len(res)=%d len(y)=%d n=%d len(gamma)=%d len(beta)=%d", len(x), len(res), len(y), n, c, len(beta)))
	}
	if len(x) == 0 {
		return
	}
	var r *C.float
	if res != nil {
		r = (*C.float)(&res[0])
	}
	args := C.ms_layernorm_args{x: (*C.float)(&x[0]), res: r, y: (*C.float)(&y[0]), rows: C.long(len(x) / n), n: C.long(n),
		gamma: (*C.float)(&gamma[0]), beta: (*C.float)(&beta[0]), c: C.long(c), eps: C.double(eps)}
	ccall.Call(C.ms_layernorm_call, unsafe.Pointer(&args), ccall.Bytes(12*float64(len(x))))
}

// Gemv sets y[0:n] = beta*y + alpha*x*B for the row x (k elements) and B
// of k rows of n (row stride ldb): a GEMM of one row, each column summed
// in float32 in row order, so a column's result does not depend on which
// block of columns a call covers.
func Gemv(x []float32, k int, b []float32, ldb, n int, alpha, beta float32, y []float32) {
	if k < 0 || n < 0 || len(x) < k || ldb < n || len(y) < n || short(len(b), k, n, ldb) {
		panic(fmt.Sprintf("vec: Gemv with len(x)=%d k=%d len(b)=%d ldb=%d n=%d len(y)=%d", len(x), k, len(b), ldb, n, len(y)))
	}
	if n == 0 {
		return
	}
	var xp, bp *C.float
	if k > 0 {
		xp, bp = (*C.float)(&x[0]), (*C.float)(&b[0])
	}
	args := C.ms_gemv_args{x: xp, k: C.long(k), b: bp, ldb: C.long(ldb), n: C.long(n), alpha: C.float(alpha), beta: C.float(beta), y: (*C.float)(&y[0])}
	ccall.Call(C.ms_gemv_call, unsafe.Pointer(&args), ccall.Bytes(4*float64(k)*float64(n)))
}

// ArgReduce sets out[r] to the index of the first max (RMax) or min (RMin)
// of row r of x viewed as [len(out), n], n > 0, or to the index of the
// row's first NaN.
func ArgReduce(op Reduce, x []float32, n int, out []int64) {
	rows := len(out)
	if (op != RMax && op != RMin) || n <= 0 || len(x) < rows*n {
		panic(fmt.Sprintf("vec: ArgReduce(%d) with len(x)=%d rows=%d n=%d", op, len(x), rows, n))
	}
	if rows == 0 {
		return
	}
	args := C.ms_argreduce_args{op: C.int(op), x: (*C.float)(&x[0]), rows: C.long(rows), n: C.long(n), out: (*C.longlong)(&out[0])}
	ccall.Call(C.ms_argreduce_call, unsafe.Pointer(&args), ccall.Bytes(4*float64(len(x))))
}

// Panel is the width of a PackedB panel: the columns one GemmPacked tile
// covers.
const Panel = C.MS_PANEL

// PackedB is the right-hand matrix of a GEMM packed once for GemmPacked:
// panels of Panel columns, each K rows of Panel floats, zero past column
// N; or, when N is at most Narrow, one panel holding op(B)^T (N rows of
// K), which GemmPacked reads by dot products of rows rather than a tile
// 32 columns wide. A constant weight is packed when its node first runs
// and kept.
type PackedB struct {
	K, N int
	data []float32
}

// Narrow is the most columns of a PackedB held transposed (PackedB).
const Narrow = C.MS_NARROW

// Panels is the number of panels, ceil(N / Panel).
func (p *PackedB) Panels() int { return (p.N + Panel - 1) / Panel }

// PackB packs op(B), k x n, for GemmPacked: B is row-major k x n (row
// stride ldb), or n x k when transB.
func PackB(transB bool, k, n int, b []float32, ldb int) *PackedB {
	rb, cb := k, n
	if transB {
		rb, cb = n, k
	}
	if k < 0 || n < 0 || ldb < cb || short(len(b), rb, cb, ldb) {
		panic(fmt.Sprintf("vec: PackB with k=%d n=%d ldb=%d len(b)=%d transB=%v", k, n, ldb, len(b), transB))
	}
	p := &PackedB{K: k, N: n}
	if n <= Narrow && k > 0 {
		p.data = make([]float32, n*k)
		for j := 0; j < n; j++ {
			col := p.data[j*k : (j+1)*k]
			if transB {
				copy(col, b[j*ldb:])
			} else {
				for r := range col {
					col[r] = b[r*ldb+j]
				}
			}
		}
		return p
	}
	p.data = make([]float32, p.Panels()*k*Panel)
	for pi := 0; pi < p.Panels(); pi++ {
		panel := p.data[pi*k*Panel : (pi+1)*k*Panel]
		c0, w := pi*Panel, min(Panel, n-pi*Panel)
		for r := 0; r < k; r++ {
			row := panel[r*Panel : r*Panel+w]
			if transB {
				for j := range row {
					row[j] = b[(c0+j)*ldb+r]
				}
			} else {
				copy(row, b[r*ldb+c0:])
			}
		}
	}
	return p
}

// GemmPacked sets rows [r0, r1) x panels [p0, p1) of C (m x p.N,
// row-major, row stride ldc) to A B + bias (accum: + C), then act (< 0:
// none) on what it wrote; A is m x p.K, row-major (row stride lda); bias
// nil adds nothing. Every element sums its products in k order from its
// start value (with p.N <= Narrow: a dot of A's row and B's column summed
// in 16 lanes, then added to the start value), so a block's bits do not
// depend on how C is split. It
// reports false, writing nothing, on a CPU without the kernel (it needs
// AVX-512): the caller takes another GEMM then.
func GemmPacked(m int, a []float32, lda int, p *PackedB, c []float32, ldc int, bias []float32, accum bool, act Unary, r0, r1, p0, p1 int) bool {
	k, n := p.K, p.N
	if m < 0 || lda < max(k, 1) || ldc < max(n, 1) || r0 < 0 || r1 > m || r0 > r1 || p0 < 0 || p1 > p.Panels() || p0 > p1 ||
		short(len(a), m, k, lda) || short(len(c), m, n, ldc) ||
		(bias != nil && len(bias) < n) || act >= numUnary {
		panic(fmt.Sprintf("vec: GemmPacked with m=%d k=%d n=%d lda=%d ldc=%d len(a)=%d len(c)=%d len(bias)=%d rows [%d,%d) panels [%d,%d) act=%d",
			m, k, n, lda, ldc, len(a), len(c), len(bias), r0, r1, p0, p1, act))
	}
	if CurrentLevel() < AVX512 {
		return false
	}
	if r0 == r1 || p0 == p1 {
		return true
	}
	var ap, bp, biasp *C.float
	if k > 0 {
		ap, bp = (*C.float)(&a[0]), (*C.float)(&p.data[0])
	}
	if bias != nil {
		biasp = (*C.float)(&bias[0])
	}
	args := C.ms_gemm_packed_args{m: C.long(m), n: C.long(n), k: C.long(k), a: ap, lda: C.long(lda), bp: bp, c: (*C.float)(&c[0]), ldc: C.long(ldc),
		bias: biasp, accum: C.int(b2i(accum)), act: C.int(act), r0: C.long(r0), r1: C.long(r1), p0: C.long(p0), p1: C.long(p1)}
	ccall.Call(C.ms_gemm_packed_call, unsafe.Pointer(&args), ccall.Flops(2*float64(r1-r0)*float64(min(n, (p1-p0)*Panel))*float64(k)))
	return args.ret != 0
}

// Gemm sets C (m x n, row-major, row stride ldc) to A op(B): A m x k
// (row stride lda), op(B) k x n from B k x n (row stride ldb), or n x k
// when transB. It is GemmPacked's kernel with B packed one panel at a time
// as it goes, each panel read once and used by every row: the same sums as
// GemmPacked's tiles (not its dots for a B of at most Narrow columns), so
// a block of columns computed on its own (columns from a multiple of
// Panel) has the bits of the whole. It reports false, writing
// nothing, on a CPU without the kernel (AVX-512).
func Gemm(transB bool, m, n, k int, a []float32, lda int, b []float32, ldb int, c []float32, ldc int) bool {
	rb, cb := k, n
	if transB {
		rb, cb = n, k
	}
	if m < 0 || n < 0 || k < 0 || lda < max(k, 1) || ldb < max(cb, 1) || ldc < max(n, 1) ||
		short(len(a), m, k, lda) || short(len(b), rb, cb, ldb) ||
		short(len(c), m, n, ldc) {
		panic(fmt.Sprintf("vec: Gemm with m=%d n=%d k=%d lda=%d ldb=%d ldc=%d len(a)=%d len(b)=%d len(c)=%d transB=%v",
			m, n, k, lda, ldb, ldc, len(a), len(b), len(c), transB))
	}
	if CurrentLevel() < AVX512 {
		return false
	}
	if m == 0 || n == 0 {
		return true
	}
	var ap, bp *C.float
	if k > 0 {
		ap, bp = (*C.float)(&a[0]), (*C.float)(&b[0])
	}
	args := C.ms_gemm_args{transb: C.int(b2i(transB)), m: C.long(m), n: C.long(n), k: C.long(k), a: ap, lda: C.long(lda), b: bp, ldb: C.long(ldb), c: (*C.float)(&c[0]), ldc: C.long(ldc)}
	ccall.Call(C.ms_gemm_call, unsafe.Pointer(&args), ccall.Flops(2*float64(m)*float64(n)*float64(k)))
	return args.ret != 0
}

// GatherRows copies row idx[j] of src (rows of row bytes) to row j of dst
// for every j, prefetching the rows a few ahead: the embedding lookup of a
// table far larger than the caches, where Go's copy of one row at a time
// waits for each row's miss to memory in turn. It panics when an index is
// outside src or dst is shorter than len(idx) rows. Its slices reach C, so
// they escape: a caller's indices on its stack would move to the heap.
func GatherRows[I int32 | int64](dst, src []byte, idx []I, row int) {
	n := len(idx)
	if row <= 0 || n == 0 {
		return
	}
	limit := int64(len(src) / row)
	bad := len(dst) < n*row
	for _, v := range idx {
		bad = bad || v < 0 || int64(v) >= limit
	}
	if bad {
		panic(fmt.Sprintf("vec: GatherRows of %d rows of %d bytes into %d bytes from a table of %d rows", n, row, len(dst), limit))
	}
	var i64 *C.longlong
	var i32 *C.int
	switch x := any(idx).(type) {
	case []int64:
		i64 = (*C.longlong)(&x[0])
	case []int32:
		i32 = (*C.int)(&x[0])
	}
	args := C.ms_gather_rows_args{dst: (*C.uchar)(&dst[0]), src: (*C.uchar)(&src[0]), idx64: i64, idx32: i32, n: C.long(n), row: C.long(row)}
	ccall.Call(C.ms_gather_rows_call, unsafe.Pointer(&args), ccall.Bytes(2*float64(n)*float64(row)))
}

// GemmNT sets C (m x n, row stride ldc) to A B^T, A m x k and B n x k
// row-major, by dot products of rows: the kernel for products too small
// to pay for packing B, such as a DLRM interaction's 27 x 27 of 64. sym
// says B is A (the same rows: m = n, lda = ldb), and then only the lower
// triangle is computed and copied up, which is what computing it would
// give bit for bit. It reports false, writing nothing, on a CPU without
// AVX-512.
func GemmNT(m, n, k int, a []float32, lda int, b []float32, ldb int, c []float32, ldc int, sym bool) bool {
	if m < 0 || n < 0 || k < 0 || lda < max(k, 1) || ldb < max(k, 1) || ldc < max(n, 1) ||
		short(len(a), m, k, lda) || short(len(b), n, k, ldb) ||
		short(len(c), m, n, ldc) || (sym && (m != n || lda != ldb)) {
		panic(fmt.Sprintf("vec: GemmNT with m=%d n=%d k=%d lda=%d ldb=%d ldc=%d len(a)=%d len(b)=%d len(c)=%d sym=%v",
			m, n, k, lda, ldb, ldc, len(a), len(b), len(c), sym))
	}
	if CurrentLevel() < AVX512 {
		return false
	}
	if m == 0 || n == 0 {
		return true
	}
	if k == 0 {
		for i := 0; i < m; i++ {
			clear(c[i*ldc : i*ldc+n])
		}
		return true
	}
	args := C.ms_gemm_nt_args{m: C.long(m), n: C.long(n), k: C.long(k), a: (*C.float)(&a[0]), lda: C.long(lda), b: (*C.float)(&b[0]), ldb: C.long(ldb), c: (*C.float)(&c[0]), ldc: C.long(ldc), sym: C.int(b2i(sym))}
	ccall.Call(C.ms_gemm_nt_call, unsafe.Pointer(&args), ccall.Flops(2*float64(m)*float64(n)*float64(k)))
	return args.ret != 0
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// short says whether n elements are too few for a rows x cols matrix
// whose rows start ld apart (the last row needs only its cols); an empty
// matrix needs none.
func short(n, rows, cols, ld int) bool { return rows > 0 && cols > 0 && n < (rows-1)*ld+cols }
