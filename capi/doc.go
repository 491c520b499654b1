// Command capi is libmstream.so: the TensorFlow 2.15 C API over mstream's Go
// runtime, built with -buildmode=c-shared.
//
// It is a translator only. Go exports internal names (msNewGraph, ...); the
// real TF_* functions are small C functions in the .c files of this package,
// compiled against the headers in include/, so the C compiler checks every
// signature we ship. Opaque handles are C structs holding a cgo.Handle; a Go
// pointer never reaches C, and memory that C keeps is allocated with malloc.
// Every export recovers a panic into a TF_INTERNAL status.
package main
