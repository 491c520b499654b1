package hostmem

import (
	"fmt"
	"math"
	"runtime/metrics"
	"sync"
)

// GCHeadroom is the heap the collector lets a process allocate between two
// collections beyond its live data, as ReserveGCHeadroom left it: what
// MS_SessionStats shows.
type GCHeadroom struct {
	// Bytes is the reserve in effect (0: none).
	Bytes int64 `json:"bytes"`
	// Skipped says why none was made although one was asked for: the
	// user tuned the collector (GOGC or GOMEMLIMIT), which is left alone.
	Skipped string `json:"skipped,omitempty"`
}

// gcReserve holds the reserve: one pointer-free allocation that nothing
// reads or writes, kept alive by this variable for the process's life.
var gcReserve struct {
	sync.Mutex
	buf  []byte
	last GCHeadroom
}

// ReserveGCHeadroom makes every collection cycle wait for at least bytes
// of allocation after the previous one, whatever the live heap.
//
// Why: a Run's tensors are ordinary Go memory (Alloc), so a model with
// little live data but large activations (a CNN at batch 1: 7 MB live,
// 0.4 MB of activations per Run) reaches GOGC=100's goal of twice the live
// heap every 17 Runs; each cycle's marking costs about 2 ms of CPU on one
// of the Ps the Runs need, which was a sixth of a Run's CPU time and the
// p99 of the Runs it overlapped. TF's allocators have no collector.
//
// How: the collector's goal is proportional to the heap it counts as live,
// so a reserve of bytes that is allocated once and never touched (fresh
// pages from the kernel, zero by construction: neither resident nor
// scanned, being pointer-free) raises the goal by bytes times GOGC/100 at
// no cost beyond address space. The heap actually resident grows by up to
// bytes of garbage between cycles.
//
// A process whose collector its user tuned (GOGC other than 100, or a
// GOMEMLIMIT: the reserve would count against it) is left alone. The
// reserve only grows: the process's largest request holds, since sessions
// share the collector. The result says what is in effect.
func ReserveGCHeadroom(bytes int64) GCHeadroom {
	gcReserve.Lock()
	defer gcReserve.Unlock()
	if bytes <= int64(len(gcReserve.buf)) {
		return gcReserve.last
	}
	if why := gcTuned(); why != "" {
		gcReserve.last.Skipped = why
		return gcReserve.last
	}
	gcReserve.buf = make([]byte, bytes)
	gcReserve.last = GCHeadroom{Bytes: bytes}
	return gcReserve.last
}

// gcTuned says how the collector differs from Go's default, or "".
func gcTuned() string {
	s := []metrics.Sample{{Name: "/gc/gogc:percent"}, {Name: "/gc/gomemlimit:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() == metrics.KindUint64 {
		switch p := int64(s[0].Value.Uint64()); {
		case p < 0:
			return "GOGC is off"
		case p != 100:
			return fmt.Sprintf("GOGC is %d, not Go's default 100", p)
		}
	}
	if s[1].Value.Kind() == metrics.KindUint64 && s[1].Value.Uint64() != math.MaxInt64 {
		return fmt.Sprintf("GOMEMLIMIT is %d bytes", s[1].Value.Uint64())
	}
	return ""
}
