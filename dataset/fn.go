package dataset

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"

	"mstream/exec"
	"mstream/graph"
	"mstream/kernels"
	"mstream/lower"
	"mstream/proto/tfpb"
	"mstream/resource"
	"mstream/status"
	"mstream/tensor"
)

// Func is a function of a graph's library (a map function, a filter
// predicate, a one-shot iterator's dataset factory) made into a plan of
// its own: a small graph holding the library, one Placeholder per
// argument and a call of the function, inlined and lowered by package
// lower and built by exec as any plan, so its body runs every kernel and
// control-flow op a session runs. Call runs it on the host; concurrent
// calls are independent steps.
//
// Its plan holds kernels that must be closed (exec.Plan.Close), and it
// is shared: the kernel that built it (a dataset op's, OneShotIterator's)
// holds one reference, dropped when that kernel's plan closes it
// (kernels.Closer), and each iterator over a dataset that calls it holds
// one from Iterate to its Close, since an iterator resource is the
// session's and outlives the plan that made it (MakeIterator's plan may
// be evicted while IteratorGetNext's reads the pass). The last reference
// closes the function's plan.
type Func struct {
	name string
	plan *exec.Plan
	ins  []tensor.DType
	outs []tensor.DType
	refs atomic.Int64
}

// liveFuncs counts the Funcs built and not yet closed, in the process.
var liveFuncs atomic.Int64

// LiveFuncs is the number of function plans built and not yet closed in
// the process (a test's check that sessions and plans close theirs).
func LiveFuncs() int64 { return liveFuncs.Load() }

// acquire takes a reference for an iterator; false once the last one was
// dropped (the plan is closed).
func (f *Func) acquire() bool {
	for {
		n := f.refs.Load()
		if n <= 0 {
			return false
		}
		if f.refs.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

// release drops a reference; the last closes the function's plan, after
// its calls in flight.
func (f *Func) release() {
	if f.refs.Add(-1) == 0 {
		f.plan.Close()
		liveFuncs.Add(-1)
	}
}

// Close drops the reference of the kernel that built f: its plan calls it
// once, after its last step (kernels.Closer, through kernels.WithClose).
func (f *Func) Close() error {
	f.release()
	return nil
}

// errFuncClosed is the error of a dataset whose function's plan was closed
// before an iterator took it (Iterate), or of a call after (Call).
func errFuncClosed(name string) error {
	return status.Errorf(status.FailedPrecondition, "function %s: its plan was closed with the plan that made the dataset", name)
}

// NewFunc builds fn's plan from lib, its stateful kernels bound to rm (the
// session's resources, so a function reads the session's variables).
func NewFunc(lib *tfpb.FunctionDefLibrary, fn *tfpb.NameAttrList, rm *resource.Manager) (*Func, error) {
	g := graph.New()
	if lib != nil {
		if err := g.AddLibrary(lib); err != nil {
			return nil, err
		}
	}
	fd := g.Function(fn.GetName())
	if fd == nil {
		return nil, status.InvalidArg("Failed to find function %q in the graph's function library", fn.GetName())
	}
	f := &Func{name: fn.GetName()}
	var args []graph.Output
	for i, a := range fd.GetSignature().GetInputArg() {
		dt := tensor.DType(a.GetType())
		if a.GetTypeAttr() != "" {
			dt = tensor.DType(fn.GetAttr()[a.GetTypeAttr()].GetType())
		}
		b := g.NewBuilder("Placeholder", fmt.Sprintf("arg%d", i))
		b.SetAttr("dtype", &tfpb.AttrValue{Value: &tfpb.AttrValue_Type{Type: tfpb.DataType(dt)}})
		n, err := b.Finish()
		if err != nil {
			return nil, err
		}
		args = append(args, n.Output(0))
		f.ins = append(f.ins, dt)
	}
	b := g.NewBuilder(fn.GetName(), "call")
	for _, a := range args {
		b.AddInput(a)
	}
	for k, v := range fn.GetAttr() {
		b.SetAttr(k, v)
	}
	call, err := b.Finish()
	if err != nil {
		return nil, fmt.Errorf("function %s: %w", fn.GetName(), err)
	}
	var fetches []graph.Output
	for i := range call.OutTypes {
		fetches = append(fetches, call.Output(i))
	}
	f.outs = call.OutTypes
	g.RLock()
	defer g.RUnlock()
	lw, err := lower.Lower(g, args, fetches, []*graph.Node{call})
	if err != nil {
		return nil, fmt.Errorf("function %s: %w", fn.GetName(), err)
	}
	f.plan, err = exec.BuildPlaced(g, lw.Feeds, lw.Fetches, lw.Targets, exec.Placement{Resources: rm})
	if err != nil {
		return nil, fmt.Errorf("function %s: %w", fn.GetName(), err)
	}
	f.refs.Store(1)
	liveFuncs.Add(1)
	return f, nil
}

// spawn is the inter-op pool of a function's step: a goroutine per ready
// branch. A function runs inside a kernel of the session's step, so it
// must not wait for that step's pool.
type spawn struct{}

func (spawn) Submit(f func()) { go f() }

// Call runs the function on args and returns its outputs.
func (f *Func) Call(args []*tensor.Tensor) ([]*tensor.Tensor, error) {
	if len(args) != len(f.ins) {
		return nil, status.InvalidArg("function %s takes %d arguments, got %d", f.name, len(f.ins), len(args))
	}
	for i, a := range args {
		if a.DType != f.ins[i] {
			return nil, status.InvalidArg("function %s: argument %d is %v, expected %v", f.name, i, a.DType, f.ins[i])
		}
	}
	out, _, err := f.plan.Run(context.Background(), &exec.Runtime{Inter: spawn{}, Intra: kernels.Serial{}}, args, exec.Options{})
	if errors.Is(err, exec.ErrClosed) {
		// Not the calling step's plan: a session that took it for its own
		// would run that step again, and the pass would skip elements.
		return nil, errFuncClosed(f.name)
	}
	return out, err
}

// mapDS is MapDataset and ParallelMapDatasetV2: f of each element and the
// captured arguments. With parallel > 1, up to parallel calls run at once
// on elements taken in order, and results come out in the input's order
// (TF's deterministic mode, which is its default).
type mapDS struct {
	in       Dataset
	f        *Func
	captured []*tensor.Tensor
	parallel int
	filter   bool // FilterDataset: f is a predicate that keeps the element
	flat     bool // FlatMapDataset: f makes a dataset whose elements follow
}

func (d *mapDS) Iterate() (Iterator, error) {
	if !d.f.acquire() {
		return nil, errFuncClosed(d.f.name)
	}
	in, err := d.in.Iterate()
	if err != nil {
		d.f.release()
		return nil, err
	}
	return &mapIt{d: d, in: in}, nil
}

// call is one call of the function, waited for in order.
type call struct {
	done chan struct{}
	out  []*tensor.Tensor
	err  error
	end  bool
}

type mapIt struct {
	d       *mapDS
	in      Iterator
	pending []*call // in flight, in input order (parallel map)
	inEnd   bool
	inner   Iterator // flat map: the current element's dataset
	wg      sync.WaitGroup
	closed  bool // Close ran: the Func's reference is dropped
}

func (it *mapIt) apply(elem []*tensor.Tensor) ([]*tensor.Tensor, error) {
	args := append(append([]*tensor.Tensor(nil), elem...), it.d.captured...)
	return it.d.f.Call(args)
}

func (it *mapIt) Next() ([]*tensor.Tensor, bool, error) {
	if it.d.filter {
		return it.nextFiltered()
	}
	if it.d.flat {
		return it.nextFlat()
	}
	if it.d.parallel <= 1 {
		e, end, err := it.in.Next()
		if err != nil || end {
			return nil, end, err
		}
		out, err := it.apply(e)
		return out, false, err
	}
	for !it.inEnd && len(it.pending) < it.d.parallel {
		e, end, err := it.in.Next()
		c := &call{done: make(chan struct{}), err: err, end: end}
		it.pending = append(it.pending, c)
		if end {
			it.inEnd = true
		}
		if err != nil || end {
			close(c.done)
			continue
		}
		it.wg.Add(1)
		go func() {
			defer it.wg.Done()
			c.out, c.err = it.apply(e)
			close(c.done)
		}()
	}
	if len(it.pending) == 0 {
		return nil, true, nil
	}
	c := it.pending[0]
	<-c.done
	if c.end {
		return nil, true, nil // stays pending: every later call ends too
	}
	it.pending = it.pending[1:]
	return c.out, false, c.err
}

func (it *mapIt) nextFiltered() ([]*tensor.Tensor, bool, error) {
	for {
		e, end, err := it.in.Next()
		if err != nil || end {
			return nil, end, err
		}
		out, err := it.apply(e)
		if err != nil {
			return nil, false, err
		}
		if len(out) != 1 || out[0].DType != tensor.Bool || len(out[0].Shape) != 0 {
			return nil, false, status.InvalidArg("Filter predicate `predicate` must return a scalar bool.")
		}
		if out[0].Bools()[0] {
			return e, false, nil
		}
	}
}

func (it *mapIt) nextFlat() ([]*tensor.Tensor, bool, error) {
	for {
		if it.inner != nil {
			e, end, err := it.inner.Next()
			if err != nil || !end {
				return e, end, err
			}
			it.inner.Close()
			it.inner = nil
		}
		e, end, err := it.in.Next()
		if err != nil || end {
			return nil, end, err
		}
		out, err := it.apply(e)
		if err != nil {
			return nil, false, err
		}
		d, err := datasetOf(out)
		if err != nil {
			return nil, false, status.InvalidArg("`f` must return a Dataset: %v", err)
		}
		if it.inner, err = d.Iterate(); err != nil {
			return nil, false, err
		}
	}
}

// datasetOf is the Dataset a function returned as its one output.
func datasetOf(out []*tensor.Tensor) (Dataset, error) {
	if len(out) != 1 || out[0].DType != tensor.Variant || len(out[0].Vars) != 1 {
		return nil, status.InvalidArg("expected a single scalar of dtype DT_VARIANT")
	}
	d, ok := out[0].Vars[0].(Dataset)
	if !ok {
		return nil, status.InvalidArg("the variant is not a Dataset")
	}
	return d, nil
}

func (it *mapIt) Close() {
	if it.closed {
		return
	}
	it.closed = true
	it.wg.Wait()
	if it.inner != nil {
		it.inner.Close()
	}
	it.in.Close()
	it.d.f.release()
}

// autotuneParallel is the parallelism of num_parallel_calls = AUTOTUNE:
// one call per CPU the process may use.
func autotuneParallel() int { return runtime.GOMAXPROCS(0) }
