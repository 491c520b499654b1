package exec

import (
	"runtime"
	"sync"
)

// Pool is a fixed set of worker goroutines serving a FIFO queue: the
// inter-op pool. Submit never blocks, so workers may submit from inside
// tasks without deadlock.
type Pool struct {
	mu     sync.Mutex
	cond   *sync.Cond
	queue  []func()
	closed bool
	size   int
}

// NewPool starts n workers (n <= 0 means one per CPU).
func NewPool(n int) *Pool {
	if n <= 0 {
		n = runtime.NumCPU()
	}
	p := &Pool{size: n}
	p.cond = sync.NewCond(&p.mu)
	for i := 0; i < n; i++ {
		go p.worker()
	}
	return p
}

// Size is the number of workers.
func (p *Pool) Size() int { return p.size }

// Submit queues f.
func (p *Pool) Submit(f func()) {
	p.mu.Lock()
	p.queue = append(p.queue, f)
	p.mu.Unlock()
	p.cond.Signal()
}

// Close stops the workers once the queue is drained.
func (p *Pool) Close() {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	p.cond.Broadcast()
}

func (p *Pool) worker() {
	for {
		p.mu.Lock()
		for len(p.queue) == 0 && !p.closed {
			p.cond.Wait()
		}
		if len(p.queue) == 0 {
			p.mu.Unlock()
			return
		}
		f := p.queue[0]
		p.queue[0] = nil
		p.queue = p.queue[1:]
		p.mu.Unlock()
		f()
	}
}

// Intra is the intra-op Parallelizer: it splits a loop into chunks worth at
// least minChunkNs each and runs them on up to n goroutines, the caller
// taking one chunk.
type Intra struct {
	sem chan struct{}
}

const minChunkNs = 20000

// NewIntra returns an intra-op parallelizer with n threads (n <= 0: one per CPU).
func NewIntra(n int) *Intra {
	if n <= 0 {
		n = runtime.NumCPU()
	}
	return &Intra{sem: make(chan struct{}, n-1)}
}

// For runs fn over [0, n).
func (p *Intra) For(n int, cost float64, fn func(lo, hi int)) {
	if n <= 0 {
		return
	}
	chunks := int(float64(n) * cost / minChunkNs)
	if lim := cap(p.sem) + 1; chunks > lim {
		chunks = lim
	}
	if chunks > n {
		chunks = n
	}
	if chunks <= 1 {
		fn(0, n)
		return
	}
	var wg sync.WaitGroup
	var panicked any
	var pmu sync.Mutex
	per := (n + chunks - 1) / chunks
	for lo := per; lo < n; lo += per {
		hi := min(lo+per, n)
		select {
		case p.sem <- struct{}{}:
			wg.Add(1)
			go func(lo, hi int) {
				defer func() {
					// A panic in a chunk is re-raised on the caller's
					// goroutine, where the executor turns it into a status.
					if r := recover(); r != nil {
						pmu.Lock()
						panicked = r
						pmu.Unlock()
					}
					<-p.sem
					wg.Done()
				}()
				fn(lo, hi)
			}(lo, hi)
		default:
			fn(lo, hi)
		}
	}
	fn(0, min(per, n))
	wg.Wait()
	if panicked != nil {
		panic(panicked)
	}
}
