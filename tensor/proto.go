package tensor

import (
	"encoding/binary"
	"fmt"
	"math"

	"mstream/hostmem"
	"mstream/proto/tfpb"
	"mstream/status"
)

// ShapeFromProto converts a TensorShapeProto to a partial shape.
func ShapeFromProto(p *tfpb.TensorShapeProto) PartialShape {
	if p == nil || p.UnknownRank {
		return Unknown
	}
	dims := make([]int64, len(p.Dim))
	for i, d := range p.Dim {
		dims[i] = d.Size
		if d.Size < 0 {
			dims[i] = -1
		}
	}
	return PartialShape{Known: true, Dims: dims}
}

// ShapeToProto converts a partial shape to a TensorShapeProto.
func ShapeToProto(s PartialShape) *tfpb.TensorShapeProto {
	if !s.Known {
		return &tfpb.TensorShapeProto{UnknownRank: true}
	}
	p := &tfpb.TensorShapeProto{Dim: make([]*tfpb.TensorShapeProto_Dim, len(s.Dims))}
	for i, d := range s.Dims {
		p.Dim[i] = &tfpb.TensorShapeProto_Dim{Size: d}
	}
	return p
}

// FromProto builds a tensor from a TensorProto as TF's Tensor::FromProto
// does: tensor_content when present, else the typed *_val field, where fewer
// values than elements repeat the last one (a single value fills the shape),
// no values at all give zeros, and values beyond the element count are
// ignored. A shape whose data would not fit in the machine's memory is
// rejected before anything is allocated, as TF's failed allocation makes it
// "Cannot parse tensor from proto" (INVALID_ARGUMENT): a tiny GraphDef must
// not be able to ask for terabytes.
func FromProto(p *tfpb.TensorProto) (*Tensor, error) {
	dt := DType(p.Dtype)
	if !dt.Valid() || !(dt.Fixed() || dt == String) {
		return nil, status.InvalidArg("Cannot parse tensor from proto: unsupported tensor dtype %v", dt)
	}
	ps := ShapeFromProto(p.TensorShape)
	if !ps.FullyDefined() {
		return nil, status.InvalidArg("Cannot parse tensor from proto: shape %v is not fully defined", ps)
	}
	shape := Shape(ps.Dims)
	if err := shape.Validate(); err != nil {
		return nil, status.InvalidArg("Cannot parse tensor from proto: %v", err)
	}
	n := shape.NumElements()
	elem := int64(dt.Size())
	if dt == String {
		elem = StringElemBytes
	}
	if err := (hostmem.Limit{}).Check(n, elem, func() string { return fmt.Sprintf("tensor with shape%v and type %v", shape, dt) }); err != nil {
		return nil, status.InvalidArg("Cannot parse tensor from proto: %v", err)
	}
	if dt == String {
		t := New(String, shape)
		if n > 0 && len(p.TensorContent) > 0 {
			// TF's AsProtoTensorContent writes a string list as every
			// length (varint32) followed by every string's bytes; TF
			// reads it back, and so does this.
			if !decodeStringList(p.TensorContent, t.Strs) {
				return nil, status.InvalidArg("Cannot parse tensor from proto: the tensor_content of a %v string tensor is not %d varint32 lengths followed by their bytes", shape, n)
			}
			return t, nil
		}
		for i := int64(0); i < n; i++ {
			switch {
			case i < int64(len(p.StringVal)):
				t.Strs[i] = append([]byte(nil), p.StringVal[i]...)
			case len(p.StringVal) > 0:
				t.Strs[i] = append([]byte(nil), p.StringVal[len(p.StringVal)-1]...)
			default:
				t.Strs[i] = []byte{}
			}
		}
		return t, nil
	}
	if len(p.TensorContent) > 0 {
		if int64(len(p.TensorContent)) != n*int64(dt.Size()) {
			return nil, status.InvalidArg("Cannot parse tensor from proto: tensor_content has %d bytes, %v%v needs %d", len(p.TensorContent), dt, shape, n*int64(dt.Size()))
		}
		t := New(dt, shape)
		copy(t.Buf, p.TensorContent)
		return t, nil
	}
	t := New(dt, shape)
	var err error
	switch dt {
	case Float:
		err = fill(t.F32(), p.FloatVal)
	case Double:
		err = fill(t.F64(), p.DoubleVal)
	case Int32, Qint32:
		err = fill(t.I32(), p.IntVal)
	case Int16, Qint16:
		err = fill(t.I16(), convert[int32, int16](p.IntVal))
	case Int8, Qint8:
		err = fill(t.I8(), convert[int32, int8](p.IntVal))
	case Uint8, Quint8:
		err = fill(t.U8(), convert[int32, uint8](p.IntVal))
	case Uint16, Quint16:
		err = fill(t.U16(), convert[int32, uint16](p.IntVal))
	case Int64:
		err = fill(t.I64(), p.Int64Val)
	case Uint32:
		err = fill(t.U32(), p.Uint32Val)
	case Uint64:
		err = fill(t.U64(), p.Uint64Val)
	case Bool:
		err = fill(t.Bools(), p.BoolVal)
	case Half, Bfloat16:
		err = fill(t.U16(), convert[int32, uint16](p.HalfVal))
	case Complex64:
		if len(p.ScomplexVal)%2 != 0 {
			return nil, status.InvalidArg("Cannot parse tensor from proto: scomplex_val has an odd length %d", len(p.ScomplexVal))
		}
		c := make([]complex64, len(p.ScomplexVal)/2)
		for i := range c {
			c[i] = complex(p.ScomplexVal[2*i], p.ScomplexVal[2*i+1])
		}
		err = fill(t.C64(), c)
	case Complex128:
		if len(p.DcomplexVal)%2 != 0 {
			return nil, status.InvalidArg("Cannot parse tensor from proto: dcomplex_val has an odd length %d", len(p.DcomplexVal))
		}
		c := make([]complex128, len(p.DcomplexVal)/2)
		for i := range c {
			c[i] = complex(p.DcomplexVal[2*i], p.DcomplexVal[2*i+1])
		}
		err = fill(t.C128(), c)
	default:
		if len(p.IntVal) > 0 || len(p.Int64Val) > 0 {
			return nil, status.InvalidArg("Cannot parse tensor from proto: tensor proto of dtype %v must use tensor_content", dt)
		}
	}
	if err != nil {
		return nil, status.InvalidArg("Cannot parse tensor from proto: %v tensor proto of shape %v: %v", dt, shape, err)
	}
	return t, nil
}

func fill[T any](dst, src []T) error {
	copy(dst, src) // values beyond len(dst) are ignored, as TF does
	if len(src) > 0 {
		last := src[len(src)-1]
		for i := len(src); i < len(dst); i++ {
			dst[i] = last
		}
	}
	return nil
}

func convert[S, D int32 | int16 | int8 | uint8 | uint16](s []S) []D {
	d := make([]D, len(s))
	for i, v := range s {
		d[i] = D(v)
	}
	return d
}

// ToProto encodes t as TF's AsProtoTensorContent does: tensor_content for
// fixed-size dtypes, string_val for strings.
func ToProto(t *Tensor) *tfpb.TensorProto {
	p := &tfpb.TensorProto{Dtype: tfpb.DataType(t.DType), TensorShape: ShapeToProto(KnownShape(t.Shape))}
	if t.DType == String {
		p.StringVal = make([][]byte, len(t.Strs))
		for i, s := range t.Strs {
			p.StringVal[i] = append([]byte{}, s...)
		}
		return p
	}
	if len(t.Buf) > 0 {
		p.TensorContent = append([]byte(nil), t.Buf...)
	}
	return p
}

// ToAttrProto encodes t as TF's SetAttrValue does for a tensor attr
// (TF_SetAttrTensor): tensor_content, strings included, when t has more
// than one element, the dtype's typed field (float_val, int_val, ...)
// otherwise.
func ToAttrProto(t *Tensor) *tfpb.TensorProto {
	n := t.NumElements()
	p := &tfpb.TensorProto{Dtype: tfpb.DataType(t.DType), TensorShape: ShapeToProto(KnownShape(t.Shape))}
	if n > 1 {
		if t.DType != String {
			return ToProto(t)
		}
		p.TensorContent = encodeStringList(t.Strs)
		return p
	}
	if n == 0 {
		return p
	}
	switch t.DType {
	case String:
		p.StringVal = [][]byte{append([]byte{}, t.Strs[0]...)}
	case Float:
		p.FloatVal = []float32{t.F32()[0]}
	case Double:
		p.DoubleVal = []float64{t.F64()[0]}
	case Int32, Qint32:
		p.IntVal = []int32{t.I32()[0]}
	case Int16, Qint16:
		p.IntVal = []int32{int32(t.I16()[0])}
	case Int8, Qint8:
		p.IntVal = []int32{int32(t.I8()[0])}
	case Uint8, Quint8:
		p.IntVal = []int32{int32(t.U8()[0])}
	case Uint16, Quint16:
		p.IntVal = []int32{int32(t.U16()[0])}
	case Int64:
		p.Int64Val = []int64{t.I64()[0]}
	case Uint32:
		p.Uint32Val = []uint32{t.U32()[0]}
	case Uint64:
		p.Uint64Val = []uint64{t.U64()[0]}
	case Bool:
		p.BoolVal = []bool{t.Bools()[0]}
	case Half, Bfloat16:
		p.HalfVal = []int32{int32(t.U16()[0])}
	case Complex64:
		c := t.C64()[0]
		p.ScomplexVal = []float32{real(c), imag(c)}
	case Complex128:
		c := t.C128()[0]
		p.DcomplexVal = []float64{real(c), imag(c)}
	default:
		return ToProto(t)
	}
	return p
}

// encodeStringList writes every length as a varint32, then every string.
func encodeStringList(strs [][]byte) []byte {
	var out []byte
	for _, s := range strs {
		out = binary.AppendUvarint(out, uint64(uint32(len(s))))
	}
	for _, s := range strs {
		out = append(out, s...)
	}
	return out
}

// decodeStringList fills dst from encodeStringList's format; false when
// the lengths do not add up to the bytes that follow them.
func decodeStringList(src []byte, dst [][]byte) bool {
	lens := make([]uint64, len(dst))
	total := uint64(0)
	for i := range lens {
		v, k := binary.Uvarint(src)
		if k <= 0 || v > math.MaxUint32 {
			return false
		}
		lens[i], src = v, src[k:]
		total += v
	}
	if total != uint64(len(src)) {
		return false
	}
	for i, l := range lens {
		dst[i], src = append([]byte{}, src[:l]...), src[l:]
	}
	return true
}

// ElementF64 reads element i of a real numeric tensor as float64; tests and
// reference code use it.
func (t *Tensor) ElementF64(i int) float64 {
	switch t.DType {
	case Float:
		return float64(t.F32()[i])
	case Double:
		return t.F64()[i]
	case Half:
		return float64(HalfToF32(t.U16()[i]))
	case Bfloat16:
		return float64(Bfloat16ToF32(t.U16()[i]))
	case Int32:
		return float64(t.I32()[i])
	case Int64:
		return float64(t.I64()[i])
	case Int16:
		return float64(t.I16()[i])
	case Int8:
		return float64(t.I8()[i])
	case Uint8:
		return float64(t.U8()[i])
	case Uint16:
		return float64(t.U16()[i])
	case Uint32:
		return float64(t.U32()[i])
	case Uint64:
		return float64(t.U64()[i])
	case Bool:
		if t.Bools()[i] {
			return 1
		}
		return 0
	}
	return math.NaN()
}
