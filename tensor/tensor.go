package tensor

import (
	"fmt"
	"math"
	"slices"

	"mstream/hostmem"
)

// Tensor is a dense host tensor. Fixed-size dtypes keep their elements in
// Buf (row-major, 64-byte aligned when allocated by New); DT_STRING keeps one
// byte string per element in Strs; DT_VARIANT keeps one value per element
// in Vars (a *List for TF's TensorList). Tensors handed between kernels are
// read-only: a kernel writes only to tensors it allocated.
type Tensor struct {
	DType DType
	Shape Shape
	Buf   []byte
	Strs  [][]byte
	// Vars are never changed once set: copies of the tensor share them.
	Vars []any
}

// StringElemBytes is what one DT_STRING element costs before its bytes (a
// []byte header; TF's tstring is 24 bytes too): the size allocation limits
// count for string tensors.
const StringElemBytes = 24

// New allocates a zeroed tensor. The shape must be valid.
func New(dt DType, shape Shape) *Tensor {
	t := Shaped(dt, shape)
	n := shape.NumElements()
	switch {
	case dt.InStrs():
		t.Strs = make([][]byte, n)
	case dt == Variant:
		t.Vars = make([]any, n) //mstream:bounded New is the raw allocation: its callers are the ones checked
	default:
		t.Buf = hostmem.Alloc(int(n) * dt.Size()) //mstream:bounded New is the raw allocation: its callers are the ones checked
	}
	return t
}

// NumElements is the element count of the shape.
func (t *Tensor) NumElements() int64 { return t.Shape.NumElements() }

// ByteSize is the size of the element data (for strings, the sum of
// lengths, which elements sharing one string can make larger than memory: it
// stops at math.MaxInt64 rather than overflow).
func (t *Tensor) ByteSize() int64 {
	if t.DType == String {
		var n int64
		for _, s := range t.Strs {
			if n > math.MaxInt64-int64(len(s)) {
				return math.MaxInt64
			}
			n += int64(len(s))
		}
		return n
	}
	return int64(len(t.Buf))
}

// Check verifies that the buffer matches dtype and shape.
func (t *Tensor) Check() error {
	if err := t.Shape.Validate(); err != nil {
		return err
	}
	n := t.Shape.NumElements()
	if t.DType.InStrs() {
		if int64(len(t.Strs)) != n {
			return fmt.Errorf("%v tensor of shape %v has %d elements", t.DType, t.Shape, len(t.Strs))
		}
		return nil
	}
	if t.DType == Variant {
		if int64(len(t.Vars)) != n {
			return fmt.Errorf("variant tensor of shape %v has %d elements", t.Shape, len(t.Vars))
		}
		return nil
	}
	if !t.DType.Fixed() {
		return fmt.Errorf("dtype %v is not supported in tensors", t.DType)
	}
	if int64(len(t.Buf)) != n*int64(t.DType.Size()) {
		return fmt.Errorf("%v tensor of shape %v needs %d bytes, has %d", t.DType, t.Shape, n*int64(t.DType.Size()), len(t.Buf))
	}
	return nil
}

// Reshaped returns a tensor sharing t's data with another shape of the same
// element count.
func (t *Tensor) Reshaped(s Shape) *Tensor {
	v := Shaped(t.DType, s)
	v.Buf, v.Strs, v.Vars = t.Buf, t.Strs, t.Vars
	return v
}

// Shaped returns a tensor of dtype dt and a copy of shape s, without
// data: up to rank 4 the tensor and its shape are one allocation (a Run
// makes several small tensors, feeds and views, each of which took two).
func Shaped(dt DType, s Shape) *Tensor {
	return new(Header).Set(dt, s, nil)
}

// Header is a tensor with room for its shape up to rank 4. Kept inside
// a larger record (a feed's copy, an output's buffer, Shaped's own), the
// tensor and its shape cost no allocation of their own.
type Header struct {
	t    Tensor
	dims [4]int64
}

// Set makes h's tensor dtype dt, a copy of shape s (in h's own room up
// to rank 4, beyond it a new slice) and bytes buf, and returns it. The
// tensor lives as long as h does; Set again replaces it.
func (h *Header) Set(dt DType, s Shape, buf []byte) *Tensor {
	var shape Shape
	if len(s) <= len(h.dims) {
		shape = append(Shape(h.dims[:0:len(h.dims)]), s...)
	} else {
		shape = s.Clone()
	}
	h.t = Tensor{DType: dt, Shape: shape, Buf: buf}
	return &h.t
}

// Tensor returns the tensor Set made last.
func (h *Header) Tensor() *Tensor { return &h.t }

// Clone returns a deep copy (variant values, immutable, are shared).
func (t *Tensor) Clone() *Tensor {
	c := New(t.DType, t.Shape)
	switch {
	case t.DType.InStrs():
		for i, s := range t.Strs {
			c.Strs[i] = append([]byte(nil), s...)
		}
	case t.DType == Variant:
		copy(c.Vars, t.Vars)
	default:
		copy(c.Buf, t.Buf)
	}
	return c
}

// String summarises dtype and shape, as error messages show tensors.
func (t *Tensor) String() string { return fmt.Sprintf("%v%v", t.DType, t.Shape) }

// Typed element views. The tensor's dtype must match.
func (t *Tensor) F32() []float32 { return hostmem.View[float32](t.Buf) }
func (t *Tensor) F64() []float64 { return hostmem.View[float64](t.Buf) }
func (t *Tensor) I32() []int32   { return hostmem.View[int32](t.Buf) }
func (t *Tensor) I64() []int64   { return hostmem.View[int64](t.Buf) }
func (t *Tensor) I16() []int16   { return hostmem.View[int16](t.Buf) }
func (t *Tensor) I8() []int8     { return hostmem.View[int8](t.Buf) }
func (t *Tensor) U8() []uint8    { return t.Buf }
func (t *Tensor) U16() []uint16  { return hostmem.View[uint16](t.Buf) }
func (t *Tensor) U32() []uint32  { return hostmem.View[uint32](t.Buf) }
func (t *Tensor) U64() []uint64  { return hostmem.View[uint64](t.Buf) }
func (t *Tensor) Bools() []bool  { return hostmem.View[bool](t.Buf) }
func (t *Tensor) C64() []complex64 {
	return hostmem.View[complex64](t.Buf)
}
func (t *Tensor) C128() []complex128 { return hostmem.View[complex128](t.Buf) }

// Int64s returns the elements of an int32 or int64 tensor widened to int64;
// shape-like inputs (Reshape's shape, axes, sizes) are read with it.
func (t *Tensor) Int64s() ([]int64, error) {
	return t.AppendInt64s(nil)
}

// AppendInt64s appends the elements of an int32 or int64 tensor, widened
// to int64, to dst.
func (t *Tensor) AppendInt64s(dst []int64) ([]int64, error) {
	switch t.DType {
	case Int32:
		v := t.I32()
		dst = slices.Grow(dst, len(v))
		for _, x := range v {
			dst = append(dst, int64(x))
		}
		return dst, nil
	case Int64:
		return append(dst, t.I64()...), nil
	}
	return nil, fmt.Errorf("expected an int32 or int64 tensor, got %v", t.DType)
}

// Scalar helpers build host tensors for tests and constants.
func ScalarF32(v float32) *Tensor { t := New(Float, nil); t.F32()[0] = v; return t }
func ScalarI32(v int32) *Tensor   { t := New(Int32, nil); t.I32()[0] = v; return t }
func ScalarI64(v int64) *Tensor   { t := New(Int64, nil); t.I64()[0] = v; return t }

// FromF32 etc. make a tensor holding a copy of v with the given shape.
func FromF32(shape Shape, v []float32) *Tensor {
	t := New(Float, shape)
	copy(t.F32(), v)
	return t
}
func FromF64(shape Shape, v []float64) *Tensor { t := New(Double, shape); copy(t.F64(), v); return t }
func FromI32(shape Shape, v []int32) *Tensor   { t := New(Int32, shape); copy(t.I32(), v); return t }
func FromI64(shape Shape, v []int64) *Tensor   { t := New(Int64, shape); copy(t.I64(), v); return t }
func FromBool(shape Shape, v []bool) *Tensor   { t := New(Bool, shape); copy(t.Bools(), v); return t }
func FromStrings(shape Shape, v []string) *Tensor {
	t := New(String, shape)
	for i := range t.Strs {
		t.Strs[i] = []byte(v[i])
	}
	return t
}
