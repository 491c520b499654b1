// Package dnnl runs the CPU's heavy NN kernels through oneDNN 3.x (the
// library TensorFlow itself uses on x86), loaded with dlopen at run time as
// package blas loads OpenBLAS: nothing is linked at build time, and without
// oneDNN the kernels in package cpu run their own code, with a warning.
//
// Which oneDNN: the pip wheel onednn-cpu-gomp 2023.2.0 (oneDNN 3.2.0,
// lib/libdnnl.so.3) that scripts/setup.sh installs into build/venv and
// scripts/venv.sh names in MSTREAM_DNNL; else the soname libdnnl.so.3.
// Chosen over Debian's libdnnl2 (oneDNN 2.6.3) because the C API changed at
// 3.0 (operation descriptors are gone; primitive descriptors are created
// directly), 3.x is what TF 2.15 uses, and the wheel installs without root
// beside the scipy-openblas32 wheel; the GNU OpenMP build because libgomp
// is the OpenMP runtime gcc already brings, where the iomp build would put a
// second OpenMP runtime in the process. A 2.x library is refused at load.
// The entry points and the constants of dnnl_types.h that are used are
// declared in dl.c.
//
// What runs here (float32): Conv2D and _FusedConv2D, NHWC (one group; a
// BiasAdd and a Relu run as the primitive's bias and eltwise post-op, other
// epilogues after it in package cpu); MaxPool and AvgPool, NHWC (a spatial
// window; the average excludes the padding, as TF's SAME does); Softmax
// and LogSoftmax along rows; layer normalisation of rows (the LayerNorm
// form of FusedBatchNorm); batch normalisation of NHWC data (inference and
// training); matmul with a bias and an eltwise post-op (_FusedMatMul).
// Package cpu decides, per shape, whether oneDNN or its own code runs.
//
// Primitives: oneDNN JIT-compiles each primitive, so a kernel makes one per
// (node, shape) through a ConvCache or a Cache that its factory creates
// (named after the node) and its Compute closes over (never a
// package-global cache), and reuses it across Runs. A desc oneDNN cannot
// make is remembered, and warned about once through the first Load's
// Options.Warn (the session's logger), naming the node: a fallback is
// never silent, and Fallbacks (MS_SessionStats' cpu_kernels.onednn.fallbacks)
// counts them. Every primitive but the convolution is a Prim: plain
// row-major buffers in the layouts its constructor fixed, so Run only binds
// pointers; Prim.Impl and Conv.Impl are oneDNN's name of the implementation
// it chose ("jit:avx2", "brg:avx2", "gemm:jit:f32"; "ref" would be its slow
// reference code). A primitive is safe for concurrent Runs: each Run takes
// a stream and memory objects of its own from the primitive's free list
// (dl.c's slots: made once, then only pointed at the Run's buffers, since
// making them cost more than a small primitive's run; the list's lock
// spins, for the threads of a split loop take from it at once) and has its own
// scratchpad (user scratchpad mode). A convolution's weights arrive as HWIO and are
// reordered into the layout the primitive chose: once, on its first Run,
// when the caller says they are constant (a Const filter the plan does not
// feed, which optimize marks with ConstWeightsAttr), then kept, one copy
// per weight layout among the primitives of the node's ConvCache (its
// batch sizes and row bands); else on every Run, into that Run's work buffer (the weights
// may change between Runs). A convolution's work buffers are its own, kept
// on a free list between Runs (one per Run in flight, each checked against
// the device's limit when made), so a steady Run allocates nothing of its
// own (TestRunAllocates: a failure's message comes back as a C string, a
// Prim's arguments one a parameter); a Prim takes its work buffer
// (WorkBytes) from the caller, which package cpu takes with
// kernels.Scratch. oneDNN's execute itself mallocs and frees its argument
// map (a std::unordered_map) on every call: with its other bookkeeping,
// the 1.5-2 us a call costs beside its work (BenchmarkConvSplit in
// package cpu), which is why the split cuts few parts.
// A cache's Close destroys its primitives (and their Runs' memory objects
// and streams); a kernel that owns caches is a kernels.Closer, which its
// plan closes once, after the plan's last step, when the session drops the
// plan (evicted, or the session closed). Live counts the primitives alive
// (MS_SessionStats' cpu_kernels.onednn.live).
//
// Accuracy: oneDNN 3.2's gelu_erf and gelu_tanh eltwise differ from the
// float64 function by up to 2e-4 relative (tanh 7e-8, logistic 2e-7, elu
// 3e-6), so package cpu runs GELU after the matmul with its own loop. Its
// softmax's maximum skips a NaN, so package cpu recomputes a row whose
// output holds a NaN (TF's row is all NaN).
//
// Threads: oneDNN's GNU OpenMP runtime makes a team per calling OS thread,
// sized by that thread's nthreads ICV (OMP_NUM_THREADS or the core count
// unless set); it does not share the session's intra-op pool, but it is
// bounded by its size: every create and run takes a thread count (the
// kernel's Context.Threads) and sets the calling thread's ICV with
// omp_set_num_threads inside the same cgo call, so the goroutine cannot
// move to another OS thread in between. The count is fixed at creation too
// (oneDNN sizes a primitive's work split and scratchpad by the threads it
// sees then), so the caches key primitives by (desc, threads). Two client
// threads with intra_op=1 then run two single-thread teams, not two teams
// of the core count (TestTeamFollowsThreads counts a team's threads).
// A build without omp_set_num_threads (TBB, sequential) is left as it is.
// Package cpu makes its convolution and pooling primitives for one thread
// and splits their work over the session's intra-op pool itself: at a
// batch of one a team's fork and join cost as much as the convolution.
// Its workers spin after each parallel region
// unless OMP_WAIT_POLICY is PASSIVE, which Load sets across the dlopen when
// the user has not (libgomp reads it once, when it loads): spinning workers
// took the cores from the Go threads running the next nodes (keras_cnn,
// B=1, 1 client, 2 cores at load 18: 4.6 QPS active, 595 passive).
//
// Measured with MODELS="cnn keras_cnn transformer keras_encoder"
// bench/cpu/vs_tf.sh (2 cores shared with other work, load average 15-22;
// geometric mean of mstream/TF QPS over B 1, 16, 256 and 1-2 clients, the
// sides alternating; before = this package absent, both with OpenBLAS
// 0.3.34): cnn 0.20 -> 1.11, keras_cnn 0.14 -> 1.13 (max abs difference
// from TF 2.7e-07 at B=1, 5.1e-07 at B=256). transformer (0.21 -> 0.18) and
// keras_encoder (0.07 -> 0.15) have no convolution or pooling: their moves
// are the machine's noise.
//
// Load, Loaded and Available follow package blas: the first Load in a
// process decides, a named library that does not load is an error, and the
// session logs Info once and reports it in MS_SessionStats as
// cpu_kernels.onednn. A Conv's and a Prim's runs go through ccall (dl.h's
// argument structs): a primitive's execution only computes, on the
// calling thread or oneDNN's OpenMP team, whose threads are not Go's.
package dnnl
