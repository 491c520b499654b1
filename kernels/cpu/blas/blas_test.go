package blas

import (
	"fmt"
	"math"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// childLib is set in the child processes of TestEachLibrary: the library
// (Options.Path) that process loads. A library loads once per process, so
// each candidate gets its own.
const childLib = "MSTREAM_BLAS_TEST_CHILD"

// TestMain loads the library the environment names (MSTREAM_BLAS, as
// scripts/venv.sh exports it), or the child's, before any GEMM runs.
func TestMain(m *testing.M) {
	path, child := os.LookupEnv(childLib)
	if !child {
		path = os.Getenv("MSTREAM_BLAS")
	}
	if _, err := Load(Options{Path: path}); err != nil {
		fmt.Fprintln(os.Stderr, "blas test:", err)
		os.Exit(1)
	}
	os.Exit(m.Run())
}

// TestEachLibrary runs TestGemm and TestInfo once per candidate library:
// the system's sonames, MSTREAM_BLAS when set (the scipy-openblas32 wheel's
// library under scripts/venv.sh), and the pure-Go GEMM.
func TestEachLibrary(t *testing.T) {
	if _, child := os.LookupEnv(childLib); child {
		t.Skip("child process")
	}
	libs := append([]string{"", "go"}, venvLibs()...)
	for _, lib := range libs {
		cmd := exec.Command(os.Args[0], "-test.run=^(TestGemm|TestInfo)$", "-test.v")
		cmd.Env = append(os.Environ(), childLib+"="+lib)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Errorf("library %q: %v\n%s", lib, err, out)
			continue
		}
		for _, l := range strings.Split(string(out), "\n") {
			if strings.Contains(l, "BLAS:") {
				t.Logf("library %q: %s", lib, strings.TrimSpace(l))
			}
		}
	}
}

// TestInfo checks what Load reports against the library itself: an
// OpenBLAS whose core is below the CPU's ISA must have been reloaded with
// the right core or carry a warning.
func TestInfo(t *testing.T) {
	in := Loaded()
	t.Logf("%s", in)
	path, _ := os.LookupEnv(childLib)
	switch {
	case path == "go":
		if in.Impl != "go" || in.Warning != "" || Available() {
			t.Fatalf("MSTREAM_BLAS=go: %+v, available %v", in, Available())
		}
		return
	case in.Impl == "go":
		if in.Warning == "" {
			t.Fatalf("fell back to the pure-Go GEMM without a warning: %+v", in)
		}
		return
	}
	if !Available() || in.Path == "" || (path != "" && in.Path != path) {
		t.Fatalf("asked for %q, got %+v", path, in)
	}
	if in.Impl == "openblas" {
		if !strings.Contains(in.Version, "OpenBLAS") || in.Core == "" {
			t.Fatalf("OpenBLAS without version or core: %+v", in)
		}
		if wantCore(in.Core, CPUISA()) != "" && in.Warning == "" {
			t.Fatalf("core %s below CPU %s and no warning: %+v", in.Core, CPUISA(), in)
		}
		// Loaded on one thread (dl.c's open_one_cpu: no server thread
		// spins at start); SetThreads still starts the threads it asks
		// for, and the loading thread has its CPUs back.
		if n := Threads(); n != 1 {
			t.Fatalf("OpenBLAS loaded with %d threads, want 1", n)
		}
		if runtime.NumCPU() >= 2 {
			SetThreads(2)
			n := Threads()
			SetThreads(1)
			if n != 2 {
				t.Fatalf("SetThreads(2): OpenBLAS has %d threads", n)
			}
		}
	}
	if in.CPU != CPUISA().String() {
		t.Fatalf("cpu_isa %q, cpuid says %s", in.CPU, CPUISA())
	}
}

// TestReload loads OpenBLAS as a mis-detecting one would be (its oldest
// core, Prescott), checks that a user's OPENBLAS_CORETYPE is kept and
// warned about, then that reload switches the core. It runs in a child
// process: the library loads once per process.
func TestReload(t *testing.T) {
	if CPUISA() < ISAAVX {
		t.Skip("no AVX: Prescott is this CPU's core")
	}
	if _, child := os.LookupEnv(childLib); child {
		t.Skip("child process")
	}
	for _, lib := range append([]string{"libopenblas.so.0"}, venvLibs()...) {
		cmd := exec.Command(os.Args[0], "-test.run=^TestReload$", "-test.v")
		cmd.Env = append(os.Environ(), childLib+"=reload:"+lib, "OPENBLAS_CORETYPE=Prescott")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Errorf("%s: %v\n%s", lib, err, out)
			continue
		}
		t.Logf("%s", strings.TrimSpace(string(out)))
	}
}

func init() {
	// A reload child of TestReload does its work here, before TestMain
	// loads a library, and exits.
	path := os.Getenv(childLib)
	lib, ok := strings.CutPrefix(path, "reload:")
	if !ok {
		return
	}
	fail := func(f string, a ...any) { fmt.Fprintf(os.Stderr, f+"\n", a...); os.Exit(1) }
	in, err := Load(Options{Path: lib})
	if err != nil {
		fail("load %s: %v", lib, err)
	}
	if coreISA[strings.ToLower(in.Core)] != ISASSE || !strings.Contains(in.Warning, "OPENBLAS_CORETYPE=Prescott") || in.CoreSet != "" {
		fail("user's OPENBLAS_CORETYPE=Prescott: want an SSE core kept with a warning, got %+v", in)
	}
	os.Unsetenv("OPENBLAS_CORETYPE")
	target := coreFor[CPUISA()]
	stuck, err := reload(lib, target)
	if err != nil || stuck {
		fail("reload %s with %s: stuck %v, %v", lib, target, stuck, err)
	}
	if got := Loaded(); wantCore(corename(), CPUISA()) != "" || got.Path != lib {
		fail("after reload with OPENBLAS_CORETYPE=%s the core is %s", target, corename())
	}
	if _, set := os.LookupEnv("OPENBLAS_CORETYPE"); set {
		fail("reload left OPENBLAS_CORETYPE set")
	}
	c := make([]float32, 4)
	Sgemm(false, false, 2, 2, 2, 1, []float32{1, 2, 3, 4}, 2, []float32{5, 6, 7, 8}, 2, 0, c, 2)
	if c[0] != 19 || c[1] != 22 || c[2] != 43 || c[3] != 50 {
		fail("Sgemm after reload: %v", c)
	}
	fmt.Printf("reload %s: %s (OPENBLAS_CORETYPE=Prescott) -> %s\n", lib, in.Core, corename())
	os.Exit(0)
}

// venvLibs returns the libraries scripts/setup.sh installs into build/venv
// (the scipy-openblas32 wheel's), and MSTREAM_BLAS when it names another.
func venvLibs() []string {
	libs, _ := filepath.Glob("../../../build/venv/lib/python3*/site-packages/scipy_openblas32/lib/libscipy_openblas.so")
	if p := os.Getenv("MSTREAM_BLAS"); p != "" && p != "go" && !slices.Contains(libs, p) {
		libs = append(libs, p)
	}
	return libs
}

func TestWantCore(t *testing.T) {
	for _, c := range []struct {
		core string
		cpu  ISA
		want string
	}{
		{"Prescott", ISAAVX512, "SkylakeX"}, {"Nehalem", ISAAVX2, "Haswell"}, {"Haswell", ISAAVX512, "SkylakeX"},
		{"Zen", ISAAVX2, ""}, {"Haswell", ISAAVX2, ""}, {"SkylakeX", ISAAVX2, ""}, {"Prescott", ISASSE, ""},
		{"Sandybridge", ISAAVX, ""}, {"Core2", ISAAVX, "Sandybridge"}, {"SomeFutureCore", ISAAVX512, ""},
		{"COOPERLAKE", ISAAVX512, ""},
	} {
		if got := wantCore(c.core, c.cpu); got != c.want {
			t.Errorf("wantCore(%s, %s) = %q, want %q", c.core, c.cpu, got, c.want)
		}
	}
}

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
	for _, s := range [][3]int{{1, 1, 1}, {7, 5, 3}, {64, 64, 64}, {100, 3, 300}, {3, 200, 517}, {1, 130, 40}, {9, 7, 11}, {300, 20, 33}, {5, 450, 17}} {
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
					"SgemmOn": func() []float64 {
						// The pool in uneven chunks of 3 blocks; the
						// shapes below split by rows, by columns, or
						// not at all.
						c := make([]float32, m*n)
						SgemmOn(chunks(3), ta, tb, m, n, k, 1, a32, lda, b32, ldb, 0, c, n)
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

// TestSgemmOnSameBits: a split product is the same bits whatever the
// pool (the multi-stream tests compare groups with different intra-op
// pools bit for bit).
func TestSgemmOnSameBits(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	for _, s := range [][3]int{{16, 1024, 300}, {1, 700, 512}, {256, 96, 200}, {1, 300, 0}} {
		m, n, k := s[0], s[1], s[2]
		a, b := make([]float32, m*k), make([]float32, k*n)
		for i := range a {
			a[i] = float32(r.NormFloat64())
		}
		for i := range b {
			b[i] = float32(r.NormFloat64())
		}
		var first []float32
		for _, p := range []Parallel{chunks(1), chunks(2), chunks(1000)} {
			c := make([]float32, m*n)
			SgemmOn(p, false, false, m, n, k, 1, a, max(k, 1), b, n, 0, c, n)
			if first == nil {
				first = c
				continue
			}
			if !slices.Equal(c, first) {
				t.Fatalf("%v: the product depends on the pool's chunks", s)
			}
		}
	}
}

// chunks is a Parallel that runs every loop in chunks of at most n
// indices, in order, on the caller.
type chunks int

func (c chunks) For(n int, _, _ float64, fn func(lo, hi int)) {
	for lo := 0; lo < n; lo += int(c) {
		fn(lo, min(lo+int(c), n))
	}
}

// benchOperands returns A (m x k), B (k x n) and C (m x n) for a GEMM
// benchmark, A and B filled with small integers.
func benchOperands(m, k, n int) (a, b, c []float32) {
	a, b, c = make([]float32, m*k), make([]float32, k*n), make([]float32, m*n)
	for i := range a {
		a[i] = float32(i%7) - 3
	}
	for i := range b {
		b[i] = float32(i%5) - 2
	}
	return a, b, c
}

// BenchmarkSgemmSmallM: the blocks of columns SgemmOn cuts a product of
// 16 rows (a batch of 16) into, run one after the other on one thread,
// by block width; cpu-GFLOP/s is over the thread's own CPU time, which a
// loaded machine moves less than wall time. Measured at load 7 (three
// runs): 16x1024x1024 33 GFLOP/s at 64 columns, 53 at 256; 16x1024x512 32
// and 45; 16x512x1024 51 and 58; 16x512x256 32 and 41.
func BenchmarkSgemmSmallM(b *testing.B) {
	if !Available() {
		b.Skip("no cblas library")
	}
	SetThreads(1)
	for _, s := range [][3]int{{16, 1024, 1024}, {16, 1024, 512}, {16, 512, 1024}, {16, 512, 256}} {
		m, n, k := s[0], s[1], s[2]
		a, bb, c := benchOperands(m, k, n)
		for _, w := range []int{gemmBlock, wideBlock} {
			b.Run(fmt.Sprintf("%dx%dx%d/cols%d", m, n, k, w), func(b *testing.B) {
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
				cpu0 := threadCPU()
				for i := 0; i < b.N; i++ {
					for c0 := 0; c0 < n; c0 += w {
						Sgemm(false, false, m, min(w, n-c0), k, 1, a, k, bb[c0:], n, 0, c[c0:], n)
					}
				}
				b.ReportMetric(2*float64(m*n*k)*float64(b.N)/(threadCPU()-cpu0).Seconds()/1e9, "cpu-GFLOP/s")
			})
		}
	}
}

// threadCPU is the calling OS thread's user and system CPU time.
func threadCPU() time.Duration {
	var ru syscall.Rusage
	const rusageThread = 1 // RUSAGE_THREAD
	if syscall.Getrusage(rusageThread, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
