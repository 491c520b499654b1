package tensor

// List is the value of a DT_VARIANT element that holds TF's TensorList, the
// list that TF2's tf.TensorArray lowers to: element tensors of one dtype,
// nil where an element is not set yet (TensorListReserve). A List is never
// changed once a tensor holds it; a kernel that changes a list makes a new
// one with Copy, which shares the element tensors (they are read-only too),
// so passing a list along never copies its data.
type List struct {
	Elems     []*Tensor
	ElemShape PartialShape
	ElemDType DType
	MaxElems  int // -1: no limit (EmptyTensorList's max_num_elements)
}

// Copy returns a list with the same elements, sharing their tensors, and
// room for extra more without growing.
func (l *List) Copy(extra int) *List {
	c := *l
	c.Elems = make([]*Tensor, len(l.Elems), len(l.Elems)+extra)
	copy(c.Elems, l.Elems)
	c.ElemShape.Dims = append([]int64(nil), l.ElemShape.Dims...)
	return &c
}
