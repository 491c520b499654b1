package dataset

import (
	"mstream/hostmem"
	"mstream/status"
	"mstream/tensor"
)

// tensorDS is TensorDataset: one element, its components.
type tensorDS struct{ comps []*tensor.Tensor }

func (d *tensorDS) Iterate() (Iterator, error) { return &tensorIt{d: d}, nil }

type tensorIt struct {
	d    *tensorDS
	done bool
}

func (it *tensorIt) Next() ([]*tensor.Tensor, bool, error) {
	if it.done {
		return nil, true, nil
	}
	it.done = true
	return it.d.comps, false, nil
}

func (it *tensorIt) Close() {}

// sliceDS is TensorSliceDataset: element i is row i of every component.
type sliceDS struct {
	comps []*tensor.Tensor
	n     int64
	lim   hostmem.Limit
}

func newSliceDS(comps []*tensor.Tensor, lim hostmem.Limit) (*sliceDS, error) {
	d := &sliceDS{comps: comps, lim: lim}
	for i, c := range comps {
		if len(c.Shape) == 0 {
			return nil, status.InvalidArg("All components must be at least 1-dimensional")
		}
		if i == 0 {
			d.n = c.Shape[0]
		} else if c.Shape[0] != d.n {
			return nil, status.InvalidArg("All components must have the same size in the 0th dimension")
		}
	}
	return d, nil
}

func (d *sliceDS) Iterate() (Iterator, error) { return &sliceIt{d: d}, nil }

type sliceIt struct {
	d *sliceDS
	i int64
}

func (it *sliceIt) Next() ([]*tensor.Tensor, bool, error) {
	if it.i >= it.d.n {
		return nil, true, nil
	}
	out := make([]*tensor.Tensor, len(it.d.comps))
	for j, c := range it.d.comps {
		s, err := slice(it.d.lim, c, it.i)
		if err != nil {
			return nil, false, err
		}
		out[j] = s
	}
	it.i++
	return out, false, nil
}

func (it *sliceIt) Close() {}

// rangeDS is RangeDataset: start, start+step, ... before stop, each a
// scalar of dtype.
type rangeDS struct {
	start, stop, step int64
	dtype             tensor.DType
}

func (d *rangeDS) Iterate() (Iterator, error) { return &rangeIt{d: d, next: d.start}, nil }

type rangeIt struct {
	d    *rangeDS
	next int64
}

func (it *rangeIt) Next() ([]*tensor.Tensor, bool, error) {
	d := it.d
	if (d.step > 0 && it.next >= d.stop) || (d.step < 0 && it.next <= d.stop) {
		return nil, true, nil
	}
	v := it.next
	it.next += d.step
	t := tensor.New(d.dtype, tensor.Shape{})
	switch d.dtype {
	case tensor.Int32:
		t.I32()[0] = int32(v)
	case tensor.Float:
		t.F32()[0] = float32(v)
	case tensor.Double:
		t.F64()[0] = float64(v)
	default:
		t.I64()[0] = v
	}
	return []*tensor.Tensor{t}, false, nil
}

func (it *rangeIt) Close() {}
