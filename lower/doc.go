// Package lower inlines function calls and lowers TF's functional control
// flow at plan time, as TF's function inlining and lowering passes
// (common_runtime/inline_function_utils.cc, lower_if_op.cc,
// lower_case_op.cc, lower_while_op.cc) do before TF's executor runs a
// graph. The session calls Lower on the signature of every plan it builds,
// before package optimize and exec.Build, whatever MSTREAM_FUSION says, so
// placement, fusion, stream groups and node-level assignment see function
// bodies as ordinary nodes and the executor sees only v1 control flow
// (Switch, Merge, Enter, Exit, NextIteration, LoopCond), which it already
// runs with frames and dead tensors.
//
// What it rewrites, among the nodes a Run needs:
//   - PartitionedCall, StatefulPartitionedCall and a node whose op is a
//     function of the graph's library: the body is instantiated with the
//     call's attrs (placeholders such as $T bound, graph.Instantiate) and
//     expanded in place. Arguments are wired straight to the call's
//     inputs, returns straight to its consumers; the call's control inputs
//     go to every body node that reads an argument or has no input;
//     control_ret nodes become control inputs of the stand-in below.
//   - If/StatelessIf: Switch of the predicate into pivots, a Switch per
//     input, each branch inlined on its side with its input-less nodes
//     waiting on that side's pivot (so the untaken branch, stateful nodes
//     included, is dead and never runs), a Merge per output and a
//     branch_executed Merge for control consumers.
//   - Case/StatelessCase: a chain of two-way conditionals, branch k taken
//     when the index equals k for k < N-1 and the last branch otherwise
//     (TF's rule for an index out of range).
//   - While/StatelessWhile: per loop variable Enter (frame_name: the While
//     node's name, parallel_iterations kept), Merge with the NextIteration
//     back edge, Switch on the LoopCond of the inlined cond, Exit; the body
//     inlined on the Switches' true side, input-less nodes waiting on
//     loop_body_control. A resource variable the body returns unchanged
//     enters as an is_constant Enter, as TF's lowering does.
//   - For (which TF runs as a kernel, ForOp): the same loop over
//     (i, limit, delta, inputs...), limit and delta is_constant,
//     continuing while i < limit (delta > 0) or i > limit (otherwise),
//     the body inlined as body(i, inputs...); an Assert ahead of it fails
//     as ForOp does on an invalid start/limit/delta.
//   - SymbolicGradient: f's body is copied into a private graph with
//     Placeholders for x and dy, package grad (TF_AddGradients) builds the
//     gradient there, graph.ToFunctionDef turns it into a FunctionDef and
//     that is inlined like a call (zeros for an x without a gradient);
//     calls in the body are expanded there first.
//   - A function output that is a list (N*T, list(type)) is flattened:
//     "node:out_arg" and a list argument name all their elements, as in
//     TF's instantiation.
//
// # Naming
//
// A node that is inlined or lowered keeps its name on the node that
// stands for it: an IdentityN of its outputs (a NoOp when it has none), so
// fetches, feeds and control edges find it. Body nodes are named
// <call node>/<body node>; nested calls nest the prefix
// (outer/inner/node). If branches are <if>/then/... and <if>/else/...,
// Case branches <case>/branch<k>/..., a While's cond and body
// <while>/cond/... and <while>/body/... (a For's body <for>/body/..., its
// check <for>/check and /valid...), a SymbolicGradient's
// <node>/grad/... and <node>/fn/..., and the control-flow nodes made
// for them <node>/switch_pred, /pivot_t, /pivot_f, /switch_<i>,
// /output_<i>, /enter_<i>, /merge_<i>, /LoopCond, /exit_<i>,
// /next_iteration_<i>. A name the graph already has gets _1, _2, ...
// These are the names TF_STREAM_FROM_FILE's node lines match. Every node
// made here carries InlinedFromAttr, the functional nodes it came from,
// so node-level assignment puts a node no rule names on the group of its
// innermost call that a rule names; and a body node asks for its own
// device annotation, else its call node's. A body thus follows its
// caller's placement and group unless told otherwise.
//
// # Invariants
//
//   - The user's graph is never changed: every node made here is detached
//     (graph.NewDetached), with an ID above every graph node's. A graph
//     node is copied (Node.Rewired) only when one of its inputs was
//     replaced; Consts and the rest stay the user's own.
//   - After Lower, no node the signature reaches is functional.
//   - Recursion is refused: a function that reaches itself through calls
//     or control flow is INVALID_ARGUMENT naming the call and the cycle.
//   - A call of a function the library does not have is INVALID_ARGUMENT
//     in TF's words ("Failed to find function ...").
//   - Lower runs under the graph's read lock (the caller holds it) and
//     takes no lock itself.
package lower
