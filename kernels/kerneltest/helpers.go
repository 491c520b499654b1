package kerneltest

import (
	"math/rand"

	"mstream/proto/tfpb"
	"mstream/tensor"
)

// Attr constructors for Case nodes.
func AType(dt tensor.DType) *tfpb.AttrValue {
	return &tfpb.AttrValue{Value: &tfpb.AttrValue_Type{Type: tfpb.DataType(dt)}}
}
func ABool(b bool) *tfpb.AttrValue     { return &tfpb.AttrValue{Value: &tfpb.AttrValue_B{B: b}} }
func AInt(i int64) *tfpb.AttrValue     { return &tfpb.AttrValue{Value: &tfpb.AttrValue_I{I: i}} }
func AFloat(f float32) *tfpb.AttrValue { return &tfpb.AttrValue{Value: &tfpb.AttrValue_F{F: f}} }
func AStr(s string) *tfpb.AttrValue    { return &tfpb.AttrValue{Value: &tfpb.AttrValue_S{S: []byte(s)}} }
func AInts(v ...int64) *tfpb.AttrValue {
	return &tfpb.AttrValue{Value: &tfpb.AttrValue_List{List: &tfpb.AttrValue_ListValue{I: v}}}
}
func AFloats(v ...float32) *tfpb.AttrValue {
	return &tfpb.AttrValue{Value: &tfpb.AttrValue_List{List: &tfpb.AttrValue_ListValue{F: v}}}
}
func ATypes(v ...tensor.DType) *tfpb.AttrValue {
	l := make([]tfpb.DataType, len(v))
	for i, d := range v {
		l[i] = tfpb.DataType(d)
	}
	return &tfpb.AttrValue{Value: &tfpb.AttrValue_List{List: &tfpb.AttrValue_ListValue{Type: l}}}
}
func AShape(s tensor.Shape) *tfpb.AttrValue {
	return &tfpb.AttrValue{Value: &tfpb.AttrValue_Shape{Shape: tensor.ShapeToProto(tensor.KnownShape(s))}}
}

// Attrs is a shorthand for an attr map.
type Attrs = map[string]*tfpb.AttrValue

// FloatTypes, IntTypes and NumericTypes are the usual dtype sets.
var (
	FloatTypes   = []tensor.DType{tensor.Float, tensor.Double, tensor.Half, tensor.Bfloat16}
	IntTypes     = []tensor.DType{tensor.Int32, tensor.Int64, tensor.Uint8, tensor.Int8, tensor.Int16}
	NumericTypes = append(append([]tensor.DType{}, FloatTypes...), IntTypes...)
)

// Rand returns a tensor of dt and shape with random, never all-zero values:
// floats ~ N(0, scale^2), integers uniform in [-16, 16) (unsigned [0, 32)),
// bools fair coins. Values are exactly representable in dt.
func Rand(r *rand.Rand, dt tensor.DType, shape tensor.Shape) *tensor.Tensor {
	return RandRange(r, dt, shape, -3, 3)
}

// RandRange draws floats uniformly in [lo, hi) and integers in [ceil(lo), hi)
// (clamped at 0 for unsigned dtypes; an empty integer range gives lo).
func RandRange(r *rand.Rand, dt tensor.DType, shape tensor.Shape, lo, hi float64) *tensor.Tensor {
	t := tensor.New(dt, shape)
	n := int(t.NumElements())
	ilo, ihi := int64(lo), int64(hi)
	if dt.IsInteger() && !signed(dt) && ilo < 0 {
		ilo = 0
		if ihi <= 0 {
			ihi = 32
		}
	}
	if dt.IsInteger() && ihi-ilo < 2 {
		ihi = ilo + 2
	}
	for i := 0; i < n; i++ {
		f := lo + r.Float64()*(hi-lo)
		var iv int64
		if ihi > ilo { // a float range inside (0, 1) has no integers
			iv = ilo + r.Int63n(ihi-ilo)
		}
		switch dt {
		case tensor.Float:
			t.F32()[i] = float32(f)
		case tensor.Double:
			t.F64()[i] = f
		case tensor.Half:
			t.U16()[i] = tensor.F32ToHalf(float32(f))
		case tensor.Bfloat16:
			t.U16()[i] = tensor.F32ToBfloat16(float32(f))
		case tensor.Int32:
			t.I32()[i] = int32(iv)
		case tensor.Int64:
			t.I64()[i] = iv
		case tensor.Int16:
			t.I16()[i] = int16(iv)
		case tensor.Int8:
			t.I8()[i] = int8(iv)
		case tensor.Uint8:
			t.U8()[i] = uint8(iv)
		case tensor.Uint16:
			t.U16()[i] = uint16(iv)
		case tensor.Uint32:
			t.U32()[i] = uint32(iv)
		case tensor.Uint64:
			t.U64()[i] = uint64(iv)
		case tensor.Bool:
			t.Bools()[i] = r.Intn(2) == 1
		case tensor.String:
			b := make([]byte, r.Intn(12))
			for j := range b {
				b[j] = byte(r.Intn(256))
			}
			t.Strs[i] = b
		default:
			panic("kerneltest: no random values for " + dt.String())
		}
	}
	return t
}

func signed(dt tensor.DType) bool {
	switch dt {
	case tensor.Uint8, tensor.Uint16, tensor.Uint32, tensor.Uint64:
		return false
	}
	return true
}

// FromF64 builds a tensor of dt from float64 values, rounding and
// converting as a cast would (used for references computed in float64).
func FromF64(dt tensor.DType, shape tensor.Shape, v []float64) *tensor.Tensor {
	t := tensor.New(dt, shape)
	for i, f := range v {
		SetF64(t, i, f)
	}
	return t
}

// SetF64 stores f into element i of t, converting to t's dtype.
func SetF64(t *tensor.Tensor, i int, f float64) {
	switch t.DType {
	case tensor.Float:
		t.F32()[i] = float32(f)
	case tensor.Double:
		t.F64()[i] = f
	case tensor.Half:
		t.U16()[i] = tensor.F32ToHalf(float32(f))
	case tensor.Bfloat16:
		t.U16()[i] = tensor.F32ToBfloat16(float32(f))
	case tensor.Int32:
		t.I32()[i] = int32(f)
	case tensor.Int64:
		t.I64()[i] = int64(f)
	case tensor.Int16:
		t.I16()[i] = int16(f)
	case tensor.Int8:
		t.I8()[i] = int8(f)
	case tensor.Uint8:
		t.U8()[i] = uint8(f)
	case tensor.Uint16:
		t.U16()[i] = uint16(f)
	case tensor.Uint32:
		t.U32()[i] = uint32(f)
	case tensor.Uint64:
		t.U64()[i] = uint64(f)
	case tensor.Bool:
		t.Bools()[i] = f != 0
	default:
		panic("kerneltest: SetF64 on " + t.DType.String())
	}
}

// F64s returns t's elements as float64.
func F64s(t *tensor.Tensor) []float64 {
	v := make([]float64, t.NumElements())
	for i := range v {
		v[i] = t.ElementF64(i)
	}
	return v
}

// Map applies f elementwise to a's values (as float64) into a tensor of dt.
func Map(a *tensor.Tensor, dt tensor.DType, f func(float64) float64) *tensor.Tensor {
	out := tensor.New(dt, a.Shape)
	for i := 0; i < int(a.NumElements()); i++ {
		SetF64(out, i, f(a.ElementF64(i)))
	}
	return out
}

// Shapes commonly worth covering: scalar, empty, size 1, odd, larger.
var EdgeShapes = []tensor.Shape{{}, {0}, {1}, {7}, {3, 5}, {2, 0, 3}, {4, 1, 9}, {257}, {33, 65}}
