package graph

import (
	"mstream/tensor"
)

// Shape functions for the array, NN, scan and random ops of the second
// kernel set. They follow TF's shape functions where a shape is decided
// statically and give unknown dims otherwise; an error is returned only
// where TF's shape function rejects the node too.

func init() {
	RegisterShapeFn("ShapeN", func(c *ShapeContext) ([]tensor.PartialShape, error) {
		out := make([]tensor.PartialShape, len(c.In))
		for i, s := range c.In {
			out[i] = known(int64(s.Rank()))
		}
		return out, nil
	})
	RegisterShapeFn("Concat", func(c *ShapeContext) ([]tensor.PartialShape, error) {
		return concatShapeOf(c, c.In[1:], 0)
	})
	RegisterShapeFn("Split", splitShape)
	RegisterShapeFn("SplitV", splitVShape)
	RegisterShapeFn("Unpack", unpackShape)
	RegisterShapeFn("Slice", sliceShape)
	RegisterShapeFn("Tile", tileShape)
	for _, op := range []string{"Pad", "PadV2", "MirrorPad"} {
		RegisterShapeFn(op, padShape)
	}
	for _, op := range []string{"ReverseV2", "MatrixBandPart", "InvertPermutation", "LRN", "Cumsum", "Cumprod"} {
		RegisterShapeFn(op, unchangedShape)
	}
	RegisterShapeFn("BroadcastTo", func(c *ShapeContext) ([]tensor.PartialShape, error) {
		return []tensor.PartialShape{shapeFromInput(c, 1)}, nil
	})
	RegisterShapeFn("ScatterNd", func(c *ShapeContext) ([]tensor.PartialShape, error) {
		return []tensor.PartialShape{shapeFromInput(c, 2)}, nil
	})
	for _, op := range []string{"RandomUniform", "RandomStandardNormal", "TruncatedNormal", "RandomUniformInt"} {
		RegisterShapeFn(op, func(c *ShapeContext) ([]tensor.PartialShape, error) {
			return []tensor.PartialShape{shapeFromInput(c, 0)}, nil
		})
	}
	RegisterShapeFn("BroadcastArgs", func(c *ShapeContext) ([]tensor.PartialShape, error) {
		a, b := c.In[0], c.In[1]
		if a.Known && b.Known && len(a.Dims) == 1 && len(b.Dims) == 1 && a.Dims[0] >= 0 && b.Dims[0] >= 0 {
			return []tensor.PartialShape{known(max(a.Dims[0], b.Dims[0]))}, nil
		}
		return []tensor.PartialShape{known(-1)}, nil
	})
	RegisterShapeFn("GatherNd", gatherNdShape)
	RegisterShapeFn("OneHot", oneHotShape)
	RegisterShapeFn("Range", rangeShape)
	RegisterShapeFn("Where", func(c *ShapeContext) ([]tensor.PartialShape, error) {
		return []tensor.PartialShape{known(-1, int64(c.In[0].Rank()))}, nil
	})
	RegisterShapeFn("Bitcast", bitcastShape)
	RegisterShapeFn("Unique", func(c *ShapeContext) ([]tensor.PartialShape, error) {
		if err := needRank(c.In[0], 1, "x"); err != nil {
			return nil, err
		}
		return []tensor.PartialShape{known(-1), c.In[0]}, nil
	})
	RegisterShapeFn("TopKV2", topKShape)
	for _, op := range []string{"Conv2D", "DepthwiseConv2dNative"} {
		RegisterShapeFn(op, convShape)
	}
	RegisterShapeFn("Conv2DBackpropInput", func(c *ShapeContext) ([]tensor.PartialShape, error) {
		if v, ok := c.ConstInts(0); ok && len(v) == 4 {
			return []tensor.PartialShape{known(v...)}, nil
		}
		return []tensor.PartialShape{unknownDims(4)}, nil
	})
	for _, op := range []string{"MaxPool", "AvgPool", "MaxPoolV2"} {
		RegisterShapeFn(op, poolShape)
	}
	for _, op := range []string{"FusedBatchNorm", "FusedBatchNormV2", "FusedBatchNormV3"} {
		RegisterShapeFn(op, batchNormShape)
	}
	for _, op := range []string{"ResizeBilinear", "ResizeNearestNeighbor"} {
		RegisterShapeFn(op, resizeShape)
	}
}

// shapeFromInput is the shape held by a constant int vector input, or a
// shape of the vector's length with unknown dims.
func shapeFromInput(c *ShapeContext, i int) tensor.PartialShape {
	if v, ok := c.ConstInts(i); ok && len(c.In[i].Dims) == 1 {
		for _, d := range v {
			if d < 0 {
				return tensor.Unknown
			}
		}
		return known(append([]int64{}, v...)...)
	}
	s := c.In[i]
	if s.Known && len(s.Dims) == 1 && s.Dims[0] >= 0 && s.Dims[0] < 1<<16 {
		return unknownDims(int(s.Dims[0]))
	}
	return tensor.Unknown
}

func constScalar(c *ShapeContext, i int) (int64, bool) {
	v, ok := c.ConstInts(i)
	if !ok || len(v) != 1 {
		return 0, false
	}
	return v[0], true
}

func concatShapeOf(c *ShapeContext, vals []tensor.PartialShape, axisInput int) ([]tensor.PartialShape, error) {
	rank := -1
	for _, v := range vals {
		if v.Known {
			rank = len(v.Dims)
			break
		}
	}
	if rank < 0 {
		return []tensor.PartialShape{tensor.Unknown}, nil
	}
	ax, ok := constScalar(c, axisInput)
	if !ok {
		return []tensor.PartialShape{unknownDims(rank)}, nil
	}
	a, err := normAxis(ax, rank, "concat axis")
	if err != nil {
		return nil, err
	}
	out := unknownDims(rank)
	sum := int64(0)
	for _, v := range vals {
		if !v.Known {
			sum = -1
			continue
		}
		if len(v.Dims) != rank {
			return nil, errorf("shapes of inputs must have the same rank: %v", vals)
		}
		for i, d := range v.Dims {
			if i == a {
				if d < 0 || sum < 0 {
					sum = -1
				} else {
					sum += d
				}
				continue
			}
			m, ok := mergeDim(out.Dims[i], d)
			if !ok {
				return nil, errorf("dimension %d of inputs must match: %v", i, vals)
			}
			out.Dims[i] = m
		}
	}
	out.Dims[a] = sum
	return []tensor.PartialShape{out}, nil
}

func splitShape(c *ShapeContext) ([]tensor.PartialShape, error) {
	n := c.NumOutputs()
	in := c.In[1]
	out := make([]tensor.PartialShape, n)
	ax, ok := constScalar(c, 0)
	for i := range out {
		out[i] = tensor.Unknown
		if in.Known {
			out[i] = unknownDims(len(in.Dims))
		}
	}
	if !in.Known || !ok {
		return out, nil
	}
	a, err := normAxis(ax, len(in.Dims), "split dimension")
	if err != nil {
		return nil, err
	}
	d := in.Dims[a]
	if d >= 0 && n > 0 && d%int64(n) != 0 {
		return nil, errorf("number of ways to split should evenly divide the split dimension, but got split_dim %d (size = %d) and num_split %d", a, d, n)
	}
	for i := range out {
		s := known(append([]int64{}, in.Dims...)...)
		if d >= 0 {
			s.Dims[a] = d / int64(n)
		}
		out[i] = s
	}
	return out, nil
}

func splitVShape(c *ShapeContext) ([]tensor.PartialShape, error) {
	n := c.NumOutputs()
	in := c.In[0]
	out := make([]tensor.PartialShape, n)
	for i := range out {
		out[i] = tensor.Unknown
		if in.Known {
			out[i] = unknownDims(len(in.Dims))
		}
	}
	sizes, ok1 := c.ConstInts(1)
	ax, ok2 := constScalar(c, 2)
	if !in.Known || !ok1 || !ok2 || len(sizes) != n {
		return out, nil
	}
	a, err := normAxis(ax, len(in.Dims), "split dimension")
	if err != nil {
		return nil, err
	}
	unknown, sum := -1, int64(0)
	for i, s := range sizes {
		if s == -1 {
			unknown = i
		} else {
			sum += s
		}
	}
	for i := range out {
		s := known(append([]int64{}, in.Dims...)...)
		s.Dims[a] = sizes[i]
		if i == unknown {
			s.Dims[a] = -1
			if in.Dims[a] >= 0 {
				s.Dims[a] = in.Dims[a] - sum
			}
		}
		if s.Dims[a] < -1 {
			return out, nil
		}
		out[i] = s
	}
	return out, nil
}

func unpackShape(c *ShapeContext) ([]tensor.PartialShape, error) {
	in := c.In[0]
	out := make([]tensor.PartialShape, c.NumOutputs())
	for i := range out {
		out[i] = tensor.Unknown
	}
	if !in.Known {
		return out, nil
	}
	a, err := normAxis(c.Attr("axis").GetI(), len(in.Dims), "axis")
	if err != nil {
		return nil, err
	}
	if d := in.Dims[a]; d >= 0 && d != int64(len(out)) {
		return nil, errorf("dimension must be %d but is %d for input shape %v", len(out), d, in)
	}
	s := append(append([]int64{}, in.Dims[:a]...), in.Dims[a+1:]...)
	for i := range out {
		out[i] = known(append([]int64{}, s...)...)
	}
	return out, nil
}

func sliceShape(c *ShapeContext) ([]tensor.PartialShape, error) {
	in := c.In[0]
	begin, ok1 := c.ConstInts(1)
	size, ok2 := c.ConstInts(2)
	if !ok2 {
		if in.Known {
			return []tensor.PartialShape{unknownDims(len(in.Dims))}, nil
		}
		return []tensor.PartialShape{shapeFromInput(c, 2)}, nil
	}
	if in.Known && len(size) != len(in.Dims) {
		return nil, errorf("size %v does not match the rank of input %v", size, in)
	}
	out := unknownDims(len(size))
	for i, s := range size {
		switch {
		case s >= 0:
			out.Dims[i] = s
		case s == -1 && ok1 && in.Known && in.Dims[i] >= 0 && i < len(begin):
			out.Dims[i] = in.Dims[i] - begin[i]
		}
		if out.Dims[i] < -1 {
			out.Dims[i] = -1
		}
	}
	return []tensor.PartialShape{out}, nil
}

func tileShape(c *ShapeContext) ([]tensor.PartialShape, error) {
	in := c.In[0]
	m, ok := c.ConstInts(1)
	if !in.Known {
		if ok {
			return []tensor.PartialShape{unknownDims(len(m))}, nil
		}
		return []tensor.PartialShape{tensor.Unknown}, nil
	}
	out := unknownDims(len(in.Dims))
	if !ok {
		return []tensor.PartialShape{out}, nil
	}
	if len(m) != len(in.Dims) {
		return nil, errorf("multiples %v do not match the rank of input %v", m, in)
	}
	for i, d := range in.Dims {
		if d >= 0 && m[i] >= 0 {
			out.Dims[i] = d * m[i]
		}
	}
	return []tensor.PartialShape{out}, nil
}

func padShape(c *ShapeContext) ([]tensor.PartialShape, error) {
	in := c.In[0]
	p, ok := c.ConstInts(1)
	if !in.Known {
		if s := c.In[1]; s.Known && len(s.Dims) == 2 && s.Dims[0] >= 0 && s.Dims[0] < 1<<16 {
			return []tensor.PartialShape{unknownDims(int(s.Dims[0]))}, nil
		}
		return []tensor.PartialShape{tensor.Unknown}, nil
	}
	out := unknownDims(len(in.Dims))
	if !ok {
		return []tensor.PartialShape{out}, nil
	}
	if len(p) != 2*len(in.Dims) {
		return nil, errorf("paddings %v do not match the rank of input %v", p, in)
	}
	for i, d := range in.Dims {
		if d >= 0 && p[2*i] >= 0 && p[2*i+1] >= 0 {
			out.Dims[i] = d + p[2*i] + p[2*i+1]
		}
	}
	return []tensor.PartialShape{out}, nil
}

func gatherNdShape(c *ShapeContext) ([]tensor.PartialShape, error) {
	p, idx := c.In[0], c.In[1]
	if !p.Known || !idx.Known || len(idx.Dims) == 0 || idx.Dims[len(idx.Dims)-1] < 0 {
		return []tensor.PartialShape{tensor.Unknown}, nil
	}
	k := idx.Dims[len(idx.Dims)-1]
	if k > int64(len(p.Dims)) {
		return nil, errorf("index innermost dimension length must be <= params rank; saw: %d vs. %d", k, len(p.Dims))
	}
	out := append(append([]int64{}, idx.Dims[:len(idx.Dims)-1]...), p.Dims[k:]...)
	return []tensor.PartialShape{known(out...)}, nil
}

func oneHotShape(c *ShapeContext) ([]tensor.PartialShape, error) {
	in := c.In[0]
	if !in.Known {
		return []tensor.PartialShape{tensor.Unknown}, nil
	}
	depth, ok := constScalar(c, 1)
	if !ok || depth < 0 {
		depth = -1
	}
	axis := c.Attr("axis").GetI()
	if c.Attr("axis") == nil {
		axis = -1
	}
	r := int64(len(in.Dims))
	if axis < -1 || axis > r {
		return nil, errorf("axis must be -1 or between 0 and %d, got %d", r, axis)
	}
	if axis == -1 {
		axis = r
	}
	out := append(append(append([]int64{}, in.Dims[:axis]...), depth), in.Dims[axis:]...)
	return []tensor.PartialShape{known(out...)}, nil
}

func rangeShape(c *ShapeContext) ([]tensor.PartialShape, error) {
	var v [3]float64
	for i := range v {
		t := c.ConstInput(i)
		if t == nil || t.NumElements() != 1 {
			return []tensor.PartialShape{known(-1)}, nil
		}
		v[i] = t.ElementF64(0)
	}
	s, l, d := v[0], v[1], v[2]
	if d == 0 || d > 0 && s > l || d < 0 && s < l {
		return nil, errorf("invalid range start %v limit %v delta %v", s, l, d)
	}
	var n int64
	if c.Node.OutTypes[0].IsInteger() {
		a, b, e := int64(s), int64(l), int64(d)
		if e > 0 {
			n = (b - a + e - 1) / e
		} else {
			n = (a - b - e - 1) / -e
		}
	} else {
		q := (l - s) / d
		if q < 0 {
			q = -q
		}
		n = int64(q)
		if float64(n) < q {
			n++
		}
	}
	return []tensor.PartialShape{known(n)}, nil
}

func bitcastShape(c *ShapeContext) ([]tensor.PartialShape, error) {
	in := c.In[0]
	if !in.Known || len(c.Node.InTypes) == 0 {
		return []tensor.PartialShape{tensor.Unknown}, nil
	}
	a, b := int64(c.Node.InTypes[0].Size()), int64(c.Node.OutTypes[0].Size())
	if a <= 0 || b <= 0 {
		return []tensor.PartialShape{tensor.Unknown}, nil
	}
	d := append([]int64{}, in.Dims...)
	switch {
	case a > b:
		d = append(d, a/b)
	case a < b:
		if len(d) == 0 {
			return nil, errorf("Cannot bitcast from %v to %v: shape %v", c.Node.InTypes[0], c.Node.OutTypes[0], in)
		}
		if last := d[len(d)-1]; last >= 0 && last != b/a {
			return nil, errorf("Cannot bitcast from %v to %v: shape %v", c.Node.InTypes[0], c.Node.OutTypes[0], in)
		}
		d = d[:len(d)-1]
	}
	return []tensor.PartialShape{known(d...)}, nil
}

func topKShape(c *ShapeContext) ([]tensor.PartialShape, error) {
	in := c.In[0]
	if !in.Known {
		return []tensor.PartialShape{tensor.Unknown, tensor.Unknown}, nil
	}
	if len(in.Dims) < 1 {
		return nil, errorf("input must be >= 1-D, got shape %v", in)
	}
	out := known(append([]int64{}, in.Dims...)...)
	k, ok := constScalar(c, 1)
	if !ok {
		out.Dims[len(out.Dims)-1] = -1
	} else {
		if last := in.Dims[len(in.Dims)-1]; last >= 0 && (k < 0 || last < k) {
			return nil, errorf("input must have at least k columns. Had %d, needed %d", last, k)
		}
		out.Dims[len(out.Dims)-1] = k
	}
	return []tensor.PartialShape{out, cloneShape(out)}, nil
}

// windowDim is TF's windowed output size with -1 for unknown.
func windowDim(in, k, dil, stride int64, padding string, before, after int64) int64 {
	if in < 0 || k < 0 || stride <= 0 || dil <= 0 {
		return -1
	}
	eff := (k-1)*dil + 1
	var out int64
	switch padding {
	case "VALID":
		out = (in - eff + stride) / stride
	case "EXPLICIT":
		out = (in + before + after - eff + stride) / stride
	case "SAME":
		out = (in + stride - 1) / stride
	default:
		return -1
	}
	if out < 0 {
		return -1 // the kernel reports it
	}
	return out
}

// nhwcIndex returns the H, W and C dim indices for a data format.
func nhwcIndex(c *ShapeContext) (h, w, ch int) {
	if string(c.Attr("data_format").GetS()) == "NCHW" {
		return 2, 3, 1
	}
	return 1, 2, 3
}

func convShape(c *ShapeContext) ([]tensor.PartialShape, error) {
	in, f := c.In[0], c.In[1]
	if err := needRank(in, 4, "input"); err != nil {
		return nil, err
	}
	if err := needRank(f, 4, "filter"); err != nil {
		return nil, err
	}
	st, dl := c.Attr("strides").GetList().GetI(), c.Attr("dilations").GetList().GetI()
	if len(dl) == 0 {
		dl = []int64{1, 1, 1, 1}
	}
	// TF checks the window's strides and dilations before it looks at the
	// input shapes, so a zero stride fails when the node is added.
	if len(st) == 4 && len(dl) == 4 {
		h, w, _ := nhwcIndex(c)
		for _, i := range []int{h, w} {
			if st[i] < 1 {
				return nil, errorf("Stride must be > 0, but got %d", st[i])
			}
			if dl[i] < 1 {
				return nil, errorf("Dilation rate must be >= 1, but got %d", dl[i])
			}
		}
	}
	if !in.Known || !f.Known || len(st) != 4 || len(dl) != 4 {
		return []tensor.PartialShape{unknownDims(4)}, nil
	}
	h, w, ch := nhwcIndex(c)
	pad := string(c.Attr("padding").GetS())
	ep := c.Attr("explicit_paddings").GetList().GetI()
	var bh, ah, bw, aw int64
	if pad == "EXPLICIT" && len(ep) == 8 {
		bh, ah, bw, aw = ep[2*h], ep[2*h+1], ep[2*w], ep[2*w+1]
	}
	out := unknownDims(4)
	out.Dims[0] = in.Dims[0]
	out.Dims[h] = windowDim(in.Dims[h], f.Dims[0], dl[h], st[h], pad, bh, ah)
	out.Dims[w] = windowDim(in.Dims[w], f.Dims[1], dl[w], st[w], pad, bw, aw)
	out.Dims[ch] = f.Dims[3]
	if c.Node.Op == "DepthwiseConv2dNative" && f.Dims[2] >= 0 && f.Dims[3] >= 0 {
		out.Dims[ch] = f.Dims[2] * f.Dims[3]
	}
	return []tensor.PartialShape{out}, nil
}

// convMaxPoolShape is _MstreamConv2DMaxPool's (NHWC): its convolution's
// output, pooled by pool_ksize, pool_strides and pool_padding.
func convMaxPoolShape(c *ShapeContext) ([]tensor.PartialShape, error) {
	conv, err := convShape(c)
	if err != nil {
		return nil, err
	}
	ks, st := c.Attr("pool_ksize").GetList().GetI(), c.Attr("pool_strides").GetList().GetI()
	in := conv[0]
	if !in.Known || len(ks) != 4 || len(st) != 4 {
		return []tensor.PartialShape{unknownDims(4)}, nil
	}
	pad := string(c.Attr("pool_padding").GetS())
	out := unknownDims(4)
	out.Dims[0], out.Dims[3] = in.Dims[0], in.Dims[3]
	out.Dims[1] = windowDim(in.Dims[1], ks[1], 1, st[1], pad, 0, 0)
	out.Dims[2] = windowDim(in.Dims[2], ks[2], 1, st[2], pad, 0, 0)
	return []tensor.PartialShape{out}, nil
}

func poolShape(c *ShapeContext) ([]tensor.PartialShape, error) {
	in := c.In[0]
	if err := needRank(in, 4, "input"); err != nil {
		return nil, err
	}
	ks, st := c.Attr("ksize").GetList().GetI(), c.Attr("strides").GetList().GetI()
	if c.Node.Op == "MaxPoolV2" {
		var ok1, ok2 bool
		ks, ok1 = c.ConstInts(1)
		st, ok2 = c.ConstInts(2)
		if !ok1 || !ok2 {
			return []tensor.PartialShape{unknownDims(4)}, nil
		}
	}
	if !in.Known || len(ks) != 4 || len(st) != 4 {
		return []tensor.PartialShape{unknownDims(4)}, nil
	}
	h, w, ch := nhwcIndex(c)
	pad := string(c.Attr("padding").GetS())
	ep := c.Attr("explicit_paddings").GetList().GetI()
	var bh, ah, bw, aw int64
	if pad == "EXPLICIT" && len(ep) == 8 {
		bh, ah, bw, aw = ep[2*h], ep[2*h+1], ep[2*w], ep[2*w+1]
	}
	out := unknownDims(4)
	out.Dims[0] = in.Dims[0]
	out.Dims[h] = windowDim(in.Dims[h], ks[h], 1, st[h], pad, bh, ah)
	out.Dims[w] = windowDim(in.Dims[w], ks[w], 1, st[w], pad, bw, aw)
	out.Dims[ch] = in.Dims[ch]
	if ks[ch] > 1 && in.Dims[ch] >= 0 {
		out.Dims[ch] = in.Dims[ch] / ks[ch]
	}
	return []tensor.PartialShape{out}, nil
}

func batchNormShape(c *ShapeContext) ([]tensor.PartialShape, error) {
	x := c.In[0]
	ch := int64(-1)
	if x.Known {
		if len(x.Dims) != 4 && len(x.Dims) != 5 {
			return nil, errorf("input must be 4 or 5-dimensional, got %v", x)
		}
		ax := len(x.Dims) - 1
		if df := string(c.Attr("data_format").GetS()); df == "NCHW" || df == "NCDHW" {
			ax = 1
		}
		ch = x.Dims[ax]
	}
	out := []tensor.PartialShape{x}
	for i := 1; i < c.NumOutputs(); i++ {
		if i == 5 {
			out = append(out, tensor.Unknown)
			continue
		}
		out = append(out, known(ch))
	}
	return out, nil
}

func resizeShape(c *ShapeContext) ([]tensor.PartialShape, error) {
	in := c.In[0]
	if err := needRank(in, 4, "images"); err != nil {
		return nil, err
	}
	out := unknownDims(4)
	if in.Known {
		out.Dims[0], out.Dims[3] = in.Dims[0], in.Dims[3]
	}
	if v, ok := c.ConstInts(1); ok && len(v) == 2 {
		out.Dims[1], out.Dims[2] = v[0], v[1]
	}
	return []tensor.PartialShape{out}, nil
}
