package cuda

import (
	"testing"

	"mstream/kernels/kerneltest"
	"mstream/proto/tfpb"
	"mstream/tensor"
)

// The unary math kernels of math.go against the CPU kernels, every
// registered dtype, on random values (NaN and infinities mixed in for
// floats) over each op's interesting range.

var mathShapes = []tensor.Shape{{}, {0}, {7}, {3, 300}, {1 << 16}}

func TestMathUnary(t *testing.T) {
	r := newRand(t)
	for _, u := range []struct {
		op     string
		types  []tensor.DType
		lo, hi float64
	}{
		{"Abs", floatSigned, -100, 100}, {"Neg", floatSigned, -100, 100}, {"Sign", floatSigned, -3, 3},
		{"Square", realTypes, -200, 200}, {"Reciprocal", gpuFloats, -10, 10}, {"Inv", gpuFloats, -10, 10},
		{"Sqrt", gpuFloats, -1, 100}, {"Rsqrt", gpuFloats, -1, 100}, {"Exp", gpuFloats, -20, 20},
		{"Expm1", gpuFloats, -5, 5}, {"Log", gpuFloats, -1, 100}, {"Log1p", gpuFloats, -1.5, 10},
		{"Sin", gpuFloats, -10, 10}, {"Cos", gpuFloats, -10, 10}, {"Erf", gpuFloats, -4, 4},
		{"Floor", gpuFloats, -10, 10}, {"Ceil", gpuFloats, -10, 10},
		{"Round", cat(gpuFloats, []tensor.DType{tensor.Int32, tensor.Int64}), -10, 10},
		{"Relu6", realTypes, -10, 10}, {"Elu", gpuFloats, -5, 5}, {"Selu", gpuFloats, -5, 5},
		{"Softsign", gpuFloats, -10, 10}, {"Softplus", gpuFloats, -40, 40},
		{"Relu", realTypes, -10, 10}, {"Sigmoid", gpuFloats, -20, 20}, {"Tanh", gpuFloats, -10, 10},
		{"IsNan", gpuFloats, -10, 10}, {"IsInf", gpuFloats, -10, 10}, {"IsFinite", gpuFloats, -10, 10},
		{"ZerosLike", cat(realTypes, []tensor.DType{tensor.Bool}), -10, 10},
		{"OnesLike", cat(realTypes, []tensor.DType{tensor.Bool}), -10, 10},
	} {
		for _, dt := range kerneltest.Allowed(u.op, u.types) {
			for _, s := range mathShapes {
				x := randT(r, dt, s, u.lo, u.hi, true)
				if u.op == "Round" && dt.IsFloat() && x.NumElements() > 4 {
					// Exact halves, to see ties go to even.
					for i := 0; i < int(x.NumElements()); i += 3 {
						kerneltest.SetF64(x, i, float64(r.Intn(21)-10)+0.5)
					}
				}
				check(t, node(u.op, nil, x), []*tensor.Tensor{x}, 0)
			}
		}
	}
	for _, s := range mathShapes {
		x := randT(r, tensor.Bool, s, 0, 2, false)
		check(t, node("LogicalNot", nil, x), []*tensor.Tensor{x}, 0)
	}
}

func TestLeakyRelu(t *testing.T) {
	r := newRand(t)
	for _, alpha := range []float32{0.2, 0.01, 2.5} {
		for _, dt := range kerneltest.Allowed("LeakyRelu", realTypes) {
			for _, s := range mathShapes {
				x := randT(r, dt, s, -50, 50, true)
				check(t, node("LeakyRelu", kerneltest.Attrs{"alpha": kerneltest.AFloat(alpha)}, x), []*tensor.Tensor{x}, 0)
			}
		}
	}
}

func TestUnaryChain(t *testing.T) {
	r := newRand(t)
	strs := func(v ...string) *tfpb.AttrValue {
		l := &tfpb.AttrValue_ListValue{}
		for _, s := range v {
			l.S = append(l.S, []byte(s))
		}
		return &tfpb.AttrValue{Value: &tfpb.AttrValue_List{List: l}}
	}
	for _, ops := range [][]string{
		{"Relu"}, {"Neg", "Exp"}, {"Square", "Sqrt", "Reciprocal"}, {"Abs", "Log", "Tanh", "Sigmoid"},
		{"Relu6", "Elu", "Selu", "Softsign"}, {"Floor", "Ceil", "Round", "Inv", "Rsqrt", "Expm1"},
	} {
		for _, s := range []tensor.Shape{{}, {0}, {37}, {3, 1000}} {
			x := randT(r, tensor.Float, s, -5, 5, false)
			check(t, node("_MstreamUnaryChain", kerneltest.Attrs{"ops": strs(ops...)}, x), []*tensor.Tensor{x}, 1e-4)
		}
	}
	if _, err := env(t).run(node("_MstreamUnaryChain", kerneltest.Attrs{"ops": strs("Relu", "Softmax")}, tensor.New(tensor.Float, tensor.Shape{2})), []*tensor.Tensor{tensor.New(tensor.Float, tensor.Shape{2})}, nil, nil); err == nil {
		t.Error("a chain with Softmax was accepted on the GPU")
	}
}
