package cuda

import (
	"testing"

	"mstream/kernels/kerneltest"
	"mstream/tensor"
)

var cwisePairs = [][2]tensor.Shape{
	{{3, 5, 7}, {3, 5, 7}}, {{}, {4, 6}}, {{4, 6}, {}}, {{4, 1, 6}, {5, 1}}, {{2, 3, 4, 5}, {3, 1, 5}},
	{{0, 3}, {3}}, {{1 << 16}, {1 << 16}}, {{64, 512}, {512}}, {{2, 1, 3, 1, 2}, {1, 4, 1, 5, 1}}, {{}, {}},
}

// TestCwiseBinary checks the broadcasting binary ops of cwise.go, and the
// dtypes it adds to elementwise.go's arithmetic, against the CPU.
func TestCwiseBinary(t *testing.T) {
	r := newRand(t)
	narrow := minus(realTypes, numTypes)
	for _, b := range []struct {
		op       string
		types    []tensor.DType
		positive bool // divisor away from zero
	}{
		{"Add", narrow, false}, {"AddV2", narrow, false}, {"Sub", narrow, false}, {"Mul", narrow, false},
		{"Maximum", narrow, false}, {"Minimum", narrow, false},
		{"RealDiv", []tensor.DType{tensor.Half, tensor.Bfloat16}, true}, {"Div", gpuFloats, true},
		{"Pow", gpuFloats, false}, {"SquaredDifference", cat(gpuFloats, []tensor.DType{tensor.Int32, tensor.Int64}), false},
		{"FloorDiv", gpuFloats, true}, {"FloorMod", gpuFloats, true}, {"TruncateDiv", gpuFloats, true},
		{"TruncateMod", floatTypes, true}, {"Mod", floatTypes, true}, {"DivNoNan", gpuFloats, false},
		{"Less", realTypes, false}, {"LessEqual", realTypes, false}, {"Greater", realTypes, false},
		{"GreaterEqual", realTypes, false}, {"Equal", cat(realTypes, []tensor.DType{tensor.Bool}), false},
		{"NotEqual", cat(realTypes, []tensor.DType{tensor.Bool}), false},
	} {
		for _, dt := range kerneltest.Allowed(b.op, b.types) {
			for _, p := range cwisePairs {
				lo, hi := -20.0, 20.0
				if b.op == "Pow" {
					lo, hi = -3, 3
				}
				x := randT(r, dt, p[0], lo, hi, true)
				y := randT(r, dt, p[1], lo, hi, true)
				switch {
				case b.positive:
					// Both signs, never near zero: flip a positive draw.
					y = randT(r, dt, p[1], 0.5, 7, false)
					for i := 0; i < int(y.NumElements()); i += 2 {
						kerneltest.SetF64(y, i, -y.ElementF64(i))
					}
				case b.op == "DivNoNan" && y.NumElements() > 2:
					kerneltest.SetF64(y, 1, 0)
				case dt.IsInteger() && x.NumElements() > 3 && y.NumElements() > 3:
					// Some equal elements for the comparisons.
					kerneltest.SetF64(y, 2, x.ElementF64(2))
				}
				tol := 0.0
				if b.op == "Pow" && dt == tensor.Double {
					// Go's math.Pow (the CPU kernel's) is off by about 1e-12
					// of the result at large magnitudes; CUDA's pow is within
					// 2 ulp.
					tol = 1e-10
				}
				check(t, node(b.op, nil, x, y), []*tensor.Tensor{x, y}, tol)
			}
		}
	}
	for _, op := range []string{"LogicalAnd", "LogicalOr"} {
		for _, p := range cwisePairs {
			x, y := randT(r, tensor.Bool, p[0], 0, 2, false), randT(r, tensor.Bool, p[1], 0, 2, false)
			check(t, node(op, nil, x, y), []*tensor.Tensor{x, y}, 0)
		}
	}
	// Incompatible shapes: an error, or a scalar with
	// incompatible_shape_error=false.
	x, y := randT(r, tensor.Float, tensor.Shape{3}, -1, 1, false), randT(r, tensor.Float, tensor.Shape{4}, -1, 1, false)
	for _, strict := range []bool{true, false} {
		for _, op := range []string{"Equal", "NotEqual"} {
			n := kerneltest.NodeForUnknown(op, kerneltest.Attrs{"incompatible_shape_error": kerneltest.ABool(strict)}, []*tensor.Tensor{x, y}, nil)
			check(t, n, []*tensor.Tensor{x, y}, 0)
		}
	}
	check(t, kerneltest.NodeForUnknown("Pow", nil, []*tensor.Tensor{x, y}, nil), []*tensor.Tensor{x, y}, 0)
}

func TestSelect(t *testing.T) {
	r := newRand(t)
	for _, dt := range []tensor.DType{tensor.Float, tensor.Double, tensor.Int8, tensor.Half, tensor.Bool, tensor.Complex128} {
		for _, tc := range []struct{ c, t, e tensor.Shape }{
			{tensor.Shape{}, tensor.Shape{3, 4}, tensor.Shape{3, 4}},
			{tensor.Shape{3}, tensor.Shape{3, 4, 2}, tensor.Shape{3, 4, 2}},
			{tensor.Shape{5}, tensor.Shape{5}, tensor.Shape{5}},
			{tensor.Shape{2, 700}, tensor.Shape{2, 700}, tensor.Shape{2, 700}},
			{tensor.Shape{3}, tensor.Shape{4}, tensor.Shape{4}}, // error
			{tensor.Shape{0, 2}, tensor.Shape{0, 2}, tensor.Shape{0, 2}},
		} {
			c := randT(r, tensor.Bool, tc.c, 0, 2, false)
			a, b := randAny(r, dt, tc.t, -9, 9), randAny(r, dt, tc.e, -9, 9)
			check(t, kerneltest.NodeForUnknown("Select", nil, []*tensor.Tensor{c, a, b}, nil), []*tensor.Tensor{c, a, b}, 0)
		}
		for _, tc := range []struct{ c, t, e tensor.Shape }{
			{tensor.Shape{}, tensor.Shape{3, 4}, tensor.Shape{3, 4}},
			{tensor.Shape{3, 1}, tensor.Shape{1, 4}, tensor.Shape{}},
			{tensor.Shape{2, 3, 4}, tensor.Shape{3, 4}, tensor.Shape{2, 1, 4}},
			{tensor.Shape{500}, tensor.Shape{500}, tensor.Shape{500}},
			{tensor.Shape{3}, tensor.Shape{4}, tensor.Shape{4}}, // error
		} {
			c := randT(r, tensor.Bool, tc.c, 0, 2, false)
			a, b := randAny(r, dt, tc.t, -9, 9), randAny(r, dt, tc.e, -9, 9)
			check(t, kerneltest.NodeForUnknown("SelectV2", nil, []*tensor.Tensor{c, a, b}, nil), []*tensor.Tensor{c, a, b}, 0)
		}
	}
}

func TestClipAddN(t *testing.T) {
	r := newRand(t)
	for _, dt := range kerneltest.Allowed("ClipByValue", cat(floatSigned, []tensor.DType{tensor.Uint8, tensor.Uint16})) {
		for _, s := range []tensor.Shape{{}, {0}, {9}, {40, 33}} {
			x := randT(r, dt, s, -50, 50, true)
			lo, hi := randT(r, dt, tensor.Shape{}, -20, -5, false), randT(r, dt, tensor.Shape{}, 5, 20, false)
			if dt == tensor.Uint8 || dt == tensor.Uint16 {
				lo, hi = randT(r, dt, tensor.Shape{}, 2, 10, false), randT(r, dt, tensor.Shape{}, 20, 40, false)
			}
			check(t, node("ClipByValue", nil, x, lo, hi), []*tensor.Tensor{x, lo, hi}, 0)
			lo2, hi2 := randT(r, dt, s, -30, 0, false), randT(r, dt, s, 0, 30, false)
			check(t, node("ClipByValue", nil, x, lo2, hi), []*tensor.Tensor{x, lo2, hi}, 0)
			check(t, node("ClipByValue", nil, x, lo, hi2), []*tensor.Tensor{x, lo, hi2}, 0)
		}
	}
	for _, dt := range kerneltest.Allowed("AddN", realTypes) {
		for _, k := range []int{1, 2, 3, 8, 9, 17} {
			for _, s := range []tensor.Shape{{}, {5, 7}, {1000}} {
				var in []*tensor.Tensor
				for i := 0; i < k; i++ {
					in = append(in, randT(r, dt, s, -20, 20, false))
				}
				n := kerneltest.NodeFor("AddN", nil, in, map[int]int{0: k})
				check(t, n, in, 0)
			}
		}
	}
}

// TestBiasAdd2 covers the BiasAdd dtypes of cwise.go.
func TestBiasAdd2(t *testing.T) {
	r := newRand(t)
	for _, dt := range kerneltest.Allowed("BiasAdd", minus(realTypes, numTypes)) {
		for _, tc := range []struct {
			s      tensor.Shape
			format string
		}{{tensor.Shape{5, 7}, "NHWC"}, {tensor.Shape{2, 3, 4, 6}, "NHWC"}, {tensor.Shape{2, 6, 3, 4}, "NCHW"}, {tensor.Shape{0, 3}, "NHWC"}} {
			c := tc.s[len(tc.s)-1]
			if tc.format == "NCHW" {
				c = tc.s[1]
			}
			x, b := randT(r, dt, tc.s, -10, 10, false), randT(r, dt, tensor.Shape{c}, -10, 10, false)
			check(t, node("BiasAdd", kerneltest.Attrs{"data_format": kerneltest.AStr(tc.format)}, x, b), []*tensor.Tensor{x, b}, 0)
		}
	}
}
