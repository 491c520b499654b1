package exec

import (
	"mstream/kernels"
	"mstream/tensor"
)

// Shape arithmetic on the host.
//
// TF registers the GPU kernels of int32 shape arithmetic (ConcatV2,
// StridedSlice, ExpandDims, Pack, GatherV2, the int32 binaries and
// reductions, ...) as the CPU's kernels with every argument in host
// memory: an int32 value on a GPU device lives in host memory, so a
// chain Shape -> StridedSlice -> ConcatV2 -> Reshape's shape input never
// touches the device and the step never waits for it. mstream's GPU
// kernels serve int32 on the device, which is what an int32 tensor the
// device computed wants (no copy back), but a shape chain placed there
// is copied up from the host and its result copied back and waited for
// when a HostMemory input (Reshape's shape, UnsortedSegmentSum's
// num_segments) or a host kernel reads it: the device step blocks, its
// streams drain, and over several stream groups the one launching
// goroutine stalls with them.
//
// So a node whose outputs are all int32 and whose data inputs are all
// values the host already holds (host nodes' outputs and constants, never
// feeds) runs on the host, as TF's HostMemory kernels do. Feeds are left
// out: a host node reading a feed's contents would keep the plan off CUDA
// graphs (graphIneligible), which a GPU kernel reading it does not.
// Stateful ops keep their placement, and so do plans with v1 control
// flow (their frame driver sees the placement the kernels ask for).
// Plans are bound in topological order, so a producer's placement is
// known when its consumers are bound and a whole chain moves together.

// hostShape says whether plan node i, not yet bound, is int32 shape
// arithmetic over host values that should run on the host.
func (p *Plan) hostShape(i int) bool {
	pn := &p.nodes[i]
	n := pn.node
	if p.deadness || len(pn.inputs) == 0 || len(n.OutTypes) == 0 || n.Def.GetIsStateful() {
		return false
	}
	for _, t := range n.OutTypes {
		if t != tensor.Int32 {
			return false
		}
	}
	for _, r := range pn.inputs {
		if r.Node < 0 {
			return false // a feed
		}
		if w := p.nodes[r.Node].where; w != onHost && w != onConst {
			return false
		}
		if p.nodes[r.Node].kernel == nil {
			return false // not bound yet (no topological order)
		}
	}
	_, err := kernels.Lookup(n, kernels.CPU)
	return err == nil
}

// Kernels that read their device values back.
//
// A GPU kernel whose output shape depends on its data (Unique, Where:
// kernels.Def.SyncsHost) copies its input back and waits for it as it
// runs. Where the host already holds that input (a feed, a host node's
// output, a constant, or such a value reshaped on the GPU: a Forwards
// kernel's output keeps its input's host copy, gstep.nodeOn), the host
// kernel reads it there and the step does not wait: the training
// example's sparse updates run Unique over the fed ids. Feeds are allowed
// here, unlike for hostShape: a plan with such a kernel is never captured
// into a CUDA graph anyway.

// hostSync says whether plan node i, not yet bound, has a GPU kernel (def,
// bind's lookup of it, nil when it has none) that reads its device values
// back while every data input is held on the host, so it should run on
// the host.
func (p *Plan) hostSync(i int, def *kernels.Def) bool {
	pn := &p.nodes[i]
	n := pn.node
	if p.deadness || len(pn.inputs) == 0 || def == nil || !def.SyncsHost {
		return false
	}
	for _, r := range pn.inputs {
		if !p.hostHeld(r) {
			return false
		}
	}
	_, err := kernels.Lookup(n, kernels.CPU)
	return err == nil
}

// hostHeld says whether a device step holds value r on the host without
// copying it back: a feed, a constant, a bound host node's output, or the
// output of a GPU node that forwards a host-held input (pn.fwd).
func (p *Plan) hostHeld(r ref) bool {
	for {
		if r.Node < 0 {
			return true
		}
		src := &p.nodes[r.Node]
		switch {
		case src.kernel == nil:
			return false // not bound yet
		case src.where == onHost || src.where == onConst:
			return true
		case src.fwd && r.Index == 0:
			r = src.inputs[0]
		default:
			return false
		}
	}
}

// forwardHost is the host copy of a forwarding GPU kernel's output: its
// input's host bytes under the output's shape (nil when the input has no
// host copy, or the sizes differ).
func forwardHost(in, out *tensor.Tensor) *tensor.Tensor {
	if in == nil || out == nil || in.DType != out.DType || len(in.Buf) != len(out.Buf) || in.Vars != nil || in.Strs != nil {
		return nil
	}
	return &tensor.Tensor{DType: out.DType, Shape: out.Shape.Clone(), Buf: in.Buf}
}
