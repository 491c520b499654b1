// Package grad builds symbolic gradients into a graph: TF_AddGradients and
// TF_AddGradientsWithPrefix. It owns the registry of gradient functions
// (one per op type, TF's formulas from tensorflow/cc/gradients and
// python/ops/*_grad.py) and the backward walk, which follows TF's
// SymbolicGradientBuilder (cc/framework/gradients.cc) step for step:
//
//   - the nodes between xs and ys are those reachable backwards from ys
//     along data edges and forwards from xs; a y that feeds another y is
//     internal, the others stop the forward search;
//   - each output collects the gradients of its consumers and the initial
//     dy (ones of y's shape, OnesLike, unless the caller gives them); two or
//     more are summed with AddN, none is NoGradient (a zero Output);
//   - an op registered with NoGradient, or whose outputs all have
//     NoGradient, passes NoGradient to its inputs; an op with some
//     NoGradient outputs gets ZerosLike for them;
//   - an op with no registered function fails with NOT_FOUND naming the op
//     in TF's words;
//   - an Exit waits for the gradients of all its loop's Exits, then the
//     loop's gradient is built as TF's while_gradients.cc does (while.go)
//     and passed to the loop's inputs.
//
// New nodes are named as TF's C++ Scope names them: under a prefix that is
// "gradients" made unique in the graph (gradients, gradients_1, ...) or the
// caller's prefix, which must be unused; inside it, the op type with _1,
// _2, ... on repeats. Nodes are built through graph.Builder, so they are
// validated against their OpDefs and shape-inferred exactly as
// TF_FinishOperation's are.
//
// Invariants: AddGradients either adds every node and returns the
// gradients or returns an error; a failure part way leaves the nodes added
// so far in the graph, as TF does (graphs have no removal). Gradient
// functions only build nodes; they never run anything. The package holds
// no global mutable state beyond the registry, which is filled in init.
package grad
