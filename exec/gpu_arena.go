package exec

import (
	"mstream/kernels"
	"mstream/tensor"
)

// arena hands out a device step's per-node records (a node's input and
// output slices, its values, its kernel context, its output buffers'
// records and shapes) from blocks, so launching a node costs no heap
// allocation of its own: the launcher's host time per GPU node is what
// the device step is judged by when it runs node by node
// (BenchmarkDeviceStep, TestGPULaunchCost). Nothing handed out is reused
// within the step (a kernel's enqueued work may still read its inputs
// when the next node launches; a buffer record is freed by a holder
// goroutine after its events), and a block goes with the step that took
// it. The zero value is ready; chunk sizes the blocks.
type arena struct {
	chunk int
	ts    []*tensor.Tensor
	vs    []gval
	kcs   []kernels.Context
	bufs  []buffer
	dims  []int64
}

// sized makes blocks fit a plan of n nodes: a block serves a step of it
// whole for the common shapes of nodes (a few inputs and outputs).
func (a *arena) sized(n int) {
	a.chunk = min(max(n, 8), 512)
}

func (a *arena) block(n, per int) int {
	c := a.chunk
	if c == 0 {
		c = 8
	}
	return max(n, c*per)
}

// tensors returns n nil tensor pointers.
func (a *arena) tensors(n int) []*tensor.Tensor {
	if len(a.ts) < n {
		a.ts = make([]*tensor.Tensor, a.block(n, 4))
	}
	t := a.ts[:n:n]
	a.ts = a.ts[n:]
	return t
}

// values returns n empty values.
func (a *arena) values(n int) []gval {
	if len(a.vs) < n {
		a.vs = make([]gval, a.block(n, 2))
	}
	v := a.vs[:n:n]
	a.vs = a.vs[n:]
	return v
}

// context returns a zero kernel context.
func (a *arena) context() *kernels.Context {
	if len(a.kcs) == 0 {
		a.kcs = make([]kernels.Context, a.block(1, 1))
	}
	kc := &a.kcs[0]
	a.kcs = a.kcs[1:]
	return kc
}

// buffer returns a zero buffer record.
func (a *arena) buffer() *buffer {
	if len(a.bufs) == 0 {
		a.bufs = make([]buffer, a.block(1, 1))
	}
	b := &a.bufs[0]
	a.bufs = a.bufs[1:]
	return b
}

// shape returns a copy of s (never nil, as Shape.Clone).
func (a *arena) shape(s tensor.Shape) tensor.Shape {
	if len(a.dims) < len(s) || a.dims == nil {
		a.dims = make([]int64, a.block(len(s), 4))
	}
	d := a.dims[:len(s):len(s)]
	copy(d, s)
	a.dims = a.dims[len(s):]
	return d
}
