// Command gen regenerates package tfpb from TensorFlow 2.15's .proto files.
//
// It reads the .proto files from the TF module in the Go module cache
// (downloading it when missing), strips every comment so that no TensorFlow
// text lands in this repository, and runs protoc with protoc-gen-go, mapping
// every file into the single Go package mstream/proto/tfpb. The proto package
// names (tensorflow.*) are kept, so the wire and text formats are TF's own.
//
// Needs protoc (Debian: protobuf-compiler) and protoc-gen-go at the version
// pinned in go.mod. Run from the repository root: go run ./proto/gen
package main
