package main

/*
#include "internal.h"
*/
import "C"

import (
	"fmt"
	"math"
	"unsafe"

	"mstream/hostmem"
	"mstream/proto/pbparse"
	"mstream/proto/tfpb"
	"mstream/session"
	"mstream/status"
	"mstream/tensor"
)

// sizeofTString is sizeof(TF_TString), the element size of TF_STRING data.
const sizeofTString = C.sizeof_TF_TString

// goTensor copies a caller's TF_Tensor into a Go tensor; the caller keeps
// (and may reuse) its tensor after the call.
func goTensor(t *C.TF_Tensor) (*tensor.Tensor, error) {
	v, err := viewOf(t)
	if err != nil || v.out != nil {
		return v.out, err
	}
	out := tensor.Shaped(v.dt, v.shape)
	out.Buf = hostmem.Alloc(len(v.data)) //mstream:bounded the caller's tensor holds these bytes already
	copy(out.Buf, v.data)
	return out, nil
}

// cView is a caller's TF_Tensor checked and seen from Go, valid during the
// call only: a fixed-size tensor's dtype, shape and bytes (views of the
// caller's memory), or out, the Go copy of a string or resource tensor.
type cView struct {
	dt    tensor.DType
	shape tensor.Shape
	data  []byte
	out   *tensor.Tensor
}

func viewOf(t *C.TF_Tensor) (cView, error) {
	if t == nil {
		return cView{}, status.InvalidArg("tensor is NULL")
	}
	// The struct's fields read directly (internal.h): a cgo call per
	// field and dimension cost more than the copy of a small feed.
	dt := tensor.DType(t.dtype)
	nd := int(t.num_dims)
	// A view of the caller's dims, read during this call only: the tensor
	// made from it copies it (tensor.Shaped, feedCopies).
	var shape tensor.Shape
	if nd > 0 {
		shape = unsafe.Slice((*int64)(unsafe.Pointer(t.dims)), nd)
	}
	if err := shape.Validate(); err != nil {
		return cView{}, status.InvalidArg("tensor shape %v: %v", shape, err)
	}
	n := shape.NumElements()
	var data unsafe.Pointer
	var size int64
	if t.buf != nil {
		data, size = t.buf.data, int64(t.buf.len)
	}
	if data == nil && size > 0 {
		// TF_AllocateTensor could not get the memory it was asked for.
		return cView{}, status.InvalidArg("%v tensor of shape %v has no data: its %d bytes could not be allocated", dt, shape, size)
	}
	if dt == tensor.String {
		if size < n*sizeofTString {
			return cView{}, status.InvalidArg("string tensor of shape %v has %d bytes, needs %d", shape, size, n*sizeofTString)
		}
		out := tensor.New(dt, shape) //mstream:bounded the caller's tensor holds these n TF_TStrings already
		for i := int64(0); i < n; i++ {
			ts := C.ms_tstring_at(t, C.size_t(i))
			out.Strs[i] = nonNil(goBytes(unsafe.Pointer(C.TF_StringGetDataPointer(ts)), C.TF_StringGetSize(ts)))
		}
		return cView{out: out}, nil
	}
	if dt == tensor.Resource {
		// TF's TF_TensorToTensor: a scalar whose bytes are a serialized
		// ResourceHandleProto.
		if nd != 0 {
			return cView{}, status.InvalidArg("Malformed TF_RESOURCE tensor: expected a scalar, got a tensor with shape %v", shape)
		}
		return cView{out: &tensor.Tensor{DType: dt, Shape: tensor.Shape{}, Strs: [][]byte{nonNil(goBytes(data, C.size_t(size)))}}}, nil
	}
	if !dt.Valid() || !dt.Fixed() {
		return cView{}, status.InvalidArg("tensors of dtype %v (%d) are not supported", dt, int(dt))
	}
	need := n * int64(dt.Size())
	if size < need {
		return cView{}, status.InvalidArg("%v tensor of shape %v has %d bytes, needs %d", dt, shape, size, need)
	}
	v := cView{dt: dt, shape: shape}
	if need > 0 {
		v.data = unsafe.Slice((*byte)(data), need)
	}
	return v, nil
}

// feedCopies copies a Run's feeds into Go tensors as goTensor does, the
// fixed-size ones into one block (their headers with their dims up to
// rank 4, their bytes, each at hostmem.Align): blk's memory when blk is
// not nil, grown as needed, else new. A Run of small feeds spent more on
// allocating their copies, two each, than on copying.
// The copy of vals[i] goes to feeds[i].Tensor; on error, bad is the index
// of the tensor at fault.
func feedCopies(feeds []session.Feed, vals []*C.TF_Tensor, blk *feedBlock) (bad int, err error) {
	if blk == nil {
		blk = new(feedBlock)
	}
	// The views are checked and sized first, all of them, so that the
	// block grows at most once; they see the caller's memory and are
	// cleared before returning.
	if cap(blk.views) < len(vals) {
		blk.views = make([]cView, len(vals))
	}
	vs := blk.views[:len(vals)]
	defer clear(vs)
	var bytes, fixed int
	for i, ct := range vals {
		v, err := viewOf(ct)
		if err != nil {
			return i, err
		}
		vs[i] = v
		if v.out == nil {
			bytes += (len(v.data) + hostmem.Align - 1) &^ (hostmem.Align - 1)
			fixed++
		}
	}
	if cap(blk.heads) < fixed {
		blk.heads = make([]tensor.Header, fixed)
	}
	if cap(blk.buf) < bytes {
		blk.buf = hostmem.Alloc(bytes) //mstream:bounded the caller's tensors hold these bytes already
	}
	blk.used = bytes
	heads, buf := blk.heads[:fixed], blk.buf[:bytes]
	for i, v := range vs {
		if v.out != nil {
			feeds[i].Tensor = v.out
			continue
		}
		nb := len(v.data)
		t := heads[0].Set(v.dt, v.shape, buf[:nb:nb])
		heads = heads[1:]
		copy(t.Buf, v.data)
		buf = buf[(nb+hostmem.Align-1)&^(hostmem.Align-1):]
		feeds[i].Tensor = t
	}
	return 0, nil
}

// feedBlock is the memory of a Run's fixed-size feed copies (feedCopies).
type feedBlock struct {
	views []cView // feedCopies' scratch, clear between calls
	heads []tensor.Header
	buf   []byte // from hostmem.Alloc: aligned at its start
	used  int    // the bytes of buf the last Run's copies took
}

// maxFeedBlock is the size up to which a block is kept for reuse whatever
// the last Run used of it. A larger one is kept only while Runs fill at
// least half of it: a session fed large tensors now and then does not
// hold their size between Runs of small ones, and one fed large tensors
// Run after Run (a batch of 256 sequences: 8 MiB) reuses its block
// rather than making and zeroing a new one each Run, which also grew
// the heap, on fresh pages, through the first dozen Runs.
const maxFeedBlock = 4 << 20

// reusable says a Run's block may serve another (feedBlocks).
func (b *feedBlock) reusable() bool {
	return cap(b.buf) <= max(maxFeedBlock, 2*b.used)
}

func outOfMemory(t *tensor.Tensor) error {
	return status.Errorf(status.ResourceExhausted, "OOM when allocating tensor with shape%v and type %v for the caller", t.Shape, t.DType)
}

// cTensor copies a Go tensor into a new TF_Tensor owned by the caller.
func cTensor(t *tensor.Tensor) (*C.TF_Tensor, error) {
	if t == nil {
		return nil, status.Errorf(status.Internal, "no tensor to return")
	}
	var dims *C.int64_t
	if len(t.Shape) > 0 {
		dims = (*C.int64_t)(unsafe.Pointer(&t.Shape[0]))
	}
	nd := C.int(len(t.Shape))
	if t.DType == tensor.String {
		// Elements may share one Go string (Fill, Tile, BroadcastTo);
		// each becomes its own copy in C, so the total is checked first.
		total, heads := t.ByteSize(), int64(len(t.Strs))*sizeofTString
		total = min(total, math.MaxInt64-heads) + heads
		if err := (hostmem.Limit{}).Check(total, 1,
			func() string { return fmt.Sprintf("the caller's copy of tensor with shape%v and type string", t.Shape) }); err != nil {
			return nil, err
		}
		ct := C.ms_new_tensor(C.TF_STRING, dims, nd, C.size_t(len(t.Strs))*sizeofTString)
		if ct == nil {
			return nil, outOfMemory(t)
		}
		for i, s := range t.Strs {
			var p *C.char
			if len(s) > 0 {
				p = (*C.char)(unsafe.Pointer(&s[0]))
			}
			C.TF_StringCopy(C.ms_tstring_at(ct, C.size_t(i)), p, C.size_t(len(s)))
		}
		return ct, nil
	}
	if t.DType == tensor.Resource {
		// TF's TF_TensorFromTensor hands out a scalar resource as its
		// serialized ResourceHandleProto.
		if len(t.Shape) != 0 || len(t.Strs) != 1 {
			return nil, status.Errorf(status.InvalidArgument, "Unexpected non-scalar DT_RESOURCE tensor seen (shape: %v).", t.Shape)
		}
		ct := C.ms_new_tensor(C.TF_RESOURCE, nil, 0, C.size_t(len(t.Strs[0])))
		if ct == nil {
			return nil, outOfMemory(t)
		}
		if len(t.Strs[0]) > 0 {
			C.memcpy(C.TF_TensorData(ct), unsafe.Pointer(&t.Strs[0][0]), C.size_t(len(t.Strs[0])))
		}
		return ct, nil
	}
	ct := C.ms_new_tensor(C.TF_DataType(t.DType), dims, nd, C.size_t(len(t.Buf)))
	if ct == nil {
		return nil, outOfMemory(t)
	}
	if len(t.Buf) > 0 {
		// Go's copy, not C.memcpy: one cgo call fewer per fetch.
		copy(unsafe.Slice((*byte)(ct.buf.data), len(t.Buf)), t.Buf)
	}
	return ct, nil
}

//export msTensorFromProto
func msTensorFromProto(b *C.TF_Buffer, s *C.TF_Status) *C.TF_Tensor {
	defer recoverTo(s, "TF_TensorFromProto")
	p := &tfpb.TensorProto{}
	if err := pbparse.Binary("Unparseable TensorProto", "TF_TensorFromProto's buffer", bufferBytes(b), p); err != nil {
		setStatus(s, err)
		return nil
	}
	t, err := tensor.FromProto(p)
	if err != nil {
		setStatus(s, status.Wrap(err, "TF_TensorFromProto"))
		return nil
	}
	ct, err := cTensor(t)
	setStatus(s, err)
	return ct
}
