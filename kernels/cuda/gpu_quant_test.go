package cuda

import (
	"testing"

	"mstream/kernels/kerneltest"
	"mstream/tensor"
)

// TestFakeQuant compares the FakeQuant kernels with the CPU's bit for bit
// (both round every float32 operation on its own) on inputs spanning the
// grid and beyond, for every num_bits and both ranges, with one grid
// (Args, Vars) and one per channel (including a channel of min = max = 0),
// at sizes that take many blocks.
func TestFakeQuant(t *testing.T) {
	r := newRand(t)
	const exact = 1e-30
	for bits := int64(2); bits <= 16; bits += 7 {
		for _, narrow := range []bool{false, true} {
			at := kerneltest.Attrs{"num_bits": kerneltest.AInt(bits), "narrow_range": kerneltest.ABool(narrow)}
			x := kerneltest.RandRange(r, tensor.Float, tensor.Shape{300, 67}, -7, 7)
			args := kerneltest.Attrs{"min": kerneltest.AFloat(-5.3), "max": kerneltest.AFloat(2.1)}
			for k, v := range at {
				args[k] = v
			}
			check(t, node("FakeQuantWithMinMaxArgs", args, x), []*tensor.Tensor{x}, exact)
			for _, mm := range [][2]float32{{-6, 6}, {-0.7, 0.2}, {0, 0}, {0.3, 5}, {-4, -1}} {
				in := []*tensor.Tensor{x, tensor.FromF32(tensor.Shape{}, []float32{mm[0]}), tensor.FromF32(tensor.Shape{}, []float32{mm[1]})}
				check(t, node("FakeQuantWithMinMaxVars", at, in...), in, exact)
			}
			lo, hi := kerneltest.RandRange(r, tensor.Float, tensor.Shape{67}, -6, 0), kerneltest.RandRange(r, tensor.Float, tensor.Shape{67}, 0.1, 6)
			lo.F32()[3], hi.F32()[3] = 0, 0
			in := []*tensor.Tensor{x, lo, hi}
			check(t, node("FakeQuantWithMinMaxVarsPerChannel", at, in...), in, exact)
		}
	}
}

// TestBNGlobal compares BatchNormWithGlobalNormalization with the CPU
// (float and half), with and without the gamma scale.
func TestBNGlobal(t *testing.T) {
	r := newRand(t)
	for _, dt := range []tensor.DType{tensor.Float, tensor.Half} {
		for _, s := range []tensor.Shape{{4, 17, 9, 32}, {1, 1, 1, 5}, {2, 3, 3, 1}} {
			for _, scale := range []bool{false, true} {
				d := tensor.Shape{s[3]}
				in := []*tensor.Tensor{kerneltest.RandRange(r, dt, s, -3, 3), kerneltest.RandRange(r, dt, d, -1, 1),
					kerneltest.RandRange(r, dt, d, 0.05, 2), kerneltest.RandRange(r, dt, d, -1, 1),
					kerneltest.RandRange(r, dt, d, 0.5, 1.5)}
				at := kerneltest.Attrs{"variance_epsilon": kerneltest.AFloat(1e-3), "scale_after_normalization": kerneltest.ABool(scale)}
				check(t, node("BatchNormWithGlobalNormalization", at, in...), in, 0)
			}
		}
	}
}
