package cpu

import (
	"math"

	"mstream/graph"
	"mstream/kernels"
	"mstream/status"
	"mstream/tensor"
)

// The array ops beyond the first set: shape queries, Concat/Split/Unpack,
// Slice/Tile/Pad/MirrorPad/ReverseV2/BroadcastTo (one per-dimension index
// map copier), GatherNd/ScatterNd, OneHot, Range, BroadcastArgs, Where,
// Bitcast, MatrixBandPart, Unique, InvertPermutation.

func init() {
	reg("ShapeN", nil, []string{"output"}, fn(shapeN))
	reg("Size", nil, []string{"output"}, fn(sizeOp))
	reg("Rank", nil, []string{"output"}, fn(rankOp))
	reg("Concat", nil, []string{"concat_dim"}, fn(func(ctx *kernels.Context) error { return concat(ctx, true) }))
	reg("Split", nil, []string{"split_dim"}, fn(split))
	reg("SplitV", nil, []string{"size_splits", "split_dim"}, fn(splitV))
	reg("Unpack", nil, nil, func(n *graph.Node) (kernels.Kernel, error) {
		axis := attrInt(n, "axis", 0)
		return kernels.KernelFunc(func(ctx *kernels.Context) error { return unpack(ctx, axis) }), nil
	})
	reg("Slice", nil, []string{"begin", "size"}, fn(sliceOp))
	reg("Tile", nil, []string{"multiples"}, fn(tile))
	reg("Pad", nil, []string{"paddings"}, fn(func(ctx *kernels.Context) error { return pad(ctx, nil) }))
	reg("PadV2", nil, []string{"paddings"}, fn(func(ctx *kernels.Context) error { return pad(ctx, ctx.Input(2)) }))
	reg("MirrorPad", nil, []string{"paddings"}, func(n *graph.Node) (kernels.Kernel, error) {
		mode := attrString(n, "mode", "")
		if mode != "REFLECT" && mode != "SYMMETRIC" {
			return nil, nodeErr(n, status.InvalidArgument, "mode must be either REFLECT or SYMMETRIC, not %q", mode)
		}
		return kernels.KernelFunc(func(ctx *kernels.Context) error { return mirrorPad(ctx, mode == "REFLECT") }), nil
	})
	reg("ReverseV2", nil, []string{"axis"}, fn(reverseV2))
	reg("BroadcastTo", nil, []string{"shape"}, fn(broadcastTo))
	reg("BroadcastArgs", nil, []string{"s0", "s1", "r0"}, fn(broadcastArgs))
	kernels.Register(kernels.Def{Op: "GatherNd", Device: kernels.CPU, Factory: fn(gatherNd)})
	reg("ScatterNd", numericTypes, []string{"shape"}, fn(scatterNd))
	reg("OneHot", nil, []string{"depth"}, func(n *graph.Node) (kernels.Kernel, error) {
		axis := attrInt(n, "axis", -1)
		return kernels.KernelFunc(func(ctx *kernels.Context) error { return oneHot(ctx, axis) }), nil
	})
	kernels.Register(kernels.Def{Op: "Range", Device: kernels.CPU, TypeAttr: "Tidx",
		Types: []tensor.DType{tensor.Float, tensor.Double, tensor.Half, tensor.Bfloat16, tensor.Int8, tensor.Int16,
			tensor.Int32, tensor.Int64, tensor.Uint16, tensor.Uint32},
		HostMemory: []string{"start", "limit", "delta", "output"}, Factory: fn(rangeOp)})
	reg("Where", nil, nil, fn(where))
	reg("Bitcast", nil, nil, fn(bitcast))
	reg("MatrixBandPart", nil, []string{"num_lower", "num_upper"}, fn(matrixBandPart))
	reg("Unique", nil, nil, fn(unique))
	reg("InvertPermutation", []tensor.DType{tensor.Int32, tensor.Int64}, []string{"x", "y"}, fn(invertPermutation))
}

// nodeErr is ctx.Errorf for factories, which have no Context yet.
func nodeErr(n *graph.Node, code status.Code, format string, args ...any) error {
	return kernels.NodeError(code, n, sprintf(format, args...))
}

func setInt(t *tensor.Tensor, i int, v int64) {
	switch t.DType {
	case tensor.Int32:
		t.I32()[i] = int32(v)
	case tensor.Int64:
		t.I64()[i] = v
	case tensor.Int16:
		t.I16()[i] = int16(v)
	case tensor.Int8:
		t.I8()[i] = int8(v)
	case tensor.Uint8:
		t.U8()[i] = uint8(v)
	}
}

// writeShape stores dims into an int32 or int64 output, failing when a
// dim does not fit int32.
func writeShape(ctx *kernels.Context, o *tensor.Tensor, dims []int64) error {
	for i, d := range dims {
		if o.DType == tensor.Int32 && d > math.MaxInt32 {
			return ctx.Errorf(status.InvalidArgument, "dimension %d (%d) does not fit in int32; use out_type int64", i, d)
		}
		setInt(o, i, d)
	}
	return nil
}

func shapeN(ctx *kernels.Context) error {
	for i, in := range ctx.Inputs {
		o, err := ctx.Allocate(i, tensor.Shape{int64(len(in.Shape))})
		if err != nil {
			return err
		}
		if err := writeShape(ctx, o, in.Shape); err != nil {
			return err
		}
	}
	return nil
}

func sizeOp(ctx *kernels.Context) error {
	o, err := ctx.Allocate(0, tensor.Shape{})
	if err != nil {
		return err
	}
	n := ctx.Input(0).NumElements()
	if o.DType == tensor.Int32 && n > math.MaxInt32 {
		return ctx.Errorf(status.InvalidArgument, "Number of elements was larger than representable by 32-bit output type")
	}
	setInt(o, 0, n)
	return nil
}

func rankOp(ctx *kernels.Context) error {
	o, err := ctx.Allocate(0, tensor.Shape{})
	if err != nil {
		return err
	}
	o.I32()[0] = int32(len(ctx.Input(0).Shape))
	return nil
}

func scalarInt(ctx *kernels.Context, i int, what string) (int64, error) {
	t := ctx.Input(i)
	v, n, err := hostInt(ctx, i, what)
	if err != nil {
		return 0, err
	}
	if len(t.Shape) != 0 && !(len(t.Shape) == 1 && n == 1) {
		return 0, ctx.Errorf(status.InvalidArgument, "%s must be a scalar, got shape %v", what, t.Shape)
	}
	if n != 1 {
		return 0, ctx.Errorf(status.InvalidArgument, "%s must be a scalar, got shape %v", what, t.Shape)
	}
	return v, nil
}

// outerInner splits shape around axis: the product of the dims before it
// and of the dims after it.
func outerInner(s tensor.Shape, axis int) (outer, inner int64) {
	outer, inner = 1, 1
	for _, d := range s[:axis] {
		outer *= d
	}
	for _, d := range s[axis+1:] {
		inner *= d
	}
	return
}

// splitAlong copies value into outputs of the given sizes along axis.
func splitAlong(ctx *kernels.Context, v *tensor.Tensor, axis int, sizes []int64) error {
	outer, inner := outerInner(v.Shape, axis)
	row := v.Shape[axis] * inner
	off := int64(0)
	for i, sz := range sizes {
		s := v.Shape.Clone()
		s[axis] = sz
		o, err := ctx.Allocate(i, s)
		if err != nil {
			return err
		}
		w := sz * inner
		for p := int64(0); p < outer && w > 0; p++ {
			copyElems(o, int(p*w), v, int(p*row+off), int(w))
		}
		off += w
	}
	return nil
}

func split(ctx *kernels.Context) error {
	ax, sizes, err := SplitArgs(ctx)
	if err != nil {
		return err
	}
	return splitAlong(ctx, ctx.Input(1), ax, sizes)
}

func splitV(ctx *kernels.Context) error {
	ax, sizes, err := SplitVArgs(ctx)
	if err != nil {
		return err
	}
	return splitAlong(ctx, ctx.Input(0), ax, sizes)
}

func unpack(ctx *kernels.Context, axis64 int64) error {
	v := ctx.Input(0)
	axis, s, err := UnpackArgs(ctx, axis64)
	if err != nil {
		return err
	}
	n := int64(len(ctx.Node.OutTypes))
	outer, inner := outerInner(v.Shape, axis)
	for i := int64(0); i < n; i++ {
		o, err := ctx.Allocate(int(i), s)
		if err != nil {
			return err
		}
		for p := int64(0); p < outer && inner > 0; p++ {
			copyElems(o, int(p*inner), v, int((p*n+i)*inner), int(inner))
		}
	}
	return nil
}

// mapCopy fills dst from src through one index map per dimension:
// dst[j0,...,jr] = src[m0[j0],...,mr[jr]], or the pad element (zero when
// pad is nil) where any map entry is -1. Runs of consecutive source
// indices in the last dimension are copied as blocks.
func mapCopy(ctx *kernels.Context, dst, src *tensor.Tensor, maps [][]int64, pad *tensor.Tensor) error {
	r := len(dst.Shape)
	if dst.NumElements() == 0 {
		return nil
	}
	if r == 0 {
		copyElems(dst, 0, src, 0, 1)
		return nil
	}
	sst := strides(src.Shape)
	// Runs of the last dimension: [dstStart, srcStart, len], srcStart -1
	// for padding.
	type run struct{ d, s, n int64 }
	last := maps[r-1]
	// Up to one run per output column: counted first, so that their
	// memory comes from checked scratch.
	nRuns := int64(0)
	for j := 0; j < len(last); j++ {
		if j == 0 || (last[j] < 0) != (last[j-1] < 0) || (last[j] >= 0 && last[j] != last[j-1]+1) {
			nRuns++
		}
	}
	runs, err := kernels.Scratch[run](ctx, nRuns)
	if err != nil {
		return err
	}
	runs = runs[:0]
	for j := 0; j < len(last); {
		k := j + 1
		if last[j] < 0 {
			for k < len(last) && last[k] < 0 {
				k++
			}
		} else {
			for k < len(last) && last[k] == last[k-1]+1 {
				k++
			}
		}
		s := last[j]
		if s >= 0 {
			s *= sst[r-1]
		}
		runs = append(runs, run{int64(j), s, int64(k - j)})
		j = k
	}
	width := int64(len(last))
	// Output buffers may be recycled, so padding is always written: zero
	// bytes (empty strings) without a pad value.
	es := int64(dst.DType.Size())
	fillPad := func(at, n int64) {
		if pad == nil {
			if dst.DType == tensor.String {
				for i := at; i < at+n; i++ {
					dst.Strs[i] = nil
				}
				return
			}
			clear(dst.Buf[at*es : (at+n)*es])
			return
		}
		for i := int64(0); i < n; i++ {
			copyElems(dst, int(at+i), pad, 0, 1)
		}
	}
	var rec func(d int, dOff, sOff int64, padded bool)
	rec = func(d int, dOff, sOff int64, padded bool) {
		if d == r-1 {
			if padded {
				fillPad(dOff, width)
				return
			}
			for _, rn := range runs {
				if rn.s < 0 {
					fillPad(dOff+rn.d, rn.n)
				} else {
					copyElems(dst, int(dOff+rn.d), src, int(sOff+rn.s), int(rn.n))
				}
			}
			return
		}
		blk := int64(1)
		for _, x := range dst.Shape[d+1:] {
			blk *= x
		}
		for j, m := range maps[d] {
			if m < 0 || padded {
				rec(d+1, dOff+int64(j)*blk, 0, true)
				continue
			}
			rec(d+1, dOff+int64(j)*blk, sOff+m*sst[d], false)
		}
	}
	rec(0, 0, 0, false)
	return nil
}

// indexMaps returns a zeroed index map per dimension of o (the source index
// of each output index, for mapCopy), made after o was allocated and from
// checked scratch: a dimension can come from a feed, so its map must never
// be the first thing sized by it. An empty output needs no maps.
func indexMaps(ctx *kernels.Context, o *tensor.Tensor) ([][]int64, error) {
	maps := make([][]int64, len(o.Shape))
	if o.NumElements() == 0 {
		return maps, nil
	}
	for i, d := range o.Shape {
		m, err := kernels.Scratch[int64](ctx, d)
		if err != nil {
			return nil, err
		}
		maps[i] = m
	}
	return maps, nil
}

func sliceOp(ctx *kernels.Context) error {
	in := ctx.Input(0)
	begin, out, err := SliceArgs(ctx)
	if err != nil {
		return err
	}
	o, err := ctx.Allocate(0, out)
	if err != nil {
		return err
	}
	maps, err := indexMaps(ctx, o)
	if err != nil {
		return err
	}
	for i := range maps {
		for j := range maps[i] {
			maps[i][j] = begin[i] + int64(j)
		}
	}
	return mapCopy(ctx, o, in, maps, nil)
}

func tile(ctx *kernels.Context) error {
	in := ctx.Input(0)
	_, out, err := TileArgs(ctx)
	if err != nil {
		return err
	}
	o, err := ctx.Allocate(0, out)
	if err != nil {
		return err
	}
	maps, err := indexMaps(ctx, o)
	if err != nil {
		return err
	}
	for i := range maps {
		for j := range maps[i] {
			maps[i][j] = int64(j) % in.Shape[i]
		}
	}
	return mapCopy(ctx, o, in, maps, nil)
}

// paddings reads a [rank, 2] paddings input.
func paddings(ctx *kernels.Context, i, rank int) ([]int64, error) {
	p := ctx.Input(i)
	v, err := hostInts(ctx, i, "paddings")
	if err != nil {
		return nil, err
	}
	if len(p.Shape) != 2 || p.Shape[1] != 2 {
		return nil, ctx.Errorf(status.InvalidArgument, "paddings must be a matrix with 2 columns: %v", p.Shape)
	}
	if p.Shape[0] != int64(rank) {
		return nil, ctx.Errorf(status.InvalidArgument, "The first dimension of paddings must be the rank of inputs%v, input rank %d", p.Shape, rank)
	}
	for k := 0; k < len(v); k += 2 {
		if v[k] < 0 || v[k+1] < 0 {
			return nil, ctx.Errorf(status.InvalidArgument, "Paddings must be non-negative: %d %d", v[k], v[k+1])
		}
	}
	return v, nil
}

func pad(ctx *kernels.Context, cv *tensor.Tensor) error {
	in := ctx.Input(0)
	p, out, err := PadArgs(ctx, cv)
	if err != nil {
		return err
	}
	o, err := ctx.Allocate(0, out)
	if err != nil {
		return err
	}
	if len(out) == 0 {
		copyElems(o, 0, in, 0, 1)
		return nil
	}
	maps, err := indexMaps(ctx, o)
	if err != nil {
		return err
	}
	for i := range maps {
		for j := range maps[i] {
			s := int64(j) - p[2*i]
			if s < 0 || s >= in.Shape[i] {
				s = -1
			}
			maps[i][j] = s
		}
	}
	return mapCopy(ctx, o, in, maps, cv)
}

func mirrorPad(ctx *kernels.Context, reflect bool) error {
	in := ctx.Input(0)
	p, out, err := MirrorPadArgs(ctx, reflect)
	if err != nil {
		return err
	}
	off := int64(0)
	if reflect {
		off = 1
	}
	o, err := ctx.Allocate(0, out)
	if err != nil {
		return err
	}
	maps, err := indexMaps(ctx, o)
	if err != nil {
		return err
	}
	for i := range maps {
		d := in.Shape[i]
		for j := range maps[i] {
			s := int64(j) - p[2*i]
			if s < 0 {
				s = -s - 1 + off
			} else if s >= d {
				s = 2*d - s - 1 - off
			}
			maps[i][j] = s
		}
	}
	return mapCopy(ctx, o, in, maps, nil)
}

func reverseV2(ctx *kernels.Context) error {
	in := ctx.Input(0)
	rev, err := ReverseArgs(ctx)
	if err != nil {
		return err
	}
	o, err := ctx.Allocate(0, in.Shape)
	if err != nil {
		return err
	}
	maps, err := indexMaps(ctx, o)
	if err != nil {
		return err
	}
	for i := range maps {
		d := in.Shape[i]
		for j := range maps[i] {
			if rev[i] {
				maps[i][j] = d - 1 - int64(j)
			} else {
				maps[i][j] = int64(j)
			}
		}
	}
	return mapCopy(ctx, o, in, maps, nil)
}

func broadcastTo(ctx *kernels.Context) error {
	in := ctx.Input(0)
	out, err := BroadcastToArgs(ctx)
	if err != nil {
		return err
	}
	r, ri := len(out), len(in.Shape)
	o, err := ctx.Allocate(0, out)
	if err != nil {
		return err
	}
	maps, err := indexMaps(ctx, o)
	if err != nil {
		return err
	}
	for i := range maps {
		if k := i - (r - ri); k >= 0 && in.Shape[k] != 1 {
			for j := range maps[i] {
				maps[i][j] = int64(j)
			}
		}
	}
	// The source is viewed with the output's rank (leading 1s).
	view := in.Reshaped(append(make(tensor.Shape, r-ri), in.Shape...))
	for i := 0; i < r-ri; i++ {
		view.Shape[i] = 1
	}
	return mapCopy(ctx, o, view, maps, nil)
}

func broadcastArgs(ctx *kernels.Context) error {
	var sh [2][]int64
	for i := 0; i < 2; i++ {
		if len(ctx.Input(i).Shape) != 1 {
			return ctx.Errorf(status.InvalidArgument, "In[%d] must be a vector. %v", i, ctx.Input(i).Shape)
		}
		var err error
		if sh[i], err = hostInts(ctx, i, "shape"); err != nil {
			return err
		}
	}
	bc, ok := broadcastShapes(sh[0], sh[1])
	if !ok {
		return ctx.Errorf(status.InvalidArgument, "Incompatible shapes: %v vs. %v", tensor.Shape(sh[0]), tensor.Shape(sh[1]))
	}
	o, err := ctx.Allocate(0, tensor.Shape{int64(len(bc.out))})
	if err != nil {
		return err
	}
	for i, d := range bc.out {
		setInt(o, i, d)
	}
	return nil
}

// gatherNd follows TF's GatherNd: indices [..., K] address slices of
// params of shape params.shape[K:].
func gatherNd(ctx *kernels.Context) error {
	params, it := ctx.Input(0), ctx.Input(1)
	idx, err := hostInts(ctx, 1, "indices")
	if err != nil {
		return err
	}
	k, out, err := GatherNdArgs(ctx)
	if err != nil {
		return err
	}
	lead := it.Shape[:len(it.Shape)-1]
	nSlices := lead.NumElements()
	sliceSize := tensor.Shape(params.Shape[k:]).NumElements()
	pst := strides(params.Shape)
	offs := make([]int64, nSlices)
	for s := int64(0); s < nSlices; s++ {
		off := int64(0)
		for j := int64(0); j < k; j++ {
			v := idx[s*k+j]
			if v < 0 || v >= params.Shape[j] {
				return ctx.Errorf(status.InvalidArgument, "indices%s = %v does not index into param shape %v", idxPos(lead, int(s)), fmtInts(idx[s*k:(s+1)*k]), params.Shape)
			}
			off += v * pst[j]
		}
		offs[s] = off
	}
	o, err := ctx.Allocate(0, out)
	if err != nil {
		return err
	}
	if sliceSize == 0 {
		return nil
	}
	for s, off := range offs {
		copyElems(o, s*int(sliceSize), params, int(off), int(sliceSize))
	}
	return nil
}

func fmtInts(v []int64) string {
	out := "["
	for i, x := range v {
		if i > 0 {
			out += ", "
		}
		out += sprintf("%d", x)
	}
	return out + "]"
}

func scatterNd(ctx *kernels.Context) error {
	shape, k, nSlices, sliceSize, err := ScatterNdArgs(ctx)
	if err != nil {
		return err
	}
	idx, err := hostInts(ctx, 0, "indices")
	if err != nil {
		return err
	}
	upd := ctx.Input(1)
	lead := ctx.Input(0).Shape[:len(ctx.Input(0).Shape)-1]
	o, err := ctx.Allocate(0, shape)
	if err != nil {
		return err
	}
	clear(o.Buf) // the sum starts from zeros; buffers may be recycled
	st := strides(shape)
	offs := make([]int64, nSlices)
	for s := int64(0); s < nSlices; s++ {
		off := int64(0)
		for j := int64(0); j < k; j++ {
			v := idx[s*k+j]
			if v < 0 || v >= shape[j] {
				return ctx.Errorf(status.InvalidArgument, "indices%s = %v does not index into shape %v", idxPos(lead, int(s)), fmtInts(idx[s*k:(s+1)*k]), shape)
			}
			off += v * st[j]
		}
		offs[s] = off
	}
	switch o.DType {
	case tensor.Float:
		scatterAdd(o.F32(), upd.F32(), offs, sliceSize)
	case tensor.Double:
		scatterAdd(o.F64(), upd.F64(), offs, sliceSize)
	case tensor.Half, tensor.Bfloat16:
		acc, err := kernels.Scratch[float32](ctx, o.NumElements())
		if err != nil {
			return err
		}
		scatterAdd(acc, toF32(upd), offs, sliceSize)
		storeF32(o, acc)
	case tensor.Int32:
		scatterAdd(o.I32(), upd.I32(), offs, sliceSize)
	case tensor.Int64:
		scatterAdd(o.I64(), upd.I64(), offs, sliceSize)
	case tensor.Int16:
		scatterAdd(o.I16(), upd.I16(), offs, sliceSize)
	case tensor.Int8:
		scatterAdd(o.I8(), upd.I8(), offs, sliceSize)
	case tensor.Uint8:
		scatterAdd(o.U8(), upd.U8(), offs, sliceSize)
	case tensor.Uint16:
		scatterAdd(o.U16(), upd.U16(), offs, sliceSize)
	case tensor.Uint32:
		scatterAdd(o.U32(), upd.U32(), offs, sliceSize)
	case tensor.Uint64:
		scatterAdd(o.U64(), upd.U64(), offs, sliceSize)
	default:
		return ctx.Errorf(status.Unimplemented, "dtype %v", o.DType)
	}
	return nil
}

func scatterAdd[T num](o, u []T, offs []int64, n int64) {
	for s, off := range offs {
		dst, src := o[off:off+n], u[int64(s)*n:int64(s+1)*n]
		for i, v := range src {
			dst[i] += v
		}
	}
}

func oneHot(ctx *kernels.Context, axis int64) error {
	it := ctx.Input(0)
	idx, err := hostInts8(ctx, 0)
	if err != nil {
		return err
	}
	axis, depth, out, err := OneHotArgs(ctx, axis)
	if err != nil {
		return err
	}
	on, off := ctx.Input(2), ctx.Input(3)
	o, err := ctx.Allocate(0, out)
	if err != nil {
		return err
	}
	prefix, suffix := int64(1), int64(1)
	for _, d := range it.Shape[:axis] {
		prefix *= d
	}
	for _, d := range it.Shape[axis:] {
		suffix *= d
	}
	for p := int64(0); p < prefix; p++ {
		for d := int64(0); d < depth; d++ {
			for s := int64(0); s < suffix; s++ {
				v := off
				if idx[p*suffix+s] == d {
					v = on
				}
				copyElems(o, int((p*depth+d)*suffix+s), v, 0, 1)
			}
		}
	}
	return nil
}

// hostInts8 reads an index input of any integer dtype OneHot allows.
func hostInts8(ctx *kernels.Context, i int) ([]int64, error) {
	t := ctx.Input(i)
	switch t.DType {
	case tensor.Uint8, tensor.Int8, tensor.Int16:
		v, err := kernels.Scratch[int64](ctx, t.NumElements())
		if err != nil {
			return nil, err
		}
		for k := range v {
			v[k] = int64(t.ElementF64(k))
		}
		return v, nil
	}
	return hostInts(ctx, i, "indices")
}

func rangeOp(ctx *kernels.Context) error {
	var v [3]float64
	for i, what := range []string{"start", "limit", "delta"} {
		t := ctx.Input(i)
		if len(t.Shape) != 0 {
			return ctx.Errorf(status.InvalidArgument, "%s must be a scalar, not shape %v", what, t.Shape)
		}
		v[i] = t.ElementF64(0)
	}
	start, limit, delta := v[0], v[1], v[2]
	if delta == 0 {
		return ctx.Errorf(status.InvalidArgument, "Requires delta != 0: %v", delta)
	}
	if delta > 0 && start > limit {
		return ctx.Errorf(status.InvalidArgument, "Requires start <= limit when delta > 0: %v/%v", start, limit)
	}
	if delta < 0 && start < limit {
		return ctx.Errorf(status.InvalidArgument, "Requires start >= limit when delta < 0: %v/%v", start, limit)
	}
	dt := ctx.Node.OutTypes[0]
	var n int64
	if dt.IsInteger() {
		// Integer division rounding up, as TF computes it for integers.
		s, l, d := int64(start), int64(limit), int64(delta)
		if d > 0 {
			n = (l - s + d - 1) / d
		} else {
			n = (s - l - d - 1) / -d
		}
	} else {
		f := math.Ceil(math.Abs((limit - start) / delta))
		if f > 1<<40 || math.IsNaN(f) {
			return ctx.Errorf(status.InvalidArgument, "Requires ((limit - start) / delta) <= %d", int64(1)<<40)
		}
		n = int64(f)
	}
	o, err := ctx.Allocate(0, tensor.Shape{n})
	if err != nil {
		return err
	}
	switch dt {
	case tensor.Float:
		s, d := float32(start), float32(delta)
		for i := range o.F32() {
			o.F32()[i] = s + float32(i)*d
		}
	case tensor.Double:
		for i := range o.F64() {
			o.F64()[i] = start + float64(i)*delta
		}
	case tensor.Half, tensor.Bfloat16:
		vals := make([]float32, n)
		s, d := float32(start), float32(delta)
		for i := range vals {
			vals[i] = s + float32(i)*d
		}
		storeF32(o, vals)
	default:
		s, d := int64(start), int64(delta)
		for i := int64(0); i < n; i++ {
			setIntAny(o, int(i), s+i*d)
		}
	}
	return nil
}

func setIntAny(t *tensor.Tensor, i int, v int64) {
	switch t.DType {
	case tensor.Uint16:
		t.U16()[i] = uint16(v)
	case tensor.Uint32:
		t.U32()[i] = uint32(v)
	case tensor.Uint64:
		t.U64()[i] = uint64(v)
	default:
		setInt(t, i, v)
	}
}

// nonzero reports whether element i of t is true / nonzero (NaN counts,
// -0.0 does not, as in C).
func nonzero(t *tensor.Tensor, i int) bool {
	switch t.DType {
	case tensor.Float, tensor.Double, tensor.Half, tensor.Bfloat16:
		return t.ElementF64(i) != 0
	case tensor.Complex64:
		return t.C64()[i] != 0
	case tensor.Complex128:
		return t.C128()[i] != 0
	}
	es := t.DType.Size()
	for _, b := range t.Buf[i*es : (i+1)*es] {
		if b != 0 {
			return true
		}
	}
	return false
}

func where(ctx *kernels.Context) error {
	in := ctx.Input(0)
	if in.DType == tensor.String {
		return ctx.Errorf(status.InvalidArgument, "Where does not take string inputs")
	}
	n := int(in.NumElements())
	var hits []int
	for i := 0; i < n; i++ {
		if nonzero(in, i) {
			hits = append(hits, i)
		}
	}
	r := len(in.Shape)
	o, err := ctx.Allocate(0, tensor.Shape{int64(len(hits)), int64(r)})
	if err != nil {
		return err
	}
	st := strides(in.Shape)
	out := o.I64()
	for k, h := range hits {
		f := int64(h)
		for d := 0; d < r; d++ {
			out[k*r+d] = f / st[d]
			f %= st[d]
		}
	}
	return nil
}

func bitcast(ctx *kernels.Context) error {
	in := ctx.Input(0)
	to := ctx.Node.OutTypes[0]
	if !in.DType.Fixed() || !to.Fixed() || in.DType == tensor.Bool || to == tensor.Bool {
		return ctx.Errorf(status.InvalidArgument, "Cannot bitcast from %v to %v", in.DType, to)
	}
	a, b := int64(in.DType.Size()), int64(to.Size())
	s := in.Shape.Clone()
	switch {
	case a == b:
	case a > b:
		s = append(s, a/b)
	default:
		if len(s) == 0 || s[len(s)-1] != b/a {
			return ctx.Errorf(status.InvalidArgument, "Cannot bitcast from %v to %v: shape %v", in.DType, to, in.Shape)
		}
		s = s[:len(s)-1]
	}
	ctx.SetOutput(0, &tensor.Tensor{DType: to, Shape: s, Buf: in.Buf})
	return nil
}

func matrixBandPart(ctx *kernels.Context) error {
	in := ctx.Input(0)
	lo, hi, err := MatrixBandPartArgs(ctx)
	if err != nil {
		return err
	}
	m, n := in.Shape[len(in.Shape)-2], in.Shape[len(in.Shape)-1]
	o, err := ctx.Allocate(0, in.Shape)
	if err != nil {
		return err
	}
	batch := in.NumElements()
	if batch == 0 {
		return nil
	}
	batch /= m * n
	zero := tensor.New(in.DType, tensor.Shape{})
	for b := int64(0); b < batch; b++ {
		for i := int64(0); i < m; i++ {
			for j := int64(0); j < n; j++ {
				k := int((b*m+i)*n + j)
				if (lo < 0 || i-j <= lo) && (hi < 0 || j-i <= hi) {
					copyElems(o, k, in, k, 1)
				} else {
					copyElems(o, k, zero, 0, 1)
				}
			}
		}
	}
	return nil
}

func unique(ctx *kernels.Context) error {
	x := ctx.Input(0)
	if len(x.Shape) != 1 {
		return ctx.Errorf(status.InvalidArgument, "unique expects a 1D vector.")
	}
	n := int(x.Shape[0])
	first := make([]int, 0, n) // positions of the first occurrences
	idx := make([]int64, n)
	switch x.DType {
	case tensor.Float:
		uniqueBy(x.F32(), &first, idx)
	case tensor.Double:
		uniqueBy(x.F64(), &first, idx)
	case tensor.Half, tensor.Bfloat16:
		uniqueBy(toF32(x), &first, idx)
	case tensor.String:
		s := make([]string, n)
		for i, b := range x.Strs {
			s[i] = string(b)
		}
		uniqueBy(s, &first, idx)
	default:
		if !x.DType.Fixed() {
			return ctx.Errorf(status.Unimplemented, "Unique of %v", x.DType)
		}
		es := x.DType.Size()
		s := make([]string, n)
		for i := range s {
			s[i] = string(x.Buf[i*es : (i+1)*es])
		}
		uniqueBy(s, &first, idx)
	}
	y, err := ctx.Allocate(0, tensor.Shape{int64(len(first))})
	if err != nil {
		return err
	}
	for k, i := range first {
		copyElems(y, k, x, i, 1)
	}
	o, err := ctx.Allocate(1, tensor.Shape{int64(n)})
	if err != nil {
		return err
	}
	for i, v := range idx {
		setInt(o, i, v)
	}
	return nil
}

// uniqueBy numbers the distinct values of v in order of first occurrence.
// Floats compare by value (NaN never equals itself, so each NaN is its own
// entry; -0 equals 0), as TF's hash map does.
func uniqueBy[T comparable](v []T, first *[]int, idx []int64) {
	seen := make(map[T]int64, len(v))
	for i, x := range v {
		k, ok := seen[x]
		if !ok {
			k = int64(len(*first))
			seen[x] = k
			*first = append(*first, i)
		}
		idx[i] = k
	}
}

func invertPermutation(ctx *kernels.Context) error {
	x := ctx.Input(0)
	if len(x.Shape) != 1 {
		return ctx.Errorf(status.InvalidArgument, "invert_permutation expects a 1D vector.")
	}
	v, err := hostInts(ctx, 0, "x")
	if err != nil {
		return err
	}
	n := int64(len(v))
	if x.DType == tensor.Int32 && n > math.MaxInt32 {
		return ctx.Errorf(status.InvalidArgument, "permutation of %d elements does not fit int32", n)
	}
	o, err := ctx.Allocate(0, x.Shape)
	if err != nil {
		return err
	}
	seen := make([]bool, n)
	for i, d := range v {
		if d < 0 || d >= n {
			return ctx.Errorf(status.InvalidArgument, "%d is not between 0 and %d", d, n)
		}
		if seen[d] {
			return ctx.Errorf(status.InvalidArgument, "%d is duplicated in the input.", d)
		}
		seen[d] = true
		setInt(o, int(d), int64(i))
	}
	return nil
}
