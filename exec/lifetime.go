package exec

import (
	"mstream/kernels"
	"mstream/status"
)

// A plan's kernels may hold resources outside the Go heap (oneDNN's
// primitives: kernels.Closer), which go when the plan's owner drops it:
// Close. Steps may still run then (a session evicting plans from its
// cache while other Runs use them), so the plan counts the steps whose
// kernels may run (life's low bits) and closes its kernels when both
// Close was called (planClosed) and that count is zero: at Close, or when
// the last step ends. A step that starts after Close fails with ErrClosed
// before any kernel runs, and its caller builds the plan again. A plan
// without a Closer kernel counts no steps (nothing waits for them): its
// steps only read life for planClosed, where a count written by every
// Run is a line each client thread's core takes in turn.

// planClosed is life's bit for a plan whose Close was called.
const planClosed = int64(1) << 62

// ErrClosed is Run's error on a plan after its Close: no kernel ran, and
// the caller may build the plan again.
var ErrClosed = status.New(status.Cancelled, "the plan was closed (dropped from its session's cache)")

// enter counts a step starting; false when the plan is closed.
func (p *Plan) enter() bool {
	if !p.closers {
		return !p.isClosed()
	}
	for {
		v := p.life.Load()
		if v&planClosed != 0 {
			return false
		}
		if p.life.CompareAndSwap(v, v+1) {
			return true
		}
	}
}

// isClosed reports whether Close was called.
func (p *Plan) isClosed() bool { return p.life.Load()&planClosed != 0 }

// exit ends a step entered, once no kernel of it runs any more; the last
// step of a closed plan closes its kernels.
func (p *Plan) exit() {
	if !p.closers {
		return
	}
	if p.life.Add(-1) == planClosed {
		p.closeKernels()
	}
}

// Close drops the plan: its kernels that hold resources are closed once,
// now when no step runs, else when the last step running ends. Steps after
// it fail with ErrClosed. A second Close does nothing.
func (p *Plan) Close() {
	for {
		v := p.life.Load()
		if v&planClosed != 0 {
			return
		}
		if p.life.CompareAndSwap(v, v|planClosed) {
			if v == 0 {
				p.closeKernels()
			}
			return
		}
	}
}

// closeKernels closes each kernel that is a kernels.Closer, once (life's
// protocol calls it once per plan). Their errors reach no caller (the last
// step may end long after Close returned), and what they close only frees
// memory.
func (p *Plan) closeKernels() {
	for i := range p.nodes {
		if c, ok := p.nodes[i].kernel.(kernels.Closer); ok {
			c.Close()
		}
	}
}
