package main

import "testing"

// TestFeedBlockReusable: a Run's feed block goes back for the next Run
// when it is small, or when that Run filled at least half of it (large
// feeds Run after Run reuse their block: before, a block above 4 MiB was
// made and zeroed anew every Run, and the heap it grew was fresh pages);
// a large block a Run used little of is left to the collector, so that
// one large feed does not stay with a session fed small ones.
func TestFeedBlockReusable(t *testing.T) {
	const mib = 1 << 20
	for _, c := range []struct {
		capacity, used int
		want           bool
	}{
		{0, 0, true},
		{mib, 64, true},
		{maxFeedBlock, 0, true},
		{8 * mib, 8 * mib, true},    // a batch of 256 sequences, Run after Run
		{64 * mib, 33 * mib, true},  // more than half used
		{64 * mib, 32 * mib, true},  // half
		{64 * mib, 31 * mib, false}, // less than half
		{8 * mib, 64, false},        // large feeds once, then small ones
	} {
		b := &feedBlock{buf: make([]byte, 0, c.capacity), used: c.used}
		if got := b.reusable(); got != c.want {
			t.Errorf("block of %d bytes, %d used: reusable %v, want %v", c.capacity, c.used, got, c.want)
		}
	}
}
