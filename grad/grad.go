package grad

import (
	"fmt"
	"strings"

	"mstream/graph"
	"mstream/proto/tfpb"
	"mstream/status"
	"mstream/tensor"
)

// Func builds the gradients of one op's inputs from the summed gradients
// of its outputs. dy has one entry per output of n, each a real tensor
// (ZerosLike stands in for an output without gradient). It returns one
// entry per data input of n; a zero Output is NoGradient.
type Func func(b *Builder, n *graph.Node, dy []graph.Output) []graph.Output

// registry maps an op type to its gradient function; a nil Func marks an
// op TF registers with NO_GRADIENT.
var registry = map[string]Func{}

func register(f Func, ops ...string) {
	for _, op := range ops {
		if _, dup := registry[op]; dup {
			panic("grad: two gradient functions for " + op)
		}
		registry[op] = f
	}
}

func noGradient(ops ...string) { register(nil, ops...) }

// Has reports whether op has a gradient function (or is registered as
// having none).
func Has(op string) bool {
	_, ok := registry[op]
	return ok
}

// buildError carries a node-building error out of a gradient function,
// which builds many nodes in a row; AddGradients recovers it.
type buildError struct{ err error }

func unimplemented(format string, args ...any) error {
	return status.Errorf(status.Unimplemented, format, args...)
}

// Builder creates the gradient nodes of one AddGradients call.
type Builder struct {
	g      *graph.Graph
	prefix string
	names  map[string]int // TF Scope's name map, within prefix
	// ctrl, when set, is a control input of every node built that reads
	// no other (TF's WithControlDependencies in a loop body: the node
	// runs in the loop's frame, once per iteration).
	ctrl *graph.Node
}

// sub is the builder of a sub-scope: TF's Scope::NewSubScope, its name
// made unique in b's name map.
func (b *Builder) sub(name string, ctrl *graph.Node) *Builder {
	return &Builder{g: b.g, prefix: b.name(name), names: map[string]int{}, ctrl: ctrl}
}

// name is TF's Scope::GetUniqueName within the prefix.
func (b *Builder) name(op string) string {
	n, ok := b.names[op]
	if !ok {
		b.names[op] = 0
		return b.prefix + "/" + op
	}
	for {
		n++
		b.names[op] = n
		u := fmt.Sprintf("%s_%d", op, n)
		if _, taken := b.names[u]; !taken {
			b.names[u] = 0
			return b.prefix + "/" + u
		}
	}
}

// A is a node's non-type attrs (type attrs are inferred from the inputs).
type A map[string]*tfpb.AttrValue

// node builds op over ins; an entry of ins is a graph.Output or, for a list
// input, a []graph.Output.
func (b *Builder) node(op string, attrs A, ins ...any) *graph.Node {
	nb := b.g.NewBuilder(op, b.name(op))
	for _, in := range ins {
		switch v := in.(type) {
		case graph.Output:
			nb.AddInput(v)
		case []graph.Output:
			nb.AddInputList(v)
		default:
			panic(fmt.Sprintf("grad: input of type %T", in))
		}
	}
	for k, v := range attrs {
		nb.SetAttr(k, v)
	}
	if b.ctrl != nil && len(ins) == 0 {
		nb.AddControlInput(b.ctrl)
	}
	n, err := nb.Finish()
	if err != nil {
		panic(buildError{err})
	}
	return n
}

// Op builds op over ins and returns its output 0.
func (b *Builder) Op(op string, attrs A, ins ...any) graph.Output {
	return b.node(op, attrs, ins...).Output(0)
}

// Const is a constant node holding t.
func (b *Builder) Const(t *tensor.Tensor) graph.Output {
	return b.Op("Const", A{"dtype": graph.AttrType(t.DType), "value": graph.AttrTensor(t)})
}

// I32 is an int32 vector constant (a scalar when scalar is set).
func (b *Builder) I32(v ...int32) graph.Output {
	return b.Const(tensor.FromI32(tensor.Shape{int64(len(v))}, v))
}

// ScalarI32 is an int32 scalar constant.
func (b *Builder) ScalarI32(v int32) graph.Output { return b.Const(tensor.ScalarI32(v)) }

// Scalar is a scalar constant v of dtype dt.
func (b *Builder) Scalar(dt tensor.DType, v float64) graph.Output {
	return b.Op("Cast", A{"DstT": graph.AttrType(dt)}, b.Const(tensor.ScalarF32(float32(v))))
}

// AddGradients adds the gradients of the sum of ys with respect to each of
// xs to g, with dxs as the initial gradients of ys (ones when nil), under
// prefix ("" for "gradients" made unique). The result has one entry per x;
// a zero Output is NoGradient.
func AddGradients(g *graph.Graph, prefix string, ys, xs, dxs []graph.Output) (out []graph.Output, err error) {
	if dxs != nil && len(dxs) != len(ys) {
		return nil, status.InvalidArg("Must specify a gradient input for each output.")
	}
	for _, o := range append(append(append([]graph.Output{}, ys...), xs...), dxs...) {
		if o.Node == nil {
			return nil, status.InvalidArg("TF_Output has a NULL operation")
		}
	}
	scope, err := scopeName(g, prefix)
	if err != nil {
		return nil, err
	}
	b := &Builder{g: g, prefix: scope, names: map[string]int{}}
	defer func() {
		if r := recover(); r != nil {
			be, ok := r.(buildError)
			if !ok {
				panic(r)
			}
			out, err = nil, be.err
		}
	}()
	if dxs == nil {
		w, err := newWalk(g, ys, xs)
		if err != nil {
			return nil, err
		}
		for _, y := range ys {
			dxs = append(dxs, b.Op("OnesLike", nil, y))
		}
		return w.run(b, dxs)
	}
	return b.gradients(ys, xs, dxs)
}

// gradients is TF's AddSymbolicGradients in b's scope: the gradients of
// ys with respect to xs, with dxs the gradients of ys.
func (b *Builder) gradients(ys, xs, dxs []graph.Output) ([]graph.Output, error) {
	w, err := newWalk(b.g, ys, xs)
	if err != nil {
		return nil, err
	}
	return w.run(b, dxs)
}

// scopeName is the node-name prefix: the caller's, which no node may use
// yet, or "gradients" made unique against every node name and each of its
// '/'-prefixes, as TF's NewInternalScope(...).NewSubScope does.
func scopeName(g *graph.Graph, prefix string) (string, error) {
	nodes := g.Nodes()
	if prefix != "" {
		for _, n := range nodes {
			if n.Name == prefix || strings.HasPrefix(n.Name, prefix+"/") {
				return "", status.InvalidArg("prefix [%s] conflicts with existing node in the graph named [%s]", prefix, n.Name)
			}
		}
		return prefix, nil
	}
	used := map[string]bool{}
	for _, n := range nodes {
		used[n.Name] = true
		for i := 0; i < len(n.Name); i++ {
			if n.Name[i] == '/' {
				used[n.Name[:i]] = true
			}
		}
	}
	name := "gradients"
	for i := 1; used[name]; i++ {
		name = fmt.Sprintf("gradients_%d", i)
	}
	return name, nil
}

// walk is one backward pass: TF's SymbolicGradientBuilder.
type walk struct {
	g         *graph.Graph
	loops     map[*graph.WhileContext]map[*graph.Node]graph.Output // the gradients into each loop's Exits
	ys, xs    []graph.Output
	backprops map[graph.Output][]graph.Output
	pending   map[*graph.Node]int
	ready     []*graph.Node
	xIndex    map[graph.Output][]int
	grads     []graph.Output
	done      []bool
}

// dataOuts lists the data consumers of every output of n.
func dataOuts(g *graph.Graph, n *graph.Node) []graph.Input {
	var outs []graph.Input
	for i := 0; i < n.NumOutputs(); i++ {
		outs = append(outs, g.Consumers(n.Output(i))...)
	}
	return outs
}

func newWalk(g *graph.Graph, ys, xs []graph.Output) (*walk, error) {
	w := &walk{g: g, ys: ys, xs: xs, backprops: map[graph.Output][]graph.Output{}, pending: map[*graph.Node]int{},
		xIndex: map[graph.Output][]int{}, grads: make([]graph.Output, len(xs)), done: make([]bool, len(xs))}
	// Reachable backwards from ys along data edges.
	reach := map[*graph.Node]bool{}
	var queue []*graph.Node
	for _, y := range ys {
		if !reach[y.Node] {
			reach[y.Node] = true
			queue = append(queue, y.Node)
		}
	}
	for len(queue) > 0 {
		n := queue[0]
		queue = queue[1:]
		for _, in := range n.Inputs {
			if !reach[in.Node] {
				reach[in.Node] = true
				queue = append(queue, in.Node)
			}
		}
	}
	for _, x := range xs {
		if !reach[x.Node] {
			return nil, status.InvalidArg("Cannot compute the partial derivative for node '%s' as it's unreachable from the output node(s).", x.Node.Name)
		}
	}
	outputNodes := map[*graph.Node]bool{}
	for _, y := range ys {
		outputNodes[y.Node] = true
	}
	stop := w.stopNodes(reach, outputNodes)
	for i, x := range xs {
		w.xIndex[x] = append(w.xIndex[x], i)
	}
	// Forward from xs: the outputs that need backprop, and how many
	// gradients each node waits for.
	visited := map[*graph.Node]bool{}
	queue = queue[:0]
	for _, x := range xs {
		if !visited[x.Node] {
			visited[x.Node] = true
			queue = append(queue, x.Node)
		}
	}
	for len(queue) > 0 {
		n := queue[0]
		queue = queue[1:]
		for i := 0; i < n.NumOutputs(); i++ {
			w.backprops[n.Output(i)] = nil
		}
		expected := 0
		if !stop[n] {
			for _, c := range dataOuts(g, n) {
				if !reach[c.Node] {
					continue
				}
				if !visited[c.Node] {
					visited[c.Node] = true
					queue = append(queue, c.Node)
				}
				expected++
			}
		}
		if outputNodes[n] {
			for _, y := range ys {
				if y.Node == n {
					expected++
				}
			}
		}
		w.pending[n] = expected
	}
	return w, nil
}

// stopNodes are the output nodes that no other output node's path from xs
// passes through.
func (w *walk) stopNodes(reach, outputNodes map[*graph.Node]bool) map[*graph.Node]bool {
	internal := map[*graph.Node]bool{}
	visited := map[*graph.Node]bool{}
	type item struct{ n, last *graph.Node }
	var queue []item
	for _, x := range w.xs {
		if !visited[x.Node] {
			visited[x.Node] = true
			queue = append(queue, item{x.Node, nil})
		}
	}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, c := range dataOuts(w.g, p.n) {
			if !reach[c.Node] || visited[c.Node] {
				continue
			}
			visited[c.Node] = true
			last := p.last
			if outputNodes[c.Node] {
				if last != nil {
					internal[last] = true
				}
				last = c.Node
			}
			queue = append(queue, item{c.Node, last})
		}
	}
	stop := map[*graph.Node]bool{}
	for n := range outputNodes {
		if !internal[n] {
			stop[n] = true
		}
	}
	return stop
}

func (w *walk) backprop(grad, src graph.Output) {
	gs, ok := w.backprops[src]
	if !ok {
		return
	}
	w.backprops[src] = append(gs, grad)
	w.pending[src.Node]--
	if w.pending[src.Node] == 0 {
		w.ready = append(w.ready, src.Node)
	}
}

// sum is the gradient of output o: NoGradient, the one gradient, or AddN.
func (w *walk) sum(b *Builder, o graph.Output) graph.Output {
	var keep []graph.Output
	for _, g := range w.backprops[o] {
		if g.Node != nil {
			keep = append(keep, g)
		}
	}
	switch len(keep) {
	case 0:
		return graph.Output{}
	case 1:
		return keep[0]
	}
	return b.Op("AddN", nil, keep)
}

func (w *walk) run(b *Builder, dxs []graph.Output) ([]graph.Output, error) {
	for i, y := range w.ys {
		w.backprop(dxs[i], y)
	}
	for len(w.ready) > 0 {
		n := w.ready[0]
		w.ready = w.ready[1:]
		dy := make([]graph.Output, n.NumOutputs())
		var noGrad []int
		for i := range dy {
			dy[i] = w.sum(b, n.Output(i))
			if dy[i].Node == nil {
				noGrad = append(noGrad, i)
			}
			for _, xi := range w.xIndex[n.Output(i)] {
				w.grads[xi], w.done[xi] = dy[i], true
			}
		}
		stopNode := true
		for _, in := range n.Inputs {
			if _, ok := w.backprops[in]; ok {
				stopNode = false
				break
			}
		}
		if stopNode {
			continue
		}
		if n.Op == "Exit" || n.Op == "RefExit" {
			if err := w.exit(b, n, dy[0]); err != nil {
				return nil, err
			}
			continue
		}
		f, known := registry[n.Op]
		if !known {
			return nil, status.Errorf(status.NotFound, "No gradient defined for op: %s. Please see https://www.tensorflow.org/code/tensorflow/cc/gradients/README.md for instructions on how to add C++ gradients.", n.Op)
		}
		if f == nil || len(noGrad) == len(dy) {
			for _, in := range n.Inputs {
				w.backprop(graph.Output{}, in)
			}
			continue
		}
		for _, i := range noGrad {
			dy[i] = b.Op("ZerosLike", nil, n.Output(i))
		}
		dx := f(b, n, dy)
		if len(dx) < len(n.Inputs) {
			return nil, status.Errorf(status.Internal, "Invalid gradient output index: %d size: %d", len(dx), len(dx))
		}
		for i, in := range n.Inputs {
			w.backprop(dx[i], in)
		}
	}
	// An x whose node has other outputs not requested may still wait.
	for i, x := range w.xs {
		if !w.done[i] && w.pending[x.Node] > 0 {
			w.grads[i] = w.sum(b, x)
		}
	}
	return w.grads, nil
}
