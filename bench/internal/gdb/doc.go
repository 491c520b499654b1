// Package gdb writes TF GraphDefs node by node for the benchmark model
// generators, with seeded weights. It emits the NodeDefs that TensorFlow's
// own exporters write (op names, attrs, "node:index" inputs), without going
// through mstream's graph package, so the models test the importer too.
package gdb
