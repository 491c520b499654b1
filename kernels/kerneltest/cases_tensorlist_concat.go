package kerneltest

import (
	"fmt"
	"math/rand"

	"mstream/proto/tfpb"
	"mstream/status"
	"mstream/tensor"
)

// TensorListConcat/ConcatV2, TensorListSplit, TensorListResize and
// TensorListConcatLists, with references built here from the drawn
// elements (TF cannot feed or fetch a list); test/functions' tensor_array
// cases run concat() and split() programs against TF itself.
func init() {
	concat := func(op string) func(r *rand.Rand) []Case {
		return func(r *rand.Rand) []Case {
			var cs []Case
			for _, dt := range MoveTypes {
				// Elements [k_i, 3] with k_i drawn per element; in
				// ConcatV2 some are not set and take leading_dims.
				n := r.Intn(4)
				l := &tensor.List{ElemShape: tensor.PartialShape{Known: true, Dims: []int64{-1, 3}}, ElemDType: dt, MaxElems: -1, Elems: make([]*tensor.Tensor, n)}
				lead := make([]int64, n)
				var rows []*tensor.Tensor
				total := int64(0)
				for i := range l.Elems {
					lead[i] = int64(r.Intn(3))
					e := Rand(r, dt, tensor.Shape{lead[i], 3})
					if op == "TensorListConcatV2" && r.Intn(3) == 0 {
						e = tensor.New(dt, tensor.Shape{lead[i], 3})
					} else {
						l.Elems[i] = e
					}
					rows = append(rows, e)
					total += lead[i]
				}
				want := tensor.New(dt, tensor.Shape{total, 3})
				at := 0
				for _, e := range rows {
					at += copy(want.Buf[at:], e.Buf)
				}
				lengths := tensor.FromI64(tensor.Shape{int64(n)}, lead)
				lt := listTensor(l)
				before := snapshot(lt)
				var in []*tensor.Tensor
				attrs := listAttrs(dt, "", 0)
				if op == "TensorListConcatV2" {
					in = ins(lt, tensor.FromI32(tensor.Shape{2}, []int32{-1, 3}), tensor.FromI64(tensor.Shape{int64(n)}, lead))
					attrs = listAttrs(dt, "shape_type", tensor.Int32)
				} else {
					in = ins(lt)
					attrs = withAttr(attrs, "element_shape", aPartialShape(tensor.PartialShape{Known: true, Dims: []int64{-1, 3}}))
				}
				cs = append(cs, Case{Node: NodeFor(op, attrs, in, nil), Inputs: in,
					Check: func(out []*tensor.Tensor) error {
						if err := unchanged(lt, before); err != nil {
							return err
						}
						if err := sameTensor(out[0], want); err != nil {
							return err
						}
						return sameTensor(out[1], lengths)
					}})
			}
			// Scalars cannot be concatenated.
			l := listTensor(&tensor.List{ElemShape: tensor.Unknown, ElemDType: tensor.Float, MaxElems: -1, Elems: []*tensor.Tensor{tensor.ScalarF32(1)}})
			in := ins(l)
			attrs := withAttr(listAttrs(tensor.Float, "", 0), "element_shape", aPartialShape(tensor.Unknown))
			if op == "TensorListConcatV2" {
				in = ins(l, tensor.ScalarI32(-1), tensor.FromI64(tensor.Shape{0}, nil))
				attrs = listAttrs(tensor.Float, "shape_type", tensor.Int32)
			}
			cs = append(cs, Case{Node: NodeFor(op, attrs, in, nil), Inputs: in,
				Err: status.InvalidArgument, ErrMsg: "Concat saw a scalar shape at index 0 but requires at least vectors."})
			return cs
		}
	}
	Add("TensorListConcat", concat("TensorListConcat"))
	Add("TensorListConcatV2", concat("TensorListConcatV2"))
	Add("TensorListSplit", func(r *rand.Rand) []Case {
		var cs []Case
		for _, dt := range MoveTypes {
			n := r.Intn(4)
			lead := make([]int64, n)
			total := int64(0)
			for i := range lead {
				lead[i] = int64(r.Intn(3))
				total += lead[i]
			}
			t := Rand(r, dt, tensor.Shape{total, 2})
			in := ins(t, tensor.FromI32(tensor.Shape{2}, []int32{-1, 2}), tensor.FromI64(tensor.Shape{int64(n)}, lead))
			cs = append(cs, Case{Node: NodeFor("TensorListSplit", listAttrs(dt, "shape_type", tensor.Int32), in, nil), Inputs: in,
				Check: checkList(0, func(l *tensor.List) error {
					if len(l.Elems) != n || l.ElemShape.String() != "[?,2]" {
						return fmt.Errorf("list of %d elements, shape %v; want %d, [?,2]", len(l.Elems), l.ElemShape, n)
					}
					at := 0
					for i, e := range l.Elems {
						sz := int(lead[i]) * 2 * dt.Size()
						want := &tensor.Tensor{DType: dt, Shape: tensor.Shape{lead[i], 2}, Buf: t.Buf[at : at+sz]}
						if err := sameTensor(e, want); err != nil {
							return fmt.Errorf("element %d: %v", i, err)
						}
						at += sz
					}
					return nil
				})})
		}
		in := ins(Rand(r, tensor.Float, tensor.Shape{3, 2}), tensor.ScalarI32(-1), tensor.FromI64(tensor.Shape{1}, []int64{2}))
		cs = append(cs, Case{Node: NodeFor("TensorListSplit", listAttrs(tensor.Float, "shape_type", tensor.Int32), in, nil), Inputs: in,
			Err: status.InvalidArgument, ErrMsg: "Unused values in tensor. Length of tensor: 3 Values used: 2"})
		return cs
	})
	Add("TensorListResize", func(r *rand.Rand) []Case {
		var cs []Case
		for _, dt := range MoveTypes {
			l, _ := randList(r, dt, r.Intn(4), true)
			size := r.Intn(6)
			before := snapshot(l)
			in := ins(l, tensor.ScalarI32(int32(size)))
			cs = append(cs, Case{Node: NodeFor("TensorListResize", nil, in, nil), Inputs: in,
				Check: func(out []*tensor.Tensor) error {
					if err := unchanged(l, before); err != nil {
						return err
					}
					got := listOf(out[0])
					if len(got.Elems) != size {
						return fmt.Errorf("resized list has %d elements, want %d", len(got.Elems), size)
					}
					for i, e := range got.Elems {
						if i < len(before) && e != before[i] || i >= len(before) && e != nil {
							return fmt.Errorf("element %d is %v", i, e)
						}
					}
					return nil
				}})
		}
		l, _ := randList(r, tensor.Float, 1, false)
		in := ins(l, tensor.ScalarI32(-1))
		cs = append(cs, Case{Node: NodeFor("TensorListResize", nil, in, nil), Inputs: in,
			Err: status.InvalidArgument, ErrMsg: "TensorListSlice expects size to be non-negative. Got: -1"})
		return cs
	})
	Add("TensorListConcatLists", func(r *rand.Rand) []Case {
		var cs []Case
		for _, dt := range MoveTypes {
			a, b := tensor.New(tensor.Variant, tensor.Shape{2}), tensor.New(tensor.Variant, tensor.Shape{2})
			shape := EdgeShapes[r.Intn(5)]
			for i := range 2 {
				for _, t := range []*tensor.Tensor{a, b} {
					l := &tensor.List{ElemShape: tensor.KnownShape(shape), ElemDType: dt, MaxElems: -1}
					for range r.Intn(3) {
						l.Elems = append(l.Elems, Rand(r, dt, shape))
					}
					t.Vars[i] = l
				}
			}
			in := ins(a, b)
			cs = append(cs, Case{Node: NodeFor("TensorListConcatLists", listAttrs(dt, "", 0), in, nil), Inputs: in,
				Check: func(out []*tensor.Tensor) error {
					if !out[0].Shape.Equal(tensor.Shape{2}) {
						return fmt.Errorf("output shape %v", out[0].Shape)
					}
					for i := range 2 {
						la, lb := a.Vars[i].(*tensor.List), b.Vars[i].(*tensor.List)
						got, ok := out[0].Vars[i].(*tensor.List)
						if !ok || len(got.Elems) != len(la.Elems)+len(lb.Elems) {
							return fmt.Errorf("list %d: %v", i, out[0].Vars[i])
						}
						for k, e := range append(append([]*tensor.Tensor(nil), la.Elems...), lb.Elems...) {
							if got.Elems[k] != e {
								return fmt.Errorf("list %d element %d is not the input's", i, k)
							}
						}
					}
					return nil
				}})
		}
		in := ins(tensor.New(tensor.Variant, tensor.Shape{2}), tensor.New(tensor.Variant, tensor.Shape{3}))
		cs = append(cs, Case{Node: NodeForUnknown("TensorListConcatLists", listAttrs(tensor.Float, "", 0), in, nil), Inputs: in,
			Err: status.InvalidArgument, ErrMsg: "Incompatible input TensorList tensor shapes: [2] vs. [3]"})
		return cs
	})
}

func aPartialShape(s tensor.PartialShape) *tfpb.AttrValue {
	return &tfpb.AttrValue{Value: &tfpb.AttrValue_Shape{Shape: tensor.ShapeToProto(s)}}
}
