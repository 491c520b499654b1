package checkpoint

import (
	"bytes"
	"errors"
	"testing"
)

// TestUnsnappy decodes blocks written by hand from the format's rules:
// literals of each length encoding and overlapping copies of each offset
// width. TestCheckpointsLikeTF (package savedmodel) reads a bundle TF
// compressed.
func TestUnsnappy(t *testing.T) {
	long := bytes.Repeat([]byte("0123456789"), 10)
	cases := []struct {
		in   []byte
		want []byte
	}{
		{[]byte{0}, []byte{}},
		{[]byte{3, 2 << 2, 'a', 'b', 'c'}, []byte("abc")},
		// "ab", then a 1-byte-offset copy of 6 from 2 back (overlapping).
		{[]byte{8, 1 << 2, 'a', 'b', (6-4)<<2 | 1, 2}, []byte("abababab")},
		// A 2-byte-offset copy and a 4-byte-offset one.
		{[]byte{6, 1 << 2, 'x', 'y', (4-1)<<2 | 2, 2, 0}, []byte("xyxyxy")},
		{[]byte{5, 0, 'q', (4-1)<<2 | 3, 1, 0, 0, 0}, []byte("qqqqq")},
		// A literal whose length follows in one byte (tag 60).
		{append([]byte{100, 60 << 2, 99}, long...), long},
	}
	for i, c := range cases {
		got, err := unsnappy(c.in)
		if err != nil || !bytes.Equal(got, c.want) {
			t.Errorf("case %d: %q, %v; want %q", i, got, err, c.want)
		}
	}
	for i, bad := range [][]byte{
		{},
		{0xff, 0xff, 0xff, 0xff, 0x0f, 0},  // a length no block this size holds
		{4, 3 << 2, 'a'},                   // a literal past the end
		{4, 1 << 2, 'a', 'b', 1, 9},        // a copy from before the start
		{3, 2 << 2, 'a', 'b', 'c', 0, 'd'}, // more than the length said
		{9, 2 << 2, 'a', 'b', 'c'},         // less
	} {
		// A table-level corruption: Open reports it as DATA_LOSS naming the file.
		if _, err := unsnappy(bad); !errors.As(err, new(errCorrupt)) {
			t.Errorf("bad %d: %v, want a corruption", i, err)
		}
	}
}

func FuzzUnsnappy(f *testing.F) {
	f.Add([]byte{8, 1 << 2, 'a', 'b', (6-4)<<2 | 1, 2})
	f.Add([]byte{5, 0, 'q', (4-1)<<2 | 3, 1, 0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		out, err := unsnappy(b)
		if err == nil && uint64(len(out)) > 22*uint64(len(b)) {
			t.Fatalf("%d bytes from %d", len(out), len(b))
		}
	})
}
