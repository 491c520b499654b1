package cpu

import (
	"math"

	"mstream/graph"
	"mstream/kernels"
	"mstream/status"
	"mstream/tensor"
)

// The reduction engine behind Sum, Mean, Prod, Max, Min, All and Any.
//
// Axes are checked as TF's ReductionHelper does (range, then duplicates).
// Size-1 dims are dropped and adjacent dims of the same kind merged, so
// almost every reduction becomes [outer, red, inner] with red contiguous in
// memory: a row reduction when inner == 1, a column reduction otherwise.
// Other axis patterns fall back to an offset walk.
//
// Accumulators: float64 for float sums, means and products (half and
// bfloat16 go through float32 first); integers sum and multiply in 64 bits
// and wrap to the dtype, which equals TF's arithmetic in the dtype; Mean of
// narrow integers divides the 64-bit sum, as TF's casting reducer does.
// Max and Min propagate NaN (Eigen's PropagateNaN reducers). An empty
// reduction gives the reducer's identity: 0, 1, the lowest or highest
// value (-inf/+inf for floats), true for All, false for Any, and for Mean
// NaN (floats) or 0 (integers).

type redKind int

const (
	rSum redKind = iota
	rMean
	rProd
	rMax
	rMin
	rAll
	rAny
)

func init() {
	for name, k := range map[string]redKind{"Sum": rSum, "Mean": rMean, "Prod": rProd, "Max": rMax, "Min": rMin} {
		kind := k
		reg(name, numericTypes, []string{"reduction_indices"}, func(n *graph.Node) (kernels.Kernel, error) {
			keep := attrBool(n, "keep_dims")
			return kernels.KernelFunc(func(ctx *kernels.Context) error { return reduceOp(ctx, kind, keep) }), nil
		})
	}
	for name, k := range map[string]redKind{"All": rAll, "Any": rAny} {
		kind := k
		reg(name, nil, []string{"reduction_indices"}, func(n *graph.Node) (kernels.Kernel, error) {
			keep := attrBool(n, "keep_dims")
			return kernels.KernelFunc(func(ctx *kernels.Context) error { return reduceOp(ctx, kind, keep) }), nil
		})
	}
}

// redPlan is a reduction canonicalised by planReduce.
type redPlan struct {
	out   tensor.Shape
	count int64 // elements folded into each output
	// contiguous: the input is [outer, red, inner].
	contiguous        bool
	outer, red, inner int
	// Otherwise the kept and reduced dims with their input strides.
	kept, rs tensor.Shape
	kst, rst []int64
}

// ReductionArgs reads a reduction's axes (input 1, reduction_indices) and
// checks them against the input (input 0) as TF's ReductionHelper does;
// it returns which input dims are reduced, the output shape (reduced dims
// kept as 1 with keep) and how many elements fold into each output. The
// CPU and GPU reductions both validate through it.
func ReductionArgs(ctx *kernels.Context, keep bool) (reduced []bool, out tensor.Shape, count int64, err error) {
	in := ctx.Input(0)
	axes, err := hostInts(ctx, 1, "reduction_indices")
	if err != nil {
		return nil, nil, 0, err
	}
	r := len(in.Shape)
	reduced = make([]bool, r)
	for _, a := range axes {
		if a < -int64(r) || a >= int64(r) {
			return nil, nil, 0, ctx.Errorf(status.InvalidArgument, "Invalid reduction dimension (%d for input with %d dimension(s)", a, r)
		}
		if a < 0 {
			a += int64(r)
		}
		if reduced[a] {
			return nil, nil, 0, ctx.Errorf(status.InvalidArgument, "Invalid reduction arguments: Axes contains duplicate dimension: %d", a)
		}
		reduced[a] = true
	}
	count = 1
	for i, d := range in.Shape {
		switch {
		case !reduced[i]:
			out = append(out, d)
		case keep:
			out = append(out, 1)
		}
		if reduced[i] {
			count *= d
		}
	}
	return reduced, out, count, nil
}

// ReducedRun is a run of neighbouring input dims of one kind (reduced or
// kept) after ReducedRuns drops the size-1 dims: N is their product.
type ReducedRun struct {
	N       int64
	Reduced bool
}

// ReducedRuns canonicalises a reduction of shape: size-1 dims dropped,
// neighbours of one kind merged, so [outer, red, inner] reductions and
// the like are recognised whatever the axes were.
func ReducedRuns(shape tensor.Shape, reduced []bool) []ReducedRun {
	var runs []ReducedRun
	for i, d := range shape {
		if d == 1 {
			continue
		}
		if k := len(runs); k > 0 && runs[k-1].Reduced == reduced[i] {
			runs[k-1].N *= d
		} else {
			runs = append(runs, ReducedRun{d, reduced[i]})
		}
	}
	return runs
}

// planReduce validates the reduction (ReductionArgs) and canonicalises it.
func planReduce(ctx *kernels.Context, in *tensor.Tensor, keep bool) (redPlan, error) {
	red, out, count, err := ReductionArgs(ctx, keep)
	if err != nil {
		return redPlan{}, err
	}
	p := redPlan{out: out, count: count}
	st := strides(in.Shape)
	for i, d := range in.Shape {
		if red[i] {
			p.rs = append(p.rs, d)
			p.rst = append(p.rst, st[i])
		} else {
			p.kept = append(p.kept, d)
			p.kst = append(p.kst, st[i])
		}
	}
	runs := ReducedRuns(in.Shape, red)
	p.outer, p.red, p.inner = 1, 1, 1
	p.contiguous = true
	switch {
	case len(runs) == 0:
	case len(runs) == 1 && runs[0].Reduced:
		p.red = int(runs[0].N)
	case len(runs) == 1:
		p.outer = int(runs[0].N)
	case len(runs) == 2 && runs[1].Reduced:
		p.outer, p.red = int(runs[0].N), int(runs[1].N)
	case len(runs) == 2:
		p.red, p.inner = int(runs[0].N), int(runs[1].N)
	case len(runs) == 3 && runs[1].Reduced:
		p.outer, p.red, p.inner = int(runs[0].N), int(runs[1].N), int(runs[2].N)
	default:
		p.contiguous = false
	}
	return p, nil
}

func reduceOp(ctx *kernels.Context, kind redKind, keep bool) error {
	in := ctx.Input(0)
	p, err := planReduce(ctx, in, keep)
	if err != nil {
		return err
	}
	o, err := ctx.Allocate(0, p.out)
	if err != nil {
		return err
	}
	if o.NumElements() == 0 {
		return nil
	}
	switch in.DType {
	case tensor.Float:
		reduceFloat(ctx, kind, p, in.F32(), o.F32())
	case tensor.Double:
		reduceFloat(ctx, kind, p, in.F64(), o.F64())
	case tensor.Half, tensor.Bfloat16:
		res, err := kernels.Scratch[float32](ctx, o.NumElements())
		if err != nil {
			return err
		}
		reduceFloat(ctx, kind, p, toF32(in), res)
		storeF32(o, res)
	case tensor.Int32:
		reduceInt[int32, int64](ctx, kind, p, in.I32(), o.I32())
	case tensor.Int64:
		reduceInt[int64, int64](ctx, kind, p, in.I64(), o.I64())
	case tensor.Int16:
		reduceInt[int16, int64](ctx, kind, p, in.I16(), o.I16())
	case tensor.Int8:
		reduceInt[int8, int64](ctx, kind, p, in.I8(), o.I8())
	case tensor.Uint8:
		reduceInt[uint8, uint64](ctx, kind, p, in.U8(), o.U8())
	case tensor.Uint16:
		reduceInt[uint16, uint64](ctx, kind, p, in.U16(), o.U16())
	case tensor.Uint32:
		reduceInt[uint32, uint64](ctx, kind, p, in.U32(), o.U32())
	case tensor.Uint64:
		reduceInt[uint64, uint64](ctx, kind, p, in.U64(), o.U64())
	case tensor.Bool:
		// Bools are bytes 0/1: All is Min and Any is Max over them.
		k := rMin
		if kind == rAny {
			k = rMax
		}
		if p.count == 0 {
			fillBool(o.Bools(), kind == rAll)
			return nil
		}
		reduceMinMax(ctx, k, p, in.U8(), o.U8())
	default:
		return ctx.Errorf(status.Unimplemented, "dtype %v", in.DType)
	}
	return nil
}

func fillBool(b []bool, v bool) {
	for i := range b {
		b[i] = v
	}
}

// colBlock is the width of a column-reduction task: enough to vectorise,
// small enough that the accumulators stay in L1.
const colBlock = 512

// forReduce splits a contiguous reduction into tasks and calls row for each
// output range of a row reduction (inner == 1), or col for each (outer
// index, column range) block otherwise.
func forReduce(ctx *kernels.Context, p redPlan, row func(lo, hi int), col func(o, jlo, jhi int)) {
	cost := float64(p.red) + 1
	if p.inner == 1 {
		ctx.For(p.outer, cost, kernels.StartLoop, row)
		return
	}
	// Blocks of colBlock columns, narrower (down to 256, which keeps each
	// row segment 1 KiB of float32 for the prefetcher) when that leaves
	// too few tasks to spread over the pool.
	nb := (p.inner + colBlock - 1) / colBlock
	if want := (16 + p.outer - 1) / p.outer; nb < want {
		nb = max(nb, min(want, (p.inner+255)/256))
	}
	blk := (p.inner + nb - 1) / nb
	ctx.For(p.outer*nb, cost*float64(blk), kernels.StartLoop, func(lo, hi int) {
		for t := lo; t < hi; t++ {
			o, b := t/nb, t%nb
			if jlo := b * blk; jlo < p.inner {
				col(o, jlo, min(jlo+blk, p.inner))
			}
		}
	})
}

// walkGeneral visits, for each output element in [lo, hi), the input
// offsets folded into it (the rare non-contiguous axis patterns).
func walkGeneral(p redPlan) (outOff, inOff []int64) {
	return offsets(p.kept, p.kst), offsets(p.rs, p.rst)
}

// offsets lists the flat offsets of every index of shape under strides.
func offsets(shape tensor.Shape, st []int64) []int64 {
	n := shape.NumElements()
	offs := make([]int64, 0, n)
	if n == 0 {
		return offs
	}
	idx := make([]int64, len(shape))
	var off int64
	for k := int64(0); k < n; k++ {
		offs = append(offs, off)
		for d := len(shape) - 1; d >= 0; d-- {
			idx[d]++
			off += st[d]
			if idx[d] < shape[d] {
				break
			}
			off -= st[d] * idx[d]
			idx[d] = 0
		}
	}
	return offs
}

// reduceFloat serves float32 and float64 (and half/bfloat16 as float32).
func reduceFloat[T float32 | float64](ctx *kernels.Context, kind redKind, p redPlan, x, o []T) {
	if xf, ok := any(x).([]float32); ok && vecReduce(ctx, kind, p, xf, any(o).([]float32)) {
		return
	}
	if kind == rMax || kind == rMin {
		reduceMinMax(ctx, kind, p, x, o)
		return
	}
	init := 0.0
	if kind == rProd {
		init = 1
	}
	fin := func(s float64) T {
		if kind == rMean {
			return T(s / float64(p.count)) // an empty mean is 0/0 = NaN
		}
		return T(s)
	}
	if p.count == 0 {
		for i := range o {
			o[i] = fin(init)
		}
		return
	}
	if !p.contiguous {
		outOff, inOff := walkGeneral(p)
		ctx.For(len(o), float64(p.count)+1, kernels.StartLoop, func(lo, hi int) {
			for i := lo; i < hi; i++ {
				s := init
				for _, off := range inOff {
					if kind == rProd {
						s *= float64(x[outOff[i]+off])
					} else {
						s += float64(x[outOff[i]+off])
					}
				}
				o[i] = fin(s)
			}
		})
		return
	}
	n := p.red
	forReduce(ctx, p, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			r := x[i*n : (i+1)*n]
			var s float64
			if kind == rProd {
				s = prodRow(r)
			} else {
				s = sumRow(r)
			}
			o[i] = fin(s)
		}
	}, func(oi, jlo, jhi int) {
		acc := make([]float64, jhi-jlo)
		for j := range acc {
			acc[j] = init
		}
		base := oi * n * p.inner
		for r := 0; r < n; r++ {
			row := x[base+r*p.inner+jlo : base+r*p.inner+jhi]
			row = row[:len(acc)]
			if kind == rProd {
				for j, v := range row {
					acc[j] *= float64(v)
				}
			} else {
				for j, v := range row {
					acc[j] += float64(v)
				}
			}
		}
		out := o[oi*p.inner+jlo : oi*p.inner+jhi]
		for j, s := range acc {
			out[j] = fin(s)
		}
	})
}

// sumRow adds a row in float64 with four accumulators.
func sumRow[T float32 | float64](r []T) float64 {
	var s0, s1, s2, s3 float64
	i := 0
	for ; i+4 <= len(r); i += 4 {
		s0 += float64(r[i])
		s1 += float64(r[i+1])
		s2 += float64(r[i+2])
		s3 += float64(r[i+3])
	}
	for ; i < len(r); i++ {
		s0 += float64(r[i])
	}
	return (s0 + s1) + (s2 + s3)
}

func prodRow[T float32 | float64](r []T) float64 {
	p := 1.0
	for _, v := range r {
		p *= float64(v)
	}
	return p
}

// reduceInt serves the integer dtypes; A is int64 or uint64 by signedness.
func reduceInt[T num, A int64 | uint64](ctx *kernels.Context, kind redKind, p redPlan, x, o []T) {
	if kind == rMax || kind == rMin {
		reduceMinMax(ctx, kind, p, x, o)
		return
	}
	var init A
	if kind == rProd {
		init = 1
	}
	fin := func(s A) T {
		if kind == rMean {
			if p.count == 0 {
				return 0
			}
			return T(s / A(p.count))
		}
		return T(s)
	}
	fold := func(s A, v T) A {
		if kind == rProd {
			return s * A(v)
		}
		return s + A(v)
	}
	if p.count == 0 {
		for i := range o {
			o[i] = fin(init)
		}
		return
	}
	if !p.contiguous {
		outOff, inOff := walkGeneral(p)
		ctx.For(len(o), float64(p.count)+1, kernels.StartLoop, func(lo, hi int) {
			for i := lo; i < hi; i++ {
				s := init
				for _, off := range inOff {
					s = fold(s, x[outOff[i]+off])
				}
				o[i] = fin(s)
			}
		})
		return
	}
	n := p.red
	forReduce(ctx, p, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			s := init
			if kind == rProd {
				for _, v := range x[i*n : (i+1)*n] {
					s *= A(v)
				}
			} else {
				for _, v := range x[i*n : (i+1)*n] {
					s += A(v)
				}
			}
			o[i] = fin(s)
		}
	}, func(oi, jlo, jhi int) {
		acc := make([]A, jhi-jlo)
		for j := range acc {
			acc[j] = init
		}
		base := oi * n * p.inner
		for r := 0; r < n; r++ {
			row := x[base+r*p.inner+jlo : base+r*p.inner+jhi]
			row = row[:len(acc)]
			if kind == rProd {
				for j, v := range row {
					acc[j] *= A(v)
				}
			} else {
				for j, v := range row {
					acc[j] += A(v)
				}
			}
		}
		out := o[oi*p.inner+jlo : oi*p.inner+jhi]
		for j, s := range acc {
			out[j] = fin(s)
		}
	})
}

// lowestOf and highestOf are Max's and Min's identities.
func lowestOf[T num]() T {
	var z T
	switch any(z).(type) {
	case float32, float64:
		return T(math.Inf(-1))
	case int8:
		v := int8(math.MinInt8)
		return T(v)
	case int16:
		v := int16(math.MinInt16)
		return T(v)
	case int32:
		v := int32(math.MinInt32)
		return T(v)
	case int64:
		v := int64(math.MinInt64)
		return T(v)
	}
	return 0
}

func highestOf[T num]() T {
	var z T
	switch any(z).(type) {
	case float32, float64:
		return T(math.Inf(1))
	case int8:
		v := int8(math.MaxInt8)
		return T(v)
	case int16:
		v := int16(math.MaxInt16)
		return T(v)
	case int32:
		v := int32(math.MaxInt32)
		return T(v)
	case int64:
		v := int64(math.MaxInt64)
		return T(v)
	case uint8:
		v := uint8(math.MaxUint8)
		return T(v)
	case uint16:
		v := uint16(math.MaxUint16)
		return T(v)
	case uint32:
		v := uint32(math.MaxUint32)
		return T(v)
	}
	v := uint64(math.MaxUint64)
	return T(v)
}

// reduceMinMax folds with NaN propagation: once NaN, a slot stays NaN.
func reduceMinMax[T num](ctx *kernels.Context, kind redKind, p redPlan, x, o []T) {
	init := lowestOf[T]()
	if kind == rMin {
		init = highestOf[T]()
	}
	if p.count == 0 {
		for i := range o {
			o[i] = init
		}
		return
	}
	isMax := kind == rMax
	if !p.contiguous {
		outOff, inOff := walkGeneral(p)
		ctx.For(len(o), float64(p.count)+1, kernels.StartLoop, func(lo, hi int) {
			for i := lo; i < hi; i++ {
				m := init
				for _, off := range inOff {
					m = pick(isMax, m, x[outOff[i]+off])
				}
				o[i] = m
			}
		})
		return
	}
	n := p.red
	forReduce(ctx, p, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			o[i] = minMaxRow(isMax, init, x[i*n:(i+1)*n])
		}
	}, func(oi, jlo, jhi int) {
		out := o[oi*p.inner+jlo : oi*p.inner+jhi]
		for j := range out {
			out[j] = init
		}
		base := oi * n * p.inner
		for r := 0; r < n; r++ {
			row := x[base+r*p.inner+jlo : base+r*p.inner+jhi]
			row = row[:len(out)]
			if isMax {
				for j, v := range row {
					if m := out[j]; v > m || v != v {
						if m == m {
							out[j] = v
						}
					}
				}
			} else {
				for j, v := range row {
					if m := out[j]; v < m || v != v {
						if m == m {
							out[j] = v
						}
					}
				}
			}
		}
	})
}

// pick folds v into m: the larger (or smaller), NaN sticking.
func pick[T num](isMax bool, m, v T) T {
	if m != m {
		return m
	}
	if v != v || (isMax && v > m) || (!isMax && v < m) {
		return v
	}
	return m
}

func minMaxRow[T num](isMax bool, init T, r []T) T {
	m := init
	if isMax {
		for _, v := range r {
			if v > m {
				m = v
			} else if v != v {
				return v
			}
		}
		return m
	}
	for _, v := range r {
		if v < m {
			m = v
		} else if v != v {
			return v
		}
	}
	return m
}

func init() {
	argTypes := append(append([]tensor.DType{}, numericTypes...), tensor.Bool)
	for _, name := range []string{"ArgMax", "ArgMin"} {
		isMax := name == "ArgMax"
		reg(name, argTypes, []string{"dimension"}, fn(func(ctx *kernels.Context) error { return argOp(ctx, isMax) }))
	}
}

// ArgReduceArgs checks ArgMax's and ArgMin's dimension (input 1, a
// scalar) against the input, which must not be empty along it, and
// returns the input viewed as [outer, n, inner] around that axis and the
// output shape; the CPU and GPU kernels both validate through it.
func ArgReduceArgs(ctx *kernels.Context) (outer, n, inner int64, out tensor.Shape, err error) {
	in := ctx.Input(0)
	if len(ctx.Input(1).Shape) != 0 {
		return 0, 0, 0, nil, ctx.Errorf(status.InvalidArgument, "dim must be a scalar, but received tensor of shape: %v", ctx.Input(1).Shape)
	}
	dims, err := hostInts(ctx, 1, "dimension")
	if err != nil {
		return 0, 0, 0, nil, err
	}
	r := len(in.Shape)
	dim := dims[0]
	axis := dim
	if axis < 0 {
		axis += int64(r)
	}
	if axis < 0 || axis >= int64(r) {
		return 0, 0, 0, nil, ctx.Errorf(status.InvalidArgument, "Expected dimension in the range [%d, %d), but got %d", -r, r, dim)
	}
	if in.Shape[axis] == 0 {
		return 0, 0, 0, nil, ctx.Errorf(status.InvalidArgument, "Reduction axis %d is empty in shape %v", dim, in.Shape)
	}
	outer, inner = 1, 1
	for i, d := range in.Shape {
		switch {
		case int64(i) < axis:
			outer *= d
		case int64(i) > axis:
			inner *= d
		}
		if int64(i) != axis {
			out = append(out, d)
		}
	}
	return outer, in.Shape[axis], inner, out, nil
}

// argOp is ArgMax/ArgMin over one axis. Ties take the first index. A NaN
// wins over every number (the first NaN's index), as NumPy does; TF leaves
// that case to Eigen's evaluation order.
func argOp(ctx *kernels.Context, isMax bool) error {
	in := ctx.Input(0)
	outer64, n64, inner64, out, err := ArgReduceArgs(ctx)
	if err != nil {
		return err
	}
	outer, n, inner := int(outer64), int(n64), int(inner64)
	o, err := ctx.Allocate(0, out)
	if err != nil {
		return err
	}
	if o.NumElements() == 0 {
		return nil
	}
	idx, err := kernels.Scratch[int64](ctx, o.NumElements())
	if err != nil {
		return err
	}
	switch in.DType {
	case tensor.Float:
		if !vecArg(ctx, isMax, in.F32(), idx, n, inner) {
			argRows(ctx, isMax, in.F32(), idx, outer, n, inner)
		}
	case tensor.Double:
		argRows(ctx, isMax, in.F64(), idx, outer, n, inner)
	case tensor.Half, tensor.Bfloat16:
		if x := toF32(in); !vecArg(ctx, isMax, x, idx, n, inner) {
			argRows(ctx, isMax, x, idx, outer, n, inner)
		}
	case tensor.Int32:
		argRows(ctx, isMax, in.I32(), idx, outer, n, inner)
	case tensor.Int64:
		argRows(ctx, isMax, in.I64(), idx, outer, n, inner)
	case tensor.Int16:
		argRows(ctx, isMax, in.I16(), idx, outer, n, inner)
	case tensor.Int8:
		argRows(ctx, isMax, in.I8(), idx, outer, n, inner)
	case tensor.Uint8, tensor.Bool:
		argRows(ctx, isMax, in.U8(), idx, outer, n, inner)
	case tensor.Uint16:
		argRows(ctx, isMax, in.U16(), idx, outer, n, inner)
	case tensor.Uint32:
		argRows(ctx, isMax, in.U32(), idx, outer, n, inner)
	case tensor.Uint64:
		argRows(ctx, isMax, in.U64(), idx, outer, n, inner)
	default:
		return ctx.Errorf(status.Unimplemented, "dtype %v", in.DType)
	}
	switch o.DType {
	case tensor.Int64:
		copy(o.I64(), idx)
	case tensor.Int32:
		conv(o.I32(), idx)
	case tensor.Int16:
		conv(o.I16(), idx)
	case tensor.Uint16:
		conv(o.U16(), idx)
	default:
		return ctx.Errorf(status.InvalidArgument, "output_type %v is not supported", o.DType)
	}
	return nil
}

// argRows finds, for each (outer, inner) slot, the index along the middle
// axis of [outer, n, inner].
func argRows[T num](ctx *kernels.Context, isMax bool, x []T, idx []int64, outer, n, inner int) {
	better := func(v, best T) bool {
		if best != best {
			return false
		}
		if v != v {
			return true
		}
		if isMax {
			return v > best
		}
		return v < best
	}
	ctx.For(outer*inner, float64(n)+1, kernels.StartLoop, func(lo, hi int) {
		for t := lo; t < hi; t++ {
			oi, j := t/inner, t%inner
			base := oi*n*inner + j
			best, bi := x[base], 0
			for k := 1; k < n; k++ {
				if v := x[base+k*inner]; better(v, best) {
					best, bi = v, k
				}
			}
			idx[t] = int64(bi)
		}
	})
}
