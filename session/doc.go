// Package session is what TF_NewSession returns: a Session runs one graph
// with the options of a ConfigProto (thread pools, placement, GPU options)
// and the TF_* knobs, and serves Run, PRunSetup/PRun, Close and the device
// list. It is the one reader of envcfg: the knobs are read once, when the
// session is made, and a bad value fails New; lower layers get typed config.
//
// A Run looks up (or builds once and caches) the exec plan for its exact set
// of feeds, fetches and targets, picks a stream group, and executes the plan.
//
// Devices (gpu.go): MSTREAM_DEVICE unset tries device/cuda's Load at
// TF_NewSession and, when it fails, logs one line per process and runs on
// the CPU; =gpu makes that failure the session's error; =cpu never looks.
// With GPUs, the host device stays device 0 (for plans with no GPU node:
// one group, or TF_GPU_STREAM_GROUP_COUNT's first count in node-level mode)
// and GPU i (the driver's ordinal, after CUDA_VISIBLE_DEVICES) is device
// 1+i with TF_GPU_STREAM_GROUP_COUNT's i-th count (the last one past the
// list's end), virtual_devices[i]'s limit, its own pinned staging, contexts
// and constants. Plans are placed (exec.BuildPlaced, honouring
// allow_soft_placement): a GPU node on the GPU it names, else GPU:0.
// Every step runs through one call: stepGroups picks the groups and the
// node-to-group assignment (an exec.Runtime) and exec's Plan.Run runs
// it (on the inter-op pool for one host group without
// MSTREAM_HOST_STREAMS).
// Graph-level mode runs a step on one GPU on the group Pick chooses among
// that GPU's, and a step over several GPUs on the group Pick chooses on
// each (values copied between GPUs). With the GPU pool (MSTREAM_GPU_POOL,
// graph-level mode), a plan's unpinned GPU nodes run on the GPU of the
// group a groups.Spread picks over every GPU's groups (exec's
// Plan.PlaceOn), the pinned ones on their GPU's picked group; plans
// with frames and pinned nodes keep TF's placement. Constants come from
// the picked group's store, so each GPU materialises them once (per group
// without TF_SEGMENT_OWN_CONST); variables stay one copy in host memory
// (resource.Manager), read by every GPU, so a Run that starts after an
// assign sees it wherever it runs. Node-level mode runs each node on
// the group TF_STREAM_FROM_FILE assigns it among its GPU's groups (host
// nodes and constants: the home GPU's), with the groups in one CUDA
// context or several (TF_GPU_CONTEXT_COUNT; values and events cross
// contexts of one device). GPU
// regions always grow on demand within the configured limit (virtual device
// limit, memory fraction, or else the memory free at session start less 512
// MiB): allocators are per session here, per process in TF, so a session
// must not take the whole GPU up front. TF_GPU_CONTEXT_COUNT sets the
// process's contexts on first use (a later session may use fewer).
//
// CUDA graphs (gpu_graph.go): a session with GPUs (MSTREAM_CUDA_GRAPH,
// on by default; 0 turns it off) makes an exec.GraphCache handed to every one-group GPU step, which
// replays eligible steps from captured CUDA graphs; a plan the cache
// evicts takes its graphs with it (GraphCache.Drop), Close releases the
// rest (and the memory they own) before the groups close, and
// MS_SessionStats counts them under cuda_graph.
//
// Invariants: many goroutines may call Run on one Session at once; an error
// in one Run leaves the session usable for the next; feeds are never kept
// after Run returns (callers reuse their buffers: the C API reuses the
// memory of its feed copies) and fetched tensors belong to the caller
// (RunTo's deliver sees the step's own, valid during that call only); the graph may grow while the session lives, and the plan
// cache is keyed by the graph's version, so a Run after a change plans anew.
// Close waits for the Runs in flight, then closes the cached plans (their
// kernels' oneDNN primitives go: exec.Plan.Close) and releases the pools
// and groups; later calls fail with CANCELLED. A plan evicted from the
// cache is closed too, its kernels once the Runs still on it end: the
// plans of older graph versions when the first plan of a newer one is
// made (no Run looks them up again), and every plan when a full cache
// starts anew. A Run whose plan was closed before its step began takes
// the signature's new plan.
package session
