package cuda

import (
	cu "mstream/device/cuda"
	"mstream/graph"
	"mstream/kernels"
	"mstream/kernels/cpu"
	"mstream/status"
	"mstream/tensor"
)

// Cumsum/Cumprod, MatrixBandPart, ResizeBilinear and ResizeNearestNeighbor
// (src/misc.cu), validated as the CPU kernels.

func init() {
	for _, op := range []string{"Cumsum", "Cumprod"} {
		prod := op == "Cumprod"
		reg(op, "T", realTypes, []string{"axis"}, func(n *graph.Node) (kernels.Kernel, error) {
			ex, rev := boolAttr(n, "exclusive"), boolAttr(n, "reverse")
			return fn(func(k kctx) error { return scanGPU(k, prod, ex, rev) })(n)
		})
	}
	reg("TopKV2", "T", realTypes, []string{"k"}, fn(topKGPU))
	reg("MatrixBandPart", "T", fixedTypes, []string{"num_lower", "num_upper"}, fn(bandGPU))
	resizeTypes := []tensor.DType{tensor.Float, tensor.Double, tensor.Half, tensor.Bfloat16, tensor.Int8, tensor.Uint8,
		tensor.Int16, tensor.Uint16, tensor.Int32, tensor.Int64}
	for _, op := range []string{"ResizeBilinear", "ResizeNearestNeighbor"} {
		bilinear := op == "ResizeBilinear"
		reg(op, "T", resizeTypes, []string{"size"}, func(n *graph.Node) (kernels.Kernel, error) {
			ac, hp := boolAttr(n, "align_corners"), boolAttr(n, "half_pixel_centers")
			return fn(func(k kctx) error { return resizeGPU(k, bilinear, ac, hp) })(n)
		})
	}
}

func b32(b bool) int32 {
	if b {
		return 1
	}
	return 0
}

func scanGPU(k kctx, prod, exclusive, reverse bool) error {
	x := k.Input(0)
	ax, err := cpu.ScanArgs(k.Context)
	if err != nil {
		return err
	}
	o, err := k.Allocate(0, x.Shape)
	if err != nil {
		return err
	}
	if o.NumElements() == 0 {
		return nil
	}
	outer, inner := int64(1), int64(1)
	for _, d := range x.Shape[:ax] {
		outer *= d
	}
	for _, d := range x.Shape[ax+1:] {
		inner *= d
	}
	var args cu.Args
	args.Ptr(ptr(o)).Ptr(ptr(x)).I64(outer).I64(x.Shape[ax]).I64(inner).I32(b32(prod)).I32(b32(exclusive)).I32(b32(reverse))
	return k.launchN(miscs, "scan_"+suffix(x.DType), outer*inner, &args)
}

func bandGPU(k kctx) error {
	in := k.Input(0)
	lo, hi, err := cpu.MatrixBandPartArgs(k.Context)
	if err != nil {
		return err
	}
	m, n := in.Shape[len(in.Shape)-2], in.Shape[len(in.Shape)-1]
	o, err := k.Allocate(0, in.Shape)
	if err != nil {
		return err
	}
	total := o.NumElements()
	if total == 0 {
		return nil
	}
	var args cu.Args
	args.Ptr(ptr(o)).Ptr(ptr(in)).I64(total).I64(m).I64(n).I64(lo).I64(hi)
	return k.launchN(miscs, "band_"+sizeName(in.DType), total, &args)
}

func resizeGPU(k kctx, bilinear, alignCorners, halfPixel bool) error {
	x := k.Input(0)
	oh, ow, err := cpu.ResizeArgs(k.Context, alignCorners, halfPixel)
	if err != nil {
		return err
	}
	ih, iw, c := x.Shape[1], x.Shape[2], x.Shape[3]
	o, err := k.Allocate(0, tensor.Shape{x.Shape[0], oh, ow, c})
	if err != nil {
		return err
	}
	total := o.NumElements()
	if total == 0 {
		return nil
	}
	hs, ws := cpu.ResizeScale(ih, oh, alignCorners), cpu.ResizeScale(iw, ow, alignCorners)
	var args cu.Args
	args.Ptr(ptr(o)).Ptr(ptr(x)).I64(total).I64(ih).I64(iw).I64(oh).I64(ow).I64(c).F32(hs).F32(ws)
	if bilinear {
		args.I32(b32(halfPixel))
		return k.launchN(miscs, "resize_bl_"+suffix(x.DType), total, &args)
	}
	args.I32(b32(alignCorners)).I32(b32(halfPixel))
	return k.launchN(miscs, "resize_nn_"+sizeName(x.DType), total, &args)
}

func topKGPU(k kctx) error {
	x := k.Input(0)
	kk, s, err := cpu.TopKArgs(k.Context)
	if err != nil {
		return err
	}
	n := x.Shape[len(x.Shape)-1]
	vals, err := k.Allocate(0, s)
	if err != nil {
		return err
	}
	idx, err := k.Allocate(1, s)
	if err != nil {
		return err
	}
	if vals.NumElements() == 0 {
		return nil
	}
	var is string
	switch idx.DType {
	case tensor.Int32:
		is = "i32"
	case tensor.Int64:
		is = "i64"
	case tensor.Int16:
		is = "i16"
	default:
		return k.Errorf(status.InvalidArgument, "index_type %v is not supported", idx.DType)
	}
	rows := x.NumElements() / n
	blocks := (rows + 7) / 8
	if blocks > 1<<31-1 {
		return k.Errorf(status.Unimplemented, "TopKV2 over %d rows", rows)
	}
	var args cu.Args
	args.Ptr(ptr(vals)).Ptr(ptr(idx)).Ptr(ptr(x)).I64(rows).I64(n).I64(kk)
	return k.launch(miscs, "topk_"+suffix(x.DType)+"_"+is, int(blocks), threads, 0, &args)
}
