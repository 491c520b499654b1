package tensor

import "sync"

// Array is the state of one of TF1's TensorArrays (TensorArrayV3 and its
// ops, tensor_array.h): unlike a List it is mutable, shared by every op
// that holds its handle, and guarded by Mu. A scalar DT_RESOURCE tensor
// carries it in Vars (Handle), beside the serialized handle in Strs, so
// it lives as long as the step's tensors that refer to it.
type Array struct {
	Name           string // unique: TF's <tensor_array_name or node name>_<counter>, "@source" for a gradient array
	DType          DType
	Dynamic        bool // dynamic_size: writes past the end grow it
	ClearAfterRead bool
	Identical      bool // identical_element_shapes: the first write fixes the element shape
	IsGrad         bool // a gradient array: writes to one index add up, reads of unwritten indices give zeros
	Handle         *Tensor

	Mu         sync.Mutex
	ElemShape  PartialShape
	Elems      []ArrayElem
	Closed     bool
	MarkedSize int  // the size after a split; -1 before
	NoGrads    bool // an aggregated write happened: no gradient array may be made
	Grads      map[string]*Array
}

// ArrayElem is TF's TensorAndState: a written element holds its tensor, or
// only its shape when it stands for zeros (T nil).
type ArrayElem struct {
	T                      *Tensor
	Shape                  Shape
	Written, Read, Cleared bool
}
