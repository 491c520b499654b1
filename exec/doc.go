// Package exec turns a graph and a (feeds, fetches, targets) signature into a
// Plan, and runs Plans step by step.
//
// A Plan is built once under the graph's read lock: the nodes needed for the
// fetches and targets (stopping at fed outputs), in topological order, each
// bound to its kernel. It is immutable afterwards and shared by every step
// that runs it, concurrently.
//
// Its owner drops it with Close (lifetime.go): kernels holding resources
// outside the Go heap (kernels.Closer: oneDNN primitive caches) are closed
// once, after the last step that entered Run has left it (a cancelled
// step's kernels included), never under a Compute; a Run after Close
// fails with ErrClosed before any kernel runs.
//
// Plan.Run is the one entry that runs a step, whatever the device, the
// group count and the mode: the session hands it a Runtime (the groups it
// picked, the node-to-group assignment, wait reduction, the tensor
// holder, the CUDA-graph cache, the sanitizer's delay) and Run takes the
// launcher the groups call for: the device launcher for a GPU's streams
// (device_step.go), and the host scheduler (step.go's runHost) for every
// host step. It returns the fetches as the caller's own tensors, or with
// Options.Deliver hands them over in its call instead: the host
// scheduler's pool step then gives the step's own, before its buffers go
// back, and skips the copy it would make for the caller. The host scheduler has two forms of ready-tracking and one
// frame loop: a plan without frames on one group without streams keeps
// a pending count per node (drive, its fast path); every step on host
// streams (several groups, an assignment or MSTREAM_HOST_STREAMS) tracks
// the stream ops streams.go lays out once per plan and runtime
// (driveStreams, below); and a plan with frames or dead tensors runs the
// frame driver, whose inline form (runFramesInline, # Frames) serves
// both the pool step (driveFrames, on the caller's goroutine) and a
// one-group stream step (its one opFrames op), while over an assignment
// the op launches the driver's nodes on their streams, several at once.
// Every host kernel call makes its kernel context the same way, from the
// step's kenv (intra-op pool, step container, and on a group its
// allocator, limit and tracker) through a worker (worker.begin); the
// tracker and the trace are shared too. DESIGN.md ("One entry, two
// launch loops") says what is left to make the loops one. The pool state
// (pending counts, every node's input and output slots, the caller's
// kernel context and output allocator, the tracker, and the shard of the
// group's allocator its buffers come from, bfc.Shard, so that Runs in
// flight at once share no allocator cache) is laid out once and
// kept in the plan's stash between steps (stash.go: a bounded list of the
// plan's own, where a sync.Pool kept a closed session's plans alive a
// collection longer), and a small output (at most bfc.MinAlloc bytes) reuses
// a small buffer an earlier node of the step gave back, its tracker
// record and tensor included (memory.go), so a warm step of small
// tensors allocates nothing per node, Go memory or the allocator's
// (TestPoolStepAllocs). A node that becomes ready runs on the goroutine
// that made it ready, the caller's first, unless it is expensive and
// that goroutine has other work, when it is offered to the inter-op Pool
// (step.offer): as in TF's executor, a node is expensive until measured
// and then while a moving average of its kernel time is above 15 us (TF's
// 3.2 us is for workers that spin; ours park, and waking one costs more:
// costs.go; constants, identities and control flow never are). An offer
// is made only while a Pool worker waits idle (Pool.Idle: with as many
// client threads as workers, the other Runs keep them busy), and the
// offered node stays the offering goroutine's until a worker claims it
// (step.offered): a goroutine whose ready stack empties takes back what
// no worker has started (reclaim) and runs it itself, so a hand-off
// costs a wake-up, never a wait for a worker that has no core
// (TestOfferTakenBack, BenchmarkHandOff). A task that comes late finds
// its node claimed and returns; an offer carries its step's generation,
// so a late task never claims a later step's offer of the same node
// (the state may serve a step on another group's pool:
// TestLateTaskKeepsToItsStep). A chain or a graph of scalar ops so runs
// on the caller's goroutine without a hop, and concurrent Runs each keep
// to their own goroutine until a node is worth a second thread and a
// worker is there to take it. Before offers could be taken back, a node
// measured just above the threshold on a busy machine (the bundled
// model's embedding lookups, 3.5 us when run right after a worker woke)
// went to the pool at every step and the step waited for the wake-up:
// 5x the CPU per Run of the same model when measured under it. The host
// scheduler and the device launcher share the
// frame driver, the tracker, the wait reduction and the kernel call, but
// are two loops over the plan.
// The first kernel error cancels the step: nodes not yet started are
// skipped and the error, naming the node, is returned.
//
// Invariants: feeds are read during the step only; a kernel's inputs are
// read-only; every fetched tensor is either a kernel output or a feed.
//
// # Dead tensors
//
// A plan with a Switch can make dead tensors (TF's v1 conditionals;
// deadness.go): the untaken output of a Switch, and every output of a node
// with a dead input or dead control predecessor, which then does not run;
// a Merge forwards a live input with its index. Every step carries
// deadness, through the one frame driver (below).
//
// # Frames
//
// A plan with Enter, Exit, NextIteration or LoopCond (TF's v1 while loops)
// runs on the frame driver (frames.go), which the host scheduler hands
// the step to:
// every value is tagged with a frame instance and an iteration as in TF's
// executor, nested frames and is_constant Enters included. The driver
// takes nodes in the order they become ready, at most
// parallel_iterations iterations of a frame in flight as in TF;
// kernels still use the intra-op pool, and outputs come from the group's
// allocator, the driver counting its references to them (frameRefs), so a
// loop of small values reuses a few buffers and a finished iteration's
// slots (TestFramesGroupMemory). The
// back edges (out of NextIteration) are kept out of every order the plan
// builds (succ, preds, topo), so a cycle through any other node still
// fails the build, naming its nodes.
//
// The frame driver (frameRun, generic over the value a step moves) is
// shared by every step. On the host its inline form (runFramesInline)
// is the one frame loop that runs each node on the driving goroutine:
// the pool step calls it on the caller's goroutine (driveFrames), values
// in the group's memory; a stream step lays out the feed copies, one
// opFrames op and the fetch copies (runFrames), and with one group the
// op is an item of its compute stream that calls the same inline form,
// values in the group's memory on a recycling tracker of the item's own
// (the stream step's, whose buffers other streams may read, recycles no
// records and keeps no small buffers), the fetched ones given back once
// the step has joined. With an assignment the op runs on no
// stream and each live node is an item on its group's compute stream
// (Assign holds in every frame and iteration), launched as soon as it is
// ready (frameRun.launch), so independent nodes run at once on
// different streams (TestFramesOnStreamsConcurrent); Consts and the
// control-flow ops, which only pass values on, the driver runs itself. As a stream op's
// completion makes its successors ready, an item's completion, on its
// stream, hands its outputs on under the driver's lock and launches the
// nodes that became ready (finishTask); the last one finishes the op.
// No goroutine waits for the driver's items. The fetch copies wait for
// the op, and a dead fetch fails as TF fails it. The device
// step (device_frames.go) drives values that stay on the device, the
// same way over its lanes (device_lanes.go): with one group the driver
// launches each live node on its goroutine; over several, launch queues
// it on its group's lane, which waits (on the device) for what it reads
// from other groups, launches it asynchronously and reports back at
// once, so the groups' launches overlap
// (TestFramesLanesOverlap). The control-flow ops run no kernel (they
// pass values on) and the driver runs them itself, but a Switch whose
// predicate is on the device, which its lane copies back after its
// producer and waits for, the one blocking point. What a node that
// launches nothing ran after (its control predecessors' launches, a
// Switch's predicate held on the host, a loop body's Const's control
// predecessors in each iteration) travels with the values it passes on
// or makes (relay), so a kernel of another group waits for it as one
// stream would have ordered it. A device value's host copy is read back
// after its launch and all it carries (a copy of the value that carries
// more records reads it back again), so its readers, a host kernel's
// values and a Switch on it wait for the relayed records alone; a
// forwarding kernel's host copy (Identity, Reshape) carries its input's
// and its control predecessors'. Every device buffer of
// such a step is held until it ends, and it is never captured as a CUDA
// graph (graphIneligible says why, GraphStats counts it). A plan with
// control flow placed on several GPUs is refused there with
// UNIMPLEMENTED (a GPU session places it on the host instead). In every
// step the driver takes nodes in the order they become ready, a frame's
// iterations in flight bounded by its parallel_iterations; host streams
// and device lanes run several at once.
//
// # Goroutine pools
//
// Three kinds, each for work the others cannot take. Pool is the inter-op
// pool (and a group's launch pool): a FIFO of tasks that never blocks
// the submitter, for a node worth a second thread and for starting a
// step; a task runs to its end without waiting on another, and Idle says
// (one atomic load) whether a worker waits for one. Intra is the
// intra-op parallel-for: a kernel's loop split into chunks (as many as
// the loop's cost and what a chunk costs to start are worth) that the
// caller claims from the front and idle workers from the back (a thread
// keeps its end of every loop, and its data in its cache), the caller
// waiting for the last, with
// spinning between back-to-back jobs, longer while a host step runs
// (runHost tells the pool), and a small loop that runs whole only because
// no worker spins waking one for the step's next loops (wakeForSmall); a
// queue of independent tasks would neither let the caller take part nor
// wait for the split. How a host step runs its loops is its plan's
// splitGate's choice (gate.go), one of three loop modes: loopsEager (the
// Intra as it is), loopsSplit (no small loop split or woken for:
// splitLoops) and loopsWhole (every loop on the caller: wholeLoops). The
// gate times steps in its mode and, every 1024 to 8192 steps of one feed
// size, a few in a neighbouring one, and takes the faster: where the
// vCPUs sit far apart small splits, and some large ones, lose to one
// thread. A worker owns its thread (Linux, RDPID) while the process
// runs no more host steps than the pool has workers, keeps it off the CPU
// where its caller last split a loop, and goes through Go's scheduler
// every ownedRun (tend, yieldOwned, affinity_linux.go). The
// device step's lane crew (laneCrew, device_lanes.go) keeps a goroutine
// per lane of a step over several GPU groups: a lane blocks for the
// whole step on other lanes' events and publications, so lanes on a
// fixed pool could wait for a lane queued behind them (and launch pools
// may be shared and smaller than the group count); the crew grows to the
// lanes of the steps running at once and its goroutines leave after
// laneIdle without work.
//
// TF2's functional control flow never reaches a plan as such: the session
// hands Build a signature that package lower has rewritten, with every
// function call inlined and If/Case/While lowered onto Switch/Merge and
// these frames (a While's frame_name is its node's name), so the
// executor only ever runs v1 control flow.

// # Placement and the GPU step
//
// A session's placement is strict (Placement.Strict): a node naming a
// device the process does not have (CPU:1, a missing GPU, another device
// type) fails the plan with INVALID_ARGUMENT naming the node and the
// device, as TF's placer does, unless allow_soft_placement; this holds on
// a host-only session too. Build (the zero Placement) ignores device names.
//
// BuildPlaced places each node when the session has a GPU (place.go): on
// the GPU when a GPU kernel is registered for its op and dtypes and its
// factory accepts the attrs, on the host otherwise (logged once per op
// type); a CPU device annotation forces the host; an explicit GPU device
// that has no kernel, or does not exist, fails the plan with
// INVALID_ARGUMENT naming the node unless allow_soft_placement. A GPU node
// runs on the GPU its annotation names, else on GPU:0 as with TF's default
// placer (Plan.NodeGPUs); Plan.GPUs lists the GPUs a plan uses, its home
// GPU (Plan.GPU, that of its first GPU node) first. Plan.PlaceOn gives the
// same with the unpinned GPU nodes on another GPU (computed at placement
// for each GPU): the session's GPU pool picks that GPU per Run, and a step
// knows only its Runtime's groups and assignment. Consts are
// neither: their host value is computed once per plan and their device copy
// comes from the group's constant store on first GPU use. Inputs a GPU
// kernel lists in HostMemory stay on the host. Shape, ShapeN, Size and Rank
// run on the host but take a device value as it is (they read its shape
// only). A node whose outputs are all int32 and whose data inputs the host
// already holds (host nodes' outputs, constants; not feeds) runs on the
// host, as TF's int32 HostMemory kernels do, so shape arithmetic
// (StridedSlice, ConcatV2, ExpandDims of shapes) never makes a step copy
// back and wait (place_shape.go; plans are bound in topological order for
// it). Likewise a GPU kernel that reads its device values back as it runs
// (Unique, Where) runs on the host when every input is held there: a
// feed, a host or constant value, or a metadata-only GPU kernel's output
// (Reshape, Identity: kernels.Def.Forwards), which keeps its input's host
// copy in the step. Transfers lists the copies at host<->GPU edges;
// HostSyncs the points where a device step blocks mid-way.
//
// # Stream steps
//
// On host streams (streams.go, driveStreams) a step is a list of ops laid
// out in launch order: the feeds copied in on the home group's H2D stream,
// the nodes in the lanes' order (laneOrder, the device's) on their
// groups' compute streams (constants settled at the start from the
// group's store), or, for a plan with frames or dead tensors, one
// opFrames op (# Frames), the fetches copied out on its D2H stream. They
// are the host scheduler's items: an op is ready once the op before it
// on its stream has run and each op on another stream it waits for (its
// producers, or what a constant it reads ran after, less the waits the
// wait reduction finds implied by earlier ones, in launch order as a
// device would see them: layWaits, the one layout of both); a ready op
// is handed to its stream, which runs it after the jitter's delay (the
// sanitizer, MSTREAM_STREAM_JITTER), and its completion makes its
// successors ready. The step starts (constants
// settled, the first ops handed to their streams) on the home group's
// launch pool, as a device step launches there, so TF_GPU_THREAD_MODE
// picks those threads: the inter-op pool, the group's own or the
// device's shared ones. The step ends once every
// stream's last op has run (the join, whose waits are reduced in the same
// way, from the D2H stream), with no event and no host wait but a
// constant's first upload. A trace shows each copy and kernel on its
// stream and a flow for each wait kept; Stats count waits kept and left
// out, per group. The layout (the ops, their streams, the edges and
// the waits kept) depends only on the plan and the runtime (groups,
// assignment, wait reduction, which feeds are strings), so a plan keeps
// it for later steps on the same runtime (streamLayout, a few runtimes'
// worth); only the sanitizer's DropWait lays out every step.
//
// Streams of an asynchronous device (device.EventPool, a GPU) run on the
// device launcher (device_step.go, gpu.go): kernels are called on the
// launching goroutine and enqueue their own work; one group is the case
// where no node waits, several groups add the cross-stream waits below,
// each group launched from a lane of its own (device_lanes.go), with or
// without frames.
//
// On one GPU group the device step runs from one goroutine, in
// topological order: the Run's own when the plan has no host kernel and
// the group lets the caller launch (TF_GPU_THREAD_MODE global, whose
// launch pool is the inter-op pool: groups.Group.CallerLaunches), else
// one of the group's launch pool. The feeds GPU kernels read are staged
// in pinned memory (the group's host allocator) and copied in with one
// copy on the compute stream (feed_pack.go; on the H2D stream the copy
// would have to wait for compute, since memory freed in compute order
// may be reused, and compute for the copy: the same order for two
// events and two waits); GPU kernels are called on the launching
// goroutine with Context.Stream set to the compute stream and enqueue
// their work; host kernels run synchronously there, their device inputs
// copied back on the compute stream and waited for (the one blocking
// point mid-step, as a host op between GPU ops needs its input's
// values); host values a GPU kernel reads are copied in on the compute
// stream (staged inside the call, so the host tensor is free on
// return); fetches are copied into pinned staging, on compute while
// they are small (fetchOnCompute, 64 KiB in all), else on the D2H stream
// after one wait for compute, so a large copy does not hold up the next
// step's kernels; three or more are first gathered on compute into one
// block by a pack kernel (device.Packer) and leave in one copy
// (fetch_pack.go); the final event follows the last copy (one event a
// step with small fetches, and no stream wait); the host waits for it
// once and copies the fetches out of staging. Nothing is ordered by blocking the host. Events
// come from a per-context pool and go back once complete (creating and
// destroying them costs microseconds). With FULL_TRACE or MSTREAM_TRACE a
// GPU step records host launch windows (when each kernel or copy was
// enqueued) on the group's launch lane, and the device times of the same
// work on each stream's own track, from timing events recorded around it
// (gpu_trace.go; untraced steps make none), placed on the host clock by a
// per-context anchor event, with flow arrows for the H2D->compute and
// compute->D2H waits.
//
// A launched node costs the launcher no heap allocation of its own: its
// input and output slices, values, kernel context and buffer records
// (the tensor a kernel allocates is its record's own) come from the
// step's arena (gpu_arena.go), a few blocks sized to the plan that go
// back to the plan for its next step; an input's name for an error is
// formed only on an error. BenchmarkDeviceStep (device_bench_test.go)
// measures the launcher's host cost per node without a device.
//
// GPU memory: every device buffer of a step is allocated in the compute
// stream's order (stream-aware allocators are told the compute stream). A
// buffer whose last reader has been launched on compute goes back at once;
// one a fetch reads on D2H, and copies of host values into device memory,
// are held until the step ends (the final event follows the fetch
// copies, so an event and a waiter per fetch would free it only a moment
// sooner). Over several groups, a buffer read on another stream is held
// (tensorholder.Hold) until an event recorded after that read has
// completed, then freed from the holder's goroutine (a stream-aware free
// records an event, a CUDA call a host callback may not make); a
// stream's releases are gathered eight at a time into one hold, with an
// event per stream they touched, and what is still gathered at the
// step's end is freed once its final event has completed (holdOn). Errors name the node, feed or fetch and the
// device call; every stream and event call returns its own error, so no
// error outlives the step that made it (a sticky device error fails every
// later call, and so every later step).
//
// exec names no device type: what only a GPU does (pooled events, peer
// copies, timing, graph capture) it reaches through package device's
// optional interfaces, and a test (session's TestLayering) keeps exec,
// groups and session free of CUDA packages.
//
// # Steps over several GPU groups
//
// The device step (device_step.go) over several GPU groups:
// in node-level mode the groups of the plan's GPUs, each node on the one
// the TF_STREAM_FROM_FILE assignment names among its GPU's, or, in
// graph-level mode, a group of each GPU of a plan placed on several.
// Each group's nodes are launched, in a topological order that puts
// those waiting for fewer other groups first (laneOrder), by a lane of
// their own (device_lanes.go): a gstep on that group (allocator,
// constant store, streams, arena, its own table of values), the home
// group's (Groups[0]) on its launch pool, every other on a goroutine
// of the plan's lane crew, kept parked between steps (launch pools may
// be shared and smaller than the group count, and a lane blocks on
// another). A node waits (cuStreamWaitEvent
// on its compute stream) for an event recorded on the producer's compute
// stream right after the producer's launch, for each GPU predecessor,
// data or control, on another group (for a predecessor that launches
// nothing, a host kernel, NoOp or constant: the last GPU launch of each group it
// ran after, directly or through other such nodes, as one stream orders
// them), and, for a device feed, for the
// feeds' copies; with ReduceWaits the vector clocks of waits.go drop
// waits implied by earlier ones, directly or through other streams. What
// each node waits for, and which nodes record an event or publish their
// values to other lanes, is worked out once per plan and assignment
// (laneSched), by the walk that lays out host streams' waits too
// (layWaits, waits.go: the items the feeds' copies, one item on the home
// compute stream, and the nodes in laneOrder; a node that launches
// nothing no point of its stream): one layout of a plan and assignment,
// two strategies, the host streams running it and the lanes launching
// it, so the waits between nodes are the same on both
// (TestHostDeviceLayoutsAgree). A lane waits on the host only until the
// producer's event is recorded and its values published (laneSync), never for the
// device; before a node's launch, for each input and predecessor on another
// group and, as a constant is never published, for what a constant it reads or
// follows ran after on other groups (laneSched.awaits: a host kernel there
// launches nothing its device waits could follow). A fetched constant comes
// from the home lane's own constant store. A value made on another lane is copied into the reader's table
// on first use: host tensors and same-GPU device tensors are shared, a
// device value of another GPU is copied there (cuMemcpyPeerAsync on the
// reader's compute stream, after its wait), both copies held until the
// step ends; a host value's device copy, or a device value's host copy,
// is the reading lane's own, so no lane writes a value another reads.
// Feeds come in on the home group's compute stream before the other
// lanes start; once every lane has returned, the home compute stream waits for
// each other group's last launch (less those implied), and the fetches
// and the final event follow it as in a one-group step. The first error of any lane
// stops every lane (one waiting for a publication wakes up) and fails the
// step once; the final event is recorded only after every lane has
// returned, on the home D2H stream after every group's compute stream.
// A step with frames over several groups runs on the same lanes, its
// nodes made ready by the frame driver rather than listed per plan
// (device_frames.go): a node is queued on its lane only once what it
// reads was launched, so a lane never waits on the host for another;
// the nodes whose launch records an event are worked out once per plan
// and assignment (frameReaders, through the nodes that launch nothing:
// control-flow ops and host kernels pass on the launches they ran
// after, in their values and to their control successors), and the
// waits as the step goes, with the same vector
// clocks (each lane ticks and learns its own row; an event keeps its
// producer's clock). One launch mechanism so serves every device step:
// one group's launcher, or lanes, whose items are a plan's list or the
// frame driver's. A buffer released on a stream other than the one it was allocated on is
// held until an event on every stream that touched it, the releasing one
// included, has completed (each event from its stream's context), since
// its allocator reuses memory in the allocating stream's order; the hold
// keeps the chunk, not the step's record of it. Groups of one GPU must
// share a CUDA context.
//
// # CUDA graphs
//
// With a GraphCache (Runtime.Graphs, MSTREAM_CUDA_GRAPH, on by default;
// gpu_graph.go) a one-group device step is replayed from a captured CUDA
// graph when it can (a step over several groups runs node by node, on
// lanes): one cuGraphLaunch, one
// event wait, and the copies of feeds and fetches through pinned staging,
// instead of a launch per node. graphIneligible decides per plan: every
// value the host reads must be fixed by the key (plan, group, feed dtypes
// and shapes): constants, shapes, host nodes over those; a host read of a
// feed or device value, or a stateful op (variables, random numbers),
// keeps the plan on the ordinary path (logged once). A key is captured
// after one ordinary run, on the group's private capture stream, by an
// ordinary gstep with capt set, launched from one goroutine: its device
// buffers and pinned staging belong to the graph instance (never freed per step, since replays reuse
// the addresses) until the cache closes, evicts the key or drops the plan
// (GraphCache.Drop, when the session drops the plan from its cache: idle
// instances at once, one in use when its step is done); allocations
// name the group's compute stream, where replays run, so memory freed in
// compute order before the capture is reused safely. A failed capture
// ends the capture, frees what it took, marks the key failed (ordinary
// path from then on) and logs once. An instance serves one step at a time
// (a small pool per key, bounded, as keys per plan and group are, least
// recently used evicted). Traced steps run the ordinary way.
package exec
