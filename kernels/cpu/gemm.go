package cpu

import (
	"sync"
	"sync/atomic"

	"mstream/kernels"
	"mstream/kernels/cpu/blas"
	"mstream/kernels/cpu/vec"
)

// Batched GEMMs on the intra-op pool. A single product splits itself in
// blas.SgemmOn (blocks fixed by the shape, so the bits do not depend on the
// pool); a batch of products runs its matrices as the pool's chunks, each
// one whole single-threaded GEMM, which is as deterministic: Einsum's
// attention products (64 of 64x64x32 at B=16) are each too small to split.

// gemmNsPerFlop is the rough cost the pool's splitter weighs a batch by:
// one AVX2 core does 20-60 GFLOP/s of sgemm on these shapes.
const gemmNsPerFlop = 0.03

// gemmFn is sgemm or blas.Dgemm (or a split one, for a single product).
type gemmFn[T float32 | float64] func(transA, transB bool, m, n, k int, alpha T, a []T, lda int, b []T, ldb int, beta T, c []T, ldc int)

// singleGemm is the GEMM a lone product runs: split over ctx's pool for
// float32 (sgemmOn), one call for float64.
func singleGemm[T float32 | float64](ctx *kernels.Context, gemm gemmFn[T]) gemmFn[T] {
	if _, ok := any(gemm).(gemmFn[float32]); ok {
		return any(gemmFn[float32](func(ta, tb bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
			sgemmOn(ctx, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
		})).(gemmFn[T])
	}
	return gemm
}

// batchedGemm runs nb products (the i-th through one(i), a single-threaded
// GEMM of flops floating-point operations) as chunks of the intra-op pool.
func batchedGemm(ctx *kernels.Context, nb int, flops float64, one func(i int)) {
	ctx.For(nb, flops*gemmNsPerFlop, kernels.StartLoop, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			one(i)
		}
	})
}

// matmulBatches runs a batch of products: the i-th multiplies A's matrix
// pairs[i][0] (sa elements apart) by B's pairs[i][1] into O's i-th.
func matmulBatches[T float32 | float64](ctx *kernels.Context, gemm gemmFn[T], pairs [][2]int, ta, tb bool, m, n, k int, a []T, lda, sa int, b []T, ldb, sb int, o []T, so int) {
	if len(pairs) == 1 {
		p := pairs[0]
		singleGemm(ctx, gemm)(ta, tb, m, n, k, 1, a[p[0]*sa:p[0]*sa+sa], lda, b[p[1]*sb:p[1]*sb+sb], ldb, 0, o[:so], n)
		return
	}
	batchedGemm(ctx, len(pairs), 2*float64(m)*float64(n)*float64(k), func(i int) {
		p := pairs[i]
		gemm(ta, tb, m, n, k, 1, a[p[0]*sa:p[0]*sa+sa], lda, b[p[1]*sb:p[1]*sb+sb], ldb, 0, o[i*so:i*so+so], n)
	})
}

// packedWeights is a GEMM's constant right-hand matrix packed for
// vec.GemmPacked, once per kernel: packed when the node first runs, kept
// with the source's first element so that a kernel handed other memory
// (it should not be) packs that instead of using stale panels.
// Concurrent Runs that race to pack each pack, and one result stays.
type packedWeights struct {
	p atomic.Pointer[packedSrc]
}

type packedSrc struct {
	first  *float32 // &b[0], nil for an empty b
	len    int
	transB bool
	packed *vec.PackedB
}

// get returns op(b), k x n, packed.
func (w *packedWeights) get(transB bool, k, n int, b []float32, ldb int) *vec.PackedB {
	var first *float32
	if len(b) > 0 {
		first = &b[0]
	}
	if s := w.p.Load(); s != nil && s.first == first && s.len == len(b) && s.transB == transB && s.packed.K == k && s.packed.N == n {
		return s.packed
	}
	s := &packedSrc{first: first, len: len(b), transB: transB, packed: vec.PackB(transB, k, n, b, ldb)}
	w.p.Store(s)
	return s.packed
}

// packedRows is the rows of C in one block of a packed GEMM that the
// pool splits: with one panel of vec.Panel columns, the unit of work.
const packedRows = 64

// packedFlopsPerNs is about what one core's vec.GemmPacked reaches
// (BenchmarkSgemmPacked: 90-115 GFLOP/s on AVX-512).
const packedFlopsPerNs = 100

// packedBytesPerNs is about the rate at which one core streams packed
// weights from L3 (GB/s): what a panel costs at one row (a GEMV), where
// its flops are too few to count.
const packedBytesPerNs = 30

// aBytesPerNs is about the rate at which a chunk of a packed GEMM reads
// A back (GB/s), for the pool's cut: A outgrows a core's L2 as soon as it
// matters, and then comes from L3 or memory shared with the other core.
// At the rate of streaming panels (packedBytesPerNs) the transformer's
// B=256 projections (A 8 MB) were cut in 7 where main cut 4, and took
// 5-10% more CPU a request in three A/B runs; at 10, 4 again.
const aBytesPerNs = 10

// gemmUnits splits C (m x n) over the pool in units of packedRows rows
// by one panel of vec.Panel columns, row-major: a chunk of consecutive
// units is a band of rows of C, which reads only its own rows of A. run
// gets them as row and panel ranges: whole blocks of rows in one call,
// all panels by several blocks, which the kernel runs a block at a time
// with its A in L2 over the panels, and a part block at either end on
// its own. A unit's cost counts cols columns: vec.Panel for a tile,
// which computes the whole panel, n for a narrow packed B (vec.Narrow),
// which computes only its columns.
//
// Rows, not panels, so that the threads keep their data: the pool gives
// a thread the same end of each loop (Intra.For), so the rows a thread
// writes in one layer are the rows it reads in the next, from its own
// cache. Split by panels, every thread read all of A, and the thread
// that wrote A next found its lines shared with the other core, or held
// there: with the vCPUs far apart the bundled model at B=256 (one client
// thread, 0.5 s runs alternating, medians) ran 3029 QPS split against
// 3559 whole, and its serial ConcatV2, writing where a worker had read,
// took 101 us against 9.5; by rows it ran 4355 split (OpenVINO 4488),
// and near 5963 against 5301 by panels. With one block of rows (m <=
// packedRows) a chunk is a run of panels and reads all of A.
func gemmUnits(ctx *kernels.Context, m, n, k, cols int, r unitRunner) {
	np, nrb := (n+vec.Panel-1)/vec.Panel, (m+packedRows-1)/packedRows
	unit := float64(k * cols)
	cost := max(2*float64(min(m, packedRows))*unit/packedFlopsPerNs, 4*unit/packedBytesPerNs)
	// What a chunk reads beyond its units' share (aBytesPerNs): with one
	// block of rows, all of A, which each chunk more reads once more
	// (costed at a block's rows alone, the transformer's B=16
	// projections, A 1 MB, were cut 8 ways, each reading all of A where 4
	// had); with more, a band of rows, which reads the panels of B.
	start := 4 * float64(m) * float64(k) / aBytesPerNs
	if nrb > 1 {
		start = 4 * float64(k) * float64(np*cols) / aBytesPerNs
	}
	l := unitLoops.Get().(*unitLoop)
	l.m, l.np, l.r = m, np, r
	ctx.For(np*nrb, cost, start, l.body)
	l.r = nil
	unitLoops.Put(l)
}

// unitRunner computes a block of C for gemmUnits: rows r0 to r1 by
// panels p0 to p1.
type unitRunner interface{ run(r0, r1, p0, p1 int) }

// runFunc is a function as a unitRunner.
type runFunc func(r0, r1, p0, p1 int)

func (f runFunc) run(r0, r1, p0, p1 int) { f(r0, r1, p0, p1) }

// unitLoop is gemmUnits' loop over its units, with the loop's body bound
// once and the loop kept in unitLoops between calls: a closure per call
// went to the heap (ctx.For keeps its body), and with gemmPacked's it was
// 6 of the 13 allocations and 432 of the 1064 bytes a run of the bundled
// model at B=1 (BenchmarkStepModel/model_test/B1/T1 -benchmem: 7 and 632
// without them).
type unitLoop struct {
	m, np int
	r     unitRunner
	body  func(lo, hi int) // loop
}

var unitLoops = sync.Pool{New: func() any {
	l := new(unitLoop)
	l.body = l.loop
	return l
}}

// loop runs units lo to hi: consecutive units as row and panel ranges.
func (l *unitLoop) loop(lo, hi int) {
	m, np := l.m, l.np
	for u := lo; u < hi; {
		rb, pi := u/np, u%np
		if re := hi / np; pi == 0 && re > rb {
			l.r.run(rb*packedRows, min(m, re*packedRows), 0, np)
			u = re * np
			continue
		}
		end := min(hi, (rb+1)*np)
		l.r.run(rb*packedRows, min(m, (rb+1)*packedRows), pi, end-rb*np)
		u = end
	}
}

// gemmPacked sets C (m x p.N, row stride p.N) to A p + bias, then act,
// over the pool (gemmUnits), for a product usePacked accepts (the caller
// asks it before packing B).
func gemmPacked(ctx *kernels.Context, m int, a []float32, lda int, p *vec.PackedB, c, bias []float32, act vec.Unary) {
	cols := vec.Panel
	if p.N <= vec.Narrow {
		cols = p.N
	}
	g := packedRuns.Get().(*packedRun)
	*g = packedRun{m: m, a: a, lda: lda, p: p, c: c, bias: bias, act: act}
	gemmUnits(ctx, m, p.N, p.K, cols, g)
	*g = packedRun{} // not holding the tensors
	packedRuns.Put(g)
}

// packedRun is one gemmPacked product as a unitRunner, kept in
// packedRuns between calls (unitLoop says why).
type packedRun struct {
	m, lda int
	a, c   []float32
	p      *vec.PackedB
	bias   []float32
	act    vec.Unary
}

var packedRuns = sync.Pool{New: func() any { return new(packedRun) }}

func (g *packedRun) run(r0, r1, p0, p1 int) {
	vec.GemmPacked(g.m, g.a, g.lda, g.p, g.c, g.p.N, g.bias, false, g.act, r0, r1, p0, p1)
}

// usePacked says whether a float32 product C = alpha op(A) op(B) + beta C
// goes to package vec's kernel: A not transposed, alpha 1 and beta 0, a
// CPU with the kernel, and two rows or more unless B is kept packed
// (constB). OpenBLAS packs B again in every call, which at the attention's
// 64x32x64 products and the 16-row layers cost as much as the product
// (BenchmarkSgemmPacked). One row times a B packed as it goes would read
// B twice; vec.Gemv reads it once as it is. One row times B kept packed
// streams the panels (vec.GemmPacked's GEMV, a group of panels at a
// time), bias and activation applied as it stores. BenchmarkSgemmPacked,
// CPU us per call (perf stat task-clock over 10000 calls, less one; the
// wall time swung 2x at load 8), vec.Gemv / packed: 1x512x1024 31-38 /
// 25-29, 1x1024x1024 66-67 / 55-59, both streaming B from L3 at 60-80
// GB/s; groups of 2, 4 or 8 panels and software prefetch were level.
func usePacked(ta, constB bool, m, k int, alpha, beta float32) bool {
	return !ta && (m > 1 || constB && m == 1) && k > 0 && alpha == 1 && beta == 0 && vec.CurrentLevel() >= vec.AVX512
}

// gemmNTMax is the most rows and columns of C for which a product A B^T
// takes dot products of rows (vec.GemmNT) rather than packing B: DLRM's
// interaction, X X^T of [B, 27, 64], spent more packing 27 columns into a
// panel of 32 and on its tiles of 8 rows than on its 47k flops a matrix.
const gemmNTMax = 32

// smallNT computes C = A B^T by vec.GemmNT when the product is that small
// (alpha 1, beta 0, A not transposed, an AVX-512 CPU), the lower triangle
// only when B is A, and says whether it did.
func smallNT(ta, tb bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) bool {
	if ta || !tb || alpha != 1 || beta != 0 || m > gemmNTMax || n > gemmNTMax || k == 0 {
		return false
	}
	sym := m == n && lda == ldb && len(a) > 0 && len(b) > 0 && &a[0] == &b[0]
	return vec.GemmNT(m, n, k, a, lda, b, ldb, c, ldc, sym)
}

// sgemm is the float32 GEMM of one product on one thread (a batch's
// chunks run it): vec.Gemm, packing B a panel at a time, where usePacked
// says, else OpenBLAS.
func sgemm(ta, tb bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	if smallNT(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc) {
		return
	}
	if usePacked(ta, false, m, k, alpha, beta) && vec.Gemm(tb, m, n, k, a, lda, b, ldb, c, ldc) {
		return
	}
	blas.Sgemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
}

// sgemmOn is a lone float32 product split over ctx's pool: vec.Gemm on
// gemmUnits' blocks (whole panels of columns, so the bits do not depend
// on the split) where usePacked says, else blas.SgemmOn.
func sgemmOn(ctx *kernels.Context, ta, tb bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	if smallNT(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc) {
		return
	}
	if !usePacked(ta, false, m, k, alpha, beta) {
		blas.SgemmOn(ctx, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
		return
	}
	gemmUnits(ctx, m, n, k, vec.Panel, runFunc(func(r0, r1, p0, p1 int) {
		c0, c1 := p0*vec.Panel, min(p1*vec.Panel, n)
		off := c0
		if tb {
			off = c0 * ldb
		}
		// vec.Gemm refuses only when it cannot have its panel scratch.
		if !vec.Gemm(tb, r1-r0, c1-c0, k, a[r0*lda:], lda, b[off:], ldb, c[r0*ldc+c0:], ldc) {
			blas.Sgemm(false, tb, r1-r0, c1-c0, k, 1, a[r0*lda:], lda, b[off:], ldb, 0, c[r0*ldc+c0:], ldc)
		}
	}))
}
