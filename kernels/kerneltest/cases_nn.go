package kerneltest

import (
	"fmt"
	"math"
	"math/rand"

	"mstream/status"
	"mstream/tensor"
)

// Families for the NN ops: Conv2D, DepthwiseConv2dNative,
// Conv2DBackpropInput, MaxPool(V2), AvgPool, FusedBatchNorm(V2/V3), LRN.
// NumPy has no convolution, so each reference is a direct float64 loop
// written from the op's definition (windows, padding rules), sharing no
// code with the kernels.

// window is TF's sliding-window arithmetic for one spatial dim: the output
// size and the padding before the first window.
func window(in, k, dil, stride int, padding string, explicit [2]int) (out, before int) {
	eff := (k-1)*dil + 1
	switch padding {
	case "VALID":
		return (in - eff + stride) / stride, 0
	case "EXPLICIT":
		return (in + explicit[0] + explicit[1] - eff + stride) / stride, explicit[0]
	}
	out = (in + stride - 1) / stride
	total := (out-1)*stride + eff - in
	if total < 0 {
		total = 0
	}
	return out, total / 2
}

type convSpec struct {
	n, h, w, c, kh, kw, o int
	sh, sw, dh, dw        int
	padding               string
	pads                  [4]int // top, bottom, left, right for EXPLICIT
}

func (s convSpec) explicitAttr() []int64 {
	return []int64{0, 0, int64(s.pads[0]), int64(s.pads[1]), int64(s.pads[2]), int64(s.pads[3]), 0, 0}
}

func (s convSpec) attrs() Attrs {
	a := Attrs{"strides": AInts(1, int64(s.sh), int64(s.sw), 1), "dilations": AInts(1, int64(s.dh), int64(s.dw), 1), "padding": AStr(s.padding)}
	if s.padding == "EXPLICIT" {
		a["explicit_paddings"] = AInts(s.explicitAttr()...)
	}
	return a
}

// refConv is a direct grouped, dilated, padded convolution: x NHWC,
// f [KH, KW, C/groups, O].
func refConv(s convSpec, x, f []float64) ([]float64, tensor.Shape) {
	oh, pt := window(s.h, s.kh, s.dh, s.sh, s.padding, [2]int{s.pads[0], s.pads[1]})
	ow, pl := window(s.w, s.kw, s.dw, s.sw, s.padding, [2]int{s.pads[2], s.pads[3]})
	cg := s.c
	groups := 1
	if len(f) > 0 {
		cg = len(f) / (s.kh * s.kw * s.o)
		if cg > 0 {
			groups = s.c / cg
		}
	}
	og := s.o / groups
	out := make([]float64, s.n*oh*ow*s.o)
	for n := 0; n < s.n; n++ {
		for i := 0; i < oh; i++ {
			for j := 0; j < ow; j++ {
				for o := 0; o < s.o; o++ {
					g := o / og
					var acc float64
					for a := 0; a < s.kh; a++ {
						for b := 0; b < s.kw; b++ {
							y, xx := i*s.sh-pt+a*s.dh, j*s.sw-pl+b*s.dw
							if y < 0 || y >= s.h || xx < 0 || xx >= s.w {
								continue
							}
							for c := 0; c < cg; c++ {
								acc += x[((n*s.h+y)*s.w+xx)*s.c+g*cg+c] * f[((a*s.kw+b)*cg+c)*s.o+o]
							}
						}
					}
					out[((n*oh+i)*ow+j)*s.o+o] = acc
				}
			}
		}
	}
	return out, tensor.Shape{int64(s.n), int64(oh), int64(ow), int64(s.o)}
}

// convTol is the tolerance for sums of K products of inputs in [-1, 1).
func convTol(dt tensor.DType, k int) float64 {
	switch dt {
	case tensor.Float:
		return 1e-6 * float64(max(k, 16))
	case tensor.Half:
		return 4e-3
	case tensor.Bfloat16:
		return 3e-2
	}
	return 0
}

func randConvSpec(r *rand.Rand) convSpec {
	s := convSpec{n: 1 + r.Intn(2), h: 1 + r.Intn(9), w: 1 + r.Intn(9), c: 1 + r.Intn(5), kh: 1 + r.Intn(3), kw: 1 + r.Intn(3), o: 1 + r.Intn(6),
		sh: 1 + r.Intn(3), sw: 1 + r.Intn(3), dh: 1, dw: 1, padding: pick(r, []string{"SAME", "VALID", "EXPLICIT"})}
	if r.Intn(3) == 0 {
		s.dh, s.dw = 1+r.Intn(3), 1+r.Intn(2)
	}
	for i := range s.pads {
		s.pads[i] = r.Intn(3)
	}
	return s
}

func (s convSpec) valid() bool {
	oh, _ := window(s.h, s.kh, s.dh, s.sh, s.padding, [2]int{s.pads[0], s.pads[1]})
	ow, _ := window(s.w, s.kw, s.dw, s.sw, s.padding, [2]int{s.pads[2], s.pads[3]})
	return oh >= 0 && ow >= 0
}

func init() {
	Add("Conv2D", conv2DCases)
	Add("DepthwiseConv2dNative", depthwiseCases)
	Add("Conv2DBackpropInput", convBackpropInputCases)
	Add("MaxPool", func(r *rand.Rand) []Case { return poolCases(r, "MaxPool") })
	Add("MaxPoolV2", func(r *rand.Rand) []Case { return poolCases(r, "MaxPoolV2") })
	Add("AvgPool", func(r *rand.Rand) []Case { return poolCases(r, "AvgPool") })
	for _, op := range []string{"FusedBatchNorm", "FusedBatchNormV2", "FusedBatchNormV3"} {
		op := op
		Add(op, func(r *rand.Rand) []Case { return batchNormCases(r, op) })
	}
	Add("LRN", lrnCases)
}

func conv2DCases(r *rand.Rand) []Case {
	var cs []Case
	for _, dt := range []tensor.DType{tensor.Float, tensor.Double, tensor.Half, tensor.Bfloat16, tensor.Int32} {
		for i := 0; i < 30; i++ {
			s := randConvSpec(r)
			if i == 0 { // 1x1, stride 1: the single-GEMM path
				s.kh, s.kw, s.sh, s.sw, s.dh, s.dw, s.padding = 1, 1, 1, 1, 1, 1, "VALID"
			}
			if i == 1 { // 1x1, stride 1, padded below and right only: not that path
				s.kh, s.kw, s.sh, s.sw, s.dh, s.dw, s.padding = 1, 1, 1, 1, 1, 1, "EXPLICIT"
				s.pads = [4]int{0, 2, 0, 1}
			}
			groups := 1
			if i%5 == 4 {
				groups = 1 + r.Intn(3)
				s.o = groups * (1 + r.Intn(3))
				s.c = groups * (1 + r.Intn(3))
			}
			if !s.valid() {
				continue
			}
			lo, hi := -1.0, 1.0
			if dt == tensor.Int32 {
				lo, hi = -3, 3
			}
			x := RandRange(r, dt, tensor.Shape{int64(s.n), int64(s.h), int64(s.w), int64(s.c)}, lo, hi)
			f := RandRange(r, dt, tensor.Shape{int64(s.kh), int64(s.kw), int64(s.c / groups), int64(s.o)}, lo, hi)
			want, shape := refConv(s, F64s(x), F64s(f))
			cs = append(cs, Case{Name: fmt.Sprintf("Conv2D %v %+v", dt, s), Node: NodeFor("Conv2D", s.attrs(), ins(x, f), nil), Inputs: ins(x, f),
				Want: ins(FromF64(dt, shape, want)), Tol: convTol(dt, s.kh*s.kw*s.c)})
		}
	}
	// A larger float case that spans several im2col tiles.
	s := convSpec{n: 2, h: 40, w: 37, c: 24, kh: 3, kw: 3, o: 20, sh: 1, sw: 1, dh: 1, dw: 1, padding: "SAME"}
	x := RandRange(r, tensor.Float, tensor.Shape{2, 40, 37, 24}, -1, 1)
	f := RandRange(r, tensor.Float, tensor.Shape{3, 3, 24, 20}, -1, 1)
	want, shape := refConv(s, F64s(x), F64s(f))
	cs = append(cs, Case{Name: "Conv2D large", Node: NodeFor("Conv2D", s.attrs(), ins(x, f), nil), Inputs: ins(x, f), Want: ins(FromF64(tensor.Float, shape, want)), Tol: convTol(tensor.Float, 216)})
	// Empty input depth or batch: the output is zeros or empty.
	for _, c := range []struct{ x, f, out tensor.Shape }{
		{tensor.Shape{1, 3, 3, 0}, tensor.Shape{2, 2, 1, 2}, tensor.Shape{1, 3, 3, 2}},
		{tensor.Shape{0, 3, 3, 2}, tensor.Shape{2, 2, 2, 2}, tensor.Shape{0, 3, 3, 2}},
		{tensor.Shape{1, 3, 3, 2}, tensor.Shape{2, 2, 2, 0}, tensor.Shape{1, 3, 3, 0}},
	} {
		x, f := Rand(r, tensor.Float, c.x), Rand(r, tensor.Float, c.f)
		cs = append(cs, Case{Node: NodeForUnknown("Conv2D", Attrs{"strides": AInts(1, 1, 1, 1), "padding": AStr("SAME")}, ins(x, f), nil), Inputs: ins(x, f), Want: ins(tensor.New(tensor.Float, c.out))})
	}
	// Errors, each as TF reports it.
	x, f = Rand(r, tensor.Float, tensor.Shape{1, 5, 5, 3}), Rand(r, tensor.Float, tensor.Shape{2, 2, 3, 4})
	f3 := Rand(r, tensor.Float, tensor.Shape{3, 3, 3, 4})
	base := func() Attrs { return Attrs{"strides": AInts(1, 1, 1, 1), "padding": AStr("VALID")} }
	with := func(v Attrs) Attrs {
		a := base()
		for n, x := range v {
			a[n] = x
		}
		return a
	}
	cs = append(cs,
		Case{Node: NodeForUnknown("Conv2D", with(Attrs{"data_format": AStr("NCHW"), "strides": AInts(1, 1, 1, 1)}), ins(Rand(r, tensor.Float, tensor.Shape{1, 3, 5, 5}), f), nil),
			Inputs: ins(Rand(r, tensor.Float, tensor.Shape{1, 3, 5, 5}), f), Err: status.Unimplemented, ErrMsg: "only supports the NHWC tensor format on the CPU"},
		Case{Node: NodeForUnknown("Conv2D", base(), ins(x, Rand(r, tensor.Float, tensor.Shape{2, 2, 2, 4})), nil), Inputs: ins(x, Rand(r, tensor.Float, tensor.Shape{2, 2, 2, 4})), Err: status.InvalidArgument, ErrMsg: "evenly divisible"},
		Case{Node: NodeForUnknown("Conv2D", base(), ins(Rand(r, tensor.Float, tensor.Shape{5, 5, 3}), f), nil), Inputs: ins(Rand(r, tensor.Float, tensor.Shape{5, 5, 3}), f), Err: status.InvalidArgument},
		Case{Node: NodeForUnknown("Conv2D", base(), ins(Rand(r, tensor.Float, tensor.Shape{1, 1, 1, 3}), f3), nil), Inputs: ins(Rand(r, tensor.Float, tensor.Shape{1, 1, 1, 3}), f3), Err: status.InvalidArgument, ErrMsg: "negative"},
	)
	for _, a := range []Attrs{
		with(Attrs{"strides": AInts(2, 1, 1, 1)}),
		with(Attrs{"strides": AInts(1, 0, 1, 1)}),
		with(Attrs{"strides": AInts(1, 1, 1)}),
		with(Attrs{"dilations": AInts(1, 1, 1, 2)}),
		with(Attrs{"padding": AStr("EXPLICIT"), "explicit_paddings": AInts(0, 0, 1, 1)}),
		with(Attrs{"padding": AStr("EXPLICIT"), "explicit_paddings": AInts(1, 0, 1, 1, 1, 1, 0, 0)}),
		with(Attrs{"padding": AStr("EXPLICIT"), "explicit_paddings": AInts(0, 0, -1, 1, 1, 1, 0, 0)}),
		with(Attrs{"explicit_paddings": AInts(0, 0, 1, 1, 1, 1, 0, 0)}),
	} {
		n, err := TryNodeFor("Conv2D", a, ins(x, f), nil)
		if err != nil {
			continue // rejected when the graph is built, as TF's shape function does
		}
		code := status.InvalidArgument
		if a["strides"].GetList().GetI()[0] == 2 || len(a["dilations"].GetList().GetI()) == 4 {
			code = status.Unimplemented
		}
		cs = append(cs, Case{Node: n, Inputs: ins(x, f), Err: code})
	}
	return cs
}

func depthwiseCases(r *rand.Rand) []Case {
	var cs []Case
	for _, dt := range []tensor.DType{tensor.Float, tensor.Double, tensor.Half, tensor.Bfloat16} {
		for i := 0; i < 20; i++ {
			s := randConvSpec(r)
			s.sw, s.dh, s.dw = s.sh, 1, 1
			mult := 1 + r.Intn(3)
			if !s.valid() {
				continue
			}
			x := RandRange(r, dt, tensor.Shape{int64(s.n), int64(s.h), int64(s.w), int64(s.c)}, -1, 1)
			f := RandRange(r, dt, tensor.Shape{int64(s.kh), int64(s.kw), int64(s.c), int64(mult)}, -1, 1)
			// Depthwise is the grouped convolution with one group per input
			// channel and the filter regrouped to [KH, KW, 1, C*M].
			s.o = s.c * mult
			want, shape := refConv(s, F64s(x), F64s(f))
			cs = append(cs, Case{Name: fmt.Sprintf("Depthwise %v %+v x%d", dt, s, mult), Node: NodeFor("DepthwiseConv2dNative", s.attrs(), ins(x, f), nil), Inputs: ins(x, f),
				Want: ins(FromF64(dt, shape, want)), Tol: convTol(dt, s.kh*s.kw)})
		}
	}
	x, f := Rand(r, tensor.Float, tensor.Shape{1, 4, 4, 3}), Rand(r, tensor.Float, tensor.Shape{2, 2, 2, 1})
	bad(&cs, "DepthwiseConv2dNative", Attrs{"strides": AInts(1, 1, 1, 1), "padding": AStr("SAME")}, ins(x, f), nil, status.InvalidArgument)
	f = Rand(r, tensor.Float, tensor.Shape{2, 2, 3, 1})
	bad(&cs, "DepthwiseConv2dNative", Attrs{"strides": AInts(1, 1, 2, 1), "padding": AStr("SAME")}, ins(x, f), nil, status.InvalidArgument)
	bad(&cs, "DepthwiseConv2dNative", Attrs{"strides": AInts(1, 1, 1, 1), "padding": AStr("SAME"), "dilations": AInts(1, 2, 2, 1)}, ins(x, f), nil, status.Unimplemented)
	xc := Rand(r, tensor.Float, tensor.Shape{1, 3, 4, 4})
	bad(&cs, "DepthwiseConv2dNative", Attrs{"strides": AInts(1, 1, 1, 1), "padding": AStr("SAME"), "data_format": AStr("NCHW")}, ins(xc, f), nil, status.Unimplemented)
	return cs
}

// refConvBackpropInput scatters each output gradient back through the
// filter: dx[n, y, x, c] += dy[n, i, j, o] * f[a, b, c, o] for every tap
// of every window.
func refConvBackpropInput(s convSpec, dy, f []float64) []float64 {
	oh, pt := window(s.h, s.kh, s.dh, s.sh, s.padding, [2]int{s.pads[0], s.pads[1]})
	ow, pl := window(s.w, s.kw, s.dw, s.sw, s.padding, [2]int{s.pads[2], s.pads[3]})
	dx := make([]float64, s.n*s.h*s.w*s.c)
	for n := 0; n < s.n; n++ {
		for i := 0; i < oh; i++ {
			for j := 0; j < ow; j++ {
				for a := 0; a < s.kh; a++ {
					for b := 0; b < s.kw; b++ {
						y, x := i*s.sh-pt+a, j*s.sw-pl+b
						if y < 0 || y >= s.h || x < 0 || x >= s.w {
							continue
						}
						for c := 0; c < s.c; c++ {
							for o := 0; o < s.o; o++ {
								dx[((n*s.h+y)*s.w+x)*s.c+c] += dy[((n*oh+i)*ow+j)*s.o+o] * f[((a*s.kw+b)*s.c+c)*s.o+o]
							}
						}
					}
				}
			}
		}
	}
	return dx
}

func convBackpropInputCases(r *rand.Rand) []Case {
	var cs []Case
	for _, dt := range []tensor.DType{tensor.Float, tensor.Double, tensor.Half, tensor.Bfloat16, tensor.Int32} {
		for i := 0; i < 20; i++ {
			s := randConvSpec(r)
			s.dh, s.dw = 1, 1
			oh, _ := window(s.h, s.kh, 1, s.sh, s.padding, [2]int{s.pads[0], s.pads[1]})
			ow, _ := window(s.w, s.kw, 1, s.sw, s.padding, [2]int{s.pads[2], s.pads[3]})
			if oh < 0 || ow < 0 {
				continue
			}
			lo, hi := -1.0, 1.0
			if dt == tensor.Int32 {
				lo, hi = -3, 3
			}
			f := RandRange(r, dt, tensor.Shape{int64(s.kh), int64(s.kw), int64(s.c), int64(s.o)}, lo, hi)
			dy := RandRange(r, dt, tensor.Shape{int64(s.n), int64(oh), int64(ow), int64(s.o)}, lo, hi)
			sizes := IntVec(tensor.Int32, int64(s.n), int64(s.h), int64(s.w), int64(s.c))
			if i%4 == 3 {
				sizes = IntVec(tensor.Int32, int64(s.h), int64(s.w))
			}
			want := refConvBackpropInput(s, F64s(dy), F64s(f))
			cs = append(cs, Case{Name: fmt.Sprintf("Conv2DBackpropInput %v %+v", dt, s), Node: NodeFor("Conv2DBackpropInput", s.attrs(), ins(sizes, f, dy), nil), Inputs: ins(sizes, f, dy),
				Want: ins(FromF64(dt, tensor.Shape{int64(s.n), int64(s.h), int64(s.w), int64(s.c)}, want)), Tol: convTol(dt, s.kh*s.kw*s.o)})
		}
	}
	f, dy := Rand(r, tensor.Float, tensor.Shape{2, 2, 3, 4}), Rand(r, tensor.Float, tensor.Shape{1, 4, 4, 4})
	a := Attrs{"strides": AInts(1, 1, 1, 1), "padding": AStr("VALID")}
	bad(&cs, "Conv2DBackpropInput", a, ins(IntVec(tensor.Int32, 1, 6, 6, 3), f, dy), nil, status.InvalidArgument)
	bad(&cs, "Conv2DBackpropInput", a, ins(IntVec(tensor.Int32, 1, 5, 5), f, dy), nil, status.InvalidArgument)
	bad(&cs, "Conv2DBackpropInput", a, ins(IntVec(tensor.Int32, 1, 5, 5, 6), f, dy), nil, status.InvalidArgument)
	bad(&cs, "Conv2DBackpropInput", Attrs{"strides": AInts(1, 1, 1, 1), "padding": AStr("VALID"), "dilations": AInts(1, 2, 2, 1)}, ins(IntVec(tensor.Int32, 1, 6, 6, 3), f, dy), nil, status.InvalidArgument)
	return cs
}

// refPool is max or average pooling (spatial or across depth); average
// counts only the in-bounds elements of a window, as TF does.
func refPool(op string, x []float64, n, h, w, c int, k, st [4]int, padding string, pads [4]int) ([]float64, tensor.Shape) {
	if k[3] > 1 { // depth pooling: windows of k[3] channels, 1x1 spatially
		oh, _ := window(h, 1, 1, st[1], padding, [2]int{})
		ow, _ := window(w, 1, 1, st[2], padding, [2]int{})
		od := c / k[3]
		out := make([]float64, n*oh*ow*od)
		for b := 0; b < n; b++ {
			for i := 0; i < oh; i++ {
				for j := 0; j < ow; j++ {
					for d := 0; d < od; d++ {
						m := math.Inf(-1)
						for q := 0; q < k[3]; q++ {
							m = math.Max(m, x[((b*h+i*st[1])*w+j*st[2])*c+d*k[3]+q])
						}
						out[((b*oh+i)*ow+j)*od+d] = m
					}
				}
			}
		}
		return out, tensor.Shape{int64(n), int64(oh), int64(ow), int64(od)}
	}
	oh, pt := window(h, k[1], 1, st[1], padding, [2]int{pads[0], pads[1]})
	ow, pl := window(w, k[2], 1, st[2], padding, [2]int{pads[2], pads[3]})
	out := make([]float64, n*oh*ow*c)
	for b := 0; b < n; b++ {
		for i := 0; i < oh; i++ {
			for j := 0; j < ow; j++ {
				for d := 0; d < c; d++ {
					m, sum, cnt := math.Inf(-1), 0.0, 0
					for a := 0; a < k[1]; a++ {
						for e := 0; e < k[2]; e++ {
							y, xx := i*st[1]-pt+a, j*st[2]-pl+e
							if y < 0 || y >= h || xx < 0 || xx >= w {
								continue
							}
							v := x[((b*h+y)*w+xx)*c+d]
							m = math.Max(m, v)
							sum += v
							cnt++
						}
					}
					if op == "AvgPool" {
						m = sum / float64(cnt)
					}
					out[((b*oh+i)*ow+j)*c+d] = m
				}
			}
		}
	}
	return out, tensor.Shape{int64(n), int64(oh), int64(ow), int64(c)}
}

func poolCases(r *rand.Rand, op string) []Case {
	var cs []Case
	types := []tensor.DType{tensor.Float, tensor.Double, tensor.Half, tensor.Bfloat16}
	if op != "AvgPool" {
		types = append(types, tensor.Int32, tensor.Int64, tensor.Uint8, tensor.Int8, tensor.Int16, tensor.Uint16)
	}
	for _, dt := range types {
		for i := 0; i < 16; i++ {
			n, h, w, c := 1+r.Intn(2), 1+r.Intn(8), 1+r.Intn(8), 1+r.Intn(4)
			k := [4]int{1, 1 + r.Intn(3), 1 + r.Intn(3), 1}
			st := [4]int{1, 1 + r.Intn(3), 1 + r.Intn(3), 1}
			padding := pick(r, []string{"SAME", "VALID"})
			var pads [4]int
			if op == "MaxPool" && i%4 == 3 {
				padding = "EXPLICIT"
				for j := range pads {
					pads[j] = r.Intn(k[1+j/2])
				}
			}
			if op == "MaxPool" && i == 15 { // pooling across depth
				k = [4]int{1, 1, 1, 2}
				st = [4]int{1, 1 + r.Intn(2), 1 + r.Intn(2), 2}
				padding, pads = pick(r, []string{"SAME", "VALID"}), [4]int{}
				c = 2 * (1 + r.Intn(3))
			}
			oh, _ := window(h, k[1], 1, st[1], padding, [2]int{pads[0], pads[1]})
			ow, _ := window(w, k[2], 1, st[2], padding, [2]int{pads[2], pads[3]})
			if oh < 0 || ow < 0 || (op == "AvgPool" && padding == "VALID" && (oh == 0 || ow == 0)) {
				continue
			}
			x := Rand(r, dt, tensor.Shape{int64(n), int64(h), int64(w), int64(c)})
			want, shape := refPool(op, F64s(x), n, h, w, c, k, st, padding, pads)
			ks, ss := AInts(1, int64(k[1]), int64(k[2]), int64(k[3])), AInts(1, int64(st[1]), int64(st[2]), int64(st[3]))
			var node Case
			if op == "MaxPoolV2" {
				kt, stt := IntVec(tensor.Int32, 1, int64(k[1]), int64(k[2]), int64(k[3])), IntVec(tensor.Int32, 1, int64(st[1]), int64(st[2]), int64(st[3]))
				node = Case{Node: NodeFor(op, Attrs{"padding": AStr(padding)}, ins(x, kt, stt), nil), Inputs: ins(x, kt, stt)}
			} else {
				a := Attrs{"ksize": ks, "strides": ss, "padding": AStr(padding)}
				if padding == "EXPLICIT" {
					a["explicit_paddings"] = AInts(0, 0, int64(pads[0]), int64(pads[1]), int64(pads[2]), int64(pads[3]), 0, 0)
				}
				node = Case{Node: NodeFor(op, a, ins(x), nil), Inputs: ins(x)}
			}
			node.Name = fmt.Sprintf("%s %v x[%d,%d,%d,%d] k%v s%v %s %v", op, dt, n, h, w, c, k, st, padding, pads)
			node.Want = ins(FromF64(dt, shape, want))
			cs = append(cs, node)
		}
	}
	x := Rand(r, tensor.Float, tensor.Shape{1, 4, 4, 2})
	pa := func(k, s []int64, extra Attrs) Attrs {
		a := Attrs{"ksize": AInts(k...), "strides": AInts(s...), "padding": AStr("VALID")}
		for n, v := range extra {
			a[n] = v
		}
		return a
	}
	if op == "MaxPoolV2" {
		bad(&cs, op, Attrs{"padding": AStr("VALID")}, ins(x, IntVec(tensor.Int32, 1, 2, 2), IntVec(tensor.Int32, 1, 1, 1, 1)), nil, status.InvalidArgument)
		bad(&cs, op, Attrs{"padding": AStr("VALID")}, ins(x, IntVec(tensor.Int32, 1, 0, 2, 1), IntVec(tensor.Int32, 1, 1, 1, 1)), nil, status.InvalidArgument)
		return cs
	}
	bad(&cs, op, pa([]int64{1, 0, 2, 1}, []int64{1, 1, 1, 1}, nil), ins(x), nil, status.InvalidArgument)
	// A window larger than the input gives an empty output, not an error.
	cs = append(cs, Case{Node: NodeForUnknown(op, pa([]int64{1, 5, 2, 1}, []int64{1, 1, 1, 1}, nil), ins(x), nil), Inputs: ins(x), Want: ins(tensor.New(tensor.Float, tensor.Shape{1, 0, 3, 2}))})
	bad(&cs, op, pa([]int64{1, 2, 2, 1}, []int64{1, 1, 1, 1}, nil), ins(Rand(r, tensor.Float, tensor.Shape{4, 4, 2})), nil, status.InvalidArgument)
	bad(&cs, op, pa([]int64{2, 2, 2, 1}, []int64{1, 1, 1, 1}, nil), ins(x), nil, status.Unimplemented)
	xc := Rand(r, tensor.Float, tensor.Shape{1, 2, 4, 4})
	bad(&cs, op, pa([]int64{1, 1, 2, 2}, []int64{1, 1, 1, 1}, Attrs{"data_format": AStr("NCHW")}), ins(xc), nil, status.InvalidArgument)
	if op == "MaxPool" {
		bad(&cs, op, pa([]int64{1, 2, 2, 2}, []int64{1, 1, 1, 2}, nil), ins(x), nil, status.Unimplemented)
		bad(&cs, op, pa([]int64{1, 1, 1, 3}, []int64{1, 1, 1, 3}, nil), ins(x), nil, status.Unimplemented)
		bad(&cs, op, pa([]int64{1, 2, 2, 1}, []int64{1, 1, 1, 1}, Attrs{"padding": AStr("EXPLICIT"), "explicit_paddings": AInts(0, 0, 2, 0, 0, 0, 0, 0)}), ins(x), nil, status.InvalidArgument)
	} else {
		bad(&cs, op, pa([]int64{1, 1, 1, 2}, []int64{1, 1, 1, 2}, nil), ins(x), nil, status.Unimplemented)
	}
	return cs
}

func batchNormCases(r *rand.Rand, op string) []Case {
	var cs []Case
	types := []tensor.DType{tensor.Float}
	if op != "FusedBatchNorm" {
		types = append(types, tensor.Half, tensor.Bfloat16)
	}
	nOut := 5
	if op == "FusedBatchNormV3" {
		nOut = 6
	}
	for _, dt := range types {
		for _, shape := range []tensor.Shape{{2, 3, 4, 5}, {1, 1, 1, 3}, {3, 2, 2, 1}, {2, 5, 3, 7}, {1, 2, 3, 2, 4}} {
			if len(shape) == 5 && op != "FusedBatchNormV3" {
				continue
			}
			for _, nchw := range []bool{false, true} {
				for _, training := range []bool{false, true} {
					x := Rand(r, dt, shape)
					ax := len(shape) - 1
					format := "NHWC"
					if len(shape) == 5 {
						format = "NDHWC"
					}
					if nchw {
						ax = 1
						format = "NCHW"
						if len(shape) == 5 {
							format = "NCDHW"
						}
					}
					c := int(shape[ax])
					scale, offset := RandRange(r, tensor.Float, tensor.Shape{int64(c)}, 0.5, 2), Rand(r, tensor.Float, tensor.Shape{int64(c)})
					mean, variance := Rand(r, tensor.Float, tensor.Shape{int64(c)}), RandRange(r, tensor.Float, tensor.Shape{int64(c)}, 0.1, 3)
					eps := float32(0.001)
					factor := float32(1)
					if training && r.Intn(2) == 0 {
						factor = 0.25
					}
					attrs := Attrs{"T": AType(dt), "epsilon": AFloat(eps), "data_format": AStr(format), "is_training": ABool(training), "exponential_avg_factor": AFloat(factor)}
					if op != "FusedBatchNorm" {
						attrs["U"] = AType(tensor.Float)
					}
					in := ins(x, scale, offset, mean, variance)
					want := refBatchNorm(F64s(x), shape, ax, F64s(scale), F64s(offset), F64s(mean), F64s(variance), float64(eps), float64(factor), training)
					ws := []*tensor.Tensor{FromF64(dt, shape, want[0])}
					for _, w := range want[1:] {
						ws = append(ws, FromF64(tensor.Float, tensor.Shape{int64(c)}, w))
					}
					if !training {
						ws[3], ws[4] = nil, nil // TF leaves the reserve spaces unset in inference
					}
					if nOut == 6 {
						ws = append(ws, nil) // a placeholder scalar on CPU
					}
					tol := Tol(dt) * 4
					cs = append(cs, Case{Name: fmt.Sprintf("%s %v %v %s training=%v factor=%v", op, dt, shape, format, training, factor),
						Node: NodeFor(op, attrs, in, nil), Inputs: in, Want: ws, Tol: tol})
				}
			}
		}
	}
	// Keras's LayerNormalization: NCHW [1, rows, cols, 1] in training, scale
	// 1 and offset 0 (its gamma and beta come after), one row per token.
	for _, shape := range []tensor.Shape{{1, 12, 32, 1}, {1, 3, 257, 1}, {1, 256, 130, 1}} {
		x := RandRange(r, tensor.Float, shape, -3, 5)
		c := shape[1]
		ones, zeros := FromF64(tensor.Float, tensor.Shape{c}, fill(int(c), 1)), FromF64(tensor.Float, tensor.Shape{c}, fill(int(c), 0))
		attrs := Attrs{"epsilon": AFloat(0.001), "data_format": AStr("NCHW"), "is_training": ABool(true)}
		if op != "FusedBatchNorm" {
			attrs["U"] = AType(tensor.Float)
		}
		in := ins(x, ones, zeros, zeros, zeros)
		want := refBatchNorm(F64s(x), shape, 1, fill(int(c), 1), fill(int(c), 0), fill(int(c), 0), fill(int(c), 0), 0.001, 1, true)
		ws := []*tensor.Tensor{FromF64(tensor.Float, shape, want[0])}
		for _, w := range want[1:] {
			ws = append(ws, FromF64(tensor.Float, tensor.Shape{c}, w))
		}
		if nOut == 6 {
			ws = append(ws, nil)
		}
		cs = append(cs, Case{Name: fmt.Sprintf("%s LayerNorm form %v", op, shape), Node: NodeFor(op, attrs, in, nil), Inputs: in, Want: ws, Tol: Tol(tensor.Float) * 4})
	}
	// An empty input gives NaN statistics.
	x := Rand(r, tensor.Float, tensor.Shape{0, 2, 2, 3})
	v3 := func() *tensor.Tensor { return Rand(r, tensor.Float, tensor.Shape{3}) }
	attrs := Attrs{"is_training": ABool(false)}
	if op != "FusedBatchNorm" {
		attrs["U"] = AType(tensor.Float)
	}
	nan := FromF64(tensor.Float, tensor.Shape{3}, []float64{math.NaN(), math.NaN(), math.NaN()})
	want := []*tensor.Tensor{tensor.New(tensor.Float, x.Shape), nan, nan, nil, nil}
	if nOut == 6 {
		want = append(want, nil)
	}
	in := ins(x, v3(), v3(), v3(), v3())
	cs = append(cs, Case{Node: NodeFor(op, attrs, in, nil), Inputs: in, Want: want})
	// Errors: rank, channel mismatch.
	bad(&cs, op, attrs, ins(Rand(r, tensor.Float, tensor.Shape{2, 3}), v3(), v3(), v3(), v3()), nil, status.InvalidArgument)
	bad(&cs, op, attrs, ins(Rand(r, tensor.Float, tensor.Shape{1, 2, 2, 4}), v3(), v3(), v3(), v3()), nil, status.InvalidArgument)
	return cs
}

// refBatchNorm returns y and the five statistics outputs of
// FusedBatchNorm: inference normalises with the given mean and variance;
// training with the batch's (biased) variance and reports the running
// statistics (unbiased variance, blended by the exponential factor).
func refBatchNorm(x []float64, shape tensor.Shape, ax int, scale, offset, mean, variance []float64, eps, factor float64, training bool) [5][]float64 {
	c := int(shape[ax])
	inner := 1
	for _, d := range shape[ax+1:] {
		inner *= int(d)
	}
	ch := func(i int) int { return i / inner % c }
	m, v := mean, variance
	var out [5][]float64
	if training {
		cnt := len(x) / c
		bm, bv := make([]float64, c), make([]float64, c)
		for i, val := range x {
			bm[ch(i)] += val / float64(cnt)
		}
		for i, val := range x {
			d := val - bm[ch(i)]
			bv[ch(i)] += d * d / float64(cnt)
		}
		m, v = bm, bv
		adj := float64(cnt) / float64(max(cnt-1, 1))
		rm, rv := make([]float64, c), make([]float64, c)
		for k := 0; k < c; k++ {
			rm[k] = (1-factor)*mean[k] + factor*bm[k]
			rv[k] = (1-factor)*variance[k] + factor*adj*bv[k]
		}
		out[1], out[2], out[3], out[4] = rm, rv, bm, bv
	} else {
		out[1], out[2] = mean, variance
	}
	y := make([]float64, len(x))
	for i, val := range x {
		k := ch(i)
		y[i] = (val-m[k])/math.Sqrt(v[k]+eps)*scale[k] + offset[k]
	}
	out[0] = y
	return out
}

func lrnCases(r *rand.Rand) []Case {
	var cs []Case
	for _, dt := range []tensor.DType{tensor.Float, tensor.Half, tensor.Bfloat16} {
		for i := 0; i < 8; i++ {
			shape := tensor.Shape{int64(1 + r.Intn(2)), int64(1 + r.Intn(3)), int64(1 + r.Intn(3)), int64(1 + r.Intn(12))}
			radius := int64(r.Intn(4))
			bias, alpha, beta := 0.5+r.Float64()*2, r.Float64(), 0.25+r.Float64()
			x := Rand(r, dt, shape)
			xs := F64s(x)
			c := int(shape[3])
			want := make([]float64, len(xs))
			for j := range xs {
				d := j % c
				var sq float64
				for q := max(0, d-int(radius)); q <= min(c-1, d+int(radius)); q++ {
					sq += xs[j-d+q] * xs[j-d+q]
				}
				want[j] = xs[j] / math.Pow(float64(float32(bias))+float64(float32(alpha))*sq, float64(float32(beta)))
			}
			attrs := Attrs{"depth_radius": AInt(radius), "bias": AFloat(float32(bias)), "alpha": AFloat(float32(alpha)), "beta": AFloat(float32(beta)), "T": AType(dt)}
			cs = append(cs, Case{Node: NodeFor("LRN", attrs, ins(x), nil), Inputs: ins(x), Want: ins(FromF64(dt, shape, want)), Tol: Tol(dt) * 4})
		}
	}
	bad(&cs, "LRN", nil, ins(Rand(r, tensor.Float, tensor.Shape{2, 3})), nil, status.InvalidArgument)
	return cs
}

// fill is n copies of v.
func fill(n int, v float64) []float64 {
	s := make([]float64, n)
	for i := range s {
		s[i] = v
	}
	return s
}
