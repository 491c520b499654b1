package dataset

import (
	"sync"

	"mstream/hostmem"
	"mstream/tensor"
)

// prefetchDS is PrefetchDataset: a goroutine pulls the input ahead of the
// consumer into a buffer of size elements. AUTOTUNE (-1) starts with one
// and doubles the buffer each time the consumer finds it empty, as TF's
// legacy autotuner grows its buffer_limit, up to maxAutotune.
type prefetchDS struct {
	in   Dataset
	size int64
	lim  hostmem.Limit
}

// maxAutotune bounds an autotuned buffer, standing for the RAM budget TF's
// autotuner keeps to.
const maxAutotune = 1024

func (d *prefetchDS) Iterate() (Iterator, error) {
	in, err := d.in.Iterate()
	if err != nil {
		return nil, err
	}
	if d.size == 0 {
		return in, nil
	}
	it := &prefetchIt{in: in, limit: d.size, auto: d.size < 0, held: budget{lim: d.lim, what: "prefetch buffer"}}
	if it.auto {
		it.limit = 1
	}
	it.cond = sync.NewCond(&it.mu)
	it.wg.Add(1)
	go it.fill()
	return it, nil
}

// item is one buffered result of the input: an element, its error, or the
// end.
type item struct {
	elem []*tensor.Tensor
	end  bool
	err  error
}

type prefetchIt struct {
	in    Iterator // the fill goroutine's alone
	mu    sync.Mutex
	cond  *sync.Cond
	buf   []item
	limit int64
	auto  bool
	held  budget
	done  bool // the input ended: nothing more is produced
	stop  bool // Close was called
	wg    sync.WaitGroup
}

// fill runs the input ahead of the consumer until it ends or Close stops
// it. An error is buffered in order and the input goes on, as in TF.
func (it *prefetchIt) fill() {
	defer it.wg.Done()
	for {
		it.mu.Lock()
		for !it.stop && int64(len(it.buf)) >= it.limit {
			it.cond.Wait()
		}
		if it.stop {
			it.mu.Unlock()
			return
		}
		it.mu.Unlock()
		e, end, err := it.in.Next()
		it.mu.Lock()
		if err == nil && !end {
			if err = it.held.take(e); err != nil {
				e, end = nil, true // the error, then the end: the buffer stops here
				it.buf = append(it.buf, item{err: err})
				err = nil
			}
		}
		it.buf = append(it.buf, item{e, end, err})
		it.done = end
		it.cond.Broadcast()
		it.mu.Unlock()
		if end {
			return
		}
	}
}

func (it *prefetchIt) Next() ([]*tensor.Tensor, bool, error) {
	it.mu.Lock()
	defer it.mu.Unlock()
	if len(it.buf) == 0 && it.auto && !it.done && it.limit < maxAutotune {
		it.limit *= 2
		it.cond.Broadcast()
	}
	for len(it.buf) == 0 {
		it.cond.Wait()
	}
	x := it.buf[0]
	if x.end {
		return nil, true, nil // stays buffered: every later call ends too
	}
	it.buf[0] = item{}
	it.buf = it.buf[1:]
	it.held.give(x.elem)
	it.cond.Broadcast()
	return x.elem, false, x.err
}

// Close stops the fill goroutine, waits for it and closes the input.
func (it *prefetchIt) Close() {
	it.mu.Lock()
	it.stop = true
	it.buf = nil
	it.cond.Broadcast()
	it.mu.Unlock()
	it.wg.Wait()
	it.in.Close()
}
