// Package exec turns a graph and a (feeds, fetches, targets) signature into a
// Plan, and runs Plans step by step.
//
// A Plan is built once under the graph's read lock: the nodes needed for the
// fetches and targets (stopping at fed outputs), in topological order, each
// bound to its kernel. It is immutable afterwards and shared by every step
// that runs it, concurrently.
//
// A step keeps per-node pending counts and output slots. Ready nodes run on
// the inter-op Pool; a worker that makes successors ready keeps one of them
// for itself (no queue round trip down a chain) and hands the rest to the
// pool. The first kernel error cancels the step: nodes not yet started are
// skipped and the error, naming the node, is returned.
//
// Invariants: feeds are read during the step only; a kernel's inputs are
// read-only; every fetched tensor is either a kernel output or a feed.
package exec
