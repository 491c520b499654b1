package device

import (
	"errors"
	"time"

	"mstream/status"
)

// What only some devices can do. A caller asserts a stream or device to
// one of these interfaces and, where the assertion fails, takes the
// device-neutral path (or reports that the device cannot do it). Kernel
// launch is not here: a device's kernels know their own stream type.

// HostFuncs is a stream that runs host functions in its order: the host
// device's kernels, cuLaunchHostFunc on a GPU.
type HostFuncs interface {
	// Enqueue runs fn when the stream reaches this point; later work waits
	// for fn to return. fn must not block on this stream.
	Enqueue(fn func()) error
}

// EventPool is a stream whose device recycles events: creating and
// destroying a device event can cost microseconds.
type EventPool interface {
	// PooledEvent returns an event that streams of this stream's context
	// can record.
	PooledEvent() (PooledEvent, error)
}

// PooledEvent is an event from an EventPool.
type PooledEvent interface {
	Event
	// Release gives the event back to its pool; it must have completed
	// (or never been recorded).
	Release()
}

// PeerCopier is a stream that can copy from the memory of another device
// of its kind (cuMemcpyPeerAsync on a GPU).
type PeerCopier interface {
	// CopyPeer copies size bytes from src, memory of from's device, to dst
	// on this stream's device.
	CopyPeer(dst, src uint64, from Stream, size uint64) error
}

// Delayer is a stream that can put a delay of its own in its order (the
// stream sanitizer on a device whose streams do not pause by themselves,
// as the host device's jittered streams do): a GPU runs a spin kernel.
type Delayer interface {
	// Delay enqueues an item that keeps the stream busy for about d.
	Delay(d time.Duration) error
}

// Timer is a stream that can time its work on the device.
type Timer interface {
	// TimingEvent returns a new timing event of the stream's context; the
	// caller destroys it with DestroyEvent once it has completed.
	TimingEvent() (Event, error)
	// DestroyEvent destroys an event from TimingEvent.
	DestroyEvent(e Event) error
	// Anchor returns the context's timing anchor, an event recorded and
	// synchronised at the host time returned, renewed when older than
	// maxAge.
	Anchor(maxAge time.Duration) (Event, time.Time, error)
	// Elapsed is the device time from timing event a to b.
	Elapsed(a, b Event) (time.Duration, error)
}

// Capturer is a stream whose work can be captured into a graph and
// replayed (CUDA graphs).
type Capturer interface {
	// NewCaptureStream makes a private stream of the same context and
	// staging, ready to capture into.
	NewCaptureStream() (Stream, error)
	// BeginCapture starts capturing: work enqueued until EndCapture is
	// recorded, not run. Work a graph cannot hold fails with
	// ErrNotCapturable meanwhile.
	BeginCapture() error
	// EndCapture stops capturing and returns the graph (nil on error).
	EndCapture() (Graph, error)
}

// Graph is captured stream work.
type Graph interface {
	// Instantiate makes an executable instance of the graph.
	Instantiate() (GraphExec, error)
	Destroy() error
}

// GraphExec is an instantiated graph.
type GraphExec interface {
	// Launch enqueues the whole graph on s.
	Launch(s Stream) error
	Destroy() error
}

// ErrNotCapturable is wrapped by an error of work that a graph capture
// cannot hold (a host function, a synchronisation, a pageable copy).
var ErrNotCapturable = errors.New("not capturable into a graph")

// Staging is a device's pinned host memory that its streams stage
// pageable copies through.
type Staging interface {
	// Live is the number of staging buffers in use.
	Live() int
	// Bytes is the pinned memory held.
	Bytes() uint64
	Close()
}

// StagedDevice is a device whose streams stage copies from and to pageable
// memory through pinned buffers, and can give a stream its own staging
// (TF_PER_STREAM_HOST_ALLOCATOR).
type StagedDevice interface {
	NewStaging(name string, limit uint64) Staging
	// NewStreamStaged creates a stream in context ctx staging through st
	// (nil: the device's shared staging).
	NewStreamStaged(ctx int, st Staging) (Stream, error)
}

// ContextMemory is a device whose contexts have their own memory.
type ContextMemory interface {
	MemoryOf(ctx int) Memory
	// NewEventIn creates an event in context ctx.
	NewEventIn(ctx int) (Event, error)
}

// Enqueue runs fn in s's order if s runs host functions (HostFuncs), and
// fails with UNIMPLEMENTED otherwise.
func Enqueue(s Stream, fn func()) error {
	h, ok := s.(HostFuncs)
	if !ok {
		return status.Errorf(status.Unimplemented, "stream %d (%T) cannot run host functions", s.ID(), s)
	}
	return h.Enqueue(fn)
}

// SmallGEMMSetter is a GPU whose GEMM kernels choose between a kernel of
// their own and a BLAS library by MSTREAM_GPU_SMALL_GEMM's value (auto,
// 0, 1); the session sets it when it opens the GPU.
type SmallGEMMSetter interface {
	SetSmallGEMM(mode string) error
}

// GPU is what a session needs of a GPU beyond Device.
type GPU interface {
	Device
	// Ordinal is the GPU's index among the visible ones.
	Ordinal() int
	// Desc describes the GPU for the log (product, memory, architecture).
	Desc() string
	// SetContexts makes the process use n contexts on the GPU (only
	// before its first context is used).
	SetContexts(n int) error
	// MemInfo is the GPU's free and total memory now.
	MemInfo() (free, total int64, err error)
}

// gpuOpener is the registered way to list the process's GPUs.
var gpuOpener func() ([]GPU, error)

// RegisterGPUs makes open the way OpenGPUs lists the process's GPUs. The
// package implementing a GPU device calls it from init, so only programs
// that link that package (and its kernels) look for GPUs.
func RegisterGPUs(open func() ([]GPU, error)) { gpuOpener = open }

// OpenGPUs lists the process's usable GPUs: UNAVAILABLE when no GPU
// support is linked in or the driver cannot be loaded.
func OpenGPUs() ([]GPU, error) {
	if gpuOpener == nil {
		return nil, status.Errorf(status.Unavailable, "no GPU support is linked into this program")
	}
	return gpuOpener()
}

// Packer is a stream that can gather device blocks into others with one
// kernel launch (a GPU), so that a Run's fetches leave the device in one
// copy instead of one each (exec's packFetches).
type Packer interface {
	// Pack enqueues, for each block, a copy of Size bytes from Src to Dst
	// (device addresses of the stream's context); at most MaxPack blocks
	// a call.
	Pack(blocks []PackBlock) error
}

// PackBlock is one block of a Pack.
type PackBlock struct{ Dst, Src, Size uint64 }

// MaxPack is how many blocks one Pack takes.
const MaxPack = 16
