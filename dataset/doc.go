// Package dataset owns tf.data in graphs: the dataset ops, whose DT_VARIANT
// outputs hold a Dataset, and the iterator ops, whose DT_RESOURCE handles
// name an iterator resource in the session's resource.Manager. The
// executor runs them as any other host kernel; nothing in exec or session
// knows of them.
//
// # Datasets and iterators
//
// A Dataset is an immutable description (TensorDataset, TensorSliceDataset,
// RangeDataset, the transformations over an input dataset, the file
// readers), made afresh each time its op runs; its tensors are copied out
// of the step's memory when it is made, so it outlives the step. Iterate
// starts an independent pass (an Iterator). Transformations that call a
// function of the graph's library (map, parallel map, flat map, filter,
// a one-shot iterator's dataset factory) hold a Func: the function as a
// plan of its own, built when the session builds the plan of the node
// (kernels.Binding gives the graph, whose read lock is then held),
// inlined and lowered by package lower like any call, and run on the host
// with a goroutine per ready branch, so a function never waits for the
// step that called it.
//
// Shuffle draws from TF's Philox4x32-10 stream with TF's seed generator
// and ring buffer, so a graph with its seeds set yields TF's order
// (checked against TF by dataset_test.go). Prefetch runs its input on a
// goroutine of its own, ahead of the consumer; parallel map keeps up to
// num_parallel_calls calls in flight and hands results out in order.
// Optimize and Model datasets pass their input through.
//
// # Invariants
//
//   - An iterator resource is per session (the session's Manager) and
//     named as TF names it: container and shared_name, else the node's
//     name; one-shot iterators run their factory once per session.
//   - Concurrent Runs share an iterator resource: its mutex serialises
//     IteratorGetNext, so every element is delivered exactly once, in the
//     pass's order. After the last element every call is OUT_OF_RANGE "End
//     of sequence" until MakeIterator starts a new pass; the session stays
//     usable.
//   - An Iterator's Next is never called concurrently; an iterator with
//     background work (prefetch, parallel map) owns its goroutines and
//     Close stops and waits for them. Replacing or deleting an iterator
//     resource closes its pass.
//   - Errors are TF's codes: a corrupt or truncated TFRecord is DATA_LOSS
//     naming the file and the record's offset, a missing file NOT_FOUND
//     naming it. An element's error fails that element's GetNext only.
//   - Every allocation sized by data (batches, slices, records, lines) is
//     checked against the creating kernel's hostmem.Limit first, and so are
//     the elements a batch, shuffle or prefetch buffer holds at once.
//   - Static shapes are TF's (shapes.go): datasets and handles are
//     scalars, IteratorGetNext's outputs have its output_shapes.
//   - A session's Close closes its iterator resources (resource.Closer).
//   - A Func's plan is closed (exec.Plan.Close) by its last owner: the
//     kernel that built it, when that kernel's plan closes it
//     (kernels.Closer), and each iterator over a dataset calling it, from
//     Iterate to Close; so a pass outlives the plan that made it (a
//     session drops MakeIterator's plan when the graph grows) and no
//     function plan outlives its session. LiveFuncs counts those open.
//
// # Locking
//
// iteratorRes.mu is held for one Next of the whole pass (it may wait for a
// prefetch buffer or a function's step, never for a lock of the session).
// A prefetch iterator's mu guards only its buffer, never held while its
// input runs. shuffleDS.mu guards the dataset's seed generator.
package dataset
