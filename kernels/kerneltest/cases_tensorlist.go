package kerneltest

import (
	"bytes"
	"fmt"
	"math/rand"

	"mstream/proto/tfpb"
	"mstream/status"
	"mstream/tensor"
)

// The TensorList ops: DT_VARIANT scalars holding a *tensor.List. TF cannot
// feed or fetch a variant, so these cases keep their own reference (Go
// slices of the drawn tensors); test/controlflow's list graphs, built and
// run by TF 2.15, compare whole list programs with TF (session's
// TestTensorListsLikeTF). Every case that takes a list also checks that
// the input list is unchanged afterwards: kernels never mutate inputs.
func init() {
	Add("EmptyTensorList", func(r *rand.Rand) []Case {
		var cs []Case
		for _, dt := range MoveTypes {
			es, ps := randElemShape(r)
			max := int32(r.Intn(5)) - 1
			in := ins(es, tensor.FromI32(tensor.Shape{}, []int32{max}))
			cs = append(cs, Case{Node: NodeFor("EmptyTensorList", listAttrs(dt, "shape_type", es.DType), in, nil), Inputs: in,
				Check: checkList(0, func(l *tensor.List) error {
					if len(l.Elems) != 0 || l.MaxElems != int(max) || l.ElemDType != dt || l.ElemShape.String() != ps.String() {
						return fmt.Errorf("list %d elems, max %d, %v %v; want 0, %d, %v %v", len(l.Elems), l.MaxElems, l.ElemDType, l.ElemShape, max, dt, ps)
					}
					return nil
				})})
		}
		bad := ins(tensor.FromI32(tensor.Shape{}, []int32{5}), tensor.FromI32(tensor.Shape{}, []int32{-1}))
		cs = append(cs, Case{Node: NodeFor("EmptyTensorList", listAttrs(tensor.Float, "shape_type", tensor.Int32), bad, nil), Inputs: bad,
			Err: status.InvalidArgument, ErrMsg: "The only valid scalar shape tensor is the fully unknown shape specified as -1."})
		return cs
	})
	Add("TensorListReserve", func(r *rand.Rand) []Case {
		var cs []Case
		for _, dt := range MoveTypes {
			es, ps := randElemShape(r)
			n := int32(r.Intn(6))
			in := ins(es, tensor.FromI32(tensor.Shape{}, []int32{n}))
			cs = append(cs, Case{Node: NodeFor("TensorListReserve", listAttrs(dt, "shape_type", es.DType), in, nil), Inputs: in,
				Check: checkList(0, func(l *tensor.List) error {
					if len(l.Elems) != int(n) || l.ElemDType != dt || l.ElemShape.String() != ps.String() {
						return fmt.Errorf("list %d elems %v %v; want %d %v %v", len(l.Elems), l.ElemDType, l.ElemShape, n, dt, ps)
					}
					for i, e := range l.Elems {
						if e != nil {
							return fmt.Errorf("element %d is set", i)
						}
					}
					return nil
				})})
		}
		bad := ins(tensor.FromI32(tensor.Shape{1}, []int32{2}), tensor.FromI32(tensor.Shape{}, []int32{-1}))
		cs = append(cs, Case{Node: NodeForUnknown("TensorListReserve", listAttrs(tensor.Float, "shape_type", tensor.Int32), bad, nil), Inputs: bad,
			Err: status.InvalidArgument, ErrMsg: "The num_elements to reserve must be a non negative number, but got -1"})
		return cs
	})
	Add("TensorListLength", func(r *rand.Rand) []Case {
		var cs []Case
		for k := 0; k < 4; k++ {
			l, _ := randList(r, MoveTypes[r.Intn(len(MoveTypes))], r.Intn(5), true)
			in := ins(l)
			cs = append(cs, Case{Node: NodeFor("TensorListLength", nil, in, nil), Inputs: in,
				Want: ins(tensor.FromI32(tensor.Shape{}, []int32{int32(len(listOf(l).Elems))}))})
		}
		return cs
	})
	Add("TensorListElementShape", func(r *rand.Rand) []Case {
		var cs []Case
		for _, st := range []tensor.DType{tensor.Int32, tensor.Int64} {
			for _, s := range []tensor.PartialShape{tensor.Unknown, {Known: true}, {Known: true, Dims: []int64{3, -1}}, {Known: true, Dims: []int64{2, 4}}} {
				l := listTensor(&tensor.List{ElemShape: s, ElemDType: tensor.Float, MaxElems: -1})
				dims, shape := []float64{-1}, tensor.Shape{}
				if s.Known {
					dims, shape = nil, tensor.Shape{int64(len(s.Dims))}
					for _, d := range s.Dims {
						dims = append(dims, float64(d))
					}
				}
				in := ins(l)
				cs = append(cs, Case{Node: NodeFor("TensorListElementShape", Attrs{"shape_type": AType(st)}, in, nil), Inputs: in,
					Want: ins(FromF64(st, shape, dims))})
			}
		}
		return cs
	})
	Add("TensorListPushBack", func(r *rand.Rand) []Case {
		var cs []Case
		for _, dt := range MoveTypes {
			l, shape := randList(r, dt, r.Intn(4), false)
			item := Rand(r, dt, shape)
			in := ins(l, item)
			before := snapshot(l)
			cs = append(cs, Case{Node: NodeFor("TensorListPushBack", listAttrs(dt, "", 0), in, nil), Inputs: in,
				Check: func(out []*tensor.Tensor) error {
					if err := unchanged(l, before); err != nil {
						return err
					}
					got := listOf(out[0])
					if len(got.Elems) != len(before)+1 {
						return fmt.Errorf("pushed list has %d elements, want %d", len(got.Elems), len(before)+1)
					}
					return sameTensor(got.Elems[len(before)], item)
				}})
		}
		full := listTensor(&tensor.List{ElemShape: tensor.Unknown, ElemDType: tensor.Int32, MaxElems: 1, Elems: []*tensor.Tensor{tensor.ScalarI32(1)}})
		in := ins(full, tensor.ScalarI32(2))
		cs = append(cs, Case{Node: NodeFor("TensorListPushBack", listAttrs(tensor.Int32, "", 0), in, nil), Inputs: in,
			Err: status.InvalidArgument, ErrMsg: "Tried to push item into a full list list size: 1 max_num_elements: 1"})
		l := fixedList(r, 2)
		in = ins(l, tensor.ScalarF32(1))
		cs = append(cs, Case{Node: NodeFor("TensorListPushBack", listAttrs(tensor.Float, "", 0), in, nil), Inputs: in,
			Err: status.InvalidArgument, ErrMsg: "Tried to append a tensor with incompatible shape to a list."})
		in = ins(l, tensor.New(tensor.Int32, tensor.Shape{2, 3}))
		cs = append(cs, Case{Node: NodeFor("TensorListPushBack", listAttrs(tensor.Int32, "", 0), in, nil), Inputs: in,
			Err: status.InvalidArgument, ErrMsg: "Invalid data types; op elements int32 but list elements float"})
		return cs
	})
	Add("TensorListPopBack", func(r *rand.Rand) []Case {
		var cs []Case
		for _, dt := range MoveTypes {
			l, shape := randList(r, dt, 1+r.Intn(4), r.Intn(2) == 0)
			in := ins(l, IntVec(tensor.Int32, shape...))
			before := snapshot(l)
			cs = append(cs, Case{Node: NodeFor("TensorListPopBack", listAttrs(dt, "", 0), in, nil), Inputs: in,
				Check: func(out []*tensor.Tensor) error {
					if err := unchanged(l, before); err != nil {
						return err
					}
					if got := listOf(out[0]); len(got.Elems) != len(before)-1 {
						return fmt.Errorf("popped list has %d elements, want %d", len(got.Elems), len(before)-1)
					}
					return sameTensor(out[1], elemOrZeros(before[len(before)-1], dt, shape))
				}})
		}
		empty := listTensor(&tensor.List{ElemShape: tensor.Unknown, ElemDType: tensor.Float, MaxElems: -1})
		in := ins(empty, tensor.ScalarI32(-1))
		cs = append(cs, Case{Node: NodeFor("TensorListPopBack", listAttrs(tensor.Float, "", 0), in, nil), Inputs: in,
			Err: status.InvalidArgument, ErrMsg: "Trying to pop from an empty list."})
		return cs
	})
	Add("TensorListSetItem", func(r *rand.Rand) []Case {
		var cs []Case
		for _, dt := range MoveTypes {
			for _, resize := range []bool{false, true} {
				n := 1 + r.Intn(4)
				l, shape := randList(r, dt, n, true)
				idx := r.Intn(n)
				if resize {
					idx = n + r.Intn(3)
				}
				item := Rand(r, dt, shape)
				in := ins(l, tensor.ScalarI32(int32(idx)), item)
				before := snapshot(l)
				cs = append(cs, Case{Node: NodeFor("TensorListSetItem", withAttr(listAttrs(dt, "", 0), "resize_if_index_out_of_bounds", ABool(resize)), in, nil), Inputs: in,
					Check: func(out []*tensor.Tensor) error {
						if err := unchanged(l, before); err != nil {
							return err
						}
						got := listOf(out[0])
						if len(got.Elems) != max(n, idx+1) {
							return fmt.Errorf("list of %d elements, want %d", len(got.Elems), max(n, idx+1))
						}
						if err := sameTensor(got.Elems[idx], item); err != nil {
							return fmt.Errorf("element %d: %v", idx, err)
						}
						for i := range n {
							if i != idx && got.Elems[i] != before[i] {
								return fmt.Errorf("element %d changed", i)
							}
						}
						return nil
					}})
			}
		}
		in := ins(fixedList(r, 2), tensor.ScalarI32(2), Rand(r, tensor.Float, tensor.Shape{2, 3}))
		cs = append(cs, Case{Node: NodeFor("TensorListSetItem", listAttrs(tensor.Float, "", 0), in, nil), Inputs: in,
			Err: status.InvalidArgument, ErrMsg: "Trying to modify element 2 in a list with 2 elements."})
		return cs
	})
	Add("TensorListGetItem", func(r *rand.Rand) []Case {
		var cs []Case
		for _, dt := range MoveTypes {
			n := 1 + r.Intn(4)
			l, shape := randList(r, dt, n, true)
			idx := r.Intn(n)
			in := ins(l, tensor.ScalarI32(int32(idx)), IntVec(tensor.Int32, shape...))
			cs = append(cs, Case{Node: NodeFor("TensorListGetItem", listAttrs(dt, "", 0), in, nil), Inputs: in,
				Want: ins(elemOrZeros(listOf(l).Elems[idx], dt, shape))})
		}
		unset := listTensor(&tensor.List{ElemShape: tensor.Unknown, ElemDType: tensor.Float, MaxElems: -1, Elems: make([]*tensor.Tensor, 2)})
		in := ins(unset, tensor.ScalarI32(1), tensor.ScalarI32(-1))
		cs = append(cs, Case{Node: NodeFor("TensorListGetItem", listAttrs(tensor.Float, "", 0), in, nil), Inputs: in,
			Err: status.InvalidArgument, ErrMsg: "Trying to read an uninitialized tensor but element_shape is not fully defined: <unknown> and no list element is set."})
		in = ins(unset, tensor.ScalarI32(2), tensor.ScalarI32(-1))
		cs = append(cs, Case{Node: NodeFor("TensorListGetItem", listAttrs(tensor.Float, "", 0), in, nil), Inputs: in,
			Err: status.InvalidArgument, ErrMsg: "Trying to access element 2 in a list with 2 elements."})
		return cs
	})
	gather := func(op string) Gen {
		return func(r *rand.Rand) []Case {
			var cs []Case
			for _, dt := range MoveTypes {
				n := 1 + r.Intn(5)
				l, shape := randList(r, dt, n, true)
				idx := make([]int32, n)
				for i := range idx {
					idx[i] = int32(i)
				}
				if op == "TensorListGather" {
					idx = idx[:r.Intn(n+1)]
					for i := range idx {
						idx[i] = int32(r.Intn(n))
					}
				}
				var want []*tensor.Tensor
				for _, i := range idx {
					want = append(want, elemOrZeros(listOf(l).Elems[i], dt, shape))
				}
				in := ins(l, IntVec(tensor.Int32, shape...))
				if op == "TensorListGather" {
					in = ins(l, tensor.FromI32(tensor.Shape{int64(len(idx))}, idx), IntVec(tensor.Int32, shape...))
				}
				cs = append(cs, Case{Node: NodeFor(op, listAttrs(dt, "", 0), in, nil), Inputs: in, Want: ins(stackOf(dt, shape, want))})
			}
			empty := listTensor(&tensor.List{ElemShape: tensor.Unknown, ElemDType: tensor.Float, MaxElems: -1})
			in := ins(empty, tensor.ScalarI32(-1))
			msg := "Tried to stack elements of an empty list with non-fully-defined element_shape: <unknown>"
			if op == "TensorListGather" {
				in = ins(empty, tensor.FromI32(tensor.Shape{0}, nil), tensor.ScalarI32(-1))
				msg = "Tried to gather 0-elements from a list with non-fully-defined shape: <unknown>"
			}
			cs = append(cs, Case{Node: NodeFor(op, listAttrs(tensor.Float, "", 0), in, nil), Inputs: in, Err: status.InvalidArgument, ErrMsg: msg})
			return cs
		}
	}
	Add("TensorListStack", gather("TensorListStack"))
	Add("TensorListGather", gather("TensorListGather"))
	Add("TensorListFromTensor", func(r *rand.Rand) []Case {
		var cs []Case
		for _, dt := range MoveTypes {
			shape := tensor.Shape{int64(r.Intn(4)), 2, int64(1 + r.Intn(3))}
			t := Rand(r, dt, shape)
			in := ins(t, tensor.FromI32(tensor.Shape{2}, []int32{-1, int32(shape[2])}))
			cs = append(cs, Case{Node: NodeFor("TensorListFromTensor", listAttrs(dt, "shape_type", tensor.Int32), in, nil), Inputs: in,
				Check: checkList(0, func(l *tensor.List) error { return sameRows(l, t, nil) })})
		}
		in := ins(tensor.ScalarF32(1), tensor.ScalarI32(-1))
		cs = append(cs, Case{Node: NodeForUnknown("TensorListFromTensor", listAttrs(tensor.Float, "shape_type", tensor.Int32), in, nil), Inputs: in,
			Err: status.InvalidArgument, ErrMsg: "Tensor must be at least a vector, but saw shape: []"})
		return cs
	})
	Add("TensorListScatterV2", func(r *rand.Rand) []Case {
		var cs []Case
		for _, dt := range MoveTypes {
			rows := r.Intn(4)
			t := Rand(r, dt, tensor.Shape{int64(rows), 3})
			idx := r.Perm(rows + 2)[:rows]
			idx32 := make([]int32, rows)
			for i, v := range idx {
				idx32[i] = int32(v)
			}
			num := int32(-1)
			if r.Intn(2) == 0 {
				num = int32(rows + 2)
			}
			in := ins(t, tensor.FromI32(tensor.Shape{int64(rows)}, idx32), tensor.FromI32(tensor.Shape{1}, []int32{3}), tensor.ScalarI32(num))
			cs = append(cs, Case{Node: NodeFor("TensorListScatterV2", listAttrs(dt, "shape_type", tensor.Int32), in, nil), Inputs: in,
				Check: checkList(0, func(l *tensor.List) error { return sameRows(l, t, idx32) })})
		}
		in := ins(Rand(r, tensor.Float, tensor.Shape{1, 3}), tensor.FromI32(tensor.Shape{1}, []int32{-2}), tensor.ScalarI32(-1), tensor.ScalarI32(-1))
		cs = append(cs, Case{Node: NodeForUnknown("TensorListScatterV2", listAttrs(tensor.Float, "shape_type", tensor.Int32), in, nil), Inputs: in,
			Err: status.InvalidArgument, ErrMsg: "Indices in TensorListScatter must all be non-negative."})
		return cs
	})
	Add("TensorListScatterIntoExistingList", func(r *rand.Rand) []Case {
		var cs []Case
		for _, dt := range MoveTypes {
			l, shape := randList(r, dt, r.Intn(4), true)
			rows := r.Intn(3)
			t := Rand(r, dt, append(tensor.Shape{int64(rows)}, shape...))
			idx32 := make([]int32, rows)
			for i, v := range r.Perm(6)[:rows] {
				idx32[i] = int32(v)
			}
			in := ins(l, t, tensor.FromI32(tensor.Shape{int64(rows)}, idx32))
			before := snapshot(l)
			cs = append(cs, Case{Node: NodeFor("TensorListScatterIntoExistingList", listAttrs(dt, "", 0), in, nil), Inputs: in,
				Check: func(out []*tensor.Tensor) error {
					if err := unchanged(l, before); err != nil {
						return err
					}
					got := listOf(out[0])
					for i, e := range before {
						if !containsI32(idx32, int32(i)) && got.Elems[i] != e {
							return fmt.Errorf("element %d changed", i)
						}
					}
					return sameRows(got, t, idx32)
				}})
		}
		return cs
	})
}

// listAttrs are element_dtype and, when shapeAttr is set, the shape_type
// attr of dtype st.
func listAttrs(dt tensor.DType, shapeAttr string, st tensor.DType) Attrs {
	a := Attrs{"element_dtype": AType(dt)}
	if shapeAttr != "" {
		a[shapeAttr] = AType(st)
	}
	return a
}

func withAttr(a Attrs, k string, v *tfpb.AttrValue) Attrs {
	a[k] = v
	return a
}

func listTensor(l *tensor.List) *tensor.Tensor {
	t := tensor.New(tensor.Variant, tensor.Shape{})
	t.Vars[0] = l
	return t
}

func listOf(t *tensor.Tensor) *tensor.List {
	if t == nil || t.DType != tensor.Variant || len(t.Vars) != 1 {
		return &tensor.List{}
	}
	l, _ := t.Vars[0].(*tensor.List)
	if l == nil {
		return &tensor.List{}
	}
	return l
}

// randElemShape draws an element_shape input (int32 or int64; -1 for an
// unknown rank, -1 dims) and the partial shape it stands for.
func randElemShape(r *rand.Rand) (*tensor.Tensor, tensor.PartialShape) {
	st := []tensor.DType{tensor.Int32, tensor.Int64}[r.Intn(2)]
	if r.Intn(4) == 0 {
		return FromF64(st, tensor.Shape{}, []float64{-1}), tensor.Unknown
	}
	dims := make([]int64, r.Intn(3))
	v := make([]float64, len(dims))
	for i := range dims {
		dims[i] = int64(r.Intn(4)) - 1
		v[i] = float64(dims[i])
	}
	return FromF64(st, tensor.Shape{int64(len(dims))}, v), tensor.PartialShape{Known: true, Dims: dims}
}

// randList draws a list of n elements of dtype dt and one random element
// shape, which the list declares; with holes, some elements are not set.
func randList(r *rand.Rand, dt tensor.DType, n int, holes bool) (*tensor.Tensor, tensor.Shape) {
	shape := EdgeShapes[r.Intn(5)]
	l := &tensor.List{ElemShape: tensor.KnownShape(shape), ElemDType: dt, MaxElems: -1, Elems: make([]*tensor.Tensor, n)}
	for i := range l.Elems {
		if !holes || r.Intn(3) != 0 {
			l.Elems[i] = Rand(r, dt, shape)
		}
	}
	return listTensor(l), shape
}

// fixedList is a float list of n elements of shape [2,3].
func fixedList(r *rand.Rand, n int) *tensor.Tensor {
	l := &tensor.List{ElemShape: tensor.KnownShape(tensor.Shape{2, 3}), ElemDType: tensor.Float, MaxElems: -1}
	for range n {
		l.Elems = append(l.Elems, Rand(r, tensor.Float, tensor.Shape{2, 3}))
	}
	return listTensor(l)
}

func snapshot(t *tensor.Tensor) []*tensor.Tensor {
	return append([]*tensor.Tensor(nil), listOf(t).Elems...)
}

func unchanged(t *tensor.Tensor, before []*tensor.Tensor) error {
	l := listOf(t)
	if len(l.Elems) != len(before) {
		return fmt.Errorf("the input list changed length: %d, was %d", len(l.Elems), len(before))
	}
	for i := range before {
		if l.Elems[i] != before[i] {
			return fmt.Errorf("the input list's element %d changed", i)
		}
	}
	return nil
}

func elemOrZeros(e *tensor.Tensor, dt tensor.DType, shape tensor.Shape) *tensor.Tensor {
	if e != nil {
		return e
	}
	return tensor.New(dt, shape)
}

func stackOf(dt tensor.DType, shape tensor.Shape, elems []*tensor.Tensor) *tensor.Tensor {
	out := tensor.New(dt, append(tensor.Shape{int64(len(elems))}, shape...))
	per := len(out.Buf) / max(len(elems), 1)
	for i, e := range elems {
		copy(out.Buf[i*per:], e.Buf)
	}
	return out
}

func sameTensor(got, want *tensor.Tensor) error {
	if got == nil || got.DType != want.DType || !got.Shape.Equal(want.Shape) || !bytes.Equal(got.Buf, want.Buf) {
		return fmt.Errorf("got %v, want %v %v", got, want, want.Buf)
	}
	return nil
}

// sameRows checks that element idx[k] of l (k when idx is nil) holds row k
// of t.
func sameRows(l *tensor.List, t *tensor.Tensor, idx []int32) error {
	per := len(t.Buf) / max(int(t.Shape[0]), 1)
	for k := range int(t.Shape[0]) {
		i := k
		if idx != nil {
			i = int(idx[k])
		}
		if i >= len(l.Elems) || l.Elems[i] == nil {
			return fmt.Errorf("element %d not set", i)
		}
		want := &tensor.Tensor{DType: t.DType, Shape: t.Shape[1:], Buf: t.Buf[k*per : (k+1)*per]}
		if err := sameTensor(l.Elems[i], want); err != nil {
			return fmt.Errorf("element %d: %v", i, err)
		}
	}
	if idx == nil && len(l.Elems) != int(t.Shape[0]) {
		return fmt.Errorf("list has %d elements, want %d", len(l.Elems), t.Shape[0])
	}
	return nil
}

func containsI32(v []int32, x int32) bool {
	for _, y := range v {
		if y == x {
			return true
		}
	}
	return false
}

// checkList checks output i is a list scalar and passes f.
func checkList(i int, f func(l *tensor.List) error) func([]*tensor.Tensor) error {
	return func(out []*tensor.Tensor) error {
		t := out[i]
		if t == nil || t.DType != tensor.Variant || len(t.Shape) != 0 {
			return fmt.Errorf("output %d is %v, not a variant scalar", i, t)
		}
		l, ok := t.Vars[0].(*tensor.List)
		if !ok {
			return fmt.Errorf("output %d holds %T, not a list", i, t.Vars[0])
		}
		return f(l)
	}
}
