// Package trace turns what the executor records about a step into TF's
// RunMetadata.step_stats and into Chrome trace JSON (chrome://tracing,
// Perfetto), so a user can see streams overlap.
//
// A Step is a list of Slices, one per kernel or copy, each on a lane: a
// stream of a group (Stream >= 0) or, for steps run on the inter-op pool
// of the host device, the group's pool (Stream < 0); GPU steps put the
// host's launch windows on a launch lane (Stream < 0, role "launch:...")
// and the device times of the same work, from timing events, on the
// streams' lanes (exec/gpu_trace.go). Flows are the
// cross-stream event waits the executor inserted: the consumer slice could
// not start before the producer slice had ended.
//
// RunMetadata follows TF's layout for GPU steps: one DeviceStepStats per
// lane, named "<device>/stream:<id>" (the pool lane keeps the plain device
// name, as TF's CPU steps do), with thread_names naming the group and role
// so TF's timeline tools label the rows. Copies are node stats named after
// the tensor with timeline labels "MEMCPYHtoD"/"MEMCPYDtoH", as TF's GPU
// tracer labels them.
//
// The Chrome trace has one process per group and one thread per stream;
// each slice is an "X" event, each flow an "s"/"f" pair. A Recorder keeps
// the steps of a session (bounded; the oldest are dropped) until it is
// written, at session close for MSTREAM_TRACE or on MS_SessionWriteTrace.
//
// CheckChrome reads such a trace back and checks its structure (named
// processes and tracks, non-overlapping slices per stream, every flow
// bound from a producer slice to a consumer slice's start); tests of this
// package and of the session use it on real steps.
//
// Invariants: slice IDs are unique within a step and flows name existing
// slices; the JSON is written with times relative to the first recorded
// step, in microseconds. Recorder.mu guards its steps; nothing else locks.
package trace
