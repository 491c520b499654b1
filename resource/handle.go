package resource

import (
	"google.golang.org/protobuf/proto"

	"mstream/proto/tfpb"
	"mstream/status"
	"mstream/tensor"
)

// HostDevice is the device a handle names: every resource lives on the
// host (see the package doc).
const HostDevice = "/job:localhost/replica:0/task:0/device:CPU:0"

// Handle names a resource: the content of a DT_RESOURCE tensor element, in
// TF's ResourceHandleProto layout.
type Handle struct {
	Container, Name, Kind string
	// DType and Shape are the variable's, when the handle's op declared
	// them (VarHandleOp's dtype and shape).
	DType tensor.DType
	Shape tensor.PartialShape
}

// Marshal is the handle as a serialized ResourceHandleProto.
func (h Handle) Marshal() []byte {
	p := &tfpb.ResourceHandleProto{
		Device:        HostDevice,
		Container:     container(h.Container),
		Name:          h.Name,
		HashCode:      hashCode(h.Kind),
		MaybeTypeName: h.Kind,
	}
	if h.DType != 0 {
		p.DtypesAndShapes = []*tfpb.ResourceHandleProto_DtypeAndShape{{
			Dtype: tfpb.DataType(h.DType), Shape: tensor.ShapeToProto(h.Shape)}}
	}
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(p)
	if err != nil {
		panic(err) // a message of plain fields always marshals
	}
	return b
}

// Tensor is a scalar DT_RESOURCE tensor holding h.
func (h Handle) Tensor() *tensor.Tensor {
	return &tensor.Tensor{DType: tensor.Resource, Shape: tensor.Shape{}, Strs: [][]byte{h.Marshal()}}
}

// FromTensor reads the handle of a scalar DT_RESOURCE tensor (what reaches
// a kernel's resource input, from a VarHandleOp or fed by a client).
func FromTensor(t *tensor.Tensor) (Handle, error) {
	if t.DType != tensor.Resource || len(t.Strs) != 1 {
		return Handle{}, status.InvalidArg("expected a scalar resource handle, got a %v tensor of shape %v", t.DType, t.Shape)
	}
	if h, ok := decodeHandle(t.Strs[0]); ok {
		return h, nil
	}
	var p tfpb.ResourceHandleProto
	if err := proto.Unmarshal(t.Strs[0], &p); err != nil {
		return Handle{}, status.InvalidArg("resource handle is not a ResourceHandleProto: %v", err)
	}
	h := Handle{Container: p.Container, Name: p.Name, Kind: p.MaybeTypeName}
	if ds := p.DtypesAndShapes; len(ds) > 0 {
		h.DType, h.Shape = tensor.DType(ds[0].Dtype), tensor.ShapeFromProto(ds[0].Shape)
	}
	return h, nil
}
