package kerneltest

import (
	"math/rand"

	"google.golang.org/protobuf/proto"

	"mstream/proto/tfpb"
	"mstream/status"
	"mstream/tensor"
)

// ParseExample's families build Examples with the generated tf.Example
// types and expect what they hold; kernels/cpu's TestStringOpsLikeTF
// compares the kernels with TF's parser.
func init() {
	gen := func(v2 bool) Gen {
		return func(r *rand.Rand) []Case {
			var cs []Case
			for _, b := range []int{0, 1, 4} {
				var ser []string
				dense := tensor.New(tensor.Int64, tensor.Shape{int64(b), 2})
				var idx []int64
				var vals []float64
				widest := 0
				for e := 0; e < b; e++ {
					x, y := r.Int63n(1000), -r.Int63n(1000)
					dense.I64()[2*e], dense.I64()[2*e+1] = x, y
					n := r.Intn(4)
					var fv []float32
					for j := 0; j < n; j++ {
						v := float32(r.Intn(100)) / 4
						fv = append(fv, v)
						idx = append(idx, int64(e), int64(j))
						vals = append(vals, float64(v))
					}
					widest = max(widest, n)
					ex := &tfpb.Example{Features: &tfpb.Features{Feature: map[string]*tfpb.Feature{
						"d": {Kind: &tfpb.Feature_Int64List{Int64List: &tfpb.Int64List{Value: []int64{x, y}}}},
						"s": {Kind: &tfpb.Feature_FloatList{FloatList: &tfpb.FloatList{Value: fv}}},
					}}}
					raw, _ := proto.Marshal(ex)
					ser = append(ser, string(raw))
				}
				serialized := tensor.FromStrings(tensor.Shape{int64(b)}, ser)
				def := tensor.New(tensor.Int64, tensor.Shape{0})
				shapes := &tfpb.AttrValue{Value: &tfpb.AttrValue_List{List: &tfpb.AttrValue_ListValue{Shape: []*tfpb.TensorShapeProto{tensor.ShapeToProto(tensor.KnownShape(tensor.Shape{2}))}}}}
				var in []*tensor.Tensor
				var c Case
				if v2 {
					in = ins(serialized, tensor.FromStrings(tensor.Shape{0}, nil), tensor.FromStrings(tensor.Shape{1}, []string{"s"}), tensor.FromStrings(tensor.Shape{1}, []string{"d"}), tensor.FromStrings(tensor.Shape{0}, nil), def)
					c.Node = NodeFor("ParseExampleV2", Attrs{"num_sparse": AInt(1), "sparse_types": ATypes(tensor.Float), "Tdense": ATypes(tensor.Int64), "dense_shapes": shapes, "ragged_value_types": ATypes(), "ragged_split_types": ATypes()}, in, map[int]int{5: 1})
				} else {
					in = ins(serialized, tensor.FromStrings(tensor.Shape{0}, nil), tensor.FromStrings(nil, []string{"s"}), tensor.FromStrings(nil, []string{"d"}), def)
					c.Node = NodeFor("ParseExample", Attrs{"Nsparse": AInt(1), "Ndense": AInt(1), "sparse_types": ATypes(tensor.Float), "Tdense": ATypes(tensor.Int64), "dense_shapes": shapes}, in, map[int]int{2: 1, 3: 1, 4: 1})
				}
				c.Inputs = in
				c.Want = []*tensor.Tensor{
					tensor.FromI64(tensor.Shape{int64(len(vals)), 2}, idx),
					FromF64(tensor.Float, tensor.Shape{int64(len(vals))}, vals),
					tensor.FromI64(tensor.Shape{2}, []int64{int64(b), int64(widest)}),
					dense,
				}
				cs = append(cs, c)
			}
			// A required dense feature missing from an example.
			raw, _ := proto.Marshal(&tfpb.Example{})
			bad := tensor.FromStrings(tensor.Shape{1}, []string{string(raw)})
			shapes := &tfpb.AttrValue{Value: &tfpb.AttrValue_List{List: &tfpb.AttrValue_ListValue{Shape: []*tfpb.TensorShapeProto{tensor.ShapeToProto(tensor.KnownShape(tensor.Shape{1}))}}}}
			if v2 {
				in := ins(bad, tensor.FromStrings(tensor.Shape{0}, nil), tensor.FromStrings(tensor.Shape{0}, nil), tensor.FromStrings(tensor.Shape{1}, []string{"d"}), tensor.FromStrings(tensor.Shape{0}, nil), tensor.New(tensor.Int64, tensor.Shape{0}))
				cs = append(cs, Case{Node: NodeFor("ParseExampleV2", Attrs{"num_sparse": AInt(0), "sparse_types": ATypes(), "Tdense": ATypes(tensor.Int64), "dense_shapes": shapes, "ragged_value_types": ATypes(), "ragged_split_types": ATypes()}, in, map[int]int{5: 1}), Inputs: in, Err: status.InvalidArgument, ErrMsg: "is required"})
			} else {
				in := ins(bad, tensor.FromStrings(tensor.Shape{0}, nil), tensor.FromStrings(nil, []string{"d"}), tensor.New(tensor.Int64, tensor.Shape{0}))
				cs = append(cs, Case{Node: NodeFor("ParseExample", Attrs{"Nsparse": AInt(0), "Ndense": AInt(1), "sparse_types": ATypes(), "Tdense": ATypes(tensor.Int64), "dense_shapes": shapes}, in, map[int]int{2: 0, 3: 1, 4: 1}), Inputs: in, Err: status.InvalidArgument, ErrMsg: "is required"})
			}
			return cs
		}
	}
	Add("ParseExample", gen(false))
	Add("ParseExampleV2", gen(true))
}
