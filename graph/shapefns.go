package graph

import (
	"math"
	"strconv"
	"strings"

	"mstream/proto/tfpb"
	"mstream/tensor"
)

// UnaryShapeOps are ops whose only output has the shape of input 0. Add an
// op here to give it that shape function.
var UnaryShapeOps = []string{
	"Identity", "StopGradient", "Snapshot", "PreventGradient", "CheckNumerics", "EnsureShape",
	"Relu", "Relu6", "Elu", "Selu", "LeakyRelu", "Softplus", "Softsign", "Sigmoid", "Tanh",
	"Softmax", "LogSoftmax", "Cast", "Abs", "Neg", "Exp", "Expm1", "Log", "Log1p", "Sqrt",
	"Rsqrt", "Square", "Reciprocal", "Inv", "Sign", "Floor", "Ceil", "Round", "Rint", "Sin",
	"Cos", "Tan", "Asin", "Acos", "Atan", "Sinh", "Cosh", "Asinh", "Acosh", "Atanh", "Erf",
	"Erfc", "IsNan", "IsInf", "IsFinite", "LogicalNot", "Invert", "OnesLike", "ZerosLike",
	"Gelu", "Mish", "Swish", "ClipByValue", "ReluGrad", "SigmoidGrad",
	"TanhGrad", "Relu6Grad", "FakeQuantWithMinMaxArgs", "Digamma", "Lgamma",
}

// BinaryShapeOps are elementwise binary ops with NumPy broadcasting of their
// two inputs. Add an op here to give it that shape function.
var BinaryShapeOps = []string{
	"Add", "AddV2", "Sub", "Mul", "RealDiv", "Div", "DivNoNan", "FloorDiv", "FloorMod",
	"TruncateDiv", "TruncateMod", "Mod", "Maximum", "Minimum", "Pow", "SquaredDifference",
	"Equal", "NotEqual", "Less", "LessEqual", "Greater", "GreaterEqual", "LogicalAnd",
	"LogicalOr", "BitwiseAnd", "BitwiseOr", "BitwiseXor", "LeftShift", "RightShift",
	"Atan2", "Xdivy", "Xlogy", "Xlog1py", "MulNoNan", "Complex", "Polygamma",
	"Igamma", "Igammac", "Zeta", "NextAfter",
}

func init() {
	for _, op := range UnaryShapeOps {
		RegisterShapeFn(op, unchangedShape)
	}
	for _, op := range BinaryShapeOps {
		RegisterShapeFn(op, binaryShape)
	}
	RegisterShapeFn("Placeholder", placeholderShape)
	RegisterShapeFn("PlaceholderWithDefault", placeholderShape)
	RegisterShapeFn("Const", constShape)
	RegisterShapeFn("IdentityN", func(c *ShapeContext) ([]tensor.PartialShape, error) { return c.In, nil })
	RegisterShapeFn("NoOp", func(c *ShapeContext) ([]tensor.PartialShape, error) { return nil, nil })
	RegisterShapeFn("MatMul", matMulShape)
	RegisterShapeFn("BatchMatMulV2", batchMatMulShape)
	RegisterShapeFn("BatchMatMulV3", batchMatMulShape)
	RegisterShapeFn("Einsum", einsumShape)
	RegisterShapeFn("BiasAdd", biasAddShape)
	RegisterShapeFn("Select", selectShape)
	RegisterShapeFn("SelectV2", selectV2Shape)
	RegisterShapeFn("Reshape", reshapeShape)
	RegisterShapeFn("Shape", shapeShape)
	RegisterShapeFn("Size", scalarShape)
	RegisterShapeFn("Rank", scalarShape)
	RegisterShapeFn("ExpandDims", expandDimsShape)
	RegisterShapeFn("Squeeze", squeezeShape)
	RegisterShapeFn("ConcatV2", concatV2Shape)
	RegisterShapeFn("GatherV2", gatherV2Shape)
	RegisterShapeFn("Pack", packShape)
	RegisterShapeFn("Transpose", transposeShape)
	for _, op := range []string{"Sum", "Mean", "Max", "Min", "Prod", "All", "Any"} {
		RegisterShapeFn(op, reductionShape)
	}
	RegisterShapeFn("StridedSlice", stridedSliceShape)
	RegisterShapeFn("Fill", fillShape)
	RegisterShapeFn("AddN", addNShape)
	RegisterShapeFn("Equal", equalityShape)
	RegisterShapeFn("NotEqual", equalityShape)
	RegisterShapeFn("ArgMax", argShape)
	RegisterShapeFn("ArgMin", argShape)
}

// equalityShape is binaryShape, except that with incompatible_shape_error
// false shapes that do not broadcast give an unknown shape (the kernel then
// returns a scalar), as TF's shape function does.
func equalityShape(c *ShapeContext) ([]tensor.PartialShape, error) {
	s, err := BroadcastShapes(c.In[0], c.In[1])
	if err != nil {
		if a := c.Attr("incompatible_shape_error"); a != nil && !a.GetB() {
			return []tensor.PartialShape{tensor.Unknown}, nil
		}
		return nil, err
	}
	return []tensor.PartialShape{s}, nil
}

// argShape drops the reduced axis of ArgMax/ArgMin.
func argShape(c *ShapeContext) ([]tensor.PartialShape, error) {
	in := c.In[0]
	ax, ok := c.ConstInts(1)
	if !in.Known {
		return []tensor.PartialShape{tensor.Unknown}, nil
	}
	if !ok || len(ax) != 1 {
		if len(in.Dims) == 0 {
			return nil, errorf("input must have rank >= 1")
		}
		return []tensor.PartialShape{unknownDims(len(in.Dims) - 1)}, nil
	}
	a, err := normAxis(ax[0], len(in.Dims), "dimension")
	if err != nil {
		return nil, err
	}
	out := append(append([]int64{}, in.Dims[:a]...), in.Dims[a+1:]...)
	return []tensor.PartialShape{known(out...)}, nil
}

func unchangedShape(c *ShapeContext) ([]tensor.PartialShape, error) {
	if len(c.In) == 0 {
		return nil, nil
	}
	return []tensor.PartialShape{c.In[0]}, nil
}

func scalarShape(c *ShapeContext) ([]tensor.PartialShape, error) {
	return []tensor.PartialShape{known()}, nil
}

func placeholderShape(c *ShapeContext) ([]tensor.PartialShape, error) {
	p := c.Attr("shape").GetShape()
	if p == nil || p.UnknownRank {
		if c.Node.Op == "PlaceholderWithDefault" && len(c.In) > 0 {
			return []tensor.PartialShape{tensor.Unknown}, nil
		}
		return []tensor.PartialShape{tensor.Unknown}, nil
	}
	for _, d := range p.Dim {
		if d.Size < -1 {
			return nil, errorf("Shape %v has dimensions with values below -1 (where -1 means unknown)", shapeText(p))
		}
	}
	s := tensor.ShapeFromProto(p)
	if c.Node.Op == "PlaceholderWithDefault" && len(c.In) > 0 {
		if _, ok := MergeShapes(s, c.In[0]); !ok {
			return nil, errorf("input shape %v is not compatible with the shape attr %v", c.In[0], s)
		}
	}
	return []tensor.PartialShape{s}, nil
}

// shapeText is a shape attr as TF prints it, [2,-2], even where its sizes are invalid.
func shapeText(p *tfpb.TensorShapeProto) string {
	b := []byte{'['}
	for i, d := range p.Dim {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, d.Size, 10)
	}
	return string(append(b, ']'))
}

func constShape(c *ShapeContext) ([]tensor.PartialShape, error) {
	t := c.Attr("value").GetTensor()
	if t == nil {
		return nil, errorf("attr 'value' is not a tensor")
	}
	s := tensor.ShapeFromProto(t.TensorShape)
	if !s.FullyDefined() {
		return nil, errorf("value has an invalid shape %v", s)
	}
	return []tensor.PartialShape{s}, nil
}

// BroadcastShapes is NumPy broadcasting of two partial shapes.
func BroadcastShapes(a, b tensor.PartialShape) (tensor.PartialShape, error) {
	if !a.Known || !b.Known {
		return tensor.Unknown, nil
	}
	n := max(len(a.Dims), len(b.Dims))
	out := make([]int64, n)
	for i := 0; i < n; i++ {
		x, y := int64(1), int64(1)
		if k := len(a.Dims) - n + i; k >= 0 {
			x = a.Dims[k]
		}
		if k := len(b.Dims) - n + i; k >= 0 {
			y = b.Dims[k]
		}
		switch {
		case x == 1:
			out[i] = y
		case y == 1:
			out[i] = x
		case x < 0 && y < 0:
			out[i] = -1
		case x < 0 || y < 0:
			// As TF: a known dim above 1 is the answer; against a known 0
			// the unknown one may be 1, so the result is unknown.
			out[i] = max(x, y)
			if out[i] <= 1 {
				out[i] = -1
			}
		case x == y:
			out[i] = x
		default:
			return tensor.Unknown, errorf("Incompatible shapes: %v vs. %v", a, b)
		}
	}
	return known(out...), nil
}

func binaryShape(c *ShapeContext) ([]tensor.PartialShape, error) {
	if len(c.In) < 2 {
		return nil, nil
	}
	s, err := BroadcastShapes(c.In[0], c.In[1])
	return []tensor.PartialShape{s}, err
}

func selectV2Shape(c *ShapeContext) ([]tensor.PartialShape, error) {
	s, err := BroadcastShapes(c.In[1], c.In[2])
	if err != nil {
		return nil, err
	}
	s, err = BroadcastShapes(c.In[0], s)
	return []tensor.PartialShape{s}, err
}

func selectShape(c *ShapeContext) ([]tensor.PartialShape, error) {
	s, ok := MergeShapes(c.In[1], c.In[2])
	if !ok {
		return nil, errorf("Incompatible shapes: %v vs. %v", c.In[1], c.In[2])
	}
	return []tensor.PartialShape{s}, nil
}

func addNShape(c *ShapeContext) ([]tensor.PartialShape, error) {
	s := tensor.Unknown
	for _, in := range c.In {
		m, ok := MergeShapes(s, in)
		if !ok {
			return nil, errorf("inputs must have the same shape: %v vs. %v", s, in)
		}
		s = m
	}
	return []tensor.PartialShape{s}, nil
}

func mergeDim(a, b int64) (int64, bool) {
	switch {
	case a < 0:
		return b, true
	case b < 0 || a == b:
		return a, true
	}
	return a, false
}

func needRank(s tensor.PartialShape, r int, what string) error {
	if s.Known && len(s.Dims) != r {
		return errorf("%s must be rank %d, got shape %v", what, r, s)
	}
	return nil
}

func matMulShape(c *ShapeContext) ([]tensor.PartialShape, error) {
	a, b := c.In[0], c.In[1]
	if err := needRank(a, 2, "a"); err != nil {
		return nil, err
	}
	if err := needRank(b, 2, "b"); err != nil {
		return nil, err
	}
	ta, tb := c.Attr("transpose_a").GetB(), c.Attr("transpose_b").GetB()
	m, k1, k2, n := int64(-1), int64(-1), int64(-1), int64(-1)
	if a.Known {
		m, k1 = a.Dims[0], a.Dims[1]
		if ta {
			m, k1 = k1, m
		}
	}
	if b.Known {
		k2, n = b.Dims[0], b.Dims[1]
		if tb {
			k2, n = n, k2
		}
	}
	if _, ok := mergeDim(k1, k2); !ok {
		return nil, errorf("Matrix size-incompatible: In[0]: %v, In[1]: %v", a, b)
	}
	return []tensor.PartialShape{known(m, n)}, nil
}

func batchMatMulShape(c *ShapeContext) ([]tensor.PartialShape, error) {
	a, b := c.In[0], c.In[1]
	if !a.Known || !b.Known {
		return []tensor.PartialShape{tensor.Unknown}, nil
	}
	if len(a.Dims) < 2 || len(b.Dims) < 2 {
		return nil, errorf("inputs must be at least rank 2: %v, %v", a, b)
	}
	ra, rb := len(a.Dims), len(b.Dims)
	m, k1 := a.Dims[ra-2], a.Dims[ra-1]
	if c.Attr("adj_x").GetB() {
		m, k1 = k1, m
	}
	k2, n := b.Dims[rb-2], b.Dims[rb-1]
	if c.Attr("adj_y").GetB() {
		k2, n = n, k2
	}
	if _, ok := mergeDim(k1, k2); !ok {
		return nil, errorf("Matrix size-incompatible: In[0]: %v, In[1]: %v", a, b)
	}
	batch, err := BroadcastShapes(known(a.Dims[:ra-2]...), known(b.Dims[:rb-2]...))
	if err != nil {
		return nil, err
	}
	return []tensor.PartialShape{known(append(batch.Dims, m, n)...)}, nil
}

// einsumBiasShape is _MstreamEinsumBias's: its Einsum's, the bias
// (input 2) adding nothing to the shape.
func einsumBiasShape(c *ShapeContext) ([]tensor.PartialShape, error) {
	if len(c.In) != 3 {
		return []tensor.PartialShape{tensor.Unknown}, nil
	}
	return einsumShape(&ShapeContext{Node: c.Node, In: c.In[:2]})
}

// einsumShape gives an explicit equation's output ("abc,cde->abde"): each
// output label's dimension from the inputs that carry it, -1 where none
// has it known. An ellipsis, an implicit output, a subscript whose
// length is not its input's rank or a label whose dimensions differ
// leaves the output unknown: the kernel checks the equation when it runs.
// Keras' attention and Dense export as Einsum, and the fusions after them
// (Keras' LayerNorm) need the output's last dimension.
func einsumShape(c *ShapeContext) ([]tensor.PartialShape, error) {
	eq := strings.ReplaceAll(string(c.Attr("equation").GetS()), " ", "")
	lhs, out, explicit := strings.Cut(eq, "->")
	subs := strings.Split(lhs, ",")
	if !explicit || strings.Contains(eq, ".") || len(subs) != len(c.In) {
		return []tensor.PartialShape{tensor.Unknown}, nil
	}
	dims := map[rune]int64{}
	for i, sub := range subs {
		in := c.In[i]
		if !in.Known {
			continue
		}
		if len(in.Dims) != len(sub) {
			return []tensor.PartialShape{tensor.Unknown}, nil
		}
		for j, l := range sub {
			d, seen := dims[l]
			if !seen {
				d = -1
			}
			m, ok := mergeDim(d, in.Dims[j])
			if !ok {
				return []tensor.PartialShape{tensor.Unknown}, nil
			}
			dims[l] = m
		}
	}
	shape := make([]int64, 0, len(out))
	for _, l := range out {
		d, ok := dims[l]
		if !ok {
			d = -1
		}
		shape = append(shape, d)
	}
	return []tensor.PartialShape{known(shape...)}, nil
}

func biasAddShape(c *ShapeContext) ([]tensor.PartialShape, error) {
	v, b := c.In[0], c.In[1]
	if err := needRank(b, 1, "bias"); err != nil {
		return nil, err
	}
	if !v.Known {
		return []tensor.PartialShape{tensor.Unknown}, nil
	}
	if len(v.Dims) < 2 {
		return nil, errorf("value must be at least rank 2, got %v", v)
	}
	out := cloneShape(v)
	ch := len(v.Dims) - 1
	if string(c.Attr("data_format").GetS()) == "NCHW" {
		ch = 1
	}
	if b.Known {
		d, ok := mergeDim(out.Dims[ch], b.Dims[0])
		if !ok {
			return nil, errorf("bias size %d does not match channel dimension of %v", b.Dims[0], v)
		}
		out.Dims[ch] = d
	}
	return []tensor.PartialShape{out}, nil
}

// reshapeShape is TF's SetOutputShapeForReshape: the shape input as a
// partial shape (ShapeTensor), with one unknown dimension inferred from the
// input's element count when every other is known, and the counts checked
// when both are known.
func reshapeShape(c *ShapeContext) ([]tensor.PartialShape, error) {
	out, err := c.ShapeTensor(1)
	if err != nil {
		return nil, err
	}
	in := c.In[0]
	if !out.Known || !in.Known {
		return []tensor.PartialShape{out}, nil
	}
	out = cloneShape(out)
	// product of the known dims, and the index of the one unknown dim (-2:
	// more than one).
	count := func(dims []int64) (prod int64, unknown int) {
		prod, unknown = 1, -1
		for i, d := range dims {
			if d < 0 {
				if unknown != -1 {
					return prod, -2
				}
				unknown = i
			} else {
				prod = mulDims(prod, d)
			}
		}
		return prod, unknown
	}
	outN, outU := count(out.Dims)
	inN, inU := count(in.Dims)
	if outU == -2 || inU == -2 {
		return []tensor.PartialShape{out}, nil
	}
	switch {
	case inU < 0 && outU < 0:
		if inN != outN {
			return nil, errorf("Cannot reshape a tensor with %d elements to shape %v (%d elements)", inN, shapeString(out), outN)
		}
	case inU < 0 && outU >= 0 && outN > 0:
		if inN%outN != 0 {
			return nil, errorf("Dimension size must be evenly divisible by %d but is %d", outN, inN)
		}
		out.Dims[outU] = inN / outN
	case inU >= 0 && outU < 0 && inN != 0:
		if outN%inN != 0 {
			return nil, errorf("Dimension size must be evenly divisible by %d but is %d", inN, outN)
		}
	case inU >= 0 && outU >= 0:
		if inN == outN {
			out.Dims[outU] = in.Dims[inU]
		}
	}
	return []tensor.PartialShape{out}, nil
}

// mulDims multiplies two known dimensions, saturating rather than
// overflowing (an element count that large fails elsewhere).
func mulDims(a, b int64) int64 {
	if a != 0 && b > math.MaxInt64/a {
		return math.MaxInt64
	}
	return a * b
}

// shapeString prints a partial shape as TF's DebugString does: [2,?,3].
func shapeString(s tensor.PartialShape) string {
	if !s.Known {
		return "?"
	}
	b := []byte{'['}
	for i, d := range s.Dims {
		if i > 0 {
			b = append(b, ',')
		}
		if d < 0 {
			b = append(b, '?')
		} else {
			b = strconv.AppendInt(b, d, 10)
		}
	}
	return string(append(b, ']'))
}

func unknownDims(r int) tensor.PartialShape {
	d := make([]int64, r)
	for i := range d {
		d[i] = -1
	}
	return known(d...)
}

func shapeShape(c *ShapeContext) ([]tensor.PartialShape, error) {
	return []tensor.PartialShape{known(int64(c.In[0].Rank()))}, nil
}

func normAxis(a int64, rank int, what string) (int, error) {
	if a < -int64(rank) || a >= int64(rank) {
		return 0, errorf("%s %d is out of range for rank %d", what, a, rank)
	}
	if a < 0 {
		a += int64(rank)
	}
	return int(a), nil
}

func expandDimsShape(c *ShapeContext) ([]tensor.PartialShape, error) {
	in := c.In[0]
	ax, ok := c.ConstInts(1)
	if !in.Known || !ok {
		return []tensor.PartialShape{tensor.Unknown}, nil
	}
	if len(ax) != 1 {
		return nil, errorf("'dim' must be a scalar, got %d values", len(ax))
	}
	a, err := normAxis(ax[0], len(in.Dims)+1, "dim")
	if err != nil {
		return nil, err
	}
	out := append([]int64{}, in.Dims[:a]...)
	out = append(out, 1)
	out = append(out, in.Dims[a:]...)
	return []tensor.PartialShape{known(out...)}, nil
}

func squeezeShape(c *ShapeContext) ([]tensor.PartialShape, error) {
	in := c.In[0]
	if !in.Known {
		return []tensor.PartialShape{tensor.Unknown}, nil
	}
	sq := map[int]bool{}
	for _, a := range c.Attr("squeeze_dims").GetList().GetI() {
		k, err := normAxis(a, len(in.Dims), "squeeze dimension")
		if err != nil {
			return nil, err
		}
		sq[k] = true
	}
	out := []int64{}
	for i, d := range in.Dims {
		if len(sq) > 0 {
			if sq[i] {
				if d > 1 || d == 0 {
					return nil, errorf("can not squeeze dim[%d], expected a dimension of 1, got %d", i, d)
				}
				continue
			}
		} else if d == 1 {
			continue
		} else if d < 0 {
			return []tensor.PartialShape{tensor.Unknown}, nil
		}
		out = append(out, d)
	}
	return []tensor.PartialShape{known(out...)}, nil
}

func concatV2Shape(c *ShapeContext) ([]tensor.PartialShape, error) {
	vals := c.In[:len(c.In)-1]
	ax, ok := c.ConstInts(len(c.In) - 1)
	rank := -1
	for _, v := range vals {
		if v.Known {
			if rank >= 0 && rank != len(v.Dims) {
				return nil, errorf("shapes of inputs must have the same rank: %v", vals)
			}
			rank = len(v.Dims)
		}
	}
	if rank < 0 {
		return []tensor.PartialShape{tensor.Unknown}, nil
	}
	if !ok || len(ax) != 1 {
		return []tensor.PartialShape{unknownDims(rank)}, nil
	}
	a, err := normAxis(ax[0], rank, "concat axis")
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

func gatherV2Shape(c *ShapeContext) ([]tensor.PartialShape, error) {
	p, idx := c.In[0], c.In[1]
	ax, ok := c.ConstInts(2)
	if !p.Known || !idx.Known || !ok || len(ax) != 1 {
		return []tensor.PartialShape{tensor.Unknown}, nil
	}
	a, err := normAxis(ax[0], len(p.Dims), "axis")
	if err != nil {
		return nil, err
	}
	bd := int(c.Attr("batch_dims").GetI())
	if bd < 0 {
		bd += len(idx.Dims)
	}
	if bd < 0 || bd > len(idx.Dims) || bd > a {
		return nil, errorf("batch_dims %d is invalid for axis %d and indices %v", bd, a, idx)
	}
	out := append([]int64{}, p.Dims[:a]...)
	out = append(out, idx.Dims[bd:]...)
	out = append(out, p.Dims[a+1:]...)
	return []tensor.PartialShape{known(out...)}, nil
}

// attentionShape is _MstreamAttention's [batch, Sq, heads, Dv] from q
// [batch, Sq, heads, D], k and v [batch, Sk, heads, Dv]: batch and heads
// where all three are known, broadcast from 1 (the kernel checks that
// they agree), else unknown.
func attentionShape(c *ShapeContext) ([]tensor.PartialShape, error) {
	for _, in := range c.In {
		if !in.Known {
			return []tensor.PartialShape{unknownDims(4)}, nil
		}
		if len(in.Dims) != 4 {
			return nil, errorf("attention needs 4-D query, key and value, got %v", in.Dims)
		}
	}
	dim := func(ax int) int64 {
		d := int64(1)
		for _, in := range c.In {
			if in.Dims[ax] < 0 {
				return -1
			}
			if in.Dims[ax] != 1 {
				d = in.Dims[ax]
			}
		}
		return d
	}
	heads := dim(2)
	if c.Attr("packed").GetB() && heads > 0 {
		heads /= 3 // q, k and v side by side along the heads
	}
	return []tensor.PartialShape{{Known: true, Dims: []int64{dim(0), c.In[0].Dims[1], heads, c.In[2].Dims[3]}}}, nil
}

// gatherNShape is _MstreamGatherN's: output i is GatherV2(params i,
// indices i, axis 0)'s, indices i's dims then params i's after the first.
func gatherNShape(c *ShapeContext) ([]tensor.PartialShape, error) {
	n := len(c.In) / 2
	out := make([]tensor.PartialShape, n)
	for i := range out {
		p, idx := c.In[i], c.In[n+i]
		if !p.Known || !idx.Known {
			out[i] = tensor.Unknown
			continue
		}
		if len(p.Dims) == 0 {
			return nil, errorf("params %d must be at least 1-D, not a scalar", i)
		}
		out[i] = known(append(append([]int64{}, idx.Dims...), p.Dims[1:]...)...)
	}
	return out, nil
}

func packShape(c *ShapeContext) ([]tensor.PartialShape, error) {
	s := tensor.Unknown
	for _, in := range c.In {
		m, ok := MergeShapes(s, in)
		if !ok {
			return nil, errorf("shapes of all inputs must match: %v vs. %v", s, in)
		}
		s = m
	}
	if !s.Known {
		return []tensor.PartialShape{tensor.Unknown}, nil
	}
	a, err := normAxis(c.Attr("axis").GetI(), len(s.Dims)+1, "axis")
	if err != nil {
		return nil, err
	}
	out := append([]int64{}, s.Dims[:a]...)
	out = append(out, int64(len(c.In)))
	out = append(out, s.Dims[a:]...)
	return []tensor.PartialShape{known(out...)}, nil
}

func transposeShape(c *ShapeContext) ([]tensor.PartialShape, error) {
	in := c.In[0]
	perm, ok := c.ConstInts(1)
	if !ok {
		if in.Known {
			return []tensor.PartialShape{unknownDims(len(in.Dims))}, nil
		}
		return []tensor.PartialShape{tensor.Unknown}, nil
	}
	if in.Known && len(perm) != len(in.Dims) {
		return nil, errorf("perm %v does not match rank %d", perm, len(in.Dims))
	}
	out := unknownDims(len(perm))
	seen := make([]bool, len(perm))
	for i, p := range perm {
		if p < 0 || p >= int64(len(perm)) || seen[p] {
			return nil, errorf("perm %v is not a permutation", perm)
		}
		seen[p] = true
		if in.Known {
			out.Dims[i] = in.Dims[p]
		}
	}
	return []tensor.PartialShape{out}, nil
}

func reductionShape(c *ShapeContext) ([]tensor.PartialShape, error) {
	// TF's words: the reduction indices are a scalar or a vector.
	if s := c.In[1]; s.Known && len(s.Dims) > 1 {
		return nil, errorf("Shape must be at most rank 1 but is rank %d", len(s.Dims))
	}
	in := c.In[0]
	keep := c.Attr("keep_dims").GetB()
	axes, ok := c.ConstInts(1)
	if !in.Known {
		return []tensor.PartialShape{tensor.Unknown}, nil
	}
	if !ok {
		if keep {
			return []tensor.PartialShape{unknownDims(len(in.Dims))}, nil
		}
		return []tensor.PartialShape{tensor.Unknown}, nil
	}
	red := map[int]bool{}
	for _, a := range axes {
		k, err := normAxis(a, len(in.Dims), "reduction axis")
		if err != nil {
			return nil, err
		}
		red[k] = true
	}
	out := []int64{}
	for i, d := range in.Dims {
		if red[i] {
			if keep {
				out = append(out, 1)
			}
			continue
		}
		out = append(out, d)
	}
	return []tensor.PartialShape{known(out...)}, nil
}

func fillShape(c *ShapeContext) ([]tensor.PartialShape, error) {
	dims, ok := c.ConstInts(0)
	if !ok {
		s := c.In[0]
		if s.Known && len(s.Dims) == 1 && s.Dims[0] >= 0 && s.Dims[0] < 1<<16 {
			return []tensor.PartialShape{unknownDims(int(s.Dims[0]))}, nil
		}
		return []tensor.PartialShape{tensor.Unknown}, nil
	}
	for _, d := range dims {
		if d < 0 {
			return nil, errorf("dims must be non-negative, got %v", dims)
		}
	}
	return []tensor.PartialShape{known(append([]int64{}, dims...)...)}, nil
}

// stridedSliceShape follows TF's ValidateStridedSliceOp for a known input
// shape and constant begin/end/strides; otherwise the result is unknown.
func stridedSliceShape(c *ShapeContext) ([]tensor.PartialShape, error) {
	in := c.In[0]
	begin, ok1 := c.ConstInts(1)
	end, ok2 := c.ConstInts(2)
	strides, ok3 := c.ConstInts(3)
	if !in.Known || !ok1 || !ok2 || !ok3 || len(begin) != len(end) || len(begin) != len(strides) {
		return []tensor.PartialShape{tensor.Unknown}, nil
	}
	bm, em := c.Attr("begin_mask").GetI(), c.Attr("end_mask").GetI()
	elm, nam, sam := c.Attr("ellipsis_mask").GetI(), c.Attr("new_axis_mask").GetI(), c.Attr("shrink_axis_mask").GetI()
	// Expand the sparse spec into one entry per input dimension.
	type spec struct {
		begin, end, stride int64
		bset, eset         bool // masked: use the full range
		shrink, newAxis    bool
	}
	var dense []spec
	n := len(begin)
	numReal := 0
	for i := 0; i < n; i++ {
		if nam&(1<<i) == 0 && elm&(1<<i) == 0 {
			numReal++
		}
	}
	sawEllipsis := false
	for i := 0; i < n; i++ {
		bit := int64(1) << i
		if elm&bit != 0 {
			if sawEllipsis {
				return nil, errorf("multiple ellipses in slice spec not allowed")
			}
			sawEllipsis = true
			fill := len(in.Dims) - numReal
			for k := 0; k < fill; k++ {
				dense = append(dense, spec{stride: 1, bset: true, eset: true})
			}
			continue
		}
		if nam&bit != 0 {
			dense = append(dense, spec{newAxis: true})
			continue
		}
		dense = append(dense, spec{begin[i], end[i], strides[i], bm&bit != 0, em&bit != 0, sam&bit != 0, false})
	}
	real := 0
	for _, s := range dense {
		if !s.newAxis {
			real++
		}
	}
	for real < len(in.Dims) {
		dense = append(dense, spec{stride: 1, bset: true, eset: true})
		real++
	}
	if real > len(in.Dims) {
		return nil, errorf("index out of range using input dim %d", len(in.Dims))
	}
	out := []int64{}
	d := 0
	for _, s := range dense {
		if s.newAxis {
			out = append(out, 1)
			continue
		}
		size := in.Dims[d]
		d++
		if s.stride == 0 {
			return nil, errorf("strides[%d] must be non-zero", d-1)
		}
		if s.shrink {
			if size >= 0 {
				b := s.begin
				if b < 0 {
					b += size
				}
				if b < 0 || b >= size {
					return nil, errorf("slice index %d of dimension %d out of bounds", s.begin, d-1)
				}
			}
			continue
		}
		if size < 0 {
			out = append(out, -1)
			continue
		}
		clamp := func(x int64, masked bool, isBegin bool) int64 {
			lo, hi := int64(0), size
			if s.stride < 0 {
				lo, hi = -1, size-1
			}
			if masked {
				if (s.stride > 0) == isBegin {
					return lo
				}
				return hi
			}
			if x < 0 {
				x += size
			}
			if x < lo {
				x = lo
			}
			if x > hi {
				x = hi
			}
			return x
		}
		b := clamp(s.begin, s.bset, true)
		e := clamp(s.end, s.eset, false)
		var cnt int64
		if s.stride > 0 {
			if e > b {
				cnt = (e - b + s.stride - 1) / s.stride
			}
		} else if b > e {
			cnt = (b - e - s.stride - 1) / -s.stride
		}
		out = append(out, cnt)
	}
	return []tensor.PartialShape{known(out...)}, nil
}
