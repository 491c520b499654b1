package cuda

import (
	"fmt"
	"math/rand"
	"testing"

	cu "mstream/device/cuda"
	"mstream/kernels"
	"mstream/kernels/kerneltest"
	"mstream/tensor"
)

// TestColsLaunches counts, in a dry run, the launches and device copies
// of the ops that move column blocks: a node's inputs or outputs go 28 a
// launch, whatever their count (DLRM's stack of 26 embeddings and its
// unstack were a launch per block), and a big one-row block is a copy of
// its own. The values are TestConformance's and TestEmuConformance's.
func TestColsLaunches(t *testing.T) {
	r := rand.New(rand.NewSource(3))
	f32 := func(s ...int64) *tensor.Tensor { return kerneltest.Rand(r, tensor.Float, s) }
	many := func(k int, s ...int64) []*tensor.Tensor {
		var ts []*tensor.Tensor
		for i := 0; i < k; i++ {
			ts = append(ts, f32(s...))
		}
		return ts
	}
	axis := func(ts []*tensor.Tensor, ax int64) []*tensor.Tensor {
		return append(ts, kerneltest.IntScalar(tensor.Int32, ax))
	}
	for _, tc := range []struct {
		op             string
		attrs          kerneltest.Attrs
		in             []*tensor.Tensor
		launches, d2ds int
	}{
		{"Pack", kerneltest.Attrs{"axis": kerneltest.AInt(1)}, many(26, 16, 64), 1, 0},
		{"Pack", nil, many(57, 16, 64), 3, 0},
		{"Unpack", kerneltest.Attrs{"num": kerneltest.AInt(26), "axis": kerneltest.AInt(1)}, []*tensor.Tensor{f32(16, 26, 64)}, 1, 0},
		{"ConcatV2", nil, axis(many(30, 16, 8), 1), 2, 0},
		{"ConcatV2", nil, axis([]*tensor.Tensor{f32(20000), f32(5), f32(17000), f32(3)}, 0), 1, 2},
		{"Split", kerneltest.Attrs{"num_split": kerneltest.AInt(27)}, []*tensor.Tensor{kerneltest.IntScalar(tensor.Int32, 1), f32(16, 27*64)}, 1, 0},
	} {
		t.Run(fmt.Sprintf("%s/%d", tc.op, len(tc.in)), func(t *testing.T) {
			lists := map[string]map[int]int{"Pack": {0: len(tc.in)}, "ConcatV2": {0: len(tc.in) - 1}}[tc.op]
			n := kerneltest.NodeFor(tc.op, tc.attrs, tc.in, lists)
			launches, d2ds := 0, 0
			dryRun = &dryDevice{
				launch: func(*cu.Program, string, cu.Dim3, cu.Dim3, int, *cu.Args) error { launches++; return nil },
				copy:   func(dst, src, n uint64) { d2ds++ },
			}
			defer func() { dryRun = nil }()
			k, err := kernels.Make(n, kernels.GPU)
			if err != nil {
				t.Fatal(err)
			}
			var stream *cu.Stream // typed nil: the dry run never touches it
			ctx := &kernels.Context{Node: n, Inputs: tc.in, Outputs: make([]*tensor.Tensor, len(n.OutTypes)), Stream: stream,
				Alloc: func(dt tensor.DType, s tensor.Shape) (*tensor.Tensor, error) { return tensor.New(dt, s), nil }}
			if err := k.Compute(ctx); err != nil {
				t.Fatal(err)
			}
			if launches != tc.launches || d2ds != tc.d2ds {
				t.Errorf("%d launches and %d device copies, want %d and %d", launches, d2ds, tc.launches, tc.d2ds)
			}
		})
	}
}
