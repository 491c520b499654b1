package grad_test

import (
	"bytes"
	_ "embed"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"mstream/grad"
	"mstream/graph"
	_ "mstream/kernels/cpu"
	"mstream/proto/pbparse"
	"mstream/proto/tfpb"
	"mstream/session"
	"mstream/status"
	"mstream/tensor"
)

// cb builds one case's forward graph: float64 placeholders with random
// feeds (the xs), constants, and ops through the graph package.
type cb struct {
	t      *testing.T
	g      *graph.Graph
	r      *rand.Rand
	feeds  []session.Feed
	xs, ys []graph.Output
	n      int
}

// xr is a float64 placeholder of shape with a random feed in [lo, hi).
func (c *cb) xr(lo, hi float64, shape ...int64) graph.Output {
	return c.xt(tensor.Double, lo, hi, shape...)
}

// xt is xr of dtype dt (float or double).
func (c *cb) xt(dt tensor.DType, lo, hi float64, shape ...int64) graph.Output {
	c.t.Helper()
	c.n++
	b := c.g.NewBuilder("Placeholder", fmt.Sprintf("x%d", c.n))
	b.SetAttr("dtype", graph.AttrType(dt))
	b.SetAttr("shape", graph.AttrShape(tensor.KnownShape(shape)))
	n, err := b.Finish()
	if err != nil {
		c.t.Fatal(err)
	}
	v := make([]float64, tensor.Shape(shape).NumElements())
	for i := range v {
		v[i] = lo + (hi-lo)*c.r.Float64()
	}
	t := tensor.FromF64(shape, v)
	if dt == tensor.Float {
		f := make([]float32, len(v))
		for i, x := range v {
			f[i] = float32(x)
		}
		t = tensor.FromF32(shape, f)
	}
	c.feeds = append(c.feeds, session.Feed{Output: n.Output(0), Tensor: t})
	c.xs = append(c.xs, n.Output(0))
	return n.Output(0)
}

func (c *cb) x(shape ...int64) graph.Output { return c.xr(-1, 1, shape...) }

func (c *cb) op(op string, attrs grad.A, ins ...any) graph.Output {
	return c.node(op, attrs, ins...).Output(0)
}

func (c *cb) node(op string, attrs grad.A, ins ...any) *graph.Node {
	c.t.Helper()
	c.n++
	b := c.g.NewBuilder(op, fmt.Sprintf("%s_%d", strings.ToLower(op), c.n))
	for _, in := range ins {
		switch v := in.(type) {
		case graph.Output:
			b.AddInput(v)
		case []graph.Output:
			b.AddInputList(v)
		}
	}
	for k, v := range attrs {
		b.SetAttr(k, v)
	}
	n, err := b.Finish()
	if err != nil {
		c.t.Fatalf("%s: %v", op, err)
	}
	return n
}

// tanhMul is a library function of two doubles: tanh(x) * y.
const tanhMul = `signature { name: "GradTestTanhMul" input_arg { name: "x" type: DT_DOUBLE } input_arg { name: "y" type: DT_DOUBLE }
  output_arg { name: "z" type: DT_DOUBLE } }
node_def { name: "t" op: "Tanh" input: "x" attr { key: "T" value { type: DT_DOUBLE } } }
node_def { name: "m" op: "Mul" input: "t:y:0" input: "y" attr { key: "T" value { type: DT_DOUBLE } } }
ret { key: "z" value: "m:z:0" }`

// call is a call of op (PartitionedCall or StatefulPartitionedCall) to
// tanhMul, added to the graph's library, over x and y.
func (c *cb) call(op string, x, y graph.Output) graph.Output {
	c.t.Helper()
	fd := &tfpb.FunctionDef{}
	if err := pbparse.Text("FunctionDef", "tanhMul", []byte(tanhMul), fd); err != nil {
		c.t.Fatal(err)
	}
	if err := c.g.AddFunction(fd); err != nil {
		c.t.Fatal(err)
	}
	f := &tfpb.AttrValue{Value: &tfpb.AttrValue_Func{Func: &tfpb.NameAttrList{Name: "GradTestTanhMul"}}}
	return c.op(op, grad.A{"Tin": graph.AttrTypeList([]tensor.DType{tensor.Double, tensor.Double}),
		"Tout": graph.AttrTypeList([]tensor.DType{tensor.Double}), "f": f}, []graph.Output{x, y})
}

func (c *cb) konst(t *tensor.Tensor) graph.Output {
	return c.op("Const", grad.A{"dtype": graph.AttrType(t.DType), "value": graph.AttrTensor(t)})
}

func (c *cb) i32(v ...int32) graph.Output {
	return c.konst(tensor.FromI32(tensor.Shape{int64(len(v))}, v))
}

// w is a random float64 constant: weights that make a sum-invariant
// output (Softmax) have a non-zero gradient.
func (c *cb) w(shape ...int64) graph.Output {
	v := make([]float64, tensor.Shape(shape).NumElements())
	for i := range v {
		v[i] = c.r.Float64()*2 - 1
	}
	return c.konst(tensor.FromF64(shape, v))
}

type gcase struct {
	name  string
	build func(c *cb)
	noFD  bool // finite differences are meaningless (a cast through float32)
}

var cases = []gcase{
	{"square chain", func(c *cb) { x := c.x(); y0 := c.op("Square", nil, x); c.ys = []graph.Output{c.op("Square", nil, y0)} }, false},
	{"two paths AddN", func(c *cb) {
		x := c.x(3)
		a := c.op("Mul", nil, x, x)
		c.ys = []graph.Output{c.op("AddN", nil, []graph.Output{a, c.op("Exp", nil, x), a})}
	}, false},
	{"add broadcast", func(c *cb) { c.ys = []graph.Output{c.op("AddV2", nil, c.x(3, 1, 4), c.x(2, 4))} }, false},
	{"sub broadcast", func(c *cb) { c.ys = []graph.Output{c.op("Square", nil, c.op("Sub", nil, c.x(4), c.x(3, 1)))} }, false},
	{"mul broadcast", func(c *cb) { c.ys = []graph.Output{c.op("Mul", nil, c.x(2, 3), c.x())} }, false},
	{"realdiv", func(c *cb) { c.ys = []graph.Output{c.op("RealDiv", nil, c.x(2, 3), c.xr(1, 2, 3))} }, false},
	{"maximum", func(c *cb) { c.ys = []graph.Output{c.op("Maximum", nil, c.x(4, 3), c.x(3))} }, false},
	{"minimum", func(c *cb) { c.ys = []graph.Output{c.op("Minimum", nil, c.x(4, 3), c.x(4, 1))} }, false},
	{"squared difference", func(c *cb) { c.ys = []graph.Output{c.op("SquaredDifference", nil, c.x(2, 3), c.x(3))} }, false},
	{"pow", func(c *cb) { c.ys = []graph.Output{c.op("Pow", nil, c.xr(0.5, 2, 2, 3), c.x(3))} }, false},
	{"partitioned call", func(c *cb) { c.ys = []graph.Output{c.call("PartitionedCall", c.x(2, 3), c.x(3))} }, false},
	{"stateful partitioned call", func(c *cb) {
		x := c.x(4)
		c.ys = []graph.Output{c.op("Square", nil, c.call("StatefulPartitionedCall", x, c.op("Exp", nil, x)))}
	}, false},
	{"unary chain", func(c *cb) {
		x := c.xr(0.5, 2, 5)
		y := c.op("Sqrt", nil, x)
		y = c.op("AddV2", nil, y, c.op("Rsqrt", nil, x))
		y = c.op("AddV2", nil, y, c.op("Log", nil, x))
		y = c.op("AddV2", nil, y, c.op("Reciprocal", nil, x))
		y = c.op("AddV2", nil, y, c.op("Neg", nil, c.op("Exp", nil, x)))
		c.ys = []graph.Output{y}
	}, false},
	{"matmul", func(c *cb) { c.ys = []graph.Output{c.op("MatMul", nil, c.x(3, 4), c.x(4, 2))} }, false},
	{"matmul ta", func(c *cb) {
		c.ys = []graph.Output{c.op("MatMul", grad.A{"transpose_a": graph.AttrBool(true)}, c.x(4, 3), c.x(4, 2))}
	}, false},
	{"matmul tb", func(c *cb) {
		c.ys = []graph.Output{c.op("MatMul", grad.A{"transpose_b": graph.AttrBool(true)}, c.x(3, 4), c.x(2, 4))}
	}, false},
	{"matmul ta tb", func(c *cb) {
		c.ys = []graph.Output{c.op("Square", nil, c.op("MatMul", grad.A{"transpose_a": graph.AttrBool(true), "transpose_b": graph.AttrBool(true)}, c.x(4, 3), c.x(2, 4)))}
	}, false},
	{"batchmatmul broadcast", func(c *cb) {
		c.ys = []graph.Output{c.op("Square", nil, c.op("BatchMatMulV2", grad.A{"adj_y": graph.AttrBool(true)}, c.x(2, 1, 3, 4), c.x(3, 5, 4)))}
	}, false},
	{"biasadd", func(c *cb) { c.ys = []graph.Output{c.op("Square", nil, c.op("BiasAdd", nil, c.x(2, 3, 4), c.x(4)))} }, false},
	{"activations", func(c *cb) {
		x := c.xr(-8, 8, 4, 6)
		y := c.op("Relu", nil, x)
		for _, op := range []string{"Relu6", "Elu", "Selu", "Softplus", "Sigmoid", "Tanh"} {
			y = c.op("AddV2", nil, y, c.op(op, nil, x))
		}
		y = c.op("AddV2", nil, y, c.op("LeakyRelu", grad.A{"alpha": graph.AttrFloat(0.3)}, x))
		c.ys = []graph.Output{c.op("Mul", nil, y, c.w(4, 6))}
	}, false},
	{"softmax", func(c *cb) { c.ys = []graph.Output{c.op("Mul", nil, c.op("Softmax", nil, c.x(3, 5)), c.w(3, 5))} }, false},
	{"logsoftmax", func(c *cb) { c.ys = []graph.Output{c.op("Mul", nil, c.op("LogSoftmax", nil, c.x(3, 5)), c.w(3, 5))} }, false},
	{"softmax xent", func(c *cb) {
		// Labels must be a distribution for backprop to be the gradient.
		n := c.node("SoftmaxCrossEntropyWithLogits", nil, c.x(4, 5), c.op("Softmax", nil, c.x(4, 5)))
		c.ys = []graph.Output{n.Output(0)}
	}, false},
	{"softmax xent both outputs", func(c *cb) {
		// TF passes no gradient from backprop to labels: they are constant.
		n := c.node("SoftmaxCrossEntropyWithLogits", nil, c.x(3, 4), c.op("Softmax", nil, c.w(3, 4)))
		c.ys = []graph.Output{n.Output(0), c.op("Mul", nil, n.Output(1), c.w(3, 4))}
	}, false},
	{"sparse softmax xent", func(c *cb) {
		n := c.node("SparseSoftmaxCrossEntropyWithLogits", nil, c.x(4, 5), c.i32(0, 4, 2, 2))
		c.ys = []graph.Output{c.op("Mul", nil, n.Output(0), c.w(4))}
	}, false},
	{"sum mean", func(c *cb) {
		x := c.x(2, 3, 4)
		s := c.op("Sum", nil, c.op("Square", nil, x), c.i32(1))
		m := c.op("Mean", grad.A{"keep_dims": graph.AttrBool(true)}, c.op("Exp", nil, x), c.i32(0, -1))
		c.ys = []graph.Output{c.op("Mul", nil, s, c.w(2, 4)), c.op("Mean", nil, c.op("Mul", nil, m, c.w(1, 3, 1)), c.i32(0, 1, 2))}
	}, false},
	{"reshape transpose", func(c *cb) {
		x := c.x(2, 3, 4)
		y := c.op("Transpose", nil, c.op("Reshape", nil, x, c.i32(6, 4)), c.i32(1, 0))
		c.ys = []graph.Output{c.op("Mul", nil, y, c.w(4, 6))}
	}, false},
	{"concat slice pad tile", func(c *cb) {
		a, b := c.x(2, 3), c.x(2, 2)
		y := c.op("ConcatV2", nil, []graph.Output{a, b, a}, c.konst(tensor.ScalarI32(-1)))
		y = c.op("Slice", nil, y, c.i32(0, 1), c.i32(2, 5))
		y = c.op("Pad", nil, y, c.konst(tensor.FromI32(tensor.Shape{2, 2}, []int32{1, 0, 2, 1})))
		y = c.op("Tile", nil, y, c.i32(2, 1))
		c.ys = []graph.Output{c.op("Mul", nil, y, c.w(6, 8))}
	}, false},
	{"space to batch and back", func(c *cb) {
		// The dilated convolution's lowering, and the 4-D forms.
		pads := c.konst(tensor.FromI32(tensor.Shape{2, 2}, []int32{2, 3, 2, 1}))
		s := c.op("SpaceToBatchND", nil, c.x(1, 7, 9, 2), c.i32(2, 2), pads)
		y := c.op("BatchToSpaceND", nil, c.op("Mul", nil, s, c.w(4, 6, 6, 2)), c.i32(2, 2), c.konst(tensor.FromI32(tensor.Shape{2, 2}, []int32{1, 2, 0, 3})))
		bs := grad.A{"block_size": graph.AttrInt(2)}
		z := c.op("BatchToSpace", bs, c.op("SpaceToBatch", bs, c.x(2, 3, 4, 1), c.konst(tensor.FromI32(tensor.Shape{2, 2}, []int32{1, 0, 0, 2}))),
			c.konst(tensor.FromI32(tensor.Shape{2, 2}, []int32{0, 1, 1, 1})))
		c.ys = []graph.Output{c.op("Mul", nil, y, c.w(1, 9, 9, 2)), c.op("Square", nil, z)}
	}, false},
	{"space to depth and back", func(c *cb) {
		bs := grad.A{"block_size": graph.AttrInt(2)}
		d := c.op("SpaceToDepth", bs, c.x(2, 4, 6, 3))
		s := c.op("DepthToSpace", bs, c.op("Mul", nil, d, c.w(2, 2, 3, 12)))
		c.ys = []graph.Output{c.op("Mul", nil, s, c.w(2, 4, 6, 3)), c.op("Square", nil, c.op("DepthToSpace", bs, c.x(1, 2, 2, 8)))}
	}, false},
	{"pack unpack expanddims", func(c *cb) {
		a, b := c.x(3), c.x(3)
		p := c.op("Pack", grad.A{"axis": graph.AttrInt(1)}, []graph.Output{a, b})
		u := c.node("Unpack", grad.A{"num": graph.AttrInt(3), "axis": graph.AttrInt(1)}, c.op("ExpandDims", nil, p, c.konst(tensor.ScalarI32(0))))
		c.ys = []graph.Output{c.op("Mul", nil, u.Output(0), c.w(3, 2)), c.op("Square", nil, u.Output(2))}
	}, false},
	{"identity cast", func(c *cb) {
		x := c.x(4)
		y := c.op("Cast", grad.A{"DstT": graph.AttrType(tensor.Float)}, c.op("Identity", nil, x))
		c.ys = []graph.Output{c.op("Square", nil, c.op("Cast", grad.A{"DstT": graph.AttrType(tensor.Double)}, y))}
	}, true},
	{"conv2d same stride 2", func(c *cb) {
		y := c.op("Conv2D", grad.A{"strides": graph.AttrIntList([]int64{1, 2, 2, 1}), "padding": graph.AttrString("SAME")}, c.x(2, 5, 6, 3), c.x(3, 2, 3, 4))
		c.ys = []graph.Output{c.op("Mul", nil, y, c.w(2, 3, 3, 4))}
	}, false},
	{"conv2d explicit", func(c *cb) {
		y := c.op("Conv2D", grad.A{"strides": graph.AttrIntList([]int64{1, 1, 2, 1}), "padding": graph.AttrString("EXPLICIT"),
			"explicit_paddings": graph.AttrIntList([]int64{0, 0, 1, 0, 2, 1, 0, 0})}, c.x(1, 4, 5, 2), c.x(2, 3, 2, 3))
		c.ys = []graph.Output{c.op("Square", nil, y)}
	}, false},
	{"depthwise", func(c *cb) {
		y := c.op("DepthwiseConv2dNative", grad.A{"strides": graph.AttrIntList([]int64{1, 2, 2, 1}), "padding": graph.AttrString("SAME")}, c.x(2, 5, 4, 3), c.x(2, 3, 3, 2))
		c.ys = []graph.Output{c.op("Mul", nil, y, c.w(2, 3, 2, 6))}
	}, false},
	{"maxpool avgpool", func(c *cb) {
		x := c.x(2, 5, 6, 3)
		a := grad.A{"ksize": graph.AttrIntList([]int64{1, 2, 3, 1}), "strides": graph.AttrIntList([]int64{1, 2, 2, 1}), "padding": graph.AttrString("SAME")}
		c.ys = []graph.Output{c.op("Mul", nil, c.op("MaxPool", a, x), c.w(2, 3, 3, 3)), c.op("Mul", nil, c.op("AvgPool", a, x), c.w(2, 3, 3, 3))}
	}, false},
	{"strided slice", func(c *cb) {
		y := c.op("StridedSlice", grad.A{"shrink_axis_mask": graph.AttrInt(1), "end_mask": graph.AttrInt(4)}, c.x(3, 6, 4), c.i32(1, 5, 1), c.i32(2, 0, 0), c.i32(1, -2, 1))
		c.ys = []graph.Output{c.op("Mul", nil, y, c.w(3, 3))}
	}, false},
	{"gather", func(c *cb) {
		y := c.op("GatherV2", nil, c.x(5, 3), c.konst(tensor.FromI32(tensor.Shape{2, 2}, []int32{4, 0, 4, 2})), c.konst(tensor.ScalarI32(0)))
		c.ys = []graph.Output{c.op("Mul", nil, y, c.w(2, 2, 3))}
	}, false},
	{"fused batch norm training", func(c *cb) {
		x := c.xt(tensor.Float, -2, 2, 2, 3, 2, 4)
		n := c.node("FusedBatchNormV3", grad.A{"epsilon": graph.AttrFloat(0.001)}, x, c.xt(tensor.Float, 0.5, 1.5, 4), c.xt(tensor.Float, -1, 1, 4),
			c.konst(tensor.FromF32(tensor.Shape{0}, nil)), c.konst(tensor.FromF32(tensor.Shape{0}, nil)))
		w := c.op("Cast", grad.A{"DstT": graph.AttrType(tensor.Float)}, c.w(2, 3, 2, 4))
		c.ys = []graph.Output{c.op("Mul", nil, n.Output(0), w)}
	}, true},
	{"fused batch norm inference", func(c *cb) {
		x := c.xt(tensor.Float, -2, 2, 2, 3, 2, 4)
		n := c.node("FusedBatchNormV3", grad.A{"epsilon": graph.AttrFloat(0.001), "is_training": graph.AttrBool(false)}, x, c.xt(tensor.Float, 0.5, 1.5, 4),
			c.xt(tensor.Float, -1, 1, 4), c.xt(tensor.Float, -1, 1, 4), c.xt(tensor.Float, 0.5, 1.5, 4))
		w := c.op("Cast", grad.A{"DstT": graph.AttrType(tensor.Float)}, c.w(2, 3, 2, 4))
		c.ys = []graph.Output{c.op("Mul", nil, n.Output(0), w)}
	}, true},
	{"l2loss", func(c *cb) { c.ys = []graph.Output{c.op("L2Loss", nil, c.op("Mul", nil, c.x(3, 4), c.w(3, 4)))} }, false},
	{"trigonometric", func(c *cb) {
		x, y := c.xr(-0.9, 0.9, 2, 3), c.xr(-3, 3, 2, 3)
		var sum graph.Output
		for _, op := range []string{"Sin", "Cos", "Tan", "Asin", "Acos", "Atan", "Atanh", "Erf", "Expm1", "Log1p", "Softsign", "Sign"} {
			t := c.op("Mul", nil, c.op(op, nil, x), c.w(2, 3))
			if sum.Node == nil {
				sum = t
			} else {
				sum = c.op("AddV2", nil, sum, t)
			}
		}
		for _, op := range []string{"Sinh", "Cosh", "Asinh"} {
			sum = c.op("AddV2", nil, sum, c.op("Mul", nil, c.op(op, nil, y), c.w(2, 3)))
		}
		sum = c.op("AddV2", nil, sum, c.op("Mul", nil, c.op("Acosh", nil, c.xr(1.5, 4, 2, 3)), c.w(2, 3)))
		c.ys = []graph.Output{sum}
	}, false},
	{"atan2 divnonan", func(c *cb) {
		a, b := c.x(3, 4), c.xr(0.5, 2, 3, 4)
		c.ys = []graph.Output{c.op("Mul", nil, c.op("Atan2", nil, a, c.x(3, 4)), c.w(3, 4)), c.op("Square", nil, c.op("DivNoNan", nil, a, b))}
	}, false},
	{"prod max min", func(c *cb) {
		x := c.xr(0.5, 1.5, 2, 3, 4)
		p := c.op("Prod", nil, x, c.i32(2, 0))
		m := c.op("Max", grad.A{"keep_dims": graph.AttrBool(true)}, c.x(3, 5), c.i32(1))
		n := c.op("Min", nil, c.x(4, 2), c.i32(0))
		c.ys = []graph.Output{c.op("Mul", nil, p, c.w(3)), c.op("Mul", nil, m, c.w(3, 1)), c.op("Mul", nil, n, c.w(2))}
	}, false},
	{"cumsum", func(c *cb) {
		y := c.op("Cumsum", grad.A{"exclusive": graph.AttrBool(true)}, c.x(3, 4), c.konst(tensor.ScalarI32(1)))
		z := c.op("Cumsum", grad.A{"reverse": graph.AttrBool(true)}, c.x(5), c.konst(tensor.ScalarI32(0)))
		c.ys = []graph.Output{c.op("Mul", nil, y, c.w(3, 4)), c.op("Mul", nil, z, c.w(5))}
	}, false},
	{"select clip", func(c *cb) {
		cond := c.konst(tensor.FromBool(tensor.Shape{2, 3}, []bool{true, false, true, false, false, true}))
		s := c.op("Select", nil, cond, c.x(2, 3), c.x(2, 3))
		v2 := c.op("SelectV2", nil, c.konst(tensor.FromBool(tensor.Shape{3}, []bool{false, true, true})), c.x(2, 3), c.x(2, 1))
		clip := c.op("ClipByValue", nil, c.xr(-2, 2, 3, 4), c.xr(-1, -0.5, 3, 4), c.xr(0.5, 1))
		c.ys = []graph.Output{c.op("Mul", nil, s, c.w(2, 3)), c.op("Mul", nil, v2, c.w(2, 3)), c.op("Mul", nil, clip, c.w(3, 4))}
	}, false},
	{"segments stitch", func(c *cb) {
		seg := c.op("UnsortedSegmentSum", nil, c.x(5, 2), c.i32(2, -1, 0, 2, 3), c.konst(tensor.ScalarI32(4)))
		st := c.op("DynamicStitch", nil, []graph.Output{c.i32(0, 3), c.i32(1, 2)}, []graph.Output{c.x(2, 3), c.x(2, 3)})
		c.ys = []graph.Output{c.op("Mul", nil, seg, c.w(4, 2)), c.op("Mul", nil, st, c.w(4, 3))}
	}, false},
	{"gathernd scatternd", func(c *cb) {
		idx := c.konst(tensor.FromI32(tensor.Shape{3, 2}, []int32{0, 1, 2, 0, 0, 1}))
		g := c.op("GatherNd", nil, c.x(3, 2, 4), idx)
		s := c.op("ScatterNd", nil, idx, c.x(3, 4), c.i32(3, 2, 4))
		c.ys = []graph.Output{c.op("Mul", nil, g, c.w(3, 4)), c.op("Mul", nil, s, c.w(3, 2, 4))}
	}, false},
	{"broadcastto reverse fill band", func(c *cb) {
		bt := c.op("BroadcastTo", nil, c.x(3, 1), c.i32(2, 3, 4))
		rv := c.op("ReverseV2", nil, c.x(3, 4), c.i32(1))
		fl := c.op("Fill", nil, c.i32(2, 3), c.x())
		bd := c.op("MatrixBandPart", nil, c.x(4, 4), c.konst(tensor.ScalarI32(1)), c.konst(tensor.ScalarI32(0)))
		c.ys = []graph.Output{c.op("Mul", nil, bt, c.w(2, 3, 4)), c.op("Mul", nil, rv, c.w(3, 4)), c.op("Mul", nil, fl, c.w(2, 3)), c.op("Mul", nil, bd, c.w(4, 4))}
	}, false},
	{"conv2d backprop input, leaky relu grad", func(c *cb) {
		a := grad.A{"strides": graph.AttrIntList([]int64{1, 2, 2, 1}), "padding": graph.AttrString("SAME")}
		y := c.op("Conv2DBackpropInput", a, c.i32(2, 5, 6, 3), c.x(3, 2, 3, 4), c.x(2, 3, 3, 4))
		l := c.op("LeakyReluGrad", grad.A{"alpha": graph.AttrFloat(0.25)}, c.x(3, 4), c.x(3, 4))
		c.ys = []graph.Output{c.op("Mul", nil, y, c.w(2, 5, 6, 3)), c.op("Mul", nil, l, c.w(3, 4))}
	}, false},
}

// run evaluates outs of c's graph with c's feeds, each x replaced by
// over; a NoGradient (zero) entry of outs gives nil.
func run(t *testing.T, s *session.Session, c *cb, outs []graph.Output, over map[int]*tensor.Tensor) []*tensor.Tensor {
	t.Helper()
	feeds := append([]session.Feed(nil), c.feeds...)
	for i, v := range over {
		feeds[i].Tensor = v
	}
	var fetch []graph.Output
	for _, o := range outs {
		if o.Node != nil {
			fetch = append(fetch, o)
		}
	}
	got, _, err := s.Run(nil, feeds, fetch, nil)
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	res := make([]*tensor.Tensor, len(outs))
	for i, o := range outs {
		if o.Node != nil {
			res[i], got = got[0], got[1:]
		}
	}
	return res
}

func sumAll(ts []*tensor.Tensor) float64 {
	var s float64
	for _, t := range ts {
		for _, v := range t.F64() {
			s += v
		}
	}
	return s
}

type built struct {
	c     *cb
	gd    []byte
	grads []graph.Output
	vals  []*tensor.Tensor
}

func buildCase(t *testing.T, gc gcase, seed int64) *built {
	c := &cb{t: t, g: graph.New(), r: rand.New(rand.NewSource(seed))}
	gc.build(c)
	gd, err := proto.Marshal(c.g.ToGraphDef())
	if err != nil {
		t.Fatal(err)
	}
	grads, err := grad.AddGradients(c.g, "", c.ys, c.xs, nil)
	if err != nil {
		t.Fatalf("AddGradients: %v", err)
	}
	return &built{c: c, gd: gd, grads: grads}
}

// TestFiniteDifferences checks every case's gradients against central
// differences of sum(ys) in float64.
func TestFiniteDifferences(t *testing.T) {
	for i, gc := range cases {
		if gc.noFD {
			continue
		}
		t.Run(gc.name, func(t *testing.T) {
			b := buildCase(t, gc, int64(i)+1)
			s, err := session.New(b.c.g, &session.Options{Env: map[string]string{}})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			got := run(t, s, b.c, b.grads, nil)
			const h = 1e-5
			for xi, f := range b.c.feeds {
				base := f.Tensor.F64()
				for j := range base {
					plus, minus := append([]float64(nil), base...), append([]float64(nil), base...)
					plus[j] += h
					minus[j] -= h
					fp := sumAll(run(t, s, b.c, b.c.ys, map[int]*tensor.Tensor{xi: tensor.FromF64(f.Tensor.Shape, plus)}))
					fm := sumAll(run(t, s, b.c, b.c.ys, map[int]*tensor.Tensor{xi: tensor.FromF64(f.Tensor.Shape, minus)}))
					want := (fp - fm) / (2 * h)
					g := 0.0 // NoGradient: the derivative must be zero
					if got[xi] != nil {
						g = got[xi].F64()[j]
					}
					if math.Abs(g-want) > 1e-5*math.Max(1, math.Abs(want)) {
						t.Errorf("d/d%s[%d]: got %.9g, finite difference %.9g", f.Output, j, g, want)
					}
				}
			}
		})
	}
}

// tfPython is a Python with TensorFlow 2.15 (KERNELTEST_TF, as the kernel
// conformance suite's oracle; test/tforacle/run.sh sets it).
var tfPython = os.Getenv("KERNELTEST_TF")

//go:embed testdata/tfgrad.py
var tfgradScript []byte

// TestAgainstTF compares every case's gradients with tf.gradients on the
// same GraphDef in real TF (TF's Python gradient functions, an independent
// implementation of the same formulas).
func TestAgainstTF(t *testing.T) {
	if tfPython == "" {
		t.Skip("KERNELTEST_TF is not set (test/tforacle/run.sh runs this against TF)")
	}
	type req struct {
		Graph string            `json:"graph"`
		Feeds map[string]string `json:"feeds"`
		Ys    []string          `json:"ys"`
		Xs    []string          `json:"xs"`
	}
	var reqs []req
	var bs []*built
	for i, gc := range cases {
		b := buildCase(t, gc, int64(i)+1)
		r := req{Graph: base64.StdEncoding.EncodeToString(b.gd), Feeds: map[string]string{}}
		for _, f := range b.c.feeds {
			p, _ := proto.Marshal(tensor.ToProto(f.Tensor))
			r.Feeds[f.Output.Node.Name+":0"] = base64.StdEncoding.EncodeToString(p)
		}
		for _, y := range b.c.ys {
			r.Ys = append(r.Ys, fmt.Sprintf("%s:%d", y.Node.Name, y.Index))
		}
		for _, x := range b.c.xs {
			r.Xs = append(r.Xs, fmt.Sprintf("%s:%d", x.Node.Name, x.Index))
		}
		reqs = append(reqs, r)
		bs = append(bs, b)
	}
	dir := t.TempDir()
	in, _ := json.Marshal(reqs)
	if err := os.WriteFile(filepath.Join(dir, "in.json"), in, 0o644); err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(dir, "tfgrad.py")
	if err := os.WriteFile(script, tfgradScript, 0o644); err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd := exec.Command(tfPython, script, filepath.Join(dir, "in.json"), filepath.Join(dir, "out.json"))
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("TF: %v\n%s", err, stderr.String())
	}
	raw, err := os.ReadFile(filepath.Join(dir, "out.json"))
	if err != nil {
		t.Fatal(err)
	}
	var res []json.RawMessage
	if err := json.Unmarshal(raw, &res); err != nil {
		t.Fatal(err)
	}
	compared := 0
	for i, b := range bs {
		t.Run(cases[i].name, func(t *testing.T) {
			var tfv []*string
			if err := json.Unmarshal(res[i], &tfv); err != nil {
				t.Fatalf("TF failed: %s", res[i])
			}
			s, err := session.New(b.c.g, &session.Options{Env: map[string]string{}})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			got := run(t, s, b.c, b.grads, nil)
			for j, v := range tfv {
				if v == nil {
					if b.grads[j].Node != nil {
						t.Errorf("x%d: TF has no gradient, mstream has %s", j, b.grads[j])
					}
					continue
				}
				p, _ := base64.StdEncoding.DecodeString(*v)
				var tp tfpb.TensorProto
				if err := proto.Unmarshal(p, &tp); err != nil {
					t.Fatal(err)
				}
				want, err := tensor.FromProto(&tp)
				if err != nil {
					t.Fatal(err)
				}
				if !got[j].Shape.Equal(want.Shape) {
					t.Errorf("x%d: shape %v, TF %v", j, got[j].Shape, want.Shape)
					continue
				}
				tol := 1e-9
				if want.DType == tensor.Float {
					tol = 2e-5
				}
				for k := 0; k < int(want.NumElements()); k++ {
					g, w := got[j].ElementF64(k), want.ElementF64(k)
					if math.Abs(g-w) > tol*math.Max(1, math.Abs(w)) {
						t.Errorf("x%d[%d]: got %.12g, TF %.12g", j, k, g, w)
						break
					}
				}
				compared++
			}
		})
	}
	t.Logf("%d gradients of %d cases compared with TF", compared, len(cases))
}

// TestErrors checks the failures TF reports, with TF's codes.
func TestErrors(t *testing.T) {
	c := &cb{t: t, g: graph.New(), r: rand.New(rand.NewSource(1))}
	x := c.x(3)
	y := c.op("Cumprod", nil, x, c.konst(tensor.ScalarI32(0)))
	_, err := grad.AddGradients(c.g, "", []graph.Output{y}, []graph.Output{x}, nil)
	if status.CodeOf(err) != status.NotFound || !strings.Contains(err.Error(), "No gradient defined for op: Cumprod") {
		t.Errorf("no gradient function: %v", err)
	}
	other := c.x(2)
	_, err = grad.AddGradients(c.g, "", []graph.Output{c.op("Square", nil, x)}, []graph.Output{other}, nil)
	if status.CodeOf(err) != status.InvalidArgument || !strings.Contains(err.Error(), "unreachable") {
		t.Errorf("unreachable x: %v", err)
	}
	sq := c.op("Square", nil, x)
	if _, err := grad.AddGradients(c.g, "mine", []graph.Output{sq}, []graph.Output{x}, nil); err != nil {
		t.Fatal(err)
	}
	_, err = grad.AddGradients(c.g, "mine", []graph.Output{sq}, []graph.Output{x}, nil)
	if status.CodeOf(err) != status.InvalidArgument || !strings.Contains(err.Error(), "prefix [mine] conflicts") {
		t.Errorf("reused prefix: %v", err)
	}
}
