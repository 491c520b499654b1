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
// With GPUs, the host device stays device 0 (one group, for plans with no
// GPU node) and GPU i is device 1+i with TF_GPU_STREAM_GROUP_COUNT's i-th
// count; plans are placed (exec.BuildPlaced, honouring
// allow_soft_placement) and run with exec.RunGPU on a group of GPU:0.
// GPU regions always grow on demand within the configured limit (virtual
// device limit, memory fraction, or else the memory free at session start
// less 512 MiB): allocators are per session here, per process in TF, so a
// session must not take the whole GPU up front. TF_GPU_CONTEXT_COUNT sets
// the process's contexts on first use (a later session may use fewer).
// Node-level mode stays on the CPU.
//
// Invariants: many goroutines may call Run on one Session at once; an error
// in one Run leaves the session usable for the next; feeds are never kept
// after Run returns (callers reuse their buffers) and fetched tensors belong
// to the caller; the graph may grow while the session lives, and the plan
// cache is keyed by the graph's version, so a Run after a change plans anew.
// Close waits for the Runs in flight, then releases the pools and groups;
// later calls fail with CANCELLED.
package session
