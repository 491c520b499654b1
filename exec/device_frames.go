package exec

import (
	"context"
	"time"

	"mstream/status"
	"mstream/tensor"
)

// launchFrames is the device step's launch for a plan with dead tensors or
// frames (TF's v1 cond and while_loop). The frame driver of the other
// steps (frameRun, frames.go) runs on the launching goroutine and decides
// the frame, iteration and deadness of every node; its values are gvals,
// so a loop-carried device value never leaves the device. Each live node
// is launched as in an ordinary device step, on its group's compute
// stream (Assign holds in every frame and iteration), with the same
// cross-group waits; GPU launches stay asynchronous. The control-flow ops
// run no kernel: Enter, Exit, NextIteration and LoopCond pass their value
// on, Merge passes its live input on with its index (a host scalar), and
// Switch reads its predicate on the host, as TF keeps it in host memory:
// a device predicate is copied back on the compute stream after its
// producer and waited for, the one point where a step with control flow
// blocks. Every device buffer is held until the step ends (keep): a
// loop's values are read a number of times the static use counts cannot
// know.
func (s *devStep) launchFrames(ctx context.Context) error {
	p := s.plan
	s.switchTo(0)
	if err := s.launchFeeds(); err != nil {
		return err
	}
	feeds := make([]*gval, len(s.feeds))
	for k := range s.feeds {
		feeds[k] = &s.feeds[k]
	}
	if s.multi {
		fed := s.clk.tick(0) // the feeds' copies: home compute waited for them
		s.launched(fed)
		for k := range s.feeds {
			if dt := s.feeds[k].dev; dt != nil {
				s.made[dt] = fed
			}
		}
	}
	start, nodes := time.Now(), 0
	r := newFrameRun(p, feeds, func(i int32, pn *planNode, ins []*gval) ([]*gval, error) {
		s.switchTo(s.groupOf(int(i)))
		if pn.flow != flowNone {
			return s.flowOp(pn, ins)
		}
		if s.multi && pn.where != onConst {
			if err := s.waitFrameInputs(int(i), ins); err != nil {
				return nil, err
			}
		}
		var before []bool
		if s.multi {
			before = make([]bool, len(ins))
			for j, v := range ins {
				before[j] = v.dev != nil
			}
		}
		vs, err := s.nodeOn(int(i), ins)
		if err != nil {
			return nil, err
		}
		if s.multi && pn.where != onConst {
			var copied point
			for j, v := range ins {
				if !before[j] && v.dev != nil {
					// Copied in on this compute stream for this node.
					if copied.seq == 0 {
						copied = s.clk.tick(s.cur)
					}
					s.made[v.dev] = copied
				}
			}
			if pn.where == onGPU {
				pt := s.clk.tick(s.cur)
				s.at[i] = pt
				s.launched(pt)
				for j := range vs {
					if vs[j].dev != nil {
						s.made[vs[j].dev] = pt
					}
				}
			}
		}
		if pn.where == onGPU {
			nodes++
		}
		outs := make([]*gval, len(vs))
		for j := range vs {
			outs[j] = &vs[j]
		}
		return outs, nil
	})
	err := r.drive(ctx)
	s.gs[0].g.CountLaunch(time.Since(start), nodes)
	if err != nil {
		return err
	}
	s.switchTo(0)
	if s.multi {
		if err := s.join(); err != nil {
			return err
		}
	}
	s.joined = true
	// The fetched values go into the plan's table, where the fetch copies
	// read them.
	for k, f := range p.fetches {
		if f.Node < 0 {
			continue
		}
		o := r.rootOut[f.Node]
		if o == nil || o[f.Index] == nil {
			return deadFetch(p, k)
		}
		if s.vals[f.Node] == nil {
			s.vals[f.Node] = make([]gval, len(o))
		}
		s.vals[f.Node][f.Index] = *o[f.Index]
	}
	return s.launchFetches()
}

// flowOp runs a control-flow op of a device step: it passes values on and
// reads a Switch's predicate on the host.
func (s *devStep) flowOp(pn *planNode, ins []*gval) ([]*gval, error) {
	n := pn.node
	switch pn.flow {
	case flowTrigger:
		return make([]*gval, len(n.OutTypes)), nil
	case flowMerge:
		for j, v := range ins {
			if v != nil {
				return []*gval{v, {host: tensor.ScalarI32(int32(j))}}, nil
			}
		}
		return nil, status.Errorf(status.Internal, "node '%s' (op %s) ran with every input dead", n.Name, n.Op)
	case flowSwitch:
		pv := ins[1]
		if s.multi && pv.host == nil {
			if pt, ok := s.made[pv.dev]; ok {
				if err := s.waitFor(pt); err != nil {
					return nil, status.Wrap(err, "node '%s': ordering group %d after its predicate", n.Name, s.g.Index)
				}
			}
		}
		pred, err := s.hostOf(pv, inName{n: n, j: 1, note: " (the predicate)"})
		if err != nil {
			return nil, err
		}
		if len(pred.Shape) != 0 || pred.DType != tensor.Bool {
			return nil, status.InvalidArg("node '%s' (op %s): The second input must be a scalar, but it has shape %v", n.Name, n.Op, pred.Shape)
		}
		if pred.Buf[0] != 0 {
			return []*gval{nil, ins[0]}, nil
		}
		return []*gval{ins[0], nil}, nil
	case flowLoopCond:
		v := ins[0]
		t := v.host
		if t == nil {
			t = v.dev
		}
		if len(t.Shape) != 0 {
			return nil, status.InvalidArg("node '%s' (op %s): LoopCond: the predicate must be a scalar, but it has shape %v", n.Name, n.Op, t.Shape)
		}
		return []*gval{v}, nil
	}
	// Enter, Exit, NextIteration: the driver moves the value between
	// frames and iterations.
	return []*gval{ins[0]}, nil
}

// waitFrameInputs is waitInputs for a node of a step with frames: its
// predecessors' latest launches (a later iteration's only orders more),
// and the device values it reads, wherever they were made.
func (s *devStep) waitFrameInputs(i int, ins []*gval) error {
	pn := &s.plan.nodes[i]
	for _, pr := range pn.preds {
		if err := s.waitFor(s.at[pr]); err != nil {
			return status.Wrap(err, "node '%s': ordering group %d after its inputs", pn.node.Name, s.g.Index)
		}
	}
	for j, v := range ins {
		if v.dev == nil {
			continue
		}
		wants, may := pn.wantsDevice(j)
		if !wants && (may || v.host != nil) {
			continue // the host copy (or only the shape) is read
		}
		if pt, ok := s.made[v.dev]; ok {
			if err := s.waitFor(pt); err != nil {
				return status.Wrap(err, "node '%s': ordering group %d after its inputs", pn.node.Name, s.g.Index)
			}
		}
	}
	return nil
}
