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
// immutable snapshot. A value in device memory is not copy-on-write (see
// below).
//
// Multi-stream: a session has one Manager, so every stream group reads
// and writes the same copy of each variable.
//
// # Values in device memory
//
// A GPU kernel of a resource op (kernels/cuda/state.go, through
// kernels.VarsOnDevice) keeps the variable's value in its GPU's memory
// instead (a DeviceValue, device.go): one buffer, allocated from the
// group's allocator (in its stats) by the first GPU kernel that uses the
// variable (a copy of the host value, or the assigned tensor) and updated
// in place by later ones. There the model is TF's for GPU variables,
// ordered by events instead of locks held across the device work:
//
//   - A kernel reads or writes the value with the Var's mutex held while
//     it enqueues its work (OnDevice, OnDeviceAll), never while the
//     device runs it.
//   - A read's work waits for the event of the last write (on another
//     stream; the same stream's order suffices) and records an event
//     after itself. A write's work waits for the last write and for every
//     read since, and records the new last write.
//   - So every group of a GPU uses the one copy, each read sees the whole
//     of some written value (never a mix: TestVariableNeverTornOnFakeGPU
//     reads while another group adds in place), a Run that starts after
//     a write's Run returned sees it (the write's event was recorded
//     first), and the host never blocks for the device on the way.
//   - A host user (a host kernel, SaveV2 through it, a Value call) takes
//     the mutex, waits for the last write on the host and copies the
//     value out (Read); a host write (Update, UpdateAll, Reset) moves the
//     value back to host memory, freeing the device buffer once its
//     uses have completed. An assign of another shape, or a kernel of
//     another GPU, likewise gets a new buffer and frees the old one after
//     its uses (through the host for another GPU: a pinned variable's
//     ops run on its GPU, so this is rare).
//   - With MSTREAM_GPU_POOL the session keeps variables in host memory
//     (exec.Placement.HostState: the state ops run on the host, as
//     before): the pool moves Runs between GPUs, and a value that
//     followed them would cross GPUs on most Runs, where a host copy is
//     read by every GPU alike.
//
// A device value's memory goes back to its allocator when the value moves
// or is replaced; at the session's end the allocators close with it.
//
// Ref variables differ from TF in one way: TF's ref edge is a pointer that
// a consumer dereferences when it runs, while here the variable node
// outputs the value it holds when it runs (at the start of a step, as it
// has no inputs). A consumer that must observe an Assign of the same step
// orders itself after the Assign and reads the Assign's output, which is
// the new value, as TF programs usually do. In a GPU session a ref
// variable's value is a device value like a resource variable's: a ref
// output is a copy taken as a read (an updating op's, just after its
// write); each ref kernel finds its variable from the graph.
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
// taken. Var.mu is held by one writer for its whole read-modify-write
// (on the host), by a device kernel while it enqueues its work, and by a
// host reader of a device value while it copies it out. A
// writer of several variables at once (an optimizer: the variable and its
// accumulators) takes them through UpdateAll, in the order the variables
// were made, and publishes every new value before it releases any.
package resource
