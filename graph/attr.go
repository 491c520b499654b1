package graph

import (
	"fmt"
	"strings"

	"mstream/graph/opdefs"
	"mstream/proto/tfpb"
	"mstream/tensor"
)

func lookupOpDef(op string) *tfpb.OpDef { return opdefs.Lookup(op) }
func allOpDefs() *tfpb.OpList           { return opdefs.All() }

// AttrValueType returns the declared type of attr name in def ("int",
// "list(type)", ...), or "" when def has no such attr.
func AttrValueType(def *tfpb.OpDef, name string) string {
	if a := attrDef(def, name); a != nil {
		return a.Type
	}
	return ""
}

func attrDef(def *tfpb.OpDef, name string) *tfpb.OpDef_AttrDef {
	if def == nil {
		return nil
	}
	for _, a := range def.Attr {
		if a.Name == name {
			return a
		}
	}
	return nil
}

// Small AttrValue constructors.
func AttrInt(v int64) *tfpb.AttrValue     { return &tfpb.AttrValue{Value: &tfpb.AttrValue_I{I: v}} }
func AttrFloat(v float32) *tfpb.AttrValue { return &tfpb.AttrValue{Value: &tfpb.AttrValue_F{F: v}} }
func AttrBool(v bool) *tfpb.AttrValue     { return &tfpb.AttrValue{Value: &tfpb.AttrValue_B{B: v}} }
func AttrString(v string) *tfpb.AttrValue {
	return &tfpb.AttrValue{Value: &tfpb.AttrValue_S{S: []byte(v)}}
}
func AttrType(t tensor.DType) *tfpb.AttrValue {
	return &tfpb.AttrValue{Value: &tfpb.AttrValue_Type{Type: tfpb.DataType(t)}}
}
func AttrShape(s tensor.PartialShape) *tfpb.AttrValue {
	return &tfpb.AttrValue{Value: &tfpb.AttrValue_Shape{Shape: tensor.ShapeToProto(s)}}
}
func AttrTensor(t *tensor.Tensor) *tfpb.AttrValue {
	return &tfpb.AttrValue{Value: &tfpb.AttrValue_Tensor{Tensor: tensor.ToProto(t)}}
}
func AttrList(l *tfpb.AttrValue_ListValue) *tfpb.AttrValue {
	if l == nil {
		l = &tfpb.AttrValue_ListValue{}
	}
	return &tfpb.AttrValue{Value: &tfpb.AttrValue_List{List: l}}
}
func AttrTypeList(ts []tensor.DType) *tfpb.AttrValue {
	l := &tfpb.AttrValue_ListValue{Type: make([]tfpb.DataType, len(ts))}
	for i, t := range ts {
		l.Type[i] = tfpb.DataType(t)
	}
	return AttrList(l)
}
func AttrIntList(v []int64) *tfpb.AttrValue {
	return AttrList(&tfpb.AttrValue_ListValue{I: append([]int64{}, v...)})
}
func AttrStringList(v []string) *tfpb.AttrValue {
	l := &tfpb.AttrValue_ListValue{}
	for _, s := range v {
		l.S = append(l.S, []byte(s))
	}
	return AttrList(l)
}

// checkAttrType reports whether v holds a value of declared type typ, and
// checks minimum and allowed_values of ad.
func checkAttrValue(ad *tfpb.OpDef_AttrDef, v *tfpb.AttrValue) error {
	typ := ad.Type
	if strings.HasPrefix(typ, "list(") {
		l, ok := v.Value.(*tfpb.AttrValue_List)
		if !ok {
			return fmt.Errorf("attr '%s' expects a %s, got %s", ad.Name, typ, attrKind(v))
		}
		elem := typ[5 : len(typ)-1]
		n := listLen(l.List, elem)
		if other := listLenAny(l.List); other != n {
			return fmt.Errorf("attr '%s' expects a %s, got a list of another type", ad.Name, typ)
		}
		if ad.HasMinimum && int64(n) < ad.Minimum {
			return fmt.Errorf("attr '%s' of type %s has length %d less than minimum %d", ad.Name, typ, n, ad.Minimum)
		}
		if ad.AllowedValues != nil && elem == "type" {
			for _, t := range l.List.Type {
				if !typeAllowed(ad, t) {
					return fmt.Errorf("value for attr '%s' of %s is not in the list of allowed values", ad.Name, tensor.DType(t))
				}
			}
		}
		return nil
	}
	ok := false
	switch typ {
	case "int":
		var x *tfpb.AttrValue_I
		x, ok = v.Value.(*tfpb.AttrValue_I)
		if ok && ad.HasMinimum && x.I < ad.Minimum {
			return fmt.Errorf("value for attr '%s' of %d must be at least minimum %d", ad.Name, x.I, ad.Minimum)
		}
	case "float":
		_, ok = v.Value.(*tfpb.AttrValue_F)
	case "bool":
		_, ok = v.Value.(*tfpb.AttrValue_B)
	case "string":
		var x *tfpb.AttrValue_S
		x, ok = v.Value.(*tfpb.AttrValue_S)
		if ok && ad.AllowedValues != nil {
			found := false
			for _, s := range ad.AllowedValues.GetList().GetS() {
				if string(s) == string(x.S) {
					found = true
				}
			}
			if !found {
				return fmt.Errorf("value for attr '%s' of \"%s\" is not in the list of allowed values", ad.Name, x.S)
			}
		}
	case "type":
		var x *tfpb.AttrValue_Type
		x, ok = v.Value.(*tfpb.AttrValue_Type)
		if ok && !typeAllowed(ad, x.Type) {
			return fmt.Errorf("value for attr '%s' of %s is not in the list of allowed values", ad.Name, tensor.DType(x.Type))
		}
	case "shape":
		_, ok = v.Value.(*tfpb.AttrValue_Shape)
	case "tensor":
		_, ok = v.Value.(*tfpb.AttrValue_Tensor)
	case "func":
		_, ok = v.Value.(*tfpb.AttrValue_Func)
	default:
		ok = true
	}
	if !ok {
		return fmt.Errorf("attr '%s' expects a %s, got %s", ad.Name, typ, attrKind(v))
	}
	return nil
}

func typeAllowed(ad *tfpb.OpDef_AttrDef, t tfpb.DataType) bool {
	if ad.AllowedValues == nil {
		return true
	}
	l := ad.AllowedValues.GetList()
	if l == nil || len(l.Type) == 0 {
		return true
	}
	for _, a := range l.Type {
		if a == t {
			return true
		}
	}
	return false
}

func attrKind(v *tfpb.AttrValue) string {
	switch x := v.GetValue().(type) {
	case *tfpb.AttrValue_I:
		return "int"
	case *tfpb.AttrValue_F:
		return "float"
	case *tfpb.AttrValue_B:
		return "bool"
	case *tfpb.AttrValue_S:
		return "string"
	case *tfpb.AttrValue_Type:
		return "type"
	case *tfpb.AttrValue_Shape:
		return "shape"
	case *tfpb.AttrValue_Tensor:
		return "tensor"
	case *tfpb.AttrValue_Func:
		return "func"
	case *tfpb.AttrValue_List:
		_ = x
		return "list"
	case *tfpb.AttrValue_Placeholder:
		return "placeholder"
	}
	return "no value"
}

func listLen(l *tfpb.AttrValue_ListValue, elem string) int {
	switch elem {
	case "int":
		return len(l.I)
	case "float":
		return len(l.F)
	case "bool":
		return len(l.B)
	case "string":
		return len(l.S)
	case "type":
		return len(l.Type)
	case "shape":
		return len(l.Shape)
	case "tensor":
		return len(l.Tensor)
	case "func":
		return len(l.Func)
	}
	return listLenAny(l)
}

func listLenAny(l *tfpb.AttrValue_ListValue) int {
	return len(l.I) + len(l.F) + len(l.B) + len(l.S) + len(l.Type) + len(l.Shape) + len(l.Tensor) + len(l.Func)
}
