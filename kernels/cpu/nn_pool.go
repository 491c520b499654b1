package cpu

import (
	"math"

	"mstream/graph"
	"mstream/kernels"
	"mstream/kernels/cpu/dnnl"
	"mstream/status"
	"mstream/tensor"
)

// Pooling: MaxPool (spatial, or across depth with a 1x1 window), MaxPoolV2
// (ksize and strides as inputs) and AvgPool, NHWC only as on TF's CPU.
// Average pooling divides by the number of in-bounds elements of each
// window, so SAME padding does not pull averages towards zero.

func init() {
	maxTypes := []tensor.DType{tensor.Float, tensor.Double, tensor.Half, tensor.Bfloat16, tensor.Int32, tensor.Int64,
		tensor.Uint8, tensor.Int16, tensor.Int8, tensor.Uint16}
	reg("MaxPool", maxTypes, nil, func(n *graph.Node) (kernels.Kernel, error) {
		pa, err := ParsePoolAttrs(n, "MaxPoolingOp", true)
		if err != nil {
			return nil, err
		}
		prims := &dnnl.Cache[dnnl.PoolDesc]{Node: n.Name}
		return kernels.WithClose(func(ctx *kernels.Context) error { return poolOp(ctx, pa, true, prims) }, prims), nil
	})
	reg("MaxPoolV2", maxTypes, []string{"ksize", "strides"}, func(n *graph.Node) (kernels.Kernel, error) {
		padding, err := ParseMaxPoolV2Attrs(n)
		if err != nil {
			return nil, err
		}
		prims := &dnnl.Cache[dnnl.PoolDesc]{Node: n.Name}
		return kernels.WithClose(func(ctx *kernels.Context) error {
			pa, err := MaxPoolV2Args(ctx, padding)
			if err != nil {
				return err
			}
			return poolOp(ctx, pa, true, prims)
		}, prims), nil
	})
	reg("AvgPool", floatTypes, nil, func(n *graph.Node) (kernels.Kernel, error) {
		pa, err := ParsePoolAttrs(n, "AvgPoolingOp", false)
		if err != nil {
			return nil, err
		}
		prims := &dnnl.Cache[dnnl.PoolDesc]{Node: n.Name}
		return kernels.WithClose(func(ctx *kernels.Context) error { return poolOp(ctx, pa, false, prims) }, prims), nil
	})
}

// PoolAttrs are a pooling node's window (ksize, strides: NHWC, 4 values
// each), padding (SAME, VALID or EXPLICIT) and explicit_paddings (8
// values, EXPLICIT only).
type PoolAttrs struct {
	Ksize, Strides []int64
	Padding        string
	Explicit       []int64
}

// ParsePoolAttrs reads and checks MaxPool's (explicitOK) or AvgPool's
// attrs; what names the op in TF's messages (MaxPoolingOp, AvgPoolingOp).
// The CPU and GPU kernels both parse through it.
func ParsePoolAttrs(n *graph.Node, what string, explicitOK bool) (PoolAttrs, error) {
	if df := attrString(n, "data_format", "NHWC"); df != "NHWC" {
		return PoolAttrs{}, nodeErr(n, status.InvalidArgument, "Default %s only supports NHWC on device type CPU", what)
	}
	pa := PoolAttrs{Ksize: attrInts(n, "ksize"), Strides: attrInts(n, "strides"), Padding: attrString(n, "padding", "")}
	if pa.Padding == "EXPLICIT" {
		if !explicitOK {
			return pa, nodeErr(n, status.InvalidArgument, "EXPLICIT padding is not supported by %s", what)
		}
		pa.Explicit = attrInts(n, "explicit_paddings")
		if err := checkPadding(pa.Padding, pa.Explicit, 3); err != nil {
			return pa, nodeErr(n, status.InvalidArgument, "%v", err)
		}
	}
	if err := pa.check(); err != nil {
		return pa, nodeErr(n, status.CodeOf(err), "%v", err)
	}
	return pa, nil
}

// ParseMaxPoolV2Attrs checks MaxPoolV2's data_format and returns its
// padding; ksize and strides are inputs, read by MaxPoolV2Args.
func ParseMaxPoolV2Attrs(n *graph.Node) (padding string, err error) {
	if df := attrString(n, "data_format", "NHWC"); df != "NHWC" {
		return "", nodeErr(n, status.InvalidArgument, "Default MaxPoolingOp only supports NHWC on device type CPU")
	}
	return attrString(n, "padding", ""), nil
}

// MaxPoolV2Args reads MaxPoolV2's ksize and strides (inputs 1 and 2) and
// checks them with the padding.
func MaxPoolV2Args(ctx *kernels.Context, padding string) (PoolAttrs, error) {
	pa := PoolAttrs{Padding: padding}
	for i, dst := range []*[]int64{&pa.Ksize, &pa.Strides} {
		v, err := hostInts(ctx, i+1, []string{"ksize", "strides"}[i])
		if err != nil {
			return pa, err
		}
		*dst = v
	}
	if err := pa.check(); err != nil {
		return pa, ctx.Errorf(status.CodeOf(err), "%v", err)
	}
	return pa, nil
}

func (pa PoolAttrs) check() error {
	if len(pa.Ksize) != 4 {
		return status.Errorf(status.InvalidArgument, "Sliding window ksize field must specify 4 dimensions")
	}
	if len(pa.Strides) != 4 {
		return status.Errorf(status.InvalidArgument, "Sliding window stride field must specify 4 dimensions")
	}
	for i, k := range pa.Ksize {
		if k <= 0 {
			return status.Errorf(status.InvalidArgument, "Sliding window ksize for dimension %d was zero.", i)
		}
	}
	for i, s := range pa.Strides {
		if s <= 0 {
			return status.Errorf(status.InvalidArgument, "Sliding window stride for dimension %d must be positive, got %d", i, s)
		}
	}
	if pa.Ksize[0] != 1 || pa.Strides[0] != 1 {
		return status.Errorf(status.Unimplemented, "Pooling is not yet supported on the batch dimension.")
	}
	if pa.Padding != "SAME" && pa.Padding != "VALID" && pa.Padding != "EXPLICIT" {
		return status.Errorf(status.InvalidArgument, "padding must be SAME or VALID, not %q", pa.Padding)
	}
	return nil
}

// PoolGeom is TF's PoolParameters for an NHWC input: the input's dims,
// the window (KD > 1: across depth, with a 1x1 spatial window), the
// spatial strides, the padding before (top, left) and the output's dims.
type PoolGeom struct {
	N, H, W, C int
	KH, KW, KD int
	SH, SW     int
	PT, PL     int
	OH, OW, OD int
}

// PoolParams checks the input shape against the attrs (isMax: MaxPool,
// which alone may pool across depth) and returns the geometry; the CPU
// and GPU kernels both validate through it.
func PoolParams(ctx *kernels.Context, pa PoolAttrs, in tensor.Shape, isMax bool) (PoolGeom, error) {
	var g PoolGeom
	if len(in) != 4 {
		return g, ctx.Errorf(status.InvalidArgument, "tensor_in must be 4-dimensional, got shape %v", in)
	}
	g.N, g.H, g.W, g.C = int(in[0]), int(in[1]), int(in[2]), int(in[3])
	g.KH, g.KW, g.KD = int(pa.Ksize[1]), int(pa.Ksize[2]), int(pa.Ksize[3])
	g.SH, g.SW = int(pa.Strides[1]), int(pa.Strides[2])
	ds := int(pa.Strides[3])
	if g.KD != 1 && (g.KH != 1 || g.KW != 1) {
		return g, ctx.Errorf(status.Unimplemented, "MaxPooling supports exactly one of pooling across depth or pooling across width/height.")
	}
	var pads [4]int64
	if pa.Padding == "EXPLICIT" {
		copy(pads[:], pa.Explicit[2:6])
		for i, p := range pads {
			if p >= pa.Ksize[1+i/2] {
				return g, ctx.Errorf(status.InvalidArgument, "%s padding %d needs to be smaller than the window size %d", []string{"Top", "Bottom", "Left", "Right"}[i], p, pa.Ksize[1+i/2])
			}
		}
	}
	if g.KD != 1 {
		if !isMax {
			return g, ctx.Errorf(status.Unimplemented, "Non-spatial pooling is not yet supported. Volunteers? :)")
		}
		if g.C%g.KD != 0 {
			return g, ctx.Errorf(status.Unimplemented, "Depthwise max pooling requires the depth window to evenly divide the input depth")
		}
		if ds != g.KD {
			return g, ctx.Errorf(status.Unimplemented, "Depthwise max pooling requires the depth window to equal the depth stride")
		}
	} else if ds != 1 {
		return g, ctx.Errorf(status.Unimplemented, "Pooling with a depth stride %d needs a depth window of the same size", ds)
	}
	oh, pt, _, err := windowOut(in[1], int64(g.KH), 1, int64(g.SH), pa.Padding, pads[0], pads[1])
	if err != nil {
		return g, ctx.Errorf(status.CodeOf(err), "%v", err)
	}
	ow, pl, _, err := windowOut(in[2], int64(g.KW), 1, int64(g.SW), pa.Padding, pads[2], pads[3])
	if err != nil {
		return g, ctx.Errorf(status.CodeOf(err), "%v", err)
	}
	g.OH, g.OW, g.PT, g.PL = int(oh), int(ow), int(pt), int(pl)
	g.OD = g.C / g.KD
	return g, nil
}

func poolOp(ctx *kernels.Context, pa PoolAttrs, isMax bool, prims *dnnl.Cache[dnnl.PoolDesc]) error {
	in := ctx.Input(0)
	g, err := PoolParams(ctx, pa, in.Shape, isMax)
	if err != nil {
		return err
	}
	o, err := ctx.Allocate(0, tensor.Shape{int64(g.N), int64(g.OH), int64(g.OW), int64(g.OD)})
	if err != nil {
		return err
	}
	if o.NumElements() == 0 {
		return nil
	}
	switch in.DType {
	case tensor.Float:
		if done, err := poolDNNL(ctx, prims, g, isMax, in.F32(), o.F32()); done {
			return err
		}
		poolT(ctx, g, isMax, in.F32(), o.F32())
	case tensor.Double:
		poolT(ctx, g, isMax, in.F64(), o.F64())
	case tensor.Half, tensor.Bfloat16:
		out, err := kernels.Scratch[float32](ctx, o.NumElements())
		if err != nil {
			return err
		}
		poolT(ctx, g, isMax, toF32(in), out)
		storeF32(o, out)
	case tensor.Int32:
		poolT(ctx, g, isMax, in.I32(), o.I32())
	case tensor.Int64:
		poolT(ctx, g, isMax, in.I64(), o.I64())
	case tensor.Int16:
		poolT(ctx, g, isMax, in.I16(), o.I16())
	case tensor.Int8:
		poolT(ctx, g, isMax, in.I8(), o.I8())
	case tensor.Uint8:
		poolT(ctx, g, isMax, in.U8(), o.U8())
	case tensor.Uint16:
		poolT(ctx, g, isMax, in.U16(), o.U16())
	default:
		return ctx.Errorf(status.Unimplemented, "pooling of %v", in.DType)
	}
	return nil
}

// lowest is the identity of max for T: -Inf for floats, the minimum for
// integers.
func lowest[T num]() T {
	var v any
	switch any(*new(T)).(type) {
	case float32:
		v = float32(math.Inf(-1))
	case float64:
		v = math.Inf(-1)
	case int8:
		v = int8(math.MinInt8)
	case int16:
		v = int16(math.MinInt16)
	case int32:
		v = int32(math.MinInt32)
	case int64:
		v = int64(math.MinInt64)
	default:
		return 0
	}
	return v.(T)
}

func poolT[T num](ctx *kernels.Context, g PoolGeom, isMax bool, in, out []T) {
	low := lowest[T]()
	ctx.For(g.N*g.OH, float64(g.OW*g.KH*g.KW*g.C), kernels.StartLoop, func(lo, hi int) {
		acc := make([]float64, g.C)
		cnt := make([]int, 1)
		for r := lo; r < hi; r++ {
			n, oh := r/g.OH, r%g.OH
			for ow := 0; ow < g.OW; ow++ {
				dst := out[((n*g.OH+oh)*g.OW+ow)*g.OD:][:g.OD]
				if g.KD != 1 { // across depth, 1x1 spatial window
					src := in[((n*g.H+oh*g.SH)*g.W+ow*g.SW)*g.C:][:g.C]
					for d := range dst {
						m := low
						for _, v := range src[d*g.KD : (d+1)*g.KD] {
							if v > m || v != v {
								m = v
							}
						}
						dst[d] = m
					}
					continue
				}
				h0, w0 := oh*g.SH-g.PT, ow*g.SW-g.PL
				hs, he := max(h0, 0), min(h0+g.KH, g.H)
				ws, we := max(w0, 0), min(w0+g.KW, g.W)
				if isMax {
					for d := range dst {
						dst[d] = low
					}
					for y := hs; y < he; y++ {
						for x := ws; x < we; x++ {
							src := in[((n*g.H+y)*g.W+x)*g.C:][:g.C]
							for d, v := range src {
								if v > dst[d] || v != v {
									dst[d] = v
								}
							}
						}
					}
					continue
				}
				for d := range acc {
					acc[d] = 0
				}
				cnt[0] = (he - hs) * (we - ws)
				for y := hs; y < he; y++ {
					for x := ws; x < we; x++ {
						src := in[((n*g.H+y)*g.W+x)*g.C:][:g.C]
						for d, v := range src {
							acc[d] += float64(v)
						}
					}
				}
				inv := 1 / float64(cnt[0])
				for d := range dst {
					dst[d] = T(acc[d] * inv)
				}
			}
		}
	})
}
