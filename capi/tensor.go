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
	"mstream/status"
	"mstream/tensor"
)

// sizeofTString is sizeof(TF_TString), the element size of TF_STRING data.
const sizeofTString = C.sizeof_TF_TString

// goTensor copies a caller's TF_Tensor into a Go tensor; the caller keeps
// (and may reuse) its tensor after the call.
func goTensor(t *C.TF_Tensor) (*tensor.Tensor, error) {
	if t == nil {
		return nil, status.InvalidArg("tensor is NULL")
	}
	// The struct's fields read directly (internal.h): a cgo call per
	// field and dimension cost more than the copy of a small feed.
	dt := tensor.DType(t.dtype)
	nd := int(t.num_dims)
	// A view of the caller's dims, read during this call only: the tensor
	// made below copies it (tensor.Shaped).
	var shape tensor.Shape
	if nd > 0 {
		shape = unsafe.Slice((*int64)(unsafe.Pointer(t.dims)), nd)
	}
	if err := shape.Validate(); err != nil {
		return nil, status.InvalidArg("tensor shape %v: %v", shape, err)
	}
	n := shape.NumElements()
	var data unsafe.Pointer
	var size int64
	if t.buf != nil {
		data, size = t.buf.data, int64(t.buf.len)
	}
	if data == nil && size > 0 {
		// TF_AllocateTensor could not get the memory it was asked for.
		return nil, status.InvalidArg("%v tensor of shape %v has no data: its %d bytes could not be allocated", dt, shape, size)
	}
	if dt == tensor.String {
		if size < n*sizeofTString {
			return nil, status.InvalidArg("string tensor of shape %v has %d bytes, needs %d", shape, size, n*sizeofTString)
		}
		out := tensor.New(dt, shape) //mstream:bounded the caller's tensor holds these n TF_TStrings already
		for i := int64(0); i < n; i++ {
			ts := C.ms_tstring_at(t, C.size_t(i))
			out.Strs[i] = nonNil(goBytes(unsafe.Pointer(C.TF_StringGetDataPointer(ts)), C.TF_StringGetSize(ts)))
		}
		return out, nil
	}
	if dt == tensor.Resource {
		// TF's TF_TensorToTensor: a scalar whose bytes are a serialized
		// ResourceHandleProto.
		if nd != 0 {
			return nil, status.InvalidArg("Malformed TF_RESOURCE tensor: expected a scalar, got a tensor with shape %v", shape)
		}
		return &tensor.Tensor{DType: dt, Shape: tensor.Shape{}, Strs: [][]byte{nonNil(goBytes(data, C.size_t(size)))}}, nil
	}
	if !dt.Valid() || !dt.Fixed() {
		return nil, status.InvalidArg("tensors of dtype %v (%d) are not supported", dt, int(dt))
	}
	need := n * int64(dt.Size())
	if size < need {
		return nil, status.InvalidArg("%v tensor of shape %v has %d bytes, needs %d", dt, shape, size, need)
	}
	out := tensor.Shaped(dt, shape)
	out.Buf = hostmem.Alloc(int(need)) //mstream:bounded the caller's tensor holds these bytes already
	if need > 0 {
		copy(out.Buf, unsafe.Slice((*byte)(data), need))
	}
	return out, nil
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
