package cpu

import (
	"math"
	"testing"

	"mstream/graph"
	"mstream/kernels"
	"mstream/kernels/cpu/dnnl"
	"mstream/proto/tfpb"
	"mstream/tensor"
)

// TestFusedMatMulDNNL runs _FusedMatMul on oneDNN for every shape and
// activation (the kernel picks it only for some shapes, which the
// conformance suite's small cases do not reach) and compares it with the
// OpenBLAS path, which the suite holds to TF.
func TestFusedMatMulDNNL(t *testing.T) {
	if !dnnl.Available() {
		t.Skipf("no oneDNN: %s", dnnl.Loaded().Warning)
	}
	r := newRand(t)
	always := func(m, n, k int) bool { return true }
	for _, act := range []string{"", "Relu", "Relu6", "Elu", "LeakyRelu", "Tanh", "Sigmoid", "GeluExact", "GeluApproximate"} {
		for _, c := range []struct {
			m, k, n int64
			ta, tb  bool
		}{{1, 64, 33, false, false}, {16, 40, 7, true, false}, {5, 9, 70, false, true}, {20, 31, 3, true, true}} {
			ops := [][]byte{[]byte("BiasAdd")}
			if act != "" {
				ops = append(ops, []byte(act))
			}
			attrs := map[string]*tfpb.AttrValue{"fused_ops": {Value: &tfpb.AttrValue_List{List: &tfpb.AttrValue_ListValue{S: ops}}},
				"num_args": aInt(1), "transpose_a": aBool(c.ta), "transpose_b": aBool(c.tb),
				"leakyrelu_alpha": {Value: &tfpb.AttrValue_F{F: 0.3}}}
			n := node("_FusedMatMul", attrs, []tensor.DType{f32, f32, f32}, f32)
			ep, err := parseEpilogue(n, "MatMul", false)
			if err != nil {
				t.Fatal(err)
			}
			as, bs := tensor.Shape{c.m, c.k}, tensor.Shape{c.k, c.n}
			if c.ta {
				as = tensor.Shape{c.k, c.m}
			}
			if c.tb {
				bs = tensor.Shape{c.n, c.k}
			}
			a, _ := randTensor(r, f32, as)
			b, _ := randTensor(r, f32, bs)
			bias, _ := randTensor(r, f32, tensor.Shape{c.n})
			prims := &dnnl.Cache[dnnl.MatMulDesc]{Node: n.Name}
			got := runCtx(t, n, func(ctx *kernels.Context) error { return fusedMatMul(ctx, c.ta, c.tb, ep, prims, always) }, a, b, bias)
			want := runCtx(t, n, func(ctx *kernels.Context) error { return fusedMatMul(ctx, c.ta, c.tb, ep, nil, nil) }, a, b, bias)
			// The two GEMMs sum in different orders: float32 rounding
			// grows with k (a sum of k products of normals).
			closeF32(t, act, got.F32(), want.F32(), 2e-6*float64(c.k))
		}
	}
}

// TestSoftmaxDNNLNaN checks that a row holding a NaN comes out all NaN on
// oneDNN's rows too, as TF's does, and the other rows untouched.
func TestSoftmaxDNNLNaN(t *testing.T) {
	r := newRand(t)
	for _, op := range []string{"Softmax", "LogSoftmax"} {
		x, _ := randTensor(r, f32, tensor.Shape{3, softmaxDNNLCols + 5})
		x.F32()[softmaxDNNLCols+5+7] = float32(math.NaN())
		n := node(op, nil, []tensor.DType{f32}, f32)
		prims := &dnnl.Cache[dnnl.SoftmaxDesc]{Node: n.Name}
		got := runCtx(t, n, func(ctx *kernels.Context) error { return softmax(ctx, op == "LogSoftmax", prims) }, x)
		want := runCtx(t, n, func(ctx *kernels.Context) error { return softmax(ctx, op == "LogSoftmax", nil) }, x)
		d := softmaxDNNLCols + 5
		for i, v := range got.F32() {
			if nan := i/d == 1; nan != math.IsNaN(float64(v)) {
				t.Fatalf("%s [%d] = %v: want NaN exactly on row 1", op, i, v)
			}
		}
		closeF32(t, op, got.F32()[:d], want.F32()[:d], 1e-5)
		closeF32(t, op, got.F32()[2*d:], want.F32()[2*d:], 1e-5)
	}
}

func runCtx(t *testing.T, n *graph.Node, f func(ctx *kernels.Context) error, in ...*tensor.Tensor) *tensor.Tensor {
	t.Helper()
	ctx := &kernels.Context{Node: n, Inputs: in, Outputs: make([]*tensor.Tensor, len(n.OutTypes)), Pool: pool{}, Alloc: poisoned}
	if err := f(ctx); err != nil {
		t.Fatal(err)
	}
	return ctx.Outputs[0]
}

func closeF32(t *testing.T, what string, got, want []float32, tol float64) {
	t.Helper()
	for i := range want {
		if d := math.Abs(float64(got[i]) - float64(want[i])); !(d <= tol*(1+math.Abs(float64(want[i])))) {
			t.Fatalf("%s [%d] = %v, want %v", what, i, got[i], want[i])
		}
	}
}
