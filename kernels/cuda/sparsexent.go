package cuda

import (
	_ "embed"

	cu "mstream/device/cuda"
	"mstream/kernels/cpu"
	"mstream/status"
	"mstream/tensor"
)

// SparseSoftmaxCrossEntropyWithLogits on the GPU (src/sparsexent.cu),
// float and double logits, int32 or int64 labels, a block per row: the
// CPU kernel's shape checks and numerics (double, one-hot rows; the
// row's sums in the block's order); an out-of-range
// label gives a NaN row instead of the CPU's error, as TF's GPU kernel
// does.

//go:embed src/sparsexent.cu
var sparseXentSrc string

var sparseXent = &cu.Program{Name: "sparsexent.cu", Source: commonSrc + sparseXentSrc}

func init() {
	reg("SparseSoftmaxCrossEntropyWithLogits", "T", gradnnTypes, nil, fn(sparseXentGPU))
}

func sparseXentGPU(k kctx) error {
	x, lab := k.Input(0), k.Input(1)
	rows, cols, err := cpu.SparseXentArgs(k.Context, x, lab)
	if err != nil {
		return err
	}
	if lab.DType != tensor.Int32 && lab.DType != tensor.Int64 {
		return k.Errorf(status.InvalidArgument, "labels must be int32 or int64, got %v", lab.DType)
	}
	loss, err := k.Allocate(0, tensor.Shape{rows})
	if err != nil {
		return err
	}
	back, err := k.Allocate(1, x.Shape)
	if err != nil {
		return err
	}
	var args cu.Args
	args.Ptr(ptr(loss)).Ptr(ptr(back)).Ptr(ptr(x)).Ptr(ptr(lab)).I64(rows).I64(cols)
	if rows == 0 {
		return nil
	}
	block, grid := rowBlocks(k, rows, cols)
	return k.launch(sparseXent, "sparse_xent_"+suffix(x.DType)+"_"+suffix(lab.DType), grid, block, 0, &args)
}

// rowBlocks sizes a launch of one block per reduction (rows of them, each
// over n elements, blocks striding over the rows): the block is the
// smallest power of two from 32 to 256 threads that covers n, the grid
// at most 16 blocks per multiprocessor.
func rowBlocks(k kctx, rows, n int64) (block, grid int) {
	block = 32
	for block < 256 && int64(block) < n {
		block *= 2
	}
	return block, int(min(rows, int64(k.sms()*16)))
}
