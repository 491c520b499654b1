// Package graph owns the dataflow graph that the C API builds and sessions
// run: nodes, their inputs and attrs, TF 2.15's op signatures (the OpDef
// registry in graph/opdefs, generated from TF's ops.pbtxt), GraphDef import
// and export in binary and text form, attr validation and defaults, static
// shape inference, and v1 while loops built from a cond and a body graph
// (AddWhileLoop, behind TF_FinishWhile, which keeps the loop's
// WhileContext) or in place from cond and body callbacks (BuildLoop, for
// the gradient loops).
//
// A graph also holds a function library (library.go), TF's
// FunctionLibraryDefinition: FunctionDefs by signature name and the
// gradient map, added with TF's rules (an equal duplicate is a no-op; a
// different def under a name, or a registered op's name, is
// INVALID_ARGUMENT; AddLibrary and Import add all or nothing), written to
// GraphDef.library sorted by name with each FunctionDef as it came. A node
// whose op is a function's name has that signature as its OpDef (Graph.OpDef
// looks in the library after the registry) and is a call. Instantiate
// (function.go) binds a FunctionDef's attrs for one call site and orders its
// body; shape inference follows calls into their bodies with it, as TF's
// refiner does for the C API's graphs, and package lower inlines with it.
// The function-body system ops _Arg, _Retval, _DeviceArg and _DeviceRetval
// are known (opdefs.Internal) but not listed by AllOpDefs.
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
//   - Functions, like nodes, are only added: a FunctionDef in the library is
//     a private copy that never changes, so callers may keep it (read-only)
//     without the lock, and a call node's signature stays valid.
//
// # Locking
//
// One lock, Graph.mu, which guards the library too. Writers (Finish,
// Import, SetTensorShape, AddLibrary) hold it for
// writing for their whole call; readers of several fields hold RLock. Fields
// of Node set at creation are immutable and may be read without the lock;
// OutShapes, consumers and controlOuts need it. Functions named ...Locked
// expect the caller to hold mu. Shape functions run under mu and must not
// call back into the Graph's locking methods (a ConstFolder, which runs a
// CPU kernel on constant inputs for them, touches no Graph). NodeByID and
// Version, on every Run's path, take no lock: they read the version and a
// copy of the node list that writers publish under mu once all of a
// call's nodes are in (so a reader sees an import whole or not at all).
//
// # Names and shape tensors
//
// TF_NewOperation takes any node name, as TF's C API does; an import and a
// session's Run check TF's node-name rule (CheckNamesLocked). Shape
// functions read a shape input as TF's shape refiner does (shapetensor.go):
// through Shape, StridedSlice, Pack, ConcatV2 and Cast, and by folding small
// stateless subgraphs over constants with the ConstFolder that kernels/cpu
// registers.
package graph
