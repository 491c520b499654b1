package cpu

import (
	"math/rand"
	"testing"

	"mstream/kernels"
	"mstream/proto/tfpb"
	"mstream/tensor"
)

// FuzzKernels drives shape and attribute validation of the ops that read
// shapes, axes and indices from their inputs: any input must give a result
// or an error, never a panic or an out-of-range write.
func FuzzKernels(f *testing.F) {
	for i := int64(0); i < 40; i++ {
		f.Add(i, uint8(i))
	}
	f.Fuzz(func(t *testing.T, seed int64, which uint8) {
		r := rand.New(rand.NewSource(seed))
		rank := r.Intn(4)
		shape := make(tensor.Shape, rank)
		for i := range shape {
			shape[i] = int64(r.Intn(4))
		}
		x, _ := randTensor(r, f32, shape)
		vec := func(n int, lo, hi int) *tensor.Tensor {
			v := make([]int64, n)
			for i := range v {
				v[i] = int64(lo + r.Intn(hi-lo+1))
			}
			return ints(v...)
		}
		mask := func() *tfpb.AttrValue { return aInt(int64(r.Intn(16))) }
		var n = node("Identity", nil, []tensor.DType{f32}, f32)
		var in []*tensor.Tensor
		switch which % 9 {
		case 0:
			n, in = node("Reshape", nil, []tensor.DType{f32, i64}, f32), []*tensor.Tensor{x, vec(r.Intn(4), -2, 5)}
		case 1:
			n, in = node("Transpose", nil, []tensor.DType{f32, i64}, f32), []*tensor.Tensor{x, vec(r.Intn(4), -1, 4)}
		case 2:
			k := r.Intn(4)
			n = node("StridedSlice", map[string]*tfpb.AttrValue{"begin_mask": mask(), "end_mask": mask(), "ellipsis_mask": mask(),
				"new_axis_mask": mask(), "shrink_axis_mask": mask()}, []tensor.DType{f32, i64, i64, i64}, f32)
			in = []*tensor.Tensor{x, vec(k, -5, 5), vec(k, -5, 5), vec(k, -2, 2)}
		case 3:
			n = node("GatherV2", map[string]*tfpb.AttrValue{"batch_dims": aInt(int64(r.Intn(5) - 2))}, []tensor.DType{f32, i64, i64}, f32)
			in = []*tensor.Tensor{x, vec(1, -1, 4).Reshaped(nil), vec(1, -4, 4).Reshaped(nil)}
			if r.Intn(2) == 0 {
				in[1] = vec(r.Intn(4), -1, 4)
			}
		case 4:
			y, _ := randTensor(r, f32, shape)
			n, in = node("ConcatV2", nil, []tensor.DType{f32, f32, i64}, f32), []*tensor.Tensor{x, y, vec(1, -4, 4).Reshaped(nil)}
		case 5:
			n = node("Squeeze", map[string]*tfpb.AttrValue{"squeeze_dims": aInts(vec(r.Intn(3), -4, 4).I64()...)}, []tensor.DType{f32}, f32)
			in = []*tensor.Tensor{x}
		case 6:
			n = node("Sum", map[string]*tfpb.AttrValue{"keep_dims": aBool(r.Intn(2) == 0)}, []tensor.DType{f32, i64}, f32)
			in = []*tensor.Tensor{x, vec(r.Intn(3), -4, 4)}
		case 7:
			n, in = node("Fill", nil, []tensor.DType{i64, f32}, f32), []*tensor.Tensor{vec(r.Intn(3), -1, 3), tensor.ScalarF32(2)}
		case 8:
			y, _ := randTensor(r, f32, tensor.Shape{int64(r.Intn(3)), int64(r.Intn(3)), int64(r.Intn(3))}[:r.Intn(4)])
			n = node("BatchMatMulV2", map[string]*tfpb.AttrValue{"adj_x": aBool(r.Intn(2) == 0)}, []tensor.DType{f32, f32}, f32)
			in = []*tensor.Tensor{x, y}
		}
		def, err := kernels.Lookup(n, kernels.CPU)
		if err != nil {
			t.Fatal(err)
		}
		k, err := def.Factory(n)
		if err != nil {
			return
		}
		ctx := &kernels.Context{Node: n, Inputs: in, Outputs: make([]*tensor.Tensor, len(n.OutTypes))}
		if err := k.Compute(ctx); err == nil {
			for i, o := range ctx.Outputs {
				if o == nil || o.Check() != nil {
					t.Fatalf("%s: bad output %d", n.Op, i)
				}
			}
		}
	})
}

func TestRegistered(t *testing.T) {
	ops := []string{"Placeholder", "PlaceholderWithDefault", "Const", "Identity", "IdentityN", "NoOp", "StopGradient",
		"MatMul", "BatchMatMulV2", "BatchMatMulV3", "BiasAdd", "Add", "AddV2", "Sub", "Mul", "RealDiv", "Maximum",
		"Minimum", "Relu", "Sigmoid", "Tanh", "Softmax", "Cast", "Reshape", "Shape", "ExpandDims", "Squeeze",
		"ConcatV2", "GatherV2", "Pack", "Transpose", "Sum", "Mean", "StridedSlice", "Fill"}
	have := map[string]bool{}
	for _, k := range kernels.Registered() {
		have[k] = true
	}
	for _, op := range ops {
		if !have[op+"/"+kernels.CPU] {
			t.Errorf("no CPU kernel for %s", op)
		}
	}
}

func TestConstAndForward(t *testing.T) {
	x := tensor.FromF32(tensor.Shape{2}, []float32{1, 2})
	n := node("Const", map[string]*tfpb.AttrValue{"dtype": aType(f32), "value": {Value: &tfpb.AttrValue_Tensor{Tensor: tensor.ToProto(x)}}}, nil, f32)
	out := mustRun(t, n)[0]
	check(t, "Const", out, tensor.Shape{2}, []float64{1, 2}, 0)
	idn := node("IdentityN", nil, []tensor.DType{f32, i32}, f32, i32)
	outs := mustRun(t, idn, x, tensor.ScalarI32(3))
	if outs[0] != x || outs[1].I32()[0] != 3 {
		t.Errorf("IdentityN did not forward")
	}
}
