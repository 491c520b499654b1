package optimize_test

import (
	"math"
	"math/rand"
	"testing"

	"mstream/graph"
	"mstream/kernels"
	"mstream/optimize"
	"mstream/optimize/fusiontest"
	"mstream/proto/tfpb"
	"mstream/tensor"
)

// tensordot builds Keras' Dense over a [2, 3, 8] input as it exports
// (Tensordot): x -> Reshape [-1, 8] -> MatMul by a [8, 16] kernel ->
// Reshape to shape -> BiasAdd -> dense/act, a Relu or (gelu) the exact
// GELU as Keras exports it; shape(b, x) gives the second Reshape's shape
// operand. With transposeB the kernel is [16, 8].
func tensordot(t *testing.T, shape func(b *gb, x graph.Output) graph.Output, bias int64, transposeB, gelu bool) (*gb, []string) {
	b := &gb{t: t, g: graph.New(), r: rand.New(rand.NewSource(7))}
	x := b.placeholder("x", 2, 3, 8)
	flat := b.op("Reshape", "dense/Tensordot/Reshape", nil, x, b.op("Const", "dense/Tensordot/stack", map[string]*tfpb.AttrValue{
		"dtype": graph.AttrType(tensor.Int32), "value": graph.AttrTensor(int32s(-1, 8))}))
	var w graph.Output
	var attrs map[string]*tfpb.AttrValue
	if !transposeB {
		w = b.weights("dense/kernel", -1, 1, 8, 16)
	} else {
		w = b.weights("dense/kernel", -1, 1, 16, 8)
		attrs = map[string]*tfpb.AttrValue{"transpose_b": graph.AttrBool(true)}
	}
	w = b.op("Identity", "dense/Tensordot/ReadVariableOp", nil, w)
	mm := b.op("MatMul", "dense/Tensordot/MatMul", attrs, flat, w)
	d := b.op("Reshape", "dense/Tensordot", nil, mm, shape(b, x))
	d = b.op("BiasAdd", "dense/BiasAdd", nil, d, b.weights("dense/bias", -1, 1, bias))
	if !gelu {
		b.op("Relu", "dense/act", nil, d)
		return b, []string{"dense/act"}
	}
	e := b.op("Erf", "gelu/Erf", nil, b.op("RealDiv", "gelu/truediv", nil, d, b.scalar("gelu/sqrt2", float32(math.Sqrt2))))
	h := b.op("Mul", "gelu/half", nil, b.scalar("gelu/half/x", 0.5), d)
	b.op("Mul", "dense/act", nil, h, b.op("AddV2", "gelu/add", nil, b.scalar("gelu/one", 1), e))
	return b, []string{"dense/act"}
}

func constShape(v ...int32) func(*gb, graph.Output) graph.Output {
	return func(b *gb, _ graph.Output) graph.Output {
		return b.op("Const", "dense/Tensordot/shape", map[string]*tfpb.AttrValue{
			"dtype": graph.AttrType(tensor.Int32), "value": graph.AttrTensor(int32s(v...))})
	}
}

// kerasShape is Tensordot's own: the input's free dimensions (from its
// run-time Shape; those at the indices free) concatenated with a Const
// [last].
func kerasShape(last int32, free ...int32) func(*gb, graph.Output) graph.Output {
	if free == nil {
		free = []int32{0, 1}
	}
	return func(b *gb, x graph.Output) graph.Output {
		i32 := func(name string, v ...int32) graph.Output {
			return b.op("Const", name, map[string]*tfpb.AttrValue{"dtype": graph.AttrType(tensor.Int32), "value": graph.AttrTensor(int32s(v...))})
		}
		s := b.op("Shape", "dense/Tensordot/Shape", nil, x)
		dims := b.op("GatherV2", "dense/Tensordot/GatherV2", nil, s, i32("dense/Tensordot/free", free...), i32("dense/Tensordot/GatherV2/axis", 0))
		axis := b.op("Const", "dense/Tensordot/concat_1/axis", map[string]*tfpb.AttrValue{
			"dtype": graph.AttrType(tensor.Int32), "value": graph.AttrTensor(tensor.ScalarI32(0))})
		nb := b.g.NewBuilder("ConcatV2", "dense/Tensordot/concat_1")
		nb.AddInputList([]graph.Output{dims, i32("dense/Tensordot/Const_2", last)})
		nb.AddInput(axis)
		n, err := nb.Finish()
		if err != nil {
			b.t.Fatal(err)
		}
		return n.Output(0)
	}
}

// TestTensordotBiasAdd: MatMul -> Reshape -> BiasAdd (+Relu or GELU) becomes
// _FusedMatMul -> Reshape exactly when the Reshape keeps the MatMul's rows
// (its shape's last element is a constant equal to the MatMul's columns)
// and nothing else reads the MatMul or the Reshape; the outputs agree with
// the unrewritten graph's either way.
func TestTensordotBiasAdd(t *testing.T) {
	for _, c := range []struct {
		name       string
		shape      func(*gb, graph.Output) graph.Output
		bias       int64
		transposeB bool
		gelu       bool
		fetches    []string // besides dense/act
		fuse       bool
	}{
		{name: "const shape", shape: constShape(2, 3, 16), bias: 16, fuse: true},
		{name: "const shape -1", shape: constShape(-1, 3, 16), bias: 16, fuse: true},
		{name: "keras shape", shape: kerasShape(16), bias: 16, fuse: true},
		{name: "transpose_b", shape: kerasShape(16), bias: 16, transposeB: true, fuse: true},
		{name: "gelu", shape: kerasShape(16), bias: 16, gelu: true, fuse: true},
		{name: "last dim differs", shape: constShape(2, 6, 8), bias: 8},
		{name: "keras shape, last dim differs", shape: kerasShape(48, 0), bias: 48},
		{name: "shape not constant", shape: func(b *gb, x graph.Output) graph.Output {
			return b.op("Shape", "dense/Tensordot/shape", nil, b.placeholder("y", 2, 3, 16))
		}, bias: 16},
		{name: "reshape fetched", shape: kerasShape(16), bias: 16, fetches: []string{"dense/Tensordot"}},
		{name: "matmul fetched", shape: kerasShape(16), bias: 16, fetches: []string{"dense/Tensordot/MatMul"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			b, fetches := tensordot(t, c.shape, c.bias, c.transposeB, c.gelu)
			fetches = append(fetches, c.fetches...)
			feeds := []string{"x"}
			in := map[string]*tensor.Tensor{"x": fusiontest.Random(b.r, tensor.Float, tensor.Shape{2, 3, 8})}
			if b.g.Lookup("y") != nil {
				feeds = append(feeds, "y")
				in["y"] = fusiontest.Random(b.r, tensor.Float, tensor.Shape{2, 3, 16})
			}
			res := rewrite(b, feeds, fetches)
			nodes := fusedOps(res)
			act, mm := nodes["dense/act"], nodes["dense/Tensordot/MatMul"]
			if c.fuse {
				if res.Fused != 1 || act == nil || act.Op != "Reshape" || mm == nil || mm.Op != "_FusedMatMul" || act.Inputs[0].Node != mm {
					t.Fatalf("%d fusions; dense/act = %v, dense/Tensordot/MatMul = %v", res.Fused, act, mm)
				}
				want := map[bool]string{false: "Relu", true: "GeluExact"}[c.gelu]
				if ops := mm.Attrs["fused_ops"].GetList().GetS(); len(ops) != 2 || string(ops[1]) != want {
					t.Errorf("fused_ops %q, want BiasAdd,%s", ops, want)
				}
				for _, gone := range []string{"dense/Tensordot", "dense/BiasAdd"} {
					if nodes[gone] != nil {
						t.Errorf("%s is still in the rewritten plan", gone)
					}
				}
			} else if res.Fused != 0 || (mm != nil && mm.Op != "MatMul") {
				t.Fatalf("fused %d patterns, dense/Tensordot/MatMul = %v; want none", res.Fused, mm)
			}
			if n := fusiontest.Compare(t, b.g, in, fetches, 1e-5); (n > 0) != c.fuse {
				t.Errorf("the session's plan has %d fusions, want fusion %v", n, c.fuse)
			}
		})
	}
}

func init() {
	kernels.Register(kernels.Def{Op: "Reshape", Device: testDevice, Factory: func(*graph.Node) (kernels.Kernel, error) {
		return kernels.KernelFunc(func(*kernels.Context) error { return nil }), nil
	}})
}

// TestTensordotActivationRefused: where a device refuses the activation,
// MatMul -> Reshape -> BiasAdd still fuses and the Relu reads its Reshape.
func TestTensordotActivationRefused(t *testing.T) {
	b, fetches := tensordot(t, kerasShape(16), 16, false, false)
	var res optimize.Result
	func() {
		b.g.RLock()
		defer b.g.RUnlock()
		res = optimize.Rewrite(outputs(t, b.g, "x"), outputs(t, b.g, fetches...), nil, optimize.Options{Devices: []string{"CPU", testDevice}, Passes: optimize.Remap})
	}()
	nodes := fusedOps(res)
	relu, rs, mm := nodes["dense/act"], nodes["dense/BiasAdd"], nodes["dense/Tensordot/MatMul"]
	if res.Fused != 1 || relu == nil || relu.Op != "Relu" || rs == nil || rs.Op != "Reshape" || relu.Inputs[0].Node != rs ||
		mm == nil || mm.Op != "_FusedMatMul" || len(mm.Attrs["fused_ops"].GetList().GetS()) != 1 {
		t.Fatalf("%d fusions; dense/act = %v, dense/BiasAdd = %v, MatMul = %v", res.Fused, relu, rs, mm)
	}
}
