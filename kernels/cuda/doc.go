// Package cuda holds the GPU kernels: they register with the kernels
// registry under device "GPU" and run on device/cuda's streams.
//
// # Device tensors and the kernel context
//
// A GPU kernel sees the same kernels.Context as a host kernel, with one
// additive field: Context.Stream, the *cuda.Stream the kernel enqueues its
// work on. Compute launches and returns; it never waits for the device,
// except in the kernels whose Def says SyncsHost (Where, Unique), which
// read a count back to size their outputs, as TF's GPU kernels do.
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
// GEMMs (MatMul, BatchMatMulV2 and V3, _FusedMatMul, Einsum) take one of two
// paths, chosen per call in gemm.go by MSTREAM_GPU_SMALL_GEMM (the
// device's cu.SmallGEMM, which the session sets):
//
//   - auto (the default): a float, half or bfloat16 product whose left
//     operand has at most 16 rows (m <= smallGEMMRows; a batched product
//     of up to 65535 such matrices too) runs gemm.cu's small-batch
//     kernel when launched node by node; while its stream captures a CUDA
//     graph, only where the kernel's device time measured ahead of
//     cuBLASLt (gemm.go's smallWins); every other product cuBLAS; 0: always cuBLAS; 1: the
//     small-batch kernel for every float, half and bfloat16 product.
//   - The small-batch kernel is one launch (a few us of host CPU, where a
//     cuBLASLt call costs 2-3 times that, see TestKernelCPUCost) built for
//     products bound by reading the weights: a block owns a tile of output
//     columns for up to 16 rows, stages those rows of the left operand in
//     shared memory, reads the right operand once per row chunk,
//     coalesced, splits k over its threads and sums the slices in shared
//     memory in a fixed order, in float, then applies the bias and the
//     activation before the one store.
//   - cuBLAS: sgemm/dgemm, TF32 tensor cores allowed for float32 unless
//     SetTF32(false), as TF allows by default; half and bfloat16 through
//     cublasGemmEx with float accumulation (gemmex.go); strided batched
//     when each side's batch is full or broadcast as a whole, one GEMM per
//     batch otherwise. A bias with no activation or ReLU (float, double)
//     is one cuBLASLt call with that epilogue; other activations, or
//     where cuBLASLt has no algorithm, one bias_act kernel follows.
//
// The dtypes are those TF 2.15 registers on the GPU (half, bfloat16,
// float, double). _FusedMatMul fuses BiasAdd and every activation the CPU
// kernel fuses (Relu, Relu6, Elu, LeakyRelu, Tanh, Sigmoid, GeluExact,
// GeluApproximate); package optimize builds it when it fuses such
// chains. Einsum runs the CPU
// kernel's algorithm (cpu.RunEinsum) with device primitives for every
// equation and TF's GPU dtypes (half, bfloat16, float, double): move.cu's
// strided map for diagonals, transposes and broadcasts, the Sum kernels
// for labels summed out of one operand, one strided-batched GEMM written
// straight into the output when the orders agree (einsum.go).
//
// Every other kernel is CUDA C in src/ (embedded), compiled by NVRTC at
// first use for the device's architecture and cached on disk (see
// device/cuda). A program is common.cuh plus one source (types.cuh too
// for the programs that serve every dtype; half and bfloat16 are stored
// as bits and computed in float):
//
//   - gemm.cu: the small-batch GEMM and bias_act (see above).
//   - elementwise.cu: binary ops with numpy broadcasting (Add, AddV2, Sub,
//     Mul, RealDiv, Maximum, Minimum) for float, double, int32, int64;
//     Relu, Sigmoid, Tanh; BiasAdd (NHWC and NCHW); Cast; Fill.
//   - reduce.cu: Sum and Mean over any axes (float, double, int32,
//     int64), Softmax.
//   - array.cu: GatherV2 (with batch_dims); _MstreamGatherN (sibling
//     GatherV2s along axis 0 that package optimize merged; gathern.go),
//     up to 32 pairs a launch, so DLRM's 26 lookups are one launch, not
//     26; concat and split of column
//     blocks for Pack, Concat, ConcatV2, Split, SplitV and Unpack, up to
//     28 inputs or outputs a launch (a node of many small ones, as DLRM's
//     stack of its embeddings, is one launch, not one each); Transpose,
//     whose permutation kernel also serves SpaceToDepth and DepthToSpace
//     (NHWC; an NCHW node runs on the host, which fails it as TF's CPU
//     does); SpaceToBatch(ND) and BatchToSpace(ND), one thread per
//     batch-side element over cpu.SpaceBatchArgs' merged geometry.
//   - math.cu: unary math and activations for every dtype the CPU
//     registers (Abs, Neg, Sign, Square, Reciprocal/Inv, Sqrt, Rsqrt, Exp,
//     Expm1, Log, Log1p, Sin, Cos, Erf, Floor, Ceil, Round, Relu6, Elu,
//     Selu, Softsign, Softplus, LeakyRelu, IsNan, IsInf, IsFinite,
//     LogicalNot, ZerosLike, OnesLike, and the half/bfloat16/narrow-int
//     Relu, Sigmoid, Tanh), and _MstreamUnaryChain (optimize's chains of
//     float32 unary ops, up to 16, in one pass); the activation
//     gradients ReluGrad, Relu6Grad, EluGrad, SeluGrad, SoftplusGrad,
//     LeakyReluGrad, SigmoidGrad, TanhGrad, SqrtGrad, RsqrtGrad and
//     ReciprocalGrad (gradmath.go).
//   - cwise.cu: the remaining broadcasting binary ops (Pow,
//     SquaredDifference, Div, FloorDiv, FloorMod, TruncateDiv,
//     TruncateMod, Mod, DivNoNan, Equal..GreaterEqual, LogicalAnd/Or, and
//     the dtypes elementwise.cu lacks for its ops and for BiasAdd), Select,
//     SelectV2, ClipByValue, AddN.
//   - reduce2.cu: Prod, Max, Min, All, Any and the remaining Sum/Mean
//     dtypes; ArgMax/ArgMin; LogSoftmax; half/bfloat16 Softmax.
//   - move.cu: one strided map per element size for Slice, StridedSlice,
//     Tile, Pad, PadV2, MirrorPad, ReverseV2, BroadcastTo; OneHot;
//     GatherNd.
//   - nn.cu: Conv2D (im2col plus a cuBLAS GEMM for float and double; a
//     direct kernel for grouped convolutions, half, bfloat16 and int32),
//     DepthwiseConv2dNative, Conv2DBackpropInput (a gather per input
//     gradient element), MaxPool, MaxPoolV2, AvgPool, FusedBatchNorm
//     (V1-V3, inference and training), LRN, and _FusedConv2D (the
//     convolution, then one in-place pass of bias or batch-norm scale and
//     the activation), so CNN layers optimize fuses stay on the device;
//     FakeQuantWithMinMaxArgs/Vars/VarsPerChannel (grids nudged on the
//     host by the CPU kernel's code, elements rounded with _rn intrinsics
//     so the bits equal the CPU's) and BatchNormWithGlobalNormalization
//     (float and half, FusedBatchNorm's inference arithmetic), in quant.go.
//   - misc.cu: Cumsum, Cumprod, MatrixBandPart, ResizeBilinear,
//     ResizeNearestNeighbor, TopKV2 (a warp per row, k selection rounds:
//     fast for the small k of inference, quadratic when k nears the row).
//   - random.cu: RandomUniform, RandomStandardNormal, TruncatedNormal,
//     RandomUniformInt. The kernel keeps the CPU kernel's Philox stream
//     (cpu.RandomStream): the host checks the call and reserves its
//     blocks as the CPU does, the device turns them into values, so the
//     n-th call on either device gives the same values for a seed (bit
//     for bit for uniforms and integers; normals within the last bit of
//     CUDA's double log/sin/cos, rounded to the dtype).
//   - intdiv.cu: integer Div, TruncateDiv, FloorDiv (int16, int64, uint8,
//     uint16) and Pow (int64), TF's GPU dtypes, with TF's GPU values where
//     the CPU kernel fails: x / 0 = -1 (all bits set), a negative
//     exponent gives 0 (1 and -1 excepted).
//   - scatter.cu: ScatterNd (every numeric dtype but int32) with atomic
//     adds; an out-of-range index skips its slice, as in TF's GPU kernel,
//     where the CPU kernel fails. UnsortedSegmentSum (float, double,
//     half, bfloat16, int32, int64): atomic adds into a double (u64)
//     accumulator, stored once in the dtype; an id >= num_segments drops
//     its row (TF's GPU kernel), where the CPU kernel fails.
//   - state.cu (state.go): the resource variables' ops with the value in
//     device memory (see package resource's consistency model):
//     ReadVariableOp and AssignVariableOp (device copies, every
//     fixed-size dtype), AssignAdd/SubVariableOp, ResourceScatterUpdate,
//     ResourceScatterAdd and ResourceScatterSub (float, double, int32,
//     int64; atomic adds), ResourceGather (GatherV2's kernel on the
//     value), and the optimizers ResourceApply{GradientDescent,
//     Momentum, Adam, Adagrad, RMSProp, CenteredRMSProp, Ftrl, FtrlV2}
//     and ResourceSparseApply{Adagrad, Momentum, RMSProp,
//     CenteredRMSProp, Ftrl, FtrlV2} (float, double: one rule function
//     per optimizer for both, the CPU kernel's arithmetic; a sparse
//     kernel's block finds a row's first index and applies its repeats
//     in order, as the CPU does). Indices stay on the device, so an
//     out-of-range one skips its row (TF's GPU kernels), where the CPU
//     kernels fail; the conformance cases mark those HostErr. The TF1
//     ref variables' VariableV2, Assign, AssignAdd/Sub and
//     ScatterUpdate/Add/Sub (refstate.go) use the same device values and
//     programs, their variable found from the graph at bind time.
//   - select.cu: Where (int8, uint8, int64, float, double, complex,
//     bool) and Unique (floats and every integer dtype; int32 or int64
//     indices), TF's GPU dtypes. Each numbers the elements it keeps with a
//     device prefix sum, reads the total back (copy and stream
//     synchronisation, kctx.readback), allocates its outputs and fills
//     them: Where in two passes over its input (counts per chunk, then
//     block scans that place each element), Unique over 0/1 flags of first
//     occurrences. Unique finds each value's first occurrence with an
//     open-addressing hash table (atomicCAS to claim a slot, atomicMin to
//     keep the smallest index), so its outputs follow the CPU kernel's
//     order of first occurrence exactly. Where handles up to 8 dims longer
//     than 1 (TF's GPU kernel: rank 8).
//
// Shapes are normalised on the host first (size-1 dims dropped,
// contiguous dims merged), so most broadcasts, reductions, transposes and
// slices reach the device as rank 1 to 3. Data-movement kernels are per
// element size, not per dtype, so they serve every fixed-size dtype.
// Reshape, Identity, IdentityN, StopGradient, ExpandDims, Squeeze and
// Bitcast are metadata only: the host kernels, which never read element
// data, are registered for the GPU too (Bitcast forwards the device buffer
// under the new dtype, as TF's GPU kernel does; IdentityN's type list
// must hold device dtypes only).
//
// The kernels that need scratch memory (Conv2D's im2col, FusedBatchNorm's
// coefficients) take it from Context.Alloc without making it an output;
// the executor frees such allocations after the kernel in stream order.
//
// Left on the host (the runtime places them there and copies), each for
// TF's own reason: int32 FloorDiv, FloorMod, TruncateDiv, TruncateMod,
// Mod, Div and ScatterNd (TF's int32 kernels are the CPU's, with
// HostMemory inputs and outputs); integer FloorMod, Mod and TruncateMod
// of every dtype, Div/TruncateDiv/FloorDiv of int8, uint32 and uint64,
// and Pow of integers other than int64 (TF 2.15 has no GPU kernel for
// them, or only JIT-compiled ones, off by default), so the CPU kernel's
// zero-divisor and negative-exponent errors stand there; integer GEMMs
// (TF registers int16/int32/int64 MatMul on the CPU only); string ops and
// dtypes; shape ops that produce host values (Shape, ShapeN, Size, Rank,
// BroadcastArgs, Range, InvertPermutation); Where of int32 and the
// remaining dtypes, and Unique of bool and strings (TF's are host
// kernels); integer Einsum (no TF GPU kernel); NCHW
// convolutions (as on the CPU). The placer also keeps on the host, with no
// copy, what TF's HostMemory kernels compute there: int32 nodes over
// values the host already holds (shape arithmetic), and Unique or Where
// over such values (exec/place_shape.go); a metadata-only kernel's output
// (kernels.Def.Forwards) keeps its input's host copy for them.
//
// Where TF's GPU kernel cannot report an error without a synchronisation
// it computes a value, and so do these: an integer division by zero, a
// negative integer exponent and an out-of-range ScatterNd index (intdiv.cu
// and scatter.cu give the values), where the CPU kernels fail. The shared
// conformance suite marks those error cases HostErr, and
// gpu_intdiv_test.go and gpu_scatter_test.go check the GPU's values
// against TF's rules.
//
// Numerics follow the CPU kernels, which the tests compare with: sums
// accumulate in double for float and double, and in 64 bits for integers
// (wrapping to the dtype); NaN propagates through Relu, Maximum and
// Minimum; Cast goes through float for half and bfloat16 and through a
// 64-bit integer from floats to integers; half and bfloat16 round once
// when stored (AddN rounds each partial sum, as TF adds in the dtype).
// GatherV2 and GatherNd are the exceptions: as TF's GPU kernels, they
// write zeros for an out-of-range index, where the CPU kernels report an
// error (checking on the device would need a synchronisation).
//
// # Tests
//
// gpu_test.go and gpu_*_test.go check every GPU kernel against the CPU
// kernel of the same node on fresh random inputs with per-dtype
// tolerances, poisoning outputs first so an unwritten element fails;
// conformance_test.go runs the shared conformance suite on the GPU. Both
// skip without a GPU, except under MSTREAM_DEVICE=gpu. Without a GPU,
// when clang is installed, clang_test.go checks every program with
// clang's CUDA front end (a shim declares what NVRTC provides), and
// dryrun_test.go runs the conformance cases through the kernels' Go side
// with a launch hook that checks each kernel exists in its program, the
// packed arguments match its parameter list, and outputs have the CPU's
// dtypes and shapes (GEMMs included: kctx.gemm stands in for cuBLAS,
// cuBLASLt is absent, so the bias_act fallback runs); MSTREAM_GPU_DRYRUN=1 sends the GPU tests' own cases
// through the same dry run. MSTREAM_GPU_EMU=1 goes further: emu_test.go
// compiles each program as host C++ with clang++ (a shim for CUDA's
// builtins; barriers and warp shuffles run the block's threads as
// coroutines) and runs the kernels on the CPU, so TestEmuConformance and
// the GPU tests' own cases compare real numbers with the CPU kernels
// without a GPU (the emulator computes cuBLAS's GEMMs in float64;
// TestEmuSmallGEMM reruns the GEMM ops with MSTREAM_GPU_SMALL_GEMM forced
// each way). The emulator checks what a kernel computes, not races or
// speed (compute-sanitizer on a GPU checks those), and its math library
// is the host's, not CUDA's. bench/gpu/build.sh builds the test binaries
// for a GPU machine and bench/gpu/README.md records what ran there.
package cuda
