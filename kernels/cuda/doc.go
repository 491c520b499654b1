// Package cuda holds the GPU kernels: they register with the kernels
// registry under device "GPU" and run on device/cuda's streams.
//
// # Device tensors and the kernel context
//
// A GPU kernel sees the same kernels.Context as a host kernel, with one
// additive field: Context.Stream, the *cuda.Stream the kernel enqueues its
// work on. Compute launches and returns; it never waits for the device.
// Inputs and outputs are device tensors: a tensor.Tensor whose Buf stands
// for device memory (cuda.DeviceBytes; kernels read its address with
// cuda.Ptr and never touch the bytes), as a TF GPU tensor's buffer is a
// device pointer. The args a Def lists in HostMemory (shapes, axes,
// permutations, sizes) are ordinary host tensors, as TF's HostMemory rule
// has them, so shapes never need a device round trip. Context.Alloc must
// return device tensors (the executor backs it with the group's bfc
// allocator over cuda.DeviceMemory); a GPU kernel called without a CUDA
// stream or without Alloc fails with FAILED_PRECONDITION instead of
// touching host memory as if it were the device's. Nothing else changes
// for CPU kernels, which ignore Stream.
//
// The executor's side of the contract: call Compute on the launching
// goroutine (never from Stream.Enqueue: a CUDA host function must not call
// CUDA), with the inputs' producers ordered before the stream (same
// stream, or a cuda event waited on), and keep every input and output
// buffer alive until an event recorded after the kernel has completed.
//
// # Kernels
//
// GEMMs go through cuBLAS: MatMul (sgemm/dgemm, TF32 tensor cores allowed
// for float32 unless SetTF32(false), as TF allows by default), BatchMatMulV2
// and V3 (strided batched when each side's batch is full or broadcast as a
// whole, one GEMM per batch otherwise). FusedMatMul is MatMul+BiasAdd
// (+Relu) in one cuBLASLt call with a bias or bias+ReLU epilogue, falling
// back to GEMM plus one bias kernel where cuBLASLt has no algorithm; the
// executor builds it when it fuses such chains.
//
// Every other kernel is CUDA C in src/ (embedded), compiled by NVRTC at
// first use for the device's architecture and cached on disk (see
// device/cuda): elementwise binary ops with numpy broadcasting (Add, AddV2,
// Sub, Mul, RealDiv, Maximum, Minimum), Relu, Sigmoid, Tanh, BiasAdd
// (NHWC and NCHW), Cast, Fill, Sum and Mean over any axes, Softmax,
// GatherV2 (with batch_dims), ConcatV2 and Transpose. Shapes are
// normalised on the host first (size-1 dims dropped, contiguous dims
// merged), so most broadcasts, reductions and transposes reach the device
// as rank 1 to 3 with a specialised kernel. Data-movement kernels are per
// element size, not per dtype, so they serve every fixed-size dtype.
// Reshape, Identity, StopGradient, ExpandDims and Squeeze are metadata
// only: the host kernels, which never read element data, are registered
// for the GPU too.
//
// Numerics follow the CPU kernels, which the tests compare with: sums
// accumulate in double for float and double, and in 64 bits for integers
// (wrapping to the dtype); NaN propagates through Relu, Maximum and
// Minimum; Cast goes through float for half and bfloat16 and through a
// 64-bit integer from floats to integers. GatherV2 is the exception: as
// TF's GPU kernel, it writes zeros for an out-of-range index, where the
// CPU kernel reports an error (checking on the device would need a
// synchronisation).
//
// # Tests
//
// gpu_test.go checks every GPU kernel against the CPU kernel of the same
// node on fresh random inputs with per-dtype tolerances, poisoning outputs
// first so an unwritten element fails; conformance_test.go runs the shared
// conformance suite on the GPU. Both skip without a GPU, except under
// MSTREAM_DEVICE=gpu. bench/gpu/build.sh builds the test binaries for a GPU
// machine and bench/gpu/README.md records what ran there.
package cuda
