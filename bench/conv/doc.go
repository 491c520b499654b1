// Package conv benchmarks the CPU Conv2D kernel (im2col + the GEMM MatMul
// uses) in GFLOP/s at layer shapes of common CNNs, next to a direct
// float32 convolution loop in Go and to im2col + matmul in NumPy over
// OpenBLAS on the same machine (numpy_peer.py). run.sh prints the table
// that bench/ops/README.md records under "Conv".
package conv
