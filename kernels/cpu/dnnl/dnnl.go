package dnnl

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
	"math"
	"os"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"

	"mstream/cenv"
	"mstream/hostmem"
	"mstream/kernels/cpu/ccall"
)

// SystemNames are the sonames tried when no library is named.
var SystemNames = []string{"libdnnl.so.3"}

// Options chooses the library.
type Options struct {
	// Path is libdnnl.so.3 to dlopen (scripts/venv.sh names the
	// onednn-cpu-gomp wheel's in build/venv/lib); "" tries SystemNames;
	// "off" runs mstream's own kernels.
	Path string
	// Warn prints a warning (the session's logger); nil writes to
	// stderr. The first Load's is kept, as its library is: a shape
	// oneDNN cannot make is warned about through it.
	Warn func(msg string)
}

// Info says whether oneDNN runs the heavy CPU kernels, which version and
// on which ISA, or why not.
type Info struct {
	// Impl is "onednn", or "" when mstream's own kernels run.
	Impl    string `json:"impl"`
	Path    string `json:"path,omitempty"`
	Version string `json:"version,omitempty"`
	// ISA is the instruction set oneDNN's JIT generates code for
	// (dnnl_get_effective_cpu_isa).
	ISA string `json:"isa,omitempty"`
	// OMPWaitPolicy is the GNU OpenMP runtime's OMP_WAIT_POLICY: the
	// user's, or PASSIVE, which Load sets across the dlopen when the user
	// has not (OMPWaitPolicySet).
	OMPWaitPolicy    string `json:"omp_wait_policy,omitempty"`
	OMPWaitPolicySet bool   `json:"omp_wait_policy_set,omitempty"`
	// Warning says why oneDNN is not used when it was not turned off.
	Warning string `json:"warning,omitempty"`
	// Fallbacks is Fallbacks() when the stats were taken.
	Fallbacks int64 `json:"fallbacks"`
	// Primitives is Primitives() when the stats were taken.
	Primitives string `json:"primitives,omitempty"`
	// Live is Live() when the stats were taken.
	Live int64 `json:"live"`
}

// String is the one log line.
func (in Info) String() string {
	if in.Impl == "" {
		return "oneDNN: not used, mstream's own convolutions and pooling"
	}
	set := ""
	if in.OMPWaitPolicySet {
		set = " set by mstream"
	}
	return fmt.Sprintf("oneDNN %s (%s), ISA %s, OMP_WAIT_POLICY=%s%s: float32 %s", in.Version, in.Path, in.ISA, in.OMPWaitPolicy, set, Ops)
}

// Ops are the kernels oneDNN runs when it is loaded, for the log line.
const Ops = "NHWC Conv2D, _FusedConv2D, MaxPool, AvgPool; Softmax, LogSoftmax; FusedBatchNorm (NHWC, and the row-wise LayerNorm form Keras exports)"

var isaNames = map[int]string{0: "default", 1: "SSE4.1", 3: "AVX", 7: "AVX2", 15: "AVX2-VNNI", 31: "AVX2-VNNI-2",
	39: "AVX-512", 103: "AVX-512-VNNI", 231: "AVX-512-BF16", 495: "AVX-512-FP16", 4079: "AMX"}

// ErrLoaded says a Load asked for another library than the one loaded.
var ErrLoaded = errors.New("oneDNN is already loaded in this process")

var (
	loadMu sync.Mutex
	loaded atomic.Bool // info and have are final once set
	info   Info
	have   bool
	wanted Options

	fallbacks atomic.Int64
	// live counts the primitives made and not yet freed, in this process.
	live atomic.Int64
)

// Live is how many primitives (convolutions and Prims) exist in this
// process: made by a cache's Get and not yet destroyed by its Close. A
// session's plans hold theirs until the plan is dropped, so after every
// session is closed it is back where it started (MS_SessionStats shows it,
// cpu_kernels.onednn.live).
func Live() int64 { return live.Load() }

// errClosed is Get's error after Close: the kernel's own code runs the
// shape (a plan closes its kernels only after its last step, so no Run
// should see it).
var errClosed = errors.New("oneDNN primitive cache is closed")

// Fallbacks is how many (node, shape) pairs oneDNN could not make a
// primitive for in this process, each warned about once; mstream's own
// kernels ran them. MS_SessionStats shows it (cpu_kernels.onednn.fallbacks).
func Fallbacks() int64 { return fallbacks.Load() }

var (
	builtMu sync.Mutex
	built   = map[string]int{} // "kind impl" -> primitives made
)

// record counts a primitive made, by kind and oneDNN's implementation
// name: once per (node, shape), never on a Run.
func record(kind, impl string) {
	builtMu.Lock()
	built[kind+" "+impl]++
	builtMu.Unlock()
}

// Primitives says which implementations oneDNN chose for the primitives
// made in this process, with their counts ("conv brg:avx2 x3, softmax
// jit:avx2 x1"), sorted: MS_SessionStats shows it
// (cpu_kernels.onednn.primitives).
func Primitives() string {
	builtMu.Lock()
	defer builtMu.Unlock()
	var parts []string
	for k, n := range built {
		parts = append(parts, fmt.Sprintf("%s x%d", k, n))
	}
	sort.Strings(parts)
	return strings.Join(parts, ", ")
}

// fallback warns that oneDNN could not make a primitive for a shape of
// node, whose kernel then runs its own code.
func fallback(node string, err error) {
	fallbacks.Add(1)
	msg := fmt.Sprintf("oneDNN: node '%s': %v: mstream's own kernel runs this shape instead, slower", node, err)
	loadMu.Lock()
	w := wanted.Warn
	loadMu.Unlock()
	if w != nil {
		w(msg)
		return
	}
	fmt.Fprintln(os.Stderr, "mstream W", msg)
}

// Load opens oneDNN once per process, as package blas opens its library:
// the first successful Load decides; a named Path that does not load is an
// error and loads nothing; "" and "off" never fail (a missing oneDNN is a
// warning in Info). Kernels that find nobody loaded it call Load(Options{}).
func Load(o Options) (Info, error) {
	loadMu.Lock()
	defer loadMu.Unlock()
	if loaded.Load() {
		if o.Path != "" && o.Path != wanted.Path {
			return info, fmt.Errorf("%w: %q requested, %q loaded first", ErrLoaded, o.Path, info.Path)
		}
		return info, nil
	}
	var in Info
	switch o.Path {
	case "off":
	case "":
		var errs []string
		for _, name := range SystemNames {
			if err := open(name, &in); err != nil {
				errs = append(errs, err.Error())
				continue
			}
			break
		}
		if !have {
			// A missing library is the common case and says only that;
			// one that is there but unusable says why.
			why := strings.Join(SystemNames, ", ") + " not found"
			for _, e := range errs {
				if !strings.Contains(e, "cannot open shared object file") {
					why = strings.Join(errs, "; ")
				}
			}
			in.Warning = fmt.Sprintf("no oneDNN (%s): convolutions, pooling, softmax and the normalisations run mstream's own kernels, several times slower; scripts/setup.sh installs it, MSTREAM_DNNL names it", why)
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

func open(path string, in *Info) error {
	p := C.CString(path)
	defer C.free(unsafe.Pointer(p))
	// OpenMP's workers spin after each parallel region by default, taking
	// the cores from the Go threads that run the next nodes (keras_cnn at
	// B=1 on 2 loaded cores: 4.6 QPS spinning, 595 passive). libgomp reads
	// the variable when it loads, with libdnnl; the user's value is kept
	// (read from the C environment: a host's setenv after the library
	// loaded counts).
	policy, userSet := cenv.Getenv("OMP_WAIT_POLICY")
	if !userSet {
		policy = "PASSIVE"
		os.Setenv("OMP_WAIT_POLICY", policy)
		defer os.Unsetenv("OMP_WAIT_POLICY")
	}
	var buf [512]C.char
	if C.ms_dnnl_open(p, &buf[0], C.int(len(buf))) == 0 {
		return fmt.Errorf("%s: %s", path, C.GoString(&buf[0]))
	}
	var ma, mi, pa C.int
	C.ms_dnnl_version(&ma, &mi, &pa)
	isa := int(C.ms_dnnl_isa())
	name, ok := isaNames[isa]
	if !ok {
		name = fmt.Sprintf("isa %#x", isa)
	}
	*in = Info{Impl: "onednn", Path: path, Version: fmt.Sprintf("%d.%d.%d", ma, mi, pa), ISA: name,
		OMPWaitPolicy: policy, OMPWaitPolicySet: !userSet}
	have = true
	return nil
}

// Loaded returns the Info of the library in use, loading the default when
// nobody has, with Fallbacks read now.
func Loaded() Info {
	if !loaded.Load() {
		Load(Options{})
	}
	in := info
	in.Fallbacks, in.Primitives, in.Live = Fallbacks(), Primitives(), Live()
	return in
}

// Available reports whether oneDNN runs the kernels it serves.
func Available() bool {
	if !loaded.Load() {
		Load(Options{})
	}
	return have
}

// ConvDesc is one float32 convolution: NHWC input [N,H,W,C], HWIO filter
// [KH,KW,C,O], NHWC output [N,OH,OW,O]; dilations as TF's (1 = none);
// paddings before (PT, PL) and after (PB, PR) in pixels. Bias adds a
// per-output-channel bias and Relu applies ReLU, both inside the primitive.
type ConvDesc struct {
	N, H, W, C, O, KH, KW int
	SH, SW, DH, DW        int
	PT, PL, PB, PR        int
	OH, OW                int
	Bias, Relu            bool
}

// Conv is a oneDNN convolution primitive for one ConvDesc. It is safe for
// concurrent Runs: each run takes a work buffer of its own (scratchpad and,
// unless the weights are packed, the reordered weights) from the
// primitive's free list.
type Conv struct {
	c       *C.ms_conv
	threads int
	// Impl is oneDNN's name of the implementation it chose.
	Impl string

	// pk holds its constant filter once packed, shared with the
	// primitives of its ConvCache whose weights take the same layout.
	pk   *packed
	work freeList
	// The primitive's sizes, read once (a cgo call a Run each was not
	// worth it): a Run's work buffer with and without packed weights, and
	// the packed weights.
	workBytes, scratchBytes, packBytes int64
	// ns is what a run is expected to take (ccall.Call's estimate).
	ns float64
}

// packed is a constant filter in a primitive's layout, made by the first
// Run with constWeights of any primitive sharing it. A node's primitives
// for other batch sizes or row bands mostly pick one layout, so a node
// keeps one copy of its filter per layout, not one per shape.
type packed struct {
	mu    sync.Mutex
	buf   atomic.Pointer[[]byte]
	packs atomic.Int64
}

// NewConv creates the primitive for an OpenMP team of threads (0:
// OpenMP's default; see Threads), which its Runs use: oneDNN JIT-compiles
// it, so do it once per node, shape and thread count, through a ConvCache.
func NewConv(d ConvDesc, threads int) (*Conv, error) {
	if !Available() {
		return nil, errors.New("oneDNN is not loaded")
	}
	p := [17]C.int64_t{C.int64_t(d.N), C.int64_t(d.C), C.int64_t(d.H), C.int64_t(d.W), C.int64_t(d.O), C.int64_t(d.KH), C.int64_t(d.KW),
		C.int64_t(d.SH), C.int64_t(d.SW), C.int64_t(d.DH), C.int64_t(d.DW), C.int64_t(d.PT), C.int64_t(d.PL), C.int64_t(d.PB), C.int64_t(d.PR),
		C.int64_t(d.OH), C.int64_t(d.OW)}
	var c *C.ms_conv
	var buf [512]C.char
	if C.ms_conv_create(&p[0], b2i(d.Bias), b2i(d.Relu), C.int(threads), &c, &buf[0], C.int(len(buf))) == 0 {
		return nil, fmt.Errorf("oneDNN convolution %+v: %s", d, C.GoString(&buf[0]))
	}
	live.Add(1)
	return &Conv{c: c, threads: threads, Impl: C.GoString(C.ms_conv_impl(c)), pk: &packed{},
		workBytes: int64(C.ms_conv_work_size(c)), scratchBytes: int64(C.ms_conv_scratch_size(c)),
		packBytes: int64(C.ms_conv_packed_size(c)),
		ns:        ccall.Flops(2 * float64(d.N) * float64(d.OH) * float64(d.OW) * float64(d.O) * float64(d.KH*d.KW*d.C))}, nil
}

// free destroys the primitive and the memory objects and streams its Runs
// kept (dl.c's slots); no Run may be in flight or follow.
func (c *Conv) free() {
	C.ms_conv_free(c.c)
	c.c = nil
	live.Add(-1)
}

// WorkBytes is the size of the work buffer a Run that reorders its weights
// needs: the weights in the primitive's layout and its scratchpad.
func (c *Conv) WorkBytes() int64 { return c.workBytes }

// Run computes dst from src, the HWIO weights wei and (when the desc has
// one) the bias; the slices must hold the desc's shapes. With constWeights
// the caller promises that wei holds the same values on every Run of this
// primitive (a Const filter the plan does not feed; optimize marks such a
// convolution): they are reordered into the primitive's layout on the
// first Run and kept with it, where otherwise every Run reorders them, an
// O(weights) pass as long as a small convolution itself (128x64x3x3 at a
// batch of one: 25 us of 105). Work buffers are the primitive's own, kept
// between Runs, one per Run in flight; each is made after limit's check,
// so nothing is allocated (or collected) on a steady Run.
func (c *Conv) Run(limit hostmem.Limit, src, wei, bias, dst []float32, constWeights bool) error {
	var packed []byte
	n := c.WorkBytes()
	if constWeights {
		var err error
		if packed, err = c.pack(limit, wei); err != nil {
			return err
		}
		n = c.scratchBytes
	}
	work, err := c.work.get(limit, n)
	if err != nil {
		return err
	}
	defer c.work.put(work)
	return c.run(src, wei, packed, bias, dst, work)
}

// pack returns the constant filter wei in the primitive's layout, making
// it on the first call; nil when the primitive takes HWIO as it is.
func (c *Conv) pack(limit hostmem.Limit, wei []float32) ([]byte, error) {
	pk := c.pk
	if p := pk.buf.Load(); p != nil {
		return *p, nil
	}
	n := c.packedBytes()
	if n == 0 {
		return nil, nil
	}
	pk.mu.Lock()
	defer pk.mu.Unlock()
	if p := pk.buf.Load(); p != nil {
		return *p, nil
	}
	b, err := hostmem.Make[byte](limit, n)
	if err != nil {
		return nil, err
	}
	var buf [256]C.char
	if C.ms_conv_pack(c.c, C.int(c.threads), (*C.float)(&wei[0]), unsafe.Pointer(&b[0]), &buf[0], C.int(len(buf))) == 0 {
		return nil, errors.New(C.GoString(&buf[0]))
	}
	pk.packs.Add(1)
	pk.buf.Store(&b)
	return b, nil
}

// packedBytes is the size of the weights in the primitive's layout, 0 when
// it takes HWIO as it is.
func (c *Conv) packedBytes() int64 { return c.packBytes }

// run is one convolution with work (WorkBytes long, or the scratchpad's
// size when packed holds the weights in the primitive's layout).
func (c *Conv) run(src, wei []float32, packed []byte, bias, dst []float32, work []byte) error {
	var b *C.float
	if len(bias) > 0 {
		b = (*C.float)(&bias[0])
	}
	var p *C.char
	if packed != nil {
		p = (*C.char)(unsafe.Pointer(&packed[0]))
	}
	args := C.ms_conv_run_args{c: c.c, threads: C.int(c.threads), src: (*C.float)(&src[0]), wei: (*C.float)(&wei[0]), packed: p,
		bias: b, dst: (*C.float)(&dst[0]), work: (*C.char)(unsafe.Pointer(&work[0]))}
	ccall.Call(C.ms_conv_run_call, unsafe.Pointer(&args), c.ns)
	return runErr(args.err)
}

// runErr is the error of a run's C message (NULL: none), which it frees.
// A run passes C no buffer of Go's for it, nor anything else that would
// take an allocation per call (dl.c's ms_conv_run).
func runErr(msg *C.char) error {
	if msg == nil {
		return nil
	}
	defer C.free(unsafe.Pointer(msg))
	return errors.New(C.GoString(msg))
}

// freeList keeps a primitive's work buffers between Runs: a Run takes one
// (or makes one, checked against the device's limit, when all are in use)
// and puts it back, so there are as many as Runs were ever in flight at
// once and none is allocated on a steady Run.
type freeList struct {
	mu   sync.Mutex
	free [][]byte
}

func (f *freeList) get(limit hostmem.Limit, n int64) ([]byte, error) {
	f.mu.Lock()
	for i := len(f.free) - 1; i >= 0; i-- {
		if b := f.free[i]; int64(len(b)) >= n {
			f.free = append(f.free[:i], f.free[i+1:]...)
			f.mu.Unlock()
			return b, nil
		}
	}
	f.mu.Unlock()
	return hostmem.Make[byte](limit, max(n, 1))
}

func (f *freeList) put(b []byte) {
	f.mu.Lock()
	f.free = append(f.free, b)
	f.mu.Unlock()
}

// ConvCache holds a kernel's primitives by shape: a kernel makes one and
// keeps it for the plan's life, so a primitive is built once per (node,
// shape) and reused by every Run. Its primitives convolve one node's
// filter: those whose weights take the same layout share one packed copy
// of it when it is constant (Run's constWeights). The zero value is ready.
// Close destroys its primitives: the kernel that owns it closes it when
// its plan is dropped (kernels.Closer), after the plan's last step.
type ConvCache struct {
	// Node names the kernel's node in the warning a desc oneDNN cannot
	// make prints.
	Node string
	s    store[ConvDesc, *Conv]
}

// Get returns the primitive for d and an OpenMP team of threads (the
// kernel's intra-op thread count, kernels.Context.Threads), creating it on
// first use. A desc oneDNN cannot make is remembered, so the caller's
// fallback runs without retrying.
func (cc *ConvCache) Get(d ConvDesc, threads int) (*Conv, error) {
	return cc.s.get(cc.Node, d, threads, NewConv, func(c, old *Conv) bool {
		if C.ms_conv_same_weights(old.c, c.c) == 0 {
			return false
		}
		c.pk = old.pk // one packed filter per layout
		return true
	})
}

// Close destroys the cache's primitives, which no Run may still use; a
// Get after it fails (the kernel's own code would run). A second Close
// does nothing.
func (cc *ConvCache) Close() error { return cc.s.close() }

// threaded is a cache key: a desc and the team size its primitive was
// made for.
type threaded[D comparable] struct {
	d       D
	threads int
}

// primitive is a Conv or a Prim, as a store keeps them.
type primitive interface {
	free()
	// named is what record counts it as: its kind and oneDNN's
	// implementation.
	named() (kind, impl string)
}

func (c *Conv) named() (string, string) { return "conv", c.Impl }
func (p *Prim) named() (string, string) { return p.kind, p.Impl }

// store is ConvCache's and Cache's body: primitives of one kind by (desc,
// team size), each made on first use, a desc oneDNN cannot make kept with
// its error (and warned about once); close frees them all.
type store[D comparable, P primitive] struct {
	mu     sync.Mutex
	m      map[threaded[D]]stored[P]
	closed bool
}

type stored[P any] struct {
	p   P
	err error
}

// get returns the primitive for (d, threads), made by mk on first use;
// adopt (nil: none) offers a new primitive the kept ones in turn until it
// returns true (ConvCache's shared filter).
func (s *store[D, P]) get(node string, d D, threads int, mk func(D, int) (P, error), adopt func(made, old P) bool) (P, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		var none P
		return none, errClosed
	}
	k := threaded[D]{d, threads}
	if e, ok := s.m[k]; ok {
		return e.p, e.err
	}
	p, err := mk(d, threads)
	if s.m == nil {
		s.m = map[threaded[D]]stored[P]{}
	}
	if err == nil && adopt != nil {
		for _, e := range s.m {
			if e.err == nil && adopt(p, e.p) {
				break
			}
		}
	}
	s.m[k] = stored[P]{p, err}
	if err != nil {
		fallback(node, err)
	} else {
		record(p.named())
	}
	return p, err
}

// close frees every primitive made (none may be in use); a get after it
// fails, a second close does nothing.
func (s *store[D, P]) close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, e := range s.m {
		if e.err == nil {
			e.p.free()
		}
	}
	s.m, s.closed = nil, true
	return nil
}

func b2i(b bool) C.int {
	if b {
		return 1
	}
	return 0
}

// Prim is a oneDNN primitive whose arguments are plain row-major buffers
// in the layouts its constructor fixed: pooling, softmax, layer and batch
// normalisation, matmul. It is safe for concurrent Runs (each brings its
// own work buffer).
type Prim struct {
	c       *C.ms_prim
	nArg    int
	threads int
	kind    string
	// Impl is oneDNN's name of the implementation it chose ("brg:avx2",
	// "jit:uni", "ref:any"): a "ref" one is oneDNN's slow reference code.
	Impl string
	// workBytes is the scratchpad's size, read once; ns what a run is
	// expected to take (ccall.Call's estimate, primNs).
	workBytes int64
	ns        float64
}

func newPrim(what string, desc any, nArg, threads int, create func(threads C.int, out **C.ms_prim, buf *C.char, n C.int) C.int) (*Prim, error) {
	if !Available() {
		return nil, errors.New("oneDNN is not loaded")
	}
	var c *C.ms_prim
	var buf [512]C.char
	if create(C.int(threads), &c, &buf[0], C.int(len(buf))) == 0 {
		return nil, fmt.Errorf("oneDNN %s %+v: %s", what, desc, C.GoString(&buf[0]))
	}
	live.Add(1)
	return &Prim{c: c, nArg: nArg, threads: threads, kind: strings.ReplaceAll(what, " ", "_"), Impl: C.GoString(C.ms_prim_impl(c)),
		workBytes: int64(C.ms_prim_work_size(c)), ns: primNs(desc)}, nil
}

// free destroys the primitive and its Runs' memory objects and streams, as
// Conv.free.
func (p *Prim) free() {
	C.ms_prim_free(p.c)
	p.c = nil
	live.Add(-1)
}

// WorkBytes is the size of the work buffer (the scratchpad) Run needs.
func (p *Prim) WorkBytes() int64 { return p.workBytes }

// Run executes the primitive on args, one slice per argument in the order
// its desc's doc lists (nil for an argument a desc leaves out), using work
// (WorkBytes long). The slices must hold the desc's shapes.
func (p *Prim) Run(work []byte, args ...[]float32) error {
	if int64(len(work)) < p.WorkBytes() {
		return fmt.Errorf("oneDNN %s: work buffer of %d bytes, %d needed", p.Impl, len(work), p.WorkBytes())
	}
	if len(args) < p.nArg {
		return fmt.Errorf("oneDNN %s: %d arguments, %d needed", p.Impl, len(args), p.nArg)
	}
	a := C.ms_prim_run_args{c: p.c, threads: C.int(p.threads), work: (*C.char)(unsafe.Pointer(&work[0]))}
	for i, arg := range args[:p.nArg] {
		if len(arg) > 0 {
			a.args[i] = (*C.float)(&arg[0])
		}
	}
	ccall.Call(C.ms_prim_run_call, unsafe.Pointer(&a), p.ns)
	return runErr(a.err)
}

// Cache holds a kernel's primitives by desc: a kernel makes one and keeps
// it for the plan's life, so a primitive is built once per (node, shape)
// and reused by every Run. Node names the kernel's node in the warning a
// desc oneDNN cannot make prints. The zero value is ready. Close destroys
// its primitives, as ConvCache's.
type Cache[D comparable] struct {
	Node string
	s    store[D, *Prim]
}

// Get returns the primitive for d and an OpenMP team of threads (as
// ConvCache.Get), creating it on first use. A desc oneDNN cannot make is
// remembered and warned about once (the caller's own kernel runs it,
// slower), so the fallback runs without retrying.
func (pc *Cache[D]) Get(d D, threads int) (*Prim, error) {
	return pc.s.get(pc.Node, d, threads, func(d D, threads int) (*Prim, error) { return newPrimFor(d, threads) }, nil)
}

// Close destroys the cache's primitives, as ConvCache.Close.
func (pc *Cache[D]) Close() error { return pc.s.close() }

// primNs is what a run of a primitive for desc is expected to take
// (ccall.Call's estimate): its passes over memory, or a matmul's flops.
func primNs(desc any) float64 {
	f := func(n int) float64 { return float64(n) }
	switch d := desc.(type) {
	case PoolDesc:
		return ccall.Bytes(4*f(d.N*d.C)*f(d.H*d.W+d.OH*d.OW)) + ccall.Flops(f(d.N*d.C)*f(d.OH*d.OW)*f(d.KH*d.KW))
	case SoftmaxDesc:
		return ccall.Bytes(8*f(d.Rows)*f(d.Cols)) + ccall.Flops(20*f(d.Rows)*f(d.Cols))
	case LayerNormDesc:
		return ccall.Bytes(12 * f(d.Rows) * f(d.Cols))
	case BatchNormDesc:
		return ccall.Bytes(12 * f(d.N) * f(d.Spatial) * f(d.C))
	case MatMulDesc:
		return ccall.Flops(2 * f(d.M) * f(d.N) * f(d.K))
	}
	return math.Inf(1) // a kind without an estimate: a cgo call
}

func newPrimFor(d any, threads int) (*Prim, error) {
	switch d := d.(type) {
	case PoolDesc:
		return NewPool(d, threads)
	case SoftmaxDesc:
		return NewSoftmax(d, threads)
	case LayerNormDesc:
		return NewLayerNorm(d, threads)
	case BatchNormDesc:
		return NewBatchNorm(d, threads)
	case MatMulDesc:
		return NewMatMul(d, threads)
	}
	return nil, fmt.Errorf("oneDNN: no primitive for %T", d)
}

// PoolDesc is one float32 2-D pooling, NHWC in and out: max, or average
// over the window's elements inside the input (TF's SAME excludes the
// padding). Run's arguments: src, dst.
type PoolDesc struct {
	N, H, W, C, OH, OW int
	KH, KW, SH, SW     int
	PT, PL, PB, PR     int
	Max                bool
}

// NewPool creates the primitive for an OpenMP team of threads (as
// NewConv); do it once per node, shape and thread count, through a Cache.
func NewPool(d PoolDesc, threads int) (*Prim, error) {
	p := [14]C.int64_t{C.int64_t(d.N), C.int64_t(d.C), C.int64_t(d.H), C.int64_t(d.W), C.int64_t(d.OH), C.int64_t(d.OW),
		C.int64_t(d.KH), C.int64_t(d.KW), C.int64_t(d.SH), C.int64_t(d.SW), C.int64_t(d.PT), C.int64_t(d.PL), C.int64_t(d.PB), C.int64_t(d.PR)}
	return newPrim("pooling", d, 2, threads, func(t C.int, out **C.ms_prim, buf *C.char, n C.int) C.int {
		return C.ms_pool_create(&p[0], b2i(d.Max), t, out, buf, n)
	})
}

// SoftmaxDesc is Softmax (or, with Log, LogSoftmax) along each row of a
// [Rows, Cols] float32 matrix. Run's arguments: src, dst.
type SoftmaxDesc struct {
	Rows, Cols int
	Log        bool
}

// NewSoftmax creates the primitive for an OpenMP team of threads (as NewConv);
// do it once per node, shape and thread count.
func NewSoftmax(d SoftmaxDesc, threads int) (*Prim, error) {
	return newPrim("softmax", d, 2, threads, func(t C.int, out **C.ms_prim, buf *C.char, n C.int) C.int {
		return C.ms_softmax_create(C.int64_t(d.Rows), C.int64_t(d.Cols), b2i(d.Log), t, out, buf, n)
	})
}

// LayerNormDesc normalises each row of a [Rows, Cols] float32 matrix to
// zero mean and unit variance (biased variance, Eps added), with no scale
// or shift. Run's arguments: src, dst, mean [Rows], variance [Rows] (both
// written).
type LayerNormDesc struct {
	Rows, Cols int
	Eps        float32
}

// NewLayerNorm creates the primitive for an OpenMP team of threads (as NewConv);
// do it once per node, shape and thread count.
func NewLayerNorm(d LayerNormDesc, threads int) (*Prim, error) {
	return newPrim("layer normalization", d, 4, threads, func(t C.int, out **C.ms_prim, buf *C.char, n C.int) C.int {
		return C.ms_lnorm_create(C.int64_t(d.Rows), C.int64_t(d.Cols), C.float(d.Eps), t, out, buf, n)
	})
}

// BatchNormDesc is a float32 batch normalisation of NHWC data viewed as
// [N, Spatial, C], per channel, with scale and shift: in inference
// (Training false) with the given mean and variance, in training with the
// batch's, which it writes. Run's arguments: src, dst, scale, shift, mean,
// variance.
type BatchNormDesc struct {
	N, Spatial, C int
	Eps           float32
	Training      bool
}

// NewBatchNorm creates the primitive for an OpenMP team of threads (as NewConv);
// do it once per node, shape and thread count.
func NewBatchNorm(d BatchNormDesc, threads int) (*Prim, error) {
	return newPrim("batch normalization", d, 6, threads, func(t C.int, out **C.ms_prim, buf *C.char, n C.int) C.int {
		return C.ms_bnorm_create(C.int64_t(d.N), C.int64_t(d.C), C.int64_t(d.Spatial), C.float(d.Eps), b2i(d.Training), t, out, buf, n)
	})
}

// Activations a MatMul applies after its bias, inside the primitive.
const (
	ActNone = iota
	ActRelu
	ActRelu6
	ActElu
	ActTanh
	ActSigmoid
	ActGeluErf
	ActGeluTanh
	ActLeakyRelu
)

// eltwise maps an activation to oneDNN's algorithm kind and its alpha and
// beta (dnnl_types.h's dnnl_eltwise_*).
var eltwise = [...]struct {
	alg         C.int
	alpha, beta C.float
}{ActNone: {}, ActRelu: {0x20, 0, 0}, ActRelu6: {0x2f, 0, 6}, ActElu: {0x22, 1, 0}, ActTanh: {0x21, 0, 0},
	ActSigmoid: {0x29, 0, 0}, ActGeluErf: {0x31, 0, 0}, ActGeluTanh: {0x2b, 0, 0}, ActLeakyRelu: {0x20, 0, 0}}

// MatMulDesc is dst[M,N] = op(a)[M,K] op(b)[K,N] (+ bias[N]) then Act, all
// float32 and row-major; TA and TB say a and b are stored transposed;
// Alpha is ActLeakyRelu's slope. Run's arguments: a, b, dst, bias.
type MatMulDesc struct {
	M, K, N int
	TA, TB  bool
	Bias    bool
	Act     int
	Alpha   float32
}

// NewMatMul creates the primitive for an OpenMP team of threads (as NewConv);
// do it once per node, shape and thread count.
func NewMatMul(d MatMulDesc, threads int) (*Prim, error) {
	if d.Act < 0 || d.Act >= len(eltwise) {
		return nil, fmt.Errorf("oneDNN matmul: activation %d", d.Act)
	}
	e := eltwise[d.Act]
	if d.Act == ActLeakyRelu {
		e.alpha = C.float(d.Alpha)
	}
	nArg := 3
	if d.Bias {
		nArg = 4
	}
	return newPrim("matmul", d, nArg, threads, func(t C.int, out **C.ms_prim, buf *C.char, n C.int) C.int {
		return C.ms_matmul_create(C.int64_t(d.M), C.int64_t(d.K), C.int64_t(d.N), b2i(d.TA), b2i(d.TB), b2i(d.Bias),
			e.alg, e.alpha, e.beta, t, out, buf, n)
	})
}

// teamProbe runs c (or, when c is nil, p on args) on a new OS thread and
// returns how many threads its OpenMP team used, that thread included
// (dl.c's ms_dnnl_team_probe): the test that a primitive's team follows
// the thread count it was made for.
func teamProbe(c *Conv, p *Prim, src, wei, bias, dst []float32, args [][]float32, work []byte) (int, error) {
	var buf [256]C.char
	ptrs := (*[8]unsafe.Pointer)(C.calloc(8, C.size_t(unsafe.Sizeof(unsafe.Pointer(nil)))))
	defer C.free(unsafe.Pointer(ptrs))
	var n C.int
	if c != nil {
		var b *C.float
		if len(bias) > 0 {
			b = (*C.float)(&bias[0])
		}
		n = C.ms_dnnl_team_probe(c.c, nil, C.int(c.threads), (*C.float)(&src[0]), (*C.float)(&wei[0]), b, (*C.float)(&dst[0]), nil, unsafe.Pointer(&work[0]), &buf[0], C.int(len(buf)))
	} else {
		for i, a := range args {
			if len(a) > 0 {
				ptrs[i] = unsafe.Pointer(&a[0])
			}
		}
		n = C.ms_dnnl_team_probe(nil, p.c, C.int(p.threads), nil, nil, nil, nil, &ptrs[0], unsafe.Pointer(&work[0]), &buf[0], C.int(len(buf)))
	}
	if n < 0 {
		return 0, errors.New(C.GoString(&buf[0]))
	}
	return int(n), nil
}

// ompDefault is the team size OpenMP gives a thread that sets none
// (OMP_NUM_THREADS or the cores), 0 when oneDNN's runtime cannot be told.
func ompDefault() int { return int(C.ms_dnnl_omp_default()) }
