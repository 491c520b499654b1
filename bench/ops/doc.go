// Package ops benchmarks single CPU kernels (elementwise, reductions,
// softmax) through the kernel registry, in GB/s, next to NumPy on the same
// machine (numpy_peer.py). README.md has the commands and the table.
package ops
