package cuda

import (
	cu "mstream/device/cuda"
	"mstream/tensor"
)

// Half and bfloat16 GEMMs (MatMul, BatchMatMulV2, BatchMatMulV3) go
// through cublasGemmEx / cublasGemmStridedBatchedEx with float
// accumulation, the dtypes TF 2.15 registers these ops for on the GPU
// (TF_CALL_GPU_NUMBER_TYPES: half, bfloat16, float, double). The result
// rounds to the dtype once, as the CPU kernel's does; cuBLAS's float
// accumulation order differs from the CPU's, so results agree to the
// dtype's last bit, not bit for bit. Integer GEMMs have no GPU kernel in
// TF 2.15 (matmul_op_real.cc registers int16/int32/int64 on the CPU
// only), so they stay on the host here too.

// gemmTypes are the dtypes of the GPU GEMM ops.
var gemmTypes = []tensor.DType{tensor.Float, tensor.Double, tensor.Half, tensor.Bfloat16}

// gemmExTypes maps the dtypes that take cublasGemmEx to its operand type.
var gemmExTypes = map[tensor.DType]cu.GemmType{tensor.Half: cu.GemmHalf, tensor.Bfloat16: cu.GemmBfloat16}
