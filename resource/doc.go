// Package resource owns the state a session keeps between Runs: variables
// (resource and ref) and lookup tables (table.go), each in a Manager with TF's
// container/name rules.
//
// # Ownership
//
// One Manager per session, made by the session and handed to exec.Build's
// Placement; exec gives it, at plan-build time, to every kernel that
// implements kernels.Stateful. No scheduler and no kernels.Context carries
// it, so every scheduler sees the same resources without knowing of them.
// A Manager is never shared by two sessions (TF's DirectSession makes its
// devices, and so their ResourceMgr, per session); the session's Close
// closes it, and with it every resource that holds more than memory
// (a resource.Closer: tf.data's iterators and their prefetch goroutines).
//
// # Names
//
// A resource is keyed by (container, name, kind). An empty container is
// DefaultContainer ("localhost", TF's default_container). Ref variables
// (VariableV2, Variable) with an empty shared_name use the node name; VarHandleOp uses its shared_name as given, the empty name
// included, so two VarHandleOps with the same (container, shared_name) and
// no name are one variable, as in TF. A DT_RESOURCE tensor holds the
// serialized ResourceHandleProto (Handle), which is also what TF's C API
// hands a client that fetches one.
//
// # Consistency
//
// A Var's value is an immutable tensor published through an atomic
// pointer (copy on write). A reader loads the pointer once and keeps a
// value that no writer will touch again, so concurrent Runs never see a
// torn value. Writers (assign, assign-add, scatter) are serialised by the
// Var's mutex, compute the new value from the current one and publish it
// with one store: a read-modify-write never loses an update, and a Run
// that starts after a write returned sees that write (or a later one).
// The value's buffer is owned by the Var (host memory outside any step's
// allocator), so no step frees it; a kernel that outputs it hands out the
// immutable snapshot.
//
// Multi-stream: a session has one Manager, so every stream group reads
// and writes the same copy of each variable. Values live in host memory;
// a GPU kernel reads them through the host-memory rule of its inputs.
//
// Ref variables differ from TF in one way: TF's ref edge is a pointer that
// a consumer dereferences when it runs, while here the variable node
// outputs the value it holds when it runs (at the start of a step, as it
// has no inputs). A consumer that must observe an Assign of the same step
// orders itself after the Assign and reads the Assign's output, which is
// the new value, as TF programs usually do.
//
// A TemporaryVariable's variable is not here: it lives in the step that
// made it (kernels.Step, TF's step container), under its var_name, until
// DestroyTemporaryVariable or the end of the step; the ref kernels find it
// there. A table's values are scalars, or vectors of its ValueShape
// (MutableHashTableOfTensorsV2).
//
// # Locking
//
// Manager.mu guards the map only and is never held while a Var's mutex is
// taken. Var.mu is held by one writer for its whole read-modify-write. A
// writer of several variables at once (an optimizer: the variable and its
// accumulators) takes them through UpdateAll, in the order the variables
// were made, and publishes every new value before it releases any.
package resource
