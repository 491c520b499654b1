package cpu

import (
	"container/heap"
	"sort"

	"mstream/graph"
	"mstream/kernels"
	"mstream/status"
	"mstream/tensor"
)

// Scans and selection: Cumsum and Cumprod (exclusive, reverse) and TopKV2
// (largest k along the last axis, ties broken by the lower index as TF's
// CPU kernel does).

func init() {
	for _, op := range []string{"Cumsum", "Cumprod"} {
		prod := op == "Cumprod"
		reg(op, numericTypes, []string{"axis"}, func(n *graph.Node) (kernels.Kernel, error) {
			ex, rev := attrBool(n, "exclusive"), attrBool(n, "reverse")
			return kernels.KernelFunc(func(ctx *kernels.Context) error { return scan(ctx, prod, ex, rev) }), nil
		})
	}
	reg("TopKV2", numericTypes, []string{"k"}, func(n *graph.Node) (kernels.Kernel, error) {
		return kernels.KernelFunc(topK), nil
	})
}

// ScanArgs checks Cumsum's and Cumprod's axis (input 1, a scalar in
// [-rank, rank)) and returns it non-negative; the CPU and GPU kernels both
// validate through it.
func ScanArgs(ctx *kernels.Context) (axis int, err error) {
	x, at := ctx.Input(0), ctx.Input(1)
	if len(at.Shape) != 0 {
		return 0, ctx.Errorf(status.InvalidArgument, "ScanOp: axis must be a scalar, not %v", at.Shape)
	}
	av, err := hostInts(ctx, 1, "axis")
	if err != nil {
		return 0, err
	}
	r := int64(len(x.Shape))
	ax := av[0]
	if ax < -r || ax >= r {
		return 0, ctx.Errorf(status.InvalidArgument, "ScanOp: Expected scan axis in the range [%d, %d), but got %d", -r, r, ax)
	}
	if ax < 0 {
		ax += r
	}
	return int(ax), nil
}

func scan(ctx *kernels.Context, prod, exclusive, reverse bool) error {
	x := ctx.Input(0)
	ax, err := ScanArgs(ctx)
	if err != nil {
		return err
	}
	o, err := ctx.Allocate(0, x.Shape)
	if err != nil {
		return err
	}
	if o.NumElements() == 0 {
		return nil
	}
	outer, inner := outerInner(x.Shape, ax)
	g := scanGeom{outer: int(outer), n: int(x.Shape[ax]), inner: int(inner), prod: prod, exclusive: exclusive, reverse: reverse}
	switch x.DType {
	case tensor.Float:
		scanT(ctx, g, x.F32(), o.F32())
	case tensor.Double:
		scanT(ctx, g, x.F64(), o.F64())
	case tensor.Half, tensor.Bfloat16:
		out, err := kernels.Scratch[float32](ctx, o.NumElements())
		if err != nil {
			return err
		}
		scanT(ctx, g, toF32(x), out)
		storeF32(o, out)
	case tensor.Int32:
		scanT(ctx, g, x.I32(), o.I32())
	case tensor.Int64:
		scanT(ctx, g, x.I64(), o.I64())
	case tensor.Int16:
		scanT(ctx, g, x.I16(), o.I16())
	case tensor.Int8:
		scanT(ctx, g, x.I8(), o.I8())
	case tensor.Uint8:
		scanT(ctx, g, x.U8(), o.U8())
	case tensor.Uint16:
		scanT(ctx, g, x.U16(), o.U16())
	case tensor.Uint32:
		scanT(ctx, g, x.U32(), o.U32())
	case tensor.Uint64:
		scanT(ctx, g, x.U64(), o.U64())
	default:
		return ctx.Errorf(status.Unimplemented, "scan of %v", x.DType)
	}
	return nil
}

type scanGeom struct {
	outer, n, inner          int
	prod, exclusive, reverse bool
}

// scanT scans each of the outer*inner lines of length n; the inner loop
// runs along the contiguous inner dimension so it vectorises.
func scanT[T num](ctx *kernels.Context, g scanGeom, x, o []T) {
	ctx.For(g.outer, float64(g.n*g.inner), kernels.StartLoop, func(lo, hi int) {
		acc := make([]T, g.inner)
		for p := lo; p < hi; p++ {
			base := p * g.n * g.inner
			for i := range acc {
				if g.prod {
					acc[i] = 1
				} else {
					acc[i] = 0
				}
			}
			for s := 0; s < g.n; s++ {
				j := s
				if g.reverse {
					j = g.n - 1 - s
				}
				src := x[base+j*g.inner:][:g.inner]
				dst := o[base+j*g.inner:][:g.inner]
				if g.exclusive {
					copy(dst, acc)
				}
				if g.prod {
					for i, v := range src {
						acc[i] *= v
					}
				} else {
					for i, v := range src {
						acc[i] += v
					}
				}
				if !g.exclusive {
					copy(dst, acc)
				}
			}
		}
	})
}

// TopKArgs checks TopKV2's k (input 1, a scalar) against the input and
// returns it and the shape of both outputs; the CPU and GPU kernels both
// validate through it.
func TopKArgs(ctx *kernels.Context) (k int64, out tensor.Shape, err error) {
	x, kt := ctx.Input(0), ctx.Input(1)
	if len(kt.Shape) != 0 {
		return 0, nil, ctx.Errorf(status.InvalidArgument, "k must be 0-D, got shape %v", kt.Shape)
	}
	kv, err := hostInts8(ctx, 1)
	if err != nil {
		return 0, nil, err
	}
	k = kv[0]
	if k < 0 {
		return 0, nil, ctx.Errorf(status.InvalidArgument, "Need k >= 0, got %d", k)
	}
	if len(x.Shape) < 1 {
		return 0, nil, ctx.Errorf(status.InvalidArgument, "input must be >= 1-D, got shape %v", x.Shape)
	}
	n := x.Shape[len(x.Shape)-1]
	if n < k {
		return 0, nil, ctx.Errorf(status.InvalidArgument, "input must have at least k columns. Had %d, needed %d", n, k)
	}
	out = x.Shape.Clone()
	out[len(out)-1] = k
	return k, out, nil
}

func topK(ctx *kernels.Context) error {
	x := ctx.Input(0)
	k, s, err := TopKArgs(ctx)
	if err != nil {
		return err
	}
	n := x.Shape[len(x.Shape)-1]
	vals, err := ctx.Allocate(0, s)
	if err != nil {
		return err
	}
	idx, err := ctx.Allocate(1, s)
	if err != nil {
		return err
	}
	if vals.NumElements() == 0 {
		return nil
	}
	rows := int(x.NumElements() / n)
	pos, err := kernels.Scratch[int64](ctx, int64(rows)*k)
	if err != nil {
		return err
	}
	switch x.DType {
	case tensor.Float:
		topKRows(ctx, x.F32(), int(n), int(k), pos)
	case tensor.Double:
		topKRows(ctx, x.F64(), int(n), int(k), pos)
	case tensor.Half, tensor.Bfloat16:
		topKRows(ctx, toF32(x), int(n), int(k), pos)
	case tensor.Int32:
		topKRows(ctx, x.I32(), int(n), int(k), pos)
	case tensor.Int64:
		topKRows(ctx, x.I64(), int(n), int(k), pos)
	case tensor.Int16:
		topKRows(ctx, x.I16(), int(n), int(k), pos)
	case tensor.Int8:
		topKRows(ctx, x.I8(), int(n), int(k), pos)
	case tensor.Uint8:
		topKRows(ctx, x.U8(), int(n), int(k), pos)
	case tensor.Uint16:
		topKRows(ctx, x.U16(), int(n), int(k), pos)
	case tensor.Uint32:
		topKRows(ctx, x.U32(), int(n), int(k), pos)
	case tensor.Uint64:
		topKRows(ctx, x.U64(), int(n), int(k), pos)
	default:
		return ctx.Errorf(status.Unimplemented, "TopKV2 of %v", x.DType)
	}
	for r := 0; r < rows; r++ {
		for j := 0; j < int(k); j++ {
			p := pos[r*int(k)+j]
			copyElems(vals, r*int(k)+j, x, r*int(n)+int(p), 1)
			setInt(idx, r*int(k)+j, p)
		}
	}
	return nil
}

// before orders candidates: larger value first, then lower index.
func before[T num](a T, ia int, b T, ib int) bool {
	if a != b {
		return a > b
	}
	return ia < ib
}

// kHeap is a min-heap (by the before order) of the best k seen so far.
type kHeap[T num] struct {
	v   []T
	idx []int
}

func (h *kHeap[T]) Len() int { return len(h.idx) }
func (h *kHeap[T]) Less(i, j int) bool {
	return before(h.v[h.idx[j]], h.idx[j], h.v[h.idx[i]], h.idx[i])
}
func (h *kHeap[T]) Swap(i, j int) { h.idx[i], h.idx[j] = h.idx[j], h.idx[i] }
func (h *kHeap[T]) Push(x any)    { h.idx = append(h.idx, x.(int)) }
func (h *kHeap[T]) Pop() any {
	x := h.idx[len(h.idx)-1]
	h.idx = h.idx[:len(h.idx)-1]
	return x
}

func topKRows[T num](ctx *kernels.Context, x []T, n, k int, pos []int64) {
	rows := len(x) / n
	ctx.For(rows, float64(n)*4, kernels.StartLoop, func(lo, hi int) {
		for r := lo; r < hi; r++ {
			row := x[r*n : (r+1)*n]
			out := pos[r*k : (r+1)*k]
			switch {
			case k == 1:
				best := 0
				for i, v := range row {
					if before(v, i, row[best], best) {
						best = i
					}
				}
				out[0] = int64(best)
			case k*8 < n:
				h := &kHeap[T]{v: row, idx: make([]int, 0, k)}
				for i := range row {
					if h.Len() < k {
						heap.Push(h, i)
					} else if before(row[i], i, row[h.idx[0]], h.idx[0]) {
						h.idx[0] = i
						heap.Fix(h, 0)
					}
				}
				sort.Slice(h.idx, func(a, b int) bool { return before(row[h.idx[a]], h.idx[a], row[h.idx[b]], h.idx[b]) })
				for j, i := range h.idx {
					out[j] = int64(i)
				}
			default:
				ord := make([]int, n)
				for i := range ord {
					ord[i] = i
				}
				sort.Slice(ord, func(a, b int) bool { return before(row[ord[a]], ord[a], row[ord[b]], ord[b]) })
				for j := range out {
					out[j] = int64(ord[j])
				}
			}
		}
	})
}
