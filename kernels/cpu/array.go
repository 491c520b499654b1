package cpu

import (
	"fmt"
	"slices"

	"mstream/graph"
	"mstream/hostmem"
	"mstream/kernels"
	"mstream/kernels/cpu/vec"
	"mstream/status"
	"mstream/tensor"
)

func init() {
	reg("Placeholder", nil, nil, func(n *graph.Node) (kernels.Kernel, error) {
		dt := attrType(n, "dtype")
		return kernels.KernelFunc(func(ctx *kernels.Context) error {
			return ctx.Errorf(status.InvalidArgument, "You must feed a value for placeholder tensor '%s' with dtype %v", n.Name, dt)
		}), nil
	})
	forward := fn(func(ctx *kernels.Context) error {
		for i := range ctx.Inputs {
			ctx.SetOutput(i, ctx.Input(i))
		}
		return nil
	})
	reg("PlaceholderWithDefault", nil, nil, forward)
	reg("Identity", nil, nil, forward)
	reg("IdentityN", nil, nil, forward)
	reg("StopGradient", nil, nil, forward)
	reg("NoOp", nil, nil, fn(func(*kernels.Context) error { return nil }))
	reg("Const", nil, nil, func(n *graph.Node) (kernels.Kernel, error) {
		a := n.Attrs["value"]
		if a == nil || a.GetTensor() == nil {
			return nil, fmt.Errorf("Const node '%s' has no value attr", n.Name)
		}
		t, err := tensor.FromProto(a.GetTensor())
		if err != nil {
			return nil, fmt.Errorf("Const node '%s': %v", n.Name, err)
		}
		if want := attrType(n, "dtype"); want != tensor.Invalid && want != t.DType {
			return nil, fmt.Errorf("Const node '%s': value has dtype %v, dtype attr is %v", n.Name, t.DType, want)
		}
		return kernels.KernelFunc(func(ctx *kernels.Context) error { ctx.SetOutput(0, t); return nil }), nil
	})

	reg("Reshape", nil, []string{"shape"}, fn(reshape))
	reg("Shape", nil, []string{"output"}, fn(shapeOp))
	reg("ExpandDims", nil, []string{"dim"}, fn(expandDims))
	reg("Squeeze", nil, nil, func(n *graph.Node) (kernels.Kernel, error) {
		dims := attrInts(n, "squeeze_dims")
		return kernels.KernelFunc(func(ctx *kernels.Context) error { return squeeze(ctx, dims) }), nil
	})
	reg("ConcatV2", nil, []string{"axis"}, fn(func(ctx *kernels.Context) error { return concat(ctx, false) }))
	reg("Pack", nil, nil, func(n *graph.Node) (kernels.Kernel, error) {
		axis := attrInt(n, "axis", 0)
		return kernels.KernelFunc(func(ctx *kernels.Context) error { return pack(ctx, axis) }), nil
	})
	reg("GatherV2", nil, []string{"axis"}, func(n *graph.Node) (kernels.Kernel, error) {
		bd := attrInt(n, "batch_dims", 0)
		return kernels.KernelFunc(func(ctx *kernels.Context) error { return gather(ctx, bd) }), nil
	})
	reg("Transpose", nil, []string{"perm"}, fn(transpose))
	reg("Fill", nil, []string{"dims"}, fn(fill))
}

// reshape follows TF's ReshapeOp, including its rule for zero-sized
// dims: a 0 in the requested shape is left out of the product, and so are
// the input's zero dims, so that -1 is still inferred from the others
// ([2,0,3] reshaped to [0,-1] gives [0,6]).
func reshape(ctx *kernels.Context) error {
	in := ctx.Input(0)
	var db [8]int64
	dims, err := hostIntsIn(ctx, 1, "shape", db[:0])
	if err != nil {
		return err
	}
	if len(ctx.Input(1).Shape) > 1 {
		return ctx.Errorf(status.InvalidArgument, "sizes input must be 1-D, not %v", ctx.Input(1).Shape)
	}
	unknown := -1
	prod := int64(1)
	hasZero := false
	for i, d := range dims {
		switch {
		case d == -1:
			if unknown >= 0 {
				return ctx.Errorf(status.InvalidArgument, "Only one input size may be -1, not both %d and %d", unknown, i)
			}
			unknown = i
		case d < 0:
			return ctx.Errorf(status.InvalidArgument, "Size %d must be non-negative, not %d", i, d)
		case d == 0:
			hasZero = true
		default:
			if prod > (1<<62)/d {
				// A copy: dims may be db, which must not escape.
				return ctx.Errorf(status.InvalidArgument, "Shape %v has too many elements", slices.Clone(dims))
			}
			prod *= d
		}
	}
	n := in.NumElements()
	var ob [8]int64
	out := tensor.Shape(append(ob[:0], dims...)) // Reshaped copies it
	if unknown >= 0 {
		known := int64(1)
		inZero := false
		for _, d := range in.Shape {
			if d > 0 || !hasZero {
				known *= d
			} else {
				inZero = true
			}
		}
		missing := known / prod
		if !inZero && prod*missing != known {
			return ctx.Errorf(status.InvalidArgument, "Input to reshape is a tensor with %d values, but the requested shape requires a multiple of %d", known, prod)
		}
		out[unknown] = missing
	}
	if out.NumElements() != n {
		return ctx.Errorf(status.InvalidArgument, "Input to reshape is a tensor with %d values, but the requested shape has %d", n, out.NumElements())
	}
	ctx.SetOutput(0, in.Reshaped(out))
	return nil
}

func shapeOp(ctx *kernels.Context) error {
	in := ctx.Input(0)
	o, err := ctx.Allocate(0, tensor.Shape{int64(len(in.Shape))})
	if err != nil {
		return err
	}
	for i, d := range in.Shape {
		if o.DType == tensor.Int32 {
			if d > 1<<31-1 {
				return ctx.Errorf(status.InvalidArgument, "shape dimension %d is too large for int32", d)
			}
			o.I32()[i] = int32(d)
		} else {
			o.I64()[i] = d
		}
	}
	return nil
}

func expandDims(ctx *kernels.Context) error {
	in := ctx.Input(0)
	d, err := hostInts(ctx, 1, "dim")
	if err != nil {
		return err
	}
	if len(d) != 1 {
		return ctx.Errorf(status.InvalidArgument, "'dim' must be a tensor with a single value, got %d values", len(d))
	}
	r := len(in.Shape)
	ax := d[0]
	if ax < -int64(r)-1 || ax > int64(r) {
		return ctx.Errorf(status.InvalidArgument, "Tried to expand dim index %d for tensor with %d dimensions.", ax, r)
	}
	if ax < 0 {
		ax += int64(r) + 1
	}
	s := append(append(append(tensor.Shape{}, in.Shape[:ax]...), 1), in.Shape[ax:]...)
	ctx.SetOutput(0, in.Reshaped(s))
	return nil
}

func squeeze(ctx *kernels.Context, dims []int64) error {
	in := ctx.Input(0)
	r := len(in.Shape)
	drop := make([]bool, r)
	for _, d := range dims {
		if d < -int64(r) || d >= int64(r) {
			return ctx.Errorf(status.InvalidArgument, "Tried to squeeze dim index %d for tensor with %d dimensions.", d, r)
		}
		if d < 0 {
			d += int64(r)
		}
		if in.Shape[d] != 1 {
			return ctx.Errorf(status.InvalidArgument, "Can not squeeze dim[%d], expected a dimension of 1, got %d", d, in.Shape[d])
		}
		drop[d] = true
	}
	s := tensor.Shape{}
	for i, x := range in.Shape {
		if len(dims) == 0 && x == 1 || drop[i] {
			continue
		}
		s = append(s, x)
	}
	ctx.SetOutput(0, in.Reshaped(s))
	return nil
}

// concat is ConcatV2 and, with v1, Concat (the axis first).
func concat(ctx *kernels.Context, v1 bool) error {
	var ob [8]int64
	values, ax, out, err := ConcatArgs(ctx, v1, ob[:0])
	if err != nil {
		return err
	}
	o, err := ctx.Allocate(0, out)
	if err != nil {
		return err
	}
	outer := int64(1)
	for _, d := range out[:ax] {
		outer *= d
	}
	inner := int64(1)
	for _, d := range out[ax+1:] {
		inner *= d
	}
	row := out[ax] * inner
	for p := int64(0); p < outer; p++ {
		off := p * row
		for _, in := range values {
			w := in.Shape[ax] * inner
			copyElems(o, int(off), in, int(p*w), int(w))
			off += w
		}
	}
	return nil
}

func pack(ctx *kernels.Context, axis64 int64) error {
	axis, out, err := PackArgs(ctx, axis64)
	if err != nil {
		return err
	}
	n, first := ctx.NumInputs(), ctx.Input(0)
	o, err := ctx.Allocate(0, out)
	if err != nil {
		return err
	}
	outer := int64(1)
	for _, d := range first.Shape[:axis] {
		outer *= d
	}
	inner := first.NumElements()
	if outer > 0 {
		inner /= outer
	}
	for p := int64(0); p < outer; p++ {
		for i := 0; i < n; i++ {
			copyElems(o, int((p*int64(n)+int64(i))*inner), ctx.Input(i), int(p*inner), int(inner))
		}
	}
	return nil
}

// gather is GatherV2's kernel. Its indices, of any of the dtypes TF
// allows (int16, int32, int64), are read where they are: widening them
// to int64 first cost a copy, on the heap past a few dozen.
func gather(ctx *kernels.Context, batchDims int64) error {
	switch it := ctx.Input(1); it.DType {
	case tensor.Int16:
		return gatherBy(ctx, batchDims, it.I16())
	case tensor.Int32:
		return gatherBy(ctx, batchDims, it.I32())
	case tensor.Int64:
		return gatherBy(ctx, batchDims, it.I64())
	default:
		return ctx.Errorf(status.InvalidArgument, "indices: expected an int16, int32 or int64 tensor, got %v", it.DType)
	}
}

func gatherBy[I int16 | int32 | int64](ctx *kernels.Context, batchDims int64, idx []I) error {
	params, idxT := ctx.Input(0), ctx.Input(1)
	var ob [8]int64
	batchDims, ax, out, err := GatherArgs(ctx, batchDims, ob[:0])
	if err != nil {
		return err
	}
	o, err := ctx.Allocate(0, out)
	if err != nil {
		return err
	}
	batch := int64(1)
	for _, d := range params.Shape[:batchDims] {
		batch *= d
	}
	outer := int64(1)
	for _, d := range params.Shape[batchDims:ax] {
		outer *= d
	}
	inner := int64(1)
	for _, d := range params.Shape[ax+1:] {
		inner *= d
	}
	limit := params.Shape[ax]
	nIdx := int64(1)
	for _, d := range idxT.Shape[batchDims:] {
		nIdx *= d
	}
	for i, v := range idx {
		if v < 0 || int64(v) >= limit {
			return ctx.Errorf(status.InvalidArgument, "indices%s = %d is not in [0, %d)", idxPos(idxT.Shape, i), int64(v), limit)
		}
	}
	if o.NumElements() == 0 {
		return nil
	}
	if inner < gatherRowMin && gatherSmall(o, params, idx, batch*outer, outer, limit, inner, nIdx) {
		return nil
	}
	// Rows of fixed-size elements, many of them, prefetch (vec.GatherRows
	// takes int32 and int64 indices; int16 ones, rare, copy row by row).
	prefetch := !params.DType.InStrs() && params.DType != tensor.Variant && nIdx >= gatherPrefetchMin && idxT.DType != tensor.Int16
	es := int64(params.DType.Size())
	for b := int64(0); b < batch; b++ {
		for p := int64(0); p < outer; p++ {
			src := (b*outer + p) * limit * inner
			dst := (b*outer + p) * nIdx * inner
			if prefetch {
				to, from, row := o.Buf[dst*es:(dst+nIdx*inner)*es], params.Buf[src*es:(src+limit*inner)*es], int(inner*es)
				if idxT.DType == tensor.Int64 {
					vec.GatherRows(to, from, idxT.I64()[b*nIdx:(b+1)*nIdx], row)
				} else {
					vec.GatherRows(to, from, idxT.I32()[b*nIdx:(b+1)*nIdx], row)
				}
				continue
			}
			for j := int64(0); j < nIdx; j++ {
				copyElems(o, int(dst+j*inner), params, int(src+int64(idx[b*nIdx+j])*inner), int(inner))
			}
		}
	}
	return nil
}

// gatherRowMin is the row length (elements) from which GatherV2 copies
// row by row (copyElems); shorter rows, such as DLRM's interaction
// gather of single elements (351 of 729 columns of each of B rows), take
// gatherSmall's typed loop: BenchmarkDLRMSparse/GatherV2/interaction at
// B=256 cost 1.2 ms of CPU one element at a time.
const gatherRowMin = 16

// gatherPrefetchMin is the number of rows from which GatherV2 copies
// rows of fixed-size elements through vec.GatherRows, which prefetches
// rows ahead of its copy, rather than one copy at a time, each of which
// waits for its row's miss: BenchmarkDLRMEmbedding (26 tables of 100k rows
// of 64 floats, 256 rows each) went from 39 to 17 us of CPU a GatherV2 on
// 4 KiB pages, from 29 to 16 on huge pages. Below it the cgo call would
// cost more than the misses it overlaps.
const gatherPrefetchMin = 8

// gatherSmall is gather's copy for rows of fixed-size elements: blocks
// (batch x outer of them) of nIdx rows of inner elements each, the
// indices of block b/outer. It reports false for strings and variants.
func gatherSmall[I int16 | int32 | int64](o, params *tensor.Tensor, idx []I, blocks, outer, limit, inner, nIdx int64) bool {
	if params.DType.InStrs() || params.DType == tensor.Variant {
		return false
	}
	switch params.DType.Size() {
	case 1:
		gatherBlocks(hostmem.View[uint8](o.Buf), hostmem.View[uint8](params.Buf), idx, blocks, outer, limit, inner, nIdx)
	case 2:
		gatherBlocks(hostmem.View[uint16](o.Buf), hostmem.View[uint16](params.Buf), idx, blocks, outer, limit, inner, nIdx)
	case 4:
		gatherBlocks(hostmem.View[uint32](o.Buf), hostmem.View[uint32](params.Buf), idx, blocks, outer, limit, inner, nIdx)
	case 8:
		gatherBlocks(hostmem.View[uint64](o.Buf), hostmem.View[uint64](params.Buf), idx, blocks, outer, limit, inner, nIdx)
	default:
		return false
	}
	return true
}

func gatherBlocks[T uint8 | uint16 | uint32 | uint64, I int16 | int32 | int64](o, params []T, idx []I, blocks, outer, limit, inner, nIdx int64) {
	for blk := int64(0); blk < blocks; blk++ {
		src := params[blk*limit*inner : (blk+1)*limit*inner]
		dst := o[blk*nIdx*inner : (blk+1)*nIdx*inner]
		ix := idx[blk/outer*nIdx : (blk/outer+1)*nIdx]
		if inner == 1 {
			for j, v := range ix {
				dst[j] = src[v]
			}
			continue
		}
		for j, v := range ix {
			copy(dst[int64(j)*inner:int64(j+1)*inner], src[int64(v)*inner:(int64(v)+1)*inner])
		}
	}
}

// idxPos formats a flat index as TF does: "[i,j]".
func sprintf(format string, a ...any) string { return fmt.Sprintf(format, a...) }

func idxPos(s tensor.Shape, flat int) string {
	if len(s) == 0 {
		return ""
	}
	st := strides(s)
	out := "["
	f := int64(flat)
	for i := range s {
		if i > 0 {
			out += ","
		}
		out += fmt.Sprint(f / st[i])
		f %= st[i]
	}
	return out + "]"
}

func transpose(ctx *kernels.Context) error {
	in := ctx.Input(0)
	perm, out, err := TransposeArgs(ctx)
	if err != nil {
		return err
	}
	if sameOrder(in.Shape, perm) {
		// As TF: the dims larger than 1 keep their order (an identity
		// perm, Keras' Tensordot over the last axis), so the bytes do
		// too and the output is the input reshaped.
		ctx.SetOutput(0, in.Reshaped(out))
		return nil
	}
	r := len(out)
	o, err := ctx.Allocate(0, out)
	if err != nil {
		return err
	}
	n := o.NumElements()
	if n == 0 {
		return nil
	}
	ist := strides(in.Shape)
	pst := make([]int64, r) // input stride for each output dim
	for i, p := range perm {
		pst[i] = ist[p]
	}
	copyStrided(ctx, o, in, pst)
	return nil
}

// sameOrder says whether perm keeps the order of shape's dims larger than
// 1 (TF's NonSingletonDimensionsAlign).
func sameOrder(shape tensor.Shape, perm []int64) bool {
	last := int64(-1)
	for _, p := range perm {
		if shape[p] == 1 {
			continue
		}
		if p < last {
			return false
		}
		last = p
	}
	return true
}

// fillOfConstsError is a Fill's allocation error as TF reports it: TF folds
// a Fill of two constants into a Const while it optimizes the graph, and
// when that Const's tensor is more than the machine's memory its allocation
// fails as INVALID_ARGUMENT ("Cannot parse tensor from proto"). A Fill of
// computed dims, or one over a limit of mstream's own, stays a
// RESOURCE_EXHAUSTED allocation failure.
func fillOfConstsError(ctx *kernels.Context, shape tensor.Shape, err error) error {
	in := ctx.Node.Inputs
	if status.CodeOf(err) != status.ResourceExhausted || len(in) != 2 || in[0].Node.Op != "Const" || in[1].Node.Op != "Const" {
		return err
	}
	bytes := shape.NumElements() * int64(ctx.Input(1).DType.Size())
	if phys := hostmem.Physical(); phys == 0 || bytes <= phys {
		return err
	}
	return ctx.Errorf(status.InvalidArgument, "Cannot parse tensor from proto: the Fill of constants of shape %v needs %d bytes, more than the machine's %d", shape, bytes, hostmem.Physical())
}

func fill(ctx *kernels.Context) error {
	dims, err := hostInts(ctx, 0, "dims")
	if err != nil {
		return err
	}
	if len(ctx.Input(0).Shape) != 1 {
		return ctx.Errorf(status.InvalidArgument, "dims must be a vector, got shape %v", ctx.Input(0).Shape)
	}
	v := ctx.Input(1)
	if len(v.Shape) != 0 {
		return ctx.Errorf(status.InvalidArgument, "value must be a scalar, got shape %v", v.Shape)
	}
	s := tensor.Shape(dims)
	if err := s.Validate(); err != nil {
		return ctx.Errorf(status.InvalidArgument, "dims: %v", err)
	}
	o, err := ctx.Allocate(0, s)
	if err != nil {
		return fillOfConstsError(ctx, s, err)
	}
	n := int(o.NumElements())
	for i := 0; i < n; i++ {
		copyElems(o, i, v, 0, 1)
	}
	return nil
}
