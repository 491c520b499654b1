package cuda

import (
	"bufio"
	"crypto/sha256"
	bin "encoding/binary"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"runtime/debug"
	"strings"
	"sync"
	"testing"

	cu "mstream/device/cuda"
	"mstream/graph"
	"mstream/kernels"
	"mstream/kernels/kerneltest"
	"mstream/resource"
	"mstream/status"
	"mstream/tensor"
)

// The emulator runs the CUDA programs on the CPU, so kernel numerics are
// checked on a machine without a GPU (MSTREAM_GPU_EMU=1; it needs clang
// and clang++). Each program is compiled as host C++ with a shim for
// CUDA's builtins: a launch runs the grid's blocks in turn and a block's
// threads as plain calls, or, when a kernel synchronises (__syncthreads,
// warp shuffles), as coroutines that meet at each barrier. One process
// per program serves launches over a pipe: the Go side sends the buffers
// a launch's pointer arguments reach (the dry run's tensors are host
// memory standing in for the device) and copies them back afterwards.
// Copies, memsets and GEMMs run in Go. TestEmuConformance runs the shared
// conformance suite on it, and check() compares with the CPU through it.
//
// It checks what the device would compute, not how fast, and not CUDA's
// memory model: races between threads are serialised away, so
// compute-sanitizer on a GPU remains the check for those.

const emuShim = `#include <cstdint>
#include <cstring>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <string>
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __shared__ static
struct dim3 { unsigned x, y, z; };
extern dim3 threadIdx, blockIdx, blockDim, gridDim;
struct EmuNeedSync {};
struct EmuWrap { const char *name; void (*f)(char *); };
void emu_barrier();
extern bool emu_co;
extern unsigned long long emu_slot[1024];
inline unsigned emu_tid() { return threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z); }
inline void __syncthreads() { if (!emu_co) throw EmuNeedSync{}; emu_barrier(); }
template <class T> T __shfl_xor_sync(unsigned, T v, int m, int = 32) {
	if (!emu_co) throw EmuNeedSync{};
	unsigned long long b = 0;
	memcpy(&b, &v, sizeof(T));
	emu_slot[emu_tid()] = b;
	emu_barrier();
	unsigned long long r = emu_slot[emu_tid() ^ (unsigned)m];
	emu_barrier();
	T out;
	memcpy(&out, &r, sizeof(T));
	return out;
}
// A block's threads run one at a time, so an atomic add is a plain one.
template <class T> T atomicAdd(T *p, T v) { T o = *p; *p = (T)(o + v); return o; }
template <class T> T atomicCAS(T *p, T cmp, T v) { T o = *p; if (o == cmp) *p = v; return o; }
template <class T> T atomicMin(T *p, T v) { T o = *p; if (v < o) *p = v; return o; }
inline float __fmul_rn(float a, float b) { return a * b; }
inline float __fadd_rn(float a, float b) { return a + b; }
inline float __fdiv_rn(float a, float b) { return a / b; }
inline float __uint_as_float(unsigned u) { float f; memcpy(&f, &u, 4); return f; }
inline unsigned __float_as_uint(float f) { unsigned u; memcpy(&u, &f, 4); return u; }
inline float __int_as_float(int u) { float f; memcpy(&f, &u, 4); return f; }
inline double __longlong_as_double(long long u) { double f; memcpy(&f, &u, 8); return f; }
inline long long __double_as_longlong(double f) { long long u; memcpy(&u, &f, 8); return u; }
inline float emu_h2f(unsigned short h) {
	unsigned s = (h >> 15) & 1, e = (h >> 10) & 0x1f, m = h & 0x3ff;
	float f;
	if (e == 0) f = ldexpf((float)m, -24);
	else if (e == 31) f = m ? NAN : INFINITY;
	else f = ldexpf((float)(m | 0x400), (int)e - 25);
	return s ? -f : f;
}
inline unsigned short emu_f2h(float f) {
	unsigned x; memcpy(&x, &f, 4);
	unsigned short sign = (unsigned short)((x >> 16) & 0x8000);
	if (f != f) return sign | 0x7e00;
	float a = fabsf(f);
	if (a >= 65520.0f) return sign | 0x7c00;
	if (a < 6.103515625e-05f) return sign | (unsigned short)rintf(a * 16777216.0f);
	int e;
	float mant = frexpf(a, &e);
	int E = e + 14;
	unsigned m = (unsigned)rintf((2 * mant - 1) * 1024.0f);
	if (m == 1024) { m = 0; E++; }
	if (E >= 31) return sign | 0x7c00;
	return sign | (unsigned short)(E << 10) | (unsigned short)m;
}
`

const emuRuntime = `
dim3 threadIdx, blockIdx, blockDim, gridDim;
bool emu_co;
unsigned long long emu_slot[1024];
extern EmuWrap emu_table[];
extern int emu_ntable;
static void (*cur_f)(char *);
static char *cur_blob;
// Coroutines: a minimal x86-64 stack switch (callee-saved registers and
// the stack pointer; no signal mask, unlike swapcontext, so a barrier
// costs nanoseconds).
extern "C" void emu_switch(void **save_sp, void *new_sp);
asm(R"(
.text
.globl emu_switch
emu_switch:
	pushq %rbp
	pushq %rbx
	pushq %r12
	pushq %r13
	pushq %r14
	pushq %r15
	movq %rsp, (%rdi)
	movq %rsi, %rsp
	popq %r15
	popq %r14
	popq %r13
	popq %r12
	popq %rbx
	popq %rbp
	ret
)");
struct Co { void *sp; bool done; dim3 tid; };
static void *sched_sp;
static Co *cur;
static std::vector<Co> emu_cos;
static std::vector<char> stacks;
static const size_t STACK = 256 << 10;
void emu_barrier() { emu_switch(&cur->sp, sched_sp); }
static void co_entry() {
	cur_f(cur_blob);
	cur->done = true;
	for (;;) emu_switch(&cur->sp, sched_sp);
}
static void run_block_co(unsigned nthreads) {
	emu_cos.assign(nthreads, Co());
	if (stacks.size() < nthreads * STACK) stacks.resize(nthreads * STACK);
	for (unsigned i = 0; i < nthreads; i++) {
		Co &c = emu_cos[i];
		// The first switch pops six registers and returns into co_entry
		// with the stack as a call leaves it (8 mod 16).
		uintptr_t top = ((uintptr_t)&stacks[(i + 1) * STACK]) & ~(uintptr_t)15;
		void **sp = (void **)(top - 8);
		*--sp = (void *)co_entry;
		for (int r = 0; r < 6; r++) *--sp = nullptr;
		c.sp = sp;
		c.done = false;
		c.tid = dim3{i % blockDim.x, (i / blockDim.x) % blockDim.y, i / (blockDim.x * blockDim.y)};
	}
	for (;;) {
		bool any = false;
		for (unsigned i = 0; i < nthreads; i++) {
			if (emu_cos[i].done) continue;
			any = true;
			cur = &emu_cos[i];
			threadIdx = emu_cos[i].tid;
			emu_switch(&sched_sp, emu_cos[i].sp);
		}
		if (!any) break;
	}
}
static void launch(void (*f)(char *), char *blob, dim3 g, dim3 b) {
	cur_f = f;
	cur_blob = blob;
	gridDim = g;
	blockDim = b;
	unsigned nt = b.x * b.y * b.z;
	emu_co = false;
	try {
		for (unsigned bz = 0; bz < g.z; bz++) for (unsigned by = 0; by < g.y; by++) for (unsigned bx = 0; bx < g.x; bx++) {
			blockIdx = dim3{bx, by, bz};
			for (unsigned i = 0; i < nt; i++) {
				threadIdx = dim3{i % b.x, (i / b.x) % b.y, i / (b.x * b.y)};
				f(blob);
			}
		}
		return;
	} catch (EmuNeedSync &) {
	}
	emu_co = true;
	for (unsigned bz = 0; bz < g.z; bz++) for (unsigned by = 0; by < g.y; by++) for (unsigned bx = 0; bx < g.x; bx++) {
		blockIdx = dim3{bx, by, bz};
		run_block_co(nt);
	}
}
static bool rd(void *p, size_t n) { return fread(p, 1, n, stdin) == n; }
static unsigned rd32() { unsigned v = 0; if (!rd(&v, 4)) exit(0); return v; }
static unsigned long long rd64() { unsigned long long v = 0; if (!rd(&v, 8)) exit(0); return v; }
int main() {
	for (;;) {
		unsigned nl = rd32();
		std::string name(nl, 0);
		rd(&name[0], nl);
		dim3 g{rd32(), rd32(), rd32()}, b{rd32(), rd32(), rd32()};
		rd32(); // shared memory bytes
		unsigned nbuf = rd32();
		std::vector<std::vector<char>> bufs(nbuf);
		for (auto &v : bufs) { v.resize(rd64() + 16); rd(v.data(), v.size() - 16); }
		std::vector<char> blob(rd32() + 8);
		rd(blob.data(), blob.size() - 8);
		unsigned nfix = rd32();
		for (unsigned i = 0; i < nfix; i++) {
			unsigned off = rd32(), bi = rd32();
			unsigned long long bo = rd64();
			char *p = bufs[bi].data() + bo;
			memcpy(&blob[off], &p, 8);
		}
		void (*f)(char *) = nullptr;
		for (int i = 0; i < emu_ntable; i++) if (name == emu_table[i].name) f = emu_table[i].f;
		if (!f) {
			std::string msg = "no kernel " + name;
			unsigned n = msg.size();
			fwrite(&n, 4, 1, stdout);
			fwrite(msg.data(), 1, n, stdout);
			fflush(stdout);
			continue;
		}
		launch(f, blob.data(), g, b);
		unsigned ok = 0;
		fwrite(&ok, 4, 1, stdout);
		for (auto &v : bufs) fwrite(v.data(), 1, v.size() - 16, stdout);
		fflush(stdout);
	}
}
`

// emuProc is one program's emulator process.
type emuProc struct {
	cmd *exec.Cmd
	w   *bufio.Writer
	r   *bufio.Reader
	sig map[string][]kparam
}

// emuBuf is a host buffer standing in for device memory.
type emuBuf struct {
	base uint64
	b    []byte
}

type emulator struct {
	mu    sync.Mutex
	procs map[*cu.Program]*emuProc
	bufs  []emuBuf
	err   error // a launch failure, reported by the caller
}

var (
	emuOnce sync.Once
	emuV    *emulator
	emuErr  error
)

// getEmu builds (or reuses, by source hash) and starts the emulators.
func getEmu() (*emulator, error) {
	emuOnce.Do(func() { emuV, emuErr = buildEmu() })
	return emuV, emuErr
}

func buildEmu() (*emulator, error) {
	clang, err := exec.LookPath("clang")
	if err != nil {
		return nil, err
	}
	cxx, err := exec.LookPath("clang++")
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "mstream-emu")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	os.MkdirAll(filepath.Join(dir, "inc", "crt"), 0o755)
	os.WriteFile(filepath.Join(dir, "inc", "crt", "sm_70_rt.hpp"), nil, 0o644)
	os.WriteFile(filepath.Join(dir, "shim.h"), []byte(clangShim), 0o644)
	cache := filepath.Join(os.TempDir(), "mstream-emu-cache")
	os.MkdirAll(cache, 0o755)
	e := &emulator{procs: map[*cu.Program]*emuProc{}}
	type built struct {
		p   *cu.Program
		bin string
		sig map[string][]kparam
		err error
	}
	var wg sync.WaitGroup
	res := make([]built, len(Programs()))
	for i, p := range Programs() {
		sig, err := programKernels(clang, dir, p)
		if err != nil {
			return nil, err
		}
		src := emuSource(p, sig)
		h := sha256.Sum256([]byte(src))
		bin := filepath.Join(cache, fmt.Sprintf("%s-%x", p.Name, h[:8]))
		res[i] = built{p: p, bin: bin, sig: sig}
		if _, err := os.Stat(bin); err == nil {
			continue
		}
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			cpp := bin + ".cpp"
			if err := os.WriteFile(cpp, []byte(src), 0o644); err != nil {
				res[i].err = err
				return
			}
			out, err := exec.Command(cxx, "-O1", "-std=c++17", "-w", "-o", bin+".tmp", cpp).CombinedOutput()
			if err != nil {
				res[i].err = fmt.Errorf("%s: clang++: %v\n%s", res[i].p.Name, err, out)
				return
			}
			res[i].err = os.Rename(bin+".tmp", bin)
		}(i)
	}
	wg.Wait()
	for _, b := range res {
		if b.err != nil {
			return nil, b.err
		}
		cmd := exec.Command(b.bin)
		w, _ := cmd.StdinPipe()
		r, _ := cmd.StdoutPipe()
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			return nil, err
		}
		e.procs[b.p] = &emuProc{cmd: cmd, w: bufio.NewWriterSize(w, 1<<20), r: bufio.NewReaderSize(r, 1<<20), sig: b.sig}
	}
	return e, nil
}

// emuSource is a program as host C++: the shim, the source with its PTX
// half conversions replaced, a wrapper per kernel that unpacks the packed
// argument buffer, the wrapper table and the runtime.
func emuSource(p *cu.Program, sig map[string][]kparam) string {
	src := p.Source
	src = strings.ReplaceAll(src, `asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));`, `f = emu_h2f(h);`)
	src = strings.ReplaceAll(src, `asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f));`, `h = emu_f2h(f);`)
	var b strings.Builder
	b.WriteString(emuShim)
	b.WriteString(src)
	b.WriteString("\n")
	var names []string
	for name, ps := range sig {
		names = append(names, name)
		fmt.Fprintf(&b, "static void w_%s(char *a) { %s(", name, name)
		off := 0
		for i, p := range ps {
			off = (off + p.align - 1) &^ (p.align - 1)
			if i > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "*(%s *)(a + %d)", p.ty, off)
			off += p.size
		}
		b.WriteString("); }\n")
	}
	b.WriteString("EmuWrap emu_table[] = {\n")
	for _, n := range names {
		fmt.Fprintf(&b, "\t{\"%s\", w_%s},\n", n, n)
	}
	fmt.Fprintf(&b, "};\nint emu_ntable = %d;\n", len(names))
	b.WriteString(emuRuntime)
	return b.String()
}

func (e *emulator) register(t *tensor.Tensor) {
	if len(t.Buf) > 0 {
		e.bufs = append(e.bufs, emuBuf{cu.Ptr(t.Buf), t.Buf})
	}
}

// find maps a stand-in device address to its buffer and offset.
func (e *emulator) find(addr uint64) (int, uint64, bool) {
	for i := len(e.bufs) - 1; i >= 0; i-- {
		b := e.bufs[i]
		if addr >= b.base && addr <= b.base+uint64(len(b.b)) {
			return i, addr - b.base, true
		}
	}
	return 0, 0, false
}

func (e *emulator) launch(p *cu.Program, name string, grid, block cu.Dim3, shmem int, a *cu.Args) error {
	pr := e.procs[p]
	ps, ok := pr.sig[name]
	if !ok {
		return fmt.Errorf("emulator: no kernel %s in %s", name, p.Name)
	}
	v := reflect.ValueOf(a).Elem()
	used := int(v.FieldByName("used").Int())
	raw := v.FieldByName("buf")
	blob := make([]byte, used)
	for i := range blob {
		blob[i] = byte(raw.Index(i).Uint())
	}
	type fix struct {
		off, buf int
		boff     uint64
	}
	var fixes []fix
	var sent []int
	idx := map[int]int{}
	off := 0
	for _, q := range ps {
		off = (off + q.align - 1) &^ (q.align - 1)
		for j := 0; j < q.ptrs; j++ {
			at := off + 8*j
			addr := bin.LittleEndian.Uint64(blob[at:])
			if addr == 0 {
				continue
			}
			bi, bo, ok := e.find(addr)
			if !ok {
				return fmt.Errorf("emulator: %s: pointer argument at byte %d (%#x) is in no known buffer", name, at, addr)
			}
			k, seen := idx[bi]
			if !seen {
				k = len(sent)
				idx[bi] = k
				sent = append(sent, bi)
			}
			fixes = append(fixes, fix{at, k, bo})
		}
		off += q.size
	}
	w := pr.w
	put32 := func(x uint32) { bin.Write(w, bin.LittleEndian, x) }
	put32(uint32(len(name)))
	w.WriteString(name)
	for _, x := range []uint32{grid.X, grid.Y, grid.Z, block.X, block.Y, block.Z, uint32(shmem), uint32(len(sent))} {
		put32(x)
	}
	for _, bi := range sent {
		bin.Write(w, bin.LittleEndian, uint64(len(e.bufs[bi].b)))
		w.Write(e.bufs[bi].b)
	}
	put32(uint32(len(blob)))
	w.Write(blob)
	put32(uint32(len(fixes)))
	for _, f := range fixes {
		put32(uint32(f.off))
		put32(uint32(f.buf))
		bin.Write(w, bin.LittleEndian, f.boff)
	}
	if err := w.Flush(); err != nil {
		return err
	}
	var st uint32
	if err := bin.Read(pr.r, bin.LittleEndian, &st); err != nil {
		return fmt.Errorf("emulator %s: %v", p.Name, err)
	}
	if st != 0 {
		msg := make([]byte, st)
		io.ReadFull(pr.r, msg)
		return fmt.Errorf("emulator: %s", msg)
	}
	for _, bi := range sent {
		if _, err := io.ReadFull(pr.r, e.bufs[bi].b); err != nil {
			return fmt.Errorf("emulator %s: %v", p.Name, err)
		}
	}
	return nil
}

func (e *emulator) copy(dst, src, n uint64) {
	di, do, ok1 := e.find(dst)
	si, so, ok2 := e.find(src)
	if !ok1 || !ok2 {
		e.err = fmt.Errorf("emulator: copy between unknown buffers")
		return
	}
	copy(e.bufs[di].b[do:do+n], e.bufs[si].b[so:so+n])
}

func (e *emulator) copyIn(dst uint64, src []byte) {
	di, do, ok := e.find(dst)
	if !ok {
		e.err = fmt.Errorf("emulator: copy into an unknown buffer")
		return
	}
	copy(e.bufs[di].b[do:], src)
}

func (e *emulator) readback(dst []byte, src uint64) {
	si, so, ok := e.find(src)
	if !ok {
		e.err = fmt.Errorf("emulator: readback of an unknown buffer")
		return
	}
	copy(dst, e.bufs[si].b[so:so+uint64(len(dst))])
}

func (e *emulator) fill(dst uint64, v byte, n int) {
	di, do, ok := e.find(dst)
	if !ok {
		e.err = fmt.Errorf("emulator: memset of an unknown buffer")
		return
	}
	for i := range e.bufs[di].b[do : do+uint64(n)] {
		e.bufs[di].b[do+uint64(i)] = v
	}
}

// gemm is cuBLAS's row-major product as the kernels ask for it, in
// float64 (TF32 is not emulated).
func (e *emulator) gemm(g cu.GemmArgs) {
	dt := tensor.Float
	if g.Double {
		dt = tensor.Double
	}
	e.gemmOf(g, dt)
}

// gemmEx is gemm of half or bfloat16 operands, rounded once when stored.
func (e *emulator) gemmEx(g cu.GemmArgs, t cu.GemmType) {
	dt := tensor.Half
	if t == cu.GemmBfloat16 {
		dt = tensor.Bfloat16
	}
	e.gemmOf(g, dt)
}

func (e *emulator) gemmOf(g cu.GemmArgs, dt tensor.DType) {
	es := uint64(dt.Size())
	get := func(addr uint64) (func(i int64) float64, func(i int64, v float64)) {
		bi, bo, ok := e.find(addr)
		if !ok {
			e.err = fmt.Errorf("emulator: GEMM operand in no known buffer")
			return func(int64) float64 { return 0 }, func(int64, float64) {}
		}
		b := e.bufs[bi].b[bo:]
		switch dt {
		case tensor.Double:
			return func(i int64) float64 { return math.Float64frombits(bin.LittleEndian.Uint64(b[uint64(i)*es:])) },
				func(i int64, v float64) { bin.LittleEndian.PutUint64(b[uint64(i)*es:], math.Float64bits(v)) }
		case tensor.Half:
			return func(i int64) float64 { return float64(tensor.HalfToF32(bin.LittleEndian.Uint16(b[uint64(i)*es:]))) },
				func(i int64, v float64) { bin.LittleEndian.PutUint16(b[uint64(i)*es:], tensor.F32ToHalf(float32(v))) }
		case tensor.Bfloat16:
			return func(i int64) float64 { return float64(tensor.Bfloat16ToF32(bin.LittleEndian.Uint16(b[uint64(i)*es:]))) },
				func(i int64, v float64) {
					bin.LittleEndian.PutUint16(b[uint64(i)*es:], tensor.F32ToBfloat16(float32(v)))
				}
		}
		return func(i int64) float64 { return float64(math.Float32frombits(bin.LittleEndian.Uint32(b[uint64(i)*es:]))) },
			func(i int64, v float64) { bin.LittleEndian.PutUint32(b[uint64(i)*es:], math.Float32bits(float32(v))) }
	}
	batch := max(g.Batch, 1)
	ra, _ := get(g.A)
	rb, _ := get(g.B)
	_, wc := get(g.C)
	m, n, k := int64(g.M), int64(g.N), int64(g.K)
	for bt := int64(0); bt < int64(batch); bt++ {
		for i := int64(0); i < m; i++ {
			for j := int64(0); j < n; j++ {
				s := 0.0
				for l := int64(0); l < k; l++ {
					ai, bj := i*k+l, l*n+j
					if g.TransA {
						ai = l*m + i
					}
					if g.TransB {
						bj = j*k + l
					}
					s += ra(bt*g.StrideA+ai) * rb(bt*g.StrideB+bj)
				}
				wc(bt*g.StrideC+i*n+j, s)
			}
		}
	}
}

// errDirect: the kernel calls the device itself (see streamCall), or its
// factory refused the node as unimplemented (placement runs it on the CPU).
var errDirect = fmt.Errorf("kernel calls the CUDA stream directly")

// emuRun runs n's GPU kernel on the emulator: host tensors stand in for
// device memory. It returns the kernel's outputs (or its error).
func emuRun(n *graph.Node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	return emuRunState(n, in, nil)
}

// emuState is the resources one stateful case's calls share: variables'
// device values are host tensors the emulator keeps registered.
type emuState struct {
	rm   *resource.Manager
	kept map[*tensor.Tensor]bool
}

// Owner implements kernels.Persist.
func (s *emuState) Owner() any { return s }

// Keep implements kernels.Persist.
func (s *emuState) Keep(dt tensor.DType, shape tensor.Shape) (*tensor.Tensor, func(), error) {
	t := tensor.New(dt, shape)
	for i := range t.Buf {
		t.Buf[i] = 0xff
	}
	s.kept[t] = true
	emuV.register(t)
	return t, func() { delete(s.kept, t) }, nil
}

// emuGEMMMode is the emulated device's MSTREAM_GPU_SMALL_GEMM (auto
// unless TestEmuSmallGEMM forces it), read under the emulator's lock.
var emuGEMMMode cu.SmallGEMM

// emuRunState is emuRun with a stateful kernel bound to st's resources
// (nil: none).
func emuRunState(n *graph.Node, in []*tensor.Tensor, st *emuState) ([]*tensor.Tensor, error) {
	e, err := getEmu()
	if err != nil {
		return nil, err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	def, err := kernels.Lookup(n, kernels.GPU)
	if err != nil {
		return nil, err
	}
	k, err := def.Factory(n)
	if status.CodeOf(err) == status.Unimplemented {
		return nil, errDirect // placement's fallback: run on the CPU
	}
	if err != nil {
		return nil, err
	}
	if st != nil {
		if k, err = bound(n, k, st.rm); err != nil {
			return nil, err
		}
	}
	e.bufs, e.err = nil, nil
	if st != nil {
		for t := range st.kept {
			e.register(t)
		}
	}
	ins := make([]*tensor.Tensor, len(in))
	for i, t := range in {
		c := t.Clone() // kernels must not write their inputs; the emulator would
		ins[i] = c
		e.register(c)
	}
	var launchErr error
	dryRun = &dryDevice{
		launch: func(p *cu.Program, name string, grid, block cu.Dim3, shmem int, a *cu.Args) error {
			if err := e.launch(p, name, grid, block, shmem, a); err != nil {
				launchErr = err
				return err
			}
			return nil
		},
		copy: e.copy, fill: e.fill, gemm: e.gemm, gemmEx: e.gemmEx, readback: e.readback, copyIn: e.copyIn,
		smallGEMM: emuGEMMMode,
	}
	defer func() { dryRun = nil }()
	var stream *cu.Stream
	ctx := &kernels.Context{Node: n, Inputs: ins, Outputs: make([]*tensor.Tensor, len(n.OutTypes)), Stream: stream,
		Alloc: func(dt tensor.DType, s tensor.Shape) (*tensor.Tensor, error) {
			t := tensor.New(dt, s)
			for i := range t.Buf {
				t.Buf[i] = 0xff // poisoned, as the GPU tests' buffers
			}
			e.register(t)
			return t, nil
		}}
	if st != nil {
		ctx.Persist = st
	}
	direct := false
	cerr := func() (err error) {
		defer func() {
			if r := recover(); r != nil {
				st := debug.Stack()
				if streamCall(st) {
					direct = true
					return
				}
				err = status.Errorf(status.Internal, "panic: %v\n%s", r, st)
			}
		}()
		return k.Compute(ctx)
	}()
	if direct {
		return nil, errDirect
	}
	if launchErr != nil {
		return nil, status.Errorf(status.Internal, "%s: %v", n.Op, launchErr)
	}
	if e.err != nil {
		return nil, status.Errorf(status.Internal, "%s: %v", n.Op, e.err)
	}
	if cerr != nil {
		return nil, cerr
	}
	for i, o := range ctx.Outputs {
		if o == nil {
			return nil, fmt.Errorf("output %d not set", i)
		}
		ctx.Outputs[i] = o.Clone()
	}
	return ctx.Outputs, nil
}

// emuCheck is check on the emulator (MSTREAM_GPU_EMU=1).
func emuCheck(t *testing.T, n *graph.Node, in []*tensor.Tensor, tol float64) {
	t.Helper()
	if _, err := getEmu(); err != nil {
		t.Skipf("emulator: %v", err)
	}
	if needsDevice[n.Op] {
		return // cuBLAS, not emulated
	}
	want, werr := cpuRun(n, in, nil)
	got, gerr := emuRun(n, in)
	if gerr == errDirect {
		return // not emulated
	}
	desc := fmt.Sprintf("%s(%s)", n.Op, shapes(in))
	if werr != nil || gerr != nil {
		if werr == nil || gerr == nil || status.CodeOf(werr) != status.CodeOf(gerr) {
			t.Errorf("%s: CPU error %v, emulated GPU error %v", desc, werr, gerr)
		}
		return
	}
	opsMu.Lock()
	opsRun[n.Op]++
	opsMu.Unlock()
	compare(t, desc, got, want, tol)
}

type emuRunner struct {
	fallback map[string]int
	st       *emuState // a stateful case's resources (Fresh)
}

func (emuRunner) Device() string { return kernels.GPU }

// Fresh gives a runner whose calls share new resources, as the nodes of
// one session do: GPU kernels keep variables in emulated device memory,
// host kernels (the fallback) read and write the same variables.
func (r emuRunner) Fresh() kerneltest.Runner {
	return emuRunner{fallback: r.fallback, st: &emuState{rm: resource.NewManager(), kept: map[*tensor.Tensor]bool{}}}
}

func (r emuRunner) Run(n *graph.Node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	if _, err := kernels.Lookup(n, kernels.GPU); err != nil || needsDevice[n.Op] {
		r.fallback[n.Op]++
		return r.cpuRun(n, in)
	}
	out, err := emuRunState(n, in, r.st)
	if err == errDirect {
		r.fallback[n.Op]++
		return r.cpuRun(n, in)
	}
	return out, err
}

// cpuRun is the CPU kernel, bound to the runner's resources when it has
// some.
func (r emuRunner) cpuRun(n *graph.Node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	if r.st == nil {
		return cpuRun(n, in, nil)
	}
	return cpuRunBound(n, in, r.st.rm)
}

// TestEmuConformance runs the shared conformance suite on the emulated
// GPU kernels (MSTREAM_GPU_EMU=1), with TestConformance's exclusions and
// cuBLAS ops on the CPU.
func TestEmuConformance(t *testing.T) {
	if os.Getenv("MSTREAM_GPU_EMU") != "1" {
		t.Skip("set MSTREAM_GPU_EMU=1 to run the GPU kernels on the CPU emulator")
	}
	if _, err := getEmu(); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	// KERNELTEST_ONLY (a comma list) narrows the run while working on some ops.
	narrow := map[string]bool{}
	if s := os.Getenv("KERNELTEST_ONLY"); s != "" {
		for _, op := range strings.Split(s, ",") {
			narrow[op] = true
		}
	}
	var only []string
	for _, key := range kernels.Registered() {
		op, dev, _ := strings.Cut(key, "/")
		if dev != kernels.GPU || op == "GatherV2" || op == "GatherNd" || seen[op] || needsDevice[op] {
			continue
		}
		seen[op] = true
		for _, o := range kerneltest.Ops() {
			if o == op && (len(narrow) == 0 || narrow[op]) {
				only = append(only, op)
			}
		}
	}
	r := emuRunner{fallback: map[string]int{}}
	kerneltest.Run(t, r, kerneltest.Options{Only: only})
	t.Logf("ops run: %d; cases on the CPU for want of a GPU dtype: %v", len(only), r.fallback)
}

// TestEmuSmallGEMM runs the GEMM ops' conformance cases on the emulator
// with MSTREAM_GPU_SMALL_GEMM forced each way: 1 sends every float, half
// and bfloat16 product through gemm.cu's small-batch kernel, 0 none (the
// GEMM is then the emulator's, the epilogue gemm.cu's bias_act).
// TestEmuConformance covers auto.
func TestEmuSmallGEMM(t *testing.T) {
	if os.Getenv("MSTREAM_GPU_EMU") != "1" {
		t.Skip("set MSTREAM_GPU_EMU=1 to run the GPU kernels on the CPU emulator")
	}
	e, err := getEmu()
	if err != nil {
		t.Fatal(err)
	}
	ops := []string{"MatMul", "_FusedMatMul", "BatchMatMulV2", "BatchMatMulV3"}
	for _, mode := range []cu.SmallGEMM{cu.SmallGEMMForce, cu.SmallGEMMOff} {
		t.Run(fmt.Sprintf("mode%d", mode), func(t *testing.T) {
			e.mu.Lock()
			emuGEMMMode = mode
			e.mu.Unlock()
			defer func() {
				e.mu.Lock()
				emuGEMMMode = cu.SmallGEMMAuto
				e.mu.Unlock()
			}()
			kerneltest.Run(t, emuRunner{fallback: map[string]int{}}, kerneltest.Options{Only: ops})
		})
	}
}
