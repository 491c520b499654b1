package kernels

import (
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"sort"
	"sync"

	"mstream/device"
	"mstream/graph"
	"mstream/hostmem"
	"mstream/resource"
	"mstream/status"
	"mstream/tensor"
)

// Device types kernels register for.
const (
	CPU = "CPU"
	GPU = "GPU"
)

// Kernel computes one node. A kernel is built once per node of a plan and
// may be called by several steps at once: Compute must not mutate the
// kernel.
type Kernel interface {
	Compute(ctx *Context) error
}

// KernelFunc adapts a function to Kernel.
type KernelFunc func(ctx *Context) error

func (f KernelFunc) Compute(ctx *Context) error { return f(ctx) }

// Closer is a kernel that holds resources outside the Go heap (oneDNN's
// primitives): the plan that built it calls Close once, when the plan is
// dropped and after its last step has finished, so Close never runs under
// a Compute. Finalizers would not do (STYLE.md): a server that reloads a
// model would grow by whatever the collector has not yet run.
type Closer interface {
	Kernel
	io.Closer
}

// WithClose is f as a Closer whose Close closes each of cs (a kernel's
// primitive caches), joining their errors.
func WithClose(f KernelFunc, cs ...io.Closer) Kernel { return closingFunc{f, cs} }

type closingFunc struct {
	KernelFunc
	cs []io.Closer
}

func (k closingFunc) Close() error {
	var errs []error
	for _, c := range k.cs {
		errs = append(errs, c.Close())
	}
	return errors.Join(errs...)
}

// Stateful is a kernel that keeps state between Runs in its session's
// resource manager (variables, tables). The plan builder calls Bind once,
// after the factory, and runs the kernel Bind returns; an unbound Stateful
// kernel (a test harness calling the factory alone) fails when it runs.
type Stateful interface {
	Kernel
	Bind(b Binding) (Kernel, error)
}

// Binding is what a plan tells a Stateful kernel.
type Binding struct {
	// Resources is the session's resource manager.
	Resources *resource.Manager
	// ReadByValue says, per output, whether the plan reads it as a value
	// (a fetch or a non-ref input) rather than only through ref inputs
	// (Assign's): an uninitialised ref variable fails only when read.
	ReadByValue []bool
	// Graph is the graph the plan was built from, its read lock held
	// while Bind runs: a kernel that runs functions of its library
	// (tf.data's map and filter) reads them then.
	Graph *graph.Graph
}

// Factory builds the kernel for a node, reading and validating its attrs.
// An error names what is wrong; the plan reports it with the node's name.
type Factory func(n *graph.Node) (Kernel, error)

// Def registers a kernel for an op on a device.
type Def struct {
	Op     string
	Device string
	// TypeAttr names the attr whose value selects the kernel ("T"); empty
	// when the kernel serves every dtype the OpDef allows.
	TypeAttr string
	Types    []tensor.DType
	// HostMemory lists input and output arg names that stay in host memory
	// on every device (TF's HostMemory rule: shapes, axes, sizes).
	HostMemory []string
	Factory    Factory
	// SyncsHost marks a device kernel that waits for its stream and reads
	// device values on the host while it runs (Where and Unique on the
	// GPU: their output shapes depend on the data). Such a kernel cannot
	// be captured into a CUDA graph.
	SyncsHost bool
	// DeviceState marks a device kernel that keeps a variable's value in
	// its device's memory (kernels.VarsOnDevice); a session that keeps
	// variables on the host (exec.Placement.HostState) runs the host
	// kernel instead.
	DeviceState bool
	// Forwards marks a device kernel whose output 0 is its input 0's
	// buffer under another shape (Reshape, Identity on the GPU): where the
	// executor holds a host copy of that input, the same bytes are a host
	// copy of the output, and a host reader needs no copy back.
	Forwards bool
}

var (
	regMu sync.RWMutex
	reg   = map[string][]*Def{} // key: op + "/" + device
)

// Register adds a kernel definition; it panics on a duplicate, which is a
// programming error found at init.
func Register(d Def) {
	regMu.Lock()
	defer regMu.Unlock()
	key := d.Op + "/" + d.Device
	for _, old := range reg[key] {
		if old.TypeAttr == "" || d.TypeAttr == "" {
			panic("kernels: duplicate registration of " + key)
		}
		for _, a := range old.Types {
			for _, b := range d.Types {
				if a == b {
					panic(fmt.Sprintf("kernels: duplicate registration of %s for %v", key, a))
				}
			}
		}
	}
	reg[key] = append(reg[key], &d)
}

// Make is n's kernel on device: its definition (Lookup's error when there
// is none) made by the definition's Factory (its error when n's attributes
// do not suit it).
func Make(n *graph.Node, device string) (Kernel, error) {
	def, err := Lookup(n, device)
	if err != nil {
		return nil, err
	}
	return def.Factory(n)
}

// Lookup finds the kernel definition for a node on a device. The error is
// NOT_FOUND (TF's code for a missing kernel) and names the node, the op, the
// device and the dtype.
func Lookup(n *graph.Node, device string) (*Def, error) {
	regMu.RLock()
	defs := reg[n.Op+"/"+device]
	regMu.RUnlock()
	for _, d := range defs {
		if d.TypeAttr == "" {
			return d, nil
		}
		a := n.Attrs[d.TypeAttr]
		if a == nil {
			continue
		}
		if l := a.GetList(); l != nil && len(l.Type) > 0 {
			// A type list (IdentityN's T): every listed dtype must be served.
			all := true
			for _, lt := range l.Type {
				all = all && slices.Contains(d.Types, tensor.DType(lt))
			}
			if all {
				return d, nil
			}
			continue
		}
		dt := tensor.DType(a.GetType())
		for _, t := range d.Types {
			if t == dt {
				return d, nil
			}
		}
	}
	if len(defs) == 0 {
		return nil, status.Errorf(status.NotFound, "no %s kernel for op %s (node '%s')", device, n.Op, n.Name)
	}
	var dt string
	if a := n.Attrs[defs[0].TypeAttr]; a != nil {
		dt = tensor.DType(a.GetType()).String()
	}
	return nil, status.Errorf(status.NotFound, "no %s kernel for op %s with %s=%s (node '%s')", device, n.Op, defs[0].TypeAttr, dt, n.Name)
}

// Registered lists "op/device" keys that have kernels, sorted; tests use it.
func Registered() []string {
	regMu.RLock()
	defer regMu.RUnlock()
	var keys []string
	for k := range reg {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// Parallelizer runs fn over [0, n) split into chunks on the intra-op pool.
// cost is the rough work per element in ns; start is what one chunk costs
// its thread to begin beyond the pool's own hand-over, in ns (StartLoop,
// StartCall, or the caller's own estimate): together they decide how many
// chunks a loop is worth, few where each chunk is a library call with a
// fixed cost, more where chunks start for nothing and a finer cut lets
// the threads finish together.
type Parallelizer interface {
	For(n int, cost, start float64, fn func(lo, hi int))
}

// Typical starts of a chunk, For's start argument, in ns.
const (
	// StartLoop: a chunk is the loop's next elements, rows or blocks,
	// nothing to set up (any per-element call is in cost already).
	StartLoop = 0
	// StartCall: a chunk is a library call of its own on its part of
	// the loop, such as a oneDNN primitive made for the part's shape,
	// whose set-up and halo of input rows cost 1.5-2 us a call (perf
	// of cnn at B=1, issue 22), whatever the part's size.
	StartCall = 2000
)

// Sized is a Parallelizer that says how many threads it runs a For on at
// most, the caller's included: the session's intra-op pool
// (intra_op_parallelism_threads).
type Sized interface {
	Parallelizer
	Threads() int
}

// Serial is a Parallelizer that runs everything on the caller's goroutine.
type Serial struct{}

// Threads is 1: the caller's.
func (Serial) Threads() int { return 1 }

func (Serial) For(n int, cost, start float64, fn func(lo, hi int)) {
	if n > 0 {
		fn(0, n)
	}
}

// Context is what one kernel call sees: its node, inputs and outputs.
type Context struct {
	Node    *graph.Node
	Inputs  []*tensor.Tensor
	Outputs []*tensor.Tensor
	Pool    Parallelizer
	// Alloc, when set, provides output buffers (allocator stats); nil means
	// plain host allocation. It copies the shape it is given, which is
	// Allocate's scratch, valid during the call only.
	Alloc func(dt tensor.DType, shape tensor.Shape) (*tensor.Tensor, error)
	// Stream is set for a kernel of a device whose work is asynchronous
	// (a *cuda.Stream for GPU kernels): the kernel enqueues its work there
	// and returns without waiting. Its inputs and outputs are then device
	// tensors (Buf stands for device memory, see kernels/cuda), except the
	// args its Def lists in HostMemory, and Alloc must give device memory.
	// Host kernels compute synchronously and ignore it.
	Stream device.Stream
	// Persist, set for a device kernel by the executor, gives device
	// memory that outlives the step: a variable's value (see
	// devstate.go).
	Persist Persist
	// Step holds what lives for this step only (TemporaryVariable's
	// variables); nil where no step runs the kernel (constant folding).
	Step *Step
	// Limit is the device's memory limit. Every allocation a kernel makes
	// whose size comes from its inputs or attrs is checked against it
	// first (Allocate, Scratch), strings and outputs made without Alloc
	// included; the zero value is the machine's physical memory.
	Limit hostmem.Limit
	// allocShape is Allocate's copy of the shape it hands Alloc: a shape
	// handed to a func value escapes, so without the copy every output's
	// shape literal ([m, n]) was an allocation of its own.
	allocShape [8]int64
}

// Input returns input i.
func (c *Context) Input(i int) *tensor.Tensor { return c.Inputs[i] }

// NumInputs is the number of data inputs.
func (c *Context) NumInputs() int { return len(c.Inputs) }

// Allocate creates output i with the node's output dtype and the given
// shape. A device allocator (Alloc) checks the size against its limit before
// it asks for memory and reports its state when it refuses; everything else
// (strings, host outputs without Alloc) is checked against Limit first. A
// byte count that overflows int64 is refused before either.
func (c *Context) Allocate(i int, shape tensor.Shape) (*tensor.Tensor, error) {
	if err := shape.Validate(); err != nil {
		return nil, c.Errorf(status.InvalidArgument, "output %d: %v", i, err)
	}
	dt := c.Node.OutTypes[i]
	elem := int64(dt.Size())
	if dt == tensor.String {
		elem = tensor.StringElemBytes
	}
	what := func() string { return fmt.Sprintf("tensor with shape%s and type %v", shape.String(), dt) }
	limit := c.Limit
	if c.Alloc != nil && dt != tensor.String {
		limit = hostmem.Limit{Allocator: limit.Allocator, Bytes: math.MaxInt64}
	}
	if err := limit.Check(shape.NumElements(), elem, what); err != nil {
		return nil, c.Errorf(status.CodeOf(err), "output %d: %v", i, err)
	}
	var t *tensor.Tensor
	if c.Alloc != nil && dt != tensor.String {
		var err error
		// Alloc copies the shape (its contract), so the one copy here,
		// in c, serves every call.
		if t, err = c.Alloc(dt, append(tensor.Shape(c.allocShape[:0:len(c.allocShape)]), shape...)); err != nil {
			return nil, c.Errorf(status.CodeOf(err), "output %d: %s: %v", i, what(), err)
		}
	} else {
		t = tensor.New(dt, shape) //mstream:bounded limit.Check above
	}
	c.Outputs[i] = t
	return t, nil
}

// StringBytes counts the bytes of string data a kernel makes for one output
// (Substr, StringJoin, AsString, string Add, ...) against the device's
// limit, with the output's element headers: the kernel calls Take before it
// makes each string, so data sized by a feed or attr is refused with
// RESOURCE_EXHAUSTED naming the node before Go is asked for the memory.
// Outputs that share their inputs' bytes (Fill, Tile, Identity) make none.
type StringBytes struct {
	c    *Context
	out  *tensor.Tensor
	used int64 // headers and the bytes taken so far
	max  int64
}

// StringBytes starts the count for output tensor out, which Allocate made.
func (c *Context) StringBytes(out *tensor.Tensor) *StringBytes {
	n := out.NumElements()
	return &StringBytes{c: c, out: out, used: min(n, math.MaxInt64/tensor.StringElemBytes) * tensor.StringElemBytes, max: c.Limit.Max()}
}

// Take counts n more bytes; it fails once the output's strings would be
// more than the limit.
func (b *StringBytes) Take(n int64) error {
	if n < 0 || n > b.max-b.used {
		return b.c.Errorf(status.ResourceExhausted,
			"OOM when allocating the strings of tensor with shape%v and type string: more than the %d bytes allocator %s may give",
			b.out.Shape, b.max, b.c.Limit.Name())
	}
	b.used += n
	return nil
}

// Scratch returns a zeroed slice of n T for a kernel's temporary use (index
// maps, accumulators) after checking its size against the device's limit:
// the one way a kernel takes memory sized by its data other than Allocate.
func Scratch[T any](c *Context, n int64) ([]T, error) {
	s, err := hostmem.Make[T](c.Limit, n)
	if err != nil {
		return nil, c.Errorf(status.CodeOf(err), "%v", err)
	}
	return s, nil
}

// NewTensor allocates a kernel's intermediate tensor (not an output) from
// host memory after checking its size against the device's limit.
func NewTensor(c *Context, dt tensor.DType, shape tensor.Shape) (*tensor.Tensor, error) {
	elem := int64(dt.Size())
	if dt == tensor.String {
		elem = tensor.StringElemBytes
	}
	what := func() string { return fmt.Sprintf("temporary tensor with shape%v and type %v", shape, dt) }
	if err := c.Limit.Check(shape.NumElements(), elem, what); err != nil {
		return nil, c.Errorf(status.CodeOf(err), "%v", err)
	}
	return tensor.New(dt, shape), nil //mstream:bounded c.Limit.Check above
}

// SetOutput sets output i to an existing tensor (forwarding an input).
func (c *Context) SetOutput(i int, t *tensor.Tensor) { c.Outputs[i] = t }

// Errorf returns an error with code and a message in the form of TF's
// kernel errors (see NodeError).
func (c *Context) Errorf(code status.Code, format string, args ...any) error {
	return NodeError(code, c.Node, fmt.Sprintf(format, args...))
}

// NodeError is node n's error with code: msg and the op type, then TF's
// "\n\t [[{{node NAME}}]]", the form TF's tools parse to find the failing node.
func NodeError(code status.Code, n *graph.Node, msg string) error {
	return status.Errorf(code, "%s (op %s)\n\t [[{{node %s}}]]", msg, n.Op, n.Name)
}

// WrapNode is NodeError around err, keeping its code and cause.
func WrapNode(err error, n *graph.Node) error {
	if err == nil {
		return nil
	}
	return &status.Error{Code: status.CodeOf(err), Msg: fmt.Sprintf("%v (op %s)\n\t [[{{node %s}}]]", err, n.Op, n.Name), Inner: err}
}

// Threads is how many threads the kernel may compute on at once, its
// caller's included: the pool's size (Sized), 1 without a pool, 0 when the
// pool does not say. A library that starts threads of its own (oneDNN's
// OpenMP team) is held to it, so that intra_op_parallelism_threads bounds
// every kernel's threads.
func (c *Context) Threads() int {
	switch p := c.Pool.(type) {
	case nil:
		return 1
	case Sized:
		return p.Threads()
	}
	return 0
}

// For runs fn over [0, n) on the pool (serially when there is none);
// cost and start are Parallelizer's.
func (c *Context) For(n int, cost, start float64, fn func(lo, hi int)) {
	if c.Pool == nil {
		Serial{}.For(n, cost, start, fn)
		return
	}
	c.Pool.For(n, cost, start, fn)
}
