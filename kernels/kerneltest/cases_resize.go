package kerneltest

import (
	"fmt"
	"math"
	"math/rand"

	"mstream/status"
	"mstream/tensor"
)

// ResizeBilinear and ResizeNearestNeighbor against a float64 reference of
// TF's coordinate mappings (legacy, align_corners, half_pixel_centers).
// The source coordinate of each output pixel is computed in float32, as
// TF computes it, so both sides pick the same pixels at exact ties.

func srcCoord(i, in, out int, alignCorners, halfPixel, nearest bool) float32 {
	scale := float32(in) / float32(out)
	if alignCorners && in > 1 && out > 1 {
		scale = float32(in-1) / float32(out-1)
	}
	switch {
	case halfPixel && nearest:
		return (float32(i) + 0.5) * scale
	case halfPixel:
		return (float32(i)+0.5)*scale - 0.5
	}
	return float32(i) * scale
}

func refResize(x []float64, n, h, w, c, oh, ow int, bilinear, ac, hp bool) []float64 {
	out := make([]float64, n*oh*ow*c)
	at := func(b, y, xx, k int) float64 { return x[((b*h+y)*w+xx)*c+k] }
	for b := 0; b < n; b++ {
		for i := 0; i < oh; i++ {
			fy := srcCoord(i, h, oh, ac, hp, !bilinear)
			for j := 0; j < ow; j++ {
				fx := srcCoord(j, w, ow, ac, hp, !bilinear)
				for k := 0; k < c; k++ {
					var v float64
					if !bilinear {
						pick := func(f float32, size int) int {
							var p int
							if ac {
								p = int(math.Round(float64(f)))
							} else {
								p = int(math.Floor(float64(f)))
							}
							return max(0, min(p, size-1))
						}
						v = at(b, pick(fy, h), pick(fx, w), k)
					} else {
						y0, x0 := math.Floor(float64(fy)), math.Floor(float64(fx))
						ly, lx := float64(fy)-y0, float64(fx)-x0
						yl, yh := max(int(y0), 0), min(int(math.Ceil(float64(fy))), h-1)
						xl, xh := max(int(x0), 0), min(int(math.Ceil(float64(fx))), w-1)
						top := at(b, yl, xl, k) + (at(b, yl, xh, k)-at(b, yl, xl, k))*lx
						bot := at(b, yh, xl, k) + (at(b, yh, xh, k)-at(b, yh, xl, k))*lx
						v = top + (bot-top)*ly
					}
					out[((b*oh+i)*ow+j)*c+k] = v
				}
			}
		}
	}
	return out
}

func init() {
	for _, op := range []string{"ResizeBilinear", "ResizeNearestNeighbor"} {
		bilinear := op == "ResizeBilinear"
		op := op
		Add(op, func(r *rand.Rand) []Case {
			var cs []Case
			types := []tensor.DType{tensor.Float, tensor.Double, tensor.Half, tensor.Bfloat16, tensor.Int8, tensor.Uint8, tensor.Int16, tensor.Uint16, tensor.Int32, tensor.Int64}
			for _, dt := range types {
				for i := 0; i < 9; i++ {
					ac, hp := i%3 == 1, i%3 == 2
					n, h, w, c := 1+r.Intn(2), 1+r.Intn(6), 1+r.Intn(6), 1+r.Intn(3)
					oh, ow := 1+r.Intn(9), 1+r.Intn(9)
					x := Rand(r, dt, tensor.Shape{int64(n), int64(h), int64(w), int64(c)})
					want := refResize(F64s(x), n, h, w, c, oh, ow, bilinear, ac, hp)
					odt := dt
					if bilinear {
						odt = tensor.Float
					}
					size := IntVec(tensor.Int32, int64(oh), int64(ow))
					cs = append(cs, Case{Name: fmt.Sprintf("%s %v [%d,%d,%d,%d]->%dx%d ac=%v hp=%v", op, dt, n, h, w, c, oh, ow, ac, hp),
						Node: NodeFor(op, Attrs{"align_corners": ABool(ac), "half_pixel_centers": ABool(hp)}, ins(x, size), nil), Inputs: ins(x, size),
						Want: ins(FromF64(odt, tensor.Shape{int64(n), int64(oh), int64(ow), int64(c)}, want)), Tol: 4 * Tol(odt)})
				}
			}
			x := Rand(r, tensor.Float, tensor.Shape{1, 2, 2, 1})
			two := IntVec(tensor.Int32, 3, 3)
			bad(&cs, op, Attrs{"align_corners": ABool(true), "half_pixel_centers": ABool(true)}, ins(x, two), nil, status.InvalidArgument)
			bad(&cs, op, nil, ins(x, IntVec(tensor.Int32, 0, 3)), nil, status.InvalidArgument)
			bad(&cs, op, nil, ins(x, IntVec(tensor.Int32, 3)), nil, status.InvalidArgument)
			bad(&cs, op, nil, ins(Rand(r, tensor.Float, tensor.Shape{2, 2, 1}), two), nil, status.InvalidArgument)
			bad(&cs, op, nil, ins(Rand(r, tensor.Float, tensor.Shape{1, 0, 2, 1}), two), nil, status.InvalidArgument)
			return cs
		})
	}
}
