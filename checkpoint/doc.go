// Package checkpoint reads and writes TensorFlow's V2 checkpoints (the
// tensor bundle of tensorflow/core/util/tensor_bundle) byte for byte as TF
// 2.15 does, so that either side reads what the other wrote.
//
// A checkpoint at a prefix is a `prefix.index` file and data shards
// `prefix.data-NNNNN-of-NNNNN`. The index is a LevelDB-format table
// (table.go): the empty key holds a BundleHeaderProto (shard count,
// endianness, version), every other key a BundleEntryProto (dtype, shape,
// shard, offset and size in the shard, masked CRC32C of the bytes, and for
// a partitioned tensor the slices stored under their own OrderedCode keys,
// slice.go). A fixed-size tensor is its raw little-endian bytes; a string
// tensor is the varint lengths, a masked CRC32C of the lengths, then the
// bytes.
//
// Invariants: nothing read from a file is trusted. Every length, offset,
// handle and count is checked against the bytes that are there before
// anything is allocated from it, and every checksum is verified, so a
// corrupt or truncated file is a DATA_LOSS error naming the file, never a
// panic or an allocation the file's size does not justify (the fuzz test
// holds the reader to it). A missing file is NOT_FOUND naming it. Writes go
// to temporary files renamed into place only when complete, data first and
// index last, so a checkpoint is never left half-written under its final
// names. Variant tensors are not supported (mstream has no variant
// values): saving or restoring one is UNIMPLEMENTED naming the key.
//
// Package checkpoint knows nothing of kernels or sessions; the SaveV2,
// RestoreV2 and MergeV2Checkpoints kernels of kernels/cpu are thin over
// Writer, Reader and Merge.
package checkpoint
