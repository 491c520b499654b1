package cuda

import (
	bin "encoding/binary"

	cu "mstream/device/cuda"
	"mstream/kernels"
	"mstream/status"
	"mstream/tensor"
)

// Where and Unique on the GPU (src/select.cu): their output shapes depend
// on the data, so each counts on the device, reads the count back
// (kctx.readback: a copy and a stream synchronisation, as TF's GPU
// kernels do), then allocates and fills its outputs. Their Defs say
// SyncsHost, so exec never captures a plan holding them into a CUDA
// graph. The dtypes are TF 2.15's GPU registrations: Where for int8,
// uint8, int64, float, double, complex64, complex128 and bool (int32 is
// a host kernel in TF); Unique for half, bfloat16, float, double and
// every integer dtype, with int32 or int64 indices (bool and string stay
// on the host).

func init() {
	kernels.Register(kernels.Def{Op: "Where", Device: kernels.GPU, TypeAttr: "T", SyncsHost: true,
		Types: []tensor.DType{tensor.Int8, tensor.Uint8, tensor.Int64, tensor.Float, tensor.Double,
			tensor.Complex64, tensor.Complex128, tensor.Bool},
		Factory: fn(where)})
	kernels.Register(kernels.Def{Op: "Unique", Device: kernels.GPU, TypeAttr: "T", SyncsHost: true,
		Types: []tensor.DType{tensor.Half, tensor.Bfloat16, tensor.Float, tensor.Double, tensor.Int8, tensor.Int16,
			tensor.Int32, tensor.Int64, tensor.Uint8, tensor.Uint16, tensor.Uint32, tensor.Uint64},
		Factory: fn(unique)})
}

// scanChunk is select.cu's SCAN_CH, scanThreads its SCAN_T.
const (
	scanChunk   = 1024
	scanThreads = 256
)

// count turns the n 0/1 flags in pos into their exclusive prefix sum, on
// the device, and returns their total, read back to the host.
func (k kctx) count(pos *tensor.Tensor, n int64) (int64, error) {
	nb := (n + scanChunk - 1) / scanChunk
	sums, err := k.Alloc(tensor.Int64, tensor.Shape{nb + 1})
	if err != nil {
		return 0, k.Errorf(status.CodeOf(err), "scratch for %d block sums: %v", nb+1, err)
	}
	var a cu.Args
	a.Ptr(ptr(pos)).Ptr(ptr(sums)).I64(n)
	if err := k.launch(selects, "scan_blocks", k.chunkGrid(nb), scanThreads, 0, &a); err != nil {
		return 0, err
	}
	v, err := k.total(sums, nb, n)
	if err != nil {
		return 0, err
	}
	var c cu.Args
	c.Ptr(ptr(pos)).Ptr(ptr(sums)).I64(n)
	return v, k.launchN(selects, "scan_add", n, &c)
}

// chunkGrid is the grid of the per-chunk kernels over nb chunks: one
// block per chunk, at most 8 per multiprocessor (the blocks loop).
func (k kctx) chunkGrid(nb int64) int { return int(min(nb, int64(k.sms()*8))) }

// total turns the nb chunk counts in sums into their exclusive prefix sum
// on the device (scan_sums writes the total to sums[nb]) and returns the
// total, read back to the host; it is at most n.
func (k kctx) total(sums *tensor.Tensor, nb, n int64) (int64, error) {
	var b cu.Args
	b.Ptr(ptr(sums)).I64(nb)
	if err := k.launch(selects, "scan_sums", 1, scanThreads, 0, &b); err != nil {
		return 0, err
	}
	var total [8]byte
	if err := k.readback(total[:], ptr(sums)+uint64(nb*8)); err != nil {
		return 0, err
	}
	v := int64(bin.LittleEndian.Uint64(total[:]))
	if v < 0 || v > n {
		return 0, k.Errorf(status.Internal, "the device counted %d of %d elements", v, n)
	}
	return v, nil
}

func where(k kctx) error {
	x := k.Input(0)
	r := len(x.Shape)
	// Coordinates along dims of length 1 are 0: the kernel writes the
	// others, at most 8 (TF's GPU kernel takes rank 8 at most).
	meta := make([]int64, 2+2*8)
	kept := 0
	st := int64(1)
	for d := r - 1; d >= 0; d-- {
		if x.Shape[d] > 1 {
			kept++
		}
	}
	if kept > 8 {
		return k.Errorf(status.InvalidArgument, "WhereOp: Unhandled input dimensions: %d (%d longer than 1; the GPU kernel takes 8)", r, kept)
	}
	meta[0], meta[1] = int64(r), int64(kept)
	j := kept - 1
	for d := r - 1; d >= 0; d-- {
		if x.Shape[d] > 1 {
			meta[2+j], meta[10+j] = int64(d), st
			j--
		}
		st *= x.Shape[d]
	}
	n := x.NumElements()
	if n == 0 {
		_, err := k.Allocate(0, tensor.Shape{0, int64(r)})
		return err
	}
	ts := suffix(x.DType)
	nb := (n + scanChunk - 1) / scanChunk
	sums, err := k.Alloc(tensor.Int64, tensor.Shape{nb + 1})
	if err != nil {
		return k.Errorf(status.CodeOf(err), "scratch for %d chunk counts: %v", nb+1, err)
	}
	grid := k.chunkGrid(nb)
	var a cu.Args
	a.Ptr(ptr(x)).Ptr(ptr(sums)).I64(n)
	if err := k.launch(selects, "where_count_"+ts, grid, scanThreads, 0, &a); err != nil {
		return err
	}
	cnt, err := k.total(sums, nb, n)
	if err != nil {
		return err
	}
	o, err := k.Allocate(0, tensor.Shape{cnt, int64(r)})
	if err != nil || cnt == 0 || r == 0 {
		return err
	}
	if kept < r {
		if err := k.memset(ptr(o), 0, int(cnt)*r*8); err != nil {
			return err
		}
	}
	if kept == 0 {
		return nil
	}
	var b cu.Args
	b.Ptr(ptr(x)).Ptr(ptr(sums)).Ptr(ptr(o)).I64(n).I64s(meta...)
	return k.launch(selects, "where_write_"+ts, grid, scanThreads, 0, &b)
}

func unique(k kctx) error {
	x := k.Input(0)
	if len(x.Shape) != 1 {
		return k.Errorf(status.InvalidArgument, "unique expects a 1D vector.")
	}
	n := x.Shape[0]
	it := k.Node.OutTypes[1]
	if it != tensor.Int32 && it != tensor.Int64 {
		return k.Errorf(status.InvalidArgument, "out_idx is %v; want int32 or int64", it)
	}
	if n == 0 {
		if _, err := k.Allocate(0, tensor.Shape{0}); err != nil {
			return err
		}
		_, err := k.Allocate(1, tensor.Shape{0})
		return err
	}
	if it == tensor.Int32 && n > 1<<31-1 {
		return k.Errorf(status.InvalidArgument, "%d elements do not fit out_idx int32", n)
	}
	size := int64(32)
	for size < 2*n {
		size *= 2
	}
	table, err := k.Alloc(tensor.Int64, tensor.Shape{size})
	if err != nil {
		return k.Errorf(status.CodeOf(err), "scratch for a hash table of %d slots: %v", size, err)
	}
	first, err := k.Alloc(tensor.Int64, tensor.Shape{n})
	if err != nil {
		return k.Errorf(status.CodeOf(err), "scratch for %d slots: %v", n, err)
	}
	pos, err := k.Alloc(tensor.Int64, tensor.Shape{n})
	if err != nil {
		return k.Errorf(status.CodeOf(err), "scratch for %d positions: %v", n, err)
	}
	if err := k.memset(ptr(table), 0xff, int(size*8)); err != nil {
		return err
	}
	var a cu.Args
	a.Ptr(ptr(x)).I64(n).Ptr(ptr(table)).I64(size - 1).Ptr(ptr(first))
	if err := k.launchN(selects, "unique_insert_"+suffix(x.DType), n, &a); err != nil {
		return err
	}
	var b cu.Args
	b.Ptr(ptr(table)).Ptr(ptr(first)).Ptr(ptr(pos)).I64(n)
	if err := k.launchN(selects, "unique_flag", n, &b); err != nil {
		return err
	}
	cnt, err := k.count(pos, n)
	if err != nil {
		return err
	}
	y, err := k.Allocate(0, tensor.Shape{cnt})
	if err != nil {
		return err
	}
	idx, err := k.Allocate(1, tensor.Shape{n})
	if err != nil {
		return err
	}
	var c cu.Args
	c.Ptr(ptr(x)).Ptr(ptr(first)).Ptr(ptr(pos)).Ptr(ptr(y)).I64(n)
	if err := k.launchN(selects, "unique_write_"+sizeName(x.DType), n, &c); err != nil {
		return err
	}
	var d cu.Args
	d.Ptr(ptr(first)).Ptr(ptr(pos)).Ptr(ptr(idx)).I64(n)
	return k.launchN(selects, "unique_idx_"+suffix(it), n, &d)
}
