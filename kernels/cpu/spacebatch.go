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
// (spaceBatchRows), in runs along the last block dim, that copies a row
// or, where the row falls in the padding, zeroes it. Both take their
// checks and geometry from the exported SpaceDepthArgs and SpaceBatchArgs,
// which kernels/cuda's kernels share.

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

// SpaceBatchGeom is a space/batch op's move between the space side
// ([B, S1..SM, R...]) and the batch side ([B*prod(block), Y1..YM, R...]),
// with TF's merges applied: the leading block dims of block 1 without
// padding or crops are folded into the batch, the trailing ones into the
// rows, so at most maxSpaceBatchBlockDims remain. Batch-side row
// ((ob*Y1 + y1)*Y2 + ...) with ob = (o1*Block[1] + o2)*...*Batch + b holds
// space-side row b, s1, ..., s_m with s_i = y_i*Block[i] + o_i - Start[i],
// or zeros (padding; a cropped element when going to space) when some s_i
// falls outside [0, Space[i]). A row is Inner elements.
type SpaceBatchGeom struct {
	Batch, Inner           int64
	Block, Start, Space, Y []int64
}

// SpaceBatchArgs checks the arguments of SpaceToBatchND (toBatch) or
// BatchToSpaceND, or with blockSize > 0 of the 4-D SpaceToBatch or
// BatchToSpace whose block is [blockSize, blockSize] and whose paddings or
// crops are input 1, in TF's order with TF's messages. It returns the
// move and the output shape.
func SpaceBatchArgs(ctx *kernels.Context, toBatch bool, blockSize int64) (g SpaceBatchGeom, out tensor.Shape, err error) {
	in := ctx.Input(0)
	what, padIdx := "crops", 2
	if toBatch {
		what = "paddings"
	}
	var block []int64
	if blockSize > 0 {
		if len(in.Shape) != 4 {
			return g, nil, ctx.Errorf(status.InvalidArgument, "Input rank should be: 4instead of: %d", len(in.Shape))
		}
		block, padIdx = []int64{blockSize, blockSize}, 1
	} else {
		if r := len(ctx.Input(1).Shape); r != 1 {
			return g, nil, ctx.Errorf(status.InvalidArgument, "block_shape rank should be 1 instead of %d", r)
		}
		if block, err = hostInts(ctx, 1, "block_shape"); err != nil {
			return g, nil, err
		}
	}
	m := len(block)
	if len(in.Shape) < 1+m {
		return g, nil, ctx.Errorf(status.InvalidArgument, "input rank should be >= %d instead of %d", 1+m, len(in.Shape))
	}
	ps := ctx.Input(padIdx).Shape
	if len(ps) != 2 || ps[0] != int64(m) || ps[1] != 2 {
		return g, nil, ctx.Errorf(status.InvalidArgument, "%s should have shape [%d, 2] instead of %v", what, m, ps)
	}
	pads, err := hostInts(ctx, padIdx, what)
	if err != nil {
		return g, nil, err
	}
	prod := int64(1)
	for i, b := range block {
		if toBatch && b < 1 {
			return g, nil, ctx.Errorf(status.InvalidArgument, "All values in block_shape must be positive, got value, %d at index %d.", b, i)
		}
		prod *= b
	}
	if prod <= 0 {
		return g, nil, ctx.Errorf(status.InvalidArgument, "Product of block sizes must be positive, got %d", prod)
	}
	if !toBatch && in.Shape[0]%prod != 0 {
		return g, nil, ctx.Errorf(status.InvalidArgument, "Input batch dimension (%d) is not divisible by product of block sizes (%d)", in.Shape[0], prod)
	}
	trivial := func(i int) bool { return block[i] == 1 && pads[2*i] == 0 && pads[2*i+1] == 0 }
	lo, hi := 0, m
	for lo < m && trivial(lo) {
		lo++
	}
	for hi > lo && trivial(hi-1) {
		hi--
	}
	if hi-lo > maxSpaceBatchBlockDims {
		return g, nil, ctx.Errorf(status.InvalidArgument, "Maximum number of non-combined block dimensions is %d but received %d", maxSpaceBatchBlockDims, hi-lo)
	}
	out = in.Shape.Clone()
	g.Batch, g.Inner = in.Shape[0], 1
	if toBatch {
		out[0] *= prod
	} else {
		out[0] /= prod
		g.Batch = out[0]
	}
	for i := 0; i < lo; i++ {
		g.Batch *= in.Shape[1+i]
	}
	for _, d := range in.Shape[1+hi:] {
		g.Inner *= d
	}
	for i := lo; i < hi; i++ {
		b, s, e, d := block[i], pads[2*i], pads[2*i+1], in.Shape[1+i]
		if toBatch {
			if s < 0 || e < 0 {
				return g, nil, ctx.Errorf(status.InvalidArgument, "Paddings must be non-negative")
			}
			if (d+s+e)%b != 0 {
				return g, nil, ctx.Errorf(status.InvalidArgument, "padded_shape[%d]=%d is not divisible by block_shape[%d]=%d", i, d+s+e, i, b)
			}
			out[1+i] = (d + s + e) / b
		} else {
			if s < 0 || e < 0 {
				return g, nil, ctx.Errorf(status.InvalidArgument, "Crops must be non-negative")
			}
			if c := d*b - s - e; c < 0 {
				return g, nil, ctx.Errorf(status.InvalidArgument, "cropped_shape[%d]=%d must be non-negative", i, c)
			}
			out[1+i] = d*b - s - e
		}
		space, y := d, out[1+i]
		if !toBatch {
			space, y = y, d
		}
		g.Block = append(g.Block, b)
		g.Start = append(g.Start, s)
		g.Space = append(g.Space, space)
		g.Y = append(g.Y, y)
	}
	if err := out.Validate(); err != nil {
		return g, nil, ctx.Errorf(status.InvalidArgument, "%v", err)
	}
	return g, out, nil
}

// spaceBatch is the kernel of the four space/batch ops.
func spaceBatch(ctx *kernels.Context, toBatch bool, blockSize int64) error {
	g, out, err := SpaceBatchArgs(ctx, toBatch, blockSize)
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

// spaceBatchRows moves every row between the batch side and the space
// side: toBatch fills every batch-side row (zeros in the padding), else
// every space-side row, which exactly one batch-side row that is not
// cropped covers. The rows go in runs along the last block dim, whose
// space-side row steps by its block, so the index arithmetic (divisions)
// is paid once a run; runs are split over the intra-op pool.
func spaceBatchRows[T any](ctx *kernels.Context, space, batch []T, g *SpaceBatchGeom, toBatch bool) {
	m, inner := len(g.Block), g.Inner
	if m == 0 { // no block dim left: the same layout on both sides
		if toBatch {
			copy(batch, space)
		} else {
			copy(space, batch)
		}
		return
	}
	sst := make([]int64, m+1) // space-side row strides: batch, then each block dim
	sst[m] = 1
	for i := m - 1; i >= 0; i-- {
		sst[i] = sst[i+1] * g.Space[i]
	}
	last, ym := m-1, g.Y[m-1]
	bl, sl, spl := g.Block[last], g.Start[last], g.Space[last]
	runs := int64(len(batch)) / inner / ym
	ctx.For(int(runs), float64(ym*inner)*0.5+10, kernels.StartLoop, func(lo, hi int) {
		y := make([]int64, m)
		for run := int64(lo); run < int64(hi); run++ {
			ob := run
			for i := last - 1; i >= 0; i-- {
				y[i] = ob % g.Y[i]
				ob /= g.Y[i]
			}
			off := ob / g.Batch
			ol := off % bl
			off /= bl
			src, inside := ob%g.Batch*sst[0], true
			for i := last - 1; i >= 0; i-- {
				s := y[i]*g.Block[i] + off%g.Block[i] - g.Start[i]
				off /= g.Block[i]
				if s < 0 || s >= g.Space[i] {
					inside = false
					break
				}
				src += s * sst[1+i]
			}
			rb := batch[run*ym*inner : (run+1)*ym*inner]
			if !inside {
				if toBatch {
					clear(rb)
				}
				continue
			}
			for j := int64(0); j < ym; j++ {
				br := rb[j*inner : (j+1)*inner]
				s := j*bl + ol - sl
				switch {
				case s >= 0 && s < spl && toBatch:
					copy(br, space[(src+s)*inner:(src+s+1)*inner])
				case s >= 0 && s < spl:
					copy(space[(src+s)*inner:(src+s+1)*inner], br)
				case toBatch:
					clear(br)
				}
			}
		}
	})
}

// SpaceDepthArgs checks SpaceToDepth's (toDepth) or DepthToSpace's NHWC
// input against block size bs with TF's messages. It returns the output
// shape and the move as a permutation: the output seen as the 6-D view
// reads the input at strides st, DepthToSpace's output [N, H*bs, W*bs, C']
// as [N, H, i, W, j, C'] from input [n, h, w, (i*bs + j)*C' + c],
// SpaceToDepth's [N, H', W', bs*bs*C] as [N, H', W', i, j, C] from input
// [n, h'*bs + i, w'*bs + j, c].
func SpaceDepthArgs(ctx *kernels.Context, toDepth bool, bs int64) (out, view tensor.Shape, st []int64, err error) {
	s := ctx.Input(0).Shape
	if len(s) != 4 {
		if toDepth {
			return nil, nil, nil, ctx.Errorf(status.InvalidArgument, "Input rank should be 4 instead of %d", len(s))
		}
		return nil, nil, nil, ctx.Errorf(status.InvalidArgument, "Input rank should be: 4 instead of: %d", len(s))
	}
	if bs < 2 {
		return nil, nil, nil, ctx.Errorf(status.InvalidArgument, "Value for attr 'block_size' of %d must be at least minimum 2", bs)
	}
	n, h, w, c := s[0], s[1], s[2], s[3]
	if toDepth {
		if h%bs != 0 || w%bs != 0 {
			return nil, nil, nil, ctx.Errorf(status.InvalidArgument, "Image width %d and height %d should be divisible by block_size: %d", w, h, bs)
		}
		return tensor.Shape{n, h / bs, w / bs, c * bs * bs}, tensor.Shape{n, h / bs, w / bs, bs, bs, c},
			[]int64{h * w * c, bs * w * c, bs * c, w * c, c, 1}, nil
	}
	if c%(bs*bs) != 0 {
		return nil, nil, nil, ctx.Errorf(status.InvalidArgument, "Input depth dimension %d should be divisible by: %d", c, bs*bs)
	}
	cc := c / (bs * bs)
	return tensor.Shape{n, h * bs, w * bs, cc}, tensor.Shape{n, h, bs, w, bs, cc},
		[]int64{h * w * c, w * c, bs * cc, c, cc, 1}, nil
}

// spaceDepth is SpaceToDepth's and DepthToSpace's kernel.
func spaceDepth(ctx *kernels.Context, toDepth bool, bs int64) error {
	out, view, st, err := SpaceDepthArgs(ctx, toDepth, bs)
	if err != nil {
		return err
	}
	o, err := ctx.Allocate(0, out)
	if err != nil {
		return err
	}
	copyStrided(ctx, o.Reshaped(view), ctx.Input(0), st)
	return nil
}
