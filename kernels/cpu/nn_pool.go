package cpu

import (
	"math"

	"mstream/graph"
	"mstream/kernels"
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
		pa, err := parsePoolAttrs(n, "MaxPoolingOp", true)
		if err != nil {
			return nil, err
		}
		return kernels.KernelFunc(func(ctx *kernels.Context) error { return poolOp(ctx, pa, true) }), nil
	})
	reg("MaxPoolV2", maxTypes, []string{"ksize", "strides"}, func(n *graph.Node) (kernels.Kernel, error) {
		if df := attrString(n, "data_format", "NHWC"); df != "NHWC" {
			return nil, nodeErr(n, status.InvalidArgument, "Default MaxPoolingOp only supports NHWC on device type CPU")
		}
		padding := attrString(n, "padding", "")
		return kernels.KernelFunc(func(ctx *kernels.Context) error {
			var pa poolAttrs
			pa.padding = padding
			for i, dst := range []*[]int64{&pa.ksize, &pa.strides} {
				v, err := hostInts(ctx, i+1, []string{"ksize", "strides"}[i])
				if err != nil {
					return err
				}
				*dst = v
			}
			if err := pa.check(); err != nil {
				return ctx.Errorf(status.CodeOf(err), "%v", err)
			}
			return poolOp(ctx, pa, true)
		}), nil
	})
	reg("AvgPool", floatTypes, nil, func(n *graph.Node) (kernels.Kernel, error) {
		pa, err := parsePoolAttrs(n, "AvgPoolingOp", false)
		if err != nil {
			return nil, err
		}
		return kernels.KernelFunc(func(ctx *kernels.Context) error { return poolOp(ctx, pa, false) }), nil
	})
}

type poolAttrs struct {
	ksize, strides []int64
	padding        string
	explicit       []int64
}

func parsePoolAttrs(n *graph.Node, what string, explicitOK bool) (poolAttrs, error) {
	if df := attrString(n, "data_format", "NHWC"); df != "NHWC" {
		return poolAttrs{}, nodeErr(n, status.InvalidArgument, "Default %s only supports NHWC on device type CPU", what)
	}
	pa := poolAttrs{ksize: attrInts(n, "ksize"), strides: attrInts(n, "strides"), padding: attrString(n, "padding", "")}
	if pa.padding == "EXPLICIT" {
		if !explicitOK {
			return pa, nodeErr(n, status.InvalidArgument, "EXPLICIT padding is not supported by %s", what)
		}
		pa.explicit = attrInts(n, "explicit_paddings")
		if err := checkPadding(pa.padding, pa.explicit, 3); err != nil {
			return pa, nodeErr(n, status.InvalidArgument, "%v", err)
		}
	}
	if err := pa.check(); err != nil {
		return pa, nodeErr(n, status.CodeOf(err), "%v", err)
	}
	return pa, nil
}

func (pa poolAttrs) check() error {
	if len(pa.ksize) != 4 {
		return status.Errorf(status.InvalidArgument, "Sliding window ksize field must specify 4 dimensions")
	}
	if len(pa.strides) != 4 {
		return status.Errorf(status.InvalidArgument, "Sliding window stride field must specify 4 dimensions")
	}
	for i, k := range pa.ksize {
		if k <= 0 {
			return status.Errorf(status.InvalidArgument, "Sliding window ksize for dimension %d was zero.", i)
		}
	}
	for i, s := range pa.strides {
		if s <= 0 {
			return status.Errorf(status.InvalidArgument, "Sliding window stride for dimension %d must be positive, got %d", i, s)
		}
	}
	if pa.ksize[0] != 1 || pa.strides[0] != 1 {
		return status.Errorf(status.Unimplemented, "Pooling is not yet supported on the batch dimension.")
	}
	if pa.padding != "SAME" && pa.padding != "VALID" && pa.padding != "EXPLICIT" {
		return status.Errorf(status.InvalidArgument, "padding must be SAME or VALID, not %q", pa.padding)
	}
	return nil
}

// poolGeom is TF's PoolParameters for an NHWC input.
type poolGeom struct {
	n, h, w, c int
	kh, kw, kd int
	sh, sw     int
	pt, pl     int
	oh, ow, od int
}

func poolParams(ctx *kernels.Context, pa poolAttrs, in tensor.Shape, isMax bool) (poolGeom, error) {
	var g poolGeom
	if len(in) != 4 {
		return g, ctx.Errorf(status.InvalidArgument, "tensor_in must be 4-dimensional, got shape %v", in)
	}
	g.n, g.h, g.w, g.c = int(in[0]), int(in[1]), int(in[2]), int(in[3])
	g.kh, g.kw, g.kd = int(pa.ksize[1]), int(pa.ksize[2]), int(pa.ksize[3])
	g.sh, g.sw = int(pa.strides[1]), int(pa.strides[2])
	ds := int(pa.strides[3])
	if g.kd != 1 && (g.kh != 1 || g.kw != 1) {
		return g, ctx.Errorf(status.Unimplemented, "MaxPooling supports exactly one of pooling across depth or pooling across width/height.")
	}
	var pads [4]int64
	if pa.padding == "EXPLICIT" {
		copy(pads[:], pa.explicit[2:6])
		for i, p := range pads {
			if p >= pa.ksize[1+i/2] {
				return g, ctx.Errorf(status.InvalidArgument, "%s padding %d needs to be smaller than the window size %d", []string{"Top", "Bottom", "Left", "Right"}[i], p, pa.ksize[1+i/2])
			}
		}
	}
	if g.kd != 1 {
		if !isMax {
			return g, ctx.Errorf(status.Unimplemented, "Non-spatial pooling is not yet supported. Volunteers? :)")
		}
		if g.c%g.kd != 0 {
			return g, ctx.Errorf(status.Unimplemented, "Depthwise max pooling requires the depth window to evenly divide the input depth")
		}
		if ds != g.kd {
			return g, ctx.Errorf(status.Unimplemented, "Depthwise max pooling requires the depth window to equal the depth stride")
		}
	} else if ds != 1 {
		return g, ctx.Errorf(status.Unimplemented, "Pooling with a depth stride %d needs a depth window of the same size", ds)
	}
	oh, pt, _, err := windowOut(in[1], int64(g.kh), 1, int64(g.sh), pa.padding, pads[0], pads[1])
	if err != nil {
		return g, ctx.Errorf(status.CodeOf(err), "%v", err)
	}
	ow, pl, _, err := windowOut(in[2], int64(g.kw), 1, int64(g.sw), pa.padding, pads[2], pads[3])
	if err != nil {
		return g, ctx.Errorf(status.CodeOf(err), "%v", err)
	}
	g.oh, g.ow, g.pt, g.pl = int(oh), int(ow), int(pt), int(pl)
	g.od = g.c / g.kd
	return g, nil
}

func poolOp(ctx *kernels.Context, pa poolAttrs, isMax bool) error {
	in := ctx.Input(0)
	g, err := poolParams(ctx, pa, in.Shape, isMax)
	if err != nil {
		return err
	}
	o, err := ctx.Allocate(0, tensor.Shape{int64(g.n), int64(g.oh), int64(g.ow), int64(g.od)})
	if err != nil {
		return err
	}
	if o.NumElements() == 0 {
		return nil
	}
	switch in.DType {
	case tensor.Float:
		poolT(ctx, g, isMax, in.F32(), o.F32())
	case tensor.Double:
		poolT(ctx, g, isMax, in.F64(), o.F64())
	case tensor.Half, tensor.Bfloat16:
		out := make([]float32, o.NumElements())
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

func poolT[T num](ctx *kernels.Context, g poolGeom, isMax bool, in, out []T) {
	low := lowest[T]()
	ctx.For(g.n*g.oh, float64(g.ow*g.kh*g.kw*g.c), func(lo, hi int) {
		acc := make([]float64, g.c)
		cnt := make([]int, 1)
		for r := lo; r < hi; r++ {
			n, oh := r/g.oh, r%g.oh
			for ow := 0; ow < g.ow; ow++ {
				dst := out[((n*g.oh+oh)*g.ow+ow)*g.od:][:g.od]
				if g.kd != 1 { // across depth, 1x1 spatial window
					src := in[((n*g.h+oh*g.sh)*g.w+ow*g.sw)*g.c:][:g.c]
					for d := range dst {
						m := low
						for _, v := range src[d*g.kd : (d+1)*g.kd] {
							if v > m || v != v {
								m = v
							}
						}
						dst[d] = m
					}
					continue
				}
				h0, w0 := oh*g.sh-g.pt, ow*g.sw-g.pl
				hs, he := max(h0, 0), min(h0+g.kh, g.h)
				ws, we := max(w0, 0), min(w0+g.kw, g.w)
				if isMax {
					for d := range dst {
						dst[d] = low
					}
					for y := hs; y < he; y++ {
						for x := ws; x < we; x++ {
							src := in[((n*g.h+y)*g.w+x)*g.c:][:g.c]
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
						src := in[((n*g.h+y)*g.w+x)*g.c:][:g.c]
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
