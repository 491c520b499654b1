// Package cpu holds the host kernels and registers them in init.
//
// Conventions: kernels never write into inputs (Identity, Reshape,
// ExpandDims, Squeeze forward or re-view the input buffer instead);
// shape-like inputs (shapes, axes, dims, begin/end/strides) are host tensors
// read with Tensor.Int64s; half and bfloat16 are computed in float32; every
// bad shape or value is an INVALID_ARGUMENT from ctx.Errorf, which names the
// node. Elementwise and reduction loops split over ctx.For (serial when the
// context has no pool); the loops are generic over element types with the op
// switch outside the loop, so there is no per-element indirect call.
//
// Binary ops share one broadcasting helper (broadcastShapes, forRows) with
// fast paths for equal shapes and a scalar on either side; BiasAdd is a
// broadcast add of the bias viewed as [C, 1, ...].
//
// Elementwise ops beyond the arithmetic of binary.go live in
// elementwise_unary.go (math, activations, predicates, *Like),
// elementwise_binary.go (Pow, the division family with TF's integer
// semantics and errors), compare.go (comparisons, logical ops),
// elementwise_select.go (Select, SelectV2, ClipByValue, AddN) and
// activation.go (LogSoftmax); reductions (Sum, Mean, Prod, Max, Min, All,
// Any, ArgMax, ArgMin) in reduce2.go. Float32 inputs of the hot ones take
// the vectorised C loops of package vec through fastpath.go.
//
// Data movement beyond array.go lives in array2.go: Slice, Tile, Pad,
// MirrorPad, ReverseV2 and BroadcastTo are one copier (mapCopy) driven by a
// source index per output coordinate of each dimension, copying runs of the
// last dimension as blocks. The space/batch/depth rearrangements live in
// spacebatch.go: SpaceToDepth and DepthToSpace are Transpose's strided
// copier over a 6-D view, the four space/batch ops one loop over rows of
// the remaining dims (in runs along the last block dim, TF's trivial
// block dims merged away) that copies, zero-pads or crops each. Output
// buffers may be recycled by the session's allocator, so every kernel
// writes every output element (zeros included); the conformance runner
// poisons output buffers to hold kernels to it.
//
// Argument checks shared with other devices: an op's validation (codes,
// messages, the output shape it implies) lives once, in an exported
// function here that the CPU kernel and kernels/cuda's kernel both call,
// so the devices differ only in how they compute. arrayargs.go holds the
// data-movement ops' (SliceArgs, TileArgs, PadArgs, MirrorPadArgs,
// ReverseArgs, BroadcastToArgs, SplitArgs, SplitVArgs, ConcatArgs,
// PackArgs, UnpackArgs, TransposeArgs, GatherArgs, GatherNdArgs,
// OneHotArgs, MatrixBandPartArgs); others sit beside their kernel
// (SpaceBatchArgs and SpaceDepthArgs in spacebatch.go;
// StridedSliceArgs and ParseStridedSliceMasks in stridedslice.go;
// Conv2DArgs, Conv2DLimits, ParseDepthwiseAttrs, DepthwiseArgs,
// ParseConv2DBackpropInputAttrs and Conv2DBackpropInputArgs in nn_conv.go
// beside ParseConv2DAttrs; ParseBatchNormAttrs, BatchNormArgs,
// ParseLRNAttrs and LRNArgs in nn_norm.go; ParsePoolAttrs,
// ParseMaxPoolV2Attrs, MaxPoolV2Args and PoolParams in nn_pool.go;
// ReductionArgs, ReducedRuns and ArgReduceArgs in reduce2.go; ScanArgs
// and TopKArgs in scan.go; ResizeArgs in resize.go; SoftmaxArgs in
// activation.go; ScatterNdArgs in scatterargs.go). A check that reads
// element data the GPU keeps on the device (GatherNd's and ScatterNd's
// index bounds) stays in the CPU kernel. The random kernels share more
// than checks: randomargs.go exports their Philox stream (RandomStream:
// key, counter, the checks and the block reservation of each call), so a
// GPU random kernel holds the same state as a CPU one and its n-th call
// reads the same blocks.
//
// NN kernels are NHWC with HWIO filters, as TF's CPU kernels; NCHW fails
// with TF's code (Conv2D and DepthwiseConv2dNative UNIMPLEMENTED, pooling
// INVALID_ARGUMENT), except FusedBatchNorm, which takes both. Conv2D
// (nn_conv.go) is im2col over tiles of at most colBudget elements plus one
// blas GEMM per tile and group (a 1x1 stride-1 convolution is a single GEMM
// over the input); grouped convolution follows TF's in_depth % filter_depth
// rule. Fused kernels reuse it: ParseConv2DAttrs validates a Conv2D-like
// node's attrs, Conv2DAttrs.Params checks the shapes and returns the
// ConvParams (output shape, padding), and Conv2DTensor (any dtype) or
// Conv2DInto (float32 slices) computes the convolution into an output the
// caller then adds its bias and activation to. Conv2DBackpropInput is a
// GEMM against the transposed filter plus col2im; DepthwiseConv2dNative,
// pooling, LRN and resizing are direct loops split over rows of the output.
//
// Fused kernels (fused.go) serve what package optimize (or TF's grappler)
// puts in place of several nodes: _FusedMatMul writes the bias into the
// GEMM's output and lets the GEMM accumulate onto it (beta = 1), then
// applies the activation in one pass; _FusedConv2D calls Conv2DTensor and
// then makes one pass of per-channel scale/offset (BiasAdd, or
// FusedBatchNorm's inference arithmetic) and activation, row by row while
// the row is in cache; _MstreamConv2DMaxPool (nn_convpool.go) is a
// _FusedConv2D and the MaxPool that alone reads it: with oneDNN each part
// of the intra-op split (a band of pooled rows of one image, a group of
// images) is convolved into a buffer of the node's and pooled while in
// cache, else the convolution runs whole into a temporary, then the pool;
// _MstreamUnaryChain maps every op of a chain of
// float32 unary ops over one L1-sized block before the next block;
// _MstreamLayerNorm (nn_norm.go) normalises each row in one vectorised
// pass (vec.LayerNorm) and applies gamma and beta in the same loop, and
// _MstreamAddLayerNorm, the same of a residual x + y, sums each row in
// that pass (a broadcast y is summed first, as AddV2 does);
// _MstreamAttention (attention.go) runs each (batch, head) of an attention
// core as one chunk of the intra-op pool, reading q, k and v where they
// lie: with AVX-512 in one pass of vec.Attention (k transposed once, then
// per block of six query rows the scores in registers, the softmax's
// exponentials in L1 and the context, the 1 / sum applied to it once),
// else as the nodes it replaces ran (two sgemm, the scale, vec.Softmax)
// with the scores in cache between them. They
// validate fused_ops and num_args with TF's codes and messages, and reject
// a bias whose length is not the channel count (TF's CPU kernel reads past
// it). _MstreamGatherN (gathern.go, sibling GatherV2s merged) runs
// GatherV2's kernel per pair under a node named as the GatherV2 it
// replaced, so its errors are that node's.
//
// Einsum (einsum.go) reduces every equation to diagonals, sums, one
// strided gather per operand and one batched GEMM; RunEinsum is that
// algorithm over an EinsumDevice, which the GPU kernel implements too.
// An Einsum whose second operand optimize marks constant (Keras'
// EinsumDense kernel) keeps it packed and runs a lone product that reads
// it in place on vec.GemmPacked, as _FusedMatMul does;
// _MstreamEinsumBias (Einsum and the Add of a bias over its trailing
// dimensions) adds the bias in that GEMM's epilogue, or after Einsum's
// own product where the packed kernel does not run.
// FakeQuant (quant.go: FakeQuantArgs, FakeQuantGrid) follows TF's
// functors in float32 with every operation rounded on its own, so both
// devices give TF's bits; BatchNormWithGlobalNormalization (BNGlobalArgs)
// uses FusedBatchNorm's per-channel multiply-add. Random ops (random.go)
// hold a Philox4x32-10 key from (seed, seed2) and an atomic block counter:
// the one piece of state a kernel changes in Compute, which makes a fresh
// kernel replay the same sequence, as TF's GuardedPhiloxRandom does.
//
// oneDNN (package dnnl, loaded at run time) computes, in float32, Conv2D
// and _FusedConv2D with one group (BiasAdd and Relu inside the primitive),
// MaxPool and AvgPool with a spatial window, Softmax and LogSoftmax with
// rows of at least softmaxDNNLCols, FusedBatchNorm in NHWC (inference and
// training) and in the one-row-per-channel form Keras's LayerNormalization
// exports (NCHW [1, rows, cols, 1], training, layer normalisation).
// Where the measured mstream loop was as fast (short softmax rows, small
// LayerNorm forms) or faster (every GEMM: _FusedMatMul's factory has the
// numbers) the kernel keeps its own code; the thresholds cite
// BenchmarkDNNL's numbers. Every other case, and every case without
// oneDNN, runs the code above. Each such kernel's factory makes the
// primitive cache (dnnl.Cache, dnnl.ConvCache) its Compute uses, named
// after its node, and returns a kernels.Closer that closes it (the plan
// closes it when dropped: kernels.WithClose, fusedKernel's closers), so primitives are built once per node, shape and thread
// count (Context.Threads: the intra-op pool's size, which bounds the
// primitive's OpenMP team). Convolutions and poolings take no team: their
// primitives are made for one thread, and the intra-op pool splits a call
// into images or bands of output rows (one band a thread), each part a primitive of its own
// sub-shape (nn_conv_dnnl.go says why; _MstreamConv2DMaxPool's parts
// pool their rows too); a
// shape oneDNN cannot make is a warning naming the node (once) and runs
// the kernel's own code (nn_conv_dnnl.go's runPrim).
//
// GEMM (MatMul, BatchMatMulV2/V3) goes through package blas: OpenBLAS when it
// can be loaded, a blocked pure-Go GEMM otherwise, on one thread per call: a
// single product splits itself over the intra-op pool (blas.SgemmOn), a
// batch (BatchMatMul, Einsum) runs its products as the pool's chunks
// (gemm.go). A _FusedMatMul whose B package optimize marks as an unfed
// Const (a layer's weights) packs B once, when it first runs, and keeps
// it with the kernel (packedWeights, gemm.go); it runs on vec.GemmPacked,
// bias and activation applied per tile, split over the pool in bands of
// rows (gemmUnits: a thread keeps its rows from layer to layer), where OpenBLAS would pack B again on every
// call (at 16 rows that packing was as much CPU as the product). One row
// (a batch of one) streams the panels, a group at a time, with the bits
// the same row gets in a batch. A B of at most vec.Narrow columns (a
// model's head: 256 x 1, 2048 x 10) is packed as its transpose and each
// element is a dot of rows, rather than a tile 32 columns wide. Any other product of one row is vec.Gemv's,
// which reads B once as it is; a CPU without AVX-512 takes OpenBLAS. A
// product A B^T of at most 32 rows and columns (DLRM's interaction, X X^T
// of 27 x 64 a sample) is dot products of rows (vec.GemmNT, smallNT in
// gemm.go), only the lower triangle when B is A.
//
// Not yet honoured: Cast's Truncate attr (conversions round to nearest, as
// TF does with Truncate=false); BatchMatMulV3 with mixed input dtypes
// (rejected as UNIMPLEMENTED at kernel construction); complex dtypes in
// Einsum, ScatterNd, Cumsum and TopKV2; dilated DepthwiseConv2dNative and
// Conv2DBackpropInput (UNIMPLEMENTED / INVALID_ARGUMENT, as TF's CPU
// kernels); NaN ordering in TopKV2.
//
// State and strings: checkpoint.go holds SaveV2, RestoreV2 and
// MergeV2Checkpoints, thin over package checkpoint (host-only, as TF's);
// strings.go, hash.go (farmhash Fingerprint64, SipHash-2-4, TF's legacy
// Hash64), regex.go (Go's regexp is RE2's syntax; RE2's rewrite language
// is expanded here), asstring.go, split.go, substr.go, stitch.go and
// parseexample.go hold the string and feature-column kernels. Their
// values are held to real TF's by TestStringOpsLikeTF (testdata/tf_ops.py
// runs any op through tf.raw_ops), as session's TestSaveRestoreLikeTF
// holds the checkpoint kernels.
package cpu
