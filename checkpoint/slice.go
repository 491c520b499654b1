package checkpoint

import (
	"fmt"
	"strconv"
	"strings"

	"mstream/proto/tfpb"
	"mstream/status"
	"mstream/tensor"
)

// Extent is one dimension of a Slice: Start and Length, or the whole
// dimension when Length is FullExtent (TF's TensorSlice::kFullExtent).
type Extent struct{ Start, Length int64 }

// FullExtent as an Extent's Length means the whole dimension.
const FullExtent = -1

// Slice is a hyper-rectangle of a tensor, one Extent per dimension: what
// the shape_and_slices strings of SaveV2/RestoreV2 name and what a bundle
// stores for each piece of a partitioned variable.
type Slice []Extent

// FullSlice is the slice of a whole tensor of the given rank.
func FullSlice(rank int) Slice {
	s := make(Slice, rank)
	for i := range s {
		s[i] = Extent{0, FullExtent}
	}
	return s
}

// IsFull reports whether every extent is FullExtent.
func (s Slice) IsFull() bool {
	for _, e := range s {
		if e.Length != FullExtent {
			return false
		}
	}
	return true
}

// String is TF's spelling: "start,length" per dimension, "-" for a full
// one, joined by ':'.
func (s Slice) String() string {
	parts := make([]string, len(s))
	for i, e := range s {
		if e.Length == FullExtent {
			parts[i] = "-"
		} else {
			parts[i] = fmt.Sprintf("%d,%d", e.Start, e.Length)
		}
	}
	return strings.Join(parts, ":")
}

// ParseSlice parses TF's slice syntax ("-:0,2:1,3").
func ParseSlice(str string) (Slice, error) {
	var s Slice
	if str == "" {
		return s, nil
	}
	for _, p := range strings.Split(str, ":") {
		if p == "-" {
			s = append(s, Extent{0, FullExtent})
			continue
		}
		a, b, ok := strings.Cut(p, ",")
		start, err1 := strconv.ParseInt(a, 10, 64)
		length, err2 := strconv.ParseInt(b, 10, 64)
		if !ok || err1 != nil || err2 != nil {
			return nil, status.Errorf(status.InvalidArgument, "Expected a pair of numbers or '-' but got '%s': string = %s", p, str)
		}
		if start < 0 || length <= 0 {
			return nil, status.Errorf(status.InvalidArgument, "Expected non-negative start and positive length but got start = %d, length = %d: string = %s", start, length, str)
		}
		s = append(s, Extent{start, length})
	}
	return s, nil
}

// Shape is the shape of the slice of a tensor of shape full. A slice that
// does not fit is INTERNAL, TF's code for it.
func (s Slice) Shape(full tensor.Shape) (tensor.Shape, error) {
	if len(s) != len(full) {
		return nil, status.Errorf(status.Internal, "Mismatching ranks: shape = %v, slice = %s", full, s)
	}
	out := make(tensor.Shape, len(s))
	for d, e := range s {
		if e.Length == FullExtent {
			out[d] = full[d]
			continue
		}
		if e.Start > full[d] || e.Length > full[d]-e.Start {
			return nil, status.Errorf(status.Internal, "Extent in dimension %d out of bounds: shape = %v, slice = %s", d, full, s)
		}
		out[d] = e.Length
	}
	return out, nil
}

// covers reports whether s is the whole of a tensor of shape full (full
// extents, or explicit ones spanning every dimension).
func (s Slice) covers(full tensor.Shape) bool {
	sh, err := s.Shape(full)
	return err == nil && sh.Equal(full)
}

// bounds returns the [lo, hi) range of each dimension.
func (s Slice) bounds(full tensor.Shape) (lo, hi []int64) {
	lo, hi = make([]int64, len(s)), make([]int64, len(s))
	for d, e := range s {
		if e.Length == FullExtent {
			lo[d], hi[d] = 0, full[d]
		} else {
			lo[d], hi[d] = e.Start, e.Start+e.Length
		}
	}
	return lo, hi
}

// ParseShapeAndSlice parses a SaveV2/RestoreV2 shape_and_slices entry,
// "dim0 dim1 ... slice", into the full shape, the slice and the slice's
// shape, with TF's errors.
func ParseShapeAndSlice(spec string) (tensor.Shape, Slice, tensor.Shape, error) {
	parts := strings.Split(spec, " ")
	if len(parts) < 2 {
		return nil, nil, nil, status.Errorf(status.InvalidArgument, "Need least two elements in shape_and_slice specification: %s", spec)
	}
	sl, err := ParseSlice(parts[len(parts)-1])
	if err != nil {
		return nil, nil, nil, err
	}
	var full tensor.Shape
	for _, p := range parts[:len(parts)-1] {
		d, err := strconv.ParseInt(p, 10, 64)
		if err != nil {
			return nil, nil, nil, status.Errorf(status.InvalidArgument, "Non numerical dimension in shape_and_slice: %s", spec)
		}
		full = append(full, d)
	}
	if err := full.Validate(); err != nil {
		return nil, nil, nil, status.Errorf(status.InvalidArgument, "shape_and_slice %q: %v", spec, err)
	}
	ss, err := sl.Shape(full)
	if err != nil {
		return nil, nil, nil, err
	}
	return full, sl, ss, nil
}

func (s Slice) toProto() *tfpb.TensorSliceProto {
	p := &tfpb.TensorSliceProto{}
	for _, e := range s {
		x := &tfpb.TensorSliceProto_Extent{}
		if e.Length != FullExtent {
			x.Start = e.Start
			x.HasLength = &tfpb.TensorSliceProto_Extent_Length{Length: e.Length}
		}
		p.Extent = append(p.Extent, x)
	}
	return p
}

func sliceFromProto(p *tfpb.TensorSliceProto) Slice {
	s := make(Slice, len(p.GetExtent()))
	for i, e := range p.GetExtent() {
		if l, ok := e.GetHasLength().(*tfpb.TensorSliceProto_Extent_Length); ok {
			s[i] = Extent{e.GetStart(), l.Length}
		} else {
			s[i] = Extent{e.GetStart(), FullExtent}
		}
	}
	return s
}

// sliceKey is the bundle key of one stored slice of the tensor name: TF's
// EncodeTensorNameSlice, an OrderedCode of (0, name, rank, start and
// length of each dimension).
func sliceKey(name string, s Slice) string {
	b := orderedNum(nil, 0)
	for i := 0; i < len(name); i++ {
		switch c := name[i]; c {
		case 0x00:
			b = append(b, 0x00, 0xff)
		case 0xff:
			b = append(b, 0xff, 0x00)
		default:
			b = append(b, c)
		}
	}
	b = append(b, 0x00, 0x01)
	b = orderedNum(b, uint64(len(s)))
	for _, e := range s {
		start, length := e.Start, e.Length
		if length == FullExtent {
			start = 0
		}
		b = orderedSigned(b, start)
		b = orderedSigned(b, length)
	}
	return string(b)
}

// orderedNum is OrderedCode::WriteNumIncreasing: a length byte, then the
// big-endian value without leading zeros.
func orderedNum(b []byte, v uint64) []byte {
	var buf [8]byte
	n := 0
	for x := v; x > 0; x >>= 8 {
		n++
	}
	for i := 0; i < n; i++ {
		buf[i] = byte(v >> (8 * (n - 1 - i)))
	}
	return append(append(b, byte(n)), buf[:n]...)
}

// orderedSigned is OrderedCode::WriteSignedNumIncreasing: the value sign
// extended to its encoding length, whose leading bits (1s for positive
// values, 0s for negative) say the length.
func orderedSigned(b []byte, v int64) []byte {
	x := uint64(v)
	if v < 0 {
		x = ^x
	}
	if x < 64 {
		return append(b, byte(0x80^v))
	}
	bits := 0
	for y := x; y > 0; y >>= 1 {
		bits++
	}
	length := (bits + 7) / 7 // 7 payload bits per byte beyond the header
	if length > 10 {
		length = 10
	}
	header := [11][2]byte{{0, 0}, {0x80, 0}, {0xc0, 0}, {0xe0, 0}, {0xf0, 0}, {0xf8, 0}, {0xfc, 0}, {0xfe, 0}, {0xff, 0}, {0xff, 0x80}, {0xff, 0xc0}}
	var buf [10]byte
	if v < 0 {
		buf[0], buf[1] = 0xff, 0xff
	}
	for i := 0; i < 8; i++ {
		buf[2+i] = byte(uint64(v) >> (56 - 8*i))
	}
	enc := buf[10-length:]
	enc[0] ^= header[length][0]
	enc[1] ^= header[length][1]
	return append(b, enc...)
}
