package cpu

import (
	"math"

	"mstream/graph"
	"mstream/kernels"
	"mstream/status"
	"mstream/tensor"
)

// Image resizing: ResizeBilinear (float32 output for every input dtype)
// and ResizeNearestNeighbor, NHWC, with TF's three coordinate mappings:
// legacy (out*scale), align_corners (scale from the corner pixels) and
// half_pixel_centers. Coordinates are computed in float32 as TF does, so
// the pixels picked at ties are TF's.

func init() {
	types := []tensor.DType{tensor.Float, tensor.Double, tensor.Half, tensor.Bfloat16, tensor.Int8, tensor.Uint8,
		tensor.Int16, tensor.Uint16, tensor.Int32, tensor.Int64}
	for _, op := range []string{"ResizeBilinear", "ResizeNearestNeighbor"} {
		bilinear := op == "ResizeBilinear"
		reg(op, types, []string{"size"}, func(n *graph.Node) (kernels.Kernel, error) {
			ac, hp := attrBool(n, "align_corners"), attrBool(n, "half_pixel_centers")
			return kernels.KernelFunc(func(ctx *kernels.Context) error { return resize(ctx, bilinear, ac, hp) }), nil
		})
	}
}

// ResizeScale is the input pixels per output pixel along one axis, in
// float32 as TF computes it (align_corners maps the corner pixels onto
// each other).
func ResizeScale(in, out int64, alignCorners bool) float32 {
	if alignCorners && in > 1 && out > 1 {
		return float32(in-1) / float32(out-1)
	}
	return float32(in) / float32(out)
}

type lerpIdx struct {
	lo, hi int
	frac   float32
}

// ResizeArgs checks ResizeBilinear's and ResizeNearestNeighbor's image
// (input 0, NHWC), size (input 1) and coordinate attrs and returns the
// output height and width; the CPU and GPU kernels both validate through
// it.
func ResizeArgs(ctx *kernels.Context, alignCorners, halfPixel bool) (oh, ow int64, err error) {
	x := ctx.Input(0)
	if halfPixel && alignCorners {
		return 0, 0, ctx.Errorf(status.InvalidArgument, "If half_pixel_centers is True, align_corners must be False.")
	}
	if len(x.Shape) != 4 {
		return 0, 0, ctx.Errorf(status.InvalidArgument, "input must be 4-dimensional%v", x.Shape)
	}
	if x.Shape[3] <= 0 {
		return 0, 0, ctx.Errorf(status.InvalidArgument, "image must have at least one channel")
	}
	if x.Shape[1] <= 0 || x.Shape[2] <= 0 {
		return 0, 0, ctx.Errorf(status.InvalidArgument, "input image must be of non-zero size")
	}
	st := ctx.Input(1)
	if len(st.Shape) != 1 {
		return 0, 0, ctx.Errorf(status.InvalidArgument, "shape_t must be 1-dimensional%v", st.Shape)
	}
	if st.NumElements() != 2 {
		return 0, 0, ctx.Errorf(status.InvalidArgument, "shape_t must have two elements%v", st.Shape)
	}
	size, err := hostInts(ctx, 1, "size")
	if err != nil {
		return 0, 0, err
	}
	oh, ow = size[0], size[1]
	if oh <= 0 || ow <= 0 {
		return 0, 0, ctx.Errorf(status.InvalidArgument, "output dimensions must be positive")
	}
	return oh, ow, nil
}

func resize(ctx *kernels.Context, bilinear, alignCorners, halfPixel bool) error {
	x := ctx.Input(0)
	oh, ow, err := ResizeArgs(ctx, alignCorners, halfPixel)
	if err != nil {
		return err
	}
	n, ih, iw, c := int(x.Shape[0]), x.Shape[1], x.Shape[2], int(x.Shape[3])
	out, err := ctx.Allocate(0, tensor.Shape{int64(n), oh, ow, int64(c)})
	if err != nil {
		return err
	}
	if out.NumElements() == 0 {
		return nil
	}
	hs, ws := ResizeScale(ih, oh, alignCorners), ResizeScale(iw, ow, alignCorners)
	if !bilinear {
		ys, xs := nearestIdx(oh, ih, hs, alignCorners, halfPixel), nearestIdx(ow, iw, ws, alignCorners, halfPixel)
		rowIn, rowOut := int(iw)*c, int(ow)*c
		ctx.For(n*int(oh), float64(rowOut), kernels.StartLoop, func(lo, hi int) {
			for r := lo; r < hi; r++ {
				b, y := r/int(oh), r%int(oh)
				src := (b*int(ih) + ys[y]) * rowIn
				dst := r * rowOut
				for j, xi := range xs {
					copyElems(out, dst+j*c, x, src+xi*c, c)
				}
			}
		})
		return nil
	}
	ys, xs := bilinearIdx(oh, ih, hs, halfPixel), bilinearIdx(ow, iw, ws, halfPixel)
	in := toF32Any(x)
	o := out.F32()
	rowIn, rowOut := int(iw)*c, int(ow)*c
	ctx.For(n*int(oh), float64(rowOut)*4, kernels.StartLoop, func(lo, hi int) {
		for r := lo; r < hi; r++ {
			b, y := r/int(oh), r%int(oh)
			top := in[(b*int(ih)+ys[y].lo)*rowIn:][:rowIn]
			bot := in[(b*int(ih)+ys[y].hi)*rowIn:][:rowIn]
			yl := ys[y].frac
			dst := o[r*rowOut:][:rowOut]
			for j, xi := range xs {
				for k := 0; k < c; k++ {
					tl, tr := top[xi.lo*c+k], top[xi.hi*c+k]
					bl, br := bot[xi.lo*c+k], bot[xi.hi*c+k]
					t := tl + (tr-tl)*xi.frac
					bb := bl + (br-bl)*xi.frac
					dst[j*c+k] = t + (bb-t)*yl
				}
			}
		}
	})
	return nil
}

func nearestIdx(out, in int64, scale float32, alignCorners, halfPixel bool) []int {
	idx := make([]int, out)
	for i := range idx {
		var f float32
		if halfPixel {
			f = (float32(i) + 0.5) * scale
		} else {
			f = float32(i) * scale
		}
		var v int64
		if alignCorners {
			v = int64(math.Round(float64(f)))
		} else {
			v = int64(math.Floor(float64(f)))
		}
		v = min(v, in-1)
		if halfPixel {
			v = max(v, 0)
		}
		idx[i] = int(v)
	}
	return idx
}

func bilinearIdx(out, in int64, scale float32, halfPixel bool) []lerpIdx {
	idx := make([]lerpIdx, out)
	for i := range idx {
		var f float32
		if halfPixel {
			f = (float32(i)+0.5)*scale - 0.5
		} else {
			f = float32(i) * scale
		}
		fl := float32(math.Floor(float64(f)))
		idx[i] = lerpIdx{lo: int(max(int64(fl), 0)), hi: int(min(int64(math.Ceil(float64(f))), in-1)), frac: f - fl}
	}
	return idx
}

// toF32Any converts any real tensor to float32 values.
func toF32Any(t *tensor.Tensor) []float32 {
	if t.DType.IsFloat() && t.DType != tensor.Double {
		return toF32(t)
	}
	v := make([]float32, t.NumElements()) //mstream:bounded a float32 copy of an input that is already in memory (at most 2x an 8-byte one), as toF32 makes
	for i := range v {
		v[i] = float32(t.ElementF64(i))
	}
	return v
}
