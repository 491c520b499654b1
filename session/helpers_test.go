package session

import (
	"testing"

	"mstream/graph"
	_ "mstream/kernels/cpu"
	"mstream/tensor"
)

// gb builds graphs for session tests; any error fails the test.
type gb struct {
	t testing.TB
	g *graph.Graph
}

func newGB(t testing.TB) *gb { return &gb{t: t, g: graph.New()} }

func (b *gb) op(op, name string, attrs map[string]any, ins ...graph.Output) graph.Output {
	b.t.Helper()
	nb := b.g.NewBuilder(op, name)
	for _, in := range ins {
		nb.AddInput(in)
	}
	for k, v := range attrs {
		switch v := v.(type) {
		case tensor.DType:
			nb.SetAttr(k, graph.AttrType(v))
		case tensor.PartialShape:
			nb.SetAttr(k, graph.AttrShape(v))
		case *tensor.Tensor:
			nb.SetAttr(k, graph.AttrTensor(v))
		case bool:
			nb.SetAttr(k, graph.AttrBool(v))
		case int:
			nb.SetAttr(k, graph.AttrInt(int64(v)))
		case string:
			nb.SetAttr(k, graph.AttrString(v))
		case []int64:
			nb.SetAttr(k, graph.AttrIntList(v))
		default:
			b.t.Fatalf("attr %s: unsupported %T", k, v)
		}
	}
	n, err := nb.Finish()
	if err != nil {
		b.t.Fatalf("node %s: %v", name, err)
	}
	return n.Output(0)
}

func (b *gb) placeholder(name string, s tensor.PartialShape) graph.Output {
	return b.op("Placeholder", name, map[string]any{"dtype": tensor.Float, "shape": s})
}

func (b *gb) constant(name string, t *tensor.Tensor) graph.Output {
	return b.op("Const", name, map[string]any{"dtype": t.DType, "value": t})
}

func (b *gb) matmul(name string, x, y graph.Output) graph.Output {
	return b.op("MatMul", name, nil, x, y)
}

func (b *gb) add(name string, x, y graph.Output) graph.Output { return b.op("AddV2", name, nil, x, y) }
func (b *gb) relu(name string, x graph.Output) graph.Output   { return b.op("Relu", name, nil, x) }
