// Package graph owns the dataflow graph that the C API builds and sessions
// run: nodes, their inputs and attrs, TF 2.15's op signatures (the OpDef
// registry in graph/opdefs, generated from TF's ops.pbtxt), GraphDef import
// and export in binary and text form, attr validation and defaults, static
// shape inference, and v1 while loops built from a cond and a body graph
// (AddWhileLoop, behind TF_FinishWhile).
//
// # Invariants
//
//   - Nodes are only added, never removed or changed: a *Node and its ID
//     stay valid for the graph's life, IDs are dense (0..n-1) and equal the
//     node's index in creation order, and every input of a node has a smaller
//     ID, so creation order is a topological order.
//   - Every node in a graph has passed resolveNode: its Attrs hold every attr
//     of its OpDef (defaults filled) with values of the declared type, and
//     Inputs, InTypes, OutTypes, InArgs, OutArgs agree with the OpDef. Ref
//     dtypes never appear in InTypes or OutTypes.
//   - Adding nodes is atomic: Builder.Finish and Import validate everything
//     first and link nodes into the graph only when nothing can fail any
//     more, so an error leaves the graph as it was.
//   - OutShapes only ever get more precise (MergeShapes of the old and the
//     new shape), through SetTensorShape and its propagation to consumers.
//
// # Locking
//
// One lock, Graph.mu. Writers (Finish, Import, SetTensorShape) hold it for
// writing for their whole call; readers of several fields hold RLock. Fields
// of Node set at creation are immutable and may be read without the lock;
// OutShapes, consumers and controlOuts need it. Functions named ...Locked
// expect the caller to hold mu. Shape functions run under mu and must not
// call back into the Graph's locking methods.
package graph
