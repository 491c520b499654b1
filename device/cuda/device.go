package cuda

/*
#include "shim.h"
*/
import "C"

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"mstream/device"
	"mstream/status"
)

// CUdevice_attribute values used here.
const (
	attrMultiprocessorCount = 16
	attrComputeMajor        = 75
	attrComputeMinor        = 76
)

// Device is one GPU as the driver shows it (CUDA_VISIBLE_DEVICES applies:
// ordinals count visible devices only). It implements device.Device with
// its primary context; more contexts come from NewContext.
type Device struct {
	lib     *Lib
	ordinal int
	cu      C.CUdevice
	path    string // Name, formed once (a device step names its device per Run)

	name       string
	pciBusID   string
	major      int
	minor      int
	sms        int
	totalBytes int64

	mu          sync.Mutex
	numContexts int
	contexts    []*Context // [0] is the primary context
	pinned      *PinnedMemory
	staging     *HostAllocator // shared staging for copies, made on first use

	streamIDs atomic.Int64
	// smallGEMM is MSTREAM_GPU_SMALL_GEMM as the last session set it
	// (a SmallGEMM); the GEMM kernels read it per call.
	smallGEMM atomic.Int32
}

// SmallGEMM says how the GEMM kernels (kernels/cuda) choose between their
// own small-batch kernel and cuBLAS/cuBLASLt (MSTREAM_GPU_SMALL_GEMM).
type SmallGEMM int32

// The SmallGEMM modes.
const (
	SmallGEMMAuto  SmallGEMM = iota // the small kernel where the left operand has few rows
	SmallGEMMOff                    // always cuBLAS/cuBLASLt
	SmallGEMMForce                  // the small kernel wherever it supports the dtype
)

// ParseSmallGEMM reads MSTREAM_GPU_SMALL_GEMM's value: auto, 0 or 1.
func ParseSmallGEMM(v string) (SmallGEMM, bool) {
	switch v {
	case "auto":
		return SmallGEMMAuto, true
	case "0":
		return SmallGEMMOff, true
	case "1":
		return SmallGEMMForce, true
	}
	return 0, false
}

// SetSmallGEMM sets how the device's GEMM kernels choose their
// implementation (auto, 0 or 1, as ParseSmallGEMM reads it). The setting
// is the device's, so the process's: a session sets it when it opens the
// GPU, and the most recent session's value holds for all.
func (d *Device) SetSmallGEMM(v string) error {
	m, ok := ParseSmallGEMM(v)
	if !ok {
		return status.InvalidArg("cuda: small-GEMM mode %q: accepted values are auto, 0, 1", v)
	}
	d.smallGEMM.Store(int32(m))
	return nil
}

// SmallGEMM is the device's small-GEMM mode (SetSmallGEMM).
func (d *Device) SmallGEMM() SmallGEMM { return SmallGEMM(d.smallGEMM.Load()) }

// Devices lists the GPUs the driver shows, in ordinal order. The list is
// read once per Lib.
func (lib *Lib) Devices() ([]*Device, error) {
	lib.devOnce.Do(func() { lib.devs, lib.devErr = lib.enumerate() })
	return lib.devs, lib.devErr
}

func (lib *Lib) enumerate() ([]*Device, error) {
	var n C.int
	if err := lib.cuErr("cuDeviceGetCount", C.ms_device_count(lib.l, &n), ""); err != nil {
		return nil, noCUDA("%v", err)
	}
	var devs []*Device
	for i := 0; i < int(n); i++ {
		d := &Device{lib: lib, ordinal: i, numContexts: 1, path: fmt.Sprintf("/job:localhost/replica:0/task:0/device:GPU:%d", i)}
		d.pinned = &PinnedMemory{dev: d}
		var name [256]C.char
		var pci [64]C.char
		var mem C.size_t
		var maj, min, sms C.int
		r := C.ms_device_info(lib.l, C.int(i), &d.cu, &name[0], C.int(len(name)), &pci[0], C.int(len(pci)), &mem,
			&maj, &min, &sms)
		if r != 0 {
			return nil, noCUDA("%v", lib.cuErr("cuDeviceGet/cuDeviceGetAttribute", r, fmt.Sprintf("for GPU %d", i)))
		}
		d.name = C.GoString(&name[0])
		d.pciBusID = C.GoString(&pci[0])
		d.totalBytes = int64(mem)
		d.major, d.minor, d.sms = int(maj), int(min), int(sms)
		devs = append(devs, d)
	}
	return devs, nil
}

// Ordinal is the device's index among the visible GPUs.
func (d *Device) Ordinal() int { return d.ordinal }

// Name is TF's full name, /job:localhost/replica:0/task:0/device:GPU:<ordinal>.
func (d *Device) Name() string { return d.path }

// Type is "GPU".
func (d *Device) Type() string { return "GPU" }

// ProductName is the driver's name for the GPU, e.g. "NVIDIA H100 80GB HBM3".
func (d *Device) ProductName() string { return d.name }

// Arch is the compute capability as major*10+minor (90 for Hopper).
func (d *Device) Arch() int { return d.major*10 + d.minor }

// Multiprocessors is the SM count, which sizes grids.
func (d *Device) Multiprocessors() int { return d.sms }

// MemoryBytes is the device's total memory.
func (d *Device) MemoryBytes() int64 { return d.totalBytes }

// Desc is TF's physical_device_desc.
func (d *Device) Desc() string {
	return fmt.Sprintf("device: %d, name: %s, pci bus id: %s, compute capability: %d.%d",
		d.ordinal, d.name, d.pciBusID, d.major, d.minor)
}

// SetContexts sets how many contexts streams are spread over
// (TF_GPU_CONTEXT_COUNT): context 0 is the primary context, the others are
// created on first use. It must be called before any stream exists.
func (d *Device) SetContexts(n int) error {
	if n < 1 {
		return status.InvalidArg("cuda: context count %d for GPU:%d must be at least 1", n, d.ordinal)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.contexts) > 1 {
		return status.Errorf(status.FailedPrecondition, "cuda: GPU:%d already has %d contexts", d.ordinal, len(d.contexts))
	}
	d.numContexts = n
	return nil
}

// Contexts is how many contexts streams can be spread over.
func (d *Device) Contexts() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return max(d.numContexts, 1)
}

// Primary returns the device's primary context, retaining it on first use.
func (d *Device) Primary() (*Context, error) { return d.Context(0) }

// Context returns context i (0 = primary), creating it on first use. Memory,
// modules, streams and events belong to the context that made them; events
// may be waited on from streams of any context of the device.
func (d *Device) Context(i int) (*Context, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if i < 0 || i >= max(d.numContexts, 1) {
		return nil, status.InvalidArg("cuda: context %d of GPU:%d out of range [0, %d)", i, d.ordinal, max(d.numContexts, 1))
	}
	for len(d.contexts) <= i {
		k := len(d.contexts)
		var c C.CUcontext
		var err error
		if k == 0 {
			err = d.lib.cuErr("cuDevicePrimaryCtxRetain", C.ms_primary_retain(d.lib.l, &c, d.cu), d.where())
		} else {
			err = d.lib.cuErr("cuCtxCreate", C.ms_ctx_create(d.lib.l, &c, d.cu), d.where())
		}
		if err != nil {
			return nil, err
		}
		d.contexts = append(d.contexts, newContext(d, c, k))
	}
	return d.contexts[i], nil
}

func (d *Device) where() string { return fmt.Sprintf("on GPU:%d", d.ordinal) }

// NewStream creates a non-blocking stream in context ctx.
func (d *Device) NewStream(ctx int) (device.Stream, error) {
	c, err := d.Context(ctx)
	if err != nil {
		return nil, err
	}
	return c.NewStream()
}

// NewEvent creates a timing-free event on the primary context (it can be
// recorded and waited on from streams of any context of the device).
func (d *Device) NewEvent() (device.Event, error) {
	c, err := d.Primary()
	if err != nil {
		return nil, err
	}
	return c.NewEvent()
}

// Memory is the primary context's device memory (see ContextMemory).
func (d *Device) Memory() device.Memory { return &DeviceMemory{dev: d, ctx: 0} }

// ContextMemory is context i's device memory: allocators serving streams
// of context i take their regions from it.
func (d *Device) ContextMemory(i int) *DeviceMemory { return &DeviceMemory{dev: d, ctx: i} }

// HostMemory is the device's pinned host memory, which copies use without
// staging.
func (d *Device) HostMemory() device.HostAddressable { return d.pinned }

// Context is a CUDA context: the unit that owns device memory, modules,
// streams and events. Every call the package makes sets the context current
// on the calling thread inside the same cgo call.
type Context struct {
	dev *Device
	c   C.CUcontext
	id  int // 0 for the primary context

	sticky atomic.Pointer[error]

	// modMu guards the map of module slots only; a load holds its slot's
	// lock (Module).
	modMu   sync.Mutex
	modules map[*Program]*moduleSlot
	// funcs maps (program, kernel name) to its function for launches: a
	// map that is replaced, never changed, so a launch reads it without a
	// lock or an allocation (Function). funcMu orders its replacements.
	funcMu sync.Mutex
	funcs  atomic.Pointer[map[funcKey]*Function]

	// Events recycled for the executor (Stream.PooledEvent), and the
	// timing anchor of traced steps (Stream.Anchor).
	evMu     sync.Mutex
	evFree   []*Event
	anchorMu sync.Mutex
	anchor   *Event
	anchorAt time.Time
}

func newContext(d *Device, c C.CUcontext, id int) *Context {
	return &Context{dev: d, c: c, id: id, modules: map[*Program]*moduleSlot{}}
}

// Device is the context's device.
func (c *Context) Device() *Device { return c.dev }

// ID is 0 for the primary context, 1.. for the extra contexts.
func (c *Context) ID() int { return c.id }

// String names the context in messages: "GPU:0" or "GPU:0 context 2".
func (c *Context) String() string {
	if c.id == 0 {
		return fmt.Sprintf("GPU:%d", c.dev.ordinal)
	}
	return fmt.Sprintf("GPU:%d context %d", c.dev.ordinal, c.id)
}

// Err is the sticky device error seen on this context, if any: once set,
// the context cannot run anything again.
func (c *Context) Err() error {
	if p := c.sticky.Load(); p != nil {
		return *p
	}
	return nil
}

// check converts a wrapper result into an error naming call and this
// context, and remembers a sticky error.
func (c *Context) check(call string, r C.int) error {
	if r == 0 {
		return nil
	}
	err := c.dev.lib.cuErr(call, r, "on "+c.String())
	if ce := asCallError(err); ce != nil && ce.Sticky {
		c.sticky.CompareAndSwap(nil, &err)
	}
	return err
}

func asCallError(err error) *CallError {
	if e, ok := err.(*status.Error); ok {
		if ce, ok := e.Inner.(*CallError); ok {
			return ce
		}
	}
	return nil
}

// Synchronize waits for all work of the context (tests and shutdown only).
func (c *Context) Synchronize() error {
	return c.check("cuCtxSynchronize", C.ms_ctx_sync(c.dev.lib.l, c.c))
}

// MemInfo returns the free and total device memory as this context sees it.
func (c *Context) MemInfo() (free, total int64, err error) {
	var f, t C.size_t
	if err := c.check("cuMemGetInfo_v2", C.ms_mem_info(c.dev.lib.l, c.c, &f, &t)); err != nil {
		return 0, 0, err
	}
	return int64(f), int64(t), nil
}

// Destroy releases an extra context (not the primary one) after its
// streams are closed and its memory freed.
func (c *Context) Destroy() error {
	if c.id == 0 {
		return status.Errorf(status.FailedPrecondition, "cuda: the primary context of GPU:%d is not destroyed", c.dev.ordinal)
	}
	c.modMu.Lock()
	for p, e := range c.modules {
		if m := e.mod.Load(); m != nil {
			C.ms_module_unload(c.dev.lib.l, c.c, m.m)
		}
		delete(c.modules, p)
	}
	c.modMu.Unlock()
	return c.check("cuCtxDestroy_v2", C.ms_ctx_destroy(c.dev.lib.l, c.c))
}

var _ device.Device = (*Device)(nil)
