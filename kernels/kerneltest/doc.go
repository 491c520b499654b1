// Package kerneltest is the one conformance suite that every kernel passes
// on every device.
//
// Op families register case generators with Add. A generator draws fresh
// random inputs from the rand.Rand it is given (the seed is logged when a
// case fails) and returns cases: a node built through the graph package, so
// it is validated against TF's OpDef and has its default attrs, the input
// tensors, and either the expected outputs or the expected error code.
// Expected outputs come from an independent reference: float64 Go math in
// the generator, or a NumPy expression evaluated by one Python process per
// suite run (Case.NumPy). With KERNELTEST_TF naming a Python with
// TensorFlow 2.15 (test/tforacle/run.sh sets it), real TF is the reference
// instead: every case runs in TF as a GraphDef and the device must give
// TF's outputs or TF's error code (tforacle.go).
//
// A device runs the suite by implementing Runner (host tensors in, host
// tensors out) and calling Run from a test. Run also checks coverage: every
// op the device has a kernel for must have a family here, so a kernel added
// without conformance cases fails the suite.
//
// Invariants: generators never return only zeros; every case is compared
// with a per-dtype tolerance (exact for integers, bools and strings; NaN
// equals NaN); an error case must fail with its code and a message naming
// the node.
package kerneltest
