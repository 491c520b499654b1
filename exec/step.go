package exec

import (
	"context"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"mstream/kernels"
	"mstream/status"
	"mstream/tensor"
)

// Runtime is what steps run on: the inter-op pool and the intra-op
// parallelizer of one session (later, of one stream group).
type Runtime struct {
	Inter *Pool
	Intra kernels.Parallelizer
}

// NodeStat is the timing of one node in a traced step.
type NodeStat struct {
	Node       string
	Op         string
	Start, End time.Time
	Bytes      int64
}

// Options change how one step runs.
type Options struct {
	// Trace records a NodeStat per node.
	Trace bool
}

type step struct {
	plan     *Plan
	rt       *Runtime
	feeds    []*tensor.Tensor
	pending  []int32
	outputs  [][]*tensor.Tensor
	left     atomic.Int32
	failed   atomic.Bool
	err      error
	doneOnce sync.Once
	done     chan struct{}
	ctx      context.Context

	trace   bool
	statsMu sync.Mutex
	stats   []NodeStat
}

// Run executes one step and returns the fetched tensors in fetch order. It
// blocks until every node has run, the first error, or ctx is cancelled.
func (p *Plan) Run(ctx context.Context, rt *Runtime, feeds []*tensor.Tensor, opts Options) ([]*tensor.Tensor, []NodeStat, error) {
	if len(feeds) != len(p.feeds) {
		return nil, nil, status.Errorf(status.Internal, "plan expects %d feeds, got %d", len(p.feeds), len(feeds))
	}
	s := &step{
		plan:    p,
		rt:      rt,
		feeds:   feeds,
		pending: make([]int32, len(p.nodes)),
		outputs: make([][]*tensor.Tensor, len(p.nodes)),
		done:    make(chan struct{}),
		ctx:     ctx,
		trace:   opts.Trace,
	}
	for i := range p.nodes {
		s.pending[i] = p.nodes[i].npred
	}
	s.left.Store(int32(len(p.nodes)))
	if len(p.nodes) > 0 {
		// The caller's goroutine takes the first root; others go to the pool.
		for _, r := range p.roots[1:] {
			r := r
			rt.Inter.Submit(func() { s.runFrom(r) })
		}
		s.runFrom(p.roots[0])
		select {
		case <-s.done:
		case <-ctx.Done():
			s.fail(status.Errorf(status.Cancelled, "step cancelled: %v", ctx.Err()))
		}
	}
	if s.failed.Load() {
		return nil, nil, s.err
	}
	out := make([]*tensor.Tensor, len(p.fetches))
	for i, f := range p.fetches {
		if f.Node < 0 {
			out[i] = feeds[f.Index]
		} else {
			out[i] = s.outputs[f.Node][f.Index]
		}
	}
	return out, s.stats, nil
}

func (s *step) fail(err error) {
	s.doneOnce.Do(func() {
		s.err = err
		s.failed.Store(true)
		close(s.done)
	})
}

// runFrom runs node i, then keeps running one newly ready successor on this
// goroutine while handing the others to the pool.
func (s *step) runFrom(i int) {
	for i >= 0 {
		if s.failed.Load() {
			return
		}
		if err := s.compute(i); err != nil {
			s.fail(err)
			return
		}
		next := -1
		for _, succ := range s.plan.nodes[i].succ {
			if atomic.AddInt32(&s.pending[succ], -1) == 0 {
				if next < 0 {
					next = succ
				} else {
					succ := succ
					s.rt.Inter.Submit(func() { s.runFrom(succ) })
				}
			}
		}
		if s.left.Add(-1) == 0 {
			s.doneOnce.Do(func() { close(s.done) })
		}
		i = next
	}
}

func (s *step) compute(i int) (err error) {
	pn := &s.plan.nodes[i]
	n := pn.node
	ins := make([]*tensor.Tensor, len(pn.inputs))
	for j, r := range pn.inputs {
		if r.Node < 0 {
			ins[j] = s.feeds[r.Index]
		} else {
			ins[j] = s.outputs[r.Node][r.Index]
		}
	}
	ctx := &kernels.Context{
		Node:    n,
		Inputs:  ins,
		Outputs: make([]*tensor.Tensor, len(n.OutTypes)),
		Pool:    s.rt.Intra,
	}
	var start time.Time
	if s.trace {
		start = time.Now()
	}
	defer func() {
		if r := recover(); r != nil {
			err = status.Errorf(status.Internal, "node '%s' (op %s) panicked: %v\n%s", n.Name, n.Op, r, debug.Stack())
		}
	}()
	if err := pn.kernel.Compute(ctx); err != nil {
		if status.CodeOf(err) == status.Unknown {
			err = status.Errorf(status.Internal, "node '%s' (op %s): %v", n.Name, n.Op, err)
		}
		return err
	}
	var bytes int64
	for j, t := range ctx.Outputs {
		if t == nil {
			return status.Errorf(status.Internal, "node '%s' (op %s) did not set output %d", n.Name, n.Op, j)
		}
		if t.DType != n.OutTypes[j] {
			return status.Errorf(status.Internal, "node '%s' (op %s) produced %v for output %d, declared %v", n.Name, n.Op, t.DType, j, n.OutTypes[j])
		}
		bytes += t.ByteSize()
	}
	s.outputs[i] = ctx.Outputs
	if s.trace {
		st := NodeStat{Node: n.Name, Op: n.Op, Start: start, End: time.Now(), Bytes: bytes}
		s.statsMu.Lock()
		s.stats = append(s.stats, st)
		s.statsMu.Unlock()
	}
	return nil
}
