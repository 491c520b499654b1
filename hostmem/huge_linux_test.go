package hostmem

import (
	"bufio"
	"fmt"
	"os"
	"strings"
	"testing"
)

// vmFlags returns the VmFlags of the mapping holding address a, from
// /proc/self/smaps.
func vmFlags(t *testing.T, a uintptr) string {
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		var lo, hi uintptr
		if n, _ := fmt.Sscanf(line, "%x-%x ", &lo, &hi); n == 2 {
			in = lo <= a && a < hi
			continue
		}
		if in && strings.HasPrefix(line, "VmFlags:") {
			return line
		}
	}
	t.Fatalf("no mapping holds %#x", a)
	return ""
}

// TestAdviseHuge checks that a buffer's whole 2 MiB pages are marked for
// huge pages (the "hg" flag, which the kernel sets whether or not it can
// give one now), that the buffer still reads as zero after its pages were
// given back, and that it holds what is written to it afterwards; the
// partial pages at its ends belong to other objects and are left alone.
func TestAdviseHuge(t *testing.T) {
	for _, reuse := range []bool{false, true} {
		b := Alloc(9 << 20)
		if reuse {
			// Memory the heap has used before: written, then the
			// buffer made zero again as Alloc's contract is.
			for i := range b {
				b[i] = 0xa5
			}
			clear(b)
		}
		AdviseHuge(b)
		start := (Addr(b) + hugePage - 1) &^ (hugePage - 1)
		if f := vmFlags(t, start); !strings.Contains(f, " hg") {
			t.Errorf("reuse %v: the buffer's first whole 2 MiB page is not marked for huge pages: %s", reuse, f)
		}
		for i, v := range b {
			if v != 0 {
				t.Fatalf("reuse %v: byte %d is %#x after AdviseHuge, want 0", reuse, i, v)
			}
		}
		for i := range b {
			b[i] = byte(i * 7)
		}
		for i, v := range b {
			if v != byte(i*7) {
				t.Fatalf("reuse %v: byte %d reads %#x, want %#x", reuse, i, v, byte(i*7))
			}
		}
	}
	AdviseHuge(nil)
	AdviseHuge(Alloc(1 << 20)) // no whole huge page: nothing to advise
}
