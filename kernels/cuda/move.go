package cuda

import (
	cu "mstream/device/cuda"
	"mstream/graph"
	"mstream/kernels"
	"mstream/kernels/cpu"
	"mstream/status"
	"mstream/tensor"
)

// Array movement (src/move.cu): one strided-map kernel per element size
// serves Slice, StridedSlice, Tile, Pad, PadV2, MirrorPad, ReverseV2,
// BroadcastTo; Pack, Concat and ConcatV2, and Split, SplitV and Unpack,
// move column blocks (cols: array.cu's concat and split kernels, up to 28
// blocks a launch); OneHot and GatherNd have their own. Every op validates through kernels/cpu's exported argument checks
// (cpu.SliceArgs, cpu.ConcatArgs, cpu.StridedSliceArgs, ...), so codes and
// messages are the CPU's by construction.

func init() {
	reg("Slice", "T", fixedTypes, []string{"begin", "size"}, fn(sliceGPU))
	reg("Tile", "T", fixedTypes, []string{"multiples"}, fn(tileGPU))
	reg("Pad", "T", fixedTypes, []string{"paddings"}, fn(func(k kctx) error { return padGPU(k, false) }))
	reg("PadV2", "T", fixedTypes, []string{"paddings"}, fn(func(k kctx) error { return padGPU(k, true) }))
	reg("MirrorPad", "T", fixedTypes, []string{"paddings"}, func(n *graph.Node) (kernels.Kernel, error) {
		mode := ""
		if a := n.Attrs["mode"]; a != nil {
			mode = string(a.GetS())
		}
		if mode != "REFLECT" && mode != "SYMMETRIC" {
			return nil, status.Errorf(status.InvalidArgument, "node '%s': MirrorPad mode must be REFLECT or SYMMETRIC, got %q", n.Name, mode)
		}
		return fn(func(k kctx) error { return mirrorPadGPU(k, mode == "REFLECT") })(n)
	})
	reg("ReverseV2", "T", fixedTypes, []string{"axis"}, fn(reverseGPU))
	reg("BroadcastTo", "T", fixedTypes, []string{"shape"}, fn(broadcastToGPU))
	reg("Split", "T", fixedTypes, []string{"split_dim"}, fn(splitGPU))
	reg("SplitV", "T", fixedTypes, []string{"size_splits", "split_dim"}, fn(splitVGPU))
	reg("Unpack", "T", fixedTypes, nil, func(n *graph.Node) (kernels.Kernel, error) {
		axis := int64(0)
		if a := n.Attrs["axis"]; a != nil {
			axis = a.GetI()
		}
		return fn(func(k kctx) error { return unpackGPU(k, axis) })(n)
	})
	reg("Pack", "T", fixedTypes, nil, func(n *graph.Node) (kernels.Kernel, error) {
		axis := int64(0)
		if a := n.Attrs["axis"]; a != nil {
			axis = a.GetI()
		}
		return fn(func(k kctx) error { return packGPU(k, axis) })(n)
	})
	reg("Concat", "T", fixedTypes, []string{"concat_dim"}, fn(func(k kctx) error { return concatGPU(k, true) }))
	reg("StridedSlice", "T", fixedTypes, []string{"begin", "end", "strides"}, func(n *graph.Node) (kernels.Kernel, error) {
		m := cpu.ParseStridedSliceMasks(n)
		return fn(func(k kctx) error { return stridedSliceGPU(k, m) })(n)
	})
	reg("OneHot", "T", fixedTypes, []string{"depth"}, func(n *graph.Node) (kernels.Kernel, error) {
		axis := int64(-1)
		if a := n.Attrs["axis"]; a != nil {
			axis = a.GetI()
		}
		return fn(func(k kctx) error { return oneHotGPU(k, axis) })(n)
	})
	reg("GatherNd", "Tparams", fixedTypes, nil, fn(gatherNdGPU))
}

// mdim is one output dim of a strided map (see move.cu): the input index
// is start + j*step, then mod, mirror or a bounds check against lim-1.
type mdim struct {
	out, istr, start, step, mod, lim int64
	mirror                           int64 // 0, 1 symmetric, 2 reflect
}

func (d mdim) plain() bool { return d.mod == 0 && d.lim == 0 && d.mirror == 0 }

// rowStrides are the element strides of a row-major shape.
func rowStrides(s tensor.Shape) []int64 {
	st := make([]int64, len(s))
	p := int64(1)
	for i := len(s) - 1; i >= 0; i-- {
		st[i] = p
		p *= s[i]
	}
	return st
}

// moveLaunch runs move_<size> from x into o through dims (one per output
// dim, outermost first); pad is PadV2's value tensor or nil.
func moveLaunch(k kctx, o, x, pad *tensor.Tensor, dims []mdim) error {
	n := o.NumElements()
	if n == 0 {
		return nil
	}
	// Fold plain dims' starts into the base and their steps into the
	// stride, drop size-1 plain dims, merge contiguous plain neighbours.
	base := int64(0)
	var ds []mdim
	for _, d := range dims {
		if d.plain() {
			base += d.start * d.istr
			d.istr *= d.step
			d.start, d.step = 0, 1
			if d.out == 1 {
				continue
			}
			if j := len(ds) - 1; j >= 0 && ds[j].plain() && ds[j].istr == d.istr*d.out {
				ds[j].out *= d.out
				ds[j].istr = d.istr
				continue
			}
		}
		ds = append(ds, d)
	}
	if len(ds) > 8 {
		return k.Errorf(status.Unimplemented, "%d dims after merging (at most 8 on the GPU)", len(ds))
	}
	if len(ds) == 1 && ds[0].plain() && ds[0].istr == 1 {
		es := uint64(o.DType.Size())
		return k.d2d(ptr(o), ptr(x)+uint64(base)*es, uint64(n)*es)
	}
	meta := make([]int64, 2+6*8)
	meta[0], meta[1] = int64(len(ds)), base
	var mirror int64
	for i, d := range ds {
		meta[2+i], meta[10+i], meta[18+i], meta[26+i], meta[34+i], meta[42+i] = d.out, d.istr, d.start, d.step, d.mod, d.lim
		mirror |= d.mirror << (2 * i)
	}
	var pp uint64
	if pad != nil {
		pp = ptr(pad)
	}
	var args cu.Args
	args.Ptr(ptr(o)).Ptr(ptr(x)).Ptr(pp).I64(n).I64s(meta...).I64(mirror)
	return k.launchN(moves, "move_"+sizeName(o.DType), n, &args)
}

// plainDims maps an output of shape out onto x with per-dim starts and
// steps (nil steps: 1).
func plainDims(x *tensor.Tensor, out tensor.Shape, start, step []int64) []mdim {
	st := rowStrides(x.Shape)
	dims := make([]mdim, len(out))
	for i := range out {
		s := int64(1)
		if step != nil {
			s = step[i]
		}
		dims[i] = mdim{out: out[i], istr: st[i], start: start[i], step: s}
	}
	return dims
}

func sliceGPU(k kctx) error {
	in := k.Input(0)
	begin, out, err := cpu.SliceArgs(k.Context)
	if err != nil {
		return err
	}
	o, err := k.Allocate(0, out)
	if err != nil {
		return err
	}
	return moveLaunch(k, o, in, nil, plainDims(in, out, begin, nil))
}

func tileGPU(k kctx) error {
	in := k.Input(0)
	m, out, err := cpu.TileArgs(k.Context)
	if err != nil {
		return err
	}
	o, err := k.Allocate(0, out)
	if err != nil {
		return err
	}
	dims := plainDims(in, out, make([]int64, len(out)), nil)
	for i := range dims {
		if m[i] > 1 {
			dims[i].mod = in.Shape[i]
		}
	}
	return moveLaunch(k, o, in, nil, dims)
}

func padGPU(k kctx, v2 bool) error {
	var cv *tensor.Tensor
	if v2 {
		cv = k.Input(2)
	}
	p, out, err := cpu.PadArgs(k.Context, cv)
	if err != nil {
		return err
	}
	return padLaunch(k, p, out, cv, 0)
}

func mirrorPadGPU(k kctx, reflect bool) error {
	p, out, err := cpu.MirrorPadArgs(k.Context, reflect)
	if err != nil {
		return err
	}
	mode := int64(1)
	if reflect {
		mode = 2
	}
	return padLaunch(k, p, out, nil, mode)
}

// padLaunch writes input 0 padded by p (before and after, per dim) into
// an output of shape out: the padding is cv (nil: zeros) where mirror is
// 0, else the input mirrored (1 symmetric, 2 reflect).
func padLaunch(k kctx, p []int64, out tensor.Shape, cv *tensor.Tensor, mirror int64) error {
	in := k.Input(0)
	start := make([]int64, len(out))
	for i := range start {
		start[i] = -p[2*i]
	}
	o, err := k.Allocate(0, out)
	if err != nil {
		return err
	}
	dims := plainDims(in, out, start, nil)
	for i := range dims {
		if p[2*i] != 0 || p[2*i+1] != 0 {
			dims[i].lim, dims[i].mirror = in.Shape[i]+1, mirror
		}
	}
	return moveLaunch(k, o, in, cv, dims)
}

func reverseGPU(k kctx) error {
	in := k.Input(0)
	rev, err := cpu.ReverseArgs(k.Context)
	if err != nil {
		return err
	}
	start, step := make([]int64, len(rev)), make([]int64, len(rev))
	for i, r := range rev {
		step[i] = 1
		if r {
			start[i], step[i] = in.Shape[i]-1, -1
		}
	}
	o, err := k.Allocate(0, in.Shape)
	if err != nil {
		return err
	}
	return moveLaunch(k, o, in, nil, plainDims(in, in.Shape, start, step))
}

func broadcastToGPU(k kctx) error {
	in := k.Input(0)
	out, err := cpu.BroadcastToArgs(k.Context)
	if err != nil {
		return err
	}
	r, ri := len(out), len(in.Shape)
	st := rowStrides(in.Shape)
	md := make([]mdim, r)
	for i := range md {
		s := int64(0)
		if j := i - (r - ri); j >= 0 && in.Shape[j] != 1 {
			s = st[j]
		}
		md[i] = mdim{out: out[i], istr: s, step: 1}
	}
	o, err := k.Allocate(0, out)
	if err != nil {
		return err
	}
	return moveLaunch(k, o, in, nil, md)
}

// splitOut writes outputs of the given sizes along axis: as column
// blocks of the input seen as [outer, shape[axis]*inner], in one launch
// per colsPerLaunch outputs (cols).
func splitOut(k kctx, v *tensor.Tensor, axis int, sizes []int64) error {
	outer, inner := dimsAround(v.Shape, axis)
	ws := make([]int64, len(sizes))
	for i, sz := range sizes {
		s := v.Shape.Clone()
		s[axis] = sz
		if _, err := k.Allocate(i, s); err != nil {
			return err
		}
		ws[i] = sz * inner
	}
	return cols(k, true, v, k.Outputs, outer, ws)
}

// dimsAround is the element counts of s's dims before axis and after it.
func dimsAround(s tensor.Shape, axis int) (outer, inner int64) {
	outer, inner = 1, 1
	for _, d := range s[:axis] {
		outer *= d
	}
	for _, d := range s[axis+1:] {
		inner *= d
	}
	return outer, inner
}

func splitGPU(k kctx) error {
	ax, sizes, err := cpu.SplitArgs(k.Context)
	if err != nil {
		return err
	}
	return splitOut(k, k.Input(1), ax, sizes)
}

func splitVGPU(k kctx) error {
	ax, sizes, err := cpu.SplitVArgs(k.Context)
	if err != nil {
		return err
	}
	return splitOut(k, k.Input(0), ax, sizes)
}

// unpackGPU is a split into len(OutTypes) outputs of one row each along
// axis, which drops out of their shape.
func unpackGPU(k kctx, axis64 int64) error {
	v := k.Input(0)
	axis, s, err := cpu.UnpackArgs(k.Context, axis64)
	if err != nil {
		return err
	}
	n := len(k.Node.OutTypes)
	outer, inner := dimsAround(v.Shape, axis)
	ws := make([]int64, n)
	for i := range ws {
		if _, err := k.Allocate(i, s); err != nil {
			return err
		}
		ws[i] = inner
	}
	return cols(k, true, v, k.Outputs, outer, ws)
}

// colsPerLaunch is how many blocks array.cu's Cols28 carries: as many
// as fit cu.Args with the kernel's other parameters.
const colsPerLaunch = 28

// copyCols is the least bytes of a one-row block that cols moves with a
// device copy of its own rather than in a launch of the kernel, which
// moves elements one by one (a byte at a time for 1-byte dtypes).
const copyCols = 64 << 10

// cols moves blocks of [outer, ws[i]] elements at ts[i] into columns
// [off, off+ws[i]) of m seen as [outer, sum(ws)] (the blocks side by
// side in order), or, with split, out of them: array.cu's concat_ or
// split_, one launch for up to 28 blocks (a node's many small inputs
// or outputs, as DLRM's Pack of its 26 embeddings, are one launch rather
// than one each), each block a row of the grid. An empty block is
// skipped; a one-row block of copyCols bytes or more is a device copy
// (and a gap, a null row, among the kernel's blocks).
func cols(k kctx, split bool, m *tensor.Tensor, ts []*tensor.Tensor, outer int64, ws []int64) error {
	ow := int64(0)
	for _, w := range ws {
		ow += w
	}
	if outer == 0 || ow == 0 {
		return nil
	}
	es := int64(m.DType.Size())
	name := "concat_" + sizeName(m.DType)
	if split {
		name = "split_" + sizeName(m.DType)
	}
	// Cols28: p[28], then off[29], where row q's block is columns
	// [off[q], off[q+1]).
	var c [2*colsPerLaunch + 1]int64
	q, end, most := 0, int64(0), int64(0)
	flush := func() error {
		if q == 0 {
			return nil
		}
		var args cu.Args
		args.Ptr(ptr(m)).I64s(c[:]...).I64(outer).I64(ow)
		err := k.launchRows(arrays, name, q, most, &args)
		c, q, most = [2*colsPerLaunch + 1]int64{}, 0, 0
		return err
	}
	off := int64(0)
	for i, w := range ws {
		switch {
		case w == 0:
		case outer == 1 && w*es >= copyCols:
			at := ptr(m) + uint64(off*es)
			dst, src := at, ptr(ts[i])
			if split {
				dst, src = src, at
			}
			if err := k.d2d(dst, src, uint64(w*es)); err != nil {
				return err
			}
		default:
			if q+2 > colsPerLaunch {
				if err := flush(); err != nil {
					return err
				}
			}
			if q > 0 && end != off {
				c[q], c[colsPerLaunch+q] = 0, end // the gap: a null row
				q++
			}
			c[q], c[colsPerLaunch+q] = int64(ptr(ts[i])), off
			q++
			end = off + w
			c[colsPerLaunch+q] = end
			most = max(most, outer*w)
		}
		off += w
	}
	return flush()
}

func packGPU(k kctx, axis64 int64) error {
	axis, out, err := cpu.PackArgs(k.Context, axis64)
	if err != nil {
		return err
	}
	n, first := k.NumInputs(), k.Input(0)
	o, err := k.Allocate(0, out)
	if err != nil {
		return err
	}
	if o.NumElements() == 0 {
		return nil
	}
	outer := int64(1)
	for _, d := range first.Shape[:axis] {
		outer *= d
	}
	w := first.NumElements() / outer
	ws := make([]int64, n)
	for i := range ws {
		ws[i] = w
	}
	return cols(k, false, o, k.Inputs, outer, ws)
}

// concatGPU is ConcatV2 and, with v1, Concat (the axis first).
func concatGPU(k kctx, v1 bool) error {
	values, ax, out, err := cpu.ConcatArgs(k.Context, v1, nil)
	if err != nil {
		return err
	}
	o, err := k.Allocate(0, out)
	if err != nil {
		return err
	}
	if o.NumElements() == 0 {
		return nil
	}
	outer, inner := dimsAround(out, ax)
	ws := make([]int64, len(values))
	for i, in := range values {
		ws[i] = in.Shape[ax] * inner
	}
	return cols(k, false, o, values, outer, ws)
}

func oneHotGPU(k kctx, axis int64) error {
	it := k.Input(0)
	axis, depth, out, err := cpu.OneHotArgs(k.Context, axis)
	if err != nil {
		return err
	}
	on, off := k.Input(2), k.Input(3)
	o, err := k.Allocate(0, out)
	if err != nil {
		return err
	}
	n := o.NumElements()
	if n == 0 {
		return nil
	}
	inner := int64(1)
	for _, d := range it.Shape[axis:] {
		inner *= d
	}
	var is string
	switch it.DType {
	case tensor.Uint8:
		is = "u8"
	case tensor.Int8:
		is = "i8"
	case tensor.Int32:
		is = "i32"
	case tensor.Int64:
		is = "i64"
	default:
		return k.Errorf(status.InvalidArgument, "indices of dtype %v", it.DType)
	}
	var args cu.Args
	args.Ptr(ptr(o)).Ptr(ptr(it)).Ptr(ptr(on)).Ptr(ptr(off)).I64(n).I64(depth).I64(inner)
	return k.launchN(moves, "onehot_"+sizeName(o.DType)+"_"+is, n, &args)
}

// gatherNdGPU is TF's GatherNd with indices on the device: an index out
// of range gives zeros, as TF's GPU kernel does (the CPU kernel fails).
func gatherNdGPU(k kctx) error {
	params, it := k.Input(0), k.Input(1)
	depth, out, err := cpu.GatherNdArgs(k.Context)
	if err != nil {
		return err
	}
	if depth > 8 {
		return k.Errorf(status.Unimplemented, "GatherNd with index depth %d on the GPU (at most 8)", depth)
	}
	slice := tensor.Shape(params.Shape[depth:]).NumElements()
	o, err := k.Allocate(0, out)
	if err != nil {
		return err
	}
	n := o.NumElements()
	if n == 0 {
		return nil
	}
	is := "i32"
	if it.DType == tensor.Int64 {
		is = "i64"
	} else if it.DType != tensor.Int32 {
		return k.Errorf(status.InvalidArgument, "indices must be int32 or int64, not %v", it.DType)
	}
	pst := rowStrides(params.Shape)
	meta := make([]int64, 1+2*8)
	meta[0] = depth
	copy(meta[1:9], params.Shape[:depth])
	copy(meta[9:17], pst[:depth])
	var args cu.Args
	args.Ptr(ptr(o)).Ptr(ptr(params)).Ptr(ptr(it)).I64(n).I64(slice).I64s(meta...)
	return k.launchN(moves, "gathernd_"+sizeName(o.DType)+"_"+is, n, &args)
}
