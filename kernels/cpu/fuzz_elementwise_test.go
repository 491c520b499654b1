package cpu

import (
	"fmt"
	"math/rand"
	"testing"

	"mstream/kernels"
	"mstream/proto/tfpb"
	"mstream/tensor"
)

// FuzzElementwise drives the shape, dtype and attr validation of the
// elementwise, reduction and activation kernels with nodes built by hand
// (so that no shape inference filters them first): random ranks and dims
// that may not broadcast, random axes (out of range, duplicated, of either
// index dtype and any shape), random attrs. Every call must give an error
// or well-formed outputs, never a panic.
func FuzzElementwise(f *testing.F) {
	for i := int64(0); i < 64; i++ {
		f.Add(i, uint8(i))
	}
	unary := []string{"Abs", "Neg", "Sign", "Square", "Reciprocal", "Sqrt", "Rsqrt", "Exp", "Expm1", "Log", "Log1p",
		"Sin", "Cos", "Erf", "Floor", "Ceil", "Round", "Relu", "Relu6", "Elu", "Selu", "Softplus", "Softsign", "Sigmoid",
		"Tanh", "LeakyRelu", "Softmax", "LogSoftmax", "ZerosLike", "OnesLike"}
	binary := []string{"Add", "AddV2", "Sub", "Mul", "RealDiv", "Div", "Maximum", "Minimum", "Pow", "SquaredDifference",
		"FloorDiv", "FloorMod", "TruncateDiv", "TruncateMod", "Mod", "DivNoNan", "BiasAdd", "MatMul", "BatchMatMulV2"}
	compare := []string{"Equal", "NotEqual", "Less", "LessEqual", "Greater", "GreaterEqual"}
	reduce := []string{"Sum", "Mean", "Prod", "Max", "Min", "ArgMax", "ArgMin"}
	dts := []tensor.DType{f32, tensor.Double, tensor.Half, tensor.Bfloat16, i32, i64, tensor.Int8, tensor.Uint8, tensor.Uint64}
	f.Fuzz(func(t *testing.T, seed int64, which uint8) {
		r := rand.New(rand.NewSource(seed))
		shape := func() tensor.Shape {
			s := make(tensor.Shape, r.Intn(5))
			for i := range s {
				s[i] = int64(r.Intn(4))
			}
			return s
		}
		dt := dts[r.Intn(len(dts))]
		x, _ := randTensor(r, dt, shape())
		y, _ := randTensor(r, dt, shape())
		if r.Intn(3) == 0 {
			y, _ = randTensor(r, dt, x.Shape) // often compatible
		}
		axes := func() *tensor.Tensor {
			v := make([]int64, r.Intn(4))
			for i := range v {
				v[i] = int64(r.Intn(11) - 5)
			}
			a := ints(v...)
			switch r.Intn(4) {
			case 0:
				a = tensor.FromI32(tensor.Shape{int64(len(v))}, toI32(v))
			case 1:
				if len(v) == 1 {
					a = a.Reshaped(tensor.Shape{})
				}
			}
			return a
		}
		attrs := map[string]*tfpb.AttrValue{}
		var in []*tensor.Tensor
		var op string
		out := dt
		switch which % 5 {
		case 0:
			op = unary[r.Intn(len(unary))]
			in = []*tensor.Tensor{x}
			attrs["alpha"] = &tfpb.AttrValue{Value: &tfpb.AttrValue_F{F: float32(r.NormFloat64())}}
		case 1:
			op = binary[r.Intn(len(binary))]
			in = []*tensor.Tensor{x, y}
			attrs["data_format"] = aStr([]string{"NHWC", "NCHW", "bogus"}[r.Intn(3)])
			attrs["transpose_a"] = aBool(r.Intn(2) == 0)
		case 2:
			op = compare[r.Intn(len(compare))]
			in = []*tensor.Tensor{x, y}
			out = tensor.Bool
			attrs["incompatible_shape_error"] = aBool(r.Intn(2) == 0)
		case 3:
			op = reduce[r.Intn(len(reduce))]
			in = []*tensor.Tensor{x, axes()}
			attrs["keep_dims"] = aBool(r.Intn(2) == 0)
			attrs["Tidx"] = aType(in[1].DType)
			if op == "ArgMax" || op == "ArgMin" {
				out = []tensor.DType{i32, i64, tensor.Int16, tensor.Uint16}[r.Intn(4)]
				attrs["output_type"] = aType(out)
			}
		case 4:
			c, _ := randTensor(r, tensor.Bool, shape())
			switch r.Intn(4) {
			case 0:
				op, in = "Select", []*tensor.Tensor{c, x, y}
			case 1:
				op, in = "SelectV2", []*tensor.Tensor{c, x, y}
			case 2:
				lo, _ := randTensor(r, dt, shape())
				op, in = "ClipByValue", []*tensor.Tensor{x, lo, y}
			default:
				op, in = "AddN", []*tensor.Tensor{x, y, x}
			}
			if op == "Select" || op == "SelectV2" {
				attrs["T"] = aType(dt)
			}
		}
		inTypes := make([]tensor.DType, len(in))
		for i, v := range in {
			inTypes[i] = v.DType
		}
		if op == "Select" || op == "SelectV2" {
			inTypes[0] = tensor.Bool
		}
		n := node(op, attrs, inTypes, out)
		if op == "Select" || op == "SelectV2" {
			n.Attrs["T"] = aType(dt)
		}
		k, err := kernels.Make(n, kernels.CPU)
		if err != nil {
			return // a dtype the op has no kernel for, or attrs its kernel refuses
		}
		ctx := &kernels.Context{Node: n, Inputs: in, Outputs: make([]*tensor.Tensor, len(n.OutTypes)), Pool: pool{}}
		func() {
			defer func() {
				if p := recover(); p != nil {
					t.Fatalf("%s%v: panic: %v", op, describeInputs(in), p)
				}
			}()
			if err := k.Compute(ctx); err != nil {
				return
			}
			for i, o := range ctx.Outputs {
				if o == nil {
					t.Fatalf("%s%v: output %d not set", op, describeInputs(in), i)
				}
				if err := o.Check(); err != nil {
					t.Fatalf("%s%v: output %d: %v", op, describeInputs(in), i, err)
				}
			}
		}()
	})
}

func describeInputs(in []*tensor.Tensor) string {
	s := "("
	for i, t := range in {
		if i > 0 {
			s += ", "
		}
		s += fmt.Sprint(t)
	}
	return s + ")"
}

func toI32(v []int64) []int32 {
	o := make([]int32, len(v))
	for i, x := range v {
		o[i] = int32(x)
	}
	return o
}
