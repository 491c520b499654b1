package cpu

import (
	"math"

	"mstream/graph"
	"mstream/kernels"
	"mstream/kernels/cpu/dnnl"
	"mstream/status"
	"mstream/tensor"
)

// Softmax and LogSoftmax over the last axis (LogSoftmax: x - max -
// log(sum(exp(x - max))), in float64 per row). The element activations (Relu6, Elu, Selu, Softplus,
// Softsign, LeakyRelu) live in elementwise_unary.go.

func init() {
	for _, op := range []string{"Softmax", "LogSoftmax"} {
		log := op == "LogSoftmax"
		reg(op, floatTypes, nil, func(n *graph.Node) (kernels.Kernel, error) {
			prims := &dnnl.Cache[dnnl.SoftmaxDesc]{Node: n.Name}
			return kernels.WithClose(func(ctx *kernels.Context) error { return softmax(ctx, log, prims) }, prims), nil
		})
	}
}

// SoftmaxArgs checks Softmax's and LogSoftmax's logits (at least a
// vector; the op runs along the last dim); the CPU and GPU kernels both
// validate through it.
func SoftmaxArgs(ctx *kernels.Context) error {
	if in := ctx.Input(0); len(in.Shape) < 1 {
		return ctx.Errorf(status.InvalidArgument, "logits must have >= 1 dimension, got %v", in.Shape)
	}
	return nil
}

// softmaxDNNLCols is the shortest row oneDNN's softmax takes: below it
// package vec's rows were as fast or faster (BenchmarkDNNL: 4096 rows of
// 64, 0.93 ms on oneDNN against 0.87; 16 of 1000, 78 us against 68; 256 of
// 512, 0.45 ms against 0.56).
const softmaxDNNLCols = 256

// softmax is Softmax or, with log, LogSoftmax, row by row of the last
// dim: float32 through oneDNN when prims is set and it is loaded, else
// through package vec where it can.
func softmax(ctx *kernels.Context, log bool, prims *dnnl.Cache[dnnl.SoftmaxDesc]) error {
	in := ctx.Input(0)
	if err := SoftmaxArgs(ctx); err != nil {
		return err
	}
	o, err := ctx.Allocate(0, in.Shape)
	if err != nil {
		return err
	}
	d := int(in.Shape[len(in.Shape)-1])
	if o.NumElements() == 0 || d == 0 {
		return nil
	}
	rows := func(x, o []float32) {
		switch {
		case vecSoftmax(ctx, x, o, d, log):
		case log:
			logSoftmaxRows(ctx, x, o, d)
		default:
			softmaxRows(ctx, x, o, d)
		}
	}
	switch in.DType {
	case tensor.Float:
		if prims != nil && d >= softmaxDNNLCols && dnnl.Available() {
			desc := dnnl.SoftmaxDesc{Rows: len(in.F32()) / d, Cols: d, Log: log}
			if ok, err := runPrim(ctx, prims, desc, in.F32(), o.F32()); ok {
				if err == nil {
					nanRows(in.F32(), o.F32(), d, rows)
				}
				return err
			}
		}
		rows(in.F32(), o.F32())
	case tensor.Double:
		if log {
			logSoftmaxRows(ctx, in.F64(), o.F64(), d)
		} else {
			softmaxRows(ctx, in.F64(), o.F64(), d)
		}
	default:
		out, err := kernels.Scratch[float32](ctx, o.NumElements())
		if err != nil {
			return err
		}
		rows(toF32(in), out)
		storeF32(o, out)
	}
	return nil
}

func logSoftmaxRows[T float32 | float64](ctx *kernels.Context, x, o []T, d int) {
	ctx.For(len(x)/d, float64(d)*20, kernels.StartLoop, func(lo, hi int) {
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

// nanRows runs rows again on each row of o that holds a NaN: oneDNN's
// maximum skips a NaN input, leaving the rest of its row finite where TF's
// (and package vec's) row is all NaN. The scan reads o once, serially
// (rows calls ctx.For itself).
func nanRows(x, o []float32, d int, rows func(x, o []float32)) {
	for r := 0; r < len(o)/d; r++ {
		or := o[r*d : (r+1)*d]
		for _, v := range or {
			if v != v {
				rows(x[r*d:(r+1)*d], or)
				break
			}
		}
	}
}
