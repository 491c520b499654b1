package gdb

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand"

	"mstream/proto/tfpb"
)

// Common dtypes.
const (
	F32 = tfpb.DataType_DT_FLOAT
	I32 = tfpb.DataType_DT_INT32
)

// B builds one GraphDef; R draws the weights.
type B struct {
	G *tfpb.GraphDef
	R *rand.Rand
}

// New starts a GraphDef with TF 2.15's producer version and a seeded source.
func New(seed int64) *B {
	return &B{G: &tfpb.GraphDef{Versions: &tfpb.VersionDef{Producer: 1645}}, R: rand.New(rand.NewSource(seed))}
}

// Attr constructors.
func Type(t tfpb.DataType) *tfpb.AttrValue {
	return &tfpb.AttrValue{Value: &tfpb.AttrValue_Type{Type: t}}
}
func Int(i int64) *tfpb.AttrValue     { return &tfpb.AttrValue{Value: &tfpb.AttrValue_I{I: i}} }
func Bool(b bool) *tfpb.AttrValue     { return &tfpb.AttrValue{Value: &tfpb.AttrValue_B{B: b}} }
func Float(f float32) *tfpb.AttrValue { return &tfpb.AttrValue{Value: &tfpb.AttrValue_F{F: f}} }
func Str(s string) *tfpb.AttrValue    { return &tfpb.AttrValue{Value: &tfpb.AttrValue_S{S: []byte(s)}} }
func Ints(v ...int64) *tfpb.AttrValue {
	return &tfpb.AttrValue{Value: &tfpb.AttrValue_List{List: &tfpb.AttrValue_ListValue{I: v}}}
}

// Shape is a TensorShapeProto; -1 is an unknown dimension.
func Shape(dims ...int64) *tfpb.TensorShapeProto {
	s := &tfpb.TensorShapeProto{}
	for _, d := range dims {
		s.Dim = append(s.Dim, &tfpb.TensorShapeProto_Dim{Size: d})
	}
	return s
}

// Attrs is an attr map.
type Attrs = map[string]*tfpb.AttrValue

// Add appends a node and returns its name.
func (b *B) Add(name, op string, in []string, attrs Attrs) string {
	b.G.Node = append(b.G.Node, &tfpb.NodeDef{Name: name, Op: op, Input: in, Attr: attrs})
	return name
}

// Placeholder adds a Placeholder of dtype t and shape dims.
func (b *B) Placeholder(name string, t tfpb.DataType, dims ...int64) string {
	return b.Add(name, "Placeholder", nil, Attrs{"dtype": Type(t), "shape": {Value: &tfpb.AttrValue_Shape{Shape: Shape(dims...)}}})
}

// Const adds a Const holding t.
func (b *B) Const(name string, t *tfpb.TensorProto) string {
	return b.Add(name, "Const", nil, Attrs{"dtype": Type(t.Dtype), "value": {Value: &tfpb.AttrValue_Tensor{Tensor: t}}})
}

// Int32s adds an int32 Const of shape dims (a scalar when dims is empty).
func (b *B) Int32s(name string, v []int32, dims ...int64) string {
	return b.Const(name, &tfpb.TensorProto{Dtype: I32, TensorShape: Shape(dims...), IntVal: v})
}

// Scalar adds a float32 scalar Const.
func (b *B) Scalar(name string, v float32) string {
	return b.Const(name, &tfpb.TensorProto{Dtype: F32, TensorShape: Shape(), FloatVal: []float32{v}})
}

// Weights adds a float32 Const of normal draws times scale, plus offset.
func (b *B) Weights(name string, scale, offset float64, dims ...int64) string {
	n := int64(1)
	for _, d := range dims {
		n *= d
	}
	buf := make([]byte, 4*n)
	for i := int64(0); i < n; i++ {
		binary.LittleEndian.PutUint32(buf[4*i:], math.Float32bits(float32(b.R.NormFloat64()*scale+offset)))
	}
	return b.Const(name, &tfpb.TensorProto{Dtype: F32, TensorShape: Shape(dims...), TensorContent: buf})
}

// Unary adds a float32 op with one input and attr T.
func (b *B) Unary(name, op, x string) string {
	return b.Add(name, op, []string{x}, Attrs{"T": Type(F32)})
}

// Binary adds a float32 op with two inputs and attr T.
func (b *B) Binary(name, op, x, y string) string {
	return b.Add(name, op, []string{x, y}, Attrs{"T": Type(F32)})
}

// Dense adds MatMul+BiasAdd(+Relu) layers through sizes, He-scaled; the last
// layer has a Relu only when lastRelu.
func (b *B) Dense(prefix, x string, sizes []int64, lastRelu bool) string {
	for i := 0; i+1 < len(sizes); i++ {
		p := fmt.Sprintf("%s/dense_%d", prefix, i)
		w := b.Weights(p+"/kernel", math.Sqrt(2/float64(sizes[i])), 0, sizes[i], sizes[i+1])
		bias := b.Weights(p+"/bias", 0.01, 0, sizes[i+1])
		x = b.Add(p+"/MatMul", "MatMul", []string{x, w}, Attrs{"T": Type(F32), "transpose_a": Bool(false), "transpose_b": Bool(false)})
		x = b.Add(p+"/BiasAdd", "BiasAdd", []string{x, bias}, Attrs{"T": Type(F32), "data_format": Str("NHWC")})
		if i+2 < len(sizes) || lastRelu {
			x = b.Unary(p+"/Relu", "Relu", x)
		}
	}
	return x
}
