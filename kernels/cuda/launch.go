package cuda

import (
	"strings"

	cu "mstream/device/cuda"
	"mstream/graph"
	"mstream/kernels"
	"mstream/status"
	"mstream/tensor"
)

const threads = 256

// kctx is what a GPU kernel call needs beyond kernels.Context.
type kctx struct {
	*kernels.Context
	s *cu.Stream
}

// begin checks that the kernel runs with a CUDA stream and a device
// allocator, which the executor provides for GPU nodes.
func begin(ctx *kernels.Context) (kctx, error) {
	s, ok := ctx.Stream.(*cu.Stream)
	if !ok {
		return kctx{}, ctx.Errorf(status.FailedPrecondition, "GPU kernel called without a CUDA stream (got %T)", ctx.Stream)
	}
	if ctx.Alloc == nil {
		return kctx{}, ctx.Errorf(status.FailedPrecondition, "GPU kernel called without a device allocator")
	}
	return kctx{ctx, s}, nil
}

// wrap names the node in a device error, in TF's form, keeping its code and cause.
func (k kctx) wrap(err error) error { return kernels.WrapNode(err, k.Node) }

// function returns kernel name of p in the stream's context (a map read
// once it has been looked up: cu.Context.Function).
func (k kctx) function(p *cu.Program, name string) (*cu.Function, error) {
	f, err := k.s.Context().Function(p, name)
	if err != nil {
		return nil, k.wrap(err)
	}
	return f, nil
}

// launch runs kernel name of program p over grid x block threads.
func (k kctx) launch(p *cu.Program, name string, grid, block int, shmem int, a *cu.Args) error {
	return k.launch3(p, name, cu.D1(grid), cu.D1(block), shmem, a)
}

// dryRun, set only by tests, takes every launch, copy, memset and GEMM in
// place of the device, so the Go side of the kernels runs without a GPU
// (and an emulator of the programs can compute, see emu_test.go). A nil
// field drops that kind of work.
var dryRun *dryDevice

type dryDevice struct {
	launch func(p *cu.Program, name string, grid, block cu.Dim3, shmem int, a *cu.Args) error
	copy   func(dst, src, n uint64)
	fill   func(dst uint64, v byte, n int)
	gemm   func(g cu.GemmArgs)
	gemmEx func(g cu.GemmArgs, t cu.GemmType)
	// copyIn stands in for h2d.
	copyIn func(dst uint64, src []byte)
	// readback stands in for readback's copy and wait; nil leaves it to
	// the (absent) stream, which the dry run takes as a direct device call.
	readback func(dst []byte, src uint64)
	// smallGEMM stands in for the device's MSTREAM_GPU_SMALL_GEMM.
	smallGEMM cu.SmallGEMM
}

func (k kctx) launch3(p *cu.Program, name string, grid, block cu.Dim3, shmem int, a *cu.Args) error {
	if dryRun != nil {
		if dryRun.launch == nil {
			return nil
		}
		// Copies: the hook is a func value, which would make name and a
		// escape (a heap allocation per launch) on the real path too.
		nm, ac := strings.Clone(name), *a
		return dryRun.launch(p, nm, grid, block, shmem, &ac)
	}
	f, err := k.function(p, name)
	if err != nil {
		return err
	}
	return k.wrap(k.s.Launch(f, grid, block, shmem, a))
}

// launchN runs an elementwise kernel over n items with a grid-stride loop:
// enough blocks to fill the device, never more than the items need.
func (k kctx) launchN(p *cu.Program, name string, n int64, a *cu.Args) error {
	if n <= 0 {
		return nil
	}
	return k.launchRows(p, name, 1, n, a)
}

// launchRows runs a kernel over rows grid rows (blockIdx.y), each a
// grid-stride loop over at most n items: enough blocks a row for the
// longest, never more than 16 per multiprocessor over all rows.
func (k kctx) launchRows(p *cu.Program, name string, rows int, n int64, a *cu.Args) error {
	blocks := (n + threads - 1) / threads
	if lim := int64(max(k.sms()*16/rows, 1)); blocks > lim {
		blocks = lim
	}
	return k.launch3(p, name, cu.Dim3{X: uint32(blocks), Y: uint32(rows), Z: 1}, cu.D1(threads), 0, a)
}

// sms is the device's multiprocessor count (an H100's in a dry run).
func (k kctx) sms() int {
	if dryRun != nil {
		return 132
	}
	return k.s.Context().Device().Multiprocessors()
}

// d2d copies n bytes between device buffers on the kernel's stream.
func (k kctx) d2d(dst, src, n uint64) error {
	if dryRun != nil {
		if dryRun.copy != nil {
			dryRun.copy(dst, src, n)
		}
		return nil
	}
	return k.wrap(k.s.D2D(dst, src, n))
}

// memset fills n bytes of device memory with v on the kernel's stream.
func (k kctx) memset(dst uint64, v byte, n int) error {
	if dryRun != nil {
		if dryRun.fill != nil {
			dryRun.fill(dst, v, n)
		}
		return nil
	}
	return k.wrap(k.s.Memset(dst, v, n))
}

// h2d copies host bytes (a kernel's small parameter tables) to device
// memory on the kernel's stream; src may be reused once h2d returns (a
// pageable source is staged). A stream being captured into a CUDA graph
// refuses the pageable copy (ErrNotCapturable), so such a step runs node
// by node.
func (k kctx) h2d(dst uint64, src []byte) error {
	if dryRun != nil && dryRun.copyIn != nil {
		dryRun.copyIn(dst, src)
		return nil
	}
	return k.wrap(k.s.H2D(dst, src))
}

// readback copies len(dst) bytes of device memory at src to dst and
// waits for the stream: the only place a GPU kernel blocks on the device,
// for the ops whose output shape depends on the data (Where, Unique; see
// select.go). A stream being captured into a CUDA graph refuses the wait
// (ErrNotCapturable), and exec never captures a plan holding such a node.
func (k kctx) readback(dst []byte, src uint64) error {
	if dryRun != nil && dryRun.readback != nil {
		dryRun.readback(dst, src)
		return nil
	}
	if err := k.s.D2H(dst, src); err != nil {
		return k.wrap(err)
	}
	return k.wrap(k.s.Sync())
}

// ptr is the device address of a device tensor.
func ptr(t *tensor.Tensor) uint64 { return cu.Ptr(t.Buf) }

// suffix names a dtype in kernel names.
func suffix(dt tensor.DType) string {
	switch dt {
	case tensor.Float:
		return "f32"
	case tensor.Double:
		return "f64"
	case tensor.Int32:
		return "i32"
	case tensor.Int64:
		return "i64"
	case tensor.Half:
		return "f16"
	case tensor.Bfloat16:
		return "bf16"
	case tensor.Int8:
		return "i8"
	case tensor.Int16:
		return "i16"
	case tensor.Uint8:
		return "u8"
	case tensor.Uint16:
		return "u16"
	case tensor.Uint32:
		return "u32"
	case tensor.Uint64:
		return "u64"
	case tensor.Bool:
		return "b"
	case tensor.Complex64:
		return "c64"
	case tensor.Complex128:
		return "c128"
	}
	return ""
}

// sizeName names an element size in the per-size kernels.
func sizeName(dt tensor.DType) string {
	switch dt.Size() {
	case 1:
		return "1"
	case 2:
		return "2"
	case 4:
		return "4"
	case 8:
		return "8"
	case 16:
		return "16"
	}
	return ""
}

var (
	floatTypes = []tensor.DType{tensor.Float, tensor.Double}
	numTypes   = []tensor.DType{tensor.Float, tensor.Double, tensor.Int32, tensor.Int64}
	castTypes  = []tensor.DType{tensor.Float, tensor.Double, tensor.Half, tensor.Bfloat16, tensor.Int8, tensor.Int16,
		tensor.Int32, tensor.Int64, tensor.Uint8, tensor.Uint16, tensor.Uint32, tensor.Uint64, tensor.Bool}
	// fixedTypes are the dtypes the size-generic kernels move.
	fixedTypes = []tensor.DType{tensor.Float, tensor.Double, tensor.Half, tensor.Bfloat16, tensor.Int8, tensor.Int16,
		tensor.Int32, tensor.Int64, tensor.Uint8, tensor.Uint16, tensor.Uint32, tensor.Uint64, tensor.Bool,
		tensor.Complex64, tensor.Complex128}
)

func reg(op, typeAttr string, types []tensor.DType, host []string, f kernels.Factory) {
	kernels.Register(kernels.Def{Op: op, Device: kernels.GPU, TypeAttr: typeAttr, Types: types, HostMemory: host, Factory: f})
}

func fn(f func(k kctx) error) kernels.Factory {
	return func(*graph.Node) (kernels.Kernel, error) {
		return kernels.KernelFunc(func(ctx *kernels.Context) error {
			k, err := begin(ctx)
			if err != nil {
				return err
			}
			return f(k)
		}), nil
	}
}
