// Package blas provides single- and double-precision GEMM: OpenBLAS's cblas
// loaded with dlopen at first use when the machine has it, a blocked,
// parallel pure-Go GEMM otherwise. Nothing is linked at build time, so the
// library builds and runs without OpenBLAS.
//
// Threads: OpenBLAS keeps its own thread pool and uses it for large
// products; callers call Sgemm from one goroutine per GEMM and do not split a
// GEMM themselves, so OpenBLAS and the intra-op pool never oversubscribe by
// nesting. SetThreads caps OpenBLAS's threads where it exports the setter.
package blas
