package cuda

import (
	"mstream/graph"
	"mstream/kernels"
	"mstream/kernels/cpu"
	"mstream/status"
	"mstream/tensor"
)

// Einsum on the GPU for every equation the CPU kernel takes (one or two
// operands, ellipses with broadcasting, repeated labels, labels summed out
// of one operand, implicit outputs), for TF's GPU dtypes (half, bfloat16,
// float, double). The algorithm is the CPU kernel's (cpu.RunEinsum):
// diagonals, transposes and broadcasts are move.cu's strided map, labels
// summed out of one operand are the Sum kernels (reduce.cu, reduce2.cu),
// the contraction is one strided-batched GEMM (gemm.go's choice: the
// small-batch kernel or cuBLAS, float accumulation for half and
// bfloat16), written straight into the
// output when its label order is the output's (Keras's dense and
// attention forms).

func init() {
	reg("Einsum", "T", gpuFloats, nil, func(n *graph.Node) (kernels.Kernel, error) {
		spec, err := cpu.ParseEinsum(n)
		if err != nil {
			return nil, err
		}
		return fn(func(k kctx) error { return cpu.RunEinsum(k.Context, spec, gpuEinsum{k}) })(n)
	})
}

// gpuEinsum is the GPU's cpu.EinsumDevice; scratch comes from the
// kernel's allocator and goes back after the kernel in stream order.
type gpuEinsum struct{ k kctx }

func (e gpuEinsum) Alloc(_ *kernels.Context, dt tensor.DType, s tensor.Shape) (*tensor.Tensor, error) {
	t, err := e.k.Alloc(dt, s)
	if err != nil {
		return nil, e.k.Errorf(status.CodeOf(err), "Einsum scratch %v%v: %v", dt, s, err)
	}
	return t, nil
}

func (e gpuEinsum) Gather(_ *kernels.Context, dst, src *tensor.Tensor, stride []int64) error {
	md := make([]mdim, len(dst.Shape))
	for i, d := range dst.Shape {
		md[i] = mdim{out: d, istr: stride[i], step: 1}
	}
	return moveLaunch(e.k, dst, src, nil, md)
}

func (e gpuEinsum) Sum(_ *kernels.Context, dst, src *tensor.Tensor, reduced []bool) error {
	if dst.NumElements() == 0 {
		return nil
	}
	count := int64(1)
	for i, r := range reduced {
		if r {
			count *= src.Shape[i]
		}
	}
	return reduceRuns(e.k, dst, src, cpu.ReducedRuns(src.Shape, reduced), count, "sum")
}

func (e gpuEinsum) Gemm(_ *kernels.Context, dst, a, b *tensor.Tensor, nb, m, n, kk int64) error {
	if nb > 1<<31-1 || m > 1<<31-1 || n > 1<<31-1 || kk > 1<<31-1 {
		return e.k.Errorf(status.Unimplemented, "Einsum GEMM of %d x %d x %d x %d on the GPU", nb, m, n, kk)
	}
	return gemm(e.k, dst, a, b, false, false, m, kk, n, nb, m*kk, kk*n) // matmul.go
}
