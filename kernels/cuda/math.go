package cuda

import (
	"math"

	cu "mstream/device/cuda"
	"mstream/graph"
	"mstream/kernels"
	"mstream/status"
	"mstream/tensor"
)

// Unary math and activations (src/math.cu), registered for the dtypes the
// CPU kernels register.

var (
	gpuFloats   = []tensor.DType{tensor.Float, tensor.Double, tensor.Half, tensor.Bfloat16}
	gpuSInts    = []tensor.DType{tensor.Int8, tensor.Int16, tensor.Int32, tensor.Int64}
	gpuUInts    = []tensor.DType{tensor.Uint8, tensor.Uint16, tensor.Uint32, tensor.Uint64}
	floatSigned = cat(gpuFloats, gpuSInts)
	realTypes   = cat(gpuFloats, gpuSInts, gpuUInts)
)

func cat(sets ...[]tensor.DType) []tensor.DType {
	var out []tensor.DType
	for _, s := range sets {
		out = append(out, s...)
	}
	return out
}

// minus is types without drop (the dtypes another file already registers).
func minus(types, drop []tensor.DType) []tensor.DType {
	var out []tensor.DType
	for _, t := range types {
		keep := true
		for _, d := range drop {
			keep = keep && t != d
		}
		if keep {
			out = append(out, t)
		}
	}
	return out
}

func init() {
	for _, u := range []struct {
		op, name string
		types    []tensor.DType
	}{
		{"Abs", "abs", floatSigned}, {"Neg", "neg", floatSigned}, {"Sign", "sign", floatSigned},
		{"Square", "square", realTypes}, {"Reciprocal", "recip", gpuFloats}, {"Inv", "recip", gpuFloats},
		{"Sqrt", "sqrt", gpuFloats}, {"Rsqrt", "rsqrt", gpuFloats}, {"Exp", "exp", gpuFloats},
		{"Expm1", "expm1", gpuFloats}, {"Log", "log", gpuFloats}, {"Log1p", "log1p", gpuFloats},
		{"Sin", "sin", gpuFloats}, {"Cos", "cos", gpuFloats}, {"Erf", "erf", gpuFloats},
		{"Floor", "floor", gpuFloats}, {"Ceil", "ceil", gpuFloats},
		{"Round", "round", cat(gpuFloats, []tensor.DType{tensor.Int32, tensor.Int64})},
		{"Relu6", "relu6", realTypes}, {"Elu", "elu", gpuFloats}, {"Selu", "selu", gpuFloats},
		{"Softsign", "softsign", gpuFloats},
		// The dtypes elementwise.go leaves out.
		{"Relu", "relu", minus(realTypes, numTypes)},
		{"Sigmoid", "sigmoid", []tensor.DType{tensor.Half, tensor.Bfloat16}},
		{"Tanh", "tanh", []tensor.DType{tensor.Half, tensor.Bfloat16}},
	} {
		name := u.name
		reg(u.op, "T", u.types, nil, fn(func(k kctx) error { return mathUnary(k, "u_"+name+"_", nil) }))
	}
	reg("Softplus", "T", gpuFloats, nil, func(n *graph.Node) (kernels.Kernel, error) {
		eps := map[tensor.DType]float64{tensor.Float: 0x1p-23, tensor.Double: 0x1p-52, tensor.Half: 0x1p-10, tensor.Bfloat16: 0x1p-7}[typeAttr(n, "T")]
		thr := math.Log(eps) + 2
		return fn(func(k kctx) error {
			return mathUnary(k, "u_softplus_", func(a *cu.Args) { a.F64(thr) })
		})(n)
	})
	reg("LeakyRelu", "T", realTypes, nil, func(n *graph.Node) (kernels.Kernel, error) {
		alpha := 0.2
		if a := n.Attrs["alpha"]; a != nil {
			alpha = float64(a.GetF())
		}
		a := leakyAlpha(typeAttr(n, "T"), alpha)
		return fn(func(k kctx) error {
			return mathUnary(k, "u_leaky_", func(args *cu.Args) { args.F64(a) })
		})(n)
	})
	for op, name := range map[string]string{"IsNan": "p_isnan_", "IsInf": "p_isinf_", "IsFinite": "p_isfinite_"} {
		name := name
		reg(op, "T", gpuFloats, nil, fn(func(k kctx) error { return mathUnary(k, name, nil) }))
	}
	kernels.Register(kernels.Def{Op: "LogicalNot", Device: kernels.GPU, Factory: fn(func(k kctx) error {
		x := k.Input(0)
		o, err := k.Allocate(0, x.Shape)
		if err != nil {
			return err
		}
		var args cu.Args
		args.Ptr(ptr(o)).Ptr(ptr(x)).I64(o.NumElements())
		return k.launchN(maths, "logical_not", o.NumElements(), &args)
	})})
	reg("_MstreamUnaryChain", "T", []tensor.DType{tensor.Float}, nil, func(n *graph.Node) (kernels.Kernel, error) {
		var codes []int64
		if a := n.Attrs["ops"]; a != nil && a.GetList() != nil {
			for _, b := range a.GetList().GetS() {
				c, ok := chainOps[string(b)]
				if !ok {
					return nil, status.Errorf(status.Unimplemented, "node '%s': op %q in a unary chain on the GPU", n.Name, b)
				}
				codes = append(codes, c)
			}
		}
		if len(codes) == 0 || len(codes) > 16 {
			return nil, status.Errorf(status.Unimplemented, "node '%s': a unary chain of %d ops on the GPU (1 to 16)", n.Name, len(codes))
		}
		meta := make([]int64, 17)
		meta[0] = int64(len(codes))
		copy(meta[1:], codes)
		return fn(func(k kctx) error {
			return mathUnary(k, "uchain_", func(a *cu.Args) { a.I64s(meta...) })
		})(n)
	})
	likeTypes := cat(realTypes, []tensor.DType{tensor.Bool})
	reg("ZerosLike", "T", likeTypes, nil, fn(func(k kctx) error { return fillLike(k, false) }))
	reg("OnesLike", "T", likeTypes, nil, fn(func(k kctx) error { return fillLike(k, true) }))
}

// chainOps are the ops _MstreamUnaryChain may hold (package optimize
// chains the float32 unary ops of kernels/cpu's vec), with their codes in
// math.cu's chain_op.
var chainOps = map[string]int64{"Neg": 0, "Abs": 1, "Square": 2, "Sqrt": 3, "Rsqrt": 4, "Reciprocal": 5, "Inv": 5,
	"Exp": 6, "Expm1": 7, "Log": 8, "Sigmoid": 9, "Tanh": 10, "Relu": 11, "Relu6": 12, "Floor": 13, "Ceil": 14,
	"Round": 15, "Elu": 16, "Selu": 17, "Softsign": 18}

// leakyAlpha is alpha as the CPU kernel holds it in dtype dt: rounded to
// float32 or to half/bfloat16, truncated for integers (Go's conversion,
// as the CPU kernel's).
func leakyAlpha(dt tensor.DType, alpha float64) float64 {
	switch dt {
	case tensor.Float:
		return float64(float32(alpha))
	case tensor.Half:
		return float64(tensor.HalfToF32(tensor.F32ToHalf(float32(alpha))))
	case tensor.Bfloat16:
		return float64(tensor.Bfloat16ToF32(tensor.F32ToBfloat16(float32(alpha))))
	case tensor.Int8:
		return float64(int8(alpha))
	case tensor.Int16:
		return float64(int16(alpha))
	case tensor.Int32:
		return float64(int32(alpha))
	case tensor.Int64:
		return float64(int64(alpha))
	case tensor.Uint8:
		return float64(uint8(alpha))
	case tensor.Uint16:
		return float64(uint16(alpha))
	case tensor.Uint32:
		return float64(uint32(alpha))
	case tensor.Uint64:
		return float64(uint64(alpha))
	}
	return alpha
}

// mathUnary runs kernel prefix+suffix(dtype) over input 0 into output 0
// (same shape; the output dtype is the node's), extra appending
// parameters after (o, x, n).
func mathUnary(k kctx, prefix string, extra func(*cu.Args)) error {
	x := k.Input(0)
	o, err := k.Allocate(0, x.Shape)
	if err != nil {
		return err
	}
	n := o.NumElements()
	if n == 0 {
		return nil
	}
	var args cu.Args
	args.Ptr(ptr(o)).Ptr(ptr(x)).I64(n)
	if extra != nil {
		extra(&args)
	}
	return k.launchN(maths, prefix+suffix(x.DType), n, &args)
}

// fillLike writes zeros (a memset on the stream) or ones of the dtype.
func fillLike(k kctx, one bool) error {
	x := k.Input(0)
	o, err := k.Allocate(0, x.Shape)
	if err != nil {
		return err
	}
	n := o.NumElements()
	if n == 0 {
		return nil
	}
	if !one {
		return k.memset(ptr(o), 0, int(n)*o.DType.Size())
	}
	var bits uint64
	switch o.DType {
	case tensor.Float:
		bits = uint64(math.Float32bits(1))
	case tensor.Double:
		bits = math.Float64bits(1)
	case tensor.Half:
		bits = uint64(tensor.F32ToHalf(1))
	case tensor.Bfloat16:
		bits = uint64(tensor.F32ToBfloat16(1))
	default:
		bits = 1 // integers and bool
	}
	var args cu.Args
	args.Ptr(ptr(o)).I64(int64(bits)).I64(n)
	return k.launchN(maths, "fillc_"+sizeName(o.DType), n, &args)
}
