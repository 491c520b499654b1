package graph

import (
	"mstream/tensor"
)

// Shape functions of the space/batch/depth rearrangements (SpaceToBatchND,
// BatchToSpaceND, their 4-D forms, SpaceToDepth, DepthToSpace), after
// TF's: the dims the block, paddings or crops decide when they are
// constants, unknown dims otherwise. They never fail a node: the kernels
// report bad arguments with TF's codes when the node runs.

func init() {
	for _, op := range []string{"SpaceToBatchND", "BatchToSpaceND", "SpaceToBatch", "BatchToSpace"} {
		toBatch, nd := op[:5] == "Space", op[len(op)-2:] == "ND"
		RegisterShapeFn(op, func(c *ShapeContext) ([]tensor.PartialShape, error) {
			return []tensor.PartialShape{spaceBatchShape(c, toBatch, nd)}, nil
		})
	}
	for _, op := range []string{"SpaceToDepth", "DepthToSpace"} {
		toDepth := op == "SpaceToDepth"
		RegisterShapeFn(op, func(c *ShapeContext) ([]tensor.PartialShape, error) {
			return []tensor.PartialShape{spaceDepthShape(c, toDepth)}, nil
		})
	}
}

func spaceBatchShape(c *ShapeContext, toBatch, nd bool) tensor.PartialShape {
	in := c.In[0]
	if !in.Known {
		return tensor.Unknown
	}
	out := unknownDims(len(in.Dims))
	var block []int64
	padIdx := 1
	if nd {
		padIdx = 2
		var ok bool
		if block, ok = c.ConstInts(1); !ok {
			if s := c.In[1]; s.Known && len(s.Dims) == 1 && s.Dims[0] >= 0 && int(s.Dims[0]) < len(in.Dims) {
				copy(out.Dims[1+s.Dims[0]:], in.Dims[1+s.Dims[0]:])
			}
			return out
		}
	} else if a := c.Attr("block_size"); a != nil {
		block = []int64{a.GetI(), a.GetI()}
	}
	m := len(block)
	if m+1 > len(in.Dims) {
		return out
	}
	copy(out.Dims[1+m:], in.Dims[1+m:])
	pads, ok := c.ConstInts(padIdx)
	prod := int64(1)
	for _, b := range block {
		if b < 1 {
			return out
		}
		prod *= b
	}
	switch d := in.Dims[0]; {
	case d < 0:
	case toBatch:
		out.Dims[0] = d * prod
	case d%prod == 0:
		out.Dims[0] = d / prod
	}
	if !ok || len(pads) != 2*m {
		return out
	}
	for i, b := range block {
		d, s, e := in.Dims[1+i], pads[2*i], pads[2*i+1]
		switch {
		case d < 0 || s < 0 || e < 0:
		case toBatch && (d+s+e)%b == 0:
			out.Dims[1+i] = (d + s + e) / b
		case !toBatch && d*b-s-e >= 0:
			out.Dims[1+i] = d*b - s - e
		}
	}
	return out
}

func spaceDepthShape(c *ShapeContext, toDepth bool) tensor.PartialShape {
	in := c.In[0]
	out := unknownDims(4)
	a := c.Attr("block_size")
	if !in.Known || len(in.Dims) != 4 || a == nil || a.GetI() < 1 {
		return out
	}
	bs := a.GetI()
	// NHWC, or NCHW (TF's GPU kernel): the spatial dims and the depth's.
	h, w, ch := 1, 2, 3
	if f := c.Attr("data_format"); f != nil && string(f.GetS()) != "NHWC" {
		h, w, ch = 2, 3, 1
	}
	out.Dims[0] = in.Dims[0]
	scale := func(i int, up bool, k int64) {
		switch d := in.Dims[i]; {
		case d < 0:
		case up:
			out.Dims[i] = d * k
		case d%k == 0:
			out.Dims[i] = d / k
		}
	}
	scale(h, !toDepth, bs)
	scale(w, !toDepth, bs)
	scale(ch, toDepth, bs*bs)
	return out
}
