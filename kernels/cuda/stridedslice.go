package cuda

import (
	"mstream/status"
	"mstream/tensor"
)

// StridedSlice: TF's ValidateStridedSliceOp on the host (the same rules
// as the CPU kernel's, which the tests compare with), then one strided
// map on the device.

type sliceMasks struct{ begin, end, ellipsis, newAxis, shrink int64 }

// ssDim is one input dim of a validated strided slice.
type ssDim struct{ begin, stride, size int64 }

// stridedSpec expands the sparse spec (ellipsis, new axes, an implicit
// trailing ellipsis) to one entry per input dim, canonicalises begin and
// end against the masks and negative indices, clamps them, and sizes each
// dim; out is the output shape after new axes and shrinks.
func stridedSpec(k kctx, shape tensor.Shape, begin, end, strides []int64, m sliceMasks) ([]ssDim, tensor.Shape, error) {
	if len(begin) != len(end) || len(begin) != len(strides) {
		return nil, nil, k.Errorf(status.InvalidArgument, "Expected begin, end, and strides to be 1D equal size tensors, but got %d, %d and %d elements", len(begin), len(end), len(strides))
	}
	if len(begin) > 32 {
		return nil, nil, k.Errorf(status.InvalidArgument, "slice spec has %d dimensions, at most 32 are supported", len(begin))
	}
	if m.ellipsis&(m.ellipsis-1) != 0 {
		return nil, nil, k.Errorf(status.InvalidArgument, "Multiple ellipses in slice spec not allowed")
	}
	// New axes after the ellipsis take no input dim, so the ellipsis
	// covers that many more; without an ellipsis, one is implied at the
	// end.
	nSparse := len(begin)
	ellipsis := m.ellipsis
	newAfter, seen := 0, false
	for i := 0; i < nSparse; i++ {
		if seen && m.newAxis&(1<<i) != 0 {
			newAfter++
		}
		if ellipsis&(1<<i) != 0 {
			seen = true
		}
	}
	if !seen {
		ellipsis |= 1 << nSparse
		nSparse++
	}
	const (
		outNew    = -1
		outShrink = -2
	)
	r := len(shape)
	dims := make([]ssDim, r)
	bmask, emask, shrink := make([]bool, r), make([]bool, r), make([]bool, r)
	var ends = make([]int64, r)
	var order []int // per sparse entry: the input dim it yields, or outNew/outShrink
	full := 0
	for i := 0; i < nSparse; i++ {
		bit := int64(1) << i
		switch {
		case ellipsis&bit != 0:
			to := min(r-(nSparse-i)+1+newAfter, r)
			for ; full < to; full++ {
				dims[full].stride = 1
				bmask[full], emask[full] = true, true
				order = append(order, full)
			}
		case m.newAxis&bit != 0:
			order = append(order, outNew)
		default:
			if full >= r {
				return nil, nil, k.Errorf(status.InvalidArgument, "Index out of range using input dim %d; input has only %d dims", full, r)
			}
			dims[full].begin, ends[full], dims[full].stride = begin[i], end[i], strides[i]
			bmask[full], emask[full] = m.begin&bit != 0, m.end&bit != 0
			if m.shrink&bit != 0 {
				shrink[full] = true
				order = append(order, outShrink)
			} else {
				order = append(order, full)
			}
			full++
		}
	}
	for i := 0; i < r; i++ {
		b, e, s, d := dims[i].begin, ends[i], dims[i].stride, shape[i]
		if s == 0 {
			return nil, nil, k.Errorf(status.InvalidArgument, "strides[%d] must be non-zero", i)
		}
		if shrink[i] && s <= 0 {
			return nil, nil, k.Errorf(status.InvalidArgument, "only stride 1 allowed on non-range indexing.")
		}
		// Valid positions: [0, d] going forward, [-1, d-1] going back.
		lo, hi := int64(0), d
		if s < 0 {
			lo, hi = -1, d-1
		}
		clamp := func(x int64, masked, isEnd bool) int64 {
			if masked {
				if (s > 0) != isEnd {
					return lo
				}
				return hi
			}
			if x < 0 {
				x += d
			}
			return min(max(x, lo), hi)
		}
		if shrink[i] {
			x := b
			if x < 0 {
				x += d
			}
			if x < 0 || x >= d {
				return nil, nil, k.Errorf(status.InvalidArgument, "slice index %d of dimension %d out of bounds.", x, i)
			}
			b, e = x, x+1
		} else {
			b, e = clamp(b, bmask[i], false), clamp(e, emask[i], true)
		}
		size := int64(0)
		if l := e - b; l != 0 && (l < 0) == (s < 0) {
			size = (l + s - sign(s)) / s // ceil(l / s)
		}
		dims[i].begin, dims[i].size = b, size
	}
	out := tensor.Shape{}
	for _, g := range order {
		switch g {
		case outNew:
			out = append(out, 1)
		case outShrink:
		default:
			out = append(out, dims[g].size)
		}
	}
	return dims, out, nil
}

func sign(x int64) int64 {
	if x < 0 {
		return -1
	}
	return 1
}

func stridedSliceGPU(k kctx, m sliceMasks) error {
	in := k.Input(0)
	var v [3][]int64
	for i, what := range []string{"begin", "end", "strides"} {
		if len(k.Input(i+1).Shape) != 1 {
			return k.Errorf(status.InvalidArgument, "Expected begin, end, and strides to be 1D equal size tensors, but got shape %v for %s", k.Input(i+1).Shape, what)
		}
		var err error
		if v[i], err = hostVec(k, i+1, what); err != nil {
			return err
		}
	}
	dims, out, err := stridedSpec(k, in.Shape, v[0], v[1], v[2], m)
	if err != nil {
		return err
	}
	o, err := k.Allocate(0, out)
	if err != nil {
		return err
	}
	// The map runs over the input dims (new axes and shrunk dims are
	// size 1 there), so the element order is the output's.
	st := rowStrides(in.Shape)
	md := make([]mdim, len(dims))
	for i, d := range dims {
		md[i] = mdim{out: d.size, istr: st[i], start: d.begin, step: d.stride}
	}
	return moveLaunch(k, o, in, nil, md)
}
