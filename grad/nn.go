package grad

import (
	"mstream/graph"
)

// Gradients of the neural-network ops, after TF's cc/gradients/nn_grad.cc
// and python/ops/nn_grad.py.

func init() {
	// Activations whose gradient kernel takes (dy, x).
	for op, g := range map[string]string{"Relu": "ReluGrad", "Relu6": "Relu6Grad", "Softplus": "SoftplusGrad"} {
		g := g
		register(func(b *Builder, n *graph.Node, dy []graph.Output) []graph.Output {
			return []graph.Output{b.Op(g, nil, dy[0], in(n, 0))}
		}, op)
	}
	// Activations whose gradient kernel takes (dy, y).
	for op, g := range map[string]string{"Elu": "EluGrad", "Selu": "SeluGrad"} {
		g := g
		register(func(b *Builder, n *graph.Node, dy []graph.Output) []graph.Output {
			return []graph.Output{b.Op(g, nil, dy[0], n.Output(0))}
		}, op)
	}
	register(func(b *Builder, n *graph.Node, dy []graph.Output) []graph.Output {
		return []graph.Output{b.Op("LeakyReluGrad", copyAttrs(n, "alpha"), dy[0], in(n, 0))}
	}, "LeakyRelu")
	register(func(b *Builder, n *graph.Node, dy []graph.Output) []graph.Output {
		// dx = (dy - sum(dy * y, -1, keepdims)) * y
		y := n.Output(0)
		s := b.Op("Sum", A{"keep_dims": graph.AttrBool(true)}, b.Op("Mul", nil, dy[0], y), b.I32(-1))
		return []graph.Output{b.Op("Mul", nil, b.Op("Sub", nil, dy[0], s), y)}
	}, "Softmax")
	register(func(b *Builder, n *graph.Node, dy []graph.Output) []graph.Output {
		// dx = dy - sum(dy, -1, keepdims) * exp(y)
		s := b.Op("Sum", A{"keep_dims": graph.AttrBool(true)}, dy[0], b.I32(-1))
		return []graph.Output{b.Op("Sub", nil, dy[0], b.Op("Mul", nil, s, b.Op("Exp", nil, n.Output(0))))}
	}, "LogSoftmax")
	register(xentGrad, "SoftmaxCrossEntropyWithLogits")
	register(func(b *Builder, n *graph.Node, dy []graph.Output) []graph.Output {
		dx := b.Op("Mul", nil, b.Op("ExpandDims", nil, dy[0], b.ScalarI32(-1)), n.Output(1))
		return []graph.Output{xentSecondOrder(b, n, dx, dy[1]), none}
	}, "SparseSoftmaxCrossEntropyWithLogits")
	register(func(b *Builder, n *graph.Node, dy []graph.Output) []graph.Output {
		return []graph.Output{dy[0], b.Op("BiasAddGrad", copyAttrs(n, "data_format"), dy[0])}
	}, "BiasAdd")
	register(func(b *Builder, n *graph.Node, dy []graph.Output) []graph.Output {
		return []graph.Output{dy[0], b.Op("Sum", nil, dy[0], b.I32(0))}
	}, "BiasAddV1")
	register(func(b *Builder, n *graph.Node, dy []graph.Output) []graph.Output {
		attrs := copyAttrs(n, "strides", "padding", "explicit_paddings", "dilations", "use_cudnn_on_gpu", "data_format")
		x, f := in(n, 0), in(n, 1)
		dx := b.Op("Conv2DBackpropInput", attrs, b.Op("Shape", nil, x), f, dy[0])
		df := b.Op("Conv2DBackpropFilter", attrs, x, b.Op("Shape", nil, f), dy[0])
		return []graph.Output{dx, df}
	}, "Conv2D")
	register(func(b *Builder, n *graph.Node, dy []graph.Output) []graph.Output {
		attrs := copyAttrs(n, "strides", "padding", "explicit_paddings", "dilations", "data_format")
		x, f := in(n, 0), in(n, 1)
		dx := b.Op("DepthwiseConv2dNativeBackpropInput", attrs, b.Op("Shape", nil, x), f, dy[0])
		df := b.Op("DepthwiseConv2dNativeBackpropFilter", attrs, x, b.Op("Shape", nil, f), dy[0])
		return []graph.Output{dx, df}
	}, "DepthwiseConv2dNative")
	register(func(b *Builder, n *graph.Node, dy []graph.Output) []graph.Output {
		attrs := copyAttrs(n, "ksize", "strides", "padding", "explicit_paddings", "data_format")
		return []graph.Output{b.Op("MaxPoolGrad", attrs, in(n, 0), n.Output(0), dy[0])}
	}, "MaxPool")
	register(func(b *Builder, n *graph.Node, dy []graph.Output) []graph.Output {
		attrs := copyAttrs(n, "ksize", "strides", "padding", "data_format")
		return []graph.Output{b.Op("AvgPoolGrad", attrs, b.Op("Shape", nil, in(n, 0)), dy[0])}
	}, "AvgPool")
	register(func(b *Builder, n *graph.Node, dy []graph.Output) []graph.Output {
		return []graph.Output{b.Op("Mul", nil, in(n, 0), dy[0])}
	}, "L2Loss")
	register(batchNormGrad, "FusedBatchNorm", "FusedBatchNormV2", "FusedBatchNormV3")
}

// xentGrad: d logits = dloss[:, None] * backprop, d labels =
// dloss[:, None] * -log_softmax(logits) (TF's SoftmaxCrossEntropyWithLogits
// gradient), plus the second-order term when the backprop output has a
// gradient of its own.
func xentGrad(b *Builder, n *graph.Node, dy []graph.Output) []graph.Output {
	e := b.Op("ExpandDims", nil, dy[0], b.ScalarI32(-1))
	dx := xentSecondOrder(b, n, b.Op("Mul", nil, e, n.Output(1)), dy[1])
	dl := b.Op("Mul", nil, e, b.Op("Neg", nil, b.Op("LogSoftmax", nil, in(n, 0))))
	return []graph.Output{dx, dl}
}

// xentSecondOrder adds (g - sum(g * softmax, -1, keepdims)) * softmax for
// a gradient g of the backprop output, unless g is the ZerosLike the walk
// puts in for an output without gradient (TF's IsZero check).
func xentSecondOrder(b *Builder, n *graph.Node, dx, g graph.Output) graph.Output {
	if g.Node.Op == "ZerosLike" {
		return dx
	}
	sm := b.Op("Softmax", nil, in(n, 0))
	s := b.Op("Sum", A{"keep_dims": graph.AttrBool(true)}, b.Op("Mul", nil, g, sm), b.I32(-1))
	return b.Op("AddV2", nil, dx, b.Op("Mul", nil, b.Op("Sub", nil, g, s), sm))
}

// batchNormGrad feeds FusedBatchNormGrad(V2, V3) the statistics the
// forward op normalised with: the batch's (reserve spaces 1 and 2) in
// training, the population's (inputs 3 and 4) otherwise. Mean and
// variance get no gradient (python's _BaseFusedBatchNormGrad).
func batchNormGrad(b *Builder, n *graph.Node, dy []graph.Output) []graph.Output {
	op := map[string]string{"FusedBatchNorm": "FusedBatchNormGrad", "FusedBatchNormV2": "FusedBatchNormGradV2", "FusedBatchNormV3": "FusedBatchNormGradV3"}[n.Op]
	training := n.Attrs["is_training"] == nil || n.Attrs["is_training"].GetB()
	r1, r2 := n.Output(3), n.Output(4)
	if !training {
		r1, r2 = in(n, 3), in(n, 4)
	}
	ins := []any{dy[0], in(n, 0), in(n, 1), r1, r2}
	if op == "FusedBatchNormGradV3" {
		ins = append(ins, n.Output(5))
	}
	g := b.node(op, copyAttrs(n, "epsilon", "data_format", "is_training"), ins...)
	return []graph.Output{g.Output(0), g.Output(1), g.Output(2), none, none}
}
