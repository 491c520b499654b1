// Command gen writes the CPU model benchmarks of the kernels issue as binary
// GraphDefs, in the form TensorFlow exports them (frozen Keras graphs):
//
//	cnn.pb          image[B,32,32,3] -> 3 x (Conv2D 3x3 SAME, FusedBatchNormV3
//	                inference, Relu, MaxPool 2x2) with 32/64/128 channels ->
//	                Reshape -> Dense 2048x10 -> Softmax "output"
//	transformer.pb  x[B,64,128] -> 2 encoder blocks (4-head self-attention via
//	                MatMul/Reshape/Transpose/BatchMatMulV2/Softmax, residual,
//	                LayerNormalization as Keras exports it, FFN 128-512-128 with
//	                the Erf GELU) -> Identity "output"
//
//	gen -out DIR
package main
