package cuda

import (
	"mstream/kernels/cpu"
)

// StridedSlice: TF's ValidateStridedSliceOp on the host, through the CPU
// kernel's own validation (cpu.StridedSliceArgs), then one strided map on
// the device.

func stridedSliceGPU(k kctx, m cpu.StridedSliceMasks) error {
	in := k.Input(0)
	spec, err := cpu.StridedSliceArgs(k.Context, m)
	if err != nil {
		return err
	}
	o, err := k.Allocate(0, spec.Out)
	if err != nil {
		return err
	}
	// The map runs over the input dims (new axes and shrunk dims are
	// size 1 there), so the element order is the output's.
	st := rowStrides(in.Shape)
	md := make([]mdim, len(spec.Size))
	for i := range md {
		md[i] = mdim{out: spec.Size[i], istr: st[i], start: spec.Begin[i], step: spec.Stride[i]}
	}
	return moveLaunch(k, o, in, nil, md)
}
