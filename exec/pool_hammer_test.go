package exec

import (
	"fmt"
	"math/rand"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestIntraHammer: callers beyond the pool's threads run For
// concurrently with random sizes and costs, some chunks panicking, on
// pools of 2 and 3 threads that one caller closes midway. Invariants: a
// For that returns (or re-raises a chunk's panic) has run every element
// exactly once, no chunk of it runs after it returned (its fn checks a
// flag set on return), and For after Close still runs the whole loop.
func TestIntraHammer(t *testing.T) {
	for _, threads := range []int{2, 3} {
		t.Run(fmt.Sprint(threads), func(t *testing.T) {
			p := NewIntra(threads)
			var late, wrong atomic.Int64
			var wg sync.WaitGroup
			const callers, loops = 6, 300
			for g := 0; g < callers; g++ {
				wg.Add(1)
				go func(g int) {
					defer wg.Done()
					rng := rand.New(rand.NewSource(int64(g)))
					for i := 0; i < loops; i++ {
						if g == 0 && i == loops/2 {
							p.Close()
						}
						n := 1 + rng.Intn(300)
						panicAt := -1
						if rng.Intn(8) == 0 {
							panicAt = rng.Intn(n)
						}
						hits := make([]int32, n)
						var returned atomic.Bool
						func() {
							defer func() {
								if r := recover(); r != nil && panicAt < 0 {
									wrong.Add(1)
								}
							}()
							p.For(n, float64(200+rng.Intn(5000)), float64(rng.Intn(20000)), func(lo, hi int) {
								if returned.Load() {
									late.Add(1)
								}
								for k := lo; k < hi; k++ {
									atomic.AddInt32(&hits[k], 1)
								}
								if panicAt >= lo && panicAt < hi {
									panic("chunk panics")
								}
								if (lo+hi)%7 == 0 {
									runtime.Gosched()
								}
							})
						}()
						returned.Store(true)
						for k := range hits {
							if h := atomic.LoadInt32(&hits[k]); h != 1 {
								wrong.Add(1)
								break
							}
						}
					}
				}(g)
			}
			wg.Wait()
			// Chunks of a returned For that a stale worker might still start.
			time.Sleep(2 * intraSpin)
			if late.Load() != 0 || wrong.Load() != 0 {
				t.Fatalf("%d chunks ran after their For returned, %d loops not run exactly once (or a panic lost)", late.Load(), wrong.Load())
			}
		})
	}
}
