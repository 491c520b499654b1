package partition

import (
	"container/heap"
	"strings"
)

// DAG is what Assign analyses. Nodes are 0..len(Preds)-1.
type DAG struct {
	// Preds lists each node's predecessors (data and control inputs).
	Preds [][]int
	// Topo is a topological order of every node.
	Topo []int
	// Cost is each node's estimated run time, in any unit (see Cost).
	Cost []float64
	// Fixed is each node's group when the caller has decided it already
	// (a TF_STREAM_FROM_FILE rule), or -1; nil fixes none.
	Fixed []int
}

// WaitCost is the cost Assign charges for an input that crosses groups,
// in Cost's units: a light op's worth of time and a half.
const WaitCost = 1.5

// Assign returns a group in [0, groups) for every node of d.
func Assign(d DAG, groups int) []int {
	n := len(d.Preds)
	assign := make([]int, n)
	if groups <= 1 || n == 0 {
		for i := range assign {
			if d.Fixed != nil && d.Fixed[i] >= 0 {
				assign[i] = d.Fixed[i]
			}
		}
		return assign
	}
	succs := make([][]int, n)
	for i, ps := range d.Preds {
		for _, p := range ps {
			succs[p] = append(succs[p], i)
		}
	}
	// Bottom levels, in reverse topological order.
	bottom := make([]float64, n)
	for k := len(d.Topo) - 1; k >= 0; k-- {
		i := d.Topo[k]
		best := 0.0
		for _, s := range succs[i] {
			best = max(best, bottom[s])
		}
		bottom[i] = d.Cost[i] + best
	}
	rank := make([]int, n) // position in Topo, the tie-break after priority
	for k, i := range d.Topo {
		rank[i] = k
	}
	// Floating nodes: light nodes all of whose inputs float (sources
	// first: placeholders, constants, variable handles, and the light ops
	// over them alone, such as ReadVariableOp). They are ready at once on
	// every group, so the schedule ignores them and each one later follows
	// its first consumer that does not float.
	floating := make([]bool, n)
	for _, i := range d.Topo {
		f := d.Cost[i] <= Light && (d.Fixed == nil || d.Fixed[i] < 0)
		for _, p := range d.Preds[i] {
			f = f && floating[p]
		}
		floating[i] = f
	}
	waiting := make([]int, n)
	ready := &readyHeap{bottom: bottom, rank: rank}
	for _, i := range d.Topo {
		if floating[i] {
			continue
		}
		for _, p := range d.Preds[i] {
			if !floating[p] {
				waiting[i]++
			}
		}
		if waiting[i] == 0 {
			ready.items = append(ready.items, i)
		}
	}
	heap.Init(ready)
	free := make([]float64, groups) // when each group is next idle
	finish := make([]float64, n)
	for ready.Len() > 0 {
		i := heap.Pop(ready).(int)
		// The group of the input that finishes last wins ties: staying
		// with it saves the wait that matters most.
		home, last := -1, -1.0
		for _, p := range d.Preds[i] {
			if !floating[p] && finish[p] > last {
				home, last = assign[p], finish[p]
			}
		}
		lo, hi := 0, groups
		if d.Fixed != nil && d.Fixed[i] >= 0 {
			lo, hi = d.Fixed[i], d.Fixed[i]+1
		}
		best, bestStart := -1, 0.0
		for g := lo; g < hi; g++ {
			start := free[g]
			for _, p := range d.Preds[i] {
				if floating[p] {
					continue
				}
				t := finish[p]
				if assign[p] != g {
					t += WaitCost
				}
				start = max(start, t)
			}
			if best < 0 || start < bestStart || (start == bestStart && g == home) {
				best, bestStart = g, start
			}
		}
		assign[i] = best
		finish[i] = bestStart + d.Cost[i]
		free[best] = finish[i]
		for _, s := range succs[i] {
			if floating[s] {
				continue
			}
			if waiting[s]--; waiting[s] == 0 {
				heap.Push(ready, s)
			}
		}
	}
	// A floating node follows its first consumer (in topological order),
	// in reverse topological order so that a chain of them follows the
	// scheduled node it feeds; one that feeds nothing stays on group 0.
	for k := len(d.Topo) - 1; k >= 0; k-- {
		i := d.Topo[k]
		if !floating[i] || len(succs[i]) == 0 {
			continue
		}
		first := succs[i][0]
		for _, s := range succs[i] {
			if rank[s] < rank[first] {
				first = s
			}
		}
		assign[i] = assign[first]
	}
	return assign
}

// readyHeap orders ready nodes by bottom level, highest first, then by
// topological position.
type readyHeap struct {
	items  []int
	bottom []float64
	rank   []int
}

func (h *readyHeap) Len() int { return len(h.items) }
func (h *readyHeap) Less(a, b int) bool {
	x, y := h.items[a], h.items[b]
	if h.bottom[x] != h.bottom[y] {
		return h.bottom[x] > h.bottom[y]
	}
	return h.rank[x] < h.rank[y]
}
func (h *readyHeap) Swap(a, b int) { h.items[a], h.items[b] = h.items[b], h.items[a] }
func (h *readyHeap) Push(x any)    { h.items = append(h.items, x.(int)) }
func (h *readyHeap) Pop() any {
	x := h.items[len(h.items)-1]
	h.items = h.items[:len(h.items)-1]
	return x
}

// Heavy is the cost of a compute-bound op, Light of any other.
const (
	Heavy = 10.0
	Light = 1.0
)

// heavyPrefixes are the op types (and families, by prefix) that do most of
// a step's arithmetic or memory traffic.
var heavyPrefixes = []string{
	"MatMul", "BatchMatMul", "_FusedMatMul", "Conv", "_FusedConv", "DepthwiseConv",
	"Einsum", "FusedBatchNorm", "MaxPool", "AvgPool", "Apply", "ResourceApply",
	"ResourceSparseApply", "SparseApply", "ResourceGather", "GatherV2", "_MstreamGatherN",
	"UnsortedSegmentSum", "SparseSoftmaxCrossEntropyWithLogits",
	"SoftmaxCrossEntropyWithLogits",
}

// Cost is the estimated cost of one node of op type op.
func Cost(op string) float64 {
	for _, p := range heavyPrefixes {
		if strings.HasPrefix(op, p) {
			return Heavy
		}
	}
	return Light
}
