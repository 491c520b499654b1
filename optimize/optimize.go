package optimize

import (
	"math"
	"sort"

	"mstream/graph"
	"mstream/kernels"
	"mstream/proto/tfpb"
	"mstream/tensor"
)

// FusedFromAttr is the attr of a fused node that lists the names of the
// nodes it replaces, in data-flow order. The OpDefs do not declare it (an
// undeclared attr is kept and ignored, as in TF); fused kernels name these
// nodes in their errors.
const FusedFromAttr = "_mstream_fused_from"

// ConstWeightsAttr, true on a _FusedConv2D or _FusedMatMul, says that
// its weights (argument weightsArg: the filter, B; an Einsum's second
// operand) are a Const, directly
// or through Identity, that this plan does not feed (a folded BatchNorm's
// filter is one), as TF's oneDNN rewrite marks is_filter_const: the same
// values on every Run, so the CPU kernel may keep them in its own layout
// (the convolution's primitive's, the GEMM's packed panels) instead of
// rearranging them on every Run. Only the rewrite knows the plan's feeds.
const ConstWeightsAttr = "_mstream_const_weights"

// Options configure a rewrite.
type Options struct {
	// Devices are the kernel registry devices the plan may place nodes on
	// (kernels.CPU, kernels.GPU): a fusion is made only when its fused op
	// has a kernel that accepts the fused node on every one of them.
	Devices []string
	// Passes are the rewrites to make (PassesFor reads them from a
	// ConfigProto); none leaves the signature as it is.
	Passes Pass
	// Group, when set, is the stream group the session's node-level rules
	// (TF_STREAM_FROM_FILE) give node n by its name, and whether a rule
	// names it at all. Nodes merged into one (gathern.go) must agree on
	// both, as the merged node runs in one group; nil: no rules.
	Group func(n *graph.Node) (group int, ruled bool)
}

// Result is the rewritten signature: the same feeds, fetches and targets,
// pointing into the rewritten copy where a node was copied.
type Result struct {
	Feeds   []graph.Output
	Fetches []graph.Output
	Targets []*graph.Node
	// Fused counts the patterns replaced by one node (Remap).
	Fused int
	// Counts has, per pass, how many rewrites it made: nodes folded into
	// Consts, chains pushed down, nodes whose control inputs shrank,
	// nodes merged, patterns fused.
	Counts map[Pass]int
}

// Rewrite makes opt.Passes, in the order of their constants, over the
// part of the graph that (feeds, fetches, targets) needs and returns the
// signature over the rewritten nodes; each pass reads what the one before
// made. With nothing to change it returns its arguments. The caller holds
// the graph's read lock.
func Rewrite(feeds, fetches []graph.Output, targets []*graph.Node, opt Options) Result {
	res := Result{Feeds: feeds, Fetches: fetches, Targets: targets, Counts: map[Pass]int{}}
	for p := Fold; p <= Remap; p <<= 1 {
		if opt.Passes&p != 0 {
			res = rewriteOnce(p, res, opt)
		}
	}
	return res
}

func rewriteOnce(p Pass, in Result, opt Options) Result {
	r := newRewriter(in.Feeds, in.Fetches, in.Targets, opt)
	for _, n := range r.order {
		if graph.IsNextIteration(n.Op) {
			// A while loop: copyNodes walks in ID order, which a back
			// edge breaks (a Merge would keep the old NextIteration).
			// Loops are left as they are.
			return in
		}
	}
	switch p {
	case Fold:
		r.matchFold()
	case Arith:
		r.matchArith()
	case Deps:
		r.matchDeps()
	case CSE:
		r.matchCSE()
	case Remap:
		r.match()
	}
	if len(r.fusions) == 0 && len(r.alias) == 0 {
		return in
	}
	r.copyNodes()
	res := Result{Feeds: make([]graph.Output, len(in.Feeds)), Fetches: make([]graph.Output, len(in.Fetches)),
		Targets: make([]*graph.Node, len(in.Targets)), Fused: in.Fused + r.fused, Counts: in.Counts}
	for k, v := range r.counts {
		res.Counts[k] += v
	}
	for i, f := range in.Feeds {
		res.Feeds[i] = r.remap(f)
	}
	for i, f := range in.Fetches {
		res.Fetches[i] = r.remap(f)
	}
	for i, t := range in.Targets {
		res.Targets[i] = r.cur(t)
	}
	return res
}

// fusion is one matched pattern: nodes in data-flow order, the last one the
// result whose name, ID and output the fused node takes.
type fusion struct {
	nodes []*graph.Node
	build func(r *rewriter, f *fusion) (*graph.Node, error)
	act   string // the fused activation of an epilogue ("" for none)
	// core is how many of nodes an epilogue fusion keeps when it falls
	// back to no activation: the GEMM or convolution, a Reshape between
	// it and the BiasAdd, and the BiasAdd or BatchNorm.
	core int
	// pool marks a convolution epilogue whose last node is a MaxPool
	// (_MstreamConv2DMaxPool).
	pool bool
	// plain marks a rewrite that is not a fusion (Fold, Arith, Deps): its
	// node keeps its op's kernel, so it is neither checked nor marked.
	plain bool
	kind  Pass
	// outs marks a merge of nodes side by side (gathern.go) rather than a
	// chain: output i of the fused node is node i's output 0.
	outs bool
}

func (f *fusion) result() *graph.Node { return f.nodes[len(f.nodes)-1] }

type rewriter struct {
	opt     Options
	fed     map[graph.Output]bool
	fetched map[graph.Output]bool
	target  map[*graph.Node]bool
	order   []*graph.Node                  // the needed nodes by ID
	uses    map[graph.Output][]*graph.Node // data consumers among the needed nodes
	ctrlOut map[*graph.Node]int
	taken   map[*graph.Node]*fusion // every node of every fusion
	fusions map[*graph.Node]*fusion // by result node
	newNode map[*graph.Node]*graph.Node
	alias   map[*graph.Node]*graph.Node   // CSE: a node and the earlier one it equals
	outMap  map[graph.Output]graph.Output // a merged node's output and the fused output that replaces it
	counts  map[Pass]int
	nextID  int
	fused   int
}

func newRewriter(feeds, fetches []graph.Output, targets []*graph.Node, opt Options) *rewriter {
	r := &rewriter{opt: opt, fed: map[graph.Output]bool{}, fetched: map[graph.Output]bool{}, target: map[*graph.Node]bool{},
		uses: map[graph.Output][]*graph.Node{}, ctrlOut: map[*graph.Node]int{}, taken: map[*graph.Node]*fusion{},
		fusions: map[*graph.Node]*fusion{}, newNode: map[*graph.Node]*graph.Node{},
		alias: map[*graph.Node]*graph.Node{}, outMap: map[graph.Output]graph.Output{}, counts: map[Pass]int{}}
	for _, f := range feeds {
		r.fed[f] = true
	}
	// The nodes the Run needs, found as exec.Build prunes: back from the
	// fetches and targets, stopping at fed outputs.
	needed := map[*graph.Node]bool{}
	var stack []*graph.Node
	push := func(n *graph.Node) {
		if !needed[n] {
			needed[n] = true
			stack = append(stack, n)
		}
	}
	for _, f := range fetches {
		r.fetched[f] = true
		if !r.fed[f] {
			push(f.Node)
		}
	}
	for _, t := range targets {
		r.target[t] = true
		push(t)
	}
	for len(stack) > 0 {
		n := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for _, in := range n.Inputs {
			if !r.fed[in] {
				push(in.Node)
			}
		}
		for _, c := range n.Controls {
			push(c)
		}
	}
	for n := range needed {
		r.order = append(r.order, n)
		r.nextID = max(r.nextID, n.ID+1)
	}
	sort.Slice(r.order, func(i, j int) bool { return r.order[i].ID < r.order[j].ID })
	for _, n := range r.order {
		for _, in := range n.Inputs {
			if !r.fed[in] {
				r.uses[in] = append(r.uses[in], n)
			}
		}
		for _, c := range n.Controls {
			r.ctrlOut[c]++
		}
	}
	return r
}

// next returns the one node that reads n, when n may be absorbed into it:
// n's output 0 has that single data consumer (reading it as its input 0),
// n's other outputs are unused, nothing of n is fed or fetched, n is not a
// target and has no control edge out, and the consumer belongs to no
// fusion yet and asks for the same device.
func (r *rewriter) next(n *graph.Node) *graph.Node {
	if r.target[n] || r.ctrlOut[n] > 0 {
		return nil
	}
	for i := range n.OutTypes {
		o := n.Output(i)
		if r.fed[o] || r.fetched[o] || (i > 0 && len(r.uses[o]) > 0) {
			return nil
		}
	}
	u := r.uses[n.Output(0)]
	if len(u) != 1 {
		return nil
	}
	c := u[0]
	if c.Device != n.Device || r.taken[c] != nil || len(c.Inputs) == 0 || c.Inputs[0] != n.Output(0) {
		return nil
	}
	for _, in := range c.Inputs[1:] {
		if in == n.Output(0) {
			return nil // read twice (x * x): not a chain
		}
	}
	return c
}

// activations TF's remapper fuses after BiasAdd (and FusedBatchNorm).
var activations = map[string]bool{"Relu": true, "Relu6": true, "Elu": true, "LeakyRelu": true}

// chainable are the unary float32 ops of _MstreamUnaryChain (the ops
// package vec maps; the kernel's factory rejects any other).
var chainable = map[string]bool{
	"Neg": true, "Abs": true, "Square": true, "Sqrt": true, "Rsqrt": true, "Reciprocal": true, "Inv": true,
	"Exp": true, "Expm1": true, "Log": true, "Sigmoid": true, "Tanh": true, "Relu": true, "Relu6": true,
	"Floor": true, "Ceil": true, "Round": true, "Elu": true, "Selu": true, "Softsign": true,
}

func dtypeOf(n *graph.Node, attr string) tensor.DType {
	if a := n.Attrs[attr]; a != nil {
		return tensor.DType(a.GetType())
	}
	return 0
}

func nhwc(n *graph.Node) bool {
	a := n.Attrs["data_format"]
	return a == nil || string(a.GetS()) == "NHWC"
}

// match finds the patterns, the GEMM and convolution epilogues first (they
// may take an activation a chain would otherwise start with), then
// LayerNormalizations (layernorm.go), then chains.
func (r *rewriter) match() {
	for _, n := range r.order {
		switch n.Op {
		case "MatMul":
			r.matchEpilogue(n, "_FusedMatMul")
		case "Conv2D":
			if nhwc(n) {
				r.matchEpilogue(n, "_FusedConv2D")
			}
		}
	}
	r.matchLayerNorms()
	r.matchAttentions()
	r.matchGathers()
	for _, n := range r.order {
		if n.Op == "Einsum" && r.taken[n] == nil {
			r.matchEinsum(n)
		}
	}
	for _, n := range r.order {
		if r.taken[n] != nil || !chainable[n.Op] || dtypeOf(n, "T") != tensor.Float {
			continue
		}
		nodes := []*graph.Node{n}
		for c := r.next(n); c != nil && chainable[c.Op] && len(c.Inputs) == 1; c = r.next(c) {
			nodes = append(nodes, c)
		}
		if len(nodes) < 2 {
			continue
		}
		r.add(&fusion{nodes: nodes, build: buildChain})
	}
}

func (r *rewriter) add(f *fusion) {
	// ID order is a topological order, the one copyNodes needs should the
	// fusion be dropped; the result has the largest ID of the pattern.
	sort.Slice(f.nodes, func(i, j int) bool { return f.nodes[i].ID < f.nodes[j].ID })
	for _, n := range f.nodes {
		r.taken[n] = f
	}
	r.fusions[f.result()] = f
}

// matchEpilogue matches op -> BiasAdd (or, for a Conv2D with a constant
// filter, an inference FusedBatchNorm with constant parameters) -> an
// optional activation. For a MatMul, a Reshape that keeps its rows may
// stand between it and the BiasAdd (Keras' Dense over a rank-3 input
// exports as Tensordot: Reshape, MatMul, Reshape, BiasAdd); the fusion
// then becomes _FusedMatMul followed by that Reshape.
func (r *rewriter) matchEpilogue(n *graph.Node, fused string) {
	x := r.next(n)
	if x == nil {
		return
	}
	head := []*graph.Node{n}
	if fused == "_FusedMatMul" && x.Op == "Reshape" && r.keepsRows(n, x) {
		if head, x = append(head, x), r.next(x); x == nil {
			return
		}
	}
	var build func(*rewriter, *fusion) (*graph.Node, error)
	switch {
	case x.Op == "BiasAdd" && nhwc(x) && len(head) == 2:
		build = buildReshapedBiasAdd
	case len(head) == 2:
		return
	case x.Op == "BiasAdd" && nhwc(x):
		build = buildBiasAdd(fused)
	case fused == "_FusedConv2D" && r.foldable(n, x):
		build = buildFoldedBatchNorm
	default:
		return
	}
	f := &fusion{nodes: append(head, x), build: build, core: len(head) + 1}
	if g := r.matchGeluExact(x); fused == "_FusedMatMul" && g != nil {
		f.nodes, f.act = append(f.nodes, g...), "GeluExact"
	} else if a := r.next(x); a != nil && activations[a.Op] && len(a.Inputs) == 1 {
		f.nodes, f.act = append(f.nodes, a), a.Op
	}
	if fused == "_FusedConv2D" && (f.act == "" || f.act == "Relu") {
		if m := r.next(f.nodes[len(f.nodes)-1]); m != nil && poolable(n, m) {
			f.nodes, f.pool = append(f.nodes, m), true
		}
	}
	r.add(f)
}

// poolable says whether m, reading a convolution's epilogue, is a float32
// MaxPool over a spatial window (NHWC, SAME or VALID padding) that
// _MstreamConv2DMaxPool runs with it: its CPU kernel pools each part of
// the convolution as it is made, while the part is in the core's cache.
func poolable(conv, m *graph.Node) bool {
	if m.Op != "MaxPool" || !nhwc(m) || dtypeOf(m, "T") != tensor.Float || dtypeOf(conv, "T") != tensor.Float {
		return false
	}
	if p := string(m.Attrs["padding"].GetS()); p != "SAME" && p != "VALID" {
		return false
	}
	k, s := m.Attrs["ksize"].GetList().GetI(), m.Attrs["strides"].GetList().GetI()
	return len(k) == 4 && len(s) == 4 && k[0] == 1 && k[3] == 1 && s[0] == 1 && s[3] == 1
}

// smaller is the fusion to try when no device can run f: without its
// MaxPool, then without its activation; nil when there is none. The
// nodes it leaves out keep their ops and read its result.
func (f *fusion) smaller() *fusion {
	switch {
	case f.pool:
		return &fusion{nodes: f.nodes[:len(f.nodes)-1], build: f.build, act: f.act, core: f.core}
	case f.act != "":
		return &fusion{nodes: f.nodes[:f.core], build: f.build, core: f.core}
	}
	return nil
}

// keepsRows says whether reshape, reading mm's [m, n] output, gives a
// tensor whose last dimension is n, both known from constants: n from
// mm's constant b, the last dimension from the last element of the shape
// operand. Then every row of the reshaped tensor is a row of mm's output,
// and a bias added after the Reshape may be added before it (a feed of
// any shape runs, so static shapes inferred from placeholders are not
// trusted here).
func (r *rewriter) keepsRows(mm, reshape *graph.Node) bool {
	b := r.constThrough(mm.Inputs[1])
	if b == nil || len(b.Shape) != 2 {
		return false
	}
	n := b.Shape[1]
	if mm.Attrs["transpose_b"].GetB() {
		n = b.Shape[0]
	}
	d, ok := r.lastShapeElem(reshape.Inputs[1])
	return ok && d == n
}

// constThrough returns the value of o when o is an unfed Const output or
// Identity of one.
func (r *rewriter) constThrough(o graph.Output) *tensor.Tensor {
	return r.constValue(r.throughIdentity(o))
}

// throughIdentity follows o up a chain of unfed Identity nodes.
func (r *rewriter) throughIdentity(o graph.Output) graph.Output {
	for o.Node.Op == "Identity" && len(o.Node.Inputs) == 1 && !r.fed[o] {
		o = o.Node.Inputs[0]
	}
	return o
}

// lastShapeElem returns the last element of the shape vector o when a
// constant fixes it: a Const vector, a ConcatV2 along axis 0 whose last
// operand is one, or a Pack whose last operand is a scalar Const.
func (r *rewriter) lastShapeElem(o graph.Output) (int64, bool) {
	o = r.throughIdentity(o)
	elem := func(v *tensor.Tensor, vector bool) (int64, bool) {
		if v == nil || v.NumElements() == 0 || (len(v.Shape) == 1) != vector {
			return 0, false
		}
		switch v.DType {
		case tensor.Int32:
			return int64(v.I32()[len(v.I32())-1]), true
		case tensor.Int64:
			return v.I64()[len(v.I64())-1], true
		}
		return 0, false
	}
	n := o.Node
	switch {
	case r.fed[o]:
		return 0, false
	case n.Op == "Const":
		return elem(r.constValue(o), true)
	case n.Op == "ConcatV2" && len(n.Inputs) >= 2:
		axis, ok := elem(r.constThrough(n.Inputs[len(n.Inputs)-1]), false)
		if !ok || (axis != 0 && axis != -1) {
			return 0, false
		}
		return r.lastShapeElem(n.Inputs[len(n.Inputs)-2])
	case n.Op == "Pack" && len(n.Inputs) >= 1:
		return elem(r.constThrough(n.Inputs[len(n.Inputs)-1]), false)
	}
	return 0, false
}

// hidden says whether nothing of n but uses data edges from its output 0
// can be observed: not fed, fetched or a target, no control edge out, other
// outputs unused, and it belongs to no fusion yet.
func (r *rewriter) hidden(n *graph.Node, uses int) bool {
	if r.target[n] || r.ctrlOut[n] > 0 || r.taken[n] != nil {
		return false
	}
	for i := range n.OutTypes {
		o := n.Output(i)
		if r.fed[o] || r.fetched[o] || (i > 0 && len(r.uses[o]) > 0) {
			return false
		}
	}
	return len(r.uses[n.Output(0)]) == uses
}

// scalar says whether o is an unfed float32 Const of one element equal to
// want (to float32 rounding).
func (r *rewriter) scalar(o graph.Output, want float64) bool {
	v := r.constValue(o)
	return v != nil && v.DType == tensor.Float && v.NumElements() == 1 &&
		math.Abs(float64(v.F32()[0])-want) <= 1e-6*math.Max(1, math.Abs(want))
}

// binaryWith says whether n is op (one of ops) of x and a scalar constant c,
// in either order.
func (r *rewriter) binaryWith(n *graph.Node, x graph.Output, c float64, ops ...string) bool {
	ok := false
	for _, op := range ops {
		ok = ok || n.Op == op
	}
	if !ok || len(n.Inputs) != 2 {
		return false
	}
	return (n.Inputs[0] == x && r.scalar(n.Inputs[1], c)) || (n.Inputs[1] == x && r.scalar(n.Inputs[0], c))
}

// matchGeluExact matches the exact GELU as Keras exports it after x (a
// BiasAdd): 0.5 * x * (1 + erf(x / sqrt(2))), with x / sqrt(2) written as a
// RealDiv or a Mul by 1/sqrt(2) and the operands of each Mul and Add in
// either order (TF's remapper fuses it into _FusedMatMul as GeluExact). It
// returns the GELU's nodes, the final Mul last, or nil.
func (r *rewriter) matchGeluExact(x *graph.Node) []*graph.Node {
	if !r.hidden(x, 2) {
		return nil
	}
	xo := x.Output(0)
	var div, half *graph.Node
	for _, u := range r.uses[xo] {
		switch {
		case u.Op == "RealDiv" && u.Inputs[0] == xo && r.scalar(u.Inputs[1], math.Sqrt2):
			div = u
		case r.binaryWith(u, xo, 1/math.Sqrt2, "Mul"):
			div = u
		case r.binaryWith(u, xo, 0.5, "Mul"):
			half = u
		}
	}
	if div == nil || half == nil || div == half || !r.hidden(div, 1) || !r.hidden(half, 1) {
		return nil
	}
	erf := r.uses[div.Output(0)][0]
	if erf.Op != "Erf" || !r.hidden(erf, 1) {
		return nil
	}
	add := r.uses[erf.Output(0)][0]
	if !r.binaryWith(add, erf.Output(0), 1, "AddV2", "Add") || !r.hidden(add, 1) {
		return nil
	}
	mul := r.uses[add.Output(0)][0]
	if mul.Op != "Mul" || len(mul.Inputs) != 2 || r.uses[half.Output(0)][0] != mul || r.taken[mul] != nil {
		return nil
	}
	nodes := []*graph.Node{div, half, erf, add, mul}
	for _, m := range nodes {
		if m.Device != x.Device {
			return nil
		}
	}
	return nodes
}

// constValue returns the value of an unfed Const output.
func (r *rewriter) constValue(o graph.Output) *tensor.Tensor {
	if o.Node.Op != "Const" || r.fed[o] {
		return nil
	}
	t, err := tensor.FromProto(o.Node.Attrs["value"].GetTensor())
	if err != nil {
		return nil
	}
	return t
}

// foldable says whether bn is an inference FusedBatchNorm over conv's
// float32 output whose parameters and the convolution's filter are Consts.
func (r *rewriter) foldable(conv, bn *graph.Node) bool {
	switch bn.Op {
	case "FusedBatchNorm", "FusedBatchNormV2", "FusedBatchNormV3":
	default:
		return false
	}
	if bn.Attrs["is_training"].GetB() || !nhwc(bn) || dtypeOf(conv, "T") != tensor.Float || dtypeOf(bn, "T") != tensor.Float {
		return false
	}
	if u := dtypeOf(bn, "U"); u != 0 && u != tensor.Float {
		return false
	}
	f := r.constValue(conv.Inputs[1])
	if f == nil || f.DType != tensor.Float || len(f.Shape) != 4 {
		return false
	}
	o := f.Shape[3]
	for _, in := range bn.Inputs[1:5] {
		v := r.constValue(in)
		if v == nil || v.DType != tensor.Float || len(v.Shape) != 1 || v.Shape[0] != o {
			return false
		}
	}
	return true
}

func (r *rewriter) cur(n *graph.Node) *graph.Node {
	if c := r.newNode[n]; c != nil {
		return c
	}
	return n
}

func (r *rewriter) remap(o graph.Output) graph.Output {
	if m, ok := r.outMap[o]; ok {
		return m
	}
	return graph.Output{Node: r.cur(o.Node), Index: o.Index}
}

func (r *rewriter) remapControls(ns ...*graph.Node) []*graph.Node {
	var out []*graph.Node
	seen := map[*graph.Node]bool{}
	for _, n := range ns {
		for _, c := range n.Controls {
			if c = r.cur(c); !seen[c] {
				seen[c] = true
				out = append(out, c)
			}
		}
	}
	return out
}

// copyNodes walks the needed nodes in ID order (inputs before consumers),
// builds each fusion at its result node, and copies every node downstream
// of a change. An epilogue fusion whose fused node some device refuses
// (a GPU kernel without that activation) falls back to the fusion without
// its activation; a fusion that still cannot be built or has no kernel is
// dropped: its nodes are copied as they are.
func (r *rewriter) copyNodes() {
	for _, n := range r.order {
		if a := r.alias[n]; a != nil {
			r.newNode[n] = r.cur(a)
			continue
		}
		f := r.fusions[n]
		if f == nil {
			if r.taken[n] == nil {
				r.copyIfChanged(n)
			}
			continue
		}
		fn, err := r.fuse(f)
		if err == nil {
			r.newNode[n] = fn
			if f.outs {
				for i, m := range f.nodes {
					r.outMap[m.Output(0)] = fn.Output(i)
				}
			}
			continue
		}
		// f.nodes is in ID order: the core (the GEMM or convolution, a
		// Reshape, its BiasAdd or BatchNorm), then the activation's
		// nodes, then a MaxPool; a smaller fusion is a prefix.
		kept := 0
		for g := f.smaller(); g != nil && kept == 0; g = g.smaller() {
			if gn, err := r.fuse(g); err == nil {
				r.newNode[g.result()] = gn
				kept = len(g.nodes)
			}
		}
		for _, m := range f.nodes[kept:] {
			r.copyIfChanged(m)
		}
	}
}

// fuse builds f's fused node and checks that every device accepts it.
func (r *rewriter) fuse(f *fusion) (*graph.Node, error) {
	fn, err := f.build(r, f)
	if err != nil {
		return nil, err
	}
	if f.plain {
		r.counts[f.kind]++
		return fn, nil
	}
	names := make([]string, len(f.nodes))
	for i, m := range f.nodes {
		names[i] = m.Name
	}
	// Kernels append it to their errors, so a failure names the user's
	// nodes, not only the one whose name the fusion took.
	fn.Attrs[FusedFromAttr] = strsAttr(names...)
	if err := r.checkKernel(fn); err != nil {
		return nil, err
	}
	r.fused++
	r.counts[Remap]++
	return fn, nil
}

func (r *rewriter) copyIfChanged(n *graph.Node) {
	changed := false
	ins := make([]graph.Output, len(n.Inputs))
	for i, in := range n.Inputs {
		ins[i] = r.remap(in)
		changed = changed || ins[i] != in
	}
	ctl := r.remapControls(n)
	for i, c := range n.Controls {
		changed = changed || i >= len(ctl) || ctl[i] != c
	}
	if changed {
		r.newNode[n] = n.Rewired(ins, ctl)
	}
}

func (r *rewriter) checkKernel(n *graph.Node) error {
	for _, d := range r.opt.Devices {
		def, err := kernels.Lookup(n, d)
		if err != nil {
			return err
		}
		if _, err := def.Factory(n); err != nil {
			return err
		}
	}
	return nil
}

func typeAttr(dt tensor.DType) *tfpb.AttrValue {
	return &tfpb.AttrValue{Value: &tfpb.AttrValue_Type{Type: tfpb.DataType(dt)}}
}

func strsAttr(v ...string) *tfpb.AttrValue {
	b := make([][]byte, len(v))
	for i, s := range v {
		b[i] = []byte(s)
	}
	return &tfpb.AttrValue{Value: &tfpb.AttrValue_List{List: &tfpb.AttrValue_ListValue{S: b}}}
}

func intAttr(i int64) *tfpb.AttrValue { return &tfpb.AttrValue{Value: &tfpb.AttrValue_I{I: i}} }

// weightsArg is the argument of a fused GEMM or convolution (argsFor's
// order) that holds its weights: _FusedConv2D's filter, _FusedMatMul's B.
const weightsArg = 1

// newFused makes the fused op (_FusedMatMul or _FusedConv2D, or
// _MstreamConv2DMaxPool for a convolution with its MaxPool) that replaces
// f's nodes, with at's ID, name and device, args, attrs and the control
// inputs of f's nodes; markConstWeights marks its weights.
func (r *rewriter) newFused(fused string, at *graph.Node, f *fusion, args [][]graph.Output, attrs map[string]*tfpb.AttrValue) (*graph.Node, error) {
	r.markConstWeights(attrs, args, weightsArg)
	if f.pool {
		m := f.result()
		fused = "_MstreamConv2DMaxPool"
		attrs["pool_ksize"], attrs["pool_strides"], attrs["pool_padding"] = m.Attrs["ksize"], m.Attrs["strides"], m.Attrs["padding"]
	}
	return graph.NewDetached(at.ID, fused, at.Name, at.Device, args, r.remapControls(f.nodes...), attrs)
}

// markConstWeights sets ConstWeightsAttr in a fused node's attrs when its
// argument i is a Const, directly or through Identity, that the plan does
// not feed (a Const the rewrite made, as a folded filter, is one).
func (r *rewriter) markConstWeights(attrs map[string]*tfpb.AttrValue, args [][]graph.Output, i int) {
	if w := r.throughIdentity(args[i][0]); w.Node.Op == "Const" && !r.fed[w] {
		attrs[ConstWeightsAttr] = &tfpb.AttrValue{Value: &tfpb.AttrValue_B{B: true}}
	}
}

// epilogueAttrs are the attrs of the fused op that come from the matched
// GEMM or convolution and its activation.
func epilogueAttrs(f *fusion, fused string, first string) map[string]*tfpb.AttrValue {
	head := f.nodes[0]
	a := map[string]*tfpb.AttrValue{"T": head.Attrs["T"], "num_args": intAttr(1)}
	keep := []string{"transpose_a", "transpose_b"}
	if fused == "_FusedConv2D" {
		keep = []string{"strides", "padding", "explicit_paddings", "data_format", "dilations", "use_cudnn_on_gpu"}
		a["TArgs"] = &tfpb.AttrValue{Value: &tfpb.AttrValue_List{List: &tfpb.AttrValue_ListValue{Type: []tfpb.DataType{head.Attrs["T"].GetType()}}}}
	}
	for _, k := range keep {
		if v := head.Attrs[k]; v != nil {
			a[k] = v
		}
	}
	ops := []string{first}
	if f.act != "" {
		ops = append(ops, f.act)
		if f.act == "LeakyRelu" {
			a["leakyrelu_alpha"] = f.result().Attrs["alpha"]
		}
	}
	a["fused_ops"] = strsAttr(ops...)
	return a
}

func argsFor(fused string, in, filter, bias graph.Output) [][]graph.Output {
	args := [][]graph.Output{{in}, {filter}, {bias}}
	if fused == "_FusedConv2D" {
		args = append(args, nil) // host_args
	}
	return args
}

func buildBiasAdd(fused string) func(*rewriter, *fusion) (*graph.Node, error) {
	return func(r *rewriter, f *fusion) (*graph.Node, error) {
		head, bias := f.nodes[0], f.nodes[1]
		args := argsFor(fused, r.remap(head.Inputs[0]), r.remap(head.Inputs[1]), r.remap(bias.Inputs[1]))
		return r.newFused(fused, f.result(), f, args, epilogueAttrs(f, fused, "BiasAdd"))
	}
}

// buildReshapedBiasAdd builds MatMul -> Reshape -> BiasAdd(+activation)
// as _FusedMatMul -> Reshape: the fused node takes the MatMul's ID and name
// (nothing can observe the MatMul) and every control input, the Reshape
// the result's ID and name. The _FusedMatMul's kernel is checked here;
// fuse checks the Reshape's.
func buildReshapedBiasAdd(r *rewriter, f *fusion) (*graph.Node, error) {
	mm, reshape, bias, res := f.nodes[0], f.nodes[1], f.nodes[2], f.result()
	args := argsFor("_FusedMatMul", r.remap(mm.Inputs[0]), r.remap(mm.Inputs[1]), r.remap(bias.Inputs[1]))
	attrs := epilogueAttrs(f, "_FusedMatMul", "BiasAdd")
	names := make([]string, len(f.nodes))
	for i, m := range f.nodes {
		names[i] = m.Name
	}
	attrs[FusedFromAttr] = strsAttr(names...)
	fm, err := r.newFused("_FusedMatMul", mm, f, args, attrs)
	if err != nil {
		return nil, err
	}
	if err := r.checkKernel(fm); err != nil {
		return nil, err
	}
	return graph.NewDetached(res.ID, "Reshape", res.Name, res.Device,
		[][]graph.Output{{fm.Output(0)}, {r.remap(reshape.Inputs[1])}}, nil, reshape.Attrs)
}

// buildFoldedBatchNorm folds y = (conv(x, w) - mean) * s + offset, with
// s = scale / sqrt(variance + epsilon), into conv(x, w * s) + (offset -
// mean * s): a new filter and a bias, both Consts, then Conv2D+BiasAdd.
func buildFoldedBatchNorm(r *rewriter, f *fusion) (*graph.Node, error) {
	conv, bn := f.nodes[0], f.nodes[1]
	w := r.constValue(conv.Inputs[1])
	var p [4][]float32
	for i := range p {
		p[i] = r.constValue(bn.Inputs[1+i]).F32()
	}
	eps := float64(bn.Attrs["epsilon"].GetF())
	o := int(w.Shape[3])
	s := make([]float64, o)
	bias := tensor.New(tensor.Float, tensor.Shape{int64(o)})
	b := bias.F32()
	for c := range s {
		s[c] = float64(p[0][c]) / math.Sqrt(float64(p[3][c])+eps)
		b[c] = float32(float64(p[1][c]) - float64(p[2][c])*s[c])
	}
	folded := tensor.New(tensor.Float, w.Shape)
	wf, ff := w.F32(), folded.F32()
	for i, v := range wf {
		ff[i] = float32(float64(v) * s[i%o])
	}
	mk := func(name string, t *tensor.Tensor) (graph.Output, error) {
		id := r.nextID
		r.nextID++
		n, err := graph.NewDetached(id, "Const", name, conv.Device, nil, nil, map[string]*tfpb.AttrValue{
			"dtype": typeAttr(tensor.Float), "value": {Value: &tfpb.AttrValue_Tensor{Tensor: tensor.ToProto(t)}}})
		if err != nil {
			return graph.Output{}, err
		}
		return n.Output(0), nil
	}
	fo, err := mk(conv.Name+"/folded_filter", folded)
	if err != nil {
		return nil, err
	}
	bo, err := mk(bn.Name+"/folded_bias", bias)
	if err != nil {
		return nil, err
	}
	args := argsFor("_FusedConv2D", r.remap(conv.Inputs[0]), fo, bo)
	return r.newFused("_FusedConv2D", f.result(), f, args, epilogueAttrs(f, "_FusedConv2D", "BiasAdd"))
}

func buildChain(r *rewriter, f *fusion) (*graph.Node, error) {
	res := f.result()
	ops := make([]string, len(f.nodes))
	for i, n := range f.nodes {
		ops[i] = n.Op
	}
	return graph.NewDetached(res.ID, "_MstreamUnaryChain", res.Name, res.Device, [][]graph.Output{{r.remap(f.nodes[0].Inputs[0])}},
		r.remapControls(f.nodes...), map[string]*tfpb.AttrValue{"T": typeAttr(tensor.Float), "ops": strsAttr(ops...)})
}
