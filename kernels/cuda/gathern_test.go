package cuda

import (
	"fmt"
	"math/rand"
	"os"
	"testing"

	cu "mstream/device/cuda"
	"mstream/graph"
	"mstream/kernels"
	"mstream/kernels/kerneltest"
	"mstream/status"
	"mstream/tensor"
)

// gatherNNode is an _MstreamGatherN over k tables of shape rows and int64
// indices of shape ids, drawn from r within the tables' rows.
func gatherNNode(r *rand.Rand, k int, rows, ids tensor.Shape) ([]*tensor.Tensor, *kernels.Context) {
	var in []*tensor.Tensor
	for i := 0; i < k; i++ {
		in = append(in, kerneltest.Rand(r, tensor.Float, rows))
	}
	for i := 0; i < k; i++ {
		in = append(in, kerneltest.RandIndex(r, tensor.Int64, ids, rows[0]))
	}
	n := kerneltest.NodeFor("_MstreamGatherN", nil, in, map[int]int{0: k, 1: k})
	return in, &kernels.Context{Node: n, Inputs: in, Outputs: make([]*tensor.Tensor, k),
		Alloc: func(dt tensor.DType, s tensor.Shape) (*tensor.Tensor, error) { return tensor.New(dt, s), nil }}
}

// TestGatherNLaunches counts, in a dry run, the launches of
// _MstreamGatherN: DLRM-small's 26 lookups of [100000, 64] tables by 16
// ids are one launch (26 as separate GatherV2 nodes), pairs beyond 32 take
// another, and an empty pair none.
func TestGatherNLaunches(t *testing.T) {
	r := rand.New(rand.NewSource(5))
	for _, tc := range []struct {
		k         int
		rows, ids tensor.Shape
		launches  int
	}{
		{26, tensor.Shape{1000, 64}, tensor.Shape{16}, 1},
		{32, tensor.Shape{5, 3}, tensor.Shape{2, 2}, 1},
		{57, tensor.Shape{5}, tensor.Shape{7}, 2},
		{3, tensor.Shape{5, 2}, tensor.Shape{0}, 0},
	} {
		t.Run(fmt.Sprintf("%d pairs", tc.k), func(t *testing.T) {
			_, ctx := gatherNNode(r, tc.k, tc.rows, tc.ids)
			launches, rows := 0, 0
			dryRun = &dryDevice{launch: func(_ *cu.Program, _ string, grid, _ cu.Dim3, _ int, _ *cu.Args) error {
				launches++
				rows += int(grid.Y)
				return nil
			}}
			defer func() { dryRun = nil }()
			k, err := kernels.Make(ctx.Node, kernels.GPU)
			if err != nil {
				t.Fatal(err)
			}
			var stream *cu.Stream // typed nil: the dry run never touches it
			ctx.Stream = stream
			if err := k.Compute(ctx); err != nil {
				t.Fatal(err)
			}
			want := tc.k
			if tc.ids.NumElements() == 0 {
				want = 0
			}
			if launches != tc.launches || rows != want {
				t.Errorf("%d launches of %d pairs, want %d of %d", launches, rows, tc.launches, want)
			}
		})
	}
}

// TestGatherNDevice checks _MstreamGatherN on the GPU (or the emulator,
// or the dry run: see check) against the CPU kernel: DLRM's 26 lookups,
// pairs of mixed row shapes and index shapes, more pairs than a launch
// carries, in every element size.
func TestGatherNDevice(t *testing.T) {
	r := newRand(t)
	rows := []tensor.Shape{{100, 64}, {7}, {5, 3, 2}, {9, 1}}
	ids := []tensor.Shape{{16}, {}, {2, 3}, {0}}
	for _, dt := range []tensor.DType{tensor.Float, tensor.Half, tensor.Int8, tensor.Int64, tensor.Bool, tensor.Complex128} {
		for _, it := range []tensor.DType{tensor.Int32, tensor.Int64} {
			for _, k := range []int{26, 3, 40} {
				var params, idx []*tensor.Tensor
				for i := 0; i < k; i++ {
					p := randAny(r, dt, rows[(i+k)%len(rows)], -50, 50)
					params = append(params, p)
					idx = append(idx, kerneltest.RandIndex(r, it, ids[(i/2+k)%len(ids)], p.Shape[0]))
					if k == 26 {
						params[i] = randAny(r, dt, rows[0], -50, 50)
						idx[i] = kerneltest.RandIndex(r, it, ids[0], 100)
					}
				}
				in := append(params, idx...)
				check(t, kerneltest.NodeFor("_MstreamGatherN", nil, in, map[int]int{0: k, 1: k}), in, 0)
			}
		}
	}
}

// TestGatherNOutOfRange: on the GPU (or the emulated GPU), an index out
// of range gives zeros in its pair's output, exactly as GatherV2's GPU
// kernel and TF's do (the host kernel reports an error instead), and the
// other pairs are gathered.
func TestGatherNOutOfRange(t *testing.T) {
	run := emuRun
	if os.Getenv("MSTREAM_GPU_EMU") != "1" {
		e := env(t) // skips without a GPU
		run = func(n *graph.Node, in []*tensor.Tensor) ([]*tensor.Tensor, error) { return e.run(n, in, nil, nil) }
	}
	r := rand.New(rand.NewSource(9))
	p0, p1 := kerneltest.Rand(r, tensor.Float, tensor.Shape{5, 3}), kerneltest.Rand(r, tensor.Float, tensor.Shape{4, 3})
	i0 := kerneltest.IntVec(tensor.Int32, 4, 0, 2)
	i1 := kerneltest.IntVec(tensor.Int32, 1, 4, -1, 3) // 4 and -1 are out of [0, 4)
	in := []*tensor.Tensor{p0, p1, i0, i1}
	n := kerneltest.NodeFor("_MstreamGatherN", nil, in, map[int]int{0: 2, 1: 2})
	got, err := run(n, in)
	if err != nil {
		t.Fatal(err)
	}
	ax := kerneltest.IntScalar(tensor.Int32, 0)
	for i, pair := range [][2]*tensor.Tensor{{p0, i0}, {p1, i1}} {
		want, err := run(kerneltest.NodeFor("GatherV2", nil, []*tensor.Tensor{pair[0], pair[1], ax}, nil), []*tensor.Tensor{pair[0], pair[1], ax})
		if err != nil {
			t.Fatal(err)
		}
		if !got[i].Shape.Equal(want[0].Shape) {
			t.Fatalf("output %d: shape %v, want %v", i, got[i].Shape, want[0].Shape)
		}
		for j, v := range want[0].F32() {
			if got[i].F32()[j] != v {
				t.Errorf("output %d element %d: %v, GatherV2 gives %v", i, j, got[i].F32()[j], v)
			}
		}
	}
	for _, j := range []int{3, 4, 5, 6, 7, 8} { // rows 1 and 2 of output 1
		if got[1].F32()[j] != 0 {
			t.Errorf("output 1 element %d: %v for an index out of range, want 0", j, got[1].F32()[j])
		}
	}
}

// TestGatherV2IndexTypes: the GPU GatherV2 takes int32 and int64 indices
// and refuses int16 ones as Unimplemented at plan time, so placement runs
// such a node on the host (TF registers its GPU kernel for int32 and int64
// only), instead of failing at run time.
func TestGatherV2IndexTypes(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	for _, c := range []struct {
		it   tensor.DType
		want status.Code
	}{{tensor.Int32, status.OK}, {tensor.Int64, status.OK}, {tensor.Int16, status.Unimplemented}} {
		in := []*tensor.Tensor{kerneltest.Rand(r, tensor.Float, tensor.Shape{5, 3}), kerneltest.RandIndex(r, c.it, tensor.Shape{4}, 5), kerneltest.IntScalar(tensor.Int32, 0)}
		n := kerneltest.NodeFor("GatherV2", nil, in, nil)
		def, err := kernels.Lookup(n, kernels.GPU)
		if err != nil {
			t.Fatalf("%v: %v", c.it, err)
		}
		_, err = def.Factory(n)
		if got := status.CodeOf(err); got != c.want {
			t.Errorf("GPU GatherV2 factory with Tindices=%v: %v (code %v), want code %v", c.it, err, got, c.want)
		}
	}
}
