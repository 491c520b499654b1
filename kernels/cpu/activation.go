package cpu

import (
	"math"

	"mstream/kernels"
	"mstream/status"
	"mstream/tensor"
)

// LogSoftmax over the last axis: x - max - log(sum(exp(x - max))), in
// float64 per row. The element activations (Relu6, Elu, Selu, Softplus,
// Softsign, LeakyRelu) live in elementwise_unary.go.

func init() {
	reg("LogSoftmax", floatTypes, nil, fn(logSoftmax))
}

func logSoftmax(ctx *kernels.Context) error {
	in := ctx.Input(0)
	if len(in.Shape) < 1 {
		return ctx.Errorf(status.InvalidArgument, "logits must have >= 1 dimension, got %v", in.Shape)
	}
	o, err := ctx.Allocate(0, in.Shape)
	if err != nil {
		return err
	}
	d := int(in.Shape[len(in.Shape)-1])
	if o.NumElements() == 0 || d == 0 {
		return nil
	}
	switch in.DType {
	case tensor.Float:
		if !vecSoftmax(ctx, in.F32(), o.F32(), d, true) {
			logSoftmaxRows(ctx, in.F32(), o.F32(), d)
		}
	case tensor.Double:
		logSoftmaxRows(ctx, in.F64(), o.F64(), d)
	default:
		out := make([]float32, o.NumElements())
		if !vecSoftmax(ctx, toF32(in), out, d, true) {
			logSoftmaxRows(ctx, toF32(in), out, d)
		}
		storeF32(o, out)
	}
	return nil
}

func logSoftmaxRows[T float32 | float64](ctx *kernels.Context, x, o []T, d int) {
	ctx.For(len(x)/d, float64(d)*20, func(lo, hi int) {
		for r := lo; r < hi; r++ {
			xr, or := x[r*d:(r+1)*d], o[r*d:(r+1)*d]
			mx := math.Inf(-1)
			for _, v := range xr {
				if f := float64(v); f > mx || f != f {
					mx = f
				}
			}
			var sum float64
			for _, v := range xr {
				sum += math.Exp(float64(v) - mx)
			}
			ls := math.Log(sum)
			for i, v := range xr {
				or[i] = T(float64(v) - mx - ls)
			}
		}
	})
}
