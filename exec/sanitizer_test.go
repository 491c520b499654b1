//go:build !race

package exec

import (
	"context"
	"math/rand"
	"testing"
	"time"

	"mstream/groups"
)

// TestSanitizerCatchesMissingWaits proves the stream sanitizer works: with
// every producer-consumer wait dropped, jittered host streams make steps
// read values before they exist, and the results go wrong or the step
// reports the missing wait. (Under -race the race detector reports the
// same thing as a race, which is why this test is not built with it.)
func TestSanitizerCatchesMissingWaits(t *testing.T) {
	r := rand.New(rand.NewSource(3))
	rp := makeRandomPlan(t, r, 3, 30)
	set := testSet(t, 1, false, 200*time.Microsecond, false)
	sr := &StreamRuntime{Groups: []*groups.Group{set.Groups()[0]}, ReduceWaits: true, Holder: &set.Holder}
	dropWaits.Store(true)
	defer dropWaits.Store(false)
	bad := 0
	for it := 0; it < 20 && bad == 0; it++ {
		vals := []float32{float32(1 + r.Intn(100)), float32(1 + r.Intn(100)), float32(1 + r.Intn(100))}
		got, _, err := rp.plan.RunStreams(context.Background(), sr, scalars(vals), Options{})
		if err != nil || check(got, rp.want(vals)) != nil {
			bad++
		}
	}
	if bad == 0 {
		t.Fatal("20 steps without their waits all gave right answers: the sanitizer does not see missing waits")
	}
}
