package cuda

import (
	"testing"

	"mstream/kernels"
	"mstream/kernels/kerneltest"
	"mstream/proto/tfpb"
	"mstream/tensor"
)

// TestFusedMatMulNode runs _FusedMatMul nodes (what package optimize makes)
// on the GPU against the CPU kernel, every epilogue included.
func TestFusedMatMulNode(t *testing.T) {
	env(t) // skips without a GPU
	r := newRand(t)
	for _, tc := range []struct {
		m, k, n int64
		ta, tb  bool
		ops     []string
	}{{16, 64, 32, false, false, []string{"BiasAdd"}}, {5, 13, 512, false, true, []string{"BiasAdd", "Relu"}},
		{33, 7, 9, true, false, []string{"BiasAdd", "Relu"}}, {1, 1, 1, true, true, []string{"BiasAdd"}}} {
		as, bs := tensor.Shape{tc.m, tc.k}, tensor.Shape{tc.k, tc.n}
		if tc.ta {
			as = tensor.Shape{tc.k, tc.m}
		}
		if tc.tb {
			bs = tensor.Shape{tc.n, tc.k}
		}
		in := []*tensor.Tensor{kerneltest.RandRange(r, tensor.Float, as, -1, 1), kerneltest.RandRange(r, tensor.Float, bs, -1, 1),
			kerneltest.RandRange(r, tensor.Float, tensor.Shape{tc.n}, -1, 1)}
		attrs := kerneltest.Attrs{"transpose_a": kerneltest.ABool(tc.ta), "transpose_b": kerneltest.ABool(tc.tb), "fused_ops": strList(tc.ops...)}
		n := kerneltest.NodeFor("_FusedMatMul", attrs, in, map[int]int{2: 1})
		SetTF32(false)
		check(t, n, in, 0)
		SetTF32(true)
	}
	// Epilogues cuBLASLt has no form for run as a bias_act kernel after the
	// GEMM (or inside the small-batch kernel): on the GPU, not refused.
	for _, ops := range [][]string{{"BiasAdd", "Relu6"}, {"BiasAdd", "Elu"}, {"BiasAdd", "LeakyRelu"}, {"BiasAdd", "Tanh"}, {"BiasAdd", "Sigmoid"}} {
		for _, m := range []int64{2, 48} { // both sides of MSTREAM_GPU_SMALL_GEMM=auto's bound
			a, b, bias := kerneltest.RandRange(r, tensor.Float, tensor.Shape{m, 37}, -1, 1), kerneltest.RandRange(r, tensor.Float, tensor.Shape{37, 20}, -1, 1), kerneltest.RandRange(r, tensor.Float, tensor.Shape{20}, -1, 1)
			in := []*tensor.Tensor{a, b, bias}
			n := kerneltest.NodeFor("_FusedMatMul", kerneltest.Attrs{"fused_ops": strList(ops...)}, in, map[int]int{2: 1})
			def, err := kernels.Lookup(n, kernels.GPU)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := def.Factory(n); err != nil {
				t.Errorf("fused_ops %v: factory error %v, want a GPU kernel", ops, err)
				continue
			}
			SetTF32(false)
			check(t, n, in, 0)
			SetTF32(true)
		}
	}
}

func strList(s ...string) *tfpb.AttrValue {
	var b [][]byte
	for _, x := range s {
		b = append(b, []byte(x))
	}
	return &tfpb.AttrValue{Value: &tfpb.AttrValue_List{List: &tfpb.AttrValue_ListValue{S: b}}}
}
