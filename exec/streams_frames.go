package exec

import (
	"context"
	"time"

	"mstream/device"
	"mstream/groups"
	"mstream/kernels"
	"mstream/status"
	"mstream/tensor"
	"mstream/trace"
)

// runStreamFrames is Run on host streams for a plan that can make dead
// tensors or has frames (TF's v1 cond and while_loop). The frame driver
// of the pool executor (frameRun, frames.go) decides, as TF's executor
// does, the frame, iteration and deadness of every node. Over several
// groups it runs on the calling goroutine and each live node runs as an
// item on the compute stream of its group (sr.Assign, so node-level
// assignment holds inside loops too), the driver waiting for that item
// before it hands the outputs on: a Switch's predicate and a loop's
// condition are read after the item that made them, and no value crosses
// streams without the host having waited for it, so the step needs no
// events and the jitter's delays cannot reorder it. With one group the
// whole drive is one item of its compute stream, the kernels inline (a
// round trip to a stream per node would cost more than the node). Nodes
// run one at a time, in the order they become ready (parallel_iterations
// bounding a frame's iterations in flight). Outputs are Go memory, as on
// the pool executor: a loop's values live for a number of iterations the
// plan cannot know.
func (p *Plan) runStreamFrames(ctx context.Context, sr *Runtime, feeds []*tensor.Tensor, opts Options) ([]*tensor.Tensor, *trace.Step, error) {
	if sr.Assign != nil && len(sr.Assign) != len(p.nodes) {
		return nil, nil, status.Errorf(status.Internal, "stream step: %d group assignments for %d nodes", len(sr.Assign), len(p.nodes))
	}
	var tr traceBuf
	// One group: the whole drive is one item of its compute stream, every
	// kernel inline (a round trip to the stream per node costs more than
	// the node). Several groups: the driver runs here and hands each node
	// to its group's stream; it must not run on a stream itself, since
	// waiting there for another stream could wait on a stream that waits
	// on it.
	home := sr.Groups[0]
	inline := true
	for _, a := range sr.Assign {
		if a != 0 {
			inline = false
			break
		}
	}
	var kstep kernels.Step // the step's temporary variables
	kernel := func(g *groups.Group, st device.Stream, pn *planNode, ins []*tensor.Tensor) ([]*tensor.Tensor, error) {
		var start time.Time
		if opts.Trace {
			start = time.Now()
		}
		k := kernelCall{step: &kstep}
		outs, err := k.run(pn, ins, g.Intra)
		if err != nil || !opts.Trace {
			return outs, err
		}
		var bytes int64
		for _, o := range outs {
			if o != nil {
				bytes += o.ByteSize()
			}
		}
		tr.mu.Lock()
		tr.slices = append(tr.slices, trace.Slice{ID: len(tr.slices), Name: pn.node.Name, Op: pn.node.Op, Kind: trace.Kernel,
			Device: g.Device.Name(), Group: int(g.ID), Stream: int(st.ID()), Role: role(g, st, "compute"),
			Start: start, End: time.Now(), Bytes: bytes})
		tr.mu.Unlock()
		return outs, nil
	}
	exec := func(i int32, pn *planNode, ins []*tensor.Tensor) ([]*tensor.Tensor, error) {
		if pn.isConst {
			// Once per step on the driving goroutine (the driver keeps
			// the value for every iteration).
			var k kernelCall
			return k.run(pn, nil, kernels.Serial{})
		}
		if inline {
			return kernel(home, home.Compute, pn, ins)
		}
		g := sr.Groups[sr.Assign[i]]
		st := g.Compute
		var outs []*tensor.Tensor
		var err error
		done := make(chan struct{})
		if eerr := device.Enqueue(st, func() {
			defer close(done)
			outs, err = kernel(g, st, pn, ins)
		}); eerr != nil {
			return nil, status.Wrap(eerr, "node '%s': stream %d of %s", pn.node.Name, st.ID(), g.Device.Name())
		}
		<-done
		return outs, err
	}
	r := newFrameRun(p, feeds, exec)
	var err error
	if inline {
		done := make(chan struct{})
		if eerr := device.Enqueue(home.Compute, func() {
			defer close(done)
			err = r.drive(ctx)
		}); eerr != nil {
			return nil, nil, status.Wrap(eerr, "stream %d of %s", home.Compute.ID(), home.Device.Name())
		}
		<-done
	} else {
		err = r.drive(ctx)
	}
	if err != nil {
		return nil, nil, err
	}
	var st *trace.Step
	if opts.Trace {
		st = tr.step(opts.Run, int(sr.Groups[0].ID))
	}
	out, err := r.fetches()
	if err != nil {
		return nil, nil, err
	}
	return out, st, nil
}
