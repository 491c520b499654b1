package cuda

/*
#include <dlfcn.h>
#include <stdlib.h>
#include "shim.h"

typedef struct CUgraph_st *CUgraph;
typedef struct CUgraphExec_st *CUgraphExec;
typedef struct CUgraphNode_st *CUgraphNode;

// The graph entry points, resolved from the loaded driver on first use so
// that the shared function table (and a driver without them) is untouched.
typedef struct ms_graph_fns {
	CUresult (*begin)(CUstream, int);                                           // cuStreamBeginCapture_v2
	CUresult (*end)(CUstream, CUgraph *);                                       // cuStreamEndCapture
	CUresult (*inst_flags)(CUgraphExec *, CUgraph, unsigned long long);        // cuGraphInstantiateWithFlags
	CUresult (*inst_v2)(CUgraphExec *, CUgraph, CUgraphNode *, char *, size_t); // cuGraphInstantiate_v2 (fallback)
	CUresult (*launch)(CUgraphExec, CUstream);                                  // cuGraphLaunch
	CUresult (*exec_destroy)(CUgraphExec);                                      // cuGraphExecDestroy
	CUresult (*destroy)(CUgraph);                                               // cuGraphDestroy
	CUresult (*is_capturing)(CUstream, int *);                                  // cuStreamIsCapturing (optional)
} ms_graph_fns;

// ms_graph_resolve fills f from the driver; it returns the name of the first
// required symbol missing, or NULL.
static const char *ms_graph_resolve(const ms_lib *L, ms_graph_fns *f) {
	void *h = L->h_cuda;
	*(void **)&f->begin = dlsym(h, "cuStreamBeginCapture_v2");
	if (!f->begin) return "cuStreamBeginCapture_v2";
	*(void **)&f->end = dlsym(h, "cuStreamEndCapture");
	if (!f->end) return "cuStreamEndCapture";
	*(void **)&f->inst_flags = dlsym(h, "cuGraphInstantiateWithFlags");
	*(void **)&f->inst_v2 = dlsym(h, "cuGraphInstantiate_v2");
	if (!f->inst_flags && !f->inst_v2) return "cuGraphInstantiateWithFlags";
	*(void **)&f->launch = dlsym(h, "cuGraphLaunch");
	if (!f->launch) return "cuGraphLaunch";
	*(void **)&f->exec_destroy = dlsym(h, "cuGraphExecDestroy");
	if (!f->exec_destroy) return "cuGraphExecDestroy";
	*(void **)&f->destroy = dlsym(h, "cuGraphDestroy");
	if (!f->destroy) return "cuGraphDestroy";
	*(void **)&f->is_capturing = dlsym(h, "cuStreamIsCapturing");
	return NULL;
}

#define MS_GSETCTX()                                      \
	do {                                              \
		CUresult r_ = L->cuCtxSetCurrent(c);      \
		if (r_ != 0) return -r_;                  \
	} while (0)

static int ms_graph_begin(const ms_lib *L, const ms_graph_fns *f, CUcontext c, CUstream s, int mode) {
	MS_GSETCTX();
	return f->begin(s, mode);
}
static int ms_graph_end(const ms_lib *L, const ms_graph_fns *f, CUcontext c, CUstream s, CUgraph *g) {
	MS_GSETCTX();
	return f->end(s, g);
}
static int ms_graph_instantiate(const ms_lib *L, const ms_graph_fns *f, CUcontext c, CUgraphExec *e, CUgraph g) {
	MS_GSETCTX();
	if (f->inst_flags) return f->inst_flags(e, g, 0);
	return f->inst_v2(e, g, NULL, NULL, 0);
}
static int ms_graph_launch(const ms_lib *L, const ms_graph_fns *f, CUcontext c, CUgraphExec e, CUstream s) {
	MS_GSETCTX();
	return f->launch(e, s);
}
static int ms_graph_exec_destroy(const ms_lib *L, const ms_graph_fns *f, CUcontext c, CUgraphExec e) {
	MS_GSETCTX();
	return f->exec_destroy(e);
}
static int ms_graph_destroy(const ms_lib *L, const ms_graph_fns *f, CUcontext c, CUgraph g) {
	MS_GSETCTX();
	return f->destroy(g);
}
// ms_graph_is_capturing writes 1 while s captures; -2 when the driver
// cannot say.
static int ms_graph_is_capturing(const ms_lib *L, const ms_graph_fns *f, CUcontext c, CUstream s, int *st) {
	if (!f->is_capturing) {
		*st = -2;
		return 0;
	}
	MS_GSETCTX();
	return f->is_capturing(s, st);
}
*/
import "C"

import (
	"sync"
	"unsafe"

	"mstream/device"
	"mstream/status"
)

// CU_STREAM_CAPTURE_MODE_RELAXED: a capture forbids no API call on any
// thread. Goroutines move between OS threads, so the thread-local mode
// would put its restrictions on whatever goroutine next runs on the
// capturing thread (another group's launches, an event wait), and the
// global mode on every thread of the process.
const captureModeRelaxed = 2

// ErrNotCapturable is wrapped by the error a capturing stream returns for
// work that a CUDA graph cannot hold: a copy through pageable memory (its
// staging buffer is released in stream order and would be gone when the
// graph replays), a host function (its Go callback runs once), or a
// synchronisation. The executor then drops the capture and runs the step
// the ordinary way.
var ErrNotCapturable = device.ErrNotCapturable

// notCapturableLocked refuses what on a capturing stream; the capture
// then fails at EndCapture too, since the graph would lack the work.
func (s *Stream) notCapturableLocked(what string) error {
	err := &status.Error{Code: status.Unimplemented,
		Msg:   "cuda: stream " + itoaID(int(s.id)) + " is capturing a CUDA graph: " + what + " cannot be captured",
		Inner: ErrNotCapturable}
	if s.captureErr == nil {
		s.captureErr = err
	}
	return err
}

func itoaID(i int) string {
	if i < 0 {
		return "-" + itoaID(-i)
	}
	if i < 10 {
		return string(rune('0' + i))
	}
	return itoaID(i/10) + string(rune('0'+i%10))
}

// graphFns holds the resolved graph entry points per library set (C
// memory, never freed: a loaded driver is never unloaded).
var graphFns struct {
	mu  sync.Mutex
	fns map[*Lib]*C.ms_graph_fns
	err map[*Lib]error
}

func (lib *Lib) graphTable() (*C.ms_graph_fns, error) {
	graphFns.mu.Lock()
	defer graphFns.mu.Unlock()
	if f := graphFns.fns[lib]; f != nil {
		return f, nil
	}
	if err := graphFns.err[lib]; err != nil {
		return nil, err
	}
	if graphFns.fns == nil {
		graphFns.fns = map[*Lib]*C.ms_graph_fns{}
		graphFns.err = map[*Lib]error{}
	}
	f := (*C.ms_graph_fns)(C.calloc(1, C.sizeof_ms_graph_fns))
	if f == nil {
		return nil, status.Errorf(status.ResourceExhausted, "cuda: out of host memory for the graph function table")
	}
	if miss := C.ms_graph_resolve(lib.l, f); miss != nil {
		C.free(unsafe.Pointer(f))
		err := status.Errorf(status.Unimplemented, "cuda: the driver (%s) has no %s: CUDA graphs are unavailable",
			lib.DriverPath, C.GoString(miss))
		graphFns.err[lib] = err
		return nil, err
	}
	graphFns.fns[lib] = f
	return f, nil
}

// GraphsSupported reports whether the driver has the CUDA graph entry
// points, or the error naming the one missing.
func (c *Context) GraphsSupported() error {
	_, err := c.dev.lib.graphTable()
	return err
}

// Graph is a captured CUDA graph (a template; Instantiate makes the
// launchable form).
type Graph struct {
	ctx *Context
	fns *C.ms_graph_fns
	g   C.CUgraph
}

// GraphExec is an instantiated CUDA graph. Every address its nodes use
// (device buffers, pinned host memory of its copies, the cuBLAS workspace
// of the stream it was captured on) is baked in: they must stay allocated,
// and untouched by other work while a launch runs, until Destroy.
type GraphExec struct {
	ctx *Context
	fns *C.ms_graph_fns
	e   C.CUgraphExec
}

// PrepareCapture makes the per-stream state that work on the stream may
// create lazily (the cuBLAS and cuBLASLt handles and their workspace), so
// that nothing is created while the stream captures.
func (s *Stream) PrepareCapture() error {
	if _, err := s.ctx.dev.lib.graphTable(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ctx.dev.lib.NVRTCPath == "" {
		return nil // driver only: no cuBLAS to prepare
	}
	_, err := s.blasLocked()
	return err
}

// BeginCapture starts capturing the work later enqueued on s (from any
// goroutine) into a graph, in relaxed mode: no API call is forbidden on
// any thread. Until EndCapture, the work is recorded, not run, and s
// refuses what a graph cannot hold (ErrNotCapturable). The caller makes
// sure nobody else enqueues on s meanwhile (a private stream).
func (s *Stream) BeginCapture() error {
	f, err := s.ctx.dev.lib.graphTable()
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.capturing {
		return status.Errorf(status.Internal, "cuda: stream %d is already capturing", s.id)
	}
	if err := s.check("cuStreamBeginCapture_v2", C.ms_graph_begin(s.lib(), f, s.ctx.c, s.s, captureModeRelaxed)); err != nil {
		return err
	}
	s.capturing, s.captureErr = true, nil
	s.begun.Store(true)
	return nil
}

// EndCapture ends the capture begun by BeginCapture and returns the graph.
// It returns an error, and no graph, when the capture was invalidated or a
// call on the stream failed or was refused meanwhile (that kept error is
// taken, so the stream is clean for the next capture).
func (s *Stream) EndCapture() (device.Graph, error) {
	f, err := s.ctx.dev.lib.graphTable()
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.capturing {
		return nil, status.Errorf(status.Internal, "cuda: stream %d is not capturing", s.id)
	}
	var g C.CUgraph
	r := C.ms_graph_end(s.lib(), f, s.ctx.c, s.s, &g)
	s.capturing = false
	s.begun.Store(false)
	kept := s.captureErr
	s.captureErr = nil
	if err := s.check("cuStreamEndCapture", r); err != nil {
		if g != nil {
			C.ms_graph_destroy(s.lib(), f, s.ctx.c, g)
		}
		if kept != nil {
			return nil, status.Wrap(kept, "capture ended with %v", err)
		}
		return nil, err
	}
	gr := &Graph{ctx: s.ctx, fns: f, g: g}
	if kept != nil {
		gr.Destroy()
		return nil, kept
	}
	if g == nil {
		return nil, status.Errorf(status.Internal, "cuda: cuStreamEndCapture on stream %d returned no graph", s.id)
	}
	return gr, nil
}

// CaptureBegun says whether BeginCapture started a capture on s that
// EndCapture has not ended: no driver call, for choices made per kernel
// (a stream that joined another's capture through an event wait says
// false).
func (s *Stream) CaptureBegun() bool { return s.begun.Load() }

// Capturing asks the driver whether s is capturing (false when the driver
// lacks cuStreamIsCapturing; then only BeginCapture's own flag is known).
func (s *Stream) Capturing() (bool, error) {
	f, err := s.ctx.dev.lib.graphTable()
	if err != nil {
		return false, err
	}
	var st C.int
	if err := s.check("cuStreamIsCapturing", C.ms_graph_is_capturing(s.lib(), f, s.ctx.c, s.s, &st)); err != nil {
		return false, err
	}
	if st == -2 {
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.capturing, nil
	}
	return st != 0, nil // CU_STREAM_CAPTURE_STATUS_ACTIVE or _INVALIDATED
}

// Instantiate makes the launchable graph. The template may be destroyed
// afterwards; the GraphExec does not need it.
func (g *Graph) Instantiate() (device.GraphExec, error) {
	var e C.CUgraphExec
	call := "cuGraphInstantiateWithFlags"
	if g.fns.inst_flags == nil {
		call = "cuGraphInstantiate_v2"
	}
	if err := g.ctx.check(call, C.ms_graph_instantiate(g.ctx.dev.lib.l, g.fns, g.ctx.c, &e, g.g)); err != nil {
		return nil, err
	}
	return &GraphExec{ctx: g.ctx, fns: g.fns, e: e}, nil
}

// Destroy releases the template.
func (g *Graph) Destroy() error {
	if g == nil || g.g == nil {
		return nil
	}
	err := g.ctx.check("cuGraphDestroy", C.ms_graph_destroy(g.ctx.dev.lib.l, g.fns, g.ctx.c, g.g))
	g.g = nil
	return err
}

// Launch enqueues one run of the graph on s: later work on s runs after
// it, and it runs after the work enqueued on s before. s must belong to
// the graph's context.
func (e *GraphExec) Launch(ds device.Stream) error {
	s, ok := ds.(*Stream)
	if !ok {
		return status.Errorf(status.Internal, "cuda: graph of %s launched on a %T", e.ctx, ds)
	}
	if s.ctx != e.ctx {
		return status.Errorf(status.Internal, "cuda: graph of %s launched on stream %d of %s", e.ctx, s.id, s.ctx)
	}
	return s.check("cuGraphLaunch", C.ms_graph_launch(s.lib(), e.fns, s.ctx.c, e.e, s.s))
}

// Destroy releases the instantiated graph. No launch of it may be pending
// (the caller has waited for an event after its last launch).
func (e *GraphExec) Destroy() error {
	if e == nil || e.e == nil {
		return nil
	}
	err := e.ctx.check("cuGraphExecDestroy", C.ms_graph_exec_destroy(e.ctx.dev.lib.l, e.fns, e.ctx.c, e.e))
	e.e = nil
	return err
}
