package dataset

import (
	"mstream/graph"
	"mstream/tensor"
)

// Static shapes, as TF's shape functions give them: a dataset or an
// iterator handle is a scalar; IteratorGetNext's outputs have the shapes
// its output_shapes attr declares.
func init() {
	scalar := func(c *graph.ShapeContext) ([]tensor.PartialShape, error) {
		out := make([]tensor.PartialShape, len(c.Node.OutTypes))
		for i := range out {
			out[i] = tensor.KnownShape(tensor.Shape{})
		}
		return out, nil
	}
	for _, op := range []string{"TensorDataset", "TensorSliceDataset", "RangeDataset", "BatchDataset",
		"BatchDatasetV2", "PaddedBatchDatasetV2", "RepeatDataset", "TakeDataset", "SkipDataset",
		"ShuffleDataset", "ShuffleDatasetV3", "PrefetchDataset", "ZipDataset", "ConcatenateDataset",
		"OptimizeDataset", "OptimizeDatasetV2", "ModelDataset", "TextLineDataset", "TFRecordDataset",
		"TFRecordDatasetV2", "MapDataset", "ParallelMapDatasetV2", "FlatMapDataset", "FilterDataset",
		"Iterator", "IteratorV2", "AnonymousIterator", "AnonymousIteratorV2", "AnonymousIteratorV3",
		"OneShotIterator", "IteratorToStringHandle", "IteratorFromStringHandle",
		"IteratorFromStringHandleV2", "DummySeedGenerator", "AnonymousSeedGenerator"} {
		graph.RegisterShapeFn(op, scalar)
	}
	next := func(c *graph.ShapeContext) ([]tensor.PartialShape, error) {
		out := make([]tensor.PartialShape, len(c.Node.OutTypes))
		shapes := c.Node.Attrs["output_shapes"].GetList().GetShape()
		for i := range out {
			if i < len(shapes) {
				out[i] = tensor.ShapeFromProto(shapes[i])
			} else {
				out[i] = tensor.Unknown
			}
		}
		return out, nil
	}
	graph.RegisterShapeFn("IteratorGetNext", next)
	graph.RegisterShapeFn("IteratorGetNextSync", next)
}
