package exec

import (
	"mstream/status"
	"mstream/tensor"
)

// Dead tensors (TF's v1 conditionals, without frames).
//
// A Switch forwards its data to the output its predicate picks; the other
// output is dead (a nil tensor in the step's output slots). Deadness then
// spreads as in TF's executor: a node with a dead data input or a dead
// control predecessor is dead itself, does not run, and all its outputs
// are dead; a Merge is dead only when every data input is (its control
// inputs' deadness does not count) and otherwise forwards a live input
// with its index; a ControlTrigger is never dead. A plan is acyclic here,
// so a Merge waits for all its inputs, live or dead, and forwards the
// lowest-indexed live one (TF forwards whichever arrives first; with one
// live input, as a cond has, that is the same). Fetching a dead tensor
// fails as TF fails, INVALID_ARGUMENT "Retval[i] does not have value",
// here also naming the tensor. Every step carries deadness through the
// one frame driver (frames.go): the host scheduler, host streams and the
// device step.

type flowKind uint8

const (
	flowNone    flowKind = iota
	flowSwitch           // Switch, RefSwitch: one output live, the other dead
	flowMerge            // Merge, RefMerge: live if any data input is
	flowTrigger          // ControlTrigger: never dead
	// The frame ops (frames.go); flowEnter must stay the first of them.
	flowEnter    // Enter, RefEnter: into a child frame
	flowExit     // Exit, RefExit: back to the parent frame
	flowNext     // NextIteration, RefNextIteration: to the next iteration
	flowLoopCond // LoopCond: an identity on the predicate
)

func flowOf(op string) flowKind {
	switch op {
	case "Switch", "RefSwitch":
		return flowSwitch
	case "Merge", "RefMerge":
		return flowMerge
	case "ControlTrigger":
		return flowTrigger
	case "Enter", "RefEnter":
		return flowEnter
	case "Exit", "RefExit":
		return flowExit
	case "NextIteration", "RefNextIteration":
		return flowNext
	case "LoopCond":
		return flowLoopCond
	}
	return flowNone
}

// isDead says whether node pn, with data inputs ins (nil: dead), is dead
// given which nodes are.
func isDead(pn *planNode, ins []*tensor.Tensor, deadNode []bool) bool {
	switch pn.flow {
	case flowTrigger:
		return false
	case flowMerge:
		for _, t := range ins {
			if t != nil {
				return false
			}
		}
		return len(ins) > 0
	}
	for _, t := range ins {
		if t == nil {
			return true
		}
	}
	for _, c := range pn.ctrl {
		if deadNode[c] {
			return true
		}
	}
	return false
}

// deadFetch is TF's error for fetch k whose tensor is dead.
func deadFetch(p *Plan, k int) error {
	return status.InvalidArg("Retval[%d] does not have value: fetch '%s' is dead (it depends on the untaken branch of a Switch)", k, fetchName(p, k))
}

// Deadness reports whether the plan holds a Switch or a frame op (a v1
// while loop), so that a step may make dead tensors.
func (p *Plan) Deadness() bool { return p.deadness }
