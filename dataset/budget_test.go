package dataset

import (
	"testing"

	"mstream/hostmem"
	"mstream/status"
	"mstream/tensor"
)

// TestBuffersCheckTheLimit: a batch, shuffle buffer or prefetch buffer
// that would hold more than the device's limit fails with
// RESOURCE_EXHAUSTED naming it, and one within the limit runs.
func TestBuffersCheckTheLimit(t *testing.T) {
	small := hostmem.Limit{Bytes: 4000} // about 50 int64 scalars with their headers
	endless := &rangeDS{start: 0, stop: 1 << 62, step: 1, dtype: tensor.Int64}
	for _, c := range []struct {
		what string
		d    Dataset
	}{
		{"batch", &batchDS{in: endless, size: 1000, lim: small}},
		{"shuffle buffer", newShuffleDS(endless, 1000, 1, 2, false, small)},
		{"prefetch buffer", &prefetchDS{in: &repeatDS{in: &tensorDS{comps: []*tensor.Tensor{tensor.New(tensor.Int64, tensor.Shape{1000})}}, count: -1}, size: 100, lim: small}},
	} {
		it, err := c.d.Iterate()
		if err != nil {
			t.Fatal(err)
		}
		var got error
		for i := 0; i < 3 && got == nil; i++ {
			_, _, got = it.Next()
		}
		it.Close()
		if status.CodeOf(got) != status.ResourceExhausted {
			t.Errorf("%s: %v", c.what, got)
		}
	}
	it, _ := (&batchDS{in: endless, size: 10, lim: small}).Iterate()
	if e, end, err := it.Next(); err != nil || end || e[0].I64()[9] != 9 {
		t.Errorf("a batch within the limit: %v %v %v", e, end, err)
	}
}
