package cpu

import (
	"mstream/kernels"
	"mstream/status"
	"mstream/tensor"
)

// The argument checks of the data-movement ops, exported so that every
// device's kernel for an op validates exactly as the CPU kernel does (same
// codes, same messages) and the kernels differ only in how they move the
// data. Each reads the op's host-memory inputs from ctx.

// SplitArgs checks Split's split_dim and num_split against the value
// (input 1) and returns the axis and the equal output sizes.
func SplitArgs(ctx *kernels.Context) (axis int, sizes []int64, err error) {
	v := ctx.Input(1)
	ax, err := scalarInt(ctx, 0, "split_dim")
	if err != nil {
		return 0, nil, err
	}
	r := len(v.Shape)
	if ax < -int64(r) || ax >= int64(r) {
		return 0, nil, ctx.Errorf(status.InvalidArgument, "-input rank(-%d) <= split_dim < input rank (%d), but got %d", r, r, ax)
	}
	if ax < 0 {
		ax += int64(r)
	}
	n := int64(len(ctx.Node.OutTypes))
	if n <= 0 {
		return 0, nil, ctx.Errorf(status.InvalidArgument, "Number of ways to split should be > 0, but got %d", n)
	}
	d := v.Shape[ax]
	if d%n != 0 {
		return 0, nil, ctx.Errorf(status.InvalidArgument, "Number of ways to split should evenly divide the split dimension, but got split_dim %d (size = %d) and num_split %d", ax, d, n)
	}
	sizes = make([]int64, n)
	for i := range sizes {
		sizes[i] = d / n
	}
	return int(ax), sizes, nil
}

// SplitVArgs checks SplitV's size_splits (one -1 allowed) and split_dim
// against the value (input 0) and returns the axis and the output sizes.
func SplitVArgs(ctx *kernels.Context) (axis int, sizes []int64, err error) {
	v := ctx.Input(0)
	if sizes, err = hostInts(ctx, 1, "size_splits"); err != nil {
		return 0, nil, err
	}
	ax, err := scalarInt(ctx, 2, "split_dim")
	if err != nil {
		return 0, nil, err
	}
	n := len(ctx.Node.OutTypes)
	if len(ctx.Input(1).Shape) != 1 || len(sizes) != n {
		return 0, nil, ctx.Errorf(status.InvalidArgument, "size_splits must be a vector of num_split = %d elements, got shape %v", n, ctx.Input(1).Shape)
	}
	r := len(v.Shape)
	if ax < -int64(r) || ax >= int64(r) {
		return 0, nil, ctx.Errorf(status.InvalidArgument, "-input rank(-%d) <= split_dim < input rank (%d), but got %d", r, r, ax)
	}
	if ax < 0 {
		ax += int64(r)
	}
	d := v.Shape[ax]
	unknown, sum := -1, int64(0)
	for i, s := range sizes {
		switch {
		case s == -1:
			if unknown >= 0 {
				return 0, nil, ctx.Errorf(status.InvalidArgument, "Only one dimensions can have a value of -1. Second one found at dimension %d", i)
			}
			unknown = i
		case s < 0:
			return 0, nil, ctx.Errorf(status.InvalidArgument, "Split size at index %d must be >= 0. Got: %d", i, s)
		default:
			sum += s
		}
	}
	if unknown < 0 && sum != d || unknown >= 0 && sum > d {
		return 0, nil, ctx.Errorf(status.InvalidArgument, "Determined shape must either match input shape along split_dim exactly if fully specified, or be less than the size of the input along split_dim if not fully specified.  Got: %d", sum)
	}
	if unknown >= 0 {
		sizes[unknown] = d - sum
	}
	return int(ax), sizes, nil
}

// SliceArgs checks Slice's begin and size (-1 = to the end) and returns
// begin and the output shape.
func SliceArgs(ctx *kernels.Context) (begin []int64, out tensor.Shape, err error) {
	in := ctx.Input(0)
	if begin, err = hostInts(ctx, 1, "begin"); err != nil {
		return nil, nil, err
	}
	size, err := hostInts(ctx, 2, "size")
	if err != nil {
		return nil, nil, err
	}
	r := len(in.Shape)
	if len(ctx.Input(1).Shape) != 1 || len(ctx.Input(2).Shape) != 1 || len(begin) != r || len(size) != r {
		return nil, nil, ctx.Errorf(status.InvalidArgument, "Expected begin and size arguments to be 1-D tensors of size %d, but got shapes %v and %v instead.", r, ctx.Input(1).Shape, ctx.Input(2).Shape)
	}
	out = make(tensor.Shape, r)
	for i := 0; i < r; i++ {
		b, s, d := begin[i], size[i], in.Shape[i]
		if s == -1 {
			s = d - b
		}
		if b < 0 || b > d {
			return nil, nil, ctx.Errorf(status.InvalidArgument, "Expected begin[%d] in [0, %d], but got %d", i, d, b)
		}
		if s < 0 || s > d-b {
			return nil, nil, ctx.Errorf(status.InvalidArgument, "Expected size[%d] in [0, %d], but got %d", i, d-b, size[i])
		}
		out[i] = s
	}
	return begin, out, nil
}

// TileArgs checks Tile's multiples and returns them and the output shape.
func TileArgs(ctx *kernels.Context) (multiples []int64, out tensor.Shape, err error) {
	in := ctx.Input(0)
	m, err := hostInts(ctx, 1, "multiples")
	if err != nil {
		return nil, nil, err
	}
	r := len(in.Shape)
	if len(ctx.Input(1).Shape) != 1 || len(m) != r {
		return nil, nil, ctx.Errorf(status.InvalidArgument, "Expected multiples argument to be a vector of length %d but got length %d", r, len(m))
	}
	out = make(tensor.Shape, r)
	for i, x := range m {
		if x < 0 {
			return nil, nil, ctx.Errorf(status.InvalidArgument, "Expected multiples[%d] >= 0, but got %d", i, x)
		}
		out[i] = in.Shape[i] * x
	}
	if err := out.Validate(); err != nil {
		return nil, nil, ctx.Errorf(status.InvalidArgument, "output shape: %v", err)
	}
	return m, out, nil
}

// PadArgs checks Pad's paddings (input 1) and, for PadV2, that
// constant_values cv is a scalar; it returns the paddings (before and
// after, per dimension) and the output shape.
func PadArgs(ctx *kernels.Context, cv *tensor.Tensor) (p []int64, out tensor.Shape, err error) {
	in := ctx.Input(0)
	r := len(in.Shape)
	if p, err = paddings(ctx, 1, r); err != nil {
		return nil, nil, err
	}
	if cv != nil && len(cv.Shape) != 0 {
		return nil, nil, ctx.Errorf(status.InvalidArgument, "constant_values must be a scalar. Got: %v", cv.Shape)
	}
	out = make(tensor.Shape, r)
	for i := 0; i < r; i++ {
		out[i] = p[2*i] + in.Shape[i] + p[2*i+1]
	}
	if err := out.Validate(); err != nil {
		return nil, nil, ctx.Errorf(status.InvalidArgument, "output shape: %v", err)
	}
	return p, out, nil
}

// MirrorPadArgs checks MirrorPad's paddings against the mode (REFLECT
// leaves one less element to mirror) and returns them and the output shape.
func MirrorPadArgs(ctx *kernels.Context, reflect bool) (p []int64, out tensor.Shape, err error) {
	in := ctx.Input(0)
	r := len(in.Shape)
	if p, err = paddings(ctx, 1, r); err != nil {
		return nil, nil, err
	}
	off := int64(0)
	if reflect {
		off = 1
	}
	out = make(tensor.Shape, r)
	for i := 0; i < r; i++ {
		d := in.Shape[i]
		if p[2*i] > d-off || p[2*i+1] > d-off {
			return nil, nil, ctx.Errorf(status.InvalidArgument, "paddings must be no greater than the dimension size: %d, %d greater than %d", p[2*i], p[2*i+1], d-off)
		}
		out[i] = p[2*i] + d + p[2*i+1]
	}
	return p, out, nil
}

// ReverseArgs checks ReverseV2's axes and returns, per dimension, whether
// it is reversed.
func ReverseArgs(ctx *kernels.Context) (reversed []bool, err error) {
	in := ctx.Input(0)
	axes, err := hostInts(ctx, 1, "axis")
	if err != nil {
		return nil, err
	}
	if len(ctx.Input(1).Shape) != 1 {
		return nil, ctx.Errorf(status.InvalidArgument, "'axis' must be 1-D, not %v", ctx.Input(1).Shape)
	}
	r := len(in.Shape)
	rev := make([]bool, r)
	for i, a := range axes {
		if a < -int64(r) || a >= int64(r) {
			return nil, ctx.Errorf(status.InvalidArgument, "'axis'[%d] = %d is out of valid range [%d, %d)", i, a, -r, r)
		}
		if a < 0 {
			a += int64(r)
		}
		if rev[a] {
			return nil, ctx.Errorf(status.InvalidArgument, "axis %d specified more than once.", a)
		}
		rev[a] = true
	}
	return rev, nil
}

// BroadcastToArgs checks BroadcastTo's shape against the input (numpy
// rules, the input's dimensions aligned to the right) and returns it.
func BroadcastToArgs(ctx *kernels.Context) (out tensor.Shape, err error) {
	in := ctx.Input(0)
	dims, err := hostInts(ctx, 1, "shape")
	if err != nil {
		return nil, err
	}
	if len(ctx.Input(1).Shape) != 1 {
		return nil, ctx.Errorf(status.InvalidArgument, "shape must be a vector, got %v", ctx.Input(1).Shape)
	}
	out = tensor.Shape(dims)
	if err := out.Validate(); err != nil {
		return nil, ctx.Errorf(status.InvalidArgument, "shape: %v", err)
	}
	r, ri := len(out), len(in.Shape)
	bad := ri > r
	for i := 0; i < r && !bad; i++ {
		if k := i - (r - ri); k >= 0 && in.Shape[k] != out[i] && in.Shape[k] != 1 {
			bad = true
		}
	}
	if bad {
		return nil, ctx.Errorf(status.InvalidArgument, "Unable to broadcast tensor of shape %v to tensor of shape %v", in.Shape, out)
	}
	return out, nil
}
