package tensor

import "testing"

// TestSizeTable: Size's table agrees with the dtype map for every dtype
// and beyond it (reference dtypes and unknown values have no size), as
// the map lookup it replaced did.
func TestSizeTable(t *testing.T) {
	for d := DType(-1); d <= maxDType+refOffset+2; d++ {
		if got, want := d.Size(), dtypes[d].size; got != want {
			t.Errorf("%d: Size %d, want %d", d, got, want)
		}
	}
}
