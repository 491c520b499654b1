package cpu

import (
	"math"

	"mstream/graph"
	"mstream/kernels"
	"mstream/status"
	"mstream/tensor"
)

// The gradient kernels that TF's gradient functions emit: the activation
// gradients, BiasAddGrad, BroadcastGradientArgs, the two softmax
// cross-entropies, L2Loss, ConcatOffset and UnsortedSegmentSum. Each
// follows TF 2.15's CPU kernel: the same formula (written as TF's Eigen
// expression is, so NaN and infinities propagate the same way), the same
// argument checks with TF's codes.

// gradSpec is an elementwise gradient f(in0, in1) over two inputs of one
// shape. The SimpleBinary ones (SigmoidGrad, TanhGrad, SqrtGrad, ...) take
// (y, dy); the activation ones (ReluGrad, EluGrad, ...) take (dy, x or y).
type gradSpec struct {
	f func(a, b float64) float64
	// f32, when set, is f in float32 arithmetic in TF's order of
	// operations, for float inputs: 1 - y*y rounded in float32 is what
	// TF gives near |y| = 1, not the float64 value rounded once.
	f32 func(a, b float32) float32
	// sameShape: TF checks equal shapes (ReluGrad family, "... must be the
	// same shape"); otherwise only equal element counts (SimpleBinaryOp).
	sameShape bool
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

func zeroDy[T float32 | float64](f func(y, dy T) T) func(y, dy T) T {
	return func(y, dy T) T {
		if dy == 0 {
			return 0
		}
		return f(y, dy)
	}
}

var gradSpecs = map[string]gradSpec{
	"ReluGrad":  {f: func(g, x float64) float64 { return g * b2f(x > 0) }, sameShape: true},
	"Relu6Grad": {f: func(g, x float64) float64 { return g * b2f(x > 0 && x < 6) }, sameShape: true},
	"EluGrad":   {f: eluGrad[float64], f32: eluGrad[float32], sameShape: true},
	"SeluGrad": {f: func(g, y float64) float64 {
		if y < 0 {
			return g * (y + seluScaleAlpha)
		}
		return g * seluScale
	}, sameShape: true},
	"SoftplusGrad": {f: func(g, x float64) float64 { return g / (math.Exp(-x) + 1) }, sameShape: true},
	"SoftsignGrad": {f: func(g, x float64) float64 { d := 1 + math.Abs(x); return g / (d * d) }, sameShape: true},
	"SigmoidGrad":  {f: sigmoidGrad[float64], f32: sigmoidGrad[float32]},
	"TanhGrad":     {f: tanhGrad[float64], f32: tanhGrad[float32]},
	// A zero dy gives zero whatever y is (TF's cwise_ops_gradients.h).
	"SqrtGrad":       {f: zeroDy(sqrtGrad[float64]), f32: zeroDy(sqrtGrad[float32])},
	"RsqrtGrad":      {f: zeroDy(rsqrtGrad[float64]), f32: zeroDy(rsqrtGrad[float32])},
	"ReciprocalGrad": {f: zeroDy(reciprocalGrad[float64]), f32: zeroDy(reciprocalGrad[float32])},
}

func eluGrad[T float32 | float64](g, y T) T {
	if y < 0 {
		return g * (y + 1)
	}
	return g
}

func sigmoidGrad[T float32 | float64](y, dy T) T    { return dy * y * (1 - y) }
func tanhGrad[T float32 | float64](y, dy T) T       { return dy * (1 - y*y) }
func sqrtGrad[T float32 | float64](y, dy T) T       { return 0.5 * dy / y }
func rsqrtGrad[T float32 | float64](y, dy T) T      { return -0.5 * (dy * y) * (y * y) }
func reciprocalGrad[T float32 | float64](y, dy T) T { return -y * y * dy }

func init() {
	for name, s := range gradSpecs {
		s := s
		reg(name, floatTypes, nil, fn(func(ctx *kernels.Context) error { return elementGrad(ctx, s) }))
	}
	reg("LeakyReluGrad", floatTypes, nil, func(n *graph.Node) (kernels.Kernel, error) {
		alpha := 0.2
		if a := n.Attrs["alpha"]; a != nil {
			alpha = float64(a.GetF())
		}
		s := gradSpec{f: func(g, x float64) float64 {
			if x > 0 {
				return g
			}
			return g * alpha
		}, sameShape: true}
		return kernels.KernelFunc(func(ctx *kernels.Context) error { return elementGrad(ctx, s) }), nil
	})
	reg("BiasAddGrad", numericTypes, nil, func(n *graph.Node) (kernels.Kernel, error) {
		nchw := string(n.Attrs["data_format"].GetS()) == "NCHW"
		return kernels.KernelFunc(func(ctx *kernels.Context) error { return biasAddGrad(ctx, nchw) }), nil
	})
	kernels.Register(kernels.Def{Op: "BroadcastGradientArgs", Device: kernels.CPU, TypeAttr: "T", Types: []tensor.DType{tensor.Int32, tensor.Int64}, Factory: fn(broadcastGradientArgs)})
	reg("SoftmaxCrossEntropyWithLogits", floatTypes, nil, fn(softmaxXent))
	reg("SparseSoftmaxCrossEntropyWithLogits", floatTypes, nil, fn(sparseSoftmaxXent))
	reg("L2Loss", floatTypes, nil, fn(l2Loss))
	kernels.Register(kernels.Def{Op: "ConcatOffset", Device: kernels.CPU, Factory: fn(concatOffset)})
}

// loadF64 reads a real tensor's elements as float64 into checked scratch.
func loadF64(ctx *kernels.Context, t *tensor.Tensor) ([]float64, error) {
	if t.DType == tensor.Double {
		return t.F64(), nil
	}
	out, err := kernels.Scratch[float64](ctx, t.NumElements())
	if err != nil {
		return nil, err
	}
	switch t.DType {
	case tensor.Float:
		for i, v := range t.F32() {
			out[i] = float64(v)
		}
	case tensor.Half, tensor.Bfloat16:
		for i := range out {
			out[i] = t.ElementF64(i)
		}
	default:
		for i := range out {
			out[i] = t.ElementF64(i)
		}
	}
	return out, nil
}

// storeF64 writes float64 values into a real tensor, rounding once.
func storeF64(t *tensor.Tensor, v []float64) {
	switch t.DType {
	case tensor.Double:
		copy(t.F64(), v)
	case tensor.Float:
		d := t.F32()
		for i, x := range v {
			d[i] = float32(x)
		}
	case tensor.Half:
		d := t.U16()
		for i, x := range v {
			d[i] = tensor.F32ToHalf(float32(x))
		}
	case tensor.Bfloat16:
		d := t.U16()
		for i, x := range v {
			d[i] = tensor.F32ToBfloat16(float32(x))
		}
	case tensor.Int32:
		d := t.I32()
		for i, x := range v {
			d[i] = int32(x)
		}
	case tensor.Int64:
		d := t.I64()
		for i, x := range v {
			d[i] = int64(x)
		}
	case tensor.Int16:
		d := t.I16()
		for i, x := range v {
			d[i] = int16(x)
		}
	case tensor.Int8:
		d := t.I8()
		for i, x := range v {
			d[i] = int8(x)
		}
	case tensor.Uint8:
		d := t.U8()
		for i, x := range v {
			d[i] = uint8(x)
		}
	case tensor.Uint16:
		d := t.U16()
		for i, x := range v {
			d[i] = uint16(x)
		}
	case tensor.Uint32:
		d := t.U32()
		for i, x := range v {
			d[i] = uint32(x)
		}
	case tensor.Uint64:
		d := t.U64()
		for i, x := range v {
			d[i] = uint64(x)
		}
	}
}

func elementGrad(ctx *kernels.Context, s gradSpec) error {
	a, b := ctx.Input(0), ctx.Input(1)
	if s.sameShape && !a.Shape.Equal(b.Shape) {
		return ctx.Errorf(status.InvalidArgument, "g and x must be the same shape, got %v and %v", a.Shape, b.Shape)
	}
	if a.NumElements() != b.NumElements() {
		return ctx.Errorf(status.InvalidArgument, "The two arguments to a cwise op must have same number of elements, got %d and %d", a.NumElements(), b.NumElements())
	}
	o, err := ctx.Allocate(0, a.Shape)
	if err != nil {
		return err
	}
	n := int(o.NumElements())
	if n == 0 {
		return nil
	}
	switch a.DType {
	case tensor.Float:
		x, y, out := a.F32(), b.F32(), o.F32()
		ctx.For(n, 4, kernels.StartLoop, func(lo, hi int) {
			if s.f32 != nil {
				for i := lo; i < hi; i++ {
					out[i] = s.f32(x[i], y[i])
				}
				return
			}
			for i := lo; i < hi; i++ {
				out[i] = float32(s.f(float64(x[i]), float64(y[i])))
			}
		})
	case tensor.Double:
		x, y, out := a.F64(), b.F64(), o.F64()
		ctx.For(n, 4, kernels.StartLoop, func(lo, hi int) {
			for i := lo; i < hi; i++ {
				out[i] = s.f(x[i], y[i])
			}
		})
	default:
		x, err := loadF64(ctx, a)
		if err != nil {
			return err
		}
		y, err := loadF64(ctx, b)
		if err != nil {
			return err
		}
		out, err := kernels.Scratch[float64](ctx, int64(n))
		if err != nil {
			return err
		}
		for i := range out {
			out[i] = s.f(x[i], y[i])
		}
		storeF64(o, out)
	}
	return nil
}

// BiasAddGradArgs checks BiasAddGrad's gradient g (at least 2-D) and
// splits its shape around the channel dim (the last for NHWC, dim 1 for
// NCHW): g is outer x c x inner, summed over outer and inner for each of
// the c channels. Every device's kernel uses it.
func BiasAddGradArgs(ctx *kernels.Context, g *tensor.Tensor, nchw bool) (outer, c, inner int64, err error) {
	if len(g.Shape) < 2 {
		return 0, 0, 0, ctx.Errorf(status.InvalidArgument, "Input tensor must be at least 2D: %v", g.Shape)
	}
	cdim := len(g.Shape) - 1
	if nchw {
		cdim = 1
	}
	outer, inner = 1, 1
	for _, d := range g.Shape[:cdim] {
		outer *= d
	}
	for _, d := range g.Shape[cdim+1:] {
		inner *= d
	}
	return outer, g.Shape[cdim], inner, nil
}

// biasAddGrad sums the gradient over every dim but the channel one,
// accumulating in float64.
func biasAddGrad(ctx *kernels.Context, nchw bool) error {
	g := ctx.Input(0)
	_, c, inner, err := BiasAddGradArgs(ctx, g, nchw)
	if err != nil {
		return err
	}
	o, err := ctx.Allocate(0, tensor.Shape{c})
	if err != nil {
		return err
	}
	v, err := loadF64(ctx, g)
	if err != nil {
		return err
	}
	acc, err := kernels.Scratch[float64](ctx, c)
	if err != nil {
		return err
	}
	if c > 0 && inner > 0 {
		for i, x := range v {
			acc[(int64(i)/inner)%c] += x
		}
	}
	storeF64(o, acc)
	return nil
}

// GradReduceIdx is TF's BCast::grad_{x,y}_reduce_idx: for each of two
// shapes, the output dims its gradient is summed over. Equal shapes give
// none; a dim where every (1-extended) shape is 1 is reduced for both.
func GradReduceIdx(a, b []int64) (ra, rb []int64, ok bool) {
	if len(a) == len(b) {
		eq := true
		for i := range a {
			eq = eq && a[i] == b[i]
		}
		if eq {
			return []int64{}, []int64{}, true
		}
	}
	r := max(len(a), len(b))
	ra, rb = []int64{}, []int64{}
	for j := 0; j < r; j++ {
		da, db := int64(1), int64(1)
		if k := j - (r - len(a)); k >= 0 {
			da = a[k]
		}
		if k := j - (r - len(b)); k >= 0 {
			db = b[k]
		}
		if da != db && da != 1 && db != 1 {
			return nil, nil, false
		}
		if da == 1 {
			ra = append(ra, int64(j))
		}
		if db == 1 {
			rb = append(rb, int64(j))
		}
	}
	return ra, rb, true
}

func broadcastGradientArgs(ctx *kernels.Context) error {
	var shapes [2][]int64
	for i := 0; i < 2; i++ {
		in := ctx.Input(i)
		if len(in.Shape) != 1 {
			return ctx.Errorf(status.InvalidArgument, "In[%d] must be a vector.%v", i, in.Shape)
		}
		v, err := in.Int64s()
		if err != nil {
			return ctx.Errorf(status.InvalidArgument, "In[%d]: %v", i, err)
		}
		shapes[i] = v
	}
	ra, rb, ok := GradReduceIdx(shapes[0], shapes[1])
	if !ok {
		return ctx.Errorf(status.InvalidArgument, "Incompatible shapes: %v vs. %v", tensor.Shape(shapes[0]), tensor.Shape(shapes[1]))
	}
	for i, r := range [][]int64{ra, rb} {
		o, err := ctx.Allocate(i, tensor.Shape{int64(len(r))})
		if err != nil {
			return err
		}
		for j, v := range r {
			if o.DType == tensor.Int32 {
				o.I32()[j] = int32(v)
			} else {
				o.I64()[j] = v
			}
		}
	}
	return nil
}

// xentRow computes one row's loss and backprop from logits x and labels l
// (labels given densely): loss = sum(l * (logsumexp(x - max) - (x - max))),
// backprop = softmax(x) - l, both in float64.
func xentRow(x, l, bp []float64) float64 {
	mx := math.Inf(-1)
	for _, v := range x {
		mx = math.Max(mx, v)
	}
	var sum float64
	for _, v := range x {
		sum += math.Exp(v - mx)
	}
	lse := math.Log(sum)
	var loss float64
	for j, v := range x {
		loss += l[j] * (lse - (v - mx))
		bp[j] = math.Exp(v-mx)/sum - l[j]
	}
	return loss
}

func softmaxXent(ctx *kernels.Context) error {
	x, l := ctx.Input(0), ctx.Input(1)
	bc, ok := broadcastShapes(x.Shape, l.Shape)
	if !ok {
		return ctx.Errorf(status.InvalidArgument, "logits and labels must be broadcastable: logits_size=%v labels_size=%v", x.Shape, l.Shape)
	}
	if len(bc.out) != 2 {
		return ctx.Errorf(status.InvalidArgument, "logits and labels must be either 2-dimensional, or broadcasted to be 2-dimensional")
	}
	rows, cols := bc.out[0], bc.out[1]
	loss, err := ctx.Allocate(0, tensor.Shape{rows})
	if err != nil {
		return err
	}
	back, err := ctx.Allocate(1, bc.out)
	if err != nil {
		return err
	}
	xv, err := loadF64(ctx, x)
	if err != nil {
		return err
	}
	lv, err := loadF64(ctx, l)
	if err != nil {
		return err
	}
	n := rows * cols
	xb, err := kernels.Scratch[float64](ctx, n)
	if err != nil {
		return err
	}
	lb, err := kernels.Scratch[float64](ctx, n)
	if err != nil {
		return err
	}
	bp, err := kernels.Scratch[float64](ctx, n)
	if err != nil {
		return err
	}
	ls, err := kernels.Scratch[float64](ctx, rows)
	if err != nil {
		return err
	}
	for i := int64(0); i < rows; i++ {
		for j := int64(0); j < cols; j++ {
			xb[i*cols+j] = xv[i*bc.sa[0]+j*bc.sa[1]]
			lb[i*cols+j] = lv[i*bc.sb[0]+j*bc.sb[1]]
		}
	}
	ctx.For(int(rows), float64(cols)*20, kernels.StartLoop, func(lo, hi int) {
		for i := int64(lo); i < int64(hi); i++ {
			ls[i] = xentRow(xb[i*cols:(i+1)*cols], lb[i*cols:(i+1)*cols], bp[i*cols:(i+1)*cols])
		}
	})
	storeF64(loss, ls)
	storeF64(back, bp)
	return nil
}

// SparseXentArgs checks SparseSoftmaxCrossEntropyWithLogits' logits x and
// labels lab as TF does, on every device, and returns the rows and classes.
func SparseXentArgs(ctx *kernels.Context, x, lab *tensor.Tensor) (rows, cols int64, err error) {
	if len(x.Shape) != 2 {
		return 0, 0, ctx.Errorf(status.InvalidArgument, "logits must be 2-D, but got shape %v", x.Shape)
	}
	if len(lab.Shape) != 1 {
		return 0, 0, ctx.Errorf(status.InvalidArgument, "labels must be 1-D, but got shape %v", lab.Shape)
	}
	if x.Shape[0] != lab.Shape[0] {
		return 0, 0, ctx.Errorf(status.InvalidArgument, "logits and labels must have the same first dimension, got logits shape %v and labels shape %v", x.Shape, lab.Shape)
	}
	if x.Shape[1] == 0 {
		return 0, 0, ctx.Errorf(status.InvalidArgument, "Must have at least one class, but got logits shape %v", x.Shape)
	}
	return x.Shape[0], x.Shape[1], nil
}

func sparseSoftmaxXent(ctx *kernels.Context) error {
	x, lab := ctx.Input(0), ctx.Input(1)
	rows, cols, err := SparseXentArgs(ctx, x, lab)
	if err != nil {
		return err
	}
	labels, err := lab.Int64s()
	if err != nil {
		return ctx.Errorf(status.InvalidArgument, "labels: %v", err)
	}
	for i, v := range labels {
		if v < 0 || v >= cols {
			return ctx.Errorf(status.InvalidArgument, "Received a label value of %d which is outside the valid range of [0, %d).  Label values: %v (index %d)", v, cols, labels, i)
		}
	}
	loss, err := ctx.Allocate(0, tensor.Shape{rows})
	if err != nil {
		return err
	}
	back, err := ctx.Allocate(1, x.Shape)
	if err != nil {
		return err
	}
	xv, err := loadF64(ctx, x)
	if err != nil {
		return err
	}
	lb, err := kernels.Scratch[float64](ctx, rows*cols)
	if err != nil {
		return err
	}
	bp, err := kernels.Scratch[float64](ctx, rows*cols)
	if err != nil {
		return err
	}
	ls, err := kernels.Scratch[float64](ctx, rows)
	if err != nil {
		return err
	}
	for i, v := range labels {
		lb[int64(i)*cols+v] = 1
	}
	ctx.For(int(rows), float64(cols)*20, kernels.StartLoop, func(lo, hi int) {
		for i := int64(lo); i < int64(hi); i++ {
			ls[i] = xentRow(xv[i*cols:(i+1)*cols], lb[i*cols:(i+1)*cols], bp[i*cols:(i+1)*cols])
		}
	})
	storeF64(loss, ls)
	storeF64(back, bp)
	return nil
}

// l2Loss is sum(t^2) / 2 as a scalar.
func l2Loss(ctx *kernels.Context) error {
	t := ctx.Input(0)
	o, err := ctx.Allocate(0, tensor.Shape{})
	if err != nil {
		return err
	}
	v, err := loadF64(ctx, t)
	if err != nil {
		return err
	}
	var s float64
	for _, x := range v {
		s += x * x
	}
	storeF64(o, []float64{s / 2})
	return nil
}

// concatOffset gives, for each shape of a concat, its offset in the
// output: zero everywhere but the concat dim, where it is the running sum.
func concatOffset(ctx *kernels.Context) error {
	cd := ctx.Input(0)
	if cd.NumElements() != 1 {
		return ctx.Errorf(status.InvalidArgument, "Concat dim tensor should be a scalar integer, but got shape %v", cd.Shape)
	}
	n := len(ctx.Inputs) - 1
	first := ctx.Input(1)
	if len(first.Shape) != 1 {
		return ctx.Errorf(status.InvalidArgument, "input 0 should be a vector, but got shape %v", first.Shape)
	}
	dims, _ := first.Int64s()
	rank := int64(len(dims))
	axis := int64(cd.I32()[0])
	if axis < 0 {
		axis += rank
	}
	if axis < 0 || axis >= rank {
		return ctx.Errorf(status.InvalidArgument, "Concat dim is out of range: %d vs. %d", cd.I32()[0], rank)
	}
	var off int64
	for i := 0; i < n; i++ {
		in := ctx.Input(1 + i)
		if len(in.Shape) != 1 || in.Shape[0] != rank {
			return ctx.Errorf(status.InvalidArgument, "input %d should contain %d elements, but got %d", i, rank, in.NumElements())
		}
		v, _ := in.Int64s()
		for j := range v {
			if int64(j) != axis && v[j] != dims[j] {
				return ctx.Errorf(status.InvalidArgument, "input[%d,%d] mismatch: %d vs. %d", i, j, dims[j], v[j])
			}
		}
		o, err := ctx.Allocate(i, tensor.Shape{rank})
		if err != nil {
			return err
		}
		for j := range v {
			x := int64(0)
			if int64(j) == axis {
				x = off
			}
			if o.DType == tensor.Int32 {
				o.I32()[j] = int32(x)
			} else {
				o.I64()[j] = x
			}
		}
		off += v[axis]
	}
	return nil
}
