package cpu

import (
	"google.golang.org/protobuf/proto"

	"mstream/graph"
	"mstream/kernels"
	"mstream/proto/tfpb"
	"mstream/status"
	"mstream/tensor"
)

// ParseExample and ParseExampleV2 decode serialized tf.Examples into dense
// features (fixed shapes, with a default or required) and sparse ones
// (every value of the feature, as an [N, rank+1] index, the values and the
// dense shape). Ragged features and variable-length dense features (a
// dense shape with an unknown dimension) are UNIMPLEMENTED.

type exampleSpec struct {
	v2          bool
	sparseTypes []tensor.DType
	denseTypes  []tensor.DType
	denseShapes []tensor.Shape
}

func init() {
	for _, v2 := range []bool{false, true} {
		v2 := v2
		op := "ParseExample"
		if v2 {
			op = "ParseExampleV2"
		}
		reg(op, nil, nil, func(n *graph.Node) (kernels.Kernel, error) {
			sp := &exampleSpec{v2: v2}
			for _, t := range n.Attrs["sparse_types"].GetList().GetType() {
				sp.sparseTypes = append(sp.sparseTypes, tensor.DType(t))
			}
			for _, t := range n.Attrs["Tdense"].GetList().GetType() {
				sp.denseTypes = append(sp.denseTypes, tensor.DType(t))
			}
			for _, s := range n.Attrs["dense_shapes"].GetList().GetShape() {
				ps := tensor.ShapeFromProto(s)
				if !ps.FullyDefined() {
					return nil, status.Errorf(status.Unimplemented, "%s: variable-length dense feature (dense shape %v) is not supported", n.Name, ps)
				}
				sp.denseShapes = append(sp.denseShapes, tensor.Shape(ps.Dims))
			}
			if len(n.Attrs["ragged_value_types"].GetList().GetType()) > 0 {
				return nil, status.Errorf(status.Unimplemented, "%s: ragged features are not supported", n.Name)
			}
			if len(sp.denseShapes) != len(sp.denseTypes) {
				return nil, status.Errorf(status.InvalidArgument, "%s: len(dense_shapes) != len(dense_keys): %d vs. %d", n.Name, len(sp.denseShapes), len(sp.denseTypes))
			}
			return kernels.KernelFunc(func(ctx *kernels.Context) error { return sp.parse(ctx) }), nil
		})
	}
}

// featureValues returns a feature's values as the dtype asks, or an error
// naming its kind when it holds another.
func featureValues(f *tfpb.Feature, dt tensor.DType) (n int, get func(out *tensor.Tensor, at int), kind string) {
	switch k := f.GetKind().(type) {
	case *tfpb.Feature_Int64List:
		v := k.Int64List.GetValue()
		return len(v), func(o *tensor.Tensor, at int) { copy(o.I64()[at:], v) }, "int64"
	case *tfpb.Feature_FloatList:
		v := k.FloatList.GetValue()
		return len(v), func(o *tensor.Tensor, at int) { copy(o.F32()[at:], v) }, "float"
	case *tfpb.Feature_BytesList:
		v := k.BytesList.GetValue()
		return len(v), func(o *tensor.Tensor, at int) {
			for i, b := range v {
				o.Strs[at+i] = append([]byte{}, b...)
			}
		}, "string"
	}
	return 0, func(*tensor.Tensor, int) {}, ""
}

func kindOf(dt tensor.DType) string {
	switch dt {
	case tensor.Int64:
		return "int64"
	case tensor.Float:
		return "float"
	}
	return "string"
}

func (sp *exampleSpec) parse(ctx *kernels.Context) error {
	ser := ctx.Input(0)
	var sparseKeys, denseKeys [][]byte
	var defaults []*tensor.Tensor
	if sp.v2 {
		sparseKeys, denseKeys = ctx.Input(2).Strs, ctx.Input(3).Strs
		if ctx.Input(4).NumElements() != 0 {
			return ctx.Errorf(status.Unimplemented, "ragged features are not supported")
		}
		defaults = ctx.Inputs[5:]
		if len(ser.Shape) > 1 {
			return ctx.Errorf(status.InvalidArgument, "Expected serialized to be a scalar or vector, got shape: %v", ser.Shape)
		}
	} else {
		ns, nd := len(sp.sparseTypes), len(sp.denseTypes)
		for _, t := range ctx.Inputs[2 : 2+ns] {
			sparseKeys = append(sparseKeys, t.Strs[0])
		}
		for _, t := range ctx.Inputs[2+ns : 2+ns+nd] {
			denseKeys = append(denseKeys, t.Strs[0])
		}
		defaults = ctx.Inputs[2+ns+nd:]
		if len(ser.Shape) != 1 {
			return ctx.Errorf(status.InvalidArgument, "Expected serialized to be a vector, got shape: %v", ser.Shape)
		}
	}
	if len(sparseKeys) != len(sp.sparseTypes) || len(denseKeys) != len(sp.denseTypes) {
		return ctx.Errorf(status.InvalidArgument, "Expected len(sparse_keys) == len(sparse_types) and len(dense_keys) == len(Tdense): %d, %d, %d, %d", len(sparseKeys), len(sp.sparseTypes), len(denseKeys), len(sp.denseTypes))
	}
	for i, d := range defaults {
		if d.NumElements() != 0 && d.NumElements() != sp.denseShapes[i].NumElements() {
			return ctx.Errorf(status.InvalidArgument, "Key: %s, default value has %d elements but the dense shape %v has %d", denseKeys[i], d.NumElements(), sp.denseShapes[i], sp.denseShapes[i].NumElements())
		}
	}
	examples := make([]*tfpb.Example, len(ser.Strs))
	for b, s := range ser.Strs {
		var ex tfpb.Example
		if err := proto.Unmarshal(s, &ex); err != nil {
			return ctx.Errorf(status.InvalidArgument, "Could not parse example input, value: '%s'", s)
		}
		examples[b] = &ex
	}
	feature := func(b int, key []byte) *tfpb.Feature {
		return examples[b].GetFeatures().GetFeature()[string(key)]
	}
	name := func(b int) string {
		if names := ctx.Input(1); names.NumElements() > int64(b) {
			return string(names.Strs[b])
		}
		return "<unknown>"
	}
	ns := len(sp.sparseTypes)
	batch := tensor.Shape{int64(len(ser.Strs))}
	if len(ser.Shape) == 0 {
		batch = tensor.Shape{}
	}
	for i, dt := range sp.sparseTypes {
		total, widest := 0, 0
		counts := make([]int, len(examples))
		for b := range examples {
			if f := feature(b, sparseKeys[i]); f != nil {
				n, _, kind := featureValues(f, dt)
				if kind != "" && kind != kindOf(dt) {
					return ctx.Errorf(status.InvalidArgument, "Name: %s, Key: %s, Index: %d.  Data types don't match. Expected type: %s", name(b), sparseKeys[i], b, kindOf(dt))
				}
				counts[b] = n
				total += n
				widest = max(widest, n)
			}
		}
		rank := len(batch) + 1
		idx, err := ctx.Allocate(i, tensor.Shape{int64(total), int64(rank)})
		if err != nil {
			return err
		}
		vals, err := ctx.Allocate(ns+i, tensor.Shape{int64(total)})
		if err != nil {
			return err
		}
		shp, err := ctx.Allocate(2*ns+i, tensor.Shape{int64(rank)})
		if err != nil {
			return err
		}
		at := 0
		for b := range examples {
			if counts[b] == 0 {
				continue
			}
			_, get, _ := featureValues(feature(b, sparseKeys[i]), dt)
			get(vals, at)
			for j := 0; j < counts[b]; j++ {
				if rank == 2 {
					idx.I64()[2*(at+j)], idx.I64()[2*(at+j)+1] = int64(b), int64(j)
				} else {
					idx.I64()[at+j] = int64(j)
				}
			}
			at += counts[b]
		}
		copy(shp.I64(), append(append([]int64{}, batch...), int64(widest)))
	}
	for i, dt := range sp.denseTypes {
		shape := append(append(tensor.Shape{}, batch...), sp.denseShapes[i]...)
		out, err := ctx.Allocate(3*ns+i, shape)
		if err != nil {
			return err
		}
		per := int(sp.denseShapes[i].NumElements())
		for b := range examples {
			f := feature(b, denseKeys[i])
			n, get, kind := 0, func(*tensor.Tensor, int) {}, ""
			if f != nil {
				n, get, kind = featureValues(f, dt)
			}
			if f == nil || kind == "" && n == 0 {
				d := defaults[i]
				if d.NumElements() == 0 {
					return ctx.Errorf(status.InvalidArgument, "Name: %s, Feature: %s (data type: %s) is required but could not be found.", name(b), denseKeys[i], kindOf(dt))
				}
				if dt == tensor.String {
					copy(out.Strs[b*per:], d.Strs)
				} else {
					sz := dt.Size() * per
					copy(out.Buf[b*sz:], d.Buf)
				}
				continue
			}
			if kind != kindOf(dt) {
				return ctx.Errorf(status.InvalidArgument, "Name: %s, Key: %s, Index: %d.  Data types don't match. Data type: %s but expected type: %s", name(b), denseKeys[i], b, kind, kindOf(dt))
			}
			if n != per {
				return ctx.Errorf(status.InvalidArgument, "Name: %s, Key: %s, Index: %d.  Number of %s values != expected.  Values size: %d but output shape: %v", name(b), denseKeys[i], b, kind, n, sp.denseShapes[i])
			}
			get(out, b*per)
		}
	}
	return nil
}
