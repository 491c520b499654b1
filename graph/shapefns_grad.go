package graph

import "mstream/tensor"

// Shape functions of the gradient kernels that package grad emits, whose
// shapes TF_GraphGetTensorShape reports on the gradients themselves.

func init() {
	RegisterShapeFn("BiasAddGrad", biasAddGradShape)
	RegisterShapeFn("L2Loss", scalarShape)
}

// biasAddGradShape is [channels]: the last dim (NHWC, rank >= 2) or dim 1
// (NCHW, rank >= 3).
func biasAddGradShape(c *ShapeContext) ([]tensor.PartialShape, error) {
	v := c.In[0]
	nchw := string(c.Attr("data_format").GetS()) == "NCHW"
	minRank := 2
	if nchw {
		minRank = 3
	}
	if !v.Known {
		return []tensor.PartialShape{{Known: true, Dims: []int64{-1}}}, nil
	}
	if len(v.Dims) < minRank {
		return nil, errorf("Shape must be at least rank %d but is rank %d", minRank, len(v.Dims))
	}
	ch := len(v.Dims) - 1
	if nchw {
		ch = 1
	}
	return []tensor.PartialShape{{Known: true, Dims: []int64{v.Dims[ch]}}}, nil
}
