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

// Stack is one of TF1's stacks (StackV2 and its ops, stack.cc), what v1
// while-loop gradients keep forward values in: pushed in the forward
// loop, popped in reverse by the backward one. Like Array it is mutable
// under Mu and rides in the Vars of its DT_RESOURCE handle.
type Stack struct {
	Name    string // unique: TF's <stack_name or node name>_<counter>
	DType   DType
	MaxSize int // < 0: unbounded
	Handle  *Tensor

	Mu     sync.Mutex
	Elems  []*Tensor
	Closed bool
}
