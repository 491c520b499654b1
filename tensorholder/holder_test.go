package tensorholder

import (
	"math/rand"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"mstream/bfc"
	"mstream/device"
	"mstream/device/host"
)

func jitterStreams(t *testing.T, n int) (*host.Device, []device.Stream) {
	d := host.New()
	d.Jitter = 300 * time.Microsecond
	var ss []device.Stream
	for i := 0; i < n; i++ {
		s, _ := d.NewStream(0)
		ss = append(ss, s)
		t.Cleanup(func() { s.Close() })
	}
	return d, ss
}

// TestFreeAfterEveryEvent: each buffer is used on a random subset of
// streams; free must see every use finished.
func TestFreeAfterEveryEvent(t *testing.T) {
	for _, mode := range []string{"events", "streams"} {
		t.Run(mode, func(t *testing.T) {
			d, ss := jitterStreams(t, 3)
			var h Holder
			rng := rand.New(rand.NewSource(time.Now().UnixNano()))
			var early atomic.Int32
			const bufs = 100
			for i := 0; i < bufs; i++ {
				var users []device.Stream
				for _, s := range ss {
					if rng.Intn(2) == 0 || len(users) == 0 {
						users = append(users, s)
					}
				}
				var finished atomic.Int32
				for _, s := range users {
					device.Enqueue(s, func() { finished.Add(1) })
				}
				n := int32(len(users))
				free := func() {
					if finished.Load() != n {
						early.Add(1)
					}
				}
				if mode == "events" {
					var evs []device.Event
					for _, s := range users {
						e, _ := d.NewEvent()
						s.Record(e)
						evs = append(evs, e)
					}
					h.Hold(free, evs)
				} else {
					h.HoldOn(free, users)
				}
			}
			for _, s := range ss {
				s.Synchronize()
			}
			if mode == "streams" && h.Live() != 0 {
				t.Fatalf("%d holds live after every stream passed them", h.Live())
			}
			h.Drain()
			if h.Live() != 0 || h.Freed() != bufs {
				t.Fatalf("live %d freed %d", h.Live(), h.Freed())
			}
			if early.Load() != 0 {
				t.Fatalf("%d buffers freed before their last use", early.Load())
			}
		})
	}
}

func TestHoldCompleteFreesAtOnce(t *testing.T) {
	var h Holder
	d := host.New()
	e, _ := d.NewEvent() // never recorded: complete
	freed := false
	h.Hold(func() { freed = true }, []device.Event{e})
	if !freed || h.Live() != 0 {
		t.Fatal("complete events should free synchronously")
	}
	h.HoldOn(func() { freed = false }, nil)
	if freed {
		t.Fatal("no streams should free synchronously")
	}
	h.Drain()
}

// TestWithAllocator: buffers allocated on stream A, read on stream B, and
// freed through the holder into a non-stream-aware bfc; A keeps writing
// new patterns into fresh allocations. B must always read the pattern A
// wrote for it, which fails if the holder freed a buffer before B's read.
func TestWithAllocator(t *testing.T) {
	d, ss := jitterStreams(t, 2)
	A, B := ss[0], ss[1]
	be := &bfc.HostBackend{}
	a, err := bfc.New(be, bfc.Options{Limit: 64 << 10, AllowGrowth: true})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	var h Holder
	var mu sync.Mutex
	bad := 0
	const n = 4096
	for step := 0; step < 300; step++ {
		addr, err := a.Allocate(n, A)
		if err != nil {
			// Everything is held: wait for streams to release some.
			h.Drain()
			continue
		}
		buf := be.Bytes(addr, n)
		pat := byte(step)
		device.Enqueue(A, func() {
			for i := range buf {
				buf[i] = pat
			}
		})
		ev, _ := d.NewEvent()
		A.Record(ev)
		B.Wait(ev)
		device.Enqueue(B, func() {
			for _, b := range buf {
				if b != pat {
					mu.Lock()
					bad++
					mu.Unlock()
					return
				}
			}
		})
		// Last uses: A's write and B's read.
		h.HoldOn(func() { a.Free(addr) }, []device.Stream{A, B})
	}
	A.Synchronize()
	B.Synchronize()
	if h.Live() != 0 {
		t.Fatalf("%d held after both streams finished", h.Live())
	}
	if bad != 0 {
		t.Fatalf("%d reads saw a reused buffer", bad)
	}
	if st := a.Stats(); st.BytesInUse != 0 {
		t.Fatalf("leak: %+v", st)
	}
	if err := a.Check(); err != nil {
		t.Fatal(err)
	}
}
