package hostmem

import (
	"fmt"
	"sync"
	"syscall"
	"unsafe"

	"mstream/status"
)

// Limit bounds one host allocation whose size comes from outside the
// library: a graph, a feed, an attr or a C caller. Every such allocation is
// checked against a Limit before any memory is asked for, so a hostile size
// gives RESOURCE_EXHAUSTED instead of the Go runtime's unrecoverable
// "fatal error: out of memory", which would end the host process.
type Limit struct {
	// Allocator names the allocator in errors, as TF's "by allocator cpu".
	Allocator string
	// Bytes is the most one allocation may take; 0 means Physical().
	Bytes int64
}

// physical is the machine's memory, read once: it does not change while a
// process runs.
var physical = sync.OnceValue(func() int64 {
	var si syscall.Sysinfo_t
	if err := syscall.Sysinfo(&si); err != nil || si.Totalram == 0 {
		return 1 << 40
	}
	return int64(si.Totalram) * int64(max(si.Unit, 1))
})

// Physical is the machine's physical memory in bytes (sysinfo's totalram):
// the limit when nothing else is set, since no allocation larger than it can
// succeed (TF's own CPU allocator fails there too, as malloc does).
func Physical() int64 { return physical() }

// Max is the limit in bytes: Bytes, or Physical when unset.
func (l Limit) Max() int64 {
	if l.Bytes > 0 {
		return l.Bytes
	}
	return Physical()
}

// Name is the allocator's name in messages ("cpu" when unset).
func (l Limit) Name() string {
	if l.Allocator == "" {
		return "cpu"
	}
	return l.Allocator
}

// Check returns RESOURCE_EXHAUSTED when n elements of elem bytes each
// overflow or exceed the limit; what says what is being allocated ("tensor
// with shape[...] and type float"), and is called only for the message, so
// the check costs no formatting on the hot path.
func (l Limit) Check(n, elem int64, what func() string) error {
	if n < 0 || elem < 0 {
		return status.Errorf(status.InvalidArgument, "negative size allocating %s", what())
	}
	max := l.Max()
	if elem > 0 && n > max/elem {
		return status.Errorf(status.ResourceExhausted,
			"OOM when allocating %s: %d elements of %d bytes are more than the %d bytes allocator %s may give",
			what(), n, elem, max, l.Name())
	}
	return nil
}

// Make returns a zeroed slice of n T after checking its size against l.
// Kernels use it (through kernels.Scratch) for index maps and other scratch
// whose length comes from the data.
func Make[T any](l Limit, n int64) ([]T, error) {
	var z T
	if err := l.Check(n, int64(unsafe.Sizeof(z)), func() string { return fmt.Sprintf("%d elements of scratch", n) }); err != nil {
		return nil, err
	}
	return make([]T, n), nil
}
