package cpu

import (
	"math"

	"mstream/graph"
	"mstream/kernels"
	"mstream/kernels/cpu/dnnl"
	"mstream/kernels/cpu/vec"
	"mstream/status"
	"mstream/tensor"
)

// Normalisation: FusedBatchNorm/V2/V3 (inference and training, NHWC/NCHW
// and the 5-D formats of V3), LRN, and _MstreamLayerNorm (package
// optimize's fusion of Keras' LayerNormalization, either export of it). Statistics are float32 (U), as in
// TF; x and y may be half or bfloat16, computed in float32.

func init() {
	for _, op := range []string{"FusedBatchNorm", "FusedBatchNormV2", "FusedBatchNormV3"} {
		types := []tensor.DType{tensor.Float, tensor.Half, tensor.Bfloat16}
		if op == "FusedBatchNorm" {
			types = []tensor.DType{tensor.Float}
		}
		reg(op, types, nil, func(n *graph.Node) (kernels.Kernel, error) {
			bn, err := ParseBatchNormAttrs(n)
			if err != nil {
				return nil, err
			}
			prims := &bnPrims{ln: &dnnl.Cache[dnnl.LayerNormDesc]{Node: n.Name}, bn: &dnnl.Cache[dnnl.BatchNormDesc]{Node: n.Name}}
			return kernels.WithClose(func(ctx *kernels.Context) error { return fusedBatchNorm(ctx, bn, prims) }, prims.ln, prims.bn), nil
		})
	}
	for op, residual := range map[string]bool{"_MstreamLayerNorm": false, "_MstreamAddLayerNorm": true} {
		reg(op, []tensor.DType{tensor.Float}, nil, func(n *graph.Node) (kernels.Kernel, error) {
			axis, eps, single := attrInt(n, "begin_norm_axis", -1), float64(n.Attr("epsilon").GetF()), attrBool(n, "single_axis")
			return fusedKernel(n, func(ctx *kernels.Context) error { return layerNorm(ctx, axis, single, eps, residual) }), nil
		})
	}
	reg("LRN", []tensor.DType{tensor.Float, tensor.Half, tensor.Bfloat16}, nil, func(n *graph.Node) (kernels.Kernel, error) {
		l, err := ParseLRNAttrs(n)
		if err != nil {
			return nil, err
		}
		return kernels.KernelFunc(func(ctx *kernels.Context) error { return lrn(ctx, l) }), nil
	})
}

// BatchNormAttrs are FusedBatchNorm's (V2, V3) attrs.
type BatchNormAttrs struct {
	Eps, Factor float64 // epsilon, exponential_avg_factor
	Training    bool    // is_training
	Format      string  // NHWC, NCHW, NDHWC or NCDHW
}

// ParseBatchNormAttrs reads and checks a FusedBatchNorm node's attrs
// (float32 statistics only); the CPU and GPU kernels both parse through
// it.
func ParseBatchNormAttrs(n *graph.Node) (BatchNormAttrs, error) {
	bn := BatchNormAttrs{
		Eps:      float64(attrFloat(n, "epsilon", 1e-4)),
		Factor:   float64(attrFloat(n, "exponential_avg_factor", 1)),
		Training: attrBool(n, "is_training"),
		Format:   attrString(n, "data_format", "NHWC"),
	}
	if a := n.Attrs["is_training"]; a == nil {
		bn.Training = true // the OpDef's default
	}
	switch bn.Format {
	case "NHWC", "NCHW", "NDHWC", "NCDHW":
	default:
		return bn, nodeErr(n, status.InvalidArgument, "Invalid data format %q", bn.Format)
	}
	if u := attrType(n, "U"); u != tensor.Invalid && u != tensor.Float {
		return bn, nodeErr(n, status.Unimplemented, "FusedBatchNorm with U=%v on CPU", u)
	}
	return bn, nil
}

// BatchNormArgs checks FusedBatchNorm's x against the format and its
// scale, offset, mean and variance (the last two only where they are
// read) against x's channels, and returns the channel axis and count; the
// CPU and GPU kernels both validate through it.
func BatchNormArgs(ctx *kernels.Context, bn BatchNormAttrs) (axis int, channels int64, err error) {
	x := ctx.Input(0)
	if len(x.Shape) != 4 && len(x.Shape) != 5 {
		return 0, 0, ctx.Errorf(status.InvalidArgument, "input must be 4 or 5-dimensional%v", x.Shape)
	}
	if (len(x.Shape) == 5) != (bn.Format == "NDHWC" || bn.Format == "NCDHW") {
		return 0, 0, ctx.Errorf(status.InvalidArgument, "data format %s does not fit a %d-dimensional input", bn.Format, len(x.Shape))
	}
	names := []string{"scale", "offset", "mean", "variance"}
	for i, nm := range names {
		if len(ctx.Input(i+1).Shape) != 1 {
			return 0, 0, ctx.Errorf(status.InvalidArgument, "%s must be 1-dimensional%v", nm, ctx.Input(i+1).Shape)
		}
	}
	axis = len(x.Shape) - 1
	if bn.Format == "NCHW" || bn.Format == "NCDHW" {
		axis = 1
	}
	c := x.Shape[axis]
	for i, nm := range names {
		if i >= 2 && bn.Training && bn.Factor == 1 {
			break
		}
		if n := ctx.Input(i + 1).NumElements(); n != c {
			pre := ""
			if i >= 2 {
				pre = "When is_training=false, "
				if bn.Training {
					pre = "When exponential_avg_factor != 1, "
				}
			}
			return 0, 0, ctx.Errorf(status.InvalidArgument, "%s%s must have the same number of elements as the channels of x, got %d and %d", pre, nm, n, c)
		}
	}
	return axis, c, nil
}

// LRNAttrs are LRN's attrs.
type LRNAttrs struct {
	Radius            int64 // depth_radius
	Bias, Alpha, Beta float32
}

// ParseLRNAttrs reads and checks an LRN node's attrs; the CPU and GPU
// kernels both parse through it.
func ParseLRNAttrs(n *graph.Node) (LRNAttrs, error) {
	l := LRNAttrs{Radius: attrInt(n, "depth_radius", 5), Bias: attrFloat(n, "bias", 1), Alpha: attrFloat(n, "alpha", 1), Beta: attrFloat(n, "beta", 0.5)}
	if l.Radius < 0 || l.Radius > math.MaxInt32 {
		return l, nodeErr(n, status.InvalidArgument, "depth_radius = %d larger than int max", l.Radius)
	}
	return l, nil
}

// LRNArgs checks LRN's input (NHWC, normalised along the depth); the CPU
// and GPU kernels both validate through it.
func LRNArgs(ctx *kernels.Context) error {
	if x := ctx.Input(0); len(x.Shape) != 4 {
		return ctx.Errorf(status.InvalidArgument, "in must be 4-dimensional, got %v", x.Shape)
	}
	return nil
}

func attrFloat(n *graph.Node, name string, def float32) float32 {
	if a := n.Attrs[name]; a != nil {
		return a.GetF()
	}
	return def
}

// bnPrims are a FusedBatchNorm kernel's oneDNN primitives: the per-row
// layer normalisation its Keras LayerNorm form runs on, and the NHWC batch
// normalisation.
type bnPrims struct {
	ln *dnnl.Cache[dnnl.LayerNormDesc]
	bn *dnnl.Cache[dnnl.BatchNormDesc]
}

func fusedBatchNorm(ctx *kernels.Context, bn BatchNormAttrs, prims *bnPrims) error {
	x := ctx.Input(0)
	ax, c, err := BatchNormArgs(ctx, bn)
	if err != nil {
		return err
	}
	y, err := ctx.Allocate(0, x.Shape)
	if err != nil {
		return err
	}
	stats := make([]*tensor.Tensor, 4)
	for i := range stats {
		if stats[i], err = ctx.Allocate(i+1, tensor.Shape{ctx.Input(1).Shape[0]}); err != nil {
			return err
		}
	}
	if len(ctx.Node.OutTypes) == 6 {
		// reserve_space_3: a placeholder scalar on CPU, as TF allocates.
		r3, err := ctx.Allocate(5, tensor.Shape{})
		if err != nil {
			return err
		}
		r3.F32()[0] = 0
	}
	scale, offset := ctx.Input(1).F32(), ctx.Input(2).F32()
	var mean, variance []float32
	if !(bn.Training && bn.Factor == 1) {
		mean, variance = ctx.Input(3).F32(), ctx.Input(4).F32()
	}
	if x.NumElements() == 0 {
		// TF reports NaN statistics for an empty batch.
		for _, s := range stats {
			for i := range s.F32() {
				s.F32()[i] = float32(math.NaN())
			}
		}
		return nil
	}
	outer, inner := outerInner(x.Shape, ax)
	xs := toF32(x)
	ys := y.F32()
	if y.DType != tensor.Float {
		if ys, err = kernels.Scratch[float32](ctx, int64(len(xs))); err != nil {
			return err
		}
	}
	m, v := mean, variance
	// done says oneDNN wrote ys: then only the statistics are left.
	done := false
	if bn.Training {
		cnt := float64(outer * inner)
		bm, err := kernels.Scratch[float32](ctx, c)
		if err != nil {
			return err
		}
		bv, err := kernels.Scratch[float32](ctx, c)
		if err != nil {
			return err
		}
		if done, err = batchNormDNNL(ctx, prims, bn, xs, ys, scale, offset, bm, bv, outer, c, inner); err != nil {
			return err
		}
		if !done {
			batchStats(ctx, xs, bm, bv, outer, c, inner)
		}
		adj := cnt / math.Max(cnt-1, 1)
		rm, rv := stats[0].F32(), stats[1].F32()
		for k := range bv {
			if bn.Factor == 1 {
				rm[k], rv[k] = bm[k], float32(float64(bv[k])*adj)
			} else {
				f := bn.Factor
				rm[k] = float32((1-f)*float64(mean[k]) + f*float64(bm[k]))
				rv[k] = float32((1-f)*float64(variance[k]) + f*adj*float64(bv[k]))
			}
		}
		copy(stats[2].F32(), bm)
		copy(stats[3].F32(), bv)
		m, v = bm, bv
	} else {
		// TF leaves the reserve spaces unset in inference; they get the
		// statistics used, so no stale buffer contents leak out.
		for _, i := range []int{0, 2} {
			copy(stats[i].F32(), mean)
			copy(stats[i+1].F32(), variance)
		}
		if done, err = batchNormDNNL(ctx, prims, bn, xs, ys, scale, offset, mean, variance, outer, c, inner); err != nil {
			return err
		}
	}
	if !done {
		if err := normalize(ctx, bn, xs, ys, scale, offset, m, v, outer, c, inner); err != nil {
			return err
		}
	}
	if y.DType != tensor.Float {
		storeF32(y, ys)
	}
	return nil
}

// batchStats computes the batch's per-channel mean and biased variance of
// xs, [outer, c, inner], in float64. Channels are independent: each chunk
// of the pool takes whole channels and makes both passes over them.
func batchStats(ctx *kernels.Context, xs, bm, bv []float32, outer, c, inner int64) {
	cnt := float64(outer * inner)
	ctx.For(int(c), float64(outer*inner)*2, kernels.StartLoop, func(lo, hi int) {
		for k := int64(lo); k < int64(hi); k++ {
			var sum, sq float64
			for p := int64(0); p < outer; p++ {
				for _, e := range xs[(p*c+k)*inner : (p*c+k+1)*inner] {
					sum += float64(e)
				}
			}
			bm[k] = float32(sum / cnt)
			mk := float64(bm[k])
			for p := int64(0); p < outer; p++ {
				for _, e := range xs[(p*c+k)*inner : (p*c+k+1)*inner] {
					d := float64(e) - mk
					sq += d * d
				}
			}
			bv[k] = float32(sq / cnt)
		}
	})
}

// normalize writes ys = (xs - m) * rsqrt(v + eps) * scale + offset per
// channel of [outer, c, inner].
func normalize(ctx *kernels.Context, bn BatchNormAttrs, xs, ys, scale, offset, m, v []float32, outer, c, inner int64) error {
	mul, err := kernels.Scratch[float32](ctx, c)
	if err != nil {
		return err
	}
	add, err := kernels.Scratch[float32](ctx, c)
	if err != nil {
		return err
	}
	for k := range mul {
		s := float32(1/math.Sqrt(float64(v[k])+bn.Eps)) * scale[k]
		mul[k], add[k] = s, offset[k]-m[k]*s
	}
	ctx.For(int(outer*c), float64(inner)*2, kernels.StartLoop, func(lo, hi int) {
		for r := lo; r < hi; r++ {
			k := r % int(c)
			src, dst := xs[int64(r)*inner:int64(r+1)*inner], ys[int64(r)*inner:int64(r+1)*inner]
			a, b := mul[k], add[k]
			for i, e := range src {
				dst[i] = e*a + b
			}
		}
	})
	return nil
}

// layerNormDNNLMin is the smallest LayerNorm form (rows x cols elements)
// oneDNN takes: below it mstream's loop was as fast (BenchmarkDNNL: 64 rows
// of 128, 61 us on oneDNN against 45; 1024 of 128, 0.43 ms against 0.63).
// NHWC batch normalisation always goes to oneDNN (16x32x32x32: 0.89 ms
// against 2.9 in inference, 0.97 against 4.8 in training).
const layerNormDNNLMin = 1 << 15

// batchNormDNNL normalises xs, [outer, c, inner], into ys through oneDNN
// when it has a primitive for the layout, and reports whether it did. In
// training it writes the batch's mean and biased variance into m and v;
// in inference it reads them. Two layouts: channels innermost (NHWC,
// inner 1), oneDNN's batch normalisation; and one row per channel (outer
// 1, the NCHW [1, rows, cols, 1] that Keras's LayerNormalization exports,
// in training), oneDNN's layer normalisation over the rows, then each row's
// scale and offset where they are not 1 and 0.
func batchNormDNNL(ctx *kernels.Context, prims *bnPrims, bn BatchNormAttrs, xs, ys, scale, offset, m, v []float32, outer, c, inner int64) (bool, error) {
	if prims == nil || !dnnl.Available() {
		return false, nil
	}
	switch {
	case inner == 1:
		d := dnnl.BatchNormDesc{N: 1, Spatial: int(outer), C: int(c), Eps: float32(bn.Eps), Training: bn.Training}
		return runPrim(ctx, prims.bn, d, xs, ys, scale, offset, m, v)
	case outer == 1 && bn.Training && c*inner >= layerNormDNNLMin:
		d := dnnl.LayerNormDesc{Rows: int(c), Cols: int(inner), Eps: float32(bn.Eps)}
		if ok, err := runPrim(ctx, prims.ln, d, xs, ys, m, v); !ok || err != nil {
			return ok, err
		}
		plain := true
		for k := range scale {
			plain = plain && scale[k] == 1 && offset[k] == 0
		}
		if !plain {
			ctx.For(int(c), float64(inner), kernels.StartLoop, func(lo, hi int) {
				for k := lo; k < hi; k++ {
					a, b := scale[k], offset[k]
					row := ys[int64(k)*inner : int64(k+1)*inner]
					for i, e := range row {
						row[i] = e*a + b
					}
				}
			})
		}
		return true, nil
	}
	return false, nil
}

// lrn is local response normalisation over the last (depth) dimension:
// out = in / (bias + alpha * sum of squares over [d-r, d+r]) ^ beta.
func lrn(ctx *kernels.Context, l LRNAttrs) error {
	x := ctx.Input(0)
	if err := LRNArgs(ctx); err != nil {
		return err
	}
	o, err := ctx.Allocate(0, x.Shape)
	if err != nil {
		return err
	}
	d := int(x.Shape[3])
	if o.NumElements() == 0 {
		return nil
	}
	xs := toF32(x)
	ys := o.F32()
	if o.DType != tensor.Float {
		ys = make([]float32, len(xs))
	}
	r := int(l.Radius)
	bias, alpha, beta := float64(l.Bias), float64(l.Alpha), float64(l.Beta)
	ctx.For(len(xs)/d, float64(d)*float64(2*r+10), kernels.StartLoop, func(lo, hi int) {
		for row := lo; row < hi; row++ {
			src, dst := xs[row*d:(row+1)*d], ys[row*d:(row+1)*d]
			// A running sum of squares over the window.
			var sq float64
			for q := 0; q < min(r, d-1)+1 && q < d; q++ {
				sq += float64(src[q]) * float64(src[q])
			}
			for i := range src {
				if i > 0 {
					if j := i + r; j < d {
						sq += float64(src[j]) * float64(src[j])
					}
					if j := i - r - 1; j >= 0 {
						sq -= float64(src[j]) * float64(src[j])
					}
				}
				den := bias + alpha*sq
				var inv float64
				switch beta {
				case 0.5:
					inv = 1 / math.Sqrt(den)
				case 0.75:
					inv = 1 / math.Sqrt(den*math.Sqrt(den))
				case 1:
					inv = 1 / den
				default:
					inv = math.Pow(den, -beta)
				}
				dst[i] = float32(float64(src[i]) * inv)
			}
		}
	})
	if o.DType != tensor.Float {
		storeF32(o, ys)
	}
	return nil
}

// layerNorm is _MstreamLayerNorm: x's elements from dimension axis on form
// the rows normalised (mean and biased variance over each), then times
// gamma plus beta, which broadcast along x's last dimension as the Mul and
// AddV2 they replace did (1-D, of that dimension's size or 1). With
// single, dimension axis alone is normalised (the moments form's Mean over
// one axis): the same when it is the last, else strided, in a plain loop.
// One pass per row reads x twice (statistics, then the output) and writes
// once. With residual it is _MstreamAddLayerNorm(x, y, gamma, beta), the
// normalisation of the AddV2 x + y: of equal shapes, each row's sum is
// made in the row's pass (vec.LayerNorm's res) rather than by a pass of
// its own; broadcast, the sum is made first, as AddV2 makes it.
func layerNorm(ctx *kernels.Context, axis int64, single bool, eps float64, residual bool) error {
	x := ctx.Input(0)
	shape, X := x.Shape, x.F32()
	var R []float32 // the residual, when summed in the rows' pass
	p0 := 1         // gamma's input
	if residual {
		p0 = 2
		y := ctx.Input(1)
		if x.Shape.Equal(y.Shape) {
			R = y.F32()
		} else {
			bc, ok := broadcastShapes(x.Shape, y.Shape)
			if !ok {
				return ctx.Errorf(status.InvalidArgument, "Incompatible shapes: %v vs. %v", x.Shape, y.Shape)
			}
			sum, err := kernels.Scratch[float32](ctx, bc.out.NumElements())
			if err != nil {
				return err
			}
			if !vecBinaryOp(ctx, binOpVec[opAdd], bc, X, y.F32(), sum) {
				runBinary(ctx, opAdd, bc, X, y.F32(), sum)
			}
			shape, X = bc.out, sum
		}
	}
	rank := int64(len(shape))
	a := axis
	if a < 0 {
		a += rank
	}
	if a < 0 || a >= rank {
		return ctx.Errorf(status.InvalidArgument, "begin_norm_axis %d is out of range for an input of shape %v", axis, shape)
	}

	d := shape[rank-1]
	params := [2][]float32{}
	for i, name := range []string{"gamma", "beta"} {
		p := ctx.Input(p0 + i)
		if len(p.Shape) != 1 || (p.Shape[0] != d && p.Shape[0] != 1) {
			return ctx.Errorf(status.InvalidArgument, "Incompatible shapes: %v vs. %v (%s)", shape, p.Shape, name)
		}
		params[i] = p.F32()
	}
	o, err := ctx.Allocate(0, shape)
	if err != nil || o.NumElements() == 0 {
		return err
	}
	for i, p := range params {
		if len(p) == 1 && d > 1 {
			full, err := kernels.Scratch[float32](ctx, d)
			if err != nil {
				return err
			}
			for j := range full {
				full[j] = p[0]
			}
			params[i] = full
		}
	}
	Y := o.F32()
	if single && a != rank-1 {
		if R != nil {
			sum, err := kernels.Scratch[float32](ctx, int64(len(X)))
			if err != nil {
				return err
			}
			vec.MapBinary(vec.Add, X, R, sum, 1, 1)
			X = sum
		}
		layerNormStrided(ctx, X, Y, int(shape[a]), int(shape[a+1:].NumElements()), params[0], params[1], eps)
		return nil
	}
	n := int(shape[a:].NumElements())
	cost := float64(n) * 2
	if R != nil {
		cost += float64(n)
	}
	ctx.For(len(X)/n, cost, kernels.StartLoop, func(lo, hi int) {
		var r []float32
		if R != nil {
			r = R[lo*n : hi*n]
		}
		vec.LayerNorm(X[lo*n:hi*n], r, Y[lo*n:hi*n], n, params[0], params[1], eps)
	})
	return nil
}

// layerNormStrided normalises x, viewed as [outer, d, inner], over its
// middle dimension; gamma and beta run along the last of x's dimensions,
// of len(gamma) elements, which divides inner.
func layerNormStrided(ctx *kernels.Context, x, y []float32, d, inner int, gamma, beta []float32, eps float64) {
	c := len(gamma)
	ctx.For(len(x)/(d*inner), float64(d*inner)*8, kernels.StartLoop, func(lo, hi int) {
		for o := lo; o < hi; o++ {
			base := o * d * inner
			for i := 0; i < inner; i++ {
				var m, v float64
				for k := 0; k < d; k++ {
					m += float64(x[base+k*inner+i])
				}
				m /= float64(d)
				for k := 0; k < d; k++ {
					e := float64(x[base+k*inner+i]) - m
					v += e * e
				}
				inv := 1 / math.Sqrt(v/float64(d)+eps)
				for k := 0; k < d; k++ {
					j := base + k*inner + i
					y[j] = float32((float64(x[j])-m)*inv)*gamma[i%c] + beta[i%c]
				}
			}
		}
	})
}
