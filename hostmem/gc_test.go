package hostmem

import (
	"math"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"testing"
)

// gcCycles is the number of collection cycles the process has completed.
func gcCycles() uint64 {
	s := []metrics.Sample{{Name: "/gc/cycles/total:gc-cycles"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

var gcSink []byte

// heapGoal is the collector's current heap goal in bytes.
func heapGoal() int {
	s := []metrics.Sample{{Name: "/gc/heap/goal:bytes"}}
	metrics.Read(s)
	return int(s[0].Value.Uint64())
}

// churn allocates n bytes of garbage in 64 KiB pieces, as Runs do with
// their activations, and counts the cycles that ran meanwhile.
func churn(n int) uint64 {
	runtime.GC()
	c0 := gcCycles()
	for i := 0; i < n>>16; i++ {
		gcSink = make([]byte, 64<<10)
	}
	return gcCycles() - c0
}

// TestGCHeadroom: a tuned collector is left alone; else the reserve keeps
// the collector from running while Runs' worth of garbage piles up below
// it, where Go's default goal (twice the live heap) collects; the reserve
// only grows.
func TestGCHeadroom(t *testing.T) {
	const mib = 1 << 20
	// The reserve is the process's: drop one an earlier run of this test
	// made (-count), which only this package can.
	gcReserve.Lock()
	gcReserve.buf, gcReserve.last = nil, GCHeadroom{}
	gcReserve.Unlock()
	for _, tc := range []struct {
		name    string
		percent int
		limit   int64
		skipped string
	}{
		{"gogc", 300, math.MaxInt64, "GOGC is 300, not Go's default 100"},
		{"off", -1, math.MaxInt64, "GOGC is off"},
		{"limit", 100, 1 << 40, "GOMEMLIMIT is 1099511627776 bytes"},
	} {
		old, oldLimit := debug.SetGCPercent(tc.percent), debug.SetMemoryLimit(tc.limit)
		got := ReserveGCHeadroom(64 * mib)
		debug.SetGCPercent(old)
		debug.SetMemoryLimit(oldLimit)
		if got.Bytes != 0 || got.Skipped != tc.skipped {
			t.Errorf("%s: ReserveGCHeadroom = %+v, want none made, skipped %q", tc.name, got, tc.skipped)
		}
	}
	if debug.SetGCPercent(100) != 100 {
		t.Fatal("the test process's GOGC is not 100: run it without GOGC set")
	}

	// The garbage is eight times the collector's goal, whatever the heap
	// the package's other tests left live: cycles without a reserve (at
	// least one completes, however slowly a loaded host marks); none
	// under a reserve of sixteen times the goal.
	runtime.GC()
	garbage := 8 * heapGoal()
	without := churn(garbage)
	if without < 1 {
		t.Fatalf("%d cycles for %d MiB of garbage (8 times the goal) without a reserve: the test does not measure the collector", without, garbage/mib)
	}
	reserve := int64(2*garbage+mib-1) &^ (mib - 1)
	if got := ReserveGCHeadroom(reserve); got != (GCHeadroom{Bytes: reserve}) {
		t.Fatalf("ReserveGCHeadroom(%d MiB) = %+v", reserve/mib, got)
	}
	if with := churn(garbage); with > 0 {
		t.Errorf("%d cycles for %d MiB of garbage under a %d MiB reserve (%d without)", with, garbage/mib, reserve/mib, without)
	}
	if got := ReserveGCHeadroom(reserve / 2); got.Bytes != reserve {
		t.Errorf("ReserveGCHeadroom(%d MiB) after %d = %+v: the larger reserve must hold", reserve/2/mib, reserve/mib, got)
	}
}
