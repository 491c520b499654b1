package graph

import (
	"fmt"

	"mstream/proto/tfpb"
	"mstream/status"
	"mstream/tensor"
)

// ShapeFn computes the static output shapes of a node from its input shapes,
// attrs and constant inputs, as TF's shape functions do. It returns one
// shape per output; an error means the inputs are incompatible.
type ShapeFn func(c *ShapeContext) ([]tensor.PartialShape, error)

// ShapeContext is what a ShapeFn sees of the node being inferred.
type ShapeContext struct {
	Node *Node
	// In holds the static shape of each data input.
	In []tensor.PartialShape
}

var shapeFns = map[string]ShapeFn{}

// RegisterShapeFn sets the shape function of op. It is meant for init
// functions; a second registration replaces the first.
func RegisterShapeFn(op string, fn ShapeFn) { shapeFns[op] = fn }

// HasShapeFn reports whether op has a shape function.
func HasShapeFn(op string) bool { return shapeFns[op] != nil }

// Attr returns the node's attr or nil.
func (c *ShapeContext) Attr(name string) *tfpb.AttrValue { return c.Node.Attrs[name] }

// NumOutputs is the node's number of outputs.
func (c *ShapeContext) NumOutputs() int { return len(c.Node.OutTypes) }

// maxConstElems bounds the constant tensors shape inference decodes, so a
// hostile GraphDef cannot make it allocate without limit.
const maxConstElems = 1 << 16

// ConstInput returns the value of input i when the graph fixes it, as TF's
// shape refiner evaluates it: a Const, Shape/Size/Rank of a known shape,
// shape(x)[i], or a small stateless subgraph over such values, folded by
// running it (shapetensor.go); otherwise nil.
func (c *ShapeContext) ConstInput(i int) *tensor.Tensor {
	if i >= len(c.Node.Inputs) {
		return nil
	}
	return newFolder().value(c.Node.Inputs[i])
}

// ConstInts returns input i as int64 values when it is a known int32/int64
// constant.
func (c *ShapeContext) ConstInts(i int) ([]int64, bool) {
	t := c.ConstInput(i)
	if t == nil {
		return nil, false
	}
	v, err := t.Int64s()
	return v, err == nil
}

func constValue(o Output, depth int) *tensor.Tensor {
	n := o.Node
	if depth > 4 {
		return nil
	}
	switch n.Op {
	case "Const":
		p := n.Attrs["value"].GetTensor()
		if p == nil {
			return nil
		}
		s := tensor.ShapeFromProto(p.TensorShape)
		if !s.FullyDefined() {
			return nil
		}
		ne := int64(1)
		for _, d := range s.Dims {
			if ne *= d; ne > maxConstElems || ne < 0 {
				return nil
			}
		}
		t, err := tensor.FromProto(p)
		if err != nil {
			return nil
		}
		return t
	case "Identity", "StopGradient":
		if len(n.Inputs) == 1 {
			return constValue(n.Inputs[0], depth+1)
		}
	case "Shape", "Size", "Rank":
		if len(n.Inputs) == 0 || len(n.Inputs[0].Node.OutShapes) <= n.Inputs[0].Index {
			return nil
		}
		s := n.Inputs[0].Node.OutShapes[n.Inputs[0].Index]
		var vals []int64
		switch n.Op {
		case "Rank":
			if !s.Known {
				return nil
			}
			vals = []int64{int64(len(s.Dims))}
		case "Size":
			if !s.FullyDefined() {
				return nil
			}
			vals = []int64{tensor.Shape(s.Dims).NumElements()}
		default:
			if !s.FullyDefined() {
				return nil
			}
			vals = s.Dims
		}
		shape := tensor.Shape{int64(len(vals))}
		if n.Op != "Shape" {
			shape = nil
		}
		if n.OutTypes[0] == tensor.Int64 {
			return tensor.FromI64(shape, vals)
		}
		v32 := make([]int32, len(vals))
		for i, v := range vals {
			v32[i] = int32(v)
		}
		return tensor.FromI32(shape, v32)
	}
	return nil
}

// inferNode sets n.OutShapes from its shape function, merged with declared
// shapes (an imported node's _output_shapes) when given.
func inferNode(n *Node, declared []tensor.PartialShape) error {
	shapes := make([]tensor.PartialShape, len(n.OutTypes))
	if fn := shapeFns[n.Op]; fn != nil {
		out, err := runShapeFn(fn, n)
		if err != nil {
			return status.InvalidArg("Node '%s' (op %s): %v", n.Name, n.Op, err)
		}
		copy(shapes, out)
	}
	for i := range shapes {
		if i < len(declared) {
			if m, ok := MergeShapes(shapes[i], declared[i]); ok {
				shapes[i] = m
			}
		}
	}
	n.OutShapes = shapes
	return nil
}

func inputShapes(n *Node) []tensor.PartialShape {
	in := make([]tensor.PartialShape, len(n.Inputs))
	for i, o := range n.Inputs {
		if o.Index < len(o.Node.OutShapes) {
			in[i] = o.Node.OutShapes[o.Index]
		}
	}
	return in
}

// MergeShapes combines two partial shapes of one tensor, keeping every
// dimension either knows; ok is false when they disagree.
func MergeShapes(a, b tensor.PartialShape) (tensor.PartialShape, bool) {
	if !a.Known {
		return cloneShape(b), true
	}
	if !b.Known {
		return cloneShape(a), true
	}
	if len(a.Dims) != len(b.Dims) {
		return a, false
	}
	out := tensor.PartialShape{Known: true, Dims: make([]int64, len(a.Dims))}
	for i := range a.Dims {
		x, y := a.Dims[i], b.Dims[i]
		switch {
		case x < 0:
			out.Dims[i] = y
		case y < 0 || x == y:
			out.Dims[i] = x
		default:
			return a, false
		}
	}
	return out, true
}

func cloneShape(s tensor.PartialShape) tensor.PartialShape {
	if !s.Known {
		return tensor.Unknown
	}
	return tensor.PartialShape{Known: true, Dims: append([]int64{}, s.Dims...)}
}

func (g *Graph) setTensorShape(o Output, s tensor.PartialShape) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if err := g.checkOwnLocked(o.Node, "?"); err != nil {
		return err
	}
	if o.Index < 0 || o.Index >= len(o.Node.OutTypes) {
		return status.Errorf(status.OutOfRange, "Node '%s' has %d outputs, not %d", o.Node.Name, len(o.Node.OutTypes), o.Index+1)
	}
	if s.Known {
		for _, d := range s.Dims {
			if d < -1 {
				return status.InvalidArg("Node '%s': invalid dimension %d in shape %v", o.Node.Name, d, s)
			}
		}
	}
	old := o.Node.OutShapes[o.Index]
	m, ok := MergeShapes(old, s)
	if !ok {
		return status.InvalidArg("Node '%s' output %d: shape %v is incompatible with the known shape %v", o.Node.Name, o.Index, s, old)
	}
	if shapeEqual(m, old) {
		return nil
	}
	o.Node.OutShapes[o.Index] = m
	g.version.Add(1)
	g.propagateLocked(o.Node)
	return nil
}

// propagateLocked re-runs shape inference on the consumers of n, keeping
// only refinements, until nothing changes.
func (g *Graph) propagateLocked(n *Node) {
	queue := []*Node{n}
	for steps := 0; len(queue) > 0 && steps < 1<<20; steps++ {
		cur := queue[0]
		queue = queue[1:]
		seen := map[*Node]bool{}
		for _, cs := range cur.consumers {
			for _, in := range cs {
				c := in.Node
				if seen[c] || shapeFns[c.Op] == nil {
					continue
				}
				seen[c] = true
				out, err := runShapeFn(shapeFns[c.Op], c)
				if err != nil {
					continue
				}
				changed := false
				for i := range c.OutShapes {
					if i >= len(out) {
						break
					}
					if m, ok := MergeShapes(c.OutShapes[i], out[i]); ok && !shapeEqual(m, c.OutShapes[i]) {
						c.OutShapes[i] = m
						changed = true
					}
				}
				if changed {
					queue = append(queue, c)
				}
			}
		}
	}
}

func shapeEqual(a, b tensor.PartialShape) bool {
	if a.Known != b.Known || len(a.Dims) != len(b.Dims) {
		return false
	}
	for i := range a.Dims {
		if a.Dims[i] != b.Dims[i] {
			return false
		}
	}
	return true
}

func known(dims ...int64) tensor.PartialShape { return tensor.PartialShape{Known: true, Dims: dims} }

func errorf(format string, a ...any) error { return fmt.Errorf(format, a...) }

// runShapeFn calls fn on n; a panicking shape function (a bug, or a
// hostile GraphDef it did not foresee) yields unknown shapes, not a crash.
func runShapeFn(fn ShapeFn, n *Node) (out []tensor.PartialShape, err error) {
	defer func() {
		if r := recover(); r != nil {
			out, err = nil, nil
		}
	}()
	return fn(&ShapeContext{Node: n, In: inputShapes(n)})
}
