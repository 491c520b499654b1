// Package partition assigns the nodes of a step's graph to stream groups by
// analysing the graph, for node-level multi-stream mode without a
// TF_STREAM_FROM_FILE rule for every node (MSTREAM_STREAM_ASSIGN=auto).
// NVIDIA's build leaves this to the user's stream scopes; MindSpore assigns
// streams itself. This package is the analysis only: it sees a DAG (nodes,
// their predecessors, a topological order, a cost per node) and returns a
// group per node; the session hands the result to the executor, which
// inserts (and with TF_REDUCE_STREAM_WAIT reduces) the cross-group waits
// exactly as for a file's assignment.
//
// The analysis is critical-path list scheduling (HLFET/HEFT with one
// processor class): a node's priority is its bottom level, the costliest
// path from it to a sink; ready nodes are taken in that order, and each
// goes to the group where it could start first, counting a fixed cost for
// every input that would cross groups (an event wait) and, on a tie, the
// group of its latest-finishing input. So independent branches of similar
// weight (the towers of a recommender, the arms of an inception block,
// their gradients) land on different groups, while a chain, or a branch
// too light to pay for a wait, stays on its inputs' group. Light nodes
// that depend on nothing but such nodes (placeholders, constants, variable
// handles, their reads) are ready on every group at once: the schedule
// leaves them out, and each then takes the group of its first consumer,
// so it never costs a wait of its own.
//
// Costs come from Cost: a table of op types, heavy (GEMMs, convolutions,
// their gradients, optimizer updates, gathers and segment sums) or light,
// since a plan does not know the shapes of a step before it runs.
//
// Invariants: Assign is a pure function of its input (no randomness, no
// global state): the same plan always gets the same assignment, nodes with
// a fixed group keep it, and every group is in [0, groups).
package partition
