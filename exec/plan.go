package exec

import (
	"container/heap"
	"fmt"
	"sort"
	"strings"
	"sync/atomic"

	"mstream/graph"
	"mstream/kernels"
	"mstream/resource"
	"mstream/status"
)

// Device is the device type every node is placed on for now.
const Device = kernels.CPU

// ref says where a value comes from: output Index of plan node Node, or, when
// Node < 0, feed number Index.
type ref struct {
	Node  int
	Index int
}

type planNode struct {
	node    *graph.Node
	kernel  kernels.Kernel
	inputs  []ref
	succ    []int // plan nodes to decrement when this one finishes (data and control)
	preds   []int // plan nodes this one runs after (data and control), deduplicated
	npred   int32 // pending count at the start of a step
	isInput bool  // has no predecessors in the plan
	isConst bool  // a Const: its value comes from the group's constant store
	fetched bool  // some output of it is a fetch
	// uses counts, per output, the data edges that read it plus the
	// fetches of it: the references a step holds on its buffer.
	uses []int32
	// where is the node's device (onHost, onGPU, onConst) in a placed
	// plan; hostIn marks a GPU node's inputs that stay in host memory.
	where  uint8
	hostIn []bool
	// fwd: a GPU node whose output 0 is input 0's buffer
	// (kernels.Def.Forwards), so a host copy of the input is one of it.
	fwd    bool
	gpu    int         // a GPU node's GPU, among the session's
	pinned bool        // gpu is the one the node's device annotation names
	cval   *constCache // a placed Const's host value
	// flow marks the control-flow ops the executor treats apart
	// (deadness.go); ctrl lists the node's control predecessors.
	flow flowKind
	ctrl []int
}

// Plan is an immutable execution plan for one (feeds, fetches, targets)
// signature of one graph version.
type Plan struct {
	nodes   []planNode
	roots   []int
	topo    []int // a topological order, lowest plan index first among ready nodes
	fetches []ref
	feeds   []graph.Output
	// feedUses counts, per feed, the data edges and fetches that read it.
	feedUses []int32
	// gpu says some node runs on the GPU (BuildPlaced); feedDev marks the
	// feeds a GPU kernel reads from device memory.
	gpu     bool
	feedDev []bool
	// enqueues says every node is a GPU kernel or a constant: a device
	// step of the plan only enqueues work (no host kernel runs in it).
	enqueues bool
	// gpus lists the GPUs (among the session's) the GPU nodes run on,
	// the home GPU first (place.go's placeGPUs).
	gpus []int
	// floating says some GPU node is pinned to no GPU (Floating), pinned
	// that some is (Pinned); placed is PlaceOn's answer for each GPU.
	floating, pinned bool
	placed           []placedOn
	// deadness says a step can make dead tensors (the plan has a Switch):
	// every step carries them through the frame driver, or, on the host
	// scheduler without streams or frames, through drive's deadNode.
	deadness bool
	// frames says the plan has TF's v1 loop ops (Enter, Exit,
	// NextIteration, LoopCond): Run hands the step to the frame executor
	// (frames.go).
	frames bool
	fs     *frameStatic

	// costs estimates each node's kernel time (costs.go); steps keeps
	// the host scheduler's per-step state between steps (runHost).
	costs *costs
	// The stashes, which every step writes (a Swap, a CompareAndSwap),
	// sit on cache lines apart from the fields above, which steps only
	// read: beside them, concurrent steps made each other's reads miss.
	_     [128]byte
	steps stash[step]
	// arenas keeps device steps' per-node records (gpu_arena.go).
	arenas stash[arena]
	// gate picks how host steps run their kernels' loops (gate.go).
	gate splitGate
	_    [128]byte
	// lanes is the launch schedule of the last multi-group device step
	// (device_lanes.go), kept while its assignment stays.
	lanes atomic.Pointer[laneSched]
	// crew keeps the goroutines of device steps' lanes between steps.
	crew laneCrew
	// layouts keeps stream steps' layouts per runtime (streams.go).
	layouts layouts
	// life counts the steps running kernels of the plan, with planClosed
	// set once Close was called (lifetime.go); closers says a kernel is a
	// kernels.Closer: without one, a step only reads life.
	life    atomic.Int64
	closers bool
}

// NumNodes is the number of nodes a step runs.
func (p *Plan) NumNodes() int { return len(p.nodes) }

// Build makes a plan. The caller holds the graph's read lock. Errors are
// INVALID_ARGUMENT (a cycle, a node without a kernel, a bad attr) and name
// the node.
func Build(g *graph.Graph, feeds, fetches []graph.Output, targets []*graph.Node) (*Plan, error) {
	return build(g, feeds, fetches, targets, Placement{})
}

func build(g *graph.Graph, feeds, fetches []graph.Output, targets []*graph.Node, pl Placement) (*Plan, error) {
	fed := make(map[graph.Output]int, len(feeds))
	for i, f := range feeds {
		if _, dup := fed[f]; dup {
			return nil, status.InvalidArg("Endpoint \"%s:%d\" fed more than once.", f.Node.Name, f.Index)
		}
		fed[f] = i
	}

	// Prune: walk back from fetches and targets, stopping at fed outputs.
	needed := map[*graph.Node]bool{}
	var stack []*graph.Node
	push := func(n *graph.Node) {
		if !needed[n] {
			needed[n] = true
			stack = append(stack, n)
		}
	}
	for _, f := range fetches {
		if _, ok := fed[f]; !ok {
			push(f.Node)
		}
	}
	for _, t := range targets {
		push(t)
	}
	for len(stack) > 0 {
		n := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for _, in := range n.Inputs {
			if _, ok := fed[in]; !ok {
				push(in.Node)
			}
		}
		for _, c := range n.Controls {
			if !fedPlaceholder(c, fed) {
				push(c)
			}
		}
	}

	// Order by node ID first so plans are deterministic, then Kahn.
	order := make([]*graph.Node, 0, len(needed))
	for n := range needed {
		order = append(order, n)
	}
	sort.Slice(order, func(i, j int) bool { return order[i].ID < order[j].ID })
	index := make(map[*graph.Node]int, len(order))
	for i, n := range order {
		index[n] = i
	}

	p := &Plan{nodes: make([]planNode, len(order)), feeds: feeds}
	for i, n := range order {
		pn := &p.nodes[i]
		pn.node = n
		pn.inputs = make([]ref, len(n.Inputs))
		for j, in := range n.Inputs {
			if k, ok := fed[in]; ok {
				pn.inputs[j] = ref{-1, k}
				continue
			}
			src := index[in.Node]
			pn.inputs[j] = ref{src, in.Index}
			if graph.IsNextIteration(in.Node.Op) {
				// A loop's back edge: only the frame executor
				// (frames.go) follows it, from one iteration to the
				// next; every order below ignores it.
				continue
			}
			p.nodes[src].succ = append(p.nodes[src].succ, i)
			pn.npred++
		}
		for _, c := range n.Controls {
			if fedPlaceholder(c, fed) {
				continue
			}
			src := index[c]
			p.nodes[src].succ = append(p.nodes[src].succ, i)
			pn.ctrl = append(pn.ctrl, src)
			pn.npred++
		}
		pn.flow = flowOf(n.Op)
		p.frames = p.frames || pn.flow >= flowEnter
		p.deadness = p.deadness || pn.flow == flowSwitch || p.frames
	}
	if err := p.checkAcyclic(); err != nil {
		return nil, err
	}
	if p.deadness {
		// The frame driver also runs plans with Switch alone on host
		// streams and the device step.
		if err := p.buildFrames(); err != nil {
			return nil, err
		}
	}
	p.feedUses = make([]int32, len(feeds))
	for i := range p.nodes {
		pn := &p.nodes[i]
		pn.uses = make([]int32, len(pn.node.OutTypes))
		pn.isConst = pn.node.Op == "Const"
	}
	for i := range p.nodes {
		pn := &p.nodes[i]
		seen := map[int]bool{}
		for _, r := range pn.inputs {
			if r.Node < 0 {
				p.feedUses[r.Index]++
				continue
			}
			p.nodes[r.Node].uses[r.Index]++
			if !seen[r.Node] && !graph.IsNextIteration(p.nodes[r.Node].node.Op) {
				seen[r.Node] = true
				pn.preds = append(pn.preds, r.Node)
			}
		}
		for _, c := range pn.node.Controls {
			if fedPlaceholder(c, fed) {
				continue
			}
			if src := index[c]; !seen[src] {
				seen[src] = true
				pn.preds = append(pn.preds, src)
			}
		}
	}
	p.topo = p.topoOrder()

	// In topological order: a node's placement may follow its
	// producers' (place_shape.go).
	for _, i := range p.topo {
		if err := p.bind(i, pl); err != nil {
			return nil, err
		}
	}
	p.enqueues = true
	for i := range p.nodes {
		pn := &p.nodes[i]
		p.gpu = p.gpu || pn.where == onGPU
		p.enqueues = p.enqueues && (pn.where == onGPU || pn.where == onConst)
		if pn.npred == 0 {
			pn.isInput = true
			p.roots = append(p.roots, i)
		}
	}

	p.placeGPUs(pl)
	p.feedDev = make([]bool, len(feeds))
	for i := range p.nodes {
		if pn := &p.nodes[i]; pn.where == onGPU {
			for j, r := range pn.inputs {
				if r.Node < 0 && !pn.hostIn[j] {
					p.feedDev[r.Index] = true
				}
			}
		}
	}

	p.fetches = make([]ref, len(fetches))
	for i, f := range fetches {
		if k, ok := fed[f]; ok {
			p.fetches[i] = ref{-1, k}
			p.feedUses[k]++
		} else {
			p.fetches[i] = ref{index[f.Node], f.Index}
			p.nodes[index[f.Node]].uses[f.Index]++
			p.nodes[index[f.Node]].fetched = true
		}
	}
	if err := p.bindState(g, pl.Resources); err != nil {
		p.closeKernels() // those bound so far, which no one else will close
		return nil, err
	}
	p.costs = newCosts(p)
	for i := range p.nodes {
		if _, ok := p.nodes[i].kernel.(kernels.Closer); ok {
			p.closers = true
		}
	}
	return p, nil
}

// bindState hands every kernels.Stateful kernel the session's resources
// and which of its outputs the plan reads by value.
func (p *Plan) bindState(g *graph.Graph, rm *resource.Manager) error {
	for i := range p.nodes {
		pn := &p.nodes[i]
		st, ok := pn.kernel.(kernels.Stateful)
		if !ok {
			continue
		}
		if rm == nil {
			rm = resource.NewManager()
		}
		byValue := make([]bool, len(pn.node.OutTypes))
		for _, f := range p.fetches {
			if f.Node == i {
				byValue[f.Index] = true
			}
		}
		for _, s := range pn.succ {
			for j, r := range p.nodes[s].inputs {
				if r.Node == i && !p.nodes[s].node.IsRefInput(j) {
					byValue[r.Index] = true
				}
			}
		}
		k, err := st.Bind(kernels.Binding{Resources: rm, ReadByValue: byValue, Graph: g})
		if err != nil {
			return kernels.WrapNode(err, pn.node)
		}
		pn.kernel = k
	}
	return nil
}

// fedPlaceholder reports whether n is a Placeholder whose output is fed.
// TF moves such a node's control out-edges to the feed (graph/subgraph.cc
// FeedInputs), and a feed is ready when the step starts: the edges order
// nothing, and they do not make the Placeholder run.
func fedPlaceholder(n *graph.Node, fed map[graph.Output]int) bool {
	if n.Op != "Placeholder" && n.Op != "PlaceholderV2" {
		return false
	}
	_, ok := fed[n.Output(0)]
	return ok
}

// checkAcyclic runs Kahn's algorithm on pending counts; the nodes left over
// lie on or behind a cycle.
func (p *Plan) checkAcyclic() error {
	pending := make([]int32, len(p.nodes))
	var ready []int
	for i := range p.nodes {
		pending[i] = p.nodes[i].npred
		if pending[i] == 0 {
			ready = append(ready, i)
		}
	}
	seen := 0
	for len(ready) > 0 {
		i := ready[len(ready)-1]
		ready = ready[:len(ready)-1]
		seen++
		for _, s := range p.nodes[i].succ {
			if pending[s]--; pending[s] == 0 {
				ready = append(ready, s)
			}
		}
	}
	if seen == len(p.nodes) {
		return nil
	}
	var names []string
	for i := range p.nodes {
		if pending[i] > 0 {
			names = append(names, "'"+p.nodes[i].node.Name+"'")
			if len(names) == 8 {
				names = append(names, "...")
				break
			}
		}
	}
	return status.InvalidArg("graph has a cycle: nodes %s can never run", strings.Join(names, ", "))
}

// topoOrder is Kahn's algorithm taking the lowest ready plan index first,
// so the order is deterministic and close to GraphDef order.
func (p *Plan) topoOrder() []int {
	pending := make([]int32, len(p.nodes))
	var ready intHeap
	for i := range p.nodes {
		pending[i] = p.nodes[i].npred
		if pending[i] == 0 {
			heap.Push(&ready, i)
		}
	}
	order := make([]int, 0, len(p.nodes))
	for ready.Len() > 0 {
		i := heap.Pop(&ready).(int)
		order = append(order, i)
		for _, s := range p.nodes[i].succ {
			if pending[s]--; pending[s] == 0 {
				heap.Push(&ready, s)
			}
		}
	}
	return order
}

type intHeap []int

func (h intHeap) Len() int           { return len(h) }
func (h intHeap) Less(i, j int) bool { return h[i] < h[j] }
func (h intHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *intHeap) Push(x any)        { *h = append(*h, x.(int)) }
func (h *intHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// Nodes returns the graph nodes of the plan, by plan index (the index a
// stream assignment uses).
func (p *Plan) Nodes() []*graph.Node {
	out := make([]*graph.Node, len(p.nodes))
	for i := range p.nodes {
		out[i] = p.nodes[i].node
	}
	return out
}

// Preds returns the plan indices node i runs after (data and control).
func (p *Plan) Preds(i int) []int { return p.nodes[i].preds }

// Topo returns a topological order of plan indices.
func (p *Plan) Topo() []int { return p.topo }

// String lists the plan's nodes in order, for debugging.
func (p *Plan) String() string {
	var b strings.Builder
	for i, pn := range p.nodes {
		fmt.Fprintf(&b, "%d %s (%s) <- %v\n", i, pn.node.Name, pn.node.Op, pn.inputs)
	}
	return b.String()
}
