package cpu

import (
	"mstream/graph"
	"mstream/kernels"
)

// Shape inference folds constant subgraphs with the CPU kernels registered
// here, as TF's shape refiner runs them.
func init() { graph.RegisterConstFolder(kernels.EvalCPU) }
