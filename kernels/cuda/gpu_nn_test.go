package cuda

import (
	"math"
	"strings"
	"testing"

	"mstream/kernels/kerneltest"
	"mstream/proto/tfpb"
	"mstream/tensor"
)

type convCase struct {
	x, f         tensor.Shape
	strides, dil []int64
	padding      string
	explicit     []int64
}

func (c convCase) attrs() kerneltest.Attrs {
	a := kerneltest.Attrs{"strides": kerneltest.AInts(c.strides...), "padding": kerneltest.AStr(c.padding)}
	if c.dil != nil {
		a["dilations"] = kerneltest.AInts(c.dil...)
	}
	if c.explicit != nil {
		a["explicit_paddings"] = kerneltest.AInts(c.explicit...)
	}
	return a
}

var convCases = []convCase{
	{tensor.Shape{2, 9, 9, 3}, tensor.Shape{3, 3, 3, 8}, []int64{1, 1, 1, 1}, nil, "SAME", nil},
	{tensor.Shape{2, 9, 9, 3}, tensor.Shape{3, 3, 3, 8}, []int64{1, 2, 2, 1}, nil, "VALID", nil},
	{tensor.Shape{1, 16, 16, 8}, tensor.Shape{1, 1, 8, 16}, []int64{1, 1, 1, 1}, nil, "VALID", nil}, // plain GEMM
	{tensor.Shape{3, 7, 6, 4}, tensor.Shape{2, 3, 4, 5}, []int64{1, 1, 2, 1}, []int64{1, 2, 1, 1}, "SAME", nil},
	{tensor.Shape{1, 8, 8, 2}, tensor.Shape{3, 3, 2, 4}, []int64{1, 1, 1, 1}, nil, "EXPLICIT", []int64{0, 0, 1, 2, 0, 1, 0, 0}},
	{tensor.Shape{2, 6, 6, 6}, tensor.Shape{3, 3, 2, 9}, []int64{1, 1, 1, 1}, nil, "SAME", nil}, // 3 groups
	{tensor.Shape{1, 56, 56, 64}, tensor.Shape{3, 3, 64, 64}, []int64{1, 1, 1, 1}, nil, "SAME", nil},
	{tensor.Shape{0, 5, 5, 3}, tensor.Shape{3, 3, 3, 4}, []int64{1, 1, 1, 1}, nil, "SAME", nil},
	{tensor.Shape{1, 5, 5, 0}, tensor.Shape{3, 3, 1, 4}, []int64{1, 1, 1, 1}, nil, "SAME", nil}, // empty input: zeros
}

func TestConv2D(t *testing.T) {
	r := newRand(t)
	defer SetTF32(true)
	for _, tf32 := range []bool{false, true} {
		SetTF32(tf32)
		for _, dt := range []tensor.DType{tensor.Float, tensor.Double, tensor.Half, tensor.Bfloat16, tensor.Int32} {
			for _, c := range convCases {
				x, f := randT(r, dt, c.x, -1, 1, false), randT(r, dt, c.f, -1, 1, false)
				if dt == tensor.Int32 {
					x, f = randT(r, dt, c.x, -5, 5, false), randT(r, dt, c.f, -5, 5, false)
				}
				kk := float64(c.f[0] * c.f[1] * c.f[2])
				tol := 0.0
				switch dt {
				case tensor.Float:
					tol = 1e-5 * math.Max(1, math.Sqrt(kk))
					if tf32 {
						tol = 3e-3 * math.Max(1, math.Sqrt(kk))
					}
				case tensor.Half:
					tol = 2e-3 * math.Max(1, math.Sqrt(kk))
				case tensor.Bfloat16:
					tol = 1.6e-2 * math.Max(1, math.Sqrt(kk))
				}
				check(t, node("Conv2D", c.attrs(), x, f), []*tensor.Tensor{x, f}, tol)
			}
		}
	}
}

func TestDepthwiseConv(t *testing.T) {
	r := newRand(t)
	for _, dt := range gpuFloats {
		for _, c := range []convCase{
			{tensor.Shape{2, 9, 9, 3}, tensor.Shape{3, 3, 3, 2}, []int64{1, 1, 1, 1}, nil, "SAME", nil},
			{tensor.Shape{1, 12, 10, 8}, tensor.Shape{5, 5, 8, 1}, []int64{1, 2, 2, 1}, nil, "VALID", nil},
			{tensor.Shape{1, 7, 7, 4}, tensor.Shape{3, 3, 4, 3}, []int64{1, 1, 1, 1}, nil, "EXPLICIT", []int64{0, 0, 2, 1, 1, 0, 0, 0}},
		} {
			x, f := randT(r, dt, c.x, -1, 1, false), randT(r, dt, c.f, -1, 1, false)
			tol := 0.0
			if dt == tensor.Float {
				tol = 1e-5 * 5
			}
			check(t, node("DepthwiseConv2dNative", c.attrs(), x, f), []*tensor.Tensor{x, f}, tol)
		}
	}
}

// TestDepthwiseBackpropFilter: the filter's gradient, a block reduction
// per filter element over the batch and the output positions, against
// the CPU kernel: few positions (one warp partly idle), and thousands
// (8x28x28 = 6272, every thread of a 256-thread block striding).
func TestDepthwiseBackpropFilter(t *testing.T) {
	r := newRand(t)
	for _, dt := range []tensor.DType{tensor.Float, tensor.Double} {
		for _, c := range []convCase{
			{tensor.Shape{1, 4, 4, 3}, tensor.Shape{3, 3, 3, 2}, []int64{1, 1, 1, 1}, nil, "SAME", nil},
			{tensor.Shape{8, 28, 28, 16}, tensor.Shape{3, 3, 16, 1}, []int64{1, 1, 1, 1}, nil, "SAME", nil},
			{tensor.Shape{2, 13, 11, 4}, tensor.Shape{5, 5, 4, 2}, []int64{1, 2, 2, 1}, nil, "VALID", nil},
		} {
			x := randT(r, dt, c.x, -1, 1, false)
			oh, ow := c.x[1], c.x[2]
			if c.padding == "VALID" {
				oh, ow = (c.x[1]-c.f[0])/c.strides[1]+1, (c.x[2]-c.f[1])/c.strides[2]+1
			}
			dy := randT(r, dt, tensor.Shape{c.x[0], oh, ow, c.f[2] * c.f[3]}, -1, 1, false)
			fs := kerneltest.IntVec(tensor.Int32, c.f...)
			tol := 0.0
			if dt == tensor.Float {
				tol = 1e-5 * 5
			}
			check(t, node("DepthwiseConv2dNativeBackpropFilter", c.attrs(), x, fs, dy), []*tensor.Tensor{x, fs, dy}, tol)
		}
	}
}

func TestPool(t *testing.T) {
	r := newRand(t)
	maxTypes := []tensor.DType{tensor.Float, tensor.Double, tensor.Half, tensor.Bfloat16, tensor.Int32, tensor.Int64,
		tensor.Uint8, tensor.Int16, tensor.Int8, tensor.Uint16}
	for _, tc := range []struct {
		x              tensor.Shape
		ksize, strides []int64
		padding        string
		explicit       []int64
	}{
		{tensor.Shape{2, 8, 8, 3}, []int64{1, 2, 2, 1}, []int64{1, 2, 2, 1}, "VALID", nil},
		{tensor.Shape{2, 7, 9, 4}, []int64{1, 3, 3, 1}, []int64{1, 2, 2, 1}, "SAME", nil},
		{tensor.Shape{1, 5, 5, 2}, []int64{1, 3, 2, 1}, []int64{1, 1, 1, 1}, "EXPLICIT", []int64{0, 0, 1, 2, 0, 1, 0, 0}},
		{tensor.Shape{1, 4, 4, 6}, []int64{1, 1, 1, 3}, []int64{1, 1, 1, 3}, "VALID", nil}, // across depth
	} {
		a := kerneltest.Attrs{"ksize": kerneltest.AInts(tc.ksize...), "strides": kerneltest.AInts(tc.strides...), "padding": kerneltest.AStr(tc.padding)}
		if tc.explicit != nil {
			a["explicit_paddings"] = kerneltest.AInts(tc.explicit...)
		}
		for _, dt := range kerneltest.Allowed("MaxPool", maxTypes) {
			x := randT(r, dt, tc.x, -50, 50, true)
			check(t, node("MaxPool", a, x), []*tensor.Tensor{x}, 0)
			if tc.explicit == nil {
				ks, ss := i32s(tc.ksize...), i32s(tc.strides...)
				check(t, node("MaxPoolV2", kerneltest.Attrs{"padding": kerneltest.AStr(tc.padding)}, x, ks, ss), []*tensor.Tensor{x, ks, ss}, 0)
			}
		}
		if tc.explicit != nil || tc.ksize[3] != 1 {
			continue
		}
		for _, dt := range gpuFloats {
			x := randT(r, dt, tc.x, -5, 5, false)
			check(t, node("AvgPool", a, x), []*tensor.Tensor{x}, 0)
		}
	}
}

func TestFusedBatchNorm(t *testing.T) {
	r := newRand(t)
	for _, op := range []string{"FusedBatchNorm", "FusedBatchNormV2", "FusedBatchNormV3"} {
		types := []tensor.DType{tensor.Float, tensor.Half, tensor.Bfloat16}
		if op == "FusedBatchNorm" {
			types = []tensor.DType{tensor.Float}
		}
		for _, dt := range types {
			for _, tc := range []struct {
				x      tensor.Shape
				format string
			}{{tensor.Shape{2, 5, 5, 3}, "NHWC"}, {tensor.Shape{2, 3, 4, 5}, "NCHW"}, {tensor.Shape{8, 1, 1, 300}, "NHWC"}, {tensor.Shape{0, 2, 2, 3}, "NHWC"}} {
				c := tc.x[3]
				if tc.format == "NCHW" {
					c = tc.x[1]
				}
				for _, train := range []bool{false, true} {
					for _, factor := range []float32{1, 0.3} {
						x := randT(r, dt, tc.x, -3, 3, false)
						scale, offset := randT(r, tensor.Float, tensor.Shape{c}, 0.5, 2, false), randT(r, tensor.Float, tensor.Shape{c}, -1, 1, false)
						mean, v := randT(r, tensor.Float, tensor.Shape{c}, -1, 1, false), randT(r, tensor.Float, tensor.Shape{c}, 0.5, 2, false)
						a := kerneltest.Attrs{"is_training": kerneltest.ABool(train), "data_format": kerneltest.AStr(tc.format),
							"epsilon": kerneltest.AFloat(1e-3)}
						if op != "FusedBatchNorm" {
							a["exponential_avg_factor"] = kerneltest.AFloat(factor)
						} else if factor != 1 {
							continue
						}
						in := []*tensor.Tensor{x, scale, offset, mean, v}
						tol := 0.0
						if dt == tensor.Float {
							tol = 1e-4
						}
						check(t, node(op, a, in...), in, tol)
					}
				}
			}
		}
	}
}

func TestConv2DBackpropInput(t *testing.T) {
	r := newRand(t)
	for _, dt := range []tensor.DType{tensor.Float, tensor.Double, tensor.Half, tensor.Bfloat16, tensor.Int32} {
		for _, c := range []convCase{
			{tensor.Shape{2, 9, 9, 3}, tensor.Shape{3, 3, 3, 8}, []int64{1, 1, 1, 1}, nil, "SAME", nil},
			{tensor.Shape{2, 9, 8, 3}, tensor.Shape{3, 2, 3, 4}, []int64{1, 2, 3, 1}, nil, "VALID", nil},
			{tensor.Shape{1, 8, 8, 2}, tensor.Shape{3, 3, 2, 4}, []int64{1, 2, 2, 1}, nil, "EXPLICIT", []int64{0, 0, 1, 2, 0, 1, 0, 0}},
			{tensor.Shape{1, 10, 10, 4}, tensor.Shape{4, 4, 4, 5}, []int64{1, 2, 2, 1}, nil, "SAME", nil},
		} {
			// dy has the forward convolution's output shape (computed by the
			// CPU's Conv2D on the input shape).
			x, f := randT(r, dt, c.x, -1, 1, false), randT(r, dt, c.f, -1, 1, false)
			if dt == tensor.Int32 {
				f = randT(r, dt, c.f, -4, 4, false)
			}
			fwd, err := cpuRun(node("Conv2D", c.attrs(), x, f), []*tensor.Tensor{x, f}, nil)
			if err != nil {
				t.Fatal(err)
			}
			dy := randT(r, dt, fwd[0].Shape, -1, 1, false)
			if dt == tensor.Int32 {
				dy = randT(r, dt, fwd[0].Shape, -4, 4, false)
			}
			sizes := i32s(c.x...)
			tol := 0.0
			switch dt {
			case tensor.Float:
				tol = 1e-4
			case tensor.Half:
				tol = 1e-2
			case tensor.Bfloat16:
				tol = 5e-2
			}
			check(t, node("Conv2DBackpropInput", c.attrs(), sizes, f, dy), []*tensor.Tensor{sizes, f, dy}, tol)
		}
	}
}

func TestLRN(t *testing.T) {
	r := newRand(t)
	for _, dt := range []tensor.DType{tensor.Float, tensor.Half, tensor.Bfloat16} {
		for _, a := range []struct {
			r                 int64
			bias, alpha, beta float32
		}{{5, 1, 1, 0.5}, {2, 2, 1e-4, 0.75}, {1, 1, 0.5, 1}, {0, 1, 1, 0.3}, {100, 1.5, 0.1, 0.75}} {
			for _, s := range []tensor.Shape{{2, 3, 4, 7}, {1, 1, 1, 64}, {0, 2, 2, 3}} {
				x := randT(r, dt, s, -3, 3, false)
				n := node("LRN", kerneltest.Attrs{"depth_radius": kerneltest.AInt(a.r), "bias": kerneltest.AFloat(a.bias),
					"alpha": kerneltest.AFloat(a.alpha), "beta": kerneltest.AFloat(a.beta)}, x)
				check(t, n, []*tensor.Tensor{x}, 0)
			}
		}
	}
}

// TestEinsum compares Einsum with the CPU for TF's GPU dtypes: the
// batched-GEMM forms (the product written straight into the output or
// moved to the output's order), and the forms that need diagonals, sums
// over labels of one operand, ellipses with broadcasting, one operand or
// an implicit output, at shapes that take several blocks.
func TestEinsum(t *testing.T) {
	r := newRand(t)
	defer SetTF32(true)
	SetTF32(false)
	type tc struct {
		eq string
		in []tensor.Shape
	}
	cases := []tc{
		{"ij,jk->ik", []tensor.Shape{{5, 7}, {7, 3}}},
		{"ij,kj->ik", []tensor.Shape{{5, 7}, {3, 7}}},
		{"bij,bjk->bik", []tensor.Shape{{4, 5, 6}, {4, 6, 2}}},
		{"abc,cd->abd", []tensor.Shape{{2, 3, 8}, {8, 5}}},
		{"abc,cde->abde", []tensor.Shape{{2, 3, 8}, {8, 4, 5}}},
		{"aecd,abcd->acbe", []tensor.Shape{{2, 5, 3, 4}, {2, 6, 3, 4}}},
		{"acbe,aecd->abcd", []tensor.Shape{{2, 3, 6, 5}, {2, 5, 3, 4}}},
		{"abcd,cde->abe", []tensor.Shape{{2, 3, 4, 5}, {4, 5, 6}}},
		{"bi,bi->b", []tensor.Shape{{7, 9}, {7, 9}}},
		{"ij,jk", []tensor.Shape{{3, 4}, {4, 2}}},
		{"i,j->ij", []tensor.Shape{{4}, {3}}},
		{"ij,jk->ki", []tensor.Shape{{0, 4}, {4, 2}}},
		{"ij,jk->ik", []tensor.Shape{{3, 0}, {0, 2}}},
		// Beyond one GEMM.
		{"ii->i", []tensor.Shape{{6, 6}}},
		{"ii", []tensor.Shape{{5, 5}}},
		{"ij->ji", []tensor.Shape{{40, 70}}},
		{"ijk->", []tensor.Shape{{3, 50, 7}}},
		{"ijk->j", []tensor.Shape{{30, 500, 7}}},
		{"...ij,...jk->...ik", []tensor.Shape{{2, 3, 4, 5}, {1, 3, 5, 6}}},
		{"...ij,jk->...ik", []tensor.Shape{{2, 3, 4, 5}, {5, 6}}},
		{"ij,jk->i", []tensor.Shape{{4, 5}, {5, 6}}},
		{"iij,jk->ik", []tensor.Shape{{3, 3, 4}, {4, 2}}},
		{"bij,bkj->b", []tensor.Shape{{3, 4, 5}, {3, 6, 5}}},
		{"abc,abd->cd", []tensor.Shape{{64, 33, 7}, {64, 33, 9}}},
		{"i,i->", []tensor.Shape{{1000}, {1000}}},
		{"ab,cd->abcd", []tensor.Shape{{3, 4}, {5, 2}}},
	}
	for _, dt := range gpuFloats {
		for _, c := range cases {
			var in []*tensor.Tensor
			for _, s := range c.in {
				in = append(in, randT(r, dt, s, -1, 1, false))
			}
			tol := 0.0
			switch dt {
			case tensor.Float:
				tol = 1e-5 * 4
			case tensor.Half, tensor.Bfloat16:
				// Products and sums in float, rounded once on the CPU; cuBLAS
				// may split a long contraction and round the parts to the
				// output dtype (on the H100, "abc,abd->cd" over 2112 terms
				// was 8 bfloat16 ulps off), so the tolerance grows with the
				// contraction's length.
				tol = 2 * kerneltest.Tol(dt) * math.Max(1, math.Sqrt(float64(contracted(c.eq, c.in))/64))
			}
			n := kerneltest.NodeFor("Einsum", kerneltest.Attrs{"equation": kerneltest.AStr(c.eq)}, in, map[int]int{0: len(in)})
			check(t, n, in, tol)
		}
	}
}

// contracted is the number of terms each output element of a two-operand
// equation sums: the product of the sizes of the labels both inputs have
// and the output lacks.
func contracted(eq string, in []tensor.Shape) int64 {
	lhs, out, _ := strings.Cut(eq, "->")
	subs := strings.Split(lhs, ",")
	if len(subs) != 2 || strings.Contains(lhs, ".") {
		return 1
	}
	p := int64(1)
	for i := 0; i < len(subs[0]); i++ {
		c := subs[0][i : i+1]
		if strings.Contains(subs[1], c) && !strings.Contains(out, c) {
			p *= in[0][i]
		}
	}
	return p
}

func TestFusedConv2D(t *testing.T) {
	r := newRand(t)
	defer SetTF32(true)
	SetTF32(false)
	strs := func(v ...string) *tfpb.AttrValue {
		l := &tfpb.AttrValue_ListValue{}
		for _, s := range v {
			l.S = append(l.S, []byte(s))
		}
		return &tfpb.AttrValue{Value: &tfpb.AttrValue_List{List: l}}
	}
	for _, dt := range []tensor.DType{tensor.Float, tensor.Double, tensor.Half} {
		for _, c := range convCases[:6] {
			for _, bn := range []bool{false, true} {
				for _, act := range []string{"", "Relu", "Relu6", "Elu", "LeakyRelu", "Tanh", "Sigmoid"} {
					if bn && (act == "Tanh" || act == "Sigmoid") {
						continue
					}
					x, f := randT(r, dt, c.x, -1, 1, false), randT(r, dt, c.f, -1, 1, false)
					o := c.f[3]
					var args []*tensor.Tensor
					ops := []string{"BiasAdd"}
					if bn {
						ops[0] = "FusedBatchNorm"
						args = []*tensor.Tensor{randT(r, dt, tensor.Shape{o}, 0.5, 2, false), randT(r, dt, tensor.Shape{o}, -1, 1, false),
							randT(r, dt, tensor.Shape{o}, -1, 1, false), randT(r, dt, tensor.Shape{o}, 0.1, 2, false)}
					} else {
						args = []*tensor.Tensor{randT(r, dt, tensor.Shape{o}, -1, 1, false)}
					}
					if act != "" {
						ops = append(ops, act)
					}
					a := c.attrs()
					a["fused_ops"] = strs(ops...)
					a["num_args"] = kerneltest.AInt(int64(len(args)))
					a["epsilon"] = kerneltest.AFloat(1e-3)
					a["leakyrelu_alpha"] = kerneltest.AFloat(0.3)
					in := append([]*tensor.Tensor{x, f}, args...)
					kk := float64(c.f[0] * c.f[1] * c.f[2])
					tol := 0.0
					switch dt {
					case tensor.Float:
						tol = 1e-5 * math.Max(1, math.Sqrt(kk)) * 4
					case tensor.Half:
						tol = 2e-3 * math.Max(1, math.Sqrt(kk)) * 4
					}
					check(t, kerneltest.NodeFor("_FusedConv2D", a, in, map[int]int{2: len(args), 3: 0}), in, tol)
				}
			}
		}
	}
}
