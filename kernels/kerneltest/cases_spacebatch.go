package kerneltest

import (
	"fmt"
	"math/rand"
	"strings"

	"mstream/status"
	"mstream/tensor"
)

// Families for the space/batch/depth rearrangements: SpaceToBatchND,
// BatchToSpaceND, SpaceToBatch, BatchToSpace, SpaceToDepth, DepthToSpace.
// The NumPy references are TF's definitions (pad, reshape, transpose,
// reshape; and back, then crop); strings, which NumPy cannot carry here,
// are checked on layouts where the permutation keeps their order.

// spaceBatchCase is one SpaceToBatchND-style geometry: the space-side
// shape, the block and the paddings (or crops) per block dim.
type spaceBatchCase struct {
	space tensor.Shape
	block []int64
	pads  []int64 // [start0, end0, start1, end1, ...]
}

// randSpaceBatch draws a geometry with m block dims and rest remaining
// dims whose padded spatial sizes the block divides.
func randSpaceBatch(r *rand.Rand, m, rest int) spaceBatchCase {
	c := spaceBatchCase{space: tensor.Shape{1 + r.Int63n(3)}}
	for i := 0; i < m; i++ {
		b := 1 + r.Int63n(3)
		padded := b * (1 + r.Int63n(3))
		s := r.Int63n(min(padded, 3) + 1)
		if s > padded {
			s = padded
		}
		d := padded - s
		e := r.Int63n(d + 1)
		c.block = append(c.block, b)
		c.pads = append(c.pads, s, e)
		c.space = append(c.space, d-e)
	}
	for i := 0; i < rest; i++ {
		c.space = append(c.space, 1+r.Int63n(3))
	}
	return c
}

// batchShape is the batch side's shape, batchView its [block..., B,
// Y..., R...] view and the permutation taking the space side's padded
// [B, Y1, b1, ..., YM, bM, R...] view to it.
func (c spaceBatchCase) batchShape() (out, view, padded tensor.Shape, perm []int) {
	m := len(c.block)
	prod := int64(1)
	for _, b := range c.block {
		prod *= b
	}
	out = tensor.Shape{c.space[0] * prod}
	padded = tensor.Shape{c.space[0]}
	view = append(tensor.Shape{}, c.block...)
	view = append(view, c.space[0])
	for i, b := range c.block {
		y := (c.space[1+i] + c.pads[2*i] + c.pads[2*i+1]) / b
		out = append(out, y)
		padded = append(padded, y, b)
		view = append(view, y)
	}
	rem := c.space[1+m:]
	out = append(out, rem...)
	padded = append(padded, rem...)
	view = append(view, rem...)
	for i := 0; i < m; i++ {
		perm = append(perm, 2+2*i)
	}
	perm = append(perm, 0)
	for i := 0; i < m; i++ {
		perm = append(perm, 1+2*i)
	}
	for i := 1 + 2*m; i < len(padded); i++ {
		perm = append(perm, i)
	}
	return
}

func pyPerm(p []int) string {
	v := make([]int64, len(p))
	for i, x := range p {
		v[i] = int64(x)
	}
	return pyInts(v)
}

// toBatchExpr is SpaceToBatchND's NumPy reference on a0.
func (c spaceBatchCase) toBatchExpr() string {
	out, _, padded, perm := c.batchShape()
	pads := []string{"(0,0)"}
	for i := range c.block {
		pads = append(pads, fmt.Sprintf("(%d,%d)", c.pads[2*i], c.pads[2*i+1]))
	}
	for range c.space[1+len(c.block):] {
		pads = append(pads, "(0,0)")
	}
	return fmt.Sprintf("np.pad(a0, [%s]).reshape(%s).transpose(%s).reshape(%s)", strings.Join(pads, ","), pyInts(padded), pyPerm(perm), pyInts(out))
}

// toSpaceExpr is BatchToSpaceND's NumPy reference on a0, the batch side
// with c.pads as crops.
func (c spaceBatchCase) toSpaceExpr() string {
	_, view, padded, perm := c.batchShape()
	inv := make([]int, len(perm))
	for i, p := range perm {
		inv[p] = i
	}
	full := tensor.Shape{c.space[0]}
	crop := []string{":"}
	for i, b := range c.block {
		f := padded[1+2*i] * b
		full = append(full, f)
		crop = append(crop, fmt.Sprintf("%d:%d", c.pads[2*i], f-c.pads[2*i+1]))
	}
	full = append(full, c.space[1+len(c.block):]...)
	return fmt.Sprintf("a0.reshape(%s).transpose(%s).reshape(%s)[%s]", pyInts(view), pyPerm(inv), pyInts(full), strings.Join(crop, ","))
}

// input draws the op's input for this geometry, the space side for
// SpaceToBatch (toBatch) or the batch side for BatchToSpace, and returns
// it with the NumPy reference of the op on it.
func (c spaceBatchCase) input(r *rand.Rand, dt tensor.DType, toBatch bool) (*tensor.Tensor, string) {
	if toBatch {
		return Rand(r, dt, c.space), c.toBatchExpr()
	}
	out, _, _, _ := c.batchShape()
	return Rand(r, dt, out), c.toSpaceExpr()
}

func padsTensor(dt tensor.DType, m int, v []int64) *tensor.Tensor {
	t := tensor.New(dt, tensor.Shape{int64(m), 2})
	for i, x := range v {
		SetF64(t, i, float64(x))
	}
	return t
}

// spaceBatchGen is the family of SpaceToBatchND (toBatch) or
// BatchToSpaceND.
func spaceBatchGen(toBatch bool) Gen {
	op := "BatchToSpaceND"
	if toBatch {
		op = "SpaceToBatchND"
	}
	return func(r *rand.Rand) []Case {
		var cs []Case
		for _, dt := range AllNumericTypes {
			for _, g := range [][2]int{{0, 1}, {1, 0}, {1, 1}, {2, 1}, {2, 0}, {3, 1}} {
				c := randSpaceBatch(r, g[0], g[1])
				bt, pt := pick(r, indexTypes), pick(r, indexTypes)
				block, pads := IntVec(bt, c.block...), padsTensor(pt, len(c.block), c.pads)
				a, expr := c.input(r, dt, toBatch)
				in := ins(a, block, pads)
				cs = append(cs, Case{Node: NodeFor(op, nil, in, nil), Inputs: in, NumPy: expr})
			}
		}
		// The dilated convolution's shape: [1, 7, 9, 4], block 2, padded
		// on both sides, and the same with an empty batch.
		for _, n := range []int64{1, 0} {
			c := spaceBatchCase{space: tensor.Shape{n, 7, 9, 4}, block: []int64{2, 2}, pads: []int64{2, 3, 2, 1}}
			a, expr := c.input(r, tensor.Float, toBatch)
			in := ins(a, IntVec(tensor.Int32, 2, 2), padsTensor(tensor.Int32, 2, c.pads))
			cs = append(cs, Case{Node: NodeFor(op, nil, in, nil), Inputs: in, NumPy: expr})
		}
		a := Rand(r, tensor.Float, tensor.Shape{4, 4, 6, 2})
		p0 := padsTensor(tensor.Int32, 2, []int64{0, 0, 0, 0})
		for _, b := range []struct {
			block *tensor.Tensor
			pads  *tensor.Tensor
		}{
			{IntVec(tensor.Int32, 0, 2), p0},                                                  // block < 1
			{IntVec(tensor.Int64, -2, 2), p0},                                                 // negative block
			{tensor.FromI32(tensor.Shape{1, 2}, []int32{2, 2}), p0},                           // block not a vector
			{IntVec(tensor.Int32, 2, 2, 2, 2), padsTensor(tensor.Int32, 4, make([]int64, 8))}, // rank too small
			{IntVec(tensor.Int32, 2, 2), padsTensor(tensor.Int32, 1, []int64{0, 0})},          // pads shape
			{IntVec(tensor.Int32, 2, 2), padsTensor(tensor.Int64, 2, []int64{-2, 0, 0, 0})},   // negative
			{IntVec(tensor.Int32, 3, 2), p0},                                                  // not dividing / batch
			{IntVec(tensor.Int32, 2, 2), padsTensor(tensor.Int32, 2, []int64{5, 4, 0, 0})},    // crops too large
		} {
			bad(&cs, op, nil, ins(a, b.block, b.pads), nil, status.InvalidArgument)
		}
		if toBatch { // padded to 5: not divisible by 2
			bad(&cs, op, nil, ins(a, IntVec(tensor.Int32, 2, 2), padsTensor(tensor.Int32, 2, []int64{1, 0, 0, 0})), nil, status.InvalidArgument)
		}
		// TF's limit: at most four block dims that are not block 1
		// without padding.
		a6 := Rand(r, tensor.Float, tensor.Shape{32, 2, 2, 2, 2, 2, 1})
		bad(&cs, op, nil, ins(a6, IntVec(tensor.Int32, 2, 2, 2, 2, 2), padsTensor(tensor.Int32, 5, make([]int64, 10))), nil, status.InvalidArgument)
		// Six block dims of which the first and last are trivial: within
		// the limit.
		c := spaceBatchCase{space: tensor.Shape{1, 1, 4, 4, 4, 4, 3}, block: []int64{1, 2, 2, 2, 2, 1}, pads: make([]int64, 12)}
		a7, expr := c.input(r, tensor.Float, toBatch)
		in := ins(a7, IntVec(tensor.Int32, c.block...), padsTensor(tensor.Int32, 6, c.pads))
		cs = append(cs, Case{Node: NodeFor(op, nil, in, nil), Inputs: in, NumPy: expr})
		return cs
	}
}

// spaceBatch4Gen is the family of the 4-D SpaceToBatch (toBatch) or
// BatchToSpace, whose block is the block_size attr.
func spaceBatch4Gen(toBatch bool) Gen {
	op := "BatchToSpace"
	if toBatch {
		op = "SpaceToBatch"
	}
	return func(r *rand.Rand) []Case {
		var cs []Case
		for _, dt := range AllNumericTypes {
			bs := 2 + r.Int63n(2)
			c := randSpaceBatch(r, 2, 1)
			for i := range c.block {
				c.block[i] = bs
				d := bs * (1 + r.Int63n(2))
				c.pads[2*i] = r.Int63n(d + 1)
				c.pads[2*i+1] = r.Int63n(d - c.pads[2*i] + 1)
				c.space[1+i] = d - c.pads[2*i] - c.pads[2*i+1]
			}
			pads := padsTensor(pick(r, indexTypes), 2, c.pads)
			attrs := Attrs{"block_size": AInt(bs)}
			a, expr := c.input(r, dt, toBatch)
			in := ins(a, pads)
			cs = append(cs, Case{Node: NodeFor(op, attrs, in, nil), Inputs: in, NumPy: expr})
		}
		attrs := Attrs{"block_size": AInt(2)}
		bad(&cs, op, attrs, ins(Rand(r, tensor.Float, tensor.Shape{4, 4, 4}), padsTensor(tensor.Int32, 2, make([]int64, 4))), nil, status.InvalidArgument)
		odd := []int64{1, 0, 0, 0} // padded to 5, not divisible by 2
		if !toBatch {
			odd = []int64{5, 4, 0, 0} // cropped to -1
		}
		bad(&cs, op, attrs, ins(Rand(r, tensor.Float, tensor.Shape{4, 4, 4, 1}), padsTensor(tensor.Int32, 2, odd)), nil, status.InvalidArgument)
		bad(&cs, op, attrs, ins(Rand(r, tensor.Float, tensor.Shape{4, 4, 4, 1}), padsTensor(tensor.Int32, 1, []int64{0, 0})), nil, status.InvalidArgument)
		bad(&cs, op, attrs, ins(Rand(r, tensor.Float, tensor.Shape{3, 4, 4, 1}), padsTensor(tensor.Int32, 2, []int64{0, -2, 0, 0})), nil, status.InvalidArgument)
		return cs
	}
}

// spaceDepthGen is the family of SpaceToDepth (toDepth) or DepthToSpace.
func spaceDepthGen(toDepth bool) Gen {
	op := "DepthToSpace"
	if toDepth {
		op = "SpaceToDepth"
	}
	return func(r *rand.Rand) []Case {
		var cs []Case
		for _, dt := range append(append([]tensor.DType{}, MoveTypes...), tensor.Uint16, tensor.Uint32, tensor.Uint64) {
			for _, n := range []int64{1 + r.Int63n(2), 0} {
				bs := 2 + r.Int63n(2)
				h, w, c := 1+r.Int63n(3), 1+r.Int63n(3), 1+r.Int63n(3)
				var s tensor.Shape
				var expr string
				if toDepth {
					s = tensor.Shape{n, h * bs, w * bs, c}
					expr = fmt.Sprintf("a0.reshape(%d,%d,%d,%d,%d,%d).transpose(0,1,3,2,4,5).reshape(%d,%d,%d,%d)", n, h, bs, w, bs, c, n, h, w, bs*bs*c)
				} else {
					s = tensor.Shape{n, h, w, bs * bs * c}
					expr = fmt.Sprintf("a0.reshape(%d,%d,%d,%d,%d,%d).transpose(0,1,3,2,4,5).reshape(%d,%d,%d,%d)", n, h, w, bs, bs, c, n, h*bs, w*bs, c)
				}
				a := Rand(r, dt, s)
				cs = append(cs, Case{Node: NodeFor(op, Attrs{"block_size": AInt(bs)}, ins(a), nil), Inputs: ins(a), NumPy: expr})
			}
		}
		// Complex elements, which NumPy cannot carry here: the reference
		// is TF's definition element by element.
		for _, dt := range []tensor.DType{tensor.Complex64, tensor.Complex128} {
			s := tensor.Shape{2, 2, 3, 8}
			if toDepth {
				s = tensor.Shape{2, 4, 6, 2}
			}
			a := randAny(r, dt, s)
			cs = append(cs, Case{Node: NodeFor(op, Attrs{"block_size": AInt(2)}, ins(a), nil), Inputs: ins(a), Want: ins(spaceDepthRef(a, 2, toDepth))})
		}
		// A [1, 2, 2, 1] image is [1, 1, 1, 4] in depth with the same
		// element order: strings, checked in Go.
		from, to := tensor.Shape{1, 1, 1, 4}, tensor.Shape{1, 2, 2, 1}
		if toDepth {
			from, to = to, from
		}
		s := RandStrings(r, from)
		cs = append(cs, Case{Node: NodeFor(op, Attrs{"block_size": AInt(2)}, ins(s), nil), Inputs: ins(s),
			Want: ins(&tensor.Tensor{DType: tensor.String, Shape: to, Strs: s.Strs})})
		bs2 := Attrs{"block_size": AInt(2)}
		bad(&cs, op, bs2, ins(Rand(r, tensor.Float, tensor.Shape{4, 4, 4})), nil, status.InvalidArgument)
		bad(&cs, op, bs2, ins(Rand(r, tensor.Float, tensor.Shape{1, 4, 4, 4, 4})), nil, status.InvalidArgument)
		bad(&cs, op, bs2, ins(Rand(r, tensor.Float, tensor.Shape{1, 3, 4, 3})), nil, status.InvalidArgument)
		// TF's CPU kernel takes NHWC only (its GPU kernel takes NCHW too).
		nchw := ins(Rand(r, tensor.Float, tensor.Shape{1, 4, 4, 4}))
		cs = append(cs, Case{Node: NodeForUnknown(op, Attrs{"block_size": AInt(2), "data_format": AStr("NCHW")}, nchw, nil), Inputs: nchw,
			Err: status.InvalidArgument, HostErr: true})
		return cs
	}
}

// spaceDepthRef is DepthToSpace (or SpaceToDepth) of an NHWC tensor by
// TF's definition: space element [n, h*bs + i, w*bs + j, c] is depth
// element [n, h, w, (i*bs + j)*C + c], C the space side's depth.
func spaceDepthRef(a *tensor.Tensor, bs int64, toDepth bool) *tensor.Tensor {
	n, h, w, c := a.Shape[0], a.Shape[1], a.Shape[2], a.Shape[3]
	var out tensor.Shape
	if toDepth {
		out = tensor.Shape{n, h / bs, w / bs, c * bs * bs}
		h, w = h/bs, w/bs
	} else {
		out = tensor.Shape{n, h * bs, w * bs, c / (bs * bs)}
		c /= bs * bs
	}
	o := tensor.New(a.DType, out)
	es := int64(a.DType.Size())
	for ni := int64(0); ni < n; ni++ {
		for hi := int64(0); hi < h; hi++ {
			for wi := int64(0); wi < w; wi++ {
				for i := int64(0); i < bs; i++ {
					for j := int64(0); j < bs; j++ {
						for ci := int64(0); ci < c; ci++ {
							space := ((ni*h*bs+hi*bs+i)*w*bs+wi*bs+j)*c + ci
							depth := ((ni*h+hi)*w+wi)*bs*bs*c + (i*bs+j)*c + ci
							from, to := depth, space
							if toDepth {
								from, to = space, depth
							}
							copy(o.Buf[to*es:(to+1)*es], a.Buf[from*es:(from+1)*es])
						}
					}
				}
			}
		}
	}
	return o
}

func init() {
	Add("SpaceToBatchND", spaceBatchGen(true))
	Add("BatchToSpaceND", spaceBatchGen(false))
	Add("SpaceToBatch", spaceBatch4Gen(true))
	Add("BatchToSpace", spaceBatch4Gen(false))
	Add("SpaceToDepth", spaceDepthGen(true))
	Add("DepthToSpace", spaceDepthGen(false))
}
