package kerneltest

import (
	"fmt"
	"math/rand"

	"mstream/resource"
	"mstream/status"
	"mstream/tensor"
)

// TF1's TensorArray ops (TensorArrayV3 and the ops on its handle): the
// handle is a DT_RESOURCE scalar carrying a *tensor.Array, which TF cannot
// feed, so these cases build arrays here and check the array's state and
// the outputs against the drawn tensors; test/functions' dynamic_rnn runs
// whole TensorArray programs (dynamic_rnn, concat, split, close) against
// TF 2.15. Every case builds its own arrays: the ops change them.
func init() {
	Add("TensorArrayV3", func(r *rand.Rand) []Case {
		var cs []Case
		for _, dt := range MoveTypes {
			n := int32(r.Intn(5))
			in := ins(tensor.ScalarI32(n))
			dyn := r.Intn(2) == 0
			cs = append(cs, Case{Node: NodeFor("TensorArrayV3", Attrs{"dtype": AType(dt), "dynamic_size": ABool(dyn),
				"element_shape": aPartialShape(tensor.PartialShape{Known: true, Dims: []int64{-1, 2}})}, in, nil), Inputs: in,
				Check: func(out []*tensor.Tensor) error {
					a := arrayOf(out[0])
					if a == nil || len(a.Elems) != int(n) || a.DType != dt || a.Dynamic != dyn || !a.ClearAfterRead || a.ElemShape.String() != "[?,2]" {
						return fmt.Errorf("array %+v; want %d elements of %v, dynamic %v", a, n, dt, dyn)
					}
					if out[1].DType != tensor.Float || len(out[1].Shape) != 0 {
						return fmt.Errorf("flow %v", out[1])
					}
					return nil
				}})
		}
		in := ins(tensor.ScalarI32(-1))
		cs = append(cs, Case{Node: NodeFor("TensorArrayV3", Attrs{"dtype": AType(tensor.Float)}, in, nil), Inputs: in,
			Err: status.InvalidArgument, ErrMsg: "Size should be >= 0."})
		return cs
	})
	Add("TensorArrayWriteV3", func(r *rand.Rand) []Case {
		var cs []Case
		for _, dt := range MoveTypes {
			h, a := newArray(dt, 3, false, nil)
			v := Rand(r, dt, tensor.Shape{2})
			i := r.Intn(3)
			in := ins(h, tensor.ScalarI32(int32(i)), v, tensor.ScalarF32(0))
			cs = append(cs, Case{Node: NodeFor("TensorArrayWriteV3", Attrs{"T": AType(dt)}, in, nil), Inputs: in,
				Check: func(out []*tensor.Tensor) error {
					if !a.Elems[i].Written {
						return fmt.Errorf("element %d not written", i)
					}
					return sameTensor(a.Elems[i].T, v)
				}})
		}
		h, _ := newArray(tensor.Float, 2, false, []*tensor.Tensor{tensor.FromF32(tensor.Shape{2}, []float32{1, 2})})
		in := ins(h, tensor.ScalarI32(0), tensor.FromF32(tensor.Shape{2}, []float32{3, 4}), tensor.ScalarF32(0))
		cs = append(cs, Case{Node: NodeFor("TensorArrayWriteV3", Attrs{"T": AType(tensor.Float)}, in, nil), Inputs: in,
			Err: status.InvalidArgument, ErrMsg: "Could not write to TensorArray index 0 because it has already been written to."})
		h, _ = newArray(tensor.Float, 2, false, nil)
		in = ins(h, tensor.ScalarI32(2), tensor.FromF32(tensor.Shape{2}, []float32{3, 4}), tensor.ScalarF32(0))
		cs = append(cs, Case{Node: NodeFor("TensorArrayWriteV3", Attrs{"T": AType(tensor.Float)}, in, nil), Inputs: in,
			Err: status.InvalidArgument, ErrMsg: "Tried to write to index 2 but array is not resizeable and size is: 2"})
		return cs
	})
	Add("TensorArrayReadV3", func(r *rand.Rand) []Case {
		var cs []Case
		for _, dt := range MoveTypes {
			vs := []*tensor.Tensor{Rand(r, dt, tensor.Shape{3}), Rand(r, dt, tensor.Shape{3})}
			h, a := newArray(dt, 2, false, vs)
			i := r.Intn(2)
			in := ins(h, tensor.ScalarI32(int32(i)), tensor.ScalarF32(0))
			cs = append(cs, Case{Node: NodeFor("TensorArrayReadV3", Attrs{"dtype": AType(dt)}, in, nil), Inputs: in,
				Check: func(out []*tensor.Tensor) error {
					if !a.Elems[i].Cleared {
						return fmt.Errorf("element %d not cleared after the read", i)
					}
					return sameTensor(out[0], vs[i])
				}})
		}
		h, _ := newArray(tensor.Float, 2, false, nil)
		in := ins(h, tensor.ScalarI32(1), tensor.ScalarF32(0))
		cs = append(cs, Case{Node: NodeFor("TensorArrayReadV3", Attrs{"dtype": AType(tensor.Float)}, in, nil), Inputs: in,
			Err: status.InvalidArgument, ErrMsg: "Could not read from TensorArray index 1.  Furthermore, the element shape is not fully defined"})
		return cs
	})
	Add("TensorArrayGatherV3", func(r *rand.Rand) []Case {
		var cs []Case
		for _, dt := range MoveTypes {
			vs := []*tensor.Tensor{Rand(r, dt, tensor.Shape{2}), Rand(r, dt, tensor.Shape{2}), Rand(r, dt, tensor.Shape{2})}
			h, _ := newArray(dt, 3, false, vs)
			idx := []int32{2, 0}
			want := tensor.New(dt, tensor.Shape{2, 2})
			copy(want.Buf, vs[2].Buf)
			copy(want.Buf[len(vs[2].Buf):], vs[0].Buf)
			in := ins(h, tensor.FromI32(tensor.Shape{2}, idx), tensor.ScalarF32(0))
			cs = append(cs, Case{Node: NodeFor("TensorArrayGatherV3", Attrs{"dtype": AType(dt)}, in, nil), Inputs: in, Want: ins(want)})
		}
		return cs
	})
	Add("TensorArrayScatterV3", func(r *rand.Rand) []Case {
		var cs []Case
		for _, dt := range MoveTypes {
			h, a := newArray(dt, 4, false, nil)
			v := Rand(r, dt, tensor.Shape{2, 3})
			in := ins(h, tensor.FromI32(tensor.Shape{2}, []int32{3, 1}), v, tensor.ScalarF32(0))
			cs = append(cs, Case{Node: NodeFor("TensorArrayScatterV3", Attrs{"T": AType(dt)}, in, nil), Inputs: in,
				Check: func(out []*tensor.Tensor) error {
					l := &tensor.List{Elems: []*tensor.Tensor{a.Elems[3].T, a.Elems[1].T}}
					return sameRows(l, v, nil)
				}})
		}
		h, _ := newArray(tensor.Float, 2, false, nil)
		in := ins(h, tensor.FromI32(tensor.Shape{1}, []int32{2}), tensor.FromF32(tensor.Shape{1, 1}, []float32{1}), tensor.ScalarF32(0))
		cs = append(cs, Case{Node: NodeFor("TensorArrayScatterV3", Attrs{"T": AType(tensor.Float)}, in, nil), Inputs: in,
			Err: status.InvalidArgument, ErrMsg: "Max scatter index must be < array size (2 vs. 2)"})
		// TF checks the value before the indices.
		h, _ = newArray(tensor.Float, 2, false, nil)
		in = ins(h, tensor.FromI32(tensor.Shape{1, 1}, []int32{0}), tensor.ScalarF32(1), tensor.ScalarF32(0))
		cs = append(cs, Case{Node: NodeFor("TensorArrayScatterV3", Attrs{"T": AType(tensor.Float)}, in, nil), Inputs: in,
			Err: status.InvalidArgument, ErrMsg: "Input value for unpack must be at least a vector but received shape: []"})
		h, _ = newArray(tensor.Float, 2, false, nil)
		in = ins(h, tensor.FromI32(tensor.Shape{1, 1}, []int32{0}), tensor.FromF32(tensor.Shape{1}, []float32{1}), tensor.ScalarF32(0))
		cs = append(cs, Case{Node: NodeFor("TensorArrayScatterV3", Attrs{"T": AType(tensor.Float)}, in, nil), Inputs: in,
			Err: status.InvalidArgument, ErrMsg: "Expected indices to be a vector, but received shape: [1,1]"})
		return cs
	})
	Add("TensorArrayConcatV3", func(r *rand.Rand) []Case {
		var cs []Case
		for _, dt := range MoveTypes {
			vs := []*tensor.Tensor{Rand(r, dt, tensor.Shape{1, 2}), Rand(r, dt, tensor.Shape{3, 2})}
			h, _ := newArray(dt, 2, false, vs)
			want := tensor.New(dt, tensor.Shape{4, 2})
			copy(want.Buf, vs[0].Buf)
			copy(want.Buf[len(vs[0].Buf):], vs[1].Buf)
			in := ins(h, tensor.ScalarF32(0))
			cs = append(cs, Case{Node: NodeFor("TensorArrayConcatV3", Attrs{"dtype": AType(dt)}, in, nil), Inputs: in,
				Want: ins(want, tensor.FromI64(tensor.Shape{2}, []int64{1, 3}))})
		}
		h, _ := newArray(tensor.Float, 1, false, []*tensor.Tensor{tensor.ScalarF32(1)})
		in := ins(h, tensor.ScalarF32(0))
		cs = append(cs, Case{Node: NodeFor("TensorArrayConcatV3", Attrs{"dtype": AType(tensor.Float)}, in, nil), Inputs: in,
			Err: status.InvalidArgument, ErrMsg: "Concat saw a scalar shape at index 0 but requires at least vectors."})
		return cs
	})
	Add("TensorArraySplitV3", func(r *rand.Rand) []Case {
		var cs []Case
		for _, dt := range MoveTypes {
			h, a := newArray(dt, 2, false, nil)
			v := Rand(r, dt, tensor.Shape{3, 2})
			in := ins(h, v, tensor.FromI64(tensor.Shape{2}, []int64{2, 1}), tensor.ScalarF32(0))
			cs = append(cs, Case{Node: NodeFor("TensorArraySplitV3", Attrs{"T": AType(dt)}, in, nil), Inputs: in,
				Check: func(out []*tensor.Tensor) error {
					sz := 2 * dt.Size()
					if err := sameTensor(a.Elems[0].T, &tensor.Tensor{DType: dt, Shape: tensor.Shape{2, 2}, Buf: v.Buf[:2*sz]}); err != nil {
						return err
					}
					return sameTensor(a.Elems[1].T, &tensor.Tensor{DType: dt, Shape: tensor.Shape{1, 2}, Buf: v.Buf[2*sz:]})
				}})
		}
		h, _ := newArray(tensor.Float, 2, false, nil)
		in := ins(h, tensor.FromF32(tensor.Shape{3}, []float32{1, 2, 3}), tensor.FromI64(tensor.Shape{2}, []int64{1, 1}), tensor.ScalarF32(0))
		cs = append(cs, Case{Node: NodeFor("TensorArraySplitV3", Attrs{"T": AType(tensor.Float)}, in, nil), Inputs: in,
			Err: status.InvalidArgument, ErrMsg: "Expected sum of lengths to be equal to values.shape[0], but sum of lengths is 2"})
		// TF checks the lengths before the value.
		h, _ = newArray(tensor.Float, 2, false, nil)
		in = ins(h, tensor.ScalarF32(1), tensor.FromI64(tensor.Shape{1, 1}, []int64{1}), tensor.ScalarF32(0))
		cs = append(cs, Case{Node: NodeFor("TensorArraySplitV3", Attrs{"T": AType(tensor.Float)}, in, nil), Inputs: in,
			Err: status.InvalidArgument, ErrMsg: "Expected lengths to be a vector, received shape: [1,1]"})
		h, _ = newArray(tensor.Float, 2, false, nil)
		in = ins(h, tensor.ScalarF32(1), tensor.FromI64(tensor.Shape{1}, []int64{1}), tensor.ScalarF32(0))
		cs = append(cs, Case{Node: NodeFor("TensorArraySplitV3", Attrs{"T": AType(tensor.Float)}, in, nil), Inputs: in,
			Err: status.InvalidArgument, ErrMsg: "Expected value to be at least a vector, but received shape: []"})
		return cs
	})
	Add("TensorArraySizeV3", func(r *rand.Rand) []Case {
		n := r.Intn(5)
		h, _ := newArray(tensor.Float, n, true, nil)
		in := ins(h, tensor.ScalarF32(0))
		return []Case{{Node: NodeFor("TensorArraySizeV3", nil, in, nil), Inputs: in, Want: ins(tensor.ScalarI32(int32(n)))}}
	})
	Add("TensorArrayCloseV3", func(r *rand.Rand) []Case {
		h, a := newArray(tensor.Float, 2, false, nil)
		in := ins(h)
		return []Case{{Node: NodeFor("TensorArrayCloseV3", nil, in, nil), Inputs: in,
			Check: func([]*tensor.Tensor) error {
				if !a.Closed {
					return fmt.Errorf("array not closed")
				}
				return nil
			}}}
	})
	Add("TensorArrayGradV3", func(r *rand.Rand) []Case {
		// The forward array wrote index 0 (shape [2]); the gradient array
		// reads it as zeros of that shape until a gradient is written.
		h, a := newArray(tensor.Float, 3, true, []*tensor.Tensor{Rand(r, tensor.Float, tensor.Shape{2})})
		in := ins(h, tensor.ScalarF32(0))
		return []Case{{Node: NodeFor("TensorArrayGradV3", Attrs{"source": AStr("gradients")}, in, nil), Inputs: in,
			Check: func(out []*tensor.Tensor) error {
				g := arrayOf(out[0])
				if g == nil || g != a.Grads["gradients"] || !g.IsGrad || len(g.Elems) != 3 || g.Name != a.Name+"@gradients" || a.Dynamic {
					return fmt.Errorf("gradient array %+v (forward dynamic %v)", g, a.Dynamic)
				}
				if e := g.Elems[0]; !e.Written || e.T != nil || !e.Shape.Equal(tensor.Shape{2}) || g.Elems[1].Written {
					return fmt.Errorf("gradient elements %+v: want index 0 standing for zeros of [2]", g.Elems)
				}
				return nil
			}}}
	})
}

// newArray is a TensorArray of n elements (vs written at 0, 1, ...) with
// unknown element shape, and its handle.
func newArray(dt tensor.DType, n int, dynamic bool, vs []*tensor.Tensor) (*tensor.Tensor, *tensor.Array) {
	a := &tensor.Array{Name: "ta_0", DType: dt, Dynamic: dynamic, ClearAfterRead: true, ElemShape: tensor.Unknown,
		Elems: make([]tensor.ArrayElem, n), MarkedSize: -1}
	for i, v := range vs {
		a.Elems[i] = tensor.ArrayElem{T: v, Shape: v.Shape, Written: true}
	}
	h := resource.Handle{Container: "_tensor_arrays", Name: a.Name, Kind: "TensorArray"}.Tensor()
	h.Vars = []any{a}
	a.Handle = h
	return h, a
}

func arrayOf(t *tensor.Tensor) *tensor.Array {
	if t == nil || t.DType != tensor.Resource || len(t.Vars) != 1 {
		return nil
	}
	a, _ := t.Vars[0].(*tensor.Array)
	return a
}

// TF1's stacks (StackV2 and its ops), built here as arrays are; the
// dynamic_rnn case's gradient runs them against TF.
func init() {
	Add("StackV2", func(r *rand.Rand) []Case {
		var cs []Case
		for _, dt := range MoveTypes {
			m := int32(r.Intn(4)) - 1
			in := ins(tensor.ScalarI32(m))
			cs = append(cs, Case{Node: NodeFor("StackV2", Attrs{"elem_type": AType(dt), "stack_name": AStr("s")}, in, nil), Inputs: in,
				Check: func(out []*tensor.Tensor) error {
					s := stackHandleOf(out[0])
					if s == nil || s.DType != dt || s.MaxSize != int(m) || len(s.Elems) != 0 {
						return fmt.Errorf("stack %+v; want an empty stack of %v, max %d", s, dt, m)
					}
					return nil
				}})
		}
		return cs
	})
	Add("StackPushV2", func(r *rand.Rand) []Case {
		var cs []Case
		for _, dt := range MoveTypes {
			h, s := newStack(dt, -1, Rand(r, dt, tensor.Shape{2}))
			v := Rand(r, dt, tensor.Shape{3})
			in := ins(h, v)
			cs = append(cs, Case{Node: NodeFor("StackPushV2", Attrs{"T": AType(dt)}, in, nil), Inputs: in, Want: ins(v),
				Check: func(out []*tensor.Tensor) error {
					if len(s.Elems) != 2 {
						return fmt.Errorf("stack of %d elements after the push, want 2", len(s.Elems))
					}
					return sameTensor(s.Elems[1], v)
				}})
		}
		h, _ := newStack(tensor.Float, 1, tensor.ScalarF32(1))
		in := ins(h, tensor.ScalarF32(2))
		cs = append(cs, Case{Node: NodeFor("StackPushV2", Attrs{"T": AType(tensor.Float)}, in, nil), Inputs: in,
			Err: status.InvalidArgument, ErrMsg: "overflowed its max_size (1)"})
		return cs
	})
	Add("StackPopV2", func(r *rand.Rand) []Case {
		var cs []Case
		for _, dt := range MoveTypes {
			a, b := Rand(r, dt, tensor.Shape{2}), Rand(r, dt, tensor.Shape{1, 2})
			h, s := newStack(dt, -1, a, b)
			in := ins(h)
			cs = append(cs, Case{Node: NodeFor("StackPopV2", Attrs{"elem_type": AType(dt)}, in, nil), Inputs: in, Want: ins(b),
				Check: func(out []*tensor.Tensor) error {
					if len(s.Elems) != 1 || s.Elems[0] != a {
						return fmt.Errorf("stack after the pop: %v", s.Elems)
					}
					return nil
				}})
		}
		h, _ := newStack(tensor.Float, -1)
		in := ins(h)
		cs = append(cs, Case{Node: NodeFor("StackPopV2", Attrs{"elem_type": AType(tensor.Float)}, in, nil), Inputs: in,
			Err: status.InvalidArgument, ErrMsg: "is empty when calling Pop()."})
		return cs
	})
	Add("StackCloseV2", func(r *rand.Rand) []Case {
		h, s := newStack(tensor.Float, -1, tensor.ScalarF32(1))
		in := ins(h)
		return []Case{{Node: NodeFor("StackCloseV2", nil, in, nil), Inputs: in,
			Check: func([]*tensor.Tensor) error {
				if !s.Closed {
					return fmt.Errorf("stack not closed")
				}
				return nil
			}}}
	})
}

func newStack(dt tensor.DType, max int, vs ...*tensor.Tensor) (*tensor.Tensor, *tensor.Stack) {
	s := &tensor.Stack{Name: "s_0", DType: dt, MaxSize: max, Elems: vs}
	h := resource.Handle{Container: "_stacks", Name: s.Name, Kind: "Stack"}.Tensor()
	h.Vars = []any{s}
	s.Handle = h
	return h, s
}

func stackHandleOf(t *tensor.Tensor) *tensor.Stack {
	if t == nil || t.DType != tensor.Resource || len(t.Vars) != 1 {
		return nil
	}
	s, _ := t.Vars[0].(*tensor.Stack)
	return s
}
