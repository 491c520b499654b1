package cuda

import (
	"fmt"

	cu "mstream/device/cuda"
	"mstream/graph"
	"mstream/kernels"
	"mstream/kernels/cpu"
	"mstream/status"
	"mstream/tensor"
)

func init() {
	reg("GatherV2", "Tparams", fixedTypes, []string{"axis"}, func(n *graph.Node) (kernels.Kernel, error) {
		// TF's GPU GatherV2 takes int32 and int64 indices only; int16
		// ones (which its CPU kernel takes) run on the host, as in TF.
		if a := n.Attrs["Tindices"]; a != nil {
			if it := tensor.DType(a.GetType()); it != tensor.Int32 && it != tensor.Int64 {
				return nil, status.Errorf(status.Unimplemented, "no GPU GatherV2 with Tindices=%v (node '%s')", it, n.Name)
			}
		}
		bd := int64(0)
		if a := n.Attrs["batch_dims"]; a != nil {
			bd = a.GetI()
		}
		return fn(func(k kctx) error { return gather(k, bd) })(n)
	})
	reg("ConcatV2", "T", fixedTypes, []string{"axis"}, fn(func(k kctx) error { return concatGPU(k, false) }))
	reg("Transpose", "T", fixedTypes, []string{"perm"}, fn(transpose))
	for _, op := range []string{"SpaceToBatchND", "BatchToSpaceND", "SpaceToBatch", "BatchToSpace"} {
		toBatch, nd := op[:5] == "Space", op[len(op)-2:] == "ND"
		host := []string{"crops"}
		if toBatch {
			host = []string{"paddings"}
		}
		if nd {
			host = append(host, "block_shape")
		}
		reg(op, "T", realTypes, host, func(n *graph.Node) (kernels.Kernel, error) {
			bs := int64(0)
			if !nd {
				bs = n.Attrs["block_size"].GetI()
			}
			return fn(func(k kctx) error { return spaceBatch(k, toBatch, bs) })(n)
		})
	}
	for _, op := range []string{"SpaceToDepth", "DepthToSpace"} {
		toDepth := op == "SpaceToDepth"
		reg(op, "T", fixedTypes, nil, func(n *graph.Node) (kernels.Kernel, error) {
			// TF's GPU kernel takes NCHW too; this one does not yet, and
			// such a node runs on the host, which fails it as TF's CPU.
			if f := n.Attrs["data_format"]; f != nil && string(f.GetS()) != "NHWC" {
				return nil, status.Errorf(status.Unimplemented, "no GPU %s with data_format %s (node '%s')", op, f.GetS(), n.Name)
			}
			bs := n.Attrs["block_size"].GetI()
			return fn(func(k kctx) error { return spaceDepth(k, toDepth, bs) })(n)
		})
	}

	// Metadata-only ops: their output is the input with another shape (or
	// the input itself), so the host kernels, which never read element
	// data, serve the GPU too. HostMemory lists match TF's GPU kernels.
	for _, m := range []struct {
		op   string
		host []string
	}{
		{"Identity", nil}, {"IdentityN", nil}, {"StopGradient", nil}, {"Reshape", []string{"shape"}},
		{"ExpandDims", []string{"dim"}}, {"Squeeze", nil},
	} {
		op := m.op
		kernels.Register(kernels.Def{Op: op, Device: kernels.GPU, TypeAttr: "T", Types: fixedTypes, HostMemory: m.host,
			Forwards: op != "IdentityN", Factory: func(n *graph.Node) (kernels.Kernel, error) {
				def, err := kernels.Lookup(n, kernels.CPU)
				if err != nil {
					return nil, fmt.Errorf("GPU %s reuses the CPU kernel, which is missing: %w", op, err)
				}
				return def.Factory(n)
			}})
	}
}

func gather(k kctx, batchDims int64) error {
	params, idx := k.Input(0), k.Input(1)
	batchDims, ax, out, err := cpu.GatherArgs(k.Context, batchDims, nil)
	if err != nil {
		return err
	}
	o, err := k.Allocate(0, out)
	if err != nil {
		return err
	}
	total := o.NumElements()
	if total == 0 {
		return nil
	}
	outer := int64(1) // the params dims between batch_dims and axis
	for _, d := range params.Shape[batchDims:ax] {
		outer *= d
	}
	inner := int64(1)
	for _, d := range params.Shape[ax+1:] {
		inner *= d
	}
	nIdx := int64(1)
	for _, d := range idx.Shape[batchDims:] {
		nIdx *= d
	}
	is := "i32"
	if idx.DType == tensor.Int64 {
		is = "i64"
	} else if idx.DType != tensor.Int32 {
		return k.Errorf(status.InvalidArgument, "indices must be int32 or int64, not %v", idx.DType)
	}
	var args cu.Args
	args.Ptr(ptr(o)).Ptr(ptr(params)).Ptr(ptr(idx)).I64(total).I64(outer).I64(params.Shape[ax]).I64(inner).I64(nIdx)
	return k.launchN(arrays, "gather_"+sizeName(params.DType)+"_"+is, total, &args)
}

func transpose(k kctx) error {
	in := k.Input(0)
	perm, out, err := cpu.TransposeArgs(k.Context)
	if err != nil {
		return err
	}
	o, err := k.Allocate(0, out)
	if err != nil {
		return err
	}
	// Input strides, permuted: output dim i reads input dim perm[i].
	r := len(out)
	ist := make([]int64, r)
	p := int64(1)
	for i := r - 1; i >= 0; i-- {
		ist[i] = p
		p *= in.Shape[i]
	}
	st := make([]int64, r)
	for i, pi := range perm {
		st[i] = ist[pi]
	}
	return permute(k, o, in, out, st)
}

// spaceDepth is SpaceToDepth's (toDepth) and DepthToSpace's GPU kernel:
// the CPU's checks, then the permutation they describe.
func spaceDepth(k kctx, toDepth bool, bs int64) error {
	out, view, st, err := cpu.SpaceDepthArgs(k.Context, toDepth, bs)
	if err != nil {
		return err
	}
	o, err := k.Allocate(0, out)
	if err != nil {
		return err
	}
	return permute(k, o, k.Input(0), view, st)
}

// spaceBatch is the GPU kernel of the four space/batch ops: the CPU's
// checks and merged geometry, then one thread per batch-side element.
func spaceBatch(k kctx, toBatch bool, blockSize int64) error {
	g, out, err := cpu.SpaceBatchArgs(k.Context, toBatch, blockSize)
	if err != nil {
		return err
	}
	in := k.Input(0)
	o, err := k.Allocate(0, out)
	if err != nil {
		return err
	}
	n := o.NumElements()
	if n == 0 {
		return nil
	}
	space, batch := o, in
	if toBatch {
		space, batch = in, o
	}
	meta := make([]int64, 4+4*4)
	meta[0], meta[1], meta[2] = int64(len(g.Block)), g.Batch, g.Inner
	if toBatch {
		meta[3] = 1
	}
	copy(meta[4:8], g.Block)
	copy(meta[8:12], g.Start)
	copy(meta[12:16], g.Space)
	copy(meta[16:20], g.Y)
	var args cu.Args
	args.Ptr(ptr(space)).Ptr(ptr(batch)).I64(batch.NumElements()).I64s(meta...)
	return k.launchN(arrays, "spacebatch_"+sizeName(in.DType), batch.NumElements(), &args)
}

// permute fills o, seen as shape view (row-major), from in, whose element
// for view index (i0, ..., ir) sits at sum(ik * st[k]): Transpose's
// kernel, for any move that is a permutation of a view.
func permute(k kctx, o, in *tensor.Tensor, view tensor.Shape, st []int64) error {
	n := o.NumElements()
	if n == 0 {
		return nil
	}
	// Merge output dims that are adjacent and in order in the input too
	// (and drop size-1 dims).
	var dims, str []int64
	for i, d := range view {
		s := st[i]
		if d == 1 {
			continue
		}
		if j := len(dims) - 1; j >= 0 && str[j] == s*d {
			dims[j] *= d
			str[j] = s
			continue
		}
		dims = append(dims, d)
		str = append(str, s)
	}
	if len(dims) <= 1 {
		// The permutation moves no data: a plain copy.
		return k.d2d(ptr(o), ptr(in), uint64(len(o.Buf)))
	}
	if len(dims) > 8 {
		return k.Errorf(status.Unimplemented, "transpose of rank %d after merging (at most 8)", len(dims))
	}
	meta := make([]int64, 1+2*8)
	meta[0] = int64(len(dims))
	copy(meta[1:9], dims)
	copy(meta[9:17], str)
	var args cu.Args
	args.Ptr(ptr(o)).Ptr(ptr(in)).I64(n).I64s(meta...)
	return k.launchN(arrays, "transpose_"+sizeName(in.DType), n, &args)
}
