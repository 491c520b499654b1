// Package blas provides single- and double-precision GEMM: a cblas library
// loaded with dlopen at first use, a blocked, parallel pure-Go GEMM when
// there is none. Nothing is linked at build time, so the library builds and
// runs without a BLAS.
//
// Which library: Options.Path, which the session takes from MSTREAM_BLAS
// (scripts/venv.sh sets it to the scipy-openblas32 wheel's
// libscipy_openblas.so, OpenBLAS 0.3.34, that scripts/setup.sh installs into
// build/venv; its symbols carry a scipy_ prefix, found by trying both), else
// the system's sonames (Debian's OpenBLAS 0.3.21). A current OpenBLAS is
// preferred because it knows more CPUs: 0.3.21 mistakes some AVX-512 hosts
// whose cpuid model name is generic for old ones and runs its SSE3 Prescott
// kernels there.
//
// A library's CPU detection is checked, not trusted: after loading, Load
// compares the core OpenBLAS picked (openblas_get_corename) with the ISA
// cpuid reports (CPUISA) and, when the core is below it, unloads the library
// and loads it again with OPENBLAS_CORETYPE set to the ISA's core (SkylakeX,
// Haswell, Sandybridge), which OpenBLAS reads only in its load-time
// constructor; the environment is restored after. A user's own
// OPENBLAS_CORETYPE is kept and, if below the ISA, warned about. Info
// records library, version, core, ISA and any warning; the session logs it
// once per process and MS_SessionStats shows it under cpu_kernels.blas. A
// pure-Go fallback is a warning that names what was tried.
//
// The library is loaded with the loading thread held to the one CPU it
// runs on (its own mask restored after): OpenBLAS's constructor starts a
// server thread for every further CPU in the mask, and each spun about
// 0.1 s before sleeping at every process start, while sessions run
// OpenBLAS on one thread (SetThreads(1)). Threads reports the count. The
// process environment is not touched for this (setenv from a library
// races with the host's getenv); the CORETYPE reload above is the one
// place that sets a variable.
//
// One library per process: the first Load decides (a loaded library cannot
// safely leave while kernels may call it), later ones asking for another get
// ErrLoaded and the loaded one's Info.
//
// Measured (bench/cpu/sgemm.c, square sgemm,
// GFLOP/s, AMD EPYC with AVX2 and no AVX-512, 2 cores at load average 13-14
// from other work, three alternating rounds, low-high):
//
//	library                      threads  n=64    n=256   n=1024
//	Debian OpenBLAS 0.3.21 (Zen)    1     16-17   16-22   14-21
//	scipy OpenBLAS 0.3.34 (Haswell) 1     16-27   16-27   12-24
//	Debian OpenBLAS 0.3.21 (Zen)    2     12-16    4-7     9-17
//	scipy OpenBLAS 0.3.34 (Haswell) 2     14-22    1       11-13
//	pure Go                         2      -       0.8     0.8
//
// On this host both OpenBLAS builds pick a right core and are equal within
// the noise; two OpenBLAS threads on a loaded 2-core machine spin and lose.
// The AVX-512 host ran 0.3.21 at Prescott until OPENBLAS_CORETYPE
// was set (MLP 0.48 -> 0.90 of TF), which Load now does itself.
//
// Threads: the session runs OpenBLAS on one thread (SetThreads, where the
// build exports the setter) and splits a GEMM itself over the intra-op pool
// with SgemmOn: row blocks, column blocks for a small batch, a GEMV per
// column strip for one row, the blocks fixed by the shape so the bits do not
// depend on the pool. OpenBLAS's own pool and the intra-op pool so never
// nest, and concurrent Runs share one pool's threads. The GEMMs go
// through ccall (dl.h's argument structs), on the calling thread.
package blas
