package optimize

import (
	"fmt"
	"hash/maphash"
	"sort"
	"strings"

	"google.golang.org/protobuf/proto"

	"mstream/graph"
	"mstream/hostmem"
	"mstream/kernels"
	"mstream/proto/tfpb"
	"mstream/tensor"
)

// Pass is one of the rewrites Rewrite can make; Passes combine them.
type Pass uint8

const (
	// Fold evaluates, once at plan time, every node whose inputs are all
	// constants (TF's constant folding): the node a non-constant consumer
	// reads becomes a Const of the value its CPU kernel computes.
	Fold Pass = 1 << iota
	// Arith pushes scalar constants down chains of Add/AddV2 or Mul, the
	// part of TF's arithmetic optimizer that matters for executors:
	// ((x + c1) + c2) + c3 becomes x + (c1 + c2 + c3).
	Arith
	// Deps drops control edges from stateless nodes whose data nothing
	// reads (TF's dependency optimizer): such nodes then are not run.
	Deps
	// CSE merges nodes that compute the same stateless op over the same
	// inputs with the same attrs and device (common subexpressions).
	CSE
	// Remap makes the fusions of TF's remapper (see the package doc).
	Remap
)

// All is every pass, in the order Rewrite runs them.
const All = Fold | Arith | Deps | CSE | Remap

// MaxFoldedBytes is the largest value Fold makes a constant of, TF's cap
// on folded constants (10 MiB).
const MaxFoldedBytes = 10 << 20

// String lists the passes by name, for logs and stats.
func (p Pass) String() string {
	var s []string
	for i, name := range []string{"fold", "arith", "deps", "cse", "remap"} {
		if p&(1<<i) != 0 {
			s = append(s, name)
		}
	}
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ",")
}

// PassesFor says which passes a ConfigProto asks for, as TF decides which
// of its optimizers run: grappler's constant folding, arithmetic,
// dependency and remapper passes unless rewrite_options turns them (or the
// whole meta-optimizer) off; the classic optimizer's folding and common
// subexpression elimination unless opt_level is L0. Folding is on when
// either would do it.
func PassesFor(cfg *tfpb.ConfigProto) Pass {
	gopt := cfg.GetGraphOptions()
	rw := gopt.GetRewriteOptions()
	meta := !rw.GetDisableMetaOptimizer()
	on := func(t tfpb.RewriterConfig_Toggle) bool { return meta && t != tfpb.RewriterConfig_OFF }
	classic := gopt.GetOptimizerOptions().GetOptLevel() != tfpb.OptimizerOptions_L0
	classicFold := classic || gopt.GetOptimizerOptions().GetDoConstantFolding()
	var p Pass
	if on(rw.GetConstantFolding()) || classicFold {
		p |= Fold
	}
	if on(rw.GetArithmeticOptimization()) {
		p |= Arith
	}
	if on(rw.GetDependencyOptimization()) {
		p |= Deps
	}
	if classic || on(rw.GetCommonSubgraphElimination()) {
		p |= CSE
	}
	if on(rw.GetRemapping()) {
		p |= Remap
	}
	return p
}

// controlFlow are the ops whose semantics involve frames or dead tensors;
// no pass looks through them.
var controlFlow = map[string]bool{
	"Switch": true, "RefSwitch": true, "Merge": true, "RefMerge": true, "Enter": true, "RefEnter": true,
	"Exit": true, "RefExit": true, "NextIteration": true, "RefNextIteration": true, "LoopCond": true,
	"ControlTrigger": true, "_SwitchN": true,
}

// pure says whether n computes a value from its inputs alone, with no
// effect beyond it: stateless in its OpDef, no control flow, not a
// placeholder or function argument, and only plain value dtypes.
func pure(n *graph.Node) bool {
	if n.Def.GetIsStateful() || controlFlow[n.Op] || strings.HasPrefix(n.Op, "Placeholder") ||
		strings.HasPrefix(n.Op, "_") && n.Op != "_MstreamUnaryChain" || n.Op == "NoOp" {
		return false
	}
	plain := func(ts []tensor.DType) bool {
		for _, t := range ts {
			if t >= 100 || t == tensor.Resource || t == tensor.Variant {
				return false
			}
		}
		return true
	}
	return plain(n.InTypes) && plain(n.OutTypes)
}

// observed says whether a Run can see n itself: fetched, fed or a target.
func (r *rewriter) observed(n *graph.Node) bool {
	if r.target[n] {
		return true
	}
	for i := range n.OutTypes {
		if o := n.Output(i); r.fetched[o] || r.fed[o] {
			return true
		}
	}
	return false
}

// matchFold evaluates the constant part of the graph in topological order
// and replaces each node of it that a non-constant node reads by a Const.
// A node is constant when it is pure, has one output, no control inputs,
// and every input is an unfed Const or constant; its value must come from
// its CPU kernel without error and fit MaxFoldedBytes (otherwise it stays,
// and fails or runs at Run time as before). Fetched nodes and targets stay
// as they are (TF preserves them too); their constant inputs fold.
func (r *rewriter) matchFold() {
	// A Const is decoded only when a node to fold reads it, and not for
	// an Identity whose output would be over the cap anyway: a frozen
	// model reads every weight through one, and decoding them all cost
	// dlrm_small's first Run a second.
	vals := map[*graph.Node]*tensor.Tensor{}
	consts := map[*graph.Node]bool{}
	value := func(n *graph.Node) *tensor.Tensor {
		if v, ok := vals[n]; ok || !consts[n] {
			return v
		}
		v := r.constValue(n.Output(0))
		vals[n] = v
		return v
	}
	for _, n := range r.order {
		if n.Op == "Const" {
			consts[n] = true
			continue
		}
		if !pure(n) || len(n.OutTypes) != 1 || len(n.Inputs) == 0 || len(n.Controls) > 0 {
			continue
		}
		ok := true
		for _, in := range n.Inputs {
			ok = ok && !r.fed[in] && (consts[in.Node] || vals[in.Node] != nil)
		}
		if !ok || (n.Op == "Identity" && consts[n.Inputs[0].Node] && constBytes(n.Inputs[0].Node) > MaxFoldedBytes) {
			continue
		}
		ins := make([]*tensor.Tensor, len(n.Inputs))
		for i, in := range n.Inputs {
			if ins[i] = value(in.Node); ins[i] == nil {
				ins = nil
				break
			}
		}
		if ins == nil {
			continue
		}
		if v := evalCPU(n, ins); v != nil {
			vals[n] = v
		}
	}
	for _, n := range r.order {
		if consts[n] || vals[n] == nil || r.observed(n) {
			continue
		}
		read := false
		for _, u := range r.uses[n.Output(0)] {
			read = read || vals[u] == nil || r.observed(u)
		}
		if read {
			v := vals[n]
			r.add(&fusion{nodes: []*graph.Node{n}, plain: true, kind: Fold,
				build: func(r *rewriter, f *fusion) (*graph.Node, error) { return constNode(n.ID, n.Name, n.Device, v) }})
		}
	}
}

// constBytes is the size of a Const's value from its TensorProto, without
// decoding it (-1 when the proto does not say).
func constBytes(n *graph.Node) int64 {
	t := n.Attrs["value"].GetTensor()
	if t == nil {
		return -1
	}
	if len(t.TensorContent) > 0 {
		return int64(len(t.TensorContent))
	}
	elems := int64(1)
	for _, d := range t.GetTensorShape().GetDim() {
		elems *= max(d.Size, 0)
	}
	return elems * int64(tensor.DType(t.Dtype).Size())
}

// evalCPU runs n's CPU kernel on constant inputs; nil when there is none,
// it fails, or its value is larger than MaxFoldedBytes.
func evalCPU(n *graph.Node, ins []*tensor.Tensor) *tensor.Tensor {
	outs := kernels.EvalCPU(n, ins, hostmem.Limit{})
	if len(outs) != 1 || outs[0].ByteSize() > MaxFoldedBytes {
		return nil
	}
	return outs[0]
}

func constNode(id int, name, device string, v *tensor.Tensor) (*graph.Node, error) {
	return graph.NewDetached(id, "Const", name, device, nil, nil, map[string]*tfpb.AttrValue{
		"dtype": typeAttr(v.DType), "value": {Value: &tfpb.AttrValue_Tensor{Tensor: tensor.ToProto(v)}}})
}

// chainOps are the ops whose scalar constants Arith pushes down, by family.
var chainOps = map[string]string{"Add": "add", "AddV2": "add", "Mul": "mul"}

// scalarConstOperand returns the index of n's operand that is an unfed
// scalar Const, and that Const's value; -1 when there is none. When both
// are such constants n is Fold's business, not Arith's.
func (r *rewriter) scalarConstOperand(n *graph.Node) (int, *tensor.Tensor) {
	if len(n.Inputs) != 2 || len(n.Controls) > 0 {
		return -1, nil
	}
	var idx = -1
	var val *tensor.Tensor
	for i, in := range n.Inputs {
		if v := r.constValue(in); v != nil && v.NumElements() == 1 && len(v.Shape) == 0 {
			if idx >= 0 {
				return -1, nil
			}
			idx, val = i, v
		}
	}
	return idx, val
}

// matchArith finds chains n1 -> n2 -> ... of one family (Add/AddV2, or
// Mul), each reading the one before and a scalar Const, every link but the
// last hidden (read by the next link only), and makes each one node: the
// first link's other operand combined with the constants folded in order.
// Scalars never change a broadcast's shape, so the result's is the same.
func (r *rewriter) matchArith() {
	for _, n := range r.order {
		fam := chainOps[n.Op]
		ci, _ := r.scalarConstOperand(n)
		if fam == "" || ci < 0 || r.taken[n] != nil || !pure(n) {
			continue
		}
		nodes := []*graph.Node{n}
		for cur := n; r.hidden(cur, 1); {
			c := r.uses[cur.Output(0)][0]
			j, _ := r.scalarConstOperand(c)
			if chainOps[c.Op] != fam || j < 0 || c.Inputs[1-j] != cur.Output(0) || r.taken[c] != nil ||
				c.Device != n.Device || dtypeOf(c, "T") != dtypeOf(n, "T") {
				break
			}
			nodes = append(nodes, c)
			cur = c
		}
		if len(nodes) < 2 {
			continue
		}
		r.add(&fusion{nodes: nodes, plain: true, kind: Arith, build: buildPushDown})
	}
}

func buildPushDown(r *rewriter, f *fusion) (*graph.Node, error) {
	first, res := f.nodes[0], f.result()
	ci, acc := r.scalarConstOperand(first)
	x := first.Inputs[1-ci]
	for _, m := range f.nodes[1:] {
		_, c := r.scalarConstOperand(m)
		// The constants combine with the link's own kernel, so the sum (or
		// product) has the dtype's arithmetic, as TF's folded node has.
		acc = evalCPU(m, []*tensor.Tensor{acc, c})
		if acc == nil {
			return nil, fmt.Errorf("optimize: cannot combine the constants of %s", m.Name)
		}
	}
	id := r.nextID
	r.nextID++
	c, err := constNode(id, res.Name+"/pushed_down_const", res.Device, acc)
	if err != nil {
		return nil, err
	}
	return graph.NewDetached(res.ID, res.Op, res.Name, res.Device, [][]graph.Output{{r.remap(x)}, {c.Output(0)}},
		r.remapControls(f.nodes...), res.Attrs)
}

// matchDeps drops, from every node's control inputs, the nodes whose only
// effect would be their value when nothing reads it: pure, unobserved,
// with no data consumer, and whose own inputs and control inputs are all
// such nodes, Consts or feeds (so nothing with an effect loses an order).
func (r *rewriter) matchDeps() {
	memo := map[*graph.Node]int8{}
	var inert func(n *graph.Node) bool
	inert = func(n *graph.Node) bool {
		if m := memo[n]; m != 0 {
			return m > 0
		}
		memo[n] = -1
		ok := n.Op == "Const" && len(n.Controls) == 0 || pure(n)
		for _, in := range n.Inputs {
			ok = ok && (r.fed[in] || inert(in.Node))
		}
		for _, c := range n.Controls {
			ok = ok && inert(c)
		}
		if ok {
			memo[n] = 1
		}
		return ok
	}
	unread := func(n *graph.Node) bool {
		if r.observed(n) {
			return false
		}
		for i := range n.OutTypes {
			if len(r.uses[n.Output(i)]) > 0 {
				return false
			}
		}
		return inert(n)
	}
	for _, n := range r.order {
		if len(n.Controls) == 0 || r.taken[n] != nil {
			continue
		}
		var keep []*graph.Node
		for _, c := range n.Controls {
			if !unread(c) {
				keep = append(keep, c)
			}
		}
		if len(keep) == len(n.Controls) {
			continue
		}
		r.add(&fusion{nodes: []*graph.Node{n}, plain: true, kind: Deps,
			build: func(r *rewriter, f *fusion) (*graph.Node, error) {
				ins := make([]graph.Output, len(n.Inputs))
				for i, in := range n.Inputs {
					ins[i] = r.remap(in)
				}
				ctl := make([]*graph.Node, len(keep))
				for i, c := range keep {
					ctl[i] = r.cur(c)
				}
				return n.Rewired(ins, ctl), nil
			}})
	}
}

// matchCSE finds, in topological order, nodes equal to an earlier one:
// the same pure op, device, attrs, inputs (after merging) and control
// inputs. Each such node is replaced by the earlier one, unless a Run
// observes it.
func (r *rewriter) matchCSE() {
	canon := map[*graph.Node]*graph.Node{}
	seen := map[string]*graph.Node{}
	seed := maphash.MakeSeed()
	var b strings.Builder
	for _, n := range r.order {
		if !(pure(n) || n.Op == "Const") || r.observed(n) {
			continue
		}
		b.Reset()
		fmt.Fprintf(&b, "%s\x00%s\x00", n.Op, n.Device)
		for _, in := range n.Inputs {
			if r.fed[in] {
				b.WriteString("fed:")
			}
			src := in.Node
			if c := canon[src]; c != nil {
				src = c
			}
			fmt.Fprintf(&b, "%d:%d,", src.ID, in.Index)
		}
		ctl := make([]int, 0, len(n.Controls))
		for _, c := range n.Controls {
			if cc := canon[c]; cc != nil {
				c = cc
			}
			ctl = append(ctl, c.ID)
		}
		sort.Ints(ctl)
		fmt.Fprintf(&b, "\x00%v\x00", ctl)
		keys := make([]string, 0, len(n.Attrs))
		for k := range n.Attrs {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			h, err := attrHash(seed, n.Attrs[k])
			if err != nil {
				b.Reset()
				break
			}
			fmt.Fprintf(&b, "%s=%x;", k, h)
		}
		if b.Len() == 0 {
			continue
		}
		key := b.String()
		if first := seen[key]; first != nil {
			if sameAttrs(n, first) {
				canon[n] = first
				r.alias[n] = first
				r.counts[CSE]++
			}
			continue
		}
		seen[key] = n
	}
}

// attrHash hashes an attr for matchCSE's keys: a hash, not the bytes, as
// a Const's value can be hundreds of MB (DLRM's tables), which written
// out in hex took 13 s of dlrm_small's first Run; a tensor's content is
// hashed where it lies, not copied by Marshal. Equal attrs hash alike,
// and matchCSE compares the attrs of equal keys, so a collision merges
// nothing.
func attrHash(seed maphash.Seed, v *tfpb.AttrValue) (uint64, error) {
	var h maphash.Hash
	h.SetSeed(seed)
	m := proto.Message(v)
	var content []byte
	if t := v.GetTensor(); t != nil && len(t.TensorContent) > 0 {
		m, content = &tfpb.TensorProto{Dtype: t.Dtype, TensorShape: t.TensorShape, VersionNumber: t.VersionNumber}, t.TensorContent
	}
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(m)
	if err != nil {
		return 0, err
	}
	h.Write(b)
	h.Write(content)
	return h.Sum64(), nil
}

// sameAttrs says whether a and b have equal attrs.
func sameAttrs(a, b *graph.Node) bool {
	if len(a.Attrs) != len(b.Attrs) {
		return false
	}
	for k, v := range a.Attrs {
		if w, ok := b.Attrs[k]; !ok || !proto.Equal(v, w) {
			return false
		}
	}
	return true
}
