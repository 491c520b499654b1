// Package status is the one error type of mstream: a TF error code and a
// message. Every layer returns *Error (or wraps one with %w) so that the C API
// can hand the caller TF's code unchanged.
//
// Invariants: a Code is TF's number (tsl/c/tsl_status.h), so capi hands it to
// TF_SetStatus unchanged. CodeOf reads the outermost *Error in a chain (nil is
// OK, an error without one is Unknown); Wrap and Errorf with %w add context
// without changing the code, and Errorf always sets the code it is given.
// Messages name what is at fault (node, input, variable, file), as TF's do.
package status
