package dataset

import (
	"mstream/hostmem"
	"mstream/status"
	"mstream/tensor"
)

// batchDS is BatchDatasetV2 and PaddedBatchDatasetV2: up to size elements
// stacked along a new first dimension. With padded set, component j's
// rows are padded with padValues[j] to padShapes[j] (-1: the batch's
// largest size in that dimension).
type batchDS struct {
	in        Dataset
	size      int64
	drop      bool
	padded    bool
	padShapes [][]int64
	padValues []*tensor.Tensor
	lim       hostmem.Limit
}

func (d *batchDS) Iterate() (Iterator, error) {
	in, err := d.in.Iterate()
	if err != nil {
		return nil, err
	}
	return &batchIt{d: d, in: in}, nil
}

type batchIt struct {
	d   *batchDS
	in  Iterator
	end bool
}

func (it *batchIt) Next() ([]*tensor.Tensor, bool, error) {
	if it.end {
		return nil, true, nil
	}
	var elems [][]*tensor.Tensor
	held := budget{lim: it.d.lim, what: "batch"}
	for int64(len(elems)) < it.d.size {
		e, end, err := it.in.Next()
		if err != nil {
			return nil, false, err
		}
		if end {
			it.end = true
			break
		}
		if err := held.take(e); err != nil {
			return nil, false, err
		}
		elems = append(elems, e)
	}
	if len(elems) == 0 || (it.d.drop && int64(len(elems)) < it.d.size) {
		return nil, true, nil
	}
	out := make([]*tensor.Tensor, len(elems[0]))
	for j := range out {
		var err error
		if it.d.padded {
			out[j], err = it.padComponent(elems, j)
		} else {
			out[j], err = it.stack(elems, j)
		}
		if err != nil {
			return nil, false, err
		}
	}
	return out, false, nil
}

func (it *batchIt) stack(elems [][]*tensor.Tensor, j int) (*tensor.Tensor, error) {
	first := elems[0][j]
	for i, e := range elems[1:] {
		if !e[j].Shape.Equal(first.Shape) {
			return nil, status.InvalidArg("Cannot batch tensors with different shapes in component %d. First element had shape %v and element %d had shape %v.", j, first.Shape, i+1, e[j].Shape)
		}
	}
	out, err := newTensor(it.d.lim, first.DType, append(tensor.Shape{int64(len(elems))}, first.Shape...))
	if err != nil {
		return nil, err
	}
	for i, e := range elems {
		setRow(out, int64(i), e[j])
	}
	return out, nil
}

func (it *batchIt) padComponent(elems [][]*tensor.Tensor, j int) (*tensor.Tensor, error) {
	want := it.d.padShapes[j]
	first := elems[0][j]
	row := make(tensor.Shape, len(want))
	for d, w := range want {
		row[d] = max(w, 0)
	}
	for _, e := range elems {
		t := e[j]
		if len(t.Shape) != len(want) {
			return nil, status.InvalidArg("All elements in a batch must have the same rank as the padded shape for component%d: expected rank %d but got element with rank %d", j, len(want), len(t.Shape))
		}
		for d, w := range want {
			if w >= 0 && t.Shape[d] > w {
				return nil, status.Errorf(status.DataLoss, "Attempted to pad to a smaller size than the input element.")
			}
			if w < 0 {
				row[d] = max(row[d], t.Shape[d])
			}
		}
	}
	out, err := newTensor(it.d.lim, first.DType, append(tensor.Shape{int64(len(elems))}, row...))
	if err != nil {
		return nil, err
	}
	pad := it.d.padValues[j]
	if pad.DType != first.DType {
		return nil, status.InvalidArg("Mismatched type between padding value %d and input elements: %v vs. %v", j, pad.DType, first.DType)
	}
	n := out.NumElements()
	switch {
	case out.DType.InStrs():
		for k := range out.Strs {
			out.Strs[k] = pad.Strs[0]
		}
	case out.DType == tensor.Variant:
		for k := range out.Vars {
			out.Vars[k] = pad.Vars[0]
		}
	default:
		es := int64(elemBytes(out))
		for k := int64(0); k < n; k++ {
			copy(out.Buf[k*es:(k+1)*es], pad.Buf)
		}
	}
	for i, e := range elems {
		setRow(out, int64(i), e[j])
	}
	return out, nil
}

func (it *batchIt) Close() { it.in.Close() }

// repeatDS is RepeatDataset: the input count times (forever when count <
// 0). An input that is empty ends a forever repeat, as in TF.
type repeatDS struct {
	in    Dataset
	count int64
}

func (d *repeatDS) Iterate() (Iterator, error) { return &repeatIt{d: d}, nil }

type repeatIt struct {
	d      *repeatDS
	in     Iterator
	epoch  int64
	gotAny bool // the current epoch produced an element
	empty  bool // a forever repeat met an empty epoch
}

func (it *repeatIt) Next() ([]*tensor.Tensor, bool, error) {
	for {
		if it.in == nil {
			if it.empty || (it.d.count >= 0 && it.epoch >= it.d.count) {
				return nil, true, nil
			}
			in, err := it.d.in.Iterate()
			if err != nil {
				return nil, false, err
			}
			it.in, it.gotAny = in, false
		}
		e, end, err := it.in.Next()
		if err != nil {
			return nil, false, err
		}
		if !end {
			it.gotAny = true
			return e, false, nil
		}
		it.in.Close()
		it.in = nil
		it.epoch++
		it.empty = it.d.count < 0 && !it.gotAny
	}
}

func (it *repeatIt) Close() {
	if it.in != nil {
		it.in.Close()
	}
}

// takeDS is TakeDataset (take) and SkipDataset (skip): the first count
// elements, or all but them (count < 0: all of them).
type takeDS struct {
	in    Dataset
	count int64
	skip  bool
}

func (d *takeDS) Iterate() (Iterator, error) {
	in, err := d.in.Iterate()
	if err != nil {
		return nil, err
	}
	return &takeIt{d: d, in: in}, nil
}

type takeIt struct {
	d  *takeDS
	in Iterator
	i  int64
}

func (it *takeIt) Next() ([]*tensor.Tensor, bool, error) {
	if it.d.skip {
		for it.d.count < 0 || it.i < it.d.count {
			_, end, err := it.in.Next()
			if err != nil {
				return nil, false, err
			}
			if end {
				return nil, true, nil
			}
			it.i++
		}
		return it.in.Next()
	}
	if it.d.count >= 0 && it.i >= it.d.count {
		return nil, true, nil
	}
	e, end, err := it.in.Next()
	if err == nil && !end {
		it.i++
	}
	return e, end, err
}

func (it *takeIt) Close() { it.in.Close() }

// zipDS is ZipDataset: the components of one element of each input,
// ending with the shortest input.
type zipDS struct{ ins []Dataset }

func (d *zipDS) Iterate() (Iterator, error) {
	it := &zipIt{}
	for _, in := range d.ins {
		i, err := in.Iterate()
		if err != nil {
			it.Close()
			return nil, err
		}
		it.ins = append(it.ins, i)
	}
	return it, nil
}

type zipIt struct{ ins []Iterator }

func (it *zipIt) Next() ([]*tensor.Tensor, bool, error) {
	var out []*tensor.Tensor
	for _, in := range it.ins {
		e, end, err := in.Next()
		if err != nil || end {
			return nil, end, err
		}
		out = append(out, e...)
	}
	return out, false, nil
}

func (it *zipIt) Close() {
	for _, in := range it.ins {
		in.Close()
	}
}

// concatDS is ConcatenateDataset: a's elements, then b's.
type concatDS struct{ a, b Dataset }

func (d *concatDS) Iterate() (Iterator, error) {
	in, err := d.a.Iterate()
	if err != nil {
		return nil, err
	}
	return &concatIt{d: d, in: in}, nil
}

type concatIt struct {
	d      *concatDS
	in     Iterator
	second bool
}

func (it *concatIt) Next() ([]*tensor.Tensor, bool, error) {
	for {
		e, end, err := it.in.Next()
		if err != nil || !end || it.second {
			return e, end, err
		}
		it.in.Close()
		in, err := it.d.b.Iterate()
		if err != nil {
			return nil, false, err
		}
		it.in, it.second = in, true
	}
}

func (it *concatIt) Close() { it.in.Close() }
