package cuda

import (
	_ "embed"

	cu "mstream/device/cuda"
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
	if len(x.Shape) != 2 {
		return k.Errorf(status.InvalidArgument, "logits must be 2-D, but got shape %v", x.Shape)
	}
	if len(lab.Shape) != 1 {
		return k.Errorf(status.InvalidArgument, "labels must be 1-D, but got shape %v", lab.Shape)
	}
	if x.Shape[0] != lab.Shape[0] {
		return k.Errorf(status.InvalidArgument, "logits and labels must have the same first dimension, got logits shape %v and labels shape %v", x.Shape, lab.Shape)
	}
	if x.Shape[1] == 0 {
		return k.Errorf(status.InvalidArgument, "Must have at least one class, but got logits shape %v", x.Shape)
	}
	if lab.DType != tensor.Int32 && lab.DType != tensor.Int64 {
		return k.Errorf(status.InvalidArgument, "labels must be int32 or int64, got %v", lab.DType)
	}
	rows, cols := x.Shape[0], x.Shape[1]
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
