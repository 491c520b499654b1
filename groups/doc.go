// Package groups owns the stream groups of each device, NVIDIA's unit of
// multi-stream execution, and picks the group that serves each Run.
//
// # What a group is
//
// A Set holds, for every device, TF_GPU_STREAM_GROUP_COUNT groups (a comma
// list gives a count per device). A group has:
//
//   - four streams: compute, host-to-device (H2D), device-to-host (D2H) and
//     device-to-device (D2D), or one stream serving all four roles with
//     TF_GPU_STREAM_MERGE, created in the group's context (group j of a
//     device is in context j % min(TF_GPU_CONTEXT_COUNT, groups));
//   - a device allocator: its own bfc allocator with the device limit split
//     evenly between the device's groups; or, with
//     TF_GPU_STREAM_GROUP_SHARE_MEM_POOL, its own allocator drawing regions
//     from a budget shared by the device's groups (regions then grow on
//     demand, since one group taking the whole limit at once would starve
//     the others); or, with TF_GPU_STREAM_AWARE_BFC, one stream-aware
//     allocator shared by every group of the device;
//   - a host allocator for staging copies: one per device, or one per group
//     with TF_PER_STREAM_HOST_ALLOCATOR;
//   - a launch pool and an intra-op parallelizer: with TF_GPU_THREAD_MODE
//     global, the session's inter-op pool (group i takes the ConfigProto's
//     session_inter_op_thread_pool entry i % n when there are entries) and
//     the session's intra-op threads, and a device step that only
//     enqueues work launches from the Run's own goroutine, as TF's
//     executor runs a cheap op on the thread that made it ready
//     (CallerLaunches); with gpu_private, TF_GPU_THREAD_COUNT threads of
//     its own; with gpu_shared, TF_GPU_THREAD_COUNT threads shared by all
//     groups (Set.Close stops the pools it made, intra-op workers
//     included), which launch every device step;
//   - a constant store: constants are materialised in device memory once
//     per group, or once per device and shared with TF_SEGMENT_OWN_CONST.
//
// On a GPU (a device.ContextMemory and device.StagedDevice; groups never
// names device/cuda) a group's allocator takes its regions from the
// memory of its own context (contexts have separate device memory), so in
// stream-aware mode there is one shared allocator per context; a group's
// streams stage pageable copies through the device's pinned staging, or
// the group's own with TF_PER_STREAM_HOST_ALLOCATOR (Group.Staging);
// allocator names use the device's ordinal (GPU_0_group1_bfc). The host
// device path is unchanged: one memory however many contexts.
//
// The device limit is gpu_options.experimental.virtual_devices[d]
// .memory_limit_mb[0] when given, else per_process_gpu_memory_fraction of
// the device's memory when given, else all of it; the host device's memory
// is MSTREAM_HOST_MEMORY_MB (the session passes the machine's memory when it
// is unset, and growth on demand). Regions grow on demand with allow_growth (or
// TF_FORCE_GPU_ALLOW_GROWTH, which overrides the ConfigProto either way),
// each growth capped by TF_BFC_EXTEND_LIMIT_MB; otherwise an allocator's
// first allocation takes its whole limit, as TF does.
//
// # Picking a group
//
// Pick takes the group of the device with the fewest runs in flight; ties
// go round-robin from the group after the last one picked, so sequential
// runs rotate over all groups and concurrent runs spread out. With one
// group per device everything behaves as stock TF. A Spread does the same
// over the groups of several devices (the session's GPU pool), taking them
// in turn from each device (group 0 of each, then group 1, ...) so ties
// alternate between devices.
//
// # Invariants
//
// A group's streams, allocators and pools live from New until Close and
// never change. Runs in flight is incremented by Pick and decremented by
// Done, exactly once per Pick. Constants are never freed before Close.
//
// # Locking
//
// Set.mu serialises Pick and Spread.Pick (choice and increment are one
// step). ConstStore.mu guards a store's map; materialising a constant
// allocates and copies under it (once per constant), so the lock order is
// ConstStore.mu, then the allocator's. Counters are atomics.
package groups
