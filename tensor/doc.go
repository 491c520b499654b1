// Package tensor is the host representation of a TF tensor: a DType with
// TF's numbering (DT_* values, ref types offset by 100), a Shape, and the
// elements, plus conversion from and to TensorProto (tensor_content, the
// typed *_val fields with a short list repeated to fill the shape, as TF
// does) and float16/bfloat16 conversions.
//
// Invariants: fixed-size dtypes keep their elements row-major in Buf, which
// New allocates 64-byte aligned and zeroed (hostmem); DT_STRING keeps one
// byte string per element in Strs and no Buf; DT_VARIANT one value per
// element in Vars (a *List for a TensorList), never changed once set; a
// TensorArray's DT_RESOURCE handle keeps its serialized handle in Strs and
// its *Array in Vars (the Array itself is mutable, under its Mu). A
// Tensor handed between kernels is read-only: a kernel writes only tensors
// it allocated, and reshaping shares the buffer.
package tensor
