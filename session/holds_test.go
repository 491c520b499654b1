package session

import (
	"fmt"
	"math/rand"
	"testing"
)

// TestNoHoldOutlivesItsStep counts the tensor holder's live holds after
// every step of every multi-stream case: once the step's streams have run
// what was enqueued on them, nothing may still be held (a buffer held
// longer than its streams need is memory a later step cannot use), and no
// step may leave a buffer of its own in use.
func TestNoHoldOutlivesItsStep(t *testing.T) {
	m := loadModel(t)
	r := rand.New(rand.NewSource(9))
	for _, env := range multiStreamCases(t) {
		t.Run(fmt.Sprint(env), func(t *testing.T) {
			s := openSession(t, m.g, env)
			st := s.impl
			for step := 0; step < 6; step++ {
				if _, _, err := s.Run(nil, m.feeds(r, 1+r.Intn(16)), m.outputs, nil); err != nil {
					t.Fatal(err)
				}
				for _, g := range st.set.Groups() {
					for _, x := range g.Streams() {
						x.Synchronize()
					}
				}
				if n := st.set.Holder.Live(); n != 0 {
					t.Fatalf("step %d: %d holds live after its streams ran", step, n)
				}
				var inUse, consts int64
				seen := map[any]bool{}
				for _, g := range st.set.Groups() {
					if !seen[g.Consts] {
						seen[g.Consts] = true
						_, b := g.Consts.Stats()
						consts += b
					}
					if !seen[g.Alloc] {
						seen[g.Alloc] = true
						inUse += int64(g.Alloc.Stats().BytesInUse)
					}
				}
				if inUse != consts {
					t.Fatalf("step %d: %d bytes in use after the step, constants hold %d", step, inUse, consts)
				}
			}
		})
	}
}
