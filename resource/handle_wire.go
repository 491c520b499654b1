package resource

import (
	"unicode/utf8"

	"google.golang.org/protobuf/encoding/protowire"

	"mstream/tensor"
)

// Every read or update of a variable reads its handle (FromTensor): on
// the H100's training example proto.Unmarshal of the ResourceHandleProto
// was ~7% of a step's CPU. decodeHandle reads the bytes a handle takes in
// practice (what Marshal and TF write: each field once, in any order,
// unknown fields none) straight off the wire; anything else (an unknown
// field, a second dtypes_and_shapes or shape, a field of the wrong wire
// type, a string that is not UTF-8, a truncated field) it leaves to
// proto.Unmarshal, whose verdict and merge rules are then the answer.
// FuzzHandleWire checks the two agree.

// ResourceHandleProto's, DtypeAndShape's, TensorShapeProto's and Dim's
// field numbers (tensorflow/core/framework/resource_handle.proto,
// tensor_shape.proto).
const (
	rhDevice, rhContainer, rhName, rhHash, rhType, rhDtypes = 1, 2, 3, 4, 5, 6
	dsDtype, dsShape                                        = 1, 2
	shDim, shUnknownRank                                    = 2, 3
	dimSize, dimName                                        = 1, 2
)

// decodeHandle decodes b as FromTensor does; ok is false where b is not
// in the subset it reads, and the caller must use proto.Unmarshal.
func decodeHandle(b []byte) (h Handle, ok bool) {
	seenDS := false
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return Handle{}, false
		}
		b = b[n:]
		switch {
		case typ == protowire.BytesType && num >= rhDevice && num <= rhType && num != rhHash:
			v, n := protowire.ConsumeBytes(b)
			if n < 0 || !utf8.Valid(v) {
				return Handle{}, false
			}
			b = b[n:]
			switch num {
			case rhContainer:
				h.Container = string(v)
			case rhName:
				h.Name = string(v)
			case rhType:
				h.Kind = string(v)
			}
		case typ == protowire.VarintType && num == rhHash:
			_, n := protowire.ConsumeVarint(b)
			if n < 0 {
				return Handle{}, false
			}
			b = b[n:]
		case typ == protowire.BytesType && num == rhDtypes && !seenDS:
			v, n := protowire.ConsumeBytes(b)
			if n < 0 || !decodeDtypeAndShape(v, &h) {
				return Handle{}, false
			}
			b, seenDS = b[n:], true
		default:
			return Handle{}, false
		}
	}
	return h, true
}

// decodeDtypeAndShape reads the first DtypeAndShape into h's DType and
// Shape (an absent shape is an unknown one, as ShapeFromProto(nil)).
func decodeDtypeAndShape(b []byte, h *Handle) bool {
	h.Shape = tensor.Unknown
	seenShape := false
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return false
		}
		b = b[n:]
		switch {
		case typ == protowire.VarintType && num == dsDtype:
			v, n := protowire.ConsumeVarint(b)
			if n < 0 {
				return false
			}
			h.DType, b = tensor.DType(int32(v)), b[n:]
		case typ == protowire.BytesType && num == dsShape && !seenShape:
			v, n := protowire.ConsumeBytes(b)
			if n < 0 {
				return false
			}
			s, ok := decodeShape(v)
			if !ok {
				return false
			}
			h.Shape, b, seenShape = s, b[n:], true
		default:
			return false
		}
	}
	return true
}

// decodeShape reads a TensorShapeProto as ShapeFromProto converts it.
func decodeShape(b []byte) (tensor.PartialShape, bool) {
	dims := []int64{}
	unknown := false
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return tensor.PartialShape{}, false
		}
		b = b[n:]
		switch {
		case typ == protowire.BytesType && num == shDim:
			v, n := protowire.ConsumeBytes(b)
			if n < 0 {
				return tensor.PartialShape{}, false
			}
			d, ok := decodeDim(v)
			if !ok {
				return tensor.PartialShape{}, false
			}
			dims, b = append(dims, d), b[n:]
		case typ == protowire.VarintType && num == shUnknownRank:
			v, n := protowire.ConsumeVarint(b)
			if n < 0 {
				return tensor.PartialShape{}, false
			}
			unknown, b = protowire.DecodeBool(v), b[n:]
		default:
			return tensor.PartialShape{}, false
		}
	}
	if unknown {
		return tensor.Unknown, true
	}
	return tensor.PartialShape{Known: true, Dims: dims}, true
}

// decodeDim reads a TensorShapeProto.Dim's size (negative: -1, as
// ShapeFromProto has it).
func decodeDim(b []byte) (int64, bool) {
	var size int64
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return 0, false
		}
		b = b[n:]
		switch {
		case typ == protowire.VarintType && num == dimSize:
			v, n := protowire.ConsumeVarint(b)
			if n < 0 {
				return 0, false
			}
			size, b = int64(v), b[n:]
		case typ == protowire.BytesType && num == dimName:
			v, n := protowire.ConsumeBytes(b)
			if n < 0 || !utf8.Valid(v) {
				return 0, false
			}
			b = b[n:]
		default:
			return 0, false
		}
	}
	return max(size, -1), true
}
