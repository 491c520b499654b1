package lower

import (
	"strconv"

	"mstream/graph"
	"mstream/proto/tfpb"
	"mstream/status"
	"mstream/tensor"
)

// The lowering of TF's functional control flow onto v1 control flow, as
// TF's lower_if_op.cc, lower_case_op.cc and lower_while_op.cc do it, with
// the branches and loop functions inlined in place.

// branchFn builds one side of a conditional from the switched inputs; its
// nodes without inputs wait on pivot, so they are dead with the side.
type branchFn func(side int, ins []graph.Output, pivot *graph.Node) ([]graph.Output, *graph.Node, error)

// cond2 lowers a two-way conditional named name: pred is switched into
// pivots, every input is switched by pred, branch builds each side (1
// taken when pred is true), the outputs are merged, and an IdentityN named
// name stands for the whole (its control input is live once the taken
// side, control outputs included, has run).
func (l *lowerer) cond2(name, device string, pred graph.Output, ins []graph.Output, ctrls, srcCtrl []*graph.Node, branch branchFn) ([]graph.Output, *graph.Node, error) {
	if pred.DType() != tensor.Bool {
		return nil, nil, status.Errorf(status.Unimplemented, "Node '%s': a condition of type %v cannot be lowered: only bool conditions are", name, pred.DType())
	}
	tb := map[string]*tfpb.AttrValue{"T": graph.AttrType(tensor.Bool)}
	sp, err := l.node("Switch", l.name(name+"/switch_pred"), device, []graph.Output{pred, pred}, ctrls, srcCtrl, tb)
	if err != nil {
		return nil, nil, err
	}
	pf, err := l.node("Identity", l.name(name+"/pivot_f"), device, []graph.Output{sp.Output(0)}, nil, nil, tb)
	if err != nil {
		return nil, nil, err
	}
	pt, err := l.node("Identity", l.name(name+"/pivot_t"), device, []graph.Output{sp.Output(1)}, nil, nil, tb)
	if err != nil {
		return nil, nil, err
	}
	sws := make([]*graph.Node, len(ins))
	for i, in := range ins {
		sws[i], err = l.node("Switch", l.name(name+"/switch_"+strconv.Itoa(i)), device, []graph.Output{in, pred}, ctrls, nil,
			map[string]*tfpb.AttrValue{"T": graph.AttrType(in.DType())})
		if err != nil {
			return nil, nil, err
		}
	}
	side := func(s int, pivot *graph.Node) ([]graph.Output, *graph.Node, error) {
		bins := make([]graph.Output, len(ins))
		for i, sw := range sws {
			bins[i] = sw.Output(s)
		}
		return branch(s, bins, pivot)
	}
	tOuts, tDone, err := side(1, pt)
	if err != nil {
		return nil, nil, err
	}
	fOuts, fDone, err := side(0, pf)
	if err != nil {
		return nil, nil, err
	}
	if len(tOuts) != len(fOuts) {
		return nil, nil, status.InvalidArg("Node '%s': the branches return %d and %d values", name, len(tOuts), len(fOuts))
	}
	merged := make([]graph.Output, len(tOuts))
	for i := range tOuts {
		if tOuts[i].DType() != fOuts[i].DType() {
			return nil, nil, status.InvalidArg("Node '%s': output %d is %v in one branch and %v in the other", name, i, tOuts[i].DType(), fOuts[i].DType())
		}
		m, err := l.node("Merge", l.name(name+"/output_"+strconv.Itoa(i)), device, []graph.Output{fOuts[i], tOuts[i]}, nil, nil,
			map[string]*tfpb.AttrValue{"T": graph.AttrType(tOuts[i].DType()), "N": graph.AttrInt(2)})
		if err != nil {
			return nil, nil, err
		}
		merged[i] = m.Output(0)
	}
	te, err := l.node("Identity", l.name(name+"/then_executed"), device, []graph.Output{pt.Output(0)}, []*graph.Node{tDone}, nil, tb)
	if err != nil {
		return nil, nil, err
	}
	fe, err := l.node("Identity", l.name(name+"/else_executed"), device, []graph.Output{pf.Output(0)}, []*graph.Node{fDone}, nil, tb)
	if err != nil {
		return nil, nil, err
	}
	be, err := l.node("Merge", l.name(name+"/branch_executed"), device, []graph.Output{fe.Output(0), te.Output(0)}, nil, nil,
		map[string]*tfpb.AttrValue{"T": graph.AttrType(tensor.Bool), "N": graph.AttrInt(2)})
	if err != nil {
		return nil, nil, err
	}
	return l.standIn(name, device, merged, []*graph.Node{be}, nil)
}

// branch inlines function f (a func attr) as one side named prefix.
func (l *lowerer) branch(n *graph.Node, prefix string, f *tfpb.NameAttrList, ins []graph.Output, ctrls []*graph.Node, pivot []*graph.Node) ([]graph.Output, *graph.Node, error) {
	if f.GetName() == "" {
		return nil, nil, status.InvalidArg("Node '%s' (op %s): a branch names no function", n.Name, n.Op)
	}
	name := l.name(prefix)
	rets, ctrlRets, err := l.inline(n.Name, name, n.Device, f.GetName(), f.GetAttr(), ins, ctrls, pivot)
	if err != nil {
		return nil, nil, err
	}
	return l.standIn(name, n.Device, rets, ctrlRets, append(append([]*graph.Node(nil), ctrls...), pivot...))
}

// checkOuts checks a lowered node's outputs against its own output types.
func checkOuts(n *graph.Node, outs []graph.Output) error {
	if len(outs) != len(n.OutTypes) {
		return status.InvalidArg("Node '%s' (op %s): its functions return %d values, the node has %d outputs", n.Name, n.Op, len(outs), len(n.OutTypes))
	}
	for i, o := range outs {
		if o.DType() != n.OutTypes[i] {
			return status.InvalidArg("Node '%s' (op %s): output %d is %v from its function, %v on the node", n.Name, n.Op, i, o.DType(), n.OutTypes[i])
		}
	}
	return nil
}

// lowerIf lowers If/StatelessIf (TF's lower_if_op): then_branch runs on
// the inputs switched true, else_branch on those switched false; only the
// taken side runs, stateful nodes of the other side included.
func (l *lowerer) lowerIf(n *graph.Node, ins []graph.Output, ctrls, srcCtrl []*graph.Node) ([]graph.Output, *graph.Node, error) {
	thenF, elseF := n.Attrs["then_branch"].GetFunc(), n.Attrs["else_branch"].GetFunc()
	outs, done, err := l.cond2(n.Name, n.Device, ins[0], ins[1:], ctrls, srcCtrl, func(side int, bins []graph.Output, pivot *graph.Node) ([]graph.Output, *graph.Node, error) {
		if side == 1 {
			return l.branch(n, n.Name+"/then", thenF, bins, nil, []*graph.Node{pivot})
		}
		return l.branch(n, n.Name+"/else", elseF, bins, nil, []*graph.Node{pivot})
	})
	if err != nil {
		return nil, nil, err
	}
	return outs, done, checkOuts(n, outs)
}

// lowerCase lowers Case/StatelessCase (TF's lower_case_op semantics: the
// branch numbered branch_index runs, an index out of range runs the last
// branch) as a chain of two-way conditionals: branch k runs when the index
// equals k, tested for k = 0, 1, ... N-2, and the last branch otherwise.
func (l *lowerer) lowerCase(n *graph.Node, ins []graph.Output, ctrls, srcCtrl []*graph.Node) ([]graph.Output, *graph.Node, error) {
	branches := n.Attrs["branches"].GetList().GetFunc()
	if len(branches) == 0 {
		return nil, nil, status.InvalidArg("Node '%s' (op %s): no branches", n.Name, n.Op)
	}
	var level func(k int, name string, idx graph.Output, ins []graph.Output, ctrls, srcCtrl []*graph.Node) ([]graph.Output, *graph.Node, error)
	level = func(k int, name string, idx graph.Output, ins []graph.Output, ctrls, srcCtrl []*graph.Node) ([]graph.Output, *graph.Node, error) {
		bname := n.Name + "/branch" + strconv.Itoa(k)
		if k == len(branches)-1 {
			return l.branch(n, bname, branches[k], ins, ctrls, srcCtrl)
		}
		kc, err := l.node("Const", l.name(name+"/index_"+strconv.Itoa(k)), n.Device, nil, ctrls, srcCtrl,
			map[string]*tfpb.AttrValue{"dtype": graph.AttrType(tensor.Int32), "value": graph.AttrTensor(tensor.FromI32(tensor.Shape{}, []int32{int32(k)}))})
		if err != nil {
			return nil, nil, err
		}
		p, err := l.node("Equal", l.name(name+"/is_"+strconv.Itoa(k)), n.Device, []graph.Output{idx, kc.Output(0)}, nil, nil,
			map[string]*tfpb.AttrValue{"T": graph.AttrType(tensor.Int32)})
		if err != nil {
			return nil, nil, err
		}
		return l.cond2(name, n.Device, p.Output(0), append([]graph.Output{idx}, ins...), ctrls, srcCtrl,
			func(side int, bins []graph.Output, pivot *graph.Node) ([]graph.Output, *graph.Node, error) {
				if side == 1 {
					return l.branch(n, bname, branches[k], bins[1:], nil, []*graph.Node{pivot})
				}
				return level(k+1, l.name(n.Name+"/case_"+strconv.Itoa(k+1)), bins[0], bins[1:], nil, []*graph.Node{pivot})
			})
	}
	outs, done, err := level(0, n.Name, ins[0], ins[1:], ctrls, srcCtrl)
	if err != nil {
		return nil, nil, err
	}
	if len(branches) == 1 {
		// No conditional: the one branch's stand-in is named
		// <node>/branch0; the node's own name stands for it.
		outs, done, err = l.standIn(n.Name, n.Device, outs, []*graph.Node{done}, nil)
		if err != nil {
			return nil, nil, err
		}
	}
	return outs, done, checkOuts(n, outs)
}

// lowerWhile lowers While/StatelessWhile (TF's lower_while_op) onto
// loop, with the inlined cond and body. A resource variable that the body
// returns unchanged enters as an is_constant Enter, as in TF.
func (l *lowerer) lowerWhile(n *graph.Node, ins []graph.Output, ctrls, srcCtrl []*graph.Node) ([]graph.Output, *graph.Node, error) {
	if len(ins) == 0 {
		return nil, nil, status.InvalidArg("Node '%s' (op %s): a loop without loop variables cannot be lowered", n.Name, n.Op)
	}
	condF, bodyF := n.Attrs["cond"].GetFunc(), n.Attrs["body"].GetFunc()
	body := l.g.FunctionLocked(bodyF.GetName())
	if body == nil || l.g.FunctionLocked(condF.GetName()) == nil {
		missing := bodyF.GetName()
		if body != nil {
			missing = condF.GetName()
		}
		return nil, nil, status.InvalidArg("Node '%s' (op %s): function '%s' is not in the graph's function library", n.Name, n.Op, missing)
	}
	constant := make([]bool, len(ins))
	for i, in := range ins {
		constant[i] = in.DType() == tensor.Resource && carried(body, i)
	}
	cond := func(cur []graph.Output, src *graph.Node) (graph.Output, []*graph.Node, error) {
		crets, cctrls, err := l.inline(n.Name, l.name(n.Name+"/cond"), n.Device, condF.GetName(), condF.GetAttr(), cur, nil, []*graph.Node{src})
		if err != nil {
			return graph.Output{}, nil, err
		}
		if len(crets) != 1 || crets[0].DType() != tensor.Bool {
			return graph.Output{}, nil, status.Errorf(status.Unimplemented, "Node '%s' (op %s): cond '%s' must return one bool to be lowered", n.Name, n.Op, condF.GetName())
		}
		return crets[0], cctrls, nil
	}
	bodyFn := func(bins []graph.Output, pivot *graph.Node) ([]graph.Output, []*graph.Node, error) {
		brets, bctrls, err := l.inline(n.Name, l.name(n.Name+"/body"), n.Device, bodyF.GetName(), bodyF.GetAttr(), bins, nil, []*graph.Node{pivot})
		if err != nil {
			return nil, nil, err
		}
		if len(brets) != len(ins) {
			return nil, nil, status.InvalidArg("Node '%s' (op %s): body '%s' returns %d values for %d loop variables", n.Name, n.Op, bodyF.GetName(), len(brets), len(ins))
		}
		for i, r := range brets {
			if !constant[i] && r.DType() != ins[i].DType() {
				return nil, nil, status.InvalidArg("Node '%s' (op %s): body '%s' returns %v for loop variable %d of type %v", n.Name, n.Op, bodyF.GetName(), r.DType(), i, ins[i].DType())
			}
		}
		return brets, bctrls, nil
	}
	exits, err := l.loop(n, ins, ctrls, constant, cond, bodyFn)
	if err != nil {
		return nil, nil, err
	}
	outs, done, err := l.standIn(n.Name, n.Device, exits, nil, nil)
	if err != nil {
		return nil, nil, err
	}
	return outs, done, checkOuts(n, outs)
}

// loopCond builds a loop's condition from the loop variables' values in an
// iteration; its nodes without inputs wait on src. It returns the bool and
// the nodes LoopCond must wait for.
type loopCond func(cur []graph.Output, src *graph.Node) (graph.Output, []*graph.Node, error)

// loopBody builds a loop's body from the values on the Switches' true
// side; its nodes without inputs wait on pivot. It returns the next
// values (one per loop variable; a constant one's is ignored) and the
// nodes NextIteration must wait for.
type loopBody func(ins []graph.Output, pivot *graph.Node) ([]graph.Output, []*graph.Node, error)

// loop builds a v1 loop of frame n.Name over ins, as TF's lower_while_op
// does: per loop variable Enter (parallel_iterations from n, default 10),
// Merge with the NextIteration back edge, Switch on LoopCond, Exit on the
// false side, the body on the true side. A variable marked constant
// enters as an is_constant Enter and skips Merge/Switch/NextIteration. It
// returns the loop's final values (a constant variable's own input).
func (l *lowerer) loop(n *graph.Node, ins []graph.Output, ctrls []*graph.Node, constant []bool, cond loopCond, body loopBody) ([]graph.Output, error) {
	frame := n.Name
	par := n.Attrs["parallel_iterations"]
	if par == nil {
		par = graph.AttrInt(10)
	}
	dev := n.Device
	enters := make([]*graph.Node, len(ins))
	cur := make([]graph.Output, len(ins)) // the value of each variable in an iteration
	merges := make([]*graph.Node, len(ins))
	var err error
	for i, in := range ins {
		t := map[string]*tfpb.AttrValue{"T": graph.AttrType(in.DType())}
		enters[i], err = l.node("Enter", l.name(n.Name+"/enter_"+strconv.Itoa(i)), dev, []graph.Output{in}, ctrls, nil,
			map[string]*tfpb.AttrValue{"T": graph.AttrType(in.DType()), "frame_name": graph.AttrString(frame),
				"is_constant": graph.AttrBool(constant[i]), "parallel_iterations": par})
		if err != nil {
			return nil, err
		}
		cur[i] = enters[i].Output(0)
		if constant[i] {
			continue
		}
		t["N"] = graph.AttrInt(2)
		// The second input becomes the NextIteration once the body is
		// built; the Merge's shape is not the Enter's then.
		merges[i], err = l.node("Merge", l.name(n.Name+"/merge_"+strconv.Itoa(i)), dev, []graph.Output{cur[i], cur[i]}, nil, nil, t)
		if err != nil {
			return nil, err
		}
		merges[i].OutShapes[0] = tensor.PartialShape{}
		cur[i] = merges[i].Output(0)
	}
	first := -1
	for i := range ins {
		if !constant[i] {
			first = i
			break
		}
	}
	if first < 0 {
		return nil, status.InvalidArg("Node '%s' (op %s): every loop variable is a loop-invariant resource; nothing can end the loop", n.Name, n.Op)
	}
	pred, cctrls, err := cond(cur, merges[first])
	if err != nil {
		return nil, err
	}
	lc, err := l.node("LoopCond", l.name(n.Name+"/LoopCond"), dev, []graph.Output{pred}, cctrls, nil, nil)
	if err != nil {
		return nil, err
	}
	switches := make([]*graph.Node, len(ins))
	exits := make([]graph.Output, len(ins))
	bodyIns := make([]graph.Output, len(ins))
	for i := range ins {
		if constant[i] {
			bodyIns[i] = cur[i]
			exits[i] = ins[i]
			continue
		}
		t := map[string]*tfpb.AttrValue{"T": graph.AttrType(ins[i].DType())}
		switches[i], err = l.node("Switch", l.name(n.Name+"/switch_"+strconv.Itoa(i)), dev, []graph.Output{cur[i], lc.Output(0)}, nil, nil, t)
		if err != nil {
			return nil, err
		}
		ex, err := l.node("Exit", l.name(n.Name+"/exit_"+strconv.Itoa(i)), dev, []graph.Output{switches[i].Output(0)}, nil, nil, t)
		if err != nil {
			return nil, err
		}
		exits[i] = ex.Output(0)
		bodyIns[i] = switches[i].Output(1)
	}
	pivot, err := l.node("Identity", l.name(n.Name+"/loop_body_control"), dev, []graph.Output{switches[first].Output(1)}, nil, nil,
		map[string]*tfpb.AttrValue{"T": graph.AttrType(ins[first].DType())})
	if err != nil {
		return nil, err
	}
	brets, bctrls, err := body(bodyIns, pivot)
	if err != nil {
		return nil, err
	}
	for i, m := range merges {
		if m == nil {
			continue
		}
		next, err := l.node("NextIteration", l.name(n.Name+"/next_iteration_"+strconv.Itoa(i)), dev, []graph.Output{brets[i]}, bctrls, nil,
			map[string]*tfpb.AttrValue{"T": graph.AttrType(ins[i].DType())})
		if err != nil {
			return nil, err
		}
		m.Inputs[1] = next.Output(0)
	}
	return exits, nil
}

// carried reports whether body returns its argument i unchanged (TF's
// IsLoopCarriedResource, for resource arguments).
func carried(body *tfpb.FunctionDef, i int) bool {
	sig := body.GetSignature()
	if i >= len(sig.GetInputArg()) || i >= len(sig.GetOutputArg()) {
		return false
	}
	return body.GetRet()[sig.OutputArg[i].Name] == sig.InputArg[i].Name
}

// lowerFor lowers For (TF's ForOp, which TF runs as a kernel and never
// lowers): a loop over (i, limit, delta, inputs...) with limit and delta
// loop-invariant, continuing while i < limit when delta > 0 and while
// i > limit otherwise, whose body inlines body(i, inputs...) and steps i
// by delta. An Assert ahead of the loop fails as ForOp does (INVALID_ARGUMENT,
// "Invalid start/limit/delta") unless delta > 0 and start <= limit,
// delta < 0 and start >= limit, or delta = 0 and start = limit.
func (l *lowerer) lowerFor(n *graph.Node, ins []graph.Output, ctrls, srcCtrl []*graph.Node) ([]graph.Output, *graph.Node, error) {
	bodyF := n.Attrs["body"].GetFunc()
	if l.g.FunctionLocked(bodyF.GetName()) == nil {
		return nil, nil, status.InvalidArg("Node '%s' (op %s): function '%s' is not in the graph's function library", n.Name, n.Op, bodyF.GetName())
	}
	dev := n.Device
	i32 := map[string]*tfpb.AttrValue{"T": graph.AttrType(tensor.Int32)}
	op := func(op, name string, ins []graph.Output, ctrls, src []*graph.Node, attrs map[string]*tfpb.AttrValue) (graph.Output, error) {
		nd, err := l.node(op, l.name(n.Name+"/"+name), dev, ins, ctrls, src, attrs)
		if err != nil {
			return graph.Output{}, err
		}
		return nd.Output(0), nil
	}
	zero := func(name string, src []*graph.Node) (graph.Output, error) {
		return op("Const", name, nil, nil, src, map[string]*tfpb.AttrValue{"dtype": graph.AttrType(tensor.Int32), "value": graph.AttrTensor(tensor.ScalarI32(0))})
	}
	start, limit, delta := ins[0], ins[1], ins[2]
	// The check, outside the loop.
	src := append(append([]*graph.Node(nil), ctrls...), srcCtrl...)
	z, err := zero("zero", src)
	if err != nil {
		return nil, nil, err
	}
	b := map[string]*tfpb.AttrValue{}
	type cmp struct {
		op     string
		x, y   graph.Output
		name   string
		result graph.Output
	}
	cs := []*cmp{{op: "Greater", x: delta, y: z, name: "delta_pos"}, {op: "LessEqual", x: start, y: limit, name: "start_le_limit"},
		{op: "Less", x: delta, y: z, name: "delta_neg"}, {op: "GreaterEqual", x: start, y: limit, name: "start_ge_limit"},
		{op: "Equal", x: delta, y: z, name: "delta_zero"}, {op: "Equal", x: start, y: limit, name: "start_eq_limit"}}
	for _, c := range cs {
		if c.result, err = op(c.op, c.name, []graph.Output{c.x, c.y}, nil, nil, i32); err != nil {
			return nil, nil, err
		}
	}
	var ok []graph.Output
	for k := 0; k < 3; k++ {
		a, err := op("LogicalAnd", "valid_"+strconv.Itoa(k), []graph.Output{cs[2*k].result, cs[2*k+1].result}, nil, nil, b)
		if err != nil {
			return nil, nil, err
		}
		ok = append(ok, a)
	}
	any01, err := op("LogicalOr", "valid_01", ok[:2], nil, nil, b)
	if err != nil {
		return nil, nil, err
	}
	valid, err := op("LogicalOr", "valid", []graph.Output{any01, ok[2]}, nil, nil, b)
	if err != nil {
		return nil, nil, err
	}
	msg, err := op("Const", "invalid_message", nil, nil, src, map[string]*tfpb.AttrValue{"dtype": graph.AttrType(tensor.String),
		"value": graph.AttrTensor(tensor.FromStrings(tensor.Shape{}, []string{"Invalid start/limit/delta:"}))})
	if err != nil {
		return nil, nil, err
	}
	// ForOp's message, "Invalid start/limit/delta: 0 5 -1", inside the
	// Assert's brackets.
	parts := []graph.Output{msg}
	for k, v := range []graph.Output{start, limit, delta} {
		str, err := op("AsString", "as_string_"+strconv.Itoa(k), []graph.Output{v}, nil, nil, i32)
		if err != nil {
			return nil, nil, err
		}
		parts = append(parts, str)
	}
	joined, err := op("StringJoin", "invalid_message_join", parts, nil, nil,
		map[string]*tfpb.AttrValue{"N": graph.AttrInt(4), "separator": graph.AttrString(" ")})
	if err != nil {
		return nil, nil, err
	}
	check, err := l.node("Assert", l.name(n.Name+"/check"), dev, []graph.Output{valid, joined}, nil, nil,
		map[string]*tfpb.AttrValue{"T": graph.AttrTypeList([]tensor.DType{tensor.String})})
	if err != nil {
		return nil, nil, err
	}

	vars := append([]graph.Output{start, limit, delta}, ins[3:]...)
	constant := make([]bool, len(vars))
	constant[1], constant[2] = true, true
	cond := func(cur []graph.Output, src *graph.Node) (graph.Output, []*graph.Node, error) {
		z, err := zero("cond/zero", []*graph.Node{src})
		if err != nil {
			return graph.Output{}, nil, err
		}
		pos, err := op("Greater", "cond/delta_pos", []graph.Output{cur[2], z}, nil, nil, i32)
		if err != nil {
			return graph.Output{}, nil, err
		}
		lt, err := op("Less", "cond/less", []graph.Output{cur[0], cur[1]}, nil, nil, i32)
		if err != nil {
			return graph.Output{}, nil, err
		}
		gt, err := op("Greater", "cond/greater", []graph.Output{cur[0], cur[1]}, nil, nil, i32)
		if err != nil {
			return graph.Output{}, nil, err
		}
		c, err := op("Select", "cond/continue", []graph.Output{pos, lt, gt}, nil, nil, map[string]*tfpb.AttrValue{"T": graph.AttrType(tensor.Bool)})
		return c, nil, err
	}
	body := func(bins []graph.Output, pivot *graph.Node) ([]graph.Output, []*graph.Node, error) {
		args := append([]graph.Output{bins[0]}, bins[3:]...)
		brets, bctrls, err := l.inline(n.Name, l.name(n.Name+"/body"), dev, bodyF.GetName(), bodyF.GetAttr(), args, nil, []*graph.Node{pivot})
		if err != nil {
			return nil, nil, err
		}
		if len(brets) != len(ins)-3 {
			return nil, nil, status.InvalidArg("Node '%s' (op %s): For loop body returned %d arguments. Expected: %d", n.Name, n.Op, len(brets), len(ins)-3)
		}
		for i, r := range brets {
			if r.DType() != ins[3+i].DType() {
				return nil, nil, status.InvalidArg("Node '%s' (op %s): body '%s' returns %v for loop variable %d of type %v", n.Name, n.Op, bodyF.GetName(), r.DType(), i, ins[3+i].DType())
			}
		}
		next, err := op("AddV2", "next_i", []graph.Output{bins[0], bins[2]}, nil, nil, i32)
		if err != nil {
			return nil, nil, err
		}
		return append([]graph.Output{next, bins[1], bins[2]}, brets...), bctrls, nil
	}
	exits, err := l.loop(n, vars, append(append([]*graph.Node(nil), ctrls...), check), constant, cond, body)
	if err != nil {
		return nil, nil, err
	}
	outs, done, err := l.standIn(n.Name, dev, exits[3:], nil, []*graph.Node{exits[0].Node})
	if err != nil {
		return nil, nil, err
	}
	return outs, done, checkOuts(n, outs)
}
