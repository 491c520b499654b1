// Package models builds the CPU model benchmarks of the kernels issue as
// GraphDefs in the form TensorFlow exports them (frozen Keras graphs): a
// small CNN and a 2-block transformer encoder. bench/models/gen writes
// them to files for the C load generator; bench/models/ab runs them in
// process with fusion on and off.
package models
