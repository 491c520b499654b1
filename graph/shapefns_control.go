package graph

import (
	"mstream/tensor"
)

// Shape functions of TF's v1 control-flow ops.
func init() {
	for _, op := range []string{"Switch", "RefSwitch"} {
		RegisterShapeFn(op, switchShape)
	}
	for _, op := range []string{"Merge", "RefMerge"} {
		RegisterShapeFn(op, mergeShape)
	}
	RegisterShapeFn("ControlTrigger", func(c *ShapeContext) ([]tensor.PartialShape, error) { return nil, nil })
	// The frame ops pass their input's shape on (TF's UnchangedShape), bar
	// Enter, whose output is unknown unless is_constant (a loop variable
	// may change shape from one iteration to the next). A loop's Merge sees
	// its NextIteration input as unknown (import builds the back edge's
	// source later), so its output is unknown, as in TF.
	RegisterShapeFn("Enter", func(c *ShapeContext) ([]tensor.PartialShape, error) {
		if c.Attr("is_constant").GetB() {
			return []tensor.PartialShape{c.In[0]}, nil
		}
		return []tensor.PartialShape{tensor.Unknown}, nil
	})
	for _, op := range []string{"RefEnter", "Exit", "RefExit", "NextIteration", "RefNextIteration"} {
		RegisterShapeFn(op, func(c *ShapeContext) ([]tensor.PartialShape, error) {
			return []tensor.PartialShape{c.In[0]}, nil
		})
	}
	RegisterShapeFn("LoopCond", func(c *ShapeContext) ([]tensor.PartialShape, error) {
		if p := c.In[0]; p.Known && len(p.Dims) != 0 {
			return nil, errorf("Shape must be rank 0 but is rank %d", len(p.Dims))
		}
		return []tensor.PartialShape{known()}, nil
	})
}

// switchShape: both outputs have the data's shape; the predicate must be
// a scalar (TF's SwitchShape).
func switchShape(c *ShapeContext) ([]tensor.PartialShape, error) {
	if p := c.In[1]; p.Known && len(p.Dims) != 0 {
		return nil, errorf("Shape must be rank 0 but is rank %d", len(p.Dims))
	}
	return []tensor.PartialShape{c.In[0], c.In[0]}, nil
}

// mergeShape is TF's MergeShape: the inputs' common shape, where a
// dimension they disagree on is unknown and a rank they disagree on (or
// an unknown one) makes the rank unknown; value_index is a scalar.
func mergeShape(c *ShapeContext) ([]tensor.PartialShape, error) {
	out := tensor.Unknown
	for i, s := range c.In {
		if !s.Known {
			out = tensor.Unknown
			break
		}
		if i == 0 {
			out = tensor.PartialShape{Known: true, Dims: append([]int64(nil), s.Dims...)}
			continue
		}
		if len(s.Dims) != len(out.Dims) {
			out = tensor.Unknown
			break
		}
		for j, d := range s.Dims {
			if d != out.Dims[j] {
				out.Dims[j] = -1
			}
		}
	}
	return []tensor.PartialShape{out, known()}, nil
}

// Shape functions of TF's functional control flow (ops/functional_ops.cc):
// the output_shapes attr when it is set; otherwise unknown for If and
// Case, and the input shapes for While (its loop variables in and out).
// Calls (PartitionedCall, a function by name) get their shapes from the
// body instead (function.go's refineCall).
func init() {
	for _, op := range []string{"If", "StatelessIf", "Case", "StatelessCase"} {
		RegisterShapeFn(op, func(c *ShapeContext) ([]tensor.PartialShape, error) { return declaredShapes(c, nil) })
	}
	for _, op := range []string{"While", "StatelessWhile"} {
		RegisterShapeFn(op, func(c *ShapeContext) ([]tensor.PartialShape, error) { return declaredShapes(c, c.In) })
	}
}

func declaredShapes(c *ShapeContext, otherwise []tensor.PartialShape) ([]tensor.PartialShape, error) {
	l := c.Attr("output_shapes").GetList().GetShape()
	if len(l) == 0 {
		return otherwise, nil
	}
	if len(l) != c.NumOutputs() {
		return nil, errorf("`output_shapes` must be the same length as num outputs (%d vs. %d", len(l), c.NumOutputs())
	}
	out := make([]tensor.PartialShape, len(l))
	for i, s := range l {
		out[i] = tensor.ShapeFromProto(s)
	}
	return out, nil
}
