package cpu

import (
	"mstream/graph"
	"mstream/kernels"
	"mstream/status"
	"mstream/tensor"
)

type num interface {
	~float32 | ~float64 | ~int8 | ~int16 | ~int32 | ~int64 | ~uint8 | ~uint16 | ~uint32 | ~uint64
}

type binOp int

const (
	opAdd binOp = iota
	opSub
	opMul
	opDiv
	opMax
	opMin
)

var binOps = []struct {
	names []string
	op    binOp
	types []tensor.DType
}{
	{[]string{"Add", "AddV2"}, opAdd, numericTypes},
	{[]string{"Sub"}, opSub, numericTypes},
	{[]string{"Mul"}, opMul, numericTypes},
	{[]string{"RealDiv"}, opDiv, floatTypes},
	{[]string{"Maximum"}, opMax, numericTypes},
	{[]string{"Minimum"}, opMin, numericTypes},
}

func init() {
	for _, b := range binOps {
		op := b.op
		for _, name := range b.names {
			types := b.types
			if name == "Add" {
				types = append(append([]tensor.DType{}, types...), tensor.String)
			}
			reg(name, types, nil, func(*graph.Node) (kernels.Kernel, error) {
				return kernels.KernelFunc(func(ctx *kernels.Context) error { return binaryOp(ctx, op) }), nil
			})
		}
	}
}

// bcast describes how two shapes broadcast: the output shape and, for each
// output dim, the element stride into a and b (0 where that side repeats).
type bcast struct {
	out    tensor.Shape
	sa, sb []int64
}

func broadcastShapes(a, b tensor.Shape) (bcast, bool) {
	r := len(a)
	if len(b) > r {
		r = len(b)
	}
	out := make(tensor.Shape, r)
	sa, sb := make([]int64, r), make([]int64, r)
	pa, pb := int64(1), int64(1)
	for i := r - 1; i >= 0; i-- {
		da, db := int64(1), int64(1)
		if j := i - (r - len(a)); j >= 0 {
			da = a[j]
		}
		if j := i - (r - len(b)); j >= 0 {
			db = b[j]
		}
		switch {
		case da == db:
			out[i] = da
		case da == 1:
			out[i] = db
		case db == 1:
			out[i] = da
		default:
			return bcast{}, false
		}
		if da != 1 || out[i] == 1 {
			sa[i] = pa
		}
		if db != 1 || out[i] == 1 {
			sb[i] = pb
		}
		pa *= da
		pb *= db
	}
	return bcast{out, sa, sb}, true
}

func binaryOp(ctx *kernels.Context, op binOp) error {
	a, b := ctx.Input(0), ctx.Input(1)
	var bc bcast
	switch {
	// Equal shapes and a scalar side need no strides in runBinary and
	// vecBinaryOp, which take their element-wise paths (strings walk
	// rows, which need them): nothing to allocate for the small tensors
	// whose cost is all overhead.
	case a.DType != tensor.String && (a.Shape.Equal(b.Shape) || len(b.Shape) == 0):
		bc.out = a.Shape
	case a.DType != tensor.String && len(a.Shape) == 0:
		bc.out = b.Shape
	default:
		var ok bool
		if bc, ok = broadcastShapes(a.Shape, b.Shape); !ok {
			return ctx.Errorf(status.InvalidArgument, "Incompatible shapes: %v vs. %v", a.Shape, b.Shape)
		}
	}
	o, err := ctx.Allocate(0, bc.out)
	if err != nil {
		return err
	}
	if o.NumElements() == 0 {
		return nil
	}
	switch a.DType {
	case tensor.Float:
		if !vecBinaryOp(ctx, binOpVec[op], bc, a.F32(), b.F32(), o.F32()) {
			runBinary(ctx, op, bc, a.F32(), b.F32(), o.F32())
		}
	case tensor.Double:
		runBinary(ctx, op, bc, a.F64(), b.F64(), o.F64())
	case tensor.Half, tensor.Bfloat16:
		out, err := kernels.Scratch[float32](ctx, o.NumElements())
		if err != nil {
			return err
		}
		if !vecBinaryOp(ctx, binOpVec[op], bc, toF32(a), toF32(b), out) {
			runBinary(ctx, op, bc, toF32(a), toF32(b), out)
		}
		storeF32(o, out)
	case tensor.Int32:
		runBinary(ctx, op, bc, a.I32(), b.I32(), o.I32())
	case tensor.Int64:
		runBinary(ctx, op, bc, a.I64(), b.I64(), o.I64())
	case tensor.Int16:
		runBinary(ctx, op, bc, a.I16(), b.I16(), o.I16())
	case tensor.Int8:
		runBinary(ctx, op, bc, a.I8(), b.I8(), o.I8())
	case tensor.Uint8:
		runBinary(ctx, op, bc, a.U8(), b.U8(), o.U8())
	case tensor.Uint16:
		runBinary(ctx, op, bc, a.U16(), b.U16(), o.U16())
	case tensor.Uint32:
		runBinary(ctx, op, bc, a.U32(), b.U32(), o.U32())
	case tensor.Uint64:
		runBinary(ctx, op, bc, a.U64(), b.U64(), o.U64())
	case tensor.String:
		budget := ctx.StringBytes(o)
		var err error
		forEachRow(bc, func(oo, ao, bo, n, sa, sb int64) {
			for i := int64(0); i < n && err == nil; i++ {
				x, y := a.Strs[ao+i*sa], b.Strs[bo+i*sb]
				if err = budget.Take(int64(len(x)) + int64(len(y))); err == nil {
					o.Strs[oo+i] = append(append(make([]byte, 0, len(x)+len(y)), x...), y...)
				}
			}
		})
		return err
	default:
		return ctx.Errorf(status.Unimplemented, "dtype %v", a.DType)
	}
	return nil
}

// forEachRow walks the output in runs along the last dim, giving each run's
// output, a and b offsets, its length and the a/b strides within it.
func forEachRow(bc bcast, f func(oo, ao, bo, n, sa, sb int64)) {
	r := len(bc.out)
	if r == 0 {
		f(0, 0, 0, 1, 0, 0)
		return
	}
	if bc.out.NumElements() == 0 {
		return
	}
	forRows(bc, 0, bc.out.NumElements()/bc.out[r-1], f)
}

// forRows is forEachRow over rows [lo, hi) of a non-empty, rank >= 1 output.
func forRows(bc bcast, lo, hi int64, f func(oo, ao, bo, n, sa, sb int64)) {
	r := len(bc.out)
	n := bc.out[r-1]
	idx := make([]int64, r-1)
	var ao, bo int64
	rem := lo
	for d := r - 2; d >= 0; d-- {
		idx[d] = rem % bc.out[d]
		rem /= bc.out[d]
		ao += idx[d] * bc.sa[d]
		bo += idx[d] * bc.sb[d]
	}
	for row := lo; row < hi; row++ {
		f(row*n, ao, bo, n, bc.sa[r-1], bc.sb[r-1])
		for d := r - 2; d >= 0; d-- {
			idx[d]++
			ao += bc.sa[d]
			bo += bc.sb[d]
			if idx[d] < bc.out[d] {
				break
			}
			ao -= bc.sa[d] * idx[d]
			bo -= bc.sb[d] * idx[d]
			idx[d] = 0
		}
	}
}

func runBinary[T num](ctx *kernels.Context, op binOp, bc bcast, a, b, o []T) {
	n := len(o)
	if n < smallBinary {
		// Too small for the pool to split: no closure to hand it.
		switch {
		case len(a) == n && len(b) == n:
			binLoop(op, o, a, b, 1, 1)
			return
		case len(a) == 1 && len(b) == n:
			binLoop(op, o, a, b, 0, 1)
			return
		case len(b) == 1 && len(a) == n:
			binLoop(op, o, a, b, 1, 0)
			return
		}
	}
	switch {
	case len(a) == n && len(b) == n:
		ctx.For(n, 1, kernels.StartLoop, func(lo, hi int) { binLoop(op, o[lo:hi], a[lo:hi], b[lo:hi], 1, 1) })
	case len(a) == 1 && len(b) == n:
		ctx.For(n, 1, kernels.StartLoop, func(lo, hi int) { binLoop(op, o[lo:hi], a, b[lo:hi], 0, 1) })
	case len(b) == 1 && len(a) == n:
		ctx.For(n, 1, kernels.StartLoop, func(lo, hi int) { binLoop(op, o[lo:hi], a[lo:hi], b, 1, 0) })
	default:
		// General broadcast: rows of the last dim, split over the pool.
		// (len(o) > 1 here, so the output has rank >= 1.)
		r := len(bc.out)
		cols := bc.out[r-1]
		ctx.For(int(int64(n)/cols), float64(cols), kernels.StartLoop, func(lo, hi int) {
			forRows(bc, int64(lo), int64(hi), func(oo, ao, bo, m, sa, sb int64) {
				binLoop(op, o[oo:oo+m], a[ao:], b[bo:], int(sa), int(sb))
			})
		})
	}
}

// smallBinary is an element count below which the intra-op pool never
// splits an element-wise loop (its chunks are worth 20 us, an element
// about a nanosecond).
const smallBinary = 4096

// binLoop computes o[i] = a[i*sa] op b[i*sb]; sa and sb are 0 or 1.
func binLoop[T num](op binOp, o, a, b []T, sa, sb int) {
	if len(o) == 0 {
		return
	}
	_ = a[(len(o)-1)*sa]
	_ = b[(len(o)-1)*sb]
	if sa == 1 && sb == 1 && op <= opMul {
		// Dense fast path: re-sliced so the compiler drops bounds checks.
		a, b := a[:len(o)], b[:len(o)]
		switch op {
		case opAdd:
			for i := range o {
				o[i] = a[i] + b[i]
			}
		case opSub:
			for i := range o {
				o[i] = a[i] - b[i]
			}
		case opMul:
			for i := range o {
				o[i] = a[i] * b[i]
			}
		}
		return
	}
	switch op {
	case opAdd:
		for i := range o {
			o[i] = a[i*sa] + b[i*sb]
		}
	case opSub:
		for i := range o {
			o[i] = a[i*sa] - b[i*sb]
		}
	case opMul:
		for i := range o {
			o[i] = a[i*sa] * b[i*sb]
		}
	case opDiv:
		for i := range o {
			y := b[i*sb]
			if y == 0 && !isFloat[T]() {
				o[i] = 0
				continue
			}
			o[i] = a[i*sa] / y
		}
	case opMax:
		for i := range o {
			x, y := a[i*sa], b[i*sb]
			if x != x || x > y {
				o[i] = x
			} else {
				o[i] = y
			}
		}
	case opMin:
		for i := range o {
			x, y := a[i*sa], b[i*sb]
			if x != x || x < y {
				o[i] = x
			} else {
				o[i] = y
			}
		}
	}
}

func isFloat[T num]() bool {
	var x T = 1
	x /= 2
	return x != 0
}
