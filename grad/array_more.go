package grad

import (
	"mstream/graph"
	"mstream/tensor"
)

// The rest of TF's C++ array, nn and resource-variable gradients
// (cc/gradients/array_grad.cc, nn_grad.cc, resource_variable_grad.cc,
// data_flow_grad.cc) whose ops run here, and the ops TF registers with no
// gradient.

func init() {
	// data_flow_grad.cc and image_grad.cc: queues, stacks, session
	// tensors, EditDistance and NonMaxSuppression have no gradient.
	noGradient("Queue", "QueueEnqueue", "QueueEnqueueMany", "QueueDequeue", "QueueDequeueMany", "QueueDequeueUpTo",
		"QueueClose", "QueueSize", "Stack", "StackPush", "StackPop", "StackClose", "GetSessionHandle",
		"GetSessionHandleV2", "GetSessionTensor", "DeleteSessionTensor", "EditDistance", "NonMaxSuppression",
		"NonMaxSuppressionV2", "NonMaxSuppressionV3", "NonMaxSuppressionV4", "NonMaxSuppressionV5")

	register(func(b *Builder, n *graph.Node, dy []graph.Output) []graph.Output {
		return []graph.Output{b.Op("Identity", nil, dy[0])}
	}, "ReadVariableOp")
	register(func(b *Builder, n *graph.Node, dy []graph.Output) []graph.Output {
		return []graph.Output{dy[0]}
	}, "RefIdentity")
	register(func(b *Builder, n *graph.Node, dy []graph.Output) []graph.Output {
		sx := b.Op("Shape", nil, in(n, 0))
		r := b.node("BroadcastGradientArgs", nil, sx, in(n, 1))
		return []graph.Output{b.Op("Reshape", nil, b.Op("Sum", nil, dy[0], r.Output(0)), sx), none}
	}, "BroadcastTo")
	register(func(b *Builder, n *graph.Node, dy []graph.Output) []graph.Output {
		return []graph.Output{b.Op("ReverseV2", nil, dy[0], in(n, 1)), none}
	}, "ReverseV2")
	register(func(b *Builder, n *graph.Node, dy []graph.Output) []graph.Output {
		// The fill value gets the sum of dy.
		all := b.Op("Range", nil, b.ScalarI32(0), b.Op("Rank", nil, dy[0]), b.ScalarI32(1))
		return []graph.Output{none, b.Op("Sum", nil, dy[0], all)}
	}, "Fill")
	register(func(b *Builder, n *graph.Node, dy []graph.Output) []graph.Output {
		idx := in(n, 1)
		shape := b.Op("Shape", A{"out_type": graph.AttrType(idx.DType())}, in(n, 0))
		return []graph.Output{b.Op("ScatterNd", nil, idx, dy[0], shape), none}
	}, "GatherNd")
	register(func(b *Builder, n *graph.Node, dy []graph.Output) []graph.Output {
		return []graph.Output{none, b.Op("GatherNd", nil, dy[0], in(n, 0)), none}
	}, "ScatterNd")
	register(func(b *Builder, n *graph.Node, dy []graph.Output) []graph.Output {
		// Each data input gets dy's rows at its indices.
		k := len(n.Inputs) / 2
		out := make([]graph.Output, 2*k)
		for i := 0; i < k; i++ {
			idx := in(n, i)
			if idx.DType() != tensor.Int32 {
				idx = b.Op("Cast", A{"DstT": graph.AttrType(tensor.Int32)}, idx)
			}
			out[k+i] = b.Op("GatherV2", nil, dy[0], idx, b.ScalarI32(0))
		}
		return out
	}, "DynamicStitch", "ParallelDynamicStitch")
	register(func(b *Builder, n *graph.Node, dy []graph.Output) []graph.Output {
		return []graph.Output{b.Op("MatrixBandPart", nil, dy[0], in(n, 1), in(n, 2)), none, none}
	}, "MatrixBandPart")

	register(func(b *Builder, n *graph.Node, dy []graph.Output) []graph.Output {
		return []graph.Output{b.Op("SoftsignGrad", nil, dy[0], in(n, 0))}
	}, "Softsign")
	register(func(b *Builder, n *graph.Node, dy []graph.Output) []graph.Output {
		x := in(n, 1)
		return []graph.Output{b.Op("LeakyReluGrad", copyAttrs(n, "alpha"), dy[0], x), b.Op("ZerosLike", nil, x)}
	}, "LeakyReluGrad")
	register(func(b *Builder, n *graph.Node, dy []graph.Output) []graph.Output {
		attrs := copyAttrs(n, "strides", "padding", "explicit_paddings", "dilations", "use_cudnn_on_gpu", "data_format")
		f, g := in(n, 1), in(n, 2)
		df := b.Op("Conv2DBackpropFilter", attrs, dy[0], b.Op("Shape", nil, f), g)
		return []graph.Output{none, df, b.Op("Conv2D", attrs, dy[0], f)}
	}, "Conv2DBackpropInput")
}
