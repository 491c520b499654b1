package tensor

import "fmt"

// DType is a TF_DataType; the numbers are TF's (tensorflow/core/framework/types.proto).
type DType int32

// The dtypes of TF 2.15. Reference variants (DT_*_REF = x+100) never reach a
// tensor; graph code strips them.
const (
	Invalid    DType = 0
	Float      DType = 1
	Double     DType = 2
	Int32      DType = 3
	Uint8      DType = 4
	Int16      DType = 5
	Int8       DType = 6
	String     DType = 7
	Complex64  DType = 8
	Int64      DType = 9
	Bool       DType = 10
	Qint8      DType = 11
	Quint8     DType = 12
	Qint32     DType = 13
	Bfloat16   DType = 14
	Qint16     DType = 15
	Quint16    DType = 16
	Uint16     DType = 17
	Complex128 DType = 18
	Half       DType = 19
	Resource   DType = 20
	Variant    DType = 21
	Uint32     DType = 22
	Uint64     DType = 23
	Float8E5M2 DType = 24
	Float8E4M3 DType = 25
	Int4       DType = 29
	Uint4      DType = 30
	refOffset  DType = 100
	maxDType   DType = 31
)

type dtypeInfo struct {
	name string
	size int
}

var dtypes = map[DType]dtypeInfo{
	Float: {"float", 4}, Double: {"double", 8}, Int32: {"int32", 4}, Uint8: {"uint8", 1},
	Int16: {"int16", 2}, Int8: {"int8", 1}, String: {"string", 0}, Complex64: {"complex64", 8},
	Int64: {"int64", 8}, Bool: {"bool", 1}, Qint8: {"qint8", 1}, Quint8: {"quint8", 1},
	Qint32: {"qint32", 4}, Bfloat16: {"bfloat16", 2}, Qint16: {"qint16", 2}, Quint16: {"quint16", 2},
	Uint16: {"uint16", 2}, Complex128: {"complex128", 16}, Half: {"half", 2}, Resource: {"resource", 0},
	Variant: {"variant", 0}, Uint32: {"uint32", 4}, Uint64: {"uint64", 8},
	Float8E5M2: {"float8_e5m2", 1}, Float8E4M3: {"float8_e4m3fn", 1}, Int4: {"int4", 1}, Uint4: {"uint4", 1},
}

// Valid reports whether d is a dtype of TF 2.15 (not a reference type).
func (d DType) Valid() bool { _, ok := dtypes[d]; return ok }

// Size is the size of one element in bytes; 0 for string, resource and variant,
// as TF_DataTypeSize reports.
func (d DType) Size() int {
	if uint32(d) <= uint32(maxDType) {
		return int(sizes[d])
	}
	return dtypes[d].size
}

// sizes is dtypes' element sizes as a table: Size runs for every tensor a
// kernel allocates, where a map lookup cost a scalar op a tenth of its
// time.
var sizes = func() (s [maxDType + 1]uint8) {
	for d, i := range dtypes {
		if d <= maxDType {
			s[d] = uint8(i.size)
		}
	}
	return s
}()

// Fixed reports whether elements have a fixed size (everything but string,
// resource and variant), i.e. whether the tensor is a flat byte buffer.
func (d DType) Fixed() bool { return d.Size() > 0 }

// InStrs reports whether a tensor of d keeps its elements as byte strings
// in Strs: DT_STRING, and DT_RESOURCE, whose elements are serialized
// ResourceHandleProtos (what TF's C API hands a client too).
func (d DType) InStrs() bool { return d == String || d == Resource }

// Ref is d's reference dtype (DT_FLOAT_REF for DT_FLOAT), the type TF's C
// API reports for a ref output such as VariableV2's.
func (d DType) Ref() DType { return d.Base() + refOffset }

// IsRef reports whether d is a reference dtype (DT_FLOAT_REF and so on).
func (d DType) IsRef() bool { return d > refOffset && (d - refOffset).Valid() }

// Base strips a reference dtype to its value dtype.
func (d DType) Base() DType {
	if d.IsRef() {
		return d - refOffset
	}
	return d
}

// String is TF's DataTypeString: "float", "int32", "float_ref", ...
func (d DType) String() string {
	if d.IsRef() {
		return (d - refOffset).String() + "_ref"
	}
	if i, ok := dtypes[d]; ok {
		return i.name
	}
	return fmt.Sprintf("unknown dtype %d", int32(d))
}

// IsFloat reports float16/bfloat16/float32/float64.
func (d DType) IsFloat() bool { return d == Float || d == Double || d == Half || d == Bfloat16 }

// IsInteger reports the signed and unsigned integer dtypes (not quantized).
func (d DType) IsInteger() bool {
	switch d {
	case Int8, Int16, Int32, Int64, Uint8, Uint16, Uint32, Uint64:
		return true
	}
	return false
}

// IsComplex reports complex64/complex128.
func (d DType) IsComplex() bool { return d == Complex64 || d == Complex128 }
