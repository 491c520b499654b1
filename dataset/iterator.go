package dataset

import (
	"sync"

	"mstream/resource"
	"mstream/status"
	"mstream/tensor"
)

// Kind is TF's type name of an iterator resource, part of its handle.
const Kind = "N10tensorflow4data16IteratorResourceE"

// iteratorRes is an iterator resource: the pass a session's IteratorGetNext
// calls draw from. mu serialises them, so concurrent Runs each take
// different elements and every element is delivered once.
type iteratorRes struct {
	mu    sync.Mutex
	it    Iterator // nil until MakeIterator (or a one-shot iterator's first use)
	made  bool     // a one-shot iterator ran its factory
	types []tensor.DType
}

func (*iteratorRes) Kind() string { return Kind }

// set makes it the resource's pass, closing the one it replaces.
func (r *iteratorRes) set(it Iterator) {
	r.mu.Lock()
	old := r.it
	r.it = it
	r.mu.Unlock()
	if old != nil {
		old.Close()
	}
}

// next is IteratorGetNext: the next element, OUT_OF_RANGE "End of
// sequence" after the last, FAILED_PRECONDITION before MakeIterator.
func (r *iteratorRes) next() ([]*tensor.Tensor, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.it == nil {
		return nil, status.Errorf(status.FailedPrecondition, "GetNext() failed because the iterator has not been initialized. Ensure that you have run the initializer operation for this iterator before getting the next element.")
	}
	e, end, err := r.it.Next()
	if err != nil {
		return nil, err
	}
	if end {
		return nil, errEnd()
	}
	return e, nil
}

// close ends the resource's pass (DeleteIterator).
func (r *iteratorRes) close() { r.set(nil) }

// Close ends the pass when the session closes (resource.Closer).
func (r *iteratorRes) Close() { r.close() }

// lookupIterator is the iterator resource a DT_RESOURCE handle names.
func lookupIterator(rm *resource.Manager, t *tensor.Tensor) (*iteratorRes, error) {
	h, err := resource.FromTensor(t)
	if err != nil {
		return nil, err
	}
	r, err := rm.Lookup(h.Container, h.Name, Kind)
	if err != nil {
		return nil, err
	}
	return r.(*iteratorRes), nil
}
