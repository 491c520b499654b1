package cuda

import (
	_ "embed"

	cu "mstream/device/cuda"
	"mstream/kernels/cpu"
	"mstream/status"
	"mstream/tensor"
)

// SparseSoftmaxCrossEntropyWithLogits on the GPU (src/sparsexent.cu),
// float and double logits, int32 or int64 labels: the CPU kernel's shape
// checks and numerics (double, one-hot rows in its order); an out-of-range
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
	return k.launchN(sparseXent, "sparse_xent_"+suffix(x.DType)+"_"+suffix(lab.DType), rows, &args)
}
