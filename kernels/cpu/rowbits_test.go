package cpu

import (
	"math"
	"sort"
	"testing"

	"mstream/kernels"
	"mstream/tensor"
)

// TestRowBitsIndependentOfBatch: a float32 element-wise or row-wise op
// gives a row the same bits whether the row comes alone or in a batch of
// 17 (a request's output must not depend on the batch it was served in):
// every unary op with a vec path, and Softmax / LogSoftmax, at row lengths
// on both sides of vecMin, run serially and on a pool, inputs with signed
// zeros among them.
func TestRowBitsIndependentOfBatch(t *testing.T) {
	r := newRand(t)
	ops := []string{"Softmax", "LogSoftmax"}
	for name := range vecUnaryOps {
		ops = append(ops, name)
	}
	sort.Strings(ops)
	for _, op := range ops {
		nd := node(op, nil, []tensor.DType{f32}, f32)
		run := func(x *tensor.Tensor, p kernels.Parallelizer) []float32 {
			ctx := &kernels.Context{Node: nd, Inputs: []*tensor.Tensor{x}, Outputs: make([]*tensor.Tensor, 1), Pool: p, Alloc: poisoned}
			if err := cpuKernel(t, nd).Compute(ctx); err != nil {
				t.Fatalf("%s: %v", op, err)
			}
			return ctx.Outputs[0].F32()
		}
		for _, n := range []int64{1, 3, 15, 16, 31, 33} {
			x, _ := randTensor(r, f32, tensor.Shape{17, n})
			for i, v := range x.F32() {
				x.F32()[i] = v * 3
				switch {
				case op == "Log" || op == "Sqrt" || op == "Rsqrt":
					x.F32()[i] = float32(math.Abs(float64(v*3))) + 1e-3
				case i%7 == 3:
					// Signed zeros and small negatives (Round of -0.4
					// is -0 in TF).
					x.F32()[i] = float32(math.Copysign(0, -1))*float32(i%2) - 0.4*float32(i%3)
				}
			}
			for _, p := range []kernels.Parallelizer{kernels.Serial{}, pool{}} {
				all := run(x, p)
			rows:
				for i := int64(0); i < 17; i++ {
					row := tensor.FromF32(tensor.Shape{1, n}, append([]float32(nil), x.F32()[i*n:(i+1)*n]...))
					for j, v := range run(row, p) {
						if w := all[i*n+int64(j)]; math.Float32bits(v) != math.Float32bits(w) {
							t.Errorf("%s [17,%d] %T: row %d alone gives [%d] = %v, in the batch %v", op, n, p, i, j, v, w)
							break rows
						}
					}
				}
			}
		}
	}
}
