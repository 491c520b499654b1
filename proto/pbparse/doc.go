// Package pbparse parses TensorFlow's protocol buffers from text and binary
// the way TF does, with errors a user can act on.
//
// Text format is strict, as TF's own parser is: an unknown field, a value of
// the wrong type or any other garbage is INVALID_ARGUMENT naming the message,
// the line and the column ("Invalid text GraphDef: line 2, column 3: unknown
// field: nodes"). Comments (# to the end of the line) are legal and skipped;
// an empty text is an empty message, as in TF. Every text proto the library
// reads (GraphDef, ConfigProto, RunOptions, ...) goes through Text, so none
// silently drops a misspelt field.
//
// Binary format keeps unknown fields, as TF's parser does (they survive a
// round trip), and a failure says which input failed and at which byte the
// first top-level field that does not parse starts, since the protobuf
// runtime's own message names neither.
package pbparse
