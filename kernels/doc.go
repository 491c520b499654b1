// Package kernels is the kernel registry: for each (op, device, dtype) a
// factory that builds a Kernel from a node's attrs. Implementations live in
// kernels/cpu (and later kernels/cuda) and register themselves in init.
//
// Invariants: a Kernel is immutable after its factory returns and may run in
// several steps at once; a kernel never mutates its inputs (they may be
// shared by other consumers or by the caller); every error a kernel returns
// carries a TF code and names the node (Context.Errorf); memory whose size
// comes from a kernel's inputs or attrs is taken only through
// Context.Allocate, Scratch or NewTensor, which check it against the
// device's limit first (hostmem's TestAllocationsAreChecked enforces it
// over the kernels' source and the other packages that allocate from data);
// string data a kernel makes is counted with Context.StringBytes.
//
// State: what outlives a step is in the session's resource.Manager, bound
// into kernels.Stateful kernels when a plan is built; what lives for one
// step only (TemporaryVariable's variables, TF's step container) is in the
// Step the executor makes per Run and hands to host kernels in
// Context.Step, so a kernel keeps no per-step state of its own. A kernel
// that holds resources outside the Go heap (oneDNN primitives) is a
// Closer (WithClose): its plan closes it once, when dropped, after its
// last step; never a finalizer.
package kernels
