// Package cuda is the CUDA device: the driver API, cuBLAS, cuBLASLt and
// NVRTC, opened at run time with dlopen (nothing of CUDA is needed to build
// mstream) and called through a table of function pointers filled once by
// dlsym (shim.c). It implements the interfaces of package device with real
// streams, events and memory, and gives kernels/cuda what it needs to run
// kernels: NVRTC-compiled modules, launches, GEMMs.
//
// # Loading
//
// Load tries the sonames of CUDA 13, 12 and 11 (libcuda.so.1, libcublas.so.N
// with the libcublasLt.so.N of the same major, libnvrtc.so.N), first through
// the dynamic loader's own search (LD_LIBRARY_PATH, ld.so.cache), then in
// $CUDA_HOME, $CUDA_PATH and the usual folders (DefaultDirs). Libraries
// newer than the driver are tried last, since their code may not load on
// it. Every failure to get a working GPU (no driver library, a missing
// symbol, a driver older than CUDA 11.4, cuInit failing, no visible device,
// no cuBLAS or NVRTC) is one error with code UNAVAILABLE that wraps
// ErrNoCUDA and names what is missing; the session logs it once and runs on
// the CPU, or fails when MSTREAM_DEVICE=gpu.
//
// # Threads and contexts
//
// CUDA's current context is per OS thread and goroutines move between
// threads, so every C wrapper sets the context and makes its call within
// one cgo call; no code relies on a context being current before a call.
// A Device has one or more contexts (context 0 is the primary context;
// SetContexts adds more for TF_GPU_CONTEXT_COUNT). Streams, events, modules
// and device memory belong to one context (Event.Context says which);
// events can be waited on from any context, of this device or another
// (steps over two GPUs order their streams so); pinned host memory is
// portable to all. Stream.Peer copies between contexts and devices.
//
// # Streams, events, copies
//
// Streams are created non-blocking (they never synchronise with the legacy
// default stream) and events without timing. Stream implements
// device.Stream; since that interface's methods return no error, a failure
// there is kept and returned by Stream.Err (and the error-returning
// variants RecordEvent, WaitEvent, H2D, D2H, D2D, Sync exist for callers
// that want it at once). Copies between device memory and pageable Go
// memory go through pinned staging buffers (HostAllocator: power-of-two
// free lists over cuMemHostAlloc buffers): a host-to-device copy fills the staging
// buffer inside the same cgo call, so the source is free on return; a
// device-to-host copy lands in staging and a host function (cuLaunchHostFunc
// calling back into Go) moves it to the destination in stream order.
// Staging buffers are released when an event recorded after their copy has
// completed, checked without blocking on later copies. Pinned memory
// (HostMemory, HostAlloc) is copied directly.
//
// # Memory
//
// DeviceMemory is the bfc.Backend of a context: regions from cuMemAlloc,
// never freed before the allocator closes, so the hot path has no
// cuMemAlloc or cuMemFree. A device tensor is a tensor.Tensor whose Buf
// stands for device memory (DeviceBytes): host code must never read it;
// kernels take its address with Ptr.
//
// # Kernels
//
// A Program is CUDA C source (no headers) compiled by NVRTC at first use:
// a cubin for the device's own architecture (sm_90 on an H100) when NVRTC
// knows it, else PTX for the newest architecture it knows. Images are
// cached in memory per (program, architecture), on disk in CacheDir keyed by
// a hash of the source, target, NVRTC version and options, and loaded once
// per context. Launch packs parameters on the caller's stack (Args), copies
// them into one of the stream's argument slots in C memory (taken with
// atomics, no lock: launches on one stream from several goroutines do not
// queue behind each other's driver call; the stream's mutex guards a last
// buffer for when all 8 are in use) and makes one cgo call that sets the
// context and calls cuLaunchKernel. CaptureBegun, asked per GEMM, reads an
// atomic flag, not the stream's mutex. RawLaunchLoop measures the driver's own
// launch cost for comparison (bench/gpu/README.md has the numbers).
//
// GEMMs run through cuBLAS (Gemm: sgemm/dgemm, strided batched, TF32 tensor
// cores allowed for float32 when asked, as TF allows by default; GemmEx:
// half and bfloat16 through cublasGemmEx and its strided batched form,
// accumulating in float, optional symbols that give UNIMPLEMENTED when a
// cuBLAS lacks them) and cuBLASLt (GemmBias: bias and bias+ReLU
// epilogues). Each stream has its own
// cuBLAS and cuBLASLt handles, bound to it, and a 32 MiB workspace, so no
// GEMM allocates. A GEMM of one product (Gemm with Batch 1, GemmBias)
// runs through cuBLASLt with a plan (descriptors, layouts and the
// heuristic's algorithm) made once per (shape, dtype, transposes, TF32,
// epilogue) and kept by the stream in a bounded LRU cache (maxLtPlans), so
// a GEMM node costs the cublasLtMatmul call alone; the plan remembers its
// bias pointer, so an unchanged one costs no attribute call. A shape that
// cuBLASLt cannot plan is remembered and runs through cuBLAS. The GEMM
// kernels choose between these calls and a small-batch kernel of their
// own by the device's SmallGEMM mode (MSTREAM_GPU_SMALL_GEMM, set by the
// session through SetSmallGEMM; see kernels/cuda).
//
// # CUDA graphs
//
// graph.go resolves the graph entry points (cuStreamBeginCapture_v2,
// cuStreamEndCapture, cuGraphInstantiateWithFlags or cuGraphInstantiate_v2,
// cuGraphLaunch, cuGraphExecDestroy, cuGraphDestroy, cuStreamIsCapturing)
// from the loaded driver on first use, into a table of their own, so a
// driver without them only loses graphs. Capture is in relaxed mode
// (goroutines move between threads, so a thread-local restriction would
// land on unrelated work) on a stream nobody else uses. While a stream
// captures it refuses what a graph cannot hold, with an error wrapping
// ErrNotCapturable: copies through pageable memory (their staging is
// released in stream order), host functions (their Go callback runs once)
// and synchronisation; a refused call also fails the capture, so
// EndCapture returns its error rather than a graph that lacks the work.
// PrepareCapture makes the stream's cuBLAS state
// first, so a captured GEMM uses the stream's fixed workspace, which must
// outlive every graph captured on it.
//
// # Errors
//
// Every call is checked. A failure is a status error naming the call and
// the context ("cuda: cuMemAlloc_v2 on GPU:0 failed:
// CUDA_ERROR_OUT_OF_MEMORY (out of memory)"), with a *CallError inside; out
// of memory is RESOURCE_EXHAUSTED, other failures INTERNAL. A sticky error
// (illegal address, kernel trap, launch failure) says so, is remembered by
// the context (Context.Err) and reported by every stream of it. An NVRTC
// compile error is INVALID_ARGUMENT and carries the compiler's log.
//
// # Locking
//
// Device.mu guards the context list and the shared staging allocator;
// Context.modMu the map of module slots, held only to find or add a slot;
// a slot's own mutex is held while its program compiles and loads, so a
// load waits only the callers of that program; Context.funcMu orders the
// replacements of the launch map (Context.Function reads it with no lock);
// Module.mu its function map; Stream.mu the
// stream's argument buffer, staging list and cuBLAS state, and is held
// across the cgo call that uses them; HostAllocator.mu its free lists;
// PinnedMemory.mu its region map. Order: Stream.mu, HostAllocator.mu,
// Device.mu (a new pinned buffer asks for the primary context),
// PinnedMemory.mu. A host function takes only HostAllocator.mu. No lock is
// held while blocking on the device (Stream.Sync synchronises first and
// then takes Stream.mu to release staging buffers).
//
// The package imports only device and status: the bfc allocator sits above
// it and takes DeviceMemory as its Backend.
package cuda
