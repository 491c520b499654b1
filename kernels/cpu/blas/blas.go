package blas

/*
#cgo CFLAGS: -O2
#cgo LDFLAGS: -ldl
#include <stdlib.h>
#include "dl.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"

	"mstream/cenv"
	"mstream/kernels/cpu/ccall"
	"mstream/kernels/cpu/vec"
)

// ISA is a CPU's vector instruction set, ranked: a higher one runs every
// kernel a lower one does.
type ISA int

// The ISAs OpenBLAS has kernels for, lowest first.
const (
	ISASSE    ISA = 1 // SSE2/SSE3 only
	ISAAVX    ISA = 2
	ISAAVX2   ISA = 3 // AVX2 with FMA
	ISAAVX512 ISA = 4 // AVX-512 F, BW, VL, DQ
)

func (i ISA) String() string {
	switch i {
	case ISAAVX:
		return "AVX"
	case ISAAVX2:
		return "AVX2"
	case ISAAVX512:
		return "AVX-512"
	}
	return "SSE"
}

// CPUISA returns the best ISA this CPU and its OS support (cpuid).
func CPUISA() ISA { return ISA(C.mstream_cpu_isa()) }

// coreISA is the ISA of each OpenBLAS core (openblas_get_corename, lower
// case). A core missing here is reported and left alone.
var coreISA = map[string]ISA{
	"generic": ISASSE, "katmai": ISASSE, "coppermine": ISASSE, "northwood": ISASSE,
	"prescott": ISASSE, "banias": ISASSE, "atom": ISASSE, "core2": ISASSE, "penryn": ISASSE,
	"dunnington": ISASSE, "nehalem": ISASSE, "athlon": ISASSE, "opteron": ISASSE,
	"opteron_sse3": ISASSE, "barcelona": ISASSE, "bobcat": ISASSE,
	"sandybridge": ISAAVX, "bulldozer": ISAAVX, "piledriver": ISAAVX, "steamroller": ISAAVX,
	"haswell": ISAAVX2, "zen": ISAAVX2, "excavator": ISAAVX2,
	"skylakex": ISAAVX512, "cooperlake": ISAAVX512, "sapphirerapids": ISAAVX512,
}

// coreFor is the OPENBLAS_CORETYPE that runs an ISA's kernels.
var coreFor = map[ISA]string{ISAAVX: "Sandybridge", ISAAVX2: "Haswell", ISAAVX512: "SkylakeX"}

// wantCore returns the core to ask OpenBLAS for when the one it picked
// (core) is below the CPU's ISA, or "" when core is right or unknown.
func wantCore(core string, cpu ISA) string {
	got, known := coreISA[strings.ToLower(core)]
	if !known || got >= cpu {
		return ""
	}
	return coreFor[cpu]
}

// SystemNames are the sonames tried, in order, when no library is named.
var SystemNames = []string{"libopenblas.so.0", "libopenblas.so", "libblas.so.3"}

// Options chooses the GEMM library.
type Options struct {
	// Path is a cblas library to dlopen (a plain OpenBLAS, or the
	// scipy-openblas32 wheel's libscipy_openblas.so whose symbols carry a
	// scipy_ prefix); "" tries SystemNames; "go" takes the pure-Go GEMM.
	Path string
}

// Info says which GEMM runs and why: MS_SessionStats shows it and the
// session logs it once.
type Info struct {
	// Impl is "openblas", "cblas" (a cblas that is not OpenBLAS: its
	// speed is unchecked) or "go".
	Impl string `json:"impl"`
	Path string `json:"path,omitempty"`
	// Version is openblas_get_config: version, DYNAMIC_ARCH, threading.
	Version string `json:"version,omitempty"`
	// Core is the kernel set OpenBLAS runs (openblas_get_corename).
	Core string `json:"core,omitempty"`
	CPU  string `json:"cpu_isa"`
	// CoreSet is the OPENBLAS_CORETYPE this package set because the core
	// the library picked on its own (CorePicked) was below the CPU's ISA.
	CoreSet    string `json:"coretype_set,omitempty"`
	CorePicked string `json:"core_picked,omitempty"`
	// Warning says why the GEMM is slower than this CPU allows: a pure-Go
	// fallback, a core below the ISA, a library that is not OpenBLAS.
	Warning string `json:"warning,omitempty"`
}

// String is the one log line.
func (in Info) String() string {
	var b strings.Builder
	switch in.Impl {
	case "go":
		b.WriteString("BLAS: pure-Go GEMM")
	default:
		fmt.Fprintf(&b, "BLAS: %s (%s)", firstWords(in.Version, 2, in.Impl), in.Path)
		if in.Core != "" {
			fmt.Fprintf(&b, ", core %s", in.Core)
		}
		if in.CoreSet != "" {
			fmt.Fprintf(&b, " (OPENBLAS_CORETYPE=%s set: the library picked %s)", in.CoreSet, in.CorePicked)
		}
	}
	fmt.Fprintf(&b, ", CPU %s", in.CPU)
	return b.String()
}

func firstWords(s string, n int, def string) string {
	f := strings.Fields(s)
	if len(f) == 0 {
		return def
	}
	return strings.Join(f[:min(n, len(f))], " ")
}

var (
	loadMu sync.Mutex
	loaded atomic.Bool // info and haveLib are final once set
	info   Info
	// haveLib says the cblas entry points are loaded.
	haveLib bool
	// wanted is the Options of the Load that won, to report a later one
	// that asks for another library.
	wanted Options
)

// ErrLoaded says a Load asked for another library than the one loaded.
var ErrLoaded = errors.New("a BLAS is already loaded in this process")

// Load opens the GEMM library once per process: a library cannot be
// unloaded while kernels may hold its functions, and OpenBLAS reads
// OPENBLAS_CORETYPE only when it loads. The first successful Load decides;
// a later one asking for another library gets the loaded one's Info and an
// error saying so. A named Path that does not load is an error and loads
// nothing, so that the caller can fail or retry; "" or "go" never fail.
// Sgemm and Dgemm call Load(Options{}) themselves when nobody has.
func Load(o Options) (Info, error) {
	loadMu.Lock()
	defer loadMu.Unlock()
	if loaded.Load() {
		if o.Path != "" && o.Path != wanted.Path {
			have := info.Path
			if have == "" {
				have = "the pure-Go GEMM"
			}
			return info, fmt.Errorf("%w: %q requested, but %s was loaded first and stays", ErrLoaded, o.Path, have)
		}
		return info, nil
	}
	in := Info{CPU: CPUISA().String()}
	switch o.Path {
	case "go":
		in.Impl = "go"
	case "":
		var errs []string
		for _, name := range SystemNames {
			if err := open(name, &in); err != nil {
				errs = append(errs, err.Error())
				continue
			}
			break
		}
		if !haveLib {
			in.Impl = "go"
			in.Warning = fmt.Sprintf("no OpenBLAS found (%s): GEMMs run the pure-Go kernel, several times slower; install libopenblas0 or set MSTREAM_BLAS to a cblas library", strings.Join(errs, "; "))
		}
	default:
		if err := open(o.Path, &in); err != nil {
			return Info{}, err
		}
	}
	info, wanted = in, o
	loaded.Store(true)
	return info, nil
}

// open loads path, checks the core OpenBLAS picked against the CPU and
// reloads it with OPENBLAS_CORETYPE when the core is below the CPU's ISA.
func open(path string, in *Info) error {
	if err := dlopen(path); err != nil {
		return err
	}
	in.Path = path
	in.Impl = "cblas"
	in.Version = C.GoString(C.mstream_blas_config())
	in.Core = C.GoString(C.mstream_blas_corename())
	if in.Core == "" {
		in.Warning = fmt.Sprintf("%s is a cblas but not OpenBLAS (no openblas_get_corename): the CPU features it uses are not checked", path)
		haveLib = true
		return nil
	}
	in.Impl = "openblas"
	haveLib = true
	cpu := CPUISA()
	target := wantCore(in.Core, cpu)
	if target == "" {
		return nil
	}
	// OpenBLAS's own variable, read by its constructor: the user's value is
	// kept (and warned about); ours is set only across the reload.
	if user, ok := cenv.Getenv("OPENBLAS_CORETYPE"); ok {
		in.Warning = fmt.Sprintf("OPENBLAS_CORETYPE=%s picks core %s, below this CPU's %s (%s would use it)", user, in.Core, cpu, target)
		return nil
	}
	picked := in.Core
	stuck, err := reload(path, target)
	if err != nil {
		return err
	}
	in.Core = C.GoString(C.mstream_blas_corename())
	switch {
	case stuck:
		in.Warning = fmt.Sprintf("%s picked core %s, below this CPU's %s, and could not be reloaded with OPENBLAS_CORETYPE=%s (something else in the process keeps it loaded); set OPENBLAS_CORETYPE=%s before the process starts", path, picked, cpu, target, target)
	case wantCore(in.Core, cpu) != "":
		in.Warning = fmt.Sprintf("%s runs core %s, below this CPU's %s, even with OPENBLAS_CORETYPE=%s", path, in.Core, cpu, target)
	default:
		in.CoreSet, in.CorePicked = target, picked
	}
	return nil
}

// reload unloads path and loads it again with OPENBLAS_CORETYPE=target,
// restoring the environment after. stuck says the library never left the
// process (another handle holds it), so its constructor did not run again.
func reload(path, target string) (stuck bool, err error) {
	cp := C.CString(path)
	stuck = C.mstream_blas_close(cp) == 0
	C.free(unsafe.Pointer(cp))
	haveLib = false
	os.Setenv("OPENBLAS_CORETYPE", target)
	err = dlopen(path)
	os.Unsetenv("OPENBLAS_CORETYPE")
	if err != nil {
		return stuck, fmt.Errorf("%s: reloading with OPENBLAS_CORETYPE=%s: %w", path, target, err)
	}
	haveLib = true
	return stuck, nil
}

func dlopen(path string) error {
	p := C.CString(path)
	defer C.free(unsafe.Pointer(p))
	var buf [512]C.char
	if C.mstream_blas_open(p, &buf[0], C.int(len(buf))) == 0 {
		return fmt.Errorf("%s: %s", path, C.GoString(&buf[0]))
	}
	return nil
}

// Loaded returns the Info of the library in use, loading the default when
// nobody has.
func Loaded() Info {
	if !loaded.Load() {
		Load(Options{})
	}
	return info
}

// Available reports whether a cblas library (rather than the pure-Go GEMM)
// runs Sgemm and Dgemm.
func Available() bool {
	if !loaded.Load() {
		Load(Options{})
	}
	return haveLib
}

// Threads is OpenBLAS's thread count (openblas_get_num_threads); 0 for
// a library without one. Loaded, it is 1: the loading thread is held to
// one CPU across the dlopen (dl.c's open_one_cpu says why).
func Threads() int {
	if !Available() {
		return 0
	}
	return int(C.mstream_blas_get_threads())
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
	if k == 0 || !Available() {
		goGemm(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
		return
	}
	args := C.mstream_sgemm_args{ta: b2i(transA), tb: b2i(transB), m: C.int(m), n: C.int(n), k: C.int(k), alpha: C.float(alpha),
		a: (*C.float)(&a[0]), lda: C.int(lda), b: (*C.float)(&b[0]), ldb: C.int(ldb), beta: C.float(beta), c: (*C.float)(&c[0]), ldc: C.int(ldc)}
	ccall.Call(C.mstream_sgemm_call, unsafe.Pointer(&args), ccall.Flops(2*float64(m)*float64(n)*float64(k)))
}

// Parallel splits a loop over [0, n) into chunks worth about cost ns per
// index, each costing start ns to begin (kernels.Parallelizer, the
// session's intra-op pool). This package's loops pass 0: a chunk is the
// loop's next columns or blocks, each block's call already in its cost.
type Parallel interface {
	For(n int, cost, start float64, fn func(lo, hi int))
}

// gemmFlopsPerNs is about what one core's OpenBLAS SGEMM reaches (20-40
// GFLOP/s here, doc.go), for the pool to size its chunks.
const gemmFlopsPerNs = 20

// gemvFlopsPerNs is about what one core's GEMV of one row reaches: it
// reads B once, 4 bytes per 2 flops, at 15-30 GB/s from L3.
const gemvFlopsPerNs = 8

// wideBlock is the columns of C in one block of a split GEMM with more
// columns than rows.
const wideBlock = 256

// gemmBlock is the rows (or columns) of C in one block of a split GEMM.
const gemmBlock = 64

// SgemmOn is Sgemm with the work split over p: C in blocks of gemmBlock
// rows, or of columns when C has too few rows (a small batch), each an
// OpenBLAS call of its own (a GEMV for a single row), the pool running
// the blocks. The blocks
// depend on the shape alone, not on the pool's threads, so that a
// product is the same bits whatever pool or group computes it (OpenBLAS
// sums in an order that depends on the block's size). The session runs
// OpenBLAS on one thread (SetThreads(1)) and splits its GEMMs here, so
// that a GEMM's threads are the intra-op pool's, which concurrent Runs
// share, rather than OpenBLAS's own, which spin while they wait and,
// called from two Runs at once, contend for the same cores (issue 22: a
// second client thread lowered QPS).
func SgemmOn(p Parallel, transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	check(transA, transB, m, n, k, lda, ldb, ldc, len(a), len(b), len(c))
	// colBlocks splits C into blocks of w columns over the pool, each
	// block's OpenBLAS call packing its own part of B.
	colBlocks := func(w int) {
		p.For((n+w-1)/w, float64(2*w*m*k)/gemmFlopsPerNs, 0, func(lo, hi int) {
			for blk := lo; blk < hi; blk++ {
				c0, c1 := blk*w, min((blk+1)*w, n)
				off := c0
				if transB {
					off = c0 * ldb
				}
				Sgemm(transA, transB, m, c1-c0, k, alpha, a, lda, b[off:], ldb, beta, c[c0:], ldc)
			}
		})
	}
	switch {
	case m == 1 && k > 0 && !transB && (!transA || lda == 1):
		// One row (a batch of one) times a row-major B: package vec's
		// GEMV, which streams B row by row into a strip of C that stays
		// in L1. Each column sums in the same order whatever strip holds
		// it, so the pool may split the columns as it likes. Before,
		// each block of 64 columns was an OpenBLAS GEMV reading B's rows
		// 256 bytes at a time, strided: the MLP at B=1 spent 58% of its
		// CPU in it. BASE=<OpenBLAS GEMV build> MODELS=mlp BATCHES=1
		// ROUNDS=3 DUR=1 bench/cpu/vs_base.sh, load 9-10: CPU us per
		// request 479 -> 401 (one client), 394 -> 288 (two);
		// BenchmarkGemvRow alone is within its noise of OpenBLAS.
		if p == nil {
			vec.Gemv(a, k, b, ldb, n, alpha, beta, c)
			return
		}
		p.For(n, float64(2*k)/gemvFlopsPerNs, 0, func(lo, hi int) {
			vec.Gemv(a, k, b[lo:], ldb, hi-lo, alpha, beta, c[lo:hi])
		})
	case m == 1 && k > 0 && Available():
		// One row times a transposed B: a GEMV per block of columns.
		incx := 1
		if transA {
			incx = lda
		}
		row := func(c0, c1 int) {
			off := c0
			if transB {
				off = c0 * ldb
			}
			if !sgemv(transB, c1-c0, k, alpha, a, incx, b[off:], ldb, beta, c[c0:]) {
				Sgemm(transA, transB, 1, c1-c0, k, alpha, a, lda, b[off:], ldb, beta, c[c0:], ldc)
			}
		}
		if p == nil || n < 2*gemmBlock {
			row(0, n)
			return
		}
		p.For((n+gemmBlock-1)/gemmBlock, float64(2*gemmBlock*k)/gemmFlopsPerNs, 0, func(lo, hi int) {
			for blk := lo; blk < hi; blk++ {
				row(blk*gemmBlock, min((blk+1)*gemmBlock, n))
			}
		})
	case p == nil || k == 0 || m < 2*gemmBlock && n < 2*gemmBlock:
		Sgemm(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
	case m >= 2*gemmBlock && n > m && n >= 2*wideBlock:
		// More columns than rows (a layer's weights larger than its
		// activations): blocks of columns, so that each OpenBLAS call
		// packs its own part of B once and A is packed n/wideBlock
		// times, where row blocks would pack all of B m/gemmBlock times
		// (perf on mlp B=256: sgemm_itcopy 13% of the CPU). BASE=<row
		// blocks' build> MODELS="mlp keras_mlp" BATCHES=256 ROUNDS=3
		// bench/cpu/vs_base.sh, load 6: CPU us per request 16244 ->
		// 16089 and 17338 -> 16494 (mlp, 1 and 2 clients), 16855 ->
		// 15104 and 17602 -> 16032 (keras_mlp); TF 15463-16214.
		colBlocks(wideBlock)
	case m >= 2*gemmBlock:
		blocks := (m + gemmBlock - 1) / gemmBlock
		p.For(blocks, float64(2*gemmBlock*n*k)/gemmFlopsPerNs, 0, func(lo, hi int) {
			for blk := lo; blk < hi; blk++ {
				r0, r1 := blk*gemmBlock, min((blk+1)*gemmBlock, m)
				off := r0 * lda
				if transA {
					off = r0
				}
				ar := a[off:]
				Sgemm(transA, transB, r1-r0, n, k, alpha, ar, lda, b, ldb, beta, c[r0*ldc:], ldc)
			}
		})
	case n >= 2*wideBlock:
		// Few rows (a batch of 2-127) and many columns: blocks of
		// wideBlock columns. Each block's OpenBLAS call packs A again and
		// runs its own small-matrix setup, which at 64 columns cost a
		// third of the product (BenchmarkSgemmSmallM).
		colBlocks(wideBlock)
	default:
		colBlocks(gemmBlock)
	}
}

// sgemv is OpenBLAS's GEMV for one row of C: c[0:n] = alpha x op(B) +
// beta c, x the row of A (stride incx). It reports false when the library
// has no cblas_sgemv.
func sgemv(transB bool, n, k int, alpha float32, x []float32, incx int, b []float32, ldb int, beta float32, c []float32) bool {
	args := C.mstream_sgemm_args{tb: b2i(transB), n: C.int(n), k: C.int(k), alpha: C.float(alpha), a: (*C.float)(&x[0]), incx: C.int(incx),
		b: (*C.float)(&b[0]), ldb: C.int(ldb), beta: C.float(beta), c: (*C.float)(&c[0])}
	ccall.Call(C.mstream_sgemm_row_call, unsafe.Pointer(&args), ccall.Bytes(4*float64(n)*float64(k)))
	return args.ret != 0
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
	args := C.mstream_dgemm_args{ta: b2i(transA), tb: b2i(transB), m: C.int(m), n: C.int(n), k: C.int(k), alpha: C.double(alpha),
		a: (*C.double)(&a[0]), lda: C.int(lda), b: (*C.double)(&b[0]), ldb: C.int(ldb), beta: C.double(beta), c: (*C.double)(&c[0]), ldc: C.int(ldc)}
	ccall.Call(C.mstream_dgemm_call, unsafe.Pointer(&args), 2*ccall.Flops(2*float64(m)*float64(n)*float64(k)))
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

func corename() string { return C.GoString(C.mstream_blas_corename()) }
