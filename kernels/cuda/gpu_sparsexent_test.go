package cuda

import (
	"fmt"
	"math"
	"testing"

	"mstream/kernels/kerneltest"
	"mstream/tensor"
)

// SparseSoftmaxCrossEntropyWithLogits on the GPU: the CPU kernel's values
// for labels in range (float and double logits, int32 and int64 labels,
// one class to many, an empty batch, infinities and NaN in the logits);
// and, where the CPU fails on a label out of range, TF's GPU result: that
// row's loss and gradient NaN, every other row the CPU's values.
func TestSparseXent(t *testing.T) {
	r := newRand(t)
	for _, dt := range []tensor.DType{tensor.Float, tensor.Double} {
		for _, lt := range []tensor.DType{tensor.Int32, tensor.Int64} {
			// {4, 1000}: rows longer than the 256-thread block.
			for _, sh := range []tensor.Shape{{3, 5}, {1, 1}, {0, 4}, {64, 100}, {5, 2}, {1000, 3}, {4, 1000}} {
				x := randT(r, dt, sh, -8, 8, true)
				lab := tensor.New(lt, tensor.Shape{sh[0]})
				for i := 0; i < int(sh[0]); i++ {
					kerneltest.SetF64(lab, i, float64(r.Intn(int(sh[1]))))
				}
				check(t, node("SparseSoftmaxCrossEntropyWithLogits", nil, x, lab), []*tensor.Tensor{x, lab}, 1e-5)
			}
			// Out of range: rows 1 (= cols) and 3 (negative).
			x := randT(r, dt, tensor.Shape{5, 4}, -4, 4, false)
			lab := tensor.New(lt, tensor.Shape{5})
			for i, v := range []float64{2, 4, 0, -1, 3} {
				kerneltest.SetF64(lab, i, v)
			}
			n := node("SparseSoftmaxCrossEntropyWithLogits", nil, x, lab)
			run, err := persistentGPU(t, n)
			if err != nil {
				t.Fatal(err)
			}
			if run == nil {
				continue // dry run: no values
			}
			got, err := run([]*tensor.Tensor{x, lab})
			if err != nil {
				t.Fatalf("%v %v: %v", dt, lt, err)
			}
			ok := tensor.New(lt, tensor.Shape{5})
			for i, v := range []float64{2, 0, 0, 0, 3} {
				kerneltest.SetF64(ok, i, v)
			}
			want, err := cpuRun(n, []*tensor.Tensor{x, ok}, nil)
			if err != nil {
				t.Fatal(err)
			}
			for _, row := range []int{1, 3} {
				kerneltest.SetF64(want[0], row, math.NaN())
				for j := 0; j < 4; j++ {
					kerneltest.SetF64(want[1], row*4+j, math.NaN())
				}
			}
			compare(t, fmt.Sprintf("SparseSoftmaxCrossEntropyWithLogits %v %v, labels out of range", dt, lt), got, want, 1e-5)
		}
	}
}
