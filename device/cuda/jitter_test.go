package cuda

import (
	"bytes"
	"testing"
	"time"

	"mstream/device"
)

var _ device.Delayer = (*Stream)(nil)

// TestStreamDelay compiles and runs the sanitizer's spin kernel: delays
// of several lengths between an upload and a download on one stream
// keep the stream's order (the bytes come back), and a zero delay
// enqueues nothing.
func TestStreamDelay(t *testing.T) {
	_, c := gpu(t)
	s, err := c.NewStream()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	in, _ := c.HostAlloc(4096)
	out, _ := c.HostAlloc(4096)
	defer c.HostFree(in)
	defer c.HostFree(out)
	for i := range in {
		in[i] = byte(i * 7)
	}
	mem := c.Memory()
	a, err := mem.Alloc(4096)
	if err != nil {
		t.Fatal(err)
	}
	defer mem.Free(a)
	for _, d := range []time.Duration{0, time.Microsecond, 200 * time.Microsecond, 2 * time.Millisecond} {
		clear(out)
		if err := s.H2D(a, in); err != nil {
			t.Fatal(err)
		}
		if err := s.Delay(d); err != nil {
			t.Fatalf("delay %v: %v", d, err)
		}
		if err := s.D2H(out, a); err != nil {
			t.Fatal(err)
		}
		if err := s.Sync(); err != nil {
			t.Fatalf("delay %v: %v", d, err)
		}
		if !bytes.Equal(in, out) {
			t.Fatalf("delay %v: the bytes after the delay differ", d)
		}
	}
}
