// Command gen writes the bundled example's model, its ConfigProto and the
// model's expected outputs for a fixed input batch.
//
// The model is a small recommender: a dense float feature vector and four id
// features looked up in embedding tables, concatenated and fed through an MLP
// whose last layer is a Sigmoid named "output". Weights come from math/rand
// with a fixed seed, so the model and the expected numbers are reproducible
// (prototext varies its whitespace between builds; the content does not change):
//
//	go run ./examples/gen            # writes examples/data/*
//	go run ./examples/gen -out DIR   # writes elsewhere
//
// The expected outputs are computed here in float64 from the same float32
// weights, independently of the library, so a test can check the library's
// answer against them.
//
// Invariant: the files in examples/data are this command's output; its test
// (go test ./examples/gen) fails when they are stale or a node does not fit
// TF's OpDef.
package main
