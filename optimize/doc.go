// Package optimize rewrites, at plan time, the part of a graph that one Run
// needs, as TF's default graph optimizers do, in passes (passes.go) that
// the ConfigProto switches as it switches TF's (PassesFor: rewrite_options,
// opt_level L0, disable_meta_optimizer): Fold (constant folding: a node
// whose inputs are all constant becomes a Const computed once by its CPU
// kernel, up to 10 MiB), Arith (scalar constants pushed down chains of
// Add/AddV2 or Mul: ((x + 1) + 1) + 1 is x + 3), Deps (control edges from
// pure nodes nobody reads dropped, so they are not run), CSE (equal pure
// nodes merged), then Remap, the fusions of TF's grappler remapper: MatMul+BiasAdd(+activation)
// becomes _FusedMatMul (the activation may be the exact GELU subgraph Keras
// exports, fused as GeluExact; a Reshape between the MatMul and the BiasAdd
// that keeps the MatMul's rows, as in Keras' Dense over a rank-3 input
// exported as Tensordot, moves after the fused node), Conv2D+BiasAdd(+activation) becomes _FusedConv2D,
// an inference FusedBatchNorm(V2/V3) after a Conv2D with a constant filter
// is folded into that filter and a bias (then fused as Conv2D+BiasAdd),
// and a float32 MaxPool (spatial window, SAME or VALID) that alone reads
// such a convolution's epilogue of a bias and at most a Relu joins it as
// _MstreamConv2DMaxPool (CPU only: where a device lacks it, the
// convolution fuses without its pool, as an activation a device refuses
// is left out);
// a _FusedMatMul or _FusedConv2D whose weights (B, the filter) are a Const
// the plan does not feed, directly or through Identity, is marked
// ConstWeightsAttr (markConstWeights, one mark for both, as TF marks
// is_filter_const), so that its kernel keeps them in its own layout
// (packed panels, the primitive's) across Runs, and so is the second
// operand of a float32 Einsum (Keras' EinsumDense kernel; the node keeps
// its op, or, with the Add of a Const bias over its trailing dimensions
// after a plain product, becomes _MstreamEinsumBias, CPU only;
// einsum.go),
// Keras' LayerNormalization in either form TF 2.15 exports (Reshape ->
// training FusedBatchNormV3 -> Reshape -> Mul -> AddV2, or the moments
// chain Mean/SquaredDifference/Rsqrt/Mul/Sub/AddV2; layernorm.go) becomes
// one _MstreamLayerNorm (a CPU kernel only, so a plan that may use the GPU
// keeps the exported nodes), or _MstreamAddLayerNorm(a, b, gamma, beta)
// when its input is a residual Add(V2) of a and b that only the pattern
// (and Shapes of it) reads, a transformer's attention core without a
// mask (q, k and v split into heads -> scores -> optional scalar scale ->
// Softmax -> context, as Transposes and BatchMatMulV2 or as Keras'
// MultiHeadAttention Einsums; attention.go) becomes one _MstreamAttention
// (CPU only, likewise); q, k and v projected from one input by constant
// weights of one shape (MatMul -> BiasAdd -> Reshape, or Keras'
// EinsumDense: Einsum -> Add) become one _FusedMatMul (then a Reshape to
// 3H heads) or _MstreamEinsumBias of the weights side by side, which the
// attention reads packed, sibling GatherV2s along a Const axis 0 (DLRM's
// embedding lookups; gathern.go) become one _MstreamGatherN with N
// outputs, which a GPU runs as one launch, and a chain of unary float32
// ops becomes one _MstreamUnaryChain that makes a single pass over the
// buffer. The session calls Rewrite before exec.Build
// with the passes its ConfigProto asks for; MSTREAM_FUSION=0 leaves out
// Remap.
//
// The user's graph is never changed: Rewrite returns a rewritten copy of the
// signature (feeds, fetches, targets) whose nodes are detached (see
// graph.NewDetached and Node.Rewired). Only the nodes downstream of a fusion
// are copied; every other node, Consts included, is the user's own, so
// constant stores keyed by node keep one copy per constant.
//
// Invariants:
//   - A node is absorbed into a fusion only when every output of it is read
//     by exactly the next node of the pattern: not fetched, not fed, not a
//     target, no control edge out of it, no other consumer among the nodes
//     the Run needs. So nothing a Run can observe disappears.
//   - A merge of sibling nodes (_MstreamGatherN) keeps the name and ID of
//     the member with the largest ID; output i of the merged node replaces
//     member i's output, and it is made only where every member's
//     consumers come after that ID, no member depends on another, and the
//     members agree on device and on the stream group the session's
//     node-level rules give them (Options.Group).
//   - The fused node keeps the name and output index of the last node of
//     its pattern (the one consumers and fetches name; where a Reshape moves
//     after a _FusedMatMul, the Reshape keeps them and the fused node takes
//     the MatMul's; the packed projections' _FusedMatMul (or
//     _MstreamEinsumBias) and Reshape take those of the last of their
//     BiasAdds (Adds) and splits), inherits the control inputs of every node it replaces, and runs on their common requested
//     device (a pattern whose nodes ask for different devices is not fused).
//   - A fusion is made only when the fused op has a kernel for its dtype on
//     every device the session may place it on, and each such kernel's
//     factory accepts the node, so a rewrite never turns a runnable plan
//     into one that fails to build.
//   - Folded constants are new detached Const nodes computed in float64
//     from the user's Consts and rounded once to float32.
//   - No pass looks through control flow (Switch, Merge, frames): a plan
//     with a while loop is left as it is, and nodes with control inputs,
//     stateful nodes, placeholders, fed or fetched nodes and targets are
//     never folded, merged or dropped. A node whose kernel fails at plan
//     time is left to fail at Run with its usual error.
//   - Rewrite runs under the graph's read lock (the caller holds it) and
//     never takes a graph lock itself.
package optimize
