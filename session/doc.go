// Package session is what TF_NewSession returns: a Session runs one graph
// with the options of a ConfigProto (thread pools, placement, GPU options)
// and the TF_* knobs, and serves Run, PRunSetup/PRun, Close and the device
// list. It is the one reader of envcfg: the knobs are read once, when the
// session is made, and a bad value fails New; lower layers get typed config.
//
// A Run looks up (or builds once and caches) the exec plan for its exact set
// of feeds, fetches and targets, picks a stream group, and executes the plan.
//
// Invariants: many goroutines may call Run on one Session at once; an error
// in one Run leaves the session usable for the next; feeds are never kept
// after Run returns (callers reuse their buffers) and fetched tensors belong
// to the caller; the graph may grow while the session lives, and the plan
// cache is keyed by the graph's version, so a Run after a change plans anew.
// Close waits for the Runs in flight, then releases the pools and groups;
// later calls fail with CANCELLED.
package session
