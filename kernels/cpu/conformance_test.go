package cpu

import (
	"testing"

	"mstream/graph"
	"mstream/kernels"
	"mstream/kernels/kerneltest"
	"mstream/resource"
	"mstream/tensor"
)

// cpuRunner runs kernels through the registry with a pool that really
// splits work, as the executor would. Stateful kernels are bound to rm
// (Fresh), every output read by value, as a plan binds them.
type cpuRunner struct {
	rm   *resource.Manager
	step *kernels.Step
}

func (cpuRunner) Device() string { return kernels.CPU }

// Fresh gives a runner whose calls share new resources and one step, as
// the nodes of one Run do.
func (cpuRunner) Fresh() kerneltest.Runner { return cpuRunner{resource.NewManager(), &kernels.Step{}} }

func (r cpuRunner) Run(n *graph.Node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	k, err := kernels.Make(n, kernels.CPU)
	if err != nil {
		return nil, err
	}
	if st, ok := k.(kernels.Stateful); ok && r.rm != nil {
		byValue := make([]bool, len(n.OutTypes))
		for i := range byValue {
			byValue[i] = true
		}
		if k, err = st.Bind(kernels.Binding{Resources: r.rm, ReadByValue: byValue}); err != nil {
			return nil, err
		}
	}
	ctx := &kernels.Context{Node: n, Inputs: in, Outputs: make([]*tensor.Tensor, len(n.OutTypes)), Pool: pool{}, Alloc: poisoned, Step: r.step}
	if err := k.Compute(ctx); err != nil {
		return nil, err
	}
	return ctx.Outputs, nil
}

// poisoned allocates output buffers filled as a recycled buffer from the
// session's allocator may be (the executor does not clear outputs): a
// kernel that leaves an element unwritten, or accumulates into its output
// without clearing it first, shows a wrong value. Floating-point outputs
// are all 0xFF bytes, a NaN in every float and complex dtype, so an
// accumulation turns NaN rather than off by the 1e-16 that 0xA5A5A5A5
// means as a float32; integers and bools get 0xA5, far from any value a
// case expects.
func poisoned(dt tensor.DType, shape tensor.Shape) (*tensor.Tensor, error) {
	t := tensor.New(dt, shape)
	b := byte(0xA5)
	if dt.IsFloat() || dt.IsComplex() {
		b = 0xFF
	}
	for i := range t.Buf {
		t.Buf[i] = b
	}
	return t, nil
}

// TestConformance runs the shared suite on the CPU kernels.
func TestConformance(t *testing.T) {
	// Every CPU kernel has a family, and every dtype a kernel registers
	// (and its OpDef allows) is drawn by a passing case of it: half and
	// bfloat16 of the elementwise, cast and array ops, the unsigned types
	// of Cumsum, Cumprod, MaxPool(V2), ScatterNd and TopKV2.
	kerneltest.Run(t, cpuRunner{}, kerneltest.Options{})
}
