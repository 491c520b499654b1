package cuda

import (
	cu "mstream/device/cuda"
	"mstream/graph"
	"mstream/kernels"
	"mstream/kernels/cpu"
	"mstream/tensor"
)

// Random ops on the GPU (src/random.cu): RandomUniform,
// RandomStandardNormal and TruncatedNormal (float, double, half,
// bfloat16) and RandomUniformInt (int32, int64), with TF's GPU
// HostMemory args (shape; minval and maxval).
//
// Each kernel holds a cpu.RandomStream built from its node, the CPU
// kernel's own state: Draw validates, allocates and reserves the call's
// Philox blocks on the host (an atomic add, no device work), and one
// launch turns those blocks into values. So a GPU kernel's n-th call
// returns the CPU kernel's n-th call for the same (seed, seed2), bit for
// bit for the uniforms and integers; the normals may differ in the last
// bit of a double (random.cu says why). TF's GPU kernels take an int32
// shape only; an int64 shape is accepted here as on the CPU.

func init() {
	floats := []tensor.DType{tensor.Float, tensor.Double, tensor.Half, tensor.Bfloat16}
	for _, op := range []string{"RandomUniform", "RandomStandardNormal", "TruncatedNormal"} {
		reg(op, "dtype", floats, []string{"shape"}, randomFactory)
	}
	reg("RandomUniformInt", "Tout", []tensor.DType{tensor.Int32, tensor.Int64}, []string{"shape", "minval", "maxval"}, randomFactory)
}

// randKernels names random.cu's kernel of each distribution.
var randKernels = map[int]string{cpu.RandomUniform: "rand_uniform_", cpu.RandomNormal: "rand_normal_",
	cpu.RandomTruncated: "rand_truncated_", cpu.RandomInt: "rand_int_"}

func randomFactory(n *graph.Node) (kernels.Kernel, error) {
	s, err := cpu.NewRandomStream(n)
	if err != nil {
		return nil, err
	}
	return fn(func(k kctx) error { return randomGPU(k, s) })(n)
}

func randomGPU(k kctx, s *cpu.RandomStream) error {
	d, err := s.Draw(k.Context)
	if err != nil {
		return err
	}
	o := d.Out
	n := o.NumElements()
	if n == 0 {
		return nil
	}
	name := randKernels[s.Dist()] + suffix(o.DType)
	key, hi := s.Key(), s.Hi()
	per := int32(d.Per)
	if s.Dist() == cpu.RandomTruncated {
		per = 0 // the kernel's dbl flag instead: the CPU rounds each draw to float unless double
		if o.DType == tensor.Double {
			per = 1
		}
	}
	var a cu.Args
	a.Ptr(ptr(o)).I64(n).I32(per).I64(int64(d.Base)).I32(int32(hi[0])).I32(int32(hi[1])).I32(int32(key[0])).I32(int32(key[1]))
	if s.Dist() == cpu.RandomInt {
		a.I64(int64(d.Lo)).I64(int64(d.Span))
	}
	// One thread per Philox block (per element for TruncatedNormal).
	items := n
	if s.Dist() != cpu.RandomTruncated {
		items = (n + int64(d.Per) - 1) / int64(d.Per)
	}
	return k.launchN(randoms, name, items, &a)
}
