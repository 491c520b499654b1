package dataset

import (
	"fmt"

	"mstream/hostmem"
	"mstream/status"
	"mstream/tensor"
)

// Dataset is an immutable description of a sequence of elements, the value
// a dataset op's DT_VARIANT scalar holds. Two iterators of one dataset are
// independent passes over it.
type Dataset interface {
	// Iterate starts a new pass.
	Iterate() (Iterator, error)
}

// Iterator is one pass over a dataset. Its calls are serialised by its
// owner (an iterator resource, or the iterator that wraps it); an iterator
// that runs work of its own in the background (prefetch, parallel map)
// synchronises that itself.
type Iterator interface {
	// Next returns the next element, or end once the sequence is over. An
	// error belongs to this element: the caller may call Next again.
	Next() (elem []*tensor.Tensor, end bool, err error)
	// Close stops background work and releases buffered elements; the
	// iterator is not used again.
	Close()
}

// ErrEnd is TF's end-of-sequence error: OUT_OF_RANGE with TF's text.
func errEnd() error { return status.Errorf(status.OutOfRange, "End of sequence") }

// newTensor allocates a tensor an iterator makes (a batch, a slice, a read
// record) after checking its size against lim: elements outlive the
// kernel that asked for them, so no kernels.Context allocates them.
func newTensor(lim hostmem.Limit, dt tensor.DType, shape tensor.Shape) (*tensor.Tensor, error) {
	if err := shape.Validate(); err != nil {
		return nil, status.InvalidArg("%v", err)
	}
	elem := int64(dt.Size())
	if dt == tensor.String {
		elem = tensor.StringElemBytes
	}
	if err := lim.Check(shape.NumElements(), elem, func() string { return fmt.Sprintf("tensor with shape%v and type %v", shape, dt) }); err != nil {
		return nil, err
	}
	return tensor.New(dt, shape), nil //mstream:bounded lim.Check above
}

// sizeOf is what an element holds: its components' data and headers.
func sizeOf(e []*tensor.Tensor) int64 {
	var n int64
	for _, t := range e {
		n += 64
		switch {
		case t.DType.InStrs():
			n += t.ByteSize() + int64(len(t.Strs))*tensor.StringElemBytes
		case t.DType == tensor.Variant:
			n += int64(len(t.Vars)) * 16
		default:
			n += int64(len(t.Buf))
		}
	}
	return n
}

// budget counts the bytes of the elements a transformation holds at once
// (a batch being gathered, a shuffle or prefetch buffer) against a Limit,
// so that a buffer sized by the graph fails with RESOURCE_EXHAUSTED
// naming what filled it, rather than the process running out of memory.
type budget struct {
	lim  hostmem.Limit
	what string
	used int64
}

func (b *budget) take(e []*tensor.Tensor) error {
	b.used += sizeOf(e)
	if max := b.lim.Max(); b.used > max {
		return status.Errorf(status.ResourceExhausted, "%s: the elements held are more than the %d bytes allocator %s may give", b.what, max, b.lim.Name())
	}
	return nil
}

func (b *budget) give(e []*tensor.Tensor) { b.used -= sizeOf(e) }

// own copies t into memory of its own: a kernel's input buffer belongs to
// the step that made it and is reused after it, while a dataset keeps its
// tensors for as long as it lives. Strings and variants hold no such
// buffer.
func own(lim hostmem.Limit, t *tensor.Tensor) (*tensor.Tensor, error) {
	if t.DType.InStrs() || t.DType == tensor.Variant {
		return t, nil
	}
	c, err := newTensor(lim, t.DType, t.Shape)
	if err != nil {
		return nil, err
	}
	copy(c.Buf, t.Buf)
	return c, nil
}

// elemBytes is the size of one element of t's dtype as sliced from a
// batch (0 for strings, resources and variants, which are per element).
func elemBytes(t *tensor.Tensor) int {
	if t.DType.InStrs() || t.DType == tensor.Variant {
		return 0
	}
	return t.DType.Size()
}

// slice is row i of t (t's first dimension), copied.
func slice(lim hostmem.Limit, t *tensor.Tensor, i int64) (*tensor.Tensor, error) {
	out, err := newTensor(lim, t.DType, t.Shape[1:])
	if err != nil {
		return nil, err
	}
	n := out.NumElements()
	switch {
	case t.DType.InStrs():
		copy(out.Strs, t.Strs[i*n:(i+1)*n])
	case t.DType == tensor.Variant:
		copy(out.Vars, t.Vars[i*n:(i+1)*n])
	default:
		b := n * int64(elemBytes(t))
		copy(out.Buf, t.Buf[i*b:(i+1)*b])
	}
	return out, nil
}

// setRow copies src into row i of dst (dst's first dimension), src having
// dst's row shape or fewer elements per dimension (padded batches place
// it at the row's origin).
func setRow(dst *tensor.Tensor, i int64, src *tensor.Tensor) {
	row := dst.Shape[1:]
	n := row.NumElements()
	if src.Shape.Equal(row) {
		switch {
		case dst.DType.InStrs():
			copy(dst.Strs[i*n:], src.Strs)
		case dst.DType == tensor.Variant:
			copy(dst.Vars[i*n:], src.Vars)
		default:
			b := n * int64(elemBytes(dst))
			copy(dst.Buf[i*b:(i+1)*b], src.Buf)
		}
		return
	}
	// Padded: walk src's elements and place each at its index in row.
	es := int64(elemBytes(dst))
	idx := make([]int64, len(src.Shape))
	total := src.NumElements()
	for k := int64(0); k < total; k++ {
		off := int64(0)
		for d := range idx {
			off = off*row[d] + idx[d]
		}
		at := i*n + off
		switch {
		case dst.DType.InStrs():
			dst.Strs[at] = src.Strs[k]
		case dst.DType == tensor.Variant:
			dst.Vars[at] = src.Vars[k]
		default:
			copy(dst.Buf[at*es:(at+1)*es], src.Buf[k*es:(k+1)*es])
		}
		for d := len(idx) - 1; d >= 0; d-- {
			idx[d]++
			if idx[d] < src.Shape[d] {
				break
			}
			idx[d] = 0
		}
	}
}
