package cuda

import (
	"mstream/tensor"
)

// Integer Div, TruncateDiv, FloorDiv and Pow on the GPU (src/intdiv.cu),
// for the dtypes TF 2.15 has GPU kernels for: Div, TruncateDiv and
// FloorDiv of int16, int64, uint8 and uint16, and Pow of int64. Where the
// CPU kernel fails (a zero divisor, a negative exponent) these return
// TF's GPU results instead (intdiv.cu lists them): reporting the error
// would need a synchronisation, and TF's GPU kernels do not report it
// either. TF keeps int32 on the host for all of them (its int32 kernels
// are the CPU's, with HostMemory inputs and outputs) and has no GPU
// kernel for the other integer dtypes, for FloorMod, Mod or TruncateMod
// of integers, or for integer Pow other than int64 (its int8 and int16
// kernels are JIT-only, off by default): those stay on the host here too,
// where the CPU kernel's errors stand.

func init() {
	ints := []tensor.DType{tensor.Int16, tensor.Int64, tensor.Uint8, tensor.Uint16}
	for op, name := range map[string]string{"Div": "div", "TruncateDiv": "div", "FloorDiv": "floordiv"} {
		name := name
		reg(op, "T", ints, nil, fn(func(k kctx) error { return intBin(k, name) }))
	}
	reg("Pow", "T", []tensor.DType{tensor.Int64}, nil, fn(func(k kctx) error { return intBin(k, "pow") }))
}

// intBin runs i_<name>_<dtype> over the broadcast of inputs 0 and 1
// (unsigned FloorDiv is Div, as in TF).
func intBin(k kctx, name string) error {
	a := k.Input(0)
	o, out, sa, sb, err := bcastOutput(k)
	if o == nil {
		return err
	}
	if name == "floordiv" && (a.DType == tensor.Uint8 || a.DType == tensor.Uint16) {
		name = "div"
	}
	return launchBroadcast(k, intdivs, "i_"+name+"_"+suffix(a.DType), o, a, k.Input(1), out, sa, sb)
}
