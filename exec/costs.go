package exec

import (
	"sync/atomic"
	"time"
)

// costs is what the pool executor knows of each node's kernel time, to
// decide whether a node that becomes ready runs on the goroutine that
// made it ready or goes to the inter-op pool (step.ready). It is TF's
// executor's KernelStats: a node is expensive until measured, then while
// its estimate (a moving average, a tenth of each new measurement) is
// above a threshold; ops that never compute (constants, identities,
// control flow) are never expensive.
//
// A step measures its kernels only on a plan's first steps and then one
// step in measureEvery: two clock reads per node would cost a chain of
// scalar ops a sixth of its time. Updates race benignly (a lost update
// only slows the average), as TF's do.
type costs struct {
	est   []atomic.Int64 // ns; 0: not measured yet
	cheap []bool         // never expensive
	// steps, which every step adds to, has a cache line of its own: beside
	// est's and cheap's headers, read for every node made ready, it made
	// concurrent steps miss on each node.
	_     [128]byte
	steps atomic.Int64
	_     [128]byte
}

const (
	// expensiveNs: a kernel cheaper than this runs where it became
	// ready. TF's is 8000 cycles (kOpIsExpensiveThresholdCycles, 3.2 us
	// at 2.5 GHz), for an Eigen pool whose workers spin; a worker of
	// ours parks in the Go scheduler, and its wake-up costs more: on
	// this project's 2-core machine, quiet, BenchmarkHandOff's reclaim
	// (an offer taken back when no worker started it) never beat running
	// both kernels on the caller, from 2 to 50 us (w5us 11.3 against
	// 10.2 us, w20us 41.8 against 40.2, w50us 106 against 100), at 1.2-1.4x
	// the CPU. At 3.2 us dlrm_small at B=1, one client thread, offered its
	// 5-28 us gathers and GEMVs every step: 20594 QPS and 58 CPU us a
	// request, 22965 and 44 at 15 us (other models level).
	expensiveNs   = 15000
	measureFirst  = 8
	measureEvery  = 32
	costDecayPart = 10
)

// cheapOps compute nothing worth another thread, whatever they are fed.
var cheapOps = map[string]bool{
	"Const": true, "HostConst": true, "Identity": true, "NoOp": true, "Placeholder": true, "PlaceholderWithDefault": true,
	"StopGradient": true, "Snapshot": true, "Shape": true, "ShapeN": true, "Size": true, "Rank": true,
	"Reshape": true, "Squeeze": true, "ExpandDims": true,
	"Switch": true, "RefSwitch": true, "Merge": true, "RefMerge": true, "Enter": true, "RefEnter": true,
	"Exit": true, "RefExit": true, "NextIteration": true, "RefNextIteration": true, "LoopCond": true,
	"ControlTrigger": true,
}

func newCosts(p *Plan) *costs {
	c := &costs{est: make([]atomic.Int64, len(p.nodes)), cheap: make([]bool, len(p.nodes))}
	for i := range p.nodes {
		c.cheap[i] = cheapOps[p.nodes[i].node.Op]
	}
	return c
}

// measure says whether the step starting now times its kernels.
func (c *costs) measure() bool {
	n := c.steps.Add(1)
	return n <= measureFirst || n%measureEvery == 0
}

func (c *costs) expensive(i int32) bool {
	if c.cheap[i] {
		return false
	}
	e := c.est[i].Load()
	return e == 0 || e > expensiveNs
}

// observe folds one measured run of node i into its estimate.
func (c *costs) observe(i int32, d time.Duration) {
	// A measurement is clamped: one preemption on a loaded machine
	// (milliseconds) must not make a scalar op look expensive for
	// hundreds of steps; a kernel that is expensive stays above the
	// threshold all the same.
	ns := min(max(int64(d), 1), 4*expensiveNs)
	old := c.est[i].Load()
	if old == 0 {
		c.est[i].Store(ns)
		return
	}
	c.est[i].Store(((costDecayPart-1)*old + ns) / costDecayPart)
}
