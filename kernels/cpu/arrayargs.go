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

// ConcatArgs reads Concat's concat_dim (input 0, values after it) or, for
// ConcatV2 (v1 false), its axis (the last input), checks the values'
// shapes and returns them, the non-negative axis and the output shape.
// Concat's out-of-range axis carries TF's wording (the GPU kernel had it,
// the CPU kernel had normAxis's); ConcatV2's keeps the one both had.
// The shape is appended to dst[:0], as GatherArgs does.
func ConcatArgs(ctx *kernels.Context, v1 bool, dst tensor.Shape) (values []*tensor.Tensor, axis int, out tensor.Shape, err error) {
	var ax int64
	if v1 {
		if ax, err = scalarInt(ctx, 0, "concat_dim"); err != nil {
			return nil, 0, nil, err
		}
		values = ctx.Inputs[1:]
	} else {
		n := ctx.NumInputs() - 1
		if n < 1 {
			return nil, 0, nil, ctx.Errorf(status.InvalidArgument, "ConcatV2 needs at least one value input")
		}
		av, k, err := hostInt(ctx, n, "axis")
		if err != nil {
			return nil, 0, nil, err
		}
		if k != 1 {
			return nil, 0, nil, ctx.Errorf(status.InvalidArgument, "axis must be a scalar")
		}
		ax, values = av, ctx.Inputs[:n]
	}
	if len(values) < 1 {
		return nil, 0, nil, ctx.Errorf(status.InvalidArgument, "concat needs at least one value input")
	}
	first := values[0]
	r := len(first.Shape)
	if r == 0 {
		return nil, 0, nil, ctx.Errorf(status.InvalidArgument, "Can't concatenate scalars (use tf.stack instead)")
	}
	if v1 && (ax < -int64(r) || ax >= int64(r)) {
		return nil, 0, nil, ctx.Errorf(status.InvalidArgument, "ConcatOp : Expected concatenating dimensions in the range [%d, %d), but got %d", -r, r, ax)
	}
	if axis, err = normAxis(ctx, ax, r); err != nil {
		return nil, 0, nil, err
	}
	out = append(dst[:0], first.Shape...)
	out[axis] = 0
	for i, in := range values {
		s := in.Shape
		if len(s) != r {
			return nil, 0, nil, ctx.Errorf(status.InvalidArgument, "ConcatOp : Ranks of all input tensors should match: shape[0] = %v vs. shape[%d] = %v", first.Shape, i, s)
		}
		for j := range s {
			if j != axis && s[j] != first.Shape[j] {
				return nil, 0, nil, ctx.Errorf(status.InvalidArgument, "ConcatOp : Dimension %d in both shapes must be equal: shape[0] = %v vs. shape[%d] = %v", j, first.Shape, i, s)
			}
		}
		out[axis] += s[axis]
	}
	return values, axis, out, nil
}

// PackArgs checks Pack's inputs (one shape, at least one) against axis
// (in [-rank-1, rank]) and returns the non-negative axis and the output
// shape.
func PackArgs(ctx *kernels.Context, axis int64) (ax int, out tensor.Shape, err error) {
	n := ctx.NumInputs()
	if n < 1 {
		return 0, nil, ctx.Errorf(status.InvalidArgument, "Pack needs at least one input")
	}
	first := ctx.Input(0)
	r := len(first.Shape)
	if axis < -int64(r)-1 || axis > int64(r) {
		return 0, nil, ctx.Errorf(status.InvalidArgument, "axis = %d not in [%d, %d)", axis, -r-1, r+1)
	}
	if axis < 0 {
		axis += int64(r) + 1
	}
	for i := 1; i < n; i++ {
		if !ctx.Input(i).Shape.Equal(first.Shape) {
			return 0, nil, ctx.Errorf(status.InvalidArgument, "Shapes of all inputs must match: values[0].shape = %v != values[%d].shape = %v", first.Shape, i, ctx.Input(i).Shape)
		}
	}
	out = append(append(append(tensor.Shape{}, first.Shape[:axis]...), int64(n)), first.Shape[axis:]...)
	return int(axis), out, nil
}

// UnpackArgs checks Unpack's axis and num against the value (input 0) and
// returns the non-negative axis and the shape of each output.
func UnpackArgs(ctx *kernels.Context, axis int64) (ax int, out tensor.Shape, err error) {
	v := ctx.Input(0)
	r := int64(len(v.Shape))
	if axis < -r || axis >= r {
		return 0, nil, ctx.Errorf(status.InvalidArgument, "axis = %d not in [%d, %d)", axis, -r, r)
	}
	if axis < 0 {
		axis += r
	}
	n := int64(len(ctx.Node.OutTypes))
	if v.Shape[axis] != n {
		return 0, nil, ctx.Errorf(status.InvalidArgument, "Input shape axis %d must equal %d, got shape %v", axis, n, v.Shape)
	}
	out = append(append(tensor.Shape{}, v.Shape[:axis]...), v.Shape[axis+1:]...)
	return int(axis), out, nil
}

// TransposeArgs checks Transpose's perm (a permutation of the input's
// dims) and returns it and the output shape.
func TransposeArgs(ctx *kernels.Context) (perm []int64, out tensor.Shape, err error) {
	in := ctx.Input(0)
	if perm, err = hostInts(ctx, 1, "perm"); err != nil {
		return nil, nil, err
	}
	r := len(in.Shape)
	if len(perm) != r {
		return nil, nil, ctx.Errorf(status.InvalidArgument, "transpose expects a vector of size %d. But input(1) is a vector of size %d", r, len(perm))
	}
	seen := make([]bool, r)
	out = make(tensor.Shape, r)
	for i, p := range perm {
		if p < 0 || p >= int64(r) {
			return nil, nil, ctx.Errorf(status.InvalidArgument, "%d is out of range [0 .. %d)", p, r)
		}
		if seen[p] {
			return nil, nil, ctx.Errorf(status.InvalidArgument, "%d is duplicated in perm", p)
		}
		seen[p] = true
		out[i] = in.Shape[p]
	}
	return perm, out, nil
}

// GatherArgs checks GatherV2's axis (input 2) and batch_dims (the attr,
// as given) against params and indices and returns the non-negative
// batch_dims and axis and the output shape; the index bounds are the
// kernel's to check. The shape is appended to dst[:0] (a caller's buffer,
// often on its stack), which grows only when it is too short.
func GatherArgs(ctx *kernels.Context, batchDims int64, dst tensor.Shape) (bd, axis int64, out tensor.Shape, err error) {
	params, idx := ctx.Input(0), ctx.Input(1)
	axis, n, err := hostInt(ctx, 2, "axis")
	if err != nil {
		return 0, 0, nil, err
	}
	if n != 1 {
		return 0, 0, nil, ctx.Errorf(status.InvalidArgument, "axis must be a scalar")
	}
	pr, ir := int64(len(params.Shape)), int64(len(idx.Shape))
	bd = batchDims
	if bd < 0 {
		bd += ir
	}
	if bd < 0 || bd > ir {
		return 0, 0, nil, ctx.Errorf(status.InvalidArgument, "Expected batch_dims in the range [%d, %d], but got %d", -ir, ir, batchDims)
	}
	if axis < -pr || axis >= pr {
		return 0, 0, nil, ctx.Errorf(status.InvalidArgument, "Expected axis in the range [%d, %d), but got %d", -pr, pr, axis)
	}
	if axis < 0 {
		axis += pr
	}
	if bd > axis {
		return 0, 0, nil, ctx.Errorf(status.InvalidArgument, "batch_dims (%d) must be less than or equal to axis (%d)", bd, axis)
	}
	for i := int64(0); i < bd; i++ {
		if params.Shape[i] != idx.Shape[i] {
			return 0, 0, nil, ctx.Errorf(status.InvalidArgument, "params.shape[%d]: %d should be equal to indices.shape[%d]: %d", i, params.Shape[i], i, idx.Shape[i])
		}
	}
	// out = params[:axis] + indices[batch_dims:] + params[axis+1:]
	out = append(append(append(dst[:0], params.Shape[:axis]...), idx.Shape[bd:]...), params.Shape[axis+1:]...)
	return bd, axis, out, nil
}

// GatherNdArgs checks GatherNd's indices [..., K] against params and
// returns K and the output shape; the index bounds are the kernel's to
// check (TF's GPU kernel gives zeros where its CPU kernel fails).
func GatherNdArgs(ctx *kernels.Context) (k int64, out tensor.Shape, err error) {
	params, it := ctx.Input(0), ctx.Input(1)
	if len(it.Shape) < 1 {
		return 0, nil, ctx.Errorf(status.InvalidArgument, "indices must be at least a vector, got shape %v", it.Shape)
	}
	k = it.Shape[len(it.Shape)-1]
	pr := int64(len(params.Shape))
	if k > pr {
		return 0, nil, ctx.Errorf(status.InvalidArgument, "index innermost dimension length must be <= params rank; saw: %d vs. %d", k, pr)
	}
	lead := it.Shape[:len(it.Shape)-1]
	out = append(lead.Clone(), params.Shape[k:]...)
	if params.NumElements() == 0 && lead.NumElements() > 0 && out.NumElements() > 0 {
		return 0, nil, ctx.Errorf(status.InvalidArgument, "Requested more than 0 entries, but params is empty.  Params shape: %v", params.Shape)
	}
	return k, out, nil
}

// OneHotArgs checks OneHot's depth, on_value, off_value and axis (-1: the
// last) against the indices and returns the non-negative axis, the depth
// and the output shape.
func OneHotArgs(ctx *kernels.Context, axis int64) (ax, depth int64, out tensor.Shape, err error) {
	it := ctx.Input(0)
	if depth, err = scalarInt(ctx, 1, "depth"); err != nil {
		return 0, 0, nil, err
	}
	on, off := ctx.Input(2), ctx.Input(3)
	if len(on.Shape) != 0 || len(off.Shape) != 0 {
		return 0, 0, nil, ctx.Errorf(status.InvalidArgument, "on_value and off_value must be scalars, got %v and %v", on.Shape, off.Shape)
	}
	r := int64(len(it.Shape))
	if axis < -1 || axis > r {
		return 0, 0, nil, ctx.Errorf(status.InvalidArgument, "Expected axis to be -1 or between [0, %d).  But received: %d", r+1, axis)
	}
	if depth < 0 {
		return 0, 0, nil, ctx.Errorf(status.InvalidArgument, "depth must be non-negative, got: %d", depth)
	}
	if axis == -1 {
		axis = r
	}
	out = append(append(append(tensor.Shape{}, it.Shape[:axis]...), depth), it.Shape[axis:]...)
	if err := out.Validate(); err != nil {
		return 0, 0, nil, ctx.Errorf(status.InvalidArgument, "output shape: %v", err)
	}
	return axis, depth, out, nil
}

// MatrixBandPartArgs checks MatrixBandPart's input rank and num_lower and
// num_upper (negative: the whole triangle) and returns the two.
func MatrixBandPartArgs(ctx *kernels.Context) (lower, upper int64, err error) {
	in := ctx.Input(0)
	if len(in.Shape) < 2 {
		return 0, 0, ctx.Errorf(status.InvalidArgument, "input must be at least 2-dim, received shape: %v", in.Shape)
	}
	if lower, err = scalarInt(ctx, 1, "num_lower"); err != nil {
		return 0, 0, err
	}
	if upper, err = scalarInt(ctx, 2, "num_upper"); err != nil {
		return 0, 0, err
	}
	m, n := in.Shape[len(in.Shape)-2], in.Shape[len(in.Shape)-1]
	if lower > m {
		return 0, 0, ctx.Errorf(status.InvalidArgument, "num_lower must be negative or less or equal to number of rows (%d) got: %d", m, lower)
	}
	if upper > n {
		return 0, 0, ctx.Errorf(status.InvalidArgument, "num_upper must be negative or less or equal to number of columns (%d) got: %d", n, upper)
	}
	return lower, upper, nil
}
