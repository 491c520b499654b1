package status

import (
	"errors"
	"fmt"
)

// Code is a TF_Code value; the numbers are TF's.
type Code int32

// TF's error codes, numbered as in tsl/c/tsl_status.h.
const (
	OK                 Code = 0
	Cancelled          Code = 1
	Unknown            Code = 2
	InvalidArgument    Code = 3
	DeadlineExceeded   Code = 4
	NotFound           Code = 5
	AlreadyExists      Code = 6
	PermissionDenied   Code = 7
	ResourceExhausted  Code = 8
	FailedPrecondition Code = 9
	Aborted            Code = 10
	OutOfRange         Code = 11
	Unimplemented      Code = 12
	Internal           Code = 13
	Unavailable        Code = 14
	DataLoss           Code = 15
	Unauthenticated    Code = 16
)

var codeNames = [...]string{
	"OK", "CANCELLED", "UNKNOWN", "INVALID_ARGUMENT", "DEADLINE_EXCEEDED",
	"NOT_FOUND", "ALREADY_EXISTS", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED",
	"FAILED_PRECONDITION", "ABORTED", "OUT_OF_RANGE", "UNIMPLEMENTED",
	"INTERNAL", "UNAVAILABLE", "DATA_LOSS", "UNAUTHENTICATED",
}

// String returns TF's spelling of the code, e.g. "INVALID_ARGUMENT".
func (c Code) String() string {
	if c >= 0 && int(c) < len(codeNames) {
		return codeNames[c]
	}
	return fmt.Sprintf("CODE(%d)", int32(c))
}

// Error is an error with a TF code. Inner, when set, is the error it wraps.
type Error struct {
	Code  Code
	Msg   string
	Inner error
}

func (e *Error) Error() string { return e.Msg }
func (e *Error) Unwrap() error { return e.Inner }

// New returns an error with the given code and message.
func New(c Code, msg string) error { return &Error{Code: c, Msg: msg} }

// Errorf formats a message; a %w verb keeps the wrapped error reachable, but
// the code is always c.
func Errorf(c Code, format string, args ...any) error {
	e := fmt.Errorf(format, args...)
	return &Error{Code: c, Msg: e.Error(), Inner: errors.Unwrap(e)}
}

// CodeOf returns the TF code of err: OK for nil, the code of the outermost
// *Error in the chain, Unknown otherwise.
func CodeOf(err error) Code {
	if err == nil {
		return OK
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return Unknown
}

// Wrap prefixes err's message with context while keeping its code.
func Wrap(err error, format string, args ...any) error {
	if err == nil {
		return nil
	}
	return &Error{Code: CodeOf(err), Msg: fmt.Sprintf(format, args...) + ": " + err.Error(), Inner: err}
}

// InvalidArg is shorthand for Errorf(InvalidArgument, ...).
func InvalidArg(format string, args ...any) error { return Errorf(InvalidArgument, format, args...) }
