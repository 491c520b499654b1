package cuda

/*
#include <stdlib.h>
#include <string.h>
#include "shim.h"
*/
import "C"

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math"
	"math/bits"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"

	"mstream/status"
)

// Program is CUDA C source compiled by NVRTC at first use, once per
// architecture, and loaded once per context. Its kernels are extern "C"
// __global__ functions, found by name.
type Program struct {
	// Name appears in errors and as the NVRTC program name ("elementwise.cu").
	Name string
	// Source is the CUDA C text. It must include no headers.
	Source string
}

// Cache configuration. CacheDir is where compiled images are kept
// (MSTREAM_CACHE_DIR, else $XDG_CACHE_HOME/mstream, else ~/.cache/mstream);
// empty disables the disk cache.
var (
	cacheMu  sync.Mutex
	cacheDir = defaultCacheDir()
)

func defaultCacheDir() string {
	if d := os.Getenv("MSTREAM_CACHE_DIR"); d != "" {
		return d
	}
	if d, err := os.UserCacheDir(); err == nil {
		return filepath.Join(d, "mstream")
	}
	return ""
}

// SetCacheDir sets the folder for compiled kernels ("" turns the disk cache
// off). The session calls it with its configuration before the first run.
func SetCacheDir(dir string) {
	cacheMu.Lock()
	cacheDir = dir
	cacheMu.Unlock()
}

// CacheDir returns the folder for compiled kernels.
func CacheDir() string {
	cacheMu.Lock()
	defer cacheMu.Unlock()
	return cacheDir
}

// images holds compiled images per (program, arch) for the process, so a
// second context of the same device does not compile again.
var images struct {
	mu sync.Mutex
	m  map[imageKey]*imageEntry
}

type imageKey struct {
	p    *Program
	arch int
}

type imageEntry struct {
	once  sync.Once
	image []byte
	err   error
}

// CompileStats count what Module did, for tests and the log.
var CompileStats struct {
	mu                        sync.Mutex
	Compiles, DiskHits, Loads int
}

func countStat(f func()) { CompileStats.mu.Lock(); f(); CompileStats.mu.Unlock() }

// Module is a loaded program in one context.
type Module struct {
	ctx   *Context
	m     C.CUmodule
	prog  *Program
	mu    sync.Mutex
	funcs map[string]*Function
}

// Function is one kernel of a module.
type Function struct {
	mod  *Module
	f    C.CUfunction
	name string
}

// Name is the kernel's name.
func (f *Function) Name() string { return f.name }

// moduleSlot is where one program's module of a context is loaded: its
// own lock, so loading one program (a compile or a disk read, then
// cuModuleLoadData: milliseconds) keeps waiting only the callers that need
// that program, not lookups of kernels of programs already loaded.
type moduleSlot struct {
	mu  sync.Mutex
	mod atomic.Pointer[Module]
}

// Module compiles (or finds in the caches) and loads p in this context. A
// failed load is not remembered: the next call tries again.
func (c *Context) Module(p *Program) (*Module, error) {
	c.modMu.Lock()
	e := c.modules[p]
	if e == nil {
		e = &moduleSlot{}
		c.modules[p] = e
	}
	c.modMu.Unlock()
	if m := e.mod.Load(); m != nil {
		return m, nil
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if m := e.mod.Load(); m != nil {
		return m, nil
	}
	img, err := c.dev.lib.image(p, c.dev.Arch())
	if err != nil {
		return nil, err
	}
	m := &Module{ctx: c, prog: p, funcs: map[string]*Function{}}
	cimg := C.CBytes(append(img, 0)) // PTX must be NUL-terminated; a cubin ignores the extra byte
	defer C.free(cimg)
	if err := c.check("cuModuleLoadData", C.ms_module_load(c.dev.lib.l, c.c, &m.m, cimg)); err != nil {
		return nil, status.Wrap(err, "loading %s for sm_%d", p.Name, c.dev.Arch())
	}
	countStat(func() { CompileStats.Loads++ })
	e.mod.Store(m)
	return m, nil
}

// funcKey names a kernel of a program.
type funcKey struct {
	p    *Program
	name string
}

// Function returns kernel name of program p in this context, loading the
// module the first time. After the first call for a kernel it costs one
// map read: no lock, and no allocation (name does not escape, so a
// caller's name built by concatenation can stay on its stack).
func (c *Context) Function(p *Program, name string) (*Function, error) {
	if m := c.funcs.Load(); m != nil {
		if f := (*m)[funcKey{p, name}]; f != nil {
			return f, nil
		}
	}
	return c.addFunction(p, strings.Clone(name))
}

// addFunction looks a kernel up and publishes a new map holding it.
func (c *Context) addFunction(p *Program, name string) (*Function, error) {
	mod, err := c.Module(p)
	if err != nil {
		return nil, err
	}
	f, err := mod.Function(name)
	if err != nil {
		return nil, err
	}
	c.funcMu.Lock()
	defer c.funcMu.Unlock()
	var old map[funcKey]*Function
	if m := c.funcs.Load(); m != nil {
		old = *m
	}
	m := make(map[funcKey]*Function, len(old)+1)
	for k, v := range old {
		m[k] = v
	}
	m[funcKey{p, name}] = f
	c.funcs.Store(&m)
	return f, nil
}

// Function looks a kernel up by name, once.
func (m *Module) Function(name string) (*Function, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if f := m.funcs[name]; f != nil {
		return f, nil
	}
	f := &Function{mod: m, name: name}
	cname := C.CString(name)
	defer C.free(unsafe.Pointer(cname))
	if err := m.ctx.check("cuModuleGetFunction", C.ms_module_function(m.ctx.dev.lib.l, m.ctx.c, &f.f, m.m, cname)); err != nil {
		return nil, status.Wrap(err, "kernel %s in %s", name, m.prog.Name)
	}
	m.funcs[name] = f
	return f, nil
}

// image returns p compiled for arch: from memory, from the disk cache, or
// from NVRTC (then stored in both).
func (lib *Lib) image(p *Program, arch int) ([]byte, error) {
	if lib.NVRTCPath == "" {
		return nil, status.Errorf(status.FailedPrecondition, "cuda: NVRTC was not loaded; cannot compile %s", p.Name)
	}
	images.mu.Lock()
	if images.m == nil {
		images.m = map[imageKey]*imageEntry{}
	}
	e := images.m[imageKey{p, arch}]
	if e == nil {
		e = &imageEntry{}
		images.m[imageKey{p, arch}] = e
	}
	images.mu.Unlock()
	e.once.Do(func() { e.image, e.err = lib.compileCached(p, arch) })
	return e.image, e.err
}

// target picks what NVRTC builds: a cubin for the device's own sm when
// NVRTC supports it, else PTX for the newest virtual arch it supports
// that the device can run (the driver finishes it).
func (lib *Lib) target(arch int) (opt string, ptx bool) {
	var archs [64]C.int
	n := int(C.ms_nvrtc_archs(lib.l, &archs[0], C.int(len(archs))))
	if n < 0 || !lib.hasCubin() {
		return fmt.Sprintf("--gpu-architecture=compute_%d", arch), true
	}
	best := 0
	for _, a := range archs[:n] {
		if int(a) == arch {
			return fmt.Sprintf("--gpu-architecture=sm_%d", arch), false
		}
		if int(a) < arch && int(a) > best {
			best = int(a)
		}
	}
	if best == 0 {
		best = arch
	}
	return fmt.Sprintf("--gpu-architecture=compute_%d", best), true
}

func (lib *Lib) hasCubin() bool { return lib.l.nvrtcGetCUBIN != nil && lib.l.nvrtcGetCUBINSize != nil }

// CacheKey is the disk-cache key of p for arch: a hash of the source, the
// target, the NVRTC version and the options.
func (lib *Lib) CacheKey(p *Program, arch int) string {
	opt, ptx := lib.target(arch)
	h := sha256.New()
	fmt.Fprintf(h, "mstream-nvrtc-1\x00%s\x00%d\x00%s\x00%v\x00", opt, lib.NVRTCVersion, "--std=c++17", ptx)
	h.Write([]byte(p.Source))
	return fmt.Sprintf("%s-sm%d-%s", sanitize(p.Name), arch, hex.EncodeToString(h.Sum(nil))[:32])
}

func sanitize(s string) string {
	b := []byte(s)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			b[i] = '_'
		}
	}
	return string(b)
}

func (lib *Lib) compileCached(p *Program, arch int) ([]byte, error) {
	dir := CacheDir()
	var path string
	if dir != "" {
		path = filepath.Join(dir, lib.CacheKey(p, arch)+".bin")
		if b, err := os.ReadFile(path); err == nil && len(b) > 0 {
			countStat(func() { CompileStats.DiskHits++ })
			return b, nil
		}
	}
	img, err := lib.Compile(p, arch)
	if err != nil {
		return nil, err
	}
	if path != "" {
		// Best effort: a cache that cannot be written only costs a compile.
		if os.MkdirAll(dir, 0o755) == nil {
			tmp := fmt.Sprintf("%s.%d.tmp", path, os.Getpid())
			if os.WriteFile(tmp, img, 0o644) == nil {
				os.Rename(tmp, path)
			}
		}
	}
	return img, nil
}

// Compile runs NVRTC on p for arch (no caches). A compile error is
// INVALID_ARGUMENT with NVRTC's log in the message.
func (lib *Lib) Compile(p *Program, arch int) ([]byte, error) {
	if lib.NVRTCPath == "" {
		return nil, status.Errorf(status.FailedPrecondition, "cuda: NVRTC was not loaded; cannot compile %s", p.Name)
	}
	opt, ptx := lib.target(arch)
	src := C.CString(p.Source)
	defer C.free(unsafe.Pointer(src))
	name := C.CString(p.Name)
	defer C.free(unsafe.Pointer(name))
	copt := C.CString(opt)
	defer C.free(unsafe.Pointer(copt))
	var img, logp *C.char
	var n C.size_t
	var stage C.int
	r := C.ms_nvrtc_compile(lib.l, src, name, copt, cbool(ptx), &img, &n, &logp, &stage)
	var log string
	if logp != nil {
		log = C.GoString(logp)
		C.free(unsafe.Pointer(logp))
	}
	if r != 0 {
		call := [...]string{"nvrtcCreateProgram", "nvrtcCompileProgram", "nvrtcGetCUBIN"}[stage]
		if ptx && stage == 2 {
			call = "nvrtcGetPTX"
		}
		msg := C.GoString(C.ms_nvrtc_error(lib.l, r))
		code := status.Internal
		if stage == 1 {
			code = status.InvalidArgument
		}
		return nil, &status.Error{Code: code,
			Msg:   fmt.Sprintf("cuda: %s of %s (%s) failed: %s\n%s", call, p.Name, opt, msg, log),
			Inner: &CallError{Call: call, Result: int(r), Name: msg}}
	}
	countStat(func() { CompileStats.Compiles++ })
	b := C.GoBytes(unsafe.Pointer(img), C.int(n))
	C.free(unsafe.Pointer(img))
	return b, nil
}

// Dim3 is a grid or block size.
type Dim3 struct{ X, Y, Z uint32 }

// D1 is a one-dimensional Dim3.
func D1(x int) Dim3 { return Dim3{uint32(x), 1, 1} }

// Args is a kernel's parameter list, packed as the kernel's C signature
// lays them out: each parameter aligned to its size. It lives on the
// caller's stack; Launch copies the bytes used into the stream's C
// buffer. Its 2 KiB (CUDA allows 4) hold the largest parameter block,
// array.cu's GatherN32 (32 gathers of 48 bytes, one launch for DLRM's 26
// embedding lookups).
type Args struct {
	buf  [2048]byte
	offs [maxArgs]uint16
	n    int
	used int
	err  bool
}

func (a *Args) put(size, align int) []byte {
	off := (a.used + align - 1) &^ (align - 1)
	if a.n >= maxArgs || off+size > len(a.buf) {
		a.err = true
		return make([]byte, size)
	}
	a.offs[a.n] = uint16(off)
	a.n++
	a.used = off + size
	return a.buf[off : off+size]
}

// Ptr adds a device pointer.
func (a *Args) Ptr(p uint64) *Args { binary.LittleEndian.PutUint64(a.put(8, 8), p); return a }

// I64 adds a long long.
func (a *Args) I64(v int64) *Args { binary.LittleEndian.PutUint64(a.put(8, 8), uint64(v)); return a }

// I32 adds an int.
func (a *Args) I32(v int32) *Args { binary.LittleEndian.PutUint32(a.put(4, 4), uint32(v)); return a }

// F32 adds a float.
func (a *Args) F32(v float32) *Args {
	binary.LittleEndian.PutUint32(a.put(4, 4), math.Float32bits(v))
	return a
}

// F64 adds a double.
func (a *Args) F64(v float64) *Args {
	binary.LittleEndian.PutUint64(a.put(8, 8), math.Float64bits(v))
	return a
}

// I64s adds a struct of len(v) long longs passed by value (e.g. a struct
// holding a long long array).
func (a *Args) I64s(v ...int64) *Args {
	b := a.put(8*len(v), 8)
	for i, x := range v {
		binary.LittleEndian.PutUint64(b[8*i:], uint64(x))
	}
	return a
}

// Launch enqueues f on the stream. An invalid configuration or argument
// list fails here with the call named; a fault inside the kernel shows up
// later as a sticky error of the context.
//
// The parameters go to C memory by plain Go copies (passing a's address
// to C would move it to the heap on every launch): into an argument slot
// of the stream's, taken and given back with atomics, so launches on one
// stream from several goroutines overlap in the driver instead of
// queueing on the stream's mutex (on DLRM from 8 threads over 4 groups,
// the waiters' spinning cost 5% of the process's CPU). When every slot
// is in use, the stream's own buffer under its mutex.
func (s *Stream) Launch(f *Function, grid, block Dim3, shmem int, a *Args) error {
	if f.mod.ctx != s.ctx {
		return status.Errorf(status.Internal, "cuda: kernel %s belongs to %s, stream %d to %s", f.name, f.mod.ctx, s.id, s.ctx)
	}
	if a.err {
		return status.Errorf(status.Internal, "cuda: parameters of kernel %s overflow the argument buffer", f.name)
	}
	var r C.int
	if k := s.takeSlot(); k >= 0 {
		args := (*C.char)(unsafe.Add(unsafe.Pointer(s.slots), k*slotBytes))
		offs := (*C.uint16_t)(unsafe.Add(unsafe.Pointer(args), len(a.buf)))
		r = s.launchWith(f, grid, block, shmem, a, args, offs)
		s.free.Or(1 << k)
	} else {
		s.mu.Lock()
		r = s.launchWith(f, grid, block, shmem, a, s.args, s.offs)
		s.mu.Unlock()
	}
	if r != 0 {
		return status.Wrap(s.ctx.check("cuLaunchKernel", r), "launch of kernel %s (grid %v, block %v, %d B shared)",
			f.name, grid, block, shmem)
	}
	return nil
}

// argSlots is the argument slots a stream has for concurrent launches,
// each an Args buffer and its offsets.
const (
	argSlots  = 8
	slotBytes = len(Args{}.buf) + 2*maxArgs
)

// takeSlot takes a free argument slot of s; -1 when all are in use.
func (s *Stream) takeSlot() int {
	for {
		f := s.free.Load()
		if f == 0 {
			return -1
		}
		k := bits.TrailingZeros32(f)
		if s.free.CompareAndSwap(f, f&^(1<<k)) {
			return k
		}
	}
}

// launchWith copies a's parameters to args and offs, C memory the caller
// owns until it returns, and launches.
func (s *Stream) launchWith(f *Function, grid, block Dim3, shmem int, a *Args, args *C.char, offs *C.uint16_t) C.int {
	copy(unsafe.Slice((*byte)(unsafe.Pointer(args)), len(a.buf)), a.buf[:a.used])
	copy(unsafe.Slice((*uint16)(unsafe.Pointer(offs)), maxArgs), a.offs[:a.n])
	return C.ms_launch(s.lib(), s.ctx.c, f.f, C.uint(grid.X), C.uint(grid.Y), C.uint(grid.Z),
		C.uint(block.X), C.uint(block.Y), C.uint(block.Z), C.uint(shmem), s.s, args, offs, C.int(a.n))
}
