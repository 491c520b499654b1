package cpu

import (
	"mstream/graph"
	"mstream/hostmem"
	"mstream/kernels"
	"mstream/status"
	"mstream/tensor"
)

// The space/batch/depth rearrangements: SpaceToBatchND and BatchToSpaceND
// (and their 4-D forms SpaceToBatch and BatchToSpace, whose block is an
// attr) move blocks of the spatial dims into the batch dim and back, with
// zero padding or cropping; SpaceToDepth and DepthToSpace move them into
// the depth dim and back. The depth pair is a pure permutation, so it is
// copyStrided (Transpose's loop) over a 6-D view of the output; the batch
// pair pads or crops, so it is one loop over rows of the remaining dims
// (spaceBatchRows) that copies a row or, where the row falls in the
// padding, zeroes it.

// maxSpaceBatchBlockDims is TF's limit on the block dims that are not
// trivially merged away (block 1 without padding or crops).
const maxSpaceBatchBlockDims = 4

func init() {
	reg("SpaceToBatchND", numericTypes, []string{"block_shape", "paddings"}, fn(func(ctx *kernels.Context) error { return spaceBatch(ctx, true, 0) }))
	reg("BatchToSpaceND", numericTypes, []string{"block_shape", "crops"}, fn(func(ctx *kernels.Context) error { return spaceBatch(ctx, false, 0) }))
	for _, op := range []string{"SpaceToBatch", "BatchToSpace"} {
		toBatch, host := op == "SpaceToBatch", "crops"
		if toBatch {
			host = "paddings"
		}
		reg(op, numericTypes, []string{host}, func(n *graph.Node) (kernels.Kernel, error) {
			bs := attrInt(n, "block_size", 0)
			return kernels.KernelFunc(func(ctx *kernels.Context) error { return spaceBatch(ctx, toBatch, bs) }), nil
		})
	}
	for _, op := range []string{"SpaceToDepth", "DepthToSpace"} {
		toDepth := op == "SpaceToDepth"
		reg(op, allTypes, nil, func(n *graph.Node) (kernels.Kernel, error) {
			// TF registers its CPU kernels for NHWC only: another format
			// finds no kernel.
			if f := attrString(n, "data_format", "NHWC"); f != "NHWC" {
				return nil, nodeErr(n, status.InvalidArgument, "No OpKernel was registered to support Op '%s' with data_format %s on the CPU: TF's CPU kernel takes NHWC only", op, f)
			}
			bs := attrInt(n, "block_size", 0)
			return kernels.KernelFunc(func(ctx *kernels.Context) error { return spaceDepth(ctx, toDepth, bs) }), nil
		})
	}
}

// SpaceBatchArgs checks the arguments of SpaceToBatchND (toBatch) or
// BatchToSpaceND, or with blockSize > 0 of the 4-D SpaceToBatch or
// BatchToSpace whose block is [blockSize, blockSize] and whose paddings or
// crops are input 1, in TF's order with TF's messages. It returns the
// block shape, the paddings' or crops' start per block dim and the output
// shape.
func SpaceBatchArgs(ctx *kernels.Context, toBatch bool, blockSize int64) (block, start []int64, out tensor.Shape, err error) {
	in := ctx.Input(0)
	what, padIdx := "crops", 2
	if toBatch {
		what = "paddings"
	}
	if blockSize > 0 {
		if len(in.Shape) != 4 {
			return nil, nil, nil, ctx.Errorf(status.InvalidArgument, "Input rank should be: 4instead of: %d", len(in.Shape))
		}
		block, padIdx = []int64{blockSize, blockSize}, 1
	} else {
		if r := len(ctx.Input(1).Shape); r != 1 {
			return nil, nil, nil, ctx.Errorf(status.InvalidArgument, "block_shape rank should be 1 instead of %d", r)
		}
		if block, err = hostInts(ctx, 1, "block_shape"); err != nil {
			return nil, nil, nil, err
		}
	}
	m := len(block)
	if len(in.Shape) < 1+m {
		return nil, nil, nil, ctx.Errorf(status.InvalidArgument, "input rank should be >= %d instead of %d", 1+m, len(in.Shape))
	}
	ps := ctx.Input(padIdx).Shape
	if len(ps) != 2 || ps[0] != int64(m) || ps[1] != 2 {
		return nil, nil, nil, ctx.Errorf(status.InvalidArgument, "%s should have shape [%d, 2] instead of %v", what, m, ps)
	}
	pads, err := hostInts(ctx, padIdx, what)
	if err != nil {
		return nil, nil, nil, err
	}
	prod := int64(1)
	for i, b := range block {
		if toBatch && b < 1 {
			return nil, nil, nil, ctx.Errorf(status.InvalidArgument, "All values in block_shape must be positive, got value, %d at index %d.", b, i)
		}
		prod *= b
	}
	if prod <= 0 {
		return nil, nil, nil, ctx.Errorf(status.InvalidArgument, "Product of block sizes must be positive, got %d", prod)
	}
	if !toBatch && in.Shape[0]%prod != 0 {
		return nil, nil, nil, ctx.Errorf(status.InvalidArgument, "Input batch dimension (%d) is not divisible by product of block sizes (%d)", in.Shape[0], prod)
	}
	// TF merges leading and trailing block dims of block 1 without padding
	// into the batch and depth dims; only the rest count towards its limit.
	trivial := func(i int) bool { return block[i] == 1 && pads[2*i] == 0 && pads[2*i+1] == 0 }
	lo, hi := 0, m
	for lo < m && trivial(lo) {
		lo++
	}
	for hi > lo && trivial(hi-1) {
		hi--
	}
	if hi-lo > maxSpaceBatchBlockDims {
		return nil, nil, nil, ctx.Errorf(status.InvalidArgument, "Maximum number of non-combined block dimensions is %d but received %d", maxSpaceBatchBlockDims, hi-lo)
	}
	out = in.Shape.Clone()
	if toBatch {
		out[0] *= prod
	} else {
		out[0] /= prod
	}
	start = make([]int64, m)
	for i, b := range block {
		s, e, d := pads[2*i], pads[2*i+1], in.Shape[1+i]
		start[i] = s
		if i < lo || i >= hi {
			continue
		}
		if toBatch {
			if s < 0 || e < 0 {
				return nil, nil, nil, ctx.Errorf(status.InvalidArgument, "Paddings must be non-negative")
			}
			if (d+s+e)%b != 0 {
				return nil, nil, nil, ctx.Errorf(status.InvalidArgument, "padded_shape[%d]=%d is not divisible by block_shape[%d]=%d", i, d+s+e, i, b)
			}
			out[1+i] = (d + s + e) / b
			continue
		}
		if s < 0 || e < 0 {
			return nil, nil, nil, ctx.Errorf(status.InvalidArgument, "Crops must be non-negative")
		}
		if c := d*b - s - e; c < 0 {
			return nil, nil, nil, ctx.Errorf(status.InvalidArgument, "cropped_shape[%d]=%d must be non-negative", i, c)
		}
		out[1+i] = d*b - s - e
	}
	if err := out.Validate(); err != nil {
		return nil, nil, nil, ctx.Errorf(status.InvalidArgument, "%v", err)
	}
	return block, start, out, nil
}

// spaceBatch is the kernel of the four space/batch ops.
func spaceBatch(ctx *kernels.Context, toBatch bool, blockSize int64) error {
	block, start, out, err := SpaceBatchArgs(ctx, toBatch, blockSize)
	if err != nil {
		return err
	}
	in := ctx.Input(0)
	o, err := ctx.Allocate(0, out)
	if err != nil {
		return err
	}
	if o.NumElements() == 0 {
		return nil
	}
	space, batch := o, in
	if toBatch {
		space, batch = in, o
	}
	g := spaceBatchGeom{block: block, start: start, space: space.Shape, batch: batch.Shape}
	switch in.DType.Size() {
	case 1:
		spaceBatchRows(ctx, hostmem.View[uint8](space.Buf), hostmem.View[uint8](batch.Buf), &g, toBatch)
	case 2:
		spaceBatchRows(ctx, hostmem.View[uint16](space.Buf), hostmem.View[uint16](batch.Buf), &g, toBatch)
	case 4:
		spaceBatchRows(ctx, hostmem.View[uint32](space.Buf), hostmem.View[uint32](batch.Buf), &g, toBatch)
	default:
		spaceBatchRows(ctx, hostmem.View[uint64](space.Buf), hostmem.View[uint64](batch.Buf), &g, toBatch)
	}
	return nil
}

// spaceBatchGeom relates the space-side tensor ([B, S1..SM, R...]) to the
// batch-side one ([B*prod(block), Y1..YM, R...]): batch element
// ob = (o1*block[1] + o2)*... * B + b at Y index y holds the space element
// of batch b at s_i = y_i*block[i] + o_i - start[i], or a zero (padding,
// or a cropped element) when s_i falls outside [0, S_i).
type spaceBatchGeom struct {
	block, start []int64
	space, batch tensor.Shape
}

// spaceBatchRows moves every row of the remaining dims between the batch
// side and the space side: toBatch fills every batch-side row (zeros in
// the padding), else every space-side row, which each batch-side row that
// is not cropped covers exactly once. Rows of the batch side are split
// over the intra-op pool.
func spaceBatchRows[T any](ctx *kernels.Context, space, batch []T, g *spaceBatchGeom, toBatch bool) {
	m := len(g.block)
	inner := int64(1)
	for _, d := range g.batch[1+m:] {
		inner *= d
	}
	rows := int64(len(batch)) / max(inner, 1)
	if inner == 0 {
		return
	}
	sst := strides(g.space[:1+m]) // in rows
	bspatial := g.batch[1 : 1+m]
	B := g.space[0]
	ctx.For(int(rows), float64(inner)*0.5+10, func(lo, hi int) {
		y := make([]int64, m)
		for row := int64(lo); row < int64(hi); row++ {
			// Decompose the row into (ob, y) and ob into (offsets, b).
			rest := row
			for i := m - 1; i >= 0; i-- {
				y[i] = rest % bspatial[i]
				rest /= bspatial[i]
			}
			ob := rest
			b, off := ob%B, ob/B
			src := b * sst[0]
			inside := true
			for i := m - 1; i >= 0; i-- {
				o := off % g.block[i]
				off /= g.block[i]
				s := y[i]*g.block[i] + o - g.start[i]
				if s < 0 || s >= g.space[1+i] {
					inside = false
					break
				}
				src += s * sst[1+i]
			}
			br := batch[row*inner : (row+1)*inner]
			switch {
			case inside && toBatch:
				copy(br, space[src*inner:(src+1)*inner])
			case inside:
				copy(space[src*inner:(src+1)*inner], br)
			case toBatch:
				clear(br)
			}
		}
	})
}

// SpaceDepthArgs checks SpaceToDepth's (toDepth) or DepthToSpace's NHWC
// input against block size bs with TF's messages and returns the output
// shape.
func SpaceDepthArgs(ctx *kernels.Context, toDepth bool, bs int64) (tensor.Shape, error) {
	s := ctx.Input(0).Shape
	if len(s) != 4 {
		if toDepth {
			return nil, ctx.Errorf(status.InvalidArgument, "Input rank should be 4 instead of %d", len(s))
		}
		return nil, ctx.Errorf(status.InvalidArgument, "Input rank should be: 4 instead of: %d", len(s))
	}
	if bs < 2 {
		return nil, ctx.Errorf(status.InvalidArgument, "Value for attr 'block_size' of %d must be at least minimum 2", bs)
	}
	n, h, w, c := s[0], s[1], s[2], s[3]
	if toDepth {
		if h%bs != 0 || w%bs != 0 {
			return nil, ctx.Errorf(status.InvalidArgument, "Image width %d and height %d should be divisible by block_size: %d", w, h, bs)
		}
		return tensor.Shape{n, h / bs, w / bs, c * bs * bs}, nil
	}
	if c%(bs*bs) != 0 {
		return nil, ctx.Errorf(status.InvalidArgument, "Input depth dimension %d should be divisible by: %d", c, bs*bs)
	}
	return tensor.Shape{n, h * bs, w * bs, c / (bs * bs)}, nil
}

// spaceDepth is SpaceToDepth's and DepthToSpace's kernel: a permutation
// of a 6-D view. DepthToSpace's output [N, H*bs, W*bs, C'] is
// [N, H, i, W, j, C'] reading input [n, h, w, (i*bs + j)*C' + c];
// SpaceToDepth's output [N, H', W', bs*bs*C] is [N, H', W', i, j, C]
// reading input [n, h'*bs + i, w'*bs + j, c].
func spaceDepth(ctx *kernels.Context, toDepth bool, bs int64) error {
	in := ctx.Input(0)
	out, err := SpaceDepthArgs(ctx, toDepth, bs)
	if err != nil {
		return err
	}
	o, err := ctx.Allocate(0, out)
	if err != nil {
		return err
	}
	n, h, w, c := in.Shape[0], in.Shape[1], in.Shape[2], in.Shape[3]
	var view tensor.Shape
	var st []int64
	if toDepth {
		view = tensor.Shape{n, h / bs, w / bs, bs, bs, c}
		st = []int64{h * w * c, bs * w * c, bs * c, w * c, c, 1}
	} else {
		cc := c / (bs * bs)
		view = tensor.Shape{n, h, bs, w, bs, cc}
		st = []int64{h * w * c, w * c, bs * cc, c, cc, 1}
	}
	copyStrided(ctx, o.Reshaped(view), in, st)
	return nil
}
