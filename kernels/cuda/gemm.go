package cuda

import (
	_ "embed"
	"fmt"
	"math/bits"

	cu "mstream/device/cuda"
	"mstream/status"
	"mstream/tensor"
)

// Every GEMM of MatMul, BatchMatMulV2/V3, _FusedMatMul and Einsum goes
// through gemmEpi, which picks the implementation:
//
//   - the small-batch kernel (src/gemm.cu) for float, half and bfloat16
//     when the mode (MSTREAM_GPU_SMALL_GEMM, cu.SmallGEMM) is 1, or when
//     it is auto and smallWins says so: one launch with the bias and
//     activation fused, and a host cost of a launch (a cuBLASLt call
//     costs 2-3 times that in host CPU);
//   - otherwise cuBLAS (Gemm, GemmEx) or, for a bias with no activation
//     or ReLU in float and double, one cuBLASLt call with that epilogue;
//     any other epilogue is one bias_act kernel after the GEMM.

//go:embed src/gemm.cu
var gemmSrc string

var gemms = &cu.Program{Name: "gemm.cu", Source: commonSrc + typesSrc + gemmSrc}

// smallGEMMRows is auto's bound on the rows of the left operand (m).
const smallGEMMRows = 16

// smallGEMMCapturedKN bounds k·n for auto's choice on a capturing stream.
const smallGEMMCapturedKN = 1 << 18

// smallWins is auto's rule. Launched node by node, a GEMM's host cost
// sets the pace (on the H100, TestKernelCPUCost: a cuBLASLt call 13.3 us
// of host CPU, the small-batch kernel 5.2 us), so every product of at
// most smallGEMMRows rows takes the small-batch kernel. In a captured
// CUDA graph only device time counts: there it takes the kernel only
// where TestSmallGEMMDeviceTime measured it ahead of cuBLASLt (at 16
// rows: 1.06-1.47x for DLRM's layers, k·n up to 415x512; behind for
// 512x1024 and larger, for n = 1 and for batched products).
func smallWins(capturing bool, m, kk, n, batch int64) bool {
	if m > smallGEMMRows {
		return false
	}
	if !capturing {
		return true
	}
	return batch == 1 && n >= 64 && kk*n <= smallGEMMCapturedKN
}

// smallGEMMTypes are the dtypes the small-batch kernel computes (in
// float).
var smallGEMMTypes = map[tensor.DType]string{tensor.Float: "f32", tensor.Half: "f16", tensor.Bfloat16: "bf16"}

// actCodes number the fused activations as gemm.cu's sg_act does.
var actCodes = map[string]int32{"": 0, "Relu": 1, "Relu6": 2, "Elu": 3, "LeakyRelu": 4, "Tanh": 5, "Sigmoid": 6,
	"GeluExact": 7, "GeluApproximate": 8}

// epi is a GEMM's epilogue: the bias (nil: none), then the activation.
type epi struct {
	bias  *tensor.Tensor
	act   string
	alpha float32 // LeakyRelu's
}

// smallGEMMMode is the device's MSTREAM_GPU_SMALL_GEMM (the dry run's
// own, in tests).
func (k kctx) smallGEMMMode() cu.SmallGEMM {
	if dryRun != nil {
		return dryRun.smallGEMM
	}
	return k.s.Context().Device().SmallGEMM()
}

// capturing says whether k's stream is capturing a CUDA graph (never in
// the dry run).
func (k kctx) capturing() bool {
	return dryRun == nil && k.s.CaptureBegun()
}

// useSmallGEMM is the choice rule of the package doc.
func useSmallGEMM(mode cu.SmallGEMM, capturing bool, dt tensor.DType, m, kk, n, batch int64) bool {
	if _, ok := smallGEMMTypes[dt]; !ok || batch > 65535 || m > 16*65535 {
		return false
	}
	switch mode {
	case cu.SmallGEMMOff:
		return false
	case cu.SmallGEMMForce:
		return true
	}
	return smallWins(capturing, m, kk, n, batch)
}

// gemmEpi computes o = act(op(a)·op(b) + bias) over batch matrices
// (strides in elements, 0 broadcasts one side), the epilogue e applied
// to every product.
func gemmEpi(k kctx, o, a, b *tensor.Tensor, ta, tb bool, m, kk, n, batch, sa, sb int64, e epi) error {
	if o.NumElements() == 0 {
		return nil
	}
	if useSmallGEMM(k.smallGEMMMode(), k.capturing(), a.DType, m, kk, n, batch) {
		return smallGEMM(k, o, a, b, ta, tb, m, kk, n, batch, sa, sb, e)
	}
	if e.bias != nil && batch == 1 && kk > 0 && (e.act == "" || e.act == "Relu") &&
		(a.DType == tensor.Float || a.DType == tensor.Double) {
		g := cu.GemmArgs{Double: a.DType == tensor.Double, TF32: allowTF32.Load(), TransA: ta, TransB: tb,
			M: int(m), N: int(n), K: int(kk), A: ptr(a), B: ptr(b), C: ptr(o)}
		err := k.gemmBias(g, ptr(e.bias), e.act == "Relu")
		if err == nil {
			return nil
		}
		if status.CodeOf(err) != status.Unimplemented {
			return err
		}
	}
	if kk == 0 {
		if err := k.memset(ptr(o), 0, len(o.Buf)); err != nil {
			return err
		}
	} else {
		g := cu.GemmArgs{Double: a.DType == tensor.Double, TF32: allowTF32.Load(), TransA: ta, TransB: tb,
			M: int(m), N: int(n), K: int(kk), A: ptr(a), B: ptr(b), C: ptr(o), Batch: int(batch),
			StrideA: sa, StrideB: sb, StrideC: m * n}
		var err error
		if t, ok := gemmExTypes[a.DType]; ok {
			err = k.gemmEx(g, t) // gemmex.go
		} else {
			err = k.gemm(g)
		}
		if err != nil {
			return err
		}
	}
	if e.bias == nil && e.act == "" {
		return nil
	}
	var args cu.Args
	bp := uint64(0)
	if e.bias != nil {
		bp = ptr(e.bias)
	}
	args.Ptr(ptr(o)).Ptr(bp).I64(o.NumElements()).I64(n).I32(actCodes[e.act]).F32(e.alpha)
	return k.launchN(gemms, "bias_act_"+suffix(o.DType), o.NumElements(), &args)
}

// smallGEMM launches gemm.cu's small_gemm for the product (see the
// program's comment for the layout).
func smallGEMM(k kctx, o, a, b *tensor.Tensor, ta, tb bool, m, kk, n, batch, sa, sb int64, e epi) error {
	r := int64(1)
	for r < m && r < 16 {
		r *= 2
	}
	// The widest column tile and the most rows per block (best reuse of
	// each value read) that still give every multiprocessor a block:
	// narrower tiles down to 8 columns (32-byte reads of b), then row
	// chunks down to 4 rows (b read again per chunk, from L2).
	cb, sms := int64(32), int64(k.sms())
	blocks := func() int64 { return (n + cb - 1) / cb * ((m + r - 1) / r) * batch }
	for blocks() < sms && cb > 8 {
		cb /= 2
	}
	for blocks() < sms && r > 4 {
		r /= 2
	}
	chunks := (m + r - 1) / r
	b2i := func(v bool) int32 {
		if v {
			return 1
		}
		return 0
	}
	bp := uint64(0)
	if e.bias != nil {
		bp = ptr(e.bias)
	}
	var args cu.Args
	args.Ptr(ptr(o)).Ptr(ptr(a)).Ptr(ptr(b)).Ptr(bp).I64(m).I64(n).I64(kk).I32(b2i(ta)).I32(b2i(tb)).I32(int32(cb)).
		I64(sa).I64(sb).I64(m * n).I32(actCodes[e.act]).F32(e.alpha)
	return k.launch3(gemms, smallGEMMNames[a.DType][bits.TrailingZeros64(uint64(r))], cu.Dim3{X: uint32((n + cb - 1) / cb), Y: uint32(chunks), Z: uint32(batch)},
		cu.D1(256), 0, &args)
}

// smallGEMMNames[dt][log2 rows] names the kernels, made once so that a
// launch builds no string.
var smallGEMMNames = func() map[tensor.DType][5]string {
	m := map[tensor.DType][5]string{}
	for dt, suf := range smallGEMMTypes {
		var names [5]string
		for i := range names {
			names[i] = fmt.Sprintf("small_gemm_%d_%s", 1<<i, suf)
		}
		m[dt] = names
	}
	return m
}()

// gemmBias is the stream's cuBLASLt GEMM with a bias (+ReLU) epilogue;
// the dry run has none (UNIMPLEMENTED: the caller's fallback runs).
func (k kctx) gemmBias(g cu.GemmArgs, bias uint64, relu bool) error {
	if dryRun != nil {
		return status.Errorf(status.Unimplemented, "dry run: no cuBLASLt")
	}
	if err := k.s.GemmBias(g, bias, relu); err != nil {
		if status.CodeOf(err) == status.Unimplemented {
			return err
		}
		return k.wrap(err)
	}
	return nil
}
