package resource

import (
	"reflect"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"mstream/proto/tfpb"
	"mstream/tensor"
)

// viaProto is FromTensor's reading of b through proto.Unmarshal alone,
// the reference decodeHandle must agree with.
func viaProto(b []byte) (Handle, error) {
	var p tfpb.ResourceHandleProto
	if err := proto.Unmarshal(b, &p); err != nil {
		return Handle{}, err
	}
	h := Handle{Container: p.Container, Name: p.Name, Kind: p.MaybeTypeName}
	if ds := p.DtypesAndShapes; len(ds) > 0 {
		h.DType, h.Shape = tensor.DType(ds[0].Dtype), tensor.ShapeFromProto(ds[0].Shape)
	}
	return h, nil
}

// wireSeeds are handles as Marshal writes them and as other writers
// might: fields reordered or repeated, an unknown field, a second
// dtypes_and_shapes, negative and unknown dims, truncations.
func wireSeeds() [][]byte {
	var out [][]byte
	for _, h := range []Handle{
		{Name: "v", Kind: VarKind},
		{Container: "c", Name: "tower0/emb", Kind: VarKind, DType: tensor.Float, Shape: tensor.KnownShape(tensor.Shape{1000, 16})},
		{Name: "s", Kind: VarKind, DType: tensor.Int64, Shape: tensor.KnownShape(tensor.Shape{})},
		{Name: "u", Kind: VarKind, DType: tensor.Double, Shape: tensor.Unknown},
		{Name: "p", Kind: VarKind, DType: tensor.Half, Shape: tensor.PartialShape{Known: true, Dims: []int64{-1, 3}}},
	} {
		b := h.Marshal()
		out = append(out, b, b[:len(b)-1], b[:len(b)/2])
		out = append(out, protowire.AppendString(protowire.AppendTag(b, rhName, protowire.BytesType), "again"))
		out = append(out, protowire.AppendVarint(protowire.AppendTag(b, 9, protowire.VarintType), 7))
		out = append(out, protowire.AppendVarint(protowire.AppendTag(b, rhName, protowire.VarintType), 7))
		ds := protowire.AppendVarint(protowire.AppendTag(nil, dsDtype, protowire.VarintType), uint64(tensor.Int32))
		out = append(out, protowire.AppendBytes(protowire.AppendTag(b, rhDtypes, protowire.BytesType), ds))
		out = append(out, protowire.AppendBytes(protowire.AppendTag(ds, dsDtype, protowire.VarintType), nil))
	}
	minus5 := int64(-5)
	neg := protowire.AppendVarint(protowire.AppendTag(nil, dimSize, protowire.VarintType), uint64(minus5))
	sh := protowire.AppendBytes(protowire.AppendTag(nil, shDim, protowire.BytesType), neg)
	sh = protowire.AppendVarint(protowire.AppendTag(sh, shUnknownRank, protowire.VarintType), 0)
	ds := protowire.AppendBytes(protowire.AppendTag(nil, dsShape, protowire.BytesType), sh)
	out = append(out, protowire.AppendBytes(protowire.AppendTag(nil, rhDtypes, protowire.BytesType), ds))
	bad := protowire.AppendBytes(protowire.AppendTag(nil, rhContainer, protowire.BytesType), []byte{0xff, 0xfe})
	return append(out, bad, nil, []byte{0})
}

func checkWire(t *testing.T, b []byte) {
	want, werr := viaProto(b)
	got, ok := decodeHandle(b)
	if !ok {
		return // proto.Unmarshal decides
	}
	if werr != nil {
		t.Fatalf("%x: the fast path reads %+v, proto.Unmarshal fails: %v", b, got, werr)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%x: the fast path reads %+v, proto.Unmarshal %+v", b, got, want)
	}
}

// TestHandleWire: every handle Marshal writes takes the fast path, and
// on every seed the fast path and proto.Unmarshal agree.
func TestHandleWire(t *testing.T) {
	for _, h := range []Handle{
		{Name: "v", Kind: VarKind},
		{Container: "c", Name: "n", Kind: VarKind, DType: tensor.Float, Shape: tensor.KnownShape(tensor.Shape{2, 3})},
		{Name: "u", Kind: VarKind, DType: tensor.Double, Shape: tensor.Unknown},
	} {
		if _, ok := decodeHandle(h.Marshal()); !ok {
			t.Errorf("%+v: its own bytes leave the fast path", h)
		}
	}
	for _, b := range wireSeeds() {
		checkWire(t, b)
	}
}

// FuzzHandleWire: decodeHandle never disagrees with proto.Unmarshal.
func FuzzHandleWire(f *testing.F) {
	for _, b := range wireSeeds() {
		f.Add(b)
	}
	f.Fuzz(checkWire)
}
