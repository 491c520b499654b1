package main

/*
#include "internal.h"
*/
import "C"

import (
	"fmt"
	"runtime/cgo"
	"unsafe"

	"google.golang.org/protobuf/proto"

	"mstream/graph"
	"mstream/proto/tfpb"
	"mstream/status"
	"mstream/tensor"
)

// Attribute getters (TF_OperationGetAttr*), with TF's checks and messages.

func getAttr(op *C.TF_Operation, name *C.char) (*graph.Node, *tfpb.AttrValue, error) {
	_, n, err := nodeOf(op)
	if err != nil {
		return nil, nil, err
	}
	a := n.Attr(goStr(name))
	if a == nil {
		return nil, nil, status.Errorf(status.NotFound, "Operation '%s' has no attr named '%s'.", n.Name, goStr(name))
	}
	return n, a, nil
}

// attrValue is getAttr for the getters that TF implements with its
// GetAttrValue (metadata, strings, lists, shape protos, AttrValue protos):
// a missing attr is INVALID_ARGUMENT there, NOT_FOUND in the others.
func attrValue(op *C.TF_Operation, name *C.char) (*graph.Node, *tfpb.AttrValue, error) {
	n, a, err := getAttr(op, name)
	if err != nil && status.CodeOf(err) == status.NotFound {
		err = status.InvalidArg("%s", err.Error())
	}
	return n, a, err
}

// attrKindName is the AttrValue's type as TF's error messages spell it.
func attrKindName(a *tfpb.AttrValue) string {
	switch v := a.Value.(type) {
	case *tfpb.AttrValue_S:
		return "string"
	case *tfpb.AttrValue_I:
		return "int"
	case *tfpb.AttrValue_F:
		return "float"
	case *tfpb.AttrValue_B:
		return "bool"
	case *tfpb.AttrValue_Type:
		return "type"
	case *tfpb.AttrValue_Shape:
		return "shape"
	case *tfpb.AttrValue_Tensor:
		return "tensor"
	case *tfpb.AttrValue_Func:
		return "func"
	case *tfpb.AttrValue_Placeholder:
		return "placeholder"
	case *tfpb.AttrValue_List:
		l := v.List
		switch {
		case len(l.S) > 0:
			return "list(string)"
		case len(l.I) > 0:
			return "list(int)"
		case len(l.F) > 0:
			return "list(float)"
		case len(l.B) > 0:
			return "list(bool)"
		case len(l.Type) > 0:
			return "list(type)"
		case len(l.Shape) > 0:
			return "list(shape)"
		case len(l.Tensor) > 0:
			return "list(tensor)"
		case len(l.Func) > 0:
			return "list(func)"
		}
		return "list"
	}
	return "<Unknown AttrValue type>"
}

func wrongKind(a *tfpb.AttrValue, want string) error {
	return status.InvalidArg("AttrValue had value with type '%s' when '%s' expected", attrKindName(a), want)
}

func listOf(a *tfpb.AttrValue, name string) (*tfpb.AttrValue_ListValue, error) {
	l, ok := a.Value.(*tfpb.AttrValue_List)
	if !ok {
		return nil, status.InvalidArg("Value for '%s' is not a list.", name)
	}
	if l.List == nil {
		return &tfpb.AttrValue_ListValue{}, nil
	}
	return l.List, nil
}

//export msOperationGetAttrMetadata
func msOperationGetAttrMetadata(op *C.TF_Operation, name *C.char, md *C.TF_AttrMetadata, s *C.TF_Status) {
	defer recoverTo(s, "TF_OperationGetAttrMetadata")
	n, a, err := attrValue(op, name)
	if err != nil {
		setStatus(s, err)
		return
	}
	single := func(t C.TF_AttrType, size int64) {
		md.is_list, md.list_size, md._type, md.total_size = 0, -1, t, C.int64_t(size)
	}
	switch v := a.Value.(type) {
	case *tfpb.AttrValue_S:
		single(C.TF_ATTR_STRING, int64(len(v.S)))
	case *tfpb.AttrValue_I:
		single(C.TF_ATTR_INT, -1)
	case *tfpb.AttrValue_F:
		single(C.TF_ATTR_FLOAT, -1)
	case *tfpb.AttrValue_B:
		single(C.TF_ATTR_BOOL, -1)
	case *tfpb.AttrValue_Type:
		single(C.TF_ATTR_TYPE, -1)
	case *tfpb.AttrValue_Shape:
		size := int64(-1)
		if !v.Shape.GetUnknownRank() {
			size = int64(len(v.Shape.GetDim()))
		}
		single(C.TF_ATTR_SHAPE, size)
	case *tfpb.AttrValue_Tensor:
		single(C.TF_ATTR_TENSOR, -1)
	case *tfpb.AttrValue_Placeholder:
		single(C.TF_ATTR_PLACEHOLDER, -1)
	case *tfpb.AttrValue_Func:
		single(C.TF_ATTR_FUNC, -1)
	case *tfpb.AttrValue_List:
		l := v.List
		if l == nil {
			l = &tfpb.AttrValue_ListValue{}
		}
		md.is_list, md.list_size, md.total_size = 1, 0, -1
		set := func(t C.TF_AttrType, size int) { md._type, md.list_size = t, C.int64_t(size) }
		switch {
		case len(l.S) > 0:
			set(C.TF_ATTR_STRING, len(l.S))
			total := 0
			for _, b := range l.S {
				total += len(b)
			}
			md.total_size = C.int64_t(total)
		case len(l.I) > 0:
			set(C.TF_ATTR_INT, len(l.I))
		case len(l.F) > 0:
			set(C.TF_ATTR_FLOAT, len(l.F))
		case len(l.B) > 0:
			set(C.TF_ATTR_BOOL, len(l.B))
		case len(l.Type) > 0:
			set(C.TF_ATTR_TYPE, len(l.Type))
		case len(l.Shape) > 0:
			set(C.TF_ATTR_SHAPE, len(l.Shape))
			total := 0
			for _, sh := range l.Shape {
				if !sh.GetUnknownRank() {
					total += len(sh.GetDim())
				}
			}
			md.total_size = C.int64_t(total)
		case len(l.Tensor) > 0:
			set(C.TF_ATTR_TENSOR, len(l.Tensor))
		case len(l.Func) > 0:
			set(C.TF_ATTR_FUNC, len(l.Func))
		default:
			// Empty: the type comes from the OpDef. TF leaves it unset (here
			// 0) without an error for an attr the OpDef does not declare.
			typ := graph.AttrValueType(n.Def, goStr(name))
			kinds := map[string]C.TF_AttrType{
				"list(string)": C.TF_ATTR_STRING, "list(int)": C.TF_ATTR_INT,
				"list(float)": C.TF_ATTR_FLOAT, "list(bool)": C.TF_ATTR_BOOL,
				"list(type)": C.TF_ATTR_TYPE, "list(shape)": C.TF_ATTR_SHAPE,
				"list(tensor)": C.TF_ATTR_TENSOR, "list(func)": C.TF_ATTR_FUNC,
			}
			k, ok := kinds[typ]
			if !ok && typ != "" {
				setStatus(s, status.InvalidArg("Attribute '%s' has an empty value of an unrecognized type '%s'", goStr(name), typ))
				return
			}
			md._type = k
		}
	default:
		setStatus(s, status.InvalidArg("Attribute '%s' has no value set", goStr(name)))
		return
	}
	setStatus(s, nil)
}

//export msOperationGetAttrString
func msOperationGetAttrString(op *C.TF_Operation, name *C.char, value unsafe.Pointer, max C.size_t, s *C.TF_Status) {
	defer recoverTo(s, "TF_OperationGetAttrString")
	_, a, err := attrValue(op, name)
	if err != nil {
		setStatus(s, err)
		return
	}
	v, ok := a.Value.(*tfpb.AttrValue_S)
	if !ok {
		setStatus(s, status.InvalidArg("Attribute '%s' is not a string", goStr(name)))
		return
	}
	if max > 0 && value != nil {
		copy(unsafe.Slice((*byte)(value), int(max)), v.S)
	}
	setStatus(s, nil)
}

//export msOperationGetAttrStringList
func msOperationGetAttrStringList(op *C.TF_Operation, name *C.char, values *unsafe.Pointer, lengths *C.size_t, max C.int, storage unsafe.Pointer, size C.size_t, s *C.TF_Status) {
	defer recoverTo(s, "TF_OperationGetAttrStringList")
	_, a, err := attrValue(op, name)
	if err == nil {
		var l *tfpb.AttrValue_ListValue
		if l, err = listOf(a, goStr(name)); err == nil {
			n := min(int(max), len(l.S))
			if n > 0 && (values == nil || lengths == nil) {
				err = nullArg("TF_OperationGetAttrStringList", "values")
			} else if n > 0 {
				vals := unsafe.Slice(values, n)
				lens := unsafe.Slice(lengths, n)
				off := 0
				for i := 0; i < n; i++ {
					str := l.S[i]
					vals[i] = unsafe.Add(storage, off)
					lens[i] = C.size_t(len(str))
					if off+len(str) > int(size) {
						err = status.InvalidArg("Not enough storage to hold the requested list of strings")
						break
					}
					copy(unsafe.Slice((*byte)(unsafe.Add(storage, off)), len(str)), str)
					off += len(str)
				}
			}
		}
	}
	setStatus(s, err)
}

// scalarAttr fetches a scalar attr of the wanted kind.
func scalarAttr(op *C.TF_Operation, name *C.char, want string) (*tfpb.AttrValue, error) {
	_, a, err := getAttr(op, name)
	if err != nil {
		_, n, nerr := nodeOf(op)
		if nerr == nil && status.CodeOf(err) == status.NotFound {
			return nil, status.Errorf(status.NotFound, "No attr named '%s' in NodeDef '%s'", goStr(name), n.Name)
		}
		return nil, err
	}
	if attrKindName(a) != want {
		return nil, wrongKind(a, want)
	}
	return a, nil
}

//export msOperationGetAttrScalar
func msOperationGetAttrScalar(op *C.TF_Operation, name *C.char, kind C.int, value unsafe.Pointer, s *C.TF_Status) {
	defer recoverTo(s, "TF_OperationGetAttr")
	want := [...]string{"int", "float", "bool", "type"}[kind]
	a, err := scalarAttr(op, name, want)
	if err == nil && value == nil {
		err = nullArg("TF_OperationGetAttr", "value")
	}
	if err != nil {
		setStatus(s, err)
		return
	}
	switch kind {
	case 0:
		*(*int64)(value) = a.GetI()
	case 1:
		*(*float32)(value) = a.GetF()
	case 2:
		*(*C.uchar)(value) = boolByte(a.GetB())
	case 3:
		*(*C.TF_DataType)(value) = C.TF_DataType(a.GetType())
	}
	setStatus(s, nil)
}

func boolByte(b bool) C.uchar {
	if b {
		return 1
	}
	return 0
}

//export msOperationGetAttrList
func msOperationGetAttrList(op *C.TF_Operation, name *C.char, kind C.int, values unsafe.Pointer, max C.int, s *C.TF_Status) {
	defer recoverTo(s, "TF_OperationGetAttrList")
	_, a, err := attrValue(op, name)
	var l *tfpb.AttrValue_ListValue
	if err == nil {
		l, err = listOf(a, goStr(name))
	}
	if err != nil {
		setStatus(s, err)
		return
	}
	if values != nil && max > 0 {
		switch kind {
		case 0:
			copy(unsafe.Slice((*int64)(values), int(max)), l.I)
		case 1:
			copy(unsafe.Slice((*float32)(values), int(max)), l.F)
		case 2:
			d := unsafe.Slice((*C.uchar)(values), int(max))
			for i := 0; i < len(l.B) && i < len(d); i++ {
				d[i] = boolByte(l.B[i])
			}
		case 3:
			d := unsafe.Slice((*C.TF_DataType)(values), int(max))
			for i := 0; i < len(l.Type) && i < len(d); i++ {
				d[i] = C.TF_DataType(l.Type[i])
			}
		}
	}
	setStatus(s, nil)
}

//export msOperationGetAttrShape
func msOperationGetAttrShape(op *C.TF_Operation, name *C.char, value *C.int64_t, n C.int, s *C.TF_Status) {
	defer recoverTo(s, "TF_OperationGetAttrShape")
	a, err := scalarAttr(op, name, "shape")
	if err != nil {
		setStatus(s, err)
		return
	}
	sh := a.GetShape()
	if !sh.GetUnknownRank() && value != nil && n > 0 {
		d := unsafe.Slice((*int64)(unsafe.Pointer(value)), int(n))
		for i := 0; i < len(sh.GetDim()) && i < len(d); i++ {
			d[i] = sh.Dim[i].Size
		}
	}
	setStatus(s, nil)
}

//export msOperationGetAttrShapeList
func msOperationGetAttrShapeList(op *C.TF_Operation, name *C.char, dims **C.int64_t, numDims *C.int, num C.int, storage *C.int64_t, size C.int, s *C.TF_Status) {
	defer recoverTo(s, "TF_OperationGetAttrShapeList")
	_, a, err := getAttr(op, name)
	var l *tfpb.AttrValue_ListValue
	if err == nil {
		l, err = listOf(a, goStr(name))
	}
	if err != nil {
		setStatus(s, err)
		return
	}
	n := min(int(num), len(l.Shape))
	if n > 0 && (dims == nil || numDims == nil) {
		setStatus(s, nullArg("TF_OperationGetAttrShapeList", "dims"))
		return
	}
	left := int(size)
	off := 0
	for i := 0; i < n; i++ {
		sh := l.Shape[i]
		r := -1
		if !sh.GetUnknownRank() {
			r = len(sh.GetDim())
		}
		unsafe.Slice(numDims, n)[i] = C.int(r)
		unsafe.Slice(dims, n)[i] = (*C.int64_t)(unsafe.Add(unsafe.Pointer(storage), off*8))
		if r < 0 {
			continue
		}
		if left < r {
			setStatus(s, status.InvalidArg("Not enough storage to hold the requested list of shapes"))
			return
		}
		left -= r
		st := unsafe.Slice((*int64)(unsafe.Pointer(storage)), int(size))
		for j := 0; j < r; j++ {
			st[off+j] = sh.Dim[j].Size
		}
		off += r
	}
	setStatus(s, nil)
}

//export msOperationGetAttrTensorShapeProto
func msOperationGetAttrTensorShapeProto(op *C.TF_Operation, name *C.char, buf *C.TF_Buffer, s *C.TF_Status) {
	defer recoverTo(s, "TF_OperationGetAttrTensorShapeProto")
	_, a, err := attrValue(op, name)
	if err == nil {
		if v, ok := a.Value.(*tfpb.AttrValue_Shape); ok {
			err = writeProto(buf, v.Shape)
		} else {
			err = status.InvalidArg("Value for '%s' is not a shape.", goStr(name))
		}
	}
	setStatus(s, err)
}

//export msOperationGetAttrTensorShapeProtoList
func msOperationGetAttrTensorShapeProtoList(op *C.TF_Operation, name *C.char, values **C.TF_Buffer, max C.int, s *C.TF_Status) {
	defer recoverTo(s, "TF_OperationGetAttrTensorShapeProtoList")
	_, a, err := attrValue(op, name)
	var l *tfpb.AttrValue_ListValue
	if err == nil {
		l, err = listOf(a, goStr(name))
	}
	if err == nil {
		n := min(int(max), len(l.Shape))
		if n > 0 && values == nil {
			err = nullArg("TF_OperationGetAttrTensorShapeProtoList", "values")
		} else if n > 0 {
			d := unsafe.Slice(values, n)
			for i := 0; i < n; i++ {
				d[i] = C.TF_NewBuffer()
				if err = writeProto(d[i], l.Shape[i]); err != nil {
					for j := 0; j <= i; j++ {
						C.TF_DeleteBuffer(d[j])
					}
					break
				}
			}
		}
	}
	setStatus(s, err)
}

//export msOperationGetAttrTensor
func msOperationGetAttrTensor(op *C.TF_Operation, name *C.char, value **C.TF_Tensor, s *C.TF_Status) {
	defer recoverTo(s, "TF_OperationGetAttrTensor")
	if value == nil {
		setStatus(s, nullArg("TF_OperationGetAttrTensor", "value"))
		return
	}
	*value = nil
	a, err := scalarAttr(op, name, "tensor")
	var t *tensor.Tensor
	if err == nil {
		t, err = tensor.FromProto(a.GetTensor())
	}
	if err == nil {
		*value, err = cTensor(t)
	}
	setStatus(s, err)
}

//export msOperationGetAttrTensorList
func msOperationGetAttrTensorList(op *C.TF_Operation, name *C.char, values **C.TF_Tensor, max C.int, s *C.TF_Status) {
	defer recoverTo(s, "TF_OperationGetAttrTensorList")
	_, a, err := getAttr(op, name)
	var l *tfpb.AttrValue_ListValue
	if err == nil {
		l, err = listOf(a, goStr(name))
	}
	if err == nil {
		n := min(int(max), len(l.Tensor))
		if n > 0 && values == nil {
			err = nullArg("TF_OperationGetAttrTensorList", "values")
		}
		for i := 0; i < n && err == nil; i++ {
			var t *tensor.Tensor
			if t, err = tensor.FromProto(l.Tensor[i]); err == nil {
				unsafe.Slice(values, n)[i], err = cTensor(t)
			}
		}
	}
	setStatus(s, err)
}

//export msOperationGetAttrValueProto
func msOperationGetAttrValueProto(op *C.TF_Operation, name *C.char, buf *C.TF_Buffer, s *C.TF_Status) {
	defer recoverTo(s, "TF_OperationGetAttrValueProto")
	_, a, err := attrValue(op, name)
	if err == nil {
		err = writeProto(buf, a)
	}
	setStatus(s, err)
}

// Operation building: TF_NewOperation ... TF_FinishOperation.

// descObj is the Go side of a TF_OperationDescription. err keeps the first
// error of a setter that has no status; TF_FinishOperation reports it.
type descObj struct {
	g   *graphObj
	b   *graph.Builder
	err error
}

func descOf(h C.uintptr_t) *descObj {
	if d, ok := handleValue(h).(*descObj); ok {
		return d
	}
	return nil
}

func (d *descObj) fail(err error) {
	if d.err == nil {
		d.err = err
	}
}

//export msNewOperation
func msNewOperation(g *C.TF_Graph, opType, name *C.char) C.uintptr_t {
	defer recoverQuiet()
	d := &descObj{}
	o, err := graphOf(g)
	if err != nil {
		d.err = status.InvalidArg("TF_NewOperation: graph is NULL")
	} else {
		d.g = o
		d.b = o.g.NewBuilder(goStr(opType), goStr(name))
	}
	return C.uintptr_t(cgo.NewHandle(d))
}

//export msSetDevice
func msSetDevice(h C.uintptr_t, dev *C.char) {
	defer recoverQuiet()
	if d := descOf(h); d != nil && d.b != nil {
		d.b.SetDevice(goStr(dev))
	}
}

//export msAddInput
func msAddInput(h C.uintptr_t, in *C.TF_Output) {
	defer recoverQuiet()
	d := descOf(h)
	if d == nil || d.b == nil {
		return
	}
	out, err := outputIn(d.g, in)
	if err != nil {
		d.fail(status.Wrap(err, "TF_AddInput"))
		return
	}
	d.b.AddInput(out)
}

//export msAddInputList
func msAddInputList(h C.uintptr_t, ins *C.TF_Output, n C.int) {
	defer recoverQuiet()
	d := descOf(h)
	if d == nil || d.b == nil {
		return
	}
	if n > 0 && ins == nil {
		d.fail(nullArg("TF_AddInputList", "inputs"))
		return
	}
	outs := make([]graph.Output, 0, max(int(n), 0))
	for i := 0; i < int(n); i++ {
		out, err := outputIn(d.g, &unsafe.Slice(ins, int(n))[i])
		if err != nil {
			d.fail(status.Wrap(err, "TF_AddInputList"))
			return
		}
		outs = append(outs, out)
	}
	d.b.AddInputList(outs)
}

//export msAddControlInput
func msAddControlInput(h C.uintptr_t, op *C.TF_Operation, colocate C.int) {
	defer recoverQuiet()
	d := descOf(h)
	if d == nil || d.b == nil {
		return
	}
	n, err := nodeIn(d.g, op)
	if err != nil {
		d.fail(err)
		return
	}
	if colocate != 0 {
		d.b.ColocateWith(n)
	} else {
		d.b.AddControlInput(n)
	}
}

func (d *descObj) set(name *C.char, v *tfpb.AttrValue) {
	if d.b != nil {
		d.b.SetAttr(goStr(name), v)
	}
}

func shapeProto(dims *C.int64_t, n C.int) *tfpb.TensorShapeProto {
	if n < 0 {
		return &tfpb.TensorShapeProto{UnknownRank: true}
	}
	p := &tfpb.TensorShapeProto{}
	if n > 0 && dims != nil {
		for _, v := range unsafe.Slice((*int64)(unsafe.Pointer(dims)), int(n)) {
			// Any negative size is an unknown dimension, as TF's PartialTensorShape makes it.
			p.Dim = append(p.Dim, &tfpb.TensorShapeProto_Dim{Size: max(v, -1)})
		}
	}
	return p
}

// Kinds of msSetAttrScalar and msSetAttrList.
const (
	kindString = iota
	kindInt
	kindFloat
	kindBool
	kindType
	kindPlaceholder
	kindFunc
)

//export msSetAttrScalar
func msSetAttrScalar(h C.uintptr_t, name *C.char, kind C.int, p unsafe.Pointer, n C.size_t, i C.int64_t, f C.float) {
	defer recoverQuiet()
	d := descOf(h)
	if d == nil {
		return
	}
	var v *tfpb.AttrValue
	switch kind {
	case kindString:
		v = &tfpb.AttrValue{Value: &tfpb.AttrValue_S{S: nonNil(goBytes(p, n))}}
	case kindInt:
		v = &tfpb.AttrValue{Value: &tfpb.AttrValue_I{I: int64(i)}}
	case kindFloat:
		v = &tfpb.AttrValue{Value: &tfpb.AttrValue_F{F: float32(f)}}
	case kindBool:
		v = &tfpb.AttrValue{Value: &tfpb.AttrValue_B{B: i != 0}}
	case kindType:
		v = &tfpb.AttrValue{Value: &tfpb.AttrValue_Type{Type: tfpb.DataType(i)}}
	case kindPlaceholder:
		v = &tfpb.AttrValue{Value: &tfpb.AttrValue_Placeholder{Placeholder: string(goBytes(p, n))}}
	case kindFunc:
		v = &tfpb.AttrValue{Value: &tfpb.AttrValue_Func{Func: &tfpb.NameAttrList{Name: string(goBytes(p, n))}}}
	}
	d.set(name, v)
}

func nonNil(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}

//export msSetAttrList
func msSetAttrList(h C.uintptr_t, name *C.char, kind C.int, p unsafe.Pointer, lens *C.size_t, n C.int) {
	defer recoverQuiet()
	d := descOf(h)
	if d == nil {
		return
	}
	l := &tfpb.AttrValue_ListValue{}
	cnt := max(int(n), 0)
	if cnt > 0 && p == nil {
		d.fail(nullArg("TF_SetAttr*List", "values"))
		return
	}
	switch kind {
	case kindString:
		ptrs := unsafe.Slice((*unsafe.Pointer)(p), cnt)
		ls := unsafe.Slice(lens, cnt)
		for i := 0; i < cnt; i++ {
			l.S = append(l.S, nonNil(goBytes(ptrs[i], ls[i])))
		}
	case kindInt:
		l.I = append([]int64{}, unsafe.Slice((*int64)(p), cnt)...)
	case kindFloat:
		l.F = append([]float32{}, unsafe.Slice((*float32)(p), cnt)...)
	case kindBool:
		for _, b := range unsafe.Slice((*C.uchar)(p), cnt) {
			l.B = append(l.B, b != 0)
		}
	case kindType:
		for _, t := range unsafe.Slice((*C.TF_DataType)(p), cnt) {
			l.Type = append(l.Type, tfpb.DataType(t))
		}
	}
	d.set(name, &tfpb.AttrValue{Value: &tfpb.AttrValue_List{List: l}})
}

//export msSetAttrShape
func msSetAttrShape(h C.uintptr_t, name *C.char, dims *C.int64_t, n C.int) {
	defer recoverQuiet()
	if d := descOf(h); d != nil {
		d.set(name, &tfpb.AttrValue{Value: &tfpb.AttrValue_Shape{Shape: shapeProto(dims, n)}})
	}
}

//export msSetAttrShapeList
func msSetAttrShapeList(h C.uintptr_t, name *C.char, dims **C.int64_t, numDims *C.int, n C.int) {
	defer recoverQuiet()
	d := descOf(h)
	if d == nil {
		return
	}
	l := &tfpb.AttrValue_ListValue{}
	if n > 0 {
		if dims == nil || numDims == nil {
			d.fail(nullArg("TF_SetAttrShapeList", "dims"))
			return
		}
		ds := unsafe.Slice(dims, int(n))
		nd := unsafe.Slice(numDims, int(n))
		for i := range ds {
			l.Shape = append(l.Shape, shapeProto(ds[i], nd[i]))
		}
	}
	d.set(name, &tfpb.AttrValue{Value: &tfpb.AttrValue_List{List: l}})
}

//export msSetAttrProtos
func msSetAttrProtos(h C.uintptr_t, name *C.char, kind C.int, protos *unsafe.Pointer, lens *C.size_t, n C.int, list C.int, s *C.TF_Status) {
	defer recoverTo(s, "TF_SetAttr")
	d := descOf(h)
	if d == nil {
		setStatus(s, nullArg("TF_SetAttr", "description"))
		return
	}
	cnt := max(int(n), 0)
	if cnt > 0 && (protos == nil || lens == nil) {
		setStatus(s, nullArg("TF_SetAttr", "proto"))
		return
	}
	ps := unsafe.Slice(protos, cnt)
	ls := unsafe.Slice(lens, cnt)
	switch kind {
	case 0: // TensorShapeProto
		var shapes []*tfpb.TensorShapeProto
		for i := range ps {
			sp := &tfpb.TensorShapeProto{}
			if err := proto.Unmarshal(goBytes(ps[i], ls[i]), sp); err != nil {
				setStatus(s, status.InvalidArg("Unparseable TensorShapeProto"))
				return
			}
			shapes = append(shapes, sp)
		}
		if list != 0 {
			d.set(name, &tfpb.AttrValue{Value: &tfpb.AttrValue_List{List: &tfpb.AttrValue_ListValue{Shape: shapes}}})
		} else if len(shapes) == 1 {
			d.set(name, &tfpb.AttrValue{Value: &tfpb.AttrValue_Shape{Shape: shapes[0]}})
		}
	case 1: // AttrValue
		v := &tfpb.AttrValue{}
		if cnt != 1 || proto.Unmarshal(goBytes(ps[0], ls[0]), v) != nil {
			setStatus(s, status.InvalidArg("Unparseable AttrValue proto"))
			return
		}
		d.set(name, v)
	}
	setStatus(s, nil)
}

//export msSetAttrTensors
func msSetAttrTensors(h C.uintptr_t, name *C.char, ts **C.TF_Tensor, n C.int, list C.int, s *C.TF_Status) {
	defer recoverTo(s, "TF_SetAttrTensor")
	d := descOf(h)
	if d == nil {
		setStatus(s, nullArg("TF_SetAttrTensor", "description"))
		return
	}
	cnt := max(int(n), 0)
	if cnt > 0 && ts == nil {
		setStatus(s, nullArg("TF_SetAttrTensor", "value"))
		return
	}
	var protos []*tfpb.TensorProto
	for i, ct := range unsafe.Slice(ts, cnt) {
		t, err := goTensor(ct)
		if err != nil {
			setStatus(s, status.Wrap(err, "attr '%s' tensor %d", goStr(name), i))
			return
		}
		protos = append(protos, tensor.ToAttrProto(t))
	}
	if list != 0 {
		d.set(name, &tfpb.AttrValue{Value: &tfpb.AttrValue_List{List: &tfpb.AttrValue_ListValue{Tensor: protos}}})
	} else if len(protos) == 1 {
		d.set(name, &tfpb.AttrValue{Value: &tfpb.AttrValue_Tensor{Tensor: protos[0]}})
	}
	setStatus(s, nil)
}

//export msFinishOperation
func msFinishOperation(h C.uintptr_t, s *C.TF_Status) (op *C.TF_Operation) {
	defer recoverTo(s, "TF_FinishOperation")
	d := descOf(h)
	if h != 0 {
		defer cgo.Handle(h).Delete()
	}
	if d == nil {
		setStatus(s, nullArg("TF_FinishOperation", "description"))
		return nil
	}
	if d.err != nil {
		setStatus(s, d.err)
		return nil
	}
	n, err := d.b.Finish()
	if err != nil {
		setStatus(s, err)
		return nil
	}
	setStatus(s, nil)
	return d.g.op(n)
}

var _ = fmt.Sprint
