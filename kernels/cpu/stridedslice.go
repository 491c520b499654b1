package cpu

import (
	"mstream/graph"
	"mstream/kernels"
	"mstream/status"
	"mstream/tensor"
)

func init() {
	reg("StridedSlice", nil, []string{"begin", "end", "strides"}, func(n *graph.Node) (kernels.Kernel, error) {
		m := ParseStridedSliceMasks(n)
		return kernels.KernelFunc(func(ctx *kernels.Context) error { return stridedSlice(ctx, m) }), nil
	})
	reg("StridedSliceGrad", nil, []string{"shape", "begin", "end", "strides"}, func(n *graph.Node) (kernels.Kernel, error) {
		m := ParseStridedSliceMasks(n)
		return kernels.KernelFunc(func(ctx *kernels.Context) error { return stridedSliceGrad(ctx, m) }), nil
	})
}

// StridedSliceMasks are StridedSlice's five bit-mask attrs.
type StridedSliceMasks struct{ Begin, End, Ellipsis, NewAxis, Shrink int64 }

// ParseStridedSliceMasks reads a StridedSlice node's masks (absent: 0).
func ParseStridedSliceMasks(n *graph.Node) StridedSliceMasks {
	return StridedSliceMasks{
		Begin:    attrInt(n, "begin_mask", 0),
		End:      attrInt(n, "end_mask", 0),
		Ellipsis: attrInt(n, "ellipsis_mask", 0),
		NewAxis:  attrInt(n, "new_axis_mask", 0),
		Shrink:   attrInt(n, "shrink_axis_mask", 0),
	}
}

const (
	gatherNewAxis = -1
	gatherShrink  = -2
)

// StridedSliceSpec is the result of TF's strided-slice validation: per
// input dim the canonical begin and stride and the element count, and the
// output shape after new axes and shrinks.
type StridedSliceSpec struct {
	Begin, Stride, Size []int64
	Out                 tensor.Shape
}

// validateSlice follows TF's ValidateStridedSliceOp: expand the sparse
// spec (ellipsis, new axes, implicit trailing ellipsis) into one entry per
// input dim, canonicalise begin/end against masks and negative indices,
// clamp, and size each dim.
func validateSlice(ctx *kernels.Context, shape tensor.Shape, begin, end, strides []int64, m StridedSliceMasks) (*StridedSliceSpec, error) {
	if len(begin) != len(end) || len(begin) != len(strides) {
		return nil, ctx.Errorf(status.InvalidArgument, "Expected begin, end, and strides to be 1D equal size tensors, but got %d, %d and %d elements", len(begin), len(end), len(strides))
	}
	if len(begin) > 32 {
		return nil, ctx.Errorf(status.InvalidArgument, "slice spec has %d dimensions, at most 32 are supported", len(begin))
	}
	if m.Ellipsis != 0 && m.Ellipsis&(m.Ellipsis-1) != 0 {
		return nil, ctx.Errorf(status.InvalidArgument, "Multiple ellipses in slice spec not allowed")
	}
	sparseDims := len(begin)
	ellipsis := m.Ellipsis
	seen := false
	addAfter := 0
	for i := 0; i < sparseDims; i++ {
		if seen && m.NewAxis&(1<<i) != 0 {
			addAfter++
		}
		if ellipsis&(1<<i) != 0 {
			seen = true
		}
	}
	if !seen {
		ellipsis |= 1 << sparseDims
		sparseDims++
	}
	dims := len(shape)
	dBegin, dEnd, dStride := make([]int64, dims), make([]int64, dims), make([]int64, dims)
	var dBeginMask, dEndMask, dShrink int64
	var gather []int
	full := 0
	for i := 0; i < sparseDims; i++ {
		bit := int64(1) << i
		switch {
		case ellipsis&bit != 0:
			next := min(dims-(sparseDims-i)+1+addAfter, dims)
			for ; full < next; full++ {
				dStride[full] = 1
				dBeginMask |= 1 << full
				dEndMask |= 1 << full
				gather = append(gather, full)
			}
		case m.NewAxis&bit != 0:
			gather = append(gather, gatherNewAxis)
		default:
			if full >= dims {
				return nil, ctx.Errorf(status.InvalidArgument, "Index out of range using input dim %d; input has only %d dims", full, dims)
			}
			dBegin[full], dEnd[full], dStride[full] = begin[i], end[i], strides[i]
			if m.Begin&bit != 0 {
				dBeginMask |= 1 << full
			}
			if m.End&bit != 0 {
				dEndMask |= 1 << full
			}
			if m.Shrink&bit != 0 {
				dShrink |= 1 << full
				gather = append(gather, gatherShrink)
			} else {
				gather = append(gather, full)
			}
			full++
		}
	}
	spec := &StridedSliceSpec{Begin: dBegin, Stride: dStride, Size: make([]int64, dims)}
	for i := 0; i < dims; i++ {
		b, e, s, d := dBegin[i], dEnd[i], dStride[i], shape[i]
		if s == 0 {
			return nil, ctx.Errorf(status.InvalidArgument, "strides[%d] must be non-zero", i)
		}
		shrink := dShrink&(1<<i) != 0
		if shrink && s <= 0 {
			return nil, ctx.Errorf(status.InvalidArgument, "only stride 1 allowed on non-range indexing.")
		}
		lo, hi := int64(0), d
		if s < 0 {
			lo, hi = -1, d-1
		}
		canon := func(x int64, masked bool, c int) int64 {
			if masked {
				if (s > 0) == (c == 0) {
					return lo
				}
				return hi
			}
			if x < 0 {
				x += d
			}
			if x < lo {
				return lo
			}
			return min(x, hi)
		}
		if shrink {
			x := b
			if x < 0 {
				x += d
			}
			if x < 0 || x >= d {
				return nil, ctx.Errorf(status.InvalidArgument, "slice index %d of dimension %d out of bounds.", x, i)
			}
			b, e = x, x+1
		} else {
			b = canon(b, dBeginMask&(1<<i) != 0, 0)
			e = canon(e, dEndMask&(1<<i) != 0, 1)
		}
		l := e - b
		var size int64
		if l != 0 && (l < 0) == (s < 0) {
			size = l / s
			if l%s != 0 {
				size++
			}
		}
		spec.Begin[i], spec.Size[i] = b, size
	}
	spec.Out = tensor.Shape{}
	for _, g := range gather {
		switch g {
		case gatherNewAxis:
			spec.Out = append(spec.Out, 1)
		case gatherShrink:
		default:
			spec.Out = append(spec.Out, spec.Size[g])
		}
	}
	return spec, nil
}

// StridedSliceArgs reads StridedSlice's begin, end and strides (inputs 1
// to 3) and validates them against the input's shape (validateSlice); the
// CPU and GPU kernels both validate through it.
func StridedSliceArgs(ctx *kernels.Context, m StridedSliceMasks) (*StridedSliceSpec, error) {
	var v [3][]int64
	for i, what := range []string{"begin", "end", "strides"} {
		if len(ctx.Input(i+1).Shape) != 1 {
			return nil, ctx.Errorf(status.InvalidArgument, "Expected begin, end, and strides to be 1D equal size tensors, but got shape %v for %s", ctx.Input(i+1).Shape, what)
		}
		var err error
		if v[i], err = hostInts(ctx, i+1, what); err != nil {
			return nil, err
		}
	}
	return validateSlice(ctx, ctx.Input(0).Shape, v[0], v[1], v[2], m)
}

func stridedSlice(ctx *kernels.Context, m StridedSliceMasks) error {
	in := ctx.Input(0)
	spec, err := StridedSliceArgs(ctx, m)
	if err != nil {
		return err
	}
	o, err := ctx.Allocate(0, spec.Out)
	if err != nil {
		return err
	}
	forSlice(in.Shape, spec, o.NumElements(), func(k, src, run int) { copyElems(o, k, in, src, run) })
	return nil
}

// forSlice walks the n elements a strided slice of shape selects, in
// order: f(k, src, run) names run elements from k on in the slice that
// start at src in the full tensor (runs are contiguous in both).
func forSlice(shape tensor.Shape, spec *StridedSliceSpec, n int64, f func(k, src, run int)) {
	if n == 0 {
		return
	}
	r := len(shape)
	if r == 0 {
		f(0, 0, 1)
		return
	}
	st := strides(shape)
	src := int64(0)
	step := make([]int64, r)
	for i := range st {
		src += spec.Begin[i] * st[i]
		step[i] = spec.Stride[i] * st[i]
	}
	idx := make([]int64, r)
	contig := spec.Stride[r-1] == 1
	inner := spec.Size[r-1]
	for k := int64(0); k < n; {
		if contig {
			f(int(k), int(src), int(inner))
			k += inner
			idx[r-1] = inner - 1
			src += step[r-1] * (inner - 1)
		} else {
			f(int(k), int(src), 1)
			k++
		}
		for d := r - 1; d >= 0; d-- {
			idx[d]++
			src += step[d]
			if idx[d] < spec.Size[d] {
				break
			}
			src -= step[d] * idx[d]
			idx[d] = 0
		}
	}
}

// stridedSliceGrad scatters dy into zeros of the sliced input's shape
// (input 0): each element goes back where StridedSlice took it from.
// StridedSliceGradArgs checks StridedSliceGrad's inputs as TF does and
// returns the gradient's shape and the slice dy came from; the CPU and
// GPU kernels both validate through it.
func StridedSliceGradArgs(ctx *kernels.Context, m StridedSliceMasks) (tensor.Shape, *StridedSliceSpec, error) {
	dy := ctx.Input(4)
	if len(ctx.Input(0).Shape) != 1 {
		return nil, nil, ctx.Errorf(status.InvalidArgument, "shape must be 1-D, got %v", ctx.Input(0).Shape)
	}
	var v [4][]int64
	for i, what := range []string{"shape", "begin", "end", "strides"} {
		if len(ctx.Input(i).Shape) != 1 {
			return nil, nil, ctx.Errorf(status.InvalidArgument, "Expected begin, end, and strides to be 1D equal size tensors, but got shape %v for %s", ctx.Input(i).Shape, what)
		}
		var err error
		if v[i], err = hostInts(ctx, i, what); err != nil {
			return nil, nil, err
		}
	}
	shape := tensor.Shape(v[0])
	if err := shape.Validate(); err != nil {
		return nil, nil, ctx.Errorf(status.InvalidArgument, "shape: %v", err)
	}
	spec, err := validateSlice(ctx, shape, v[1], v[2], v[3], m)
	if err != nil {
		return nil, nil, err
	}
	if !spec.Out.Equal(dy.Shape) {
		return nil, nil, ctx.Errorf(status.InvalidArgument, "shape of dy was %v instead of %v", dy.Shape, spec.Out)
	}
	return shape, spec, nil
}

func stridedSliceGrad(ctx *kernels.Context, m StridedSliceMasks) error {
	dy := ctx.Input(4)
	shape, spec, err := StridedSliceGradArgs(ctx, m)
	if err != nil {
		return err
	}
	o, err := ctx.Allocate(0, shape)
	if err != nil {
		return err
	}
	clear(o.Buf)
	forSlice(shape, spec, dy.NumElements(), func(k, src, run int) { copyElems(o, src, dy, k, run) })
	return nil
}
