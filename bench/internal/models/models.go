package models

import (
	"fmt"
	"math"

	"mstream/bench/internal/gdb"
	"mstream/proto/tfpb"
)

const f32 = gdb.F32

// CNN is the small CNN: image[B,32,32,3] -> 3 x (Conv2D 3x3 SAME,
// FusedBatchNormV3 inference, Relu, MaxPool 2x2) with 32/64/128 channels ->
// Reshape -> Dense 2048x10 -> Softmax "output".
func CNN() *tfpb.GraphDef {
	b := gdb.New(3)
	x := b.Placeholder("image", f32, -1, 32, 32, 3)
	in := int64(3)
	for i, ch := range []int64{32, 64, 128} {
		p := fmt.Sprintf("block%d", i+1)
		w := b.Weights(p+"/conv/kernel", math.Sqrt(2/float64(9*in)), 0, 3, 3, in, ch)
		x = b.Add(p+"/conv/Conv2D", "Conv2D", []string{x, w}, gdb.Attrs{
			"T": gdb.Type(f32), "strides": gdb.Ints(1, 1, 1, 1), "padding": gdb.Str("SAME"),
			"data_format": gdb.Str("NHWC"), "dilations": gdb.Ints(1, 1, 1, 1), "use_cudnn_on_gpu": gdb.Bool(true)})
		gamma := b.Weights(p+"/bn/gamma", 0.1, 1, ch)
		beta := b.Weights(p+"/bn/beta", 0.1, 0, ch)
		mean := b.Weights(p+"/bn/moving_mean", 0.1, 0, ch)
		variance := b.Weights(p+"/bn/moving_variance", 0.05, 1, ch)
		x = b.Add(p+"/bn/FusedBatchNormV3", "FusedBatchNormV3", []string{x, gamma, beta, mean, variance}, gdb.Attrs{
			"T": gdb.Type(f32), "U": gdb.Type(f32), "epsilon": gdb.Float(0.001), "data_format": gdb.Str("NHWC"),
			"is_training": gdb.Bool(false), "exponential_avg_factor": gdb.Float(1)})
		x = b.Unary(p+"/Relu", "Relu", x)
		x = b.Add(p+"/pool/MaxPool", "MaxPool", []string{x}, gdb.Attrs{
			"T": gdb.Type(f32), "ksize": gdb.Ints(1, 2, 2, 1), "strides": gdb.Ints(1, 2, 2, 1),
			"padding": gdb.Str("VALID"), "data_format": gdb.Str("NHWC")})
		in = ch
	}
	x = b.Add("flatten/Reshape", "Reshape", []string{x, b.Int32s("flatten/Const", []int32{-1, 4 * 4 * 128}, 2)},
		gdb.Attrs{"T": gdb.Type(f32), "Tshape": gdb.Type(gdb.I32)})
	x = b.Dense("head", x, []int64{4 * 4 * 128, 10}, false)
	b.Unary("output", "Softmax", x)
	return b.G
}

// The transformer's sizes: sequence length and model width (its input is
// [B, SeqLen, Model]), heads and FFN width.
const (
	SeqLen = 64
	Model  = 128
	heads  = 4
	ffn    = 512
)

// layerNorm is keras.layers.LayerNormalization as a frozen graph has it:
// moments over the last axis, then the batchnorm arithmetic.
func layerNorm(b *gdb.B, p, x string) string {
	axes := b.Int32s(p+"/moments/mean/reduction_indices", []int32{-1}, 1)
	red := gdb.Attrs{"T": gdb.Type(f32), "Tidx": gdb.Type(gdb.I32), "keep_dims": gdb.Bool(true)}
	mean := b.Add(p+"/moments/mean", "Mean", []string{x, axes}, red)
	sg := b.Unary(p+"/moments/StopGradient", "StopGradient", mean)
	sq := b.Binary(p+"/moments/SquaredDifference", "SquaredDifference", x, sg)
	axes2 := b.Int32s(p+"/moments/variance/reduction_indices", []int32{-1}, 1)
	variance := b.Add(p+"/moments/variance", "Mean", []string{sq, axes2}, red)
	gamma := b.Weights(p+"/gamma", 0.1, 1, Model)
	beta := b.Weights(p+"/beta", 0.1, 0, Model)
	v := b.Binary(p+"/batchnorm/add", "AddV2", variance, b.Scalar(p+"/batchnorm/add/y", 0.001))
	r := b.Unary(p+"/batchnorm/Rsqrt", "Rsqrt", v)
	m := b.Binary(p+"/batchnorm/mul", "Mul", r, gamma)
	m1 := b.Binary(p+"/batchnorm/mul_1", "Mul", x, m)
	m2 := b.Binary(p+"/batchnorm/mul_2", "Mul", mean, m)
	s := b.Binary(p+"/batchnorm/sub", "Sub", beta, m2)
	return b.Binary(p+"/batchnorm/add_1", "AddV2", m1, s)
}

// gelu is keras.activations.gelu(approximate=False): 0.5 x (1 + erf(x/sqrt 2)).
func gelu(b *gdb.B, p, x string) string {
	d := b.Binary(p+"/truediv", "RealDiv", x, b.Scalar(p+"/Cast/x", float32(math.Sqrt2)))
	e := b.Unary(p+"/Erf", "Erf", d)
	a := b.Binary(p+"/add", "AddV2", b.Scalar(p+"/add/x", 1), e)
	h := b.Binary(p+"/mul", "Mul", b.Scalar(p+"/mul/x", 0.5), x)
	return b.Binary(p+"/mul_1", "Mul", h, a)
}

func reshape(b *gdb.B, name, x string, dims ...int32) string {
	return b.Add(name, "Reshape", []string{x, b.Int32s(name+"/shape", dims, int64(len(dims)))},
		gdb.Attrs{"T": gdb.Type(f32), "Tshape": gdb.Type(gdb.I32)})
}

func transpose(b *gdb.B, name, x string, perm ...int32) string {
	return b.Add(name, "Transpose", []string{x, b.Int32s(name+"/perm", perm, int64(len(perm)))},
		gdb.Attrs{"T": gdb.Type(f32), "Tperm": gdb.Type(gdb.I32)})
}

// Transformer is the 2-block encoder: x[B,SeqLen,Model] -> 2 x (4-head
// self-attention, residual, LayerNormalization, FFN with the Erf GELU) ->
// Identity "output".
func Transformer() *tfpb.GraphDef {
	b := gdb.New(4)
	x := b.Placeholder("x", f32, -1, SeqLen, Model)
	dh := int32(Model / heads)
	for l := 0; l < 2; l++ {
		p := fmt.Sprintf("encoder_%d", l)
		flat := reshape(b, p+"/attention/flat", x, -1, Model)
		proj := func(name string) string {
			y := b.Dense(p+"/attention/"+name, flat, []int64{Model, Model}, false)
			y = reshape(b, p+"/attention/"+name+"/split", y, -1, SeqLen, heads, dh)
			return transpose(b, p+"/attention/"+name+"/heads", y, 0, 2, 1, 3)
		}
		q, k, v := proj("query"), proj("key"), proj("value")
		s := b.Add(p+"/attention/scores", "BatchMatMulV2", []string{q, k}, gdb.Attrs{"T": gdb.Type(f32), "adj_x": gdb.Bool(false), "adj_y": gdb.Bool(true)})
		s = b.Binary(p+"/attention/scale", "Mul", s, b.Scalar(p+"/attention/scale/y", float32(1/math.Sqrt(float64(dh)))))
		s = b.Unary(p+"/attention/Softmax", "Softmax", s)
		o := b.Add(p+"/attention/context", "BatchMatMulV2", []string{s, v}, gdb.Attrs{"T": gdb.Type(f32), "adj_x": gdb.Bool(false), "adj_y": gdb.Bool(false)})
		o = transpose(b, p+"/attention/merge", o, 0, 2, 1, 3)
		o = reshape(b, p+"/attention/merge/flat", o, -1, Model)
		o = b.Dense(p+"/attention/output", o, []int64{Model, Model}, false)
		o = reshape(b, p+"/attention/output/seq", o, -1, SeqLen, Model)
		x = layerNorm(b, p+"/ln_1", b.Binary(p+"/residual_1", "AddV2", x, o))
		f := reshape(b, p+"/ffn/flat", x, -1, Model)
		f = b.Dense(p+"/ffn/in", f, []int64{Model, ffn}, false)
		f = gelu(b, p+"/ffn/gelu", f)
		f = b.Dense(p+"/ffn/out", f, []int64{ffn, Model}, false)
		f = reshape(b, p+"/ffn/seq", f, -1, SeqLen, Model)
		x = layerNorm(b, p+"/ln_2", b.Binary(p+"/residual_2", "AddV2", x, f))
	}
	b.Unary("output", "Identity", x)
	return b.G
}
