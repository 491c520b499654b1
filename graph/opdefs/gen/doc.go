// Command gen writes graph/opdefs/ops.binpb: TF 2.15's op signatures from
// tensorflow/core/ops/ops.pbtxt of the TF Go module, with every summary,
// description and deprecation explanation cleared so that no TF prose is
// committed, sorted by op name. Run from the repository root:
//
//	go run ./graph/opdefs/gen
package main
