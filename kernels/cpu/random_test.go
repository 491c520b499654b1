package cpu

import (
	"testing"

	"mstream/kernels"
	"mstream/tensor"
)

// TestRandomSequence checks TF's seed contract on one kernel: successive
// calls continue the stream (they differ), a fresh kernel of the same
// node replays it from the start, and the values do not depend on how the
// intra-op pool splits the work.
func TestRandomSequence(t *testing.T) {
	for _, op := range []string{"RandomUniform", "RandomStandardNormal", "TruncatedNormal", "RandomUniformInt"} {
		n := node(op, nil, []tensor.DType{i32}, f32)
		n.Attrs["dtype"] = aType(f32)
		n.Attrs["seed"], n.Attrs["seed2"] = aInt(7), aInt(11)
		in := []*tensor.Tensor{tensor.FromI32(tensor.Shape{2}, []int32{300, 7})}
		if op == "RandomUniformInt" {
			n = node(op, nil, []tensor.DType{i32, i32, i32}, i32)
			n.Attrs["Tout"], n.Attrs["seed"], n.Attrs["seed2"] = aType(i32), aInt(7), aInt(11)
			in = append(in, tensor.ScalarI32(-50), tensor.ScalarI32(50))
		}
		def, err := kernels.Lookup(n, kernels.CPU)
		if err != nil {
			t.Fatal(err)
		}
		call := func(k kernels.Kernel, p kernels.Parallelizer) *tensor.Tensor {
			ctx := &kernels.Context{Node: n, Inputs: in, Outputs: make([]*tensor.Tensor, 1), Pool: p}
			if err := k.Compute(ctx); err != nil {
				t.Fatalf("%s: %v", op, err)
			}
			return ctx.Outputs[0]
		}
		k1, _ := def.Factory(n)
		a, b := call(k1, pool{}), call(k1, pool{})
		if string(a.Buf) == string(b.Buf) {
			t.Errorf("%s: two calls of one kernel gave the same values", op)
		}
		k2, _ := def.Factory(n)
		a2, b2 := call(k2, kernels.Serial{}), call(k2, kernels.Serial{})
		if string(a.Buf) != string(a2.Buf) || string(b.Buf) != string(b2.Buf) {
			t.Errorf("%s: a fresh kernel (serial) did not replay the sequence of the first (pooled)", op)
		}
	}
}
