package host

import (
	"sync/atomic"
	"testing"
	"time"
)

// TestCrossStreamWait checks that a Wait orders work across streams even
// when the producer stream is delayed at random.
func TestCrossStreamWait(t *testing.T) {
	d := New()
	d.Jitter = 200 * time.Microsecond
	for iter := 0; iter < 50; iter++ {
		a, _ := d.NewStream()
		b, _ := d.NewStream()
		e, _ := d.NewEvent()
		var x atomic.Int64
		a.Enqueue(func() { x.Store(41) })
		a.Enqueue(func() { x.Add(1) })
		a.Record(e)
		b.Wait(e)
		var seen int64
		b.Enqueue(func() { seen = x.Load() })
		b.Synchronize()
		if seen != 42 {
			t.Fatalf("iteration %d: consumer saw %d before the producer finished", iter, seen)
		}
		a.Close()
		b.Close()
	}
}

func TestEventSemantics(t *testing.T) {
	d := New()
	s, _ := d.NewStream()
	defer s.Close()
	e, _ := d.NewEvent()
	if !e.Query() {
		t.Fatal("a never-recorded event must read as complete")
	}
	gate := make(chan struct{})
	s.Enqueue(func() { <-gate })
	s.Record(e)
	if e.Query() {
		t.Fatal("event completed before the stream reached it")
	}
	other, _ := d.NewStream()
	defer other.Close()
	other.Wait(e) // captured now: waits for this record only
	s.Record(e)   // re-armed for later waiters
	done := make(chan struct{})
	other.Enqueue(func() { close(done) })
	select {
	case <-done:
		t.Fatal("wait did not hold the waiting stream")
	case <-time.After(20 * time.Millisecond):
	}
	close(gate)
	<-done
	e.Synchronize()
	if !e.Query() {
		t.Fatal("event not complete after Synchronize")
	}
}

func TestOrder(t *testing.T) {
	s, _ := New().NewStream()
	defer s.Close()
	var got []int
	for i := 0; i < 1000; i++ {
		i := i
		s.Enqueue(func() { got = append(got, i) })
	}
	s.Synchronize()
	for i, v := range got {
		if v != i {
			t.Fatalf("item %d ran as %d", i, v)
		}
	}
}
